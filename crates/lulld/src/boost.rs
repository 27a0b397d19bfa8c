//! Seed 003's interactive boost in the daemon: [`BoostPolicy`], a plug-in ([`crate::policy`])
//! that puts `lull_sched::boost::seam::BoostSeam` on the policy seam, with what it needs that guiS does
//! not — the seam's deadline timer (the budget C), and in nice mode the run-queue sampler
//! ([`crate::seam`]'s `RunQueues` fact) — and says what this machine lets it do.
//!
//! **What is boosted.** Only the event thread and drawing thread that an app attached to the
//! display server declared (`THREAD`); the display server accepts a declaration only for a thread
//! of the process that attached, named with that process's start time, and the actuator checks
//! that start time again before each system call. No other thread on the machine is touched.
//!
//! **With the other policies.** guiS's table 1 acts only through the cgroup freezer (freeze,
//! thaw, release) and the boost only on nice values and slices (nice or slice, and
//! `RestoreSched`, which gives back those two and nothing else), so the two never undo each
//! other; when an app leaves both release its threads. UCSG sets the nice values of the same
//! threads by its own rule, so the boost and UCSG do not run together: both write the nice-value
//! knob, and the daemon refuses a second writer ([`crate::policy::PolicyError::KnobTaken`]).
//!
//! What degrades, and how it is said ([`BoostStatus`]):
//! - **Not allowed negative nice values** (neither `CAP_SYS_NICE` nor an `RLIMIT_NICE` that
//!   reaches below 0, i.e. not root): nice mode still runs, and the kernel's refusals are counted
//!   (`EPERM`/`EACCES` under the actuator's `nice`).
//! - **No custom slices** (Linux before 6.12): slice mode still runs; the probe at start (on the
//!   daemon's own thread, put back at once) finds it, and the actuator counts every slice
//!   unavailable.
//! - **No `/proc/loadavg`**: nice mode sizes every boost for an empty queue.

use std::fmt;

use lull_os::sys::{self, SchedAttr};
use lull_sched::boost::seam::{BoostConfigError, BoostMode, BoostSeam, BoostSeamConfig};
use lull_sched::seam::SeamPolicy;
use serde::Serialize;

use crate::policy::{Armed, FactSource, Installed, Knob, Policy};

/// `CAP_SYS_NICE`'s bit in a capability set (`include/uapi/linux/capability.h`).
const CAP_SYS_NICE_BIT: u32 = 23;

/// What [`crate::daemon::Daemon::enable_boost`] found this machine lets the boost do.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct BoostStatus {
    pub mode: &'static str,
    pub c_ns: u64,
    /// The slice of slice mode.
    pub slice_ns: u64,
    /// The online CPUs the run-queue count is divided among.
    pub cpus: u32,
    /// `None`: negative nice values can be set (nice mode); else why not.
    pub negative_nice_unavailable: Option<String>,
    /// `None`: custom slices work (slice mode); else why not.
    pub slice_unavailable: Option<String>,
    /// `None`: the run-queue count can be read (nice mode); else why not.
    pub run_queues_unavailable: Option<String>,
}

impl fmt::Display for BoostStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "interactive boost on: {} mode, C = {} us",
            self.mode,
            self.c_ns / 1_000
        )?;
        if self.mode == BoostMode::Slice.name() {
            write!(f, ", slice {} us", self.slice_ns / 1_000)?;
        } else {
            write!(f, ", eq. 6 against the run queues of {} CPU(s)", self.cpus)?;
        }
        for why in [
            &self.negative_nice_unavailable,
            &self.slice_unavailable,
            &self.run_queues_unavailable,
        ]
        .into_iter()
        .flatten()
        {
            write!(f, "; {why}")?;
        }
        Ok(())
    }
}

/// Whether this process may set negative nice values: `CAP_SYS_NICE` in its effective set
/// (`/proc/self/status`, `CapEff`), or an `RLIMIT_NICE` whose floor (20 − limit) is below 0.
fn negative_nice_unavailable() -> Option<String> {
    let cap = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("CapEff:"))?;
            u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
        })
        .is_some_and(|bits| bits & (1 << CAP_SYS_NICE_BIT) != 0);
    if cap {
        return None;
    }
    // `None` is RLIM_INFINITY: no limit.
    if sys::nice_rlimit().is_ok_and(|cur| cur.is_none_or(|n| n > 20)) {
        return None;
    }
    Some(
        "negative nice values unavailable: not root (no CAP_SYS_NICE, RLIMIT_NICE stops at 0); \
         the kernel's refusals are counted as EPERM/EACCES and threads keep their nice"
            .to_owned(),
    )
}

