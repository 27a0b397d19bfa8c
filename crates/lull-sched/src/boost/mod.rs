//! Seed 003's framework-assisted interactive boost: the framework names the task that will handle
//! the user's input; when that task wakes, its weight is raised so that its CFS time slice covers
//! the interaction's work C, and it drops back when that slice ends or it blocks.
//!
//! Eq. 6 (as the design brief restates it): W′ = C × ΣW / P, capped at W(−20) = 88761, where ΣW
//! is the weight of the run queue the task joins (the task included, at its own weight) and P the
//! CFS period for that many tasks ([`crate::class::cfs::period_ns`]). The task gets the first
//! nice level whose weight is at least W′ ([`boost_nice`]).
//!
//! Example 1 of the seed: ten nice-0 hogs and the input task. With the seed's average C of
//! 100 ms, W′ = 100 × 11 × 1024 / 11 = 102400 ≥ 88761, so the task runs at nice −20 and its slice
//! is 11 ms × 88761 / (10 × 1024 + 88761) = 9.86 ms. With C = 3 ms, W′ = 3072 (nice −5).
//!
//! [`Boosts`] keeps the boosted tasks' own parameters, for a substrate that applies the rule at
//! wakeup (the simulator's kernel, as the seed's modified `enqueue_entity` does). The live daemon,
//! which cannot act inside the kernel's wakeup, applies the same arithmetic from the policy seam.

pub mod seam;

use std::collections::BTreeMap;

use lull_model::weight::{nice_for_weight_at_least, nice_to_weight, NICE_MIN};

use crate::class::cfs::period_ns;
use crate::class::FairParams;
use crate::ids::TaskId;

/// C, the work an interaction needs, when a configuration names none: the seed's painting
/// experiment's larger setting (§VI-B-1, C = 3 and 10 ms; 10 ms gave the 31.4 % gain).
pub const DEFAULT_C_NS: u64 = 10_000_000;

/// The custom slice a slice boost gives (today's counterpart of the weight boost): the shortest
/// Linux takes for a fair task ([`crate::class::eevdf::MIN_CUSTOM_SLICE_NS`], 6.12+
/// `sched_runtime`). Under EEVDF a shorter request buys an earlier virtual deadline, so the woken
/// task preempts a hog at once (`PREEMPT_SHORT` needs a slice below the current task's) and is
/// picked first while eligible; its share of the CPU stays its weight's.
pub const BOOST_SLICE_NS: u64 = crate::class::eevdf::MIN_CUSTOM_SLICE_NS;

/// The heaviest weight a boost may give: nice −20's (the kernel accepts no heavier nice; seed 003
/// §VI-B-1: "the Linux kernel does not allow a task's weight to be promoted larger than 88761").
#[must_use]
pub fn cap_weight() -> u32 {
    nice_to_weight(NICE_MIN)
}

/// What a run queue holds when a task joins it: the summed weight and count of its runnable
/// tasks, the joining task included.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RunQueueLoad {
    pub weight_sum: u64,
    pub nr_runnable: u64,
}

impl RunQueueLoad {
    /// `others` nice-0 tasks and the joining task at nice 0.
    #[must_use]
    pub fn nice0(others: u64) -> RunQueueLoad {
        RunQueueLoad {
            weight_sum: (others + 1) * u64::from(nice_to_weight(0)),
            nr_runnable: others + 1,
        }
    }
}

/// Eq. 6: the weight W′ = C × ΣW / P, capped at [`cap_weight`].
#[must_use]
pub fn boost_weight(c_ns: u64, load: RunQueueLoad) -> u32 {
    let p = u128::from(period_ns(load.nr_runnable.max(1)));
    let w = u128::from(c_ns) * u128::from(load.weight_sum) / p;
    w.min(u128::from(cap_weight())) as u32
}

/// The nice level eq. 6 gives: the first (least favoured) level whose weight is at least W′.
#[must_use]
pub fn boost_nice(c_ns: u64, load: RunQueueLoad) -> i8 {
    nice_for_weight_at_least(u64::from(boost_weight(c_ns, load)))
}

/// The boosted tasks of a substrate that applies eq. 6 at wakeup, with what they had before.
///
/// A boost only ever raises a weight: a task whose own weight is already at least W′ keeps it.
#[derive(Clone, Debug, Default)]
pub struct Boosts {
    c_ns: u64,
    /// Boosted task → its own parameters.
    own: BTreeMap<TaskId, FairParams>,
    boosted: u64,
}

impl Boosts {
    /// Boosting with C = `c_ns`.
    #[must_use]
    pub fn new(c_ns: u64) -> Boosts {
        Boosts {
            c_ns,
            own: BTreeMap::new(),
            boosted: 0,
        }
    }

