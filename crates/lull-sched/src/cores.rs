//! Core management: how many cores of the active cluster are online (hotplug, seed 001's DPM)
//! and which cluster is active (cluster switching).
//!
//! Once per governor sampling period the substrate shows the manager the active cluster
//! ([`ClusterView`]) and applies its [`CoreDecision`]. Implementations:
//! - [`AllOnline`]: every core of the cluster stays online, no switching;
//! - [`TegraAutoSwitch`]: the Tegra 3/4/K1 kernel's automatic switch between the main cluster
//!   and the low-power companion core (L4T `arch/arm/mach-tegra/cpu-tegra3.c`, "auto-hotplug");
//! - [`GalaxyS4Hotplug`]: the Galaxy S4's DPM rule as seed 001 §4.5 describes it;
//! - [`GalaxyS4`]: that DPM rule with the Galaxy S4's cluster switching between its LITTLE and
//!   big clusters (seed 001 §2.1).

use std::fmt;

/// The active cluster at the end of a sampling period.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ClusterView<'a> {
    /// Index of the active cluster.
    pub cluster: usize,
    /// Its OPP index and its top OPP index.
    pub opp: usize,
    pub top_opp: usize,
    /// Busy share (0..=100) of each of its online cores over the period.
    pub loads_pct: &'a [u64],
    /// Cores of the cluster, online or not.
    pub cores: usize,
    /// The sampling period just ended.
    pub period_ns: u64,
    /// The top OPP index of the other cluster of a big.LITTLE pair, if there is one.
    pub top_opp_of_other: Option<usize>,
}

impl ClusterView<'_> {
    fn online(&self) -> usize {
        self.loads_pct.len()
    }
}

/// What the substrate should do.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct CoreDecision {
    /// Move all work to this cluster.
    pub switch_to: Option<usize>,
    /// Bring the active cluster to this many online cores (1..=cores).
    pub online: Option<usize>,
    /// With `switch_to`: the OPP index the cluster switched to starts at (none: as it was).
    pub opp: Option<usize>,
}

/// A core manager.
pub trait CoreManager: fmt::Debug {
    /// The name a spec uses.
    fn name(&self) -> &'static str;

    /// The decision at the end of a sampling period.
    fn decide(&mut self, view: &ClusterView<'_>) -> CoreDecision;
}

/// The core manager names [`by_name`] knows.
pub const NAMES: [&str; 4] = ["all-online", "tegra-auto", "galaxy-s4-hotplug", "galaxy-s4"];

/// What a core manager takes from its platform.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CoresConfig {
    pub main_cluster: usize,
    /// The companion cluster, if the platform has one.
    pub companion: Option<usize>,
    /// The governor's `up_threshold` (the Tegra switch reads load against it).
    pub up_threshold_pct: u64,
    /// How long the main cluster must idle at its lowest OPP before switching to the companion.
    pub down_delay_ns: u64,
    /// The LITTLE cluster of a big.LITTLE pair (the main cluster is the big one), if any.
    pub little_cluster: Option<usize>,
    /// The LITTLE cluster's top OPP index (where a switch down from big starts).
    pub little_top_opp: usize,
}

/// The core manager called `name`.
///
/// # Errors
/// [`crate::UnknownPolicy`] for a name not in [`NAMES`], or `tegra-auto` on a platform without
/// a companion core.
pub fn by_name(name: &str, cfg: CoresConfig) -> Result<Box<dyn CoreManager>, crate::UnknownPolicy> {
    match (name, cfg.companion) {
        ("all-online", _) => Ok(Box::new(AllOnline)),
        ("tegra-auto", Some(companion)) => Ok(Box::new(TegraAutoSwitch::new(
            cfg.main_cluster,
            companion,
            cfg.up_threshold_pct,
            cfg.down_delay_ns,
        ))),
        ("galaxy-s4-hotplug", _) => Ok(Box::new(GalaxyS4Hotplug::default())),
        ("galaxy-s4", _) if cfg.little_cluster.is_some() => Ok(Box::new(GalaxyS4::new(
            cfg.little_cluster.unwrap_or(0),
            cfg.main_cluster,
            cfg.little_top_opp,
        ))),
        (other, _) => Err(crate::UnknownPolicy::new(
            "cores",
            other,
            match (cfg.companion.is_some(), cfg.little_cluster.is_some()) {
                (true, _) => &NAMES[..3],
                (false, true) => &["all-online", "galaxy-s4-hotplug", "galaxy-s4"],
                (false, false) => &["all-online", "galaxy-s4-hotplug"],
            },
        )),
    }
}

