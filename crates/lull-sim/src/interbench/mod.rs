//! Interbench 0.31 in the simulator (seed 003 §VI-B-2, table II, figure 7): a benchmarked
//! interactive task — X, Audio, Video or Gaming — against a background load — None, Video, X,
//! Burn or Memload —, every task a nice-0 thread, under each model's scheduler. The latency is
//! interbench's: how late the task runs after it should have, at every wakeup, with missed
//! deadlines counted as whole intervals; reported as mean and maximum, with interbench's
//! "% desired CPU" and "% deadlines met". Every figure is modelled.
//!
//! The tasks are written directly (`tasks`), not as rt-app workloads: interbench's periodic
//! task skips a burn when it wakes a whole interval late and catches up whole intervals after
//! an overrun, X changes its run and interval every call and shifts its deadline, and Gaming's
//! latency is the overrun of a burn — none of which rt-app's events express.
//!
//! - [`spec`]: specs (`experiments/vtcfs/interbench-*.toml`);
//! - `tasks`: the emulated tasks; `memload`: Memload's memory and swap model;
//! - `drive`: the event loop shared with [`crate::hackbench`];
//! - [`seed`]: figure 7's numbers as far as the paper's text lets them be read.

mod memload;
pub mod seed;
pub mod spec;
mod tasks;
#[cfg(test)]
pub(crate) mod test_specs;
#[cfg(test)]
mod tests;

use lull_model::time::NS_PER_S;
use lull_workload::rng::SplitMix64;
use serde::Serialize;

pub use memload::{FAULT_CYCLES, SWAP_READ_MIB_PER_S, SWAP_WRITE_MIB_PER_S, SYSTEM_RESIDENT_MIB};
pub use spec::{Bench, InterbenchSpec, Load, PolicyModel, DEFAULT_BURN_THREADS};
pub use tasks::{
    AUDIO_INTERVAL_NS, AUDIO_RUN_NS, GAME_RUN_NS, LOAD_LEAD_NS, VIDEO_INTERVAL_NS, VIDEO_RUN_NS,
};

use crate::drive::drive;
use crate::header::ResultHeader;
use crate::policy::policy_reason;
use memload::MemCosts;
use tasks::{InterbenchUser, MachineCosts, Tally};

/// Interbench's latency figures, ms.
#[derive(Clone, Copy, PartialEq, Debug, Serialize)]
pub struct LatencyMs {
    pub mean: f64,
    pub max: f64,
}

/// One model against one load, its repetitions pooled (modelled figures).
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct InterbenchCell {
    pub model: String,
    pub load: String,
    pub latency_ms: LatencyMs,
    /// Latency samples (wakeups, or Gaming's burns) over every repetition.
    pub samples: u64,
    /// Interbench's "% desired CPU": burns done over burns wanted (Gaming: work done over work
    /// done plus lateness).
    pub desired_cpu_pct: f64,
    /// Interbench's "% deadlines met"; `None` for Gaming, which has no deadlines.
    pub deadlines_met_pct: Option<f64>,
    /// The benchmarked task's CPU time and switch-ins, per repetition.
    pub bench_cpu_ms: f64,
    pub bench_switches: f64,
    /// Memload's swap traffic in the last repetition, MiB (written, read).
    pub swap_mib: Option<(u64, u64)>,
}

/// What the seed reports for one model (figure 7, as far as it can be read).
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct SeedBeside {
    pub model: String,
    /// The largest modelled maximum over the loads.
    pub modelled_max_ms: f64,
    /// The seed's maximum for this benchmark and scheduler where its text states one.
    pub seed_max_ms: Option<f64>,
}

/// A whole interbench spec's results.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct InterbenchResult {
    #[serde(flatten)]
    pub header: ResultHeader,
    pub benchmark: String,
    pub duration_s: u64,
    pub repeats: u32,
    /// In the spec's order: models outer, loads inner.
    pub cells: Vec<InterbenchCell>,
    pub seed_figure_7: Vec<SeedBeside>,
    /// The numbers the garbled figure places in this benchmark's panel (bars uncertain).
    pub seed_panel_numbers_ms: Vec<f64>,
    /// Discrete events the engine processed over every run.
    pub sim_events: u64,
}

