use lull_workload::rtapp::{parse, ThreadSummary};

use super::*;

fn run(json: &str) -> Result<RtAppResult, RtAppSimError> {
    let plat = Platform::by_name("x86-64").unwrap();
    let mut r = RtAppRun::new(&plat);
    r.policy.scheduler = Some("eevdf".into());
    run_rtapp(&parse(json).unwrap(), &r)
}

fn share(r: &RtAppResult, i: usize) -> f64 {
    r.threads[i].cpu_ns as f64 / r.duration_ns as f64
}

/// One task running `runtime_us` per `period_us` of its timer for 1 s: the run and the task's
/// summary.
fn lone_timer_task(runtime_us: u32, period_us: u32) -> (RtAppResult, ThreadSummary) {
    let r = run(&format!(
        r#"{{"global": {{"duration": 1, "calibration": 20}}, "tasks": {{
        "t": {{"loop": -1, "runtime": {runtime_us}, "timer": {{"ref": "unique", "period": {period_us}}}}}}}}}"#
    ))
    .unwrap();
    let s = ThreadSummary::of(&r.threads[0].records, r.threads[0].cpu_ns);
    (r, s)
}

#[test]
fn two_pinned_hogs_share_their_cpu_by_weight() {
    let r = run(r#"{"global": {"duration": 2, "calibration": 20}, "tasks": {
        "a": {"loop": -1, "cpus": [0], "run": 100000},
        "b": {"loop": -1, "cpus": [0], "priority": 5, "run": 100000}}}"#)
    .unwrap();
    // sched_prio_to_weight: 1024 and 335.
    assert!(
        (share(&r, 0) - 1024.0 / 1359.0).abs() < 0.005,
        "{}",
        share(&r, 0)
    );
    assert!(
        (share(&r, 1) - 335.0 / 1359.0).abs() < 0.005,
        "{}",
        share(&r, 1)
    );
    assert_eq!(r.threads[0].name, "a-0");
    assert_eq!(r.threads[1].name, "b-1");
}

#[test]
fn a_lone_timer_task_wakes_after_its_slack_once_per_period() {
    let (r, s) = lone_timer_task(1000, 10000);
    assert_eq!(s.periods, 99, "the 100th period ends with the run");
    let wu = s.wakeup_latency_us.unwrap();
    // 50 µs of slack plus the timer interrupt, wakeup and switch (a few µs), never less.
    assert!(wu.p50 >= 50.0 && wu.p50 < 70.0, "{wu:?}");
    assert!((share(&r, 0) - 0.1).abs() < 0.01);
    let slack = s.slack_us.unwrap();
    assert!(slack.p50 > 8800.0 && slack.p50 < 9000.0, "{slack:?}");
}

#[test]
fn a_task_that_overruns_its_timer_never_sleeps_on_it() {
    let (r, s) = lone_timer_task(3000, 2000);
    assert!(s.wakeup_latency_us.is_none());
    assert!(r.threads[0].records.iter().all(|p| p.slack_us <= 0));
    assert!(share(&r, 0) > 0.99);
}

#[test]
fn affinity_keeps_a_thread_on_its_cpus_and_balancing_respects_it() {
    // Three hogs pinned to CPU 1 and one free: the free one has CPU 0 to itself, and balancing
    // never moves a pinned hog there.
    let r = run(r#"{"global": {"duration": 2, "calibration": 20}, "tasks": {
        "pinned": {"instance": 3, "loop": -1, "cpus": [1], "run": 100000},
        "free": {"loop": -1, "run": 100000}}}"#)
    .unwrap();
    for i in 0..3 {
        assert!((share(&r, i) - 1.0 / 3.0).abs() < 0.01, "{}", share(&r, i));
    }
    assert!(share(&r, 3) > 0.99);
}

#[test]
fn three_hogs_on_two_cpus_take_turns() {
    let r = run(r#"{"global": {"duration": 6, "calibration": 20}, "tasks": {
        "hog": {"instance": 3, "loop": -1, "run": 100000}}}"#)
    .unwrap();
    for i in 0..3 {
        assert!((share(&r, i) - 2.0 / 3.0).abs() < 0.03, "{}", share(&r, i));
    }
}

#[test]
fn finite_loops_end_the_run_and_endless_ones_without_a_duration_are_refused() {
    let r = run(
        r#"{"global": {"duration": -1, "calibration": 20}, "tasks": {
        "t": {"loop": 3, "phases": {"p": {"run": 1000, "sleep": 1000}}}}}"#,
    )
    .unwrap();
    assert_eq!(r.threads[0].records.len(), 3);
    assert!(r.duration_ns < 10_000_000);
    let plat = Platform::by_name("x86-64").unwrap();
    let w = parse(r#"{"global": {"duration": -1}, "tasks": {"t": {"run": 1000, "sleep": 1000}}}"#)
        .unwrap();
    let mut run = RtAppRun::new(&plat);
    run.policy.scheduler = Some("eevdf".into());
    // Cut the search short: the refusal is what matters, not an hour of simulated time.
    let w = RtApp {
        duration_s: None,
        ..w
    };
    assert!(matches!(
        run_rtapp(&w, &run),
        Err(RtAppSimError::RunsForever { .. })
    ));
}

