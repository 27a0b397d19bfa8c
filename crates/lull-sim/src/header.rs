//! What every spec shares: the [`Kind`] it says it is and its [`Header`] (name, description,
//! platform, seed), read and checked in one place (`load`); and the [`ResultHeader`] every
//! result begins with.

use serde::Serialize;

use crate::platform::Platform;

/// The kinds of spec, each named by a spec's `kind = "…"`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum Kind {
    /// Seed 000's framework models on an input workload (`experiments/marz/`).
    Framework,
    /// Seed 001's scenarios under UCSG and its baselines (`experiments/ucsg/`).
    Ucsg,
    /// Seed 003's painting app beside CPU hogs (`experiments/vtcfs/painting.toml`).
    Painting,
    /// Interbench's tasks against its loads (`experiments/vtcfs/interbench-*.toml`).
    Interbench,
    /// Hackbench's groups over pipes and sockets (`experiments/vtcfs/hackbench*.toml`).
    Hackbench,
    /// Seed 004's controller schemes on equal-work threads (`experiments/toggling/`).
    Toggling,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Framework,
        Kind::Ucsg,
        Kind::Painting,
        Kind::Interbench,
        Kind::Hackbench,
        Kind::Toggling,
    ];

    /// The name a spec's `kind` gives.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Kind::Framework => "framework",
            Kind::Ucsg => "ucsg",
            Kind::Painting => "painting",
            Kind::Interbench => "interbench",
            Kind::Hackbench => "hackbench",
            Kind::Toggling => "toggling",
        }
    }

    #[must_use]
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Every kind's name, for messages.
    #[must_use]
    pub fn names() -> String {
        Kind::ALL.map(Kind::name).join(", ")
    }

    /// A top-level key only this kind's specs have, to tell a spec without `kind` which kind
    /// to add (never to choose the kind: a spec says it).
    #[must_use]
    pub fn marker_key(self) -> &'static str {
        match self {
            Kind::Framework => "workload",
            Kind::Ucsg => "scenario",
            Kind::Painting => "painting",
            Kind::Interbench => "benchmark",
            Kind::Hackbench => "transports",
            Kind::Toggling => "threads",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What every spec begins with, read and checked in one place.
#[derive(Clone, PartialEq, Debug)]
pub struct Header {
    /// The experiment's name (in tables, JSON and file names).
    pub experiment: String,
    pub description: String,
    /// The modelled platform, from `platforms/` by name.
    pub platform: Platform,
    /// The seed of every random choice of a run.
    pub seed: u64,
}

impl Header {
    /// What a result of this spec begins with.
    #[must_use]
    pub fn result_header(&self) -> ResultHeader {
        ResultHeader {
            experiment: self.experiment.clone(),
            description: self.description.clone(),
            platform: self.platform.name.clone(),
            seed: self.seed,
        }
    }
}

/// The spec's header as every kind's result carries it (flattened first into its JSON): the
/// experiment, its description, the platform's name and the seed.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct ResultHeader {
    pub experiment: String,
    pub description: String,
    pub platform: String,
    pub seed: u64,
}
