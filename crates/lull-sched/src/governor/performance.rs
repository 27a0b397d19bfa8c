//! The performance governor (Linux `drivers/cpufreq/cpufreq_performance.c`): every frequency
//! domain at its highest frequency, whatever the load. Benchmarks that calibrate a busy loop
//! once and then count loops as time (interbench's `loops_per_ms`, hackbench's fixed message
//! count) assume a fixed speed; this is the governor that keeps it.

use super::{DomainSample, FreqGovernor, Trigger};

/// The performance governor. It is asked at the sampling period like ondemand (the substrate
/// needs some trigger) and always answers the top OPP.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Performance {
    period_ns: u64,
}

impl Performance {
    #[must_use]
    pub fn new(period_ns: u64) -> Performance {
        Performance {
            period_ns: period_ns.max(1),
        }
    }
}

impl FreqGovernor for Performance {
    fn name(&self) -> &'static str {
        "performance"
    }

    fn trigger(&self) -> Trigger {
        Trigger::Sampling {
            period_ns: self.period_ns,
        }
    }

    fn select(&mut self, sample: &DomainSample<'_>) -> usize {
        sample.top()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governor::CpuLoad;

    #[test]
    fn an_idle_domain_runs_at_its_top_frequency() {
        let idle = [CpuLoad {
            busy_pct: 0,
            util: 0,
            capacity: 1024,
        }];
        let s = DomainSample {
            domain: 0,
            cluster: 0,
            opps_khz: &[216_000, 608_000, 1_200_000],
            cur_opp: 0,
            cpus: &idle,
            now_ns: 0,
        };
        assert_eq!(Performance::new(20_000_000).select(&s), 2);
    }
}
