//! Hackbench in the simulator (seed 003 §VI-B-3, table IV): groups of senders and receivers
//! exchanging 100-byte messages over pipes or Unix stream sockets (rt-tests `hackbench.c`,
//! process mode), the total elapsed time under each model's scheduler, and each model's
//! overhead over the spec's first. Every figure is modelled.
//!
//! Seed 003 counts "pairs of tasks"; hackbench counts groups of `fds` (20) senders and `fds`
//! receivers, so `pairs / fds` groups: 100, 200 and 400 pairs are hackbench's `-g 5`, `-g 10`
//! and `-g 20`. With hackbench's default 100 loops those runs pass 200 000, 400 000 and 800 000
//! messages, the size the seed's 4-14 s on the Tegra 250 fit; specs run fewer loops by default
//! (`--seed-size` restores 100).
//!
//! The overhead comes out of the simulation: how often each class preempts (tick and wakeup
//! preemption, VT-CFS's preemption tick), hence how many context switches and cache refills at
//! the platform's costs, and how the woken tasks are placed. Both classes run the same check at
//! every tick (CFS: has the turn used its slice; VT-CFS: has it run a preemption tick and is its
//! VR still the smallest); both read the leftmost task and compare, so the tick costs the
//! platform's `tick_cycles` under either.
//!
//! - [`spec`]: specs (`experiments/vtcfs/hackbench*.toml`);
//! - [`channel`]: a pipe's and a socket's capacity and wakeups;
//! - `workers`: the senders and receivers and their per-message costs;
//! - [`seed`]: table IV.

pub mod channel;
pub mod seed;
pub mod spec;
#[cfg(test)]
mod tests;
mod workers;

use lull_model::time::NS_PER_S;
use serde::Serialize;

pub use channel::Transport;
pub use spec::{HackbenchSpec, SEED_LOOPS};
pub use workers::{
    PIPE_READ_CYCLES, PIPE_WRITE_CYCLES, SOCKET_READ_CYCLES, SOCKET_WRITE_CYCLES, WORKER_HOT_KIB,
};

use crate::drive::drive;
use crate::header::ResultHeader;
use crate::policy::policy_reason;
use workers::Hackbench;

/// The most simulated time a run may take before it is declared stuck.
pub const RUN_LIMIT_S: u64 = 3600;

/// One model, transport and size (modelled figures).
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct HackbenchRun {
    pub model: String,
    pub transport: Transport,
    pub pairs: u32,
    /// Hackbench's `-g`: `pairs / fds`.
    pub groups: u32,
    /// From the start signal until the last worker finished (hackbench's "Time:").
    pub elapsed_s: f64,
    pub messages: u64,
    /// Switch-ins of every worker.
    pub context_switches: u64,
    /// Discrete events the engine processed.
    pub sim_events: u64,
}

/// A model's overhead over the baseline (the spec's first model) at one transport and size.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct HackbenchOverhead {
    pub model: String,
    pub baseline: String,
    pub transport: Transport,
    pub pairs: u32,
    pub overhead_pct: f64,
    /// More (or fewer) context switches than the baseline, %.
    pub switches_change_pct: f64,
    /// The seed's table IV row (CFS, VT-CFS with T = 5 ms on the Tegra 250), where it has one.
    pub seed: Option<seed::TableIvRow>,
}

/// A model's mean overhead over the baseline per transport, beside the seed's stated one.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct MeanOverhead {
    pub model: String,
    pub transport: Transport,
    pub overhead_pct: f64,
    /// §VI-B-3's 0.99 % (pipes) and 0.46 % (sockets) for VT-CFS over CFS.
    pub seed_pct: f64,
}

/// A whole hackbench spec's results.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct HackbenchResult {
    #[serde(flatten)]
    pub header: ResultHeader,
    pub loops: u64,
    pub fds: u32,
    pub datasize: u32,
    pub runs: Vec<HackbenchRun>,
    pub overheads: Vec<HackbenchOverhead>,
    pub mean_overheads: Vec<MeanOverhead>,
}

