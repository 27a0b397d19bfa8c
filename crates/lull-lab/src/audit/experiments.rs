//! Seed 002 chapter 3 on this machine: validation (§3.1) and throughput perturbation (§3.2),
//! plus the two-phase TLP check of the audit issue.

use lull_model::stats::{change_pct, median};
use std::collections::HashSet;
use std::time::Duration;

use lull_audit::log::decode;
use lull_audit::tlp::{self, TaskFilter, DEFAULT_WINDOW_NS};
use lull_os::sys::monotonic_ns;
use serde::Serialize;

use super::recorder::{
    pin_to_cpu, Affinity, Extraction, Recorder, RecorderConfig, RecordingSummary,
};
use super::workload::{append_path, matmul_once, run_all, ChildRun, Matrices, Priority, Workload};
use super::AuditError;

/// Seed 002's validation goal: log and getrusage agree within 0.5 %.
pub const VALIDATION_GOAL_PCT: f64 = 0.5;
/// The CPU benchmarks and the extraction thread share in the perturbation runs, as on seed 002's
/// single-core phone.
pub const BENCH_CPU: usize = 0;
/// Where the experiment's own thread waits, away from the benchmark CPU.
pub const PARENT_CPU: usize = 1;

/// Calibrates matrix products to last about `ms` on this machine.
pub fn matmul_reps_for(ms: u64) -> u32 {
    let mut m = Matrices::default();
    matmul_once(&mut m);
    let t0 = monotonic_ns();
    let probe = 20;
    for _ in 0..probe {
        matmul_once(&mut m);
    }
    let per = (monotonic_ns() - t0).max(1) / probe;
    ((ms * 1_000_000) / per).clamp(1, u64::from(u32::MAX)) as u32
}

// ---------------------------------------------------------------------------------------------
// Validation

/// Validation settings.
#[derive(Debug, Clone)]
pub struct ValidationConfig {
    /// Length of one matrix-multiply child alone.
    pub run_ms: u64,
    pub repeats: u32,
    pub extraction: Duration,
}

impl Default for ValidationConfig {
    fn default() -> Self {
        ValidationConfig {
            run_ms: 2000,
            repeats: 3,
            extraction: Duration::from_secs(1),
        }
    }
}

/// One validation run.
#[derive(Debug, Clone, Serialize)]
pub struct ValidationRun {
    /// "single" (one matrixMultiply) or "two" (two at once on one CPU).
    pub experiment: &'static str,
    pub repeat: u32,
    pub tasks: usize,
    pub elapsed_s: f64,
    /// getrusage of the children: user, system, and their sum.
    pub user_s_rusage: f64,
    pub system_s_rusage: f64,
    pub cpu_s_rusage: f64,
    /// Execution time summed from the log (last `exec_ns` of each child).
    pub exec_s_log: f64,
    /// (log − getrusage user+system) / getrusage × 100.
    pub diff_pct: f64,
    /// (log − getrusage user) / getrusage user × 100: the seed's user-only comparison.
    pub user_diff_pct: f64,
    pub switches_log: u64,
    pub switches_rusage: u64,
    pub records: u64,
    pub kernel_lost: u64,
    pub overwritten: u64,
}

/// The validation table.
#[derive(Debug, Clone, Serialize)]
pub struct ValidationReport {
    pub matmul_reps: u32,
    pub runs: Vec<ValidationRun>,
    pub max_abs_diff_pct: f64,
    pub goal_pct: f64,
    pub within_goal: bool,
}

/// The children's execution time and switches as the log holds them (each child's last record).
fn log_exec_and_switches(bytes: &[u8], pids: &[u32]) -> Result<(u64, u64), AuditError> {
    let log = decode(bytes)?;
    let mut exec = 0u64;
    let mut sw = 0u64;
    for &p in pids {
        let mine = log.records.iter().filter(|r| r.tid == p);
        exec += mine.clone().map(|r| r.exec_ns).max().unwrap_or(0);
        sw += mine.map(|r| u64::from(r.switches)).max().unwrap_or(0);
    }
    Ok((exec, sw))
}

