//! The policy seam in the daemon: what `lulld` knows, told as facts to the seam's policies
//! (`lull_sched::seam::SeamPolicy`: `lull_sched::guis::Table1` while guiS is on, UCSG and the
//! interactive boost when enabled), and their actions applied by the [`Actuator`].
//!
//! | fact | told when |
//! | --- | --- |
//! | `WindowChanged` | every window-state push (`push_states`), before the app hears of it — while its cooperative threads are still where the old state put them; an app's first state comes with its `ATTACH` |
//! | `ThreadDeclared` | the display server accepted an app's `THREAD` (a thread of the attaching process, that process still the one that attached); the thread is named with the process's start time pinned at `ATTACH`, and its category noted as its cgroup label |
//! | `InputPushed` | every ESM push to an app's event thread (an event or an overflow marker), right before the packet is written, so an action on the event thread is in place when it wakes; its time is the event's injection stamp. This is the event hot path: nothing is allocated, no clock is read, and the actuator runs only if a policy asks something |
//! | `HandlerFinished` | an app's `Wait` that follows a push |
//! | `AppGone` | the app left (detach, closed connection, dropped) |
//! | `Forked`, `Exited` | the kernel's proc connector reported a task created or ended (only while a policy that wants process facts runs: [`SeamHost::wants_process_facts`]); the start times are read from `/proc` at the fork (a task gone before it is read is counted in [`ProcessFacts::unreadable`] and not told) and remembered until the process exits |
//! | `Adopted` | a process the configuration names (`--ucsg-manage`) was found running at start, or exec'd under that name later |
//! | `RunQueues` | right before an `InputPushed`, when the sampled count changed (only while a policy wants it: [`SeamPolicy::wants_run_queues`], the boost in nice mode). The count is `/proc/loadavg`'s `running` less the daemon's own thread, read with one `pread` on a descriptor kept open ([`lull_os::runqueue`]), at most once per [`RUN_QUEUE_SAMPLE_MIN_NS`] of push stamps (no clock is read for it); `cpus` is the machine's online CPUs at start |
//!
//! Every fact is told in the daemon's loop as a consequence of a message. The only timer is the
//! seam's deadline timer, armed at the earliest [`SeamPolicy::next_deadline_ns`] of the policies
//! and disarmed while none asks (a deadline that moves later, as the boost's budget does at each
//! push, leaves the timer at the earlier instant: it fires, finds nothing due and is set again,
//! one wake-up instead of a system call per push); when it fires, the policies whose deadline has come run
//! [`SeamPolicy::on_deadline`], their questions about threads answered from
//! `/proc/PID/task/TID/schedstat` and `stat` ([`lull_os::procfs::thread_cpu_use`]).

use std::collections::{BTreeMap, HashMap};

use lull_model::{AppId, ThreadCategory};
use lull_os::proc_connector::{ConnectorCounters, ProcConnector, ProcEvent};
use lull_os::procfs;
use lull_os::runqueue::RunnableProbe;
use lull_os::sys::{self, TimerFd};
use lull_sched::ids::CpuId;
use lull_sched::seam::{Action, Fact, SeamPolicy, ThreadRef, ThreadSample};
use serde::Serialize;

use lull_actuate::{Actuator, ActuatorReport};

/// What the seam did: the policies that ran and the actuator's counts per action kind.
#[derive(Clone, Debug, Serialize)]
pub struct SeamReport {
    pub policies: Vec<&'static str>,
    pub actuator: ActuatorReport,
    /// Each policy's own counts (`SeamPolicy::counters`), by policy name.
    pub policy_counters: BTreeMap<&'static str, BTreeMap<&'static str, u64>>,
    /// The process facts told, when a policy wanted them.
    pub process_facts: Option<ProcessFacts>,
    /// Deadlines the policies were woken for.
    pub deadlines: u64,
    /// The run-queue readings, when a policy wanted them.
    pub run_queues: Option<RunQueueCounters>,
    /// Threads the actuator still holds something of when the report was made (0 after every
    /// app has left: nothing is left raised, frozen or moved).
    pub held_threads: usize,
    /// lull-scx's facts writer's counts, when it ran.
    pub scx_feed: Option<lull_os::bpf::scx_facts::FactsCounters>,
}

