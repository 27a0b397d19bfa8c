use std::io;
use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd};

use super::{cvt, Errno};

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

/// Sends signal `sig` to process `pid` (`kill(2)`); signal 0 only checks that the process
/// exists and may be signalled.
///
/// # Errors
/// The kernel's error (`ESRCH`: no such process; `EPERM`); `InvalidInput` for pid 0 (which
/// `kill` would take as the caller's own process group) or one past `i32`; `EINVAL` for a
/// number that names no standard signal (the real-time ones included: none is sent here).
pub fn signal_process(pid: u32, sig: i32) -> io::Result<()> {
    use rustix::process::{kill_process, test_kill_process};
    let pid = positive_pid(pid, "pid out of range")?;
    match signal_of(sig)? {
        Some(sig) => kill_process(pid, sig)?,
        None => test_kill_process(pid)?,
    }
    Ok(())
}

/// Sends signal `sig` to every process of process group `pgid` (`kill(2)` of `-pgid`).
///
/// # Errors
/// The kernel's error (`ESRCH`: no such group; `EPERM`); `InvalidInput` and `EINVAL` as
/// [`signal_process`].
pub fn signal_process_group(pgid: u32, sig: i32) -> io::Result<()> {
    use rustix::process::{kill_process_group, test_kill_process_group};
    let pgid = positive_pid(pgid, "process group out of range")?;
    match signal_of(sig)? {
        Some(sig) => kill_process_group(pgid, sig)?,
        None => test_kill_process_group(pgid)?,
    }
    Ok(())
}

fn positive_pid(pid: u32, what: &'static str) -> io::Result<rustix::process::Pid> {
    i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, what))
}

/// `sig` as rustix's signal; `None` for 0, the existence check.
fn signal_of(sig: i32) -> io::Result<Option<rustix::process::Signal>> {
    if sig == 0 {
        return Ok(None);
    }
    rustix::process::Signal::from_named_raw(sig)
        .map(Some)
        .ok_or_else(|| Errno::EINVAL.into())
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
/// Hand-written: `rustix` has no `signalfd`, and blocks signals only through its unsafe
/// runtime module.
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
    use std::mem::{offset_of, size_of};
    let mut info = [0u8; size_of::<libc::signalfd_siginfo>()];
    let n = loop {
        match rustix::io::read(fd, &mut info) {
            Err(rustix::io::Errno::INTR) => continue,
            Err(rustix::io::Errno::AGAIN) => return Ok(None),
            other => break other?,
        }
    };
    if n != info.len() {
        return Ok(None);
    }
    let field =
        |at: usize| u32::from_ne_bytes([info[at], info[at + 1], info[at + 2], info[at + 3]]);
    Ok(Some(SignalInfo {
        signo: i32::try_from(field(offset_of!(libc::signalfd_siginfo, ssi_signo))).unwrap_or(0),
        pid: field(offset_of!(libc::signalfd_siginfo, ssi_pid)),
    }))
}

#[cfg(test)]
mod tests {
    use crate::sys::*;

    #[test]
    fn signals_reach_a_process_and_bad_targets_are_refused() {
        use std::os::unix::process::ExitStatusExt;
        let own = std::process::id();
        signal_process(own, 0).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        let sent = signal_process(child.id(), SIGKILL);
        if sent.is_err() {
            let _ = child.kill();
        }
        sent.unwrap();
        assert_eq!(child.wait().unwrap().signal(), Some(SIGKILL));
        let kind = |r: std::io::Result<()>| r.unwrap_err().kind();
        // Signal 0 only checks: were pid 0 ever let through again, the test's own group would
        // be probed, not signalled.
        assert_eq!(kind(signal_process(0, 0)), std::io::ErrorKind::InvalidInput);
        assert_eq!(
            kind(signal_process_group(0, 0)),
            std::io::ErrorKind::InvalidInput
        );
        assert_eq!(
            signal_process(own, 4095).err().map(Errno::from),
            Some(Errno::EINVAL)
        );
    }
}
