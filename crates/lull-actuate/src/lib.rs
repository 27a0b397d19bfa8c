//! The policy actuator: applies the seam's [`Action`]s (`lull_sched::seam`) to threads and
//! CPUs with what Linux offers, and counts per action kind what was applied, put off, refused
//! and not available on this machine ([`ActuatorReport`]). Its own crate, below the daemon:
//! `lulld` applies its policies' actions with it, `lull-ctl` its controller's CPU masks, and
//! neither needs the other.
//!
//! - this module: the [`Actuator`] and its per-thread record of what it changed;
//! - [`freezer`]: freezing and thawing single threads of another process (cgroup v2 threaded
//!   subtree, or the v1 freezer);
//! - `cpufreq`: frequency requests through sysfs; `report`: the counts per action kind;
//! - `test_support` (feature `test-support`): threads and freezers for the tests that adopt.
//!
//! | action | what it does here |
//! | --- | --- |
//! | `Nice` | `setpriority(PRIO_PROCESS, tid, nice)`: the one thread's nice value |
//! | `Slice` | `sched_setattr` with the thread's policy and nice as they are and `sched_runtime` set: the fair class's custom slice (Linux 6.12+; the kernel clamps it to 0.1–100 ms). The slice is read back; a kernel that ignores it makes the kind unavailable |
//! | `Affinity` | `sched_setaffinity(tid, mask)` |
//! | `Freeze`, `Thaw` | the cgroup freezer ([`freezer`]); the first touch adopts the thread into `<namespace>/<pid>/<label>-<tid>`, the label the daemon noted when the thread was declared (its category). A thread to freeze that is parked in a futex wait with no timeout is left to its gate (put off: the policy asks again at its next fact) |
//! | `CpuWeight` | `cpu.weight` of the thread's own cgroup in the freezer's cgroup v2 subtree, the cpu controller enabled on the way down; unavailable with the v1 freezer, without a freezer, or when the cpu controller is not in cgroup v2 |
//! | `Frequency` | cpufreq: `scaling_setspeed` under the `userspace` governor, else `scaling_min_freq` raised; unavailable without cpufreq |
//! | `Release` | undoes everything done to the thread: thawed and given back by the freezer (its process too once the freezer holds no thread of it), its nice, slice and CPU mask as they were at the first touch |
//! | `RestoreSched` | puts back only the thread's nice and slice as they were before the first `Nice` or `Slice`, from the same record `Release` uses; its freezer cgroup and CPU mask stay. Nothing changed is nothing to do (applied, no system call). The next `Nice` or `Slice` reads the thread's attributes afresh |
//!
//! **Ids are checked before every action that calls the kernel.** A `ThreadRef` carries its
//! process's start time. At the first touch of a process the actuator opens a pidfd for it and
//! then reads `/proc/PID/stat`: if the start time is not the `ThreadRef`'s the action is refused
//! (`stale`), if there is no such process `ESRCH`. From then on the pidfd — which names that one
//! process however its pid is reused — says in one `poll` whether it is still alive; only once it
//! has exited is `/proc/PID/stat` read again. The thread must also still be one of the
//! process's (`/proc/PID/task/TID`, else `ESRCH`); a thread pidfd (`PIDFD_THREAD`, Linux 6.9+)
//! opened before that check then vouches for the thread in one `poll` while it lives, so acting
//! again on a thread already admitted (the interactive boost, at every input event) costs one
//! `poll` and the action's own call. A freeze or thaw of a thread already frozen
//! or running as asked calls nothing and checks nothing. When the process it holds something of
//! has exited and its pid names another process, what it held is dropped without acting on that
//! pid (the freezer removes its cgroups; counted in [`FreezerCounters::pid_reused`]). What remains
//! open: a tid reused between the check and the call (microseconds), and, without pidfds (before
//! Linux 5.3), a pid reused likewise or within the same clock tick.
//!
//! Actions are levels: asking for what already holds changes nothing and counts as applied.
//! The actuator keeps, per thread it touched, what it changed and what was there before; that
//! is all [`Action::Release`] needs, so a policy need not remember what it asked. Nothing here
//! blocks on an app: every call is a system call or a write to a kernel file.

mod cgroupfs;
mod cpufreq;
pub mod freezer;
mod report;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;

