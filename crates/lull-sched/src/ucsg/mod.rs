//! UCSG (seed 001, Hsiu et al.): the user-centric scheduler and governor for big.LITTLE.
//!
//! - [`sensitivity`]: the three sensitivity states and their transitions (§3.1, figure 3);
//! - [`scheduler`]: thread allocation and migration by sensitivity and workload (§3.2.2);
//! - [`governor`]: DPM, DVFS with the C_l estimate, the 75 % rule and half-scaling, and cluster
//!   switching with its hysteresis (§3.2.3);
//! - [`config`]: the tunables, each with its section;
//! - [`live`]: UCSG as a policy on the live seam (`UcsgSeam`), for the daemon.
//!
//! [`Ucsg`] ties them to the six events of §3.3 (fork, exit, touch, display toggle, the 200 ms
//! period and the 500 ms expiry, plus the front app, which the seed polls every fifth period and
//! a display server knows at once) and answers each with [`Decision`]s the substrate applies in
//! order: the simulator's kernel, or the live daemon's actuator. Threads are the substrate's keys
//! `K`; cores are slots 0.. of the active cluster's online cores.

pub mod config;
pub mod governor;
pub mod live;
pub mod scheduler;
pub mod sensitivity;

use std::collections::BTreeMap;

pub use config::{UcsgCluster, UcsgConfig, UcsgConfigError};
pub use sensitivity::{Owner, Sensitivity, UserState};

use config::cycles_in;
use governor::{GovernorMemory, Ladder};
use scheduler::{CoreTotals, Move, Resident};

/// What UCSG asks of the substrate, to be applied in the order given.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Decision<K> {
    /// Thread prioritization: the thread's nice value.
    Nice { thread: K, nice: i8 },
    /// Allocation or migration: run the thread on core slot `slot` of the active cluster only.
    Place { thread: K, slot: usize },
    /// DPM: keep this many cores of the active cluster on (slots `0..cores`).
    Online { cores: usize },
    /// Cluster switching: move to `cluster` with as many cores on, slot for slot.
    Cluster { cluster: usize },
    /// DVFS: the active cluster's frequency (synchronous scaling: every core of it).
    Frequency { khz: u64 },
}

/// Where the machine stands when UCSG starts (its frequency is learnt at the first sample).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Start {
    pub cluster: usize,
    /// Cores of that cluster on.
    pub online: usize,
}

/// One tracked thread's CPU time over the sampling period just ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ThreadUse<K> {
    pub thread: K,
    pub runtime_ns: u64,
}

/// The machine at the end of a sampling period, as the substrate measured it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SampleView<'a, K> {
    pub cluster: usize,
    /// Cores of the active cluster on.
    pub online: usize,
    /// The frequency the cluster ran at (the cycles of a thread are its runtime × this; §3.3).
    pub freq_khz: u64,
    /// Tracked threads that ran in the period; a tracked thread not listed ran 0 ns.
    pub threads: &'a [ThreadUse<K>],
}

/// Counts for reports.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct UcsgStats {
    pub samples: u64,
    pub touches: u64,
    /// Migrations by the sampling period's two steps, and placements of threads whose core went
    /// off.
    pub migrations: u64,
    pub cluster_switches: u64,
    pub half_scalings: u64,
    /// Nice changes (thread prioritization).
    pub reprioritized: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Tracked {
    owner: Owner,
    sensitivity: Sensitivity,
    slot: usize,
    arrived: u64,
    /// Cycles in the last period.
    cycles: u64,
    /// Ran in the last period, or arrived since: it counts in its core's totals.
    active: bool,
}

/// The user-centric scheduler and governor.
#[derive(Clone, Debug)]
pub struct Ucsg<K> {
    cfg: UcsgConfig,
    ladder: Ladder,
    user: UserState,
    threads: BTreeMap<K, Tracked>,
    cluster: usize,
    online: usize,
    /// The level last asked for (none yet).
    asked_level: Option<usize>,
    memory: GovernorMemory,
    /// Arrival counter (FIFO order of migration).
    clock: u64,
    next_sample_ns: u64,
    stats: UcsgStats,
}

