//! `lull live toggling`: seed 004's scheduling schemes (§3, figures 3.1–3.9) live on this
//! machine, which has no big and LITTLE cores — so one is made: a [`thief`] takes a set share of
//! one CPU with a real-time duty cycle, leaving that CPU slower for fair threads (the slow set);
//! the other CPUs are the fast set.
//!
//! Each workload runs under each policy through the live controller (`lull_ctl::run`, the
//! policy on the seam: [`lull_sched::controller`]) and once more with no controller at all
//! (plain spawn: the control for the monitoring's own cost). The repetitions are interleaved —
//! every arm once per repetition, the order rotated by one each time ([`stats::rotation`]) — and
//! a row reports the median, min and max completion time, the speedup against `baseline`
//! ([`stats::speedup_pct`]), and for the [`work`] programs the median spread of their threads'
//! finish times.
//!
//! Workloads (fixed work, so completion time is the metric):
//! - `hash`: `lull-work` with N threads of equal work and no synchronisation (the seed's
//!   Blackscholes);
//! - `barrier`: the same with a barrier every [`DEFAULT_BARRIER_MS`] ms of work (the seed's Vips,
//!   fine-grained synchronisation);
//! - `xz`: `xz -T N` compressing a generated input in [`XZ_BLOCK_BYTES`] blocks (a real program
//!   nobody here wrote; skipped, with the reason, when `xz` is not installed).

mod controlled;
pub mod failure;
pub mod stats;
pub mod thief;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use lull_sched::controller::{CoreSets, Scheme, DEFAULT_SAMPLE_PERIOD_NS};
use lull_sched::seam::CpuMask;
use lull_sched::UnknownPolicy;
use serde::Serialize;

use self::failure::RunFailure;
use self::stats::Summary;
use self::thief::{RtLimit, Thief, ThiefError, ThiefMethod};
use lull_apps::work::{WorkArgs, WorkReport};

/// Worker threads: 4, twice this machine's CPUs, as the seed's 8 threads are twice the
/// Odroid's 4 big cores (and equal to its 4 LITTLE).
pub const DEFAULT_THREADS: u32 = 4;

/// Work per thread, ms of [`lull_apps::work::ROUNDS_PER_MS`]: 4 threads × 700 ms on 1.5 CPUs' worth of
/// capacity (one whole, one halved by the thief) is about 2 s a run, so the default
/// experiment (3 workloads × 8 arms × 3 repetitions) stays near 3 minutes.
pub const DEFAULT_WORK_MS: u64 = 700;

/// The barrier workload's work between barriers: 5 ms ("a barrier every few milliseconds",
/// the fine-grained synchronisation of seed 004's Vips).
pub const DEFAULT_BARRIER_MS: u64 = 5;

/// Repetitions of every arm when none are asked.
pub const DEFAULT_REPS: u32 = 3;
/// Most repetitions.
pub const MAX_REPS: u32 = 100;

/// The thief's share when none is asked: 50 %, halving the slow CPU for fair threads (an
/// Odroid-XU3's Cortex-A7 does about half the work of its Cortex-A15 per cycle, and runs at
/// 1.4 GHz against 2.0 GHz: the LITTLE core is slower still; half is the round figure).
pub const DEFAULT_THIEF_SHARE_PCT: u32 = 50;

/// The thief's CPU when none is asked: CPU 1 (CPU 0 takes most interrupts).
pub const DEFAULT_THIEF_CPU: u32 = 1;

/// The policies run when none are asked: the seed's six and Lull's own.
pub const DEFAULT_POLICIES: [&str; 7] = lull_sched::controller::STANDARD;

/// The row name of the run with no controller.
pub const UNCONTROLLED: &str = "no-controller";

/// The xz workload's input: 16 MiB of generated text. 24 MiB took 2.7 s of `xz -T4 -3` on this
/// machine's two idle CPUs; 16 MiB is about 1.8 s, near the `lull-work` runs.
pub const XZ_INPUT_BYTES: usize = 16 << 20;
/// xz's block size: 2 MiB, so the input is 8 blocks and every one of 4 threads has work.
pub const XZ_BLOCK_BYTES: usize = 2 << 20;