use std::collections::{BTreeMap, HashMap};
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use lull_os::procfs;
use lull_os::sys::{self, CpuSet, Errno, SchedAttr};
use lull_sched::seam::{Action, ThreadRef};
use serde::Serialize;

use crate::freezer::{Freezer, FreezerError, ThreadHandle};

pub use report::{ActuatorReport, KindReport, Outcome, Refusal};

/// The label of a thread's freezer cgroup when the daemon noted none: `thread-<tid>`.
const DEFAULT_LABEL: &str = "thread";

/// The range Linux clamps a fair thread's custom slice to (`__setscheduler_params`,
/// `kernel/sched/syscalls.c`, 6.12+), as the EEVDF class clamps it.
use lull_sched::class::eevdf::{
    MAX_CUSTOM_SLICE_NS as SLICE_MAX_NS, MIN_CUSTOM_SLICE_NS as SLICE_MIN_NS,
};

/// What the freezer part of the actuator did; guiS's counters in the daemon's report
/// (`GuisCounters`) are these.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct FreezerCounters {
    /// Threads taken into the freezer (first touch by `Freeze`, `Thaw` or `CpuWeight`).
    pub adopted: u64,
    /// First touches that could not take the thread (gone, its process reused or already in a
    /// threaded cgroup, the kernel's refusal).
    pub adopt_failed: u64,
    pub freezes: u64,
    pub thaws: u64,
    /// Freezes put off: the thread was parked in a futex wait with no timeout.
    pub left_parked: u64,
    /// Freeze or thaw writes the kernel refused.
    pub freeze_errors: u64,
    /// Processes given back by the freezer, once it held no thread of theirs.
    pub released: u64,
    /// Failed give-backs of a thread or a process.
    pub release_errors: u64,
    /// Held processes found to have exited with their pid naming another process: dropped
    /// without acting on that pid.
    pub pid_reused: u64,
}

/// What the actuator did to one thread, and what was there before.
#[derive(Debug, Default)]
struct Touched {
    /// Its cgroup in the freezer.
    handle: Option<ThreadHandle>,
    /// What the actuator last made of it in the freezer.
    frozen: bool,
    /// Its attributes before the first `Nice` or `Slice`.
    sched: Option<SchedAttr>,
    nice_set: bool,
    slice_set: bool,
    /// Its CPU mask before the first `Affinity`.
    affinity: Option<CpuSet>,
}

impl Touched {
    /// Nothing to undo.
    fn is_empty(&self) -> bool {
        self.handle.is_none() && !self.nice_set && !self.slice_set && self.affinity.is_none()
    }
}

/// A process the actuator holds something of (or checked in this batch).
#[derive(Debug)]
struct Held {
    /// The start time its threads' `ThreadRef`s carry (checked to be the process's when first
    /// touched).
    start_ticks: u64,
    threads: BTreeMap<i32, Touched>,
    /// Names this process and no other while the actuator holds it: opened before its start
    /// time was checked. `None` where the kernel has no pidfds.
    pidfd: Option<OwnedFd>,
    /// Thread pidfds (`PIDFD_THREAD`, Linux 6.9+) of its threads already admitted, each opened
    /// before the thread was found to be the process's: while one polls alive, its tid is still
    /// that thread, so admitting it again is one `poll` (the boost's event path). They outlive
    /// the threads' records, which go as soon as nothing is left to undo; at most
    /// [`MAX_THREAD_PIDFDS`] in all.
    thread_fds: BTreeMap<i32, OwnedFd>,
}

/// The most thread pidfds the actuator keeps open (over every process): enough for the threads
/// of the apps on a screen, far below the default 1024 open files.
const MAX_THREAD_PIDFDS: usize = 256;

/// Applies the seam's actions; see the module docs.
#[derive(Debug)]
pub struct Actuator {
    freezer: Option<Freezer>,
    cpufreq: cpufreq::Cpufreq,
    held: BTreeMap<i32, Held>,
    /// Cgroup labels the daemon noted for threads (their category), used at adoption.
    labels: HashMap<ThreadRef, &'static str>,
    /// Processes a thread was given back of, or whose adoption failed, in this batch: given back
    /// at its end if the freezer then holds no thread of them.
    emptied: Vec<i32>,
    report: ActuatorReport,
    counters: FreezerCounters,
    /// Test builds: added to the start times read from `/proc`, as if each pid named a later
    /// process ([`Actuator::forge_pid_reuse`]).
    #[cfg(any(test, feature = "test-support"))]
    forged: BTreeMap<i32, u64>,
}

