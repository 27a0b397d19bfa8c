//! Per-task scheduling latency (woken → running, L_S of seed 003's RT = C + L_I + L_S + L_P) and
//! preemption latency (preempted → running again, L_P), as distributions.

use std::collections::{BTreeMap, HashMap};

use lull_model::stats::nearest_rank;

use serde::Serialize;

use crate::record::{AuditEventKind, AuditRecord, Comm};
use crate::tlp::TaskFilter;

/// A latency distribution in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Distribution {
    pub count: u64,
    pub min_ns: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    /// Counts per power-of-two bucket: key "2^k" holds samples in [2^k, 2^(k+1)) ns.
    pub histogram_log2: BTreeMap<String, u64>,
}

impl Distribution {
    pub fn from_samples(mut s: Vec<u64>) -> Self {
        if s.is_empty() {
            return Distribution::default();
        }
        s.sort_unstable();
        let mut hist = BTreeMap::new();
        for &v in &s {
            let k = 63 - v.max(1).leading_zeros();
            *hist.entry(format!("2^{k:02}")).or_insert(0) += 1;
        }
        Distribution {
            count: s.len() as u64,
            min_ns: s[0],
            mean_ns: s.iter().map(|&v| v as f64).sum::<f64>() / s.len() as f64,
            p50_ns: nearest_rank(&s, 50).unwrap_or(0),
            p90_ns: nearest_rank(&s, 90).unwrap_or(0),
            p99_ns: nearest_rank(&s, 99).unwrap_or(0),
            max_ns: s[s.len() - 1],
            histogram_log2: hist,
        }
    }
}

/// One task's latencies.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskLatency {
    pub tid: u32,
    pub tgid: u32,
    pub comm: Comm,
    pub scheduling: Distribution,
    pub preemption: Distribution,
}

/// The report: every task, and all tasks together.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyReport {
    pub all_scheduling: Distribution,
    pub all_preemption: Distribution,
    /// Wakeups or preemptions never followed by a switch-in in the log.
    pub unmatched: u64,
    /// Tasks by thread id, most samples first.
    pub tasks: Vec<TaskLatency>,
}

#[derive(Default)]
struct Pending {
    woken_ns: Option<u64>,
    preempted_ns: Option<u64>,
    sched: Vec<u64>,
    preempt: Vec<u64>,
    tgid: u32,
    comm: Comm,
    /// Switched in and not yet out: a wakeup now is of a running task (no latency to measure).
    running: bool,
}

