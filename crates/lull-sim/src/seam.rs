//! A [`SeamPolicy`] driven by the simulated kernel, as `lulld` drives one on a live machine: the
//! run's threads are told as facts, the policy's deadlines are events, its questions about a
//! thread's CPU use are answered from the kernel's accounts, and its actions are applied with
//! the kernel's own calls.
//!
//! | seam | here |
//! | --- | --- |
//! | `Fact::Adopted` | every thread of the run at its start (the registered program is the whole workload) |
//! | `Fact::Exited` | a thread the workload reports finished |
//! | a deadline | an [`Ev::Seam`] at [`SeamPolicy::next_deadline_ns`] |
//! | `ThreadSample` | `cpu_ns` = the thread's run time, `work_ns` = the same scaled by the speed of each core it ran on against the fastest core at its top frequency, `cpu` = the core it runs on or last ran on |
//! | `Action::Affinity` | [`Kernel::set_affinity_now`]: `sched_setaffinity`, moving a running or waiting thread at once |
//! | `Action::Nice` | [`Kernel::set_nice`] |
//! | any other action | not applied, counted as `unsupported` |

use lull_sched::seam::{Action, Fact, SeamPolicy, ThreadRef, ThreadSample};
use lull_sched::CpuId;

use crate::event::Ev;
use crate::kernel::{Cx, Kernel};

/// The process id the run's threads are told under; thread `i` of the kernel is told as thread
/// id `THREAD_ID_BASE + i`. (The program's main thread, which waits in `join`, is not modelled:
/// no thread has the process's own id.)
pub const PROCESS_ID: i32 = 1000;
/// See [`PROCESS_ID`].
pub const THREAD_ID_BASE: i32 = 1001;

/// What the driver did, for reports.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct SeamCounters {
    pub deadlines: u64,
    pub affinity_applied: u64,
    pub nice_applied: u64,
    pub unsupported: u64,
}

/// One seam policy on one run.
#[derive(Debug)]
pub(crate) struct SeamDriver {
    policy: Box<dyn SeamPolicy>,
    out: Vec<Action>,
    /// The generation of the pending `Ev::Seam` (older ones are stale).
    gen: u64,
    exited: Vec<bool>,
    pub counters: SeamCounters,
}

fn thread_ref(t: usize) -> ThreadRef {
    ThreadRef {
        pid: PROCESS_ID,
        tid: THREAD_ID_BASE + t as i32,
        process_start_ticks: 0,
    }
}

fn kernel_thread(r: ThreadRef) -> Option<usize> {
    if r.pid != PROCESS_ID || r.tid < THREAD_ID_BASE {
        return None;
    }
    usize::try_from(r.tid - THREAD_ID_BASE).ok()
}

impl SeamDriver {
    pub fn new(policy: Box<dyn SeamPolicy>) -> SeamDriver {
        SeamDriver {
            policy,
            out: Vec::new(),
            gen: 0,
            exited: Vec::new(),
            counters: SeamCounters::default(),
        }
    }

    /// Tells every thread of the run as adopted and arms the first deadline.
    pub fn start(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        let now = cx.now();
        self.exited = vec![false; k.tasks.len()];
        for t in 0..k.tasks.len() {
            self.policy.on_fact(
                now,
                &Fact::Adopted {
                    thread: thread_ref(t),
                },
                &mut self.out,
            );
        }
        self.apply(k, cx);
        self.arm(cx);
    }

    /// Thread `t` has finished.
    pub fn exited(&mut self, t: usize, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        if self.exited.get(t).copied().unwrap_or(true) {
            return;
        }
        self.exited[t] = true;
        if self.policy.wants_process_facts() {
            let fact = Fact::Exited {
                thread: thread_ref(t),
            };
            self.policy.on_fact(cx.now(), &fact, &mut self.out);
        }
        self.apply(k, cx);
        self.arm(cx);
    }

    /// The `Ev::Seam` of generation `gen` fired.
    pub fn deadline(&mut self, gen: u64, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        if gen != self.gen {
            return;
        }
        let now = cx.now();
        if self.policy.next_deadline_ns().is_some_and(|at| now >= at) {
            self.counters.deadlines += 1;
            let exited = &self.exited;
            let tasks = &k.tasks;
            let mut usage = |r: ThreadRef| {
                let t = kernel_thread(r).filter(|&t| t < tasks.len() && !exited[t])?;
                let th = &tasks[t];
                Some(ThreadSample {
                    cpu_ns: th.exec_ns,
                    work_ns: th.work_ns,
                    cpu: CpuId(th.core),
                })
            };
            self.policy.on_deadline(now, &mut usage, &mut self.out);
            self.apply(k, cx);
        }
        self.arm(cx);
    }

    /// The policy's counters.
    pub fn policy_counters(&self) -> Vec<(&'static str, u64)> {
        self.policy.counters()
    }

    fn arm(&mut self, cx: &mut Cx<'_, '_>) {
        self.gen += 1;
        if let Some(at) = self.policy.next_deadline_ns() {
            let gen = self.gen;
            cx.eng.schedule_at(at.max(cx.now()), Ev::Seam { gen });
        }
    }

    fn apply(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        for a in std::mem::take(&mut self.out) {
            match a {
                Action::Affinity { thread, cpus } => {
                    if let Some(t) = kernel_thread(thread).filter(|&t| t < k.tasks.len()) {
                        k.set_affinity_now(t, cpus, cx);
                        self.counters.affinity_applied += 1;
                    }
                }
                Action::Nice { thread, nice } => {
                    if let Some(t) = kernel_thread(thread).filter(|&t| t < k.tasks.len()) {
                        k.set_nice(t, nice);
                        self.counters.nice_applied += 1;
                    }
                }
                _ => self.counters.unsupported += 1,
            }
        }
    }
}