impl Actuator {
    /// An actuator with `freezer`, or without one (`Err` says why there is none: freezing,
    /// thawing and CPU weights are then unavailable).
    #[must_use]
    pub fn new(freezer: Result<Freezer, String>) -> Actuator {
        Actuator::with_cpufreq(freezer, Path::new(cpufreq::SYSFS_CPUS))
    }

    fn with_cpufreq(freezer: Result<Freezer, String>, cpus: &Path) -> Actuator {
        let cpufreq = cpufreq::Cpufreq::open(cpus);
        let mut report = ActuatorReport::default();
        report.frequency.unavailable_reason = cpufreq.unavailable().map(str::to_owned);
        let freezer = match freezer {
            Ok(f) => {
                report.cpu_weight.unavailable_reason = f.cpu_weight_unavailable();
                Some(f)
            }
            Err(why) => {
                let why = format!("no cgroup freezer here: {why}");
                report.freeze.unavailable_reason = Some(why.clone());
                report.thaw.unavailable_reason = Some(why.clone());
                report.cpu_weight.unavailable_reason = Some(why);
                None
            }
        };
        Actuator {
            freezer,
            cpufreq,
            held: BTreeMap::new(),
            labels: HashMap::new(),
            emptied: Vec::new(),
            report,
            counters: FreezerCounters::default(),
            #[cfg(any(test, feature = "test-support"))]
            forged: BTreeMap::new(),
        }
    }

    /// The freezer, when there is one.
    #[must_use]
    pub fn freezer(&self) -> Option<&Freezer> {
        self.freezer.as_ref()
    }

    /// Counts per action kind so far, with the reasons of what is unavailable here.
    #[must_use]
    pub fn report(&self) -> &ActuatorReport {
        &self.report
    }

    /// What the freezer part did so far.
    #[must_use]
    pub fn counters(&self) -> FreezerCounters {
        self.counters
    }

    /// The label `thread`'s freezer cgroup gets if it is adopted: its category, noted when the
    /// app declared it, so the cgroup is `<category>-<tid>`.
    pub fn note_label(&mut self, thread: ThreadRef, label: &'static str) {
        self.labels.insert(thread, label);
    }

    /// Forgets the label of a thread no longer declared (replaced, or its app gone).
    pub fn forget_label(&mut self, thread: ThreadRef) {
        self.labels.remove(&thread);
    }

    /// Threads the actuator holds something of (changed, or has in the freezer): 0 once every
    /// policy has given back what it asked.
    #[must_use]
    pub fn held_threads(&self) -> usize {
        self.held.values().map(|h| h.threads.len()).sum()
    }

    /// Whether the actuator holds anything of `thread` (changed it, or has it in the freezer).
    #[must_use]
    pub fn holds(&self, thread: ThreadRef) -> bool {
        self.touched(thread).is_some()
    }

    /// Applies `actions` in order, counting each; then gives back every process the freezer now
    /// holds no thread of, among those a thread was given back of (or failed to be taken from)
    /// in this batch. So a `Release` followed by a `Freeze` of another thread of the same
    /// process (a category declared again) keeps the process where it is.
    pub fn apply_all(&mut self, actions: &[Action]) {
        for a in actions {
            self.apply_one(a);
        }
        self.end_batch();
    }

    /// Applies one action (a batch of one) and says what became of it.
    pub fn apply(&mut self, action: &Action) -> Outcome {
        let outcome = self.apply_one(action);
        self.end_batch();
        outcome
    }

    /// Forgets the nice values, slices and CPU masks as they were before: what was set stays
    /// when the actuator is closed or dropped (a one-shot tool's change, meant to last). What
    /// the freezer holds is still given back.
    pub fn forget_all(&mut self) {
        for h in self.held.values_mut() {
            for x in h.threads.values_mut() {
                (x.sched, x.nice_set, x.slice_set, x.affinity) = (None, false, false, None);
            }
            h.threads.retain(|_, x| !x.is_empty());
        }
        self.end_batch();
    }

    /// Undoes everything still held and puts the cpufreq files back; the freezer removes its
    /// cgroups.
    pub fn close(mut self) {
        self.release_everything();
    }

