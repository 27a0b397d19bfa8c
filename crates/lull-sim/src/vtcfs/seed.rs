//! What seed 003 reports for its painting experiment (§VI-B-1, figure 6), for printing beside
//! the modelled figures. These are the seed's measurements on its board, not targets: nothing in
//! the simulator is fitted to them.

use super::models::PaintingModel;

/// Mean response time under the legacy system (CFS, no boost), ms.
pub const LEGACY_RESPONSE_MS: f64 = 275.9;
/// The legacy response's share that is preemption latency, %.
pub const LEGACY_PREEMPTION_PCT: f64 = 50.56;
/// Mean response with the boost at C = 3 and 10 ms, ms.
pub const BOOST_C3_RESPONSE_MS: f64 = 243.37;
pub const BOOST_C10_RESPONSE_MS: f64 = 194.34;
/// Mean preemption latency with the boost at C = 3 and 10 ms, ms.
pub const BOOST_C3_PREEMPTION_MS: f64 = 109.64;
pub const BOOST_C10_PREEMPTION_MS: f64 = 56.25;
/// The response's reduction against the legacy system with VT-CFS and the boost at C = 3 and
/// 10 ms, %.
pub const VTCFS_C3_REDUCTION_PCT: f64 = 12.6;
pub const VTCFS_C10_REDUCTION_PCT: f64 = 31.4;

/// What the seed reports for a model.
#[derive(Clone, Copy, PartialEq, Debug, serde::Serialize)]
pub struct SeedPainting {
    /// Mean response, ms (for VT-CFS: the legacy response less the reported reduction).
    pub response_ms: f64,
    /// Mean preemption latency, ms, where the seed gives it.
    pub preemption_ms: Option<f64>,
    /// Reduction against the legacy system, %.
    pub reduction_pct: f64,
}

/// The seed's figures for `model`; `None` for the EEVDF models, which the seed predates.
#[must_use]
pub fn reported(model: PaintingModel) -> Option<SeedPainting> {
    let reduction = |ms: f64| (LEGACY_RESPONSE_MS - ms) / LEGACY_RESPONSE_MS * 100.0;
    let from_reduction = |pct: f64| LEGACY_RESPONSE_MS * (1.0 - pct / 100.0);
    Some(match model {
        PaintingModel::Cfs => SeedPainting {
            response_ms: LEGACY_RESPONSE_MS,
            preemption_ms: Some(LEGACY_RESPONSE_MS * LEGACY_PREEMPTION_PCT / 100.0),
            reduction_pct: 0.0,
        },
        PaintingModel::CfsBoostC3 => SeedPainting {
            response_ms: BOOST_C3_RESPONSE_MS,
            preemption_ms: Some(BOOST_C3_PREEMPTION_MS),
            reduction_pct: reduction(BOOST_C3_RESPONSE_MS),
        },
        PaintingModel::CfsBoostC10 => SeedPainting {
            response_ms: BOOST_C10_RESPONSE_MS,
            preemption_ms: Some(BOOST_C10_PREEMPTION_MS),
            reduction_pct: reduction(BOOST_C10_RESPONSE_MS),
        },
        PaintingModel::VtcfsC3 => SeedPainting {
            response_ms: from_reduction(VTCFS_C3_REDUCTION_PCT),
            preemption_ms: None,
            reduction_pct: VTCFS_C3_REDUCTION_PCT,
        },
        PaintingModel::VtcfsC10 => SeedPainting {
            response_ms: from_reduction(VTCFS_C10_REDUCTION_PCT),
            preemption_ms: None,
            reduction_pct: VTCFS_C10_REDUCTION_PCT,
        },
        PaintingModel::Eevdf | PaintingModel::EevdfSlice => return None,
    })
}
