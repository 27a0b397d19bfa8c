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