    fn release_everything(&mut self) {
        let threads: Vec<ThreadRef> = self
            .held
            .iter()
            .flat_map(|(&pid, h)| {
                h.threads.keys().map(move |&tid| ThreadRef {
                    pid,
                    tid,
                    process_start_ticks: h.start_ticks,
                })
            })
            .collect();
        for thread in threads {
            self.release(thread);
        }
        self.end_batch();
        if let Some(f) = self.freezer.take() {
            let _ = f.close();
        }
        self.cpufreq.restore();
    }

    fn apply_one(&mut self, a: &Action) -> Outcome {
        let outcome = match *a {
            Action::Nice { thread, nice } => self.nice(thread, nice),
            Action::Slice { thread, slice_ns } => self.slice(thread, slice_ns),
            Action::Affinity { thread, cpus } => self.affinity(thread, CpuSet::from_mask(cpus.0)),
            Action::Freeze { thread } => self.freeze_or_thaw(thread, true),
            Action::Thaw { thread } => self.freeze_or_thaw(thread, false),
            Action::CpuWeight { thread, weight } => self.cpu_weight(thread, weight),
            Action::Frequency { cpu, khz } => self.cpufreq.request(cpu.0, khz),
            Action::Release { thread } => self.release(thread),
            Action::RestoreSched { thread } => self.restore_sched(thread),
        };
        self.report.kind_mut(a.kind()).count(outcome);
        outcome
    }

    /// Start time of process `pid` now (`None`: no such process).
    fn start_ticks_now(&self, pid: i32) -> Option<u64> {
        let ticks = procfs::process_start_ticks(pid);
        #[cfg(any(test, feature = "test-support"))]
        let ticks = ticks.map(|t| t + self.forged.get(&pid).copied().unwrap_or(0));
        ticks
    }

    fn touched(&self, t: ThreadRef) -> Option<&Touched> {
        self.held
            .get(&t.pid)
            .filter(|h| h.start_ticks == t.process_start_ticks)?
            .threads
            .get(&t.tid)
    }

    /// The record of `t`, made if new. Call only after [`Actuator::admit`] said yes: the process
    /// held under `t.pid` is then `t`'s.
    fn touched_mut(&mut self, t: ThreadRef) -> &mut Touched {
        self.held
            .entry(t.pid)
            .or_insert_with(|| Held {
                start_ticks: t.process_start_ticks,
                threads: BTreeMap::new(),
                pidfd: None,
                thread_fds: BTreeMap::new(),
            })
            .threads
            .entry(t.tid)
            .or_default()
    }

    /// Drops the record of `t` if nothing of it is left to undo (its process's goes at the end
    /// of the batch).
    fn prune(&mut self, t: ThreadRef) {
        if let Some(h) = self.held.get_mut(&t.pid) {
            if h.threads.get(&t.tid).is_some_and(Touched::is_empty) {
                h.threads.remove(&t.tid);
            }
        }
    }

    /// If the process held under `pid` has exited and the pid names another process now
    /// (`now`), drops it: the freezer removes its cgroups without moving that pid, and nothing
    /// of it is restored (its threads are gone).
    fn drop_if_reused(&mut self, pid: i32, now: Option<u64>) {
        let reused = match (self.held.get(&pid), now) {
            (Some(h), Some(now)) => h.start_ticks != now,
            _ => false,
        };
        if !reused {
            return;
        }
        self.held.remove(&pid);
        self.counters.pid_reused += 1;
        if let Some(f) = self.freezer.as_mut().filter(|f| f.holds(pid)) {
            // `PidReused` is the expected answer; the clean-up is done either way.
            let _ = f.release(pid);
        }
    }

