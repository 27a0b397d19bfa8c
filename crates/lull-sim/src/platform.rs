//! Platform profiles: an SoC and its board as data (`platforms/*.toml`).
//!
//! The file format is the serde shape of [`Platform`]; unknown fields are rejected. Every number
//! in a shipped profile carries its public source in a comment. [`Platform::parse`] checks the
//! numbers (ordered OPP tables, idle states, positive rates) and answers with a [`PlatformError`].

use serde::Deserialize;

/// The shipped Jetson TK1 profile.
pub const JETSON_TK1_TOML: &str = include_str!("../../../platforms/jetson-tk1.toml");
/// The shipped plain x86-64 profile.
pub const X86_64_TOML: &str = include_str!("../../../platforms/x86-64.toml");
/// The shipped Samsung Galaxy S4 (Exynos 5410 big.LITTLE) profile.
pub const GALAXY_S4_TOML: &str = include_str!("../../../platforms/galaxy-s4.toml");
/// The shipped NVIDIA Tegra 250 (Tegra 2) profile, seed 003's board.
pub const TEGRA_250_TOML: &str = include_str!("../../../platforms/tegra-250.toml");
/// The shipped Odroid-XU3 (Exynos 5422 big.LITTLE, both clusters online) profile, seed 004's
/// board.
pub const ODROID_XU3_TOML: &str = include_str!("../../../platforms/odroid-xu3.toml");
/// The names of the shipped profiles, for [`Platform::by_name`].
pub const SHIPPED: [&str; 5] = [
    "jetson-tk1",
    "x86-64",
    "galaxy-s4",
    "tegra-250",
    "odroid-xu3",
];

/// Why a platform profile was rejected.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum PlatformError {
    #[error("platform file is not valid TOML for a platform profile: {0}")]
    Syntax(String),
    #[error("platform `{platform}`: {field}: {reason}")]
    Invalid {
        platform: String,
        field: String,
        reason: String,
    },
}

/// Periodic tick or tickless idle.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimerMode {
    /// The tick fires at HZ on every online core, busy or idle.
    Periodic,
    /// The tick runs only on busy cores (Linux NO_HZ_IDLE).
    Dynamic,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timer {
    pub mode: TimerMode,
    pub hz: u32,
    /// How late past its programmed expiry a thread timer's interrupt runs, ns: each expiry is
    /// delayed by a uniform draw from `irq_late_min_ns..=irq_late_max_ns` (from the run's
    /// seed). 0 (the default): on time. On bare metal the delay is about the interrupt entry;
    /// in a virtual machine it is the host's timer emulation and injection, which
    /// `lull validate kernel` measures with tracefs (the 10th and 90th percentiles of
    /// `hrtimer_expire_entry`'s `now` past the timer's `expires` on a busy CPU).
    #[serde(default)]
    pub irq_late_min_ns: u64,
    #[serde(default)]
    pub irq_late_max_ns: u64,
}

/// How the kernel learns which device interrupted.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IrqController {
    /// The vector names the device (GIC).
    Vectored,
    /// The kernel reads each device's status register to find the source.
    Scanning,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interrupts {
    pub controller: IrqController,
    pub scanned_devices: u32,
}

/// Cycle costs of kernel paths and the cache-refill parameters.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Costs {
    pub irq_entry_exit_cycles: u64,
    pub scan_per_device_cycles: u64,
    pub tick_cycles: u64,
    pub timer_expiry_cycles: u64,
    pub wakeup_cycles: u64,
    pub context_switch_cycles: u64,
    pub cache_line_bytes: u64,
    pub dram_latency_ns: u64,
    pub refill_mlp: u64,
    pub l2_kib: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSwitch {
    pub latency_us: u64,
    pub auto: bool,
    pub down_delay_ms: u64,
}

/// The frequency governor's platform tunables.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Governor {
    /// Ondemand's `up_threshold`.
    pub up_threshold_pct: u32,
    /// The sampling period of ondemand and of core management.
    pub sampling_ms: u64,
    /// The CPU clock's frequency transition latency (`cpuinfo.transition_latency`, from the
    /// device tree's `clock-latency`); schedutil's rate limit derives from it. 0: unknown.
    #[serde(default)]
    pub transition_latency_us: u64,
}

