//! CFS as the design brief restates it (seed 003's equations, Linux's constants): the arithmetic
//! and the [`Cfs`] class that the simulator has scheduled with since its first version.
//!
//! - weight W(nice): Linux's table, [`lull_model::weight::nice_to_weight`];
//! - virtual runtime VR = runtime × 1024 / W ([`vruntime_delta_ns`]);
//! - time slice TS(τ) = P × W(τ) / ΣW, P = 5 ms while fewer than 5 tasks are runnable, else
//!   n × 1 ms ([`period_ns`], [`time_slice_ns`]);
//! - on wakeup a sleeper's VR is lifted to about the queue's minimum ([`place_on_wakeup`]);
//! - at a tick the running task is preempted once it has used its slice ([`tick_preempt`]);
//! - a woken task preempts the running one when it is far enough to the left ([`wakeup_preempt`]).
//!
//! Where [`Cfs`] departs from Linux's CFS (before 6.6) it says so: a new task is placed like a
//! waking one (Linux adds a slice, `START_DEBIT`); the queue minimum advances only as the current
//! task runs (Linux's `update_min_vruntime` also runs on dequeue); an evacuated task is lifted to
//! the new queue's minimum (Linux renormalises as for balancing).

use std::collections::BTreeSet;

use super::{Enqueue, FairParams, Migration, SchedClass};
use crate::ids::{CpuId, TaskId};
use lull_model::weight::NICE_0_WEIGHT;

/// Scheduling period while fewer than [`NR_LATENCY`] tasks are runnable. Source: the design
/// brief's restatement of seed 003 (P = 5 ms when n < 5).
pub const PERIOD_MIN_NS: u64 = 5_000_000;
/// Runnable-task count from which the period grows with n. Source: as [`PERIOD_MIN_NS`].
pub const NR_LATENCY: u64 = 5;
/// Period per runnable task once n ≥ [`NR_LATENCY`] (the minimum granularity). Source: as above.
pub const MIN_GRANULARITY_NS: u64 = 1_000_000;
/// How far below the queue's minimum VR a waking sleeper may be placed: half a period, Linux's
/// `GENTLE_FAIR_SLEEPERS` rule in `place_entity()` (`thresh = sysctl_sched_latency / 2`).
pub const SLEEPER_CREDIT_NS: u64 = PERIOD_MIN_NS / 2;
/// Wakeup preemption granularity in virtual time of a nice-0 task. Source: Linux
/// `sysctl_sched_wakeup_granularity` base value, 1 ms (`kernel/sched/fair.c`).
pub const WAKEUP_GRANULARITY_NS: u64 = 1_000_000;

/// The scheduling period P for `n_runnable` tasks.
#[must_use]
pub fn period_ns(n_runnable: u64) -> u64 {
    if n_runnable < NR_LATENCY {
        PERIOD_MIN_NS
    } else {
        n_runnable * MIN_GRANULARITY_NS
    }
}

/// TS(τ) = P × W(τ) / ΣW for a task of `weight` in a runnable set of `n_runnable` tasks whose
/// weights sum to `total_weight` (which includes `weight`). A zero total gives the whole period.
#[must_use]
pub fn time_slice_ns(weight: u32, total_weight: u64, n_runnable: u64) -> u64 {
    let p = period_ns(n_runnable.max(1));
    if total_weight == 0 {
        return p;
    }
    ((u128::from(p) * u128::from(weight)) / u128::from(total_weight)) as u64
}

/// VR advance for `runtime_ns` of execution at `weight`: runtime × 1024 / W.
#[must_use]
pub fn vruntime_delta_ns(runtime_ns: u64, weight: u32) -> u64 {
    let w = u128::from(weight.max(1));
    ((u128::from(runtime_ns) * u128::from(NICE_0_WEIGHT)) / w) as u64
}

/// The VR a waking task gets: its own, lifted to at least `min_vruntime − SLEEPER_CREDIT_NS`, so a
/// long sleeper neither monopolises the core nor loses its place entirely.
#[must_use]
pub fn place_on_wakeup(vruntime: u64, min_vruntime: u64) -> u64 {
    vruntime.max(min_vruntime.saturating_sub(SLEEPER_CREDIT_NS))
}

