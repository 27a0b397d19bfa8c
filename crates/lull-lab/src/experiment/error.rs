//! The errors of `lull live experiment`: its arguments refused, and what can fail while the
//! harness runs.

use std::path::PathBuf;

use lull::kds_client::KdsClientError;
use lull_apps::APP_MODELS;
use lull_model::DeliveryModel;
use lull_workload::messaging::MessagingError;
use lull_workload::TraceError;

use crate::live_stack::LiveDaemonError;

/// Errors of an experiment.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error("unknown app {0:?}; expected one of tracking-10s, tracking-20s, tracking-60s, messaging, video")]
    UnknownApp(String),
    #[error("unknown model {0:?}; expected one of {known}", known = DeliveryModel::names(&APP_MODELS))]
    UnknownModel(String),
    #[error("unknown scenario {0:?}; expected none or background-10s")]
    UnknownScenario(String),
    #[error("scenario {scenario} is for the video app, not {app}")]
    ScenarioNeedsVideo { scenario: String, app: String },
    #[error(
        "the background plan ({at_ms} ms + {for_ms} ms) does not fit in the {span_ms} ms workload"
    )]
    BackgroundOutsideWorkload {
        at_ms: u64,
        for_ms: u64,
        span_ms: u64,
    },
    #[error("the trace holds an event with no evdev form ({0}); apps take input events only")]
    NotInput(lull_model::RawEvent),
    #[error("cannot find the lull-app program at {path}: {why} (build it with `cargo build -p lull-apps`, or pass --app-binary)")]
    AppBinary { path: PathBuf, why: String },
    #[error("trace: {0}")]
    Trace(#[from] TraceError),
    #[error("messaging session: {0}")]
    Messaging(#[from] MessagingError),
    #[error("daemon: {0}")]
    Daemon(#[from] LiveDaemonError),
    #[error("display server: {0}")]
    Kds(#[from] KdsClientError),
    #[error("cannot start {path}: {source}")]
    Spawn {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the app failed ({status}): {stderr}")]
    AppFailed { status: String, stderr: String },
    #[error("the app broke the protocol: {0}")]
    AppProtocol(String),
    #[error("the display server lists no window of the app's process {0}")]
    NoWindow(u32),
    #[error("a harness thread failed: {0}")]
    Thread(String),
    #[error("the ESM's accounting is broken: {0}")]
    Accounting(lull_esm::AccountingError),
    #[error("system call: {0}")]
    Io(#[from] std::io::Error),
    #[error("{what}: {source}")]
    During {
        what: String,
        source: Box<ExperimentError>,
    },
}

impl ExperimentError {
    /// The arguments named no such experiment (a usage error, not a failure to run one).
    #[must_use]
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            ExperimentError::UnknownApp(_)
                | ExperimentError::UnknownModel(_)
                | ExperimentError::UnknownScenario(_)
                | ExperimentError::ScenarioNeedsVideo { .. }
        )
    }

    pub(super) fn during(self, what: impl Into<String>) -> ExperimentError {
        ExperimentError::During {
            what: what.into(),
            source: Box::new(self),
        }
    }
}
