//! Seed 001 §3.2.3: UCSG's governor — DPM (how many cores), DVFS (which level) and cluster
//! switching — from the workload of the last sampling period and the threads' sensitivity.
//!
//! Levels are chosen from the union of every cluster's levels (§3.2.3: "the frequency level is
//! selected from the union of all the levels of the two clusters"), so one index on the
//! [`Ladder`] names both a cluster and its frequency.

use crate::ucsg::config::{cycles_in, UcsgCluster, UcsgConfig};
use crate::ucsg::sensitivity::Sensitivity;

/// One level of the union ladder.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Level {
    pub cluster: usize,
    pub khz: u64,
}

/// Every cluster's levels, ascending (by frequency, then cluster).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Ladder {
    levels: Vec<Level>,
    /// Per cluster, its work per cycle (`capacity-dmips-mhz`).
    capacity: Vec<u64>,
}

impl Ladder {
    #[must_use]
    pub fn new(cfg: &UcsgConfig) -> Ladder {
        let mut levels: Vec<Level> = cfg
            .clusters
            .iter()
            .enumerate()
            .flat_map(|(cluster, c)| c.levels_khz.iter().map(move |&khz| Level { cluster, khz }))
            .collect();
        levels.sort_by_key(|l| (l.khz, l.cluster));
        let capacity = cfg
            .clusters
            .iter()
            .map(|c| c.capacity_dmips_mhz.max(1))
            .collect();
        Ladder { levels, capacity }
    }

    #[must_use]
    pub fn level(&self, i: usize) -> Level {
        self.levels[i.min(self.top())]
    }

    /// The highest level's index.
    #[must_use]
    pub fn top(&self) -> usize {
        self.levels.len().saturating_sub(1)
    }

    /// The index of `cluster`'s level nearest `khz` from above (its top one if `khz` is above
    /// all) — where the ladder stands when a cluster runs at `khz`.
    #[must_use]
    pub fn index_of(&self, cluster: usize, khz: u64) -> usize {
        let of_cluster = || (0..self.levels.len()).filter(|&i| self.levels[i].cluster == cluster);
        of_cluster()
            .find(|&i| self.levels[i].khz >= khz)
            .or_else(|| of_cluster().next_back())
            .unwrap_or(0)
    }

    /// The lowest level of `cluster`.
    #[must_use]
    pub fn lowest_of(&self, cluster: usize) -> usize {
        (0..self.levels.len())
            .find(|&i| self.levels[i].cluster == cluster)
            .unwrap_or(0)
    }

    /// What level `i` provides in `period_ns`, in cycles of cluster `from` (weighed by the two
    /// clusters' work per cycle).
    #[must_use]
    pub fn cycles_at(&self, i: usize, period_ns: u64, from: usize) -> u64 {
        let l = self.level(i);
        let own = self.capacity.get(l.cluster).copied().unwrap_or(1);
        let theirs = self.capacity.get(from).copied().unwrap_or(own);
        (u128::from(cycles_in(l.khz, period_ns)) * u128::from(own) / u128::from(theirs)) as u64
    }

    /// The lowest level that covers `cycles` of cluster `from` in `period_ns` (the top one if
    /// none does).
    #[must_use]
    pub fn lowest_sufficient(&self, cycles: u64, period_ns: u64, from: usize) -> usize {
        (0..self.levels.len())
            .find(|&i| self.cycles_at(i, period_ns, from) >= cycles)
            .unwrap_or(self.top())
    }
}

/// §3.2.3: cycles the low-sensitivity threads of a core get once its medium threads have their
/// `c_m`: C_l = C_m × N_l / (N_l + 1.25^k × N_m), `k` the nice gap between the two states (the
/// Android priority system gives about 1.25^k times the CPU time to the higher priority).
#[must_use]
pub fn low_cycles(c_m: u64, n_l: u32, n_m: u32, nice_gap: u32) -> u64 {
    if n_l == 0 {
        return 0;
    }
    let share = f64::from(n_l) / (f64::from(n_l) + 1.25_f64.powi(nice_gap as i32) * f64::from(n_m));
    (c_m as f64 * share) as u64
}

/// The nice gap between medium and low threads (`k` of [`low_cycles`]).
#[must_use]
pub fn medium_low_gap() -> u32 {
    (i32::from(Sensitivity::Low.nice()) - i32::from(Sensitivity::Medium.nice())).unsigned_abs()
}

