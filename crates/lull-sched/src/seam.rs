//! The policy seam: facts only the framework knows in, per-thread actions out.
//!
//! The daemon (or the simulator) tells a [`SeamPolicy`] what happened — an input event was pushed
//! to an app's event thread, an app came to the front or went behind, a handler finished, an app
//! declared one of its threads or left — and the policy answers with [`Action`]s on threads and
//! CPUs: a nice level, a custom slice, a CPU mask, freeze or thaw, a CPU weight, a frequency
//! request. The substrate applies them with what it has (the live actuator in `lulld`:
//! `setpriority`, `sched_setattr`, `sched_setaffinity`, the cgroup freezer, cgroup v2
//! `cpu.weight`, cpufreq) and counts for each kind what was applied, refused (by the kernel's
//! errno, or because the thread's process is no longer the one its [`ThreadRef`] names) or not
//! available on the machine.
//!
//! Two facts come from the kernel rather than the framework: [`Fact::Forked`] and
//! [`Fact::Exited`], every task created or ended on the machine (live: the proc connector), told
//! only to a policy that asks for them ([`SeamPolicy::wants_process_facts`]). A policy with a
//! period or a timer of its own says when it next wants to run ([`SeamPolicy::next_deadline_ns`]);
//! the substrate calls [`SeamPolicy::on_deadline`] then, answering its questions about threads'
//! CPU use through a callback ([`ThreadSample`]), since the policy reads nothing itself.
//!
//! Actions are levels, not edges: a policy may ask again for what it asked before, and the
//! substrate makes it so (or leaves it so). A freeze the substrate had to put off (the thread
//! was parked where freezing it would stall its siblings) is asked again at the next fact.
//!
//! One more fact comes from the kernel: [`Fact::RunQueues`], how many tasks the machine's run
//! queues hold, told only to a policy that asks for it ([`SeamPolicy::wants_run_queues`]).
//!
//! Policies: [`crate::guis::Table1`] (seed 000's table 1), `crate::ucsg::live::UcsgSeam`
//! (seed 001's UCSG), [`crate::boost::seam::BoostSeam`] (seed 003's interactive boost) and
//! [`crate::controller::Controller`] (seed 004's affinity and toggling schemes).

use std::fmt;

use lull_model::{AppId, ThreadCategory, WindowState};

use crate::ids::CpuId;

/// A thread by the substrate's numbers: process and thread ids live, process and thread indices
/// in the simulator.
///
/// A process id is reused once its process has exited, so live a pid alone cannot say which
/// process it names: `process_start_ticks` is the process's start time (clock ticks since boot,
/// field 22 of `/proc/PID/stat`) as the substrate knew it when the thread was declared, and the
/// live actuator refuses any action on a thread whose process no longer has that start time.
/// The simulator, whose ids are never reused, puts 0.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct ThreadRef {
    pub pid: i32,
    pub tid: i32,
    pub process_start_ticks: u64,
}

/// A set of CPUs, bit `n` for CPU `n` (CPUs 0 to 63).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct CpuMask(pub u64);

impl CpuMask {
    /// Every CPU (the affinity of a task nobody restricted).
    pub const ALL: CpuMask = CpuMask(u64::MAX);

    /// The CPUs listed.
    #[must_use]
    pub fn of(cpus: &[CpuId]) -> CpuMask {
        CpuMask(
            cpus.iter()
                .filter(|c| c.0 < 64)
                .fold(0, |m, c| m | 1 << c.0),
        )
    }

    #[must_use]
    pub fn contains(self, cpu: CpuId) -> bool {
        cpu.0 < 64 && self.0 & (1 << cpu.0) != 0
    }

    /// The CPUs in the mask, ascending.
    pub fn cpus(self) -> impl Iterator<Item = CpuId> {
        (0..64).filter(move |&c| self.0 & (1 << c) != 0).map(CpuId)
    }
}

/// Something the framework knows happened.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Fact {
    /// An app declared one of its threads and its category (the KDS `THREAD` request).
    ThreadDeclared {
        app: AppId,
        thread: ThreadRef,
        category: ThreadCategory,
    },
    /// An app's window state changed (front/back, covered, screen on/off), or was first known.
    WindowChanged { app: AppId, window: WindowState },
    /// An input event was pushed to the app's event thread.
    InputPushed { app: AppId },
    /// The app's event thread finished its handler and waits for the next event.
    HandlerFinished { app: AppId },
    /// The app left: its threads are no longer the policy's.
    AppGone { app: AppId },
    /// A task was created: a process (`child.pid == child.tid`) or a thread of `child.pid`.
    /// `parent` is the task that created a process; for a new thread it is its process's main
    /// thread (the kernel names no creating thread). Live: the proc connector's fork event, the
    /// start times read from `/proc`.
    Forked { parent: ThreadRef, child: ThreadRef },
    /// A task ended.
    Exited { thread: ThreadRef },
    /// The substrate's configuration names this task's process as one the policies manage
    /// although no app owns it (a system process); its later threads arrive as
    /// [`Fact::Forked`]. Processes not named, and owned by no app, are left alone.
    Adopted { thread: ThreadRef },
    /// What the machine's run queues hold, as the substrate last sampled them: `runnable` tasks
    /// ready to run or running on all `cpus` together, the substrate's own thread not counted.
    /// Told, when it changed, right before an [`Fact::InputPushed`], and only while a policy
    /// asks for it ([`SeamPolicy::wants_run_queues`]).
    RunQueues { runnable: u32, cpus: u32 },
}

