//! Placement: the CPU a waking task goes to, and the CPU an idle one pulls waiting work from.
//!
//! The substrate describes its CPUs as [`CpuState`]s; a [`Placement`] answers from them alone.
//! [`WakeIdle`] is the rule the simulator has placed with since its first version, a reduced form
//! of Linux's `select_task_rq_fair` → `select_idle_sibling` (prefer the previous CPU if idle, then
//! any idle CPU, then the least loaded) and of `newidle_balance` (an idle CPU pulls from the
//! busiest CPU of its cluster, `find_busiest_queue`).

use std::cmp::Reverse;
use std::fmt;

use crate::balance::{busy_imbalance, RqLoad};
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
    /// Its run queue's PELT load and utilisation ([`crate::balance::LoadTracker`]), filled in
    /// for the periodic balance only (0 elsewhere).
    pub load_avg: u64,
    pub util_avg: u64,
    /// Its capacity (1024 for the biggest CPU).
    pub capacity: u64,
}

impl CpuState {
    fn usable(&self) -> bool {
        self.active && self.online && self.allowed
    }

    fn load(&self) -> usize {
        self.nr_queued + usize::from(self.has_current)
    }

    fn rq_load(&self) -> RqLoad {
        RqLoad {
            nr_running: self.load(),
            load_avg: self.load_avg,
            util_avg: self.util_avg,
            capacity: self.capacity,
        }
    }
}

