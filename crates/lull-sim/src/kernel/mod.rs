//! The simulated kernel: threads, their scheduling through a `lull-sched` class and placement
//! policy, each core's execution (interrupt and kernel work in front of the running thread's
//! compute), ticks, timers, the idle governor, frequency changes, cluster switching and hotplug.
//!
//! - [`exec`]: a core's work in cycles, converted to time at its frequency; context switches and
//!   the cache-refill penalty; frequency changes;
//! - [`sched`]: wakeup, blocking, picking, new-idle balancing, guiS freezing — through
//!   [`lull_sched::class::SchedClass`] and [`lull_sched::placement::Placement`];
//! - [`irq`]: interrupts, ticks and timers;
//! - [`cpuidle`]: entering and leaving idle states through [`lull_sched::idle::IdleGovernor`];
//! - [`cores`]: cluster switching and hotplug;
//! - [`util`]: utilisation tracking (PELT) for governors that read it;
//! - [`audit`]: the scheduling events in `lull-audit`'s record format;
//! - [`boost`]: seed 003's interactive boost of the task the framework names.
//!
//! What threads do is user space's business ([`Userspace`]): the kernel asks it for a thread's
//! next [`Action`] and hands it device work when the kernel part of an interrupt is done.

mod audit;
pub(crate) use audit::AUDIT_TID_BASE;
mod boost;
mod cores;
mod cpuidle;
mod exec;
mod irq;
mod sched;
mod util;

use std::borrow::Cow;
use std::collections::VecDeque;

use lull_audit::AuditRecord;
use lull_model::time::NS_PER_US;
use lull_sched::balance::LoadTracker;
use lull_sched::class::{FairParams, SchedClass};
use lull_sched::idle::{IdleGovernor, IdleStateParams};
use lull_sched::pelt::PeltSet;
use lull_sched::placement::{CpuState, Placement};
use lull_sched::seam::CpuMask;

use crate::engine::Engine;
use crate::event::Ev;
use crate::platform::Platform;
use crate::soc::Soc;

pub use boost::{BoostCounters, BoostKind};
#[cfg(test)]
pub(crate) use exec::ns_to_cycles;

/// The parts of the machine a kernel operation may touch besides the kernel: the clock and
/// event queue, and the SoC.
#[derive(Debug)]
pub(crate) struct Cx<'a, 's> {
    pub eng: &'a mut Engine<Ev>,
    pub soc: &'a mut Soc<'s>,
}

impl Cx<'_, '_> {
    pub fn now(&self) -> u64 {
        self.eng.now_ns()
    }
}

/// What a thread does next, as its behaviour tells the kernel.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Action {
    /// Run this many cycles.
    Compute(u64),
    /// Sleep until this time (a timer wakes it; so may another thread).
    Sleep(u64),
    /// Sleep on an hrtimer with slack, as `nanosleep` arms it for a `SCHED_OTHER` thread: the
    /// timer may fire anywhere from `until` (its soft expiry, when an interrupt on its core
    /// already runs the timer queue) to `until + slack_ns` (its hard expiry).
    HrSleep { until: u64, slack_ns: u64 },
    /// Block until another thread wakes it.
    Block,
    /// Park in the ESM's `EV_WAIT` until an event is pushed to it.
    EvWait,
}

/// Device work whose kernel part (the interrupt handler) has finished: the rest is user space's.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum DeviceWork {
    /// The workload's `i`-th input event, read by the driver.
    Input(u32),
    /// The display's vsync interrupt.
    Vsync,
}

/// Kernel work queued on a core; its action runs when its cycles are done.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum KAction {
    None,
    Device(DeviceWork),
    TimerWake { tid: usize, gen: u64 },
    TickCheck,
}

/// User space as the kernel sees it: the behaviour of every thread and the guiS gate. The
/// defaults are a user space with no devices and no gate (rt-app, the benchmarks, the seed-001
/// and seed-003 apps); the framework models override them.
pub(crate) trait Userspace {
    /// The next action of thread `t`, which is running on a core; it may wake other threads.
    fn next_action(&mut self, t: usize, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) -> Action;

