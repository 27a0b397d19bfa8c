//! On-CPU timelines of a set of threads, in one shape for a live trace and a simulated run, so
//! that the two can be read side by side (`lull validate kernel --timeline`, docs/validation.md).
//!
//! A [`Timeline`] is built from an [`AuditLog`]: the live side's comes from a tracefs text trace
//! of `sched_switch`/`sched_wakeup` read by [`crate::ftrace_text::read`], the simulator's from its
//! own scheduling events. Each thread's time on a CPU is a [`Stretch`] (switch-in to the next
//! preempt or block on that CPU); each wake-up a [`Wake`] with the CPU it was placed on.
//! [`ThreadProfile`] condenses a thread's timeline into the figures that tell scheduling
//! mechanisms apart: where it ran, how often it moved, how long it kept a CPU.

use lull_model::stats::nearest_rank;

use crate::log::AuditLog;
use crate::record::AuditEventKind;

/// One stretch of a thread on a CPU.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Stretch {
    /// Index into [`Timeline::threads`].
    pub thread: usize,
    pub cpu: u16,
    /// From the timeline's start.
    pub start_ns: u64,
    pub end_ns: u64,
    /// Switched out while still runnable (preempted), not blocked.
    pub preempted: bool,
}

/// One wake-up (enqueue) of a thread.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Wake {
    pub thread: usize,
    /// The CPU the thread was queued on.
    pub cpu: u16,
    pub at_ns: u64,
}

/// The timelines of a set of threads.
#[derive(Clone, PartialEq, Debug, Default)]
pub struct Timeline {
    /// The threads' names, in the caller's order.
    pub threads: Vec<String>,
    /// Every stretch, in the order they ended.
    pub stretches: Vec<Stretch>,
    pub wakes: Vec<Wake>,
    /// From the first event of any of the threads to the last.
    pub span_ns: u64,
}

impl Timeline {
    /// The timeline of the threads `threads` (`(tid, name)`) in `log`. Times start at the
    /// first record of any of them; a stretch still open at the end is left out.
    #[must_use]
    pub fn of(log: &AuditLog, threads: &[(u32, String)]) -> Timeline {
        let index = |tid: u32| threads.iter().position(|(t, _)| *t == tid);
        let mut records: Vec<_> = log
            .records
            .iter()
            .filter(|r| index(r.tid).is_some())
            .collect();
        // The log holds one ring per CPU; one timeline needs one order (time, then ring order).
        records.sort_by_key(|r| (r.ts_ns, r.ring, r.seq));
        let t0 = records.first().map_or(0, |r| r.ts_ns);
        let mut open: Vec<Option<(u16, u64)>> = vec![None; threads.len()];
        let mut out = Timeline {
            threads: threads.iter().map(|(_, n)| n.clone()).collect(),
            ..Timeline::default()
        };
        for r in records {
            let Some(i) = index(r.tid) else { continue };
            let at = r.ts_ns - t0;
            out.span_ns = at;
            match r.kind {
                AuditEventKind::SwitchIn => open[i] = Some((r.cpu, at)),
                AuditEventKind::Preempt | AuditEventKind::Block | AuditEventKind::Terminate => {
                    if let Some((cpu, start)) = open[i].take() {
                        out.stretches.push(Stretch {
                            thread: i,
                            cpu,
                            start_ns: start,
                            end_ns: at,
                            preempted: r.kind == AuditEventKind::Preempt,
                        });
                    }
                }
                AuditEventKind::Unblock => out.wakes.push(Wake {
                    thread: i,
                    cpu: r.cpu,
                    at_ns: at,
                }),
            }
        }
        out
    }

    /// Every thread's [`ThreadProfile`] over `cpus` CPUs (stretches on a CPU beyond are
    /// counted on the last).
    #[must_use]
    pub fn profiles(&self, cpus: usize) -> Vec<ThreadProfile> {
        let cpus = cpus.max(1);
        (0..self.threads.len())
            .map(|i| ThreadProfile::of(self, i, cpus))
            .collect()
    }
}

