//! Per-entity load tracking (PELT): a CPU's utilisation as Linux's schedutil reads it.
//!
//! Linux (`kernel/sched/pelt.c`) sums running time in periods of 1024 µs, each older period
//! weighing y times the next with y³² = ½ (a half-life of 32 periods), and scales what runs by
//! the frequency and the CPU's capacity, so `util_avg` is frequency- and CPU-invariant: 1024 means
//! the biggest CPU busy at its top frequency. [`Pelt`] follows `___update_load_sum`,
//! `accumulate_sum`, `decay_load`, `__accumulate_pelt_segments` and the PELT clock
//! (`update_rq_clock_pelt`) in integer arithmetic with the kernel's constants, for the running
//! (utilisation) signal only.

use crate::ids::{CpuId, TaskId};

/// Full capacity (Linux `SCHED_CAPACITY_SCALE`).
pub const CAPACITY_SCALE: u64 = 1024;
/// A PELT period in units of 1024 ns (`delta >>= 10` in `___update_load_sum`).
pub(crate) const PERIOD_US: u64 = 1024;
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
pub(crate) fn accumulate_segments(periods: u64, d1: u64, d3: u64) -> u64 {
    let c1 = decay_load(d1, periods);
    let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - PERIOD_US;
    c1 + c2 + d3
}

/// Where one decaying sum stands in its periods: the time accounting of `___update_load_sum`,
/// shared by every PELT signal (this module's utilisation, [`crate::balance`]'s load).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) struct PeltClock {
    pub(crate) last_update_ns: u64,
    /// Time into the current period, in units of 1024 ns.
    pub(crate) period_contrib: u64,
}

/// What one advance of a [`PeltClock`] asks of its sums.
pub(crate) struct PeltStep {
    /// Whole periods crossed: every sum decays this many times.
    pub(crate) periods: u64,
    /// The new time's contribution (units of 1024 ns), added to the sums that were active.
    pub(crate) contrib: u64,
}

impl PeltClock {
    /// Advances to `now_ns`; `None` when less than 1024 ns passed (nothing changes).
    pub(crate) fn step(&mut self, now_ns: u64) -> Option<PeltStep> {
        let delta = now_ns.saturating_sub(self.last_update_ns) >> 10;
        if delta == 0 {
            return None;
        }
        // Keep the sub-microsecond remainder for the next update, as the kernel does.
        self.last_update_ns += delta << 10;
        let d = delta + self.period_contrib;
        let periods = d / PERIOD_US;
        let contrib = if periods > 0 {
            accumulate_segments(periods, PERIOD_US - self.period_contrib, d % PERIOD_US)
        } else {
            delta
        };
        self.period_contrib = d % PERIOD_US;
        Some(PeltStep { periods, contrib })
    }

    /// The sums' maximum at this point of the period (`get_pelt_divider`).
    pub(crate) fn divider(&self) -> u64 {
        LOAD_AVG_MAX - PERIOD_US + self.period_contrib
    }
}

/// The decaying sum itself, on the PELT clock.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
struct Signal {
    clock: PeltClock,
    util_sum: u64,
    util_avg: u64,
}

impl Signal {
    /// Advances to `now_ns` of the PELT clock, running or not since the last update
    /// (`___update_load_sum` and `___update_load_avg`).
    fn advance(&mut self, now_ns: u64, running: bool) {
        let Some(step) = self.clock.step(now_ns) else {
            return;
        };
        self.util_sum = decay_load(self.util_sum, step.periods);
        if running {
            self.util_sum += step.contrib * CAPACITY_SCALE;
        }
        self.util_avg = self.util_sum / self.clock.divider();
    }
}