    /// Whether `t` may be acted on: its process still has the start time `t` carries, and the
    /// thread is still one of its. A process first admitted is recorded with a pidfd, which
    /// answers the next time.
    fn admit(&mut self, t: ThreadRef) -> Result<(), Refusal> {
        if let Some(h) = self
            .held
            .get_mut(&t.pid)
            .filter(|h| h.start_ticks == t.process_start_ticks)
        {
            if let Some(fd) = h.thread_fds.get(&t.tid) {
                if !sys::pidfd_exited(fd.as_fd()) {
                    return Ok(());
                }
                h.thread_fds.remove(&t.tid);
            }
        }
        let alive = self
            .held
            .get(&t.pid)
            .filter(|h| h.start_ticks == t.process_start_ticks)
            .and_then(|h| h.pidfd.as_ref())
            .map(|fd| !sys::pidfd_exited(fd.as_fd()));
        // Opened before the thread is checked: if it is `t`'s process's, the fd names it.
        let open_fds: usize = self.held.values().map(|h| h.thread_fds.len()).sum();
        let thread_fd = if open_fds < MAX_THREAD_PIDFDS {
            sys::pidfd_open_thread(t.tid).ok()
        } else {
            None
        };
        if alive == Some(true) {
            thread_of(t)?;
            self.keep_thread_fd(t, thread_fd);
            return Ok(());
        }
        // Opened before the start time is read: if that is `t`'s, the pidfd names `t`'s process.
        let pidfd = match alive {
            None => sys::pidfd_open(t.pid).ok(),
            Some(_) => None,
        };
        let now = self.start_ticks_now(t.pid);
        self.drop_if_reused(t.pid, now);
        match now {
            None => Err(Refusal::ESRCH),
            Some(now) if now != t.process_start_ticks => Err(Refusal::Stale),
            Some(_) => {
                thread_of(t)?;
                let h = self.held.entry(t.pid).or_insert_with(|| Held {
                    start_ticks: t.process_start_ticks,
                    threads: BTreeMap::new(),
                    pidfd: None,
                    thread_fds: BTreeMap::new(),
                });
                if h.pidfd.is_none() {
                    h.pidfd = pidfd;
                }
                self.keep_thread_fd(t, thread_fd);
                Ok(())
            }
        }
    }

    /// Keeps the thread pidfd of `t`, just admitted, when its process has a record.
    fn keep_thread_fd(&mut self, t: ThreadRef, fd: Option<OwnedFd>) {
        if let (Some(fd), Some(h)) = (fd, self.held.get_mut(&t.pid)) {
            h.thread_fds.insert(t.tid, fd);
        }
    }

    /// `t`'s scheduling attributes before the actuator first changed them (read now at the
    /// first touch).
    fn original_sched(&mut self, t: ThreadRef) -> Result<SchedAttr, Errno> {
        if let Some(a) = self.touched(t).and_then(|x| x.sched) {
            return Ok(a);
        }
        let a = sys::sched_getattr(t.tid)?;
        self.touched_mut(t).sched = Some(a);
        Ok(a)
    }

    fn nice(&mut self, t: ThreadRef, nice: i8) -> Outcome {
        if let Err(r) = self.admit(t) {
            return Outcome::Refused(r);
        }
        if let Err(e) = self.original_sched(t) {
            return Outcome::Refused(Refusal::Errno(e));
        }
        let outcome = match sys::set_thread_nice(t.tid, i32::from(nice)) {
            Ok(()) => {
                self.touched_mut(t).nice_set = true;
                Outcome::Applied
            }
            Err(e) => Outcome::Refused(Refusal::Errno(e.into())),
        };
        self.prune(t);
        outcome
    }

    fn slice(&mut self, t: ThreadRef, slice_ns: u64) -> Outcome {
        if let Err(r) = self.admit(t) {
            return Outcome::Refused(r);
        }
        if self.report.slice.unavailable_reason.is_some() {
            return Outcome::Unavailable;
        }
        let now = match sys::sched_getattr(t.tid) {
            Ok(a) => a,
            Err(e) => return Outcome::Refused(Refusal::Errno(e.into())),
        };
        if !now.is_fair() {
            return Outcome::Refused(Refusal::Declined("not_fair"));
        }
        if let Err(e) = self.original_sched(t) {
            return Outcome::Refused(Refusal::Errno(e));
        }
        let want = SchedAttr {
            runtime_ns: slice_ns,
            flags: now.reset_on_fork_flag(),
            ..now
        };
        let outcome = match sys::sched_setattr(t.tid, &want) {
            Ok(()) => {
                self.touched_mut(t).slice_set = true;
                self.check_slice(t.tid, slice_ns)
            }
            Err(e) => Outcome::Refused(Refusal::Errno(e.into())),
        };
        self.prune(t);
        outcome
    }

