//! Per-entity load tracking (PELT): a CPU's utilisation as Linux's schedutil reads it.
//!
//! Linux (`kernel/sched/pelt.c`) sums running time in periods of 1024 µs, each older period
//! weighing y times the next with y³² = ½ (a half-life of 32 periods), and scales what runs by
//! the frequency and the CPU's capacity, so `util_avg` is frequency- and CPU-invariant: 1024 means
//! the biggest CPU busy at its top frequency. [`Pelt`] follows `___update_load_sum`,
//! `accumulate_sum`, `decay_load` and `__accumulate_pelt_segments` in integer arithmetic with
//! the kernel's constants, for the running (utilisation) signal only.

use crate::ids::CpuId;

/// Full capacity (Linux `SCHED_CAPACITY_SCALE`).
pub const CAPACITY_SCALE: u64 = 1024;
/// A PELT period in units of 1024 ns (`delta >>= 10` in `___update_load_sum`).
const PERIOD_US: u64 = 1024;
/// Periods after which a contribution has halved (`LOAD_AVG_PERIOD`).
const HALF_LIFE_PERIODS: u64 = 32;
/// The largest possible sum, Σ 1024·yⁿ (`LOAD_AVG_MAX`, `kernel/sched/sched-pelt.h`).
pub const LOAD_AVG_MAX: u64 = 47_742;

/// yⁿ × 2³² for n < 32 (`runnable_avg_yN_inv`, `kernel/sched/sched-pelt.h`); a unit test checks
/// each against ⌊2³² · ½^(n/32)⌋.
const Y_N_INV: [u32; 32] = [
    0xffff_ffff,
    0xfa83_b2da,
    0xf525_7d14,
    0xefe4_b99a,
    0xeac0_c6e6,
    0xe5b9_06e6,
    0xe0cc_deeb,
    0xdbfb_b796,
    0xd744_fcc9,
    0xd2a8_1d91,
    0xce24_8c14,
    0xc9b9_bd85,
    0xc567_2a10,
    0xc12c_4cc9,
    0xbd08_a39e,
    0xb8fb_af46,
    0xb504_f333,
    0xb123_f581,
    0xad58_3ee9,
    0xa9a1_5ab4,
    0xa5fe_d6a9,
    0xa270_4302,
    0x9ef5_325f,
    0x9b8d_39b9,
    0x9837_f050,
    0x94f4_efa8,
    0x91c3_d373,
    0x8ea4_398a,
    0x8b95_c1e3,
    0x8898_0e80,
    0x85aa_c367,
    0x82cd_8698,
];

/// `val` × yⁿ (`decay_load`).
#[must_use]
pub fn decay_load(val: u64, n: u64) -> u64 {
    if n > HALF_LIFE_PERIODS * 63 {
        return 0;
    }
    let mut v = val >> (n / HALF_LIFE_PERIODS);
    let k = (n % HALF_LIFE_PERIODS) as usize;
    if k != 0 {
        v = ((u128::from(v) * u128::from(Y_N_INV[k])) >> 32) as u64;
    }
    v
}

/// The contribution of `periods` whole periods plus the edges: the rest of the first period
/// (`d1`, decayed `periods` times), the full periods between (Σ 1024·yⁿ for 1 ≤ n < periods) and
/// the start of the current one (`d3`, undecayed) (`__accumulate_pelt_segments`).
fn accumulate_segments(periods: u64, d1: u64, d3: u64) -> u64 {
    let c1 = decay_load(d1, periods);
    let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - PERIOD_US;
    c1 + c2 + d3
}

/// One CPU's utilisation signal.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Pelt {
    last_update_ns: u64,
    util_sum: u64,
    /// Time into the current period, in units of 1024 ns.
    period_contrib: u64,
    util_avg: u64,
}

impl Pelt {
    /// Advances the signal to `now_ns`; since the last update the CPU was `running` at
    /// `scale` / 1024 of full capacity (frequency × capacity invariance; 1024 when unscaled).
    pub fn update(&mut self, now_ns: u64, running: bool, scale: u64) {
        let delta_ns = now_ns.saturating_sub(self.last_update_ns);
        let delta = delta_ns >> 10;
        if delta == 0 {
            return;
        }
        // Keep the sub-microsecond remainder for the next update, as the kernel does.
        self.last_update_ns += delta << 10;
        let d = delta + self.period_contrib;
        let periods = d / PERIOD_US;
        let mut contrib = delta;
        if periods > 0 {
            self.util_sum = decay_load(self.util_sum, periods);
            contrib = accumulate_segments(periods, PERIOD_US - self.period_contrib, d % PERIOD_US);
        }
        self.period_contrib = d % PERIOD_US;
        if running {
            // Linux adds `contrib << SCHED_CAPACITY_SHIFT` and makes the scaling by slowing the
            // PELT clock (`update_rq_clock_pelt`); scaling the contribution instead agrees with it
            // while busy stretches are short against the 32 ms half-life.
            self.util_sum += contrib * scale.min(CAPACITY_SCALE);
        }
        let divider = LOAD_AVG_MAX - PERIOD_US + self.period_contrib;
        self.util_avg = self.util_sum / divider;
    }