/// How often the run-queue count is read at most, in push stamps: one period of the fair class
/// for a few tasks (P = 5 ms, seed 003 §III, [`lull_sched::class::cfs::PERIOD_MIN_NS`]). The
/// scheduler shares a CPU over such a period, so a reading younger than one says as much as a
/// fresh one, and a burst of input pays for one reading per period.
pub const RUN_QUEUE_SAMPLE_MIN_NS: u64 = lull_sched::class::cfs::PERIOD_MIN_NS;

/// What the run-queue sampler did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct RunQueueCounters {
    pub cpus: u32,
    /// Readings taken, and those that failed (the last good count stays told).
    pub reads: u64,
    pub read_errors: u64,
    /// `RunQueues` facts told (readings that changed the count).
    pub told: u64,
}

/// The run-queue count, sampled for the policies on pushes.
#[derive(Debug)]
pub(crate) struct RunQueueSampler {
    probe: RunnableProbe,
    /// The push stamp of the last reading, and the count last told.
    last_at_ns: Option<u64>,
    told: Option<u32>,
    counters: RunQueueCounters,
}

impl RunQueueSampler {
    pub(crate) fn new(probe: RunnableProbe, cpus: u32) -> RunQueueSampler {
        RunQueueSampler {
            probe,
            last_at_ns: None,
            told: None,
            counters: RunQueueCounters {
                cpus: cpus.max(1),
                ..RunQueueCounters::default()
            },
        }
    }

    /// A push stamped `now_ns`: the count to tell, if a reading is due and it changed. Stamps
    /// that go back (another source's) take a reading.
    fn sample(&mut self, now_ns: u64) -> Option<Fact> {
        let due = self
            .last_at_ns
            .is_none_or(|t| now_ns < t || now_ns - t >= RUN_QUEUE_SAMPLE_MIN_NS);
        if !due {
            return None;
        }
        self.last_at_ns = Some(now_ns);
        self.counters.reads += 1;
        let Ok(running) = self.probe.read() else {
            self.counters.read_errors += 1;
            return None;
        };
        // The daemon's own thread is running while it reads.
        let runnable = running.saturating_sub(1);
        if self.told == Some(runnable) {
            return None;
        }
        self.told = Some(runnable);
        self.counters.told += 1;
        Some(Fact::RunQueues {
            runnable,
            cpus: self.counters.cpus,
        })
    }
}

/// What the proc connector brought the seam.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct ProcessFacts {
    /// The connector's own counts (events read, malformed, overruns).
    pub connector: ConnectorCounters,
    pub forked: u64,
    pub exited: u64,
    pub adopted: u64,
    /// Forks whose task was gone before its start time could be read, and exits of processes
    /// whose start time was never known: not told.
    pub unreadable: u64,
}

/// The seam's part of the daemon's state.
#[derive(Debug)]
pub(crate) struct SeamHost {
    policies: Vec<Box<dyn SeamPolicy>>,
    pub(crate) actuator: Actuator,
    /// The actions of the fact being told (kept to reuse its allocation).
    out: Vec<Action>,
    /// Per ESM slot (`AppId::index`): the generation of the app whose latest push has not been
    /// followed by a `Wait` yet. Sized when an app connects, so a push allocates nothing.
    pushed: Vec<Option<u32>>,
    /// The thread each app declared per category (`ThreadCategory::ALL`'s order).
    declared: HashMap<AppId, [Option<ThreadRef>; 4]>,
    /// The deadline timer and the instant it is armed for (`None`: disarmed).
    timer: Option<(TimerFd, Option<u64>)>,
    deadlines: u64,
    /// The proc connector, while a policy wants process facts and the kernel let the daemon
    /// listen.
    pub(crate) connector: Option<ProcConnector>,
    /// Start times of the processes on the machine seen forking (pid → ticks), so a task's
    /// exit, when `/proc` has nothing left of it, can still be named.
    starts: HashMap<i32, u64>,
    /// Process names (`comm`) the configuration asks the policies to manage.
    pub(crate) adopt_names: Vec<String>,
    process_facts: Option<ProcessFacts>,
    /// Why the proc connector does not listen, when process facts were wanted and it does not.
    connector_unavailable: Option<String>,
    /// The run-queue sampler, while a policy wants `RunQueues`.
    run_queues: Option<RunQueueSampler>,
    /// lull-scx's facts writer, when enabled ([`crate::scx_feed`]).
    pub(crate) scx_feed: Option<crate::scx_feed::ScxFeed>,
}

