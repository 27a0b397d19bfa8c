//! UCSG's sensitivity states and core allocation (seed 001 §3.1–3.3) inside lull-scx: the
//! user-space half. Pure: it is handed the facts and CPU times, it answers with a placement
//! (thread → CPU) that the BPF side enforces (`lull_place`, `src/bpf/main.bpf.c`).
//!
//! The decisions are `lull_sched::ucsg::Ucsg`'s, the core the simulator and lulld's live UCSG
//! host run: figure 3's state machine (the front app medium, high for 500 ms after an input,
//! every other app low), §3.2.2's thread allocation (a medium or high thread to the core with
//! the least total sensitivity, a low one to the core with the least total workload) and
//! migration every 200 ms (sensitivity balanced first, then workload), §3.2.3's DPM (how many
//! of the active cluster's cores its threads may use) and cluster switching (which cluster).
//! This module only translates: lulld's facts into UCSG's events, UCSG's slots into CPUs.
//!
//! | facts map (lulld) | UCSG event |
//! | --- | --- |
//! | a thread's first record | `thread_forked`, owner the thread's process (an app) |
//! | its record gone | `thread_exited` |
//! | the process of a thread in class front changes | `foreground` (none in front: [`NO_APP`]) |
//! | a front thread's `input_ns` moves | `touch` |
//! | the 200 ms period ends | `sample` (each thread's CPU time over it) |
//! | otherwise | `expire` (the 500 ms timer) |
//!
//! | UCSG decision | lull-scx |
//! | --- | --- |
//! | `Place` | the thread runs only on that slot's CPU of the active cluster |
//! | `Online` | DPM through placement: UCSG places its threads on slots below the count |
//! | `Cluster` | every placed thread moves to the new cluster's CPU of the same slot |
//! | `Frequency` | remembered as the level the next sample's cycles are counted at (no cpufreq is set) |
//! | `Nice` | none: the BPF side already weighs a front thread as medium, high within the hold, a thread behind as low (`tables.rs`) |

use std::collections::BTreeMap;
use std::fmt;

use lull_sched::ucsg::live::{start_at_top, LiveMachine, Running, UcsgLiveError, NO_APP};
use lull_sched::ucsg::{Decision, Owner, Sensitivity, ThreadUse, Ucsg};
use lull_sched::CpuId;

/// `enum lull_class`'s front (`lull_sched::guis::WindowClass::Front.code()`).
const CLASS_FRONT: u32 = 1;

/// The machine's CPUs in clusters, slowest first: UCSG's LITTLE and big (seed 001 §2.1), or one
/// cluster on a machine of equal CPUs.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct CpuSets {
    clusters: Vec<Vec<u32>>,
}

/// Why a CPU-set description is refused.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum CpuSetsError {
    /// Not a list like `0`, `0-1`, `0,2-3`, clusters separated by `/`.
    Syntax(String),
    /// More than two clusters: UCSG switches between a LITTLE and a big one.
    TooManyClusters(usize),
    /// A CPU named twice.
    Repeated(u32),
    /// A CPU the machine does not have.
    NoSuchCpu { cpu: u32, cpus: u32 },
    /// A cluster without CPUs.
    Empty,
}

impl fmt::Display for CpuSetsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuSetsError::Syntax(s) => write!(
                f,
                "{s:?} is not a CPU list (e.g. 0-1, or LITTLE/big as 0/1 or 0-3/4-7)"
            ),
            CpuSetsError::TooManyClusters(n) => write!(
                f,
                "{n} clusters given; UCSG has one cluster or two (LITTLE/big)"
            ),
            CpuSetsError::Repeated(c) => write!(f, "CPU {c} is named twice"),
            CpuSetsError::NoSuchCpu { cpu, cpus } => {
                write!(
                    f,
                    "CPU {cpu} does not exist (this machine has CPUs 0-{})",
                    cpus - 1
                )
            }
            CpuSetsError::Empty => f.write_str("a cluster lists no CPU"),
        }
    }
}

impl std::error::Error for CpuSetsError {}

impl CpuSets {
    /// Parses `LIST[/LIST]` (LITTLE first, then big) for a machine of `cpus` CPUs.
    ///
    /// # Errors
    /// [`CpuSetsError`] naming what is wrong.
    pub fn parse(text: &str, cpus: u32) -> Result<CpuSets, CpuSetsError> {
        let syntax = || CpuSetsError::Syntax(text.to_string());
        let mut clusters = Vec::new();
        let mut seen = Vec::new();
        for part in text.split('/') {
            let mut cluster = Vec::new();
            for item in part.split(',').map(str::trim) {
                if item.is_empty() {
                    return Err(CpuSetsError::Empty);
                }
                let (a, b) = match item.split_once('-') {
                    Some((a, b)) => (a, b),
                    None => (item, item),
                };
                let a: u32 = a.trim().parse().map_err(|_| syntax())?;
                let b: u32 = b.trim().parse().map_err(|_| syntax())?;
                if a > b {
                    return Err(syntax());
                }
                for cpu in a..=b {
                    if cpu >= cpus {
                        return Err(CpuSetsError::NoSuchCpu { cpu, cpus });
                    }
                    if seen.contains(&cpu) {
                        return Err(CpuSetsError::Repeated(cpu));
                    }
                    seen.push(cpu);
                    cluster.push(cpu);
                }
            }
            clusters.push(cluster);
        }
        if clusters.len() > 2 {
            return Err(CpuSetsError::TooManyClusters(clusters.len()));
        }
        Ok(CpuSets { clusters })
    }

