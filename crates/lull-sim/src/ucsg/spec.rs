//! UCSG scenario specs (`kind = "ucsg"`, `experiments/ucsg/*.toml`): the models to compare and
//! a scenario of seed 001 §4 (a front app, background apps, the screen), after the header every
//! kind shares. A spec is a boundary: every problem is a [`crate::SpecError`].

use serde::Deserialize;

use crate::header::Header;
use crate::spec::{named_models, MAX_DURATION_MS};
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

/// The apps' work, each an ESTIMATE of `apps/` whose constant gives its reasoning; a spec may
/// change them (`[apps]`) to show how a result depends on them (the sensitivity sweeps,
/// docs/seed-verdicts.md). The defaults are the constants.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AppWork {
    /// The file manager's work per open and close, in percent of `apps/file_manager.rs`'s four
    /// cycle counts (100: as they are).
    pub file_manager_work_pct: u32,
    /// ZIP's Cortex-A15 cycles per input byte (`apps::zip::ZIP_CYCLES_PER_BYTE`).
    pub zip_cycles_per_byte: u64,
    /// The video decoder's Cortex-A15 cycles per pixel
    /// (`apps::video::VIDEO_DECODE_CYCLES_PER_PIXEL`).
    pub video_decode_cycles_per_pixel: u64,
}

impl Default for AppWork {
    fn default() -> AppWork {
        AppWork {
            file_manager_work_pct: 100,
            zip_cycles_per_byte: super::apps::zip::ZIP_CYCLES_PER_BYTE,
            video_decode_cycles_per_pixel: super::apps::video::VIDEO_DECODE_CYCLES_PER_PIXEL,
        }
    }
}

/// UCSG's tunables a spec may change (`[ucsg]`); the defaults are the seed's
/// (`lull_sched::ucsg::UcsgConfig::galaxy_s4`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct UcsgTunables {
    /// Sampling periods below big's lowest level before UCSG goes back to LITTLE.
    pub big_to_little_periods: u32,
    /// The utilisation above which UCSG's governor raises the level, %.
    pub up_threshold_pct: u64,
}

impl Default for UcsgTunables {
    fn default() -> UcsgTunables {
        UcsgTunables {
            big_to_little_periods: lull_sched::ucsg::config::BIG_TO_LITTLE_PERIODS,
            up_threshold_pct: lull_sched::ucsg::config::UP_THRESHOLD_PCT,
        }
    }
}

/// The most work a spec may scale the file manager's actions to, %.
pub const MAX_FILE_MANAGER_WORK_PCT: u32 = 10_000;
/// The most cycles per byte or pixel a spec may give an app (a hundred times the defaults'
/// order).
pub const MAX_APP_CYCLES_PER_UNIT: u64 = 20_000;

/// The tables of a UCSG spec after its header.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawUcsg {
    models: Vec<String>,
    /// Simulated time after the last app finished.
    tail_ms: u64,
    scenario: Scenario,
    #[serde(default)]
    apps: AppWork,
    #[serde(default)]
    ucsg: UcsgTunables,
}

/// A checked UCSG spec.
#[derive(Clone, PartialEq, Debug)]
pub struct UcsgSpec {
    pub header: Header,
    pub models: Vec<UcsgModel>,
    pub tail_ms: u64,
    pub scenario: Scenario,
    pub apps: AppWork,
    pub ucsg: UcsgTunables,
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
        let models = named_models(
            &raw.models,
            UcsgModel::from_name,
            UcsgModel::ALL,
            UcsgModel::name,
        )?;
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
        let a = raw.apps;
        if a.file_manager_work_pct == 0 || a.file_manager_work_pct > MAX_FILE_MANAGER_WORK_PCT {
            return Err(invalid(
                "apps.file_manager_work_pct",
                format!("must be 1..={MAX_FILE_MANAGER_WORK_PCT}"),
            ));
        }
        for (field, v) in [
            ("apps.zip_cycles_per_byte", a.zip_cycles_per_byte),
            (
                "apps.video_decode_cycles_per_pixel",
                a.video_decode_cycles_per_pixel,
            ),
        ] {
            if v == 0 || v > MAX_APP_CYCLES_PER_UNIT {
                return Err(invalid(
                    field,
                    format!("must be 1..={MAX_APP_CYCLES_PER_UNIT}"),
                ));
            }
        }
        if raw.ucsg.big_to_little_periods == 0 || raw.ucsg.big_to_little_periods > 100 {
            return Err(invalid("ucsg.big_to_little_periods", "must be 1..=100"));
        }
        if !(1..=100).contains(&raw.ucsg.up_threshold_pct) {
            return Err(invalid("ucsg.up_threshold_pct", "must be 1..=100"));
        }
        Ok(UcsgSpec {
            header,
            models,
            tail_ms: raw.tail_ms,
            scenario: raw.scenario,
            apps: a,
            ucsg: raw.ucsg,
        })
    }
}
