//! EEVDF's worked examples and properties.

use super::*;
use crate::class::{by_name, ClassConfig};

const CPU: CpuId = CpuId(0);
const TICK_NS: u64 = 1_000_000;

/// One CPU, a 1 ms tick, the default base slice for one CPU (0.7 ms).
fn one_cpu() -> Eevdf {
    Eevdf::new(EevdfConfig::for_machine(1, TICK_NS, None))
}

fn with_features(cpus: usize, features: Features) -> Eevdf {
    Eevdf::new(EevdfConfig {
        features,
        ..EevdfConfig::for_machine(cpus, TICK_NS, Some(NORMALIZED_BASE_SLICE_NS))
    })
}

fn custom(slice_ns: u64) -> FairParams {
    FairParams {
        custom_slice_ns: Some(slice_ns),
        ..FairParams::nice(0)
    }
}

fn attach_all(class: &mut Eevdf, params: &[FairParams]) -> Vec<TaskId> {
    (0..params.len())
        .map(|i| {
            class.attach(TaskId(i), params[i]);
            TaskId(i)
        })
        .collect()
}

/// Attaches one task per `params` and queues each on CPU 0 as new, in that order.
fn queue_new(class: &mut Eevdf, params: &[FairParams]) -> Vec<TaskId> {
    let t = attach_all(class, params);
    for &task in &t {
        class.enqueue(CPU, task, Enqueue::New);
    }
    t
}

/// The first pick on CPU 0, `first`, runs `ran_ns` from time 0 and is put back; the next
/// pick is `next`.
fn first_runs_then(class: &mut Eevdf, first: TaskId, ran_ns: u64, next: TaskId) {
    assert_eq!(class.pick_next(CPU, 0), Some(first));
    class.update_curr(CPU, ran_ns);
    class.put_prev(CPU);
    assert_eq!(class.pick_next(CPU, ran_ns), Some(next));
}

/// Queues `task` on CPU 0 (`how`) and checks where it was placed: its vruntime and deadline.
fn queued_at(class: &mut Eevdf, task: TaskId, how: Enqueue, vruntime: u64, deadline: u64) {
    class.enqueue(CPU, task, how);
    assert_eq!(
        (class.vruntime(task), class.deadline(task)),
        (Some(vruntime), Some(deadline)),
        "{task:?} placed"
    );
}

/// `task`, just queued, preempts the current task on CPU 0 and is the pick at `now_ns`.
fn preempts_and_is_picked(class: &mut Eevdf, task: TaskId, now_ns: u64) {
    assert!(class.wakeup_preempt(CPU, task));
    class.put_prev(CPU);
    assert_eq!(class.pick_next(CPU, now_ns), Some(task));
    class.check_invariants();
}

/// On CPU 0 with `a` and `c` queued as new at V = 0: `a` runs 300 000 first, so V =
/// (300 000 + 0) / 2 = 150 000 and `c`, eligible, goes next; `c` sleeps at once, owed V − v =
/// 150 000, and `a` is picked again at 300 000.
fn a_runs_ahead_and_c_sleeps_owed(class: &mut Eevdf, a: TaskId, c: TaskId) {
    first_runs_then(class, a, 300_000, c);
    class.block(CPU, c);
    assert_eq!(class.saved_lag(c), Some(150_000));
    assert_eq!(class.pick_next(CPU, 300_000), Some(a));
}

#[test]
fn a_sleeper_owed_time_is_placed_left_of_v_and_a_new_task_gets_half_a_slice() {
    let mut eevdf = one_cpu();
    let t = attach_all(&mut eevdf, &[FairParams::nice(0); 3]);
    let (a, b, c) = (t[0], t[1], t[2]);
    // A and C start at V = 0 with half a 0.7 ms slice: deadline 0.35 ms.
    eevdf.enqueue(CPU, a, Enqueue::New);
    eevdf.enqueue(CPU, c, Enqueue::New);
    assert_eq!(eevdf.deadline(c), Some(350_000));
    // A runs ahead, C sleeps owed 150 000, A is back on the CPU.
    a_runs_ahead_and_c_sleeps_owed(&mut eevdf, a, c);
    eevdf.update_curr(CPU, 1_000_000);
    // A alone: v = 1 300 000, a new request to 2 000 000.
    assert_eq!(eevdf.deadline(a), Some(2_000_000));
    // B is new: placed at V = 1 300 000, deadline half a slice on: 1 650 000.
    queued_at(&mut eevdf, b, Enqueue::New, 1_300_000, 1_650_000);
    // C wakes. W = 2048 (A and B), V = 1 300 000. Its lag is inflated by
    // (W + w) / W = 3072 / 2048: 150 000 × 1.5 = 225 000, so v = 1 075 000 and
    // d = v + 700 000 = 1 775 000 (a full request).
    queued_at(&mut eevdf, c, Enqueue::Wakeup, 1_075_000, 1_775_000);
    // Joining moved V to (1 300 000 × 2 + 1 075 000) / 3 = 1 225 000: C's lag is 150 000
    // again, what it slept with.
    assert_eq!(eevdf.avg_vruntime(CPU), 1_225_000);
    // A (1 300 000) is past V, B too; C is the eligible one: it preempts.
    assert_eq!(eevdf.is_eligible(a), Some(false));
    assert!(eevdf.wakeup_preempt(CPU, c));
    eevdf.check_invariants();
}