/// Whether the kernel keeps a custom slice for a fair thread: set `slice_ns` on the calling
/// thread, read it back, and put back what was there.
fn slice_unavailable(slice_ns: u64) -> Option<String> {
    let tid = sys::gettid();
    let before = match sys::sched_getattr(tid) {
        Ok(a) => a,
        Err(e) => {
            return Some(format!(
                "custom slices unavailable: sched_getattr: {}",
                sys::Errno::from(e)
            ))
        }
    };
    if !before.is_fair() {
        return Some("custom slices unavailable: the daemon's thread is not a fair one".into());
    }
    let flags = before.reset_on_fork_flag();
    let want = SchedAttr {
        runtime_ns: slice_ns,
        flags,
        ..before
    };
    let kept = sys::sched_setattr(tid, &want)
        .and_then(|()| sys::sched_getattr(tid))
        .map_err(|e| sys::Errno::from(e).to_string());
    // The default slice is `sched_runtime` 0.
    let _ = sys::sched_setattr(
        tid,
        &SchedAttr {
            runtime_ns: 0,
            flags,
            ..before
        },
    );
    match kept {
        Ok(a) if a.runtime_ns == slice_ns => None,
        Ok(a) => Some(format!(
            "custom slices unavailable: the kernel keeps its own slice ({} ns; Linux 6.12 or \
             later takes one)",
            a.runtime_ns
        )),
        Err(e) => Some(format!("custom slices unavailable: sched_setattr: {e}")),
    }
}

/// The interactive boost as a plug-in of the daemon ([`crate::policy`]): it needs the display
/// server's declared threads, the deadline timer of its budget, in nice mode the run queues and
/// the end of every handler; it writes nice values and slices.
#[derive(Debug)]
pub struct BoostPolicy {
    policy: BoostSeam,
}

impl BoostPolicy {
    /// The boost with `config`.
    ///
    /// # Errors
    /// [`BoostConfigError`] for a C or slice out of range.
    pub fn new(config: &BoostSeamConfig) -> Result<BoostPolicy, BoostConfigError> {
        let policy = BoostSeam::new(*config)?;
        Ok(BoostPolicy { policy })
    }
}

impl Policy for BoostPolicy {
    fn name(&self) -> &'static str {
        "boost"
    }

    fn needs(&self) -> Vec<FactSource> {
        let mut needs = vec![FactSource::DisplayServer, FactSource::DeadlineTimer];
        if self.policy.wants_run_queues() {
            needs.push(FactSource::RunQueues);
        }
        if self.policy.wants_handler_finished() {
            needs.push(FactSource::EveryWait);
        }
        needs
    }

    /// Both in either mode: `RestoreSched` gives back the nice value and the slice.
    fn writes(&self) -> Vec<Knob> {
        vec![Knob::Nice, Knob::Slice]
    }

    fn install(self: Box<Self>) -> Installed {
        Installed {
            seam: Some(Box::new(self.policy)),
            ..Installed::default()
        }
    }
}

impl BoostStatus {
    /// What this machine lets the boost with `config` do, once the host armed what it needs.
    #[must_use]
    pub fn new(config: &BoostSeamConfig, armed: &Armed) -> BoostStatus {
        let (negative_nice_unavailable, slice_unavailable) = match config.mode {
            BoostMode::Nice => (negative_nice_unavailable(), None),
            BoostMode::Slice => (None, slice_unavailable(config.slice_ns)),
        };
        BoostStatus {
            mode: config.mode.name(),
            c_ns: config.c_ns,
            slice_ns: config.slice_ns,
            cpus: armed.cpus,
            negative_nice_unavailable,
            slice_unavailable,
            run_queues_unavailable: armed.run_queues_unavailable.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_says_what_is_missing() {
        let s = BoostStatus {
            mode: "nice",
            c_ns: 10_000_000,
            slice_ns: 100_000,
            cpus: 2,
            negative_nice_unavailable: Some("negative nice values unavailable: not root".into()),
            slice_unavailable: None,
            run_queues_unavailable: None,
        };
        let text = s.to_string();
        assert!(text.starts_with("interactive boost on: nice mode, C = 10000 us"));
        assert!(text.contains("2 CPU(s)"));
        assert!(text.ends_with("; negative nice values unavailable: not root"));
    }

    /// On this kernel (6.18) custom slices exist; the probe leaves the thread's slice as it was.
    #[test]
    fn the_slice_probe_puts_the_slice_back() {
        let tid = sys::gettid();
        let before = sys::sched_getattr(tid).unwrap();
        let _ = slice_unavailable(300_000);
        assert_eq!(sys::sched_getattr(tid).unwrap(), before);
    }
}