/// What a thread's timeline says about how it was scheduled.
#[derive(Clone, PartialEq, Debug)]
pub struct ThreadProfile {
    pub name: String,
    /// Time on each CPU over the timeline's span, fraction of it.
    pub share_per_cpu: Vec<f64>,
    /// Stretches on a CPU, and how many of them ended in a preemption.
    pub stretches: usize,
    pub preempted: usize,
    /// Stretches that began on another CPU than the previous one ended on.
    pub migrations: usize,
    /// Median and 90th percentile (nearest rank) of its stretches, µs.
    pub stretch_p50_us: Option<f64>,
    pub stretch_p90_us: Option<f64>,
    /// Median time it stayed on one CPU between migrations (the first CPU's stay from its first
    /// stretch, the last one's to its last), ms: how long a thread keeps its CPU.
    pub stay_p50_ms: Option<f64>,
    /// Wake-ups queued on each CPU.
    pub wakes_per_cpu: Vec<usize>,
}

impl ThreadProfile {
    fn of(t: &Timeline, i: usize, cpus: usize) -> ThreadProfile {
        let mine: Vec<&Stretch> = t.stretches.iter().filter(|s| s.thread == i).collect();
        let mut on = vec![0u64; cpus];
        let mut lengths = Vec::with_capacity(mine.len());
        let mut stays = Vec::new();
        let mut migrations = 0;
        let mut stay_from: Option<(u16, u64)> = None;
        let mut last_end = 0;
        for s in &mine {
            on[usize::from(s.cpu).min(cpus - 1)] += s.end_ns - s.start_ns;
            lengths.push(s.end_ns - s.start_ns);
            match stay_from {
                Some((cpu, from)) if cpu != s.cpu => {
                    migrations += 1;
                    stays.push(last_end - from);
                    stay_from = Some((s.cpu, s.start_ns));
                }
                None => stay_from = Some((s.cpu, s.start_ns)),
                Some(_) => {}
            }
            last_end = s.end_ns;
        }
        if let Some((_, from)) = stay_from {
            stays.push(last_end - from);
        }
        lengths.sort_unstable();
        stays.sort_unstable();
        let span = t.span_ns.max(1) as f64;
        let mut wakes_per_cpu = vec![0; cpus];
        for w in t.wakes.iter().filter(|w| w.thread == i) {
            wakes_per_cpu[usize::from(w.cpu).min(cpus - 1)] += 1;
        }
        ThreadProfile {
            name: t.threads[i].clone(),
            share_per_cpu: on.iter().map(|&n| n as f64 / span).collect(),
            stretches: mine.len(),
            preempted: mine.iter().filter(|s| s.preempted).count(),
            migrations,
            stretch_p50_us: nearest_rank(&lengths, 50).map(|n| n as f64 / 1e3),
            stretch_p90_us: nearest_rank(&lengths, 90).map(|n| n as f64 / 1e3),
            stay_p50_ms: nearest_rank(&stays, 50).map(|n| n as f64 / 1e6),
            wakes_per_cpu,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftrace_text;

    const TRACE: &str = "\
hog-10 [000] d..2. 1.000000000: sched_switch: prev_comm=hog prev_pid=10 prev_prio=120 prev_state=R ==> next_comm=per next_pid=11 next_prio=120
per-11 [000] d..2. 1.001000000: sched_switch: prev_comm=per prev_pid=11 prev_prio=120 prev_state=S ==> next_comm=hog next_pid=10 next_prio=120
<idle>-0 [001] d..2. 1.002000000: sched_wakeup: comm=per pid=11 prio=120 target_cpu=001
<idle>-0 [001] d..2. 1.002000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=per next_pid=11 next_prio=120
per-11 [001] d..2. 1.005000000: sched_switch: prev_comm=per prev_pid=11 prev_prio=120 prev_state=R ==> next_comm=swapper/1 next_pid=0 next_prio=120
";

    #[test]
    fn a_trace_gives_stretches_migrations_and_placements() {
        let (log, _) = ftrace_text::read(TRACE, &[]).unwrap();
        let t = Timeline::of(&log, &[(10, "hog-0".into()), (11, "per-1".into())]);
        assert_eq!(t.span_ns, 5_000_000);
        let p = t.profiles(2);
        let per = &p[1];
        assert_eq!(per.stretches, 2);
        assert_eq!(per.preempted, 1);
        assert_eq!(per.migrations, 1);
        assert_eq!(per.wakes_per_cpu, vec![0, 1]);
        assert_eq!(per.stretch_p50_us, Some(1_000.0));
        assert_eq!(per.stretch_p90_us, Some(3_000.0));
        assert!((per.share_per_cpu[0] - 0.2).abs() < 1e-9);
        assert!((per.share_per_cpu[1] - 0.6).abs() < 1e-9);
        // The hog's first stretch opened before the trace: only its second one (still open at
        // the end) could count, and it is left out.
        assert_eq!(p[0].stretches, 0);
    }
}
