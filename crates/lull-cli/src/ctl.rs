//! `lull ctl …`: seed 004's controller interface on this machine (`lull_ctl`). This parses and
//! prints.

use std::ffi::OsString;
use std::io::Write as _;
use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use lull_ctl::overhead::{self, OverheadOptions};
use lull_ctl::{RunOptions, WatchOptions};
use lull_sched::controller::Scheme;

use crate::output::{self, fixed, Col};

#[derive(Subcommand, Debug)]
pub enum CtlCommand {
    /// Sample every thread of a process (and threads it starts later) every interval:
    /// state, CPU, CPU time and scaled CPU time; ends cleanly when the process exits.
    Watch(WatchArgs),
    /// Run a command under a controller scheme (baseline, affinity-1, affinity-2,
    /// toggle-<s>s, equalise) and report its completion time and each thread's placements.
    /// Ends as the command did (its exit code, or 128 + the signal that ended it); the command
    /// gets SIGTERM if this process dies first.
    Run(RunArgs),
    /// Set the CPU mask of one thread (it stays after the command ends).
    SetMask(SetMaskArgs),
    /// Measure the cost of sensing: per thread per sample, and the slowdown of a CPU-bound
    /// program watched every 10 ms, against the seed's 3 %.
    Overhead(OverheadArgs),
    /// The fixed-work CPU-bound program `overhead` measures (or, with --park, the program of
    /// parked threads it samples).
    #[command(hide = true)]
    Burn(BurnArgs),
}

