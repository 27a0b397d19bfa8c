//! The models of the painting experiment: the scheduler each runs and how the kernel favours the
//! task the framework names. Each is a `[policy]` table, built by the same code as any spec's.

use crate::policy::PolicySpec;

/// The custom slice `eevdf-slice` gives the painting app's interactive task when it is woken
/// for an input: the live boost's ([`lull_sched::boost::BOOST_SLICE_NS`], 0.1 ms, the shortest
/// request Linux accepts; its doc says why the shortest).
pub const EEVDF_INPUT_SLICE_US: u64 = lull_sched::boost::BOOST_SLICE_NS / 1_000;

/// The painting experiment's models (seed 003 §VI-B-1, figure 6, and today's Linux).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum PaintingModel {
    /// The seed's legacy system: CFS, no boost.
    Cfs,
    /// CFS with the framework-assisted boost at C = 3 ms.
    CfsBoostC3,
    /// CFS with the boost at C = 10 ms.
    CfsBoostC10,
    /// VT-CFS with the boost at C = 3 ms.
    VtcfsC3,
    /// VT-CFS with the boost at C = 10 ms.
    VtcfsC10,
    /// Today's Linux (6.6 and later): EEVDF, no boost.
    Eevdf,
    /// EEVDF with the interactive task given a short custom slice at each input
    /// ([`EEVDF_INPUT_SLICE_US`]), as Linux 6.12+ lets the framework do.
    EevdfSlice,
}

impl PaintingModel {
    pub const ALL: [PaintingModel; 7] = [
        PaintingModel::Cfs,
        PaintingModel::CfsBoostC3,
        PaintingModel::CfsBoostC10,
        PaintingModel::VtcfsC3,
        PaintingModel::VtcfsC10,
        PaintingModel::Eevdf,
        PaintingModel::EevdfSlice,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            PaintingModel::Cfs => "cfs",
            PaintingModel::CfsBoostC3 => "cfs-boost-c3",
            PaintingModel::CfsBoostC10 => "cfs-boost-c10",
            PaintingModel::VtcfsC3 => "vtcfs-c3",
            PaintingModel::VtcfsC10 => "vtcfs-c10",
            PaintingModel::Eevdf => "eevdf",
            PaintingModel::EevdfSlice => "eevdf-slice",
        }
    }

    #[must_use]
    pub fn from_name(name: &str) -> Option<PaintingModel> {
        PaintingModel::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The boost's C in ms (seed 003 §VI-B-1 runs C = 3 and 10 ms), if the model boosts by weight.
    #[must_use]
    pub fn boost_c_ms(self) -> Option<u64> {
        match self {
            PaintingModel::CfsBoostC3 | PaintingModel::VtcfsC3 => Some(3),
            PaintingModel::CfsBoostC10 | PaintingModel::VtcfsC10 => Some(10),
            PaintingModel::Cfs | PaintingModel::Eevdf | PaintingModel::EevdfSlice => None,
        }
    }

    /// The `[policy]` table the model runs with; VT-CFS at `preempt_tick_us`.
    #[must_use]
    pub fn policy(self, preempt_tick_us: u64) -> PolicySpec {
        let scheduler = match self {
            PaintingModel::Cfs | PaintingModel::CfsBoostC3 | PaintingModel::CfsBoostC10 => "cfs",
            PaintingModel::VtcfsC3 | PaintingModel::VtcfsC10 => "vtcfs",
            PaintingModel::Eevdf | PaintingModel::EevdfSlice => "eevdf",
        };
        PolicySpec {
            scheduler: Some(scheduler.to_owned()),
            preempt_tick_us: (scheduler == "vtcfs").then_some(preempt_tick_us),
            boost_c_ms: self.boost_c_ms(),
            boost_slice_us: (self == PaintingModel::EevdfSlice).then_some(EEVDF_INPUT_SLICE_US),
            ..PolicySpec::default()
        }
    }
}
