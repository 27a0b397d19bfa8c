use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use super::cvt;

/// `SIGINT`, for [`signal_process`]: the signal a program takes as "stop cleanly".
pub const SIGINT: i32 = libc::SIGINT;
/// `SIGTERM`, the signal a service manager stops a service with.
pub const SIGTERM: i32 = libc::SIGTERM;
/// `SIGKILL`, which no process can catch.
pub const SIGKILL: i32 = libc::SIGKILL;
/// `SIGHUP`, the terminal hang-up.
pub const SIGHUP: i32 = libc::SIGHUP;
/// `SIGUSR1`, user signal one.
pub const SIGUSR1: i32 = libc::SIGUSR1;
/// `SIGUSR2`, user signal two.
pub const SIGUSR2: i32 = libc::SIGUSR2;
/// `SIGALRM`, the timer alarm.
pub const SIGALRM: i32 = libc::SIGALRM;
/// `SIGPIPE`, a write to a pipe nobody reads.
pub const SIGPIPE: i32 = libc::SIGPIPE;

/// Sends signal `sig` to process `pid` (`kill(2)`).
///
/// # Errors
/// The kernel's error (`ESRCH`: no such process; `EPERM`).
pub fn signal_process(pid: u32, sig: i32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    // SAFETY: kill takes plain integers; a positive pid names one process.
    cvt(unsafe { libc::kill(pid, sig) }).map(|_| ())
}

/// Sends signal `sig` to every process of process group `pgid` (`kill(2)` of `-pgid`).
///
/// # Errors
/// The kernel's error (`ESRCH`: no such group; `EPERM`).
pub fn signal_process_group(pgid: u32, sig: i32) -> io::Result<()> {
    let pgid = libc::pid_t::try_from(pgid)
        .ok()
        .filter(|&p| p > 0)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "process group out of range"))?;
    // SAFETY: kill takes plain integers; a negative pid names one process group.
    cvt(unsafe { libc::kill(-pgid, sig) }).map(|_| ())
}

/// Makes the child `cmd` starts get `SIGTERM` when the thread that started it ends, and refuse
/// to start (the spawn fails) when the starting process is already gone: a command a controller
/// runs never outlives it. The child's half runs between `fork` and `exec`, where only
/// async-signal-safe calls are allowed: `rustix`'s `prctl` and `getppid` are bare system calls
/// (no allocation, no lock).
pub fn end_with_parent(cmd: &mut std::process::Command) {
    die_with_parent(cmd, rustix::process::Signal::TERM);
}

/// As [`end_with_parent`] but with `SIGKILL`: for a child that has nothing to clean up and must
/// not outlive its starter by a moment (a virtual machine).
pub fn kill_with_parent(cmd: &mut std::process::Command) {
    die_with_parent(cmd, rustix::process::Signal::KILL);
}

fn die_with_parent(cmd: &mut std::process::Command, signal: rustix::process::Signal) {
    use rustix::process::{getppid, set_parent_process_death_signal};
    use std::os::unix::process::CommandExt;
    let parent = rustix::process::getpid();
    // SAFETY: the closure makes only async-signal-safe system calls (see above); the error it
    // builds on the failure path is what `Command` itself does there.
    unsafe {
        cmd.pre_exec(move || {
            set_parent_process_death_signal(Some(signal))?;
            // The starter may have died between fork and prctl: then nobody would end the command.
            if getppid() != Some(parent) {
                return Err(io::Error::other("the starting process is gone"));
            }
            Ok(())
        });
    }
}

/// The signals whose default action ends the process and that a process can catch: a daemon
/// that holds others' threads frozen must see each of them and clean up before it exits.
/// (`SIGKILL` and `SIGSTOP` cannot be caught; the fault signals `SIGSEGV`, `SIGBUS`, `SIGFPE`,
/// `SIGILL`, `SIGSYS`, `SIGTRAP` and `SIGABRT` are synchronous and cannot go through a signalfd.)
pub const TERMINATION_SIGNALS: [libc::c_int; 15] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGPIPE,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGIO,
    libc::SIGPWR,
    libc::SIGSTKFLT,
    libc::SIGXCPU,
    libc::SIGXFSZ,
];

