//! [`Controller`]: the schemes of [`super`] as a policy on the seam.
//!
//! | fact | what it does |
//! | --- | --- |
//! | `Adopted` | manages the thread (the substrate tells one per thread of a registered process) |
//! | `Forked` | manages the child when its parent or its process is managed |
//! | `Exited` | forgets the thread |
//! | the deadline (every sampling period) | samples every managed thread, hands slots to threads active for the first time, and asks the masks the scheme gives ([`super`]) |

use std::collections::{BTreeMap, BTreeSet};

use super::{
    affinity_one_mask, affinity_two_mask, fast_share, toggle_on_fast, CoreSets, Scheme,
    ACTIVE_MIN_PERMILLE, DEFAULT_SAMPLE_PERIOD_NS, EQUALISE_MARGIN_NS,
};
use crate::seam::{Action, CpuMask, Fact, SeamPolicy, ThreadRef, ThreadSample};

/// What the controller did, for reports.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct ControllerCounters {
    /// Threads it managed at some point.
    pub threads_seen: u64,
    /// Threads that became active and got a slot.
    pub slots: u64,
    /// Sampling periods run.
    pub samples: u64,
    /// Thread samples the substrate could not answer (the thread had gone): forgotten.
    pub gone: u64,
    /// Decision periods (toggles or equalising rounds) run.
    pub decisions: u64,
    /// CPU masks asked.
    pub masks: u64,
}

#[derive(Clone, Debug)]
struct Tracked {
    /// Order of arrival, for handing out slots.
    seq: u64,
    slot: Option<usize>,
    /// CPU time at the previous sample (`None`: not sampled yet).
    last_cpu_ns: Option<u64>,
    work_ns: u64,
    /// The mask last asked for it.
    asked: Option<CpuMask>,
}

/// Seed 004's controller on the seam.
#[derive(Debug)]
pub struct Controller {
    scheme: Scheme,
    sets: CoreSets,
    sample_period_ns: u64,
    threads: BTreeMap<ThreadRef, Tracked>,
    /// Managed processes by (pid, start time): their later threads are managed too.
    procs: BTreeSet<(i32, u64)>,
    next_seq: u64,
    next_slot: usize,
    /// The next sample, once there is a thread to sample.
    next_sample_ns: Option<u64>,
    last_sample_ns: u64,
    /// When decisions began (the first sample), for toggle epochs.
    start_ns: Option<u64>,
    next_decision_ns: u64,
    counters: ControllerCounters,
}

impl Controller {
    /// A controller running `scheme` on `sets`, sensing every `sample_period_ns` (0 takes
    /// [`DEFAULT_SAMPLE_PERIOD_NS`]).
    #[must_use]
    pub fn new(scheme: Scheme, sets: CoreSets, sample_period_ns: u64) -> Controller {
        Controller {
            scheme,
            sets,
            sample_period_ns: if sample_period_ns == 0 {
                DEFAULT_SAMPLE_PERIOD_NS
            } else {
                sample_period_ns
            },
            threads: BTreeMap::new(),
            procs: BTreeSet::new(),
            next_seq: 0,
            next_slot: 0,
            next_sample_ns: None,
            last_sample_ns: 0,
            start_ns: None,
            next_decision_ns: 0,
            counters: ControllerCounters::default(),
        }
    }

    #[must_use]
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    #[must_use]
    pub fn stats(&self) -> ControllerCounters {
        self.counters
    }

    /// The threads managed now, with the slot each got (`None`: never active yet).
    #[must_use]
    pub fn managed(&self) -> Vec<(ThreadRef, Option<usize>)> {
        self.threads.iter().map(|(t, k)| (*t, k.slot)).collect()
    }

    fn manage(&mut self, now_ns: u64, thread: ThreadRef) {
        if thread.pid == thread.tid {
            self.procs.insert((thread.pid, thread.process_start_ticks));
        }
        if self.threads.contains_key(&thread) {
            return;
        }
        self.threads.insert(
            thread,
            Tracked {
                seq: self.next_seq,
                slot: None,
                last_cpu_ns: None,
                work_ns: 0,
                asked: None,
            },
        );
        self.next_seq += 1;
        self.counters.threads_seen += 1;
        if self.next_sample_ns.is_none() {
            self.next_sample_ns = Some(now_ns + self.sample_period_ns);
            self.last_sample_ns = now_ns;
        }
    }

    fn is_managed_proc(&self, t: ThreadRef) -> bool {
        self.procs.contains(&(t.pid, t.process_start_ticks))
    }

    fn ask(&mut self, thread: ThreadRef, cpus: CpuMask, out: &mut Vec<Action>) {
        let Some(k) = self.threads.get_mut(&thread) else {
            return;
        };
        if k.asked != Some(cpus) {
            k.asked = Some(cpus);
            self.counters.masks += 1;
            out.push(Action::Affinity { thread, cpus });
        }
    }

