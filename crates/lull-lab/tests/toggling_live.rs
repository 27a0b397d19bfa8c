//! The live toggling experiment's parts on the real kernel: the capacity thief's share (root:
//! real-time policies need it; skipped with a message otherwise) and a short experiment run
//! (the workload program's own tests are lull-apps' `tests/programs.rs`).

use lull_lab::toggling_live::thief::{Thief, ThiefError, ThiefMethod};
use lull_lab::toggling_live::{self, TogglingSpec, DEFAULT_POLICIES, UNCONTROLLED};
use lull_os::sys;

fn root(what: &str) -> bool {
    if sys::geteuid() == 0 {
        return true;
    }
    lull_testkit::skip(format!("{what} needs root (real-time scheduling)"));
    false
}

fn two_cpus() -> bool {
    let n = sys::sched_getaffinity(std::process::id() as i32)
        .map(|s| s.cpus().count())
        .unwrap_or(0);
    if n >= 2 {
        return true;
    }
    lull_testkit::skip(format!(
        "the thief needs two CPUs (one slowed, one not); this process has {n}"
    ));
    false
}

/// The `lull-work` of this build. `cargo test --workspace` builds it, since lull-apps has
/// integration tests; a lone `cargo test -p lull-lab` needs `cargo build -p lull-apps` first.
fn work() -> std::path::PathBuf {
    lull_lab::toggling_live::default_work_binary().unwrap()
}

/// The tests that start a thief on CPU 1 take turns: two thieves on one CPU would each take
/// less than asked.
static THIEF_CPU: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The turn of a test that runs a thief (`what` names it), or `None`, the skip recorded, where it
/// cannot run: it needs root and two CPUs.
fn thief_turn(what: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    if !root(what) || !two_cpus() {
        return None;
    }
    Some(
        THIEF_CPU
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
}

/// Burns the CPU's share of a busy loop until the thief has run for `wall_ns` of wall time
/// (a fair thread on the thief's CPU, so the thief has someone to take the CPU from).
fn compete_on(cpu: usize, wall_ns: u64) {
    let mut set = sys::CpuSet::empty();
    set.insert(cpu);
    sys::sched_setaffinity(sys::gettid(), &set).unwrap();
    let end = sys::monotonic_ns() + wall_ns;
    let mut x = 1u64;
    while sys::monotonic_ns() < end {
        x = std::hint::black_box(x.wrapping_mul(3));
    }
}

#[test]
fn thief_takes_about_the_share_asked() {
    let Some(_turn) = thief_turn("the capacity thief") else {
        return;
    };
    let thief = Thief::start(1, 50).expect("start the thief");
    let before = thief.snapshot().unwrap();
    // A competitor on the same CPU for half a second: the thief must still take its share.
    std::thread::scope(|s| {
        s.spawn(|| compete_on(1, 500_000_000));
    });
    let share = thief.snapshot().unwrap().share_pct_since(&before).unwrap();
    eprintln!(
        "thief asked 50 %, took {share:.1} % ({:?}, deadline refused: {:?})",
        thief.method(),
        thief.deadline_refused()
    );
    assert!((30.0..=70.0).contains(&share), "thief took {share:.1} %");
    if thief.method() == ThiefMethod::FifoDutyCycle {
        assert!(thief.deadline_refused().is_some());
    }
    let pid = thief.pid();
    drop(thief);
    // Killed and reaped on drop: no child of ours has that pid any more.
    assert!(
        sys::try_reap(pid).is_err(),
        "the thief {pid} was not reaped"
    );
}

#[test]
fn thief_refuses_a_cpu_it_cannot_use() {
    assert!(matches!(
        Thief::start(1000, 50),
        Err(ThiefError::BadCpu { .. })
    ));
}

#[test]
fn a_short_experiment_has_every_row() {
    let Some(_turn) = thief_turn("lull live toggling") else {
        return;
    };
    let mut spec = TogglingSpec::new(work());
    spec.reps = 1;
    spec.work_ms = 5;
    spec.barrier_ms = 1;
    spec.xz_input_bytes = 256 << 10;
    let r = toggling_live::run(&spec).expect("run the experiment");
    let v = serde_json::to_value(&r).unwrap();
    let share = v["thief"]["measured_pct"].as_f64().unwrap();
    assert!((10.0..=90.0).contains(&share), "thief took {share} %");
    assert_eq!(v["slow_cpus"], serde_json::json!([1]));
    let names = ["hash", "barrier"];
    for n in names {
        let w = v["workloads"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == n)
            .unwrap_or_else(|| panic!("no {n} table"));
        let rows: Vec<&str> = w["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["policy"].as_str().unwrap())
            .collect();
        let mut want = vec![UNCONTROLLED];
        want.extend(DEFAULT_POLICIES);
        assert_eq!(rows, want, "{n}");
        for row in w["rows"].as_array().unwrap() {
            assert!(row["completion_s"]["median"].as_f64().unwrap() > 0.0);
            assert!(row["thread_spread_s"].is_number());
        }
    }
    // xz runs when installed, or is listed as skipped with the reason.
    let has_xz = v["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["name"] == "xz");
    let skipped_xz = v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["workload"] == "xz");
    assert!(has_xz != skipped_xz);
}
