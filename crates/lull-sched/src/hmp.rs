//! Placement on a big.LITTLE SoC with both clusters online (global task scheduling), as the
//! Linux 3.10 kernels of seed 004's time ran it (Linaro's big.LITTLE MP patches, `CONFIG_SCHED_HMP`
//! in Hardkernel's Odroid-XU3 kernel).
//!
//! What [`Hmp`] keeps of that scheduler:
//!
//! - **Load balancing stays inside a cluster.** HMP builds one scheduling domain per cluster and
//!   no balancing domain above them; tasks cross clusters only by HMP migration. So the periodic,
//!   new-idle and idle-kick balancing are [`WakeIdle`]'s, which already stay in the cluster.
//! - **A busy task stays where it is.** Nothing moves a running task between CPUs of one cluster
//!   while each has one (balancing needs a queue), and a waking task with no idle big CPU goes
//!   back to its previous CPU if idle (`select_idle_sibling`); seed 004 §3.2 saw exactly this:
//!   "as long as a task is utilizing the resources well … the Linux scheduler refuses to migrate
//!   the task".
//! - **Heavy tasks go up.** A new or waking task takes an idle big CPU first (HMP starts new tasks
//!   at full load and up-migrates heavy ones at wakeup; its previous CPU if that is an idle big
//!   one), and at each tick of a LITTLE CPU running a task, an idle big CPU takes that task at
//!   once (`hmp_force_up_migration` moves a running task through the CPU stopper;
//!   `hmp_idle_pull` does the same from the big side).
//!
//! What is not kept: HMP decides "heavy" by the task's tracked load against `hmp_up_threshold`
//! (700 of 1024 in Linaro's `kernel/sched/fair.c`) and moves light tasks down below
//! `hmp_down_threshold` (512). The placement has no per-task load in its view, so every task that
//! runs at a LITTLE CPU's tick counts as heavy and nothing is moved down. That is exact for the
//! CPU-bound threads the toggling experiments run (their load is near 1024 after a few tens of
//! ms) and wrong for light tasks, which these experiments do not have.

use crate::ids::{CpuId, TaskId};
use crate::placement::{CpuState, Placement, TickBalance, WakeIdle};
use crate::seam::CpuMask;

/// Global task scheduling on fast (big) and slow (LITTLE) CPUs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Hmp {
    /// The big CPUs.
    pub fast: CpuMask,
}

impl Hmp {
    #[must_use]
    pub fn new(fast: CpuMask) -> Hmp {
        Hmp { fast }
    }

    fn is_fast(&self, c: usize) -> bool {
        self.fast.contains(CpuId(c))
    }
}

fn usable(c: &CpuState) -> bool {
    c.active && c.online && c.allowed
}