/// Every core online, no switching.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct AllOnline;

impl CoreManager for AllOnline {
    fn name(&self) -> &'static str {
        "all-online"
    }

    fn decide(&mut self, _view: &ClusterView<'_>) -> CoreDecision {
        CoreDecision::default()
    }
}

/// The Tegra kernel's automatic cluster switch: from the main cluster to the companion once the
/// main cluster has sat at its lowest OPP with a total load one core can carry (sum of loads at
/// most `up_threshold`) for `down_delay`; back to the main cluster when the companion is busier
/// than `up_threshold` at its top OPP. (cpu-tegra3.c: `down_delay` defaults to 2000 ms.)
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TegraAutoSwitch {
    main: usize,
    companion: usize,
    up_threshold_pct: u64,
    down_delay_ns: u64,
    /// Time the main cluster has been quiet at its lowest OPP.
    quiet_ns: u64,
}

impl TegraAutoSwitch {
    #[must_use]
    pub fn new(
        main: usize,
        companion: usize,
        up_threshold_pct: u64,
        down_delay_ns: u64,
    ) -> TegraAutoSwitch {
        TegraAutoSwitch {
            main,
            companion,
            up_threshold_pct,
            down_delay_ns,
            quiet_ns: 0,
        }
    }
}

impl CoreManager for TegraAutoSwitch {
    fn name(&self) -> &'static str {
        "tegra-auto"
    }

    fn decide(&mut self, v: &ClusterView<'_>) -> CoreDecision {
        let up = self.up_threshold_pct;
        if v.cluster == self.main {
            let total: u64 = v.loads_pct.iter().sum();
            if v.opp == 0 && total <= up {
                self.quiet_ns += v.period_ns;
            } else {
                self.quiet_ns = 0;
            }
            if self.quiet_ns >= self.down_delay_ns {
                self.quiet_ns = 0;
                return CoreDecision {
                    switch_to: Some(self.companion),
                    ..CoreDecision::default()
                };
            }
        } else if v.cluster == self.companion {
            let max = v.loads_pct.iter().copied().max().unwrap_or(0);
            if max > up && v.opp == v.top_opp {
                return CoreDecision {
                    switch_to: Some(self.main),
                    ..CoreDecision::default()
                };
            }
        }
        CoreDecision::default()
    }
}

/// Periods at the lowest level after which the Galaxy S4 turns one core off. Source: seed 001
/// §4.5 ("remains at that frequency for a few sampling periods (which is set at five)").
pub const GALAXY_S4_OFF_AFTER_PERIODS: u32 = 5;

/// The Galaxy S4's DPM rule (seed 001 §4.5): every core on once the frequency exceeds the
/// cluster's lowest level; one core off after [`GALAXY_S4_OFF_AFTER_PERIODS`] periods at it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct GalaxyS4Hotplug {
    periods_at_lowest: u32,
}

impl CoreManager for GalaxyS4Hotplug {
    fn name(&self) -> &'static str {
        "galaxy-s4-hotplug"
    }

    fn decide(&mut self, v: &ClusterView<'_>) -> CoreDecision {
        if v.opp > 0 {
            self.periods_at_lowest = 0;
            return CoreDecision {
                online: (v.online() < v.cores).then_some(v.cores),
                ..CoreDecision::default()
            };
        }
        self.periods_at_lowest += 1;
        if self.periods_at_lowest >= GALAXY_S4_OFF_AFTER_PERIODS && v.online() > 1 {
            self.periods_at_lowest = 0;
            return CoreDecision {
                online: Some(v.online() - 1),
                ..CoreDecision::default()
            };
        }
        CoreDecision::default()
    }
}

/// The Galaxy S4's switch up: a core of the LITTLE cluster busier than this while the cluster
/// runs at its top level moves everything to big. Seed 001 §2.1 ("the big cluster is activated
/// if a core's utilization exceeds a predefined threshold while the LITTLE cluster already
/// operates on its highest frequency") with the LITTLE cluster's ondemand up threshold, 60 %
/// (§4.5, footnote 10): ondemand over the joined ladder asks for more than LITTLE's top.
pub const GALAXY_S4_LITTLE_TO_BIG_PCT: u64 = 60;