#[derive(Args, Debug)]
pub struct WatchArgs {
    #[arg(long)]
    pid: i32,
    #[arg(long, default_value_t = 10)]
    interval_ms: u64,
    /// Stop after this many seconds (default: when the process exits).
    #[arg(long)]
    seconds: Option<f64>,
    /// JSON lines: one per thread per sample, then {"summary": …}.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// baseline, affinity-1, affinity-2, toggle-0.1s, toggle-0.25s, toggle-0.5s, equalise, …
    #[arg(long)]
    policy: String,
    /// Fast CPUs (CPU list: 0 or 0-3,6). Default: every online CPU not slow.
    #[arg(long)]
    fast: Option<String>,
    /// Slow CPUs (with a capacity thief). Default: none.
    #[arg(long)]
    slow: Option<String>,
    /// The controller's sampling period in milliseconds.
    #[arg(long, default_value_t = 10)]
    sample_ms: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Send the command's output to /dev/null.
    #[arg(long)]
    quiet: bool,
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

#[derive(Args, Debug)]
pub struct SetMaskArgs {
    #[arg(long)]
    tid: i32,
    /// CPU list: 0 or 0-3,6.
    #[arg(long)]
    cpus: String,
}

#[derive(Args, Debug)]
pub struct OverheadArgs {
    /// Plain and watched runs of the CPU-bound program, each.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Hash rounds per thread of the CPU-bound program (one thread per online CPU).
    #[arg(long, default_value_t = 400_000_000)]
    rounds: u64,
    /// Samples of the 8 parked threads timed.
    #[arg(long, default_value_t = 2000)]
    samples: usize,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct BurnArgs {
    #[arg(long, default_value_t = 1)]
    threads: usize,
    #[arg(long, default_value_t = 0)]
    rounds: u64,
    /// Park the threads until standard input closes instead.
    #[arg(long)]
    park: bool,
}

fn fail(what: &str, e: impl std::fmt::Display) -> ExitCode {
    output::failed(&format!("lull ctl {what}"), &e, false)
}

fn online() -> Vec<u32> {
    lull_os::topology::probe(Path::new(lull_os::topology::SYSFS_CPUS)).online
}

pub fn run(cmd: CtlCommand) -> ExitCode {
    match cmd {
        CtlCommand::Watch(a) => watch(&a),
        CtlCommand::Run(a) => run_cmd(a),
        CtlCommand::SetMask(a) => set_mask(&a),
        CtlCommand::Overhead(a) => overhead_cmd(&a),
        CtlCommand::Burn(a) if a.park => match overhead::park(a.threads) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => fail("burn", e),
        },
        CtlCommand::Burn(a) => {
            println!("{:#x}", overhead::burn(a.threads, a.rounds));
            ExitCode::SUCCESS
        }
    }
}

fn watch(a: &WatchArgs) -> ExitCode {
    let duration_ns = match a.seconds {
        Some(s) if !(s.is_finite() && s > 0.0) => {
            return fail("watch", format!("--seconds {s} is not a positive duration"))
        }
        Some(s) => Some((s * 1e9) as u64),
        None => None,
    };
    let opts = WatchOptions {
        pid: a.pid,
        interval_ns: a.interval_ms.saturating_mul(1_000_000),
        duration_ns,
    };
    let stdout = std::io::stdout();
    let json = a.json;
    let mut out = stdout.lock();
    let r = lull_ctl::watch(opts, |s| {
        let _ = if json {
            writeln!(
                out,
                "{}",
                serde_json::to_string(s).expect("samples serialise")
            )
        } else {
            writeln!(
                out,
                "{:>10.3}s {:>7} {:>7} {:<15} {} cpu{:<3} cpu {:>12} ns  work {:>12} ns  +{} ns",
                s.t_ns as f64 / 1e9,
                s.pid,
                s.tid,
                s.comm,
                s.state,
                s.cpu,
                s.cpu_ns,
                s.work_ns,
                s.delta_cpu_ns
            )
        };
    });
    drop(out);
    match r {
        Ok(sum) if json => {
            println!("{}", serde_json::json!({ "summary": sum }));
            ExitCode::SUCCESS
        }
        Ok(sum) => {
            println!(
                "end: {} after {:.3} s; {} samples, {} threads seen ({} born, {} ended, {} \
                 vanished), {} ns per sample; following: {}; scaled: {}{}",
                if sum.process_exited {
                    "process exited"
                } else {
                    "time up"
                },
                sum.duration_ns as f64 / 1e9,
                sum.registry.samples,
                sum.registry.threads_seen,
                sum.born,
                sum.died,
                sum.registry.vanished,
                sum.sample_cost_ns_mean,
                sum.follow,
                sum.scaled,
                sum.unscaled_reason
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail("watch", e),
    }
}

fn run_cmd(a: RunArgs) -> ExitCode {
    let scheme = match Scheme::parse(&a.policy) {
        Ok(s) => s,
        Err(e) => return fail("run", e),
    };
    let sets = match lull_ctl::core_sets(a.fast.as_deref(), a.slow.as_deref(), &online()) {
        Ok(s) => s,
        Err(e) => return fail("run", e),
    };
    if a.sample_ms == 0 {
        return fail("run", "--sample-ms must be at least 1");
    }
    let opts = RunOptions {
        command: a.command,
        scheme,
        sets,
        sample_period_ns: a.sample_ms.saturating_mul(1_000_000),
        discard_output: a.quiet,
    };
    match lull_ctl::run(&opts) {
        Ok(r) if a.json => {
            println!("{}", crate::output::to_json(&r));
            ended_as(&r)
        }
        Ok(r) => {
            println!(
                "{}: {:.3} s, {}; {} samples ({} ns each); scaled: {}; following: {}",
                r.scheme,
                r.completion_ns as f64 / 1e9,
                match (r.exit_code, r.signal) {
                    (Some(code), _) => format!("exit {code}"),
                    (None, Some(sig)) => format!("killed by signal {sig}"),
                    (None, None) => "ended without a status".to_owned(),
                },
                r.samples,
                r.sample_cost_ns_mean,
                r.scaled,
                r.follow
            );
            let counters: Vec<String> = r
                .controller
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            println!("controller: {}", counters.join(" "));
            const COLS: [Col; 5] = [
                Col::Right("pid", 7),
                Col::Right("tid", 7),
                Col::Left("comm", 15),
                Col::Right("cpu_ms", 10),
                Col::Right("work_ms", 10),
            ];
            // The CPUs, free text, follow the columns.
            println!("{}  cpus", output::head(&COLS));
            for t in &r.threads {
                let mut cpus: Vec<u32> = t.placements.iter().map(|p| p.1).collect();
                cpus.sort_unstable();
                cpus.dedup();
                let cells = [
                    t.pid.to_string(),
                    t.tid.to_string(),
                    t.comm.clone(),
                    fixed(t.cpu_ns as f64 / 1e6, 1),
                    fixed(t.work_ns as f64 / 1e6, 1),
                ];
                println!(
                    "{}  {}",
                    output::row(&COLS, cells),
                    lull_os::topology::format_cpu_list(&cpus)
                );
            }
            ended_as(&r)
        }
        Err(e) => fail("run", e),
    }
}

/// `lull ctl run` ends as its command did, as `time` and `taskset` do: the command's exit code,
/// or 128 + the signal that ended it.
fn ended_as(r: &lull_ctl::RunReport) -> ExitCode {
    ExitCode::from(u8::try_from(r.shell_status()).unwrap_or(u8::MAX))
}

fn set_mask(a: &SetMaskArgs) -> ExitCode {
    let mask = match lull_ctl::cpu_mask("cpus", &a.cpus, &online()) {
        Ok(m) => m,
        Err(e) => return fail("set-mask", e),
    };
    let mut ctl = lull_ctl::Ctl::new();
    match ctl.set_mask(a.tid, mask) {
        Ok(()) => {
            ctl.keep_masks();
            println!("thread {}: CPUs {}", a.tid, a.cpus);
            ExitCode::SUCCESS
        }
        Err(e) => fail("set-mask", e),
    }
}

/// The overhead measurement's options: this binary's hidden `ctl burn` as the CPU-bound program
/// (one thread per online CPU) and as the parked threads sampled.
fn overhead_options(reps: usize, rounds: u64, samples: usize) -> Result<OverheadOptions, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    Ok(lull_reproduce::sections::live::overhead_options(
        &exe, reps, rounds, samples,
    ))
}

/// `lull reproduce`'s `controller_live` section as text: the monitoring overhead, then the live
/// toggling table.
pub fn section_table(r: &lull_reproduce::data::Controller) -> String {
    format!(
        "{}\n{}",
        overhead_text(&r.overhead, r.cpus),
        crate::live::toggling_text(&r.toggling)
    )
}

fn overhead_text(r: &overhead::OverheadReport, cpus: usize) -> String {
    format!(
        "sample: {} ns per thread ({} threads, {} samples; following: {})\n\
         CPU-bound program ({cpus} threads), median of {}: plain {:.3} s, watched every {} ms \
         {:.3} s: slowdown {:+.2} % (seed 004 §3.1: about {} %)\n",
        r.sample_ns_per_thread,
        r.sample_threads,
        r.samples,
        r.follow,
        r.plain_ns.len(),
        r.plain_median_ns as f64 / 1e9,
        r.interval_ns / 1_000_000,
        r.watched_median_ns as f64 / 1e9,
        r.slowdown_pct,
        r.seed_overhead_pct
    )
}

fn overhead_cmd(a: &OverheadArgs) -> ExitCode {
    let cpus = online().len().max(1);
    let opts = match overhead_options(a.reps, a.rounds, a.samples) {
        Ok(o) => o,
        Err(e) => return fail("overhead", e),
    };
    match overhead::measure(&opts) {
        Ok(r) => output::print_report(&r, a.json, |r| overhead_text(r, cpus)),
        Err(e) => fail("overhead", e),
    }
}
