//! Seed 003's framework-assisted interactive boost inside the simulated kernel.
//!
//! The framework names the task that will receive the user's input ([`Kernel::name_interactive`];
//! the seed's InputDeviceDispatcher passes its TID to the kernel during the binder call). When
//! the kernel wakes that task it raises its weight by eq. 6 against the run queue the task
//! joins ([`lull_sched::boost::Boosts::on_wakeup`] with ΣW and n of that queue, the task
//! included) before the task is queued, as the seed's modified `enqueue_entity` does; the task
//! drops back to its own parameters when the tick finds its slice used up or when it blocks
//! ([`lull_sched::boost::Boosts::on_slice_end_or_block`]).
//!
//! The seed's kernel keeps one named TID and compares every woken task with it; so does this
//! one: a task stays named until the framework names another.
//!
//! [`BoostKind::Slice`] is today's Linux counterpart: instead of a heavier weight, the named task
//! gets a short custom slice (Linux 6.12+ `sched_setattr` with `sched_runtime` for a
//! `SCHED_OTHER` task, clamped to 0.1–100 ms by the class as `__setparam_fair` clamps it) at
//! wakeup and its own slice back when it blocks. A custom slice changes the task's place in
//! line, not its share of the CPU, so nothing takes it away at a tick.

use std::collections::btree_map::{BTreeMap, Entry};

use lull_sched::boost::{Boosts, RunQueueLoad};
use lull_sched::class::FairParams;
use lull_sched::{CpuId, TaskId};
use serde::Serialize;

use super::{Kernel, TState};

/// How the kernel favours the task the framework named (seed 003's interactive boost, the
/// `[policy]` table's `boost_c_ms` or `boost_slice_us`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BoostKind {
    /// Eq. 6 with C = `c_ns`: the first nice whose weight reaches C × ΣW / P, capped at nice −20's.
    Weight { c_ns: u64 },
    /// A custom slice of `slice_ns` (an EEVDF request length; CFS and VT-CFS ignore it).
    Slice { slice_ns: u64 },
}

/// What the boost did over a run.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct BoostCounters {
    /// Wakeups of the named task that raised its weight or gave it the custom slice.
    pub boosted: u64,
    /// Boosts the tick took away because the task had used its slice.
    pub dropped_at_slice_end: u64,
    /// Boosts taken away because the task blocked (or guiS froze it).
    pub dropped_at_block: u64,
}

/// The kernel's boost state.
#[derive(Debug)]
pub(super) struct KernelBoost {
    kind: BoostKind,
    /// The task the framework named last.
    named: Option<usize>,
    /// Weight boosts and the boosted tasks' own parameters.
    weights: Boosts,
    /// Slice boosts: each sliced task's own parameters.
    sliced: BTreeMap<usize, FairParams>,
    counters: BoostCounters,
}

/// Why a boost ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum BoostEnd {
    SliceEnd,
    Block,
}