/// Why a hackbench run failed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum HackbenchRunError {
    #[error("model `{model}`: policy: {reason}")]
    Policy { model: String, reason: String },
    #[error("model `{model}`, {transport}, {pairs} pairs: not finished after {limit_s} s of simulated time ({delivered} of {messages} messages)")]
    Stuck {
        model: String,
        transport: &'static str,
        pairs: u32,
        limit_s: u64,
        delivered: u64,
        messages: u64,
    },
}

/// Runs every model of `spec` at every transport and size.
///
/// # Errors
/// A [`HackbenchRunError`] for a policy that does not fit or a run that never finishes.
pub fn run_hackbench_spec(spec: &HackbenchSpec) -> Result<HackbenchResult, HackbenchRunError> {
    let mut runs = Vec::new();
    for m in &spec.models {
        for &t in &spec.transports {
            for &p in &spec.pairs {
                runs.push(run_one(spec, m, t, p)?);
            }
        }
    }
    let base = &spec.models[0].name;
    let find = |model: &str, t: Transport, p: u32| {
        runs.iter()
            .find(|r| r.model == model && r.transport == t && r.pairs == p)
    };
    let mut overheads = Vec::new();
    let mut mean_overheads = Vec::new();
    for m in &spec.models[1..] {
        for &t in &spec.transports {
            let mut sum = 0.0;
            for &p in &spec.pairs {
                let (Some(b), Some(r)) = (find(base, t, p), find(&m.name, t, p)) else {
                    continue;
                };
                let overhead_pct = (r.elapsed_s / b.elapsed_s - 1.0) * 100.0;
                sum += overhead_pct;
                overheads.push(HackbenchOverhead {
                    model: m.name.clone(),
                    baseline: base.clone(),
                    transport: t,
                    pairs: p,
                    overhead_pct,
                    switches_change_pct: (r.context_switches as f64
                        / b.context_switches.max(1) as f64
                        - 1.0)
                        * 100.0,
                    seed: seed::table_iv(t, p),
                });
            }
            mean_overheads.push(MeanOverhead {
                model: m.name.clone(),
                transport: t,
                overhead_pct: sum / spec.pairs.len() as f64,
                seed_pct: seed::stated_overhead_pct(t),
            });
        }
    }
    Ok(HackbenchResult {
        header: spec.header.result_header(),
        loops: spec.loops,
        fds: spec.fds,
        datasize: spec.datasize,
        runs,
        overheads,
        mean_overheads,
    })
}

/// One model, transport and size.
fn run_one(
    spec: &HackbenchSpec,
    m: &crate::interbench::PolicyModel,
    t: Transport,
    pairs: u32,
) -> Result<HackbenchRun, HackbenchRunError> {
    let groups = pairs / spec.fds;
    let messages = u64::from(groups) * u64::from(spec.fds) * u64::from(spec.fds) * spec.loops;
    let (user, d) = drive(
        &spec.header.platform,
        &m.policy,
        spec.header.seed,
        RUN_LIMIT_S * NS_PER_S,
        true,
        |k, _| Hackbench::new(k, t, groups, spec.fds, spec.loops, spec.datasize),
    )
    .map_err(|e| HackbenchRunError::Policy {
        model: m.name.clone(),
        reason: policy_reason(&e),
    })?;
    if !d.finished || user.delivered != messages {
        return Err(HackbenchRunError::Stuck {
            model: m.name.clone(),
            transport: t.name(),
            pairs,
            limit_s: RUN_LIMIT_S,
            delivered: user.delivered,
            messages,
        });
    }
    Ok(HackbenchRun {
        model: m.name.clone(),
        transport: t,
        pairs,
        groups,
        elapsed_s: d.ended_ns as f64 / 1e9,
        messages,
        context_switches: d.switches.iter().sum(),
        sim_events: d.events,
    })
}
