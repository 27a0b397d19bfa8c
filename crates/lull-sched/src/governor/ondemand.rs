//! Ondemand (Pallipadi and Starikovskiy 2006; Linux `drivers/cpufreq/cpufreq_ondemand.c`).
//!
//! Every sampling period the load of a domain is the busiest CPU's busy share. Above
//! `up_threshold` the domain jumps to its top frequency. Below it, mainline ondemand (3.11 to
//! 4.x, `od_check_cpu`) picks the lowest frequency at or above load × top / 100
//! ([`DownRule::Proportional`]); the Galaxy S4's ondemand, as seed 001 §2.1 and §4.5 describe it,
//! steps one level down only when every CPU is below a second threshold and otherwise holds
//! ([`DownRule::Step`]).

use super::{DomainSample, FreqGovernor, Trigger};

/// How ondemand lowers the frequency.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DownRule {
    /// The lowest frequency at or above load % of the top (`CPUFREQ_RELATION_L`).
    Proportional,
    /// One level down when the load is below `down_threshold_pct`, else hold.
    Step { down_threshold_pct: u64 },
}

/// One cluster's ondemand tunables.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OndemandTunables {
    pub up_threshold_pct: u64,
    /// After a jump to the top, Linux stretches the next sampling interval by this factor
    /// (`rate_mult`); modelled as holding the top for this many samples less one.
    pub sampling_down_factor: u32,
    pub down: DownRule,
}

impl OndemandTunables {
    /// Mainline defaults with `up_threshold_pct` (Linux `DEF_FREQUENCY_UP_THRESHOLD` is 80;
    /// `DEF_SAMPLING_DOWN_FACTOR` is 1).
    #[must_use]
    pub fn mainline(up_threshold_pct: u64) -> OndemandTunables {
        OndemandTunables {
            up_threshold_pct,
            sampling_down_factor: 1,
            down: DownRule::Proportional,
        }
    }
}

/// The Galaxy S4's LITTLE (Cortex-A7) cluster: up at 60 %, down one level below 40 %. Source:
/// seed 001 §4.5 (figure 8(e) discussion) and footnote 10.
pub const GALAXY_S4_LITTLE: OndemandTunables = OndemandTunables {
    up_threshold_pct: 60,
    sampling_down_factor: 1,
    down: DownRule::Step {
        down_threshold_pct: 40,
    },
};

/// The Galaxy S4's big (Cortex-A15) cluster: up at 90 %, down one level below 70 %. Source: as
/// [`GALAXY_S4_LITTLE`].
pub const GALAXY_S4_BIG: OndemandTunables = OndemandTunables {
    up_threshold_pct: 90,
    sampling_down_factor: 1,
    down: DownRule::Step {
        down_threshold_pct: 70,
    },
};

/// The ondemand governor with per-cluster tunables.
#[derive(Clone, Debug)]
pub struct Ondemand {
    /// The name a spec uses: the same algorithm runs as `ondemand` and, with the Galaxy S4's
    /// tunables, `ondemand-galaxy-s4`.
    name: &'static str,
    period_ns: u64,
    /// Indexed by cluster.
    tunables: Vec<OndemandTunables>,
    /// Per domain: samples left to hold the top frequency.
    hold: Vec<u32>,
}

impl Ondemand {
    /// Ondemand sampling every `period_ns`, with `tunables[cluster]` for each cluster.
    #[must_use]
    pub fn new(period_ns: u64, tunables: Vec<OndemandTunables>) -> Ondemand {
        Ondemand {
            name: "ondemand",
            period_ns,
            tunables,
            hold: Vec::new(),
        }
    }

    /// The same governor under another spec name.
    #[must_use]
    pub fn named(self, name: &'static str) -> Ondemand {
        Ondemand { name, ..self }
    }
}