    #[must_use]
    pub fn c_ns(&self) -> u64 {
        self.c_ns
    }

    /// The interactive `task`, whose parameters are `own`, wakes into a queue holding `load`
    /// (itself included): the parameters to give it, if they change.
    pub fn on_wakeup(
        &mut self,
        task: TaskId,
        own: FairParams,
        load: RunQueueLoad,
    ) -> Option<FairParams> {
        if self.own.contains_key(&task) {
            return None;
        }
        let nice = boost_nice(self.c_ns, load);
        let weight = nice_to_weight(nice);
        if weight <= own.weight {
            return None;
        }
        self.own.insert(task, own);
        self.boosted += 1;
        Some(FairParams { weight, ..own })
    }

    /// The task's slice ended or it blocked: the parameters to restore, if it was boosted.
    pub fn on_slice_end_or_block(&mut self, task: TaskId) -> Option<FairParams> {
        self.own.remove(&task)
    }

    /// Whether `task` runs boosted now.
    #[must_use]
    pub fn is_boosted(&self, task: TaskId) -> bool {
        self.own.contains_key(&task)
    }

    /// Wakeups that were boosted so far.
    #[must_use]
    pub fn boosted_count(&self) -> u64 {
        self.boosted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::cfs::time_slice_ns;

    /// Seed 003 example 1: ten nice-0 hogs; the input task needs 3 ms but a nice-0 slice is 1 ms.
    /// Boosted with the seed's average C (100 ms) it gets nice −20 and a 9.86 ms slice.
    #[test]
    fn seed_example_1_boosted_slice_is_9_86_ms() {
        let load = RunQueueLoad::nice0(10);
        let unboosted = time_slice_ns(1024, load.weight_sum, load.nr_runnable);
        assert_eq!(unboosted / 10_000, 100); // 1.00 ms: preempted twice in 3 ms of work
        let w = boost_weight(100_000_000, load);
        assert_eq!(w, cap_weight());
        assert_eq!(boost_nice(100_000_000, load), -20);
        let total = 10 * 1024 + u64::from(w);
        let slice = time_slice_ns(w, total, 11);
        assert_eq!(slice / 10_000, 986);
        assert!(slice > 3_000_000);
    }

    #[test]
    fn eq_6_below_the_cap_picks_the_first_nice_heavy_enough() {
        let load = RunQueueLoad::nice0(10);
        // 3 ms × 11264 / 11 ms = 3072: nice −5 (3121) is the first level at least that heavy.
        assert_eq!(boost_weight(3_000_000, load), 3072);
        assert_eq!(boost_nice(3_000_000, load), -5);
        // The painting experiment: two hogs and the task on one CPU, P = 5 ms.
        let two = RunQueueLoad::nice0(2);
        assert_eq!(boost_weight(3_000_000, two), 1843);
        assert_eq!(boost_nice(3_000_000, two), -3);
        assert_eq!(boost_weight(10_000_000, two), 6144);
        assert_eq!(boost_nice(10_000_000, two), -9);
        // Nothing to do on an empty queue with C below P: the weight stays nice 0's or lower.
        assert!(boost_nice(1_000_000, RunQueueLoad::nice0(0)) >= 0);
    }

    #[test]
    fn a_boost_lasts_one_slice_and_never_lowers_a_weight() {
        let mut b = Boosts::new(10_000_000);
        assert_eq!(b.c_ns(), 10_000_000);
        let t = TaskId(3);
        let own = FairParams::nice(0);
        assert!(!b.is_boosted(t));
        let p = b
            .on_wakeup(t, own, RunQueueLoad::nice0(2))
            .expect("boosted");
        assert_eq!(p.weight, nice_to_weight(-9));
        assert!(b.is_boosted(t));
        // A second wakeup while boosted changes nothing.
        assert_eq!(b.on_wakeup(t, p, RunQueueLoad::nice0(2)), None);
        assert_eq!(b.on_slice_end_or_block(t), Some(own));
        assert!(!b.is_boosted(t));
        assert_eq!(b.on_slice_end_or_block(t), None);
        // A task already heavier than W′ is left alone.
        assert_eq!(
            b.on_wakeup(t, FairParams::nice(-15), RunQueueLoad::nice0(2)),
            None
        );
        assert_eq!(b.boosted_count(), 1);
        // Its next wakeup at nice 0 is boosted again, and counted.
        assert!(b.on_wakeup(t, own, RunQueueLoad::nice0(2)).is_some());
        assert_eq!(b.boosted_count(), 2);
    }
}
