//! VT-CFS, seed 003 §V: CFS whose running task may be preempted at any *preemption tick*, not
//! only when its slice ends, so a woken task waits at most about one preemption tick.
//!
//! - At each scheduler tick, once the running task has run one preemption tick (an integer
//!   multiple of the scheduler tick) in its turn, it keeps the CPU only while its virtual runtime
//!   is still the smallest on the queue ([`tick_preempt`], the seed's figure 5).
//! - A woken task is placed second from the left (eq. 7): VR = min VR + T × W(0) / W(−20), T the
//!   scheduler tick ([`place_on_wakeup`]); no two tasks' virtual runtimes can be closer than a
//!   nice −20 task's advance over one tick, so the woken task follows the leftmost one.
//!
//! Everything else is [`Cfs`]: weights, virtual runtime, the wakeup preemption check, balancing.
//! A new task is placed as CFS places it (eq. 7 speaks of woken tasks only).

use lull_model::weight::{nice_to_weight, NICE_0_WEIGHT, NICE_MIN};

use super::cfs::Cfs;
use super::{Enqueue, FairParams, Migration, SchedClass};
use crate::ids::{CpuId, TaskId};

/// The preemption tick when a configuration names none: the seed's interbench setting (§VI-B-2,
/// "the maximum latency was 15.28 ms when we set the preemption tick to 3 ms").
pub const DEFAULT_PREEMPT_TICK_NS: u64 = 3_000_000;

/// VT-CFS's two periods.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct VtCfsConfig {
    /// T, the scheduler tick period.
    pub tick_ns: u64,
    /// The preemption tick: a multiple of `tick_ns` (rounded up to one by [`VtCfsConfig::new`]).
    pub preempt_tick_ns: u64,
}

impl VtCfsConfig {
    /// The configuration for a scheduler tick of `tick_ns` and a preemption tick of
    /// `preempt_tick_ns`, rounded up to a whole number of scheduler ticks (at least one): the
    /// check runs only at a scheduler tick, so a preemption tick between two ticks acts at the
    /// later one.
    #[must_use]
    pub fn new(tick_ns: u64, preempt_tick_ns: u64) -> VtCfsConfig {
        let tick_ns = tick_ns.max(1);
        let ticks = preempt_tick_ns.div_ceil(tick_ns).max(1);
        VtCfsConfig {
            tick_ns,
            preempt_tick_ns: ticks * tick_ns,
        }
    }
}

/// Eq. 7: the virtual runtime of a task waking into a queue whose smallest is `min_vruntime`.
#[must_use]
pub fn place_on_wakeup(min_vruntime: u64, tick_ns: u64) -> u64 {
    let lead =
        u128::from(tick_ns) * u128::from(NICE_0_WEIGHT) / u128::from(nice_to_weight(NICE_MIN));
    min_vruntime + lead as u64
}

/// Figure 5: whether the tick preempts the running task, which has run `ran_this_turn_ns` in its
/// turn and has virtual runtime `curr_vruntime`, when the leftmost waiting task has
/// `leftmost_vruntime` (`None`: nobody waits).
#[must_use]
pub fn tick_preempt(
    ran_this_turn_ns: u64,
    preempt_tick_ns: u64,
    curr_vruntime: u64,
    leftmost_vruntime: Option<u64>,
) -> bool {
    match leftmost_vruntime {
        Some(l) => ran_this_turn_ns >= preempt_tick_ns && l < curr_vruntime,
        None => false,
    }
}

/// The VT-CFS class (see the module documentation).
#[derive(Clone, Debug)]
pub struct VtCfs {
    cfs: Cfs,
    cfg: VtCfsConfig,
}

impl VtCfs {
    /// A class scheduling `cpus` CPUs.
    #[must_use]
    pub fn new(cpus: usize, cfg: VtCfsConfig) -> VtCfs {
        VtCfs {
            cfs: Cfs::new(cpus),
            cfg,
        }
    }

    #[must_use]
    pub fn config(&self) -> VtCfsConfig {
        self.cfg
    }

    /// A task's virtual runtime (for tests and reports).
    #[must_use]
    pub fn vruntime(&self, task: TaskId) -> Option<u64> {
        self.cfs.vruntime(task)
    }
}

