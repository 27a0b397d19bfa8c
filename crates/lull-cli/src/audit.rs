//! `lull audit …`: the scheduler audit (seed 002's IPSA) and its analyses (seed 004's TLP).
//! Parsing and printing only; the work is in `lull-audit` and `lull-lab::audit`.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::BufWriter;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand};
use lull_audit::footprint::{
    footprint, SEED_CONTROL_BYTES, SEED_ENTRIES_PER_RING, SEED_ENTRY_SIZE, SEED_RINGS,
};
use lull_audit::tlp::TaskFilter;
use lull_lab::audit::experiments::{
    self, Benchmark, Condition, PerturbationConfig, PerturbationReport, ValidationConfig,
    ValidationReport, CONDITION_NAMES,
};
use lull_lab::audit::files;
use lull_lab::audit::recorder::{self, Extraction, RecorderConfig};
use lull_lab::audit::tlp_table::programs::PROGRAM_NAMES;
use lull_lab::audit::tlp_table::sim::{self as sim_tlp, SimTable};
use lull_lab::audit::tlp_table::{self, RowStatus, TableConfig, TlpTable};
use lull_os::fileout::AtomicFile;
use serde_json::json;

use crate::output::{self, figure, fixed, Col};

/// `println!` that ends quietly when stdout is closed (`| head`) instead of panicking.
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Record scheduler events live (tracefs; needs root) into a log file.
    Record(RecordArgs),
    /// Print every record of a log.
    Dump(DumpArgs),
    /// Records, sequence gaps, overwrites, kernel losses, counted-not-logged tasks.
    Stats(FileArgs),
    /// Thread-level parallelism (seed 004) of a log or an ftrace text file.
    Tlp(AnalysisArgs),
    /// Per-task scheduling and preemption latency distributions.
    Latency(AnalysisArgs),
    /// Export a log or ftrace text to a JSON trace ui.perfetto.dev opens.
    Export(ExportArgs),
    /// Seed 002 §3.1: execution time in the log against getrusage (needs root).
    Validate(ValidateArgs),
    /// Seed 002 §3.2: benchmark slowdown under each recorder condition (needs root).
    Perturbation(PerturbationArgs),
    /// Two busy processes on the two CPUs, then one: TLP over the busy time (needs root).
    TwoPhase(TwoPhaseArgs),
    /// The memory footprint M = E×S×R + C of seed 002 and of Lull's rings.
    Footprint(FootprintArgs),
    /// Seed 004 Table 1.1 here: TLP of real programs, recorded live (needs root), or with
    /// --sim of every model of simulator specs (modelled).
    TlpTable(TlpTableArgs),
}

#[derive(Args, Debug)]
pub struct RecordArgs {
    /// How long to record.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    seconds: u64,
    /// The log file to write.
    #[arg(long)]
    out: PathBuf,
    /// Extraction interval in milliseconds (0 = continuous busy loop).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    interval_ms: u64,
    /// Extract as soon as the kernel reports data (poll) instead of on an interval.
    #[arg(long, conflicts_with = "interval_ms")]
    poll: bool,
    /// tracefs trace clock ("mono" keeps event times comparable with CLOCK_MONOTONIC).
    #[arg(long, default_value = lull_os::tracefs::DEFAULT_TRACE_CLOCK)]
    trace_clock: String,
    /// Entries per CPU ring (E).
    #[arg(long, default_value_t = recorder::DEFAULT_RING_ENTRIES as u64, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    ring_entries: u64,
    /// Kernel buffer per CPU, KiB.
    #[arg(long, default_value_t = recorder::DEFAULT_KERNEL_BUFFER_KB, value_parser = clap::value_parser!(u32).range(4..=4_194_304))]
    kernel_buffer_kb: u32,
    /// Log only seed 002's unblock/block/terminate events (no switch-in/preempt records).
    #[arg(long)]
    no_switches: bool,
    /// Print the recording summary as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct DumpArgs {
    file: PathBuf,
    /// Comma-separated values with a header line.
    #[arg(long)]
    csv: bool,
}

