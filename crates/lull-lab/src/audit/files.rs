//! Loading an audit log or an ftrace text file for the analyses (`lull audit tlp|latency|export`).

use std::path::Path;

use lull_audit::ftrace_text::{self, FtraceCounts, FtraceError, DEFAULT_IGNORED_COMMS};
use lull_audit::{AuditLog, LogError};
use thiserror::Error;

/// Why an input file cannot be analysed.
#[derive(Debug, Error)]
pub enum InputError {
    #[error(transparent)]
    Read(#[from] lull_os::input_file::ReadError),
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
    // Bounded: a device (`/dev/zero`), a FIFO or a file past the kind's bound is refused, not
    // read until memory runs out.
    let kind = if ftrace {
        lull_os::input_file::FTRACE_TEXT
    } else {
        lull_os::input_file::AUDIT_LOG
    };
    let bytes = lull_os::input_file::read_bounded(path, kind)?;
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
