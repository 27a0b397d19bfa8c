//! What one `lull live experiment` run is: the app, its delivery model, the scenario and the
//! workload it is fed ([`ExperimentSpec`]), and the parsing of the command's arguments into them.

use std::path::{Path, PathBuf};

use lull_apps::{app_model, AppKind};
use lull_model::time::{NS_PER_MS, NS_PER_S};
use lull_model::DeliveryModel;
use lull_workload::messaging::{self, MessagingParams};
use lull_workload::Trace;
use serde::{Deserialize, Serialize};

use super::ExperimentError;

/// Seed 000's session for the messaging app.
pub const MESSAGING_SEED: u64 = 0;
/// The `background-10s` scenario: to the background 10 s into the clip, back 10 s later.
pub const BACKGROUND_10S: BackgroundPlan = BackgroundPlan {
    at_ns: 10 * NS_PER_S,
    for_ns: 10 * NS_PER_S,
};

/// The apps of `lull live experiment --app`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
pub enum ExperimentApp {
    #[serde(rename = "tracking-10s")]
    Tracking10s,
    #[serde(rename = "tracking-20s")]
    Tracking20s,
    #[serde(rename = "tracking-60s")]
    Tracking60s,
    #[serde(rename = "messaging")]
    Messaging,
    #[serde(rename = "video")]
    Video,
}

impl ExperimentApp {
    pub const ALL: [ExperimentApp; 5] = [
        ExperimentApp::Tracking10s,
        ExperimentApp::Tracking20s,
        ExperimentApp::Tracking60s,
        ExperimentApp::Messaging,
        ExperimentApp::Video,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ExperimentApp::Tracking10s => "tracking-10s",
            ExperimentApp::Tracking20s => "tracking-20s",
            ExperimentApp::Tracking60s => "tracking-60s",
            ExperimentApp::Messaging => "messaging",
            ExperimentApp::Video => "video",
        }
    }

    #[must_use]
    pub fn from_name(s: &str) -> Option<ExperimentApp> {
        ExperimentApp::ALL.into_iter().find(|a| a.name() == s)
    }

    #[must_use]
    pub fn kind(self) -> AppKind {
        match self {
            ExperimentApp::Tracking10s
            | ExperimentApp::Tracking20s
            | ExperimentApp::Tracking60s => AppKind::Tracking,
            ExperimentApp::Messaging => AppKind::Messaging,
            ExperimentApp::Video => AppKind::Video,
        }
    }

    /// The length the stylus recording is scaled to (seed 000, chapter 6).
    fn tracking_span_ns(self) -> Option<u64> {
        match self {
            ExperimentApp::Tracking10s => Some(10 * NS_PER_S),
            ExperimentApp::Tracking20s => Some(20 * NS_PER_S),
            ExperimentApp::Tracking60s => Some(60 * NS_PER_S),
            _ => None,
        }
    }
}

/// `--scenario`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Scenario {
    #[serde(rename = "none")]
    None,
    /// The video app goes to the background 10 s into the clip for 10 s.
    #[serde(rename = "background-10s")]
    Background10s,
}

impl Scenario {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Scenario::None => "none",
            Scenario::Background10s => "background-10s",
        }
    }

    #[must_use]
    pub fn from_name(s: &str) -> Option<Scenario> {
        [Scenario::None, Scenario::Background10s]
            .into_iter()
            .find(|x| x.name() == s)
    }
}

/// When the app is sent to the background, from the workload's time 0, and for how long.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
pub struct BackgroundPlan {
    pub at_ns: u64,
    pub for_ns: u64,
}

/// What the app is fed.
#[derive(Clone, Debug)]
pub enum Workload {
    /// Input events replayed through the device (tracking: the stylus recording; messaging: the
    /// simulated keyboard), over `span_ns` from time 0 (at least the trace's span: a messaging
    /// session goes on after its last key while the user reads the reply).
    Replay { trace: Trace, span_ns: u64 },
    /// The video clip; no input.
    Clip {
        width_px: u32,
        height_px: u32,
        clip_ms: u64,
    },
}