#[derive(Args, Debug)]
pub struct FileArgs {
    file: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct AnalysisArgs {
    /// An audit log, or with --ftrace a trace-cmd report / tracefs trace text file.
    file: PathBuf,
    /// The input is ftrace text.
    #[arg(long)]
    ftrace: bool,
    /// Only these thread ids (comma-separated).
    #[arg(long, value_delimiter = ',')]
    tid: Vec<u32>,
    /// Only these process ids (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pid: Vec<u32>,
    /// Only these command names (comma-separated).
    #[arg(long, value_delimiter = ',')]
    comm: Vec<String>,
    /// TLP window for the over-time series, ms.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    window_ms: u64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ExportArgs {
    file: PathBuf,
    #[arg(long)]
    ftrace: bool,
    /// The JSON trace to write.
    #[arg(long)]
    perfetto: PathBuf,
    /// TLP counter window, ms.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    window_ms: u64,
}

#[derive(Args, Debug)]
pub struct ValidateArgs {
    #[arg(long)]
    json: bool,
    /// Length of one matrix-multiply run alone, ms.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(50..=600_000))]
    run_ms: u64,
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeats: u32,
}

#[derive(Args, Debug)]
pub struct PerturbationArgs {
    #[arg(long)]
    json: bool,
    /// Length of one benchmark run with the recorder off, ms.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(50..=600_000))]
    run_ms: u64,
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeats: u32,
    /// Only these benchmarks (comma-separated).
    #[arg(long, value_delimiter = ',', value_parser = benchmark_parser())]
    bench: Vec<Benchmark>,
    /// tracefs trace clock of the recorder.
    #[arg(long, default_value = lull_os::tracefs::DEFAULT_TRACE_CLOCK)]
    trace_clock: String,
    /// Only these conditions (comma-separated).
    #[arg(long, value_delimiter = ',', value_parser = condition_parser())]
    conditions: Vec<Condition>,
    /// Fixed work per run instead of calibrating: matrix products,single-byte appends,ping-pong
    /// rounds (as a report's "sizes" prints them).
    #[arg(long, value_delimiter = ',', num_args = 1, value_parser = clap::value_parser!(u64).range(1..=u64::from(u32::MAX)))]
    sizes: Vec<u64>,
}

#[derive(Args, Debug)]
pub struct TwoPhaseArgs {
    #[arg(long)]
    json: bool,
    /// Length of each phase, ms.
    #[arg(long, default_value_t = 3000, value_parser = clap::value_parser!(u64).range(100..=600_000))]
    phase_ms: u64,
}

#[derive(Args, Debug)]
pub struct TlpTableArgs {
    /// Print JSON: {"programs":[{"name","command","status","reason","seconds","tlp",
    /// "busy_cpus_fraction":{"1",…},"idle_fraction","own_tlp","own_busy_cpus_fraction",
    /// "own_tasks","dropped_events","lost_records",…}],"cpus","geomean_tlp","seed_table_1_1",…};
    /// with --sim {"modelled":true,"rows":[{"spec","experiment","model","tlp",…}],"skipped"}.
    #[arg(long)]
    json: bool,
    /// Length of the idle system's recording and of the rt-app workload, s.
    #[arg(long, default_value_t = tlp_table::DEFAULT_SECONDS,
          value_parser = clap::value_parser!(u64).range(1..=600))]
    seconds: u64,
    /// Run only these programs (comma-separated).
    #[arg(long, value_delimiter = ',', conflicts_with = "sim", value_parser = PossibleValuesParser::new(PROGRAM_NAMES))]
    only: Vec<String>,
    /// The modelled apps instead: every model of each SPEC (default: experiments/marz,
    /// experiments/ucsg and experiments/toggling, from the repository root).
    #[arg(long)]
    sim: bool,
    /// Simulator specs (with --sim).
    #[arg(requires = "sim")]
    specs: Vec<PathBuf>,
}

