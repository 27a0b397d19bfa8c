//! Scheduling classes: which runnable task a CPU runs next, and when the running one must yield.
//!
//! A class owns its run queues and the per-task state its rule needs (CFS: virtual runtime;
//! EEVDF: virtual runtime, lag, virtual deadline and slice). The substrate owns the rest: when a
//! CPU executes, interrupts, timers, and where a waking task goes ([`crate::placement`]). It
//! drives a class through [`SchedClass`], the same operations Linux's `struct sched_class` gives
//! its core (`kernel/sched/sched.h`):
//!
//! | here               | Linux (`kernel/sched/fair.c`)                  |
//! |--------------------|------------------------------------------------|
//! | `attach`           | `task_fork_fair` / `__sched_fork`              |
//! | `set_params`       | `reweight_task_fair`, `__setparam_fair`        |
//! | `enqueue`          | `enqueue_task_fair` (`ENQUEUE_INITIAL`, `ENQUEUE_WAKEUP`) |
//! | `block`            | `dequeue_task_fair` (`DEQUEUE_SLEEP`)          |
//! | `migrate`          | `migrate_task_rq_fair` + dequeue/enqueue       |
//! | `pick_next`        | `pick_next_task_fair` / `set_next_entity`      |
//! | `put_prev`         | `put_prev_task_fair`                           |
//! | `update_curr`      | `update_curr`                                  |
//! | `tick`             | `task_tick_fair`                               |
//! | `wakeup_preempt`   | `check_preempt_wakeup_fair`                    |
//!
//! The life of a task: `attach`, `enqueue(New)`, then any number of turns (`pick_next`,
//! `update_curr`…, `tick` or `wakeup_preempt` asking for the CPU back, `put_prev`) and sleeps
//! (`block`, later `enqueue(Wakeup)`), with `migrate` moving it between queues while it waits.
//!
//! Implementations: [`cfs::Cfs`] (the design brief's CFS, the simulator's scheduler since its
//! first version), [`vtcfs::VtCfs`] (seed 003's VT-CFS: CFS preempted at a preemption tick) and
//! [`eevdf::Eevdf`] (EEVDF, Linux's fair class since 6.6, with 6.18's behaviour and defaults).
//! [`by_name`] builds one.

pub mod cfs;
pub mod eevdf;
pub mod vtcfs;

use std::fmt;

use lull_model::weight::nice_to_weight;

use crate::ids::{CpuId, TaskId};

/// What a fair class needs to know about a task's priority.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FairParams {
    /// Load weight: `nice_to_weight(nice)`, or a boosted weight.
    pub weight: u32,
    /// The request length `sched_setattr` sets for a `SCHED_OTHER` task through `sched_runtime`
    /// (Linux 6.12 and later, `__setparam_fair`); `None` for the base slice. Classes without a
    /// per-task slice (CFS) ignore it.
    pub custom_slice_ns: Option<u64>,
}

impl FairParams {
    /// A task at `nice` with the base slice.
    #[must_use]
    pub fn nice(nice: i8) -> FairParams {
        FairParams {
            weight: nice_to_weight(nice),
            custom_slice_ns: None,
        }
    }
}

/// Why a task joins a run queue.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Enqueue {
    /// For the first time (Linux `ENQUEUE_INITIAL`).
    New,
    /// After a sleep (Linux `ENQUEUE_WAKEUP`).
    Wakeup,
}

/// Why a waiting task moves to another CPU's queue.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Migration {
    /// Load balancing pulled it.
    Balance,
    /// Its CPU (or the CPU's whole cluster) went offline and its queue moved elsewhere.
    Evacuate,
}

/// A scheduling class driven by a substrate. See the module documentation for the protocol.
///
/// Preconditions are the substrate's to keep; a class may panic when one is broken (a task
/// enqueued twice, a pick on a CPU that still has a current task), because that is a substrate
/// bug, never bad input.
pub trait SchedClass: fmt::Debug {
    /// The name a spec or a command line uses (`cfs`, `eevdf`).
    fn name(&self) -> &'static str;

    /// Makes `task` known, not yet queued.
    fn attach(&mut self, task: TaskId, params: FairParams);

    /// Changes a task's weight or slice, queued, running or asleep.
    fn set_params(&mut self, task: TaskId, params: FairParams);

    /// Puts a runnable task on `cpu`'s queue. A task whose sleep the class has not finished
    /// ([`SchedClass::sleeping_on`]) must be enqueued on that CPU.
    fn enqueue(&mut self, cpu: CpuId, task: TaskId, how: Enqueue);

    /// The task stops being runnable (it sleeps or is frozen); it is `cpu`'s current task or
    /// waits in its queue.
    fn block(&mut self, cpu: CpuId, task: TaskId);

    /// Moves a waiting (queued, not current) task from `from`'s queue to `to`'s.
    fn migrate(&mut self, task: TaskId, from: CpuId, to: CpuId, how: Migration);

    /// Takes the next task off `cpu`'s queue and makes it current. `cpu` has no current task.
    fn pick_next(&mut self, cpu: CpuId, now_ns: u64) -> Option<TaskId>;

    /// `cpu`'s current task goes back to the queue, still runnable (it was preempted).
    fn put_prev(&mut self, cpu: CpuId);

    /// `cpu`'s current task (if any) ran `ran_ns` more.
    fn update_curr(&mut self, cpu: CpuId, ran_ns: u64);

    /// The scheduler tick on `cpu`: true when the current task should yield the CPU.
    fn tick(&mut self, cpu: CpuId, now_ns: u64) -> bool;

    /// Whether `woken`, just enqueued on `cpu`, should preempt `cpu`'s current task now.
    fn wakeup_preempt(&mut self, cpu: CpuId, woken: TaskId) -> bool;