/// What `lull live toggling` runs.
#[derive(Clone, Debug)]
pub struct TogglingSpec {
    /// 0: no thief (the control with equal CPUs).
    pub thief_share_pct: u32,
    pub thief_cpu: u32,
    pub policies: Vec<Scheme>,
    pub reps: u32,
    pub threads: u32,
    pub work_ms: u64,
    pub barrier_ms: u64,
    pub sample_period_ns: u64,
    /// The `lull-work` program.
    pub work_binary: PathBuf,
    /// The xz workload (`None`: not run).
    pub xz: Option<PathBuf>,
    pub xz_input_bytes: usize,
}

/// A bad request or a failed run.
#[derive(Debug, thiserror::Error)]
pub enum TogglingError {
    #[error("--reps {0} is outside 1..={MAX_REPS}")]
    BadReps(u32),
    #[error(transparent)]
    BadPolicy(#[from] UnknownPolicy),
    #[error("no policy to run")]
    NoPolicies,
    #[error("--thief-share {0} is outside 0..={max}", max = thief::MAX_SHARE_PCT)]
    BadShare(u32),
    #[error("CPU {cpu} is not one this process may use (allowed: {allowed:?}); two CPUs at least are needed, one slowed and one not")]
    BadCpu { cpu: u32, allowed: Vec<u32> },
    #[error("cannot find the lull-work program at {path} (build it with `cargo build -p lull-apps`): {why}")]
    WorkBinary { path: PathBuf, why: String },
    #[error("thief: {0}")]
    Thief(#[from] ThiefError),
    #[error("{workload} under {policy}: {why}")]
    Run {
        workload: String,
        policy: String,
        why: RunFailure,
    },
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

impl TogglingError {
    /// Whether the command line was wrong (exit status 2).
    #[must_use]
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            TogglingError::BadReps(_)
                | TogglingError::BadPolicy(_)
                | TogglingError::NoPolicies
                | TogglingError::BadShare(_)
                | TogglingError::BadCpu { .. }
        )
    }
}

/// The policies of a comma-separated list.
///
/// # Errors
/// [`TogglingError::BadPolicy`] for a name [`Scheme::parse`] does not know,
/// [`TogglingError::NoPolicies`] for an empty list.
pub fn parse_policies(list: &str) -> Result<Vec<Scheme>, TogglingError> {
    let v: Vec<Scheme> = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(Scheme::parse)
        .collect::<Result<_, _>>()?;
    if v.is_empty() {
        return Err(TogglingError::NoPolicies);
    }
    Ok(v)
}

/// The fast and slow sets: the thief's CPU slow, every other allowed CPU fast.
///
/// # Errors
/// [`TogglingError::BadCpu`] when the thief's CPU is not allowed or no other CPU is.
pub fn core_sets(allowed: &[u32], thief_cpu: u32) -> Result<CoreSets, TogglingError> {
    let bad = || TogglingError::BadCpu {
        cpu: thief_cpu,
        allowed: allowed.to_vec(),
    };
    if thief_cpu >= 64 || !allowed.contains(&thief_cpu) {
        return Err(bad());
    }
    let fast = allowed
        .iter()
        .filter(|&&c| c != thief_cpu && c < 64)
        .fold(0u64, |m, &c| m | 1 << c);
    if fast == 0 {
        return Err(bad());
    }
    Ok(CoreSets {
        fast: CpuMask(fast),
        slow: CpuMask(1 << thief_cpu),
    })
}

impl TogglingSpec {
    /// The defaults, with `work_binary` as the `lull-work` program.
    #[must_use]
    pub fn new(work_binary: PathBuf) -> TogglingSpec {
        TogglingSpec {
            thief_share_pct: DEFAULT_THIEF_SHARE_PCT,
            thief_cpu: DEFAULT_THIEF_CPU,
            policies: DEFAULT_POLICIES
                .iter()
                .map(|p| Scheme::parse(p).expect("the default policies parse"))
                .collect(),
            reps: DEFAULT_REPS,
            threads: DEFAULT_THREADS,
            work_ms: DEFAULT_WORK_MS,
            barrier_ms: DEFAULT_BARRIER_MS,
            sample_period_ns: DEFAULT_SAMPLE_PERIOD_NS,
            work_binary,
            xz: find_on_path("xz"),
            xz_input_bytes: XZ_INPUT_BYTES,
        }
    }