    /// Samples every thread; returns the active ones (by slot order) and whether any got its
    /// slot just now.
    fn sample(
        &mut self,
        now_ns: u64,
        usage: &mut dyn FnMut(ThreadRef) -> Option<ThreadSample>,
    ) -> (Vec<(usize, ThreadRef)>, bool) {
        let window_ns = now_ns.saturating_sub(self.last_sample_ns).max(1);
        self.last_sample_ns = now_ns;
        self.counters.samples += 1;
        let mut gone = Vec::new();
        let mut newly: Vec<(u64, ThreadRef)> = Vec::new();
        let mut active = Vec::new();
        for (t, k) in &mut self.threads {
            let Some(s) = usage(*t) else {
                gone.push(*t);
                continue;
            };
            let used = k.last_cpu_ns.map(|last| s.cpu_ns.saturating_sub(last));
            k.last_cpu_ns = Some(s.cpu_ns);
            k.work_ns = s.work_ns;
            let is_active = used.is_some_and(|u| {
                u128::from(u) * 1000 >= u128::from(window_ns) * u128::from(ACTIVE_MIN_PERMILLE)
            });
            if is_active {
                match k.slot {
                    Some(slot) => active.push((slot, *t)),
                    None => newly.push((k.seq, *t)),
                }
            }
        }
        self.counters.gone += gone.len() as u64;
        for t in gone {
            self.threads.remove(&t);
        }
        newly.sort_unstable();
        let fresh = !newly.is_empty();
        for (_, t) in newly {
            let slot = self.next_slot;
            self.next_slot += 1;
            self.counters.slots += 1;
            if let Some(k) = self.threads.get_mut(&t) {
                k.slot = Some(slot);
            }
            active.push((slot, t));
        }
        active.sort_unstable();
        (active, fresh)
    }

    fn decide(
        &mut self,
        now_ns: u64,
        active: &[(usize, ThreadRef)],
        fresh: bool,
        out: &mut Vec<Action>,
    ) {
        let start = *self.start_ns.get_or_insert(now_ns);
        let due = self.scheme.period_ns().is_some() && now_ns >= self.next_decision_ns;
        if due {
            self.counters.decisions += 1;
            let p = self.scheme.period_ns().unwrap_or(1);
            // The next boundary after now, on the grid that began at the first sample.
            self.next_decision_ns = start + ((now_ns - start) / p + 1) * p;
        }
        match self.scheme {
            Scheme::Baseline => {}
            Scheme::AffinityOne | Scheme::AffinityTwo => {
                for &(slot, t) in active {
                    let m = if self.scheme == Scheme::AffinityOne {
                        affinity_one_mask(self.sets, slot)
                    } else {
                        affinity_two_mask(self.sets, slot)
                    };
                    self.ask(t, m, out);
                }
            }
            Scheme::Toggle { period_ns } => {
                if due || fresh {
                    let epoch = (now_ns - start) / period_ns;
                    for &(slot, t) in active {
                        let m = if toggle_on_fast(slot, epoch) {
                            self.sets.fast
                        } else {
                            self.sets.slow
                        };
                        self.ask(t, m, out);
                    }
                }
            }
            Scheme::Equalise { .. } => {
                if due || fresh {
                    self.equalise(active, out);
                }
            }
        }
    }

    fn equalise(&mut self, active: &[(usize, ThreadRef)], out: &mut Vec<Action>) {
        let k = fast_share(self.sets, active.len());
        let fast = self.sets.fast;
        let mut ranked: Vec<(i128, usize, ThreadRef)> = active
            .iter()
            .map(|&(slot, t)| {
                let tr = &self.threads[&t];
                let mut key = i128::from(tr.work_ns);
                if tr.asked == Some(fast) {
                    key -= i128::from(EQUALISE_MARGIN_NS);
                }
                (key, slot, t)
            })
            .collect();
        ranked.sort_unstable();
        for (i, &(_, _, t)) in ranked.iter().enumerate() {
            let m = if i < k {
                self.sets.fast
            } else {
                self.sets.slow
            };
            self.ask(t, m, out);
        }
    }
}

impl SeamPolicy for Controller {
    fn name(&self) -> &'static str {
        "controller"
    }

    fn wants_process_facts(&self) -> bool {
        true
    }

    fn on_fact(&mut self, now_ns: u64, fact: &Fact, _out: &mut Vec<Action>) {
        match *fact {
            Fact::Adopted { thread } => self.manage(now_ns, thread),
            Fact::Forked { parent, child } => {
                let by_parent = self.threads.contains_key(&parent) || self.is_managed_proc(parent);
                let by_process = child.pid != child.tid && self.is_managed_proc(child);
                if by_parent || by_process {
                    self.manage(now_ns, child);
                }
            }
            Fact::Exited { thread } => {
                self.threads.remove(&thread);
                if thread.pid == thread.tid {
                    self.procs.remove(&(thread.pid, thread.process_start_ticks));
                }
            }
            _ => {}
        }
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = self.counters;
        vec![
            ("threads_seen", c.threads_seen),
            ("slots", c.slots),
            ("samples", c.samples),
            ("gone", c.gone),
            ("decisions", c.decisions),
            ("masks", c.masks),
        ]
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        if self.threads.is_empty() {
            None
        } else {
            self.next_sample_ns
        }
    }

    fn on_deadline(
        &mut self,
        now_ns: u64,
        usage: &mut dyn FnMut(ThreadRef) -> Option<ThreadSample>,
        out: &mut Vec<Action>,
    ) {
        let Some(at) = self.next_sample_ns else {
            return;
        };
        if now_ns < at {
            return;
        }
        // The next sample on the period's grid; a substrate that fell behind skips samples.
        let p = self.sample_period_ns;
        self.next_sample_ns = Some(at + ((now_ns - at) / p + 1) * p);
        let (active, fresh) = self.sample(now_ns, usage);
        self.decide(now_ns, &active, fresh, out);
    }
}
