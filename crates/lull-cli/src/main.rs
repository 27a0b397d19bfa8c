//! The `lull` command. It parses arguments, calls the crates and prints; it holds no logic.

mod audit;
mod bench_fanout;
mod ctl;
mod doctor;
mod guis;
mod input;
mod kds;
mod lab;
mod lab_sched;
mod live;
mod output;
mod progress;
mod report;
mod reproduce;
mod rtapp;
mod sim;
mod spec_file;
mod toggling;
mod ucsg;
mod validate;
mod validate_timeline;
mod vtcfs;
mod vtcfs_bench;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use lull_lab::bench::{self, ComposeBench, ComposeBenchConfig, DispatchBench, DispatchBenchConfig};

use crate::output::{fixed, Col};

#[derive(Parser, Debug)]
#[command(
    name = "lull",
    version,
    about = "Idle deeply, respond instantly: Lull's experiments and tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run every experiment of the seeds that Lull runs and print its results (with --out, also
    /// as results files and an HTML report).
    Reproduce(ReproduceArgs),
    /// Render DIR/report/index.html (SVG plots, ours beside the seeds') from the results files
    /// `lull reproduce --out DIR` wrote.
    Report(report::ReportArgs),
    /// Micro-benchmarks of hot paths.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Workloads as data.
    #[command(subcommand)]
    Workload(WorkloadCommand),
    /// The live ESM stack and its baselines, measured on this machine.
    #[command(subcommand)]
    Live(live::LiveCommand),
    /// The scheduler audit (seed 002's IPSA) and TLP/latency analyses (seed 004).
    #[command(subcommand)]
    Audit(audit::AuditCommand),
    /// The discrete-event simulator of a modelled SoC and kernel (figures are modelled).
    #[command(subcommand)]
    Sim(sim::SimCommand),
    /// The display server: windows, window manager, snapshots, the figure-18 demonstration.
    #[command(subcommand)]
    Kds(kds::KdsCommand),
    /// guiS in lulld: per-app, per-category CPU time and wake-ups.
    #[command(subcommand)]
    Guis(guis::GuisCommand),
    /// The simulator against the real kernel on rt-app workloads (docs/validation.md).
    #[command(subcommand)]
    Validate(validate::ValidateCommand),
    /// Seed 004's controller interface: watch a process's threads, run a command under a
    /// controller scheme, set a thread's CPU mask, measure the sensing overhead.
    #[command(subcommand)]
    Ctl(ctl::CtlCommand),
    /// The lab machine: a QEMU guest on Debian's newest kernel for what this host's kernel
    /// lacks (sched_ext, uinput and evdev, HID-BPF, BTF).
    #[command(subcommand)]
    Lab(lab::LabCommand),
    /// What this machine has and lacks for each part of Lull (root, cgroup v2, tracefs,
    /// rt-app, cc, QEMU and KVM, the lab guest's kernel, …), what each lack makes skip, and
    /// the remedy.
    Doctor(doctor::DoctorArgs),
    /// Input traces (`lull-trace 1`, docs/traces.md): show one, record one from a running lulld
    /// or an input device, inject one into a running lulld.
    #[command(subcommand)]
    Input(input::InputCommand),
}

#[derive(Subcommand, Debug)]
enum WorkloadCommand {
    /// Print the generated stylus-spiral recording (the file shipped as traces/stylus-spiral.trace).
    Spiral,
}

#[derive(Args, Debug)]
struct ReproduceArgs {
    /// Print one JSON document instead of tables.
    #[arg(long)]
    json: bool,
    /// Also write every section's JSON to DIR/results/<section>.json, with the machine, kernel,
    /// commit and date.
    #[arg(long, value_name = "DIR")]
    out: Option<std::path::PathBuf>,
    /// Run only these sections (comma-separated keys, as the README lists them).
    #[arg(long, value_name = "SECTION,…", value_delimiter = ',')]
    only: Vec<String>,
    /// Also run the long variants (the lab guest's scheduler comparison, about 30 minutes).
    #[arg(long)]
    long: bool,
    /// Live runs of each workload in the `validation` section (median and min–max range).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: Option<u32>,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Interpreter + dispatcher throughput of the ESM, in process.
    Dispatch(DispatchArgs),
    /// KDS compose + draw of four full-screen 1920x1080 layers, against memcpy of the same bytes.
    Compose(ComposeArgs),
    /// Deliveries/s from one UDP source to N apps through the daemon, every delivery accounted.
    Fanout(bench_fanout::FanoutArgs),
}

#[derive(Args, Debug)]
struct ComposeArgs {
    /// Print JSON: {"layers":4,"width":1920,"height":1080,"compose_draw_ms":{"median":…,"p90":…},…,"ratio":…}.
    #[arg(long)]
    json: bool,
    /// Measured rounds (each times every path once).
    #[arg(long, default_value_t = bench::DEFAULT_COMPOSE_ITERATIONS,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    iterations: u32,
    /// Unmeasured rounds first.
    #[arg(long, default_value_t = bench::DEFAULT_COMPOSE_WARMUP,
          value_parser = clap::value_parser!(u32).range(0..=1_000))]
    warmup: u32,
}