    /// Reads the slice back: a kernel without custom slices for fair threads (before 6.12)
    /// takes `sched_runtime` without complaint and ignores it.
    fn check_slice(&mut self, tid: i32, slice_ns: u64) -> Outcome {
        if slice_ns == 0 {
            return Outcome::Applied;
        }
        match sys::sched_getattr(tid) {
            Ok(a) if a.runtime_ns == slice_ns.clamp(SLICE_MIN_NS, SLICE_MAX_NS) => Outcome::Applied,
            Ok(a) => {
                self.report.slice.unavailable_reason = Some(format!(
                    "the kernel keeps its own slice for fair threads (asked {slice_ns} ns, \
                     reads {} ns): custom slices need Linux 6.12 or later",
                    a.runtime_ns
                ));
                Outcome::Unavailable
            }
            Err(e) => Outcome::Refused(Refusal::Errno(e.into())),
        }
    }

    fn affinity(&mut self, t: ThreadRef, cpus: CpuSet) -> Outcome {
        if let Err(r) = self.admit(t) {
            return Outcome::Refused(r);
        }
        if self.touched(t).is_none_or(|x| x.affinity.is_none()) {
            match sys::sched_getaffinity(t.tid) {
                Ok(before) => self.touched_mut(t).affinity = Some(before),
                Err(e) => return Outcome::Refused(Refusal::Errno(e.into())),
            }
        }
        // The mask before stays recorded even when this one is refused: restoring it is
        // harmless, and a later request needs it.
        match sys::sched_setaffinity(t.tid, &cpus) {
            Ok(()) => Outcome::Applied,
            Err(e) => Outcome::Refused(Refusal::Errno(e.into())),
        }
    }

    /// `t`'s cgroup in the freezer, adopting it at the first touch.
    fn take_into_freezer(&mut self, t: ThreadRef) -> Result<ThreadHandle, Refusal> {
        let handle = self.touched(t).and_then(|x| x.handle.clone());
        if let Err(r) = self.admit(t) {
            if handle.is_none() {
                self.counters.adopt_failed += 1;
            }
            return Err(r);
        }
        if let Some(h) = handle {
            return Ok(h);
        }
        let label = self.labels.get(&t).copied().unwrap_or(DEFAULT_LABEL);
        let Some(f) = self.freezer.as_mut() else {
            return Err(Refusal::Declined("no_freezer"));
        };
        let mut adopted = f.adopt(t.pid, t.tid, label);
        if let Err(FreezerError::PidReused { .. }) = adopted {
            // The freezer found the process it held under this pid gone (between the check
            // above and its own) and dropped it; `t` was just found to be the pid's process.
            self.counters.pid_reused += 1;
            adopted = f.adopt(t.pid, t.tid, label);
        }
        match adopted {
            Ok(h) => {
                self.counters.adopted += 1;
                self.touched_mut(t).handle = Some(h.clone());
                Ok(h)
            }
            Err(e) => {
                self.counters.adopt_failed += 1;
                self.emptied.push(t.pid);
                Err(Refusal::of_freezer(&e))
            }
        }
    }

    fn freeze_or_thaw(&mut self, t: ThreadRef, freeze: bool) -> Outcome {
        if self.freezer.is_none() {
            return Outcome::Unavailable;
        }
        // Already as asked: nothing is written, so nothing needs checking.
        if self
            .touched(t)
            .is_some_and(|x| x.handle.is_some() && x.frozen == freeze)
        {
            return Outcome::Applied;
        }
        let h = match self.take_into_freezer(t) {
            Ok(h) => h,
            Err(r) => return Outcome::Refused(r),
        };
        if self.touched(t).is_some_and(|x| x.frozen == freeze) {
            return Outcome::Applied;
        }
        if freeze && procfs::parked_in_futex(t.pid, t.tid) {
            self.counters.left_parked += 1;
            return Outcome::PutOff;
        }
        let Some(f) = self.freezer.as_ref() else {
            return Outcome::Unavailable;
        };
        let done = if freeze { f.freeze(&h) } else { f.thaw(&h) };
        match done {
            Ok(()) => {
                if freeze {
                    self.counters.freezes += 1;
                } else {
                    self.counters.thaws += 1;
                }
                self.touched_mut(t).frozen = freeze;
                Outcome::Applied
            }
            Err(e) => {
                self.counters.freeze_errors += 1;
                Outcome::Refused(Refusal::of_freezer(&e))
            }
        }
    }

