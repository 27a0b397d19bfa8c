//! What a run reports, and running a whole spec.

use std::collections::BTreeMap;

use lull_model::stats::{cdf_points, nearest_rank};
use serde::Serialize;

use lull_model::DeliveryModel;

use crate::header::ResultHeader;

pub use crate::soc::POWER_SERIES_BUCKET_MS;

/// Latency from event injection to handler start, in milliseconds; `None` when no event was
/// handled (the video experiment).
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct LatencyStats {
    pub mean: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
    /// The distribution: values at `lull_model::stats::CDF_PERCENTS` (0 = min … 100 = max),
    /// nearest rank; empty when no event was handled.
    pub cdf: Vec<f64>,
}

impl LatencyStats {
    /// Statistics of ascending latencies in ns; p99 by nearest rank.
    #[must_use]
    pub fn of_sorted_ns(sorted: &[u64]) -> LatencyStats {
        if sorted.is_empty() {
            return LatencyStats {
                mean: None,
                p99: None,
                max: None,
                cdf: Vec::new(),
            };
        }
        let n = sorted.len();
        let sum: u128 = sorted.iter().map(|&x| u128::from(x)).sum();
        LatencyStats {
            mean: Some(sum as f64 / n as f64 / 1e6),
            p99: nearest_rank(sorted, 99).map(|v| v as f64 / 1e6),
            max: Some(sorted[n - 1] as f64 / 1e6),
            cdf: cdf_points(sorted)
                .into_iter()
                .map(|v| v as f64 / 1e6)
                .collect(),
        }
    }
}

/// One model's figures (modelled, not measured).
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct ModelResult {
    /// Mean of the board power sampled every 1 ms.
    pub power_mw_mean: f64,
    /// Largest 1 ms sample.
    pub power_mw_max_1ms: f64,
    /// Board power over time: the 1 ms samples averaged over consecutive
    /// [`POWER_SERIES_BUCKET_MS`]-ms buckets (the last one may be shorter), mW to
    /// 0.1 mW.
    pub power_mw_per_100ms: Vec<f64>,
    /// The CPU clusters' share of `power_mw_mean`: board power less the fixed rest-of-board and
    /// (lit) display power.
    pub cpu_power_mw_mean: f64,
    /// Energy over the whole run (exact integral of the piecewise-constant power).
    pub energy_mj: f64,
    pub duration_ms: f64,
    pub latency_ms: LatencyStats,
    /// Event-to-frame latency: from an event's injection to the end of the draw of the first
    /// frame that shows it (the baselines' compositor pass not included).
    pub frame_latency_ms: LatencyStats,
    pub events_injected: u64,
    pub events_handled: u64,
    /// Events lost: no listener, or private-queue overflow.
    pub events_dropped: u64,
    /// Events still queued (not yet handled) when the run ended.
    pub events_pending_at_end: u64,
    /// Discrete events the engine processed in this run.
    pub sim_events: u64,
    pub cluster_switches: u64,
    /// Time spent with guiS idle forcing in effect.
    pub idle_forced_ms: f64,
    /// CPU time of each thread (by name), ms.
    pub thread_cpu_ms: BTreeMap<String, f64>,
    /// Wake-ups of each thread (by name): each time it left a sleep, a wait or guiS's freeze.
    pub thread_wakeups: BTreeMap<String, u64>,
    /// All threads' wake-ups per second of the run.
    pub wakeups_per_s: f64,
    /// Frames the app drew (posted to the compositor, or composed inside the KDS).
    pub frames_drawn: u64,
    /// In the ESM models: the dispatcher kernel thread's wake-ups per event handled (at most
    /// one: the app's `esm_wait` never wakes it, and events queued while the app is busy are
    /// taken from its private queue without it). `None` for the baselines or without events.
    pub daemon_wakeups_per_event: Option<f64>,
    /// What the interactive boost did (`[policy] boost_c_ms` or `boost_slice_us`); absent
    /// without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boost: Option<crate::kernel::BoostCounters>,
    /// Per core: time in each state (`busy@<kHz>`, `waking`, idle-state names, cluster-off name,
    /// `offline`).
    pub residency_ms: BTreeMap<String, BTreeMap<String, f64>>,
    /// Per cluster: busy time at each frequency (kHz).
    pub busy_freq_residency_ms: BTreeMap<String, BTreeMap<String, f64>>,
    pub platform_kind: String,
}

/// A whole spec's results.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct ExperimentResult {
    #[serde(flatten)]
    pub header: ResultHeader,
    pub models: BTreeMap<String, ModelResult>,
}

impl ExperimentResult {
    /// The model the others are compared against: ESM+KDS+guiS when the spec ran it, else ESM
    /// alone; with its name.
    #[must_use]
    pub fn ours(&self) -> Option<(&'static str, &ModelResult)> {
        [DeliveryModel::EsmKdsGuis, DeliveryModel::Esm]
            .into_iter()
            .map(DeliveryModel::name)
            .find(|name| self.models.contains_key(*name))
            .map(|name| (name, &self.models[name]))
    }

    /// The JSON `lull sim run --json` prints: the figures, then ours against each other model
    /// (`reduction_of`) and what seed 000 reported against its pull model.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!(self);
        if let Some((ours_name, ours)) = self.ours() {
            let mut red = serde_json::Map::new();
            for (name, base) in self.models.iter().filter(|(n, _)| n.as_str() != ours_name) {
                red.insert(
                    name.clone(),
                    serde_json::json!({
                        "power_reduction_pct": power_reduction_pct(base, ours),
                        "mean_latency_change_ms": latency_change_ms(base, ours),
                    }),
                );
            }
            v["reduction_of"] = serde_json::json!({ ours_name: red });
            v["seed_000_reported_vs_pull"] =
                serde_json::json!(seed_000_reported(&self.header.experiment));
        }
        v
    }
}

/// Power reduction of `ours` against `base`, in percent of `base` (positive = ours uses less).
#[must_use]
pub fn power_reduction_pct(base: &ModelResult, ours: &ModelResult) -> f64 {
    if base.power_mw_mean == 0.0 {
        return 0.0;
    }
    (base.power_mw_mean - ours.power_mw_mean) / base.power_mw_mean * 100.0
}

/// What seed 000 chapter 6 reports for an experiment (ESM+KDS+guiS against its pull model), as
/// text for printing beside the modelled figures. These are the seed's measurements on a real
/// board, not targets: nothing in the simulator is fitted to them.
#[must_use]
pub fn seed_000_reported(experiment: &str) -> Option<&'static str> {
    Some(match experiment {
        "tracking-10s" => "seed: -41.3 mW (5.2 %), latency -0.3 ms",
        "tracking-20s" => "seed: -117.9 mW (15.3 %), latency -1.9 ms",
        "tracking-60s" => "seed: -184.7 mW (22.9 %), latency -6.7 ms",
        "messaging" => "seed: -218.4 mW during reading pauses, latency up to -17.1 ms",
        "video" => "seed: -182.4 mW on average (no latency: no events)",
        "esm-alone" => "seed (ESM alone, one core): -23.8 %, latency -13.6 ms on average",
        _ => return None,
    })
}

/// Mean-latency change of `ours` against `base` in ms (negative = ours is faster).
#[must_use]
pub fn latency_change_ms(base: &ModelResult, ours: &ModelResult) -> Option<f64> {
    Some(ours.latency_ms.mean? - base.latency_ms.mean?)
}