#[derive(Args, Debug)]
pub struct FootprintArgs {
    /// Entries per ring (E).
    #[arg(long, default_value_t = SEED_ENTRIES_PER_RING)]
    entries: u64,
    /// Rings (R).
    #[arg(long, default_value_t = SEED_RINGS)]
    rings: u64,
    #[arg(long)]
    json: bool,
}

/// `--bench` names, listed in help and errors.
fn benchmark_parser() -> impl TypedValueParser<Value = Benchmark> {
    PossibleValuesParser::new(Benchmark::ALL.map(Benchmark::name))
        .try_map(|s| Benchmark::from_name(&s).ok_or("unknown benchmark"))
}

/// `--conditions` names, listed in help and errors.
fn condition_parser() -> impl TypedValueParser<Value = Condition> {
    PossibleValuesParser::new(CONDITION_NAMES)
        .try_map(|s| Condition::from_name(&s).ok_or("unknown condition"))
}

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    output::failed("lull audit", &msg, false)
}

fn filter_of(a: &AnalysisArgs) -> TaskFilter {
    TaskFilter {
        tids: a.tid.iter().copied().collect::<HashSet<_>>(),
        tgids: a.pid.iter().copied().collect::<HashSet<_>>(),
        comms: a.comm.iter().cloned().collect::<HashSet<_>>(),
    }
}

pub fn run(cmd: AuditCommand) -> ExitCode {
    match cmd {
        AuditCommand::Record(a) => record(a),
        AuditCommand::Dump(a) => with_input(&a.file, false, |i| dump(&a, &i)),
        AuditCommand::Stats(a) => with_input(&a.file, false, |i| stats(&a, &i)),
        AuditCommand::Tlp(a) => with_input(&a.file, a.ftrace, |i| tlp(&a, &i)),
        AuditCommand::Latency(a) => with_input(&a.file, a.ftrace, |i| latency(&a, &i)),
        AuditCommand::Export(a) => with_input(&a.file, a.ftrace, |i| export(&a, &i)),
        AuditCommand::Validate(a) => {
            let cfg = ValidationConfig {
                run_ms: a.run_ms,
                repeats: a.repeats,
                ..ValidationConfig::default()
            };
            match experiments::validate(&cfg) {
                Ok(r) if a.json => print_json(&r),
                Ok(r) => {
                    outln!("{}", validation_table(&r));
                    ExitCode::SUCCESS
                }
                Err(e) => fail(e),
            }
        }
        AuditCommand::Perturbation(a) => {
            let mut cfg = PerturbationConfig {
                run_ms: a.run_ms,
                repeats: a.repeats,
                trace_clock: a.trace_clock,
                ..PerturbationConfig::default()
            };
            match a.sizes.as_slice() {
                [] => {}
                [mm, ap, pp] => {
                    cfg.sizes = Some(experiments::WorkSizes {
                        matmul_reps: *mm as u32,
                        append_count: *ap,
                        pingpong_rounds: *pp,
                    });
                }
                _ => {
                    return fail(
                        "--sizes takes three numbers: matrix products, appends, ping-pong rounds",
                    )
                }
            }
            if !a.conditions.is_empty() {
                cfg.conditions = a.conditions;
            }
            if !a.bench.is_empty() {
                cfg.benchmarks = a.bench;
            }
            match experiments::perturbation(&cfg) {
                Ok(r) if a.json => print_json(&r),
                Ok(r) => {
                    outln!("{}", perturbation_table(&r));
                    ExitCode::SUCCESS
                }
                Err(e) => fail(e),
            }
        }
        AuditCommand::TwoPhase(a) => match experiments::two_phase_tlp(a.phase_ms) {
            Ok(r) if a.json => print_json(&json!({
                "phase_ms": r.phase_ms, "pids": r.pids, "tlp": r.report.tlp,
                "busy_cpus_fraction": r.report.busy_cpus_fraction, "dropped_events": r.report.dropped_events,
                "lost_records": r.report.lost_records, "recording": r.recording,
            })),
            Ok(r) => {
                outln!(
                    "two busy processes for {} ms, then one for {} ms (pids {}): TLP over busy time {} (C_i {}), dropped events {}",
                    r.phase_ms, r.phase_ms, join(&r.pids, ", "), fmt_opt(r.report.tlp),
                    r.report.busy_cpus_fraction.iter().map(|(i, c)| format!("C{i} {c:.3}")).collect::<Vec<_>>().join(", "),
                    r.report.dropped_events
                );
                ExitCode::SUCCESS
            }
            Err(e) => fail(e),
        },
        AuditCommand::TlpTable(a) => tlp_table_cmd(a),
        AuditCommand::Footprint(a) => {
            let seed = footprint(
                SEED_ENTRIES_PER_RING,
                SEED_ENTRY_SIZE,
                SEED_RINGS,
                SEED_CONTROL_BYTES,
            );
            let lull = footprint(
                a.entries,
                lull_audit::ENTRY_SIZE as u64,
                a.rings,
                lull_audit::footprint::lull_control_bytes(a.rings),
            );
            if a.json {
                print_json(&json!({"seed_002": seed, "lull": lull}))
            } else {
                outln!("M = E×S×R + C");
                outln!(
                    "seed 002: {} × {} × {} + {} = {} bytes",
                    seed.entries_per_ring,
                    seed.entry_size,
                    seed.rings,
                    seed.control_bytes,
                    seed.total_bytes
                );
                outln!(
                    "lull:     {} × {} × {} + {} = {} bytes",
                    lull.entries_per_ring,
                    lull.entry_size,
                    lull.rings,
                    lull.control_bytes,
                    lull.total_bytes
                );
                ExitCode::SUCCESS
            }
        }
    }
}