#[test]
fn a_sleeper_that_ran_ahead_is_placed_right_of_v() {
    // Without DELAY_DEQUEUE (Linux 6.6 to 6.11) a task that sleeps ahead of V leaves at once
    // and keeps its negative lag; with it, the same task waits on the queue (see
    // `a_sleeper_that_owes_service_stays_queued_until_picked_or_woken`).
    let features = Features {
        delay_dequeue: false,
        ..Features::LINUX_6_18
    };
    let mut eevdf = with_features(1, features);
    let t = attach_all(&mut eevdf, &[FairParams::nice(0); 3]);
    let (a, b, c) = (t[0], t[1], t[2]);
    eevdf.enqueue(CPU, a, Enqueue::New);
    eevdf.enqueue(CPU, b, Enqueue::New);
    assert_eq!(eevdf.pick_next(CPU, 0), Some(a));
    // A runs a whole slice: v = 700 000 passes its deadline 350 000, a new request starts
    // and the tick asks for the CPU back.
    eevdf.update_curr(CPU, 700_000);
    assert_eq!(eevdf.deadline(a), Some(1_400_000));
    assert!(eevdf.tick(CPU, 700_000));
    // A sleeps at V = 350 000, 350 000 ahead (within the bound 0.7 + 1 ms).
    eevdf.block(CPU, a);
    assert_eq!(eevdf.saved_lag(a), Some(-350_000));
    assert_eq!(eevdf.sleeping_on(a), None);
    assert_eq!(eevdf.pick_next(CPU, 700_000), Some(b));
    eevdf.update_curr(CPU, 1_000_000);
    eevdf.enqueue(CPU, c, Enqueue::New);
    // A wakes: W = 2048, V = 1 000 000, lag −350 000 × 3072 / 2048 = −525 000, so
    // v = 1 525 000 and d = 2 225 000.
    queued_at(&mut eevdf, a, Enqueue::Wakeup, 1_525_000, 2_225_000);
    // V' = (1 000 000 × 2 + 1 525 000) / 3 = 1 175 000: A is 350 000 ahead again.
    assert_eq!(eevdf.avg_vruntime(CPU), 1_175_000);
    assert_eq!(eevdf.is_eligible(a), Some(false));
    assert!(!eevdf.wakeup_preempt(CPU, a));

    // The kernel's defaults keep the same sleeper on the queue instead.
    let mut linux = one_cpu();
    let t = queue_new(&mut linux, &[FairParams::nice(0); 2]);
    assert_eq!(linux.pick_next(CPU, 0), Some(t[0]));
    linux.update_curr(CPU, 700_000);
    linux.block(CPU, t[0]);
    assert_eq!(linux.sleeping_on(t[0]), Some(CPU));
}

#[test]
fn the_pick_is_the_earliest_deadline_among_eligible_tasks() {
    let mut eevdf = one_cpu();
    // A: base slice 0.7 ms; B: 3 ms; C: 0.1 ms. All nice 0, all new at V = 0, deadlines at
    // half a slice: 350 000, 1 500 000, 50 000.
    let t = queue_new(
        &mut eevdf,
        &[FairParams::nice(0), custom(3_000_000), custom(100_000)],
    );
    let (a, b, c) = (t[0], t[1], t[2]);
    assert_eq!(eevdf.pick_next(CPU, 0), Some(c));
    // C runs 150 000: past its deadline, a new 0.1 ms request to 250 000.
    eevdf.update_curr(CPU, 150_000);
    assert_eq!(eevdf.deadline(c), Some(250_000));
    assert!(eevdf.tick(CPU, 150_000));
    eevdf.put_prev(CPU);
    // V = 150 000 × 1024 / 3072 = 50 000. C has the earliest deadline (250 000) but is past
    // V; of A (350 000) and B (1 500 000), both at 0, A's deadline is earlier.
    assert_eq!(eevdf.avg_vruntime(CPU), 50_000);
    assert_eq!(
        [a, b, c].map(|x| eevdf.is_eligible(x)),
        [Some(true), Some(true), Some(false)]
    );
    assert_eq!(eevdf.pick_next(CPU, 150_000), Some(a));
    // A's protection ends at the shortest slice still queued, C's 0.1 ms: at
    // min(350 000, 0 + 100 000) = 100 000 (`set_protect_slice` with RUN_TO_PARITY).
    assert_eq!(eevdf.protected_until(CPU), Some(100_000));
    // Eligible exactly at V: A at 75 000, V = (75 000 + 0 + 150 000) / 3 = 75 000.
    eevdf.update_curr(CPU, 75_000);
    assert_eq!(eevdf.avg_vruntime(CPU), 75_000);
    assert_eq!(eevdf.is_eligible(a), Some(true));
    // One more nanosecond: Σ(v_i − v0)·w_i = 225 001 × 1024 < (v − v0)·W = 75 001 × 3072.
    eevdf.update_curr(CPU, 1);
    assert_eq!(eevdf.is_eligible(a), Some(false));
    // Still protected (75 001 < 100 000), so the tick lets A run …
    assert!(!eevdf.tick(CPU, 225_001));
    // … until it reaches 100 000.
    eevdf.update_curr(CPU, 24_999);
    assert!(eevdf.tick(CPU, 250_000));
    eevdf.check_invariants();
}

/// A and B (nice 0, 0.7 ms) take a turn each, then A is picked again at V = 350 000 with a
/// fresh request to 1 050 000 and protected to its deadline.
fn a_protected_to_its_deadline(eevdf: &mut Eevdf) -> (TaskId, TaskId) {
    let t = queue_new(eevdf, &[FairParams::nice(0); 2]);
    let (a, b) = (t[0], t[1]);
    assert_eq!(eevdf.pick_next(CPU, 0), Some(a));
    eevdf.update_curr(CPU, 350_000);
    assert!(eevdf.tick(CPU, 350_000));
    eevdf.put_prev(CPU);
    assert_eq!(eevdf.pick_next(CPU, 350_000), Some(b));
    eevdf.update_curr(CPU, 350_000);
    assert!(eevdf.tick(CPU, 700_000));
    eevdf.put_prev(CPU);
    // Both at V = 350 000 with deadlines 1 050 000: the tie goes to A, queued first.
    assert_eq!(eevdf.pick_next(CPU, 700_000), Some(a));
    assert_eq!(eevdf.protected_until(CPU), Some(1_050_000));
    (a, b)
}

