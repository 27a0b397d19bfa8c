//! Why one run of a workload under one policy failed (`TogglingError::Run` says which run).

use std::path::PathBuf;
use std::process::ExitStatus;

/// One run's failure: the program, the controller, or `lull-work`'s report.
#[derive(Debug, thiserror::Error)]
pub enum RunFailure {
    #[error("cannot start {}: {source}", program.display())]
    Start {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("{} ended with {status}", program.display())]
    Ended {
        program: PathBuf,
        status: ExitStatus,
    },
    #[error(transparent)]
    Controller(#[from] lull_ctl::CtlError),
    #[error("the command was killed by signal {0}")]
    Killed(i32),
    #[error("the command exited with status {0}")]
    Exited(i32),
    #[error("the command ended without an exit status")]
    NoExitStatus,
    #[error("no report at {}: {source}", path.display())]
    NoReport {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("bad report at {}: {source}", path.display())]
    BadReport {
        path: PathBuf,
        source: serde_json::Error,
    },
}
