//! Loading an audit log or an ftrace text file for the analyses (`lull audit tlp|latency|export`).

use std::path::Path;

use lull_audit::ftrace_text::{self, FtraceCounts, FtraceError, DEFAULT_IGNORED_COMMS};
use lull_audit::{AuditLog, LogError};
use thiserror::Error;

/// Why an input file cannot be analysed.
#[derive(Debug, Error)]
pub enum InputError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Log { path: String, source: LogError },
    #[error("{path}: not ftrace text: {source}")]
    Ftrace { path: String, source: FtraceError },
    #[error("{path}: ftrace text is not UTF-8 (byte {at})")]
    Utf8 { path: String, at: usize },
}

/// A loaded input: the log, and for ftrace text what the reader counted.
#[derive(Debug)]
pub struct Input {
    pub log: AuditLog,
    pub ftrace: Option<FtraceCounts>,
}

/// Reads `path` as an audit log, or as ftrace text when `ftrace` is set.
pub fn load(path: &Path, ftrace: bool) -> Result<Input, InputError> {
    let p = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| InputError::Io {
        path: p.clone(),
        source,
    })?;
    if ftrace {
        let text = std::str::from_utf8(&bytes).map_err(|e| InputError::Utf8 {
            path: p.clone(),
            at: e.valid_up_to(),
        })?;
        let (log, counts) = ftrace_text::read(text, &DEFAULT_IGNORED_COMMS)
            .map_err(|source| InputError::Ftrace { path: p, source })?;
        Ok(Input {
            log,
            ftrace: Some(counts),
        })
    } else {
        let log = lull_audit::log::decode(&bytes)
            .map_err(|source| InputError::Log { path: p, source })?;
        Ok(Input { log, ftrace: None })
    }
}