    /// The clusters from each CPU's `cpu_capacity` (the kernel's, where it offers one): CPUs of
    /// the lowest capacity are LITTLE, of the highest big. Equal capacities, or none known,
    /// make one cluster of every CPU: a symmetric machine has no big.LITTLE to switch between.
    #[must_use]
    pub fn from_capacities(capacity: &[Option<u32>]) -> CpuSets {
        let all: Vec<u32> = (0..capacity.len() as u32).collect();
        let known: Vec<u32> = capacity.iter().flatten().copied().collect();
        let (Some(&lo), Some(&hi)) = (known.iter().min(), known.iter().max()) else {
            return CpuSets {
                clusters: vec![all],
            };
        };
        if lo == hi || known.len() != capacity.len() {
            return CpuSets {
                clusters: vec![all],
            };
        }
        let with = |c: u32| -> Vec<u32> {
            all.iter()
                .copied()
                .filter(|&i| capacity[i as usize] == Some(c))
                .collect()
        };
        CpuSets {
            clusters: vec![with(lo), with(hi)],
        }
    }

    /// The clusters, slowest first.
    #[must_use]
    pub fn clusters(&self) -> &[Vec<u32>] {
        &self.clusters
    }
}

impl fmt::Display for CpuSets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self
            .clusters
            .iter()
            .map(|c| c.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
            .collect();
        f.write_str(&names.join("/"))
    }
}

/// One thread as the facts map and `/proc` describe it at an observation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ThreadFact {
    pub tid: u32,
    /// Its process: UCSG's app (seed 001 §3.1.2: all threads of an app share its state).
    pub tgid: u32,
    /// `enum lull_class`.
    pub class: u32,
    /// `CLOCK_MONOTONIC` time of the latest input pushed to it (0: none).
    pub input_ns: u64,
    /// Its CPU time so far (`/proc/TID/schedstat`).
    pub cpu_ns: u64,
}

/// Counts for reports.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct UcsgCounters {
    /// Threads UCSG was told of.
    pub threads: u64,
    pub samples: u64,
    pub touches: u64,
    /// `Place` decisions (allocation at fork, migration, re-homing after DPM).
    pub placements: u64,
    pub online_changes: u64,
    pub cluster_switches: u64,
    /// Front-app changes told to UCSG.
    pub foreground_changes: u64,
}

#[derive(Clone, Copy, Debug)]
struct Known {
    slot: usize,
    /// CPU time at the last sample (or when first seen).
    cpu_ns: u64,
    /// When it was first seen, if after the last sample: its runtime over the part of the
    /// period it was known is scaled to the whole period (a thread seen 10 ms before a sample
    /// would otherwise count as all but idle, and DPM would turn cores off under it).
    seen_ns: Option<u64>,
}

/// UCSG driven by lull-scx's facts; see the module docs.
#[derive(Debug)]
pub struct UcsgPlacer {
    core: Ucsg<u32>,
    clusters: Vec<Vec<u32>>,
    running: Running,
    threads: BTreeMap<u32, Known>,
    front: Option<u32>,
    latest_input_ns: u64,
    /// When the last period ended (or UCSG started).
    last_sample_ns: u64,
    decisions: Vec<Decision<u32>>,
    counters: UcsgCounters,
}

impl UcsgPlacer {
    /// UCSG on `sets` from `now_ns`, as lulld's live host starts it: on the fastest cluster,
    /// every core of it on, at its top level.
    ///
    /// # Errors
    /// [`UcsgLiveError`] when UCSG's configuration for these clusters does not validate.
    pub fn new(sets: &CpuSets, now_ns: u64) -> Result<UcsgPlacer, UcsgLiveError> {
        let machine = LiveMachine {
            clusters: sets
                .clusters
                .iter()
                .map(|c| c.iter().map(|&i| CpuId(i as usize)).collect())
                .collect(),
            levels_khz: Vec::new(),
        };
        let (core, running) = start_at_top(&machine, now_ns)?;
        Ok(UcsgPlacer {
            core,
            clusters: sets.clusters.clone(),
            running,
            threads: BTreeMap::new(),
            front: None,
            latest_input_ns: 0,
            last_sample_ns: now_ns,
            decisions: Vec::new(),
            counters: UcsgCounters::default(),
        })
    }