/// The Galaxy S4's switch down: every core of the big cluster less busy than this while it runs
/// at its lowest level moves everything to LITTLE. Seed 001 §2.1 ("when the utilization of all
/// cores falls below another threshold while the big cluster operates on its lowest frequency")
/// with the big cluster's ondemand down threshold, 70 % (§4.5): ondemand over the joined ladder
/// steps one level below big's lowest.
pub const GALAXY_S4_BIG_TO_LITTLE_PCT: u64 = 70;

/// The stock Galaxy S4 core management of seed 001: [`GalaxyS4Hotplug`]'s DPM rule on the active
/// cluster, and cluster switching at [`GALAXY_S4_LITTLE_TO_BIG_PCT`] /
/// [`GALAXY_S4_BIG_TO_LITTLE_PCT`]. Going up starts big at its top level (ondemand jumps to the
/// highest level of the joined ladder); going down starts LITTLE at its top (one step below
/// big's lowest). The cores online carry over (the substrate brings up as many).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct GalaxyS4 {
    little: usize,
    big: usize,
    little_top_opp: usize,
    hotplug: GalaxyS4Hotplug,
}

impl GalaxyS4 {
    #[must_use]
    pub fn new(little: usize, big: usize, little_top_opp: usize) -> GalaxyS4 {
        GalaxyS4 {
            little,
            big,
            little_top_opp,
            hotplug: GalaxyS4Hotplug::default(),
        }
    }
}

