//! The delivery model: how an input event travels from the device to the app's handler. Seed 000
//! compares the Event Stream Model with three baselines; the simulator models all five, the live
//! lab runs the ESM alone (`lull live`) or under the display server and guiS (`lull experiment`),
//! each against the same three baselines.

use serde::{Deserialize, Serialize};

/// One delivery model, named in specs, on command lines and in JSON by [`DeliveryModel::name`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
pub enum DeliveryModel {
    /// Seed 000's pull model: device queue → hub polling loop → app polling loop, 16 ms each.
    #[serde(rename = "pull-16ms")]
    Pull16ms,
    /// Android-style: hub blocks, moves batched to the next frame, app ticks per frame.
    #[serde(rename = "vsync-batched")]
    VsyncBatched,
    /// X11/Wayland-style: hub blocks and forwards, app blocks; two hops.
    #[serde(rename = "blocking-middleware")]
    BlockingMiddleware,
    /// The Event Stream Model alone: in-kernel interpreter and dispatcher, app in `EV_WAIT`.
    #[serde(rename = "esm")]
    Esm,
    /// ESM with the display server's four categorised threads gated by guiS, idle forcing and
    /// companion-core triage.
    #[serde(rename = "esm-kds-guis")]
    EsmKdsGuis,
}

impl DeliveryModel {
    /// Every model, baselines first (the simulator's order).
    pub const ALL: [DeliveryModel; 5] = [
        DeliveryModel::Pull16ms,
        DeliveryModel::VsyncBatched,
        DeliveryModel::BlockingMiddleware,
        DeliveryModel::Esm,
        DeliveryModel::EsmKdsGuis,
    ];

    /// The three baselines: a hub process between the device and the app.
    pub const BASELINES: [DeliveryModel; 3] = [
        DeliveryModel::Pull16ms,
        DeliveryModel::VsyncBatched,
        DeliveryModel::BlockingMiddleware,
    ];

    /// The name used in specs, on command lines and in JSON.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            DeliveryModel::Pull16ms => "pull-16ms",
            DeliveryModel::VsyncBatched => "vsync-batched",
            DeliveryModel::BlockingMiddleware => "blocking-middleware",
            DeliveryModel::Esm => "esm",
            DeliveryModel::EsmKdsGuis => "esm-kds-guis",
        }
    }

    /// The model called `name`.
    #[must_use]
    pub fn from_name(name: &str) -> Option<DeliveryModel> {
        DeliveryModel::ALL.into_iter().find(|m| m.name() == name)
    }

    /// `models`' names joined by ", ", for messages that list the choices.
    #[must_use]
    pub fn names(models: &[DeliveryModel]) -> String {
        models
            .iter()
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether input reaches the app through a hub (one of [`DeliveryModel::BASELINES`]).
    #[must_use]
    pub fn is_baseline(self) -> bool {
        DeliveryModel::BASELINES.contains(&self)
    }

    /// Whether guiS gates the app's threads (ESM + KDS + guiS only).
    #[must_use]
    pub fn runs_guis(self) -> bool {
        self == DeliveryModel::EsmKdsGuis
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_match_serde() {
        for m in DeliveryModel::ALL {
            assert_eq!(DeliveryModel::from_name(m.name()), Some(m));
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.name()));
            assert_eq!(serde_json::from_str::<DeliveryModel>(&json).unwrap(), m);
        }
        assert_eq!(DeliveryModel::from_name("pull"), None);
        assert_eq!(
            DeliveryModel::names(&DeliveryModel::BASELINES),
            "pull-16ms, vsync-batched, blocking-middleware"
        );
        assert!(DeliveryModel::Pull16ms.is_baseline());
        assert!(!DeliveryModel::Esm.is_baseline());
        assert!(DeliveryModel::EsmKdsGuis.runs_guis());
        assert!(!DeliveryModel::Esm.runs_guis());
    }
}