    /// Device work whose interrupt handler has run.
    fn device_work(&mut self, _w: DeviceWork, _k: &mut Kernel<'_>, _cx: &mut Cx<'_, '_>) {}

    /// guiS holds thread `t`: it may not run now.
    fn gated_off(&self, _t: usize) -> bool {
        false
    }

    /// Whether a running thread with no compute left is to be frozen at this scheduling point
    /// (guiS: the window changed under it).
    fn freeze_at_scheduling_point(&self, _t: usize) -> bool {
        false
    }

    /// Thread `t` is on a core at `now`.
    fn on_cpu(&mut self, _t: usize, _now: u64) {}

    /// Thread `t` leaves its core at `now`: still runnable (`preempted`) or asleep.
    fn off_cpu(&mut self, _t: usize, _now: u64, _preempted: bool) {}

    /// A device interrupt user space has asked for (the next vsync), if any.
    fn next_device_interrupt_ns(&self, _now: u64) -> Option<u64> {
        None
    }
}

/// A thread's scheduling state.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum TState {
    Running,
    Runnable,
    Sleeping,
    EvWait,
    Frozen,
}

/// A thread as the kernel keeps it.
#[derive(Debug)]
pub(crate) struct Task {
    pub name: Cow<'static, str>,
    pub proc_id: u32,
    pub nice: i8,
    /// Its weight and slice as the class has them (its nice's, or a boost's).
    pub params: FairParams,
    /// Time run so far and switch-ins, for reports and audit records.
    pub exec_ns: u64,
    /// Time run so far scaled by the speed it ran at against the fastest core at its top
    /// frequency (seed 004's "scaled CPU time").
    pub work_ns: u64,
    pub switches: u32,
    /// Times it was woken from a sleep, a wait or a freeze (its first start not counted).
    pub wakeups: u64,
    /// When it last became runnable (benchmarks that measure wake-up latency read it).
    pub woken_ns: u64,
    pub cache_kib: u64,
    pub state: TState,
    /// The core it runs on, waits on, or last ran on.
    pub core: usize,
    /// Cycles left of its current compute step.
    pub remaining: u64,
    pub timer_gen: u64,
    pub timer_at: Option<u64>,
    /// The soft expiry of an hrtimer with slack: an interrupt on its core from then on fires it.
    pub timer_soft_at: Option<u64>,
    /// Enqueued at least once (the first enqueue is a fork's).
    started: bool,
    /// The cores it may run on (its affinity).
    pub allowed: CpuMask,
    /// The core it last switched in on, and how many switch-ins were on another core than the
    /// one before (migrations).
    pub last_ran_core: Option<usize>,
    pub migrations: u64,
}

/// A core as the kernel runs it.
#[derive(Debug)]
pub(crate) struct Cpu {
    gen: u64,
    seg_start_ns: u64,
    planned_end_ns: u64,
    planned_cycles: u64,
    planned_kwork: bool,
    kwork: VecDeque<(u64, KAction)>,
    resched: bool,
    /// (process, hot set in KiB) of the last thread switched in.
    last_ran: Option<(u32, u64)>,
    tick_gen: u64,
    tick_armed: bool,
    idle_since_ns: u64,
    /// The idle governor's prediction when the core last went idle (its cluster-off vote).
    predicted_ns: u64,
    /// The thread whose cycles execute (none: idle or kernel work), for the PELT signals.
    running_task: Option<usize>,
    /// A scheduler event happened since the frequency governor last looked.
    freq_event: bool,
    /// When this core next balances at its tick.
    next_balance_ns: u64,
    /// Its balance interval in ms before the busy factor (`sd->balance_interval`; 0 until set).
    balance_interval_ms: u64,
    /// Balances in a row that found an imbalance and moved nothing (`sd->nr_balance_failed`).
    balance_failed: u32,
}

/// The policies the kernel runs with.
#[derive(Debug)]
pub(crate) struct Policies {
    pub class: Box<dyn SchedClass>,
    pub placement: Box<dyn Placement>,
    pub idle: Box<dyn IdleGovernor>,
}

/// The kernel of one run.
#[derive(Debug)]
pub(crate) struct Kernel<'s> {
    plat: &'s Platform,
    pub tasks: Vec<Task>,
    pub cpus: Vec<Cpu>,
    class: Box<dyn SchedClass>,
    placement: Box<dyn Placement>,
    idle_gov: Box<dyn IdleGovernor>,
    /// Per-task and per-core utilisation, when the governor reads it.
    pelt: Option<PeltSet>,
    /// Per-task and per-core PELT load for the load balancer (always tracked).
    load: LoadTracker,
    /// Per cluster, its idle states as the idle governor sees them.
    idle_states: Vec<Vec<IdleStateParams>>,
    /// The cores as placement sees them, rebuilt at each decision (kept to reuse its memory).
    cpu_view: Vec<CpuState>,
    /// The core whose run loop is executing (a wakeup there needs no poke).
    cur_core: Option<usize>,
    /// Device interrupts go to the companion core (guiS forced idle).
    irq_to_companion: bool,
    pub cluster_switches: u64,
    /// Seed 003's interactive boost, when the run has one.
    boost: Option<boost::KernelBoost>,
    audit: Option<Vec<AuditRecord>>,
    audit_seq: Vec<u64>,
}