/// Runs seed 002 §3.1: one matrixMultiply child, then two at once (both on CPU 0, so they
/// compete as on the seed's single core), each under the recorder; compares the execution time
/// the log holds with getrusage.
pub fn validate(cfg: &ValidationConfig) -> Result<ValidationReport, AuditError> {
    lull_os::tracefs::available()?;
    let reps = matmul_reps_for(cfg.run_ms);
    let mut m = Matrices::default();
    let mut runs = Vec::new();
    for repeat in 0..cfg.repeats {
        for (experiment, n) in [("single", 1usize), ("two", 2)] {
            let rc = RecorderConfig {
                extraction: Extraction::Every(cfg.extraction),
                ..RecorderConfig::default()
            };
            let rec = Recorder::start(rc, Vec::new())?;
            let ws: Vec<_> = (0..n)
                .map(|_| (Workload::MatMul { reps }, Some(BENCH_CPU)))
                .collect();
            let res = run_all(&ws, &mut m, None);
            let (bytes, summary) = rec.stop()?;
            let (children, elapsed_ns) = res.map_err(AuditError::Child)?;
            let pids: Vec<u32> = children.iter().map(|c| c.pid).collect();
            let (exec_ns, switches_log) = log_exec_and_switches(&bytes, &pids)?;
            let user: u64 = children.iter().map(|c| c.utime_ns).sum();
            let sys: u64 = children.iter().map(|c| c.stime_ns).sum();
            let cpu = user + sys;
            runs.push(ValidationRun {
                experiment,
                repeat,
                tasks: n,
                elapsed_s: elapsed_ns as f64 / 1e9,
                user_s_rusage: user as f64 / 1e9,
                system_s_rusage: sys as f64 / 1e9,
                cpu_s_rusage: cpu as f64 / 1e9,
                exec_s_log: exec_ns as f64 / 1e9,
                diff_pct: pct(exec_ns as f64, cpu as f64),
                user_diff_pct: pct(exec_ns as f64, user as f64),
                switches_log,
                switches_rusage: children.iter().map(|c| c.nvcsw + c.nivcsw).sum(),
                records: summary.records,
                kernel_lost: summary.kernel_lost,
                overwritten: summary.overwritten,
            });
        }
    }
    let max_abs_diff_pct = runs.iter().map(|r| r.diff_pct.abs()).fold(0.0, f64::max);
    Ok(ValidationReport {
        matmul_reps: reps,
        runs,
        max_abs_diff_pct,
        goal_pct: VALIDATION_GOAL_PCT,
        within_goal: max_abs_diff_pct <= VALIDATION_GOAL_PCT,
    })
}

/// [`change_pct`] from `base` to `new`, 0 where `base` is zero (an empty run).
fn pct(new: f64, base: f64) -> f64 {
    change_pct(base, new).unwrap_or(0.0)
}

// ---------------------------------------------------------------------------------------------
// Perturbation

/// A recorder condition of seed 002 §3.2.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    /// No tracepoints on (BASE).
    Off,
    /// Logging without extraction (NoEx).
    NoEx,
    /// Extraction every so many milliseconds (SEC1 = 1000).
    EveryMs(u64),
    /// Extraction without delay (CONT), a busy loop like the seed's.
    Continuous,
    /// Extraction as soon as the kernel reports data (poll).
    Poll,
}

impl Condition {
    pub fn label(&self) -> String {
        match self {
            Condition::Off => "off".into(),
            Condition::NoEx => "noex".into(),
            Condition::EveryMs(ms) => format!("every {}s", *ms as f64 / 1000.0),
            Condition::Continuous => "cont (spin)".into(),
            Condition::Poll => "cont (poll)".into(),
        }
    }
}