impl Workload {
    /// From time 0 to the last event or the clip's end.
    #[must_use]
    pub fn span_ns(&self) -> u64 {
        match self {
            Workload::Replay { trace, span_ns } => trace.span_ns().max(*span_ns),
            Workload::Clip { clip_ms, .. } => clip_ms * NS_PER_MS,
        }
    }
}

/// Everything one run needs.
#[derive(Clone, Debug)]
pub struct ExperimentSpec {
    /// The name the report carries (`tracking-20s`, ...).
    pub app_name: String,
    pub kind: AppKind,
    pub model: DeliveryModel,
    pub scenario: Scenario,
    pub workload: Workload,
    pub background: Option<BackgroundPlan>,
    /// The `lull-app` executable.
    pub app_binary: PathBuf,
    /// Seed of the video decoder.
    pub seed: u64,
}

/// A scenario runs only on the app it was written for (`background-10s`: video).
///
/// # Errors
/// [`ExperimentError::ScenarioNeedsVideo`].
pub fn check_scenario(app: ExperimentApp, scenario: Scenario) -> Result<(), ExperimentError> {
    match scenario {
        Scenario::Background10s if app != ExperimentApp::Video => {
            Err(ExperimentError::ScenarioNeedsVideo {
                scenario: scenario.name().into(),
                app: app.name().into(),
            })
        }
        _ => Ok(()),
    }
}

/// Parses `--app`.
///
/// # Errors
/// [`ExperimentError::UnknownApp`].
pub fn parse_app(s: &str) -> Result<ExperimentApp, ExperimentError> {
    ExperimentApp::from_name(s).ok_or_else(|| ExperimentError::UnknownApp(s.to_owned()))
}

/// Parses `--model`.
///
/// # Errors
/// [`ExperimentError::UnknownModel`].
pub fn parse_model(s: &str) -> Result<DeliveryModel, ExperimentError> {
    app_model(s).ok_or_else(|| ExperimentError::UnknownModel(s.to_owned()))
}

/// Parses `--scenario`.
///
/// # Errors
/// [`ExperimentError::UnknownScenario`].
pub fn parse_scenario(s: &str) -> Result<Scenario, ExperimentError> {
    Scenario::from_name(s).ok_or_else(|| ExperimentError::UnknownScenario(s.to_owned()))
}

/// This build's `lull-app` ([`crate::sibling::program`]).
///
/// # Errors
/// [`ExperimentError::AppBinary`] when it is not there.
pub fn default_app_binary() -> Result<PathBuf, ExperimentError> {
    crate::sibling::program("lull-app")
        .map_err(|(path, why)| ExperimentError::AppBinary { path, why })
}

/// The `lull-app` a command runs: the one the user gave (`--app-binary`), else
/// [`default_app_binary`].
///
/// # Errors
/// As [`default_app_binary`], when none was given.
pub fn app_binary(given: Option<&std::path::Path>) -> Result<PathBuf, ExperimentError> {
    given.map_or_else(default_app_binary, |p| Ok(p.to_path_buf()))
}

pub(super) fn check_app_binary(path: &Path) -> Result<(), ExperimentError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(()),
        Ok(_) => Err(ExperimentError::AppBinary {
            path: path.to_owned(),
            why: "not a file".into(),
        }),
        Err(e) => Err(ExperimentError::AppBinary {
            path: path.to_owned(),
            why: e.to_string(),
        }),
    }
}

