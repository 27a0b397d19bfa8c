//! rt-app workloads: the JSON task descriptions Linux scheduler developers run with `rt-app`
//! (version 1.0), the per-thread logs it writes, and the summary both the simulator and the live
//! runner report from them.
//!
//! - [`parse`]: the strict reader of the subset Lull simulates, into [`RtApp`]. Anything outside
//!   the subset is a [`RtAppError`] naming the key and the task, never silently ignored.
//! - [`log`]: the per-period records of an rt-app log file (`<basename>-<task>-<index>.log`),
//!   their strict reader and a writer in rt-app's own layout.
//! - [`summary`]: a thread's CPU time, periods, wake-up latency and slack percentiles.
//!
//! - [`write`]: the workload back as rt-app 1.0 JSON, with the `global` settings a live run
//!   chooses ([`GlobalOverrides`]).
//!
//! # The subset
//!
//! - Top level: `tasks` (required, non-empty), `global`, and `resources` only as `{}` (rt-app 1.0
//!   creates resources from the events that use them).
//! - `global`: `duration` (seconds > 0, or -1), `default_policy` (`SCHED_OTHER` only),
//!   `calibration` (`"CPUn"` or ns per loop; default `"CPU0"`). Accepted with no effect on
//!   scheduling, because the simulator writes no files and the live runner sets them itself:
//!   `logdir`, `log_basename`, `log_size`, `gnuplot`, `lock_pages`, `pi_enabled`, and `ftrace`
//!   when `false` or `"none"`.
//! - A task: `instance` (default 1), `loop` (see below), `delay` (µs), `priority` (nice
//!   -20..=19), `policy` (`SCHED_OTHER` only), `cpus` (distinct CPUs below 64), and either
//!   `phases` or events of its own. A phase: `loop` (≥ 1, default 1), `priority`, `cpus`,
//!   `policy`, and at least one event.
//! - Events, keyed by prefix as rt-app does (`sleep`, `runtime`, `run`, `timer` in that order, so
//!   `run0` and `runtime1` are events): `run`, `runtime`, `sleep` (µs ≥ 0) and `timer`
//!   (`{"ref", "period" > 0, "mode": "relative"|"absolute"}`). rt-app's other events (`lock`,
//!   `wait`, `barrier`, `mem`, …) and keys (`util_min`, `taskgroup`, `dl-runtime`, …) are
//!   errors.
//! - Loops, as rt-app 1.0 runs them: with `phases`, the task's `loop` (default -1, forever)
//!   repeats the phase list and each phase's `loop` repeats that phase. Without `phases`, the
//!   task's `loop` is its single phase's (named `""`) and the thread loops forever: measured on
//!   rt-app 1.0, `{"loop": 3, "run": 10, "sleep": 10}` never ends on its own.
//!
//! Pure code: readers take a `&str`, never a path.

mod comments;
pub mod log;
pub mod parse;
pub mod summary;
pub mod write;

pub use log::{LogError, PeriodRecord};
pub use parse::{parse, RtAppError};
pub use summary::{Percentiles, SlackStats, ThreadSummary};
pub use write::GlobalOverrides;

/// A whole rt-app workload: the `global` object and the `tasks` in file order.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RtApp {
    /// `global.duration` in seconds; `None` for -1 (run until every thread has finished its
    /// loops).
    pub duration_s: Option<u32>,
    /// `global.calibration`.
    pub calibration: Calibration,
    /// The tasks in the order the file lists them (rt-app numbers threads in that order).
    pub tasks: Vec<TaskSpec>,
}

/// `global.calibration`: how rt-app turns a `run` duration into loops of its busy function.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Calibration {
    /// `"CPUn"`: measure the ns per loop on CPU `n` at start-up (rt-app's default, `"CPU0"`).
    Cpu(u32),
    /// An integer: use this many ns per loop, no measurement.
    NsPerLoop(u32),
}

