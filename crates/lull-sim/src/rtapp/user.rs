//! rt-app's threads as user space: each runs its phases' events as rt-app 1.0's `thread_body`
//! and `run_event` do, and logs one [`PeriodRecord`] per pass over a phase, in rt-app's columns.
//!
//! - `run`: `floor(us × 1000 / ns_per_loop)` loops of the busy function, each costing the
//!   machine's real loop time at the reference speed (the calibration CPU's top frequency);
//! - `runtime`: 32 µs chunks of work until `us` of wall time passed since the event began;
//! - `sleep`: a relative `nanosleep`;
//! - `timer`: `clock_nanosleep` to the timer's next expiry (shared by name, or per thread for
//!   `unique…` names); an expiry already past is an overrun: no sleep, and in relative mode the
//!   timer restarts from now.
//!
//! Every sleep is an hrtimer with the thread's timer slack, as Linux arms `nanosleep` for a
//! `SCHED_OTHER` task.

use std::collections::BTreeMap;

use lull_model::time::{NS_PER_S, NS_PER_US};
use lull_sched::seam::CpuMask;
use lull_sched::CpuId;
use lull_workload::rng::SplitMix64;
use lull_workload::rtapp::{Event, PeriodRecord, RtApp, TimerMode};

use crate::drive::Workload;
use crate::kernel::{Action, Cx, Kernel, Userspace};

/// Work of one `runtime` step between clock checks: rt-app's `loadwait(32)`.
const RUNTIME_CHUNK_US: u64 = 32;

/// How the simulated threads turn rt-app durations into work.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) struct Work {
    /// The ns per loop rt-app was told (`calibration`), which sets the loop count of a `run`.
    pub calibration_ns: f64,
    /// The real ns one loop takes at the reference speed.
    pub loop_ns: f64,
    /// The reference speed: the calibration CPU's top frequency.
    pub ref_khz: u64,
    /// Timer slack of every sleep.
    pub slack_ns: u64,
    /// CPU time per pass beyond the timed events, ns at the reference speed
    /// (`RtAppRun::pass_overhead_ns`).
    pub pass_overhead_ns: u64,
    /// The largest per-pass overhead, ns: each pass draws its overhead uniformly from
    /// `pass_overhead_ns..=pass_overhead_max_ns` (`RtAppRun::pass_overhead_max_ns`); at or
    /// below `pass_overhead_ns`, every pass costs exactly that.
    pub pass_overhead_max_ns: u64,
    /// The seed of the overhead draws (the run's).
    pub seed: u64,
    /// Start the timer grid at a random phase of the tick (`RtAppRun::random_start_phase`).
    pub random_start_phase: bool,
}

impl Work {
    /// Loops of the busy function for `us` of `run`.
    fn loops(&self, us: u64) -> u64 {
        (us as f64 * 1000.0 / self.calibration_ns).floor() as u64
    }

    /// Cycles of `loops` at the reference speed.
    fn cycles(&self, loops: u64) -> u64 {
        let ns = loops as f64 * self.loop_ns;
        (ns * self.ref_khz as f64 / 1e6).round() as u64
    }

    /// Cycles of one pass's overhead at the reference speed: fixed, or a draw from its range.
    fn overhead_cycles(&self, rng: &mut SplitMix64) -> u64 {
        let ns = if self.pass_overhead_max_ns > self.pass_overhead_ns {
            self.pass_overhead_ns + rng.below(self.pass_overhead_max_ns - self.pass_overhead_ns + 1)
        } else {
            self.pass_overhead_ns
        };
        (ns as f64 * self.ref_khz as f64 / 1e6).round() as u64
    }
}

/// Mixed into the run's seed for the overhead draws' own sequence (any constant would do).
const OVERHEAD_SEED_SALT: u64 = 0x6f76_6572_6865_6164;

/// A timer's state: its next expiry.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct TimerState {
    next_ns: u64,
}

