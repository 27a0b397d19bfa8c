//! Seed 004's scheduling schemes (§3, figures 3.1–3.9) on a modelled Odroid-XU3: a program's
//! threads on four big and four LITTLE cores, both clusters online, under the kernel's own
//! big.LITTLE placement ([`lull_sched::hmp::Hmp`]) and seed 004's controller
//! ([`lull_sched::controller::Controller`]) driven through the policy seam ([`crate::seam`]).
//! Every figure is modelled.
//!
//! Per model: when the last thread ended (`completion_s`), the speedup against `baseline`, the
//! CPU clusters' energy, the threads' migrations, and each thread's cores over time (the data of
//! figures 3.1–3.8; `lull_report` draws it).
//!
//! - [`spec`]: specs (`experiments/toggling/*.toml`);
//! - `workers`: the program's threads, their steps and barrier;
//! - [`seed`]: what figure 3.9 and figures 3.1–3.8 state.

pub mod seed;
pub mod spec;
#[cfg(test)]
mod tests;
mod workers;

use std::collections::BTreeMap;

use lull_audit::AuditLog;
use lull_model::time::NS_PER_S;
use lull_sched::controller::{Controller, CoreSets, Scheme, DEFAULT_SAMPLE_PERIOD_NS};
use lull_sched::hmp::Hmp;
use lull_sched::seam::CpuMask;
use lull_sched::CpuId;
use serde::Serialize;

pub use spec::TogglingSpec;
pub use workers::STEP_US;

use crate::drive::{drive_on, Machine};
use crate::header::ResultHeader;
use crate::platform::Platform;
use crate::policy::policy_reason;
use crate::seam::SeamDriver;
use workers::{cycles_in_us, Program};

/// The most simulated time a run may take before it is declared stuck.
pub const RUN_LIMIT_S: u64 = 3600;

/// One thread of one model's run.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct ThreadRun {
    /// When it finished (s from the start); `None` if it had not.
    pub end_s: Option<f64>,
    /// Its run time (s).
    pub cpu_s: f64,
    /// Its run time scaled to the fastest core at its top frequency (seed 004's scaled CPU time).
    pub work_s: f64,
    /// Switch-ins on another core than the previous one.
    pub migrations: u64,
    /// (from when in s, on which core) at each change of core, seen at its compute steps: the
    /// data of the core-over-time plot of figures 3.1–3.8 (`lull sim run --plot`, and the
    /// report's from the JSON, where each change is a `[t_s, core]` pair).
    pub cores: Vec<(f64, usize)>,
}

/// One model's run (modelled figures).
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct ModelRun {
    pub model: String,
    /// When the last thread ended.
    pub completion_s: f64,
    /// Against `baseline`: (baseline's completion / this one's − 1) × 100.
    pub speedup_pct: f64,
    /// Energy of the CPU clusters from the start to the last thread's end.
    pub energy_mj: f64,
    pub migrations: u64,
    /// The last thread's end less the first's: how unevenly the threads ended.
    pub end_spread_s: f64,
    /// The controller's counters (threads seen, slots, samples, decisions, masks asked).
    pub controller: BTreeMap<&'static str, u64>,
    pub threads: Vec<ThreadRun>,
}

/// A whole toggling spec's results.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct TogglingResult {
    #[serde(flatten)]
    pub header: ResultHeader,
    pub threads: u32,
    pub work_ms: u64,
    pub barrier_every_us: u64,
    pub hot_kib: u64,
    /// The fast (big) and slow (LITTLE) cores, as CPU numbers.
    pub fast_cpus: Vec<usize>,
    pub slow_cpus: Vec<usize>,
    pub models: Vec<ModelRun>,
    /// What seed 004 states for these experiments (figure 3.9).
    pub seed_figure_3_9: seed::Figure39,
}

/// Why a toggling run failed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum TogglingRunError {
    #[error("model `{model}`: policy: {reason}")]
    Policy { model: String, reason: String },
    #[error("model `{model}`: not finished after {limit_s} s of simulated time")]
    Stuck { model: String, limit_s: u64 },
}

/// The big and LITTLE cores of a platform with both clusters online, as CPU numbers in the
/// order the simulator numbers them (clusters in file order).
#[must_use]
pub fn core_sets(plat: &Platform) -> CoreSets {
    let mut fast = Vec::new();
    let mut slow = Vec::new();
    let main = plat.main_cluster();
    let mut cpu = 0;
    for (ci, c) in plat.clusters.iter().enumerate() {
        for _ in 0..c.cores {
            if ci == main {
                fast.push(CpuId(cpu));
            } else {
                slow.push(CpuId(cpu));
            }
            cpu += 1;
        }
    }
    CoreSets {
        fast: CpuMask::of(&fast),
        slow: CpuMask::of(&slow),
    }
}

