//! UCSG scenario specs (`kind = "ucsg"`, `experiments/ucsg/*.toml`): the models to compare and
//! a scenario of seed 001 §4 (a front app, background apps, the screen), after the header every
//! kind shares. A spec is a boundary: every problem is a [`crate::SpecError`].

use serde::Deserialize;

use crate::header::Header;
use crate::spec::MAX_DURATION_MS;
use crate::spec_error::{invalid, Problem};

/// The models a UCSG spec may name.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum UcsgModel {
    /// CFS with the Galaxy S4's ondemand, hotplug rule and cluster switching (seed 001 §2.1,
    /// §3.3, §4.5): the seed's baseline.
    CfsOndemand,
    /// Today's Linux on this SoC: EEVDF with schedutil over the big.LITTLE switcher's joined
    /// ladder, every core online, cpuidle.
    EevdfSchedutil,
    /// The user-centric scheduler and governor (`lull_sched::ucsg`) on CFS, the kernel's
    /// governor replaced.
    Ucsg,
}

impl UcsgModel {
    pub const ALL: [UcsgModel; 3] = [
        UcsgModel::CfsOndemand,
        UcsgModel::EevdfSchedutil,
        UcsgModel::Ucsg,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            UcsgModel::CfsOndemand => "cfs-ondemand",
            UcsgModel::EevdfSchedutil => "eevdf-schedutil",
            UcsgModel::Ucsg => "ucsg",
        }
    }

    #[must_use]
    pub fn from_name(name: &str) -> Option<UcsgModel> {
        UcsgModel::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// The app in front.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Foreground {
    FileManager,
    Video,
    Home,
}

/// An app behind.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Background {
    Zip,
    Ftp,
}

/// The screen.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScreenState {
    On,
    Off,
}

/// The scenario of one experiment.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub foreground: Foreground,
    #[serde(default)]
    pub background: Vec<Background>,
    pub screen: ScreenState,
    /// When the scripted apps begin (the phone settles before).
    pub start_ms: u64,
    /// The scenario's length when nothing in it ends by itself (the idle and home-only cases);
    /// otherwise it lasts until every app's work is done.
    #[serde(default)]
    pub duration_ms: Option<u64>,
}

/// The tables of a UCSG spec after its header.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawUcsg {
    models: Vec<String>,
    /// Simulated time after the last app finished.
    tail_ms: u64,
    scenario: Scenario,
}

/// A checked UCSG spec.
#[derive(Clone, PartialEq, Debug)]
pub struct UcsgSpec {
    pub header: Header,
    pub models: Vec<UcsgModel>,
    pub tail_ms: u64,
    pub scenario: Scenario,
}

impl UcsgSpec {
    /// Checks a UCSG spec's tables after its header.
    ///
    /// # Errors
    /// The first [`Problem`].
    pub(crate) fn from_parts(header: Header, raw: RawUcsg) -> Result<UcsgSpec, Problem> {
        let platform = &header.platform;
        if platform.little_cluster().is_none() || platform.hotplug.is_none() {
            return Err(invalid(
                "platform",
                format!(
                    "`{}` is not a big.LITTLE pair with per-core hotplug (UCSG runs on galaxy-s4)",
                    platform.name
                ),
            ));
        }
        if raw.models.is_empty() {
            return Err(invalid("models", "no model to run"));
        }
        let mut models = Vec::new();
        for name in &raw.models {
            let m = UcsgModel::from_name(name).ok_or_else(|| Problem::UnknownModel {
                name: name.clone(),
                known: UcsgModel::ALL.map(UcsgModel::name).join(", "),
            })?;
            if models.contains(&m) {
                return Err(invalid("models", format!("`{name}` listed twice")));
            }
            models.push(m);
        }
        let s = &raw.scenario;
        if raw.tail_ms > MAX_DURATION_MS {
            return Err(invalid("tail_ms", format!("at most {MAX_DURATION_MS}")));
        }
        if s.start_ms > MAX_DURATION_MS {
            return Err(invalid(
                "scenario.start_ms",
                format!("at most {MAX_DURATION_MS}"),
            ));
        }
        for (i, b) in s.background.iter().enumerate() {
            if s.background[..i].contains(b) {
                return Err(invalid("scenario.background", "an app listed twice"));
            }
        }
        let ends_by_itself = s.foreground != Foreground::Home || !s.background.is_empty();
        match s.duration_ms {
            Some(0) => return Err(invalid("scenario.duration_ms", "must be positive")),
            Some(d) if d > MAX_DURATION_MS => {
                return Err(invalid(
                    "scenario.duration_ms",
                    format!("at most {MAX_DURATION_MS}"),
                ))
            }
            Some(_) if ends_by_itself => {
                return Err(invalid(
                    "scenario.duration_ms",
                    "only for the home screen with nothing behind it (other scenarios last until their apps are done)",
                ))
            }
            None if !ends_by_itself => {
                return Err(invalid(
                    "scenario.duration_ms",
                    "the home screen alone never finishes: give the scenario a length",
                ))
            }
            _ => {}
        }
        if s.screen == ScreenState::Off && s.foreground != Foreground::Home {
            return Err(invalid(
                "scenario.screen",
                "with the screen off only the home screen is in front (seed 001 §3.1.2: every app goes behind)",
            ));
        }
        Ok(UcsgSpec {
            header,
            models,
            tail_ms: raw.tail_ms,
            scenario: raw.scenario,
        })
    }
}