impl<K: Copy + Ord + std::fmt::Debug> Ucsg<K> {
    /// UCSG from `now_ns` on, with the machine as `start` says.
    ///
    /// # Errors
    /// [`UcsgConfigError`] when `cfg` does not pass [`UcsgConfig::validate`] or `start` names a
    /// cluster it does not have.
    pub fn new(cfg: UcsgConfig, now_ns: u64, start: Start) -> Result<Ucsg<K>, UcsgConfigError> {
        cfg.validate()?;
        let Some(c) = cfg.clusters.get(start.cluster) else {
            return Err(UcsgConfigError::Invalid {
                field: "start.cluster",
                reason: format!("cluster {} of {}", start.cluster, cfg.clusters.len()),
            });
        };
        let online = start.online.clamp(1, c.cores);
        let ladder = Ladder::new(&cfg);
        Ok(Ucsg {
            asked_level: None,
            ladder,
            user: UserState::new(cfg.high_hold_ns),
            threads: BTreeMap::new(),
            cluster: start.cluster,
            online,
            memory: GovernorMemory::default(),
            clock: 0,
            next_sample_ns: now_ns + cfg.sampling_period_ns,
            stats: UcsgStats::default(),
            cfg,
        })
    }

    #[must_use]
    pub fn config(&self) -> &UcsgConfig {
        &self.cfg
    }

    #[must_use]
    pub fn stats(&self) -> UcsgStats {
        self.stats
    }

    /// A tracked thread's state.
    #[must_use]
    pub fn sensitivity(&self, thread: K) -> Option<Sensitivity> {
        self.threads.get(&thread).map(|t| t.sensitivity)
    }

    /// A tracked thread's core slot.
    #[must_use]
    pub fn slot(&self, thread: K) -> Option<usize> {
        self.threads.get(&thread).map(|t| t.slot)
    }

    #[must_use]
    pub fn user(&self) -> &UserState {
        &self.user
    }

    /// When UCSG next needs [`Ucsg::sample`] or [`Ucsg::expire`].
    #[must_use]
    pub fn next_deadline_ns(&self) -> u64 {
        self.user
            .high_until_ns
            .map_or(self.next_sample_ns, |t| t.min(self.next_sample_ns))
    }

    /// When the next sampling period ends.
    #[must_use]
    pub fn next_sample_ns(&self) -> u64 {
        self.next_sample_ns
    }

    /// The active cluster's per-slot totals over the threads that count.
    fn totals(&self) -> Vec<CoreTotals> {
        let mut t = vec![CoreTotals::default(); self.online];
        for th in self.threads.values().filter(|th| th.active) {
            if let Some(c) = t.get_mut(th.slot) {
                c.sensitivity += th.sensitivity.value();
                c.cycles += th.cycles;
            }
        }
        t
    }

    /// A thread was created (§3.3 event 1). Its owner is `owner` when the substrate knows it (a
    /// new app's first thread), else its parent's (inheritance at fork), else the system's.
    /// Allocation picks its core and prioritization its nice.
    pub fn thread_forked(
        &mut self,
        parent: Option<K>,
        child: K,
        owner: Option<Owner>,
        out: &mut Vec<Decision<K>>,
    ) {
        let owner = owner
            .or_else(|| parent.and_then(|p| self.threads.get(&p)).map(|p| p.owner))
            .unwrap_or(Owner::System);
        let sensitivity = self.user.sensitivity(owner);
        if let Some(t) = self.threads.get_mut(&child) {
            t.owner = owner;
            if t.sensitivity != sensitivity {
                t.sensitivity = sensitivity;
                self.stats.reprioritized += 1;
                out.push(Decision::Nice {
                    thread: child,
                    nice: sensitivity.nice(),
                });
            }
            return;
        }
        let slot = scheduler::allocate(sensitivity, &self.totals()).unwrap_or(0);
        self.clock += 1;
        self.threads.insert(
            child,
            Tracked {
                owner,
                sensitivity,
                slot,
                arrived: self.clock,
                cycles: 0,
                active: true,
            },
        );
        self.stats.reprioritized += 1;
        out.push(Decision::Nice {
            thread: child,
            nice: sensitivity.nice(),
        });
        out.push(Decision::Place {
            thread: child,
            slot,
        });
    }

