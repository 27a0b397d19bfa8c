//! Load balancing on averaged load: each task's and each run queue's PELT load and utilisation,
//! and the periodic balance's decision as Linux takes it in a domain whose groups are single CPUs
//! (a small machine's MC domain).
//!
//! The averages follow `kernel/sched/pelt.c` (`___update_load_sum`, `___update_load_avg`):
//! time counts in periods of 1024 µs, each period weighing y times the next with y³² = ½, so a
//! contribution halves every 32 ms. A task's *load* sums the periods it was runnable (running or
//! waiting) times its load weight; its *utilisation* the periods it ran. A run queue's load is
//! the sum of the tasks attached to it, including sleeping ones whose load decays there (Linux's
//! blocked load), so a periodic task weighs on its CPU through its sleeps and the balance does
//! not depend on the phase at which it looks.
//!
//! The decision follows `kernel/sched/fair.c`: `group_classify` (has spare / fully busy /
//! overloaded, with `imbalance_pct`), `sched_balance_find_src_group` (a busy CPU pulls only from
//! an overloaded group), `calculate_imbalance` (`migrate_load`: bring both towards the domain's
//! average load), `detach_tasks` (a task's load, halved once per failed attempt, must fit in the
//! imbalance), `can_migrate_task` → `task_hot` (a task that ran within
//! `sysctl_sched_migration_cost` stays, unless `nr_balance_failed > cache_nice_tries`) and
//! `need_active_balance` (after `cache_nice_tries + 2` failures the busiest CPU's stopper pushes
//! a task). Left out: the runnable-average terms of the classification, misfit and asymmetric
//! packing (single-type clusters), NUMA, and the frequency scaling of the PELT clock (the load
//! signals here run on task time; the utilisation PELT that schedutil reads is
//! [`crate::pelt`]).

use crate::ids::{CpuId, TaskId};
use crate::pelt::{decay_load, PeltClock, CAPACITY_SCALE};

/// The margin by which groups must differ, in percent (`sd_init`: `imbalance_pct = 117` for a
/// domain of CPUs sharing a last-level cache, `SD_SHARE_LLC`).
pub const IMBALANCE_PCT: u64 = 117;
/// Failed balances after which a cache-hot task may move (`sd_init`: `cache_nice_tries = 1`
/// with `SD_SHARE_LLC`).
pub const CACHE_NICE_TRIES: u32 = 1;
/// A waiting task that ran this recently is cache hot (`sysctl_sched_migration_cost`, 500 µs
/// by default, `kernel/sched/fair.c`).
pub const MIGRATION_COST_NS: u64 = 500_000;
/// The balance interval per CPU of the domain, in ms (`sd_init`: `min_interval = sd_weight`,
/// `max_interval = 2 * sd_weight`).
pub const MIN_INTERVAL_MS_PER_CPU: u64 = 1;
/// How much less often a busy CPU balances than an idle one (`sd_init`: `busy_factor = 16`).
pub const BUSY_FACTOR: u64 = 16;
/// The longest balance interval per CPU of the domain, in ms (`max_interval = 2 * sd_weight`).
pub const MAX_INTERVAL_MS_PER_CPU: u64 = 2;

/// One entity's decayed sums on its own clock: runnable time (load) and running time
/// (utilisation), each in units of 1024 ns, older periods decayed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct LoadSignal {
    clock: PeltClock,
    /// Σ runnable time (`load_sum`, before the weight).
    load_sum: u64,
    /// Σ running time × 1024 (`util_sum`).
    util_sum: u64,
}

impl LoadSignal {
    /// Advances to `now_ns`; since the last update the entity was `runnable` (on a run queue)
    /// and `running` (on a CPU; implies runnable).
    pub fn advance(&mut self, now_ns: u64, runnable: bool, running: bool) {
        let Some(step) = self.clock.step(now_ns) else {
            return;
        };
        self.load_sum = decay_load(self.load_sum, step.periods);
        self.util_sum = decay_load(self.util_sum, step.periods);
        if runnable || running {
            self.load_sum += step.contrib;
        }
        if running {
            self.util_sum += step.contrib * CAPACITY_SCALE;
        }
    }

    fn divider(&self) -> u64 {
        self.clock.divider()
    }