/// What a substrate answers about one thread when a policy asks ([`SeamPolicy::on_deadline`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ThreadSample {
    /// The CPU time the thread has used since it started (live: the first field of
    /// `/proc/PID/task/TID/schedstat`).
    pub cpu_ns: u64,
    /// The same CPU time scaled to work done: each stretch weighted by the speed of the CPU it
    /// ran on (capacity × frequency) relative to the fastest CPU at its top frequency, seed 004's
    /// "scaled CPU time". A substrate that cannot see speeds (live without cpufreq or CPU
    /// capacities) puts `cpu_ns` and says so in its report.
    pub work_ns: u64,
    /// The CPU it last ran on (live: field 39 of `/proc/PID/task/TID/stat`).
    pub cpu: CpuId,
}

/// What a policy asks of the substrate.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Action {
    /// `setpriority(PRIO_PROCESS, tid, nice)`.
    Nice { thread: ThreadRef, nice: i8 },
    /// `sched_setattr` with `sched_runtime` for a fair task (Linux 6.12+): the thread's slice.
    Slice { thread: ThreadRef, slice_ns: u64 },
    /// `sched_setaffinity(tid, mask)`.
    Affinity { thread: ThreadRef, cpus: CpuMask },
    /// Stop the thread until [`Action::Thaw`] (cgroup freezer).
    Freeze { thread: ThreadRef },
    /// Let the thread run: a frozen thread is thawed, one that is not stays as it runs. (The
    /// live actuator takes the thread into its freezer at the first touch either way, so that a
    /// later freeze is one write.)
    Thaw { thread: ThreadRef },
    /// The thread's cgroup v2 `cpu.weight` (1..=10000, 100 the default).
    CpuWeight { thread: ThreadRef, weight: u16 },
    /// Ask for at least `khz` on `cpu`'s frequency domain (cpufreq).
    Frequency { cpu: CpuId, khz: u64 },
    /// The policy no longer manages the thread: undo what was done to it (thawed, its nice,
    /// slice, mask and cgroup as they were before the first action).
    Release { thread: ThreadRef },
    /// Give the thread back its nice value and slice as they were before the first [`Action::Nice`]
    /// or [`Action::Slice`]; what other actions did to it (freezer, CPU mask, cgroup) stays. A
    /// boost ends this way while another policy may still hold the thread.
    RestoreSched { thread: ThreadRef },
}

/// The kinds of [`Action`], for counting.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum ActionKind {
    Nice,
    Slice,
    Affinity,
    Freeze,
    Thaw,
    CpuWeight,
    Frequency,
    Release,
    RestoreSched,
}

impl ActionKind {
    pub const ALL: [ActionKind; 9] = [
        ActionKind::Nice,
        ActionKind::Slice,
        ActionKind::Affinity,
        ActionKind::Freeze,
        ActionKind::Thaw,
        ActionKind::CpuWeight,
        ActionKind::Frequency,
        ActionKind::Release,
        ActionKind::RestoreSched,
    ];

    /// The name reports use.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ActionKind::Nice => "nice",
            ActionKind::Slice => "slice",
            ActionKind::Affinity => "affinity",
            ActionKind::Freeze => "freeze",
            ActionKind::Thaw => "thaw",
            ActionKind::CpuWeight => "cpu_weight",
            ActionKind::Frequency => "frequency",
            ActionKind::Release => "release",
            ActionKind::RestoreSched => "restore_sched",
        }
    }
}

impl Action {
    #[must_use]
    pub fn kind(&self) -> ActionKind {
        match self {
            Action::Nice { .. } => ActionKind::Nice,
            Action::Slice { .. } => ActionKind::Slice,
            Action::Affinity { .. } => ActionKind::Affinity,
            Action::Freeze { .. } => ActionKind::Freeze,
            Action::Thaw { .. } => ActionKind::Thaw,
            Action::CpuWeight { .. } => ActionKind::CpuWeight,
            Action::Frequency { .. } => ActionKind::Frequency,
            Action::Release { .. } => ActionKind::Release,
            Action::RestoreSched { .. } => ActionKind::RestoreSched,
        }
    }

