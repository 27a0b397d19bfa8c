//! `lull live …`: the live ESM stack and its baselines, measured on this machine.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use lull_linux::live::{self, LiveError, LiveReport, RunSpec, Workload};
use lull_linux::stack::Model;
use lull_workload::Trace;
use serde_json::{json, Value};

/// The shipped stylus recording.
pub const DEFAULT_TRACE: &str = "traces/stylus-spiral.trace";

#[derive(Subcommand, Debug)]
pub enum LiveCommand {
    /// Replay a stylus workload through one delivery model; report latency, wake-ups, CPU time.
    Latency(LatencyArgs),
    /// Run one delivery model with no input; report wake-ups and CPU time.
    Idle(IdleArgs),
    /// Wake-up latency of the candidate daemon → app channels (how the channel was chosen).
    Channel(ChannelArgs),
}

#[derive(Args, Debug)]
pub struct ChannelArgs {
    /// One-way trips per channel.
    #[arg(long, default_value_t = lull_linux::channel::DEFAULT_TRIPS,
          value_parser = clap::value_parser!(u32).range(2..=10_000_000))]
    trips: u32,
    /// Print JSON: [{"channel","trips","p50_us","p99_us","mean_us"},…].
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct LatencyArgs {
    /// esm, pull-16ms, vsync-batched or blocking-middleware.
    #[arg(long)]
    model: String,
    /// tracking-10s, tracking-20s or tracking-60s.
    #[arg(long)]
    workload: String,
    /// The recording to scale (default: the shipped stylus spiral; the built-in generator's
    /// identical copy is used when the file is not found from the current directory).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Print JSON: {"model","workload","events_injected",…,"latency_us":{…},"wakeups_per_s","cpu_ms",…}.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct IdleArgs {
    /// esm, pull-16ms, vsync-batched or blocking-middleware.
    #[arg(long)]
    model: String,
    /// Length of the idle window, 1..=3600 s.
    #[arg(long)]
    seconds: u64,
    /// Print JSON in the same shape as `live latency`.
    #[arg(long)]
    json: bool,
}

/// The stylus recording: `path`, or the shipped file, or the generator's identical copy.
fn base_trace(path: Option<&Path>) -> Result<Trace, LiveError> {
    match path {
        Some(p) => live::load_trace(p),
        None if Path::new(DEFAULT_TRACE).exists() => live::load_trace(Path::new(DEFAULT_TRACE)),
        None => Ok(lull_workload::spiral::stylus_spiral()),
    }
}

fn fmt_opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"))
}

/// One row of the text table.
#[must_use]
pub fn row(r: &LiveReport) -> String {
    format!(
        "{:<20} {:<14} {:>6}/{:<6} {:>5} {:>10} {:>10} {:>10} {:>10} {:>11.1} {:>9.1}",
        r.model.name(),
        r.workload,
        r.events_delivered,
        r.events_injected,
        r.events_dropped,
        fmt_opt(r.latency_us.mean),
        fmt_opt(r.latency_us.p50),
        fmt_opt(r.latency_us.p99),
        fmt_opt(r.latency_us.max),
        r.wakeups_per_s,
        r.cpu_ms
    )
}

/// The text table's header.
#[must_use]
pub fn header() -> String {
    format!(
        "{:<20} {:<14} {:>13} {:>5} {:>10} {:>10} {:>10} {:>10} {:>11} {:>9}",
        "model",
        "workload",
        "delivered",
        "lost",
        "mean µs",
        "p50 µs",
        "p99 µs",
        "max µs",
        "wakeups/s",
        "cpu ms"
    )
}

fn print(r: &LiveReport, as_json: bool) {
    if as_json {
        println!("{}", crate::to_json(r));
    } else {
        println!(
            "live run, measured on this machine\n{}\n{}",
            header(),
            row(r)
        );
        for t in &r.threads {
            println!(
                "  {:<8} {:>8} wakeups ({:>8.1}/s) {:>9.2} ms cpu",
                t.role, t.wakeups, t.wakeups_per_s, t.cpu_ms
            );
        }
    }
}

