//! Interbench 0.31's emulated tasks as simulated threads, restated from its source:
//!
//! - **periodic tasks** (Audio, Video, X, as benchmark or load) run interbench's
//!   `periodic_schedule`: on waking, the latency is how late it runs after its deadline; if a
//!   whole interval has already passed the burn is skipped (missed deadlines, each counted as an
//!   interval of latency); otherwise it burns its run time, moves the deadline on by its interval
//!   (catching up whole intervals it overran, each again an interval of latency) and sleeps until
//!   the deadline. Interbench's timekeeping thread does the sleeping and subtracts its own
//!   oversleep, so here the task sleeps on an exact timer and the latency counts from the expiry.
//!   X runs steps i = 0…100: i ms of work in a (100 − i) ms interval, and adds i ms to its next
//!   deadline;
//! - **Gaming** burns 100 ms of work at a time and never sleeps: its latency is how much longer
//!   than 100 ms each burn took;
//! - **Burn** is four threads burning 1 ms of work at a time forever;
//! - **Memload** is [`super::memload`].
//!
//! Work is CPU time at the platform's top frequency, as interbench calibrates its loop
//! (`loops_per_ms`) on a busy CPU.

use crate::kernel::{Action, Cx, Kernel, Userspace};
use crate::pm::IdleForcing;

use super::memload::{MemCosts, Memload};
use super::spec::{Bench, Load};
use crate::drive::Workload;

const MS: u64 = 1_000_000;
/// Interbench's `AUDIO_INTERVAL` (50 000 µs) and `AUDIO_RUN` (a twentieth of it: 5 %).
pub const AUDIO_INTERVAL_NS: u64 = 50 * MS;
pub const AUDIO_RUN_NS: u64 = AUDIO_INTERVAL_NS / 20;
/// Interbench's `VIDEO_INTERVAL` (1 000 000 / 60 = 16 666 µs, integer µs) and `VIDEO_RUN`
/// (40 % of it: 6 666 µs).
pub const VIDEO_INTERVAL_NS: u64 = 16_666_000;
pub const VIDEO_RUN_NS: u64 = 6_666_000;
/// X's steps: i ms of work in a (100 − i) ms interval, i = 0…100 (`emulate_x`).
pub const X_STEPS: u64 = 100;
pub const X_STEP_NS: u64 = MS;
/// Interbench's `GAME_RUN` (= `GAME_INTERVAL`, 100 000 µs).
pub const GAME_RUN_NS: u64 = 100 * MS;
/// A burn thread's unit of work between its stop checks: `burn_loops(ud.loops_per_ms)`.
pub const BURN_CHUNK_NS: u64 = MS;
/// The load runs this long before the benchmarked task starts (`bench`: `sleep(1)`).
pub const LOAD_LEAD_NS: u64 = 1_000 * MS;
/// ESTIMATE: the cache footprint of an emulated task (its stack, the busy loop's code and the
/// semaphores; a few KiB, well inside the Cortex-A9's 32 KiB L1).
pub const TASK_HOT_KIB: u64 = 16;

/// Interbench's `data_table`: what one benchmarked task accumulates.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct Tally {
    pub samples: u64,
    pub total_latency_ns: u128,
    pub max_latency_ns: u64,
    /// Burns done and skipped (Gaming: ns of work done and ns late).
    pub achieved_burns: u64,
    pub missed_burns: u64,
    pub deadlines_met: u64,
    pub missed_deadlines: u64,
}

impl Tally {
    fn record(&mut self, latency_ns: u64) {
        self.samples += 1;
        self.total_latency_ns += u128::from(latency_ns);
        self.max_latency_ns = self.max_latency_ns.max(latency_ns);
    }

    /// Adds another run's tally (repetitions pool their samples).
    pub fn merge(&mut self, o: &Tally) {
        self.samples += o.samples;
        self.total_latency_ns += o.total_latency_ns;
        self.max_latency_ns = self.max_latency_ns.max(o.max_latency_ns);
        self.achieved_burns += o.achieved_burns;
        self.missed_burns += o.missed_burns;
        self.deadlines_met += o.deadlines_met;
        self.missed_deadlines += o.missed_deadlines;
    }
}