/// The conditions of seed 002 §3.2.2–3.2.3.
pub const CONDITIONS: [Condition; 8] = [
    Condition::Off,
    Condition::NoEx,
    Condition::EveryMs(1000),
    Condition::EveryMs(500),
    Condition::EveryMs(250),
    Condition::EveryMs(100),
    Condition::Continuous,
    Condition::Poll,
];

/// The command-line names of [`CONDITIONS`], in the same order.
pub const CONDITION_NAMES: [&str; 8] = [
    "off",
    "noex",
    "every-1s",
    "every-0.5s",
    "every-0.25s",
    "every-0.1s",
    "spin",
    "poll",
];

impl Condition {
    /// The condition of a [`CONDITION_NAMES`] entry.
    pub fn from_name(name: &str) -> Option<Self> {
        CONDITION_NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| CONDITIONS[i])
    }
}

/// The benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Benchmark {
    /// Matrix multiply: compute-bound, few system calls.
    Compute,
    /// Single-byte appends to a file.
    Io,
    /// Pipe ping-pong between two processes on one CPU: scheduler-event-bound; gives the cost
    /// per recorded event.
    Sched,
}

impl Benchmark {
    pub const ALL: [Benchmark; 3] = [Benchmark::Compute, Benchmark::Io, Benchmark::Sched];
    /// The command-line (and JSON) name.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::Compute => "compute",
            Benchmark::Io => "io",
            Benchmark::Sched => "sched",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.name() == name)
    }
}

/// Perturbation settings.
#[derive(Debug, Clone)]
pub struct PerturbationConfig {
    /// Target length of one benchmark run with the recorder off.
    pub run_ms: u64,
    pub repeats: u32,
    pub benchmarks: Vec<Benchmark>,
    pub conditions: Vec<Condition>,
    /// tracefs trace clock of the recorder.
    pub trace_clock: String,
    /// Fixed work per run; `None` calibrates to `run_ms` with the recorder off.
    pub sizes: Option<WorkSizes>,
}

impl Default for PerturbationConfig {
    fn default() -> Self {
        PerturbationConfig {
            run_ms: 1000,
            repeats: 3,
            benchmarks: Benchmark::ALL.to_vec(),
            conditions: CONDITIONS.to_vec(),
            trace_clock: lull_os::tracefs::DEFAULT_TRACE_CLOCK.to_owned(),
            sizes: None,
        }
    }
}

/// One (benchmark, condition) row.
#[derive(Debug, Clone, Serialize)]
pub struct PerturbationRow {
    pub benchmark: Benchmark,
    pub condition: String,
    pub runs_s: Vec<f64>,
    pub mean_s: f64,
    /// Largest deviation of a run from the mean, % (as seed 002's tables).
    pub max_dev_pct: f64,
    pub min_s: f64,
    pub median_s: f64,
    /// Mean against the "off" mean, %.
    pub slowdown_pct: f64,
    /// Fastest run against the fastest "off" run, % (less sensitive to other load).
    pub slowdown_min_pct: f64,
    /// Median against the "off" median, %.
    pub slowdown_median_pct: f64,
    /// Raw tracepoint events the kernel wrote per run (mean over repeats).
    pub kernel_events: f64,
    pub records: f64,
    pub kernel_lost: f64,
    pub extraction_cpu_ms: f64,
    /// (mean − off mean) / kernel events: the cost of one recorded event, ns.
    pub overhead_ns_per_event: Option<f64>,
}

/// The perturbation table.
#[derive(Debug, Clone, Serialize)]
pub struct PerturbationReport {
    pub trace_clock: String,
    pub sizes: WorkSizes,
    pub run_ms: u64,
    pub repeats: u32,
    pub bench_cpu: usize,
    pub rows: Vec<PerturbationRow>,
}

/// Work per benchmark run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WorkSizes {
    pub matmul_reps: u32,
    pub append_count: u64,
    pub pingpong_rounds: u64,
}