    /// `load_avg` of an entity of load weight `weight` (1024 at nice 0).
    #[must_use]
    pub fn load_avg(&self, weight: u64) -> u64 {
        weight * self.load_sum / self.divider()
    }

    /// `util_avg`, 0..=1024.
    #[must_use]
    pub fn util_avg(&self) -> u64 {
        (self.util_sum / self.divider()).min(CAPACITY_SCALE)
    }
}

/// One task's load as the balancer sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
struct TaskLoad {
    signal: LoadSignal,
    /// The run queue its load counts in (it stays there, decaying, while the task sleeps).
    cpu: Option<CpuId>,
    runnable: bool,
    running: bool,
    weight: u64,
    /// When it last stopped running (`se.exec_start` of a waiting task); `None` before its
    /// first run.
    last_ran_ns: Option<u64>,
}

/// Per-task load and utilisation over the run queues, fed by the substrate at every enqueue,
/// dequeue and context switch; a run queue's figures are the sums over the tasks attached to it
/// (`cfs_rq->avg`, which the kernel keeps as a running sum of the same terms).
#[derive(Clone, Debug, Default)]
pub struct LoadTracker {
    tasks: Vec<TaskLoad>,
}

impl LoadTracker {
    #[must_use]
    pub fn new() -> LoadTracker {
        LoadTracker::default()
    }

    fn task(&mut self, t: TaskId, now_ns: u64) -> &mut TaskLoad {
        if self.tasks.len() <= t.0 {
            self.tasks.resize(t.0 + 1, TaskLoad::default());
        }
        let tl = &mut self.tasks[t.0];
        tl.signal.advance(now_ns, tl.runnable, tl.running);
        tl
    }

    /// `t` of load weight `weight` joins `cpu`'s run queue at `now_ns` (new, woken or
    /// migrated); its load moves with it (`attach_entity_load_avg`).
    pub fn enqueue(&mut self, t: TaskId, cpu: CpuId, weight: u64, now_ns: u64) {
        let tl = self.task(t, now_ns);
        tl.runnable = true;
        tl.cpu = Some(cpu);
        tl.weight = weight;
    }

    /// `t` leaves its run queue to sleep at `now_ns`; its load stays there, decaying.
    pub fn dequeue(&mut self, t: TaskId, now_ns: u64) {
        let tl = self.task(t, now_ns);
        if tl.running {
            tl.last_ran_ns = Some(now_ns);
        }
        tl.runnable = false;
        tl.running = false;
    }

    /// `t` starts (`true`) or stops running at `now_ns`.
    pub fn set_running(&mut self, t: TaskId, running: bool, now_ns: u64) {
        let tl = self.task(t, now_ns);
        if tl.running && !running {
            tl.last_ran_ns = Some(now_ns);
        }
        tl.running = running;
        tl.runnable |= running;
    }

    fn at(&self, t: usize, now_ns: u64) -> LoadSignal {
        let tl = &self.tasks[t];
        let mut s = tl.signal;
        s.advance(now_ns, tl.runnable, tl.running);
        s
    }

    /// `t`'s load at `now_ns` (`task_h_load` without task groups).
    #[must_use]
    pub fn task_load(&self, t: TaskId, now_ns: u64) -> u64 {
        self.tasks
            .get(t.0)
            .map_or(0, |tl| self.at(t.0, now_ns).load_avg(tl.weight))
    }

    /// Whether `t`, waiting, ran within [`MIGRATION_COST_NS`] of `now_ns` (`task_hot`).
    #[must_use]
    pub fn task_hot(&self, t: TaskId, now_ns: u64) -> bool {
        self.tasks.get(t.0).is_some_and(|tl| {
            tl.running
                || tl
                    .last_ran_ns
                    .is_some_and(|at| now_ns.saturating_sub(at) < MIGRATION_COST_NS)
        })
    }

    /// `cpu`'s run-queue load and utilisation at `now_ns` (`cpu_load`, `cpu_util_cfs`).
    #[must_use]
    pub fn cpu_load_util(&self, cpu: CpuId, now_ns: u64) -> (u64, u64) {
        let (mut load, mut util) = (0, 0);
        for (t, tl) in self.tasks.iter().enumerate() {
            if tl.cpu == Some(cpu) {
                let s = self.at(t, now_ns);
                load += s.load_avg(tl.weight);
                util += s.util_avg();
            }
        }
        (load, util.min(CAPACITY_SCALE))
    }
}

