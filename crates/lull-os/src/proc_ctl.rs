//! Setting up a child process before it runs: what the lab's harnesses need between `fork` and
//! `exec`, as safe wrappers.

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Lets the child `cmd` starts inherit `fd` under the same number, which this returns (the
/// child is told it on its command line). The parent's descriptor keeps its close-on-exec flag,
/// so no other child inherits it; only this child's copy loses the flag, between `fork` and
/// `exec`, with `fcntl(F_SETFD)` through `rustix` — a bare system call, async-signal-safe (no
/// allocation, no lock). Keep `fd` open until the child has started.
pub fn pass_fd_to_child(cmd: &mut Command, fd: &OwnedFd) -> RawFd {
    let raw = fd.as_raw_fd();
    // SAFETY: the closure runs in the child between fork and exec and makes one
    // async-signal-safe system call on a descriptor number the child inherited from `fd`,
    // which the caller keeps open until the spawn returns.
    unsafe {
        cmd.pre_exec(move || {
            let inherited = BorrowedFd::borrow_raw(raw);
            rustix::io::fcntl_setfd(inherited, rustix::io::FdFlags::empty())?;
            Ok(())
        });
    }
    raw
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    #[test]
    fn the_child_inherits_the_descriptor_and_no_other_child_does() {
        let (r, w) = crate::sys::pipe(false).unwrap();
        let mut r = std::fs::File::from(r);
        // Writes through the inherited number; fails if the descriptor did not survive exec.
        let mut cmd = Command::new("sh");
        let n = pass_fd_to_child(&mut cmd, &w);
        cmd.arg("-c").arg(format!("echo passed >&{n}"));
        let ok = cmd.status().unwrap();
        assert!(ok.success());
        // Another child does not get it (the parent's copy is still close-on-exec).
        let other = Command::new("sh")
            .arg("-c")
            .arg(format!("echo leaked >&{n}"))
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(!other.success());
        drop(w);
        let mut got = String::new();
        r.read_to_string(&mut got).unwrap();
        assert_eq!(got, "passed\n");
    }
}
