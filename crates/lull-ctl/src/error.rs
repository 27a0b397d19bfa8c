//! The one error type of the controller interface, and its C codes.

use std::io;

use lull_os::sys::Errno;

/// Why the controller interface could not do what it was asked.
///
/// Not errors: a thread that vanished between listing and reading (counted in
/// [`crate::RegistryCounters::vanished`] and skipped), and a registered process exiting (a
/// watch or a run then ends cleanly).
#[derive(Debug, thiserror::Error)]
pub enum CtlError {
    #[error("no process {pid}: nothing in /proc/{pid}")]
    NoSuchProcess { pid: i32 },
    #[error("{tid} is a thread of process {pid}, not a process: register {pid}")]
    NotAProcess { tid: i32, pid: i32 },
    #[error("process {pid} ({comm}) is a kernel thread: it has no user threads to place")]
    KernelThread { pid: i32, comm: String },
    #[error("no thread {tid} (or it has exited)")]
    NoSuchThread { tid: i32 },
    #[error("permission denied to {what}: {errno}; run as root or as the owner of the process")]
    PermissionDenied { what: String, errno: Errno },
    #[error("CPU mask {mask:#x} names no CPU this machine has online")]
    BadMask { mask: u64 },
    #[error("bad CPU sets: {why}")]
    BadCpus { why: String },
    #[error("cannot start {command}: {source}")]
    Spawn { command: String, source: io::Error },
    #[error("{what}: {source}")]
    Io { what: String, source: io::Error },
}

impl CtlError {
    /// The error for a failed system call while doing `what`: a permission refusal is
    /// [`CtlError::PermissionDenied`], the rest [`CtlError::Io`].
    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> CtlError {
        let what = what.into();
        match source.raw_os_error() {
            Some(n) if n == Errno::EPERM.0 || n == Errno::EACCES.0 => CtlError::PermissionDenied {
                what,
                errno: Errno(n),
            },
            _ => CtlError::Io { what, source },
        }
    }

    /// The negative code the C ABI returns for this error (`include/lull_ctl.h`).
    #[must_use]
    pub fn code(&self) -> i32 {
        match self {
            CtlError::NoSuchProcess { .. } | CtlError::NotAProcess { .. } => {
                crate::capi::LULL_CTL_ERR_NO_PROCESS
            }
            CtlError::KernelThread { .. } => crate::capi::LULL_CTL_ERR_KERNEL_THREAD,
            CtlError::NoSuchThread { .. } => crate::capi::LULL_CTL_ERR_NO_THREAD,
            CtlError::PermissionDenied { .. } => crate::capi::LULL_CTL_ERR_PERMISSION,
            CtlError::BadMask { .. } | CtlError::BadCpus { .. } => {
                crate::capi::LULL_CTL_ERR_BAD_ARGUMENT
            }
            CtlError::Spawn { .. } | CtlError::Io { .. } => crate::capi::LULL_CTL_ERR_IO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_errnos_become_permission_denied() {
        for n in [Errno::EPERM.0, Errno::EACCES.0] {
            let e = CtlError::io(
                "set the CPU mask of thread 7",
                io::Error::from_raw_os_error(n),
            );
            assert!(matches!(e, CtlError::PermissionDenied { .. }), "{e}");
            assert!(e.to_string().contains("run as root"), "{e}");
            assert_eq!(e.code(), crate::capi::LULL_CTL_ERR_PERMISSION);
        }
        let e = CtlError::io("read", io::Error::from_raw_os_error(Errno::EIO.0));
        assert!(matches!(e, CtlError::Io { .. }));
    }
}