fn tlp_table_cmd(a: TlpTableArgs) -> ExitCode {
    let mut progress = |line: &str| eprintln!("{line}");
    if a.sim {
        let specs = if a.specs.is_empty() {
            sim_tlp::default_specs(std::path::Path::new("."))
        } else {
            a.specs
        };
        if specs.is_empty() {
            return fail(format!(
                "no specs under {} (run from the repository root, or name the specs)",
                sim_tlp::SIM_SPEC_DIRS.join(", ")
            ));
        }
        let t = sim_tlp::sim_table(&specs, &mut progress);
        let code = if a.json {
            print_json(&t)
        } else {
            outln!("{}", sim_tlp_text(&t));
            ExitCode::SUCCESS
        };
        // Every spec skipped: nothing was computed.
        return if t.rows.is_empty() {
            ExitCode::FAILURE
        } else {
            code
        };
    }
    let cfg = TableConfig {
        seconds: a.seconds,
        only: a.only,
        lull: std::env::current_exe().ok(),
        ..TableConfig::default()
    };
    match tlp_table::run_table(&cfg, &mut progress) {
        Ok(t) if a.json => print_json(&t),
        Ok(t) => {
            outln!("{}", tlp_table_text(&t));
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

/// Shares of the busy time at 1, 2, … busy CPUs as percentages, e.g. "62/38".
fn shares(m: &std::collections::BTreeMap<String, f64>) -> String {
    if m.is_empty() {
        return "-".into();
    }
    let mut v: Vec<(u32, f64)> = m
        .iter()
        .filter_map(|(k, f)| k.parse().ok().map(|i| (i, *f)))
        .collect();
    v.sort_unstable_by_key(|(i, _)| *i);
    v.iter()
        .map(|(_, f)| format!("{:.0}", f * 100.0))
        .collect::<Vec<_>>()
        .join("/")
}

/// The columns of the live TLP table, one row per program (its command follows them).
const TLP_COLS: [Col; 8] = [
    Col::Left("program", 10),
    Col::Right("seconds", 7),
    Col::Right("TLP", 6),
    Col::Right("own TLP", 8),
    Col::Right("busy at 1/2/…", 14),
    Col::Right("idle %", 7),
    Col::Right("drop", 6),
    Col::Right("lost", 6),
];

/// The columns of the modelled TLP table, one row per experiment and model.
const SIM_TLP_COLS: [Col; 7] = [
    Col::Left("experiment", 28),
    Col::Left("model", 20),
    Col::Right("cores", 5),
    Col::Right("TLP", 6),
    Col::Right("busy at 1/2/…", 22),
    Col::Right("idle %", 7),
    Col::Right("seconds", 8),
];

/// The columns of seed 002's validation table, one row per run.
const VALIDATION_COLS: [Col; 12] = [
    Col::Left("exp", 7),
    Col::Right("rep", 3),
    Col::Right("tasks", 5),
    Col::Right("elapsed_s", 10),
    Col::Right("user_s", 10),
    Col::Right("cpu_s", 10),
    Col::Right("log_s", 10),
    Col::Right("diff_%", 9),
    Col::Right("udiff_%", 9),
    Col::Right("csw_log", 9),
    Col::Right("csw_ru", 9),
    Col::Right("lost", 8),
];

/// The columns of seed 002's perturbation table, one row per benchmark and condition.
const PERTURBATION_COLS: [Col; 14] = [
    Col::Left("bench", 8),
    Col::Left("condition", 12),
    Col::Right("mean_s", 9),
    Col::Right("±max_%", 8),
    Col::Right("median_s", 9),
    Col::Right("min_s", 9),
    Col::Right("slow_%", 9),
    Col::Right("slowmed_%", 9),
    Col::Right("slowmin_%", 9),
    Col::Right("k_events", 10),
    Col::Right("records", 9),
    Col::Right("lost", 9),
    Col::Right("extr_ms", 8),
    Col::Right("ns/event", 9),
];

/// The live table beside seed 004's Table 1.1.
pub fn tlp_table_text(t: &TlpTable) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Thread-level parallelism on this machine (measured, {} CPUs; machine-wide and the program's own tasks)",
        t.cpus
    );
    // The command, free text, follows the columns.
    let _ = writeln!(s, "{}  command", output::head(&TLP_COLS));
    for r in &t.programs {
        if r.status == RowStatus::Skipped {
            let _ = writeln!(
                s,
                "{:<10} skipped: {}",
                r.name,
                r.reason.as_deref().unwrap_or("")
            );
            continue;
        }
        let cells = [
            r.name.clone(),
            fixed(r.seconds, 1),
            figure(r.tlp, 2),
            figure(r.own_tlp, 2),
            shares(&r.busy_cpus_fraction),
            figure(r.idle_fraction.map(|v| v * 100.0), 0),
            r.dropped_events.to_string(),
            r.lost_records.to_string(),
        ];
        let _ = writeln!(
            s,
            "{}  {}{}",
            output::row(&TLP_COLS, cells),
            r.command,
            r.reason
                .as_ref()
                .map_or(String::new(), |w| format!("  [{w}]")),
        );
    }
    let _ = writeln!(
        s,
        "geometric mean of the measured rows: {}   ({:.0} s in all)",
        fmt_opt(t.geomean_tlp),
        t.total_s
    );
    let _ = writeln!(
        s,
        "\nSeed 004 Table 1.1 ({} CPUs: 4 big + 4 LITTLE Odroid, Android):",
        t.seed_cpus
    );
    for r in &t.seed_table_1_1 {
        let _ = writeln!(s, "{:<16} {:<12} {:.2}", r.category, r.application, r.tlp);
    }
    s
}

/// The modelled table.
pub fn sim_tlp_text(t: &SimTable) -> String {
    let mut s =
        String::from("Thread-level parallelism of the modelled apps (modelled, machine-wide)\n");
    s.push_str(&output::table(
        &SIM_TLP_COLS,
        t.rows.iter().map(|r| {
            [
                r.experiment.clone(),
                r.model.clone(),
                r.cores.to_string(),
                figure(r.tlp, 2),
                shares(&r.busy_cpus_fraction),
                figure(r.idle_fraction.map(|v| v * 100.0), 0),
                fixed(r.seconds, 1),
            ]
        }),
    ));
    for k in &t.skipped {
        let _ = writeln!(s, "skipped {}: {}", k.spec, k.reason);
    }
    s
}

fn print_json<T: serde::Serialize>(v: &T) -> ExitCode {
    match serde_json::to_string_pretty(v) {
        Ok(s) => {
            outln!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

fn join<T: std::fmt::Display>(items: &[T], sep: &str) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(sep)
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or("n/a".into(), |x| format!("{x:.3}"))
}

fn record(a: RecordArgs) -> ExitCode {
    // The log streams into a temporary beside --out that replaces it only when the recording
    // is complete; a destination that is not a regular file is refused before tracing starts.
    let file = match AtomicFile::create(&a.out) {
        Ok(f) => BufWriter::new(f),
        Err(e) => return fail(e),
    };
    if let Err(e) = lull_os::tracefs::available() {
        return fail(e);
    }
    let extraction = if a.poll {
        Extraction::Poll
    } else if a.interval_ms == 0 {
        Extraction::Continuous
    } else {
        Extraction::Every(Duration::from_millis(a.interval_ms))
    };
    let cfg = RecorderConfig {
        ring_entries: a.ring_entries as usize,
        kernel_buffer_kb: a.kernel_buffer_kb,
        extraction,
        log_switches: !a.no_switches,
        pin_cpu: None,
        nice: None,
        trace_clock: a.trace_clock,
    };
    let recorded = recorder::record_for(cfg, Duration::from_secs(a.seconds), file)
        .map_err(|e| e.to_string())
        .and_then(|(w, s)| {
            let f = w
                .into_inner()
                .map_err(|e| format!("{}: write: {}", a.out.display(), e.error()))?;
            f.commit().map_err(|e| e.to_string())?;
            Ok(s)
        });
    match recorded {
        Ok(s) if a.json => print_json(&s),
        Ok(s) => {
            outln!(
                "{}: {} records from {} kernel events in {} extractions; overwritten {}, kernel lost {}, counted-not-logged tasks {} ({} events); footprint M = {}×{}×{}+{} = {} bytes (+ kernel buffers {} bytes); extraction CPU {:.1} ms",
                a.out.display(), s.records, s.raw_events, s.extractions, s.overwritten, s.kernel_lost, s.counted_tasks, s.counted_events,
                s.footprint.entries_per_ring, s.footprint.entry_size, s.footprint.rings, s.footprint.control_bytes, s.footprint.total_bytes,
                s.kernel_buffer_bytes, s.extraction_cpu_ns as f64 / 1e6
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

/// Runs `f` on the loaded log or ftrace file.
fn with_input(
    path: &std::path::Path,
    ftrace: bool,
    f: impl FnOnce(files::Input) -> ExitCode,
) -> ExitCode {
    match files::load(path, ftrace) {
        Ok(input) => f(input),
        Err(e) => fail(e),
    }
}

fn dump(a: &DumpArgs, input: &files::Input) -> ExitCode {
    let mut out = String::new();
    if a.csv {
        out.push_str("seq,ring,ts_ns,kind,cpu,tgid,tid,comm,prio,rq_len,exec_ns,switches,flags\n");
    }
    for r in &input.log.records {
        let comm = r.comm.to_string_lossy();
        if a.csv {
            let comm = if comm.contains([',', '"', '\n']) {
                format!("\"{}\"", comm.replace('"', "\"\""))
            } else {
                comm
            };
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{}",
                r.seq,
                r.ring,
                r.ts_ns,
                r.kind.name(),
                r.cpu,
                r.tgid,
                r.tid,
                comm,
                r.prio,
                r.rq_len,
                r.exec_ns,
                r.switches,
                r.flags
            );
        } else {
            let _ = writeln!(
                out,
                "ring {:>2} seq {:>8} {:>17.9} {:<10} cpu {:>2} {:>7}/{:<7} {:<16} prio {:>3} rq {:>3} exec {:>14} ns switches {:>7}",
                r.ring, r.seq, r.ts_ns as f64 / 1e9, r.kind.name(), r.cpu, r.tgid, r.tid, comm, r.prio, r.rq_len, r.exec_ns, r.switches
            );
        }
    }
    // A closed pipe (`| head`) ends the dump quietly.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes());
    ExitCode::SUCCESS
}

fn stats(a: &FileArgs, input: &files::Input) -> ExitCode {
    let s = lull_audit::log::stats(&input.log);
    if a.json {
        return print_json(&s);
    }
    outln!(
        "records {} on {} rings (capacity {} each), span {:.3} s, {} tasks",
        s.records,
        s.rings,
        s.ring_capacity,
        s.span_ns as f64 / 1e9,
        s.distinct_tasks
    );
    outln!(
        "by kind: {}",
        s.by_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    outln!(
        "gaps {} ({} records missing): overwritten {}, kernel lost {}, unexplained {}",
        s.gaps,
        s.gap_records,
        s.overwritten,
        s.kernel_lost,
        s.unexplained_gap_records
    );
    outln!(
        "counted, not logged: {} tasks, {} events (+{} beyond the list)",
        s.counted_tasks.len(),
        s.counted_events,
        s.counted_overflow_events
    );
    for c in &s.counted_tasks {
        outln!(
            "  {:>7} {:<16} {} events {} exec {} ns",
            c.tid,
            c.comm.to_string_lossy(),
            crate::output::spelled(&c.class),
            c.events,
            c.exec_ns
        );
    }
    ExitCode::SUCCESS
}

fn tlp(a: &AnalysisArgs, input: &files::Input) -> ExitCode {
    let rep = lull_audit::tlp::analyze_log(&input.log, &filter_of(a), a.window_ms * 1_000_000);
    if a.json {
        return print_json(&json!({
            "tlp": rep.tlp,
            "busy_cpus_fraction": rep.busy_cpus_fraction,
            "dropped_events": rep.dropped_events,
            "lost_records": rep.lost_records,
            "lost_events_reported": input.ftrace.map(|f| f.lost_events_reported),
            "out_of_order_lines": input.ftrace.map(|f| f.out_of_order_lines),
            "cpus": rep.cpus,
            "span_ns": rep.span_ns,
            "busy_ns": rep.busy_ns,
            "window_ns": rep.window_ns,
            "windows": rep.windows,
        }));
    }
    outln!(
        "TLP {} over {:.3} s busy of {:.3} s on {} CPUs",
        fmt_opt(rep.tlp),
        rep.busy_ns as f64 / 1e9,
        rep.span_ns as f64 / 1e9,
        rep.cpus
    );
    for (i, f) in &rep.busy_cpus_fraction {
        outln!("  C_{i} = {f:.4}");
    }
    outln!(
        "dropped events reconciled {}, records lost by sequence number {}",
        rep.dropped_events,
        rep.lost_records
    );
    if let Some(f) = input.ftrace {
        outln!(
            "ftrace text: {} lost events reported, {} lines stepped back in their CPU's time (nested events, kept)",
            f.lost_events_reported,
            f.out_of_order_lines
        );
    }
    ExitCode::SUCCESS
}

fn latency(a: &AnalysisArgs, input: &files::Input) -> ExitCode {
    let rep = lull_audit::latency::analyze(&input.log.records, &filter_of(a));
    if a.json {
        return print_json(&rep);
    }
    let d = |x: &lull_audit::latency::Distribution| {
        format!(
            "n {:>6} p50 {:>9} p90 {:>9} p99 {:>9} max {:>10} ns",
            x.count, x.p50_ns, x.p90_ns, x.p99_ns, x.max_ns
        )
    };
    outln!("all tasks   scheduling {}", d(&rep.all_scheduling));
    outln!("all tasks   preemption {}", d(&rep.all_preemption));
    for t in rep.tasks.iter().take(20) {
        outln!(
            "{:>7} {:<16} scheduling {}",
            t.tid,
            t.comm.to_string_lossy(),
            d(&t.scheduling)
        );
        outln!("{:>7} {:<16} preemption {}", "", "", d(&t.preemption));
    }
    outln!("unmatched wakeups/preemptions {}", rep.unmatched);
    ExitCode::SUCCESS
}

fn export(a: &ExportArgs, input: &files::Input) -> ExitCode {
    let v = lull_audit::perfetto::export_log(&input.log, a.window_ms * 1_000_000);
    let text = match serde_json::to_string(&v) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    if let Err(e) = lull_os::fileout::write_file_atomically(&a.perfetto, text.as_bytes()) {
        return fail(e);
    }
    outln!(
        "{}: {} records as ftrace text, {} counter events",
        a.perfetto.display(),
        input.log.records.len(),
        v["traceEvents"].as_array().map_or(0, Vec::len)
    );
    ExitCode::SUCCESS
}

/// The validation table as printed.
pub fn validation_table(r: &ValidationReport) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "Seed 002 §3.1 validation, measured on this machine ({} matrix products of {}² per task; tasks pinned to CPU {})", r.matmul_reps, lull_lab::audit::workload::MATMUL_N, experiments::BENCH_CPU);
    t.push_str(&output::table(
        &VALIDATION_COLS,
        r.runs.iter().map(|x| {
            [
                x.experiment.to_string(),
                x.repeat.to_string(),
                x.tasks.to_string(),
                fixed(x.elapsed_s, 3),
                fixed(x.user_s_rusage, 4),
                fixed(x.cpu_s_rusage, 4),
                fixed(x.exec_s_log, 4),
                fixed(x.diff_pct, 4),
                fixed(x.user_diff_pct, 3),
                x.switches_log.to_string(),
                x.switches_rusage.to_string(),
                (x.kernel_lost + x.overwritten).to_string(),
            ]
        }),
    ));
    let _ = write!(
        t,
        "largest |diff| {:.4} % (goal ≤ {} %): {}",
        r.max_abs_diff_pct,
        r.goal_pct,
        if r.within_goal { "met" } else { "NOT met" }
    );
    t
}

/// The perturbation table as printed.
pub fn perturbation_table(r: &PerturbationReport) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "Seed 002 §3.2 throughput perturbation, measured on this machine (benchmark and extraction on CPU {} at nice {}; {} repeats; ~{} ms runs; trace clock {}; work: {} products, {} appends, {} ping-pong rounds)", r.bench_cpu, experiments::PERTURBATION_NICE, r.repeats, r.run_ms, r.trace_clock, r.sizes.matmul_reps, r.sizes.append_count, r.sizes.pingpong_rounds);
    t.push_str(&output::table(
        &PERTURBATION_COLS,
        r.rows.iter().map(|x| {
            [
                x.benchmark.name().to_owned(),
                x.condition.clone(),
                fixed(x.mean_s, 4),
                fixed(x.max_dev_pct, 2),
                fixed(x.median_s, 4),
                fixed(x.min_s, 4),
                fixed(x.slowdown_pct, 2),
                fixed(x.slowdown_median_pct, 2),
                fixed(x.slowdown_min_pct, 2),
                fixed(x.kernel_events, 0),
                fixed(x.records, 0),
                fixed(x.kernel_lost, 0),
                fixed(x.extraction_cpu_ms, 1),
                figure(x.overhead_ns_per_event, 0),
            ]
        }),
    ));
    t.pop();
    t
}

/// `lull reproduce`'s `tlp_table` section as text: the live table, then the modelled one.
pub fn tlp_section_table(r: &lull_reproduce::data::Tlp) -> String {
    format!(
        "{}\n\n{}",
        tlp_table_text(&r.live),
        sim_tlp_text(&r.modelled)
    )
}

/// `lull reproduce`'s `audit` section as text: validation (short) and a short perturbation
/// table.
pub fn section_table(r: &lull_reproduce::data::Audit) -> String {
    format!(
        "{}\n\n{}",
        validation_table(&r.validation),
        perturbation_table(&r.perturbation)
    )
}
