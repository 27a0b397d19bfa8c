//! `lull validate kernel`: the simulator against the running kernel on rt-app workloads
//! (docs/validation.md). Parsing and printing only; the runs live in `lull-lab`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use lull_lab::validate::compare::{
    validate_all, Figures, SimProfile, WorkloadComparison, CPU_SHARE_BOUND_PP,
    LATENCY_BOUND_FRACTION, LATENCY_BOUND_US,
};
use lull_lab::validate::Machine;
use serde_json::{json, Value};

use crate::output::emit;

/// Where the shipped validation workloads live, relative to the working directory.
pub const VALIDATION_DIR: &str = "experiments/validation";

#[derive(Subcommand, Debug)]
pub enum ValidateCommand {
    /// Run rt-app workloads under this machine's kernel and in the simulator on a profile of
    /// this machine, and print both side by side.
    Kernel(KernelArgs),
}

#[derive(Args, Debug)]
pub struct KernelArgs {
    /// rt-app workloads (default: every experiments/validation/*.json).
    workloads: Vec<PathBuf>,
    /// Print JSON: {"workloads":[{"name","threads":[{"name","live":{…},"sim":{…}}]}], …}.
    #[arg(long)]
    json: bool,
    /// The simulator's random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn shipped() -> Result<Vec<PathBuf>, String> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(VALIDATION_DIR)
        .map_err(|e| format!("{VALIDATION_DIR}: {e} (run from the repository root)"))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    if v.is_empty() {
        return Err(format!("{VALIDATION_DIR}: no .json workloads"));
    }
    Ok(v)
}

fn figures_json(f: &Figures) -> Value {
    json!({
        "cpu_share": f.cpu_share,
        "periods": f.periods,
        "wakeup_latency_us": match (f.wakeup_p50_us, f.wakeup_p99_us) {
            (Some(p50), Some(p99)) => json!({"p50": p50, "p99": p99}),
            _ => Value::Null,
        },
    })
}

/// The comparison as JSON.
#[must_use]
pub fn to_json(machine: &Machine, profile: &SimProfile, ws: &[WorkloadComparison]) -> Value {
    let workloads: Vec<Value> = ws
        .iter()
        .map(|w| {
            json!({
                "name": w.name,
                "file": w.path.display().to_string(),
                "duration_s": w.duration_s,
                "threads": w.threads.iter().map(|t| json!({
                    "name": t.name,
                    "live": figures_json(&t.live),
                    "sim": figures_json(&t.sim),
                    "cpu_share_diff_pp": t.cpu_diff_pp(),
                    "cpu_share_within_bound": t.cpu_ok(),
                    "wakeup_latency_within_bound": t.latency_ok(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let all_cpu = ws.iter().flat_map(|w| &w.threads).all(|t| t.cpu_ok());
    let all_lat = ws
        .iter()
        .flat_map(|w| &w.threads)
        .all(|t| t.latency_ok() != Some(false));
    json!({
        "workloads": workloads,
        "machine": machine.to_string(),
        "profile": profile.notes,
        "bounds": {
            "cpu_share_pp": CPU_SHARE_BOUND_PP,
            "wakeup_latency_fraction": LATENCY_BOUND_FRACTION,
            "wakeup_latency_us": LATENCY_BOUND_US,
        },
        "within_bounds": {"cpu_share": all_cpu, "wakeup_latency": all_lat},
    })
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), |v| format!("{v:.0}"))
}

/// The comparison as a table: per thread, live and simulated side by side, `!` where a figure
/// is outside its bound.
#[must_use]
pub fn table(ws: &[WorkloadComparison]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:<28} {:<12} {:>7} {:>7} {:>6} {:>7} {:>7} {:>8} {:>8} {:>8} {:>8}",
        "workload",
        "thread",
        "cpu%",
        "sim",
        "Δpp",
        "periods",
        "sim",
        "wu p50",
        "sim",
        "wu p99",
        "sim"
    );
    for w in ws {
        for th in &w.threads {
            let cpu_flag = if th.cpu_ok() { ' ' } else { '!' };
            let lat_flag = if th.latency_ok() == Some(false) {
                '!'
            } else {
                ' '
            };
            let _ = writeln!(
                t,
                "{:<28} {:<12} {:>7.1} {:>7.1} {:>+5.1}{cpu_flag} {:>7} {:>7} {:>8} {:>8} {:>8} {:>7}{lat_flag}",
                w.name,
                th.name,
                th.live.cpu_share * 100.0,
                th.sim.cpu_share * 100.0,
                th.cpu_diff_pp(),
                th.live.periods,
                th.sim.periods,
                opt(th.live.wakeup_p50_us),
                opt(th.sim.wakeup_p50_us),
                opt(th.live.wakeup_p99_us),
                opt(th.sim.wakeup_p99_us),
            );
        }
    }
    let threads: Vec<_> = ws.iter().flat_map(|w| &w.threads).collect();
    let _ = writeln!(
        t,
        "{} of {} threads within {CPU_SHARE_BOUND_PP} pp of the kernel's CPU share; {} of {} with timer wake-ups within {:.0} % or {LATENCY_BOUND_US:.0} µs at p50 and p99 (`!`: outside)",
        threads.iter().filter(|t| t.cpu_ok()).count(),
        threads.len(),
        threads.iter().filter(|t| t.latency_ok() == Some(true)).count(),
        threads.iter().filter(|t| t.latency_ok().is_some()).count(),
        LATENCY_BOUND_FRACTION * 100.0,
    );
    t
}

/// [`validate_all`] with its progress on standard error.
fn run_all(
    paths: &[PathBuf],
    seed: u64,
) -> Result<(Machine, SimProfile, Vec<WorkloadComparison>), String> {
    validate_all(paths, seed, |what| {
        lull_lab::progress::note(&format!("lull validate kernel: {what} …"))
    })
    .map_err(|e| e.to_string())
}

/// `lull reproduce`'s section: every shipped workload both ways.
///
/// # Errors
/// As [`run_all`].
pub fn reproduce_section() -> Result<crate::output::Section, String> {
    let (machine, profile, results) = run_all(&shipped()?, 1)?;
    Ok(crate::output::Section {
        table: format!(
            "simulator profile: {}\n{}",
            profile.notes.join("; "),
            table(&results)
        ),
        json: to_json(&machine, &profile, &results),
    })
}

pub fn run(cmd: ValidateCommand) -> ExitCode {
    const CMD: &str = "lull validate kernel";
    let ValidateCommand::Kernel(args) = cmd;
    let paths = if args.workloads.is_empty() {
        match shipped() {
            Ok(p) => p,
            Err(e) => {
                eprintln!("{CMD}: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        args.workloads.clone()
    };
    let (machine, profile, results) = match run_all(&paths, args.seed) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{CMD}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let text = if args.json {
        let mut j = serde_json::to_string_pretty(&to_json(&machine, &profile, &results))
            .expect("results serialise");
        j.push('\n');
        j
    } else {
        let mut t = format!(
            "{machine}\nsimulator profile: {}\n",
            profile.notes.join("; ")
        );
        t.push_str(&table(&results));
        t
    };
    emit(&text, CMD)
}
