//! The policy core: scheduling, frequency and placement decisions as pure code, shared by the
//! simulator and the live daemon.
//!
//! - [`class`]: scheduling classes behind [`class::SchedClass`] (CFS as the design brief restates
//!   it, seed 003's VT-CFS, EEVDF as in Linux 6.6 and later);
//! - [`boost`]: seed 003's framework-assisted interactive boost (eq. 6) and [`response`], the
//!   response-time decomposition RT = C + L_I + L_S + L_P;
//! - [`governor`]: frequency governors behind [`governor::FreqGovernor`] (ondemand, its Galaxy S4
//!   configuration, schedutil) and the utilisation they read ([`pelt`]);
//! - [`idle`]: the idle governor behind [`idle::IdleGovernor`] (menu);
//! - [`cores`]: core management behind [`cores::CoreManager`] (which cores are online, which
//!   cluster is active);
//! - [`placement`]: where a waking task goes and which CPU an idle one pulls from, behind
//!   [`placement::Placement`];
//! - [`guis`]: the categorical GUI scheduler's rules (seed 000, chapter 5, table 1), idle forcing
//!   and the companion-core triage decision, and table 1 as a policy on the seam;
//! - [`ucsg`]: seed 001's user-centric scheduler and governor (sensitivity states, allocation
//!   and migration, DPM, DVFS, cluster switching);
//! - [`controller`]: seed 004's controller: affinity, toggling and equalising schemes that place
//!   the threads of registered programs on fast and slow CPUs;
//! - [`seam`]: the live policy seam: facts the framework knows in, per-thread actions out
//!   ([`seam::SeamPolicy`]).
//!
//! Nothing here does I/O, reads a clock or spawns a thread: time is passed in.

pub mod balance;
pub mod boost;
pub mod class;
pub mod controller;
pub mod cores;
pub mod governor;
pub mod guis;
pub mod hmp;
pub mod idle;
pub mod ids;
pub mod pelt;
pub mod placement;
pub mod response;
pub mod seam;
pub mod ucsg;

pub use ids::{CpuId, TaskId};

/// A policy name that is not one of the known ones (a spec's `[policy]` table, a command line).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("unknown {kind} `{name}` (known: {known})")]
pub struct UnknownPolicy {
    /// Which policy slot: `scheduler`, `governor`, `cores`, ….
    pub kind: &'static str,
    pub name: String,
    pub known: String,
}

impl UnknownPolicy {
    #[must_use]
    pub fn new(kind: &'static str, name: &str, known: &[&str]) -> UnknownPolicy {
        UnknownPolicy {
            kind,
            name: name.to_owned(),
            known: known.join(", "),
        }
    }
}