/// The workload one core must be given in a period: all its medium (and high) threads' cycles
/// and, for its low ones, only [`low_cycles`].
#[must_use]
pub fn required_cycles(c_m: u64, n_l: u32, n_m: u32) -> u64 {
    c_m + low_cycles(c_m, n_l, n_m, medium_low_gap())
}

/// DPM: cores of `cluster` to keep on for a required workload of `cycles` per period — one more
/// for each of the cluster's three thresholds it exceeds — but no more than the threads that
/// ran, and at least one.
#[must_use]
pub fn dpm_cores(cluster: &UcsgCluster, cycles: u64, period_ns: u64, running: usize) -> usize {
    let n = 1
        + (1..=3)
            .filter(|&n| cycles > cluster.dpm_cycles(n, period_ns))
            .count();
    n.min(running).min(cluster.cores).max(1)
}

/// DVFS for one core: the lowest level that covers `cycles` (measured on cluster `from`), one
/// higher if that level would run the core above `up_threshold_pct`.
#[must_use]
pub fn core_level(
    ladder: &Ladder,
    cycles: u64,
    period_ns: u64,
    up_threshold_pct: u64,
    from: usize,
) -> usize {
    let l = ladder.lowest_sufficient(cycles, period_ns, from);
    let capacity = ladder.cycles_at(l, period_ns, from);
    let busy = u128::from(cycles) * 100 > u128::from(capacity) * u128::from(up_threshold_pct);
    if busy && l < ladder.top() {
        l + 1
    } else {
        l
    }
}

/// The half-scaling policy: the median between the current level and the highest.
#[must_use]
pub fn half_scale(ladder: &Ladder, current: usize) -> usize {
    (current + ladder.top()).div_ceil(2)
}

/// What the governor remembers between periods.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct GovernorMemory {
    /// Whether the workload outgrew the level it ran at in the last period.
    outgrew: bool,
    /// Periods in a row whose selected level lay below the active cluster.
    below: u32,
}

/// Where the governor lands after one period.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Choice {
    /// The level to run at (its cluster is the cluster to run on).
    pub level: usize,
    /// Whether the half-scaling policy raised it.
    pub half_scaled: bool,
}

impl GovernorMemory {
    /// DVFS at a sampling period: with a high thread, the top level; else the highest of the
    /// cores' levels, raised to the half-scaling level when the workload increased twice in a
    /// row. `current` is the level the cores ran at, on the cluster the cycles were counted on.
    ///
    /// "The workload increases" is read as the governor reads it: the period's workload needs a
    /// higher level than the one it ran at. (Read as any rise of the measured cycles, the
    /// frame-to-frame noise of a steady video triggers half-scaling every few periods, which is
    /// not the "potential bursty workload" §3.2.3 scales up for.)
    pub fn dvfs(
        &mut self,
        ladder: &Ladder,
        per_core_cycles: &[u64],
        any_high: bool,
        current: usize,
        cfg: &UcsgConfig,
    ) -> Choice {
        let from = ladder.level(current).cluster;
        let level = per_core_cycles
            .iter()
            .map(|&c| {
                core_level(
                    ladder,
                    c,
                    cfg.sampling_period_ns,
                    cfg.up_threshold_pct,
                    from,
                )
            })
            .max()
            .unwrap_or(0);
        let outgrew = level > current;
        let grew_twice = outgrew && self.outgrew;
        self.outgrew = outgrew;
        if any_high {
            return Choice {
                level: ladder.top(),
                half_scaled: false,
            };
        }
        let half = half_scale(ladder, current);
        if grew_twice && half > level {
            Choice {
                level: half,
                half_scaled: true,
            }
        } else {
            Choice {
                level,
                half_scaled: false,
            }
        }
    }

