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
    let r = run(r#"{"global": {"duration": 1, "calibration": 20}, "tasks": {
        "t": {"loop": -1, "runtime": 1000, "timer": {"ref": "unique", "period": 10000}}}}"#)
    .unwrap();
    let s = ThreadSummary::of(&r.threads[0].records, r.threads[0].cpu_ns);
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
    let r = run(r#"{"global": {"duration": 1, "calibration": 20}, "tasks": {
        "t": {"loop": -1, "runtime": 3000, "timer": {"ref": "unique", "period": 2000}}}}"#)
    .unwrap();
    let s = ThreadSummary::of(&r.threads[0].records, r.threads[0].cpu_ns);
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