#[test]
fn cpus_the_platform_lacks_are_refused() {
    let e = run(r#"{"global": {"duration": 1}, "tasks": {"t": {"cpus": [7], "run": 10}}}"#)
        .unwrap_err();
    assert!(
        matches!(
            e,
            RtAppSimError::NoSuchCpu {
                cpu: 7,
                cores: 2,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn the_measured_loop_time_stretches_a_run() {
    let plat = Platform::by_name("x86-64").unwrap();
    let w = parse(
        r#"{"global": {"duration": 1, "calibration": 20}, "tasks": {
        "t": {"loop": -1, "run": 1000, "timer": {"ref": "unique", "period": 10000}}}}"#,
    )
    .unwrap();
    let mut r = RtAppRun::new(&plat);
    r.loop_ns = Some(30.0);
    let out = run_rtapp(&w, &r).unwrap();
    // 1000 µs of loops calibrated at 20 ns take 1500 µs at 30 ns.
    assert!((share(&out, 0) - 0.15).abs() < 0.01, "{}", share(&out, 0));
}

const LONE_TIMER: &str = r#"{"global": {"duration": 1, "calibration": 20}, "tasks": {
    "t": {"loop": -1, "runtime": 1000, "timer": {"ref": "unique", "period": 10000}}}}"#;

fn lone_timer_with(plat: &Platform, overhead_ns: u64) -> (ThreadSummary, f64) {
    let mut r = RtAppRun::new(plat);
    r.policy.scheduler = Some("eevdf".into());
    r.pass_overhead_ns = overhead_ns;
    let res = run_rtapp(&parse(LONE_TIMER).unwrap(), &r).unwrap();
    let s = ThreadSummary::of(&res.threads[0].records, res.threads[0].cpu_ns);
    (s, share(&res, 0))
}

#[test]
fn late_timer_interrupts_add_their_measured_delay_to_every_wake_up() {
    let on_time = Platform::by_name("x86-64").unwrap();
    let mut late = on_time.clone();
    late.timer.irq_late_min_ns = 20_000;
    late.timer.irq_late_max_ns = 30_000;
    let (a, _) = lone_timer_with(&on_time, 0);
    let (b, _) = lone_timer_with(&late, 0);
    let (a, b) = (a.wakeup_latency_us.unwrap(), b.wakeup_latency_us.unwrap());
    // Every wake-up 20-30 µs later than on time (whole µs, as rt-app logs them).
    assert!(
        b.p50 - a.p50 >= 19.0 && b.p50 - a.p50 <= 31.0,
        "{a:?} {b:?}"
    );
    assert!(
        b.p99 - a.p99 <= 31.0 && b.p99 > b.p50,
        "{b:?}: the delays vary"
    );
    // A profile whose lateness bounds are crossed is refused.
    let mut bad = on_time;
    bad.timer.irq_late_min_ns = 2;
    bad.timer.irq_late_max_ns = 1;
    assert!(bad.with_machine(2, 250, 2000, vec![]).is_err());
}

#[test]
fn each_pass_charges_its_untimed_overhead_to_the_thread() {
    let plat = Platform::by_name("x86-64").unwrap();
    let (a, share_a) = lone_timer_with(&plat, 0);
    let (b, share_b) = lone_timer_with(&plat, 50_000);
    // 50 µs more CPU in every 10 ms period: half a point of a CPU.
    let d = share_b - share_a;
    assert!((d - 0.005).abs() < 0.0005, "{share_a} → {share_b}");
    assert_eq!(a.periods, b.periods);
    // The overhead runs after the wake-up is logged: the latency is unchanged.
    assert_eq!(a.wakeup_latency_us, b.wakeup_latency_us);
}

#[test]
fn a_start_off_the_tick_lets_timers_expire_between_ticks() {
    // A 16 ms timer task beside a hog on one CPU: started on a tick, every expiry coincides
    // with a tick, which runs the timer at once and preempts the hog; started at a random
    // phase, the timer waits for its slack and the woken task sometimes for the next tick.
    let w = parse(
        r#"{"global": {"duration": 3, "calibration": 20}, "tasks": {
        "periodic": {"loop": -1, "cpus": [0], "runtime": 8000, "timer": {"ref": "unique", "period": 16000}},
        "hog": {"loop": -1, "cpus": [0], "run": 100000}}}"#,
    )
    .unwrap();
    let plat = Platform::by_name("x86-64").unwrap();
    let wu = |random: bool, seed: u64| {
        let mut r = RtAppRun::new(&plat);
        r.policy.scheduler = Some("eevdf".into());
        r.random_start_phase = random;
        r.seed = seed;
        let res = run_rtapp(&w, &r).unwrap();
        ThreadSummary::of(&res.threads[0].records, res.threads[0].cpu_ns)
            .wakeup_latency_us
            .unwrap()
    };
    let on_tick = wu(false, 1);
    assert!(on_tick.p50 < 20.0, "{on_tick:?}");
    for seed in 1..=3 {
        let off = wu(true, seed);
        assert!(
            off.p50 >= 50.0,
            "seed {seed}: {off:?}: the slack is waited out"
        );
    }
}