/// Per-core hotplug (a core manager turning single cores on and off).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hotplug {
    /// Time from the decision to a core executing.
    pub online_latency_us: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Display {
    pub refresh_hz: u32,
    pub on_mw: u64,
    pub off_mw: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Board {
    pub rest_mw: u64,
}

/// Main cluster, companion ("shadow") core cluster, or the LITTLE cluster of a big.LITTLE pair.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClusterKind {
    Main,
    /// One low-power core that takes all work while the main cluster sleeps (Tegra 4-PLUS-1).
    Companion,
    /// A full cluster of slower cores paired with the main (big) one. One cluster active at a
    /// time (big.LITTLE cluster migration, Exynos 5410): the platform starts on it, and a switch
    /// brings up as many cores as were online; or, with the platform's
    /// `both_clusters_online`, both clusters running at once (global task scheduling, Exynos
    /// 5422).
    Little,
}

/// Whether the cores of a cluster share one clock.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FreqDomain {
    Cluster,
    Core,
}

/// One operating performance point.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Opp {
    pub khz: u64,
    pub mv: u64,
}

/// A per-core idle state.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleState {
    pub name: String,
    pub exit_us: u64,
    pub residency_us: u64,
    /// Power gated: the core leaks nothing (otherwise only its clock stops).
    pub core_gated: bool,
}

/// The cluster-wide power-down entered when every core sits in its deepest state.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterOff {
    pub name: String,
    pub exit_us: u64,
    pub residency_us: u64,
}

#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    pub name: String,
    pub kind: ClusterKind,
    pub cores: u32,
    pub freq_domain: FreqDomain,
    pub dynamic_power_coefficient: u64,
    pub core_leak_mw_at_1v: u64,
    pub cluster_leak_mw_at_1v: u64,
    pub opps: Vec<Opp>,
    pub idle_states: Vec<IdleState>,
    #[serde(default)]
    pub cluster_off: Option<ClusterOff>,
    /// Performance per MHz relative to the fastest core type (the device tree's
    /// `capacity-dmips-mhz`, 1024 for the fastest). Absent: the platform has one core type.
    #[serde(default)]
    pub capacity_dmips_mhz: Option<u64>,
}

impl Cluster {
    /// Dynamic power of one busy core at `opp`, in µW: dpc × mV² × MHz / 10⁶ (the estimate Linux's
    /// `drivers/opp/of.c` makes from `dynamic-power-coefficient`; kHz / 1000 = MHz folded in).
    #[must_use]
    pub fn dynamic_uw(&self, opp: Opp) -> f64 {
        self.dynamic_power_coefficient as f64 * (opp.mv * opp.mv) as f64 * opp.khz as f64 / 1e9
    }

    /// Leakage of one powered core at `opp`, in µW (linear in voltage).
    #[must_use]
    pub fn core_leak_uw(&self, opp: Opp) -> f64 {
        self.core_leak_mw_at_1v as f64 * opp.mv as f64
    }

    /// Leakage of the cluster's shared parts at `opp`, in µW.
    #[must_use]
    pub fn cluster_leak_uw(&self, opp: Opp) -> f64 {
        self.cluster_leak_mw_at_1v as f64 * opp.mv as f64
    }
}

/// A whole platform profile.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    pub name: String,
    pub description: String,
    pub timer: Timer,
    pub interrupts: Interrupts,
    pub costs: Costs,
    pub cluster_switch: ClusterSwitch,
    pub governor: Governor,
    /// Absent: cores cannot be hotplugged one by one.
    #[serde(default)]
    pub hotplug: Option<Hotplug>,
    pub display: Display,
    pub board: Board,
    /// Both clusters of a big.LITTLE pair run at once (global task scheduling): runs that model
    /// it place threads on all cores (`lull_sched::hmp`). Absent: false.
    #[serde(default)]
    pub both_clusters_online: bool,
    pub clusters: Vec<Cluster>,
}

