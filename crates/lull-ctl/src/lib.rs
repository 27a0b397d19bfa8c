//! Seed 004's controller interface (§2.2, figure 2.1), live and without a kernel module.
//!
//! The seed's module registers process ids, senses each task's scaled CPU time and state, and
//! actuates CPU masks. Here the same three jobs are done from user space on stock Linux:
//!
//! | seed module | here |
//! | --- | --- |
//! | register a pid, follow its tasks | [`Registry::register`]: `/proc/PID/task` now, the proc connector for threads and child processes born later (root), else a listing at each sample |
//! | sense scaled CPU time, state | [`Registry::sample`]: `/proc/PID/task/TID/schedstat` and `stat` (state, CPU), scaled by CPU capacity × frequency ([`sense`]) |
//! | actuate CPU masks | [`Ctl::set_mask`], and the seam's `Action::Affinity` in [`run()`]: `lull_actuate::Actuator` (`sched_setaffinity`, the process's start time checked, masks restored at the end) |
//!
//! [`watch()`] streams samples of a process until it exits; [`run()`] starts a command under a
//! scheme of `lull_sched::controller` and reports its completion time and each thread's
//! placements; [`overhead`] measures what sensing costs. The C ABI of `include/lull_ctl.h` is
//! [`capi`].

pub mod capi;
mod error;
pub mod overhead;
mod registry;
mod run;
pub mod sense;
mod wakeups;
mod watch;

use lull_actuate::{Actuator, Outcome, Refusal};
use lull_os::sys::Errno;
use lull_sched::controller::CoreSets;
use lull_sched::seam::{Action, CpuMask, ThreadRef};

pub use error::CtlError;
pub use registry::{Change, FollowMode, Registry, RegistryCounters, Sample};
pub use run::{run, RunOptions, RunReport, ThreadTrace};
pub use watch::{watch, WatchOptions, WatchSummary};

/// Why the controller's actuator has no cgroup freezer: it acts on CPU masks only.
pub(crate) const NO_FREEZER: &str = "the controller interface acts on CPU masks only";

/// The controller interface as one handle: a [`Registry`] and an actuator for CPU masks, what
/// the C ABI holds. Masks set through it are put back when it is closed or dropped, unless
/// [`Ctl::keep_masks`] is called.
#[derive(Debug)]
pub struct Ctl {
    registry: Registry,
    actuator: Actuator,
    samples: Vec<Sample>,
    changes: Vec<Change>,
}

impl Default for Ctl {
    fn default() -> Ctl {
        Ctl::new()
    }
}

impl Ctl {
    /// A handle following registered processes' threads (not their children).
    #[must_use]
    pub fn new() -> Ctl {
        Ctl {
            registry: Registry::new(false),
            actuator: Actuator::new(Err(NO_FREEZER.to_owned())),
            samples: Vec::new(),
            changes: Vec::new(),
        }
    }

    #[must_use]
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Registers process `pid` ([`Registry::register`]).
    ///
    /// # Errors
    /// As [`Registry::register`].
    pub fn register(&mut self, pid: i32) -> Result<Vec<ThreadRef>, CtlError> {
        self.registry.register(pid)
    }

    /// Samples every tracked thread; `None` once every registered process has gone.
    pub fn sample(&mut self) -> Option<&[Sample]> {
        self.samples.clear();
        self.changes.clear();
        self.registry.sample(&mut self.samples, &mut self.changes);
        if self.samples.is_empty() && !self.registry.any_alive() {
            return None;
        }
        Some(&self.samples)
    }

    /// Sets the CPU mask of thread `tid`: a tracked thread, or any thread of any process
    /// (looked up in `/proc`).
    ///
    /// # Errors
    /// [`CtlError::NoSuchThread`], [`CtlError::BadMask`] (no online CPU in it),
    /// [`CtlError::PermissionDenied`].
    pub fn set_mask(&mut self, tid: i32, mask: u64) -> Result<(), CtlError> {
        let thread = match self.registry.thread(tid) {
            Some(t) => t,
            None => lookup_thread(tid)?,
        };
        set_mask_with(&mut self.actuator, thread, mask)
    }

    /// Leaves the masks set so far as they are when the handle goes (a one-shot `set-mask`).
    pub fn keep_masks(&mut self) {
        self.actuator.forget_all();
    }
}

/// The mask of the CPU list `text` given as the option `--name`, every CPU online (and below
/// 64, the mask's width); an error names the option.
///
/// # Errors
/// [`CtlError::BadCpus`] for a text that is not a CPU list or names a CPU not online.
pub fn cpu_mask(name: &str, text: &str, online: &[u32]) -> Result<u64, CtlError> {
    let bad = |why: String| CtlError::BadCpus { why };
    let cpus = lull_os::topology::parse_cpu_list(text)
        .ok_or_else(|| bad(format!("--{name} {text} is not a CPU list like 0 or 0-3,6")))?;
    let mut mask = 0u64;
    for c in cpus {
        if !online.contains(&c) || c >= 64 {
            return Err(bad(format!("--{name} names CPU {c}, which is not online")));
        }
        mask |= 1 << c;
    }
    Ok(mask)
}

