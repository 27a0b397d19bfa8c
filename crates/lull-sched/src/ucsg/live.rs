//! UCSG on the live seam: [`UcsgSeam`] is a [`SeamPolicy`] over the pure [`Ucsg`] core, keyed by
//! the daemon's [`ThreadRef`]s.
//!
//! | seam fact | UCSG event |
//! | --- | --- |
//! | `ThreadDeclared` (an app's thread) | `thread_forked` with the app as owner; the thread's process is the app's from then on |
//! | `Forked` | `thread_forked` when the new task's process is an app's or an adopted one, or its parent's process is (a `gzip` an app spawns is that app's); anything else is left alone |
//! | `Adopted` (a configured system process) | `thread_forked`, owner the system |
//! | `InputPushed` | `touch` |
//! | `WindowChanged` | `foreground` when the app comes to the front (and "no app" when the front app goes behind with none after it); `display` when the screen turns on or off |
//! | `Exited`, `AppGone` | `thread_exited`, and the thread's actions are released |
//! | the deadline | `sample` when the sampling period has ended, else `expire` (the 500 ms timer) |
//!
//! | UCSG decision | seam actions |
//! | --- | --- |
//! | `Nice` | `Nice` (`setpriority`) |
//! | `Place` | `Affinity` to the slot's CPU of the active cluster |
//! | `Online` | none of its own: real hotplug is not done live. DPM still acts, through placement: every thread UCSG manages is pinned to a slot below the count, so its threads keep to that many CPUs, while threads nobody manages may use every CPU |
//! | `Frequency` | `Frequency` on each CPU of the active cluster (cpufreq; unavailable without it) |
//! | `Cluster` | on a big.LITTLE machine every managed thread's mask moves to the new cluster's CPUs slot for slot; on a machine of one cluster there is nothing to switch to (counted, never asked: its configuration has one cluster) |
//!
//! **Sampling.** At the end of each period the substrate's answer for every managed thread (its
//! CPU time since it started) less the answer of the period before is the thread's runtime in
//! the period; a thread first sampled counts 0 ns (its earlier CPU time is not the period's). The
//! frequency in the sample is the level UCSG last chose — on a machine without cpufreq that is
//! what it believes, not what ran, and its cycle estimates are in those units.

use std::collections::BTreeMap;

use lull_model::{AppId, Screen, Stacking};

use crate::ids::CpuId;
use crate::seam::{Action, CpuMask, Fact, SeamPolicy, ThreadRef, ThreadSample};
use crate::ucsg::config::{UcsgConfig, UcsgConfigError, GALAXY_S4_BIG_KHZ};
use crate::ucsg::{Decision, Owner, SampleView, Start, ThreadUse, Ucsg};

/// The app key UCSG is told is in front when the front app goes behind and no other comes
/// forward: a key no app has, so every app is behind (low).
pub const NO_APP: u32 = u32::MAX;

/// The machine as the daemon found it: its CPUs in clusters, slowest first, and each cluster's
/// cpufreq levels (empty without cpufreq).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct LiveMachine {
    pub clusters: Vec<Vec<CpuId>>,
    pub levels_khz: Vec<Vec<u64>>,
}

/// Why UCSG cannot run live as configured.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum UcsgLiveError {
    /// The machine description has no CPU.
    NoCpus,
    /// The configuration built for the machine is not valid.
    Config(UcsgConfigError),
}

impl std::fmt::Display for UcsgLiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UcsgLiveError::NoCpus => f.write_str("the machine description lists no CPU"),
            UcsgLiveError::Config(e) => write!(f, "UCSG configuration: {e}"),
        }
    }
}

impl std::error::Error for UcsgLiveError {}

