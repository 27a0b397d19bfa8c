//! CFS load weights by nice level.
//!
//! Source: Linux `kernel/sched/core.c`, `sched_prio_to_weight[40]` (each step is about 1.25×, so a
//! task one nice level lower gets about 10 % more CPU than its peer).

/// Lowest nice level (highest priority).
pub const NICE_MIN: i8 = -20;
/// Highest nice level (lowest priority).
pub const NICE_MAX: i8 = 19;
/// Weight of a nice-0 task; virtual runtime advances at wall-clock speed at this weight.
pub const NICE_0_WEIGHT: u32 = 1024;

const PRIO_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, // -20 .. -16
    29154, 23254, 18705, 14949, 11916, // -15 .. -11
    9548, 7620, 6100, 4904, 3906, // -10 .. -6
    3121, 2501, 1991, 1586, 1277, // -5 .. -1
    1024, 820, 655, 526, 423, // 0 .. 4
    335, 272, 215, 172, 137, // 5 .. 9
    110, 87, 70, 56, 45, // 10 .. 14
    36, 29, 23, 18, 15, // 15 .. 19
];

/// The CFS weight of `nice`, clamped to `NICE_MIN..=NICE_MAX` as the kernel clamps it.
#[must_use]
pub fn nice_to_weight(nice: i8) -> u32 {
    let n = nice.clamp(NICE_MIN, NICE_MAX);
    PRIO_TO_WEIGHT[usize::try_from(i16::from(n) - i16::from(NICE_MIN)).unwrap_or(0)]
}

/// The highest nice level (least priority) whose weight is at least `weight`; `NICE_MIN` when no
/// level is heavy enough. Seed 003's interactive boost picks the boosted nice this way.
#[must_use]
pub fn nice_for_weight_at_least(weight: u64) -> i8 {
    (NICE_MIN..=NICE_MAX)
        .rev()
        .find(|&n| u64::from(nice_to_weight(n)) >= weight)
        .unwrap_or(NICE_MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_the_design_brief() {
        assert_eq!(nice_to_weight(0), 1024);
        assert_eq!(nice_to_weight(-12), 14949);
        assert_eq!(nice_to_weight(-20), 88761);
        assert_eq!(nice_to_weight(19), 15);
        assert_eq!(nice_to_weight(100), 15);
        assert_eq!(nice_to_weight(-100), 88761);
    }

    #[test]
    fn weights_fall_monotonically() {
        for n in NICE_MIN..NICE_MAX {
            assert!(nice_to_weight(n) > nice_to_weight(n + 1));
        }
    }

    #[test]
    fn boost_lookup_picks_first_heavy_enough_level() {
        assert_eq!(nice_for_weight_at_least(1024), 0);
        assert_eq!(nice_for_weight_at_least(1025), -1);
        assert_eq!(nice_for_weight_at_least(1), 19);
        assert_eq!(nice_for_weight_at_least(1 << 40), NICE_MIN);
    }
}