impl Kernel<'_> {
    /// Turns the interactive boost on for this run.
    pub fn enable_boost(&mut self, kind: BoostKind) {
        // A slice boost keeps its own book (`sliced`); its `Boosts` stays empty.
        let c_ns = match kind {
            BoostKind::Weight { c_ns } => c_ns,
            BoostKind::Slice { .. } => 0,
        };
        self.boost = Some(KernelBoost {
            kind,
            named: None,
            weights: Boosts::new(c_ns),
            sliced: BTreeMap::new(),
            counters: BoostCounters::default(),
        });
    }

    /// The framework names thread `t` as the one that receives the user's input (the seed's
    /// TID passed during the binder call). Nothing happens without a boost.
    pub fn name_interactive(&mut self, t: usize) {
        if let Some(b) = self.boost.as_mut() {
            b.named = Some(t);
        }
    }

    /// What the boost did so far; `None` without a boost.
    pub fn boost_counters(&self) -> Option<BoostCounters> {
        self.boost.as_ref().map(|b| b.counters)
    }

    /// Whether thread `t` runs boosted now (tests).
    #[cfg(test)]
    pub fn is_boosted(&self, t: usize) -> bool {
        self.boost
            .as_ref()
            .is_some_and(|b| b.weights.is_boosted(TaskId(t)) || b.sliced.contains_key(&t))
    }

    /// The load weight the class uses for thread `t` now (tests).
    #[cfg(test)]
    pub fn weight_of(&self, t: usize) -> u32 {
        self.tasks[t].params.weight
    }

    /// Sets thread `t`'s parameters in the class and in the task.
    pub(super) fn apply_params(&mut self, t: usize, params: FairParams) {
        self.tasks[t].params = params;
        self.class.set_params(TaskId(t), params);
    }

    /// The load of core `c`'s run queue with thread `t` joining it: the weights and count of
    /// the tasks running or waiting there, and `t` at its own weight.
    fn load_joining(&self, c: usize, t: usize) -> RunQueueLoad {
        let (mut weight_sum, mut n) = (u64::from(self.tasks[t].params.weight), 1);
        for (i, th) in self.tasks.iter().enumerate() {
            if i != t && th.core == c && matches!(th.state, TState::Running | TState::Runnable) {
                weight_sum += u64::from(th.params.weight);
                n += 1;
            }
        }
        RunQueueLoad {
            weight_sum,
            nr_runnable: n,
        }
    }

    /// Thread `t` is woken onto core `c`'s queue: boost it if the framework named it. Called
    /// before the class queues it, as the seed's `enqueue_entity` raises the weight first.
    pub(super) fn boost_on_wakeup(&mut self, t: usize, c: usize) {
        let Some(b) = self.boost.as_ref() else {
            return;
        };
        if b.named != Some(t) {
            return;
        }
        let kind = b.kind;
        let own = self.tasks[t].params;
        let load = self.load_joining(c, t);
        let b = self.boost.as_mut().expect("checked above");
        let new = match kind {
            BoostKind::Weight { .. } => b.weights.on_wakeup(TaskId(t), own, load),
            BoostKind::Slice { slice_ns } => match b.sliced.entry(t) {
                Entry::Occupied(_) => None,
                Entry::Vacant(v) => {
                    v.insert(own);
                    Some(FairParams {
                        custom_slice_ns: Some(slice_ns),
                        ..own
                    })
                }
            },
        };
        if let Some(p) = new {
            b.counters.boosted += 1;
            self.apply_params(t, p);
        }
    }

    /// Thread `t`'s boost ends (`why`): its own parameters come back. A custom slice stays
    /// through the tick (it asks for an earlier turn, not a larger share).
    pub(super) fn boost_end(&mut self, t: usize, why: BoostEnd) {
        let Some(b) = self.boost.as_mut() else {
            return;
        };
        let own = match (b.kind, why) {
            (BoostKind::Weight { .. }, _) => b.weights.on_slice_end_or_block(TaskId(t)),
            (BoostKind::Slice { .. }, BoostEnd::Block) => b.sliced.remove(&t),
            (BoostKind::Slice { .. }, BoostEnd::SliceEnd) => None,
        };
        if let Some(own) = own {
            match why {
                BoostEnd::SliceEnd => b.counters.dropped_at_slice_end += 1,
                BoostEnd::Block => b.counters.dropped_at_block += 1,
            }
            self.apply_params(t, own);
        }
    }

    /// The tick on core `c` found its current task's slice used up.
    pub(super) fn boost_tick_expired(&mut self, c: usize) {
        if self.boost.is_none() {
            return;
        }
        if let Some(t) = self.class.current(CpuId(c)) {
            self.boost_end(t.0, BoostEnd::SliceEnd);
        }
    }

    /// `setpriority` on a boosted task: the boost is forgotten (the new nice is the task's own).
    pub(super) fn boost_forget(&mut self, t: usize) {
        if let Some(b) = self.boost.as_mut() {
            b.weights.on_slice_end_or_block(TaskId(t));
            b.sliced.remove(&t);
        }
    }
}

// In a file of its own: it builds whole kernels through `crate::policy`, which imports this
// module's `BoostKind`.
#[cfg(test)]
mod tests;
