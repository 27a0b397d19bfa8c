//! Schedutil (Linux `kernel/sched/cpufreq_schedutil.c`, 4.7 and later; as in 6.x).
//!
//! On every scheduler event of a domain's CPUs (`cpufreq_update_util`), at most once per rate
//! limit (`sugov_should_update_freq`), the domain's frequency is set from the most utilised CPU
//! relative to its capacity (`sugov_next_freq_shared`): next = 1.25 × top × util / capacity
//! (`map_util_perf` adds the 25 % headroom, `get_next_freq` with a frequency-invariant
//! utilisation uses the top frequency as reference), rounded up to an OPP
//! (`cpufreq_driver_resolve_freq`, `CPUFREQ_RELATION_L`). Left out: I/O-wait boosting (no
//! modelled task waits for I/O), utilisation clamping (uclamp; nothing sets it) and the
//! single-CPU rule that keeps a busy CPU's frequency from falling (`sugov_hold_freq`).

use super::{DomainSample, FreqGovernor, Trigger};
use crate::pelt::CAPACITY_SCALE;

/// The rate limit when the driver gives no transition latency (`cpufreq_policy_transition_delay_us`
/// returns `USEC_PER_MSEC`).
pub const DEFAULT_RATE_LIMIT_NS: u64 = 1_000_000;
/// The rate limit's cap (`cpufreq_policy_transition_delay_us`, 10 ms since 6.12's fix of
/// "cpufreq: Remove LATENCY_MULTIPLIER").
pub const MAX_RATE_LIMIT_NS: u64 = 10_000_000;

/// The default `rate_limit_us` for a clock with `transition_latency_ns`: the latency and half of
/// it again, at most [`MAX_RATE_LIMIT_NS`]; [`DEFAULT_RATE_LIMIT_NS`] when unknown (0).
#[must_use]
pub fn rate_limit_ns(transition_latency_ns: u64) -> u64 {
    if transition_latency_ns == 0 {
        return DEFAULT_RATE_LIMIT_NS;
    }
    // The kernel works in whole microseconds.
    let us = transition_latency_ns / 1_000;
    ((us + (us >> 1)) * 1_000).min(MAX_RATE_LIMIT_NS)
}

/// The frequency schedutil asks for: 1.25 × `max_khz` × `util` / `capacity`.
#[must_use]
pub fn next_khz(max_khz: u64, util: u64, capacity: u64) -> u64 {
    let util = util + (util >> 2);
    max_khz * util / capacity.max(1)
}

/// The schedutil governor.
#[derive(Clone, Debug)]
pub struct Schedutil {
    rate_limit_ns: u64,
    /// Per domain: when its frequency was last evaluated.
    last_update_ns: Vec<Option<u64>>,
}

impl Schedutil {
    #[must_use]
    pub fn new(rate_limit_ns: u64) -> Schedutil {
        Schedutil {
            rate_limit_ns,
            last_update_ns: Vec::new(),
        }
    }
}

impl FreqGovernor for Schedutil {
    fn name(&self) -> &'static str {
        "schedutil"
    }

    fn trigger(&self) -> Trigger {
        Trigger::SchedEvents
    }

    fn select(&mut self, s: &DomainSample<'_>) -> usize {
        if self.last_update_ns.len() <= s.domain {
            self.last_update_ns.resize(s.domain + 1, None);
        }
        let last = &mut self.last_update_ns[s.domain];
        if last.is_some_and(|t| s.now_ns.saturating_sub(t) < self.rate_limit_ns) {
            return s.cur_opp;
        }
        *last = Some(s.now_ns);
        // The CPU with the largest util / capacity (compared without division).
        let (util, capacity) = s
            .cpus
            .iter()
            .map(|c| (c.util.min(c.capacity), c.capacity.clamp(1, CAPACITY_SCALE)))
            .fold(
                (0, 1),
                |(u, m), (cu, cm)| {
                    if cu * m > cm * u {
                        (cu, cm)
                    } else {
                        (u, m)
                    }
                },
            );
        let max_khz = s.opps_khz.last().copied().unwrap_or(0);
        s.opp_at_least(next_khz(max_khz, util, capacity))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governor::CpuLoad;

    #[test]
    fn next_frequency_is_a_quarter_above_the_utilisation() {
        // Half busy at capacity 1024 on a 2 GHz top: 1.25 × 2 GHz × 512 / 1024 = 1.25 GHz.
        assert_eq!(next_khz(2_000_000, 512, 1024), 1_250_000);
        // A LITTLE CPU of capacity 539 with util 431 (80 % of its capacity): 431 + 107 = 538 of
        // 539, just under the top.
        assert_eq!(next_khz(1_400_000, 431, 539), 1_397_402);
        assert_eq!(next_khz(1_400_000, 0, 539), 0);
    }

    #[test]
    fn the_rate_limit_follows_the_transition_latency() {
        assert_eq!(rate_limit_ns(0), 1_000_000);
        // Exynos 5422's OPP clock latency 140 us -> 210 us.
        assert_eq!(rate_limit_ns(140_000), 210_000);
        assert_eq!(rate_limit_ns(300_000), 450_000);
        assert_eq!(rate_limit_ns(20_000_000), 10_000_000);
    }

    fn ask(g: &mut Schedutil, cur_opp: usize, utils: &[(u64, u64)], now_ns: u64) -> usize {
        let opps = [200_000, 500_000, 1_000_000, 1_500_000, 2_000_000];
        let cpus: Vec<CpuLoad> = utils
            .iter()
            .map(|&(util, capacity)| CpuLoad {
                busy_pct: 0,
                util,
                capacity,
            })
            .collect();
        g.select(&DomainSample {
            domain: 0,
            cluster: 0,
            opps_khz: &opps,
            cur_opp,
            cpus: &cpus,
            now_ns,
        })
    }

    #[test]
    fn the_busiest_cpu_sets_the_domain_frequency_within_the_rate_limit() {
        let mut g = Schedutil::new(1_000_000);
        // util 300 of 1024: 1.25 × 2 GHz × 300/1024 = 732 MHz -> 1 GHz.
        assert_eq!(ask(&mut g, 0, &[(100, 1024), (300, 1024)], 0), 2);
        // Within the rate limit nothing changes.
        assert_eq!(ask(&mut g, 2, &[(1024, 1024)], 999_999), 2);
        assert_eq!(ask(&mut g, 2, &[(1024, 1024)], 1_000_000), 4);
        // Idle: the lowest OPP.
        assert_eq!(ask(&mut g, 4, &[(0, 1024)], 2_000_000), 0);
    }

    /// Two CPUs equally busy for their capacity (103/512 = 206/1024): the first one's figures
    /// set the frequency, as the kernel's strict `j_util * max > j_max * util` keeps it. Their
    /// +25 % rounds differently: 128 of 512 asks exactly 500 MHz, 257 of 1024 just above it.
    #[test]
    fn between_equally_busy_cpus_the_first_sets_the_frequency() {
        let equal = [(103, 512), (206, 1024)];
        assert_eq!(ask(&mut Schedutil::new(1_000_000), 0, &equal, 0), 1);
        let swapped = [(206, 1024), (103, 512)];
        assert_eq!(ask(&mut Schedutil::new(1_000_000), 0, &swapped, 0), 2);
    }
}
