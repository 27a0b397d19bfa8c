//! Forked children that run Rust code rather than `exec` a program (a CPU thief, a ping-pong
//! partner): `fork`, the calls such a child may make, and reaping it. Between `fork` and
//! `_exit` a child of a multi-threaded parent may only make async-signal-safe calls — no
//! allocation, no lock — so every function a child calls here is one bare system call that
//! builds no message: `fork` and `_exit` stay on `libc` (`rustix` offers neither as a safe
//! call), and so do `close_range` and `wait4`, which `rustix` lacks; the rest go through
//! `rustix`.

use std::io;
use std::os::fd::RawFd;

/// What [`fork`] returns on each side.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Forked {
    /// In the child.
    Child,
    /// In the parent, with the child's pid.
    Parent(i32),
}

/// Forks the calling process.
///
/// # Safety
/// In the child, only async-signal-safe calls until `exec` or [`exit_now`] (the functions of
/// this module are; anything that allocates or locks is not), and the child never returns into
/// code the parent runs.
///
/// # Errors
/// The kernel's error (`EAGAIN`, `ENOMEM`).
pub unsafe fn fork() -> io::Result<Forked> {
    // SAFETY: fork has no preconditions; the caller keeps the child's side safe.
    match unsafe { libc::fork() } {
        r if r < 0 => Err(io::Error::last_os_error()),
        0 => Ok(Forked::Child),
        pid => Ok(Forked::Parent(pid)),
    }
}

/// Ends the calling process at once with `code` (`_exit`: no destructors, no buffers flushed),
/// as a forked child must.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit takes a plain integer and never returns.
    unsafe { libc::_exit(code) }
}

/// In a forked child: asks for `SIGKILL` when the parent dies, and says whether the parent
/// `parent_pid` is still the parent (it may have died between `fork` and this call, when no
/// signal would come).
#[must_use]
pub fn die_with_parent_pid(parent_pid: i32) -> bool {
    use rustix::process::{getppid, set_parent_process_death_signal, Signal};
    set_parent_process_death_signal(Some(Signal::KILL)).is_ok()
        && getppid()
            .map(rustix::process::Pid::as_raw_nonzero)
            .map(|p| p.get())
            == Some(parent_pid)
}

/// The calling process's pid.
#[must_use]
pub fn getpid() -> i32 {
    rustix::process::getpid().as_raw_nonzero().get()
}

/// Closes descriptor `fd` (in a forked child that owns it; errors are of no use there).
///
/// # Safety
/// Nothing else uses `fd` afterwards.
pub unsafe fn close_raw(fd: RawFd) {
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: per the caller, `fd` is ours to close.
    drop(unsafe { OwnedFd::from_raw_fd(fd) });
}

/// Closes every descriptor from `first` up (`close_range`), so a child holds none of its
/// parent's files open.
pub fn close_from(first: u32) {
    close_range(first, u32::MAX);
}

/// Closes descriptors `first` to `last` (`close_range`; hand-written: `rustix` has none).
pub fn close_range(first: u32, last: u32) {
    if first > last {
        return;
    }
    // SAFETY: close_range on this process's own descriptor table; the caller (a forked child)
    // uses none of the closed descriptors afterwards.
    unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) };
}

/// Opens `path` for appending, created empty with `mode` (`O_WRONLY | O_CREAT | O_TRUNC |
/// O_APPEND`); the path is a C string prepared before the fork, so nothing is allocated.
///
/// # Errors
/// The kernel's error from `open`.
pub fn open_append_truncated(path: &std::ffi::CStr, mode: u32) -> io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{open, Mode, OFlags};
    Ok(open(
        path,
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::APPEND | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )?)
}

/// Sleeps until `CLOCK_MONOTONIC` reads `at_ns`, through interruptions.
pub fn sleep_until_monotonic_ns(at_ns: u64) {
    use rustix::thread::{clock_nanosleep_absolute, ClockId};
    let ts = rustix::time::Timespec {
        tv_sec: i64::try_from(at_ns / 1_000_000_000).unwrap_or(i64::MAX),
        tv_nsec: i64::try_from(at_ns % 1_000_000_000).unwrap_or(0),
    };
    while clock_nanosleep_absolute(ClockId::Monotonic, &ts) == Err(rustix::io::Errno::INTR) {}
}