    /// The thread it acts on, if it acts on one.
    #[must_use]
    pub fn thread(&self) -> Option<ThreadRef> {
        match *self {
            Action::Nice { thread, .. }
            | Action::Slice { thread, .. }
            | Action::Affinity { thread, .. }
            | Action::Freeze { thread }
            | Action::Thaw { thread }
            | Action::CpuWeight { thread, .. }
            | Action::Release { thread }
            | Action::RestoreSched { thread } => Some(thread),
            Action::Frequency { .. } => None,
        }
    }
}

/// A policy on the seam.
pub trait SeamPolicy: fmt::Debug {
    /// The name the daemon's options and reports use.
    fn name(&self) -> &'static str;

    /// What to do about `fact`, known at `now_ns`; actions go to `out`.
    fn on_fact(&mut self, now_ns: u64, fact: &Fact, out: &mut Vec<Action>);

    /// Whether the policy wants [`Fact::Forked`] and [`Fact::Exited`] (live they cost a netlink
    /// socket that hears of every task on the machine, so only a policy that asks gets them).
    fn wants_process_facts(&self) -> bool {
        false
    }

    /// Whether the policy needs [`Fact::HandlerFinished`] as it happens (live it costs the
    /// daemon a wake-up per handled event: every wait is then a message).
    fn wants_handler_finished(&self) -> bool {
        false
    }

    /// Whether the policy wants [`Fact::RunQueues`] (live it costs a read of the kernel's
    /// run-queue count on the event path, so only a policy that asks gets it).
    fn wants_run_queues(&self) -> bool {
        false
    }

    /// Counts of the policy's own that a report should carry (name, value), e.g. decisions the
    /// machine could not take in any form.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// When the policy next wants [`SeamPolicy::on_deadline`] called, on the substrate's
    /// monotonic clock; `None`: not until some fact changes that.
    fn next_deadline_ns(&self) -> Option<u64> {
        None
    }

    /// The deadline came (`now_ns` at or after it). `usage` answers what each thread has used
    /// (`None`: gone or unreadable); actions go to `out`.
    fn on_deadline(
        &mut self,
        now_ns: u64,
        usage: &mut dyn FnMut(ThreadRef) -> Option<ThreadSample>,
        out: &mut Vec<Action>,
    ) {
        let _ = (now_ns, usage, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mask_lists_each_cpu_once_however_often_named() {
        assert_eq!(CpuMask::of(&[CpuId(2), CpuId(2), CpuId(0)]), CpuMask(0b101));
        assert_eq!(CpuMask::of(&[CpuId(64), CpuId(1)]), CpuMask(0b10));
    }

    #[test]
    fn masks_list_their_cpus() {
        let m = CpuMask::of(&[CpuId(0), CpuId(3), CpuId(64)]);
        assert_eq!(m, CpuMask(0b1001));
        assert!(m.contains(CpuId(3)) && !m.contains(CpuId(1)) && !m.contains(CpuId(64)));
        assert_eq!(m.cpus().collect::<Vec<_>>(), vec![CpuId(0), CpuId(3)]);
    }

    #[derive(Debug)]
    struct Silent;
    impl SeamPolicy for Silent {
        fn name(&self) -> &'static str {
            "silent"
        }
        fn on_fact(&mut self, _: u64, _: &Fact, _: &mut Vec<Action>) {}
    }

    /// A policy that says nothing about timers or processes gets neither.
    #[test]
    fn defaults_ask_for_nothing() {
        let mut p = Silent;
        assert!(!p.wants_process_facts());
        assert!(!p.wants_run_queues());
        assert!(!p.wants_handler_finished());
        assert_eq!(p.counters(), Vec::new());
        assert_eq!(p.next_deadline_ns(), None);
        let mut asked = 0;
        let mut out = Vec::new();
        p.on_deadline(
            1,
            &mut |_| {
                asked += 1;
                None
            },
            &mut out,
        );
        assert_eq!((asked, out.len()), (0, 0));
    }

    #[test]
    fn every_action_has_its_kind_and_thread() {
        let t = ThreadRef {
            pid: 1,
            tid: 2,
            process_start_ticks: 3,
        };
        let all = [
            Action::Nice {
                thread: t,
                nice: -5,
            },
            Action::Slice {
                thread: t,
                slice_ns: 100_000,
            },
            Action::Affinity {
                thread: t,
                cpus: CpuMask(1),
            },
            Action::Freeze { thread: t },
            Action::Thaw { thread: t },
            Action::CpuWeight {
                thread: t,
                weight: 100,
            },
            Action::Frequency {
                cpu: CpuId(0),
                khz: 1,
            },
            Action::Release { thread: t },
            Action::RestoreSched { thread: t },
        ];
        let kinds: Vec<ActionKind> = all.iter().map(Action::kind).collect();
        assert_eq!(kinds, ActionKind::ALL.to_vec());
        assert!(all
            .iter()
            .all(|a| (a.thread() == Some(t)) == (a.kind() != ActionKind::Frequency)));
        let names: std::collections::BTreeSet<_> =
            ActionKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), ActionKind::ALL.len());
    }
}