/// The run and interval of a periodic task's current call.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Pattern {
    Fixed {
        run_ns: u64,
        interval_ns: u64,
    },
    /// X at step `i`.
    X {
        i: u64,
    },
}

impl Pattern {
    fn run_interval(self) -> (u64, u64) {
        match self {
            Pattern::Fixed {
                run_ns,
                interval_ns,
            } => (run_ns, interval_ns),
            Pattern::X { i } => (i * X_STEP_NS, (X_STEPS - i) * X_STEP_NS),
        }
    }
}

/// A periodic task between calls of `periodic_schedule`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Periodic {
    pattern: Pattern,
    deadline_ns: u64,
    /// The latency measured when this call began.
    latency_ns: u64,
    /// Sleeping until `sleep_until_ns` (else burning).
    asleep: bool,
    sleep_until_ns: u64,
}

impl Periodic {
    /// A call begins at `now` (the task woke or its previous call did not sleep); the timer
    /// that woke it fired `overslept_ns` after it was due (interbench's timekeeper measures this
    /// and takes it out: it is the timer's and the idle state's delay, not the scheduler's).
    fn begin(&mut self, now: u64, overslept_ns: u64, t: &mut Tally, w: &WorkRate) -> Action {
        let (run, interval) = self.pattern.run_interval();
        self.latency_ns = now.saturating_sub(self.deadline_ns + overslept_ns);
        if interval > 0 && now > self.deadline_ns + interval {
            // The deadline passed a whole interval ago: skip the burn.
            self.deadline_ns += interval;
            let k = (now - self.deadline_ns) / interval + 1;
            t.missed_deadlines += k;
            t.missed_burns += k;
            self.deadline_ns += k * interval;
            return self.end(now, k * interval, t, w);
        }
        if run == 0 {
            return self.burnt(now, t, w);
        }
        Action::Compute(w.cycles(run))
    }

    /// The burn of this call finished at `now`.
    fn burnt(&mut self, now: u64, t: &mut Tally, w: &WorkRate) -> Action {
        let (_, interval) = self.pattern.run_interval();
        t.achieved_burns += 1;
        self.deadline_ns += interval;
        if self.deadline_ns >= now {
            t.deadlines_met += 1;
            return self.end(now, 0, t, w);
        }
        if interval == 0 {
            // X's 100 % step: no deadline to keep, no sleep.
            self.deadline_ns = now;
            t.record(self.latency_ns);
            self.next_step();
            return self.begin(now, 0, t, w);
        }
        let k = (now - self.deadline_ns) / interval + 1;
        t.missed_deadlines += k;
        if k > 1 {
            t.missed_burns += k;
        }
        self.deadline_ns += k * interval;
        self.end(now, k * interval, t, w)
    }

    /// Records this call and sleeps until the deadline.
    fn end(&mut self, now: u64, missed_ns: u64, t: &mut Tally, w: &WorkRate) -> Action {
        t.record(self.latency_ns + missed_ns);
        let sleep_until = self.deadline_ns;
        self.next_step();
        if sleep_until > now {
            self.asleep = true;
            self.sleep_until_ns = sleep_until;
            Action::Sleep(sleep_until)
        } else {
            self.begin(now, 0, t, w)
        }
    }

    /// X moves its deadline on by the step's run and goes to the next step.
    fn next_step(&mut self) {
        if let Pattern::X { i } = self.pattern {
            self.deadline_ns += i * X_STEP_NS;
            self.pattern = Pattern::X {
                i: if i == X_STEPS { 0 } else { i + 1 },
            };
        }
    }
}

/// Work as CPU cycles at the platform's top frequency.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct WorkRate {
    pub top_khz: u64,
}

impl WorkRate {
    pub fn cycles(self, ns: u64) -> u64 {
        (u128::from(ns) * u128::from(self.top_khz) / 1_000_000).max(1) as u64
    }
}