fn workload(b: Benchmark, s: &WorkSizes, path: &std::ffi::CString) -> Workload {
    match b {
        Benchmark::Compute => Workload::MatMul {
            reps: s.matmul_reps,
        },
        Benchmark::Io => Workload::Append {
            path: path.clone(),
            count: s.append_count,
        },
        Benchmark::Sched => Workload::PingPong {
            rounds: s.pingpong_rounds,
        },
    }
}

/// Nice value of benchmark and extraction thread in the perturbation runs: the same for both so
/// they share CPU 0 as equals (as the seed's benchmark and extraction daemon did), and the
/// highest fair priority so other load on the machine disturbs the timings little.
pub const PERTURBATION_NICE: i32 = -20;

fn timed(w: &Workload, m: &mut Matrices) -> Result<u64, AuditError> {
    let (_, ns) = run_all(
        &[(w.clone(), Some(BENCH_CPU))],
        m,
        Some(Priority::Nice(PERTURBATION_NICE)),
    )
    .map_err(AuditError::Child)?;
    Ok(ns)
}

/// Probes per calibration; the fastest counts, as the least disturbed by other load.
const CALIBRATION_PROBES: usize = 3;

/// Scales `probe` units of work, timed in a child like the real runs, to `run_ms`.
fn scale(
    run_ms: u64,
    probe: u64,
    make: &dyn Fn(u64) -> Workload,
    m: &mut Matrices,
) -> Result<u64, AuditError> {
    let mut best = u64::MAX;
    for _ in 0..CALIBRATION_PROBES {
        best = best.min(timed(&make(probe), m)?.max(1));
    }
    Ok(
        (u128::from(probe) * u128::from(run_ms) * 1_000_000 / u128::from(best))
            .clamp(1, u128::from(u32::MAX)) as u64,
    )
}

fn calibrate(
    run_ms: u64,
    path: &std::ffi::CString,
    m: &mut Matrices,
) -> Result<WorkSizes, AuditError> {
    let matmul_reps = scale(run_ms, 200, &|n| Workload::MatMul { reps: n as u32 }, m)? as u32;
    let append_count = scale(
        run_ms,
        200_000,
        &|n| Workload::Append {
            path: path.clone(),
            count: n,
        },
        m,
    )?;
    let pingpong_rounds = scale(run_ms, 20_000, &|n| Workload::PingPong { rounds: n }, m)?;
    Ok(WorkSizes {
        matmul_reps,
        append_count,
        pingpong_rounds,
    })
}

struct Sample {
    elapsed_ns: u64,
    summary: Option<RecordingSummary>,
}

fn run_condition(
    c: Condition,
    w: &Workload,
    m: &mut Matrices,
    out_path: &std::path::Path,
    trace_clock: &str,
) -> Result<Sample, AuditError> {
    let extraction = match c {
        Condition::Off => {
            return Ok(Sample {
                elapsed_ns: timed(w, m)?,
                summary: None,
            });
        }
        Condition::NoEx => Extraction::Never,
        Condition::EveryMs(ms) => Extraction::Every(Duration::from_millis(ms)),
        Condition::Continuous => Extraction::Continuous,
        Condition::Poll => Extraction::Poll,
    };
    // A scratch log in a shared directory: written to an unpredictable `O_EXCL | O_NOFOLLOW`
    // temporary beside `out_path` (so a planted symlink is never followed), never committed,
    // and removed when the recorder hands it back and it is dropped.
    let file = lull_os::fileout::AtomicFile::create(out_path)
        .map_err(|e| AuditError::Write(std::io::Error::other(e.to_string())))?;
    let rc = RecorderConfig {
        extraction,
        pin_cpu: Some(BENCH_CPU),
        nice: Some(PERTURBATION_NICE),
        trace_clock: trace_clock.to_owned(),
        ..RecorderConfig::default()
    };
    let rec = Recorder::start(rc, file)?;
    let res = timed(w, m);
    let (_, summary) = rec.stop()?;
    Ok(Sample {
        elapsed_ns: res?,
        summary: Some(summary),
    })
}

