//! The idle governor: which idle state a CPU enters when it has nothing to run.
//!
//! [`Menu`] is a reduced form of Linux's menu governor (`drivers/cpuidle/governors/menu.c`): the
//! sleep is predicted as the shorter of the time to the next timer and the typical interval of
//! the last [`MENU_INTERVALS`] sleeps (`get_typical_interval`), and the deepest state whose target
//! residency fits the prediction is chosen. Menu's correction factors for I/O wait and its
//! latency requirement (PM QoS) are left out: no workload here sets one.

use std::collections::VecDeque;
use std::fmt;

use crate::ids::CpuId;

/// The menu governor's history length for its typical-interval detection (Linux
/// `drivers/cpuidle/governors/menu.c`, `INTERVALS` = 8).
pub const MENU_INTERVALS: usize = 8;

/// The prediction when neither a timer nor a pattern bounds the sleep.
pub const NO_PREDICTION_NS: u64 = u64::MAX;

/// A standard deviation at or below this is steady whatever the mean (menu.c accepts
/// `stddev <= 20 us`); here as a variance in ns².
const STEADY_VARIANCE_NS2: f64 = 400.0 * 1e6;

/// An idle state as the governor sees it, shallowest first.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct IdleStateParams {
    /// The shortest sleep for which entering the state saves energy.
    pub target_residency_ns: u64,
    pub exit_latency_ns: u64,
}

/// What the governor chose.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct IdleChoice {
    /// Index into the states given.
    pub state: usize,
    /// The sleep length it expected (cluster-wide power-down votes on it).
    pub predicted_ns: u64,
}

/// An idle governor.
pub trait IdleGovernor: fmt::Debug {
    fn name(&self) -> &'static str;

    /// Chooses a state for `cpu`, whose next timer is `until_next_timer_ns` away
    /// ([`NO_PREDICTION_NS`] for none). `states` is never empty.
    fn select(
        &mut self,
        cpu: CpuId,
        states: &[IdleStateParams],
        until_next_timer_ns: u64,
    ) -> IdleChoice;

    /// `cpu` woke after sleeping `slept_ns`.
    fn reflect(&mut self, cpu: CpuId, slept_ns: u64);
}

/// The idle governor names [`by_name`] knows.
pub const NAMES: [&str; 1] = ["menu"];

/// The idle governor called `name` for `cpus` CPUs.
///
/// # Errors
/// [`crate::UnknownPolicy`] for a name not in [`NAMES`].
pub fn by_name(name: &str, cpus: usize) -> Result<Box<dyn IdleGovernor>, crate::UnknownPolicy> {
    match name {
        "menu" => Ok(Box::new(Menu::new(cpus))),
        other => Err(crate::UnknownPolicy::new("idle governor", other, &NAMES)),
    }
}

/// The menu governor (see the module documentation).
#[derive(Clone, Debug)]
pub struct Menu {
    /// Per CPU, the last sleep lengths, oldest first.
    history: Vec<VecDeque<u64>>,
}

impl Menu {
    #[must_use]
    pub fn new(cpus: usize) -> Menu {
        Menu {
            history: vec![VecDeque::with_capacity(MENU_INTERVALS); cpus],
        }
    }

    /// The typical interval: the mean of the last intervals if they are steady (mean above six
    /// standard deviations, or a small deviation), discarding the largest as outliers while at
    /// least three quarters remain (menu.c `get_typical_interval`).
    #[must_use]
    pub fn typical_interval_ns(history: &VecDeque<u64>) -> u64 {
        if history.len() < MENU_INTERVALS {
            return NO_PREDICTION_NS;
        }
        let mut all = [0u64; MENU_INTERVALS];
        for (slot, &x) in all.iter_mut().zip(history) {
            *slot = x;
        }
        all.sort_unstable();
        let mut v = &all[..];
        while v.len() >= MENU_INTERVALS * 3 / 4 {
            let n = v.len() as f64;
            let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
            let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
            if mean * mean > 36.0 * var || var <= STEADY_VARIANCE_NS2 {
                return mean as u64;
            }
            v = &v[..v.len() - 1];
        }
        NO_PREDICTION_NS
    }
}