    fn check(&self) -> Result<(), TogglingError> {
        if !(1..=MAX_REPS).contains(&self.reps) {
            return Err(TogglingError::BadReps(self.reps));
        }
        if self.thief_share_pct > thief::MAX_SHARE_PCT {
            return Err(TogglingError::BadShare(self.thief_share_pct));
        }
        if self.policies.is_empty() {
            return Err(TogglingError::NoPolicies);
        }
        match std::fs::metadata(&self.work_binary) {
            Ok(m) if m.is_file() => Ok(()),
            Ok(_) => Err(TogglingError::WorkBinary {
                path: self.work_binary.clone(),
                why: "not a file".into(),
            }),
            Err(e) => Err(TogglingError::WorkBinary {
                path: self.work_binary.clone(),
                why: e.to_string(),
            }),
        }
    }
}

/// This build's `lull-work` ([`crate::sibling::program`]).
///
/// # Errors
/// [`TogglingError::WorkBinary`] when it is not there.
pub fn default_work_binary() -> Result<PathBuf, TogglingError> {
    crate::sibling::program("lull-work")
        .map_err(|(path, why)| TogglingError::WorkBinary { path, why })
}

/// The first `name` in `$PATH`.
#[must_use]
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// The thief as run.
#[derive(Clone, Debug, Serialize)]
pub struct ThiefSummary {
    pub cpu: u32,
    pub asked_pct: u32,
    /// Run time over wall time from its start to its end (`None` without a thief).
    pub measured_pct: Option<f64>,
    /// The least and most it took during one run.
    pub measured_run_min_pct: Option<f64>,
    pub measured_run_max_pct: Option<f64>,
    pub method: Option<ThiefMethod>,
    /// Why `SCHED_DEADLINE` was refused, when it was.
    pub deadline_refused: Option<String>,
    pub rt_limit: Option<RtLimit>,
}

/// One arm of one workload.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// A policy name, or [`UNCONTROLLED`].
    pub policy: String,
    pub completion_s: Summary,
    pub runs_s: Vec<f64>,
    /// Against the `baseline` row's median (`None` when baseline was not run).
    pub speedup_pct: Option<f64>,
    /// Median over the runs of the spread of the workers' finish times (`lull-work` only).
    pub thread_spread_s: Option<f64>,
    /// Controller samples per run (mean), and the mean cost of one sample (`None` uncontrolled).
    pub samples: Option<u64>,
    pub sample_cost_ns_mean: Option<u64>,
    /// Whether the controller's CPU time was scaled by frequency (false: no cpufreq here).
    pub scaled: Option<bool>,
    /// CPU masks the controller applied per run (mean; `None` uncontrolled).
    pub masks: Option<u64>,
}

/// One workload's rows.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadTable {
    pub name: String,
    pub command: String,
    pub rows: Vec<Row>,
    /// The monitoring's cost: how much longer the `baseline` median (controller sampling, no
    /// masks set) is than the no-controller median, percent (seed 004 §2.2: about 3 %).
    pub monitoring_overhead_pct: Option<f64>,
}

/// A workload not run, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    pub workload: String,
    pub why: String,
}

/// The whole experiment.
#[derive(Clone, Debug, Serialize)]
pub struct TogglingReport {
    pub thief: ThiefSummary,
    pub fast_cpus: Vec<u32>,
    pub slow_cpus: Vec<u32>,
    pub reps: u32,
    pub threads: u32,
    pub sample_period_ms: f64,
    pub workloads: Vec<WorkloadTable>,
    pub skipped: Vec<Skipped>,
}

/// A workload as run: a program, its arguments, and the report file of `lull-work`.
#[derive(Clone, Debug)]
struct Workload {
    name: &'static str,
    program: PathBuf,
    args: Vec<OsString>,
    report: Option<PathBuf>,
}

impl Workload {
    fn command(&self) -> Vec<OsString> {
        std::iter::once(self.program.clone().into_os_string())
            .chain(self.args.iter().cloned())
            .collect()
    }