/// One task object: `instances` identical threads.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct TaskSpec {
    /// The key in `tasks` (rt-app's thread name).
    pub name: String,
    /// `instance` (default 1; 0 creates no thread).
    pub instances: u32,
    /// `loop` of the thread: how many times the whole phase list runs; `None` for -1 (forever).
    pub loops: Option<u64>,
    /// `delay` in µs before the first phase (also shifts the first timer reference).
    pub delay_us: u64,
    /// `priority` of a `SCHED_OTHER` thread: its nice value (default 0).
    pub nice: i8,
    /// `cpus`: the affinity; `None` for every CPU.
    pub cpus: Option<Vec<u32>>,
    /// The phases in file order; a task with its events at the top level has one phase.
    pub phases: Vec<Phase>,
}

/// One phase: its events run `loops` times in a row; each pass is one logged period.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Phase {
    /// The key in `phases` (empty for the implicit phase of a task without `phases`).
    pub name: String,
    /// `loop` of the phase (default 1).
    pub loops: u64,
    /// `priority` set at the start of the phase, if any.
    pub nice: Option<i8>,
    /// `cpus` set at the start of the phase, if any.
    pub cpus: Option<Vec<u32>>,
    /// The events in file order.
    pub events: Vec<Event>,
}

/// One event of a phase.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Event {
    /// `run`: a fixed amount of work, `floor(us × 1000 / ns_per_loop)` loops of the calibrated
    /// busy function; its wall time stretches with preemption and slower CPUs.
    Run { us: u64 },
    /// `runtime`: busy for this much wall time, whatever the CPU's speed or preemption (rt-app
    /// checks the clock after every 32 µs of work).
    Runtime { us: u64 },
    /// `sleep`: a relative sleep (`nanosleep`).
    Sleep { us: u64 },
    /// `timer`: sleep until the timer's next expiry, `period_us` after its previous one.
    Timer {
        /// The timer's name: threads (or instances) naming the same timer share it, unless it
        /// begins with `unique`, which gives each thread its own.
        reference: String,
        /// `period` in µs.
        period_us: u64,
        /// `mode`: `relative` (default) or `absolute`.
        mode: TimerMode,
    },
}

/// What a timer does after an overrun (its expiry already passed when the thread reaches it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TimerMode {
    /// The next expiry counts from now (rt-app's default).
    Relative,
    /// The next expiry stays on the original grid.
    Absolute,
}

impl Event {
    /// Whether a timer of this name is per thread (`unique…`).
    #[must_use]
    pub fn timer_is_unique(reference: &str) -> bool {
        reference.starts_with("unique")
    }
}

/// One thread rt-app creates: its name as rt-app names its log file (`<task>-<index>`, the index
/// counting threads over the whole file) and its task.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ThreadName {
    /// `<task>-<index>`.
    pub name: String,
    /// The task's position in [`RtApp::tasks`].
    pub task: usize,
    /// The thread's index over the whole file.
    pub index: u32,
}

impl TaskSpec {
    /// `instances` threads of nice 0 on every CPU, running `events` over and over (a task with
    /// its events at the top level and no `loop`).
    #[must_use]
    pub fn endless(name: &str, instances: u32, events: Vec<Event>) -> TaskSpec {
        TaskSpec {
            name: name.into(),
            instances,
            loops: None,
            delay_us: 0,
            nice: 0,
            cpus: None,
            phases: vec![Phase {
                name: String::new(),
                loops: 1,
                nice: None,
                cpus: None,
                events,
            }],
        }
    }
}

impl RtApp {
    /// Every thread rt-app creates, in its numbering: the tasks in file order, each task's
    /// instances in a row.
    #[must_use]
    pub fn threads(&self) -> Vec<ThreadName> {
        let mut out = Vec::new();
        let mut index = 0u32;
        for (task, t) in self.tasks.iter().enumerate() {
            for _ in 0..t.instances {
                out.push(ThreadName {
                    name: format!("{}-{index}", t.name),
                    task,
                    index,
                });
                index += 1;
            }
        }
        out
    }
}
