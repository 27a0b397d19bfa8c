//! One thread's figures, live or modelled: what the validation compares.

use lull_workload::rtapp::ThreadSummary;

/// One side's figures of a thread.
#[derive(Clone, Copy, PartialEq, Debug, serde::Serialize, serde::Deserialize)]
pub struct Figures {
    /// CPU time over the run's duration.
    pub cpu_share: f64,
    pub periods: u64,
    pub wakeup_p50_us: Option<f64>,
    pub wakeup_p99_us: Option<f64>,
}

impl Figures {
    /// A thread's figures from its summary and its CPU share.
    #[must_use]
    pub fn of(s: &ThreadSummary, cpu_share: f64) -> Figures {
        Figures {
            cpu_share,
            periods: s.periods,
            wakeup_p50_us: s.wakeup_latency_us.map(|l| l.p50),
            wakeup_p99_us: s.wakeup_latency_us.map(|l| l.p99),
        }
    }
}