#[derive(Args, Debug)]
struct DispatchArgs {
    /// Print JSON: {"runs":[{"apps":1,"events_per_s":…},…],"breakdown":{…}}.
    #[arg(long)]
    json: bool,
    /// Registered app counts to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 10, 100],
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    apps: Vec<u32>,
    /// (event, app) deliveries per run.
    #[arg(long, default_value_t = bench::DEFAULT_DELIVERIES_PER_RUN,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000_000))]
    deliveries: u64,
    /// Runs per app count; the fastest is reported.
    #[arg(long, default_value_t = bench::DEFAULT_REPEATS,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    repeats: u32,
}

fn dispatch_table(result: &DispatchBench) -> String {
    use std::fmt::Write as _;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "ESM interpreter + dispatcher, in process (measured on this machine)"
    );
    const COLS: [Col; 5] = [
        Col::Right("apps", 6),
        Col::Right("events", 12),
        Col::Right("events/s", 16),
        Col::Right("deliveries/s", 18),
        Col::Right("ns/event", 10),
    ];
    t.push_str(&output::table(
        &COLS,
        result.runs.iter().map(|r| {
            [
                r.apps.to_string(),
                r.events.to_string(),
                fixed(r.events_per_s, 0),
                fixed(r.deliveries_per_s, 0),
                fixed(r.ns_per_event, 1),
            ]
        }),
    ));
    let b = &result.breakdown;
    let _ = write!(
        t,
        "per event, 1 app: no listener {:.1} ns, pushed to a waiting app {:.1} ns, queued for a busy app {:.1} ns",
        b.no_listener_ns, b.direct_push_ns, b.queued_ns
    );
    t
}

fn compose_table(r: &ComposeBench) -> String {
    use std::fmt::Write as _;
    let mut t = String::new();
    let mb = f64::from(r.layers) * f64::from(r.width) * f64::from(r.height) * 4.0 / 1e6;
    let _ = writeln!(
        t,
        "KDS compositor: {} full-screen {}x{} ARGB layers, {} rounds (measured on this machine)",
        r.layers, r.width, r.height, r.iterations
    );
    const COLS: [Col; 4] = [
        Col::Left("path", 36),
        Col::Right("median ms", 10),
        Col::Right("p90 ms", 10),
        Col::Right("x memcpy", 9),
    ];
    let memcpy = format!("memcpy of the same {mb:.1} MB");
    let rows = [
        ("compose + draw", r.compose_draw_ms, r.ratio),
        (
            "server COMPOSE + DRAW (restacks)",
            r.server_path_ms,
            r.server_path_ratio,
        ),
        (memcpy.as_str(), r.memcpy_ms, 1.0),
    ]
    .map(|(name, s, ratio)| {
        [
            name.to_owned(),
            fixed(s.median, 2),
            fixed(s.p90, 2),
            fixed(ratio, 2),
        ]
    });
    t.push_str(&output::table(&COLS, rows));
    let _ = write!(t, "goal: compose + draw within 3x of memcpy (medians)");
    t
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Reproduce(args) => reproduce::run(&reproduce::Options {
            json: args.json,
            out: args.out,
            only: args.only,
            long: args.long,
            runs: args.runs,
        }),
        Command::Report(args) => report::run(&args),
        Command::Audit(cmd) => audit::run(cmd),
        Command::Live(cmd) => live::run(cmd),
        Command::Sim(cmd) => sim::run(cmd),
        Command::Kds(cmd) => kds::run(cmd),
        Command::Guis(cmd) => guis::run(cmd),
        Command::Validate(cmd) => validate::run(cmd),
        Command::Ctl(cmd) => ctl::run(cmd),
        Command::Lab(cmd) => lab::run(cmd),
        Command::Doctor(args) => doctor::run(&args),
        Command::Input(cmd) => input::run(cmd),
        Command::Workload(WorkloadCommand::Spiral) => {
            print!("{}", lull_workload::spiral::stylus_spiral().to_text());
            ExitCode::SUCCESS
        }
        Command::Bench(BenchCommand::Dispatch(args)) => {
            let config = DispatchBenchConfig {
                app_counts: args.apps.into_iter().map(|n| n as usize).collect(),
                deliveries_per_run: args.deliveries,
                repeats: args.repeats,
            };
            let result = bench::dispatch(&config);
            output::print_report(&result, args.json, |r| dispatch_table(r) + "\n")
        }
        Command::Bench(BenchCommand::Fanout(args)) => bench_fanout::run(&args),
        Command::Bench(BenchCommand::Compose(args)) => {
            let config = ComposeBenchConfig {
                iterations: args.iterations,
                warmup: args.warmup,
            };
            match bench::compose(&config) {
                Ok(result) => output::print_report(&result, args.json, |r| compose_table(r) + "\n"),
                Err(e) => output::failed("lull bench compose", &e, false),
            }
        }
    }
}