#[test]
fn run_to_parity_protects_the_current_task_until_preempt_short_overrides_it() {
    for preempt_short in [true, false] {
        let features = Features {
            preempt_short,
            ..Features::LINUX_6_18
        };
        let mut eevdf = with_features(1, features);
        let (a, _) = a_protected_to_its_deadline(&mut eevdf);
        // C is new: at V = 350 000, deadline 700 000, earlier than A's and eligible. Without
        // protection it would be the pick; A is eligible and protected, so it keeps the CPU.
        let (c, s) = (TaskId(2), TaskId(3));
        eevdf.attach(c, FairParams::nice(0));
        eevdf.enqueue(CPU, c, Enqueue::New);
        assert_eq!(eevdf.deadline(c), Some(700_000));
        assert_eq!(eevdf.is_eligible(c), Some(true));
        assert!(!eevdf.wakeup_preempt(CPU, c));
        // S asks for 0.1 ms requests: deadline 350 000 + 50 000. A shorter slice than A's
        // lifts the protection for the check, and S is the pick (`do_preempt_short`).
        eevdf.attach(s, custom(100_000));
        eevdf.enqueue(CPU, s, Enqueue::New);
        assert_eq!(eevdf.deadline(s), Some(400_000));
        assert_eq!(eevdf.wakeup_preempt(CPU, s), preempt_short);
        if preempt_short {
            // What was left of A's protection is cancelled (`cancel_protect_slice`).
            assert_eq!(eevdf.protected_until(CPU), eevdf.vruntime(a));
            eevdf.put_prev(CPU);
            assert_eq!(eevdf.pick_next(CPU, 700_000), Some(s));
        } else {
            assert_eq!(eevdf.protected_until(CPU), Some(1_050_000));
        }
        eevdf.check_invariants();
    }
}

#[test]
fn a_shorter_slice_that_does_not_preempt_shortens_the_protection() {
    let mut eevdf = with_features(2, Features::LINUX_6_18);
    let (a, b, s) = (TaskId(0), TaskId(1), TaskId(2));
    eevdf.attach(a, FairParams::nice(0));
    eevdf.attach(b, FairParams::nice(0));
    eevdf.attach(s, custom(100_000));
    // S, a 0.1 ms task, ran alone on CPU 1 and slept owing nothing (lag 0).
    let cpu1 = CpuId(1);
    eevdf.enqueue(cpu1, s, Enqueue::New);
    assert_eq!(eevdf.pick_next(cpu1, 0), Some(s));
    eevdf.block(cpu1, s);
    assert_eq!(eevdf.saved_lag(s), Some(0));
    // On CPU 0, B runs 300 000 ahead of A (A is put back unrun so that B goes first).
    eevdf.enqueue(CPU, a, Enqueue::New);
    eevdf.enqueue(CPU, b, Enqueue::New);
    assert_eq!(eevdf.pick_next(CPU, 0), Some(a));
    eevdf.put_prev(CPU);
    assert_eq!(eevdf.pick_next(CPU, 0), Some(b));
    eevdf.update_curr(CPU, 300_000);
    assert!(!eevdf.tick(CPU, 300_000));
    eevdf.put_prev(CPU);
    assert_eq!(eevdf.pick_next(CPU, 300_000), Some(a));
    assert_eq!(eevdf.protected_until(CPU), Some(350_000));
    eevdf.update_curr(CPU, 220_000);
    // V = (220 000 + 300 000) / 2 = 260 000. S wakes here at V: v = 260 000,
    // d = 360 000. Unprotected, the pick is still A (eligible, deadline 350 000 < 360 000),
    // so no preemption, but A's protection now ends 0.1 ms on: 220 000 + 100 000.
    queued_at(&mut eevdf, s, Enqueue::Wakeup, 260_000, 360_000);
    assert!(!eevdf.wakeup_preempt(CPU, s));
    assert_eq!(eevdf.protected_until(CPU), Some(320_000));
    eevdf.update_curr(CPU, 99_999);
    assert!(!eevdf.tick(CPU, 619_999));
    eevdf.update_curr(CPU, 1);
    assert!(eevdf.tick(CPU, 620_000));
    eevdf.check_invariants();
}

/// `pick_eevdf` drops an ineligible current entity before anything else: neither its earlier
/// deadline nor its protection keeps it on the CPU once it has run ahead of V.
#[test]
fn an_ineligible_current_task_loses_its_protection_and_its_earlier_deadline() {
    let mut eevdf = one_cpu();
    let t = queue_new(&mut eevdf, &[FairParams::nice(0); 2]);
    let (a, c) = (t[0], t[1]);
    // V = 150 000: A ran ahead, C goes, and sleeps at once owed 150 000.
    a_runs_ahead_and_c_sleeps_owed(&mut eevdf, a, c);
    // A alone again: v = 300 000, its request still ends at 350 000, and it is protected
    // to that deadline (the shortest slice on the queue is its own).
    assert_eq!(eevdf.deadline(a), Some(350_000));
    assert_eq!(eevdf.protected_until(CPU), Some(350_000));
    // C wakes: V = 300 000, its lag inflated by (1024 + 1024) / 1024 to 300 000, so v = 0 and
    // d = 700 000. Joining moves V to 150 000: A (300 000) is no longer eligible.
    queued_at(&mut eevdf, c, Enqueue::Wakeup, 0, 700_000);
    assert_eq!(eevdf.avg_vruntime(CPU), 150_000);
    assert_eq!(eevdf.is_eligible(a), Some(false));
    // A is protected and its deadline (350 000) is earlier than C's, yet C is the pick: an
    // ineligible current entity is not a candidate (same slices, so no `do_preempt_short`).
    preempts_and_is_picked(&mut eevdf, c, 300_000);
}