impl ExperimentSpec {
    /// Seed 000's experiment: the stylus recording `stylus` scaled to 10, 20 or 60 s; the
    /// messaging session of `messaging::SEED000`; the 30 s 1080p clip at 29.97 fps.
    ///
    /// # Errors
    /// [`ExperimentError`] for a scenario on another app than video, or workload errors.
    pub fn standard(
        app: ExperimentApp,
        model: DeliveryModel,
        scenario: Scenario,
        stylus: &Trace,
        app_binary: PathBuf,
    ) -> Result<ExperimentSpec, ExperimentError> {
        let workload = match (app, app.tracking_span_ns()) {
            (_, Some(span_ns)) => Workload::Replay {
                trace: stylus.scaled_to(span_ns)?,
                span_ns,
            },
            (ExperimentApp::Video, None) => {
                let v = lull_workload::video::SEED000;
                Workload::Clip {
                    width_px: v.width_px,
                    height_px: v.height_px,
                    clip_ms: v.duration_ms,
                }
            }
            (_, None) => messaging_workload(&messaging::SEED000)?,
        };
        check_scenario(app, scenario)?;
        let background = match scenario {
            Scenario::None => None,
            Scenario::Background10s => Some(BACKGROUND_10S),
        };
        Ok(ExperimentSpec {
            app_name: app.name().to_owned(),
            kind: app.kind(),
            model,
            scenario,
            workload,
            background,
            app_binary,
            seed: 0,
        })
    }

    /// A messaging experiment on a session of `params` (tests use short ones).
    ///
    /// # Errors
    /// As [`messaging::messaging_trace`].
    pub fn messaging(
        params: &MessagingParams,
        model: DeliveryModel,
        app_binary: PathBuf,
    ) -> Result<ExperimentSpec, ExperimentError> {
        Ok(ExperimentSpec {
            app_name: "messaging".into(),
            kind: AppKind::Messaging,
            model,
            scenario: Scenario::None,
            workload: messaging_workload(params)?,
            background: None,
            app_binary,
            seed: 0,
        })
    }
}

/// The keys of a messaging session, over the whole session (its reading pauses included).
fn messaging_workload(params: &MessagingParams) -> Result<Workload, ExperimentError> {
    let session = messaging::messaging_session(params, MESSAGING_SEED)?;
    Ok(Workload::Replay {
        trace: session.keys,
        span_ns: session.end_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in ExperimentApp::ALL {
            assert_eq!(parse_app(a.name()).unwrap(), a);
        }
        assert!(matches!(
            parse_app("tracking"),
            Err(ExperimentError::UnknownApp(_))
        ));
        assert!(matches!(
            parse_model("esm"),
            Err(ExperimentError::UnknownModel(_))
        ));
        assert_eq!(
            parse_scenario("background-10s").unwrap(),
            Scenario::Background10s
        );
        assert!(matches!(
            parse_scenario("bg"),
            Err(ExperimentError::UnknownScenario(_))
        ));
    }

    #[test]
    fn the_background_scenario_is_for_video_only() {
        let stylus = lull_workload::spiral::stylus_spiral();
        let e = ExperimentSpec::standard(
            ExperimentApp::Tracking20s,
            DeliveryModel::EsmKdsGuis,
            Scenario::Background10s,
            &stylus,
            PathBuf::from("lull-app"),
        );
        assert!(matches!(e, Err(ExperimentError::ScenarioNeedsVideo { .. })));
        let v = ExperimentSpec::standard(
            ExperimentApp::Video,
            DeliveryModel::Pull16ms,
            Scenario::Background10s,
            &stylus,
            PathBuf::from("lull-app"),
        )
        .unwrap();
        assert_eq!(v.background, Some(BACKGROUND_10S));
        assert_eq!(v.workload.span_ns(), 30 * NS_PER_S);
        let t = ExperimentSpec::standard(
            ExperimentApp::Tracking10s,
            DeliveryModel::Pull16ms,
            Scenario::None,
            &stylus,
            PathBuf::from("lull-app"),
        )
        .unwrap();
        assert_eq!(t.workload.span_ns(), 10 * NS_PER_S);
    }

    #[test]
    fn a_missing_app_binary_is_named() {
        let e = check_app_binary(Path::new("/nonexistent/lull-app")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/lull-app"), "{e}");
    }
}