impl Platform {
    /// Parses and checks a profile.
    ///
    /// # Errors
    /// [`PlatformError::Syntax`] for TOML or shape errors (unknown field, missing field, wrong
    /// type); [`PlatformError::Invalid`] for numbers that make no sense.
    pub fn parse(text: &str) -> Result<Platform, PlatformError> {
        let p: Platform = toml::from_str(text).map_err(|e| PlatformError::Syntax(e.to_string()))?;
        p.validate()?;
        Ok(p)
    }

    /// The shipped Jetson TK1 profile.
    ///
    /// # Panics
    /// Never for the shipped file (a unit test parses it).
    #[must_use]
    pub fn jetson_tk1() -> Platform {
        Platform::parse(JETSON_TK1_TOML).expect("the shipped Jetson TK1 profile is valid")
    }

    /// The names [`Platform::by_name`] knows, for error messages.
    pub const NAMES: &'static str = "jetson-tk1, x86-64, galaxy-s4, tegra-250, odroid-xu3";

    /// The shipped profile called `name`.
    #[must_use]
    pub fn by_name(name: &str) -> Option<Platform> {
        let text = Platform::shipped_text(name)?;
        Some(Platform::parse(text).expect("the shipped profiles are valid"))
    }

    /// The shipped profile called `name` with `overrides` applied: a table shaped like the
    /// profile's own (`board = { rest_mw = 800 }`), whose `clusters` table names each cluster it
    /// changes (`clusters.big.dynamic_power_coefficient = 400`). A spec's
    /// `[platform_overrides]`, so that a sweep can vary the platform's uncertain figures; the
    /// result is checked as a shipped profile is. `None` for an unknown name.
    ///
    /// # Errors
    /// [`PlatformError::Invalid`] naming the key for a key the profile does not have, or for a
    /// profile that does not validate after the change.
    pub fn by_name_with(
        name: &str,
        overrides: &toml::Table,
    ) -> Option<Result<Platform, PlatformError>> {
        let text = Platform::shipped_text(name)?;
        if overrides.is_empty() {
            return Some(Platform::parse(text));
        }
        let mut base: toml::Table = match toml::from_str(text) {
            Ok(t) => t,
            Err(e) => return Some(Err(PlatformError::Syntax(e.to_string()))),
        };
        let invalid = |field: String, reason: &str| PlatformError::Invalid {
            platform: name.to_owned(),
            field,
            reason: reason.to_owned(),
        };
        if let Err((field, reason)) = merge_overrides(&mut base, overrides, "") {
            return Some(Err(invalid(field, reason)));
        }
        Some(
            toml::to_string(&base)
                .map_err(|e| PlatformError::Syntax(e.to_string()))
                .and_then(|t| Platform::parse(&t)),
        )
    }

