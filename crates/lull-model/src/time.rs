//! Time and its units.
//!
//! All times are integer nanoseconds in `u64`, named with an `_ns` suffix. The origin is the
//! caller's clock (the live adapter's `CLOCK_MONOTONIC`, the simulator's zero). Core crates never
//! read a clock: time is always passed in.

pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_S: u64 = 1_000_000_000;

/// Nanoseconds to microseconds as a float, for reports.
#[must_use]
pub fn ns_to_us(ns: u64) -> f64 {
    ns as f64 / NS_PER_US as f64
}

/// Nanoseconds to milliseconds as a float, for reports.
#[must_use]
pub fn ns_to_ms(ns: u64) -> f64 {
    ns as f64 / NS_PER_MS as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanoseconds_convert_to_reported_units() {
        assert_eq!(ns_to_us(1_500), 1.5);
        assert_eq!(ns_to_us(0), 0.0);
        assert_eq!(ns_to_ms(2_500_000), 2.5);
        assert_eq!(ns_to_ms(7 * NS_PER_S), 7_000.0);
    }
}
