//! UCSG's tunables, each with its place in seed 001, and their checks.

use crate::ucsg::sensitivity::HIGH_HOLD_NS;

/// §3.2.2 footnote 9: threads migrate, and DPM, DVFS and cluster switching run, every 200 ms.
pub const SAMPLING_PERIOD_NS: u64 = 200_000_000;

/// §3.2.3 footnote 10: one level higher when the selected level would run a core above 75 % (the
/// mean of the Galaxy S4 ondemand's 90 % big and 60 % LITTLE thresholds).
pub const UP_THRESHOLD_PCT: u64 = 75;

/// §3.2.3, cluster switching: big → LITTLE only when the selected frequency has been under the big
/// cluster's lowest level in this period and the two before it.
pub const BIG_TO_LITTLE_PERIODS: u32 = 3;

/// §3.2.3, DPM on the Galaxy S4's LITTLE cluster: a second core pays off above 450 MHz on one, a
/// third above 450 MHz on two, a fourth above 500 MHz on three.
pub const GALAXY_S4_LITTLE_DPM_KHZ: [u64; 3] = [450_000, 450_000, 500_000];

/// §3.2.3, DPM on the big cluster: 900, 1000 and 1300 MHz.
pub const GALAXY_S4_BIG_DPM_KHZ: [u64; 3] = [900_000, 1_000_000, 1_300_000];

/// §4.1, Table I: the LITTLE (Cortex-A7) cluster's 8 levels, 250–600 MHz.
pub const GALAXY_S4_LITTLE_KHZ: [u64; 8] = [
    250_000, 300_000, 350_000, 400_000, 450_000, 500_000, 550_000, 600_000,
];

/// §4.1, Table I: the big (Cortex-A15) cluster's 9 levels, 800–1600 MHz.
pub const GALAXY_S4_BIG_KHZ: [u64; 9] = [
    800_000, 900_000, 1_000_000, 1_100_000, 1_200_000, 1_300_000, 1_400_000, 1_500_000, 1_600_000,
];

/// Work per cycle of the Cortex-A7 and the Cortex-A15: `capacity-dmips-mhz` 539 and 1024 in
/// Linux `arch/arm/boot/dts/samsung/exynos5422-cpus.dtsi` (the Exynos 5410's sibling, the same
/// two cores).
pub const CORTEX_A7_DMIPS_MHZ: u64 = 539;
pub const CORTEX_A15_DMIPS_MHZ: u64 = 1024;

/// §3.2.2: the Galaxy S4 has four cores per cluster.
pub const GALAXY_S4_CORES_PER_CLUSTER: usize = 4;

/// One cluster as UCSG's governor sees it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct UcsgCluster {
    pub name: String,
    pub cores: usize,
    /// Its frequency levels in kHz, ascending.
    pub levels_khz: Vec<u64>,
    /// DPM: with `n` cores on (n = 1, 2, 3), the `n`-th core more pays off once `n` cores would
    /// have to run above `dpm_khz[n - 1]` (§3.2.3).
    pub dpm_khz: [u64; 3],
    /// Work per cycle against the other clusters' (Linux `capacity-dmips-mhz`, 1..=1024): a
    /// workload measured in one cluster's cycles is weighed by it before a level of another
    /// cluster is chosen for it. Equal values count a cycle as a cycle everywhere, as the seed's
    /// §2.2 footnote 5 assumes.
    pub capacity_dmips_mhz: u64,
}

impl UcsgCluster {
    /// Cycles per sampling period `n` cores provide at the DPM threshold for going past `n`.
    #[must_use]
    pub fn dpm_cycles(&self, n: usize, period_ns: u64) -> u64 {
        let khz = self.dpm_khz[(n - 1).min(2)];
        cycles_in(khz, period_ns).saturating_mul(n as u64)
    }
}

/// Cycles one core at `khz` runs in `ns`.
#[must_use]
pub fn cycles_in(khz: u64, ns: u64) -> u64 {
    (u128::from(khz) * u128::from(ns) / 1_000_000) as u64
}

