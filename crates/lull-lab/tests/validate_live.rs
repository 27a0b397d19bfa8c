//! A tiny workload on the real kernel through rt-app: every thread is found, measured and
//! logged. Skipped, with the reason printed, without rt-app or with fewer than 2 online CPUs.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use lull_lab::validate::{machine, probe, run_live, LiveOptions};
use lull_workload::rtapp::parse;

/// Live runs measure the kernel sharing the CPUs among one workload's threads, so the tests here
/// take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// rt-app and 2 online CPUs, or the reason to skip.
fn live_machine() -> Result<PathBuf, String> {
    let rt_app = lull_lab::validate::find_rt_app().map_err(|e| e.to_string())?;
    let cpus = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| machine::parse_cpu_list(&s))
        .map_or(0, |c| c.len());
    if cpus < 2 {
        return Err(format!("{cpus} online CPU(s); the tests need 2"));
    }
    Ok(rt_app)
}

/// rt-app and this test's turn on the machine; `None` (printed `SKIPPED`) without rt-app or 2
/// online CPUs.
fn live_turn() -> Option<(PathBuf, MutexGuard<'static, ()>)> {
    match live_machine() {
        Ok(rt_app) => Some((
            rt_app,
            ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner()),
        )),
        Err(why) => {
            lull_testkit::skip(&why);
            None
        }
    }
}

/// A shipped validation workload cut to 2 s, this machine's simulator profile and live options.
struct Shipped {
    path: PathBuf,
    w: lull_workload::rtapp::RtApp,
    profile: lull_lab::validate::compare::SimProfile,
    opts: LiveOptions,
}

fn shipped(name: &str, rt_app: PathBuf) -> Shipped {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../experiments/validation/{name}.json"));
    let mut w = parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    w.duration_s = Some(2);
    Shipped {
        path,
        w,
        profile: lull_lab::validate::compare::SimProfile::of(&probe()).unwrap(),
        opts: LiveOptions {
            rt_app: Some(rt_app),
            ..LiveOptions::default()
        },
    }
}

/// One CPU hog and one periodic task for a second: on 2 CPUs the hog has a CPU nearly alone.
const WORKLOAD: &str = r#"{
  "global": {"duration": 1, "calibration": 20},
  "tasks": {
    "hog": {"loop": -1, "run": 100000},
    "periodic": {"loop": -1, "runtime": 2000, "timer": {"ref": "tick", "period": 8000}}
  }
}"#;

#[test]
fn validate_live_runs_a_tiny_workload() {
    let Some((rt_app, _turn)) = live_turn() else {
        return;
    };
    let workload = parse(WORKLOAD).unwrap();
    let opts = LiveOptions {
        rt_app: Some(rt_app),
        ..LiveOptions::default()
    };
    let run = run_live(&workload, &opts).unwrap();
    eprintln!("window {:.1} ms", run.window_ms);
    for t in &run.threads {
        eprintln!(
            "{} tid {} share {:.3} cpu {:.1} ms periods {} {:?}",
            t.thread.name, t.tid, t.cpu_share, t.cpu_ms, t.summary.periods, t.summary
        );
    }
    let names: Vec<&str> = run.threads.iter().map(|t| t.thread.name.as_str()).collect();
    assert_eq!(names, ["hog-0", "periodic-1"]);
    assert_eq!(run.duration_s, 1);
    assert!(run.window_ms > 0.0);
    let (hog, periodic) = (&run.threads[0], &run.threads[1]);
    // The hog runs whenever it can, the periodic task 2 ms in 8: whatever else loads the
    // machine, the hog gets the larger share (alone, about 1 against 0.25).
    assert!(
        hog.cpu_share > periodic.cpu_share,
        "hog share {}, periodic {}",
        hog.cpu_share,
        periodic.cpu_share
    );
    for t in &run.threads {
        assert!(t.cpu_share >= 0.0 && t.cpu_share <= 1.01, "{}", t.cpu_share);
        assert!(t.cpu_ms > 0.0);
        assert!(t.summary.periods > 0, "{} logged no period", t.thread.name);
        assert_eq!(t.summary.periods, t.records.len() as u64);
        assert!(t.records.iter().all(|r| r.index == t.thread.index));
        assert!(t.records.iter().all(|r| r.period_us > 0));
    }
    assert!(periodic.summary.wakeup_latency_us.is_some());
    assert_ne!(hog.tid, periodic.tid);
}