impl Placement for Hmp {
    fn name(&self) -> &'static str {
        "hmp"
    }

    fn select_cpu(&self, task: TaskId, prev: CpuId, cpus: &[CpuState]) -> CpuId {
        let idle = |c: usize| cpus.get(c).is_some_and(|s| usable(s) && s.idle);
        if self.is_fast(prev.0) && idle(prev.0) {
            return prev;
        }
        if let Some(c) = (0..cpus.len()).find(|&c| self.is_fast(c) && idle(c)) {
            return CpuId(c);
        }
        // No idle big CPU: the previous CPU if idle, else any idle one, else the least loaded.
        WakeIdle.select_cpu(task, prev, cpus)
    }

    fn newidle_source(&self, cpu: CpuId, cpus: &[CpuState]) -> Option<CpuId> {
        WakeIdle.newidle_source(cpu, cpus)
    }

    fn tick_balance(&self, cpu: CpuId, cpus: &[CpuState]) -> TickBalance {
        WakeIdle.tick_balance(cpu, cpus)
    }

    fn idle_balance_target(&self, cpu: CpuId, cpus: &[CpuState]) -> Option<CpuId> {
        WakeIdle.idle_balance_target(cpu, cpus)
    }

    fn up_migration_target(&self, cpu: CpuId, cpus: &[CpuState]) -> Option<CpuId> {
        if self.is_fast(cpu.0) || !cpus.get(cpu.0).is_some_and(|c| c.has_current) {
            return None;
        }
        (0..cpus.len())
            .find(|&c| self.is_fast(c) && cpus[c].active && cpus[c].online && cpus[c].idle)
            .map(CpuId)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu(cluster: usize, idle: bool) -> CpuState {
        CpuState {
            cluster,
            active: true,
            online: true,
            idle,
            has_current: !idle,
            nr_queued: 0,
            allowed: true,
            load_avg: 0,
            util_avg: 0,
            capacity: 1024,
        }
    }

    /// CPUs 0-1 LITTLE, 2-3 big.
    fn hmp() -> Hmp {
        Hmp::new(CpuMask::of(&[CpuId(2), CpuId(3)]))
    }

    #[test]
    fn a_waking_task_takes_an_idle_big_cpu_else_its_idle_previous_one() {
        let p = hmp();
        let cpus = [cpu(0, true), cpu(0, false), cpu(1, false), cpu(1, true)];
        // Up from an idle LITTLE CPU to the idle big one; an idle big previous CPU is kept.
        assert_eq!(p.select_cpu(TaskId(0), CpuId(0), &cpus), CpuId(3));
        assert_eq!(p.select_cpu(TaskId(0), CpuId(1), &cpus), CpuId(3));
        let two_idle_big = [cpu(0, true), cpu(0, false), cpu(1, true), cpu(1, true)];
        assert_eq!(p.select_cpu(TaskId(0), CpuId(3), &two_idle_big), CpuId(3));
        let busy_big = [cpu(0, true), cpu(0, false), cpu(1, false), cpu(1, false)];
        assert_eq!(p.select_cpu(TaskId(0), CpuId(1), &busy_big), CpuId(0));
    }

    #[test]
    fn a_running_task_on_little_goes_up_to_an_idle_big_cpu_and_never_down() {
        let p = hmp();
        let mut cpus = [cpu(0, false), cpu(0, false), cpu(1, false), cpu(1, true)];
        assert_eq!(p.up_migration_target(CpuId(0), &cpus), Some(CpuId(3)));
        // A big CPU's task stays.
        assert_eq!(p.up_migration_target(CpuId(2), &cpus), None);
        cpus[3].idle = false;
        cpus[3].has_current = true;
        assert_eq!(p.up_migration_target(CpuId(0), &cpus), None);
        // An idle LITTLE CPU has nothing to move.
        cpus[3] = cpu(1, true);
        cpus[1] = cpu(0, true);
        assert_eq!(p.up_migration_target(CpuId(1), &cpus), None);
    }

    #[test]
    fn a_cpu_it_may_not_use_is_never_chosen_however_idle() {
        let p = hmp();
        assert_eq!(p.name(), "hmp");
        // CPU 3, the only idle big CPU, unusable in each of three ways: the task stays on its
        // idle LITTLE CPU 0.
        for unusable in [
            |c: &mut CpuState| c.allowed = false,
            |c: &mut CpuState| c.online = false,
            |c: &mut CpuState| c.active = false,
        ] {
            let mut cpus = [cpu(0, true), cpu(0, false), cpu(1, false), cpu(1, true)];
            unusable(&mut cpus[3]);
            assert_eq!(p.select_cpu(TaskId(0), CpuId(0), &cpus), CpuId(0));
        }
    }

    #[test]
    fn an_idle_kick_stays_inside_the_cluster_as_the_wake_idle_placement_does() {
        let p = hmp();
        // CPU 0 has a task waiting; CPU 1 (its cluster) idles, as does big CPU 3.
        let mut cpus = [cpu(0, false), cpu(0, true), cpu(1, false), cpu(1, true)];
        cpus[0].nr_queued = 1;
        assert_eq!(p.idle_balance_target(CpuId(0), &cpus), Some(CpuId(1)));
        assert_eq!(
            p.idle_balance_target(CpuId(0), &cpus),
            WakeIdle.idle_balance_target(CpuId(0), &cpus)
        );
        cpus[1] = cpu(0, false);
        assert_eq!(p.idle_balance_target(CpuId(0), &cpus), None);
    }

    #[test]
    fn balancing_stays_inside_a_cluster() {
        let p = hmp();
        let mut cpus = [cpu(0, true), cpu(0, false), cpu(1, false), cpu(1, false)];
        cpus[2].nr_queued = 3;
        // The LITTLE CPU does not pull from the big cluster's queue.
        assert_eq!(p.newidle_source(CpuId(0), &cpus), None);
        cpus[1].nr_queued = 2;
        assert_eq!(p.newidle_source(CpuId(0), &cpus), Some(CpuId(1)));
    }
}