/// Blocks every terminating signal ([`TERMINATION_SIGNALS`] and the real-time signals the C
/// library leaves to programs) for the calling thread (and threads it spawns later) and returns a
/// signalfd that becomes readable when one arrives, so a loop can stop cleanly on them. Read it
/// with [`read_signal`].
///
/// # Errors
/// The kernel's error from `sigprocmask` or `signalfd`.
pub fn termination_signalfd() -> io::Result<OwnedFd> {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it in place.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t; the signal numbers are valid.
    unsafe {
        libc::sigemptyset(&mut set);
        for sig in TERMINATION_SIGNALS {
            libc::sigaddset(&mut set, sig);
        }
        // The C library's own real-time signals are below SIGRTMIN(): it refuses none here.
        for sig in libc::SIGRTMIN()..=libc::SIGRTMAX() {
            libc::sigaddset(&mut set, sig);
        }
    }
    // SAFETY: `set` is initialised; the old mask is not requested.
    cvt(unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) })?;
    // SAFETY: -1 asks for a new signalfd for `set`.
    let fd = cvt(unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) })?;
    // SAFETY: fresh fd from the kernel.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// One signal read from a signalfd.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SignalInfo {
    pub signo: i32,
    /// The sender's pid (0 for the kernel).
    pub pid: u32,
}

impl SignalInfo {
    /// A `SIGPIPE` or `SIGXFSZ` this process caused itself (a write to a closed pipe, past the
    /// file-size limit): the write's error already reports it, and it is no request to stop.
    #[must_use]
    pub fn self_inflicted(&self) -> bool {
        matches!(self.signo, libc::SIGPIPE | libc::SIGXFSZ) && self.pid == std::process::id()
    }

    /// The signal's name (`SIGHUP`), or its number.
    #[must_use]
    pub fn name(&self) -> String {
        let abbrev = match self.signo {
            libc::SIGHUP => "SIGHUP",
            libc::SIGINT => "SIGINT",
            libc::SIGQUIT => "SIGQUIT",
            libc::SIGTERM => "SIGTERM",
            libc::SIGUSR1 => "SIGUSR1",
            libc::SIGUSR2 => "SIGUSR2",
            libc::SIGALRM => "SIGALRM",
            libc::SIGPIPE => "SIGPIPE",
            libc::SIGVTALRM => "SIGVTALRM",
            libc::SIGPROF => "SIGPROF",
            libc::SIGIO => "SIGIO",
            libc::SIGPWR => "SIGPWR",
            libc::SIGSTKFLT => "SIGSTKFLT",
            libc::SIGXCPU => "SIGXCPU",
            libc::SIGXFSZ => "SIGXFSZ",
            n => return format!("signal {n}"),
        };
        abbrev.to_owned()
    }
}

/// Reads one pending signal from a signalfd; `None` when none is pending.
///
/// # Errors
/// The kernel's error from `read`.
pub fn read_signal(fd: BorrowedFd<'_>) -> io::Result<Option<SignalInfo>> {
    // SAFETY: signalfd_siginfo is plain data.
    let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::signalfd_siginfo>();
    // SAFETY: `info` is writable for `size` bytes.
    let n = unsafe { libc::read(fd.as_raw_fd(), std::ptr::addr_of_mut!(info).cast(), size) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::WouldBlock {
            Ok(None)
        } else {
            Err(e)
        };
    }
    if usize::try_from(n).ok() != Some(size) {
        return Ok(None);
    }
    Ok(Some(SignalInfo {
        signo: i32::try_from(info.ssi_signo).unwrap_or(0),
        pid: info.ssi_pid,
    }))
}