    fn shipped_text(name: &str) -> Option<&'static str> {
        Some(match name {
            "jetson-tk1" => JETSON_TK1_TOML,
            "x86-64" => X86_64_TOML,
            "galaxy-s4" => GALAXY_S4_TOML,
            "tegra-250" => TEGRA_250_TOML,
            "odroid-xu3" => ODROID_XU3_TOML,
            _ => return None,
        })
    }

    /// This profile with a machine's own facts: `cores` identical cores at `mhz`, ticking at
    /// `hz`, with `idle_states` (shallow to deep); for a one-cluster profile such as `x86-64`.
    ///
    /// # Errors
    /// [`PlatformError::Invalid`] if the result does not validate (no idle state, a zero
    /// frequency, a multi-cluster profile).
    pub fn with_machine(
        mut self,
        cores: u32,
        hz: u32,
        mhz: u64,
        idle_states: Vec<IdleState>,
    ) -> Result<Platform, PlatformError> {
        if self.clusters.len() != 1 {
            return Err(self.bad("clusters", "machine facts fit a one-cluster profile only"));
        }
        if mhz == 0 {
            return Err(self.bad("clusters.opps", "the machine's frequency must be positive"));
        }
        self.timer.hz = hz;
        let c = &mut self.clusters[0];
        c.cores = cores;
        let mv = c.opps.last().map_or(1000, |o| o.mv);
        c.opps = vec![Opp {
            khz: mhz * 1000,
            mv,
        }];
        c.idle_states = idle_states;
        self.validate()?;
        Ok(self)
    }

    fn bad(&self, field: impl Into<String>, reason: impl Into<String>) -> PlatformError {
        PlatformError::Invalid {
            platform: self.name.clone(),
            field: field.into(),
            reason: reason.into(),
        }
    }

    fn validate(&self) -> Result<(), PlatformError> {
        if !(1..=10_000).contains(&self.timer.hz) {
            return Err(self.bad("timer.hz", "must be 1..=10000"));
        }
        if self.timer.irq_late_min_ns > self.timer.irq_late_max_ns {
            return Err(self.bad("timer.irq_late_min_ns", "must not exceed irq_late_max_ns"));
        }
        if !(1..=1000).contains(&self.display.refresh_hz) {
            return Err(self.bad("display.refresh_hz", "must be 1..=1000"));
        }
        if self.costs.cache_line_bytes == 0 || self.costs.refill_mlp == 0 {
            return Err(self.bad("costs", "cache_line_bytes and refill_mlp must be positive"));
        }
        if !(1..=100).contains(&self.governor.up_threshold_pct) || self.governor.sampling_ms == 0 {
            return Err(self.bad(
                "governor",
                "up_threshold_pct must be 1..=100, sampling_ms > 0",
            ));
        }
        let mains = self
            .clusters
            .iter()
            .filter(|c| c.kind == ClusterKind::Main)
            .count();
        let comps = self
            .clusters
            .iter()
            .filter(|c| c.kind == ClusterKind::Companion)
            .count();
        if mains != 1 {
            return Err(self.bad(
                "clusters",
                format!("need exactly one main cluster, found {mains}"),
            ));
        }
        let littles = self
            .clusters
            .iter()
            .filter(|c| c.kind == ClusterKind::Little)
            .count();
        if comps + littles > 1 {
            return Err(self.bad(
                "clusters",
                "at most one companion or LITTLE cluster besides the main one",
            ));
        }
        if self.both_clusters_online && littles != 1 {
            return Err(self.bad(
                "both_clusters_online",
                "needs a big.LITTLE pair (a main and a LITTLE cluster)",
            ));
        }
        for c in &self.clusters {
            let f = |x: &str| format!("clusters.{}.{x}", c.name);
            if c.cores == 0 || c.cores > 64 {
                return Err(self.bad(f("cores"), "must be 1..=64"));
            }
            if c.kind == ClusterKind::Companion && c.cores != 1 {
                return Err(self.bad(f("cores"), "a companion cluster has one core"));
            }
            if c.opps.is_empty() {
                return Err(self.bad(f("opps"), "empty OPP table"));
            }
            for w in c.opps.windows(2) {
                if w[1].khz <= w[0].khz || w[1].mv < w[0].mv {
                    return Err(self.bad(
                        f("opps"),
                        "frequencies must rise strictly and voltages must not fall",
                    ));
                }
            }
            if c.capacity_dmips_mhz
                .is_some_and(|d| !(1..=1024).contains(&d))
            {
                return Err(self.bad(f("capacity_dmips_mhz"), "must be 1..=1024"));
            }
            if c.opps.iter().any(|o| o.khz == 0 || o.mv == 0) {
                return Err(self.bad(f("opps"), "zero frequency or voltage"));
            }
            if c.idle_states.is_empty() {
                return Err(self.bad(f("idle_states"), "need at least one idle state (WFI)"));
            }
            for w in c.idle_states.windows(2) {
                if w[1].residency_us < w[0].residency_us || w[1].exit_us < w[0].exit_us {
                    return Err(self.bad(f("idle_states"), "must be ordered shallow to deep"));
                }
            }
            if c.idle_states
                .iter()
                .any(|s| s.exit_us > s.residency_us.max(1))
            {
                return Err(self.bad(f("idle_states"), "exit latency exceeds target residency"));
            }
        }
        Ok(())
    }

    /// Index of the main cluster.
    #[must_use]
    pub fn main_cluster(&self) -> usize {
        self.clusters
            .iter()
            .position(|c| c.kind == ClusterKind::Main)
            .unwrap_or(0)
    }

    /// Index of the companion cluster, if any.
    #[must_use]
    pub fn companion_cluster(&self) -> Option<usize> {
        self.clusters
            .iter()
            .position(|c| c.kind == ClusterKind::Companion)
    }

    /// Index of the LITTLE cluster of a big.LITTLE pair, if any.
    #[must_use]
    pub fn little_cluster(&self) -> Option<usize> {
        self.clusters
            .iter()
            .position(|c| c.kind == ClusterKind::Little)
    }

    /// The rate at which the fastest core type retires work at its top frequency, in thousands
    /// of cycles of work per second: top kHz × `capacity_dmips_mhz` / 1024, the largest over the
    /// clusters. The reference of scaled CPU time and of work sized in time.
    #[must_use]
    pub fn top_work_khz(&self) -> u64 {
        self.clusters
            .iter()
            .map(|c| {
                c.capacity_dmips_mhz.unwrap_or(1024) * c.opps.last().map_or(0, |o| o.khz) / 1024
            })
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// The cluster work runs on first: the LITTLE cluster of a pair, else the main one.
    #[must_use]
    pub fn start_cluster(&self) -> usize {
        self.little_cluster().unwrap_or_else(|| self.main_cluster())
    }
}