#[test]
fn validate_probe_describes_this_machine() {
    let Some((_, _turn)) = live_turn() else {
        return;
    };
    let m = probe();
    eprintln!("{m}");
    assert!(m.cpu_count() >= 2);
    assert!(m.base_slice_ns.value > 0);
    assert!(m.rt_app.is_ok());
    let loop_ns = m.loop_ns.as_ref().unwrap().value;
    assert!(loop_ns > 0.0 && loop_ns.is_finite(), "{loop_ns}");
    let lat = m.idle_timer_latency_us.as_ref().unwrap().value;
    assert!(lat >= 0.0 && lat.is_finite(), "{lat}");
}

/// The shipped two-hogs workload, both ways, shortened to 2 s: the kernel's weights split CPU 0
/// 75/25 and the simulator's must too. Other tests may share the machine, so the check is on the
/// ratio of the two shares (a generous 25 %), not on the absolute shares; the differences in
/// percentage points are printed.
#[test]
fn the_simulator_shares_a_cpu_by_nice_as_the_kernel_does() {
    use lull_lab::validate::compare::compare;
    let Some((rt_app, _turn)) = live_turn() else {
        return;
    };
    let s = shipped("two-hogs-nice", rt_app);
    let c = compare(&s.path, &s.w, &s.profile, &s.opts, 1).unwrap();
    assert_eq!(c.threads.len(), 2);
    for t in &c.threads {
        eprintln!(
            "{}: live {:.3}, sim {:.3} ({:+.1} pp)",
            t.name,
            t.live.cpu_share,
            t.sim.cpu_share,
            t.cpu_diff_pp()
        );
        assert!(t.live.cpu_share > 0.0 && t.sim.cpu_share > 0.0);
    }
    let ratio = |a: f64, b: f64| a / b;
    let live = ratio(c.threads[0].live.cpu_share, c.threads[1].live.cpu_share);
    let sim = ratio(c.threads[0].sim.cpu_share, c.threads[1].sim.cpu_share);
    assert!(
        (live / sim - 1.0).abs() < 0.25,
        "nice 0 : nice 5 share ratio live {live:.2}, simulated {sim:.2}"
    );
}

/// The validation's noise-aware rule on one short workload (`periodic-1ms-vs-hog` cut to 2 s,
/// three live runs): the simulated ratio of the periodic task's CPU share to the hog's must lie
/// inside the live runs' range of that ratio or within 50 % of their median. A ratio of two
/// threads of one run is what other load on the machine changes least; the absolute shares and
/// the per-thread verdicts are what `lull validate kernel --runs N` reports.
#[test]
fn the_simulator_is_within_the_kernels_noise_on_a_short_workload() {
    use lull_lab::validate::compare::{combine, simulate, Range};
    let Some((rt_app, _turn)) = live_turn() else {
        return;
    };
    let s = shipped("periodic-1ms-vs-hog", rt_app);
    let live: Vec<_> = (0..3).map(|_| run_live(&s.w, &s.opts).unwrap()).collect();
    let sim = simulate("periodic-1ms-vs-hog", &s.w, &s.profile, 1).unwrap();
    let c = combine(&s.path, &live, &sim).unwrap();
    assert_eq!(c.runs, 3);
    let names: Vec<&str> = c.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["periodic-0", "hog-1"]);
    let (periodic, hog) = (&c.threads[0], &c.threads[1]);
    assert_eq!(periodic.spread.runs.len(), 3);
    let ratios: Vec<f64> = periodic
        .spread
        .runs
        .iter()
        .zip(&hog.spread.runs)
        .map(|(p, h)| p.cpu_share / h.cpu_share)
        .collect();
    let live_ratio = Range::of(&ratios).unwrap();
    let sim_ratio = periodic.sim.cpu_share / hog.sim.cpu_share;
    eprintln!(
        "periodic : hog share ratio live {:.3} [{:.3}–{:.3}], simulated {sim_ratio:.3}; \
         shares: periodic live {:.3} sim {:.3}, hog live {:.3} sim {:.3}",
        live_ratio.median,
        live_ratio.min,
        live_ratio.max,
        periodic.live.cpu_share,
        periodic.sim.cpu_share,
        hog.live.cpu_share,
        hog.sim.cpu_share
    );
    assert!(
        live_ratio.contains(sim_ratio) || (sim_ratio / live_ratio.median - 1.0).abs() <= 0.5,
        "simulated ratio {sim_ratio:.3} outside the live range {live_ratio:?} and 50 % of its median"
    );
    // The periodic task woke from its timer in every run and in the simulator.
    assert!(periodic.spread.wakeup_p50_us.is_some() && periodic.sim.wakeup_p50_us.is_some());
}
