//! The lab machine's one error type.

use std::path::PathBuf;

/// Why the guest could not be had, or what went wrong while it ran.
#[derive(Debug, thiserror::Error)]
pub enum VmError {
    /// A host tool the lab machine needs is missing.
    #[error("{tool} not found on PATH: {remedy}")]
    ToolMissing {
        tool: &'static str,
        remedy: &'static str,
    },
    /// The kernel packages could not be fetched from Debian's archive.
    #[error("could not fetch the guest kernel {release}: {detail}")]
    Fetch { release: String, detail: String },
    /// The requested kernel release is not in the archive.
    #[error(
        "kernel release {release} is not in Debian's {suite} (available: {available}); \
         pass one of those with --kernel"
    )]
    UnknownKernel {
        release: String,
        suite: &'static str,
        available: String,
    },
    /// A file or directory of the cache or of the run could not be used.
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// QEMU could not be started.
    #[error("could not start {qemu}: {source}")]
    Spawn {
        qemu: String,
        #[source]
        source: std::io::Error,
    },
    /// QEMU ended before the guest started the command (it printed `qemu_stderr`).
    #[error("the guest did not boot: QEMU exited with {status} before the command started\nQEMU said: {qemu_stderr}\n{console_tail}")]
    BootFailed {
        status: String,
        qemu_stderr: String,
        console_tail: String,
    },
    /// The guest did not reach the command, or the command did not end, in time; QEMU was killed.
    #[error("the guest {phase} did not finish within {limit_s} s; the guest was stopped\n{console_tail}")]
    Timeout {
        phase: &'static str,
        limit_s: u64,
        console_tail: String,
    },
    /// The guest powered off without recording the command's exit status.
    #[error(
        "the guest stopped without the command's exit status (QEMU: {status})\n{console_tail}"
    )]
    NoStatus {
        status: String,
        console_tail: String,
    },
    /// A request the lab machine cannot carry out as given.
    #[error("{0}")]
    Invalid(String),
    /// Output of the guest that the host could not read.
    #[error("could not read the guest's {what}: {detail}")]
    Parse { what: &'static str, detail: String },
}

impl VmError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        VmError::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// True when the guest cannot be had on this machine at all (as opposed to a guest that
    /// started and then failed): the test suite skips guest tests, with this reason, only then.
    #[must_use]
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            VmError::ToolMissing { .. } | VmError::Fetch { .. } | VmError::UnknownKernel { .. }
        )
    }
}
