//! Seed 003's painting experiment (Huh, Yoo, Hong, §VI-B-1, figure 6) on a modelled Tegra 250:
//! the Android painting app drawing a dot per touch while nice-0 CPU hogs loop beside it, under
//! the seed's legacy CFS, its framework-assisted interactive boost (eq. 6) at C = 3 and 10 ms,
//! VT-CFS with that boost, and today's EEVDF with and without a short custom slice for the
//! interactive task. Every figure is modelled.
//!
//! - [`spec`]: painting specs (`experiments/vtcfs/painting.toml`);
//! - [`models`]: each model's `[policy]` table;
//! - `painting`: the app, the Android 2.2 input path and SurfaceFlinger, the hogs;
//! - [`seed`]: what seed 003 reports, for printing beside the modelled figures.
//!
//! The boost itself is the simulated kernel's (`kernel::boost`), the classes `lull-sched`'s.

pub mod models;
mod painting;
pub mod seed;
pub mod spec;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use lull_model::time::NS_PER_MS;
use lull_sched::response::ResponseParts;
use lull_workload::rng::SplitMix64;
use serde::Serialize;

pub use models::{PaintingModel, EEVDF_INPUT_SLICE_US};
pub use spec::{PaintingSpec, PaintingTable};

use crate::engine::Engine;
use crate::event::Ev;
use crate::header::ResultHeader;
use crate::kernel::{BoostCounters, Cx};
use crate::policy::{PolicyError, RunPolicies};
use crate::report::LatencyStats;
use crate::soc::Soc;
use crate::spec::{CpuSpec, MAX_DURATION_MS};
use painting::Painting;

/// The mean of each part of eq. 5 over the touches, ms, as seed 003's figure 6 stacks them, and
/// the display part that closes the response (the surface posted → the frame on the display).
/// The parts sum to the mean response.
#[derive(Clone, Copy, PartialEq, Debug, Serialize)]
pub struct DecompositionMs {
    /// L_I: the touch's interrupt.
    pub interrupt: f64,
    /// L_S: interrupt handled → the interactive task's first instruction (the input threads'
    /// own work and waits included, as in the seed's t3 − t1).
    pub scheduling: f64,
    /// L_P: the interactive task runnable but not running, until it posts.
    pub preemption: f64,
    /// C: the interactive task running.
    pub compute: f64,
    /// Posted → shown: SurfaceFlinger's turn and composition, and the wait for the refresh.
    pub display: f64,
}

impl DecompositionMs {
    /// The means of `parts`; zeros for none.
    #[must_use]
    pub fn mean_of(parts: &[ResponseParts]) -> DecompositionMs {
        let n = parts.len().max(1) as f64;
        let mean =
            |f: fn(&ResponseParts) -> u64| parts.iter().map(|p| f(p) as f64).sum::<f64>() / n / 1e6;
        DecompositionMs {
            interrupt: mean(|p| p.interrupt_ns),
            scheduling: mean(|p| p.scheduling_ns),
            preemption: mean(|p| p.preemption_ns),
            compute: mean(|p| p.compute_ns),
            display: mean(|p| p.blocked_ns),
        }
    }
}

/// One model's figures (modelled, not measured).
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct PaintingModelResult {
    /// Touch → frame on the display, ms.
    pub response_ms: LatencyStats,
    /// The mean response split as eq. 5 splits it.
    pub decomposition_ms: DecompositionMs,
    pub touches: u32,
    /// Touches whose frame was shown (all of them: a run ends when the last is).
    pub responses: u32,
    /// What the interactive boost did; absent for the models without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boost: Option<BoostCounters>,
    /// CPU time the hogs got over the run, ms (their throughput).
    pub hog_cpu_ms: f64,
    pub duration_ms: f64,
    /// CPU time of each thread, ms.
    pub thread_cpu_ms: BTreeMap<String, f64>,
    /// Discrete events the engine processed.
    pub sim_events: u64,
}

/// A whole painting spec's results.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct PaintingResult {
    #[serde(flatten)]
    pub header: ResultHeader,
    pub hogs: u32,
    /// VT-CFS's preemption tick in the `vtcfs-*` models, ms.
    pub preempt_tick_ms: f64,
    pub models: BTreeMap<String, PaintingModelResult>,
}

impl PaintingResult {
    /// The JSON `lull sim run --json` prints: the figures, with seed 003's beside each model's.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!(self);
        let seed: serde_json::Map<String, serde_json::Value> = PaintingModel::ALL
            .into_iter()
            .filter(|m| self.models.contains_key(m.name()))
            .map(|m| (m.name().to_owned(), serde_json::json!(seed::reported(m))))
            .collect();
        v["seed_003_reported"] = serde_json::Value::Object(seed);
        v
    }
}

/// Why a painting run failed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum PaintingRunError {
    #[error("policy: {0}")]
    Policy(String),
    #[error("the touches' frames were not all shown within {limit_s} s of simulated time")]
    RunsForever { limit_s: u64 },
}

impl From<PolicyError> for PaintingRunError {
    fn from(e: PolicyError) -> PaintingRunError {
        PaintingRunError::Policy(match e {
            PolicyError::Unknown(u) => u.to_string(),
            PolicyError::Invalid { field, reason } => format!("{field}: {reason}"),
        })
    }
}