/// UCSG's tunables.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct UcsgConfig {
    pub sampling_period_ns: u64,
    /// How long after a touch the front app stays highly sensitive.
    pub high_hold_ns: u64,
    /// The clusters, slowest first (LITTLE, then big); one at a time is active.
    pub clusters: Vec<UcsgCluster>,
    pub up_threshold_pct: u64,
    pub big_to_little_periods: u32,
}

/// A [`UcsgConfig`] UCSG cannot run with.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum UcsgConfigError {
    #[error("ucsg: no clusters")]
    NoClusters,
    #[error("ucsg: cluster `{cluster}`: {reason}")]
    Cluster { cluster: String, reason: String },
    #[error("ucsg: {field}: {reason}")]
    Invalid { field: &'static str, reason: String },
}

impl UcsgConfig {
    /// The seed's configuration on the Galaxy S4.
    #[must_use]
    pub fn galaxy_s4() -> UcsgConfig {
        UcsgConfig {
            sampling_period_ns: SAMPLING_PERIOD_NS,
            high_hold_ns: HIGH_HOLD_NS,
            clusters: vec![
                UcsgCluster {
                    name: "little".into(),
                    cores: GALAXY_S4_CORES_PER_CLUSTER,
                    levels_khz: GALAXY_S4_LITTLE_KHZ.to_vec(),
                    dpm_khz: GALAXY_S4_LITTLE_DPM_KHZ,
                    capacity_dmips_mhz: CORTEX_A7_DMIPS_MHZ,
                },
                UcsgCluster {
                    name: "big".into(),
                    cores: GALAXY_S4_CORES_PER_CLUSTER,
                    levels_khz: GALAXY_S4_BIG_KHZ.to_vec(),
                    dpm_khz: GALAXY_S4_BIG_DPM_KHZ,
                    capacity_dmips_mhz: CORTEX_A15_DMIPS_MHZ,
                },
            ],
            up_threshold_pct: UP_THRESHOLD_PCT,
            big_to_little_periods: BIG_TO_LITTLE_PERIODS,
        }
    }

    /// The seed's tunables on a machine of one cluster of `cores` at `levels_khz`. There is no
    /// power model of such a machine, so DPM's thresholds sit at the same fractions of the top
    /// level as the Galaxy S4 LITTLE cluster's (450, 450 and 500 of 600 MHz).
    #[must_use]
    pub fn one_cluster(cores: usize, levels_khz: Vec<u64>) -> UcsgConfig {
        let top = levels_khz.last().copied().unwrap_or(0);
        let little_top = GALAXY_S4_LITTLE_KHZ[GALAXY_S4_LITTLE_KHZ.len() - 1];
        let dpm_khz = GALAXY_S4_LITTLE_DPM_KHZ.map(|k| top * k / little_top);
        UcsgConfig {
            clusters: vec![UcsgCluster {
                name: "cpu".into(),
                cores,
                levels_khz,
                dpm_khz,
                capacity_dmips_mhz: CORTEX_A15_DMIPS_MHZ,
            }],
            ..UcsgConfig::galaxy_s4()
        }
    }