impl LiveMachine {
    /// UCSG's configuration for this machine: the seed's tunables (§3.2) on its clusters.
    ///
    /// One cluster: [`UcsgConfig::one_cluster`] at its cpufreq levels, or — without cpufreq —
    /// at the seed's big-cluster levels (Table I), which the policy then reasons in while its
    /// frequency actions are reported unavailable. Two or more: the Galaxy S4's configuration
    /// with the slowest cluster as LITTLE and the fastest as big, their core counts and (when
    /// cpufreq lists them) levels taken from the machine.
    ///
    /// # Errors
    /// [`UcsgLiveError`] for a machine without CPUs or a configuration that does not validate.
    pub fn config(&self) -> Result<UcsgConfig, UcsgLiveError> {
        let nonempty: Vec<usize> = (0..self.clusters.len())
            .filter(|&i| !self.clusters[i].is_empty())
            .collect();
        let (Some(&first), Some(&last)) = (nonempty.first(), nonempty.last()) else {
            return Err(UcsgLiveError::NoCpus);
        };
        let levels = |i: usize, fallback: &[u64]| {
            self.levels_khz
                .get(i)
                .filter(|l| !l.is_empty())
                .cloned()
                .unwrap_or_else(|| fallback.to_vec())
        };
        let cfg = if first == last {
            UcsgConfig::one_cluster(
                self.clusters[first].len(),
                levels(first, &GALAXY_S4_BIG_KHZ),
            )
        } else {
            let mut c = UcsgConfig::galaxy_s4();
            for (k, i) in [(0, first), (1, last)] {
                c.clusters[k].cores = self.clusters[i].len();
                let seed = c.clusters[k].levels_khz.clone();
                c.clusters[k].levels_khz = levels(i, &seed);
            }
            c
        };
        cfg.validate().map_err(UcsgLiveError::Config)?;
        Ok(cfg)
    }

    /// The clusters UCSG's configuration numbers: the slowest and fastest (or the one).
    fn ucsg_clusters(&self) -> Vec<Vec<CpuId>> {
        let nonempty: Vec<&Vec<CpuId>> = self.clusters.iter().filter(|c| !c.is_empty()).collect();
        match (nonempty.first(), nonempty.last()) {
            (Some(a), Some(b)) if nonempty.len() > 1 => vec![(*a).clone(), (*b).clone()],
            (Some(a), _) => vec![(*a).clone()],
            _ => Vec::new(),
        }
    }
}

/// Who a process belongs to, for UCSG.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ProcOwner {
    App(AppId),
    /// Adopted by configuration.
    System,
}

#[derive(Clone, Copy, Debug)]
struct Managed {
    /// CPU time at the last sample (`None`: not sampled yet).
    cpu_ns: Option<u64>,
    /// The slot UCSG placed it on.
    slot: usize,
}

/// Counts [`UcsgSeam`] reports beside the actuator's.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct UcsgSeamCounters {
    pub managed_threads: u64,
    pub samples: u64,
    pub touches: u64,
    pub placements: u64,
    /// `Online` decisions (applied through placement only; see the module docs).
    pub online_changes: u64,
    pub frequency_changes: u64,
    pub cluster_switches: u64,
    /// Cluster switches asked on a machine of one cluster.
    pub cluster_unavailable: u64,
    /// Threads found gone at a sample (their exit not yet told).
    pub gone_at_sample: u64,
}

/// UCSG as a seam policy; see the module docs.
#[derive(Debug)]
pub struct UcsgSeam {
    core: Ucsg<ThreadRef>,
    /// The configuration's clusters' CPUs.
    clusters: Vec<Vec<CpuId>>,
    /// UCSG's key per app (`Owner::App`).
    keys: BTreeMap<AppId, u32>,
    next_key: u32,
    /// Processes whose threads UCSG manages, by pid, with their start time.
    procs: BTreeMap<i32, (u64, ProcOwner)>,
    threads: BTreeMap<ThreadRef, Managed>,
    front: Option<AppId>,
    screen_on: bool,
    running: Running,
    decisions: Vec<Decision<ThreadRef>>,
    uses: Vec<ThreadUse<ThreadRef>>,
    counters: UcsgSeamCounters,
}

/// What a live substrate runs at as UCSG's decisions have left it: the machine's part of a
/// [`SampleView`], kept by each live driver of UCSG between sampling periods.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Running {
    /// The active cluster.
    pub cluster: usize,
    /// Cores of the active cluster on.
    pub online: usize,
    pub freq_khz: u64,
}

impl Running {
    /// The view of a sampling period in which `threads` ran.
    #[must_use]
    pub fn view<'a, K>(&self, threads: &'a [ThreadUse<K>]) -> SampleView<'a, K> {
        SampleView {
            cluster: self.cluster,
            online: self.online,
            freq_khz: self.freq_khz,
            threads,
        }
    }
}