    /// When [`UcsgPlacer::observe`] next has something to do (the period's end or the expiry).
    #[must_use]
    pub fn next_deadline_ns(&self) -> u64 {
        self.core.next_deadline_ns()
    }

    /// Tells UCSG the facts as they stand at `now_ns` (every thread in lulld's facts map), then
    /// runs its period if it has ended, else its 500 ms expiry.
    pub fn observe(&mut self, now_ns: u64, facts: &[ThreadFact]) {
        let mut facts = facts.to_vec();
        facts.sort_by_key(|f| f.tid);
        facts.dedup_by_key(|f| f.tid);
        // Exits first, so a departed thread's slot counts no more.
        let gone: Vec<u32> = self
            .threads
            .keys()
            .copied()
            .filter(|t| facts.binary_search_by_key(t, |f| f.tid).is_err())
            .collect();
        for t in gone {
            self.threads.remove(&t);
            self.core.thread_exited(t);
        }
        // The front app: the process of a thread in class front (guiS's classes are per app).
        let front = facts
            .iter()
            .find(|f| f.class == CLASS_FRONT)
            .map(|f| f.tgid);
        if front != self.front {
            self.front = front;
            self.counters.foreground_changes += 1;
            self.core
                .foreground(front.unwrap_or(NO_APP), &mut self.decisions);
        }
        for f in &facts {
            if !self.threads.contains_key(&f.tid) {
                self.counters.threads += 1;
                // Its CPU time before it was seen is not this period's.
                self.threads.insert(
                    f.tid,
                    Known {
                        slot: 0,
                        cpu_ns: f.cpu_ns,
                        seen_ns: Some(now_ns),
                    },
                );
                self.core
                    .thread_forked(None, f.tid, Some(Owner::App(f.tgid)), &mut self.decisions);
            }
        }
        let input = facts
            .iter()
            .filter(|f| f.class == CLASS_FRONT)
            .map(|f| f.input_ns)
            .max()
            .unwrap_or(0);
        if input > self.latest_input_ns {
            self.latest_input_ns = input;
            self.counters.touches += 1;
            self.core.touch(input, &mut self.decisions);
        }
        if now_ns >= self.core.next_sample_ns() {
            self.sample(now_ns, &facts);
        } else {
            self.core.expire(now_ns, &mut self.decisions);
        }
        self.apply();
    }

    fn sample(&mut self, now_ns: u64, facts: &[ThreadFact]) {
        let mut uses = Vec::new();
        let period_ns = now_ns.saturating_sub(self.last_sample_ns);
        for f in facts {
            if let Some(k) = self.threads.get_mut(&f.tid) {
                let mut runtime_ns = f.cpu_ns.saturating_sub(k.cpu_ns);
                if let Some(seen) = k.seen_ns.take() {
                    let known_ns = now_ns.saturating_sub(seen).max(1);
                    if known_ns < period_ns {
                        runtime_ns = u64::try_from(
                            u128::from(runtime_ns) * u128::from(period_ns) / u128::from(known_ns),
                        )
                        .unwrap_or(u64::MAX)
                        .min(period_ns);
                    }
                }
                uses.push(ThreadUse {
                    thread: f.tid,
                    runtime_ns,
                });
                k.cpu_ns = f.cpu_ns;
            }
        }
        self.last_sample_ns = now_ns;
        self.counters.samples += 1;
        self.core
            .sample(now_ns, &self.running.view(&uses), &mut self.decisions);
    }

    fn apply(&mut self) {
        for d in std::mem::take(&mut self.decisions) {
            match d {
                Decision::Place { thread, slot } => {
                    if let Some(k) = self.threads.get_mut(&thread) {
                        k.slot = slot;
                        self.counters.placements += 1;
                    }
                }
                Decision::Online { cores } => {
                    self.running.online = cores;
                    self.counters.online_changes += 1;
                }
                Decision::Cluster { cluster } => {
                    if cluster < self.clusters.len() && cluster != self.running.cluster {
                        self.running.cluster = cluster;
                        self.counters.cluster_switches += 1;
                    }
                }
                Decision::Frequency { khz } => self.running.freq_khz = khz,
                Decision::Nice { .. } => {}
            }
        }
    }

    /// Where each thread UCSG manages may run: its slot's CPU in the active cluster.
    #[must_use]
    pub fn placement(&self) -> BTreeMap<u32, u32> {
        let cpus = &self.clusters[self.running.cluster];
        self.threads
            .iter()
            .filter_map(|(&t, k)| cpus.get(k.slot).map(|&c| (t, c)))
            .collect()
    }

    /// A managed thread's sensitivity state.
    #[must_use]
    pub fn sensitivity(&self, tid: u32) -> Option<Sensitivity> {
        self.core.sensitivity(tid)
    }

    /// The active cluster (an index into [`CpuSets::clusters`]).
    #[must_use]
    pub fn cluster(&self) -> usize {
        self.running.cluster
    }

    #[must_use]
    pub fn counters(&self) -> UcsgCounters {
        self.counters
    }
}

#[cfg(test)]
mod tests;