/// Merges `over` into `base` key by key (see [`Platform::by_name_with`]); `at` is the dotted path
/// so far. A key `base` lacks is refused, as is a table given for a number or the reverse.
fn merge_overrides(
    base: &mut toml::Table,
    over: &toml::Table,
    at: &str,
) -> Result<(), (String, &'static str)> {
    for (key, value) in over {
        let path = format!("{at}{key}");
        let Some(slot) = base.get_mut(key) else {
            return Err((path, "the platform profile has no such key"));
        };
        match (slot, value) {
            (toml::Value::Array(items), toml::Value::Table(by_name))
                if items.iter().all(|i| i.get("name").is_some()) =>
            {
                for (name, change) in by_name {
                    let item_path = format!("{path}.{name}");
                    let Some(toml::Value::Table(item)) = items
                        .iter_mut()
                        .find(|i| i.get("name").and_then(toml::Value::as_str) == Some(name))
                    else {
                        return Err((item_path, "no entry of that name"));
                    };
                    let toml::Value::Table(change) = change else {
                        return Err((item_path, "give a table of the entry's keys"));
                    };
                    merge_overrides(item, change, &format!("{item_path}."))?;
                }
            }
            (toml::Value::Table(inner), toml::Value::Table(change)) => {
                merge_overrides(inner, change, &format!("{path}."))?;
            }
            (toml::Value::Table(_), _) | (_, toml::Value::Table(_)) => {
                return Err((path, "a table and a value do not replace each other"));
            }
            (slot, value) => *slot = value.clone(),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_change_named_figures_and_refuse_unknown_keys() {
        let over: toml::Table = toml::from_str(
            "board = { rest_mw = 700 }\n[clusters.big]\ndynamic_power_coefficient = 400\n\
             cluster_off = { residency_us = 4000 }",
        )
        .unwrap();
        let p = Platform::by_name_with("galaxy-s4", &over).unwrap().unwrap();
        let shipped = Platform::by_name("galaxy-s4").unwrap();
        assert_eq!(p.board.rest_mw, 700);
        let big = p.main_cluster();
        assert_eq!(p.clusters[big].dynamic_power_coefficient, 400);
        assert_eq!(
            p.clusters[big].cluster_off.as_ref().unwrap().residency_us,
            4000
        );
        // Everything else as shipped; no overrides at all is the shipped profile.
        assert_eq!(p.clusters[big].opps, shipped.clusters[big].opps);
        assert_eq!(
            Platform::by_name_with("galaxy-s4", &toml::Table::new())
                .unwrap()
                .unwrap(),
            shipped
        );
        for (bad, field) in [
            ("board = { rest_watts = 1 }", "board.rest_watts"),
            ("[clusters.huge]\ncores = 1", "clusters.huge"),
            ("board = 3", "board"),
        ] {
            let over: toml::Table = toml::from_str(bad).unwrap();
            let err = Platform::by_name_with("galaxy-s4", &over)
                .unwrap()
                .unwrap_err();
            assert!(err.to_string().contains(field), "{bad}: {err}");
        }
        // A changed profile is checked as a shipped one is.
        let over: toml::Table = toml::from_str("timer = { hz = 0 }").unwrap();
        assert!(Platform::by_name_with("galaxy-s4", &over).unwrap().is_err());
        assert!(Platform::by_name_with("nokia", &toml::Table::new()).is_none());
    }

    #[test]
    fn shipped_tk1_parses_and_matches_the_brief() {
        let p = Platform::jetson_tk1();
        let g = &p.clusters[p.main_cluster()];
        assert_eq!(g.cores, 4);
        assert_eq!(g.opps.first().map(|o| (o.khz, o.mv)), Some((204_000, 800)));
        assert_eq!(
            g.opps.last().map(|o| (o.khz, o.mv)),
            Some((2_320_500, 1400))
        );
        let c7 = &g.idle_states[1];
        assert_eq!((c7.exit_us, c7.residency_us), (500, 1000));
        let lp = &p.clusters[p.companion_cluster().expect("TK1 has a companion")];
        assert!(lp.opps.last().map(|o| o.khz).unwrap_or(0) <= 1_100_000);
        // P = 310 × 1400² × 2320.5 / 10⁶ µW = 1 409 936 µW ≈ 1.41 W.
        let top = *g.opps.last().expect("non-empty");
        assert!((g.dynamic_uw(top) - 1_409_936.0).abs() < 1.0);
    }

    #[test]
    fn every_shipped_profile_parses_and_tegra_250_matches_seed_003_table_i() {
        for name in SHIPPED {
            assert!(Platform::by_name(name).is_some(), "{name}");
        }
        let p = Platform::by_name("tegra-250").expect("shipped");
        let a9 = &p.clusters[p.main_cluster()];
        // Seed 003 table I: dual Cortex-A9 at 1.2 GHz; §V's 3 and 5 ms preemption ticks need a
        // 1 ms scheduler tick.
        assert_eq!(a9.cores, 2);
        assert_eq!(a9.opps.last().map(|o| o.khz), Some(1_200_000));
        assert_eq!(p.timer.hz, 1000);
        assert!(p.companion_cluster().is_none());
    }

    #[test]
    fn shipped_galaxy_s4_matches_seed_001_table_i() {
        let p = Platform::by_name("galaxy-s4").expect("shipped");
        let little = &p.clusters[p.little_cluster().expect("a LITTLE cluster")];
        let big = &p.clusters[p.main_cluster()];
        assert_eq!(p.start_cluster(), p.little_cluster().unwrap_or(99));
        // Seed 001 §4.1: LITTLE 8 levels 250-600 MHz, big 9 levels 800-1600 MHz, four cores each.
        assert_eq!((little.cores, big.cores), (4, 4));
        assert_eq!(little.opps.len(), 8);
        assert_eq!(big.opps.len(), 9);
        assert_eq!(little.opps.first().map(|o| o.khz), Some(250_000));
        assert_eq!(little.opps.last().map(|o| o.khz), Some(600_000));
        assert_eq!(big.opps.first().map(|o| o.khz), Some(800_000));
        assert_eq!(big.opps.last().map(|o| o.khz), Some(1_600_000));
        // The sibling device tree's coefficients and capacities.
        assert_eq!(
            (
                little.dynamic_power_coefficient,
                big.dynamic_power_coefficient
            ),
            (90, 310)
        );
        assert_eq!(
            (little.capacity_dmips_mhz, big.capacity_dmips_mhz),
            (Some(539), Some(1024))
        );
        // Seed footnote 9: 1.6 ms to move every thread between clusters; per-core hotplug.
        assert_eq!(p.cluster_switch.latency_us, 1600);
        assert!(p.hotplug.is_some());
        // A busy A15 core at 1.6 GHz draws more than a busy A7 at 600 MHz by far (the big.LITTLE
        // premise): 310 x 1175^2 x 1600 / 10^6 uW vs 90 x 938^2 x 600 / 10^6 uW.
        let top_big = big.dynamic_uw(*big.opps.last().expect("non-empty"));
        let top_little = little.dynamic_uw(*little.opps.last().expect("non-empty"));
        assert!(top_big > 10.0 * top_little);
    }

    #[test]
    fn shipped_odroid_xu3_matches_the_device_tree_and_seed_004() {
        let p = Platform::by_name("odroid-xu3").expect("shipped");
        assert!(p.both_clusters_online);
        let little = &p.clusters[p.little_cluster().expect("a LITTLE cluster")];
        let big = &p.clusters[p.main_cluster()];
        // Seed 004 chapter 3: cores 0-3 LITTLE, 4-7 big: the LITTLE cluster comes first.
        assert_eq!(p.little_cluster(), Some(0));
        assert_eq!((little.cores, big.cores), (4, 4));
        // 200-1400 MHz and 200-2000 MHz in 100 MHz steps.
        let range = |c: &Cluster| (c.opps[0].khz, c.opps[c.opps.len() - 1].khz, c.opps.len());
        assert_eq!(range(little), (200_000, 1_400_000, 13));
        assert_eq!(range(big), (200_000, 2_000_000, 19));
        // exynos5420.dtsi: A15 1800 MHz at 1250 mV, 800 MHz at 937.5 mV; A7 1300 MHz at 1275 mV,
        // 600 MHz at 937.5 mV; 140 us clock latency.
        let mv = |c: &Cluster, khz: u64| c.opps.iter().find(|o| o.khz == khz).map(|o| o.mv);
        assert_eq!(mv(big, 1_800_000), Some(1250));
        assert_eq!(mv(big, 800_000), Some(938));
        assert_eq!(mv(little, 1_300_000), Some(1275));
        assert_eq!(mv(little, 600_000), Some(938));
        assert_eq!(p.governor.transition_latency_us, 140);
        // exynos5422-cpus.dtsi: dynamic-power-coefficient 310 / 90, capacity-dmips-mhz 1024 / 539.
        assert_eq!(
            (
                big.dynamic_power_coefficient,
                little.dynamic_power_coefficient
            ),
            (310, 90)
        );
        assert_eq!(
            (big.capacity_dmips_mhz, little.capacity_dmips_mhz),
            (Some(1024), Some(539))
        );
        // A big.LITTLE profile that switches clusters cannot claim both online without a pair.
        let one = X86_64_TOML.replacen("\n[timer]", "\nboth_clusters_online = true\n[timer]", 1);
        assert!(matches!(
            Platform::parse(&one),
            Err(PlatformError::Invalid { .. })
        ));
    }

    #[test]
    fn a_second_paired_cluster_is_refused() {
        let two_littles = GALAXY_S4_TOML.replace("kind = \"main\"", "kind = \"little\"");
        assert!(matches!(
            Platform::parse(&two_littles),
            Err(PlatformError::Invalid { .. })
        ));
    }

    fn with(edit: impl Fn(&str) -> String) -> Result<Platform, PlatformError> {
        Platform::parse(&edit(JETSON_TK1_TOML))
    }

    #[test]
    fn bad_profiles_get_typed_errors() {
        assert!(matches!(
            with(|s| s.replace("hz = 250", "hz = 0")),
            Err(PlatformError::Invalid { .. })
        ));
        assert!(matches!(
            with(|s| s.replace("{ khz = 312000, mv = 831 }", "{ khz = 100000, mv = 831 }")),
            Err(PlatformError::Invalid { .. })
        ));
        assert!(matches!(
            with(|s| s.replace("rest_mw", "rest_w")),
            Err(PlatformError::Syntax(_))
        ));
        assert!(matches!(
            with(|s| s.replace("mode = \"dynamic\"", "mode = \"sometimes\"")),
            Err(PlatformError::Syntax(_))
        ));
        assert!(matches!(
            with(|s| s.replace("kind = \"companion\"", "kind = \"main\"")),
            Err(PlatformError::Invalid { .. })
        ));
        assert!(matches!(
            Platform::parse("not toml ["),
            Err(PlatformError::Syntax(_))
        ));
    }
}