/// What a thread is in the middle of when it next runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    /// Created, not yet run.
    Start,
    /// Sleeping out its initial `delay`.
    Delay,
    /// Between events.
    Ready,
    Run {
        start_ns: u64,
    },
    Runtime {
        start_ns: u64,
        us: u64,
    },
    Sleep,
    Timer {
        expiry_ns: u64,
    },
    /// The pass's untimed overhead, after its last event.
    Overhead,
    /// Its loops are done: it exits.
    Done,
}

/// The log data of the pass in progress (rt-app's `log_data_t`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
struct Pass {
    start_ns: u64,
    run_ns: u64,
    perf: u64,
    c_duration_us: u64,
    c_period_us: u64,
    slack_ns: i64,
    wu_lat_ns: u64,
}

/// One rt-app thread.
#[derive(Debug)]
pub(crate) struct Thread {
    task: usize,
    index: u32,
    /// The kernel's thread.
    tid: usize,
    phase: usize,
    phase_pass: u64,
    thread_pass: u64,
    event: usize,
    step: Step,
    pass: Pass,
    t_first_ns: u64,
    unique_timers: BTreeMap<String, TimerState>,
    pub records: Vec<PeriodRecord>,
}

/// The rt-app process.
#[derive(Debug)]
pub(crate) struct RtAppUser<'w> {
    w: &'w RtApp,
    work: Work,
    pub threads: Vec<Thread>,
    shared_timers: BTreeMap<String, TimerState>,
    /// Where the threads' timer grid starts (rt-app's `t_first` of every thread).
    start_ns: u64,
    /// The per-pass overhead draws.
    overhead_rng: SplitMix64,
}

fn mask(cpus: &[u32]) -> CpuMask {
    let ids: Vec<CpuId> = cpus.iter().map(|&c| CpuId(c as usize)).collect();
    CpuMask::of(&ids)
}

fn ns_to_us(ns: u64) -> u64 {
    ns / NS_PER_US
}