/// Runs seed 002 §3.2 on CPU 0: every benchmark under every condition, `repeats` times,
/// conditions interleaved within each repeat so slow drifts of the machine spread over all.
pub fn perturbation(cfg: &PerturbationConfig) -> Result<PerturbationReport, AuditError> {
    lull_os::tracefs::available()?;
    // Private scratch space for the append file and the scratch audit log, removed (with
    // whatever a failed run left in it) on every return.
    let scratch =
        lull_os::fileout::ScratchDir::new("lull-audit-perturbation").map_err(AuditError::Write)?;
    let dir = scratch.path();
    let (append_file, path) = append_path(dir).map_err(AuditError::Write)?;
    let log_path = dir.join(format!(
        "lull-audit-perturbation-{}.log",
        std::process::id()
    ));
    let mut m = Matrices::default();
    // The parent's own thread stays off the benchmark CPU while it waits (restored below).
    let saved = Affinity::current().ok();
    let _ = pin_to_cpu(PARENT_CPU);
    let sized = match cfg.sizes {
        Some(s) => Ok(s),
        None => calibrate(cfg.run_ms, &path, &mut m),
    };
    let sized = match sized {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(&append_file);
            if let Some(a) = saved {
                let _ = a.restore();
            }
            return Err(e);
        }
    };
    let mut samples: Vec<Vec<Vec<Sample>>> = cfg
        .benchmarks
        .iter()
        .map(|_| cfg.conditions.iter().map(|_| Vec::new()).collect())
        .collect();
    let mut failure = None;
    'outer: for _ in 0..cfg.repeats {
        for (bi, &b) in cfg.benchmarks.iter().enumerate() {
            let w = workload(b, &sized, &path);
            for (ci, &c) in cfg.conditions.iter().enumerate() {
                match run_condition(c, &w, &mut m, &log_path, &cfg.trace_clock) {
                    Ok(s) => samples[bi][ci].push(s),
                    Err(e) => {
                        failure = Some(e);
                        break 'outer;
                    }
                }
            }
        }
    }
    let _ = std::fs::remove_file(&append_file);
    let _ = std::fs::remove_file(&log_path);
    if let Some(a) = saved {
        let _ = a.restore();
    }
    if let Some(e) = failure {
        return Err(e);
    }
    let mut rows = Vec::new();
    for (bi, &b) in cfg.benchmarks.iter().enumerate() {
        let off_idx = cfg.conditions.iter().position(|c| *c == Condition::Off);
        let stats = |ci: usize| {
            let v: Vec<f64> = samples[bi][ci]
                .iter()
                .map(|s| s.elapsed_ns as f64 / 1e9)
                .collect();
            let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let med = median(&v).unwrap_or(f64::NAN);
            (v, mean, min, med)
        };
        let (off_mean, off_min, off_median) = off_idx.map_or((f64::NAN, f64::NAN, f64::NAN), |i| {
            let (_, mean, min, med) = stats(i);
            (mean, min, med)
        });
        for (ci, c) in cfg.conditions.iter().enumerate() {
            let (v, mean, min, med) = stats(ci);
            let ss = &samples[bi][ci];
            let n = ss.len().max(1) as f64;
            // From +0.0: `sum` of no values (the "off" rows have no recording) is −0.0.
            let avg = |f: &dyn Fn(&RecordingSummary) -> f64| {
                ss.iter()
                    .filter_map(|s| s.summary.as_ref())
                    .map(f)
                    .fold(0.0, |acc, x| acc + x)
                    / n
            };
            let kernel_events = avg(&|s| s.kernel_events_written as f64);
            let overhead = if *c != Condition::Off && kernel_events > 0.0 && b == Benchmark::Sched {
                Some((mean - off_mean) * 1e9 / kernel_events)
            } else {
                None
            };
            rows.push(PerturbationRow {
                benchmark: b,
                condition: c.label(),
                max_dev_pct: v
                    .iter()
                    .map(|x| ((x - mean) / mean * 100.0).abs())
                    .fold(0.0, f64::max),
                runs_s: v,
                mean_s: mean,
                min_s: min,
                median_s: med,
                slowdown_pct: pct(mean, off_mean),
                slowdown_min_pct: pct(min, off_min),
                slowdown_median_pct: pct(med, off_median),
                kernel_events,
                records: avg(&|s| s.records as f64),
                kernel_lost: avg(&|s| s.kernel_lost as f64),
                extraction_cpu_ms: avg(&|s| s.extraction_cpu_ns as f64 / 1e6),
                overhead_ns_per_event: overhead,
            });
        }
    }
    Ok(PerturbationReport {
        sizes: sized,
        trace_clock: cfg.trace_clock.clone(),
        run_ms: cfg.run_ms,
        repeats: cfg.repeats,
        bench_cpu: BENCH_CPU,
        rows,
    })
}

