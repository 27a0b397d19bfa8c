//! The capacity thief: a real-time process pinned to one CPU that takes a set share of it, so
//! that fair (CFS/EEVDF) threads on that CPU run slower — the LITTLE core of a machine that has
//! none (seed 004 §3 runs on a 4 big + 4 LITTLE Odroid-XU3; this machine's CPUs are alike).
//!
//! **How.** `SCHED_DEADLINE` with runtime = share × [`THIEF_PERIOD_NS`] would have the kernel
//! enforce the share exactly, but Linux admits a deadline task only when its affinity spans its
//! whole root domain (`__sched_setscheduler`, `kernel/sched/syscalls.c`): a thief pinned to one
//! CPU is refused with `EPERM` unless that CPU is its own exclusive cpuset. The thief asks for it
//! anyway and, when refused, falls back to `SCHED_FIFO` with a duty cycle: busy until
//! share × period into each period, then `clock_nanosleep` to the next period's start
//! (absolute, so sleeps do not drift). Which one ran, and why deadline was refused, is reported.
//!
//! **RT throttling.** The kernel lets real-time tasks use at most `sched_rt_runtime_us` of each
//! `sched_rt_period_us` (950000 of 1000000 by default, `/proc/sys/kernel/`); the thief's share
//! must stay below it or the kernel, not the thief, decides the share. Both are reported.
//!
//! **Safety.** The thief is a child process (fork without exec: it only makes system calls), so a
//! crash of the caller cannot leave the caller's own threads real-time; it dies with the thread
//! that started it (`PR_SET_PDEATHSIG`), and [`Thief`] kills and reaps it on drop, on every path.
//!
//! **Share taken.** [`Thief::snapshot`] reads the thief's run time (`/proc/PID/schedstat`) and
//! the monotonic clock; [`ThiefSnapshot::share_pct_since`] divides the one by the other between
//! two snapshots: the share the thief really took, reported beside the share asked.

use std::io::Read as _;
use std::os::fd::{AsRawFd, RawFd};

use lull_os::{procfs, sys};
use serde::Serialize;

/// The thief's period: 10 ms. Short against the toggling periods compared (0.1–0.5 s, seed 004
/// figure 3.9), so a thread on the thief's CPU sees the same slowdown in any toggling window;
/// several scheduler ticks long (4 ms at `CONFIG_HZ=250`), so the duty cycle is not blurred by
/// the tick.
pub const THIEF_PERIOD_NS: u64 = 10_000_000;

/// The thief's `SCHED_FIFO` priority in the fallback: 1, the lowest real-time priority — above
/// every fair thread, below the kernel's threaded interrupt handlers (priority 50).
pub const THIEF_FIFO_PRIORITY: i32 = 1;

/// The largest share taken: 90 %, under the kernel's default real-time limit (95 %,
/// `sched_rt_runtime_us` / `sched_rt_period_us`) so the thief, not the throttle, sets it.
pub const MAX_SHARE_PCT: u32 = 90;

/// How the thief holds its share.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThiefMethod {
    /// `SCHED_DEADLINE`: the kernel enforces runtime per period.
    Deadline,
    /// `SCHED_FIFO` busy for the share of each period, asleep for the rest.
    FifoDutyCycle,
}

/// The thief could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ThiefError {
    #[error("thief share {0} % is outside 1..={MAX_SHARE_PCT} %")]
    BadShare(u32),
    #[error("CPU {cpu} is not one this process may use (allowed: {allowed:?})")]
    BadCpu { cpu: u32, allowed: Vec<u32> },
    #[error("cannot start the thief: {0}")]
    Spawn(std::io::Error),
    #[error("the thief cannot pin itself to CPU {cpu}: {errno}")]
    Pin { cpu: u32, errno: sys::Errno },
    #[error(
        "the thief cannot become real-time (SCHED_DEADLINE: {deadline}; SCHED_FIFO: {fifo}); \
         this needs root or CAP_SYS_NICE"
    )]
    NotRealTime {
        deadline: sys::Errno,
        fifo: sys::Errno,
    },
    #[error("the thief ended before saying how it runs")]
    Vanished,
    #[error("cannot read the thief's run time: {0}")]
    Measure(String),
}

/// The kernel's real-time limit, `/proc/sys/kernel/sched_rt_{runtime,period}_us`
/// (`runtime_us` −1: no limit). `None` where unreadable.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
pub struct RtLimit {
    pub runtime_us: i64,
    pub period_us: i64,
}

impl RtLimit {
    /// Reads the limit from `/proc/sys/kernel`.
    #[must_use]
    pub fn read() -> Option<RtLimit> {
        let get = |name: &str| -> Option<i64> {
            std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        Some(RtLimit {
            runtime_us: get("sched_rt_runtime_us")?,
            period_us: get("sched_rt_period_us")?,
        })
    }

    /// The share of a CPU real-time tasks may take, percent (100 when unlimited).
    #[must_use]
    pub fn share_pct(self) -> f64 {
        if self.runtime_us < 0 || self.period_us <= 0 {
            100.0
        } else {
            self.runtime_us as f64 * 100.0 / self.period_us as f64
        }
    }
}

/// The thief's run time and the clock at one moment.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ThiefSnapshot {
    pub run_ns: u64,
    pub at_ns: u64,
}

