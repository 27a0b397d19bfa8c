//! `lull lab sched`: lull-scx against EEVDF, scx_lavd and scx_bpfland in the lab guest
//! (`lull_lab::scx`), and the table of `lull reproduce`'s `lab_sched` section (run by
//! `lull_reproduce::lab_sched`). This parses and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lull_lab::experiment;
use lull_lab::scx::{self, SchedReport, SchedSpec, Scheduler};

use crate::output::{self, figure, Col};

#[derive(Args, Debug)]
pub struct SchedArgs {
    /// Schedulers to compare, comma-separated (eevdf, lull-scx, lull-scx-ucsg, scx_lavd,
    /// scx_bpfland); EEVDF always runs first, as the ratios' base.
    #[arg(
        long,
        default_value = "eevdf,lull-scx,lull-scx-ucsg,scx_lavd,scx_bpfland"
    )]
    schedulers: String,
    /// The stylus recording for the painting scenario (default: traces/stylus-spiral.trace or the
    /// built-in spiral).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Replay only the recording's first N events.
    #[arg(long, value_parser = clap::value_parser!(u64).range(2..))]
    events: Option<u64>,
    /// Replay the stylus this many times slower than recorded (1 = its own pace). The default
    /// keeps the painting app's demand under one guest CPU under TCG (`lull_lab::scx::DEFAULT_STRETCH`).
    #[arg(long, default_value_t = scx::DEFAULT_STRETCH,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(scx::MAX_STRETCH)))]
    stretch: u32,
    /// Rounds, each running every scheduler in turn; the table gives medians over rounds, each
    /// ratio the median of the rounds' ratios to EEVDF (about 4 minutes a round under TCG).
    #[arg(long, default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(scx::MAX_ROUNDS)))]
    rounds: u32,
    /// The file manager scenario's scale (0 < scale <= 1; `lull live ucsg --scale`).
    #[arg(long, default_value_t = 0.1)]
    scale: f64,
    /// Only the painting scenario.
    #[arg(long)]
    painting_only: bool,
    /// The lull-app binary (default: next to this one).
    #[arg(long)]
    app_binary: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

fn parse_schedulers(s: &str) -> Result<Vec<Scheduler>, String> {
    let mut out = vec![Scheduler::Eevdf];
    for name in s.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let sch = Scheduler::ALL
            .into_iter()
            .find(|x| x.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown scheduler {name:?}; expected eevdf, lull-scx, lull-scx-ucsg, scx_lavd or scx_bpfland"
                )
            })?;
        if !out.contains(&sch) {
            out.push(sch);
        }
    }
    Ok(out)
}

/// The columns of `lull lab sched`'s table, one row per scheduler and scenario (ratios to
/// EEVDF's figure in the same scenario: `/E`).
const ROW_COLS: [Col; 16] = [
    Col::Left("scheduler", 12),
    Col::Left("scenario", 20),
    Col::Right("mean µs", 10),
    Col::Right("p99 µs", 10),
    Col::Right("p99/E", 8),
    Col::Right("mean/E", 8),
    Col::Right("drawn", 9),
    Col::Right("all p99 µs", 10),
    Col::Right("all/E", 8),
    Col::Right("hogs M/s", 9),
    Col::Right("hogs/E", 8),
    Col::Right("hogs CPU%", 9),
    Col::Right("draw ms", 9),
    Col::Right("zip s", 7),
    Col::Right("ftp s", 7),
    Col::Right("sched ms", 9),
];

/// The report as a table.
pub fn table(r: &SchedReport) -> String {
    use std::fmt::Write as _;
    let mut t = String::new();
    let _ = writeln!(t, "kernel {} ({} CPUs); {}", r.kernel, r.cpus, r.note);
    if r.per_round.len() > 1 {
        let _ = writeln!(
            t,
            "medians over {} rounds (each ratio the median of the rounds' ratios)",
            r.per_round.len()
        );
    }
    let rows = r.rows.iter().map(|row| {
        [
            row.scheduler.name().to_owned(),
            row.scenario.clone(),
            figure(row.response_mean_us, 0),
            figure(row.response_p99_us, 0),
            figure(row.p99_vs_eevdf, 2),
            figure(row.mean_vs_eevdf, 2),
            row.responses
                .zip(row.events)
                .map_or_else(|| "-".to_owned(), |(r, e)| format!("{r}/{e}")),
            figure(row.response_all_p99_us, 0),
            figure(row.all_p99_vs_eevdf, 2),
            figure(row.hog_throughput, 1),
            figure(row.throughput_vs_eevdf, 3),
            figure(row.hog_cpu_share.map(|x| x * 100.0), 1),
            figure(row.drawing_cpu_ms, 0),
            figure(row.zip_s, 1),
            figure(row.ftp_s, 1),
            figure(row.scheduler_cpu_ms, 0),
        ]
    });
    t.push_str(&output::table(&ROW_COLS, rows));
    for (s, why) in &r.skipped {
        let _ = writeln!(t, "skipped {}: {why}", s.name());
    }
    for (s, scenario, why) in &r.failed {
        let _ = writeln!(t, "failed {} {scenario}: {why}", s.name());
    }
    for st in &r.lull_scx_stats {
        let _ = writeln!(
            t,
            "{} counts, round {}: {}",
            st["scheduler"].as_str().unwrap_or("lull-scx"),
            st["round"],
            st["counts"]
        );
    }
    t
}

pub fn run(a: &SchedArgs) -> ExitCode {
    let schedulers = match parse_schedulers(&a.schedulers) {
        Ok(s) => s,
        Err(e) => return output::failed("lull lab sched", &e, true),
    };
    if !(a.scale > 0.0 && a.scale <= 1.0) {
        eprintln!("lull lab sched: --scale must be in (0, 1], got {}", a.scale);
        return ExitCode::from(2);
    }
    let trace = match lull_lab::live::stylus_trace(a.trace.as_deref()) {
        Ok(t) => t,
        Err(e) => return output::failed("lull lab sched", &e, true),
    };
    let app_binary = match experiment::app_binary(a.app_binary.as_deref()) {
        Ok(p) => p,
        Err(e) => return output::failed("lull lab sched", &e, false),
    };
    let spec = SchedSpec {
        schedulers,
        trace,
        events: a.events.and_then(|n| usize::try_from(n).ok()),
        stretch: a.stretch,
        scale: a.scale,
        app_binary,
        painting_only: a.painting_only,
        rounds: a.rounds,
    };
    match scx::run(&spec) {
        Ok(r) => {
            if a.json {
                println!("{}", crate::output::to_json(&r));
            } else {
                print!("{}", table(&r));
            }
            ExitCode::SUCCESS
        }
        Err(e) => output::failed("lull lab sched", &e, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eevdf_always_comes_first_and_names_are_checked() {
        assert_eq!(
            parse_schedulers("lull-scx,scx_lavd").unwrap(),
            [Scheduler::Eevdf, Scheduler::LullScx, Scheduler::ScxLavd]
        );
        assert_eq!(parse_schedulers("eevdf").unwrap(), [Scheduler::Eevdf]);
        assert!(parse_schedulers("cfs").unwrap_err().contains("cfs"));
    }
}