/// How loaded a group is (`enum group_type`, the values a single-type cluster reaches, in the
/// kernel's order: a higher one is busier).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum GroupType {
    /// Room for more work (`group_has_spare`).
    HasSpare,
    /// Its CPU is used but has no more than one task (`group_fully_busy`).
    FullyBusy,
    /// More tasks than CPUs and no spare capacity (`group_overloaded`).
    Overloaded,
}

/// One run queue's figures for a balance.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct RqLoad {
    /// Running plus waiting tasks.
    pub nr_running: usize,
    /// PELT load (`cfs_rq->avg.load_avg`).
    pub load_avg: u64,
    /// PELT utilisation (`cfs_rq->avg.util_avg`).
    pub util_avg: u64,
    /// The CPU's capacity (1024 for the biggest CPU).
    pub capacity: u64,
}

impl RqLoad {
    /// `group_classify` for a group of this one CPU (`group_is_overloaded`,
    /// `group_has_capacity`, without the runnable-average terms).
    #[must_use]
    pub fn group_type(&self) -> GroupType {
        let util_pct = self.util_avg * IMBALANCE_PCT;
        if self.nr_running > 1 && self.capacity * 100 < util_pct {
            GroupType::Overloaded
        } else if self.nr_running < 1 || self.capacity * 100 > util_pct {
            GroupType::HasSpare
        } else {
            GroupType::FullyBusy
        }
    }

    /// Load per capacity (`sgs->avg_load`).
    #[must_use]
    pub fn avg_load(&self) -> u64 {
        self.load_avg * CAPACITY_SCALE / self.capacity.max(1)
    }
}

/// The load a busy CPU's periodic balance asks to move from `busiest` to `local`
/// (`sched_balance_find_src_group` and `calculate_imbalance` with `CPU_NOT_IDLE`, domain of
/// single-CPU groups), `domain_load` and `domain_capacity` being the sums over the domain's
/// CPUs; `None` when balanced.
#[must_use]
pub fn busy_imbalance(
    local: &RqLoad,
    busiest: &RqLoad,
    domain_load: u64,
    domain_capacity: u64,
) -> Option<u64> {
    let (lt, bt) = (local.group_type(), busiest.group_type());
    // A busy CPU does not pull from a group that is not overloaded, nor from a less busy one.
    if bt != GroupType::Overloaded || lt > bt {
        return None;
    }
    let (la, ba) = (local.avg_load(), busiest.avg_load());
    let domain_avg = domain_load * CAPACITY_SCALE / domain_capacity.max(1);
    if la >= ba || la >= domain_avg {
        return None;
    }
    if lt == GroupType::Overloaded && 100 * ba <= IMBALANCE_PCT * la {
        return None;
    }
    // Neither push the local group above the average nor the busiest below it (`migrate_load`).
    let imbalance = ((ba - domain_avg) * busiest.capacity).min((domain_avg - la) * local.capacity)
        / CAPACITY_SCALE;
    (imbalance > 0).then_some(imbalance)
}

/// Whether `detach_tasks` takes a waiting task of load `task_load`, cache hot or not, after
/// `failed` balances in a row that moved nothing, for an imbalance of `imbalance`: its load
/// halved once per failure (`shr_bound`) must fit, and a hot task waits for
/// `failed > CACHE_NICE_TRIES` (`can_migrate_task`).
#[must_use]
pub fn can_detach(task_load: u64, hot: bool, failed: u32, imbalance: u64) -> bool {
    let load = task_load.max(1) >> failed.min(63);
    load <= imbalance && (!hot || failed > CACHE_NICE_TRIES)
}

/// Whether the busiest CPU's stopper pushes a task after `failed` balances in a row that moved
/// nothing (`need_active_balance`).
#[must_use]
pub fn need_active_balance(failed: u32) -> bool {
    failed > CACHE_NICE_TRIES + 2
}

