//! Frequency governors: from the utilisation of a frequency domain's CPUs to an operating
//! performance point (OPP).
//!
//! A frequency domain is a set of CPUs that share one clock (a cluster on most SoCs, one CPU
//! where each has its own). The substrate samples each domain and asks the governor for the OPP
//! index to run at; when it asks depends on the governor's [`Trigger`]: at a sampling period
//! (ondemand's deferrable timer) or at every scheduler event on the domain's CPUs (schedutil's
//! `cpufreq_update_util` hook, which rate-limits itself).
//!
//! Implementations: [`ondemand::Ondemand`] (mainline, and the Galaxy S4 configuration seed 001
//! describes), [`schedutil::Schedutil`] and [`performance::Performance`] (always the top OPP).
//! [`by_name`] builds one.

pub mod bl_switcher;
pub mod ondemand;
pub mod performance;
pub mod schedutil;

use std::fmt;

/// When the substrate asks a governor.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Trigger {
    /// Every `period_ns`, with the busy share of each CPU over the period
    /// ([`CpuLoad::busy_pct`]).
    Sampling { period_ns: u64 },
    /// After every enqueue, dequeue and tick on a CPU of the domain, with the CPUs' PELT
    /// utilisation ([`CpuLoad::util`]); the governor rate-limits itself.
    SchedEvents,
}

/// One CPU of a domain as the governor sees it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CpuLoad {
    /// Busy share of the last sampling period, 0..=100 (sampling governors).
    pub busy_pct: u64,
    /// Frequency- and capacity-invariant utilisation, 0..=1024 ([`crate::pelt`]).
    pub util: u64,
    /// The CPU's capacity, 1..=1024 (1024 for the biggest CPU type at its top frequency).
    pub capacity: u64,
}

/// What a governor is asked about one domain.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DomainSample<'a> {
    /// The domain's number, stable over a run (a governor keeps per-domain state by it).
    pub domain: usize,
    /// The cluster the domain belongs to (per-cluster tunables are looked up by it).
    pub cluster: usize,
    /// The domain's frequencies in kHz, ascending.
    pub opps_khz: &'a [u64],
    /// The OPP index it runs at.
    pub cur_opp: usize,
    /// Its online CPUs.
    pub cpus: &'a [CpuLoad],
    pub now_ns: u64,
}

impl DomainSample<'_> {
    fn top(&self) -> usize {
        self.opps_khz.len().saturating_sub(1)
    }

    /// The lowest OPP at or above `khz`, the top one if none is (Linux `CPUFREQ_RELATION_L`).
    #[must_use]
    pub fn opp_at_least(&self, khz: u64) -> usize {
        self.opps_khz
            .iter()
            .position(|&f| f >= khz)
            .unwrap_or(self.top())
    }
}

/// A frequency governor.
pub trait FreqGovernor: fmt::Debug {
    /// The name a spec uses.
    fn name(&self) -> &'static str;

    /// When the substrate asks.
    fn trigger(&self) -> Trigger;

    /// The OPP index `sample`'s domain should run at.
    fn select(&mut self, sample: &DomainSample<'_>) -> usize;
}

/// The governor names [`by_name`] knows.
pub const NAMES: [&str; 4] = ["ondemand", "ondemand-galaxy-s4", "schedutil", "performance"];

/// What a governor takes from its platform.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GovernorConfig {
    /// Ondemand's sampling period.
    pub sampling_period_ns: u64,
    /// Mainline ondemand's `up_threshold`.
    pub up_threshold_pct: u64,
    /// Per cluster: whether it is a big (fast) cluster; the Galaxy S4 tunables differ by it.
    pub cluster_is_big: Vec<bool>,
    /// The CPU clock's transition latency (`cpuinfo.transition_latency`); schedutil's rate limit
    /// derives from it.
    pub transition_latency_ns: u64,
}

/// The governor called `name`.
///
/// # Errors
/// [`crate::UnknownPolicy`] for a name not in [`NAMES`].
pub fn by_name(
    name: &str,
    cfg: &GovernorConfig,
) -> Result<Box<dyn FreqGovernor>, crate::UnknownPolicy> {
    use ondemand::{Ondemand, OndemandTunables, GALAXY_S4_BIG, GALAXY_S4_LITTLE};
    match name {
        "ondemand" => Ok(Box::new(Ondemand::new(
            cfg.sampling_period_ns,
            vec![OndemandTunables::mainline(cfg.up_threshold_pct); cfg.cluster_is_big.len()],
        ))),
        "ondemand-galaxy-s4" => Ok(Box::new(
            Ondemand::new(
                cfg.sampling_period_ns,
                cfg.cluster_is_big
                    .iter()
                    .map(|&big| if big { GALAXY_S4_BIG } else { GALAXY_S4_LITTLE })
                    .collect(),
            )
            .named("ondemand-galaxy-s4"),
        )),
        "schedutil" => Ok(Box::new(schedutil::Schedutil::new(
            schedutil::rate_limit_ns(cfg.transition_latency_ns),
        ))),
        "performance" => Ok(Box::new(performance::Performance::new(
            cfg.sampling_period_ns,
        ))),
        other => Err(crate::UnknownPolicy::new("governor", other, &NAMES)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_governor_answers_to_the_name_it_was_made_by() {
        let cfg = GovernorConfig {
            sampling_period_ns: 20_000_000,
            up_threshold_pct: 80,
            cluster_is_big: vec![false, true],
            transition_latency_ns: 100_000,
        };
        for name in NAMES {
            assert_eq!(by_name(name, &cfg).unwrap().name(), name);
        }
    }
}
