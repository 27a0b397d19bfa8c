//! The policies a run uses: each part of the kernel by name from the spec's `[policy]` table,
//! or what the platform runs when the table leaves it out. Without a table a spec runs as the
//! simulator always has: CFS, ondemand, menu, wake-idle placement, and the Tegra automatic
//! cluster switch where there is a companion core.

use lull_model::time::{NS_PER_MS, NS_PER_S, NS_PER_US};
use lull_sched::class::{self, ClassConfig, SchedClass};
use lull_sched::cores::{self, CoreManager, CoresConfig};
use lull_sched::governor::{self, FreqGovernor, GovernorConfig};
use lull_sched::idle::{self, IdleGovernor};
use lull_sched::placement::{self, Placement};

use serde::Deserialize;

use crate::kernel::{BoostKind, Kernel, Policies};
use crate::platform::Platform;
use crate::pm::PowerManager;

/// A spec's `[policy]` table: which `lull-sched` policy runs each part of the kernel. A missing
/// entry takes the platform's default.
#[derive(Clone, PartialEq, Eq, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// Scheduling class: `cfs` (default), `vtcfs` or `eevdf`.
    pub scheduler: Option<String>,
    /// Frequency governor: `ondemand` (default), `ondemand-galaxy-s4`, `schedutil` or
    /// `performance`.
    pub governor: Option<String>,
    /// Idle governor: `menu` (default).
    pub idle: Option<String>,
    /// Core management: `tegra-auto` (default with a companion core and automatic switching),
    /// `all-online` (default otherwise), `galaxy-s4-hotplug` (needs the platform's `[hotplug]`)
    /// or `galaxy-s4` (that and cluster switching; needs a LITTLE cluster too).
    pub cores: Option<String>,
    /// Wakeup placement and balancing: `wake-idle` (default).
    pub placement: Option<String>,
    /// EEVDF's base slice in µs (default: the kernel's for the number of cores).
    pub base_slice_us: Option<u64>,
    /// VT-CFS's preemption tick in µs (default: `lull_sched::class::vtcfs`'s 3 ms); a whole
    /// number of the platform's scheduler ticks.
    pub preempt_tick_us: Option<u64>,
    /// Seed 003's interactive boost with C in ms (eq. 6): the task the framework names is
    /// woken at the weight that makes its slice cover C. Off when absent.
    pub boost_c_ms: Option<u64>,
    /// The interactive boost as a custom slice in µs (EEVDF only; Linux 6.12+ `sched_setattr`,
    /// clamped to 100–100 000 µs as the kernel clamps it). Off when absent.
    pub boost_slice_us: Option<u64>,
}

/// The slots of a `[policy]` table, as [`PolicySpec::set`] names them.
pub const POLICY_SLOTS: [&str; 9] = [
    "scheduler",
    "governor",
    "idle",
    "cores",
    "placement",
    "base_slice_us",
    "preempt_tick_us",
    "boost_c_ms",
    "boost_slice_us",
];

/// Why a `[policy]` table cannot run.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum PolicyError {
    /// A name that is not one of the slot's.
    Unknown(lull_sched::UnknownPolicy),
    /// A slot that does not exist, a bad number, or a policy the platform cannot run.
    Invalid { field: &'static str, reason: String },
}

/// For people: the unknown name with the known ones, or the slot and what is wrong with it.
impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PolicyError::Unknown(e) => e.fmt(f),
            PolicyError::Invalid { field, reason } => write!(f, "{field}: {reason}"),
        }
    }
}

impl From<lull_sched::UnknownPolicy> for PolicyError {
    fn from(e: lull_sched::UnknownPolicy) -> PolicyError {
        PolicyError::Unknown(e)
    }
}

fn invalid(field: &'static str, reason: impl Into<String>) -> PolicyError {
    PolicyError::Invalid {
        field,
        reason: reason.into(),
    }
}

/// `text` as a whole number of `unit`, or why not.
fn whole(text: Option<&str>, field: &'static str, unit: &str) -> Result<u64, PolicyError> {
    text.and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| invalid(field, format!("must be a whole number of {unit}")))
}