/// UCSG's core on `machine` from `now_ns`, started on the fastest cluster with every core of it
/// online, at that cluster's top level: until UCSG chooses a level (and where there is no
/// cpufreq to read) the cluster is taken to run there, as a busy CPU without a policy does.
///
/// # Errors
/// [`UcsgLiveError`] as [`LiveMachine::config`], or UCSG's own refusal of the configuration.
pub fn start_at_top<K: Copy + Ord + std::fmt::Debug>(
    machine: &LiveMachine,
    now_ns: u64,
) -> Result<(Ucsg<K>, Running), UcsgLiveError> {
    let cfg = machine.config()?;
    let cluster = cfg.clusters.len() - 1;
    let c = &cfg.clusters[cluster];
    let start = Start {
        cluster,
        online: c.cores,
    };
    let running = Running {
        cluster,
        online: c.cores,
        freq_khz: c.levels_khz.last().copied().unwrap_or(0),
    };
    let core = Ucsg::new(cfg, now_ns, start).map_err(UcsgLiveError::Config)?;
    Ok((core, running))
}

impl UcsgSeam {
    /// UCSG on `machine` from `now_ns`, starting on the fastest cluster, every core of it, at
    /// its top level (where a machine without a policy runs a busy CPU).
    ///
    /// # Errors
    /// [`UcsgLiveError`] as [`LiveMachine::config`].
    pub fn new(machine: &LiveMachine, now_ns: u64) -> Result<UcsgSeam, UcsgLiveError> {
        let (core, running) = start_at_top(machine, now_ns)?;
        Ok(UcsgSeam {
            core,
            clusters: machine.ucsg_clusters(),
            keys: BTreeMap::new(),
            next_key: 0,
            procs: BTreeMap::new(),
            threads: BTreeMap::new(),
            front: None,
            screen_on: true,
            running,
            decisions: Vec::new(),
            uses: Vec::new(),
            counters: UcsgSeamCounters::default(),
        })
    }

    /// The pure core (for reports and tests).
    #[must_use]
    pub fn core(&self) -> &Ucsg<ThreadRef> {
        &self.core
    }

    #[must_use]
    pub fn seam_counters(&self) -> UcsgSeamCounters {
        self.counters
    }

    /// Whether UCSG manages `thread`.
    #[must_use]
    pub fn manages(&self, thread: ThreadRef) -> bool {
        self.threads.contains_key(&thread)
    }

    fn key(&mut self, app: AppId) -> u32 {
        if let Some(&k) = self.keys.get(&app) {
            return k;
        }
        let k = self.next_key;
        // Keys below NO_APP; 2^32 − 1 apps in one daemon's life is not a case.
        self.next_key = self.next_key.saturating_add(1).min(NO_APP - 1);
        self.keys.insert(app, k);
        k
    }

    /// The owner of process `pid` (started at `start_ticks`), if UCSG manages it.
    fn proc_owner(&self, pid: i32, start_ticks: u64) -> Option<ProcOwner> {
        self.procs
            .get(&pid)
            .filter(|(s, _)| *s == start_ticks)
            .map(|&(_, o)| o)
    }

    fn owner_of(&mut self, o: ProcOwner) -> Owner {
        match o {
            ProcOwner::App(app) => Owner::App(self.key(app)),
            ProcOwner::System => Owner::System,
        }
    }

    fn track(&mut self, parent: Option<ThreadRef>, child: ThreadRef, owner: Owner) {
        let parent = parent.filter(|p| self.threads.contains_key(p));
        if !self.threads.contains_key(&child) {
            self.counters.managed_threads += 1;
            self.threads.insert(
                child,
                Managed {
                    cpu_ns: None,
                    slot: 0,
                },
            );
        }
        self.core
            .thread_forked(parent, child, Some(owner), &mut self.decisions);
    }

    fn forget(&mut self, thread: ThreadRef, out: &mut Vec<Action>) {
        if self.threads.remove(&thread).is_some() {
            self.core.thread_exited(thread);
            out.push(Action::Release { thread });
        }
    }

    fn cpu_of(&self, cluster: usize, slot: usize) -> Option<CpuId> {
        self.clusters.get(cluster)?.get(slot).copied()
    }