/// Why an interbench run failed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum InterbenchRunError {
    #[error("model `{model}`: policy: {reason}")]
    Policy { model: String, reason: String },
}

/// Runs every model of `spec` against every load.
///
/// # Errors
/// An [`InterbenchRunError`] when a model's policies do not fit the platform (a parsed spec
/// has checked them).
pub fn run_interbench_spec(spec: &InterbenchSpec) -> Result<InterbenchResult, InterbenchRunError> {
    let mut cells = Vec::new();
    let mut events = 0;
    let mut seed_figure_7 = Vec::new();
    for m in &spec.models {
        let mut modelled_max_ms: f64 = 0.0;
        for &load in &spec.loads {
            let (cell, ev) = run_cell(spec, m, load)?;
            events += ev;
            modelled_max_ms = modelled_max_ms.max(cell.latency_ms.max);
            cells.push(cell);
        }
        seed_figure_7.push(SeedBeside {
            model: m.name.clone(),
            modelled_max_ms,
            seed_max_ms: seed::stated_max_ms(spec.benchmark, &m.name),
        });
    }
    Ok(InterbenchResult {
        header: spec.header.result_header(),
        benchmark: spec.benchmark.name().to_owned(),
        duration_s: spec.duration_s,
        repeats: spec.repeats,
        cells,
        seed_figure_7,
        seed_panel_numbers_ms: seed::panel_numbers_ms(spec.benchmark),
        sim_events: events,
    })
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// One model against one load, every repetition; returns the cell and the engine's events.
fn run_cell(
    spec: &InterbenchSpec,
    m: &PolicyModel,
    load: Load,
) -> Result<(InterbenchCell, u64), InterbenchRunError> {
    let plat = &spec.header.platform;
    let main = &plat.clusters[plat.main_cluster()];
    let top_khz = main.opps.last().map_or(1_000_000, |o| o.khz);
    let tick_ns = NS_PER_S / u64::from(plat.timer.hz);
    let mem = MemCosts::new(plat, spec.ram_mib, top_khz);
    let mut tally = Tally::default();
    let (mut cpu_ns, mut switches, mut events) = (0u64, 0u64, 0u64);
    let mut swap = None;
    for r in 0..spec.repeats {
        let run_seed = spec.header.seed.wrapping_add(u64::from(r));
        // Each repetition starts the task at another point of the tick.
        let start_ns = LOAD_LEAD_NS + SplitMix64::new(run_seed).below(tick_ns);
        let (user, d) = drive(
            plat,
            &m.policy,
            run_seed,
            start_ns + spec.duration_s * NS_PER_S,
            false,
            |k, _| {
                InterbenchUser::new(
                    k,
                    spec.benchmark,
                    load,
                    spec.burn_threads,
                    start_ns,
                    MachineCosts {
                        mem,
                        l2_kib: plat.costs.l2_kib,
                        top_khz,
                    },
                )
            },
        )
        .map_err(|e| InterbenchRunError::Policy {
            model: m.name.clone(),
            reason: policy_reason(&e),
        })?;
        tally.merge(&user.bench_tally());
        cpu_ns += d.exec_ns[user.bench_tid()];
        switches += d.switches[user.bench_tid()];
        events += d.events;
        swap = user.swap_mib();
    }
    let reps = f64::from(spec.repeats);
    let mean_ns = if tally.samples == 0 {
        0.0
    } else {
        tally.total_latency_ns as f64 / tally.samples as f64
    };
    let gaming = spec.benchmark == Bench::Gaming;
    Ok((
        InterbenchCell {
            model: m.name.clone(),
            load: load.name().to_owned(),
            latency_ms: LatencyMs {
                mean: mean_ns / 1e6,
                max: tally.max_latency_ns as f64 / 1e6,
            },
            samples: tally.samples,
            desired_cpu_pct: pct(
                tally.achieved_burns,
                tally.achieved_burns + tally.missed_burns,
            ),
            deadlines_met_pct: (!gaming).then(|| {
                pct(
                    tally.deadlines_met,
                    tally.deadlines_met + tally.missed_deadlines,
                )
            }),
            bench_cpu_ms: cpu_ns as f64 / 1e6 / reps,
            bench_switches: switches as f64 / reps,
            swap_mib: swap,
        },
        events,
    ))
}