impl ThiefSnapshot {
    /// The share of its CPU the thief took from `earlier` to `self`, percent (`None` for an
    /// empty interval).
    #[must_use]
    pub fn share_pct_since(&self, earlier: &ThiefSnapshot) -> Option<f64> {
        let wall = self.at_ns.checked_sub(earlier.at_ns).filter(|&w| w > 0)?;
        let run = self.run_ns.saturating_sub(earlier.run_ns);
        Some(run as f64 * 100.0 / wall as f64)
    }
}

/// A running thief. Dropping it kills and reaps it.
#[derive(Debug)]
pub struct Thief {
    pid: i32,
    cpu: u32,
    share_pct: u32,
    method: ThiefMethod,
    deadline_refused: Option<sys::Errno>,
    started: ThiefSnapshot,
}

/// What the child tells its parent through the status pipe: four `i32`s.
const STATUS_DEADLINE: i32 = 0;
const STATUS_FIFO: i32 = 1;
const STATUS_NOT_RT: i32 = 2;
const STATUS_NOT_PINNED: i32 = 3;

impl Thief {
    /// Starts a thief taking `share_pct` % of CPU `cpu`.
    ///
    /// # Errors
    /// [`ThiefError`]: a share out of range, a CPU this process may not use, a refused
    /// real-time policy (not root), a failed fork.
    pub fn start(cpu: u32, share_pct: u32) -> Result<Thief, ThiefError> {
        if !(1..=MAX_SHARE_PCT).contains(&share_pct) {
            return Err(ThiefError::BadShare(share_pct));
        }
        let allowed: Vec<u32> = sys::sched_getaffinity(std::process::id() as i32)
            .map(|s| s.cpus().filter_map(|c| u32::try_from(c).ok()).collect())
            .unwrap_or_default();
        if !allowed.contains(&cpu) {
            return Err(ThiefError::BadCpu { cpu, allowed });
        }
        let runtime_ns = THIEF_PERIOD_NS * u64::from(share_pct) / 100;
        let mut set = sys::CpuSet::empty();
        set.insert(cpu as usize);
        let deadline = sys::SchedAttr {
            policy: sys::SCHED_DEADLINE,
            flags: 0,
            nice: 0,
            priority: 0,
            runtime_ns,
            deadline_ns: THIEF_PERIOD_NS,
            period_ns: THIEF_PERIOD_NS,
        };
        let fifo = sys::SchedAttr {
            policy: sys::SCHED_FIFO,
            flags: 0,
            nice: 0,
            priority: THIEF_FIFO_PRIORITY as u32,
            runtime_ns: 0,
            deadline_ns: 0,
            period_ns: 0,
        };
        let (read_end, write_end) = sys::pipe(false).map_err(ThiefError::Spawn)?;
        let parent_pid = std::process::id() as i32;
        // SAFETY: the child runs only `thief_child`, which makes system calls on values
        // prepared above and never returns, allocates or takes a lock.
        let forked = unsafe { sys::fork() }.map_err(ThiefError::Spawn)?;
        let sys::Forked::Parent(pid) = forked else {
            thief_child(
                &set,
                &deadline,
                &fifo,
                runtime_ns,
                write_end.as_raw_fd(),
                parent_pid,
            );
        };
        drop(write_end);
        // From here the child exists: every early return drops `thief`, which kills it.
        let mut thief = Thief {
            pid,
            cpu,
            share_pct,
            method: ThiefMethod::FifoDutyCycle,
            deadline_refused: None,
            started: ThiefSnapshot {
                run_ns: 0,
                at_ns: 0,
            },
        };
        let mut buf = [0u8; 16];
        let mut pipe = std::fs::File::from(read_end);
        pipe.read_exact(&mut buf)
            .map_err(|_| ThiefError::Vanished)?;
        let word = |i: usize| {
            i32::from_ne_bytes([buf[i * 4], buf[i * 4 + 1], buf[i * 4 + 2], buf[i * 4 + 3]])
        };
        let (status, dl_errno, fifo_errno, pin_errno) = (word(0), word(1), word(2), word(3));
        match status {
            STATUS_DEADLINE => thief.method = ThiefMethod::Deadline,
            STATUS_FIFO => {
                thief.method = ThiefMethod::FifoDutyCycle;
                thief.deadline_refused = Some(sys::Errno(dl_errno));
            }
            STATUS_NOT_PINNED => {
                return Err(ThiefError::Pin {
                    cpu,
                    errno: sys::Errno(pin_errno),
                })
            }
            _ => {
                return Err(ThiefError::NotRealTime {
                    deadline: sys::Errno(dl_errno),
                    fifo: sys::Errno(fifo_errno),
                })
            }
        }
        thief.started = thief.snapshot()?;
        Ok(thief)
    }

    #[must_use]
    pub fn pid(&self) -> i32 {
        self.pid
    }

    #[must_use]
    pub fn cpu(&self) -> u32 {
        self.cpu
    }