/// Runs every model of `spec`.
///
/// # Errors
/// A [`TogglingRunError`] for policies that do not fit or a run that never finishes.
pub fn run_toggling_spec(spec: &TogglingSpec) -> Result<TogglingResult, TogglingRunError> {
    run_toggling_spec_audited(spec, false).map(|(r, _)| r)
}

/// As [`run_toggling_spec`], with each model's scheduling events in the audit log format of
/// `lull-audit` when `audit` (so `lull audit tlp` applies to the modelled programs).
///
/// # Errors
/// As [`run_toggling_spec`].
pub fn run_toggling_spec_audited(
    spec: &TogglingSpec,
    audit: bool,
) -> Result<(TogglingResult, Vec<(String, AuditLog)>), TogglingRunError> {
    let mut models = Vec::new();
    let mut logs = Vec::new();
    for &m in &spec.models {
        let (run, log) = run_one(spec, m, audit)?;
        if let Some(log) = log {
            logs.push((run.model.clone(), log));
        }
        models.push(run);
    }
    let base = models
        .iter()
        .find(|r| r.model == Scheme::Baseline.name())
        .map_or(0.0, |r| r.completion_s);
    for r in &mut models {
        r.speedup_pct = if r.completion_s > 0.0 {
            (base / r.completion_s - 1.0) * 100.0
        } else {
            0.0
        };
    }
    let sets = core_sets(&spec.header.platform);
    let result = TogglingResult {
        header: spec.header.result_header(),
        threads: spec.threads,
        work_ms: spec.work_ms,
        barrier_every_us: spec.barrier_every_us,
        hot_kib: spec.hot_kib,
        fast_cpus: sets.fast.cpus().map(|c| c.0).collect(),
        slow_cpus: sets.slow.cpus().map(|c| c.0).collect(),
        models,
        seed_figure_3_9: seed::figure_3_9(),
    };
    Ok((result, logs))
}

fn run_one(
    spec: &TogglingSpec,
    scheme: Scheme,
    audit: bool,
) -> Result<(ModelRun, Option<AuditLog>), TogglingRunError> {
    let plat = &spec.header.platform;
    let sets = core_sets(plat);
    let khz = plat.top_work_khz();
    let work = spec.work_ms * khz;
    let phase = cycles_in_us(spec.barrier_every_us, khz);
    let step = cycles_in_us(STEP_US, khz);
    let machine = Machine {
        all_clusters: true,
        placement: Some(Box::new(Hmp::new(sets.fast))),
        seam: Some(SeamDriver::new(Box::new(Controller::new(
            scheme,
            sets,
            DEFAULT_SAMPLE_PERIOD_NS,
        )))),
        audit,
    };
    let name = scheme.name();
    let (user, d) = drive_on(
        plat,
        &spec.policy,
        machine,
        spec.header.seed,
        RUN_LIMIT_S * NS_PER_S,
        true,
        |k, _| Program::new(k, spec.threads, work, phase, step, spec.hot_kib),
    )
    .map_err(|e| TogglingRunError::Policy {
        model: name.clone(),
        reason: policy_reason(&e),
    })?;
    if !d.finished {
        return Err(TogglingRunError::Stuck {
            model: name,
            limit_s: RUN_LIMIT_S,
        });
    }
    let s = |ns: u64| ns as f64 / 1e9;
    let threads: Vec<ThreadRun> = user
        .workers
        .iter()
        .enumerate()
        .map(|(t, w)| ThreadRun {
            end_s: w.done_ns.map(s),
            cpu_s: s(d.exec_ns[t]),
            work_s: s(d.work_ns[t]),
            migrations: d.migrations[t],
            cores: w.trace.iter().map(|&(at, c)| (s(at), c)).collect(),
        })
        .collect();
    let ends: Vec<f64> = threads.iter().filter_map(|t| t.end_s).collect();
    let first = ends.iter().copied().fold(f64::INFINITY, f64::min);
    let last = ends.iter().copied().fold(0.0, f64::max);
    let run = ModelRun {
        model: name,
        completion_s: s(d.ended_ns),
        speedup_pct: 0.0,
        energy_mj: d.cpu_energy_mj,
        migrations: d.migrations.iter().sum(),
        end_spread_s: if ends.is_empty() { 0.0 } else { last - first },
        controller: d
            .seam
            .map(|(_, c)| c.into_iter().collect())
            .unwrap_or_default(),
        threads,
    };
    Ok((run, d.audit))
}
