//! Placement: the CPU a waking task goes to, and the CPU an idle one pulls waiting work from.
//!
//! The substrate describes its CPUs as [`CpuState`]s; a [`Placement`] answers from them alone.
//! [`WakeIdle`] is the rule the simulator has placed with since its first version, a reduced form
//! of Linux's `select_task_rq_fair` → `select_idle_sibling` (prefer the previous CPU if idle, then
//! any idle CPU, then the least loaded) and of `newidle_balance` (an idle CPU pulls from the
//! busiest CPU of its cluster, `find_busiest_queue`).

use std::cmp::Reverse;
use std::fmt;

use crate::ids::{CpuId, TaskId};

/// One CPU as placement sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CpuState {
    /// Its cluster (placement and balancing stay within the active cluster).
    pub cluster: usize,
    /// In the cluster that is running (the others are switched off as a whole).
    pub active: bool,
    /// Powered and schedulable (not hotplugged off).
    pub online: bool,
    /// Nothing running, nothing queued, no kernel work pending.
    pub idle: bool,
    /// A task is running on it.
    pub has_current: bool,
    /// Tasks waiting in its queue.
    pub nr_queued: usize,
    /// The task being placed may run here (its CPU affinity). Views for balancing, which place
    /// no particular task, set it everywhere.
    pub allowed: bool,
}

impl CpuState {
    fn usable(&self) -> bool {
        self.active && self.online && self.allowed
    }

    fn load(&self) -> usize {
        self.nr_queued + usize::from(self.has_current)
    }
}

/// What a periodic balance decides.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TickBalance {
    /// Pull one waiting task from this CPU.
    Pull(CpuId),
    /// An imbalance, but no task worth moving this time (Linux counts `nr_balance_failed`).
    Failed,
    /// Nothing to do.
    Balanced,
}

/// A placement policy.
pub trait Placement: fmt::Debug {
    /// The name a spec uses.
    fn name(&self) -> &'static str;

    /// Where `task`, last run on `prev`, goes when it wakes. `cpus` is never empty.
    fn select_cpu(&self, task: TaskId, prev: CpuId, cpus: &[CpuState]) -> CpuId;

    /// The CPU `cpu`, about to go idle with an empty queue, pulls one waiting task from.
    fn newidle_source(&self, cpu: CpuId, cpus: &[CpuState]) -> Option<CpuId>;

    /// How often a busy CPU of a cluster of `cluster_cpus` balances at its tick.
    fn busy_balance_interval_ns(&self, cluster_cpus: usize) -> u64;

    /// At `cpu`'s periodic balance (it runs a task), after `failed` attempts in a row that found
    /// an imbalance but moved nothing: pull one waiting task from a CPU, give up (and count a
    /// failure), or find the load balanced.
    fn tick_balance(&self, cpu: CpuId, cpus: &[CpuState], failed: u32) -> TickBalance;

    /// At `cpu`'s tick: an idle CPU to wake so that it pulls from `cpu` (Linux's NOHZ idle
    /// balancing: idle CPUs sleep without a tick, so a busy one kicks them).
    fn idle_balance_target(&self, cpu: CpuId, cpus: &[CpuState]) -> Option<CpuId>;

    /// At `cpu`'s tick, with a task running on it: a faster idle CPU to move that task to at
    /// once (big.LITTLE up-migration, [`crate::hmp`]). Placements of one core type never move it.
    fn up_migration_target(&self, _cpu: CpuId, _cpus: &[CpuState]) -> Option<CpuId> {
        None
    }
}

/// A sched domain's balance interval per CPU in it, in ms (Linux `sd_init`: `balance_interval =
/// sd_weight`, in ms).
pub const BALANCE_INTERVAL_MS_PER_CPU: u64 = 1;
/// How much less often a busy CPU balances than an idle one (Linux `sd_init`: `busy_factor =
/// 16`).
pub const BUSY_FACTOR: u64 = 16;

/// The placement names [`by_name`] knows.
pub const NAMES: [&str; 1] = ["wake-idle"];