    /// Utilisation, 0..=1024.
    #[must_use]
    pub fn util(&self) -> u64 {
        self.util_avg.min(CAPACITY_SCALE)
    }
}

/// The invariance scale of a CPU running at `khz` of a top frequency `max_khz`, with a capacity
/// of `capacity` (1024 for the biggest CPU; Linux `arch_scale_freq_capacity` ×
/// `arch_scale_cpu_capacity` >> 10).
#[must_use]
pub fn invariance_scale(khz: u64, max_khz: u64, capacity: u64) -> u64 {
    if max_khz == 0 {
        return 0;
    }
    (khz.min(max_khz) * CAPACITY_SCALE / max_khz) * capacity.min(CAPACITY_SCALE) / CAPACITY_SCALE
}

/// The utilisation of several CPUs, one [`Pelt`] each.
#[derive(Clone, Debug)]
pub struct PeltSet {
    cpus: Vec<Pelt>,
}

impl PeltSet {
    #[must_use]
    pub fn new(cpus: usize) -> PeltSet {
        PeltSet {
            cpus: vec![Pelt::default(); cpus],
        }
    }

    pub fn update(&mut self, cpu: CpuId, now_ns: u64, running: bool, scale: u64) {
        self.cpus[cpu.0].update(now_ns, running, scale);
    }

    #[must_use]
    pub fn util(&self, cpu: CpuId) -> u64 {
        self.cpus[cpu.0].util()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decay_table_is_y_to_the_n() {
        for (n, &v) in Y_N_INV.iter().enumerate() {
            let exact = (4_294_967_296.0 * 0.5f64.powf(n as f64 / 32.0)).floor();
            let want = exact.min(f64::from(u32::MAX));
            assert!(
                (f64::from(v) - want).abs() <= 1.0,
                "y^{n}: {v:#x} vs {want}"
            );
        }
        assert_eq!(decay_load(1024, 32), 512);
        assert_eq!(decay_load(1024, 64), 256);
        assert_eq!(decay_load(1 << 40, 32 * 64), 0);
    }

    #[test]
    fn an_always_running_cpu_converges_to_full_utilisation() {
        let mut p = Pelt::default();
        let ms = 1_000_000;
        for t in 1..=1000 {
            p.update(t * ms, true, CAPACITY_SCALE);
        }
        assert!(p.util() >= 1000, "{}", p.util());
        // Half-life: after 32 periods (~33 ms) idle the signal has about halved.
        let before = p.util();
        p.update(1000 * ms + 32 * 1024 * 1024, false, CAPACITY_SCALE);
        let after = p.util();
        assert!(
            (after as f64 / before as f64 - 0.5).abs() < 0.02,
            "{before} -> {after}"
        );
    }

    #[test]
    fn a_quarter_duty_cycle_settles_near_a_quarter() {
        let mut p = Pelt::default();
        let mut now = 0;
        for _ in 0..400 {
            now += 1_000_000;
            p.update(now, true, CAPACITY_SCALE);
            now += 3_000_000;
            p.update(now, false, CAPACITY_SCALE);
        }
        let u = p.util();
        assert!((200..=320).contains(&u), "{u}");
    }

    #[test]
    fn running_slower_counts_for_less() {
        let (mut fast, mut slow) = (Pelt::default(), Pelt::default());
        let half = invariance_scale(500_000, 1_000_000, 1024);
        assert_eq!(half, 512);
        for t in 1..=500 {
            fast.update(t * 1_000_000, true, 1024);
            slow.update(t * 1_000_000, true, half);
        }
        assert!((slow.util() as f64 / fast.util() as f64 - 0.5).abs() < 0.02);
        // A LITTLE CPU (capacity 539 of 1024, Exynos 5422) at its top frequency.
        assert_eq!(invariance_scale(1_400_000, 1_400_000, 539), 539);
    }
}