/// What a thread does.
#[derive(Clone, Debug)]
enum Behaviour {
    Periodic(Periodic),
    Gaming {
        deadline_ns: u64,
    },
    Burn,
    /// Memload; `cpu_after_io`: the CPU part of a step whose swap I/O is in progress.
    Memload {
        m: Box<Memload>,
        cpu_after_io: Option<u64>,
    },
}

/// Where a thread is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// Not yet run.
    Created,
    /// The benchmarked task waits out the load's lead.
    Delayed,
    /// Burning or sleeping inside its loop.
    Looping,
}

#[derive(Clone, Debug)]
struct Emulated {
    behaviour: Behaviour,
    phase: Phase,
    /// When the thread's loop begins.
    start_ns: u64,
    tally: Tally,
}

/// The threads of one interbench run: the benchmarked task and its load.
#[derive(Debug)]
pub(crate) struct InterbenchUser {
    threads: Vec<Emulated>,
    w: WorkRate,
    bench_tid: usize,
}

/// The interbench process ids: the load process and the benchmark process (interbench forks
/// one of each, so they share no address space).
const LOAD_PROC: u32 = 1;
const BENCH_PROC: u32 = 2;

fn periodic(pattern: Pattern) -> Behaviour {
    Behaviour::Periodic(Periodic {
        pattern,
        deadline_ns: 0,
        latency_ns: 0,
        asleep: false,
        sleep_until_ns: 0,
    })
}

fn audio() -> Behaviour {
    periodic(Pattern::Fixed {
        run_ns: AUDIO_RUN_NS,
        interval_ns: AUDIO_INTERVAL_NS,
    })
}

fn video() -> Behaviour {
    periodic(Pattern::Fixed {
        run_ns: VIDEO_RUN_NS,
        interval_ns: VIDEO_INTERVAL_NS,
    })
}

/// What the threads' costs depend on in the platform: its memory costs, its L2 size (the
/// memload thread's footprint) and its top frequency (the work rate).
#[derive(Debug, Clone, Copy)]
pub struct MachineCosts {
    pub mem: MemCosts,
    pub l2_kib: u64,
    pub top_khz: u64,
}

impl InterbenchUser {
    /// Creates the threads of `bench` against `load` in `k` (`burn_threads` of them for
    /// [`Load::Burn`]); the benchmarked task starts at `bench_start_ns`.
    pub fn new(
        k: &mut Kernel<'_>,
        bench: Bench,
        load: Load,
        burn_threads: u32,
        bench_start_ns: u64,
        machine: MachineCosts,
    ) -> InterbenchUser {
        let MachineCosts {
            mem,
            l2_kib,
            top_khz,
        } = machine;
        let mut threads = Vec::new();
        let mut add = |k: &mut Kernel<'_>, name: &'static str, proc_id, kib, b, start_ns| {
            let tid = k.add_task(name, proc_id, 0, kib);
            debug_assert_eq!(tid, threads.len(), "thread ids are the kernel's");
            threads.push(Emulated {
                behaviour: b,
                phase: Phase::Created,
                start_ns,
                tally: Tally::default(),
            });
            tid
        };
        match load {
            Load::None => {}
            Load::Video => {
                add(k, "load-video", LOAD_PROC, TASK_HOT_KIB, video(), 0);
            }
            Load::X => {
                add(
                    k,
                    "load-x",
                    LOAD_PROC,
                    TASK_HOT_KIB,
                    periodic(Pattern::X { i: 0 }),
                    0,
                );
            }
            Load::Burn => {
                for _ in 0..burn_threads {
                    add(k, "load-burn", LOAD_PROC, TASK_HOT_KIB, Behaviour::Burn, 0);
                }
            }
            Load::Memload => {
                let b = Behaviour::Memload {
                    m: Box::new(Memload::new(mem)),
                    cpu_after_io: None,
                };
                // It streams through every cache line: whoever follows refills from DRAM.
                add(k, "load-memload", LOAD_PROC, l2_kib, b, 0);
            }
        }
        let (name, b) = match bench {
            Bench::X => ("bench-x", periodic(Pattern::X { i: 0 })),
            Bench::Audio => ("bench-audio", audio()),
            Bench::Video => ("bench-video", video()),
            Bench::Gaming => ("bench-gaming", Behaviour::Gaming { deadline_ns: 0 }),
        };
        let bench_tid = add(k, name, BENCH_PROC, TASK_HOT_KIB, b, bench_start_ns);
        InterbenchUser {
            threads,
            w: WorkRate { top_khz },
            bench_tid,
        }
    }

