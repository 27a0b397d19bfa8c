//! Schedutil over the big.LITTLE switcher's joined frequency ladder: today's Linux on a
//! cluster-migration SoC such as the Exynos 5410.
//!
//! With the in-kernel big.LITTLE switcher (`drivers/cpufreq/vexpress-spc-cpufreq.c`, formerly
//! `arm_big_little.c`, with `CONFIG_BL_SWITCHER`) cpufreq sees one virtual ladder: the LITTLE
//! cluster's levels at half their real frequency (`ACTUAL_FREQ` / `VIRT_FREQ`: an A7 does about
//! half an A15's work per MHz) below the big cluster's levels. The governor asks for a virtual
//! frequency; when it falls in the other cluster's range the driver switches clusters
//! (`bL_switch_request`). Schedutil's request is 1.25 × the top virtual frequency × the busiest
//! CPU's frequency-invariant utilisation (`get_next_freq`), rounded up to a level
//! (`CPUFREQ_RELATION_L`), at most once per rate limit.

use super::schedutil::next_khz;

/// The switcher's LITTLE-to-virtual divisor: `VIRT_FREQ(cluster, freq)` halves A7 frequencies
/// (`arm_big_little.c`, `#define VIRT_FREQ … (freq >> 1)`).
pub const LITTLE_VIRTUAL_SHIFT: u32 = 1;

/// One level of the joined ladder.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Level {
    pub cluster: usize,
    pub opp: usize,
    pub virtual_khz: u64,
}

/// The joined ladder and schedutil's rate limit over it.
#[derive(Clone, Debug)]
pub struct BlSwitcher {
    levels: Vec<Level>,
    rate_limit_ns: u64,
    last_update_ns: Option<u64>,
}

impl BlSwitcher {
    /// The ladder of `little_khz` (cluster `little`) and `big_khz` (cluster `big`), both
    /// ascending, with schedutil's `rate_limit_ns`.
    #[must_use]
    pub fn new(
        little: usize,
        little_khz: &[u64],
        big: usize,
        big_khz: &[u64],
        rate_limit_ns: u64,
    ) -> BlSwitcher {
        let mut levels: Vec<Level> = little_khz
            .iter()
            .enumerate()
            .map(|(opp, &k)| Level {
                cluster: little,
                opp,
                virtual_khz: k >> LITTLE_VIRTUAL_SHIFT,
            })
            .collect();
        levels.extend(big_khz.iter().enumerate().map(|(opp, &k)| Level {
            cluster: big,
            opp,
            virtual_khz: k,
        }));
        BlSwitcher {
            levels,
            rate_limit_ns,
            last_update_ns: None,
        }
    }

    /// The levels, lowest first.
    #[must_use]
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// The lowest level at or above `virtual_khz`, the top one if none is.
    #[must_use]
    pub fn level_at_least(&self, virtual_khz: u64) -> Level {
        self.levels
            .iter()
            .copied()
            .find(|l| l.virtual_khz >= virtual_khz)
            .or_else(|| self.levels.last().copied())
            .unwrap_or(Level {
                cluster: 0,
                opp: 0,
                virtual_khz: 0,
            })
    }

    /// The level for the busiest CPU's utilisation `util` (frequency- and capacity-invariant,
    /// 0..=1024 for the big core at its top) at `now_ns`; `None` while rate-limited.
    pub fn select(&mut self, now_ns: u64, util: u64) -> Option<Level> {
        if self
            .last_update_ns
            .is_some_and(|t| now_ns.saturating_sub(t) < self.rate_limit_ns)
        {
            return None;
        }
        self.last_update_ns = Some(now_ns);
        let top = self.levels.last().map_or(0, |l| l.virtual_khz);
        Some(self.level_at_least(next_khz(top, util, crate::pelt::CAPACITY_SCALE)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LITTLE: [u64; 8] = [
        250_000, 300_000, 350_000, 400_000, 450_000, 500_000, 550_000, 600_000,
    ];
    const BIG: [u64; 9] = [
        800_000, 900_000, 1_000_000, 1_100_000, 1_200_000, 1_300_000, 1_400_000, 1_500_000,
        1_600_000,
    ];

    #[test]
    fn the_ladder_halves_little_and_puts_it_below_big() {
        let s = BlSwitcher::new(0, &LITTLE, 1, &BIG, 210_000);
        let v: Vec<u64> = s.levels().iter().map(|l| l.virtual_khz).collect();
        assert_eq!(v.len(), 17);
        assert_eq!(v[0], 125_000);
        assert_eq!(v[7], 300_000);
        assert_eq!(v[8], 800_000);
        assert!(v.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn the_request_crossing_little_top_switches_to_big() {
        let mut s = BlSwitcher::new(0, &LITTLE, 1, &BIG, 210_000);
        let level =
            |s: &mut BlSwitcher, now_ns, util| s.select(now_ns, util).map(|l| (l.cluster, l.opp));
        // util 100: 1.25 x 1600 MHz x 100/1024 = 195.3 MHz virtual -> LITTLE 400 MHz (200 v).
        let l = s.select(0, 100).expect("first update");
        assert_eq!((l.cluster, l.opp), (0, 3));
        // Rate-limited within 210 us.
        assert_eq!(s.select(100_000, 900), None);
        // util 140: 273.4 MHz virtual -> LITTLE 550 MHz; util 160: 312.5 MHz > 300 -> big 800.
        assert_eq!(level(&mut s, 210_000, 140), Some((0, 6)));
        assert_eq!(level(&mut s, 420_000, 160), Some((1, 0)));
        // Saturated: big's top.
        assert_eq!(level(&mut s, 630_000, 1024), Some((1, 8)));
        // Idle: LITTLE's lowest.
        assert_eq!(level(&mut s, 840_000, 0), Some((0, 0)));
    }
}