/// The fast and slow CPU sets of a run from CPU lists (`0`, `0-3,6`), checked against the CPUs
/// `online`: each list well formed and online, the sets disjoint, their union not empty. No
/// fast list: every online CPU not slow (no capacity thief: every CPU is fast); no slow list:
/// none.
///
/// # Errors
/// [`CtlError::BadCpus`] saying what is wrong.
pub fn core_sets(
    fast: Option<&str>,
    slow: Option<&str>,
    online: &[u32],
) -> Result<CoreSets, CtlError> {
    let bad = |why: String| CtlError::BadCpus { why };
    let list = |name: &str, text: &str| cpu_mask(name, text, online);
    let all = online
        .iter()
        .filter(|&&c| c < 64)
        .fold(0u64, |m, &c| m | 1 << c);
    let slow = slow.map(|s| list("slow", s)).transpose()?.unwrap_or(0);
    let fast = match fast {
        Some(f) => list("fast", f)?,
        None => all & !slow,
    };
    if fast & slow != 0 {
        return Err(bad(format!(
            "--fast and --slow share CPUs (mask {:#x})",
            fast & slow
        )));
    }
    if fast | slow == 0 {
        return Err(bad("no CPU in either set".into()));
    }
    Ok(CoreSets {
        fast: CpuMask(fast),
        slow: CpuMask(slow),
    })
}

/// The thread `tid` as a `ThreadRef`, from `/proc`.
fn lookup_thread(tid: i32) -> Result<ThreadRef, CtlError> {
    let pid = lull_os::procfs::thread_group_of(tid).ok_or(CtlError::NoSuchThread { tid })?;
    let start = lull_os::procfs::process_start_ticks(pid).ok_or(CtlError::NoSuchThread { tid })?;
    Ok(ThreadRef {
        pid,
        tid,
        process_start_ticks: start,
    })
}

/// Sets `thread`'s mask through `actuator`, each refusal as its typed error.
pub(crate) fn set_mask_with(
    actuator: &mut Actuator,
    thread: ThreadRef,
    mask: u64,
) -> Result<(), CtlError> {
    let tid = thread.tid;
    match actuator.apply(&Action::Affinity {
        thread,
        cpus: CpuMask(mask),
    }) {
        Outcome::Applied | Outcome::PutOff => Ok(()),
        Outcome::Refused(Refusal::Errno(e)) if e == Errno::EPERM || e == Errno::EACCES => {
            Err(CtlError::PermissionDenied {
                what: format!("set the CPU mask of thread {tid}"),
                errno: e,
            })
        }
        Outcome::Refused(Refusal::Errno(e)) if e == Errno::EINVAL => {
            Err(CtlError::BadMask { mask })
        }
        Outcome::Refused(Refusal::Errno(e)) if e != Errno::ESRCH => Err(CtlError::Io {
            what: format!("set the CPU mask of thread {tid}"),
            source: e.into(),
        }),
        Outcome::Refused(_) | Outcome::Unavailable => Err(CtlError::NoSuchThread { tid }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_sets_are_checked() {
        let online = [0, 1, 2, 3];
        let s = core_sets(None, None, &online).unwrap();
        assert_eq!((s.fast.0, s.slow.0), (0b1111, 0));
        let s = core_sets(None, Some("0"), &online).unwrap();
        assert_eq!((s.fast.0, s.slow.0), (0b1110, 0b0001));
        let s = core_sets(Some("2-3"), Some("0,1"), &online).unwrap();
        assert_eq!((s.fast.0, s.slow.0), (0b1100, 0b0011));
        for (f, sl) in [
            (Some("0-1"), Some("1")),
            (Some("7"), None),
            (Some("x"), None),
            (Some(""), Some("")),
            (None, Some("0-3,9")),
        ] {
            assert!(
                matches!(core_sets(f, sl, &online), Err(CtlError::BadCpus { .. })),
                "{f:?} {sl:?}"
            );
        }
    }

    #[test]
    fn a_cpu_mask_error_names_the_option_given() {
        assert_eq!(cpu_mask("cpus", "1,3", &[0, 1, 2, 3]).unwrap(), 0b1010);
        let CtlError::BadCpus { why } = cpu_mask("cpus", "5", &[0, 1]).unwrap_err() else {
            panic!("not BadCpus")
        };
        assert_eq!(why, "--cpus names CPU 5, which is not online");
    }
}
