//! Painting experiment specs (`experiments/vtcfs/painting.toml`): a platform, the models to
//! compare and the `[painting]` table (the hogs, the touches, VT-CFS's preemption tick). A spec is
//! a boundary: every problem is a [`PaintingSpecError`].

use serde::Deserialize;

use super::models::PaintingModel;
use crate::platform::{Platform, PlatformError};
use crate::spec::MAX_DURATION_MS;

/// The most CPU hogs a spec may run (a bound on nonsense, far above the seed's two).
pub const MAX_HOGS: u32 = 64;
/// The most touches a spec may replay.
pub const MAX_TOUCHES: u32 = 10_000;

/// The `[painting]` table.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaintingTable {
    /// Nice-0 tasks that loop forever beside the app (seed 003 §VI-B-1: two).
    pub hogs: u32,
    /// Touches, each drawing one dot.
    pub touches: u32,
    /// When the first touch's slot begins (the hogs and the governor settle before).
    pub start_ms: u64,
    /// Length of each touch's slot.
    pub interval_ms: u64,
    /// Each touch lands at a uniformly drawn offset in `[0, jitter_ms)` of its slot, so that the
    /// touches meet the hogs at every phase of their turns; 0 puts each at its slot's start.
    pub jitter_ms: u64,
    /// VT-CFS's preemption tick for the `vtcfs-*` models, µs (a whole number of the platform's
    /// scheduler ticks).
    pub preempt_tick_us: u64,
}

/// Why a painting spec was rejected.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum PaintingSpecError {
    #[error("spec is not valid TOML for a painting spec: {0}")]
    Syntax(String),
    #[error("unknown model `{0}` (known: cfs, cfs-boost-c3, cfs-boost-c10, vtcfs-c3, vtcfs-c10, eevdf, eevdf-slice)")]
    UnknownModel(String),
    #[error("unknown platform `{0}` (known: {known})", known = crate::platform::SHIPPED.join(", "))]
    UnknownPlatform(String),
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error(transparent)]
    Platform(#[from] PlatformError),
}

fn invalid(field: &'static str, reason: impl Into<String>) -> PaintingSpecError {
    PaintingSpecError::Invalid {
        field,
        reason: reason.into(),
    }
}

#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    experiment: String,
    description: String,
    platform: String,
    seed: u64,
    models: Vec<String>,
    painting: PaintingTable,
}

/// A checked painting spec.
#[derive(Clone, PartialEq, Debug)]
pub struct PaintingSpec {
    pub experiment: String,
    pub description: String,
    pub platform: Platform,
    pub seed: u64,
    pub models: Vec<PaintingModel>,
    pub painting: PaintingTable,
}

impl PaintingSpec {
    /// Whether `text` is a painting spec (it has a `[painting]` table).
    #[must_use]
    pub fn is_painting(text: &str) -> bool {
        toml::from_str::<toml::Table>(text).is_ok_and(|t| t.contains_key("painting"))
    }

    /// Parses and checks a spec.
    ///
    /// # Errors
    /// A [`PaintingSpecError`] naming the first problem.
    pub fn parse(text: &str) -> Result<PaintingSpec, PaintingSpecError> {
        let raw: RawSpec =
            toml::from_str(text).map_err(|e| PaintingSpecError::Syntax(e.to_string()))?;
        let platform = Platform::by_name(&raw.platform)
            .ok_or_else(|| PaintingSpecError::UnknownPlatform(raw.platform.clone()))?;
        if raw.experiment.is_empty() {
            return Err(invalid("experiment", "empty name"));
        }
        if raw.models.is_empty() {
            return Err(invalid("models", "no model to run"));
        }
        let mut models = Vec::new();
        for name in &raw.models {
            let m = PaintingModel::from_name(name)
                .ok_or_else(|| PaintingSpecError::UnknownModel(name.clone()))?;
            if models.contains(&m) {
                return Err(invalid("models", format!("`{name}` listed twice")));
            }
            models.push(m);
        }
        let p = raw.painting;
        if p.hogs > MAX_HOGS {
            return Err(invalid("painting.hogs", format!("at most {MAX_HOGS}")));
        }
        if p.touches == 0 || p.touches > MAX_TOUCHES {
            return Err(invalid(
                "painting.touches",
                format!("must be 1..={MAX_TOUCHES}"),
            ));
        }
        if p.interval_ms == 0 {
            return Err(invalid("painting.interval_ms", "must be positive"));
        }
        if p.jitter_ms > p.interval_ms {
            return Err(invalid(
                "painting.jitter_ms",
                "at most interval_ms (a touch stays in its slot, so the touches keep their order)",
            ));
        }
        let last_ms = u64::from(p.touches)
            .checked_mul(p.interval_ms)
            .and_then(|d| d.checked_add(p.start_ms));
        if last_ms.is_none_or(|ms| ms > MAX_DURATION_MS) {
            return Err(invalid(
                "painting",
                format!("start_ms + touches × interval_ms must be at most {MAX_DURATION_MS}"),
            ));
        }
        let tick_us = 1_000_000 / u64::from(platform.timer.hz);
        if p.preempt_tick_us == 0 || p.preempt_tick_us % tick_us != 0 {
            return Err(invalid(
                "painting.preempt_tick_us",
                format!("must be a positive multiple of the platform's tick ({tick_us} µs)"),
            ));
        }
        Ok(PaintingSpec {
            experiment: raw.experiment,
            description: raw.description,
            platform,
            seed: raw.seed,
            models,
            painting: p,
        })
    }
}