    /// Cluster switching at a sampling period: up to a faster cluster at once when the level lies
    /// there; down only when the level has lain below the active cluster for
    /// `big_to_little_periods` periods in a row (until then, the active cluster's lowest level).
    /// Returns the level to run at; its cluster is the one to run on.
    pub fn switch(
        &mut self,
        ladder: &Ladder,
        active: usize,
        level: usize,
        cfg: &UcsgConfig,
    ) -> usize {
        let want = ladder.level(level).cluster;
        if want >= active {
            self.below = 0;
            return level;
        }
        self.below += 1;
        if self.below >= cfg.big_to_little_periods {
            self.below = 0;
            level
        } else {
            ladder.lowest_of(active)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MC: u64 = 1_000_000;

    fn s4() -> (UcsgConfig, Ladder) {
        let c = UcsgConfig::galaxy_s4();
        let l = Ladder::new(&c);
        (c, l)
    }

    #[test]
    fn the_ladder_is_the_union_of_both_clusters() {
        let (_, l) = s4();
        assert_eq!(l.top(), 16);
        assert_eq!(
            l.level(0),
            Level {
                cluster: 0,
                khz: 250_000
            }
        );
        assert_eq!(
            l.level(7),
            Level {
                cluster: 0,
                khz: 600_000
            }
        );
        assert_eq!(
            l.level(8),
            Level {
                cluster: 1,
                khz: 800_000
            }
        );
        assert_eq!(l.index_of(1, 1_600_000), 16);
        assert_eq!(l.index_of(0, 420_000), 4);
        assert_eq!(l.lowest_of(1), 8);
    }

    #[test]
    fn low_cycles_follow_the_formula() {
        // k = 20 between nice −10 and 10: 1.25^20 ≈ 86.74.
        assert_eq!(medium_low_gap(), 20);
        // One medium thread needing 40 Mcycles next to one low thread: 40 M / 87.74 ≈ 0.456 M.
        assert_eq!(low_cycles(40 * MC, 1, 1, 20), 455_912);
        // Low threads alone (no medium need) get nothing: the core may run at its lowest level.
        assert_eq!(low_cycles(0, 3, 0, 20), 0);
        assert_eq!(low_cycles(40 * MC, 0, 2, 20), 0);
        // With k = 0 the shares are even: 2 low of 3 threads get 2/3 of C_m.
        assert_eq!(low_cycles(30 * MC, 2, 1, 0), 20 * MC);
    }

    #[test]
    fn low_threads_share_with_every_medium_thread_and_ride_on_top_of_them() {
        // k = 0, one low thread beside two medium ones: C_l = 30 M × 1 / (1 + 2) = 10 M.
        assert_eq!(low_cycles(30 * MC, 1, 2, 0), 10 * MC);
        // The required workload is C_m plus the low share: 40 M + 0.456 M (the case above).
        assert_eq!(required_cycles(40 * MC, 1, 1), 40 * MC + 455_912);
    }

    #[test]
    fn a_core_exactly_at_the_up_threshold_keeps_its_level() {
        let (c, l) = s4();
        // 37.5 Mcycles are exactly 75 % of 250 MHz's 50 M: not above the threshold.
        let lvl = core_level(&l, 37_500_000, c.sampling_period_ns, 75, 0);
        assert_eq!(l.level(lvl).khz, 250_000);
        assert_eq!(
            l.level(core_level(&l, 37_500_001, c.sampling_period_ns, 75, 0))
                .khz,
            300_000
        );
    }

    #[test]
    fn half_scaling_that_lands_on_the_needed_level_is_not_counted_as_half_scaling() {
        let (c, l) = s4();
        let mut g = GovernorMemory::default();
        // Twice more than the top gives, from level 15: the median of 15 and 16 is 16, the
        // level already needed, so nothing was raised.
        let first = g.dvfs(&l, &[1000 * MC], false, 15, &c);
        assert_eq!(
            first,
            Choice {
                level: 16,
                half_scaled: false
            }
        );
        let second = g.dvfs(&l, &[1000 * MC], false, 15, &c);
        assert_eq!(
            second,
            Choice {
                level: 16,
                half_scaled: false
            }
        );
    }

    #[test]
    fn dpm_counts_thresholds_and_running_threads() {
        let (c, _) = s4();
        let little = &c.clusters[0];
        let p = c.sampling_period_ns;
        assert_eq!(dpm_cores(little, 90 * MC, p, 4), 1);
        assert_eq!(dpm_cores(little, 91 * MC, p, 4), 2);
        assert_eq!(dpm_cores(little, 181 * MC, p, 4), 3);
        assert_eq!(dpm_cores(little, 301 * MC, p, 4), 4);
        // No more cores than running threads.
        assert_eq!(dpm_cores(little, 301 * MC, p, 2), 2);
        assert_eq!(dpm_cores(little, 0, p, 0), 1);
        let big = &c.clusters[1];
        assert_eq!(dpm_cores(big, 400 * MC, p, 4), 2);
        assert_eq!(dpm_cores(big, 781 * MC, p, 4), 4);
    }

    #[test]
    fn a_core_level_covers_its_cycles_with_headroom() {
        let (c, l) = s4();
        let p = c.sampling_period_ns;
        // 60 Mcycles: 300 MHz covers them (60 M in 200 ms) at 100 % > 75 % → 350 MHz.
        assert_eq!(l.level(core_level(&l, 60 * MC, p, 75, 0)).khz, 350_000);
        // 50 Mcycles: 250 MHz covers them at 100 % → 300 MHz.
        assert_eq!(l.level(core_level(&l, 50 * MC, p, 75, 0)).khz, 300_000);
        // 40 Mcycles: 250 MHz at 80 % → 300 MHz; 35 Mcycles: 70 % → stays 250 MHz.
        assert_eq!(l.level(core_level(&l, 40 * MC, p, 75, 0)).khz, 300_000);
        assert_eq!(l.level(core_level(&l, 35 * MC, p, 75, 0)).khz, 250_000);
        // Beyond the LITTLE top: a big level. An A15 cycle does 1024/539 of an A7's work, so
        // 800 MHz gives 304 M A7 cycles: 43 %.
        assert_eq!(l.level(core_level(&l, 130 * MC, p, 75, 0)).khz, 800_000);
        // 45.6 M cycles counted on big are 86.6 M of LITTLE's: 450 MHz at 96 % → 500 MHz.
        assert_eq!(l.level(core_level(&l, 45_600_000, p, 75, 1)).khz, 500_000);
        // Counted as equal (the seed's footnote 5), the same cycles would get 300 MHz.
        let mut flat = UcsgConfig::galaxy_s4();
        flat.clusters[0].capacity_dmips_mhz = 1024;
        let fl = Ladder::new(&flat);
        assert_eq!(fl.level(core_level(&fl, 45_600_000, p, 75, 1)).khz, 300_000);
        // More than the top provides: the top.
        assert_eq!(core_level(&l, 1000 * MC, p, 75, 0), l.top());
    }

    #[test]
    fn dvfs_takes_the_busiest_core_and_half_scales_after_two_rises() {
        let (c, l) = s4();
        let mut g = GovernorMemory::default();
        let pick = |g: &mut GovernorMemory, cores: &[u64], cur| g.dvfs(&l, cores, false, cur, &c);
        // 35 Mcycles: 250 MHz at 70 % — the level it ran at (0) serves it.
        assert_eq!(pick(&mut g, &[10 * MC, 35 * MC], 0).level, 0);
        // Outgrew 250 MHz once: 300 MHz (level 1).
        assert_eq!(pick(&mut g, &[20 * MC, 45 * MC], 0).level, 1);
        // Outgrew 300 MHz too, twice in a row: the median between level 1 and the top (16) is
        // level 9, big's 900 MHz.
        let ch = pick(&mut g, &[30 * MC, 60 * MC], 1);
        assert_eq!(
            ch,
            Choice {
                level: 9,
                half_scaled: true
            }
        );
        // Not after a period that needed no more.
        assert_eq!(pick(&mut g, &[MC, MC], 9).level, 0);
        assert_eq!(pick(&mut g, &[60 * MC], 0).level, 2);
        // Noise that stays within the level does not count as growth.
        assert_eq!(pick(&mut g, &[20 * MC], 2).level, 0);
        assert_eq!(pick(&mut g, &[40 * MC], 0).level, 1);
        assert!(!pick(&mut g, &[41 * MC], 1).half_scaled);
        // A high thread takes the top at once.
        assert_eq!(g.dvfs(&l, &[0], true, 0, &c).level, 16);
    }

    #[test]
    fn big_to_little_waits_three_periods_little_to_big_does_not() {
        let (c, l) = s4();
        let mut g = GovernorMemory::default();
        // On LITTLE (0), a big level switches at once.
        assert_eq!(g.switch(&l, 0, 10, &c), 10);
        // On big (1), a LITTLE level twice: stay at big's lowest; the third time, go.
        assert_eq!(g.switch(&l, 1, 2, &c), 8);
        assert_eq!(g.switch(&l, 1, 3, &c), 8);
        assert_eq!(g.switch(&l, 1, 1, &c), 1);
        // A big level in between restarts the count.
        assert_eq!(g.switch(&l, 1, 2, &c), 8);
        assert_eq!(g.switch(&l, 1, 9, &c), 9);
        assert_eq!(g.switch(&l, 1, 2, &c), 8);
        assert_eq!(g.switch(&l, 1, 2, &c), 8);
    }
}