fn fail(e: &LiveError) -> ExitCode {
    eprintln!("lull live: {e}");
    match e {
        LiveError::UnknownModel(_) | LiveError::UnknownWorkload(_) | LiveError::BadSeconds(_) => {
            ExitCode::from(2)
        }
        _ => ExitCode::FAILURE,
    }
}

fn channel(a: &ChannelArgs) -> ExitCode {
    match lull_linux::channel::measure(a.trips) {
        Ok(r) if a.json => {
            println!("{}", crate::to_json(&r));
            ExitCode::SUCCESS
        }
        Ok(r) => {
            println!("one-way wake-up latency of a blocked receiver, measured on this machine");
            println!(
                "{:<12} {:>8} {:>9} {:>9} {:>9}",
                "channel", "trips", "p50 µs", "p99 µs", "mean µs"
            );
            for c in r {
                println!(
                    "{:<12} {:>8} {:>9.1} {:>9.1} {:>9.1}",
                    c.channel, c.trips, c.p50_us, c.p99_us, c.mean_us
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("lull live channel: {e}");
            ExitCode::FAILURE
        }
    }
}

pub fn run(cmd: LiveCommand) -> ExitCode {
    let result = match cmd {
        LiveCommand::Channel(a) => return channel(&a),
        LiveCommand::Latency(a) => (|| {
            let model = live::parse_model(&a.model)?;
            let workload = live::parse_workload(&a.workload)?;
            let base = base_trace(a.trace.as_deref())?;
            live::run(&RunSpec::latency(model, workload, &base)?).map(|r| (r, a.json))
        })(),
        LiveCommand::Idle(a) => (|| {
            let model = live::parse_model(&a.model)?;
            live::run(&RunSpec::idle(model, a.seconds)?).map(|r| (r, a.json))
        })(),
    };
    match result {
        Ok((r, as_json)) => {
            print(&r, as_json);
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

/// Seconds of each idle run in `lull reproduce`.
const REPRODUCE_IDLE_S: u64 = 3;

/// `lull reproduce`'s live section: every model on tracking-20s and idle, and ESM's change
/// against each baseline.
pub fn reproduce_section() -> Result<crate::reproduce::Section, String> {
    let base = base_trace(None).map_err(|e| e.to_string())?;
    let mut latency = Vec::new();
    let mut idle = Vec::new();
    for model in Model::ALL {
        let spec =
            RunSpec::latency(model, Workload::Tracking20s, &base).map_err(|e| e.to_string())?;
        latency.push(live::run(&spec).map_err(|e| format!("{}: {e}", model.name()))?);
        let spec = RunSpec::idle(model, REPRODUCE_IDLE_S).map_err(|e| e.to_string())?;
        idle.push(live::run(&spec).map_err(|e| format!("{} idle: {e}", model.name()))?);
    }
    let mut t = String::new();
    let _ = writeln!(
        t,
        "live, measured on this machine; stack = device driver + daemon or hub + app threads"
    );
    let _ = writeln!(t, "{}", header());
    for r in latency.iter().chain(&idle) {
        let _ = writeln!(t, "{}", row(r));
    }
    let changes = live::esm_vs_baselines(&latency, &idle);
    let _ = writeln!(
        t,
        "ESM relative to each baseline (change of ESM's figure; tracking-20s, then idle):"
    );
    let show =
        |c: Option<f64>| c.map_or_else(|| "n/a (baseline 0)".to_owned(), |c| format!("{c:+.1}%"));
    for c in &changes {
        let _ = writeln!(
            t,
            "  vs {:<20} mean latency {}  wake-ups {}  idle wake-ups {:.1}/s -> {:.1}/s ({})",
            c.baseline.name(),
            show(c.mean_latency_change_pct),
            show(c.wakeups_change_pct),
            c.idle_wakeups_per_s.baseline,
            c.idle_wakeups_per_s.esm,
            show(c.idle_wakeups_change_pct)
        );
    }
    let json: Value = json!({ "tracking_20s": latency, "idle": idle, "esm_vs_baselines": changes });
    Ok(crate::reproduce::Section {
        table: t.trim_end().to_owned(),
        json,
    })
}