/// One CPU's utilisation signal with its own clock.
///
/// Invariance comes from the clock, as in Linux (`update_rq_clock_pelt`): while the CPU runs at
/// `scale` / 1024 of the biggest CPU's top speed, the PELT clock advances that much slower, so a
/// task's utilisation measures the work it did, not the time it took. When the CPU goes idle the
/// clock catches up with task time (`_update_idle_rq_clock_pelt`), and the catch-up decays the
/// signal, unless the CPU was saturated (no idle time it could have had at full speed), in which
/// case the gap is "lost idle time" and the signal keeps its level.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Pelt {
    /// Task time at the last update.
    last_task_ns: u64,
    /// The raw PELT clock (`rq->clock_pelt`) and the idle time lost while saturated
    /// (`rq->lost_idle_time`); the signal runs on their difference (`rq_clock_pelt`).
    clock_pelt_ns: u64,
    lost_idle_ns: u64,
    /// Whether the interval before the last update was busy (an idle update then syncs).
    was_running: bool,
    signal: Signal,
}

/// A saturated signal: the sum of an always-running CPU (the kernel's `divider` in
/// `update_idle_rq_clock_pelt`).
const SATURATED_SUM: u64 = ((LOAD_AVG_MAX - PERIOD_US) << 10) - LOAD_AVG_MAX;

impl Pelt {
    /// Advances the signal to task time `now_ns`; since the last update the CPU was `running`
    /// at `scale` / 1024 of full capacity (frequency × capacity invariance; 1024 when unscaled).
    pub fn update(&mut self, now_ns: u64, running: bool, scale: u64) {
        let delta = now_ns.saturating_sub(self.last_task_ns);
        if running {
            self.clock_pelt_ns += delta * scale.min(CAPACITY_SCALE) / CAPACITY_SCALE;
        } else {
            if self.was_running && self.signal.util_sum >= SATURATED_SUM {
                self.lost_idle_ns += self.last_task_ns.saturating_sub(self.clock_pelt_ns);
            }
            self.clock_pelt_ns = now_ns;
        }
        self.last_task_ns = now_ns;
        self.was_running = running;
        let clock = self.clock_pelt_ns.saturating_sub(self.lost_idle_ns);
        self.signal.advance(clock, running);
    }