/// A deadline tie between the current entity and the tree's best goes to the tree: the
/// current one wins only with a strictly earlier deadline (`entity_before`).
#[test]
fn a_deadline_tie_with_the_current_task_goes_to_the_waiting_one() {
    let mut eevdf = one_cpu();
    let t = attach_all(&mut eevdf, &[FairParams::nice(0), custom(100_000)]);
    let (a, s) = (t[0], t[1]);
    eevdf.enqueue(CPU, a, Enqueue::New);
    assert_eq!(eevdf.pick_next(CPU, 0), Some(a));
    // Alone, A runs 300 000 of its first request (deadline 350 000).
    eevdf.update_curr(CPU, 300_000);
    assert!(!eevdf.tick(CPU, 300_000));
    // S, with 0.1 ms requests, is new at V = 300 000: deadline 300 000 + 50 000, A's.
    eevdf.enqueue(CPU, s, Enqueue::New);
    assert_eq!(eevdf.deadline(s), Some(350_000));
    assert_eq!(eevdf.deadline(a), Some(350_000));
    assert_eq!(eevdf.is_eligible(a), Some(true));
    assert_eq!(eevdf.is_eligible(s), Some(true));
    // S's shorter slice lifts A's protection for the check; both are eligible with equal
    // deadlines, and the tie goes to S.
    preempts_and_is_picked(&mut eevdf, s, 300_000);
}

#[test]
fn a_sleeper_that_owes_service_stays_queued_until_picked_or_woken() {
    let mut eevdf = one_cpu();
    let t = queue_new(&mut eevdf, &[FairParams::nice(0); 2]);
    let (a, s) = (t[0], t[1]);
    first_runs_then(&mut eevdf, a, 0, s);
    eevdf.update_curr(CPU, 300_000);
    // S sleeps 150 000 ahead of V = 150 000: not eligible, so it stays (DELAY_DEQUEUE).
    eevdf.block(CPU, s);
    assert_eq!(eevdf.sleeping_on(s), Some(CPU));
    assert_eq!(eevdf.current(CPU), None);
    assert_eq!(eevdf.nr_queued(CPU), 1);
    assert_eq!(eevdf.steal_candidate(CPU, &|_| true), Some(a));
    // Still counted in V.
    assert_eq!(eevdf.avg_vruntime(CPU), 150_000);
    assert_eq!(eevdf.pick_next(CPU, 300_000), Some(a));
    eevdf.check_invariants();

    // a) A runs 400 000 (new request to 1 100 000; S still counts as queued, so the tick
    //    asks for the CPU). V = (400 000 + 300 000) / 2 = 350 000: S is eligible now and
    //    the pick finds it; its dequeue finishes with lag 50 000, zeroed (DELAY_ZERO), and
    //    the pick goes on to A.
    let mut picked = eevdf.clone();
    picked.update_curr(CPU, 400_000);
    assert!(picked.tick(CPU, 700_000));
    let mut woken_late = picked.clone();
    picked.put_prev(CPU);
    assert_eq!(picked.pick_next(CPU, 700_000), Some(a));
    assert_eq!(picked.sleeping_on(s), None);
    assert_eq!(picked.saved_lag(s), Some(0));
    assert_eq!(picked.avg_vruntime(CPU), 400_000);
    picked.check_invariants();

    // b) S wakes while it still owes: V = (0 + 300 000) / 2 = 150 000, lag −150 000. It is
    //    requeued where it was, deadline and all, and does not preempt.
    let mut woken_early = eevdf.clone();
    woken_early.enqueue(CPU, s, Enqueue::Wakeup);
    assert_eq!(woken_early.sleeping_on(s), None);
    assert_eq!(woken_early.vruntime(s), Some(300_000));
    assert_eq!(woken_early.deadline(s), Some(350_000));
    assert_eq!(woken_early.nr_queued(CPU), 1);
    assert!(!woken_early.wakeup_preempt(CPU, s));
    woken_early.check_invariants();

    // c) S wakes once its lag has turned positive (50 000 in case a): DELAY_ZERO places it
    //    afresh at the V of the others (A alone, 400 000) with a new request.
    queued_at(&mut woken_late, s, Enqueue::Wakeup, 400_000, 1_100_000);
    woken_late.check_invariants();
}

#[test]
fn custom_slices_are_clamped_and_the_base_slice_follows_the_cpu_count() {
    let by_cpus = [1, 2, 4, 8, 16].map(default_base_slice_ns);
    assert_eq!(
        by_cpus,
        [700_000, 1_400_000, 2_100_000, 2_800_000, 2_800_000]
    );
    assert_eq!(default_base_slice_ns(3), 1_400_000);
    assert_eq!(default_base_slice_ns(0), 700_000);
    let config = EevdfConfig::for_machine(4, 4_000_000, None);
    assert_eq!(
        (config.base_slice_ns, config.tick_ns),
        (2_100_000, 4_000_000)
    );
    let config = EevdfConfig::for_machine(4, 4_000_000, Some(3_000_000));
    assert_eq!(config.base_slice_ns, 3_000_000);

    let mut eevdf = Eevdf::new(config);
    for (i, asked) in [
        Some(10_000),
        Some(5_000_000),
        Some(1_000_000_000),
        Some(0),
        None,
    ]
    .into_iter()
    .enumerate()
    {
        eevdf.attach(
            TaskId(i),
            FairParams {
                custom_slice_ns: asked,
                ..FairParams::nice(0)
            },
        );
    }
    let slices = (0..5).map(|i| eevdf.slice_ns(TaskId(i)).unwrap());
    assert_eq!(
        slices.collect::<Vec<_>>(),
        [100_000, 5_000_000, 100_000_000, 3_000_000, 3_000_000]
    );
    // `sched_setattr` with `sched_runtime` 0 goes back to the base slice.
    eevdf.set_params(TaskId(1), FairParams::nice(0));
    assert_eq!(eevdf.slice_ns(TaskId(1)), Some(3_000_000));
    // A later custom slice is clamped as at attach, and a `sched_runtime` of 0 given as a
    // custom slice means the base slice too (`__setparam_fair`: `if (attr->sched_runtime)`).
    eevdf.set_params(TaskId(1), custom(5_000_000));
    assert_eq!(eevdf.slice_ns(TaskId(1)), Some(5_000_000));
    eevdf.set_params(TaskId(1), custom(0));
    assert_eq!(eevdf.slice_ns(TaskId(1)), Some(3_000_000));
    eevdf.set_params(TaskId(1), custom(10_000));
    assert_eq!(eevdf.slice_ns(TaskId(1)), Some(100_000));

    let cfg = ClassConfig {
        cpus: 2,
        tick_ns: TICK_NS,
        base_slice_ns: None,
        preempt_tick_ns: None,
    };
    assert_eq!(by_name("eevdf", cfg).map(|c| c.name()), Ok("eevdf"));
}