    /// Turns the decisions taken so far into actions.
    fn translate(&mut self, out: &mut Vec<Action>) {
        for d in std::mem::take(&mut self.decisions) {
            match d {
                Decision::Nice { thread, nice } => out.push(Action::Nice { thread, nice }),
                Decision::Place { thread, slot } => {
                    self.counters.placements += 1;
                    if let Some(m) = self.threads.get_mut(&thread) {
                        m.slot = slot;
                    }
                    if let Some(cpu) = self.cpu_of(self.running.cluster, slot) {
                        out.push(Action::Affinity {
                            thread,
                            cpus: CpuMask::of(&[cpu]),
                        });
                    }
                }
                Decision::Online { cores } => {
                    self.counters.online_changes += 1;
                    self.running.online = cores;
                }
                Decision::Frequency { khz } => {
                    if khz != self.running.freq_khz {
                        self.counters.frequency_changes += 1;
                    }
                    self.running.freq_khz = khz;
                    for &cpu in self
                        .clusters
                        .get(self.running.cluster)
                        .into_iter()
                        .flatten()
                    {
                        out.push(Action::Frequency { cpu, khz });
                    }
                }
                Decision::Cluster { cluster } => {
                    if self.clusters.len() < 2 || cluster >= self.clusters.len() {
                        self.counters.cluster_unavailable += 1;
                        continue;
                    }
                    self.counters.cluster_switches += 1;
                    self.running.cluster = cluster;
                    for (&thread, m) in &self.threads {
                        if let Some(cpu) = self.clusters[cluster].get(m.slot) {
                            out.push(Action::Affinity {
                                thread,
                                cpus: CpuMask::of(&[*cpu]),
                            });
                        }
                    }
                }
            }
        }
    }

    fn sample(
        &mut self,
        now_ns: u64,
        usage: &mut dyn FnMut(ThreadRef) -> Option<ThreadSample>,
        out: &mut Vec<Action>,
    ) {
        self.counters.samples += 1;
        let mut uses = std::mem::take(&mut self.uses);
        uses.clear();
        let mut gone = Vec::new();
        for (&thread, m) in &mut self.threads {
            match usage(thread) {
                Some(s) => {
                    let ran = m.cpu_ns.map_or(0, |before| s.cpu_ns.saturating_sub(before));
                    m.cpu_ns = Some(s.cpu_ns);
                    if ran > 0 {
                        uses.push(ThreadUse {
                            thread,
                            runtime_ns: ran,
                        });
                    }
                }
                None => gone.push(thread),
            }
        }
        for t in gone {
            self.counters.gone_at_sample += 1;
            self.forget(t, out);
        }
        self.core
            .sample(now_ns, &self.running.view(&uses), &mut self.decisions);
        self.uses = uses;
    }
}