/// Whether the tick preempts the running task: it has run its slice in this turn.
#[must_use]
pub fn tick_preempt(ran_this_turn_ns: u64, slice_ns: u64) -> bool {
    ran_this_turn_ns >= slice_ns
}

/// Whether a woken task preempts the running one at once: the runner's VR exceeds the woken
/// task's by more than the wakeup granularity, scaled to the woken task's weight (Linux
/// `wakeup_preempt_entity()` with `wakeup_gran()`).
#[must_use]
pub fn wakeup_preempt(curr_vruntime: u64, woken_vruntime: u64, woken_weight: u32) -> bool {
    let gran = vruntime_delta_ns(WAKEUP_GRANULARITY_NS, woken_weight);
    curr_vruntime > woken_vruntime.saturating_add(gran)
}

/// One task's CFS state.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Entity {
    weight: u32,
    vruntime: u64,
    /// The queue it waits in (not set while it is current).
    queued_on: Option<CpuId>,
}

/// One CPU's CFS run queue: the waiting tasks ordered by (VR, task), the current task outside it
/// (as in Linux, where `curr` is not in the tree), and the queue's monotonic minimum VR.
#[derive(Clone, Debug, Default)]
struct CfsRq {
    queue: BTreeSet<(u64, TaskId)>,
    /// Sum of the queued tasks' weights (not the current task's).
    queued_weight: u64,
    curr: Option<TaskId>,
    min_vruntime: u64,
    /// When the current task was picked: the tick compares its turn with its slice.
    turn_start_ns: u64,
}

/// The CFS class (see the module documentation).
#[derive(Clone, Debug)]
pub struct Cfs {
    rqs: Vec<CfsRq>,
    tasks: Vec<Option<Entity>>,
}

impl Cfs {
    /// A class scheduling `cpus` CPUs.
    #[must_use]
    pub fn new(cpus: usize) -> Cfs {
        Cfs {
            rqs: vec![CfsRq::default(); cpus],
            tasks: Vec::new(),
        }
    }

    /// A task's virtual runtime (for tests and reports).
    #[must_use]
    pub fn vruntime(&self, task: TaskId) -> Option<u64> {
        self.tasks
            .get(task.0)
            .copied()
            .flatten()
            .map(|e| e.vruntime)
    }

    fn entity(&self, task: TaskId) -> Entity {
        self.tasks[task.0].expect("the substrate attached the task")
    }

    fn entity_mut(&mut self, task: TaskId) -> &mut Entity {
        self.tasks[task.0]
            .as_mut()
            .expect("the substrate attached the task")
    }

    fn insert(&mut self, cpu: CpuId, task: TaskId) {
        let e = self.entity(task);
        let rq = &mut self.rqs[cpu.0];
        let fresh = rq.queue.insert((e.vruntime, task));
        assert!(fresh, "{task:?} queued twice on {cpu:?}");
        rq.queued_weight += u64::from(e.weight);
        self.entity_mut(task).queued_on = Some(cpu);
    }

    /// Queues a task at the virtual runtime `vruntime` (VT-CFS's wakeup placement).
    pub(super) fn enqueue_at(&mut self, cpu: CpuId, task: TaskId, vruntime: u64) {
        self.entity_mut(task).vruntime = vruntime;
        self.insert(cpu, task);
    }

    /// The smallest virtual runtime among `cpu`'s runnable tasks, the current one included; the
    /// queue's monotonic minimum when none is runnable.
    pub(super) fn runnable_min_vruntime(&self, cpu: CpuId) -> u64 {
        let rq = &self.rqs[cpu.0];
        let leftmost = rq.queue.first().map(|&(vr, _)| vr);
        let curr = rq.curr.map(|t| self.entity(t).vruntime);
        match (leftmost, curr) {
            (Some(l), Some(c)) => l.min(c),
            (Some(v), None) | (None, Some(v)) => v,
            (None, None) => rq.min_vruntime,
        }
    }

    /// `cpu`'s current task, how long its turn has lasted at `now_ns`, its virtual runtime and
    /// the leftmost waiting task's (VT-CFS's tick compares them).
    pub(super) fn turn(&self, cpu: CpuId, now_ns: u64) -> Option<(u64, u64, Option<u64>)> {
        let rq = &self.rqs[cpu.0];
        let curr = rq.curr?;
        Some((
            now_ns.saturating_sub(rq.turn_start_ns),
            self.entity(curr).vruntime,
            rq.queue.first().map(|&(vr, _)| vr),
        ))
    }