    #[must_use]
    pub fn share_pct(&self) -> u32 {
        self.share_pct
    }

    #[must_use]
    pub fn method(&self) -> ThiefMethod {
        self.method
    }

    /// Why `SCHED_DEADLINE` was refused (`None` when it runs under it).
    #[must_use]
    pub fn deadline_refused(&self) -> Option<sys::Errno> {
        self.deadline_refused
    }

    /// The thief's run time now.
    ///
    /// # Errors
    /// [`ThiefError::Measure`] when its `schedstat` cannot be read (it died).
    pub fn snapshot(&self) -> Result<ThiefSnapshot, ThiefError> {
        let run_ns = procfs::thread_run_ns(self.pid, self.pid)
            .map_err(|e| ThiefError::Measure(e.to_string()))?;
        Ok(ThiefSnapshot {
            run_ns,
            at_ns: sys::monotonic_ns(),
        })
    }

    /// The share taken since the thief started, percent.
    ///
    /// # Errors
    /// As [`Thief::snapshot`].
    pub fn share_taken_pct(&self) -> Result<Option<f64>, ThiefError> {
        Ok(self.snapshot()?.share_pct_since(&self.started))
    }
}

impl Drop for Thief {
    fn drop(&mut self) {
        // `pid` is our own child, not yet reaped (only this drop reaps it), so it cannot name
        // another process.
        sys::kill_and_reap(self.pid);
    }
}

/// The forked child: pins itself, becomes real-time, says how on `status_fd`, and takes its
/// share for ever. Only system calls: no allocation, no lock (the parent may have other threads).
fn thief_child(
    set: &sys::CpuSet,
    deadline: &sys::SchedAttr,
    fifo: &sys::SchedAttr,
    runtime_ns: u64,
    status_fd: RawFd,
    parent_pid: i32,
) -> ! {
    {
        // The parent may have gone between fork and prctl: then nobody would kill the thief.
        if !sys::die_with_parent_pid(parent_pid) {
            sys::exit_now(1);
        }
        let me = sys::getpid();
        let report = |words: [i32; 4]| {
            let mut b = [0u8; 16];
            for (i, w) in words.iter().enumerate() {
                b[i * 4..i * 4 + 4].copy_from_slice(&w.to_ne_bytes());
            }
            let _ = sys::write_all_once(status_fd, &b);
            // SAFETY: the child owns its copy of the pipe's write end and reports once.
            unsafe { sys::close_raw(status_fd) };
        };
        if let Err(e) = sys::sched_setaffinity(me, set) {
            report([STATUS_NOT_PINNED, 0, 0, e.raw_os_error().unwrap_or(0)]);
            sys::exit_now(1);
        }
        match sys::sched_setattr(me, deadline) {
            Ok(()) => {
                report([STATUS_DEADLINE, 0, 0, 0]);
                // The kernel gives the loop its runtime per period and throttles the rest.
                loop {
                    std::hint::spin_loop();
                }
            }
            Err(dl) => match sys::sched_setattr(me, fifo) {
                Ok(()) => report([STATUS_FIFO, dl.raw_os_error().unwrap_or(0), 0, 0]),
                Err(ff) => {
                    report([
                        STATUS_NOT_RT,
                        dl.raw_os_error().unwrap_or(0),
                        ff.raw_os_error().unwrap_or(0),
                        0,
                    ]);
                    sys::exit_now(1);
                }
            },
        }
        let mut period_start = sys::monotonic_ns();
        loop {
            let busy_until = period_start + runtime_ns;
            while sys::monotonic_ns() < busy_until {
                std::hint::spin_loop();
            }
            period_start += THIEF_PERIOD_NS;
            let now = sys::monotonic_ns();
            // Behind by a whole period (preempted, throttled): restart the cycle from now rather
            // than spin to catch up, which would take more than the share.
            if now > period_start + THIEF_PERIOD_NS {
                period_start = now;
                continue;
            }
            sys::sleep_until_monotonic_ns(period_start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_between_snapshots() {
        let a = ThiefSnapshot {
            run_ns: 1_000,
            at_ns: 10_000,
        };
        let b = ThiefSnapshot {
            run_ns: 6_000,
            at_ns: 20_000,
        };
        assert_eq!(b.share_pct_since(&a), Some(50.0));
        assert_eq!(a.share_pct_since(&a), None);
    }

    #[test]
    fn rt_limit_share() {
        let l = RtLimit {
            runtime_us: 950_000,
            period_us: 1_000_000,
        };
        assert!((l.share_pct() - 95.0).abs() < 1e-9);
        assert!(
            (RtLimit {
                runtime_us: -1,
                period_us: 1_000_000
            }
            .share_pct()
                - 100.0)
                .abs()
                < 1e-9
        );
    }

    #[test]
    fn bad_share_is_refused_before_anything_starts() {
        assert!(matches!(Thief::start(0, 0), Err(ThiefError::BadShare(0))));
        assert!(matches!(Thief::start(0, 95), Err(ThiefError::BadShare(95))));
        assert!(matches!(
            Thief::start(4096, 50),
            Err(ThiefError::BadCpu { .. })
        ));
    }
}