#[test]
fn migration_keeps_the_lag_and_the_request_under_way() {
    let mut eevdf = Eevdf::new(EevdfConfig::for_machine(2, TICK_NS, Some(700_000)));
    let t = attach_all(&mut eevdf, &[FairParams::nice(0); 4]);
    let (a, b, c, d) = (t[0], t[1], t[2], t[3]);
    let cpu1 = CpuId(1);
    // CPU 1: D alone has run 1 ms (v = 1 000 000).
    eevdf.enqueue(cpu1, d, Enqueue::New);
    assert_eq!(eevdf.pick_next(cpu1, 0), Some(d));
    eevdf.update_curr(cpu1, 1_000_000);
    // CPU 0: A runs 300 000 of its 350 000 request and is put back.
    for &x in &[a, b, c] {
        eevdf.enqueue(CPU, x, Enqueue::New);
    }
    first_runs_then(&mut eevdf, a, 300_000, b);
    // The balancer's candidate is the task least recently queued or picked: C (A was
    // picked after C was queued). `detach_tasks` starts from that end of `cfs_tasks`.
    assert_eq!(eevdf.steal_candidate(CPU, &|_| true), Some(c));
    // Moving A: V = 300 000 / 3 = 100 000, lag −200 000, 50 000 left of its request.
    // On CPU 1, V = 1 000 000, W = 1024: lag × 2048 / 1024 = −400 000, so
    // v = 1 400 000 and d = v + 50 000. Balancing and evacuation move it alike.
    let mut evacuated = eevdf.clone();
    eevdf.migrate(a, CPU, cpu1, Migration::Balance);
    evacuated.migrate(a, CPU, cpu1, Migration::Evacuate);
    for class in [&eevdf, &evacuated] {
        assert_eq!(class.vruntime(a), Some(1_400_000));
        assert_eq!(class.deadline(a), Some(1_450_000));
        // V' = (1 000 000 + 1 400 000) / 2: A is 200 000 ahead, as it left.
        assert_eq!(class.avg_vruntime(cpu1), 1_200_000);
        assert_eq!(class.nr_queued(cpu1), 1);
        assert_eq!(class.steal_candidate(CPU, &|_| true), Some(c));
        class.check_invariants();
    }
}

#[test]
fn reweighting_scales_the_lag_and_leaves_v_in_place() {
    let mut eevdf = one_cpu();
    let t = queue_new(&mut eevdf, &[FairParams::nice(0); 2]);
    let (a, b) = (t[0], t[1]);
    first_runs_then(&mut eevdf, a, 600_000, b);
    // A waits 300 000 ahead of V = 300 000 with 700 000 of its request (to 1 300 000) left.
    assert_eq!(eevdf.avg_vruntime(CPU), 300_000);
    assert_eq!(eevdf.deadline(a), Some(1_300_000));
    // Nice 5 (1024 → 335): the lag w·(V − v) = −300 000 × 1024 stays, so V − v′ =
    // −300 000 × 1024 / 335 = −917 014.93: v′ = 1 217 015 (to the nearest ns). The deadline
    // stays as far from V in real time: 1 000 000 × 1024 / 335 = 3 056 716.4 past V.
    eevdf.set_params(a, FairParams::nice(5));
    assert_eq!(eevdf.vruntime(a), Some(1_217_015));
    assert_eq!(eevdf.deadline(a), Some(3_356_716));
    // (0 × 1024 + 1 217 015 × 335) / 1359 = 300 000.02: V has not moved.
    assert_eq!(eevdf.avg_vruntime(CPU), 300_000);
    // The current task made lighter (nice 1, 820) is asked to give the CPU back
    // (`prio_changed_fair`). B's lag 300 000.02 × 1024 / 820: v′ = −74 634.
    assert!(!eevdf.tick(CPU, 600_000));
    eevdf.set_params(b, FairParams::nice(1));
    assert!(eevdf.tick(CPU, 600_000));
    assert_eq!(eevdf.vruntime(b), Some((-74_634i64) as u64));
    assert_eq!(eevdf.avg_vruntime(CPU), 300_000);
    // A is frozen while it waits: it leaves at once with its lag, V − v′ = −917 015.
    eevdf.block(CPU, a);
    assert_eq!(eevdf.saved_lag(a), Some(-917_015));
    // Asleep, only the saved lag is scaled back: −917 015 × 335 / 1024 = −300 000.02.
    eevdf.set_params(a, FairParams::nice(0));
    assert_eq!(eevdf.saved_lag(a), Some(-300_000));
    eevdf.check_invariants();
}