    /// The benchmarked task's tally.
    pub fn bench_tally(&self) -> Tally {
        self.threads[self.bench_tid].tally
    }

    /// The benchmarked task's kernel thread.
    pub fn bench_tid(&self) -> usize {
        self.bench_tid
    }

    /// Memload's swap traffic (out, in), MiB, if it ran.
    pub fn swap_mib(&self) -> Option<(u64, u64)> {
        self.threads.iter().find_map(|t| match &t.behaviour {
            Behaviour::Memload { m, .. } => Some((m.swapped_out_mib, m.swapped_in_mib)),
            _ => None,
        })
    }

    /// Thread `t`'s next action at `now`; it last became runnable at `woken_ns`.
    fn step(&mut self, t: usize, now: u64, woken_ns: u64) -> Action {
        let w = self.w;
        let th = &mut self.threads[t];
        match th.phase {
            Phase::Created if now < th.start_ns => {
                th.phase = Phase::Delayed;
                return Action::Sleep(th.start_ns);
            }
            Phase::Created | Phase::Delayed => {
                th.phase = Phase::Looping;
                return match &mut th.behaviour {
                    Behaviour::Periodic(p) => {
                        // `deadline = get_usecs()` before the first call.
                        p.deadline_ns = now;
                        p.begin(now, 0, &mut th.tally, &w)
                    }
                    Behaviour::Gaming { deadline_ns } => {
                        *deadline_ns = now + GAME_RUN_NS;
                        Action::Compute(w.cycles(GAME_RUN_NS))
                    }
                    Behaviour::Burn => Action::Compute(w.cycles(BURN_CHUNK_NS)),
                    Behaviour::Memload { m, cpu_after_io } => memload_step(m, cpu_after_io, now),
                };
            }
            Phase::Looping => {}
        }
        match &mut th.behaviour {
            // Woken from its sleep, or its burn finished: which one the deadline tells.
            Behaviour::Periodic(p) => {
                if std::mem::take(&mut p.asleep) {
                    let overslept = woken_ns.saturating_sub(p.sleep_until_ns);
                    p.begin(now, overslept, &mut th.tally, &w)
                } else {
                    p.burnt(now, &mut th.tally, &w)
                }
            }
            Behaviour::Gaming { deadline_ns } => {
                let late = now.saturating_sub(*deadline_ns);
                th.tally.achieved_burns += GAME_RUN_NS;
                th.tally.missed_burns += late;
                th.tally.record(late);
                *deadline_ns = now + GAME_RUN_NS;
                Action::Compute(w.cycles(GAME_RUN_NS))
            }
            Behaviour::Burn => Action::Compute(w.cycles(BURN_CHUNK_NS)),
            Behaviour::Memload { m, cpu_after_io } => memload_step(m, cpu_after_io, now),
        }
    }
}

fn memload_step(m: &mut Memload, cpu_after_io: &mut Option<u64>, now: u64) -> Action {
    if let Some(c) = cpu_after_io.take() {
        return Action::Compute(c.max(1));
    }
    let s = m.step();
    if s.io_ns > 0 {
        *cpu_after_io = Some(s.cycles);
        return Action::Sleep(now + s.io_ns);
    }
    Action::Compute(s.cycles.max(1))
}

impl Userspace for InterbenchUser {
    fn next_action(&mut self, t: usize, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) -> Action {
        self.step(t, cx.now(), k.tasks[t].woken_ns)
    }
}

impl IdleForcing for InterbenchUser {}

impl Workload for InterbenchUser {
    fn start(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        k.wake_each(0..self.threads.len(), &*self, cx);
    }

    fn finished(&self) -> bool {
        false
    }
}
