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
use crate::policy::BoostKind;

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

#[cfg(test)]
mod tests {
    use lull_model::time::NS_PER_MS;
    use lull_model::weight::nice_to_weight;
    use lull_sched::boost::boost_nice;

    use super::*;
    use crate::engine::Engine;
    use crate::event::Ev;
    use crate::kernel::{Action, Cx, Policies, Userspace};
    use crate::platform::Platform;
    use crate::policy::{PolicySpec, RunPolicies};
    use crate::soc::Soc;
    use crate::spec::CpuSpec;

    /// Thread 0 is a hog; thread 1 runs a job of `job` cycles each time it is woken.
    #[derive(Debug, Default)]
    struct Jobs {
        job: u64,
        busy: bool,
        done_at: Option<u64>,
    }

    impl Userspace for Jobs {
        fn next_action(&mut self, t: usize, _k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) -> Action {
            if t == 0 {
                return Action::Compute(1_000_000_000);
            }
            if std::mem::take(&mut self.busy) {
                self.done_at = Some(cx.now());
                return Action::Block;
            }
            self.busy = true;
            Action::Compute(self.job)
        }
    }

    const HOG: usize = 0;
    const UI: usize = 1;

    /// One Tegra 250 core at its top clock (1.2 GHz: 1.2 M cycles per ms) running `policy`.
    struct Rig {
        plat: Platform,
        policy: PolicySpec,
    }

    impl Rig {
        fn new(policy: PolicySpec) -> Rig {
            Rig {
                plat: Platform::by_name("tegra-250").expect("shipped"),
                policy,
            }
        }

        /// Runs the hog alone for 100 ms, then names (if `name`) and wakes the UI thread with a
        /// job of `job_ms` ms; `check` sees the kernel after the wakeup and at every event until
        /// `until_ms` after it. Returns how long the job took.
        fn run(
            &self,
            ui_nice: i8,
            name: bool,
            job_ms: u64,
            until_ms: u64,
            mut check: impl FnMut(u64, &Kernel<'_>),
        ) -> Option<u64> {
            let cpu = CpuSpec {
                main_cores: 1,
                companion: false,
            };
            let p = RunPolicies::build(&self.policy, &self.plat, 1, false).expect("valid");
            let mut eng = Engine::new(1);
            let mut soc = Soc::new(&self.plat, cpu);
            let top = self.plat.clusters[0].opps.len() - 1;
            soc.cores[0].opp = top;
            let mut k = Kernel::new(
                &self.plat,
                1,
                Policies {
                    class: p.class,
                    placement: p.placement,
                    idle: p.idle,
                },
            );
            if let Some(b) = p.boost {
                k.enable_boost(b);
            }
            let mut u = Jobs {
                job: job_ms * 1_200_000,
                ..Jobs::default()
            };
            k.add_task("hog", 10, 0, 4);
            k.add_task("ui", 3, ui_nice, 256);
            let mut cx = Cx {
                eng: &mut eng,
                soc: &mut soc,
            };
            k.wake(HOG, &u, &mut cx);
            let wake_at = 100 * NS_PER_MS;
            cx.eng.schedule_at(wake_at, Ev::Inject(0));
            cx.eng.schedule_at(wake_at + until_ms * NS_PER_MS, Ev::End);
            while let Some((now, ev)) = cx.eng.pop() {
                match ev {
                    Ev::End => break,
                    Ev::Inject(_) => {
                        if name {
                            k.name_interactive(UI);
                        }
                        k.wake(UI, &u, &mut cx);
                    }
                    Ev::Kernel(e) => k.handle(e, &mut u, &mut cx),
                    Ev::Vsync | Ev::Governor | Ev::Window(_) | Ev::Seam { .. } => {}
                }
                if now >= wake_at {
                    check(now - wake_at, &k);
                }
            }
            u.done_at.map(|t| t - wake_at)
        }
    }

    fn boosted_cfs(c_ms: u64) -> Rig {
        Rig::new(PolicySpec {
            boost_c_ms: Some(c_ms),
            ..PolicySpec::default()
        })
    }

    #[test]
    fn the_named_task_is_boosted_at_wakeup_and_dropped_when_its_slice_ends() {
        // The UI thread joins a queue holding the hog: eq. 6 with ΣW = 2 × 1024, P = 5 ms.
        let boosted = nice_to_weight(boost_nice(10 * NS_PER_MS, RunQueueLoad::nice0(1)));
        assert_eq!(boosted, nice_to_weight(-7));
        // Its boosted slice: 5 ms × 4904 / (4904 + 1024) = 4.14 ms, ended at the tick after.
        let mut seen_boosted_ns = 0;
        let mut dropped_ns = None;
        let mut last = None;
        boosted_cfs(10).run(0, true, 20, 30, |at, k| {
            if k.is_boosted(UI) {
                assert_eq!(k.weight_of(UI), boosted);
                assert!(dropped_ns.is_none(), "boosted again without a wakeup");
                seen_boosted_ns = at;
            } else if dropped_ns.is_none() && seen_boosted_ns > 0 {
                dropped_ns = Some(at);
                assert_eq!(k.weight_of(UI), nice_to_weight(0));
            }
            last = k.boost_counters();
        });
        let dropped = dropped_ns.expect("the boost ended");
        assert!(
            (4 * NS_PER_MS..=6 * NS_PER_MS).contains(&dropped),
            "dropped after {dropped} ns"
        );
        let c = last.expect("a boost runs");
        assert_eq!(
            (c.boosted, c.dropped_at_slice_end, c.dropped_at_block),
            (1, 1, 0)
        );
    }