    /// A thread ended (§3.3 event 2): everything about it is forgotten.
    pub fn thread_exited(&mut self, thread: K) {
        self.threads.remove(&thread);
    }

    /// Every thread takes the state its owner's now has; changed ones get their nice.
    fn reprioritize(&mut self, out: &mut Vec<Decision<K>>) {
        for (&k, t) in &mut self.threads {
            let s = self.user.sensitivity(t.owner);
            if s != t.sensitivity {
                t.sensitivity = s;
                self.stats.reprioritized += 1;
                out.push(Decision::Nice {
                    thread: k,
                    nice: s.nice(),
                });
            }
        }
    }

    /// Goes to `level` of the ladder, switching cluster first when it lies on another.
    fn go_to(&mut self, level: usize, out: &mut Vec<Decision<K>>) {
        let l = self.ladder.level(level);
        if l.cluster != self.cluster {
            self.cluster = l.cluster;
            self.online = self.online.min(self.cfg.clusters[l.cluster].cores);
            self.stats.cluster_switches += 1;
            out.push(Decision::Cluster { cluster: l.cluster });
        }
        self.asked_level = Some(level);
        out.push(Decision::Frequency { khz: l.khz });
    }

    /// The user touched the screen or a button (§3.3 event 3): the front app's threads become
    /// highly sensitive for the hold time and the governor goes to the highest level (on the
    /// fastest cluster) at once. With the display off a touch changes nothing.
    pub fn touch(&mut self, now_ns: u64, out: &mut Vec<Decision<K>>) {
        if !self.user.display_on {
            return;
        }
        self.stats.touches += 1;
        self.user.touch(now_ns);
        self.reprioritize(out);
        // Every input event is a touch: once at the top, a further one asks nothing (the live
        // daemon tells this on its event hot path).
        if self.asked_level != Some(self.ladder.top()) {
            self.go_to(self.ladder.top(), out);
        }
    }

    /// `app` came to the front (the previous front app goes behind).
    pub fn foreground(&mut self, app: u32, out: &mut Vec<Decision<K>>) {
        self.user.foreground(app);
        self.reprioritize(out);
    }

    /// The display toggle (§3.3 event 4).
    pub fn display(&mut self, on: bool, out: &mut Vec<Decision<K>>) {
        self.user.display(on);
        self.reprioritize(out);
    }

    /// The 500 ms timer (§3.3 event 6): high threads revert to medium once it has run out.
    pub fn expire(&mut self, now_ns: u64, out: &mut Vec<Decision<K>>) {
        if self.user.expire(now_ns) {
            self.reprioritize(out);
        }
    }

    /// The sampling period (§3.3 event 5): the 500 ms expiry if due, then DPM, thread migration,
    /// DVFS and cluster switching in sequence, from the workload `view` measured.
    pub fn sample(&mut self, now_ns: u64, view: &SampleView<'_, K>, out: &mut Vec<Decision<K>>) {
        self.stats.samples += 1;
        self.next_sample_ns = now_ns + self.cfg.sampling_period_ns;
        self.expire(now_ns, out);
        if view.cluster < self.cfg.clusters.len() {
            self.cluster = view.cluster;
        }
        let cores = self.cfg.clusters[self.cluster].cores;
        self.online = view.online.clamp(1, cores);
        let current = self.ladder.index_of(self.cluster, view.freq_khz);
        // Workload estimation (§3.3): cycles = runtime in the period × the frequency.
        for t in self.threads.values_mut() {
            t.cycles = 0;
            t.active = false;
        }
        for u in view.threads {
            if let Some(t) = self.threads.get_mut(&u.thread) {
                t.cycles = cycles_in(view.freq_khz, u.runtime_ns);
                t.active = u.runtime_ns > 0;
            }
        }
        self.dpm(out);
        self.migrate(out);
        let per_core = self.required_per_core();
        let any_high = self
            .threads
            .values()
            .any(|t| t.sensitivity == Sensitivity::High);
        let choice = self
            .memory
            .dvfs(&self.ladder, &per_core, any_high, current, &self.cfg);
        if choice.half_scaled {
            self.stats.half_scalings += 1;
        }
        let level = self
            .memory
            .switch(&self.ladder, self.cluster, choice.level, &self.cfg);
        self.go_to(level, out);
    }