/// The balance interval in ms after a balance of a domain of `domain_cpus` CPUs: back to the
/// shortest after an imbalance, doubled (up to the longest) after a balanced look
/// (`sched_balance_rq`'s `balance_interval` handling). `current_ms` 0 means "not yet set".
#[must_use]
pub fn next_interval_ms(current_ms: u64, domain_cpus: usize, balanced: bool) -> u64 {
    let min = domain_cpus.max(1) as u64 * MIN_INTERVAL_MS_PER_CPU;
    let max = domain_cpus.max(1) as u64 * MAX_INTERVAL_MS_PER_CPU;
    if balanced {
        (current_ms.max(min) * 2).min(max)
    } else {
        min
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pelt::PERIOD_US;

    const PERIOD_NS: u64 = PERIOD_US * 1024;

    #[test]
    fn one_runnable_period_contributes_y_times_1024() {
        // From zero, runnable for exactly one period (1024 × 1024 ns): the period just closed is
        // decayed once, 1024 · y = 1002 (y = 0xfa83b2da / 2³²); the full periods between sum to
        // LOAD_AVG_MAX − 47742·y − 1024 = 47742 − 46718 − 1024 = 0. load_avg = 1024 × 1002 /
        // (47742 − 1024 + 0) = 21; util_avg = 1002·1024 / 46718 = 21 when it also ran.
        let mut s = LoadSignal::default();
        s.advance(PERIOD_NS, true, true);
        assert_eq!(s.load_sum, 1002);
        assert_eq!(s.load_avg(1024), 21);
        assert_eq!(s.util_avg(), 21);
        // Waiting, not running: load but no utilisation.
        let mut w = LoadSignal::default();
        w.advance(PERIOD_NS, true, false);
        assert_eq!((w.load_avg(1024), w.util_avg()), (21, 0));
        // A nice-5 weight (335) scales the load, not the utilisation.
        assert_eq!(s.load_avg(335), 335 * 1002 / 46_718);
    }

    #[test]
    fn load_halves_in_32_ms_of_sleep_and_saturates_at_the_weight() {
        let mut s = LoadSignal::default();
        // Runnable for 2 s (≫ 32 ms): the load settles at the weight (within the divider's
        // rounding).
        s.advance(2000 * PERIOD_NS, true, true);
        let full = s.load_avg(1024);
        assert!((1020..=1024).contains(&full), "{full}");
        // 32 periods asleep: half (the kernel's half-life).
        s.advance(2032 * PERIOD_NS, false, false);
        let half = s.load_avg(1024);
        assert!(half.abs_diff(full / 2) <= 1, "{full} → {half}");
        // A further 32: a quarter.
        s.advance(2064 * PERIOD_NS, false, false);
        assert!(s.load_avg(1024).abs_diff(full / 4) <= 1);
    }

    #[test]
    fn a_sleeping_tasks_load_stays_on_its_cpu_and_moves_when_it_wakes_elsewhere() {
        let mut l = LoadTracker::new();
        let (a, cpu0, cpu1) = (TaskId(0), CpuId(0), CpuId(1));
        l.enqueue(a, cpu0, 1024, 0);
        l.set_running(a, true, 0);
        l.dequeue(a, 100 * PERIOD_NS);
        let (on0, util0) = l.cpu_load_util(cpu0, 100 * PERIOD_NS);
        assert!(on0 > 900 && util0 > 900, "{on0} {util0}");
        // Asleep 32 ms: still on CPU 0, half.
        let later = 132 * PERIOD_NS;
        assert!(l.cpu_load_util(cpu0, later).0.abs_diff(on0 / 2) <= 1);
        assert_eq!(l.cpu_load_util(cpu1, later).0, 0);
        // Woken on CPU 1: its load goes with it.
        l.enqueue(a, cpu1, 1024, later);
        assert_eq!(l.cpu_load_util(cpu0, later).0, 0);
        assert_eq!(l.cpu_load_util(cpu1, later).0, l.task_load(a, later));
    }

    #[test]
    fn a_task_is_cache_hot_for_the_migration_cost_after_it_ran() {
        let mut l = LoadTracker::new();
        let t = TaskId(3);
        l.enqueue(t, CpuId(0), 1024, 0);
        // Never ran: not hot.
        assert!(!l.task_hot(t, 1_000));
        l.set_running(t, true, 1_000);
        assert!(l.task_hot(t, 2_000));
        l.set_running(t, false, 10_000);
        assert!(l.task_hot(t, 10_000 + MIGRATION_COST_NS - 1));
        assert!(!l.task_hot(t, 10_000 + MIGRATION_COST_NS));
    }

    #[test]
    fn a_preempted_task_keeps_adding_load_and_a_second_stop_does_not_refresh_its_heat() {
        // Preempted (stops running, stays queued): its load keeps growing as a runnable
        // task's does (`se->on_rq` stays set), though its utilisation decays.
        let mut l = LoadTracker::new();
        let t = TaskId(0);
        l.enqueue(t, CpuId(0), 1024, 0);
        l.set_running(t, true, 0);
        l.set_running(t, false, 32 * PERIOD_NS);
        let at_stop = l.task_load(t, 32 * PERIOD_NS);
        let later = l.task_load(t, 64 * PERIOD_NS);
        assert!(later > at_stop, "waiting load {at_stop} → {later}");
        // The same waiting time asleep instead: the load decays.
        let mut s = LoadTracker::new();
        s.enqueue(t, CpuId(0), 1024, 0);
        s.set_running(t, true, 0);
        s.dequeue(t, 32 * PERIOD_NS);
        assert!(s.task_load(t, 64 * PERIOD_NS) < at_stop);
        // A stop reported for a task already stopped leaves its last run where it was: it is no
        // longer hot once the migration cost has passed since it really stopped.
        let stop_ns = 32 * PERIOD_NS;
        l.set_running(t, false, stop_ns + MIGRATION_COST_NS);
        assert!(!l.task_hot(t, stop_ns + MIGRATION_COST_NS));
    }

    #[test]
    fn group_type_at_the_imbalance_margin_follows_the_kernels_strict_comparisons() {
        // capacity × 100 = util × imbalance_pct exactly (117 × 100 = 100 × 117): neither
        // `group_is_overloaded` (capacity × 100 < util × pct) nor the second test of
        // `group_has_capacity` (capacity × 100 > util × pct) holds.
        let at_margin = |nr_running| RqLoad {
            nr_running,
            load_avg: 0,
            util_avg: 100,
            capacity: 117,
        };
        assert_eq!(at_margin(2).group_type(), GroupType::FullyBusy);
        assert_eq!(at_margin(1).group_type(), GroupType::FullyBusy);
        // One unit of utilisation less: spare capacity; one more with two tasks: overloaded.
        let below = RqLoad {
            util_avg: 99,
            ..at_margin(1)
        };
        assert_eq!(below.group_type(), GroupType::HasSpare);
        let above = RqLoad {
            util_avg: 101,
            ..at_margin(2)
        };
        assert_eq!(above.group_type(), GroupType::Overloaded);
        // No task on it (`sum_nr_running < group_weight`): spare, whatever the blocked
        // utilisation left behind.
        let empty = RqLoad {
            util_avg: 1024,
            ..at_margin(0)
        };
        assert_eq!(empty.group_type(), GroupType::HasSpare);
    }

    #[test]
    fn a_busy_cpu_pulls_only_from_an_overloaded_group_below_the_domain_average() {
        // The busiest is fully busy (one task, its CPU used): a busy CPU leaves it to an idle
        // one, even when the local group has spare capacity and far less load.
        let fully_busy = rq(1, 1020, 1020);
        assert_eq!(fully_busy.group_type(), GroupType::FullyBusy);
        let light = rq(1, 100, 100);
        assert_eq!(light.group_type(), GroupType::HasSpare);
        assert_eq!(busy_imbalance(&light, &fully_busy, 1120, 2048), None);
        // Below the busiest but above the domain's average (four CPUs, two of them idle): the
        // local group is not pulled towards the average from above.
        let local = rq(2, 1320, 1024);
        let busiest = rq(2, 2040, 1020);
        assert_eq!(busy_imbalance(&local, &busiest, 3360, 4096), None);
        // The same two CPUs alone in their domain: below the average, so it pulls.
        assert_eq!(busy_imbalance(&local, &busiest, 3360, 2048), Some(360));
        // Three CPUs, the third at 1800: average 4860 × 1024 / 3072 = 1620. Moving 600 would
        // bring the local CPU (1020) up to it but take the busiest (2040) 180 below it, so
        // the smaller side wins: 2040 − 1620 = 420 (`migrate_load`'s min of both).
        let local = rq(1, 1020, 1020);
        assert_eq!(busy_imbalance(&local, &busiest, 4860, 3072), Some(420));
        // The third at 3060 lifts the average to 2040, the busiest's own: nothing to move.
        assert_eq!(busy_imbalance(&local, &busiest, 6120, 3072), None);
    }

    fn rq(nr_running: usize, load_avg: u64, util_avg: u64) -> RqLoad {
        RqLoad {
            nr_running,
            load_avg,
            util_avg,
            capacity: 1024,
        }
    }

    #[test]
    fn three_hogs_on_two_cpus_move_one_after_a_failed_attempt() {
        // Two hogs on CPU 0 (load 2 × 1020, util 1020), one on CPU 1 (load 1020).
        let busiest = rq(2, 2040, 1020);
        let local = rq(1, 1020, 1020);
        assert_eq!(busiest.group_type(), GroupType::Overloaded);
        assert_eq!(local.group_type(), GroupType::FullyBusy);
        // Domain average 3060 × 1024 / 2048 = 1530; imbalance min(2040 − 1530, 1530 − 1020) = 510.
        let imbalance = busy_imbalance(&local, &busiest, 3060, 2048);
        assert_eq!(imbalance, Some(510));
        // A hog's 1020 does not fit in 510 at once; halved after one failure (510) it does, if
        // it is not cache hot; a hot one waits for a second failure.
        assert!(!can_detach(1020, false, 0, 510));
        assert!(can_detach(1020, false, 1, 510));
        assert!(!can_detach(1020, true, 1, 510));
        assert!(can_detach(1020, true, 2, 510));
        // The stopper pushes once failures exceed cache_nice_tries + 2 = 3.
        assert!(!need_active_balance(3));
        assert!(need_active_balance(4));
        // From CPU 0's side nothing moves: it is the busier.
        assert_eq!(busy_imbalance(&busiest, &local, 3060, 2048), None);
    }

    #[test]
    fn a_periodic_task_asleep_still_counts_and_a_cpu_with_spare_is_not_pulled_from() {
        // CPU 0: a hog running and a periodic task asleep whose blocked load (300) stays;
        // CPU 1: two hogs. The counts of runnable tasks (1 against 2) would call for a pull at
        // any phase; the averaged load says CPU 1 is busier.
        let local = rq(1, 1020 + 300, 1020);
        let busiest = rq(2, 2040, 1020);
        assert_eq!(busy_imbalance(&local, &busiest, 3360, 2048), Some(360));
        // The same with the periodic task runnable on CPU 0 (both overloaded): CPU 1's average
        // is more than 17 % above CPU 0's (2040 × 100 = 204000 > 117 × 1320 = 154440).
        let local = rq(2, 1320, 1024);
        assert_eq!(local.group_type(), GroupType::Overloaded);
        assert_eq!(busy_imbalance(&local, &busiest, 3360, 2048), Some(360));
        // Nearly equal overloaded groups stay (within imbalance_pct).
        let local = rq(2, 1900, 1024);
        assert_eq!(busy_imbalance(&local, &busiest, 3940, 2048), None);
        // A CPU with spare capacity is never pulled from by a busy one.
        let spare = rq(2, 600, 500);
        assert_eq!(spare.group_type(), GroupType::HasSpare);
        assert_eq!(busy_imbalance(&rq(1, 100, 1020), &spare, 700, 2048), None);
    }

    #[test]
    fn the_interval_doubles_while_balanced_and_resets_on_an_imbalance() {
        // Two CPUs: 2 ms, then 4 ms at most (× busy_factor at the caller).
        assert_eq!(next_interval_ms(0, 2, true), 4);
        assert_eq!(next_interval_ms(2, 2, true), 4);
        assert_eq!(next_interval_ms(4, 2, true), 4);
        assert_eq!(next_interval_ms(4, 2, false), 2);
        // Four CPUs: from 4 ms, doubled once to the longest, 8 ms.
        assert_eq!(next_interval_ms(0, 4, true), 8);
        assert_eq!(next_interval_ms(4, 4, true), 8);
        assert_eq!(next_interval_ms(8, 4, false), 4);
        // Eight: 8 → 16 ms.
        assert_eq!(next_interval_ms(8, 8, true), 16);
    }
}