/// The balancer's candidate is the tail of Linux's `cfs_tasks`, which `account_entity_enqueue`
/// and `set_next_task_fair` keep most-recently-used first: the waiting task least recently
/// enqueued or picked, not the one that has waited longest in the tree.
#[test]
fn the_steal_candidate_is_the_task_least_recently_enqueued_or_picked() {
    let mut eevdf = one_cpu();
    let t = attach_all(&mut eevdf, &[FairParams::nice(0); 3]);
    let (a, b, c) = (t[0], t[1], t[2]);
    eevdf.enqueue(CPU, a, Enqueue::New);
    eevdf.enqueue(CPU, b, Enqueue::New);
    // cfs_tasks, head first: A picked [A, B]; C enqueued while A runs [C, A, B].
    assert_eq!(eevdf.pick_next(CPU, 0), Some(a));
    eevdf.update_curr(CPU, 300_000);
    eevdf.enqueue(CPU, c, Enqueue::New);
    // A is put back behind C in the tree. V = 150 000: A is past it, B (deadline 350 000)
    // beats C (150 000 + 350 000): B picked, [B, C, A].
    eevdf.put_prev(CPU);
    assert_eq!(eevdf.pick_next(CPU, 300_000), Some(b));
    // The tail is A, picked before C was enqueued, though C is ahead of it in the tree.
    assert_eq!(eevdf.steal_candidate(CPU, &|_| true), Some(a));
    assert_eq!(eevdf.steal_candidate(CPU, &|x| x != a), Some(c));
    eevdf.check_invariants();
}

/// `entity_lag` bounds a saved lag by calc_delta_fair(`cfs_rq_max_slice` + `TICK_NSEC`): the
/// longest slice on the queue, the leaving entity's own included, not the entity's own slice.
#[test]
fn a_saved_lag_is_bounded_by_the_longest_slice_on_the_queue_plus_a_tick() {
    let mut eevdf = one_cpu();
    // A: the base slice, 0.7 ms; B: a custom 3 ms slice.
    let t = queue_new(&mut eevdf, &[FairParams::nice(0), custom(3_000_000)]);
    let (a, b) = (t[0], t[1]);
    // Deadlines 350 000 (A) and 1 500 000 (B): A first; it runs 10 ms and waits.
    first_runs_then(&mut eevdf, a, 10_000_000, b);
    // V = (10 000 000 + 0) / 2 = 5 000 000: A, frozen while it waits, leaves 5 ms ahead,
    // clamped to (3 ms + 1 ms) × 1024 / 1024 = 4 ms.
    assert_eq!(eevdf.avg_vruntime(CPU), 5_000_000);
    eevdf.block(CPU, a);
    assert_eq!(eevdf.saved_lag(a), Some(-4_000_000));

    // The same with A at nice 5 (weight 335): the bound is in A's own virtual time,
    // 4 ms × 1024 / 335 = 12 226 865.67.
    let mut eevdf = one_cpu();
    let t = queue_new(&mut eevdf, &[FairParams::nice(5), custom(3_000_000)]);
    let (a, b) = (t[0], t[1]);
    first_runs_then(&mut eevdf, a, 10_000_000, b);
    // v_A = 10 ms × 1024 / 335 = 30 567 164; V = 30 567 164 × 335 / 1359 = 7 534 952: A
    // leaves 23 032 212 ahead, clamped.
    assert_eq!(eevdf.vruntime(a), Some(30_567_164));
    assert_eq!(eevdf.avg_vruntime(CPU), 7_534_952);
    eevdf.block(CPU, a);
    assert_eq!(eevdf.saved_lag(a), Some(-12_226_865));
    eevdf.check_invariants();
}

/// A waiting task of `eevdf` leaves owing −150 000 and the other runs on alone to
/// v = V = 100 000: (sleeper, runner).
fn a_sleeper_with_lag_and_a_runner_at_100_000(eevdf: &mut Eevdf) -> (TaskId, TaskId) {
    let t = queue_new(eevdf, &[FairParams::nice(0); 2]);
    let (a, b) = (t[0], t[1]);
    first_runs_then(eevdf, a, 300_000, b);
    // V = 150 000; A, 150 000 ahead, is frozen while it waits and keeps its lag.
    eevdf.block(CPU, a);
    assert_eq!(eevdf.saved_lag(a), Some(-150_000));
    eevdf.update_curr(CPU, 100_000);
    assert_eq!(eevdf.avg_vruntime(CPU), 100_000);
    (a, b)
}

/// `place_entity` applies the saved lag only `if (sched_feat(PLACE_LAG) && cfs_rq->nr_queued
/// && se->vlag)`: without `PLACE_LAG` a woken sleeper starts at V with a fresh request.
#[test]
fn place_lag_places_a_sleeper_by_its_lag_and_without_it_at_v() {
    let mut linux = one_cpu();
    let (a, _) = a_sleeper_with_lag_and_a_runner_at_100_000(&mut linux);
    // W = 1024: lag −150 000 × 2048 / 1024 = −300 000, so v = 400 000, d = v + 700 000.
    queued_at(&mut linux, a, Enqueue::Wakeup, 400_000, 1_100_000);
    // V' = (100 000 + 400 000) / 2: A is 150 000 ahead again.
    assert_eq!(linux.avg_vruntime(CPU), 250_000);
    linux.check_invariants();

    let features = Features {
        place_lag: false,
        ..Features::LINUX_6_18
    };
    let mut no_lag = with_features(1, features);
    let (a, _) = a_sleeper_with_lag_and_a_runner_at_100_000(&mut no_lag);
    queued_at(&mut no_lag, a, Enqueue::Wakeup, 100_000, 800_000);
    assert_eq!(no_lag.avg_vruntime(CPU), 100_000);
    no_lag.check_invariants();
}

/// With no entity on the queue (`cfs_rq->nr_queued` 0) there is no one to owe or be owed:
/// a sleeper waking there forgets its lag and starts at the queue's V.
#[test]
fn a_sleeper_waking_on_an_empty_queue_forgets_its_lag() {
    let mut eevdf = one_cpu();
    let (a, b) = a_sleeper_with_lag_and_a_runner_at_100_000(&mut eevdf);
    // B, alone and so eligible, sleeps and leaves at once: the queue is empty, V 100 000.
    eevdf.block(CPU, b);
    assert_eq!(eevdf.saved_lag(b), Some(0));
    assert_eq!(eevdf.nr_queued(CPU), 0);
    assert_eq!(eevdf.avg_vruntime(CPU), 100_000);
    queued_at(&mut eevdf, a, Enqueue::Wakeup, 100_000, 800_000);
    assert_eq!(eevdf.pick_next(CPU, 400_000), Some(a));
    eevdf.check_invariants();
}