impl PolicySpec {
    /// Names the policy of one slot (`scheduler`, `governor`, `idle`, `cores`, `placement`,
    /// `base_slice_us`, `preempt_tick_us`, `boost_c_ms`, `boost_slice_us`).
    ///
    /// # Errors
    /// [`PolicyError::Invalid`] for an unknown slot or a number slot given something else.
    pub fn set(&mut self, slot: &str, name: &str) -> Result<(), PolicyError> {
        let name = Some(name.to_owned());
        match slot {
            "scheduler" => self.scheduler = name,
            "governor" => self.governor = name,
            "idle" => self.idle = name,
            "cores" => self.cores = name,
            "placement" => self.placement = name,
            "base_slice_us" => {
                let us = name
                    .as_deref()
                    .and_then(|n| n.parse::<u64>().ok())
                    .ok_or_else(|| invalid("policy.base_slice_us", "must be a whole number of µs"))?;
                self.base_slice_us = Some(us);
            }
            "preempt_tick_us" => {
                self.preempt_tick_us = Some(whole(name.as_deref(), "policy.preempt_tick_us", "µs")?);
            }
            "boost_c_ms" => {
                self.boost_c_ms = Some(whole(name.as_deref(), "policy.boost_c_ms", "ms")?);
            }
            "boost_slice_us" => {
                self.boost_slice_us =
                    Some(whole(name.as_deref(), "policy.boost_slice_us", "µs")?);
            }
            other => {
                return Err(invalid(
                    "policy",
                    format!(
                        "unknown slot `{other}` (known: scheduler, governor, idle, cores, placement, base_slice_us, preempt_tick_us, boost_c_ms, boost_slice_us)"
                    ),
                ))
            }
        }
        Ok(())
    }
}

/// Built policies for one run.
#[derive(Debug)]
pub(crate) struct RunPolicies {
    pub class: Box<dyn SchedClass>,
    pub placement: Box<dyn Placement>,
    pub idle: Box<dyn IdleGovernor>,
    pub governor: Box<dyn FreqGovernor>,
    pub cores: Box<dyn CoreManager>,
    /// The interactive boost, if the table asks for one.
    pub boost: Option<BoostKind>,
}

/// Whether the platform's automatic cluster switch runs by default.
fn default_cores(plat: &Platform, companion_allowed: bool) -> &'static str {
    let companion = companion_allowed && plat.companion_cluster().is_some();
    if companion && plat.cluster_switch.auto {
        "tegra-auto"
    } else {
        "all-online"
    }
}