    /// Checks the numbers.
    ///
    /// # Errors
    /// [`UcsgConfigError`] naming the field: no clusters, a cluster without cores or levels,
    /// levels not strictly ascending, DPM thresholds not ascending, clusters not slowest first,
    /// a zero period or hold, a threshold outside 1..=100, a zero switch-back count.
    pub fn validate(&self) -> Result<(), UcsgConfigError> {
        let bad = |field, reason: &str| UcsgConfigError::Invalid {
            field,
            reason: reason.to_owned(),
        };
        if self.sampling_period_ns == 0 {
            return Err(bad("sampling_period_ns", "must be positive"));
        }
        if self.high_hold_ns == 0 {
            return Err(bad("high_hold_ns", "must be positive"));
        }
        if !(1..=100).contains(&self.up_threshold_pct) {
            return Err(bad("up_threshold_pct", "must be 1..=100"));
        }
        if self.big_to_little_periods == 0 {
            return Err(bad("big_to_little_periods", "must be at least 1"));
        }
        if self.clusters.is_empty() {
            return Err(UcsgConfigError::NoClusters);
        }
        for c in &self.clusters {
            let err = |reason: &str| UcsgConfigError::Cluster {
                cluster: c.name.clone(),
                reason: reason.to_owned(),
            };
            if c.cores == 0 || c.cores > 64 {
                return Err(err("cores must be 1..=64"));
            }
            if c.levels_khz.is_empty() || c.levels_khz[0] == 0 {
                return Err(err("needs at least one positive frequency level"));
            }
            if c.levels_khz.windows(2).any(|w| w[0] >= w[1]) {
                return Err(err("levels_khz must be strictly ascending"));
            }
            if !(1..=1024).contains(&c.capacity_dmips_mhz) {
                return Err(err("capacity_dmips_mhz must be 1..=1024"));
            }
            if c.dpm_khz.windows(2).any(|w| w[0] > w[1]) || c.dpm_khz[0] == 0 {
                return Err(err("dpm_khz must be positive and ascending"));
            }
        }
        if self
            .clusters
            .windows(2)
            .any(|w| w[0].levels_khz.last() >= w[1].levels_khz.last())
        {
            return Err(bad(
                "clusters",
                "must be listed slowest first (each top level above the one before)",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dpm_thresholds_are_the_seeds_cycle_counts() {
        // §3.2.3: 90, 180 and 300 Mcycles on LITTLE; 180, 400 and 780 on big.
        let c = UcsgConfig::galaxy_s4();
        let p = c.sampling_period_ns;
        let mc = |cl: &UcsgCluster| [1, 2, 3].map(|n| cl.dpm_cycles(n, p) / 1_000_000);
        assert_eq!(mc(&c.clusters[0]), [90, 180, 300]);
        assert_eq!(mc(&c.clusters[1]), [180, 400, 780]);
        assert_eq!(c.validate(), Ok(()));
    }

    #[test]
    fn bad_configurations_are_typed_errors() {
        let mut c = UcsgConfig::galaxy_s4();
        c.clusters[1].levels_khz = vec![900_000, 800_000];
        assert!(matches!(c.validate(), Err(UcsgConfigError::Cluster { .. })));
        let mut c = UcsgConfig::galaxy_s4();
        c.clusters.swap(0, 1);
        assert!(matches!(
            c.validate(),
            Err(UcsgConfigError::Invalid {
                field: "clusters",
                ..
            })
        ));
        let mut c = UcsgConfig::galaxy_s4();
        c.up_threshold_pct = 0;
        assert!(c.validate().is_err());
        let mut c = UcsgConfig::galaxy_s4();
        c.clusters.clear();
        assert_eq!(c.validate(), Err(UcsgConfigError::NoClusters));
        let mut c = UcsgConfig::galaxy_s4();
        c.clusters[0].cores = 0;
        assert!(c.validate().is_err());
        assert!(UcsgConfig::one_cluster(2, vec![2_596_000])
            .validate()
            .is_ok());
        assert!(UcsgConfig::one_cluster(2, vec![]).validate().is_err());
    }

    #[test]
    fn one_cluster_dpm_sits_at_the_little_fractions_of_its_top() {
        // 450, 450 and 500 of LITTLE's 600 MHz, scaled to a 1.2 GHz top: 900, 900, 1000 MHz.
        let c = UcsgConfig::one_cluster(4, vec![600_000, 1_200_000]);
        assert_eq!(c.clusters[0].dpm_khz, [900_000, 900_000, 1_000_000]);
    }

    #[test]
    fn a_cluster_holds_at_most_64_cores() {
        let mut c = UcsgConfig::galaxy_s4();
        c.clusters[1].cores = 64;
        assert_eq!(c.validate(), Ok(()));
        c.clusters[1].cores = 65;
        assert!(matches!(c.validate(), Err(UcsgConfigError::Cluster { .. })));
    }

    #[test]
    fn dpm_thresholds_must_be_positive_and_ascending_each_on_its_own() {
        let mut c = UcsgConfig::galaxy_s4();
        c.clusters[0].dpm_khz = [500_000, 450_000, 450_000];
        assert!(matches!(c.validate(), Err(UcsgConfigError::Cluster { .. })));
        let mut c = UcsgConfig::galaxy_s4();
        c.clusters[0].dpm_khz = [0, 450_000, 500_000];
        assert!(matches!(c.validate(), Err(UcsgConfigError::Cluster { .. })));
    }
}
