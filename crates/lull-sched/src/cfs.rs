//! CFS arithmetic as the design brief restates it (seed 003's equations, Linux's constants).
//!
//! - weight W(nice): Linux's table, [`lull_model::weight::nice_to_weight`];
//! - virtual runtime VR = runtime × 1024 / W ([`vruntime_delta_ns`]);
//! - time slice TS(τ) = P × W(τ) / ΣW, P = 5 ms while fewer than 5 tasks are runnable, else
//!   n × 1 ms ([`period_ns`], [`time_slice_ns`]);
//! - on wakeup a sleeper's VR is lifted to about the queue's minimum ([`place_on_wakeup`]);
//! - at a tick the running task is preempted once it has used its slice ([`tick_preempt`]);
//! - a woken task preempts the running one when it is far enough to the left ([`wakeup_preempt`]).

use lull_model::weight::NICE_0_WEIGHT;

/// Scheduling period while fewer than [`NR_LATENCY`] tasks are runnable. Source: the design
/// brief's restatement of seed 003 (P = 5 ms when n < 5).
pub const PERIOD_MIN_NS: u64 = 5_000_000;
/// Runnable-task count from which the period grows with n. Source: as [`PERIOD_MIN_NS`].
pub const NR_LATENCY: u64 = 5;
/// Period per runnable task once n ≥ [`NR_LATENCY`] (the minimum granularity). Source: as above.
pub const MIN_GRANULARITY_NS: u64 = 1_000_000;
/// How far below the queue's minimum VR a waking sleeper may be placed: half a period, Linux's
/// `GENTLE_FAIR_SLEEPERS` rule in `place_entity()` (`thresh = sysctl_sched_latency / 2`).
pub const SLEEPER_CREDIT_NS: u64 = PERIOD_MIN_NS / 2;
/// Wakeup preemption granularity in virtual time of a nice-0 task. Source: Linux
/// `sysctl_sched_wakeup_granularity` base value, 1 ms (`kernel/sched/fair.c`).
pub const WAKEUP_GRANULARITY_NS: u64 = 1_000_000;

/// The scheduling period P for `n_runnable` tasks.
#[must_use]
pub fn period_ns(n_runnable: u64) -> u64 {
    if n_runnable < NR_LATENCY {
        PERIOD_MIN_NS
    } else {
        n_runnable * MIN_GRANULARITY_NS
    }
}

/// TS(τ) = P × W(τ) / ΣW for a task of `weight` in a runnable set of `n_runnable` tasks whose
/// weights sum to `total_weight` (which includes `weight`). A zero total gives the whole period.
#[must_use]
pub fn time_slice_ns(weight: u32, total_weight: u64, n_runnable: u64) -> u64 {
    let p = period_ns(n_runnable.max(1));
    if total_weight == 0 {
        return p;
    }
    ((u128::from(p) * u128::from(weight)) / u128::from(total_weight)) as u64
}

/// VR advance for `runtime_ns` of execution at `weight`: runtime × 1024 / W.
#[must_use]
pub fn vruntime_delta_ns(runtime_ns: u64, weight: u32) -> u64 {
    let w = u128::from(weight.max(1));
    ((u128::from(runtime_ns) * u128::from(NICE_0_WEIGHT)) / w) as u64
}

/// The VR a waking task gets: its own, lifted to at least `min_vruntime − SLEEPER_CREDIT_NS`, so a
/// long sleeper neither monopolises the core nor loses its place entirely.
#[must_use]
pub fn place_on_wakeup(vruntime: u64, min_vruntime: u64) -> u64 {
    vruntime.max(min_vruntime.saturating_sub(SLEEPER_CREDIT_NS))
}

/// Whether the tick preempts the running task: it has run its slice in this turn.
#[must_use]
pub fn tick_preempt(ran_this_turn_ns: u64, slice_ns: u64) -> bool {
    ran_this_turn_ns >= slice_ns
}

/// Whether a woken task preempts the running one at once: the runner's VR exceeds the woken
/// task's by more than the wakeup granularity, scaled to the woken task's weight (Linux
/// `wakeup_preempt_entity()` with `wakeup_gran()`).
#[must_use]
pub fn wakeup_preempt(curr_vruntime: u64, woken_vruntime: u64, woken_weight: u32) -> bool {
    let gran = vruntime_delta_ns(WAKEUP_GRANULARITY_NS, woken_weight);
    curr_vruntime > woken_vruntime.saturating_add(gran)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_model::weight::nice_to_weight;

    #[test]
    fn period_follows_the_runnable_count() {
        assert_eq!(period_ns(1), 5_000_000);
        assert_eq!(period_ns(4), 5_000_000);
        assert_eq!(period_ns(5), 5_000_000);
        assert_eq!(period_ns(10), 10_000_000);
    }

    #[test]
    fn brief_example_2_nine_nice0_and_one_nice_minus_12() {
        let total = 9 * u64::from(nice_to_weight(0)) + u64::from(nice_to_weight(-12));
        let small = time_slice_ns(nice_to_weight(0), total, 10);
        let big = time_slice_ns(nice_to_weight(-12), total, 10);
        // 0.42 ms and 6.18 ms in the brief.
        assert_eq!(small / 10_000, 42);
        assert_eq!(big / 10_000, 618);
    }

    #[test]
    fn a_lone_task_gets_the_whole_period() {
        assert_eq!(time_slice_ns(1024, 1024, 1), PERIOD_MIN_NS);
        assert_eq!(time_slice_ns(1024, 0, 0), PERIOD_MIN_NS);
    }

    #[test]
    fn vruntime_runs_slower_for_heavier_tasks() {
        assert_eq!(vruntime_delta_ns(1_000_000, 1024), 1_000_000);
        assert_eq!(vruntime_delta_ns(1_000_000, 2048), 500_000);
        assert!(vruntime_delta_ns(1_000_000, nice_to_weight(19)) > 60_000_000);
    }

    #[test]
    fn sleepers_are_lifted_near_the_minimum() {
        assert_eq!(
            place_on_wakeup(0, 100_000_000),
            100_000_000 - SLEEPER_CREDIT_NS
        );
        assert_eq!(place_on_wakeup(200_000_000, 100_000_000), 200_000_000);
        assert_eq!(place_on_wakeup(5, 1), 5);
    }

    #[test]
    fn preemption_rules() {
        assert!(!tick_preempt(4_999_999, 5_000_000));
        assert!(tick_preempt(5_000_000, 5_000_000));
        assert!(wakeup_preempt(10_000_000, 8_000_000, 1024));
        assert!(!wakeup_preempt(10_000_000, 9_500_000, 1024));
        // A light woken task needs a bigger lead.
        assert!(!wakeup_preempt(10_000_000, 8_000_000, nice_to_weight(5)));
    }
}