fn slot(category: ThreadCategory) -> usize {
    ThreadCategory::ALL
        .iter()
        .position(|&c| c == category)
        .unwrap_or(0)
}

impl SeamHost {
    pub(crate) fn new(policies: Vec<Box<dyn SeamPolicy>>, actuator: Actuator) -> SeamHost {
        SeamHost {
            policies,
            actuator,
            out: Vec::new(),
            pushed: Vec::new(),
            declared: HashMap::new(),
            timer: None,
            deadlines: 0,
            connector: None,
            starts: HashMap::new(),
            adopt_names: Vec::new(),
            process_facts: None,
            connector_unavailable: None,
            run_queues: None,
            scx_feed: None,
        }
    }

    pub(crate) fn report(&self) -> SeamReport {
        SeamReport {
            policies: self.policies.iter().map(|p| p.name()).collect(),
            actuator: self.actuator.report().clone(),
            policy_counters: self
                .policies
                .iter()
                .map(|p| (p.name(), p.counters().into_iter().collect()))
                .filter(|(_, c): &(_, BTreeMap<_, _>)| !c.is_empty())
                .collect(),
            process_facts: self.process_facts.map(|mut f| {
                if let Some(c) = &self.connector {
                    f.connector = c.counters();
                }
                f
            }),
            deadlines: self.deadlines,
            run_queues: self.run_queues.as_ref().map(|r| r.counters),
            held_threads: self.actuator.held_threads(),
            scx_feed: self
                .scx_feed
                .as_ref()
                .map(crate::scx_feed::ScxFeed::counters),
        }
    }

    /// Adds a policy to those the seam runs.
    pub(crate) fn add_policy(&mut self, p: Box<dyn SeamPolicy>) {
        self.policies.push(p);
    }

    /// Whether any policy wants `RunQueues`.
    pub(crate) fn wants_run_queues(&self) -> bool {
        self.policies.iter().any(|p| p.wants_run_queues())
    }

    /// Starts sampling the run queues for the policies' pushes.
    pub(crate) fn start_run_queues(&mut self, sampler: RunQueueSampler) {
        self.run_queues = Some(sampler);
    }

    /// Whether any policy wants `Forked`/`Exited`.
    pub(crate) fn wants_process_facts(&self) -> bool {
        self.policies.iter().any(|p| p.wants_process_facts())
    }

    /// Whether the seam has its deadline timer (a policy with deadlines set it up).
    pub(crate) fn has_timer(&self) -> bool {
        self.timer.is_some()
    }

    /// Gives the seam its deadline timer (its descriptor is the caller's loop source).
    pub(crate) fn set_timer(&mut self, timer: TimerFd) {
        self.timer = Some((timer, None));
        self.rearm();
    }

    /// Starts counting process facts (the connector is open, or could not be: `unavailable`
    /// says why).
    pub(crate) fn start_process_facts(
        &mut self,
        connector: Option<ProcConnector>,
        unavailable: Option<String>,
    ) {
        self.connector = connector;
        self.connector_unavailable = unavailable;
        self.process_facts = Some(ProcessFacts::default());
    }

    /// Whether process facts are counted (the host armed them once).
    pub(crate) fn counts_process_facts(&self) -> bool {
        self.process_facts.is_some()
    }

    /// Why the proc connector does not listen, when it does not.
    pub(crate) fn connector_unavailable(&self) -> Option<String> {
        self.connector_unavailable.clone()
    }

    /// Whether the run queues are sampled already.
    pub(crate) fn samples_run_queues(&self) -> bool {
        self.run_queues.is_some()
    }