impl<'w> RtAppUser<'w> {
    /// Creates every thread of `w` in the kernel, in rt-app's numbering.
    pub fn new(w: &'w RtApp, work: Work, k: &mut Kernel<'_>) -> RtAppUser<'w> {
        let mut threads = Vec::new();
        for name in w.threads() {
            let task = &w.tasks[name.task];
            let tid = k.add_task(name.name.clone(), 1, task.nice, 0);
            if let Some(cpus) = &task.cpus {
                k.set_affinity(tid, mask(cpus));
            }
            threads.push(Thread {
                task: name.task,
                index: name.index,
                tid,
                phase: 0,
                phase_pass: 0,
                thread_pass: 0,
                event: 0,
                step: Step::Start,
                pass: Pass::default(),
                t_first_ns: 0,
                unique_timers: BTreeMap::new(),
                records: Vec::new(),
            });
        }
        RtAppUser {
            w,
            work,
            threads,
            shared_timers: BTreeMap::new(),
            start_ns: 0,
            // Its own sequence, so that drawing overheads leaves the engine's draws (the timer
            // lateness, the start phase) as they were.
            overhead_rng: SplitMix64::new(work.seed ^ OVERHEAD_SEED_SALT),
        }
    }

    fn sleep_until(&self, at_ns: u64) -> Action {
        Action::HrSleep {
            until: at_ns,
            slack_ns: self.work.slack_ns,
        }
    }

    /// Begins a pass over the current phase at `now`, applying the phase's scheduling settings
    /// when the phase starts. Returns a sleep when the thread must move off a core it may no
    /// longer use.
    fn begin_pass(&mut self, i: usize, now: u64, k: &mut Kernel<'_>) -> Option<Action> {
        let th = &mut self.threads[i];
        th.pass = Pass {
            start_ns: now,
            ..Pass::default()
        };
        th.event = 0;
        if th.phase_pass != 0 {
            return None;
        }
        let phase = &self.w.tasks[th.task].phases[th.phase];
        if let Some(nice) = phase.nice {
            k.set_nice(th.tid, nice);
        }
        if let Some(cpus) = &phase.cpus {
            let m = mask(cpus);
            k.set_affinity(th.tid, m);
            if !m.contains(CpuId(k.tasks[th.tid].core)) {
                // sched_setaffinity moves a running thread at once; here it leaves the core
                // through a zero-length sleep and its wakeup places it within the new mask.
                return Some(Action::Sleep(now));
            }
        }
        None
    }

    /// Ends the pass at `now`: logs it and moves the loop counters on. False when the thread's
    /// loops are done.
    fn end_pass(&mut self, i: usize, now: u64) -> bool {
        let task = &self.w.tasks[self.threads[i].task];
        let th = &mut self.threads[i];
        let p = th.pass;
        th.records.push(PeriodRecord {
            index: th.index,
            perf: p.perf,
            run_us: ns_to_us(p.run_ns),
            period_us: ns_to_us(now - p.start_ns),
            start_us: ns_to_us(p.start_ns),
            end_us: ns_to_us(now),
            rel_start_us: ns_to_us(p.start_ns),
            slack_us: p.slack_ns / NS_PER_US as i64,
            c_duration_us: p.c_duration_us,
            c_period_us: p.c_period_us,
            wu_lat_us: ns_to_us(p.wu_lat_ns),
        });
        th.phase_pass += 1;
        if th.phase_pass == task.phases[th.phase].loops {
            th.phase_pass = 0;
            th.phase += 1;
            if th.phase == task.phases.len() {
                th.phase = 0;
                th.thread_pass += 1;
            }
        }
        task.loops != Some(th.thread_pass)
    }

    /// Starts event `e` of the current phase at `now`: the action, or `None` for an event that
    /// completes at once.
    fn start_event(&mut self, i: usize, now: u64) -> Option<Action> {
        let work = self.work;
        let th = &self.threads[i];
        let event = self.w.tasks[th.task].phases[th.phase].events[th.event].clone();
        match event {
            Event::Run { us } => {
                let loops = work.loops(us);
                let th = &mut self.threads[i];
                th.pass.c_duration_us += us;
                th.pass.perf += loops;
                let cycles = work.cycles(loops);
                if cycles == 0 {
                    return None;
                }
                th.step = Step::Run { start_ns: now };
                Some(Action::Compute(cycles))
            }
            Event::Runtime { us } => {
                let th = &mut self.threads[i];
                th.pass.c_duration_us += us;
                th.step = Step::Runtime { start_ns: now, us };
                Some(self.runtime_chunk(i))
            }
            Event::Sleep { us } => {
                self.threads[i].step = Step::Sleep;
                Some(self.sleep_until(now + us * NS_PER_US))
            }
            Event::Timer {
                reference,
                period_us,
                mode,
            } => self.timer(i, &reference, period_us, mode, now),
        }
    }

    /// One 32 µs chunk of a `runtime` event's work.
    fn runtime_chunk(&mut self, i: usize) -> Action {
        let loops = self.work.loops(RUNTIME_CHUNK_US);
        self.threads[i].pass.perf += loops;
        Action::Compute(self.work.cycles(loops).max(1))
    }

    /// rt-app's timer event.
    fn timer(
        &mut self,
        i: usize,
        reference: &str,
        period_us: u64,
        mode: TimerMode,
        now: u64,
    ) -> Option<Action> {
        let t_first = self.threads[i].t_first_ns;
        let th = &mut self.threads[i];
        let state = if Event::timer_is_unique(reference) {
            th.unique_timers
                .entry(reference.to_owned())
                .or_insert(TimerState { next_ns: t_first })
        } else {
            self.shared_timers
                .entry(reference.to_owned())
                .or_insert(TimerState { next_ns: t_first })
        };
        state.next_ns += period_us * NS_PER_US;
        let expiry_ns = state.next_ns;
        th.pass.c_period_us += period_us;
        th.pass.slack_ns = expiry_ns as i64 - now as i64;
        if now < expiry_ns {
            th.step = Step::Timer { expiry_ns };
            return Some(Action::HrSleep {
                until: expiry_ns,
                slack_ns: self.work.slack_ns,
            });
        }
        if mode == TimerMode::Relative {
            state.next_ns = now;
        }
        // rt-app clears the pass's wake-up latency on an overrun.
        th.pass.wu_lat_ns = 0;
        None
    }

    /// The thread's next action at `now`, after finishing the step it was in.
    fn advance(&mut self, i: usize, k: &mut Kernel<'_>, now: u64) -> Action {
        let task = &self.w.tasks[self.threads[i].task];
        match self.threads[i].step {
            Step::Start => {
                let delay_ns = task.delay_us * NS_PER_US;
                self.threads[i].t_first_ns = self.start_ns + delay_ns;
                if delay_ns > 0 {
                    self.threads[i].step = Step::Delay;
                    return self.sleep_until(self.threads[i].t_first_ns);
                }
                if let Some(a) = self.begin_first(i, now, k) {
                    return a;
                }
            }
            Step::Delay => {
                if let Some(a) = self.begin_first(i, now, k) {
                    return a;
                }
            }
            Step::Ready => {}
            Step::Run { start_ns } => {
                self.threads[i].pass.run_ns += now - start_ns;
                self.threads[i].event += 1;
            }
            Step::Runtime { start_ns, us } => {
                if now - start_ns < us * NS_PER_US {
                    return self.runtime_chunk(i);
                }
                self.threads[i].pass.run_ns += now - start_ns;
                self.threads[i].event += 1;
            }
            Step::Sleep => self.threads[i].event += 1,
            Step::Overhead => {}
            Step::Timer { expiry_ns } => {
                self.threads[i].pass.wu_lat_ns += now.saturating_sub(expiry_ns);
                self.threads[i].event += 1;
            }
            Step::Done => return Action::Block,
        }
        // The overhead of the pass whose events are done has been paid when it was the step.
        let mut overhead_paid = self.threads[i].step == Step::Overhead;
        self.threads[i].step = Step::Ready;
        loop {
            let th = &self.threads[i];
            let events = &self.w.tasks[th.task].phases[th.phase].events;
            if th.event == events.len() {
                let overhead = self.work.overhead_cycles(&mut self.overhead_rng);
                if overhead > 0 && !overhead_paid {
                    self.threads[i].step = Step::Overhead;
                    return Action::Compute(overhead);
                }
                overhead_paid = false;
                if !self.end_pass(i, now) {
                    self.threads[i].step = Step::Done;
                    return Action::Block;
                }
                if let Some(a) = self.begin_pass(i, now, k) {
                    return a;
                }
                continue;
            }
            if let Some(a) = self.start_event(i, now) {
                return a;
            }
            self.threads[i].event += 1;
        }
    }

    fn begin_first(&mut self, i: usize, now: u64, k: &mut Kernel<'_>) -> Option<Action> {
        self.threads[i].step = Step::Ready;
        if self.w.tasks[self.threads[i].task].loops == Some(0) {
            self.threads[i].step = Step::Done;
            return Some(Action::Block);
        }
        self.begin_pass(i, now, k)
    }
}

impl Userspace for RtAppUser<'_> {
    fn next_action(&mut self, t: usize, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) -> Action {
        // Kernel thread ids are the rt-app thread indices: the threads were created in order.
        self.advance(t, k, cx.now())
    }
}

impl crate::pm::IdleForcing for RtAppUser<'_> {}

impl Workload for RtAppUser<'_> {
    /// Every thread starts at time zero (rt-app releases them together from a barrier); their
    /// timer grid at a random phase of the tick when asked for.
    fn start(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        if self.work.random_start_phase {
            let tick_ns = NS_PER_S / u64::from(k.hz());
            self.start_ns = cx.eng.rng().below(tick_ns);
        }
        for i in 0..self.threads.len() {
            let tid = self.threads[i].tid;
            k.wake(tid, &*self, cx);
        }
    }

    /// Whether every thread has finished its loops.
    fn finished(&self) -> bool {
        self.threads.iter().all(|t| t.step == Step::Done)
    }
}
