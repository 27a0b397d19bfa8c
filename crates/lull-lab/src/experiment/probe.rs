//! Measuring threads of any process: CPU time and wake-ups between two marks, from `/proc`.

use super::*;

#[derive(Clone, Debug)]
pub(super) struct Probe {
    pub(super) group: Group,
    pub(super) name: String,
    pub(super) pid: i32,
    pub(super) tid: i32,
}

/// A measured thread as the saved run names it.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ProbedThread {
    pub group: Group,
    pub name: String,
    pub tid: i32,
}

impl From<&Probe> for ProbedThread {
    fn from(p: &Probe) -> ProbedThread {
        ProbedThread {
            group: p.group,
            name: p.name.clone(),
            tid: p.tid,
        }
    }
}

/// A thread's counters at one mark, as `/proc` gave them.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Reading {
    pub run_ns: u64,
    /// Voluntary context switches: the thread's wake-ups.
    pub voluntary: u64,
    pub involuntary: u64,
}

impl From<ThreadSample> for Reading {
    fn from(s: ThreadSample) -> Reading {
        Reading {
            run_ns: s.run_ns,
            voluntary: s.voluntary,
            involuntary: s.involuntary,
        }
    }
}

/// Every probed thread's counters at one instant (`None`: the thread could not be read).
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct Mark {
    /// Monotonic ns.
    pub at_ns: u64,
    /// In the order of the run's probes.
    pub samples: Vec<Option<Reading>>,
}

pub(super) fn mark(probes: &[Probe]) -> Mark {
    let at_ns = sys::monotonic_ns();
    Mark {
        at_ns,
        samples: probes
            .iter()
            .map(|p| procfs::sample_thread(p.pid, p.tid).ok().map(Reading::from))
            .collect(),
    }
}

/// Per-thread differences between two marks (a thread unreadable at either end counts zero).
pub(super) fn usage(probes: &[ProbedThread], a: &Mark, b: &Mark) -> Vec<ThreadUsage> {
    let secs = b.at_ns.saturating_sub(a.at_ns) as f64 / NS_PER_S as f64;
    probes
        .iter()
        .zip(a.samples.iter().zip(&b.samples))
        .map(|(p, (sa, sb))| {
            let (wakeups, involuntary, run_ns) = match (sa, sb) {
                (Some(x), Some(y)) => (
                    y.voluntary.saturating_sub(x.voluntary),
                    y.involuntary.saturating_sub(x.involuntary),
                    y.run_ns.saturating_sub(x.run_ns),
                ),
                _ => (0, 0, 0),
            };
            ThreadUsage {
                group: p.group,
                name: p.name.clone(),
                tid: p.tid,
                wakeups,
                wakeups_per_s: if secs > 0.0 {
                    wakeups as f64 / secs
                } else {
                    0.0
                },
                involuntary_switches: involuntary,
                cpu_ms: ns_to_ms(run_ns),
                wakeups_per_event: 0.0,
                wakeups_per_frame: 0.0,
                cpu_us_per_event: 0.0,
                cpu_us_per_frame: 0.0,
            }
        })
        .collect()
}

pub(super) fn totals(threads: &[ThreadUsage]) -> (ByGroup<f64>, ByGroup<u64>) {
    let mut cpu = ByGroup::default();
    let mut wakeups = ByGroup::default();
    for t in threads {
        cpu.add(t.group, t.cpu_ms);
        wakeups.add(t.group, t.wakeups);
    }
    (cpu, wakeups)
}

/// The threads of process `pid`, grouped by the categories it declared.
pub(super) fn app_probes(
    pid: u32,
    declared: &[Option<u32>; 4],
) -> Result<Vec<Probe>, ExperimentError> {
    let mut out = Vec::new();
    let dir = format!("/proc/{pid}/task");
    let mut tids: Vec<i32> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    for tid in tids {
        let group = ThreadCategory::ALL
            .into_iter()
            .zip(declared)
            .find(|(_, t)| **t == u32::try_from(tid).ok())
            .map_or(Group::Other, |(c, _)| c.into());
        let name = std::fs::read_to_string(format!("{dir}/{tid}/comm"))
            .map_or_else(|_| "?".to_owned(), |s| s.trim().to_owned());
        out.push(Probe {
            group,
            name,
            pid: pid as i32,
            tid,
        });
    }
    Ok(out)
}