    fn cpu_weight(&mut self, t: ThreadRef, weight: u16) -> Outcome {
        if self.freezer.is_none() || self.report.cpu_weight.unavailable_reason.is_some() {
            return Outcome::Unavailable;
        }
        let h = match self.take_into_freezer(t) {
            Ok(h) => h,
            Err(r) => return Outcome::Refused(r),
        };
        let Some(f) = self.freezer.as_mut() else {
            return Outcome::Unavailable;
        };
        match f.set_cpu_weight(&h, weight) {
            Ok(()) => Outcome::Applied,
            Err(e) => Outcome::Refused(Refusal::of_freezer(&e)),
        }
    }

    /// Undoes what was done to `t`. Nothing held of it is nothing to undo (applied); a thread
    /// or process that exited has nothing of its own to restore, but its cgroup is still given
    /// back; a process whose pid was reused is dropped without acting on the pid (`stale`).
    fn release(&mut self, t: ThreadRef) -> Outcome {
        self.labels.remove(&t);
        let check = self.admit(t);
        let touched = self
            .held
            .get_mut(&t.pid)
            .filter(|h| h.start_ticks == t.process_start_ticks)
            .and_then(|h| h.threads.remove(&t.tid));
        let Some(touched) = touched else {
            return match check {
                Err(Refusal::Stale) => Outcome::Refused(Refusal::Stale),
                _ => Outcome::Applied,
            };
        };
        let mut outcome = Outcome::Applied;
        if touched.handle.is_some() {
            if let Some(f) = self.freezer.as_mut() {
                match f.release_thread(t.pid, t.tid) {
                    Ok(()) => {}
                    Err(FreezerError::PidReused { .. }) => {
                        self.counters.pid_reused += 1;
                        self.held.remove(&t.pid);
                        return Outcome::Refused(Refusal::Stale);
                    }
                    Err(e) => {
                        self.counters.release_errors += 1;
                        outcome = Outcome::Refused(Refusal::of_freezer(&e));
                    }
                }
            }
            self.emptied.push(t.pid);
        }
        if check.is_ok() {
            if let Err(e) = restore(t.tid, &touched) {
                // A thread that exited meanwhile has nothing left to restore.
                if e != Errno::ESRCH && outcome == Outcome::Applied {
                    outcome = Outcome::Refused(Refusal::Errno(e));
                }
            }
        }
        self.prune(t);
        outcome
    }

    /// Puts back `t`'s nice and slice as they were before the first `Nice` or `Slice`, and forgets
    /// them, leaving the rest of what is held of it. A thread whose process is gone or reused is
    /// dropped as in [`Actuator::release`]'s checks (refused, nothing called on the pid).
    fn restore_sched(&mut self, t: ThreadRef) -> Outcome {
        let changed = self
            .touched(t)
            .is_some_and(|x| x.sched.is_some() && (x.nice_set || x.slice_set));
        if !changed {
            // A record without a change (a refused `Nice`) is pruned when it is made.
            return Outcome::Applied;
        }
        if let Err(r) = self.admit(t) {
            // Gone or reused: nothing of the thread is left to restore, nor to keep.
            if let Some(h) = self.held.get_mut(&t.pid) {
                if h.start_ticks == t.process_start_ticks {
                    if let Some(x) = h.threads.get_mut(&t.tid) {
                        (x.sched, x.nice_set, x.slice_set) = (None, false, false);
                    }
                }
            }
            self.prune(t);
            return Outcome::Refused(r);
        }
        let x = self.touched_mut(t);
        let only_sched = Touched {
            sched: x.sched.take(),
            nice_set: std::mem::take(&mut x.nice_set),
            slice_set: std::mem::take(&mut x.slice_set),
            ..Touched::default()
        };
        let outcome = match restore(t.tid, &only_sched) {
            Ok(()) => Outcome::Applied,
            Err(e) if e == Errno::ESRCH => Outcome::Refused(Refusal::ESRCH),
            Err(e) => Outcome::Refused(Refusal::Errno(e)),
        };
        self.prune(t);
        outcome
    }