/// S (nice 0) runs 300 000 after A and sleeps 150 000 ahead of V, so it is delayed; A is
/// picked: (A, S).
fn s_delayed_while_a_runs(eevdf: &mut Eevdf) -> (TaskId, TaskId) {
    let t = queue_new(eevdf, &[FairParams::nice(0); 2]);
    let (a, s) = (t[0], t[1]);
    first_runs_then(eevdf, a, 0, s);
    eevdf.update_curr(CPU, 300_000);
    eevdf.block(CPU, s);
    assert_eq!(eevdf.sleeping_on(s), Some(CPU));
    assert_eq!(eevdf.pick_next(CPU, 300_000), Some(a));
    (a, s)
}

/// `finish_delayed_dequeue_entity` zeroes a positive lag only with `DELAY_ZERO`: without it the
/// delayed sleeper leaves with the service it is owed, and is placed by it when it wakes.
#[test]
fn without_delay_zero_a_delayed_sleeper_keeps_a_positive_lag() {
    let features = Features {
        delay_zero: false,
        ..Features::LINUX_6_18
    };
    let mut eevdf = with_features(1, features);
    let (a, s) = s_delayed_while_a_runs(&mut eevdf);
    // As in `a_sleeper_that_owes_service_stays_queued_until_picked_or_woken` a): A runs
    // 400 000, V = (400 000 + 300 000) / 2 = 350 000, S is eligible, found by the pick and
    // leaves with lag 50 000, which it keeps.
    eevdf.update_curr(CPU, 400_000);
    eevdf.put_prev(CPU);
    assert_eq!(eevdf.pick_next(CPU, 700_000), Some(a));
    assert_eq!(eevdf.sleeping_on(s), None);
    assert_eq!(eevdf.saved_lag(s), Some(50_000));
    // S wakes: V = 400 000 (A alone), W = 1024: 50 000 × 2048 / 1024 = 100 000 left of V.
    queued_at(&mut eevdf, s, Enqueue::Wakeup, 300_000, 1_000_000);
    eevdf.check_invariants();
}

/// `requeue_delayed_entity` places a woken delayed sleeper afresh only `if (se->vlag > 0)`: one
/// woken exactly at V keeps its place and the request under way.
#[test]
fn a_delayed_sleeper_woken_with_no_lag_keeps_its_request() {
    let mut eevdf = one_cpu();
    let (a, s) = s_delayed_while_a_runs(&mut eevdf);
    // A runs 300 000: V = (300 000 + 300 000) / 2 = 300 000, S's own vruntime: lag 0.
    eevdf.update_curr(CPU, 300_000);
    assert_eq!(eevdf.avg_vruntime(CPU), 300_000);
    eevdf.enqueue(CPU, s, Enqueue::Wakeup);
    assert_eq!(eevdf.sleeping_on(s), None);
    assert_eq!(eevdf.vruntime(s), Some(300_000));
    assert_eq!(eevdf.deadline(s), Some(350_000));
    assert_eq!(eevdf.current(CPU), Some(a));
    eevdf.check_invariants();
}

/// Reweighting a waiting task puts it at V − vlag·w/w′ with V taken exactly, not rounded down
/// first: the fraction of V counts in the rounding to the nearest nanosecond.
#[test]
fn reweighting_rounds_the_exact_position_with_v_fractional() {
    let mut eevdf = one_cpu();
    let t = queue_new(&mut eevdf, &[FairParams::nice(0); 2]);
    let (a, b) = (t[0], t[1]);
    first_runs_then(&mut eevdf, a, 300_001, b);
    // V = 300 001 / 2 = 150 000.5 (150 000 rounded down); A is 150 000.5 ahead.
    assert_eq!(eevdf.avg_vruntime(CPU), 150_000);
    // Nice −3 (1991): v′ = 150 000.5 + 150 000.5 × 1024 / 1991 = 150 000.5 + 77 147.42 =
    // 227 147.92, so 227 148 (from the rounded-down V it would be 227 147).
    eevdf.set_params(a, FairParams::nice(-3));
    assert_eq!(eevdf.vruntime(a), Some(227_148));
    // (227 148 × 1991 + 0 × 1024) / 3015 = 150 000.05: V stays.
    assert_eq!(eevdf.avg_vruntime(CPU), 150_000);
    eevdf.check_invariants();
}

/// `prio_changed_fair` runs only when the priority changed: a new slice alone is no wakeup, so
/// a waiting task given a shorter slice at the same weight does not preempt.
#[test]
fn changing_only_the_slice_of_a_waiting_task_checks_no_preemption() {
    let mut eevdf = one_cpu();
    let (_, b) = a_protected_to_its_deadline(&mut eevdf);
    eevdf.set_params(b, custom(100_000));
    assert_eq!(eevdf.slice_ns(b), Some(100_000));
    assert!(!eevdf.tick(CPU, 700_000));
    eevdf.check_invariants();
}

/// `prio_changed_fair` asks the current task to reschedule only when its priority fell
/// (`p->prio > oldprio`): made heavier, it keeps the CPU and its protection.
#[test]
fn a_current_task_made_heavier_keeps_the_cpu() {
    let mut eevdf = one_cpu();
    let (a, _) = a_protected_to_its_deadline(&mut eevdf);
    eevdf.set_params(a, FairParams::nice(-5));
    assert!(!eevdf.tick(CPU, 700_000));
    assert_eq!(eevdf.current(CPU), Some(a));
    eevdf.check_invariants();
}