    /// `cpu`'s current task.
    fn current(&self, cpu: CpuId) -> Option<TaskId>;

    /// Runnable tasks waiting in `cpu`'s queue (not the current one, not sleepers the class keeps).
    fn nr_queued(&self, cpu: CpuId) -> usize;

    /// The waiting task a balancer pulling from `cpu` would take among those `movable` accepts
    /// (the destination is in their affinity: Linux's `can_migrate_task`).
    fn steal_candidate(&self, cpu: CpuId, movable: &dyn Fn(TaskId) -> bool) -> Option<TaskId>;

    /// The CPU whose queue still holds `task` although it sleeps (EEVDF's delayed dequeue), so
    /// that its wakeup goes back there; `None` for a task that fully left its queue.
    fn sleeping_on(&self, task: TaskId) -> Option<CpuId>;
}

/// The class names [`by_name`] knows.
pub const NAMES: [&str; 3] = ["cfs", "eevdf", "vtcfs"];

/// Tunables a class takes from its platform.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ClassConfig {
    /// CPUs the class schedules.
    pub cpus: usize,
    /// The scheduler tick period (EEVDF bounds lag by it: `TICK_NSEC` in `entity_lag`).
    pub tick_ns: u64,
    /// EEVDF's base slice (`sysctl_sched_base_slice`, the request length of a task without a
    /// custom slice); `None` for the kernel's default for `cpus`,
    /// [`eevdf::default_base_slice_ns`] (0.7 ms × (1 + ilog2(min(cpus, 8)))). CFS ignores it.
    pub base_slice_ns: Option<u64>,
    /// VT-CFS's preemption tick; `None` for [`vtcfs::DEFAULT_PREEMPT_TICK_NS`]. Rounded up to a
    /// whole number of ticks ([`vtcfs::VtCfsConfig::new`]). Other classes ignore it.
    pub preempt_tick_ns: Option<u64>,
}

/// The class called `name`.
///
/// # Errors
/// [`crate::UnknownPolicy`] for a name not in [`NAMES`].
pub fn by_name(name: &str, cfg: ClassConfig) -> Result<Box<dyn SchedClass>, crate::UnknownPolicy> {
    match name {
        "cfs" => Ok(Box::new(cfs::Cfs::new(cfg.cpus))),
        "eevdf" => Ok(Box::new(eevdf::Eevdf::new(
            eevdf::EevdfConfig::for_machine(cfg.cpus, cfg.tick_ns, cfg.base_slice_ns),
        ))),
        "vtcfs" => Ok(Box::new(vtcfs::VtCfs::new(
            cfg.cpus,
            vtcfs::VtCfsConfig::new(
                cfg.tick_ns,
                cfg.preempt_tick_ns
                    .unwrap_or(vtcfs::DEFAULT_PREEMPT_TICK_NS),
            ),
        ))),
        other => Err(crate::UnknownPolicy::new("scheduler", other, &NAMES)),
    }
}

/// A single CPU driven the way a substrate drives it, for the classes' worked examples: every
/// task always runnable, a tick every `tick_ns`, the current task charged for each tick.
#[cfg(test)]
pub(crate) mod testkit {
    use super::*;

    /// CPU time of each task after `duration_ns` on one CPU. Tasks are enqueued as new at 0.
    pub fn share_one_cpu(
        class: &mut dyn SchedClass,
        params: &[FairParams],
        tick_ns: u64,
        duration_ns: u64,
    ) -> Vec<u64> {
        let cpu = CpuId(0);
        for (i, &p) in params.iter().enumerate() {
            class.attach(TaskId(i), p);
            class.enqueue(cpu, TaskId(i), Enqueue::New);
        }
        let mut ran = vec![0u64; params.len()];
        let mut now = 0;
        let mut curr = class.pick_next(cpu, now).expect("tasks are queued");
        while now < duration_ns {
            class.update_curr(cpu, tick_ns);
            ran[curr.0] += tick_ns;
            now += tick_ns;
            if class.tick(cpu, now) {
                class.put_prev(cpu);
                curr = class.pick_next(cpu, now).expect("tasks are queued");
            }
        }
        ran
    }
}

#[cfg(test)]
mod tests {
    use super::testkit::share_one_cpu;
    use super::*;

    #[test]
    fn nice_0_and_nice_5_share_a_cpu_1024_to_335_under_every_class() {
        for name in NAMES {
            for tick_ns in [1_000_000, 4_000_000] {
                let cfg = ClassConfig {
                    cpus: 1,
                    tick_ns,
                    base_slice_ns: None,
                    preempt_tick_ns: None,
                };
                let mut class = by_name(name, cfg).expect("a known class");
                let ran = share_one_cpu(
                    class.as_mut(),
                    &[FairParams::nice(0), FairParams::nice(5)],
                    tick_ns,
                    20_000_000_000,
                );
                let ratio = ran[0] as f64 / ran[1] as f64;
                // Turns end at ticks, so the split is exact only on average: within 2 %.
                assert!(
                    (ratio / (1024.0 / 335.0) - 1.0).abs() < 0.02,
                    "{name}, tick {tick_ns}: {ran:?} = {ratio}"
                );
            }
        }
    }

    #[test]
    fn unknown_classes_are_refused_with_the_known_names() {
        let cfg = ClassConfig {
            cpus: 1,
            tick_ns: 4_000_000,
            base_slice_ns: None,
            preempt_tick_ns: None,
        };
        for name in NAMES {
            assert_eq!(by_name(name, cfg).unwrap().name(), name);
        }
        let e = by_name("bfs", cfg).err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("unknown scheduler `bfs` (known: cfs, eevdf, vtcfs)")
        );
    }
}