    fn command_line(&self) -> String {
        self.command()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// One run's outcome.
#[derive(Clone, Debug)]
struct RunOutcome {
    completion_ns: u64,
    samples: Option<u64>,
    sample_cost_ns_mean: Option<u64>,
    scaled: Option<bool>,
    masks: Option<u64>,
}

/// One finished run: seconds, the spread of the workers' finish times, the controller's figures.
type Done = (f64, Option<f64>, RunOutcome);

/// `bytes` of text made of words drawn by a fixed generator: the same file every run, and
/// compressible about as well as prose (xz's speed depends on it).
#[must_use]
pub fn generated_text(bytes: usize) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "the", "thread", "runs", "on", "a", "big", "little", "core", "and", "toggles", "every",
        "quarter", "second", "while", "others", "wait",
    ];
    let mut out = Vec::with_capacity(bytes + 16);
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    while out.len() < bytes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(WORDS[(x % 16) as usize].as_bytes());
        // A number now and then keeps the text from being one long repeat.
        if x % 7 == 0 {
            out.extend_from_slice(format!(" {}", (x >> 20) % 100_000).as_bytes());
        }
        out.push(if x % 13 == 0 { b'\n' } else { b' ' });
    }
    out.truncate(bytes);
    out
}

fn workloads(
    spec: &TogglingSpec,
    dir: &Path,
) -> Result<(Vec<Workload>, Vec<Skipped>), TogglingError> {
    let lull_work = |name: &'static str, barrier: Option<u64>| {
        let report = dir.join(format!("{name}.json"));
        let args = WorkArgs {
            threads: spec.threads,
            work_ms: spec.work_ms,
            barrier_ms: barrier,
            report: Some(report.clone()),
        };
        Workload {
            name,
            program: spec.work_binary.clone(),
            args: args.to_args().into_iter().map(OsString::from).collect(),
            report: Some(report),
        }
    };
    let mut list = vec![
        lull_work("hash", None),
        lull_work("barrier", Some(spec.barrier_ms.min(spec.work_ms))),
    ];
    let mut skipped = Vec::new();
    match &spec.xz {
        Some(xz) => {
            let input = dir.join("xz-input.txt");
            std::fs::write(&input, generated_text(spec.xz_input_bytes))?;
            let args: Vec<OsString> = vec![
                format!("-T{}", spec.threads).into(),
                "-3".into(),
                format!("--block-size={XZ_BLOCK_BYTES}").into(),
                "--keep".into(),
                "--force".into(),
                "--quiet".into(),
                input.into_os_string(),
            ];
            list.push(Workload {
                name: "xz",
                program: xz.clone(),
                args,
                report: None,
            });
        }
        None => skipped.push(Skipped {
            workload: "xz".into(),
            why: "xz is not installed (Debian package xz-utils)".into(),
        }),
    }
    Ok((list, skipped))
}

/// The arms: the no-controller control, then the policies.
fn arms(spec: &TogglingSpec) -> Vec<Option<Scheme>> {
    std::iter::once(None)
        .chain(spec.policies.iter().copied().map(Some))
        .collect()
}

fn arm_name(arm: Option<Scheme>) -> String {
    arm.map_or_else(|| UNCONTROLLED.to_string(), Scheme::name)
}