    /// Per online slot, the cycles its threads must be given (§3.2.3: all of the medium and high
    /// threads', [`governor::low_cycles`] of the low ones').
    fn required_per_core(&self) -> Vec<u64> {
        let mut c_m = vec![0; self.online];
        let mut n_m = vec![0u32; self.online];
        let mut n_l = vec![0u32; self.online];
        for t in self
            .threads
            .values()
            .filter(|t| t.active && t.slot < self.online)
        {
            if t.sensitivity == Sensitivity::Low {
                n_l[t.slot] += 1;
            } else {
                c_m[t.slot] += t.cycles;
                n_m[t.slot] += 1;
            }
        }
        (0..self.online)
            .map(|i| governor::required_cycles(c_m[i], n_l[i], n_m[i]))
            .collect()
    }

    /// DPM: the core count for the required workload; threads of cores that go off are placed
    /// again as if newly forked.
    fn dpm(&mut self, out: &mut Vec<Decision<K>>) {
        let running = self.threads.values().filter(|t| t.active).count();
        let required: u64 = self.required_per_core().iter().sum();
        let n = governor::dpm_cores(
            &self.cfg.clusters[self.cluster],
            required,
            self.cfg.sampling_period_ns,
            running,
        );
        if n != self.online {
            self.online = n;
            out.push(Decision::Online { cores: n });
        }
        let homeless: Vec<K> = self
            .threads
            .iter()
            .filter(|(_, t)| t.slot >= n)
            .map(|(&k, _)| k)
            .collect();
        for k in homeless {
            let s = self.threads[&k].sensitivity;
            let slot = scheduler::allocate(s, &self.totals()).unwrap_or(0);
            self.clock += 1;
            let t = self.threads.get_mut(&k).expect("listed above");
            t.slot = slot;
            t.arrived = self.clock;
            self.stats.migrations += 1;
            out.push(Decision::Place { thread: k, slot });
        }
    }

    /// Thread migration among the online cores (§3.2.2).
    fn migrate(&mut self, out: &mut Vec<Decision<K>>) {
        let mut cores: Vec<Vec<Resident<K>>> = vec![Vec::new(); self.online];
        let mut by_arrival: Vec<(&K, &Tracked)> =
            self.threads.iter().filter(|(_, t)| t.active).collect();
        by_arrival.sort_by_key(|(_, t)| t.arrived);
        for (&k, t) in by_arrival {
            cores[t.slot.min(self.online - 1)].push(Resident {
                thread: k,
                sensitivity: t.sensitivity,
                cycles: t.cycles,
                arrived: t.arrived,
            });
        }
        let mut moves: Vec<Move<K>> = Vec::new();
        scheduler::migrate(&mut cores, &mut self.clock, &mut moves);
        for (slot, residents) in cores.iter().enumerate() {
            for r in residents {
                if let Some(t) = self.threads.get_mut(&r.thread) {
                    t.slot = slot;
                    t.arrived = r.arrived;
                }
            }
        }
        for m in moves {
            self.stats.migrations += 1;
            out.push(Decision::Place {
                thread: m.thread,
                slot: m.to,
            });
        }
    }
}

#[cfg(test)]
mod tests;
