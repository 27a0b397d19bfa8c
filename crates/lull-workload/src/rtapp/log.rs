//! rt-app's per-thread log files: one line per period (one pass over a phase's events).

/// One logged period, in rt-app's columns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PeriodRecord {
    /// `idx`: the thread's index.
    pub index: u32,
    /// `perf`: loops of the busy function run.
    pub perf: u64,
    /// `run`: wall time spent in `run`/`runtime` events, µs.
    pub run_us: u64,
    /// `period`: wall time of the whole pass, µs.
    pub period_us: u64,
    /// `start`, `end`: absolute `CLOCK_MONOTONIC` times of the pass, µs.
    pub start_us: u64,
    pub end_us: u64,
    /// `rel_st`: start relative to the start of the use case, µs.
    pub rel_start_us: u64,
    /// `slack`: time left before the last timer's expiry when the thread reached it, µs
    /// (negative: an overrun).
    pub slack_us: i64,
    /// `c_duration`: configured `run`/`runtime` µs of the pass.
    pub c_duration_us: u64,
    /// `c_period`: configured timer periods of the pass, µs.
    pub c_period_us: u64,
    /// `wu_lat`: wake-up latency after the pass's timers, µs.
    pub wu_lat_us: u64,
}

/// Why a log file was rejected.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum LogError {
    #[error("line {line}: {reason}")]
    BadLine { line: usize, reason: String },
}

/// Parses an rt-app log file.
///
/// # Errors
/// A [`LogError`] for the first malformed line.
pub fn parse_log(_text: &str) -> Result<Vec<PeriodRecord>, LogError> {
    Err(LogError::BadLine {
        line: 0,
        reason: "reader not written yet".into(),
    })
}