/// How a reaped child ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ChildExit {
    /// Its exit code, `None` when a signal ended it.
    pub code: Option<i32>,
    /// CPU time it spent in user and kernel mode, ns.
    pub user_ns: u64,
    pub system_ns: u64,
    /// Its voluntary and involuntary context switches.
    pub voluntary_switches: u64,
    pub involuntary_switches: u64,
}

/// Waits for child `pid` to end (through interruptions) and reaps it, with its CPU times
/// (`wait4`; hand-written: `rustix` has no call that returns the child's resource usage).
///
/// # Errors
/// The kernel's error (`ECHILD`: not a child of this process).
pub fn reap(pid: i32) -> io::Result<ChildExit> {
    let mut status = 0;
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `ru` are valid out-pointers for the call.
        let r = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut ru) };
        if r >= 0 {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let tv = |t: libc::timeval| {
        u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000
            + u64::try_from(t.tv_usec).unwrap_or(0) * 1_000
    };
    Ok(ChildExit {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        user_ns: tv(ru.ru_utime),
        system_ns: tv(ru.ru_stime),
        voluntary_switches: u64::try_from(ru.ru_nvcsw).unwrap_or(0),
        involuntary_switches: u64::try_from(ru.ru_nivcsw).unwrap_or(0),
    })
}

/// Whether child `pid` has ended, without waiting; reaps it when it has (`waitpid` with
/// `WNOHANG`).
///
/// # Errors
/// The kernel's error (`ECHILD`).
pub fn try_reap(pid: i32) -> io::Result<bool> {
    use rustix::process::{waitpid, Pid, WaitOptions};
    let pid = Pid::from_raw(pid)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "pid must be positive"))?;
    Ok(waitpid(Some(pid), WaitOptions::NOHANG)?.is_some())
}

/// Kills child `pid` with `SIGKILL` and reaps it (what a guard's `drop` does).
pub fn kill_and_reap(pid: i32) {
    if let Ok(p) = u32::try_from(pid) {
        let _ = super::signal_process(p, libc::SIGKILL);
    }
    let _ = reap(pid);
}

/// Sets the calling thread's user, group and supplementary groups to `uid`/`gid` (none), with
/// the raw per-thread system calls: libc's `setuid` would signal every thread of the process,
/// which a forked child must not. For a child that drops privileges before connecting.
///
/// # Errors
/// The kernel's error (`EPERM` without privilege).
pub fn become_user(uid: u32, gid: u32) -> io::Result<()> {
    use rustix::thread::{set_thread_gid, set_thread_groups, set_thread_uid};
    let (uid, gid) = (
        rustix::process::Uid::from_raw(uid),
        rustix::process::Gid::from_raw(gid),
    );
    set_thread_groups(&[])?;
    set_thread_gid(gid)?;
    set_thread_uid(uid)?;
    Ok(())
}

/// A Unix socket path resolved before a `fork`, so the child can connect without allocating.
#[derive(Debug)]
pub struct PreparedUnixAddr(rustix::net::SocketAddrUnix);

impl PreparedUnixAddr {
    /// # Errors
    /// `ENAMETOOLONG` for a path longer than a `sockaddr_un` holds.
    pub fn new(path: &std::path::Path) -> io::Result<PreparedUnixAddr> {
        Ok(PreparedUnixAddr(rustix::net::SocketAddrUnix::new(path)?))
    }

    /// A new stream socket connected to the address (no allocation: safe in a forked child).
    ///
    /// # Errors
    /// The kernel's error from `socket` or `connect`.
    pub fn connect_stream(&self) -> io::Result<std::os::fd::OwnedFd> {
        use rustix::net::{connect, socket, AddressFamily, SocketType};
        let s = socket(AddressFamily::UNIX, SocketType::STREAM, None)?;
        connect(&s, &self.0)?;
        Ok(s)
    }
}

/// Closes the writing half of socket `fd` (`shutdown(SHUT_WR)`).
///
/// # Errors
/// The kernel's error.
pub fn shutdown_write(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<()> {
    rustix::net::shutdown(fd, rustix::net::Shutdown::Write)?;
    Ok(())
}
