use std::io;

use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

use super::sched::thread_id;
use super::Errno;

/// The calling thread's kernel id (for `/proc/self/task/TID`).
#[must_use]
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// The effective user id of this process.
#[must_use]
pub fn geteuid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Whether thread `tid` belongs to process `pid` (`/proc/PID/task/TID` exists).
#[must_use]
pub fn thread_of_process(pid: u32, tid: u32) -> bool {
    pid != 0 && tid != 0 && Path::new(&format!("/proc/{pid}/task/{tid}")).exists()
}

/// `pidfd_open(pid, 0)` (Linux 5.3+): a descriptor naming process `pid` for as long as it is
/// open — after the process exits it names no other, even when the pid is reused.
///
/// # Errors
/// The kernel's `errno`: `ESRCH` (no such process), `ENOSYS` (a kernel without pidfds),
/// `EINVAL` for a pid that is not positive.
pub fn pidfd_open(pid: i32) -> io::Result<OwnedFd> {
    let pid = thread_id(pid)?;
    // SAFETY: plain syscall; flags 0; the returned fd is owned from here on.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0 as libc::c_uint) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = RawFd::try_from(r).map_err(|_| io::Error::from(Errno::EINVAL))?;
    // SAFETY: a fresh descriptor from the kernel that nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `PIDFD_THREAD` (`include/uapi/linux/pidfd.h`, Linux 6.9+): a pidfd for one thread, readable
/// when that thread exits. The kernel defines it as `O_EXCL`.
const PIDFD_THREAD: libc::c_uint = libc::O_EXCL as libc::c_uint;

/// A pidfd naming thread `tid` alone (Linux 6.9+), which polls readable when that thread exits;
/// `EINVAL` on an older kernel.
///
/// # Errors
/// The kernel's errno.
pub fn pidfd_open_thread(tid: i32) -> io::Result<OwnedFd> {
    let tid = thread_id(tid)?;
    // SAFETY: plain syscall; the returned fd is owned from here on.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_open, tid, PIDFD_THREAD) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = RawFd::try_from(r).map_err(|_| io::Error::from(Errno::EINVAL))?;
    // SAFETY: a fresh descriptor from the kernel that nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether the process a pidfd names has exited (the descriptor polls readable then). Any
/// doubt (the poll fails) says it has.
#[must_use]
pub fn pidfd_exited(pidfd: BorrowedFd<'_>) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut p = [PollFd::new(&pidfd, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    poll(&mut p, Some(&now)) != Ok(0)
}

#[cfg(test)]
mod tests {
    use crate::sys::*;

    #[test]
    fn a_pidfd_says_when_its_process_exits() {
        use std::os::fd::AsFd;
        let own = pidfd_open(std::process::id() as i32).unwrap();
        assert!(!pidfd_exited(own.as_fd()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let fd = pidfd_open(child.id() as i32).unwrap();
        child.wait().unwrap();
        assert!(pidfd_exited(fd.as_fd()));
        assert_eq!(pidfd_open(0).err().map(Errno::from), Some(Errno::EINVAL));
    }
}