impl SchedClass for VtCfs {
    fn name(&self) -> &'static str {
        "vtcfs"
    }

    fn attach(&mut self, task: TaskId, params: FairParams) {
        self.cfs.attach(task, params);
    }

    fn set_params(&mut self, task: TaskId, params: FairParams) {
        self.cfs.set_params(task, params);
    }

    fn enqueue(&mut self, cpu: CpuId, task: TaskId, how: Enqueue) {
        match how {
            Enqueue::New => self.cfs.enqueue(cpu, task, how),
            Enqueue::Wakeup => {
                let vr = place_on_wakeup(self.cfs.runnable_min_vruntime(cpu), self.cfg.tick_ns);
                self.cfs.enqueue_at(cpu, task, vr);
            }
        }
    }

    fn block(&mut self, cpu: CpuId, task: TaskId) {
        self.cfs.block(cpu, task);
    }

    fn migrate(&mut self, task: TaskId, from: CpuId, to: CpuId, how: Migration) {
        self.cfs.migrate(task, from, to, how);
    }

    fn pick_next(&mut self, cpu: CpuId, now_ns: u64) -> Option<TaskId> {
        self.cfs.pick_next(cpu, now_ns)
    }

    fn put_prev(&mut self, cpu: CpuId) {
        self.cfs.put_prev(cpu);
    }

    fn update_curr(&mut self, cpu: CpuId, ran_ns: u64) {
        self.cfs.update_curr(cpu, ran_ns);
    }

    fn tick(&mut self, cpu: CpuId, now_ns: u64) -> bool {
        self.cfs
            .turn(cpu, now_ns)
            .is_some_and(|(ran, curr_vr, leftmost)| {
                tick_preempt(ran, self.cfg.preempt_tick_ns, curr_vr, leftmost)
            })
    }

    fn wakeup_preempt(&mut self, cpu: CpuId, woken: TaskId) -> bool {
        self.cfs.wakeup_preempt(cpu, woken)
    }

    fn current(&self, cpu: CpuId) -> Option<TaskId> {
        self.cfs.current(cpu)
    }

    fn nr_queued(&self, cpu: CpuId) -> usize {
        self.cfs.nr_queued(cpu)
    }

    fn steal_candidate(&self, cpu: CpuId, movable: &dyn Fn(TaskId) -> bool) -> Option<TaskId> {
        self.cfs.steal_candidate(cpu, movable)
    }

    fn sleeping_on(&self, task: TaskId) -> Option<CpuId> {
        self.cfs.sleeping_on(task)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::cfs;

    const TICK_NS: u64 = 1_000_000;

    #[test]
    fn the_preemption_tick_is_a_whole_number_of_ticks() {
        assert_eq!(
            VtCfsConfig::new(1_000_000, 3_000_000).preempt_tick_ns,
            3_000_000
        );
        assert_eq!(
            VtCfsConfig::new(4_000_000, 3_000_000).preempt_tick_ns,
            4_000_000
        );
        assert_eq!(
            VtCfsConfig::new(4_000_000, 5_000_000).preempt_tick_ns,
            8_000_000
        );
        assert_eq!(VtCfsConfig::new(1_000_000, 0).preempt_tick_ns, 1_000_000);
    }

    #[test]
    fn eq_7_places_a_woken_task_one_nice_minus_20_tick_behind_the_minimum() {
        // 1 ms × 1024 / 88761 = 11536 ns of virtual time.
        assert_eq!(place_on_wakeup(5_000_000, TICK_NS), 5_011_536);
    }

    /// Seed 003 example 2 under both classes: nine nice-0 hogs and one nice −12 hog share a CPU
    /// with the interactive task, which sleeps briefly and wakes just as the −12 hog (the
    /// smallest virtual runtime) gets the CPU. Under CFS the woken task waits out at least the
    /// −12 hog's whole slice; under VT-CFS one preemption tick.
    #[test]
    fn seed_example_2_scheduling_latency_cfs_versus_vtcfs() {
        fn latency_ns(class: &mut dyn SchedClass) -> u64 {
            let cpu = CpuId(0);
            let heavy = TaskId(0);
            let woken = TaskId(10);
            class.attach(heavy, FairParams::nice(-12));
            class.enqueue(cpu, heavy, Enqueue::New);
            for i in 1..=10 {
                class.attach(TaskId(i), FairParams::nice(0));
                class.enqueue(cpu, TaskId(i), Enqueue::New);
            }
            let mut now = 0;
            let mut curr = class.pick_next(cpu, now).expect("runnable");
            let mut woke_at = None;
            while curr != woken || woke_at.is_none() {
                class.update_curr(cpu, TICK_NS);
                now += TICK_NS;
                if class.tick(cpu, now) {
                    class.put_prev(cpu);
                    curr = class.pick_next(cpu, now).expect("runnable");
                    // After a warm-up, the interactive task takes a short sleep and wakes
                    // right as the −12 hog starts a turn.
                    if woke_at.is_none() && now >= 200 * TICK_NS && curr == heavy {
                        class.block(cpu, woken);
                        class.enqueue(cpu, woken, Enqueue::Wakeup);
                        assert!(!class.wakeup_preempt(cpu, woken));
                        woke_at = Some(now);
                    }
                }
                assert!(now < 10_000 * TICK_NS, "the −12 hog never started a turn");
            }
            now - woke_at.expect("woken")
        }
        let cfs_latency = latency_ns(&mut cfs::Cfs::new(1));
        let vt_latency = latency_ns(&mut VtCfs::new(1, VtCfsConfig::new(TICK_NS, 3_000_000)));
        // CFS: the −12 hog's slice (11 ms × 14949 / 25189 = 6.53 ms with the task back in the
        // queue; seed 003's 6.18 ms for ten tasks), ended at the next tick, or more.
        assert!(cfs_latency >= 7_000_000, "CFS: {cfs_latency}");
        // VT-CFS: one preemption tick.
        assert_eq!(vt_latency, 3_000_000);
    }

    proptest::proptest! {
        /// The bound VT-CFS exists for: a task woken into the queue waits at most the running
        /// task's preemption tick and the leftmost task's (eq. 7 puts it right behind that one),
        /// plus one scheduler tick for a tie. It rests on the seed's premise that no two tasks'
        /// virtual runtimes lie closer than a nice −20 task's advance over one tick; tasks whose
        /// turns lose a little time to interrupts (the jitter) make that the usual case, and the
        /// rare history that breaks it is set aside.
        #[test]
        fn a_woken_task_waits_at_most_two_preemption_ticks(
            nices in proptest::collection::vec(-20i8..=19, 2..10),
            jitter_ns in proptest::collection::vec(0u64..200_000, 1..16),
            warmup_ticks in 50u64..400,
            preempt_ticks in 1u64..6,
        ) {
            let preempt_tick_ns = preempt_ticks * TICK_NS;
            let mut c = VtCfs::new(1, VtCfsConfig::new(TICK_NS, preempt_tick_ns));
            let cpu = CpuId(0);
            for (i, &n) in nices.iter().enumerate() {
                c.attach(TaskId(i), FairParams::nice(n));
                c.enqueue(cpu, TaskId(i), Enqueue::New);
            }
            let mut now = 0;
            c.pick_next(cpu, now);
            let step = |c: &mut VtCfs, now: &mut u64| {
                // The tick's period is exact; the task is charged a little less (interrupts).
                let lost = jitter_ns[(*now / TICK_NS) as usize % jitter_ns.len()];
                c.update_curr(cpu, TICK_NS - lost);
                *now += TICK_NS;
                if c.tick(cpu, *now) {
                    c.put_prev(cpu);
                    c.pick_next(cpu, *now).expect("runnable")
                } else {
                    c.current(cpu).expect("running")
                }
            };
            for _ in 0..warmup_ticks {
                step(&mut c, &mut now);
            }
            let mut vrs: Vec<u64> = (0..nices.len())
                .filter_map(|i| c.vruntime(TaskId(i)))
                .collect();
            vrs.sort_unstable();
            let lead = place_on_wakeup(0, TICK_NS);
            proptest::prop_assume!(vrs[1] - vrs[0] > lead);
            let woken = TaskId(nices.len());
            c.attach(woken, FairParams::nice(0));
            c.enqueue(cpu, woken, Enqueue::Wakeup);
            let woke_at = now;
            while step(&mut c, &mut now) != woken {
                proptest::prop_assert!(
                    now - woke_at <= 2 * preempt_tick_ns + TICK_NS,
                    "waited {} ns", now - woke_at
                );
            }
        }
    }

    /// What a class shows of two CPUs through a run that has no wakeups and no tick: new
    /// tasks, runs, a reweight, a balance migration, a sleep.
    fn observed(class: &mut dyn SchedClass) -> Vec<String> {
        let (c0, c1) = (CpuId(0), CpuId(1));
        let mut seen = Vec::new();
        fn look(class: &dyn SchedClass, what: &str) -> String {
            let (c0, c1) = (CpuId(0), CpuId(1));
            format!(
                "{what}: current {:?} {:?}, queued {} {}, steal {:?} {:?}, sleeping {:?}",
                class.current(c0),
                class.current(c1),
                class.nr_queued(c0),
                class.nr_queued(c1),
                class.steal_candidate(c0, &|_| true),
                class.steal_candidate(c1, &|_| true),
                (0..5)
                    .map(|i| class.sleeping_on(TaskId(i)))
                    .collect::<Vec<_>>(),
            )
        }
        for (i, nice) in [0, 0, 5, -5, 0].into_iter().enumerate() {
            class.attach(TaskId(i), FairParams::nice(nice));
        }
        for i in 0..3 {
            class.enqueue(c0, TaskId(i), Enqueue::New);
        }
        class.enqueue(c1, TaskId(3), Enqueue::New);
        seen.push(look(class, "enqueued"));
        let first = class.pick_next(c0, 0);
        class.pick_next(c1, 0);
        // A waiting task made heavier, then the current one runs and is put back.
        class.set_params(TaskId(2), FairParams::nice(-5));
        class.update_curr(c0, 2_000_000);
        class.update_curr(c1, 1_000_000);
        class.put_prev(c0);
        let second = class.pick_next(c0, 2_000_000);
        seen.push(format!("picked {first:?} then {second:?}"));
        class.update_curr(c0, 3_000_000);
        seen.push(look(class, "ran"));
        let moved = class
            .steal_candidate(c0, &|_| true)
            .expect("a task waits on CPU 0");
        class.migrate(moved, c0, c1, Migration::Balance);
        seen.push(look(class, "migrated"));
        class.enqueue(c0, TaskId(4), Enqueue::New);
        let preempts = class.wakeup_preempt(c0, TaskId(4));
        seen.push(format!("new task preempts: {preempts}"));
        class.block(c1, moved);
        seen.push(look(class, "slept"));
        class.put_prev(c0);
        let third = class.pick_next(c0, 5_000_000);
        class.update_curr(c0, 1_000_000);
        seen.push(format!("picked {third:?}"));
        seen
    }

    /// Apart from a woken task's placement and the tick, VT-CFS is CFS: the same run, with no
    /// wakeup and no tick, shows the same picks, queues, balancing candidates and answers.
    #[test]
    fn without_wakeups_or_ticks_vtcfs_behaves_as_cfs() {
        let mut cfs = cfs::Cfs::new(2);
        let mut vt = VtCfs::new(2, VtCfsConfig::new(TICK_NS, 3_000_000));
        let expected = observed(&mut cfs);
        assert_eq!(observed(&mut vt), expected);
        for i in 0..5 {
            assert_eq!(vt.vruntime(TaskId(i)), cfs.vruntime(TaskId(i)), "task {i}");
        }
        // The run is not idle: the migration and the preemption check did something.
        assert!(
            expected.iter().any(|l| l == "new task preempts: true"),
            "{expected:#?}"
        );
        assert_eq!(vt.nr_queued(CpuId(1)), 0);
        assert_eq!(vt.name(), "vtcfs");
    }

    #[test]
    fn the_running_task_keeps_the_cpu_while_its_vruntime_is_the_smallest() {
        assert!(!tick_preempt(2_999_999, 3_000_000, 10, Some(5)));
        assert!(tick_preempt(3_000_000, 3_000_000, 10, Some(5)));
        assert!(!tick_preempt(9_000_000, 3_000_000, 5, Some(5)));
        assert!(!tick_preempt(9_000_000, 3_000_000, 10, None));
    }
}
