use std::io;

use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::process::PidfdFlags;

use super::sched::thread_pid;

/// The calling thread's kernel id (for `/proc/self/task/TID`).
#[must_use]
pub fn gettid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
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
    Ok(rustix::process::pidfd_open(
        thread_pid(pid)?,
        PidfdFlags::empty(),
    )?)
}

/// `PIDFD_THREAD` (`include/uapi/linux/pidfd.h`, Linux 6.9+): a pidfd for one thread, readable
/// when that thread exits. The kernel defines it as `O_EXCL`; rustix's `PidfdFlags` does not
/// name it, so it is passed as a retained bit.
const PIDFD_THREAD: PidfdFlags = PidfdFlags::from_bits_retain(libc::O_EXCL as u32);

/// A pidfd naming thread `tid` alone (Linux 6.9+), which polls readable when that thread exits;
/// `EINVAL` on an older kernel.
///
/// # Errors
/// The kernel's errno.
pub fn pidfd_open_thread(tid: i32) -> io::Result<OwnedFd> {
    Ok(rustix::process::pidfd_open(thread_pid(tid)?, PIDFD_THREAD)?)
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

    #[test]
    fn a_thread_pidfd_polls_readable_once_its_thread_exits() {
        use std::os::fd::{AsFd, AsRawFd};
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tid_tx.send(gettid()).unwrap();
            let _ = go_rx.recv();
        });
        let tid = tid_rx.recv().unwrap();
        match pidfd_open_thread(tid) {
            // A kernel before 6.9 knows no PIDFD_THREAD.
            Err(e) => assert_eq!(Errno::from(e), Errno::EINVAL),
            Ok(fd) => {
                assert!(!pidfd_exited(fd.as_fd()), "the thread still runs");
                go_tx.send(()).unwrap();
                let mut ready = [false];
                poll_readable(&[fd.as_raw_fd()], None, &mut ready).unwrap();
                assert!(ready[0] && pidfd_exited(fd.as_fd()));
            }
        }
        drop(go_tx);
        t.join().unwrap();
        assert_eq!(
            pidfd_open_thread(-1).err().map(Errno::from),
            Some(Errno::EINVAL)
        );
    }
}