impl CoreManager for GalaxyS4 {
    fn name(&self) -> &'static str {
        "galaxy-s4"
    }

    fn decide(&mut self, v: &ClusterView<'_>) -> CoreDecision {
        let max = v.loads_pct.iter().copied().max().unwrap_or(0);
        if v.cluster == self.little && v.opp == v.top_opp && max > GALAXY_S4_LITTLE_TO_BIG_PCT {
            self.hotplug = GalaxyS4Hotplug::default();
            return CoreDecision {
                switch_to: Some(self.big),
                online: None,
                opp: Some(v.top_opp_of_other.unwrap_or(0)),
            };
        }
        if v.cluster == self.big && v.opp == 0 && max < GALAXY_S4_BIG_TO_LITTLE_PCT {
            self.hotplug = GalaxyS4Hotplug::default();
            return CoreDecision {
                switch_to: Some(self.little),
                online: None,
                opp: Some(self.little_top_opp),
            };
        }
        self.hotplug.decide(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn view(cluster: usize, opp: usize, loads: &[u64]) -> ClusterView<'_> {
        ClusterView {
            cluster,
            opp,
            top_opp: 7,
            loads_pct: loads,
            cores: 4,
            period_ns: 20 * MS,
            top_opp_of_other: Some(8),
        }
    }

    #[test]
    fn each_manager_answers_to_the_name_it_was_made_by_and_all_online_never_acts() {
        let cfg = CoresConfig {
            main_cluster: 1,
            companion: Some(0),
            up_threshold_pct: 80,
            down_delay_ns: 2000 * MS,
            little_cluster: Some(0),
            little_top_opp: 4,
        };
        for name in NAMES {
            assert_eq!(by_name(name, cfg).unwrap().name(), name);
        }
        let mut all = by_name("all-online", cfg).unwrap();
        for loads in [&[0u64][..], &[100, 100, 100, 100], &[5]] {
            assert_eq!(all.decide(&view(1, 0, loads)), CoreDecision::default());
        }
    }

    #[test]
    fn tegra_switches_to_the_companion_after_the_down_delay_and_back_when_it_saturates() {
        let mut m = TegraAutoSwitch::new(0, 1, 80, 2000 * MS);
        for _ in 0..99 {
            assert_eq!(
                m.decide(&view(0, 0, &[30, 30, 10, 0])),
                CoreDecision::default()
            );
        }
        assert_eq!(m.decide(&view(0, 0, &[30, 30, 10, 0])).switch_to, Some(1));
        // A higher OPP, or a busy period at the lowest (81 % in all against 80), restarts
        // the delay: 100 quiet periods are needed after it.
        for interruption in [view(0, 1, &[0]), view(0, 0, &[50, 31])] {
            for _ in 0..99 {
                assert_eq!(m.decide(&view(0, 0, &[0])).switch_to, None);
            }
            assert_eq!(m.decide(&interruption).switch_to, None);
            for _ in 0..99 {
                assert_eq!(m.decide(&view(0, 0, &[0])).switch_to, None);
            }
            assert_eq!(m.decide(&view(0, 0, &[0])).switch_to, Some(1));
        }
        // On the companion: back only when saturated at its top OPP.
        assert_eq!(m.decide(&view(1, 6, &[95])).switch_to, None);
        assert_eq!(m.decide(&view(1, 7, &[80])).switch_to, None);
        assert_eq!(m.decide(&view(1, 7, &[81])).switch_to, Some(0));
    }

    #[test]
    fn galaxy_s4_turns_every_core_on_above_the_lowest_level_and_one_off_after_five_periods() {
        let mut m = GalaxyS4Hotplug::default();
        assert_eq!(m.decide(&view(0, 1, &[50])).online, Some(4));
        assert_eq!(m.decide(&view(0, 1, &[50, 0, 0, 0])).online, None);
        for _ in 0..4 {
            assert_eq!(m.decide(&view(0, 0, &[5, 0, 0, 0])).online, None);
        }
        assert_eq!(m.decide(&view(0, 0, &[5, 0, 0, 0])).online, Some(3));
        for _ in 0..4 {
            assert_eq!(m.decide(&view(0, 0, &[5, 0, 0])).online, None);
        }
        assert_eq!(m.decide(&view(0, 0, &[5, 0, 0])).online, Some(2));
        // A period above the lowest level resets the count and brings all back.
        assert_eq!(m.decide(&view(0, 3, &[90, 0])).online, Some(4));
        // Never below one core.
        let mut one = GalaxyS4Hotplug::default();
        for _ in 0..20 {
            assert_eq!(one.decide(&view(0, 0, &[0])).online, None);
        }
    }

    #[test]
    fn galaxy_s4_switches_up_from_little_at_its_top_and_down_from_big_at_its_lowest() {
        // Cluster 0 LITTLE (top OPP 7), cluster 1 big (top OPP 8).
        let mut m = GalaxyS4::new(0, 1, 7);
        // LITTLE below its top: no switch however busy; the DPM rule brings all cores on.
        let d = m.decide(&view(0, 6, &[95, 10]));
        assert_eq!((d.switch_to, d.online), (None, Some(4)));
        // At its top with a core above 60 %: big, at big's top level.
        let d = m.decide(&view(0, 7, &[61, 0, 0, 0]));
        assert_eq!((d.switch_to, d.opp), (Some(1), Some(8)));
        // At its top at 60 %: stays.
        assert_eq!(m.decide(&view(0, 7, &[60, 0, 0, 0])).switch_to, None);
        // big above its lowest level: stays, however quiet.
        assert_eq!(m.decide(&view(1, 1, &[5, 5, 5, 5])).switch_to, None);
        // big at its lowest with one core at 70 %: stays; all below 70 %: LITTLE at its top.
        assert_eq!(m.decide(&view(1, 0, &[70, 5, 5, 5])).switch_to, None);
        let d = m.decide(&view(1, 0, &[69, 5, 5, 5]));
        assert_eq!((d.switch_to, d.opp), (Some(0), Some(7)));
    }

    #[test]
    fn names_build_and_unknown_names_are_refused() {
        let cfg = CoresConfig {
            main_cluster: 0,
            companion: None,
            up_threshold_pct: 80,
            down_delay_ns: 2000 * MS,
            little_cluster: None,
            little_top_opp: 0,
        };
        assert!(by_name("all-online", cfg).is_ok());
        assert!(by_name("galaxy-s4-hotplug", cfg).is_ok());
        assert!(by_name("tegra-auto", cfg).is_err());
        let with = CoresConfig {
            companion: Some(1),
            ..cfg
        };
        assert_eq!(
            by_name("tegra-auto", with).map(|m| m.name()).ok(),
            Some("tegra-auto")
        );
        assert!(by_name("galaxy-s4", cfg).is_err());
        let pair = CoresConfig {
            little_cluster: Some(1),
            ..cfg
        };
        assert_eq!(
            by_name("galaxy-s4", pair).map(|m| m.name()).ok(),
            Some("galaxy-s4")
        );
        let err = by_name("sometimes", with).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("unknown cores `sometimes` (known: all-online, tegra-auto, galaxy-s4-hotplug)")
        );
    }
}