/// Computes both latencies for the tasks `filter` selects.
pub fn analyze(records: &[AuditRecord], filter: &TaskFilter) -> LatencyReport {
    let recs = crate::time_ordered(records);
    let mut tasks: HashMap<u32, Pending> = HashMap::new();
    let mut unmatched = 0u64;
    for r in recs.iter().filter(|r| filter.matches(r)) {
        let p = tasks.entry(r.tid).or_default();
        p.tgid = r.tgid;
        p.comm = r.comm;
        match r.kind {
            AuditEventKind::Unblock => {
                if p.woken_ns.is_none() && !p.running {
                    p.woken_ns = Some(r.ts_ns);
                }
            }
            AuditEventKind::Preempt => {
                p.running = false;
                if p.preempted_ns.replace(r.ts_ns).is_some() {
                    unmatched += 1;
                }
            }
            AuditEventKind::SwitchIn => {
                p.running = true;
                if let Some(w) = p.woken_ns.take() {
                    p.sched.push(r.ts_ns.saturating_sub(w));
                    p.preempted_ns = None;
                } else if let Some(pre) = p.preempted_ns.take() {
                    p.preempt.push(r.ts_ns.saturating_sub(pre));
                }
            }
            AuditEventKind::Block | AuditEventKind::Terminate => {
                if r.kind == AuditEventKind::Block {
                    p.running = false;
                }
                unmatched += u64::from(p.preempted_ns.take().is_some());
            }
        }
    }
    let mut all_s = Vec::new();
    let mut all_p = Vec::new();
    let mut out: Vec<TaskLatency> = tasks
        .into_iter()
        .map(|(tid, p)| {
            unmatched += u64::from(p.woken_ns.is_some()) + u64::from(p.preempted_ns.is_some());
            all_s.extend_from_slice(&p.sched);
            all_p.extend_from_slice(&p.preempt);
            TaskLatency {
                tid,
                tgid: p.tgid,
                comm: p.comm,
                scheduling: Distribution::from_samples(p.sched),
                preemption: Distribution::from_samples(p.preempt),
            }
        })
        .collect();
    out.sort_by_key(|t| {
        (
            std::cmp::Reverse(t.scheduling.count + t.preemption.count),
            t.tid,
        )
    });
    LatencyReport {
        all_scheduling: Distribution::from_samples(all_s),
        all_preemption: Distribution::from_samples(all_p),
        unmatched,
        tasks: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlp::tests::r;
    use AuditEventKind::*;

    #[test]
    fn wake_to_run_and_preempt_to_run() {
        let recs = vec![
            r(100, 0, 1, Unblock),
            r(150, 0, 1, SwitchIn),
            r(200, 0, 1, Preempt),
            r(230, 0, 1, SwitchIn),
            r(300, 0, 1, Block),
            r(400, 0, 1, Unblock),
            r(410, 0, 1, SwitchIn),
        ];
        let rep = analyze(&recs, &TaskFilter::all());
        let t = &rep.tasks[0];
        assert_eq!(t.scheduling.count, 2);
        assert_eq!((t.scheduling.min_ns, t.scheduling.max_ns), (10, 50));
        assert_eq!(t.preemption.count, 1);
        assert_eq!(t.preemption.p50_ns, 30);
        assert_eq!(rep.unmatched, 0);
    }

    #[test]
    fn wakeup_of_a_running_task_is_not_a_latency() {
        let recs = vec![
            r(0, 0, 1, SwitchIn),
            r(10, 0, 1, Unblock),
            r(500, 0, 1, Preempt),
            r(520, 0, 1, SwitchIn),
        ];
        let rep = analyze(&recs, &TaskFilter::all());
        assert_eq!(rep.tasks[0].scheduling.count, 0);
        assert_eq!(rep.tasks[0].preemption.max_ns, 20);
    }

    #[test]
    fn wakeups_and_preemptions_never_switched_in_are_counted_once_each() {
        let recs = vec![
            // Task 1: preempted twice before it runs again; the first has no switch-in.
            r(10, 0, 1, Preempt),
            r(20, 0, 1, Preempt),
            r(25, 0, 1, SwitchIn),
            // Task 2: preempted, then blocks without running again.
            r(30, 0, 2, Preempt),
            r(40, 0, 2, Block),
            // Task 3: woken, never switched in before the log ends.
            r(50, 0, 3, Unblock),
            // Task 4: preempted, never switched in before the log ends.
            r(60, 0, 4, Preempt),
        ];
        let rep = analyze(&recs, &TaskFilter::all());
        assert_eq!(rep.unmatched, 4);
        // Only task 1's second preemption has a latency: 25 - 20.
        assert_eq!(rep.all_preemption.count, 1);
        assert_eq!(rep.all_preemption.max_ns, 5);
        assert_eq!(rep.all_scheduling.count, 0);
    }

    #[test]
    fn each_unmatched_kind_alone_counts_one() {
        let alone = |recs: Vec<AuditRecord>| analyze(&recs, &TaskFilter::all()).unmatched;
        assert_eq!(alone(vec![r(0, 0, 1, Preempt), r(5, 0, 1, Preempt)]), 2);
        assert_eq!(alone(vec![r(0, 0, 1, Preempt), r(5, 0, 1, Terminate)]), 1);
        assert_eq!(alone(vec![r(0, 0, 1, Unblock)]), 1);
        assert_eq!(alone(vec![r(0, 0, 1, Preempt)]), 1);
        assert_eq!(alone(vec![r(0, 0, 1, SwitchIn)]), 0);
    }

    #[test]
    fn tasks_are_listed_most_samples_first_then_by_thread_id() {
        let recs = vec![
            // Task 5: three scheduling samples, no preemption.
            r(0, 0, 5, Unblock),
            r(1, 0, 5, SwitchIn),
            r(2, 0, 5, Block),
            r(3, 0, 5, Unblock),
            r(4, 0, 5, SwitchIn),
            r(5, 0, 5, Block),
            r(6, 0, 5, Unblock),
            r(7, 0, 5, SwitchIn),
            // Task 7: one of each.
            r(10, 1, 7, Unblock),
            r(11, 1, 7, SwitchIn),
            r(12, 1, 7, Preempt),
            r(13, 1, 7, SwitchIn),
            // Task 6: one of each too, so it comes before task 7 by thread id.
            r(20, 1, 6, Unblock),
            r(21, 1, 6, SwitchIn),
            r(22, 1, 6, Preempt),
            r(23, 1, 6, SwitchIn),
            // Task 1: none.
            r(30, 0, 1, SwitchIn),
        ];
        let rep = analyze(&recs, &TaskFilter::all());
        let order: Vec<u32> = rep.tasks.iter().map(|t| t.tid).collect();
        assert_eq!(order, [5, 6, 7, 1]);
    }

    #[test]
    fn mean_and_log2_histogram_of_hand_samples() {
        // 0 counts in the first bucket (as 1); 2^k lands in bucket k; 2^k - 1 in bucket k - 1.
        let d = Distribution::from_samples(vec![1000, 0, 3, 2, 1, 4, 6]);
        assert_eq!(d.count, 7);
        assert_eq!((d.min_ns, d.max_ns), (0, 1000));
        assert_eq!(d.mean_ns, 1016.0 / 7.0);
        let hist: Vec<(&str, u64)> = d
            .histogram_log2
            .iter()
            .map(|(k, &n)| (k.as_str(), n))
            .collect();
        assert_eq!(hist, [("2^00", 2), ("2^01", 2), ("2^02", 2), ("2^09", 1)]);
        assert_eq!(Distribution::from_samples(vec![30, 10, 20]).mean_ns, 20.0);
        assert_eq!(
            Distribution::from_samples(vec![u64::MAX]).histogram_log2["2^63"],
            1
        );
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let d = Distribution::from_samples((1..=100).collect());
        assert_eq!((d.p50_ns, d.p90_ns, d.p99_ns, d.max_ns), (50, 90, 99, 100));
        assert_eq!(d.histogram_log2.values().sum::<u64>(), 100);
    }
}