fn run_uncontrolled(w: &Workload) -> Result<RunOutcome, RunFailure> {
    let start = Instant::now();
    let status = Command::new(&w.program)
        .args(&w.args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .map_err(|source| RunFailure::Start {
            program: w.program.clone(),
            source,
        })?;
    let completion_ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    if !status.success() {
        return Err(RunFailure::Ended {
            program: w.program.clone(),
            status,
        });
    }
    Ok(RunOutcome {
        completion_ns,
        samples: None,
        sample_cost_ns_mean: None,
        scaled: None,
        masks: None,
    })
}

fn read_work_report(path: &Path) -> Result<WorkReport, RunFailure> {
    let text = std::fs::read_to_string(path).map_err(|source| RunFailure::NoReport {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| RunFailure::BadReport {
        path: path.to_owned(),
        source,
    })
}

/// Runs the experiment; progress on stderr.
///
/// # Errors
/// [`TogglingError`]: a bad spec, a thief that cannot start, a run that fails.
pub fn run(spec: &TogglingSpec) -> Result<TogglingReport, TogglingError> {
    spec.check()?;
    let allowed: Vec<u32> = lull_os::sys::sched_getaffinity(std::process::id() as i32)
        .map(|s| s.cpus().filter_map(|c| u32::try_from(c).ok()).collect())
        .unwrap_or_default();
    let sets = core_sets(&allowed, spec.thief_cpu)?;
    let scratch = lull_os::fileout::ScratchDir::new("lull-toggling")?;
    let (loads, skipped) = workloads(spec, scratch.path())?;
    for s in &skipped {
        crate::progress::note(&format!("skipped {}: {}", s.workload, s.why));
    }
    let thief = if spec.thief_share_pct == 0 {
        None
    } else {
        Some(Thief::start(spec.thief_cpu, spec.thief_share_pct)?)
    };
    let arms = arms(spec);
    // runs[w][a]: every repetition of arm a on workload w.
    let mut runs: Vec<Vec<Vec<Done>>> = vec![vec![Vec::new(); arms.len()]; loads.len()];
    let mut run_shares = Vec::new();
    let total = loads.len() * arms.len() * spec.reps as usize;
    let mut done = 0;
    for rep in 0..spec.reps as usize {
        for (wi, w) in loads.iter().enumerate() {
            for ai in stats::rotation(arms.len(), rep) {
                let arm = arms[ai];
                if let Some(r) = &w.report {
                    let _ = std::fs::remove_file(r);
                }
                let before = thief.as_ref().map(Thief::snapshot).transpose()?;
                let outcome = match arm {
                    None => run_uncontrolled(w),
                    Some(scheme) => {
                        controlled::run(w.command(), scheme, sets, spec.sample_period_ns)
                    }
                }
                .map_err(|why| TogglingError::Run {
                    workload: w.name.into(),
                    policy: arm_name(arm),
                    why,
                })?;
                if let (Some(t), Some(b)) = (&thief, before) {
                    if let Some(s) = t.snapshot()?.share_pct_since(&b) {
                        run_shares.push(s);
                    }
                }
                let spread = match &w.report {
                    Some(path) => {
                        let r = read_work_report(path).map_err(|why| TogglingError::Run {
                            workload: w.name.into(),
                            policy: arm_name(arm),
                            why,
                        })?;
                        stats::spread_s(&r.finish_ns)
                    }
                    None => None,
                };
                let secs = outcome.completion_ns as f64 / 1e9;
                done += 1;
                crate::progress::note(&format!(
                    "[{done}/{total}] {} under {}: {secs:.3} s",
                    w.name,
                    arm_name(arm)
                ));
                runs[wi][ai].push((secs, spread, outcome));
            }
        }
    }
    let thief_summary = ThiefSummary {
        cpu: spec.thief_cpu,
        asked_pct: spec.thief_share_pct,
        measured_pct: thief
            .as_ref()
            .map(Thief::share_taken_pct)
            .transpose()?
            .flatten(),
        measured_run_min_pct: run_shares.iter().copied().reduce(f64::min),
        measured_run_max_pct: run_shares.iter().copied().reduce(f64::max),
        method: thief.as_ref().map(Thief::method),
        deadline_refused: thief
            .as_ref()
            .and_then(Thief::deadline_refused)
            .map(|e| e.to_string()),
        rt_limit: RtLimit::read(),
    };
    drop(thief);
    let tables = loads
        .iter()
        .zip(&runs)
        .map(|(w, per_arm)| table(w, &arms, per_arm))
        .collect();
    Ok(TogglingReport {
        thief: thief_summary,
        fast_cpus: sets.fast.cpus().map(|c| c.0 as u32).collect(),
        slow_cpus: sets.slow.cpus().map(|c| c.0 as u32).collect(),
        reps: spec.reps,
        threads: spec.threads,
        sample_period_ms: spec.sample_period_ns as f64 / 1e6,
        workloads: tables,
        skipped,
    })
}

fn table(w: &Workload, arms: &[Option<Scheme>], per_arm: &[Vec<Done>]) -> WorkloadTable {
    let medians: Vec<Option<f64>> = per_arm
        .iter()
        .map(|r| stats::summary(&r.iter().map(|x| x.0).collect::<Vec<_>>()).map(|s| s.median))
        .collect();
    let baseline = arms
        .iter()
        .position(|a| *a == Some(Scheme::Baseline))
        .and_then(|i| medians[i]);
    let rows = arms
        .iter()
        .zip(per_arm)
        .filter_map(|(&arm, r)| {
            let runs_s: Vec<f64> = r.iter().map(|x| x.0).collect();
            let completion_s = stats::summary(&runs_s)?;
            let spreads: Vec<f64> = r.iter().filter_map(|x| x.1).collect();
            let mean = |f: fn(&RunOutcome) -> Option<u64>| {
                let v: Vec<u64> = r.iter().filter_map(|x| f(&x.2)).collect();
                (!v.is_empty()).then(|| v.iter().sum::<u64>() / v.len() as u64)
            };
            Some(Row {
                policy: arm_name(arm),
                speedup_pct: baseline.and_then(|b| stats::speedup_pct(b, completion_s.median)),
                completion_s,
                runs_s,
                thread_spread_s: stats::summary(&spreads).map(|s| s.median),
                samples: mean(|o| o.samples),
                sample_cost_ns_mean: mean(|o| o.sample_cost_ns_mean),
                scaled: r.iter().find_map(|x| x.2.scaled),
                masks: mean(|o| o.masks),
            })
        })
        .collect();
    let uncontrolled = arms
        .iter()
        .position(Option::is_none)
        .and_then(|i| medians[i]);
    WorkloadTable {
        name: w.name.into(),
        command: w.command_line(),
        rows,
        // The baseline's time over the uncontrolled one, minus one: the speedup formula
        // with the roles swapped.
        monitoring_overhead_pct: uncontrolled
            .zip(baseline)
            .and_then(|(u, b)| stats::speedup_pct(b, u)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_put_the_thief_cpu_slow() {
        let s = core_sets(&[0, 1], 1).unwrap();
        assert_eq!(s.slow, CpuMask(0b10));
        assert_eq!(s.fast, CpuMask(0b01));
        let s = core_sets(&[0, 1, 2, 3], 0).unwrap();
        assert_eq!(s.fast, CpuMask(0b1110));
        assert!(matches!(
            core_sets(&[0], 0),
            Err(TogglingError::BadCpu { .. })
        ));
        assert!(matches!(
            core_sets(&[0, 1], 2),
            Err(TogglingError::BadCpu { .. })
        ));
    }

    #[test]
    fn policies_parse_as_a_list() {
        let p = parse_policies("baseline, toggle-0.25s,equalise").unwrap();
        assert_eq!(p.len(), 3);
        assert!(matches!(parse_policies(""), Err(TogglingError::NoPolicies)));
        assert!(matches!(
            parse_policies("baseline,fast"),
            Err(TogglingError::BadPolicy(_))
        ));
    }

    #[test]
    fn generated_text_is_fixed() {
        let a = generated_text(10_000);
        assert_eq!(a.len(), 10_000);
        assert_eq!(a, generated_text(10_000));
    }

    #[test]
    fn rows_have_speedups_against_baseline() {
        let w = Workload {
            name: "hash",
            program: "lull-work".into(),
            args: vec![],
            report: None,
        };
        let o = |s: f64| {
            (
                s,
                Some(0.1),
                RunOutcome {
                    completion_ns: (s * 1e9) as u64,
                    samples: Some(10),
                    sample_cost_ns_mean: Some(1000),
                    scaled: Some(false),
                    masks: Some(4),
                },
            )
        };
        let arms = [None, Some(Scheme::Baseline), Some(Scheme::AffinityOne)];
        let per_arm = vec![
            vec![o(1.9), o(2.1)],
            vec![o(2.0), o(2.2), o(2.4)],
            vec![o(1.8), o(2.75), o(2.75)],
        ];
        let t = table(&w, &arms, &per_arm);
        assert_eq!(t.rows.len(), 3);
        assert_eq!(t.rows[0].policy, UNCONTROLLED);
        assert!((t.rows[1].speedup_pct.unwrap()).abs() < 1e-9);
        // Affinity's median 2.75 s against baseline's 2.2 s: 2.2 / 2.75 − 1 = −20 % (slower).
        assert!((t.rows[2].speedup_pct.unwrap() + 20.0).abs() < 1e-9);
        assert_eq!(t.rows[1].completion_s.median, 2.2);
        assert_eq!(t.rows[0].samples, Some(10));
        // Uncontrolled median 2.0 s, baseline 2.2 s: monitoring cost 10 %.
        assert!((t.monitoring_overhead_pct.unwrap() - 10.0).abs() < 1e-9);
    }
}