/// The placement called `name`.
///
/// # Errors
/// [`crate::UnknownPolicy`] for a name not in [`NAMES`].
pub fn by_name(name: &str) -> Result<Box<dyn Placement>, crate::UnknownPolicy> {
    match name {
        "wake-idle" => Ok(Box::new(WakeIdle)),
        other => Err(crate::UnknownPolicy::new("placement", other, &NAMES)),
    }
}

/// Previous CPU if idle, else the first idle CPU, else the least loaded (ties: the previous CPU,
/// then the lowest number); new-idle balancing from the busiest CPU of the same cluster; at a busy
/// CPU's periodic balance, one task pulled from a CPU of its cluster with at least two tasks more
/// (Linux `calculate_imbalance` with spare capacity: half the difference in running tasks); at
/// every tick of a CPU with tasks waiting, the first idle CPU of its cluster kicked to pull
/// (`nohz_balancer_kick`, `find_new_ilb`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct WakeIdle;

impl Placement for WakeIdle {
    fn name(&self) -> &'static str {
        "wake-idle"
    }

    fn select_cpu(&self, _task: TaskId, prev: CpuId, cpus: &[CpuState]) -> CpuId {
        let usable = || (0..cpus.len()).filter(|&c| cpus[c].usable());
        if usable().next().is_none() {
            // Only in the instant of a switch (or with an affinity outside the active cluster):
            // the first allowed CPU of the active cluster, which comes up.
            return CpuId(
                cpus.iter()
                    .position(|c| c.active && c.allowed)
                    .or_else(|| cpus.iter().position(|c| c.active))
                    .unwrap_or(0),
            );
        }
        if cpus.get(prev.0).is_some_and(|p| p.usable() && p.idle) {
            return prev;
        }
        if let Some(c) = usable().find(|&c| cpus[c].idle) {
            return CpuId(c);
        }
        usable()
            .min_by_key(|&c| (cpus[c].load(), c != prev.0, c))
            .map_or(prev, CpuId)
    }

    fn newidle_source(&self, cpu: CpuId, cpus: &[CpuState]) -> Option<CpuId> {
        let cluster = cpus[cpu.0].cluster;
        (0..cpus.len())
            .filter(|&o| o != cpu.0 && cpus[o].cluster == cluster && cpus[o].online)
            .filter(|&o| cpus[o].nr_queued > 0 && cpus[o].has_current)
            .max_by_key(|&o| (cpus[o].nr_queued, Reverse(o)))
            .map(CpuId)
    }

    fn busy_balance_interval_ns(&self, cluster_cpus: usize) -> u64 {
        cluster_cpus.max(1) as u64 * BALANCE_INTERVAL_MS_PER_CPU * BUSY_FACTOR * 1_000_000
    }

    fn tick_balance(&self, cpu: CpuId, cpus: &[CpuState], failed: u32) -> TickBalance {
        let here = cpus[cpu.0];
        let Some(busiest) = (0..cpus.len())
            .filter(|&o| o != cpu.0 && cpus[o].cluster == here.cluster && cpus[o].online)
            .filter(|&o| cpus[o].nr_queued > 0 && cpus[o].load() > here.load())
            .max_by_key(|&o| (cpus[o].load(), Reverse(o)))
        else {
            return TickBalance::Balanced;
        };
        // `calculate_imbalance` asks for half the load difference; `detach_tasks` moves a task
        // only if its load, halved once per failed attempt (`shr_bound(load,
        // nr_balance_failed)`), fits in it. A difference of two tasks fits at once; a
        // difference of one (half a task) only after one failure — so three hogs on two CPUs
        // take turns on the shared one.
        if cpus[busiest].load() >= here.load() + 2 || failed >= 1 {
            TickBalance::Pull(CpuId(busiest))
        } else {
            TickBalance::Failed
        }
    }

    fn idle_balance_target(&self, cpu: CpuId, cpus: &[CpuState]) -> Option<CpuId> {
        let here = cpus[cpu.0];
        if here.nr_queued == 0 {
            return None;
        }
        (0..cpus.len())
            .find(|&o| {
                o != cpu.0 && cpus[o].cluster == here.cluster && cpus[o].usable() && cpus[o].idle
            })
            .map(CpuId)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(idle: bool, queued: usize) -> CpuState {
        CpuState {
            cluster: 0,
            active: true,
            online: true,
            idle,
            has_current: !idle,
            nr_queued: queued,
            allowed: true,
        }
    }

    #[test]
    fn a_waking_task_prefers_its_idle_previous_cpu_then_any_idle_one() {
        let p = WakeIdle;
        let t = TaskId(0);
        let cpus = [cpu(true, 0), cpu(false, 1), cpu(true, 0)];
        assert_eq!(p.select_cpu(t, CpuId(2), &cpus), CpuId(2));
        assert_eq!(p.select_cpu(t, CpuId(1), &cpus), CpuId(0));
    }

    #[test]
    fn without_an_idle_cpu_the_least_loaded_wins_and_ties_go_to_the_previous() {
        let p = WakeIdle;
        let t = TaskId(0);
        let cpus = [cpu(false, 2), cpu(false, 0), cpu(false, 0)];
        assert_eq!(p.select_cpu(t, CpuId(0), &cpus), CpuId(1));
        assert_eq!(p.select_cpu(t, CpuId(2), &cpus), CpuId(2));
    }

    #[test]
    fn offline_and_inactive_cpus_are_skipped() {
        let p = WakeIdle;
        let t = TaskId(0);
        let mut cpus = [cpu(true, 0), cpu(true, 0)];
        cpus[0].online = false;
        assert_eq!(p.select_cpu(t, CpuId(0), &cpus), CpuId(1));
        cpus[1].active = false;
        // Nothing usable: the active cluster's first CPU (here the offline one).
        assert_eq!(p.select_cpu(t, CpuId(1), &cpus), CpuId(0));
    }

    #[test]
    fn an_idle_cpu_pulls_from_the_busiest_of_its_cluster() {
        let p = WakeIdle;
        let mut cpus = [cpu(true, 0), cpu(false, 1), cpu(false, 3), cpu(false, 3)];
        assert_eq!(p.newidle_source(CpuId(0), &cpus), Some(CpuId(2)));
        cpus[2].cluster = 1;
        assert_eq!(p.newidle_source(CpuId(0), &cpus), Some(CpuId(3)));
        cpus[3].has_current = false;
        assert_eq!(p.newidle_source(CpuId(0), &cpus), Some(CpuId(1)));
        assert_eq!(
            p.newidle_source(CpuId(1), &[cpu(true, 0), cpu(true, 0)]),
            None
        );
    }

    #[test]
    fn a_busy_cpu_pulls_at_once_for_two_tasks_of_difference_and_after_a_failure_for_one() {
        let p = WakeIdle;
        // Loads 1, 2, 3 (running + queued).
        let cpus = [cpu(false, 0), cpu(false, 1), cpu(false, 2)];
        assert_eq!(
            p.tick_balance(CpuId(0), &cpus, 0),
            TickBalance::Pull(CpuId(2))
        );
        assert_eq!(p.tick_balance(CpuId(2), &cpus, 0), TickBalance::Balanced);
        // A difference of one task moves one only after a failed attempt.
        assert_eq!(p.tick_balance(CpuId(1), &cpus, 0), TickBalance::Failed);
        assert_eq!(
            p.tick_balance(CpuId(1), &cpus, 1),
            TickBalance::Pull(CpuId(2))
        );
        // 4 CPUs: 4 ms × 16 when busy.
        assert_eq!(p.busy_balance_interval_ns(4), 64_000_000);
    }

    #[test]
    fn a_cpu_with_waiting_tasks_kicks_the_first_idle_cpu_of_its_cluster() {
        let p = WakeIdle;
        let mut cpus = [cpu(false, 1), cpu(false, 0), cpu(true, 0), cpu(true, 0)];
        assert_eq!(p.idle_balance_target(CpuId(0), &cpus), Some(CpuId(2)));
        assert_eq!(p.idle_balance_target(CpuId(1), &cpus), None);
        cpus[2].online = false;
        cpus[3].cluster = 1;
        assert_eq!(p.idle_balance_target(CpuId(0), &cpus), None);
    }
}