impl FreqGovernor for Ondemand {
    fn name(&self) -> &'static str {
        self.name
    }

    fn trigger(&self) -> Trigger {
        Trigger::Sampling {
            period_ns: self.period_ns,
        }
    }

    fn select(&mut self, s: &DomainSample<'_>) -> usize {
        let t = self
            .tunables
            .get(s.cluster)
            .copied()
            .unwrap_or(OndemandTunables::mainline(80));
        if self.hold.len() <= s.domain {
            self.hold.resize(s.domain + 1, 0);
        }
        let top = s.top();
        let load = s.cpus.iter().map(|c| c.busy_pct).max().unwrap_or(0);
        if load > t.up_threshold_pct {
            if s.cur_opp < top {
                self.hold[s.domain] = t.sampling_down_factor.saturating_sub(1);
            }
            return top;
        }
        if self.hold[s.domain] > 0 {
            self.hold[s.domain] -= 1;
            return s.cur_opp;
        }
        match t.down {
            DownRule::Proportional => {
                let max_khz = s.opps_khz.get(top).copied().unwrap_or(0);
                s.opp_at_least(max_khz * load / 100)
            }
            DownRule::Step { down_threshold_pct } => {
                if load < down_threshold_pct {
                    s.cur_opp.saturating_sub(1)
                } else {
                    s.cur_opp
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governor::CpuLoad;

    const OPPS: [u64; 4] = [250_000, 400_000, 500_000, 600_000];

    fn sample(cur_opp: usize, loads: &[u64], cluster: usize) -> (Vec<CpuLoad>, usize, usize) {
        let cpus = loads
            .iter()
            .map(|&busy_pct| CpuLoad {
                busy_pct,
                util: 0,
                capacity: 1024,
            })
            .collect();
        (cpus, cur_opp, cluster)
    }

    fn ask(g: &mut Ondemand, cur_opp: usize, loads: &[u64], cluster: usize) -> usize {
        let (cpus, cur, cl) = sample(cur_opp, loads, cluster);
        g.select(&DomainSample {
            domain: cl,
            cluster: cl,
            opps_khz: &OPPS,
            cur_opp: cur,
            cpus: &cpus,
            now_ns: 0,
        })
    }

    #[test]
    fn mainline_jumps_up_and_follows_the_load_down() {
        let mut g = Ondemand::new(20_000_000, vec![OndemandTunables::mainline(80)]);
        assert_eq!(ask(&mut g, 0, &[10, 81], 0), 3);
        // 80 % is not above the threshold: 80 % of 600 MHz = 480 MHz -> 500 MHz.
        assert_eq!(ask(&mut g, 3, &[80, 5], 0), 2);
        // 42 % of 600 MHz = 252 MHz -> 400 MHz; 41 % = 246 MHz -> 250 MHz.
        assert_eq!(ask(&mut g, 2, &[42, 5], 0), 1);
        assert_eq!(ask(&mut g, 2, &[41, 5], 0), 0);
        assert_eq!(ask(&mut g, 1, &[0], 0), 0);
    }

    #[test]
    fn the_sampling_down_factor_holds_the_top() {
        let t = OndemandTunables {
            sampling_down_factor: 3,
            ..OndemandTunables::mainline(80)
        };
        let mut g = Ondemand::new(20_000_000, vec![t]);
        assert_eq!(ask(&mut g, 0, &[90], 0), 3);
        assert_eq!(ask(&mut g, 3, &[0], 0), 3);
        assert_eq!(ask(&mut g, 3, &[0], 0), 3);
        assert_eq!(ask(&mut g, 3, &[0], 0), 0);
        // Busy again while already at the top: the hold is not renewed (`rate_mult` is set
        // only when `policy->cur < policy->max`), so the one left runs out after one sample.
        assert_eq!(ask(&mut g, 0, &[90], 0), 3);
        assert_eq!(ask(&mut g, 3, &[0], 0), 3);
        assert_eq!(ask(&mut g, 3, &[90], 0), 3);
        assert_eq!(ask(&mut g, 3, &[0], 0), 3);
        assert_eq!(ask(&mut g, 3, &[0], 0), 0);
    }

    #[test]
    fn galaxy_s4_steps_down_one_level_only_when_every_core_is_quiet() {
        // Cluster 0 LITTLE, cluster 1 big.
        let mut g = Ondemand::new(20_000_000, vec![GALAXY_S4_LITTLE, GALAXY_S4_BIG]);
        // LITTLE: up above 60 %, to the highest level at once.
        assert_eq!(ask(&mut g, 0, &[61, 0], 0), 3);
        assert_eq!(ask(&mut g, 0, &[60, 0], 0), 0);
        // Between the thresholds it holds; below 40 % on every core, one level down.
        assert_eq!(ask(&mut g, 3, &[50, 0], 0), 3);
        assert_eq!(ask(&mut g, 3, &[39, 39], 0), 2);
        assert_eq!(ask(&mut g, 2, &[39, 45], 0), 2);
        assert_eq!(ask(&mut g, 0, &[0], 0), 0);
        // big: 90 % up, 70 % down.
        assert_eq!(ask(&mut g, 0, &[89], 1), 0);
        assert_eq!(ask(&mut g, 0, &[91], 1), 3);
        assert_eq!(ask(&mut g, 3, &[69], 1), 2);
        assert_eq!(ask(&mut g, 2, &[70], 1), 2);
    }
}