    /// Gives back each process of this batch's that the freezer now holds no thread of, and
    /// forgets every process nothing is held of any more and no declared thread belongs to
    /// (closing its pidfd).
    fn end_batch(&mut self) {
        while let Some(pid) = self.emptied.pop() {
            let Some(f) = self.freezer.as_mut() else {
                continue;
            };
            if !f.holds(pid) || !f.handles(pid).is_empty() {
                continue;
            }
            match f.release(pid) {
                Ok(()) => self.counters.released += 1,
                Err(FreezerError::PidReused { .. }) => self.counters.pid_reused += 1,
                Err(_) => self.counters.release_errors += 1,
            }
        }
        let freezer = self.freezer.as_ref();
        let labels = &self.labels;
        // A process one of whose threads is declared keeps its record (and pidfd) even with
        // nothing to undo: the next action on it, a boost at the next input event, then costs
        // one `poll` instead of a new pidfd and a read of `/proc/PID/stat`.
        self.held.retain(|&pid, h| {
            !h.threads.is_empty()
                || freezer.is_some_and(|f| f.holds(pid))
                || labels
                    .keys()
                    .any(|t| t.pid == pid && t.process_start_ticks == h.start_ticks)
        });
    }
}

/// For tests (here, and with feature `test-support` those of the daemon's seam).
#[cfg(any(test, feature = "test-support"))]
impl Actuator {
    /// As if process `pid` had exited and its pid been given to a later process: the start time
    /// read for `pid` from now on is one tick later than the real one, and the freezer's record
    /// of it is made wrong too ([`Freezer::forge_start_ticks`]). The only way to reach the
    /// reuse paths deterministically. `ThreadRef`s of "the later process" carry
    /// [`Actuator::start_ticks_seen`].
    pub fn forge_pid_reuse(&mut self, pid: i32) {
        if let Some(f) = self.freezer.as_mut() {
            f.forge_start_ticks(pid);
        }
        *self.forged.entry(pid).or_insert(0) += 1;
        // The real process is alive: its pidfd and its threads' would vouch for it.
        if let Some(h) = self.held.get_mut(&pid) {
            h.pidfd = None;
            h.thread_fds.clear();
        }
    }

    /// The start time the actuator reads for `pid` now.
    pub fn start_ticks_seen(&self, pid: i32) -> u64 {
        let ticks = procfs::process_start_ticks(pid).unwrap_or(0);
        ticks + self.forged.get(&pid).copied().unwrap_or(0)
    }
}

impl Drop for Actuator {
    fn drop(&mut self) {
        self.release_everything();
    }
}

/// Thread `t.tid` is one of process `t.pid`'s (`ESRCH` otherwise).
fn thread_of(t: ThreadRef) -> Result<(), Refusal> {
    let ids = u32::try_from(t.pid).ok().zip(u32::try_from(t.tid).ok());
    if ids.is_some_and(|(p, tid)| sys::thread_of_process(p, tid)) {
        Ok(())
    } else {
        Err(Refusal::ESRCH)
    }
}

/// Puts back what was changed of thread `tid`: its CPU mask, its slice, its nice value.
fn restore(tid: i32, t: &Touched) -> Result<(), Errno> {
    let mut first = Ok(());
    let mut keep = |r: Result<(), Errno>| {
        if first.is_ok() {
            first = r;
        }
    };
    if let Some(before) = &t.affinity {
        keep(sys::sched_setaffinity(tid, before).map_err(Errno::from));
    }
    if let (true, Some(before)) = (t.slice_set, t.sched) {
        keep(restore_slice(tid, before.runtime_ns));
    }
    if let (true, Some(before)) = (t.nice_set, t.sched) {
        keep(sys::set_thread_nice(tid, before.nice).map_err(Errno::from));
    }
    first
}

/// `sched_getattr` reports a fair thread's slice whether it is the default or a custom one, so
/// the default is restored first (`sched_runtime` 0) and the slice read back; only if that is
/// not the slice the thread had is the old one set as a custom slice again.
fn restore_slice(tid: i32, before_ns: u64) -> Result<(), Errno> {
    let now = sys::sched_getattr(tid)?;
    let flags = now.reset_on_fork_flag();
    let default = SchedAttr {
        runtime_ns: 0,
        flags,
        ..now
    };
    sys::sched_setattr(tid, &default)?;
    if sys::sched_getattr(tid)?.runtime_ns == before_ns {
        return Ok(());
    }
    sys::sched_setattr(
        tid,
        &SchedAttr {
            runtime_ns: before_ns,
            ..default
        },
    )
    .map_err(Errno::from)
}

#[cfg(test)]
mod tests;