impl SeamPolicy for UcsgSeam {
    fn name(&self) -> &'static str {
        "ucsg"
    }

    fn wants_process_facts(&self) -> bool {
        true
    }

    fn on_fact(&mut self, now_ns: u64, fact: &Fact, out: &mut Vec<Action>) {
        match *fact {
            Fact::ThreadDeclared { app, thread, .. } => {
                self.procs.insert(
                    thread.pid,
                    (thread.process_start_ticks, ProcOwner::App(app)),
                );
                let owner = Owner::App(self.key(app));
                self.track(None, thread, owner);
            }
            Fact::Forked { parent, child } => {
                let owner = self
                    .proc_owner(child.pid, child.process_start_ticks)
                    .or_else(|| self.proc_owner(parent.pid, parent.process_start_ticks));
                if let Some(o) = owner {
                    if child.pid == child.tid {
                        self.procs.insert(child.pid, (child.process_start_ticks, o));
                    }
                    let owner = self.owner_of(o);
                    self.track(Some(parent), child, owner);
                }
            }
            Fact::Adopted { thread } => {
                self.procs
                    .insert(thread.pid, (thread.process_start_ticks, ProcOwner::System));
                self.track(None, thread, Owner::System);
            }
            Fact::InputPushed { .. } => {
                self.counters.touches += 1;
                self.core.touch(now_ns, &mut self.decisions);
            }
            Fact::WindowChanged { app, window } => {
                let on = window.screen == Screen::On;
                if on != self.screen_on {
                    self.screen_on = on;
                    self.core.display(on, &mut self.decisions);
                }
                if window.stacking == Stacking::Foreground && self.front != Some(app) {
                    self.front = Some(app);
                    let k = self.key(app);
                    self.core.foreground(k, &mut self.decisions);
                } else if window.stacking != Stacking::Foreground && self.front == Some(app) {
                    self.front = None;
                    self.core.foreground(NO_APP, &mut self.decisions);
                }
            }
            Fact::Exited { thread } => {
                self.forget(thread, out);
                if thread.pid == thread.tid
                    && self
                        .proc_owner(thread.pid, thread.process_start_ticks)
                        .is_some()
                {
                    self.procs.remove(&thread.pid);
                }
            }
            Fact::AppGone { app } => {
                let pids: Vec<i32> = self
                    .procs
                    .iter()
                    .filter(|(_, (_, o))| *o == ProcOwner::App(app))
                    .map(|(&p, _)| p)
                    .collect();
                let threads: Vec<ThreadRef> = self
                    .threads
                    .keys()
                    .filter(|t| pids.contains(&t.pid))
                    .copied()
                    .collect();
                for t in threads {
                    self.forget(t, out);
                }
                for p in pids {
                    self.procs.remove(&p);
                }
                self.keys.remove(&app);
                if self.front == Some(app) {
                    self.front = None;
                }
            }
            Fact::HandlerFinished { .. } | Fact::RunQueues { .. } => {}
        }
        self.translate(out);
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = self.counters;
        let s = self.core.stats();
        vec![
            ("managed_threads", c.managed_threads),
            ("samples", c.samples),
            ("touches", c.touches),
            ("placements", c.placements),
            ("migrations", s.migrations),
            ("online_changes", c.online_changes),
            ("frequency_changes", c.frequency_changes),
            ("half_scalings", s.half_scalings),
            ("cluster_switches", c.cluster_switches),
            ("cluster_unavailable", c.cluster_unavailable),
            ("reprioritized", s.reprioritized),
            ("gone_at_sample", c.gone_at_sample),
        ]
    }

    /// Nothing managed, no timer: the daemon sleeps until a fact.
    fn next_deadline_ns(&self) -> Option<u64> {
        (!self.threads.is_empty()).then(|| self.core.next_deadline_ns())
    }

    fn on_deadline(
        &mut self,
        now_ns: u64,
        usage: &mut dyn FnMut(ThreadRef) -> Option<ThreadSample>,
        out: &mut Vec<Action>,
    ) {
        if now_ns >= self.core.next_sample_ns() {
            self.sample(now_ns, usage, out);
        } else {
            self.core.expire(now_ns, &mut self.decisions);
        }
        self.translate(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_model::{ThreadCategory, Visibility, WindowState};

    fn machine(clusters: &[&[usize]]) -> LiveMachine {
        LiveMachine {
            clusters: clusters
                .iter()
                .map(|c| c.iter().map(|&i| CpuId(i)).collect())
                .collect(),
            levels_khz: vec![Vec::new(); clusters.len()],
        }
    }

    fn t(pid: i32, tid: i32) -> ThreadRef {
        ThreadRef {
            pid,
            tid,
            process_start_ticks: 7,
        }
    }

    fn app(i: u32) -> AppId {
        AppId {
            index: i,
            generation: 0,
        }
    }

    fn window(front: bool) -> WindowState {
        WindowState {
            stacking: if front {
                Stacking::Foreground
            } else {
                Stacking::Background
            },
            visibility: Visibility::Visible,
            screen: Screen::On,
        }
    }

    fn fact(u: &mut UcsgSeam, now: u64, f: Fact) -> Vec<Action> {
        let mut out = Vec::new();
        u.on_fact(now, &f, &mut out);
        out
    }

    fn window_changed(u: &mut UcsgSeam, now: u64, app: AppId, window: WindowState) -> Vec<Action> {
        fact(u, now, Fact::WindowChanged { app, window })
    }

    fn forked(u: &mut UcsgSeam, now: u64, parent: ThreadRef, child: ThreadRef) -> Vec<Action> {
        fact(u, now, Fact::Forked { parent, child })
    }

    fn nice_of(out: &[Action], thread: ThreadRef) -> Option<i8> {
        out.iter().rev().find_map(|a| match *a {
            Action::Nice { thread: x, nice } if x == thread => Some(nice),
            _ => None,
        })
    }

    fn declare(u: &mut UcsgSeam, a: AppId, th: ThreadRef) -> Vec<Action> {
        fact(
            u,
            0,
            Fact::ThreadDeclared {
                app: a,
                thread: th,
                category: ThreadCategory::Event,
            },
        )
    }

    /// Two apps: `front` (pid 100) in front, `back` (pid 200) behind.
    fn two_apps() -> (UcsgSeam, ThreadRef, ThreadRef) {
        let mut u = UcsgSeam::new(&machine(&[&[0, 1]]), 0).unwrap();
        let (f, b) = (t(100, 100), t(200, 201));
        window_changed(&mut u, 0, app(2), window(true));
        window_changed(&mut u, 0, app(1), window(true));
        window_changed(&mut u, 0, app(2), window(false));
        declare(&mut u, app(1), f);
        declare(&mut u, app(2), b);
        (u, f, b)
    }

    #[test]
    fn declared_threads_get_their_app_state_and_a_cpu() {
        let mut u = UcsgSeam::new(&machine(&[&[0, 1]]), 0).unwrap();
        window_changed(&mut u, 0, app(1), window(true));
        let th = t(100, 101);
        let out = declare(&mut u, app(1), th);
        // §3.2.2 fn 7: the front app is medium, nice −10; allocation pins it to one CPU.
        assert_eq!(nice_of(&out, th), Some(-10));
        assert!(out.iter().any(|a| matches!(*a,
            Action::Affinity { thread, cpus } if thread == th && cpus.cpus().count() == 1)));
        assert!(u.manages(th));
    }

    #[test]
    fn a_touch_raises_the_front_app_and_the_clock() {
        let (mut u, f, b) = two_apps();
        let out = fact(&mut u, 1_000, Fact::InputPushed { app: app(1) });
        assert_eq!(nice_of(&out, f), Some(-20));
        assert_eq!(nice_of(&out, b), None, "the background app stays low");
        // The top level on every CPU of the cluster (no cpufreq: the seed's big levels).
        let top = *GALAXY_S4_BIG_KHZ.last().unwrap();
        let freqs: Vec<_> = out
            .iter()
            .filter_map(|a| match *a {
                Action::Frequency { cpu, khz } => Some((cpu, khz)),
                _ => None,
            })
            .collect();
        assert_eq!(freqs, vec![(CpuId(0), top), (CpuId(1), top)]);
        // 500 ms later (a sampling period, which runs the expiry first) it is medium again.
        assert_eq!(u.next_deadline_ns(), Some(200_000_000));
        let mut out = Vec::new();
        let idle = &mut |_| {
            Some(ThreadSample {
                cpu_ns: 0,
                work_ns: 0,
                cpu: CpuId(0),
            })
        };
        u.on_deadline(200_000_000, idle, &mut out);
        assert_eq!(nice_of(&out, f), None, "still high at 200 ms");
        u.on_deadline(400_000_000, idle, &mut out);
        // Between periods the 500 ms timer is the deadline.
        assert_eq!(u.next_deadline_ns(), Some(500_001_000));
        u.on_deadline(500_001_000, idle, &mut out);
        assert_eq!(nice_of(&out, f), Some(-10), "{out:?}");
    }

    #[test]
    fn a_process_an_app_forks_is_the_apps() {
        let (mut u, _, b) = two_apps();
        // The background app's thread spawns gzip: low, nice 10.
        let gzip = t(300, 300);
        let out = forked(&mut u, 5, b, gzip);
        assert_eq!(nice_of(&out, gzip), Some(10));
        // A thread of gzip is gzip's app's too, and so are its children.
        let thr = t(300, 301);
        let out = forked(&mut u, 6, gzip, thr);
        assert_eq!(nice_of(&out, thr), Some(10));
        // A process of nobody's forking is left alone.
        let out = forked(&mut u, 7, t(1, 1), t(400, 400));
        assert!(out.is_empty());
        assert!(!u.manages(t(400, 400)));
        // The same pid with another start time is another process: not the app's.
        let later = ThreadRef {
            process_start_ticks: 8,
            ..t(300, 302)
        };
        let out = forked(&mut u, 8, t(1, 1), later);
        assert!(out.is_empty());
    }

    #[test]
    fn exits_and_departures_release() {
        let (mut u, f, b) = two_apps();
        let child = t(250, 250);
        forked(&mut u, 1, b, child);
        let out = fact(&mut u, 2, Fact::Exited { thread: f });
        assert_eq!(out, vec![Action::Release { thread: f }]);
        let out = fact(&mut u, 3, Fact::AppGone { app: app(2) });
        assert!(out.contains(&Action::Release { thread: b }));
        assert!(out.contains(&Action::Release { thread: child }));
        assert!(!u.manages(b) && !u.manages(child));
        // Nothing managed: no timer.
        assert_eq!(u.next_deadline_ns(), None);
        assert!(fact(&mut u, 4, Fact::Exited { thread: b }).is_empty());
    }

    #[test]
    fn adopted_system_processes_are_medium() {
        let mut u = UcsgSeam::new(&machine(&[&[0, 1]]), 0).unwrap();
        let sys = t(50, 50);
        let out = fact(&mut u, 0, Fact::Adopted { thread: sys });
        assert_eq!(nice_of(&out, sys), Some(-10));
    }

    #[test]
    fn sampling_reads_usage_and_drops_the_gone() {
        let (mut u, f, b) = two_apps();
        let at = u.next_deadline_ns().unwrap();
        assert_eq!(at, 200_000_000, "§3.2.2 fn 9: the 200 ms period");
        let mut asked = Vec::new();
        let mut out = Vec::new();
        let mut cpu_ns = 0;
        u.on_deadline(
            at,
            &mut |th| {
                asked.push(th);
                cpu_ns += 10_000_000;
                (th == f).then_some(ThreadSample {
                    cpu_ns,
                    work_ns: cpu_ns,
                    cpu: CpuId(0),
                })
            },
            &mut out,
        );
        asked.sort();
        assert_eq!(asked, {
            let mut v = vec![f, b];
            v.sort();
            v
        });
        assert!(out.contains(&Action::Release { thread: b }));
        assert_eq!(u.seam_counters().gone_at_sample, 1);
        assert_eq!(u.seam_counters().samples, 1);
        assert!(u.next_deadline_ns().unwrap() >= at + 200_000_000);
    }

    #[test]
    fn cluster_switches_move_masks_only_on_big_little() {
        let m = machine(&[&[2, 3], &[0, 1]]);
        let mut u = UcsgSeam::new(&m, 0).unwrap();
        window_changed(&mut u, 0, app(1), window(true));
        let th = t(100, 100);
        declare(&mut u, app(1), th);
        let slot = u.threads[&th].slot;
        u.decisions.push(Decision::Cluster { cluster: 0 });
        let mut out = Vec::new();
        u.translate(&mut out);
        assert_eq!(
            out,
            vec![Action::Affinity {
                thread: th,
                cpus: CpuMask::of(&[CpuId(2 + slot)])
            }]
        );
        assert_eq!(u.seam_counters().cluster_switches, 1);
        let mut one = UcsgSeam::new(&machine(&[&[0, 1]]), 0).unwrap();
        one.decisions.push(Decision::Cluster { cluster: 1 });
        let mut out = Vec::new();
        one.translate(&mut out);
        assert!(out.is_empty());
        assert_eq!(one.seam_counters().cluster_unavailable, 1);
        // Not even its own cluster: a one-cluster machine never switches.
        one.decisions.push(Decision::Cluster { cluster: 0 });
        let mut out = Vec::new();
        one.translate(&mut out);
        assert!(out.is_empty());
        assert_eq!(one.seam_counters().cluster_unavailable, 2);
        assert_eq!(one.seam_counters().cluster_switches, 0);
        // On big.LITTLE, a cluster the machine lacks.
        let mut two = UcsgSeam::new(&machine(&[&[2, 3], &[0, 1]]), 0).unwrap();
        two.decisions.push(Decision::Cluster { cluster: 2 });
        let mut out = Vec::new();
        two.translate(&mut out);
        assert!(out.is_empty());
        assert_eq!(two.seam_counters().cluster_unavailable, 1);
        assert_eq!(two.seam_counters().cluster_switches, 0);
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert_eq!(
            UcsgLiveError::NoCpus.to_string(),
            "the machine description lists no CPU"
        );
        let e = UcsgLiveError::Config(UcsgConfigError::NoClusters);
        assert!(e.to_string().starts_with("UCSG configuration: "), "{e}");
        assert!(e.to_string().len() > "UCSG configuration: ".len(), "{e}");
    }

    #[test]
    fn the_policy_names_itself_and_asks_for_process_facts() {
        let u = UcsgSeam::new(&machine(&[&[0, 1]]), 0).unwrap();
        assert_eq!(u.name(), "ucsg");
        // Inheritance at fork and release at exit need the process facts.
        assert!(u.wants_process_facts());
    }

    #[test]
    fn counters_count_threads_placements_touches_and_changes() {
        let (mut u, _, _) = two_apps();
        assert_eq!(u.seam_counters().managed_threads, 2);
        // Allocation placed each declared thread once.
        assert_eq!(u.seam_counters().placements, 2);
        fact(&mut u, 1_000, Fact::InputPushed { app: app(1) });
        assert_eq!(u.seam_counters().touches, 1);
        assert!(u.counters().contains(&("managed_threads", 2)));
        assert!(u.counters().contains(&("touches", 1)));
    }

    #[test]
    fn only_threads_that_ran_in_the_period_count_as_workload() {
        let (mut u, f, _) = two_apps();
        let mut out = Vec::new();
        // The first period: nobody ran. One core, the lowest level (800 MHz of the seed's big
        // levels, which a machine without cpufreq gets).
        u.on_deadline(
            200_000_000,
            &mut |_| {
                Some(ThreadSample {
                    cpu_ns: 0,
                    work_ns: 0,
                    cpu: CpuId(0),
                })
            },
            &mut out,
        );
        assert_eq!(u.seam_counters().online_changes, 1);
        assert_eq!(u.seam_counters().frequency_changes, 1);
        // The second: the front thread ran the whole 200 ms at 800 MHz, 160 Mcycles, all of
        // the level and above its 75 % threshold: one level up, 900 MHz.
        out.clear();
        u.on_deadline(
            400_000_000,
            &mut |th| {
                let ran = if th == f { 200_000_000 } else { 0 };
                Some(ThreadSample {
                    cpu_ns: ran,
                    work_ns: ran,
                    cpu: CpuId(0),
                })
            },
            &mut out,
        );
        let freqs: Vec<u64> = out
            .iter()
            .filter_map(|a| match *a {
                Action::Frequency { khz, .. } => Some(khz),
                _ => None,
            })
            .collect();
        assert_eq!(freqs, vec![900_000, 900_000], "{out:?}");
        assert_eq!(u.seam_counters().frequency_changes, 2);
    }

    #[test]
    fn the_front_app_going_behind_or_off_lowers_its_threads() {
        let (mut u, f, _) = two_apps();
        let behind = window_changed(&mut u, 1, app(1), window(false));
        assert_eq!(nice_of(&behind, f), Some(10));
        // Back in front, then the screen goes off: low again.
        let front = window_changed(&mut u, 2, app(1), window(true));
        assert_eq!(nice_of(&front, f), Some(-10));
        let off = window_changed(
            &mut u,
            3,
            app(1),
            WindowState {
                screen: Screen::Off,
                ..window(true)
            },
        );
        assert_eq!(nice_of(&off, f), Some(10));
    }

    #[test]
    fn another_apps_departure_leaves_the_front_app_in_front() {
        let (mut u, f, _) = two_apps();
        fact(&mut u, 1, Fact::AppGone { app: app(2) });
        // The front app is still known to be in front: its going behind lowers it.
        let out = window_changed(&mut u, 2, app(1), window(false));
        assert_eq!(nice_of(&out, f), Some(10));
    }

    #[test]
    fn a_process_outlives_the_exit_of_a_thread_other_than_its_main_one() {
        let (mut u, _, b) = two_apps();
        // b is thread 201 of process 200: its exit leaves the process the app's.
        fact(&mut u, 1, Fact::Exited { thread: b });
        let sibling = t(200, 202);
        let out = forked(&mut u, 2, t(200, 200), sibling);
        assert_eq!(nice_of(&out, sibling), Some(10));
        assert!(u.manages(sibling));
    }

    #[test]
    fn no_app_gets_the_key_that_means_no_app() {
        let mut u = UcsgSeam::new(&machine(&[&[0, 1]]), 0).unwrap();
        u.next_key = NO_APP - 1;
        assert_eq!(u.key(app(1)), NO_APP - 1);
        assert!(u.key(app(2)) < NO_APP);
    }

    #[test]
    fn configurations_follow_the_machine() {
        let one = machine(&[&[0, 1]]).config().unwrap();
        assert_eq!(one.clusters.len(), 1);
        assert_eq!(one.clusters[0].cores, 2);
        assert_eq!(one.clusters[0].levels_khz, GALAXY_S4_BIG_KHZ.to_vec());
        let mut bl = machine(&[&[4, 5], &[0, 1, 2, 3]]);
        bl.levels_khz[0] = vec![500_000, 1_000_000];
        let c = bl.config().unwrap();
        assert_eq!((c.clusters[0].cores, c.clusters[1].cores), (2, 4));
        assert_eq!(c.clusters[0].levels_khz, vec![500_000, 1_000_000]);
        assert_eq!(machine(&[]).config(), Err(UcsgLiveError::NoCpus));
        assert_eq!(machine(&[&[]]).config(), Err(UcsgLiveError::NoCpus));
    }
}