    #[test]
    fn a_boost_ends_when_the_task_blocks() {
        // A 1 ms job: done within its boosted slice, then asleep at its own weight.
        let mut last = None;
        let took = boosted_cfs(10).run(0, true, 1, 20, |_, k| {
            last = Some((k.weight_of(UI), k.boost_counters()));
        });
        assert!(took.is_some_and(|ns| ns < 2 * NS_PER_MS), "{took:?}");
        let (weight, counters) = last.expect("ran");
        assert_eq!(weight, nice_to_weight(0));
        let c = counters.expect("a boost runs");
        assert_eq!(
            (c.boosted, c.dropped_at_slice_end, c.dropped_at_block),
            (1, 0, 1)
        );
    }

    #[test]
    fn a_boost_never_lowers_a_weight_and_skips_tasks_nobody_named() {
        // At nice −5 (3121) the UI thread is heavier than eq. 6 asks for C = 3 ms beside the
        // hog: 3 ms × (3121 + 1024) / 5 ms = 2487, nice −4 (2501).
        let load = RunQueueLoad {
            weight_sum: u64::from(nice_to_weight(-5)) + 1024,
            nr_runnable: 2,
        };
        assert_eq!(boost_nice(3 * NS_PER_MS, load), -4);
        let mut weights = Vec::new();
        let mut counters = None;
        boosted_cfs(3).run(-5, true, 20, 30, |_, k| {
            weights.push(k.weight_of(UI));
            counters = k.boost_counters();
        });
        assert!(!weights.is_empty());
        assert!(weights.iter().all(|&w| w == nice_to_weight(-5)));
        assert_eq!(counters.map(|c| c.boosted), Some(0));
        // Not named: woken as any task.
        boosted_cfs(10).run(0, false, 20, 30, |_, k| {
            assert!(!k.is_boosted(UI));
            assert_eq!(k.weight_of(UI), nice_to_weight(0));
        });
    }

    #[test]
    fn a_boosted_job_behind_a_hog_finishes_sooner() {
        let plain = Rig::new(PolicySpec::default())
            .run(0, true, 10, 100, |_, _| {})
            .expect("done");
        let boosted = boosted_cfs(10)
            .run(0, true, 10, 100, |_, _| {})
            .expect("done");
        // Unboosted the 10 ms job alternates with the hog in 2.5 ms slices (19 ms here);
        // boosted its first turn is 4.14 ms at a fifth of the virtual time, which buys it about
        // 3.3 ms more before the hog's next turn (13 ms here).
        assert!(
            boosted + 3 * NS_PER_MS < plain,
            "boosted {boosted} ns vs plain {plain} ns"
        );
    }

    #[test]
    fn a_custom_slice_is_given_at_wakeup_and_kept_until_the_task_blocks() {
        let rig = Rig::new(PolicySpec {
            scheduler: Some("eevdf".to_owned()),
            boost_slice_us: Some(100),
            ..PolicySpec::default()
        });
        let mut sliced_until = 0;
        let mut restored = false;
        let took = rig
            .run(0, true, 20, 60, |at, k| {
                let slice = k.tasks[UI].params.custom_slice_ns;
                if k.is_boosted(UI) {
                    assert_eq!(slice, Some(100_000));
                    assert_eq!(k.weight_of(UI), nice_to_weight(0));
                    sliced_until = at;
                } else if sliced_until > 0 {
                    assert_eq!(slice, None);
                    restored = true;
                }
            })
            .expect("done");
        // Through the ticks of a 20 ms job shared with the hog, to its end.
        assert!(sliced_until >= 20 * NS_PER_MS, "{sliced_until}");
        assert!(sliced_until <= took && restored);
    }

    #[test]
    fn setpriority_replaces_a_boost() {
        let plat = Platform::by_name("tegra-250").expect("shipped");
        let p = RunPolicies::build(&PolicySpec::default(), &plat, 1, false).expect("valid");
        let mut k = Kernel::new(
            &plat,
            1,
            Policies {
                class: p.class,
                placement: p.placement,
                idle: p.idle,
            },
        );
        k.enable_boost(BoostKind::Weight {
            c_ns: 10 * NS_PER_MS,
        });
        k.add_task("hog", 10, 0, 4);
        let ui = k.add_task("ui", 3, 0, 4);
        k.tasks[HOG].state = TState::Runnable;
        k.name_interactive(ui);
        k.boost_on_wakeup(ui, 0);
        assert!(k.is_boosted(ui));
        k.set_nice(ui, 5);
        assert!(!k.is_boosted(ui));
        assert_eq!(k.weight_of(ui), nice_to_weight(5));
        // Its block later restores nothing.
        k.boost_end(ui, BoostEnd::Block);
        assert_eq!(k.weight_of(ui), nice_to_weight(5));
    }
}
