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

use crate::spec::{invalid, Spec, SpecError};

/// Built policies for one run.
#[derive(Debug)]
pub(crate) struct RunPolicies {
    pub class: Box<dyn SchedClass>,
    pub placement: Box<dyn Placement>,
    pub idle: Box<dyn IdleGovernor>,
    pub governor: Box<dyn FreqGovernor>,
    pub cores: Box<dyn CoreManager>,
}

/// Whether the platform's automatic cluster switch runs by default.
fn default_cores(spec: &Spec) -> &'static str {
    let companion = spec.cpu.companion && spec.platform.companion_cluster().is_some();
    if companion && spec.platform.cluster_switch.auto {
        "tegra-auto"
    } else {
        "all-online"
    }
}

impl RunPolicies {
    /// Builds the policies `spec` names.
    ///
    /// # Errors
    /// [`SpecError::Policy`] for an unknown name; [`SpecError::Invalid`] for a policy the
    /// platform cannot run (hotplug without a `[hotplug]` latency, a base slice for CFS).
    pub fn build(spec: &Spec) -> Result<RunPolicies, SpecError> {
        let p = &spec.policy;
        let plat = &spec.platform;
        let main = plat.main_cluster();
        let companion = if spec.cpu.companion {
            plat.companion_cluster()
        } else {
            None
        };
        let cpus = spec.cpu.main_cores as usize + usize::from(companion.is_some());
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
        let class = class::by_name(
            scheduler,
            ClassConfig {
                cpus,
                tick_ns: NS_PER_S / u64::from(plat.timer.hz),
                // The kernel scales its base slice by the CPUs online at boot: the main cores.
                base_slice_ns: Some(p.base_slice_us.map_or_else(
                    || class::eevdf::default_base_slice_ns(spec.cpu.main_cores as usize),
                    |us| us * NS_PER_US,
                )),
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
        let cores_name = p.cores.as_deref().unwrap_or_else(|| default_cores(spec));
        if cores_name == "galaxy-s4-hotplug" && plat.hotplug.is_none() {
            return Err(invalid(
                "policy.cores",
                format!(
                    "`galaxy-s4-hotplug` needs per-core hotplug, which platform `{}` does not have ([hotplug])",
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
            },
        )?;
        Ok(RunPolicies {
            class,
            placement: placement::by_name(p.placement.as_deref().unwrap_or("wake-idle"))?,
            idle: idle::by_name(p.idle.as_deref().unwrap_or("menu"), cpus)?,
            governor,
            cores,
        })
    }
}