/// A waiting task made heavier is checked as a wakeup (`prio_changed_fair` calls
/// `wakeup_preempt`); with a shorter slice too, `PREEMPT_SHORT` lifts the current task's
/// protection for the check and it preempts.
#[test]
fn a_waiting_task_made_heavier_with_a_shorter_slice_preempts_as_a_wakeup() {
    let mut eevdf = one_cpu();
    let (a, b) = a_protected_to_its_deadline(&mut eevdf);
    // B (lag 0) stays at V = 350 000; its deadline keeps its real-time distance:
    // 700 000 × 1024 / 3121 = 229 669.97, rounded down, past V: before A's 1 050 000.
    eevdf.set_params(
        b,
        FairParams {
            custom_slice_ns: Some(100_000),
            ..FairParams::nice(-5)
        },
    );
    assert_eq!(eevdf.vruntime(b), Some(350_000));
    assert_eq!(eevdf.deadline(b), Some(579_669));
    assert!(eevdf.tick(CPU, 700_000));
    // The short-slice preemption cancelled A's protection.
    assert_eq!(eevdf.protected_until(CPU), eevdf.vruntime(a));
    eevdf.put_prev(CPU);
    assert_eq!(eevdf.pick_next(CPU, 700_000), Some(b));
    eevdf.check_invariants();
}

/// With a reschedule already requested, `check_preempt_wakeup_fair` returns at once
/// (`need_resched`): a waiting task reweighted then does not touch the current task's
/// protection.
#[test]
fn with_a_reschedule_pending_a_reweight_leaves_the_current_protection_alone() {
    let mut eevdf = one_cpu();
    let (a, b) = a_protected_to_its_deadline(&mut eevdf);
    // A made lighter (nice 1) is asked to reschedule, still protected.
    eevdf.set_params(a, FairParams::nice(1));
    assert!(eevdf.tick(CPU, 700_000));
    let protected = eevdf.protected_until(CPU);
    assert_ne!(protected, eevdf.vruntime(a));
    eevdf.set_params(
        b,
        FairParams {
            custom_slice_ns: Some(100_000),
            ..FairParams::nice(-5)
        },
    );
    assert_eq!(eevdf.protected_until(CPU), protected);
    assert!(eevdf.tick(CPU, 700_000));
    eevdf.check_invariants();
}

/// A task put back and picked again at once is Linux's `prev == next`: it never stopped being
/// current. A reweight between the two is then a reweight of the current task, whose live
/// protection `reweight_entity` rescales (`rel_vprot`) rather than ends.
#[test]
fn a_task_put_back_then_reweighted_keeps_its_rescaled_protection_when_picked_again() {
    let mut current = one_cpu();
    let (a, _) = a_protected_to_its_deadline(&mut current);
    // Made heavier (nice -1) while current: its protection is rescaled, still live.
    current.set_params(a, FairParams::nice(-1));
    let rescaled = current.protected_until(CPU).expect("a current task");
    assert_ne!(Some(rescaled), current.vruntime(a));

    let mut put_back = one_cpu();
    let (a, _) = a_protected_to_its_deadline(&mut put_back);
    put_back.put_prev(CPU);
    put_back.set_params(a, FairParams::nice(-1));
    // Heavier, A's deadline comes before B's: it is the pick again, with the same protection.
    assert_eq!(put_back.pick_next(CPU, 700_000), Some(a));
    assert_eq!(put_back.protected_until(CPU), Some(rescaled));
    put_back.check_invariants();
}

/// Two CPUs; A runs on CPU 0 and B waits there.
fn a_running_and_b_waiting_on_cpu0() -> (Eevdf, TaskId, TaskId) {
    let mut eevdf = with_features(2, Features::LINUX_6_18);
    let t = queue_new(&mut eevdf, &[FairParams::nice(0); 2]);
    assert_eq!(eevdf.pick_next(CPU, 0), Some(t[0]));
    (eevdf, t[0], t[1])
}

#[test]
#[should_panic(expected = "blocked on cpu1 while Current(cpu0)")]
fn blocking_the_current_task_on_another_cpu_is_refused() {
    let (mut eevdf, a, _) = a_running_and_b_waiting_on_cpu0();
    eevdf.block(CpuId(1), a);
}

#[test]
#[should_panic(expected = "blocked on cpu1 while Queued(cpu0)")]
fn blocking_a_waiting_task_on_another_cpu_is_refused() {
    let (mut eevdf, _, b) = a_running_and_b_waiting_on_cpu0();
    eevdf.block(CpuId(1), b);
}

#[test]
#[should_panic(expected = "migrated from cpu1 while Queued(cpu0)")]
fn migrating_a_waiting_task_from_another_cpu_is_refused() {
    let (mut eevdf, _, b) = a_running_and_b_waiting_on_cpu0();
    eevdf.migrate(b, CpuId(1), CPU, Migration::Balance);
}

#[test]
#[should_panic(expected = "migrated from cpu1 while Delayed(cpu0)")]
fn migrating_a_delayed_sleeper_from_another_cpu_is_refused() {
    let (mut eevdf, a, b) = a_running_and_b_waiting_on_cpu0();
    // A runs ahead of V and sleeps: delayed on CPU 0.
    eevdf.update_curr(CPU, 300_000);
    eevdf.block(CPU, a);
    assert_eq!(eevdf.sleeping_on(a), Some(CPU));
    assert_eq!(eevdf.pick_next(CPU, 300_000), Some(b));
    eevdf.migrate(a, CpuId(1), CPU, Migration::Evacuate);
}

/// Properties over random operation sequences (`tests/props.rs`).
mod props;

/// Lag and deadline arithmetic runs in i128 and comes back to i64 clamped, each sign to its
/// own end.
#[test]
fn wide_values_clamp_to_their_own_end() {
    assert_eq!(sat_i64(-5), -5);
    assert_eq!(sat_i64(i128::from(i64::MIN) - 1), i64::MIN);
    assert_eq!(sat_i64(i128::from(i64::MAX) + 1), i64::MAX);
    assert_eq!(sat_i64(i128::MIN), i64::MIN);
}
