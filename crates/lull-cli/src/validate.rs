//! `lull validate kernel`: the simulator against the running kernel on rt-app workloads
//! (docs/validation.md). Parsing and printing only; the runs live in `lull-lab`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use lull_lab::validate::collection::{analyse, collect, Collection};
use lull_lab::validate::compare::{
    counts, fits, Range, WorkloadComparison, CPU_SHARE_BOUND_PP, LATENCY_BOUND_FRACTION,
    LATENCY_BOUND_US,
};
// The comparison's JSON is the `validation` section's (`lull_reproduce`).
use lull_reproduce::data::validation_json;

use crate::output::emit;

use crate::output::{self, figure, fixed, Col};

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
    #[arg(long, value_name = "DIR", conflicts_with_all = ["save_live", "live_from"])]
    timeline: Option<PathBuf>,
    /// Also write the live runs (each run's per-thread figures, the load average before it)
    /// and the probe of this machine to DIR, for `--live-from`.
    #[arg(long, value_name = "DIR")]
    save_live: Option<PathBuf>,
    /// Run no workload live: take the live runs and the machine's profile saved with
    /// `--save-live` in DIR, run only the simulator, and compare.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["save_live", "workloads"])]
    live_from: Option<PathBuf>,
    /// With --live-from: use only these rounds of the saved runs (1-based, comma-separated),
    /// e.g. the ones taken on a quiet machine.
    #[arg(
        long,
        value_name = "N,…",
        value_delimiter = ',',
        requires = "live_from"
    )]
    rounds: Vec<u32>,
}

fn shipped() -> Result<Vec<PathBuf>, String> {
    lull_reproduce::sections::validation::shipped().map_err(|e| e.to_string())
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
    const COLS: [Col; 9] = [
        Col::Left("workload", 22),
        Col::Left("thread", 11),
        Col::Right("cpu% live", 19),
        Col::Right("sim", 6),
        Col::Right("Δpp", 6),
        Col::Right("wu p50 µs live", 17),
        Col::Right("sim", 6),
        Col::Right("wu p99 µs live", 19),
        Col::Right("sim", 7),
    ];
    let rows = ws.iter().flat_map(|w| {
        w.threads.iter().map(move |th| {
            let cpu_flag = mark(th.cpu_ok(), th.cpu_ok_noise());
            let lat_flag = match (th.latency_ok(), th.latency_ok_noise()) {
                (Some(f), Some(n)) => mark(f, n),
                _ => ' ',
            };
            // A flag follows the figure it judges.
            [
                w.name.clone(),
                th.name.clone(),
                spread_cell(Some(th.spread.cpu_share), 100.0, 1, w.runs),
                fixed(th.sim.cpu_share * 100.0, 1),
                format!("{:>+5.1}{cpu_flag}", th.cpu_diff_pp()),
                spread_cell(th.spread.wakeup_p50_us, 1.0, 0, w.runs),
                figure(th.sim.wakeup_p50_us, 0),
                spread_cell(th.spread.wakeup_p99_us, 1.0, 0, w.runs),
                format!("{:>6}{lat_flag}", figure(th.sim.wakeup_p99_us, 0)),
            ]
        })
    });
    t.push_str(&output::table(&COLS, rows));
    let _ = writeln!(
        t,
        "CPU total of each live run (sum of the threads' shares, % of one CPU; sim: simulated); \
         a run below the others shared the CPUs with other load:"
    );
    for w in ws {
        let (live, sim) = w.cpu_totals();
        let live: Vec<String> = live.iter().map(|x| format!("{:.1}", x * 100.0)).collect();
        let _ = writeln!(
            t,
            "  {:<22} {}  sim {:.1}",
            w.name,
            live.join(" "),
            sim * 100.0
        );
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

/// The live runs of `paths` with their progress on standard error, saved to `save` when given.
fn collect_live(
    paths: &[PathBuf],
    seed: u64,
    runs: u32,
    save: Option<&std::path::Path>,
) -> Result<Collection, String> {
    let (_, c) = collect(
        paths,
        runs,
        |m, ws| fits(m, ws, seed),
        |what| lull_lab::progress::note(&format!("lull validate kernel: {what} …")),
    )
    .map_err(|e| e.to_string())?;
    if let Some(dir) = save {
        c.save(dir).map_err(|e| format!("--save-live: {e}"))?;
        lull_lab::progress::note(&format!(
            "lull validate kernel: live runs saved in {}",
            dir.display()
        ));
    }
    Ok(c)
}

/// The 1-minute load average before each round's live runs, lowest–highest over the workloads:
/// a round taken beside other load measures the load.
fn round_loads(c: &Collection) -> String {
    let mut by_round: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
    for r in c.workloads.iter().flat_map(|w| &w.runs) {
        if let Some(l) = r.load_1min {
            by_round.entry(r.round).or_default().push(l);
        }
    }
    if by_round.is_empty() {
        return String::new();
    }
    let rounds: Vec<String> = by_round
        .iter()
        .map(|(round, ls)| {
            let lo = ls.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = ls.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!("round {round} {lo:.1}–{hi:.1}")
        })
        .collect();
    format!(
        "load average (1 min) before the live runs: {}\n",
        rounds.join(", ")
    )
}

/// A saved collection, cut to `rounds` when any are given.
fn load_live(dir: &std::path::Path, rounds: &[u32]) -> Result<Collection, String> {
    let mut c = Collection::load(dir).map_err(|e| format!("--live-from: {e}"))?;
    if !rounds.is_empty() {
        c.keep_rounds(rounds)
            .map_err(|e| format!("--rounds: {}: {e}", dir.display()))?;
    }
    Ok(c)
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
    let paths = if args.live_from.is_some() {
        // The saved collection holds its workloads.
        Vec::new()
    } else if args.workloads.is_empty() {
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
    let collection = match &args.live_from {
        Some(dir) => load_live(dir, &args.rounds),
        None => collect_live(&paths, args.seed, args.runs, args.save_live.as_deref()),
    };
    let (collection, (profile, results)) = match collection.and_then(|c| {
        analyse(&c, args.seed)
            .map(|r| (c, r))
            .map_err(|e| e.to_string())
    }) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{CMD}: {e}");
            return ExitCode::FAILURE;
        }
    };
    for w in profile.notes.iter().filter(|n| n.starts_with("WARNING")) {
        eprintln!("{CMD}: {w}");
    }
    let machine = &collection.machine.text;
    let text = if args.json {
        let mut j = serde_json::to_string_pretty(&validation_json(machine, &profile, &results))
            .expect("results serialise");
        j.push('\n');
        j
    } else {
        let mut t = String::new();
        if let Some(dir) = &args.live_from {
            let _ = writeln!(
                t,
                "live runs from {} (load average at their start: {}; at their end: {})",
                dir.display(),
                collection.machine.loadavg_start.as_deref().unwrap_or("-"),
                collection.machine.loadavg_end.as_deref().unwrap_or("-"),
            );
        }
        let _ = write!(
            t,
            "{machine}\nsimulator profile: {}\n",
            profile.notes.join("; ")
        );
        t.push_str(&table(&results));
        t.push_str(&round_loads(&collection));
        t
    };
    emit(&text, CMD)
}
