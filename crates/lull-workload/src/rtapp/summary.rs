//! What Lull reports of one rt-app thread, from its period records and CPU time: the same code
//! for the simulator's records and the kernel's.

use super::PeriodRecord;

/// Nearest-rank percentiles, µs.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// Slack percentiles, µs (p1: the tightest periods).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct SlackStats {
    pub p50: f64,
    pub p1: f64,
}

/// One thread's figures.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct ThreadSummary {
    /// CPU time, ms.
    pub cpu_ms: f64,
    /// Logged periods.
    pub periods: u64,
    /// Wake-up latency after timers the thread slept on; `None` without any.
    pub wakeup_latency_us: Option<Percentiles>,
    /// Slack of periods with a timer; `None` without any.
    pub slack_us: Option<SlackStats>,
}

impl ThreadSummary {
    /// The summary of `records` for a thread that ran `cpu_ns`.
    #[must_use]
    pub fn of(records: &[PeriodRecord], cpu_ns: u64) -> ThreadSummary {
        let _ = records;
        ThreadSummary {
            cpu_ms: cpu_ns as f64 / 1e6,
            periods: 0,
            wakeup_latency_us: None,
            slack_us: None,
        }
    }
}