    /// Arms the timer at the policies' earliest deadline (or leaves it at an earlier one), or
    /// disarms it when none asks.
    fn rearm(&mut self) {
        let want = self
            .policies
            .iter()
            .filter_map(|p| p.next_deadline_ns())
            .min();
        let Some((timer, armed)) = self.timer.as_mut() else {
            return;
        };
        // Already armed for this instant, or for an earlier one: a deadline that moved later (the
        // boost's budget at each push) is set when the earlier one fires, which costs that
        // wake-up instead of a system call per push.
        if *armed == want || matches!((*armed, want), (Some(a), Some(w)) if a < w) {
            return;
        }
        let done = match want {
            Some(at) => timer.set_abs(at, 0),
            None => timer.disarm(),
        };
        // A failed arm leaves the old state recorded, so the next fact tries again.
        if done.is_ok() {
            *armed = want;
        }
    }

    /// The deadline timer fired: runs every policy whose deadline has come.
    pub(crate) fn deadline(&mut self) {
        if let Some((timer, armed)) = self.timer.as_mut() {
            let _ = timer.take_expirations();
            *armed = None;
        }
        let now = sys::monotonic_ns();
        self.out.clear();
        let mut usage = |t: ThreadRef| {
            procfs::thread_cpu_use(t.pid, t.tid).map(|(cpu_ns, cpu)| ThreadSample {
                cpu_ns,
                // Unscaled: the daemon's policies (UCSG) read only `cpu_ns`.
                work_ns: cpu_ns,
                cpu: CpuId(cpu as usize),
            })
        };
        for p in &mut self.policies {
            if p.next_deadline_ns().is_some_and(|at| at <= now) {
                self.deadlines += 1;
                p.on_deadline(now, &mut usage, &mut self.out);
            }
        }
        if !self.out.is_empty() {
            self.actuator.apply_all(&self.out);
        }
        self.rearm();
    }

    /// Reads every event the proc connector has and tells the policies.
    pub(crate) fn process_events(&mut self) {
        let Some(mut c) = self.connector.take() else {
            return;
        };
        let mut events = Vec::new();
        let read = c.drain(|ev| events.push(ev));
        self.connector = Some(c);
        let now = sys::monotonic_ns();
        for ev in events {
            self.process_event(now, ev);
        }
        if read.is_err() {
            // The kernel refused or the socket broke: counted as an overrun and left open (a
            // broken socket stays readable and is drained again; nothing is lost silently).
            if let Some(f) = self.process_facts.as_mut() {
                f.connector.overruns += 1;
            }
        }
    }

    fn start_of(&mut self, pid: i32) -> Option<u64> {
        if let Some(&s) = self.starts.get(&pid) {
            return Some(s);
        }
        let s = procfs::process_start_ticks(pid)?;
        self.starts.insert(pid, s);
        Some(s)
    }

    fn process_event(&mut self, now: u64, ev: ProcEvent) {
        let Some(mut facts) = self.process_facts else {
            return;
        };
        match ev {
            ProcEvent::Fork {
                parent_pid,
                parent_tgid,
                child_pid,
                child_tgid,
            } => {
                let thread = child_pid != child_tgid;
                // A new thread's reported parent is its process's parent (module docs of
                // `proc_connector`): name its own process's main thread instead.
                let (ppid, ptid) = if thread {
                    (child_tgid, child_tgid)
                } else {
                    (parent_tgid, parent_pid)
                };
                if !thread {
                    // A pid seen forking is a new process: any start time kept under it is an
                    // earlier holder's.
                    self.starts.remove(&child_tgid);
                }
                match (self.start_of(ppid), self.start_of(child_tgid)) {
                    (Some(ps), Some(cs)) => {
                        facts.forked += 1;
                        let parent = ThreadRef {
                            pid: ppid,
                            tid: ptid,
                            process_start_ticks: ps,
                        };
                        let child = ThreadRef {
                            pid: child_tgid,
                            tid: child_pid,
                            process_start_ticks: cs,
                        };
                        self.process_facts = Some(facts);
                        self.tell(now, &Fact::Forked { parent, child });
                        return;
                    }
                    _ => facts.unreadable += 1,
                }
            }
            ProcEvent::Exit { pid, tgid, .. } => {
                let start = self.starts.get(&tgid).copied();
                if pid == tgid {
                    self.starts.remove(&tgid);
                }
                match start {
                    Some(s) => {
                        facts.exited += 1;
                        self.process_facts = Some(facts);
                        let thread = ThreadRef {
                            pid: tgid,
                            tid: pid,
                            process_start_ticks: s,
                        };
                        self.tell(now, &Fact::Exited { thread });
                        return;
                    }
                    None => facts.unreadable += 1,
                }
            }
            ProcEvent::Exec { pid, tgid } => {
                if !self.adopt_names.is_empty() && pid == tgid {
                    self.process_facts = Some(facts);
                    self.adopt_if_named(now, tgid);
                    return;
                }
            }
            ProcEvent::Ack { .. } | ProcEvent::Other { .. } => {}
        }
        self.process_facts = Some(facts);
    }

