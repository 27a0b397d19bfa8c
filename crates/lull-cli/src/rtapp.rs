//! `lull sim rtapp`: an rt-app workload on a modelled platform (figures are modelled). Parsing
//! and printing only: the reader is `lull-workload`'s, the run `lull-sim`'s.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use lull_sim::platform::{Platform, SHIPPED};
use lull_sim::rtapp::{run_rtapp, RtAppResult, RtAppRun};
use lull_workload::rtapp::{self, RtApp, ThreadSummary};
use serde_json::{json, Value};

use crate::output::emit;

use crate::output::{self, figure, fixed, Col};

#[derive(Args, Debug)]
pub struct RtAppArgs {
    /// The rt-app workload (JSON, the subset in docs/validation.md).
    file: PathBuf,
    /// The modelled platform (jetson-tk1, x86-64).
    #[arg(long, default_value = "x86-64")]
    platform: String,
    /// The scheduling class (cfs, eevdf); default the platform's.
    #[arg(long)]
    scheduler: Option<String>,
    /// Override another policy slot, e.g. `--policy governor=schedutil`.
    #[arg(long, value_name = "SLOT=NAME")]
    policy: Vec<String>,
    /// The random seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Real ns per busy loop of rt-app on the modelled machine (default: the workload's
    /// calibration, an ideal rt-app).
    #[arg(long)]
    loop_ns: Option<f64>,
    /// Print JSON: {"duration_s","tasks":{NAME:{"cpu_ms","periods","wakeup_latency_us":{…},"slack_us":{…}}}}.
    #[arg(long)]
    json: bool,
}

/// Reads and parses an rt-app file; errors name the file.
///
/// # Errors
/// The file's read error or the reader's typed error, as text.
pub fn load(path: &Path) -> Result<RtApp, String> {
    let text = lull_os::input_file::read_bounded_text(path, lull_os::input_file::RTAPP_JSON)
        .map_err(|e| e.to_string())?;
    rtapp::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Each thread's summary, by name.
#[must_use]
pub fn summaries(r: &RtAppResult) -> Vec<(String, ThreadSummary)> {
    r.threads
        .iter()
        .map(|t| (t.name.clone(), ThreadSummary::of(&t.records, t.cpu_ns)))
        .collect()
}

/// The columns of the rt-app table, one row per thread.
const THREAD_COLS: [Col; 9] = [
    Col::Left("thread", 24),
    Col::Right("cpu ms", 9),
    Col::Right("share", 7),
    Col::Right("periods", 8),
    Col::Right("wu p50", 9),
    Col::Right("wu p99", 9),
    Col::Right("wu max", 9),
    Col::Right("slack p50", 9),
    Col::Right("slack p1", 9),
];

fn table(file: &Path, platform: &str, r: &RtAppResult) -> String {
    let mut t = String::new();
    let secs = r.duration_ns as f64 / 1e9;
    let _ = writeln!(
        t,
        "{} on {platform} for {secs:.1} s (modelled)",
        file.display()
    );
    let rows = summaries(r).into_iter().map(|(name, s)| {
        let wu = s.wakeup_latency_us;
        let sl = s.slack_us;
        [
            name,
            fixed(s.cpu_ms, 1),
            format!("{:.1}%", s.cpu_ms / 1e3 / secs.max(1e-9) * 100.0),
            s.periods.to_string(),
            figure(wu.map(|w| w.p50), 0),
            figure(wu.map(|w| w.p99), 0),
            figure(wu.map(|w| w.max), 0),
            figure(sl.map(|w| w.p50), 0),
            figure(sl.map(|w| w.p1), 0),
        ]
    });
    t.push_str(&output::table(&THREAD_COLS, rows));
    t
}

pub fn run(args: &RtAppArgs) -> ExitCode {
    const CMD: &str = "lull sim rtapp";
    let w = match load(&args.file) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("{CMD}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let Some(platform) = Platform::by_name(&args.platform) else {
        eprintln!(
            "{CMD}: unknown platform `{}` (known: {})",
            args.platform,
            SHIPPED.join(", ")
        );
        return ExitCode::FAILURE;
    };
    let mut run = RtAppRun::new(&platform);
    run.seed = args.seed;
    run.loop_ns = args.loop_ns;
    let mut slots: Vec<(String, String)> = Vec::new();
    if let Some(s) = &args.scheduler {
        slots.push(("scheduler".into(), s.clone()));
    }
    for p in &args.policy {
        let Some((slot, name)) = p.split_once('=') else {
            eprintln!("{CMD}: --policy {p:?}: expected SLOT=NAME, e.g. governor=schedutil");
            return ExitCode::FAILURE;
        };
        slots.push((slot.into(), name.into()));
    }
    for (slot, name) in &slots {
        if let Err(e) = run.policy.set(slot, name) {
            eprintln!("{CMD}: --policy {slot}={name}: {e}");
            return ExitCode::FAILURE;
        }
    }
    let r = match run_rtapp(&w, &run) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{CMD}: {}: {e}", args.file.display());
            return ExitCode::FAILURE;
        }
    };
    let text = if args.json {
        let tasks: BTreeMap<String, Value> = summaries(&r)
            .iter()
            .map(|(n, s)| (n.clone(), json!(s)))
            .collect();
        let v = json!({"duration_s": r.duration_ns as f64 / 1e9, "tasks": tasks});
        let mut j = serde_json::to_string_pretty(&v).expect("results serialise");
        j.push('\n');
        j
    } else {
        table(&args.file, &args.platform, &r)
    };
    emit(&text, CMD)
}