impl IdleGovernor for Menu {
    fn name(&self) -> &'static str {
        "menu"
    }

    fn select(
        &mut self,
        cpu: CpuId,
        states: &[IdleStateParams],
        until_next_timer_ns: u64,
    ) -> IdleChoice {
        let predicted = until_next_timer_ns.min(Self::typical_interval_ns(&self.history[cpu.0]));
        let state = states
            .iter()
            .rposition(|s| s.target_residency_ns <= predicted)
            .unwrap_or(0);
        IdleChoice {
            state,
            predicted_ns: predicted,
        }
    }

    fn reflect(&mut self, cpu: CpuId, slept_ns: u64) {
        let h = &mut self.history[cpu.0];
        if h.len() == MENU_INTERVALS {
            h.pop_front();
        }
        h.push_back(slept_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: u64 = 1_000;

    fn history(us: [u64; 8]) -> VecDeque<u64> {
        us.iter().map(|&x| x * US).collect()
    }

    #[test]
    fn the_typical_interval_follows_menus_steadiness_rules() {
        assert_eq!(by_name("menu", 1).unwrap().name(), "menu");
        let short: VecDeque<u64> = [1_000 * US; 7].into_iter().collect();
        assert_eq!(Menu::typical_interval_ns(&short), NO_PREDICTION_NS);
        // All equal: their value.
        assert_eq!(Menu::typical_interval_ns(&history([1_000; 8])), 1_000 * US);
        // Mean 30 µs, deviation 10 µs: the mean is not above six deviations, but the deviation
        // is within menu.c's 20 µs, so steady.
        let small = history([20, 20, 20, 20, 40, 40, 40, 40]);
        assert_eq!(Menu::typical_interval_ns(&small), 30 * US);
        // One outlier (100 ms among 1 ms): dropped, the other seven are steady.
        let outlier = history([1_000, 1_000, 1_000, 100_000, 1_000, 1_000, 1_000, 1_000]);
        assert_eq!(Menu::typical_interval_ns(&outlier), 1_000 * US);
        // Mean 600 µs, deviation 100 µs: exactly six deviations, which is not above; without
        // the largest 700 µs twice (6 of 8 left, the least kept) the mean 566.7 µs is above
        // six deviations (94.3 µs).
        let edge = history([500, 500, 500, 500, 700, 700, 700, 700]);
        assert_eq!(Menu::typical_interval_ns(&edge), 566_666);
        // Spread without a pattern: no prediction once a quarter is dropped.
        let spread = history([10, 2_000, 40, 900, 5_000, 70, 300, 12_000]);
        assert_eq!(Menu::typical_interval_ns(&spread), NO_PREDICTION_NS);
    }

    const WFI: IdleStateParams = IdleStateParams {
        target_residency_ns: 1_000,
        exit_latency_ns: 1_000,
    };
    const C7: IdleStateParams = IdleStateParams {
        target_residency_ns: 1_000_000,
        exit_latency_ns: 500_000,
    };

    #[test]
    fn without_history_the_next_timer_decides() {
        let mut m = Menu::new(1);
        let cpu = CpuId(0);
        assert_eq!(m.select(cpu, &[WFI, C7], 999_999).state, 0);
        assert_eq!(m.select(cpu, &[WFI, C7], 1_000_000).state, 1);
        let none = m.select(cpu, &[WFI, C7], NO_PREDICTION_NS);
        assert_eq!((none.state, none.predicted_ns), (1, NO_PREDICTION_NS));
        // Shorter than every residency: the shallowest state.
        assert_eq!(m.select(cpu, &[WFI, C7], 10).state, 0);
    }

    #[test]
    fn a_steady_pattern_of_short_sleeps_keeps_the_cpu_shallow() {
        let mut m = Menu::new(2);
        for _ in 0..MENU_INTERVALS {
            m.reflect(CpuId(0), 200_000);
        }
        let c = m.select(CpuId(0), &[WFI, C7], NO_PREDICTION_NS);
        assert_eq!((c.state, c.predicted_ns), (0, 200_000));
        // The other CPU has no history.
        assert_eq!(m.select(CpuId(1), &[WFI, C7], NO_PREDICTION_NS).state, 1);
    }

    #[test]
    fn outliers_are_dropped_and_noise_gives_no_prediction() {
        let mut h: VecDeque<u64> = [100, 100, 100, 100, 100, 100, 100, 50_000_000]
            .into_iter()
            .map(|x| x * 1_000)
            .collect();
        assert_eq!(Menu::typical_interval_ns(&h), 100_000);
        h = [1, 9, 2, 8, 3, 7, 4, 6]
            .into_iter()
            .map(|x| x * 1_000_000)
            .collect();
        assert_eq!(Menu::typical_interval_ns(&h), NO_PREDICTION_NS);
        h.pop_back();
        assert_eq!(Menu::typical_interval_ns(&h), NO_PREDICTION_NS);
    }
}
