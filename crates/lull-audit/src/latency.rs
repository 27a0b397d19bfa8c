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
    fn percentiles_are_nearest_rank() {
        let d = Distribution::from_samples((1..=100).collect());
        assert_eq!((d.p50_ns, d.p90_ns, d.p99_ns, d.max_ns), (50, 90, 99, 100));
        assert_eq!(d.histogram_log2.values().sum::<u64>(), 100);
    }
}
