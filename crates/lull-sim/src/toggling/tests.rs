use lull_sched::seam::{Action, Fact, SeamPolicy, ThreadRef, ThreadSample};

use super::*;
use crate::seam::{PROCESS_ID, THREAD_ID_BASE};

/// The spec, or the problem it was refused for.
fn parse(text: &str) -> Result<TogglingSpec, crate::Problem> {
    TogglingSpec::parse(text).map_err(|e| e.problem)
}

use crate::Problem;

const BLACKSCHOLES: &str = include_str!("../../../../experiments/toggling/blackscholes.toml");
const VIPS: &str = include_str!("../../../../experiments/toggling/vips.toml");

fn spec(text: &str, models: &[&str]) -> TogglingSpec {
    let mut s = parse(text).expect("the shipped spec is valid");
    s.models = models
        .iter()
        .map(|m| Scheme::parse(m).expect("known"))
        .collect();
    s
}

fn model<'r>(r: &'r TogglingResult, name: &str) -> &'r ModelRun {
    r.models
        .iter()
        .find(|m| m.model == name)
        .expect("model ran")
}

#[test]
fn the_shipped_specs_parse_as_toggling_specs() {
    for text in [BLACKSCHOLES, VIPS] {
        assert_eq!(
            crate::Spec::parse(text).map(|s| s.kind()),
            Ok(crate::Kind::Toggling)
        );
        let s = parse(text).expect("valid");
        assert_eq!(s.threads, 8);
        assert_eq!(s.models.len(), 7);
        assert_eq!(s.header.platform.name, "odroid-xu3");
    }
    assert!(matches!(
        parse(include_str!("../../../../experiments/vtcfs/hackbench.toml")),
        Err(e) if e == crate::Problem::WrongKind { expected: crate::Kind::Toggling, found: crate::Kind::Hackbench }
    ));
}

#[test]
fn under_the_baseline_blackscholes_threads_on_little_end_last() {
    let r = run_toggling_spec(&spec(BLACKSCHOLES, &["baseline"])).expect("runs");
    let b = model(&r, "baseline");
    // Four threads start on big cores and keep them; the four on LITTLE cores move up only when
    // a big core falls idle, so they end far later.
    assert!(
        b.end_spread_s > 0.3 * b.completion_s,
        "{} of {}",
        b.end_spread_s,
        b.completion_s
    );
    let started_little = |t: &ThreadRun| t.cores.first().is_some_and(|&(_, c)| c < 4);
    let last_big = b
        .threads
        .iter()
        .filter(|t| !started_little(t))
        .filter_map(|t| t.end_s)
        .fold(0.0, f64::max);
    let first_little = b
        .threads
        .iter()
        .filter(|t| started_little(t))
        .filter_map(|t| t.end_s)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(b.threads.iter().filter(|t| started_little(t)).count(), 4);
    assert!(first_little > last_big, "{first_little} vs {last_big}");
}

#[test]
fn the_json_carries_each_threads_core_changes_as_pairs() {
    let r = run_toggling_spec(&spec(BLACKSCHOLES, &["baseline"])).expect("runs");
    let v = serde_json::to_value(&r).expect("serialises");
    let threads = v["models"][0]["threads"].as_array().expect("threads");
    assert_eq!(threads.len(), 8);
    for (th, j) in model(&r, "baseline").threads.iter().zip(threads) {
        assert!(!th.cores.is_empty());
        let pairs: Vec<(f64, usize)> =
            serde_json::from_value(j["cores"].clone()).expect("[t_s, core] pairs");
        assert_eq!(pairs, th.cores);
    }
}

#[test]
fn toggling_every_quarter_second_ends_the_threads_within_one_period_and_sooner() {
    let r = run_toggling_spec(&spec(BLACKSCHOLES, &["baseline", "toggle-0.25s"])).expect("runs");
    let t = model(&r, "toggle-0.25s");
    assert!(t.end_spread_s <= 0.25, "{}", t.end_spread_s);
    assert!(t.speedup_pct > 0.0, "{}", t.speedup_pct);
    // Every active thread sat on both clusters.
    for th in &t.threads {
        assert!(th.cores.iter().any(|&(_, c)| c < 4));
        assert!(th.cores.iter().any(|&(_, c)| c >= 4));
    }
}

#[test]
fn vips_threads_end_together_under_the_baseline() {
    let r = run_toggling_spec(&spec(VIPS, &["baseline"])).expect("runs");
    let b = model(&r, "baseline");
    // The barrier holds every thread to the slowest one's phase: they end within a phase.
    assert!(b.end_spread_s < 0.02, "{}", b.end_spread_s);
    assert!(b.migrations > 100, "{}", b.migrations);
}

#[test]
fn audited_runs_record_every_switch_in_and_report_the_same_figures() {
    let s = spec(BLACKSCHOLES, &["baseline"]);
    let (r, logs) = run_toggling_spec_audited(&s, true).expect("runs");
    assert_eq!(r, run_toggling_spec(&s).expect("runs"));
    assert_eq!(logs.len(), 1);
    let switch_ins = logs[0]
        .1
        .records
        .iter()
        .filter(|x| x.kind == lull_audit::AuditEventKind::SwitchIn)
        .count();
    assert!(switch_ins >= 8, "{switch_ins}");
}