/// Runs every model of `spec`.
///
/// # Errors
/// As [`run_painting_model`].
pub fn run_painting_spec(spec: &PaintingSpec) -> Result<PaintingResult, PaintingRunError> {
    let mut models = BTreeMap::new();
    for &m in &spec.models {
        models.insert(m.name().to_owned(), run_painting_model(spec, m)?);
    }
    Ok(PaintingResult {
        header: spec.header.result_header(),
        hogs: spec.painting.hogs,
        preempt_tick_ms: spec.painting.preempt_tick_us as f64 / 1e3,
        models,
    })
}

/// The touches' times: touch `i` at a uniformly drawn offset within its slot. The same for
/// every model of a spec (a generator of its own, seeded by the spec).
#[must_use]
pub fn touch_times_ns(p: &PaintingTable, seed: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed);
    (0..u64::from(p.touches))
        .map(|i| {
            let slot = (p.start_ms + i * p.interval_ms) * NS_PER_MS;
            let jitter_ns = p.jitter_ms * NS_PER_MS;
            slot + if jitter_ns == 0 {
                0
            } else {
                rng.next_u64() % jitter_ns
            }
        })
        .collect()
}

/// Runs one model of `spec`.
///
/// # Errors
/// [`PaintingRunError::Policy`] when the model's policies cannot run on the platform;
/// [`PaintingRunError::RunsForever`] when the frames are not all shown within the simulator's
/// limit.
pub fn run_painting_model(
    spec: &PaintingSpec,
    model: PaintingModel,
) -> Result<PaintingModelResult, PaintingRunError> {
    let plat = &spec.header.platform;
    let p = &spec.painting;
    let cpu = CpuSpec {
        main_cores: plat.clusters[plat.main_cluster()].cores,
        companion: false,
    };
    let pol = RunPolicies::build(
        &model.policy(p.preempt_tick_us),
        plat,
        cpu.main_cores,
        false,
    )?;
    let mut eng = Engine::new(spec.header.seed);
    let mut soc = Soc::new(plat, cpu);
    let boost = pol.boost;
    let (mut kernel, mut pm) = pol.kernel_and_pm(plat, soc.cores.len());
    if let Some(b) = boost {
        kernel.enable_boost(b);
    }
    let mut user = Painting::new(
        &mut kernel,
        p.touches,
        p.hogs,
        plat.display.refresh_hz,
        p.paint_cycles,
    );
    let mut cx = Cx {
        eng: &mut eng,
        soc: &mut soc,
    };
    for (i, at) in touch_times_ns(p, spec.header.seed).into_iter().enumerate() {
        cx.eng.schedule_at(at, Ev::Inject(i as u32));
    }
    // The run covers every touch's slot, so the hogs' CPU time compares across models, and
    // goes on until the last frame is shown.
    let slots_end_ns = (p.start_ms + u64::from(p.touches) * p.interval_ms) * NS_PER_MS;
    let limit_ns = MAX_DURATION_MS * NS_PER_MS;
    cx.eng.schedule_at(slots_end_ns, Ev::End);
    pm.start(&mut cx);
    user.start(&mut kernel, &mut cx);
    kernel.arm_periodic_ticks(&mut cx);
    while let Some((now, ev)) = cx.eng.pop() {
        cx.soc.account(now, 0.0);
        let k = &mut kernel;
        if now >= limit_ns {
            return Err(PaintingRunError::RunsForever {
                limit_s: limit_ns / 1_000_000_000,
            });
        }
        match ev {
            Ev::Inject(i) => user.touch(i, k, &mut cx),
            Ev::Kernel(e) => k.handle(e, &mut user, &mut cx),
            Ev::Governor => pm.sample(k, &mut user, &mut cx),
            // The display's refresh is computed, not an interrupt; no window manager here.
            Ev::Vsync | Ev::Window(_) | Ev::Seam { .. } | Ev::End => {}
        }
        pm.after_event(k, &mut cx);
        cx.soc.update_power(0.0);
        if user.all_done() && now >= slots_end_ns {
            break;
        }
    }
    kernel.sync_all(&mut cx);
    let duration_ns = cx.eng.now_ns();
    let parts = user.responses();
    let mut rt: Vec<u64> = parts.iter().map(ResponseParts::total_ns).collect();
    rt.sort_unstable();
    let mut thread_cpu_ms = BTreeMap::new();
    for t in &kernel.tasks {
        thread_cpu_ms.insert(t.name.to_string(), t.exec_ns as f64 / 1e6);
    }
    let hog_cpu_ms = user
        .hogs
        .iter()
        .map(|&h| kernel.tasks[h].exec_ns as f64 / 1e6)
        .sum();
    Ok(PaintingModelResult {
        response_ms: LatencyStats::of_sorted_ns(&rt),
        decomposition_ms: DecompositionMs::mean_of(&parts),
        touches: p.touches,
        responses: parts.len() as u32,
        boost: kernel.boost_counters(),
        hog_cpu_ms,
        duration_ms: duration_ns as f64 / 1e6,
        thread_cpu_ms,
        sim_events: cx.eng.processed(),
    })
}
