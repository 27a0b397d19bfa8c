//! `lull validate kernel`: the simulator against the running kernel on rt-app workloads
//! (docs/validation.md). Parsing and printing only; the runs live in `lull-lab`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use lull_lab::validate::compare::{
    counts, validate_all, Range, SimProfile, WorkloadComparison, CPU_SHARE_BOUND_PP,
    LATENCY_BOUND_FRACTION, LATENCY_BOUND_US,
};
use lull_lab::validate::Machine;
// The comparison's JSON is the `validation` section's (`lull_reproduce`).
use lull_reproduce::data::validation_json;

use crate::output::emit;

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
    /// Live runs of each workload: the table gives their median and min–max range, and a
    /// thread passes the noise-aware rule when the simulated figure lies inside that range or
    /// within the fixed bound of the median.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    /// Instead of the comparison: run each workload once live under a tracefs trace of
    /// sched_switch/sched_wakeup and once in the simulator with its scheduling events, write
    /// both timelines to DIR/<workload>.timeline.json and print each thread's profile (where it
    /// ran, migrations, stretches) side by side. Root and tracefs needed.
    #[arg(long, value_name = "DIR")]
    timeline: Option<PathBuf>,
}

fn shipped() -> Result<Vec<PathBuf>, String> {
    lull_reproduce::sections::validation::shipped().map_err(|e| e.to_string())
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), |v| format!("{v:.0}"))
}

/// `median [min–max]` of a live figure, or the median alone after a single run.
fn spread_cell(r: Option<Range>, scale: f64, digits: usize, runs: usize) -> String {
    match r {
        None => "-".to_owned(),
        Some(r) if runs <= 1 => format!("{:.digits$}", r.median * scale),
        Some(r) => format!(
            "{:.digits$} [{:.digits$}–{:.digits$}]",
            r.median * scale,
            r.min * scale,
            r.max * scale
        ),
    }
}

/// A pass mark: ` ` within the fixed bound, `~` only within the live spread (noise-aware),
/// `!` outside both.
fn mark(fixed: bool, noise: bool) -> char {
    match (fixed, noise) {
        (true, _) => ' ',
        (false, true) => '~',
        (false, false) => '!',
    }
}

/// The comparison as a table: per thread, the live runs' median [min–max] beside the simulated
/// figure, marked where it is outside its bound.
#[must_use]
pub fn table(ws: &[WorkloadComparison]) -> String {
    let mut t = String::new();
    let runs = ws.first().map_or(1, |w| w.runs);
    let _ =
        writeln!(
        t,
        "live: {} (median [min–max] over {runs} run(s) of each workload); sim: one simulated run",
        if runs > 1 { "median and spread" } else { "one run" }
    );
    let _ = writeln!(
        t,
        "{:<22} {:<11} {:>19} {:>6} {:>6} {:>17} {:>6} {:>19} {:>7}",
        "workload",
        "thread",
        "cpu% live",
        "sim",
        "Δpp",
        "wu p50 µs live",
        "sim",
        "wu p99 µs live",
        "sim"
    );
    for w in ws {
        for th in &w.threads {
            let cpu_flag = mark(th.cpu_ok(), th.cpu_ok_noise());
            let lat_flag = match (th.latency_ok(), th.latency_ok_noise()) {
                (Some(f), Some(n)) => mark(f, n),
                _ => ' ',
            };
            let _ = writeln!(
                t,
                "{:<22} {:<11} {:>19} {:>6.1} {:>+5.1}{cpu_flag} {:>17} {:>6} {:>19} {:>6}{lat_flag}",
                w.name,
                th.name,
                spread_cell(Some(th.spread.cpu_share), 100.0, 1, w.runs),
                th.sim.cpu_share * 100.0,
                th.cpu_diff_pp(),
                spread_cell(th.spread.wakeup_p50_us, 1.0, 0, w.runs),
                opt(th.sim.wakeup_p50_us),
                spread_cell(th.spread.wakeup_p99_us, 1.0, 0, w.runs),
                opt(th.sim.wakeup_p99_us),
            );
        }
    }
    for w in ws.iter().filter(|w| !w.failed_runs.is_empty()) {
        let _ = writeln!(
            t,
            "{}: {} live run(s) failed and are left out ({})",
            w.name,
            w.failed_runs.len(),
            w.failed_runs.join("; ")
        );
    }
    let (cpu, lat) = counts(ws);
    let _ = writeln!(
        t,
        "CPU share: {} of {} threads within {CPU_SHARE_BOUND_PP} pp of the live median (fixed bound); \
         {} of {} within that or the live min–max (noise-aware)",
        cpu.fixed, cpu.threads, cpu.noise_aware, cpu.threads,
    );
    let _ = writeln!(
        t,
        "wake-up latency: {} of {} timer threads within {:.0} % or {LATENCY_BOUND_US:.0} µs of the \
         live median at p50 and p99 (fixed bound); {} of {} within that or the live min–max \
         (noise-aware)",
        lat.fixed,
        lat.threads,
        LATENCY_BOUND_FRACTION * 100.0,
        lat.noise_aware,
        lat.threads,
    );
    let _ = writeln!(
        t,
        "(mark after Δpp / sim p99: `~` outside the fixed bound but inside the live spread, `!` outside both)"
    );
    t
}

/// [`validate_all`] with its progress on standard error.
fn run_all(
    paths: &[PathBuf],
    seed: u64,
    runs: u32,
) -> Result<(Machine, SimProfile, Vec<WorkloadComparison>), String> {
    validate_all(paths, seed, runs, |what| {
        lull_lab::progress::note(&format!("lull validate kernel: {what} …"))
    })
    .map_err(|e| e.to_string())
}

/// `lull reproduce`'s `validation` section as text.
pub fn section_table(r: &lull_reproduce::data::Validation) -> String {
    format!(
        "simulator profile: {}\n{}",
        r.profile.notes.join("; "),
        table(&r.workloads)
    )
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
    if let Some(dir) = &args.timeline {
        return match crate::validate_timeline::run(&paths, dir, args.seed) {
            Ok(text) => emit(&text, CMD),
            Err(e) => {
                eprintln!("{CMD}: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let (machine, profile, results) = match run_all(&paths, args.seed, args.runs) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{CMD}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let text = if args.json {
        let mut j = serde_json::to_string_pretty(&validation_json(&machine, &profile, &results))
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