impl RunPolicies {
    /// The kernel of `cores` cores of `plat` scheduling with these policies' class, placement
    /// and idle governor, and the power manager governing it, the kernel tracking utilisation
    /// when the governor reads it. The boost is left to the caller.
    pub(crate) fn kernel_and_pm<'p>(
        self,
        plat: &'p Platform,
        cores: usize,
    ) -> (Kernel<'p>, PowerManager) {
        let mut kernel = Kernel::new(
            plat,
            cores,
            Policies {
                class: self.class,
                placement: self.placement,
                idle: self.idle,
            },
        );
        let pm = PowerManager::new(self.governor, self.cores, plat.governor.sampling_ms);
        if pm.reads_utilisation() {
            kernel.track_utilisation();
        }
        (kernel, pm)
    }

    /// Builds the policies `p` names for a run on `main_cores` of `plat`'s main cluster and,
    /// if `companion_allowed`, its companion core.
    ///
    /// # Errors
    /// [`PolicyError::Unknown`] for an unknown name; [`PolicyError::Invalid`] for a policy the
    /// platform cannot run (hotplug without a `[hotplug]` latency, a base slice for CFS).
    pub fn build(
        p: &PolicySpec,
        plat: &Platform,
        main_cores: u32,
        companion_allowed: bool,
    ) -> Result<RunPolicies, PolicyError> {
        let companion = if companion_allowed {
            plat.companion_cluster()
        } else {
            None
        };
        let cpus = main_cores as usize + usize::from(companion.is_some());
        Self::build_for(p, plat, cpus, main_cores as usize, companion_allowed)
    }

    /// Builds the policies `p` names for a run on `cpus` cores in all, `boot_cpus` of them
    /// online at boot (EEVDF scales its base slice by them), with the companion core if
    /// `companion_allowed`.
    ///
    /// # Errors
    /// As [`RunPolicies::build`].
    pub fn build_for(
        p: &PolicySpec,
        plat: &Platform,
        cpus: usize,
        boot_cpus: usize,
        companion_allowed: bool,
    ) -> Result<RunPolicies, PolicyError> {
        let main = plat.main_cluster();
        let companion = if companion_allowed {
            plat.companion_cluster()
        } else {
            None
        };
        let scheduler = p.scheduler.as_deref().unwrap_or("cfs");
        if p.base_slice_us.is_some() && scheduler != "eevdf" {
            return Err(invalid(
                "policy.base_slice_us",
                "only the eevdf scheduler has a base slice",
            ));
        }
        if p.base_slice_us == Some(0) {
            return Err(invalid("policy.base_slice_us", "must be positive"));
        }
        let tick_ns = NS_PER_S / u64::from(plat.timer.hz);
        if let Some(us) = p.preempt_tick_us {
            if scheduler != "vtcfs" {
                return Err(invalid(
                    "policy.preempt_tick_us",
                    "only the vtcfs scheduler has a preemption tick",
                ));
            }
            // Seed 003 §V: "an integer multiple of the scheduling tick".
            if us == 0 || (us * NS_PER_US) % tick_ns != 0 {
                return Err(invalid(
                    "policy.preempt_tick_us",
                    format!(
                        "must be a positive multiple of the platform's tick ({} µs)",
                        tick_ns / NS_PER_US
                    ),
                ));
            }
        }
        let boost = boost_kind(p, scheduler)?;
        let class = class::by_name(
            scheduler,
            ClassConfig {
                cpus,
                tick_ns,
                // The kernel scales its base slice by the CPUs online at boot: the main cores.
                base_slice_ns: Some(p.base_slice_us.map_or_else(
                    || class::eevdf::default_base_slice_ns(boot_cpus),
                    |us| us * NS_PER_US,
                )),
                preempt_tick_ns: p.preempt_tick_us.map(|us| us * NS_PER_US),
            },
        )?;
        let governor = governor::by_name(
            p.governor.as_deref().unwrap_or("ondemand"),
            &GovernorConfig {
                sampling_period_ns: plat.governor.sampling_ms * NS_PER_MS,
                up_threshold_pct: u64::from(plat.governor.up_threshold_pct),
                cluster_is_big: plat
                    .clusters
                    .iter()
                    .map(|c| c.capacity_dmips_mhz.unwrap_or(1024) == 1024)
                    .collect(),
                transition_latency_ns: plat.governor.transition_latency_us * NS_PER_US,
            },
        )?;
        let cores_name = p
            .cores
            .as_deref()
            .unwrap_or_else(|| default_cores(plat, companion_allowed));
        if cores_name.starts_with("galaxy-s4") && plat.hotplug.is_none() {
            return Err(invalid(
                "policy.cores",
                format!(
                    "`{cores_name}` needs per-core hotplug, which platform `{}` does not have ([hotplug])",
                    plat.name
                ),
            ));
        }
        let cores = cores::by_name(
            cores_name,
            CoresConfig {
                main_cluster: main,
                companion,
                up_threshold_pct: u64::from(plat.governor.up_threshold_pct),
                down_delay_ns: plat.cluster_switch.down_delay_ms * NS_PER_MS,
                little_cluster: plat.little_cluster(),
                little_top_opp: plat
                    .little_cluster()
                    .map_or(0, |l| plat.clusters[l].opps.len() - 1),
            },
        )?;
        Ok(RunPolicies {
            class,
            placement: placement::by_name(p.placement.as_deref().unwrap_or("wake-idle"))?,
            idle: idle::by_name(p.idle.as_deref().unwrap_or("menu"), cpus)?,
            governor,
            cores,
            boost,
        })
    }
}

