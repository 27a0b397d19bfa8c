//! Painting experiment specs (`kind = "painting"`, `experiments/vtcfs/painting.toml`): the
//! models to compare and the `[painting]` table (the hogs, the touches, VT-CFS's preemption
//! tick), after the header every kind shares. A spec is a boundary: every problem is a
//! [`crate::SpecError`].

use serde::Deserialize;

use super::models::PaintingModel;
use crate::header::Header;
use crate::spec::{named_models, MAX_DURATION_MS};
use crate::spec_error::{invalid, Problem};

/// The most CPU hogs a spec may run (a bound on nonsense, far above the seed's two).
pub const MAX_HOGS: u32 = 64;
/// The most touches a spec may replay.
pub const MAX_TOUCHES: u32 = 10_000;

/// The most work per touch a spec may give: 10 s at 1.2 GHz, far beyond any touch's handler.
pub const MAX_PAINT_CYCLES: u64 = 12_000_000_000;

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
    /// The interactive task's work per touch, C, in cycles (default
    /// [`crate::vtcfs::painting::PAINT_CYCLES`], whose comment gives its source).
    #[serde(default = "default_paint_cycles")]
    pub paint_cycles: u64,
}

fn default_paint_cycles() -> u64 {
    super::painting::PAINT_CYCLES
}

/// The tables of a painting spec after its header.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPainting {
    models: Vec<String>,
    painting: PaintingTable,
}

/// A checked painting spec.
#[derive(Clone, PartialEq, Debug)]
pub struct PaintingSpec {
    pub header: Header,
    pub models: Vec<PaintingModel>,
    pub painting: PaintingTable,
}

impl PaintingSpec {
    /// Checks a painting spec's tables after its header.
    ///
    /// # Errors
    /// The first [`Problem`].
    pub(crate) fn from_parts(header: Header, raw: RawPainting) -> Result<PaintingSpec, Problem> {
        let platform = &header.platform;
        let models = named_models(
            &raw.models,
            PaintingModel::from_name,
            PaintingModel::ALL,
            PaintingModel::name,
        )?;
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
        if p.paint_cycles == 0 || p.paint_cycles > MAX_PAINT_CYCLES {
            return Err(invalid(
                "painting.paint_cycles",
                format!("must be 1..={MAX_PAINT_CYCLES}"),
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
            header,
            models,
            painting: p,
        })
    }
}