    /// Tells `Adopted` for every thread of process `pid` if its name is configured.
    pub(crate) fn adopt_if_named(&mut self, now: u64, pid: i32) {
        let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/comm")) else {
            return;
        };
        if !self.adopt_names.iter().any(|n| n == comm.trim_end()) {
            return;
        }
        let Some(start) = procfs::process_start_ticks(pid) else {
            return;
        };
        self.starts.insert(pid, start);
        let Ok(threads) = procfs::thread_names(pid) else {
            return;
        };
        for (tid, _) in threads {
            if let Some(f) = self.process_facts.as_mut() {
                f.adopted += 1;
            }
            let thread = ThreadRef {
                pid,
                tid,
                process_start_ticks: start,
            };
            self.tell(now, &Fact::Adopted { thread });
        }
    }

    /// Undoes everything the actuator still holds.
    pub(crate) fn close(self) {
        self.actuator.close();
    }

    /// Tells every policy `fact` and applies what they ask, in order.
    pub(crate) fn tell(&mut self, now_ns: u64, fact: &Fact) {
        if let Some(feed) = &mut self.scx_feed {
            feed.on_fact(now_ns, fact);
        }
        self.out.clear();
        for p in &mut self.policies {
            p.on_fact(now_ns, fact, &mut self.out);
        }
        if !self.out.is_empty() {
            self.actuator.apply_all(&self.out);
        }
        self.rearm();
    }

    /// `app` declared `thread` as its `category` thread.
    pub(crate) fn declare(
        &mut self,
        now_ns: u64,
        app: AppId,
        category: ThreadCategory,
        thread: ThreadRef,
    ) {
        let slots = self.declared.entry(app).or_default();
        let old = slots[slot(category)].replace(thread);
        self.actuator.note_label(thread, category.name());
        self.tell(
            now_ns,
            &Fact::ThreadDeclared {
                app,
                thread,
                category,
            },
        );
        if let Some(old) = old.filter(|&o| o != thread) {
            let still = self
                .declared
                .get(&app)
                .is_some_and(|s| s.contains(&Some(old)));
            if !still {
                self.actuator.forget_label(old);
            }
        }
    }

    /// `app` left.
    pub(crate) fn app_gone(&mut self, now_ns: u64, app: AppId) {
        self.tell(now_ns, &Fact::AppGone { app });
        for thread in self.declared.remove(&app).into_iter().flatten().flatten() {
            self.actuator.forget_label(thread);
        }
        if let Some(s) = self.pushed.get_mut(app.index as usize) {
            *s = None;
        }
    }

    /// Room for `app`'s slot, so its pushes allocate nothing.
    pub(crate) fn connected(&mut self, app: AppId) {
        let i = app.index as usize;
        if self.pushed.len() <= i {
            self.pushed.resize(i + 1, None);
        }
        self.pushed[i] = None;
    }

    /// An ESM push to `app` is about to be written.
    pub(crate) fn input_pushed(&mut self, now_ns: u64, app: AppId) {
        if let Some(s) = self.pushed.get_mut(app.index as usize) {
            *s = Some(app.generation);
        }
        if let Some(fact) = self.run_queues.as_mut().and_then(|r| r.sample(now_ns)) {
            self.tell(now_ns, &fact);
        }
        self.tell(now_ns, &Fact::InputPushed { app });
    }

    /// `app` sent `Wait`: if a push to it was unfinished, its handler has finished.
    pub(crate) fn waited(&mut self, now_ns: u64, app: AppId) {
        let Some(s) = self.pushed.get_mut(app.index as usize) else {
            return;
        };
        if *s == Some(app.generation) {
            *s = None;
            self.tell(now_ns, &Fact::HandlerFinished { app });
        }
    }
}

#[cfg(test)]
mod tests;