/// The boost `p` asks for, checked against the scheduler it runs with.
fn boost_kind(p: &PolicySpec, scheduler: &str) -> Result<Option<BoostKind>, PolicyError> {
    match (p.boost_c_ms, p.boost_slice_us) {
        (Some(_), Some(_)) => Err(invalid(
            "policy.boost_slice_us",
            "one boost at a time: boost_c_ms (a weight) or boost_slice_us (a slice)",
        )),
        (Some(0), None) => Err(invalid("policy.boost_c_ms", "must be positive")),
        // Far beyond any interaction: eq. 6 reaches nice −20's cap long before (seed 003
        // §VI-B-1), so a larger C is a typo rather than a setting.
        (Some(ms), None) if ms > MAX_BOOST_C_MS => Err(invalid(
            "policy.boost_c_ms",
            format!("at most {MAX_BOOST_C_MS} ms"),
        )),
        (Some(ms), None) => Ok(Some(BoostKind::Weight {
            c_ns: ms * NS_PER_MS,
        })),
        (None, Some(_)) if scheduler != "eevdf" => Err(invalid(
            "policy.boost_slice_us",
            "only the eevdf scheduler takes a custom slice",
        )),
        (None, Some(0)) => Err(invalid("policy.boost_slice_us", "must be positive")),
        (None, Some(us)) => Ok(Some(BoostKind::Slice {
            slice_ns: us.saturating_mul(NS_PER_US),
        })),
        (None, None) => Ok(None),
    }
}

/// The largest C `boost_c_ms` takes: 10 s.
pub const MAX_BOOST_C_MS: u64 = 10_000;

/// A named model of a benchmark spec: a label and the kernel policies it runs with.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyModel {
    /// The name in tables and JSON (`cfs`, `vtcfs-3ms`, …).
    pub name: String,
    /// The kernel's policies; unset slots take the platform's defaults.
    #[serde(default)]
    pub policy: PolicySpec,
}

/// Why a model list cannot run on a platform.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum ModelListError {
    #[error("models: no model to run")]
    Empty,
    #[error("models: a model without a name")]
    Unnamed,
    #[error("models: `{0}` listed twice")]
    Duplicate(String),
    #[error("model `{model}`: policy: {reason}")]
    Policy { model: String, reason: String },
}

/// Checks that `models` are named, distinct and that each one's policies run on `plat`.
///
/// # Errors
/// The first [`ModelListError`].
pub fn check_models(models: &[PolicyModel], plat: &Platform) -> Result<(), ModelListError> {
    if models.is_empty() {
        return Err(ModelListError::Empty);
    }
    for (i, m) in models.iter().enumerate() {
        if m.name.trim().is_empty() {
            return Err(ModelListError::Unnamed);
        }
        if models[..i].iter().any(|o| o.name == m.name) {
            return Err(ModelListError::Duplicate(m.name.clone()));
        }
        let cores = plat.clusters[plat.main_cluster()].cores;
        RunPolicies::build(&m.policy, plat, cores, false).map_err(|e| ModelListError::Policy {
            model: m.name.clone(),
            reason: policy_reason(&e),
        })?;
    }
    Ok(())
}

/// A policy error as one line.
pub(crate) fn policy_reason(e: &PolicyError) -> String {
    match e {
        PolicyError::Unknown(u) => u.to_string(),
        PolicyError::Invalid { field, reason } => format!("{field}: {reason}"),
    }
}

#[cfg(test)]
mod slot_tests {
    use super::*;

    #[test]
    fn every_listed_slot_is_one_set_knows() {
        for slot in POLICY_SLOTS {
            // A number is a valid value for the numeric slots and a name for the others.
            let r = PolicySpec::default().set(slot, "1");
            let unknown = matches!(&r, Err(PolicyError::Invalid { reason, .. }) if reason.contains("unknown slot"));
            assert!(!unknown, "{slot}: {r:?}");
        }
        let r = PolicySpec::default().set("nope", "1");
        assert!(
            matches!(&r, Err(PolicyError::Invalid { reason, .. }) if reason.contains("unknown slot"))
        );
    }
}