impl<'s> Kernel<'s> {
    pub fn new(plat: &'s Platform, cores: usize, p: Policies) -> Kernel<'s> {
        Kernel {
            plat,
            tasks: Vec::new(),
            cpus: (0..cores)
                .map(|_| Cpu {
                    gen: 0,
                    seg_start_ns: 0,
                    planned_end_ns: 0,
                    planned_cycles: 0,
                    planned_kwork: false,
                    kwork: VecDeque::new(),
                    resched: false,
                    last_ran: None,
                    tick_gen: 0,
                    tick_armed: false,
                    idle_since_ns: 0,
                    predicted_ns: lull_sched::idle::NO_PREDICTION_NS,
                    running_task: None,
                    freq_event: false,
                    next_balance_ns: 0,
                    balance_interval_ms: 0,
                    balance_failed: 0,
                })
                .collect(),
            class: p.class,
            placement: p.placement,
            idle_gov: p.idle,
            pelt: None,
            load: LoadTracker::new(),
            idle_states: plat
                .clusters
                .iter()
                .map(|cl| {
                    cl.idle_states
                        .iter()
                        .map(|s| IdleStateParams {
                            target_residency_ns: s.residency_us * NS_PER_US,
                            exit_latency_ns: s.exit_us * NS_PER_US,
                        })
                        .collect()
                })
                .collect(),
            cpu_view: Vec::with_capacity(cores),
            cur_core: None,
            irq_to_companion: false,
            cluster_switches: 0,
            boost: None,
            audit: None,
            audit_seq: Vec::new(),
        }
    }

    /// Creates a thread (asleep until its first wakeup) and returns its index.
    pub fn add_task(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        proc_id: u32,
        nice: i8,
        cache_kib: u64,
    ) -> usize {
        let t = self.tasks.len();
        self.tasks.push(Task {
            name: name.into(),
            proc_id,
            nice,
            params: FairParams::nice(nice),
            exec_ns: 0,
            work_ns: 0,
            switches: 0,
            wakeups: 0,
            woken_ns: 0,
            cache_kib,
            state: TState::Sleeping,
            core: 0,
            remaining: 0,
            timer_gen: 0,
            timer_at: None,
            timer_soft_at: None,
            started: false,
            allowed: CpuMask::ALL,
            last_ran_core: None,
            migrations: 0,
        });
        self.class
            .attach(lull_sched::TaskId(t), FairParams::nice(nice));
        t
    }

    /// Restricts thread `t` to the cores in `allowed` from its next wakeup or migration on
    /// (`sched_setaffinity` before the thread runs, or by a thread that then sleeps).
    pub fn set_affinity(&mut self, t: usize, allowed: CpuMask) {
        self.tasks[t].allowed = allowed;
    }

    /// Sets thread `t`'s nice value (`setpriority`), running, queued or asleep. A boost it
    /// runs under is forgotten: the new nice is its own.
    pub fn set_nice(&mut self, t: usize, nice: i8) {
        self.tasks[t].nice = nice;
        self.boost_forget(t);
        self.apply_params(t, FairParams::nice(nice));
    }

    /// Makes thread `t` the last one core `c` ran (tests of the cache-refill model).
    #[cfg(test)]
    pub fn set_last_ran(&mut self, c: usize, t: usize) {
        self.cpus[c].last_ran = Some((self.tasks[t].proc_id, self.tasks[t].cache_kib));
    }

    /// Routes device interrupts to the companion core (guiS forced idle) or the active cluster.
    pub fn route_irqs_to_companion(&mut self, yes: bool) {
        self.irq_to_companion = yes;
    }

    /// Takes core `c`'s "a scheduler event happened" flag (schedutil's update hook).
    pub fn take_freq_event(&mut self, c: usize) -> bool {
        std::mem::take(&mut self.cpus[c].freq_event)
    }
}