// ---------------------------------------------------------------------------------------------
// Two-phase TLP

/// The two-phase TLP run: two busy processes on the two CPUs for `phase_ms`, then one for
/// another `phase_ms`; TLP over the busy time should be near 1.5.
#[derive(Debug, Clone, Serialize)]
pub struct TwoPhaseReport {
    pub phase_ms: u64,
    pub pids: Vec<u32>,
    pub report: tlp::TlpReport,
    pub recording: RecordingSummary,
}

/// Nice value of the busy children: the highest fair priority, so other load on the machine
/// Nice value of the busy children: the highest fair priority, so other fair load barely
/// time-slices them (root only). SCHED_FIFO was tried and measured worse here (TLP 1.33–1.46
/// against 1.44–1.48): real-time throttling idles both CPUs for part of every second.
const BUSY_NICE: i32 = -20;

/// Runs the two-phase TLP experiment (needs two CPUs).
pub fn two_phase_tlp(phase_ms: u64) -> Result<TwoPhaseReport, AuditError> {
    lull_os::tracefs::available()?;
    let rc = RecorderConfig {
        extraction: Extraction::Every(Duration::from_millis(250)),
        ..RecorderConfig::default()
    };
    let rec = Recorder::start(rc, Vec::new())?;
    let cpus = lull_audit_cpus();
    let t0 = monotonic_ns();
    let end1 = t0 + phase_ms * 1_000_000;
    let end2 = end1 + phase_ms * 1_000_000;
    let mut m = Matrices::default();
    let second_cpu = if cpus > 1 { 1 } else { 0 };
    let res = run_all(
        &[
            (Workload::Spin { until_ns: end2 }, Some(0)),
            (Workload::Spin { until_ns: end1 }, Some(second_cpu)),
        ],
        &mut m,
        Some(Priority::Nice(BUSY_NICE)),
    );
    let (bytes, recording) = rec.stop()?;
    let (children, _): (Vec<ChildRun>, u64) = res.map_err(AuditError::Child)?;
    let log = decode(&bytes)?;
    let pids: Vec<u32> = children.iter().map(|c| c.pid).collect();
    let filter = TaskFilter {
        tids: pids.iter().copied().collect::<HashSet<_>>(),
        ..TaskFilter::default()
    };
    let report = tlp::analyze_log(&log, &filter, DEFAULT_WINDOW_NS);
    Ok(TwoPhaseReport {
        phase_ms,
        pids,
        report,
        recording,
    })
}

fn lull_audit_cpus() -> usize {
    lull_os::tracefs::tracefs_root()
        .map(|r| lull_os::tracefs::cpu_count(&r))
        .unwrap_or(1)
}
