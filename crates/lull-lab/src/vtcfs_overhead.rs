//! `lull live vtcfs-overhead`: seed 003's Table IV live — `hackbench` (Debian `rt-tests`) over
//! pipes and sockets, run with the boost machinery working beside it and without it, alternating
//! in one run.
//!
//! Three arms. **Boost**: the stack of `lull live vtcfs` ([`crate::vtcfs_live`]) with the nice
//! boost and no hogs — the daemon, the painting app, the stylus driver replaying the recording —
//! so every stylus event is pushed, boosted and given back while hackbench runs. **Stock**: the
//! same stack with the boost off. **Without**: no daemon, no app, no driver. The painting app's
//! own strokes take CPU time from hackbench in both stack arms, so the boost's cost is boost
//! against stock (`overhead_pct`, what seed 003's Table IV compares: the same workload with and
//! without its mechanism), and the whole stack's is boost against without (`stack_pct`).
//!
//! **Pairs.** The seed runs hackbench with 100, 200 and 400 pairs. A hackbench group is 20
//! senders and 20 receivers (`-f 20`, its default), so a pair is a sender and a receiver and
//! `pairs / 20` groups run: 5, 10 and 20 groups (200, 400 and 800 processes). The seed's Tegra
//! 250 has two cores, as this machine does, so the sizes are the seed's.
//!
//! Each repetition runs every size and transport in each arm, the order of the arms rotated from
//! one repetition to the next so that a drift of the machine's load falls on all alike. An
//! overhead is the change of the mean time.

use std::path::{Path, PathBuf};
use std::process::Command;

use lull_sched::boost::DEFAULT_C_NS;
use lull_sim::hackbench::seed::stated_overhead_pct;
use lull_sim::hackbench::spec::DEFAULT_FDS;
use lull_sim::hackbench::SEED_LOOPS;
use lull_workload::Trace;
use serde::Serialize;

use crate::vtcfs_live::{sleep_until, Stack, VtcfsLiveError, VtcfsPolicy};

/// The seed's sizes (Table IV).
pub const SEED_PAIRS: [u32; 3] = [100, 200, 400];
/// Pairs per hackbench group: its default 20 senders and 20 receivers (`-f 20`), as the
/// modelled hackbench counts them.
pub const PAIRS_PER_GROUP: u32 = DEFAULT_FDS;
/// Repetitions when none are asked.
pub const DEFAULT_REPS: u32 = 5;
/// Most repetitions.
pub const MAX_REPS: u32 = 100;

/// Over what hackbench sends: the transports of the modelled hackbench, whose seed figures
/// (Table IV, the stated overheads) this run is set beside.
pub use lull_sim::hackbench::Transport;

/// One run.
#[derive(Clone, Debug)]
pub struct OverheadSpec {
    pub reps: u32,
    pub pairs: Vec<u32>,
    pub hackbench: PathBuf,
    pub trace: Trace,
    pub app_binary: PathBuf,
}

impl OverheadSpec {
    /// The seed's sizes, `reps` repetitions (`None`: [`DEFAULT_REPS`]).
    ///
    /// # Errors
    /// [`VtcfsLiveError::BadReps`] out of 1..=[`MAX_REPS`].
    pub fn new(
        reps: Option<u32>,
        trace: Trace,
        app_binary: PathBuf,
    ) -> Result<OverheadSpec, VtcfsLiveError> {
        let reps = reps.unwrap_or(DEFAULT_REPS);
        if !(1..=MAX_REPS).contains(&reps) {
            return Err(VtcfsLiveError::BadReps(reps));
        }
        Ok(OverheadSpec {
            reps,
            pairs: SEED_PAIRS.to_vec(),
            hackbench: PathBuf::from("hackbench"),
            trace,
            app_binary,
        })
    }
}

/// One size and transport.
#[derive(Clone, Debug, Serialize)]
pub struct OverheadRow {
    pub transport: Transport,
    pub pairs: u32,
    pub groups: u32,
    /// hackbench's reported times, s, per repetition: no stack, the stack without the boost, the
    /// stack with it.
    pub without_s: Vec<f64>,
    pub stock_s: Vec<f64>,
    pub with_s: Vec<f64>,
    pub without_mean_s: f64,
    pub stock_mean_s: f64,
    pub with_mean_s: f64,
    /// The boost's cost: (with − stock) / stock, percent.
    pub overhead_pct: f64,
    /// The whole stack's: (with − without) / without, percent.
    pub stack_pct: f64,
    /// Seed 003 Table IV, for the transport.
    pub seed_overhead_pct: f64,
}

/// The report.
#[derive(Clone, Debug, Serialize)]
pub struct OverheadReport {
    pub reps: u32,
    pub rows: Vec<OverheadRow>,
    /// Over every row (summed mean times): the boost's cost and the whole stack's, percent.
    pub overhead_pct: f64,
    pub stack_pct: f64,
    /// What the boost did meanwhile: threads raised, summed over repetitions.
    pub boosted_pushes: u64,
    pub loadavg_before: Option<f64>,
}