#[test]
fn the_same_seed_gives_the_same_results() {
    let s = spec(VIPS, &["baseline", "equalise"]);
    assert_eq!(
        run_toggling_spec(&s).expect("runs"),
        run_toggling_spec(&s).expect("runs")
    );
}

/// Moves thread 0 to CPU `to` at its first deadline and notes where it is one step later.
#[derive(Debug, Default)]
struct MoveOnce {
    to: usize,
    deadlines: Vec<u64>,
    seen: Vec<(usize, bool)>,
}

const T0: ThreadRef = ThreadRef {
    pid: PROCESS_ID,
    tid: THREAD_ID_BASE,
    process_start_ticks: 0,
};

impl SeamPolicy for MoveOnce {
    fn name(&self) -> &'static str {
        "move-once"
    }
    fn on_fact(&mut self, _: u64, _: &Fact, _: &mut Vec<Action>) {}
    fn next_deadline_ns(&self) -> Option<u64> {
        self.deadlines.first().copied()
    }
    fn on_deadline(
        &mut self,
        _now: u64,
        usage: &mut dyn FnMut(ThreadRef) -> Option<ThreadSample>,
        out: &mut Vec<Action>,
    ) {
        self.deadlines.remove(0);
        let s = usage(T0).expect("thread 0 runs");
        self.seen.push((s.cpu.0, s.work_ns < s.cpu_ns));
        if self.seen.len() == 1 {
            out.push(Action::Affinity {
                thread: T0,
                cpus: CpuMask::of(&[CpuId(self.to)]),
            });
        }
    }
}

#[test]
fn an_affinity_action_moves_a_running_thread_at_once() {
    let s = spec(BLACKSCHOLES, &["baseline"]);
    let sets = core_sets(&s.header.platform);
    // One thread: it starts on a big core (HMP places a new task on an idle big CPU).
    let policy = MoveOnce {
        to: 1,
        deadlines: vec![20_000_000, 20_500_000],
        seen: Vec::new(),
    };
    let machine = Machine {
        all_clusters: true,
        placement: Some(Box::new(Hmp::new(sets.fast))),
        seam: Some(SeamDriver::new(Box::new(policy))),
        audit: false,
    };
    let khz = s.header.platform.top_work_khz();
    let (user, d) = drive_on(
        &s.header.platform,
        &s.policy,
        machine,
        1,
        NS_PER_S,
        true,
        |k, _| Program::new(k, 1, 100 * khz, 0, cycles_in_us(STEP_US, khz), 64),
    )
    .expect("runs");
    let seam = d.seam.expect("a seam driver ran");
    assert_eq!(seam.0.affinity_applied, 1);
    assert_eq!(seam.0.deadlines, 2);
    // Within half a millisecond it runs on CPU 1 (a LITTLE core), not at its next wakeup (it
    // never sleeps).
    let trace = &user.workers[0].trace;
    assert!(trace[0].1 >= 4, "{trace:?}");
    assert!(
        trace
            .iter()
            .any(|&(at, c)| c == 1 && (20_000_000..20_000_000 + 3_000_000).contains(&at)),
        "{trace:?}"
    );
    assert_eq!(d.migrations[0], 1);
}

#[test]
fn bad_specs_get_typed_errors() {
    let bad = |from: &str, to: &str| parse(&BLACKSCHOLES.replace(from, to));
    assert!(matches!(
        bad("\"equalise\"]", "\"shuffle\"]"),
        Err(Problem::UnknownModel { .. })
    ));
    // Periods below one sampling period (10 ms) are refused.
    assert!(matches!(
        bad("\"toggle-0.5s\"", "\"toggle-0.001s\""),
        Err(Problem::UnknownModel { .. })
    ));
    assert!(matches!(
        bad("platform = \"odroid-xu3\"", "platform = \"odroid\""),
        Err(Problem::UnknownPlatform(_))
    ));
    assert!(matches!(
        bad("work_ms = 1500", "work_ms = -3"),
        Err(Problem::Syntax(_))
    ));
    // Each edit (from, to) is refused naming the field.
    for (from, to, field) in [
        ("\"toggle-0.5s\"", "\"toggle-0.25s\"", "models"),
        ("models = [\"baseline\", ", "models = [", "models"),
        (
            "platform = \"odroid-xu3\"",
            "platform = \"galaxy-s4\"",
            "platform",
        ),
        ("threads = 8", "threads = 0", "threads"),
        (
            "threads = 8",
            "threads = 8\nbarrier_every_us = 5",
            "barrier_every_us",
        ),
        (
            "governor = \"performance\"",
            "governor = \"ondemand\"",
            "policy.governor",
        ),
        (
            "governor = \"performance\"",
            "placement = \"wake-idle\"",
            "policy.placement",
        ),
    ] {
        let got = bad(from, to);
        assert!(
            matches!(got, Err(Problem::Invalid { field: f, .. }) if f == field),
            "{to}: {got:?}"
        );
    }
}
