//! The boost inside a whole modelled kernel, built from a `[policy]` table as a spec builds it.

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