/// What a periodic balance decides.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TickBalance {
    /// Pull waiting tasks from `from` whose load fits in `imbalance` (by
    /// [`crate::balance::can_detach`]); moving none counts a failure (`nr_balance_failed`).
    Pull { from: CpuId, imbalance: u64 },
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

    /// At `cpu`'s periodic balance (it runs a task), from the CPUs' averaged loads: the CPU to
    /// pull from and how much load, or balanced.
    fn tick_balance(&self, cpu: CpuId, cpus: &[CpuState]) -> TickBalance;

    /// At `cpu`'s tick: an idle CPU to wake so that it pulls from `cpu` (Linux's NOHZ idle
    /// balancing: idle CPUs sleep without a tick, so a busy one kicks them).
    fn idle_balance_target(&self, cpu: CpuId, cpus: &[CpuState]) -> Option<CpuId>;

    /// At `cpu`'s tick, with a task running on it: a faster idle CPU to move that task to at
    /// once (big.LITTLE up-migration, [`crate::hmp`]). Placements of one core type never move it.
    fn up_migration_target(&self, _cpu: CpuId, _cpus: &[CpuState]) -> Option<CpuId> {
        None
    }
}

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
/// CPU's periodic balance, Linux's rule on the CPUs' PELT load ([`crate::balance::busy_imbalance`]
/// against the overloaded CPU of its cluster with the highest load per capacity); at every tick of a CPU with tasks waiting, the first idle CPU of its cluster kicked to pull
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

    fn tick_balance(&self, cpu: CpuId, cpus: &[CpuState]) -> TickBalance {
        let here = cpus[cpu.0];
        let domain =
            || (0..cpus.len()).filter(move |&o| cpus[o].cluster == here.cluster && cpus[o].online);
        // `update_sd_pick_busiest`: the busiest group type, then the highest load per capacity.
        let Some(busiest) = domain().filter(|&o| o != cpu.0).max_by_key(|&o| {
            let r = cpus[o].rq_load();
            (r.group_type(), r.avg_load(), Reverse(o))
        }) else {
            return TickBalance::Balanced;
        };
        let domain_load = domain().map(|o| cpus[o].load_avg).sum();
        let domain_capacity = domain().map(|o| cpus[o].capacity).sum();
        match busy_imbalance(
            &here.rq_load(),
            &cpus[busiest].rq_load(),
            domain_load,
            domain_capacity,
        ) {
            Some(imbalance) => TickBalance::Pull {
                from: CpuId(busiest),
                imbalance,
            },
            None => TickBalance::Balanced,
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
            load_avg: 0,
            util_avg: 0,
            capacity: 1024,
        }
    }

    /// Where [`WakeIdle`] places a task waking that last ran on CPU `prev`.
    fn wake_idle_from(prev: usize, cpus: &[CpuState]) -> CpuId {
        WakeIdle.select_cpu(TaskId(0), CpuId(prev), cpus)
    }

    #[test]
    fn with_no_usable_cpu_a_waking_task_goes_to_the_first_active_allowed_one() {
        // CPU 0 active, not allowed; CPU 1 active and allowed, going offline; CPU 2 allowed,
        // in the inactive cluster. None is usable; CPU 1 is where the task may run next.
        let mut cpus = [cpu(true, 0), cpu(true, 0), cpu(true, 0)];
        cpus[0].allowed = false;
        cpus[1].online = false;
        cpus[2].active = false;
        assert_eq!(wake_idle_from(2, &cpus), CpuId(1));
        // No active allowed CPU: the first active one.
        cpus[1].allowed = false;
        assert_eq!(wake_idle_from(2, &cpus), CpuId(0));
    }

    #[test]
    fn a_tick_balance_looks_only_at_online_cpus_of_its_cluster() {
        let with = |cluster: usize, online: bool, queued: usize, load_avg: u64| CpuState {
            cluster,
            online,
            load_avg,
            util_avg: 1020,
            ..cpu(false, queued)
        };
        // CPU 0 runs one hog; CPU 1 (other cluster) and CPU 2 (offline) hold three each.
        let cpus = [
            with(0, true, 0, 1020),
            with(1, true, 2, 3060),
            with(0, false, 2, 3060),
        ];
        assert_eq!(
            WakeIdle.tick_balance(CpuId(0), &cpus),
            TickBalance::Balanced
        );
        // CPU 2 back online: it is in the domain, and CPU 0 pulls from it.
        let mut cpus = cpus;
        cpus[2].online = true;
        assert!(matches!(
            WakeIdle.tick_balance(CpuId(0), &cpus),
            TickBalance::Pull { from: CpuId(2), .. }
        ));
    }

    #[test]
    fn each_placement_answers_to_the_name_it_was_made_by() {
        for name in NAMES {
            assert_eq!(by_name(name).unwrap().name(), name);
        }
        assert!(
            by_name("hmp").is_err(),
            "HMP is built from its fast CPUs, not by name"
        );
    }

    #[test]
    fn a_waking_task_prefers_its_idle_previous_cpu_then_any_idle_one() {
        let cpus = [cpu(true, 0), cpu(false, 1), cpu(true, 0)];
        assert_eq!(wake_idle_from(2, &cpus), CpuId(2));
        assert_eq!(wake_idle_from(1, &cpus), CpuId(0));
    }

    #[test]
    fn without_an_idle_cpu_the_least_loaded_wins_and_ties_go_to_the_previous() {
        let cpus = [cpu(false, 2), cpu(false, 0), cpu(false, 0)];
        assert_eq!(wake_idle_from(0, &cpus), CpuId(1));
        assert_eq!(wake_idle_from(2, &cpus), CpuId(2));
    }

    #[test]
    fn offline_and_inactive_cpus_are_skipped() {
        let mut cpus = [cpu(true, 0), cpu(true, 0)];
        cpus[0].online = false;
        assert_eq!(wake_idle_from(0, &cpus), CpuId(1));
        cpus[1].active = false;
        // Nothing usable: the active cluster's first CPU (here the offline one).
        assert_eq!(wake_idle_from(1, &cpus), CpuId(0));
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
    fn a_busy_cpu_pulls_from_the_overloaded_cpu_with_the_most_load() {
        let p = WakeIdle;
        let with = |queued: usize, load_avg: u64| CpuState {
            load_avg,
            util_avg: 1020,
            ..cpu(false, queued)
        };
        // One hog on CPU 0; two on CPU 1; three on CPU 2: CPU 0 pulls from CPU 2, asking to
        // move min(3060 − 2040, 2040 − 1020) = 1020 (the average of 6120 over 3 CPUs is 2040).
        let cpus = [with(0, 1020), with(1, 2040), with(2, 3060)];
        assert_eq!(
            p.tick_balance(CpuId(0), &cpus),
            TickBalance::Pull {
                from: CpuId(2),
                imbalance: 1020
            }
        );
        // CPU 2 is the busiest: it pulls from nobody; CPU 1 is at the average: nothing.
        assert_eq!(p.tick_balance(CpuId(2), &cpus), TickBalance::Balanced);
        assert_eq!(p.tick_balance(CpuId(1), &cpus), TickBalance::Balanced);
        // The same counts with CPU 2's load decayed (its tasks mostly asleep until now): counts
        // alone would pull from CPU 2; the averaged load names CPU 1 (average 1520).
        let cpus = [with(0, 1020), with(1, 2040), with(2, 1500)];
        assert_eq!(
            p.tick_balance(CpuId(0), &cpus),
            TickBalance::Pull {
                from: CpuId(1),
                imbalance: 500
            }
        );
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