    fn remove(&mut self, cpu: CpuId, task: TaskId) {
        let e = self.entity(task);
        let rq = &mut self.rqs[cpu.0];
        let was = rq.queue.remove(&(e.vruntime, task));
        assert!(was, "{task:?} is not queued on {cpu:?}");
        rq.queued_weight -= u64::from(e.weight);
        self.entity_mut(task).queued_on = None;
    }
}

impl SchedClass for Cfs {
    fn name(&self) -> &'static str {
        "cfs"
    }

    fn attach(&mut self, task: TaskId, params: FairParams) {
        if self.tasks.len() <= task.0 {
            self.tasks.resize(task.0 + 1, None);
        }
        self.tasks[task.0] = Some(Entity {
            weight: params.weight,
            vruntime: 0,
            queued_on: None,
        });
    }

    fn set_params(&mut self, task: TaskId, params: FairParams) {
        // The weight is not part of the queue key; only the queued sum must follow it.
        let e = self.entity(task);
        if let Some(cpu) = e.queued_on {
            let rq = &mut self.rqs[cpu.0];
            rq.queued_weight = rq.queued_weight - u64::from(e.weight) + u64::from(params.weight);
        }
        self.entity_mut(task).weight = params.weight;
    }

    fn enqueue(&mut self, cpu: CpuId, task: TaskId, _how: Enqueue) {
        let min = self.rqs[cpu.0].min_vruntime;
        let e = self.entity_mut(task);
        e.vruntime = place_on_wakeup(e.vruntime, min);
        self.insert(cpu, task);
    }

    fn block(&mut self, cpu: CpuId, task: TaskId) {
        if self.rqs[cpu.0].curr == Some(task) {
            self.rqs[cpu.0].curr = None;
        } else {
            self.remove(cpu, task);
        }
    }

    fn migrate(&mut self, task: TaskId, from: CpuId, to: CpuId, how: Migration) {
        self.remove(from, task);
        let (from_min, to_min) = (self.rqs[from.0].min_vruntime, self.rqs[to.0].min_vruntime);
        let e = self.entity_mut(task);
        e.vruntime = match how {
            // Keep its distance to the queue minimum (Linux `migrate_task_rq_fair` before 6.6).
            Migration::Balance => e.vruntime.saturating_sub(from_min) + to_min,
            Migration::Evacuate => e.vruntime.max(to_min),
        };
        self.insert(to, task);
    }

    fn pick_next(&mut self, cpu: CpuId, now_ns: u64) -> Option<TaskId> {
        let rq = &mut self.rqs[cpu.0];
        assert!(rq.curr.is_none(), "pick on {cpu:?} with a current task");
        let &(_, task) = rq.queue.first()?;
        self.remove(cpu, task);
        let rq = &mut self.rqs[cpu.0];
        rq.curr = Some(task);
        rq.turn_start_ns = now_ns;
        Some(task)
    }

    fn put_prev(&mut self, cpu: CpuId) {
        if let Some(task) = self.rqs[cpu.0].curr.take() {
            self.insert(cpu, task);
        }
    }

    fn update_curr(&mut self, cpu: CpuId, ran_ns: u64) {
        let Some(task) = self.rqs[cpu.0].curr else {
            return;
        };
        let e = self.entity_mut(task);
        e.vruntime += vruntime_delta_ns(ran_ns, e.weight);
        let cur = e.vruntime;
        let rq = &mut self.rqs[cpu.0];
        let leftmost = rq.queue.first().map(|&(vr, _)| vr);
        rq.min_vruntime = rq.min_vruntime.max(leftmost.map_or(cur, |l| l.min(cur)));
    }

    fn tick(&mut self, cpu: CpuId, now_ns: u64) -> bool {
        let rq = &self.rqs[cpu.0];
        let Some(curr) = rq.curr else {
            return false;
        };
        let n = rq.queue.len() as u64 + 1;
        if n < 2 {
            return false;
        }
        let w = self.entity(curr).weight;
        let slice = time_slice_ns(w, rq.queued_weight + u64::from(w), n);
        tick_preempt(now_ns.saturating_sub(rq.turn_start_ns), slice)
    }

    fn wakeup_preempt(&mut self, cpu: CpuId, woken: TaskId) -> bool {
        let Some(curr) = self.rqs[cpu.0].curr else {
            return false;
        };
        let w = self.entity(woken);
        wakeup_preempt(self.entity(curr).vruntime, w.vruntime, w.weight)
    }

    fn current(&self, cpu: CpuId) -> Option<TaskId> {
        self.rqs[cpu.0].curr
    }

    fn nr_queued(&self, cpu: CpuId) -> usize {
        self.rqs[cpu.0].queue.len()
    }

    fn steal_candidate(&self, cpu: CpuId, movable: &dyn Fn(TaskId) -> bool) -> Option<TaskId> {
        // The movable task that would run last here.
        self.rqs[cpu.0]
            .queue
            .iter()
            .rev()
            .map(|&(_, t)| t)
            .find(|&t| movable(t))
    }

    fn sleeping_on(&self, _task: TaskId) -> Option<CpuId> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_model::weight::nice_to_weight;

    /// Two CPUs and three tasks of nice 0 attached, none queued.
    fn two_cpus_three_tasks() -> (Cfs, [TaskId; 3]) {
        let mut cfs = Cfs::new(2);
        let tasks = [TaskId(0), TaskId(1), TaskId(2)];
        for t in tasks {
            cfs.attach(t, FairParams::nice(0));
        }
        (cfs, tasks)
    }

    #[test]
    fn the_class_keeps_a_queue_ordered_by_vruntime() {
        let (mut cfs, [a, b, c]) = two_cpus_three_tasks();
        let cpu = CpuId(0);
        cfs.enqueue(cpu, a, Enqueue::New);
        assert_eq!(cfs.pick_next(cpu, 0), Some(a));
        cfs.update_curr(cpu, 3_000_000);
        cfs.enqueue(cpu, b, Enqueue::Wakeup);
        // b starts at the queue minimum less the sleeper credit: 3 ms behind a.
        assert_eq!(cfs.vruntime(b), Some(500_000));
        assert!(cfs.wakeup_preempt(cpu, b));
        cfs.put_prev(cpu);
        assert_eq!(cfs.nr_queued(cpu), 2);
        assert_eq!(cfs.steal_candidate(cpu, &|_| true), Some(a));
        assert_eq!(cfs.pick_next(cpu, 3_000_000), Some(b));
        // Balancing keeps a's distance to its queue's minimum on the new queue (minimum 0).
        cfs.migrate(a, cpu, CpuId(1), Migration::Balance);
        assert_eq!(cfs.vruntime(a), Some(0));
        assert_eq!(cfs.nr_queued(CpuId(1)), 1);
        cfs.block(cpu, b);
        assert_eq!(cfs.current(cpu), None);
        assert_eq!(cfs.pick_next(cpu, 4_000_000), None);
        // A reweight follows the task into the tick's slice arithmetic.
        cfs.enqueue(CpuId(1), c, Enqueue::New);
        cfs.set_params(c, FairParams::nice(-10));
        assert_eq!(cfs.pick_next(CpuId(1), 0), Some(a));
        assert!(!cfs.tick(CpuId(1), 400_000));
        // a's slice is 5 ms × 1024 / (1024 + 9548) = 0.48 ms.
        assert!(cfs.tick(CpuId(1), 500_000));
    }

    /// The tick's slice, period × w / (w + the queued tasks' weights), follows the queued sum as
    /// tasks are picked off the queue and reweighted on it.
    #[test]
    fn the_queued_weight_follows_picks_and_reweights() {
        let mut cfs = Cfs::new(1);
        let cpu = CpuId(0);
        let (a, b, c) = (TaskId(0), TaskId(1), TaskId(2));
        for t in [a, b, c] {
            cfs.attach(t, FairParams::nice(0));
            cfs.enqueue(cpu, t, Enqueue::New);
        }
        assert_eq!(cfs.pick_next(cpu, 0), Some(a));
        // b and c queued (2048): a's slice is 5 ms × 1024 / 3072 = 1.667 ms.
        assert!(!cfs.tick(cpu, 1_666_000));
        assert!(cfs.tick(cpu, 1_667_000));
        // b reweighted to nice −10 while queued (9548 + 1024 queued): 5 ms × 1024 / 11596 =
        // 0.4415 ms.
        cfs.set_params(b, FairParams::nice(-10));
        assert!(!cfs.tick(cpu, 441_000));
        assert!(cfs.tick(cpu, 442_000));
    }

    #[test]
    fn a_balance_migration_keeps_the_distance_to_the_queue_minimum() {
        let (mut cfs, [a, b, c]) = two_cpus_three_tasks();
        // CPU 1's minimum reaches 20 ms (c ran alone); on CPU 0, a runs 10 ms ahead of b (0).
        cfs.enqueue(CpuId(1), c, Enqueue::New);
        assert_eq!(cfs.pick_next(CpuId(1), 0), Some(c));
        cfs.update_curr(CpuId(1), 20_000_000);
        cfs.enqueue(CpuId(0), a, Enqueue::New);
        cfs.enqueue(CpuId(0), b, Enqueue::New);
        assert_eq!(cfs.pick_next(CpuId(0), 0), Some(a));
        cfs.update_curr(CpuId(0), 10_000_000);
        cfs.put_prev(CpuId(0));
        // a is 10 ms above CPU 0's minimum (0): 10 ms above CPU 1's (20 ms) after the move.
        cfs.migrate(a, CpuId(0), CpuId(1), Migration::Balance);
        assert_eq!(cfs.vruntime(a), Some(30_000_000));
    }

    #[test]
    fn period_follows_the_runnable_count() {
        assert_eq!(period_ns(1), 5_000_000);
        assert_eq!(period_ns(4), 5_000_000);
        assert_eq!(period_ns(5), 5_000_000);
        assert_eq!(period_ns(10), 10_000_000);
    }

    #[test]
    fn seed_003_example_2_nine_nice0_and_one_nice_minus_12() {
        let total = 9 * u64::from(nice_to_weight(0)) + u64::from(nice_to_weight(-12));
        let small = time_slice_ns(nice_to_weight(0), total, 10);
        let big = time_slice_ns(nice_to_weight(-12), total, 10);
        // 0.42 ms and 6.18 ms in seed 003's example 2.
        assert_eq!(small / 10_000, 42);
        assert_eq!(big / 10_000, 618);
    }

    #[test]
    fn a_lone_task_gets_the_whole_period() {
        assert_eq!(time_slice_ns(1024, 1024, 1), PERIOD_MIN_NS);
        assert_eq!(time_slice_ns(1024, 0, 0), PERIOD_MIN_NS);
    }

    #[test]
    fn vruntime_runs_slower_for_heavier_tasks() {
        assert_eq!(vruntime_delta_ns(1_000_000, 1024), 1_000_000);
        assert_eq!(vruntime_delta_ns(1_000_000, 2048), 500_000);
        assert!(vruntime_delta_ns(1_000_000, nice_to_weight(19)) > 60_000_000);
    }

    #[test]
    fn sleepers_are_lifted_near_the_minimum() {
        assert_eq!(
            place_on_wakeup(0, 100_000_000),
            100_000_000 - SLEEPER_CREDIT_NS
        );
        assert_eq!(place_on_wakeup(200_000_000, 100_000_000), 200_000_000);
        assert_eq!(place_on_wakeup(5, 1), 5);
    }

    #[test]
    fn preemption_rules() {
        assert!(!tick_preempt(4_999_999, 5_000_000));
        assert!(tick_preempt(5_000_000, 5_000_000));
        assert!(wakeup_preempt(10_000_000, 8_000_000, 1024));
        assert!(!wakeup_preempt(10_000_000, 9_500_000, 1024));
        // A lead of exactly the granularity is not enough (`vdiff > gran` in the kernel).
        assert!(!wakeup_preempt(10_000_000, 9_000_000, 1024));
        assert!(wakeup_preempt(10_000_000, 8_999_999, 1024));
        // A light woken task needs a bigger lead.
        assert!(!wakeup_preempt(10_000_000, 8_000_000, nice_to_weight(5)));
    }
}