#[test]
fn the_recorded_events_give_each_thread_its_own_timeline() {
    // Two sleepers pinned to different CPUs with different duty cycles: each thread's timeline
    // must be on its CPU alone and account for its CPU time, which holds only if audit tids map
    // to the right threads.
    let plat = Platform::by_name("x86-64").unwrap();
    let mut r = RtAppRun::new(&plat);
    r.policy.scheduler = Some("eevdf".into());
    r.audit = true;
    let w = parse(
        r#"{"global": {"duration": 1, "calibration": 20}, "tasks": {
        "a": {"loop": -1, "cpus": [1], "run": 2000, "sleep": 2000},
        "b": {"loop": -1, "cpus": [0], "run": 1000, "sleep": 3000}}}"#,
    )
    .unwrap();
    let res = run_rtapp(&w, &r).unwrap();
    let log = res.audit.as_ref().expect("asked for");
    let names: Vec<(u32, String)> = res
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (RTAPP_AUDIT_TID_BASE + i as u32, t.name.clone()))
        .collect();
    let t = lull_audit::timeline::Timeline::of(log, &names);
    let p = t.profiles(2);
    assert_eq!(p[0].name, "a-0");
    assert_eq!(p[0].share_per_cpu[0], 0.0);
    assert!(
        (p[0].share_per_cpu[1] - 0.5).abs() < 0.03,
        "{:?}",
        p[0].share_per_cpu
    );
    assert_eq!(p[1].share_per_cpu[1], 0.0);
    assert!(
        (p[1].share_per_cpu[0] - 0.25).abs() < 0.03,
        "{:?}",
        p[1].share_per_cpu
    );
    assert_eq!(p[0].migrations + p[1].migrations, 0);
    // Each blocks and wakes once per pass; nothing preempts them.
    assert!(p[1].stretches >= 240 && p[1].preempted == 0, "{:?}", p[1]);
    assert_eq!(p[1].wakes_per_cpu[1], 0);
    // Without asking, nothing is recorded.
    r.audit = false;
    assert!(run_rtapp(&w, &r).unwrap().audit.is_none());
}

/// Four identical sleepers pinned to one CPU, woken together every millisecond.
const TIED_SLEEPERS: &str = r#"{"global": {"duration": 2, "calibration": 20}, "tasks": {
    "s": {"instance": 4, "loop": -1, "cpus": [0], "runtime": 100,
          "timer": {"ref": "unique", "period": 1000, "mode": "absolute"}}}}"#;

fn tied_sleepers(min_ns: u64, max_ns: u64) -> Vec<(f64, f64, f64)> {
    let plat = Platform::by_name("x86-64").unwrap();
    let mut r = RtAppRun::new(&plat);
    r.policy.scheduler = Some("eevdf".into());
    r.pass_overhead_ns = min_ns;
    r.pass_overhead_max_ns = max_ns;
    let res = run_rtapp(&parse(TIED_SLEEPERS).unwrap(), &r).unwrap();
    (0..4)
        .map(|i| {
            let t = &res.threads[i];
            let l = ThreadSummary::of(&t.records, t.cpu_ns)
                .wakeup_latency_us
                .unwrap();
            (l.p50, l.p99, share(&res, i))
        })
        .collect()
}

#[test]
fn a_varying_pass_cost_lets_identical_threads_take_turns() {
    // A fixed cost: the threads wake in one order every period, so the first never waits for
    // the others (its p99 below the last one's p50).
    let fixed = tied_sleepers(5_000, 0);
    let p99_first = fixed[0].1;
    let p50_last = fixed.iter().map(|f| f.0).fold(0.0, f64::max);
    assert!(p99_first < p50_last, "{fixed:?}");
    // A cost drawn from 0–10 µs (the same mean) reorders them from period to period: each
    // thread sometimes waits behind all the others.
    let varying = tied_sleepers(0, 10_000);
    let p99s: Vec<f64> = varying.iter().map(|f| f.1).collect();
    let lo = p99s.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(lo >= p50_last, "{varying:?}");
    // The mean cost, and so each thread's share, stays.
    for (f, v) in fixed.iter().zip(&varying) {
        assert!((f.2 - v.2).abs() < 0.002, "{fixed:?} {varying:?}");
    }
}

#[test]
fn a_range_at_or_below_the_cost_is_the_fixed_cost() {
    assert_eq!(tied_sleepers(5_000, 0), tied_sleepers(5_000, 5_000));
}