fn hackbench(bin: &Path, transport: Transport, groups: u32) -> Result<f64, VtcfsLiveError> {
    let mut c = Command::new(bin);
    if transport == Transport::Pipe {
        c.arg("-p");
    }
    c.arg("-g")
        .arg(groups.to_string())
        .arg("-l")
        .arg(SEED_LOOPS.to_string());
    let out = c.output().map_err(|e| {
        VtcfsLiveError::Hackbench(format!(
            "cannot run {}: {e} (install Debian's rt-tests, scripts/debian-packages.txt)",
            bin.display()
        ))
    })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(VtcfsLiveError::Hackbench(format!(
            "{} exited with {}: {}",
            bin.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    parse_time(&text).ok_or_else(|| VtcfsLiveError::Hackbench(format!("no \"Time:\" in {text:?}")))
}

/// hackbench's `Time: 1.501` line, s.
#[must_use]
pub fn parse_time(text: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix("Time:"))
        .and_then(|t| t.trim().parse().ok())
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Runs every repetition.
///
/// # Errors
/// [`VtcfsLiveError`] when hackbench or the machinery cannot run.
pub fn run(spec: &OverheadSpec) -> Result<OverheadReport, VtcfsLiveError> {
    if !spec.app_binary.is_file() {
        return Err(VtcfsLiveError::AppBinary(spec.app_binary.clone()));
    }
    let loadavg_before = crate::vtcfs_live::loadavg_1min();
    let cells: Vec<(Transport, u32)> = [Transport::Pipe, Transport::Socket]
        .into_iter()
        .flat_map(|t| spec.pairs.iter().map(move |&p| (t, p)))
        .collect();
    // Per arm (without, stock, boost) and cell, the times.
    let mut times = vec![vec![Vec::new(); cells.len()]; 3];
    let mut boosted_pushes = 0;
    let groups = |pairs: u32| (pairs / PAIRS_PER_GROUP).max(1);
    for rep in 0..spec.reps {
        for k in 0..3 {
            let arm = (rep as usize + k) % 3;
            let policy = [None, Some(VtcfsPolicy::Stock), Some(VtcfsPolicy::Nice)][arm];
            let Some(policy) = policy else {
                for (i, &(t, p)) in cells.iter().enumerate() {
                    times[arm][i].push(hackbench(&spec.hackbench, t, groups(p))?);
                }
                continue;
            };
            let stack = Stack::start(policy, DEFAULT_C_NS, 0, &spec.trace, &spec.app_binary)?;
            sleep_until(stack.t0_ns);
            let mut got = Vec::new();
            for &(t, p) in &cells {
                got.push(hackbench(&spec.hackbench, t, groups(p)));
            }
            let stopped = stack.stop()?;
            boosted_pushes += stopped
                .daemon
                .and_then(|d| d.seam)
                .and_then(|s| s.policy_counters.get("boost").map(|c| c["boosted"]))
                .unwrap_or(0);
            for (i, t) in got.into_iter().enumerate() {
                times[arm][i].push(t?);
            }
        }
    }
    let pct = |a: f64, b: f64| lull_model::stats::change_pct(a, b).unwrap_or(f64::NAN);
    let rows: Vec<OverheadRow> = cells
        .iter()
        .enumerate()
        .map(|(i, &(transport, pairs))| {
            let m = [0, 1, 2].map(|arm| mean(&times[arm][i]));
            OverheadRow {
                transport,
                pairs,
                groups: groups(pairs),
                without_s: times[0][i].clone(),
                stock_s: times[1][i].clone(),
                with_s: times[2][i].clone(),
                without_mean_s: m[0],
                stock_mean_s: m[1],
                with_mean_s: m[2],
                overhead_pct: pct(m[1], m[2]),
                stack_pct: pct(m[0], m[2]),
                seed_overhead_pct: stated_overhead_pct(transport),
            }
        })
        .collect();
    let sum = |f: fn(&OverheadRow) -> f64| rows.iter().map(f).sum::<f64>();
    let (a, b, c) = (
        sum(|r| r.without_mean_s),
        sum(|r| r.stock_mean_s),
        sum(|r| r.with_mean_s),
    );
    Ok(OverheadReport {
        reps: spec.reps,
        overhead_pct: pct(b, c),
        stack_pct: pct(a, c),
        rows,
        boosted_pushes,
        loadavg_before,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hackbench_times_parse() {
        let out = "Running in process mode with 5 groups using 40 file descriptors each \
                   (== 200 tasks)\nEach sender will pass 100 messages of 100 bytes\nTime: 0.589\n";
        assert_eq!(parse_time(out), Some(0.589));
        assert_eq!(parse_time("Time: x\n"), None);
        assert_eq!(parse_time(""), None);
    }

    #[test]
    fn repetitions_are_checked() {
        let t = lull_workload::spiral::stylus_spiral();
        assert!(OverheadSpec::new(Some(0), t.clone(), PathBuf::new()).is_err());
        assert!(OverheadSpec::new(Some(MAX_REPS + 1), t.clone(), PathBuf::new()).is_err());
        let s = OverheadSpec::new(None, t, PathBuf::new()).unwrap();
        assert_eq!(
            (s.reps, s.pairs.as_slice()),
            (DEFAULT_REPS, &SEED_PAIRS[..])
        );
    }

    #[test]
    fn a_missing_hackbench_is_named() {
        let e = hackbench(Path::new("/nonexistent/hackbench"), Transport::Pipe, 1).unwrap_err();
        assert!(e.to_string().contains("rt-tests"), "{e}");
    }
}
