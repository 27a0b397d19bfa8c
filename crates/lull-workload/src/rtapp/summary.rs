//! What Lull reports of one rt-app thread, from its period records and CPU time: the same code
//! for the simulator's records and the kernel's.

use serde::Serialize;

use super::PeriodRecord;

/// Nearest-rank percentiles, µs (see [`ThreadSummary::of`]).
#[derive(Clone, Copy, PartialEq, Debug, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// Slack percentiles, µs (p1: the tightest periods).
#[derive(Clone, Copy, PartialEq, Debug, Serialize)]
pub struct SlackStats {
    pub p50: f64,
    pub p1: f64,
}

/// One thread's figures; as JSON `{"cpu_ms","periods","wakeup_latency_us":{"p50","p99","max"},
/// "slack_us":{"p50","p1"}}`, the last two `null` for a thread without timers.
#[derive(Clone, Copy, PartialEq, Debug, Serialize)]
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

/// ns per ms.
const NS_PER_MS: f64 = 1e6;

impl ThreadSummary {
    /// The summary of `records` for a thread that ran `cpu_ns`.
    ///
    /// - Wake-up latency: `wu_lat` of the periods with a timer (`c_period` > 0) that the thread
    ///   slept on (`slack` > 0). When the timer had already expired rt-app does not sleep and
    ///   logs `wu_lat` 0 with a slack ≤ 0; counting those zeros would flatter the latency.
    /// - Slack: `slack` of every period with a timer.
    ///
    /// Percentiles are by nearest rank: the p-th percentile of n sorted samples is the sample of
    /// 1-based rank ⌈p/100 × n⌉ (at least 1), so it is always a logged value.
    #[must_use]
    pub fn of(records: &[PeriodRecord], cpu_ns: u64) -> ThreadSummary {
        let timed = || records.iter().filter(|r| r.c_period_us > 0);
        let mut latency: Vec<u64> = timed()
            .filter(|r| r.slack_us > 0)
            .map(|r| r.wu_lat_us)
            .collect();
        latency.sort_unstable();
        let mut slack: Vec<i64> = timed().map(|r| r.slack_us).collect();
        slack.sort_unstable();
        ThreadSummary {
            cpu_ms: cpu_ns as f64 / NS_PER_MS,
            periods: records.len() as u64,
            wakeup_latency_us: latency.last().map(|&max| Percentiles {
                p50: nearest_rank(&latency, 50) as f64,
                p99: nearest_rank(&latency, 99) as f64,
                max: max as f64,
            }),
            slack_us: (!slack.is_empty()).then(|| SlackStats {
                p50: nearest_rank(&slack, 50) as f64,
                p1: nearest_rank(&slack, 1) as f64,
            }),
        }
    }
}

/// The `p`-th percentile of non-empty `sorted` by nearest rank (the project's one definition).
fn nearest_rank<T: Copy>(sorted: &[T], p: u32) -> T {
    lull_model::stats::nearest_rank(sorted, p).expect("callers pass samples")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(slack_us: i64, c_period_us: u64, wu_lat_us: u64) -> PeriodRecord {
        PeriodRecord {
            index: 0,
            perf: 0,
            run_us: 0,
            period_us: 0,
            start_us: 0,
            end_us: 0,
            rel_start_us: 0,
            slack_us,
            c_duration_us: 0,
            c_period_us,
            wu_lat_us,
        }
    }

    #[test]
    fn nearest_rank_worked_examples() {
        let ten: Vec<u32> = (1..=10).collect();
        // ⌈0.5 × 10⌉ = 5, ⌈0.99 × 10⌉ = 10, ⌈0.01 × 10⌉ = 1.
        assert_eq!(nearest_rank(&ten, 50), 5);
        assert_eq!(nearest_rank(&ten, 99), 10);
        assert_eq!(nearest_rank(&ten, 1), 1);
        let hundred_one: Vec<u32> = (1..=101).collect();
        // ⌈0.99 × 101⌉ = ⌈99.99⌉ = 100; ⌈0.5 × 101⌉ = 51; ⌈0.01 × 101⌉ = 2.
        assert_eq!(nearest_rank(&hundred_one, 99), 100);
        assert_eq!(nearest_rank(&hundred_one, 50), 51);
        assert_eq!(nearest_rank(&hundred_one, 1), 2);
        assert_eq!(nearest_rank(&[7], 1), 7);
        assert_eq!(nearest_rank(&[7], 99), 7);
    }

    #[test]
    fn no_records() {
        let s = ThreadSummary::of(&[], 2_500_000);
        assert_eq!(
            s,
            ThreadSummary {
                cpu_ms: 2.5,
                periods: 0,
                wakeup_latency_us: None,
                slack_us: None,
            }
        );
    }

    #[test]
    fn periods_without_timers_have_no_latency_or_slack() {
        let s = ThreadSummary::of(&[rec(0, 0, 0), rec(5, 0, 9)], 0);
        assert_eq!(s.periods, 2);
        assert_eq!(s.wakeup_latency_us, None);
        assert_eq!(s.slack_us, None);
    }

    #[test]
    fn latency_counts_only_timers_slept_on() {
        let records = [
            rec(1900, 2000, 75),
            rec(1907, 2000, 70),
            rec(-13, 100, 0), // expired timer: no sleep, no latency sample
            rec(0, 100, 0),   // expired exactly: no sleep either
            rec(15, 100, 67),
            rec(18, 100, 69),
            rec(50, 0, 400), // no timer at all
        ];
        let s = ThreadSummary::of(&records, 1_234_567);
        assert_eq!(s.cpu_ms, 1.234_567);
        assert_eq!(s.periods, 7);
        // Samples 67, 69, 70, 75: p50 rank ⌈2⌉ = 2 → 69; p99 rank ⌈3.96⌉ = 4 → 75.
        assert_eq!(
            s.wakeup_latency_us,
            Some(Percentiles {
                p50: 69.0,
                p99: 75.0,
                max: 75.0
            })
        );
        // Slack samples -13, 0, 15, 18, 1900, 1907: p50 rank 3 → 15; p1 rank 1 → -13.
        assert_eq!(
            s.slack_us,
            Some(SlackStats {
                p50: 15.0,
                p1: -13.0
            })
        );
    }

    #[test]
    fn only_overruns_give_slack_but_no_latency() {
        let s = ThreadSummary::of(&[rec(-5, 100, 0), rec(-2, 100, 0)], 0);
        assert_eq!(s.wakeup_latency_us, None);
        assert_eq!(
            s.slack_us,
            Some(SlackStats {
                p50: -5.0,
                p1: -5.0
            })
        );
    }

    #[test]
    fn p99_of_two_hundred_samples_skips_the_top_two() {
        // Latencies 1..=200: p99 rank ⌈198⌉ = 198, max 200, p50 rank 100.
        let records: Vec<PeriodRecord> = (1..=200).map(|l| rec(10, 1000, l)).collect();
        let p = ThreadSummary::of(&records, 0).wakeup_latency_us.unwrap();
        assert_eq!((p.p50, p.p99, p.max), (100.0, 198.0, 200.0));
    }
}