    /// Utilisation, 0..=1024.
    #[must_use]
    pub fn util(&self) -> u64 {
        self.signal.util_avg.min(CAPACITY_SCALE)
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

/// Margin under which util_est does not move (`UTIL_EST_MARGIN`, 1 % of capacity).
const UTIL_EST_MARGIN: u64 = CAPACITY_SCALE / 100;
/// The util_est moving average's weight, 1/4 (`UTIL_EST_WEIGHT_SHIFT`).
const UTIL_EST_WEIGHT_SHIFT: u32 = 2;

/// One task's utilisation: its own signal on the clock of the CPU it is attached to, and its
/// estimated utilisation (`util_est`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
struct TaskPelt {
    signal: Signal,
    /// The CPU whose utilisation includes this task's (it stays there while it sleeps, as
    /// Linux's blocked load does).
    cpu: Option<CpuId>,
    /// On a run queue (runnable or running): its util_est counts in the CPU's.
    enqueued: bool,
    /// The moving average of its utilisation at the end of each activation.
    util_est: u64,
    /// Whether it has run since its last enqueue (`UTIL_AVG_UNCHANGED` cleared).
    ran: bool,
}

/// One CPU's clock, its CFS run queue's signal and the util_est of its enqueued tasks.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
struct CpuPelt {
    clock: Pelt,
    util_est: u64,
}

/// Per-entity load tracking over several CPUs and the tasks that run on them, as schedutil
/// reads it (`cpu_util`: the larger of the run queue's utilisation and the util_est of its
/// enqueued tasks, capped at the CPU's capacity).
///
/// A task's utilisation follows it: it is added to a CPU's when the task is enqueued there and
/// taken away when it migrates (`attach_entity_load_avg`, `detach_entity_load_avg`), and it stays
/// (decaying) while the task sleeps. A new task starts with half the CPU's spare capacity
/// (`post_init_entity_util_avg`). util_est is updated when a task sleeps (`util_est_update`:
/// an increase is taken at once, a decrease at a quarter, changes within 1 % ignored; the check
/// against the task's runnable signal is left out, there being no runnable signal here).
#[derive(Clone, Debug)]
pub struct PeltSet {
    cpus: Vec<CpuPelt>,
    tasks: Vec<TaskPelt>,
}

impl PeltSet {
    #[must_use]
    pub fn new(cpus: usize) -> PeltSet {
        PeltSet {
            cpus: vec![CpuPelt::default(); cpus],
            tasks: Vec::new(),
        }
    }

    fn task(&mut self, t: TaskId) -> &mut TaskPelt {
        if self.tasks.len() <= t.0 {
            self.tasks.resize(t.0 + 1, TaskPelt::default());
        }
        &mut self.tasks[t.0]
    }

    /// Advances `cpu`'s clock and run-queue signal to task time `now_ns`; since the last update
    /// `running` ran there (none: idle or kernel work) at `scale` / 1024 of full capacity.
    pub fn update_cpu(&mut self, cpu: CpuId, now_ns: u64, running: Option<TaskId>, scale: u64) {
        self.cpus[cpu.0]
            .clock
            .update(now_ns, running.is_some(), scale);
        if let Some(t) = running {
            let clock = self.cpus[cpu.0].clock.signal.clock.last_update_ns;
            let tp = self.task(t);
            tp.signal.advance(clock, true);
            tp.ran = true;
        }
    }

    /// Takes `t`'s utilisation off the CPU it is attached to.
    fn detach(&mut self, t: TaskId) {
        let Some(cpu) = self.tasks[t.0].cpu.take() else {
            return;
        };
        let rq = &mut self.cpus[cpu.0].clock.signal;
        let sig = &mut self.tasks[t.0].signal;
        sig.advance(rq.clock.last_update_ns, false);
        rq.util_sum = rq.util_sum.saturating_sub(sig.util_sum);
        rq.util_avg = rq.util_avg.saturating_sub(sig.util_avg);
    }

    /// Adds `t`'s utilisation to `cpu`'s, aligned to the run queue's period.
    fn attach(&mut self, t: TaskId, cpu: CpuId) {
        let rq = self.cpus[cpu.0].clock.signal;
        let tp = &mut self.tasks[t.0];
        tp.signal.clock = rq.clock;
        tp.signal.util_sum = tp.signal.util_avg * rq.clock.divider();
        tp.cpu = Some(cpu);
        let q = &mut self.cpus[cpu.0].clock.signal;
        q.util_sum += tp.signal.util_sum;
        q.util_avg = (q.util_avg + tp.signal.util_avg).min(CAPACITY_SCALE);
    }

    /// `t` joins `cpu`'s run queue (new, woken or migrated), `cpu`'s clock being current.
    pub fn enqueue(&mut self, cpu: CpuId, t: TaskId) {
        let tp = *self.task(t);
        match tp.cpu {
            Some(c) if c == cpu => {
                let clock = self.cpus[cpu.0].clock.signal.clock.last_update_ns;
                self.tasks[t.0].signal.advance(clock, false);
            }
            Some(_) => {
                self.detach(t);
                self.attach(t, cpu);
            }
            None if tp.signal == Signal::default() => {
                // A new task: half the spare capacity (post_init_entity_util_avg).
                let spare = CAPACITY_SCALE.saturating_sub(self.cpus[cpu.0].clock.util());
                self.tasks[t.0].signal.util_avg = spare / 2;
                self.attach(t, cpu);
            }
            None => self.attach(t, cpu),
        }
        let tp = &mut self.tasks[t.0];
        if !tp.enqueued {
            tp.enqueued = true;
            tp.ran = false;
            let ue = tp.util_est;
            self.cpus[cpu.0].util_est += ue;
        }
    }

    /// `t` leaves `cpu`'s run queue: to sleep (its utilisation stays, util_est learns from the
    /// activation) or to migrate (both go with it).
    pub fn dequeue(&mut self, cpu: CpuId, t: TaskId, sleep: bool) {
        let tp = *self.task(t);
        if tp.enqueued {
            self.cpus[cpu.0].util_est = self.cpus[cpu.0].util_est.saturating_sub(tp.util_est);
            self.tasks[t.0].enqueued = false;
        }
        if sleep {
            let clock = self.cpus[cpu.0].clock.signal.clock.last_update_ns;
            self.tasks[t.0].signal.advance(clock, false);
            if tp.ran {
                self.learn(t, cpu);
            }
        } else {
            self.detach(t);
        }
    }

    /// `util_est_update` for an activation that just ended.
    fn learn(&mut self, t: TaskId, cpu: CpuId) {
        let _ = cpu;
        let tp = &mut self.tasks[t.0];
        let dequeued = tp.signal.util_avg.min(CAPACITY_SCALE);
        let ewma = tp.util_est;
        if ewma <= dequeued {
            tp.util_est = dequeued;
            return;
        }
        let diff = ewma - dequeued;
        if diff < UTIL_EST_MARGIN {
            return;
        }
        tp.util_est = ((ewma << UTIL_EST_WEIGHT_SHIFT) - diff) >> UTIL_EST_WEIGHT_SHIFT;
    }

    /// `cpu`'s utilisation for frequency selection, 0..=`capacity`.
    #[must_use]
    pub fn cpu_util(&self, cpu: CpuId, capacity: u64) -> u64 {
        let c = &self.cpus[cpu.0];
        c.clock.util().max(c.util_est).min(capacity)
    }

    /// A task's utilisation (its own signal), 0..=1024.
    #[must_use]
    pub fn task_util(&self, t: TaskId) -> u64 {
        self.tasks
            .get(t.0)
            .map_or(0, |tp| tp.signal.util_avg.min(CAPACITY_SCALE))
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
        // The kernel's cut-off is strict (`n > LOAD_AVG_PERIOD * 63`): at 63 half-lives the
        // largest value still leaves its top bit; one period more is 0.
        assert_eq!(decay_load(u64::MAX, 32 * 63), 1);
        assert_eq!(decay_load(u64::MAX, 32 * 63 + 1), 0);
        assert_eq!(decay_load(1 << 40, 32 * 10), 1 << 30);
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
    fn work_not_time_counts_at_a_lower_speed() {
        let half = invariance_scale(500_000, 1_000_000, 1024);
        assert_eq!(half, 512);
        // The same 1 ms of work per 8 ms: at half speed it takes 2 ms of the 8, and its
        // utilisation matches the full-speed run's, not twice it.
        let (mut fast, mut slow) = (Pelt::default(), Pelt::default());
        let ms = 1_000_000;
        for k in 0..300 {
            let t0 = k * 8 * ms;
            fast.update(t0 + ms, true, 1024);
            fast.update(t0 + 8 * ms, false, 1024);
            slow.update(t0 + 2 * ms, true, half);
            slow.update(t0 + 8 * ms, false, half);
        }
        let (f, s) = (fast.util(), slow.util());
        assert!((s as f64 / f as f64 - 1.0).abs() < 0.1, "{f} vs {s}");
        // A CPU that never idles reaches full utilisation whatever its speed, only later.
        let mut busy = Pelt::default();
        for t in 1..=2000 {
            busy.update(t * ms, true, half);
        }
        assert!(busy.util() >= 1000, "{}", busy.util());
        // A LITTLE CPU (capacity 539 of 1024, Exynos 5422) at its top frequency.
        assert_eq!(invariance_scale(1_400_000, 1_400_000, 539), 539);
    }

    #[test]
    fn mid_period_the_average_divides_by_the_periods_maximum_so_far() {
        // 1.5 periods running from zero: 1024·y (the first period, decayed once) + 512 (the
        // current half period) = 1002 + 512 = 1514; the divider is LOAD_AVG_MAX − 1024 + 512
        // = 47230 (`get_pelt_divider`), so util_avg = 1514 · 1024 / 47230 = 32.
        let mut s = Signal::default();
        s.advance(1536 * 1024, true);
        assert_eq!(s.clock.period_contrib, 512);
        assert_eq!(s.util_sum, 1514 * 1024);
        assert_eq!(s.util_avg, 32);
    }

    #[test]
    fn a_saturated_cpu_going_idle_keeps_its_level_through_the_lost_idle_time() {
        // Always running at half speed for 2 s of task time: the PELT clock covers 1000 whole
        // periods, ending on a period boundary, where a saturated sum is smallest.
        let period_ns = 1024 * 1024;
        let mut p = Pelt::default();
        for k in 1..=1000 {
            p.update(2 * period_ns * k, true, 512);
        }
        let busy = p.util();
        assert!(busy >= 1000, "{busy}");
        assert_eq!(p.signal.clock.period_contrib, 0);
        assert!(p.signal.util_sum >= SATURATED_SUM, "{}", p.signal.util_sum);
        // Idle from here: the clock catching up with task time (1000 periods) is lost idle
        // time, not idle time, so the signal neither drops at once…
        let idle_from = 2 * period_ns * 1000;
        p.update(idle_from, false, 512);
        assert_eq!(p.lost_idle_ns, 1000 * period_ns);
        assert_eq!(p.util(), busy);
        // …nor decays faster than idle time: 32 periods halve it.
        p.update(idle_from + 32 * period_ns, false, 512);
        assert!(p.util().abs_diff(busy / 2) <= 1, "{busy} → {}", p.util());
        // A CPU that was not saturated catches up with decay: 50 ms busy at half speed, then
        // idle, decays over the gap at once (25 ms of catch-up on 25 ms of PELT time).
        let mut q = Pelt::default();
        q.update(50_000_000, true, 512);
        let before = q.util();
        q.update(50_000_000, false, 512);
        assert_eq!(q.lost_idle_ns, 0);
        assert!(q.util() < before * 2 / 3, "{before} → {}", q.util());
    }

    #[test]
    fn invariance_scales_by_frequency_then_by_capacity() {
        assert_eq!(invariance_scale(1_000_000, 2_000_000, 1024), 512);
        assert_eq!(invariance_scale(2_000_000, 2_000_000, 512), 512);
        // 1.5 of 2 GHz = 768, on a CPU of half the capacity: 384.
        assert_eq!(invariance_scale(1_500_000, 2_000_000, 512), 384);
        // Above the top frequency or capacity: clamped; no top frequency: 0.
        assert_eq!(invariance_scale(3_000_000, 2_000_000, 2048), 1024);
        assert_eq!(invariance_scale(1_000_000, 0, 1024), 0);
    }

    #[test]
    fn util_est_takes_a_rise_at_once_and_a_fall_at_a_quarter_beyond_the_margin() {
        // `util_est_update` on hand-set values: the estimate and the activation's end value.
        let learned = |ewma: u64, dequeued: u64| {
            let mut p = PeltSet::new(1);
            p.enqueue(CpuId(0), TaskId(0));
            p.tasks[0].util_est = ewma;
            p.tasks[0].signal.util_avg = dequeued;
            p.learn(TaskId(0), CpuId(0));
            p.tasks[0].util_est
        };
        assert_eq!(learned(200, 400), 400);
        // Down by 200: (4 × 400 − 200) / 4 = 350.
        assert_eq!(learned(400, 200), 350);
        // Exactly the 1 % margin (10) moves it: (4 × 210 − 10) / 4 = 207; 9 does not.
        assert_eq!(learned(210, 200), 207);
        assert_eq!(learned(209, 200), 209);
    }

    #[test]
    fn a_migrated_tasks_utilisation_keeps_its_level_on_the_new_cpus_clock() {
        let mut p = PeltSet::new(2);
        let t = TaskId(0);
        let ms = 1_000_000;
        // Running on CPU 0 for 40 ms, then moved to the idle CPU 1 (its clock current).
        p.update_cpu(CpuId(0), 0, None, 1024);
        p.enqueue(CpuId(0), t);
        p.update_cpu(CpuId(0), 40 * ms, Some(t), 1024);
        let util = p.task_util(t);
        assert!(util > 500, "{util}");
        p.dequeue(CpuId(0), t, false);
        p.update_cpu(CpuId(1), 40 * ms, None, 1024);
        p.enqueue(CpuId(1), t);
        assert_eq!(p.cpu_util(CpuId(1), 1024), util);
        // Its sum went with it: 3 µs later (no whole period) CPU 1's average is where it was,
        // within the divider's rounding, and CPU 0 kept nothing of it.
        p.update_cpu(CpuId(1), 40 * ms + 3_000, Some(t), 1024);
        let after = p.cpu_util(CpuId(1), 1024);
        assert!(after.abs_diff(util) <= 2, "{util} → {after}");
        p.update_cpu(CpuId(0), 40 * ms + 3_000, None, 1024);
        assert!(
            p.cpu_util(CpuId(0), 1024) <= 2,
            "{}",
            p.cpu_util(CpuId(0), 1024)
        );
        // Enqueued again where it is: it stays (no second copy on CPU 1, none back on 0).
        p.dequeue(CpuId(1), t, true);
        p.enqueue(CpuId(1), t);
        assert!(p.cpu_util(CpuId(1), 1024).abs_diff(util) <= 2);
        assert!(p.cpu_util(CpuId(0), 1024) <= 2);
        // Asleep on CPU 1, woken on CPU 0: its utilisation moves back with it at the wakeup.
        p.dequeue(CpuId(1), t, true);
        p.update_cpu(CpuId(0), 40 * ms + 4_000, None, 1024);
        p.update_cpu(CpuId(1), 40 * ms + 4_000, None, 1024);
        p.enqueue(CpuId(0), t);
        assert!(p.cpu_util(CpuId(0), 1024).abs_diff(util) <= 2);
        assert!(
            p.cpu_util(CpuId(1), 1024) <= 2,
            "{}",
            p.cpu_util(CpuId(1), 1024)
        );
    }

    fn set_run(p: &mut PeltSet, cpu: usize, t: usize, from_ms: u64, to_ms: u64) {
        let ms = 1_000_000;
        p.update_cpu(CpuId(cpu), from_ms * ms, None, 1024);
        p.update_cpu(CpuId(cpu), to_ms * ms, Some(TaskId(t)), 1024);
    }

    #[test]
    fn a_new_task_starts_with_half_the_spare_capacity_and_its_utilisation_follows_it() {
        let mut p = PeltSet::new(2);
        let (a, b) = (TaskId(0), TaskId(1));
        p.enqueue(CpuId(0), a);
        assert_eq!(p.task_util(a), 512);
        assert_eq!(p.cpu_util(CpuId(0), 1024), 512);
        // A second new task gets half of what is left.
        p.enqueue(CpuId(0), b);
        assert_eq!(p.task_util(b), 256);
        // b moves to CPU 1 and takes its utilisation along.
        p.dequeue(CpuId(0), b, false);
        p.update_cpu(CpuId(1), 0, None, 1024);
        p.enqueue(CpuId(1), b);
        assert_eq!(p.cpu_util(CpuId(0), 1024), 512);
        assert_eq!(p.cpu_util(CpuId(1), 1024), 256);
    }

    #[test]
    fn util_est_keeps_a_periodic_task_visible_while_it_sleeps() {
        let mut p = PeltSet::new(1);
        let t = TaskId(0);
        let cpu = CpuId(0);
        // 4 ms of work every 16 ms for a second.
        for k in 0..62 {
            p.update_cpu(cpu, k * 16_000_000, None, 1024);
            p.enqueue(cpu, t);
            set_run(&mut p, 0, 0, k * 16, k * 16 + 4);
            p.dequeue(cpu, t, true);
        }
        let est = p.tasks[0].util_est;
        // The average of a 25 % duty cycle is about 256; at the end of each activation the
        // signal is at its peak, which util_est keeps.
        assert!(est > 256 && est < 450, "{est}");
        // Woken again after a long sleep, the CPU's utilisation is at least the estimate.
        p.update_cpu(cpu, 2_000_000_000, None, 1024);
        assert!(p.cpu_util(cpu, 1024) < 20);
        p.enqueue(cpu, t);
        assert_eq!(p.cpu_util(cpu, 1024), est);
    }
}
