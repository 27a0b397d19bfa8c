//! Seed 003's interactive boost on the policy seam ([`crate::seam`]): the framework, which knows
//! which thread receives each input event, raises that thread before the event reaches it and
//! lowers it again when the interaction is over.
//!
//! | fact | what [`BoostSeam`] does |
//! | --- | --- |
//! | `ThreadDeclared` (category `Event` or `Drawing`) | remembers the app's event and drawing threads; a thread replaced while boosted gets `RestoreSched` |
//! | `RunQueues` | remembers the load (nice mode only asks for it) |
//! | `InputPushed` | boosts the app's event thread, and its drawing thread when declared: nice mode `Nice` to eq. 6's level ([`boost_nice`]) against the remembered load, slice mode `Slice` of the configured slice; the boost's budget ends C after the push |
//! | `HandlerFinished` | `RestoreSched` of the event thread (it blocks: the seed drops the boost when the task blocks). The drawing thread, which draws the frame the handler asked for after the handler returned, keeps its boost until the budget ends |
//! | the deadline (the budget C ran out) | `RestoreSched` of every thread of the app still boosted |
//! | `AppGone` | `Release` of its declared threads |
//!
//! **Only clients are touched.** The policy acts on no thread but those an app declared
//! (`ThreadDeclared`, which the daemon tells only for a thread of the process attached to the
//! display server). A push to an app that declared no event thread is counted (`no_thread`) and
//! does nothing.
//!
//! **The load.** Eq. 6 needs the run queue the woken thread joins. The substrate tells the
//! machine's runnable count and CPUs ([`Fact::RunQueues`]); the policy takes the thread to join
//! the least loaded queue, `⌊runnable / cpus⌋` other tasks, all at nice 0
//! ([`RunQueueLoad::nice0`]): live, the weights of other processes' tasks are not read on the event
//! path.
//!
//! **Levels.** A thread already boosted to the nice asked is not asked again; a push while boosted
//! against a changed load asks the new level. Eq. 6 giving nice 0 or higher asks nothing (the
//! thread's own weight already covers C; counted `unneeded`): a boost only raises.
//!
//! **The budget.** The seed's boost lasts one slice, sized by eq. 6 to hold the interaction's
//! work C. Live the daemon cannot see the slice end, so the boost ends C of wall time after the
//! push (boosted, the thread runs from about its wakeup, so the two differ by its wakeup
//! latency), or earlier for the event thread when it waits again.

use std::collections::BTreeMap;

use lull_model::{AppId, ThreadCategory};

use crate::boost::{boost_nice, RunQueueLoad, BOOST_SLICE_NS, DEFAULT_C_NS};
use crate::class::eevdf::{
    MAX_CUSTOM_SLICE_NS as SLICE_MAX_NS, MIN_CUSTOM_SLICE_NS as SLICE_MIN_NS,
};
use crate::seam::{Action, Fact, SeamPolicy, ThreadRef, ThreadSample};

/// The largest budget C taken: one second. The seed's values are 3, 10 and 100 ms (§IV, §VI-B-1);
/// a longer budget would let an app hold nice −20 through work that is no longer a response.
pub const MAX_C_NS: u64 = 1_000_000_000;

/// How the boost raises a thread.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BoostMode {
    /// `setpriority` to the nice eq. 6 gives (the seed's weight boost).
    Nice,
    /// `sched_setattr` with a short custom slice (Linux 6.12+ EEVDF); the weight stays.
    Slice,
}

impl BoostMode {
    /// The name flags and reports use.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            BoostMode::Nice => "nice",
            BoostMode::Slice => "slice",
        }
    }

    #[must_use]
    pub fn from_name(s: &str) -> Option<BoostMode> {
        [BoostMode::Nice, BoostMode::Slice]
            .into_iter()
            .find(|m| m.name() == s)
    }
}

/// How to boost.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BoostSeamConfig {
    pub mode: BoostMode,
    /// C: the interaction's work, eq. 6's numerator and the boost's budget.
    pub c_ns: u64,
    /// The slice of slice mode.
    pub slice_ns: u64,
}

impl BoostSeamConfig {
    /// `mode` with the seed's C ([`DEFAULT_C_NS`]) and [`BOOST_SLICE_NS`].
    #[must_use]
    pub fn new(mode: BoostMode) -> BoostSeamConfig {
        BoostSeamConfig {
            mode,
            c_ns: DEFAULT_C_NS,
            slice_ns: BOOST_SLICE_NS,
        }
    }

    /// Checks C and the slice.
    ///
    /// # Errors
    /// [`BoostConfigError`] naming the value out of range.
    pub fn validate(&self) -> Result<(), BoostConfigError> {
        if self.c_ns == 0 || self.c_ns > MAX_C_NS {
            return Err(BoostConfigError::C { c_ns: self.c_ns });
        }
        if !(SLICE_MIN_NS..=SLICE_MAX_NS).contains(&self.slice_ns) {
            return Err(BoostConfigError::Slice {
                slice_ns: self.slice_ns,
            });
        }
        Ok(())
    }
}

/// A boost configuration out of range.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum BoostConfigError {
    #[error("boost budget C = {c_ns} ns is outside 1 ns ..= {MAX_C_NS} ns")]
    C { c_ns: u64 },
    #[error(
        "boost slice {slice_ns} ns is outside the kernel's {SLICE_MIN_NS} ..= {SLICE_MAX_NS} ns"
    )]
    Slice { slice_ns: u64 },
}

/// What the policy did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct BoostCounters {
    pub pushes: u64,
    /// Threads raised (a thread counts once per boost, however many pushes it spans).
    pub boosted: u64,
    /// Pushes for which eq. 6 gave nice 0 or above: nothing to raise.
    pub unneeded: u64,
    /// Pushes to apps that declared no event thread.
    pub no_thread: u64,
    /// Event threads given back when they waited again.
    pub restored_at_wait: u64,
    /// Threads given back when the budget ran out.
    pub restored_at_budget: u64,
    /// Threads released when their app left.
    pub released: u64,
}

/// One app's threads and boost.
#[derive(Clone, Copy, Debug, Default)]
struct AppBoost {
    event: Option<ThreadRef>,
    drawing: Option<ThreadRef>,
    /// The level each is raised to now (`nice` mode: its nice; slice mode: 0).
    event_at: Option<i8>,
    drawing_at: Option<i8>,
    /// When the budget runs out, while anything is raised.
    until_ns: Option<u64>,
}

impl AppBoost {
    fn raised(&self) -> bool {
        self.event_at.is_some() || self.drawing_at.is_some()
    }
}

/// Seed 003's interactive boost as a [`SeamPolicy`]; see the module docs.
#[derive(Clone, Debug)]
pub struct BoostSeam {
    config: BoostSeamConfig,
    apps: BTreeMap<AppId, AppBoost>,
    runnable: u32,
    cpus: u32,
    counters: BoostCounters,
}

impl BoostSeam {
    /// A boost with `config`.
    ///
    /// # Errors
    /// [`BoostConfigError`] for a C or slice out of range.
    pub fn new(config: BoostSeamConfig) -> Result<BoostSeam, BoostConfigError> {
        config.validate()?;
        Ok(BoostSeam {
            config,
            apps: BTreeMap::new(),
            runnable: 0,
            cpus: 1,
            counters: BoostCounters::default(),
        })
    }

    #[must_use]
    pub fn config(&self) -> BoostSeamConfig {
        self.config
    }

    #[must_use]
    pub fn boost_counters(&self) -> BoostCounters {
        self.counters
    }

    /// The queue a woken thread joins, from the last [`Fact::RunQueues`].
    #[must_use]
    pub fn load(&self) -> RunQueueLoad {
        RunQueueLoad::nice0(u64::from(self.runnable / self.cpus.max(1)))
    }

    /// The level a push asks now: nice mode eq. 6's nice (`None` when it is 0 or above), slice
    /// mode 0.
    fn level(&self) -> Option<i8> {
        match self.config.mode {
            BoostMode::Nice => Some(boost_nice(self.config.c_ns, self.load())).filter(|&n| n < 0),
            BoostMode::Slice => Some(0),
        }
    }

    fn raise(&self, thread: ThreadRef, level: i8, out: &mut Vec<Action>) {
        out.push(match self.config.mode {
            BoostMode::Nice => Action::Nice {
                thread,
                nice: level,
            },
            BoostMode::Slice => Action::Slice {
                thread,
                slice_ns: self.config.slice_ns,
            },
        });
    }

    fn push(&mut self, now_ns: u64, app: AppId, out: &mut Vec<Action>) {
        self.counters.pushes += 1;
        let Some(a) = self.apps.get(&app).copied() else {
            self.counters.no_thread += 1;
            return;
        };
        let Some(event) = a.event else {
            self.counters.no_thread += 1;
            return;
        };
        let Some(level) = self.level() else {
            self.counters.unneeded += 1;
            return;
        };
        let mut next = a;
        for (thread, at) in [
            (Some(event), &mut next.event_at),
            (a.drawing, &mut next.drawing_at),
        ] {
            let Some(thread) = thread else { continue };
            if *at != Some(level) {
                if at.is_none() {
                    self.counters.boosted += 1;
                }
                self.raise(thread, level, out);
                *at = Some(level);
            }
        }
        next.until_ns = Some(now_ns.saturating_add(self.config.c_ns));
        self.apps.insert(app, next);
    }

    fn declared(
        &mut self,
        app: AppId,
        thread: ThreadRef,
        category: ThreadCategory,
        out: &mut Vec<Action>,
    ) {
        let a = self.apps.entry(app).or_default();
        let (slot, at) = match category {
            ThreadCategory::Event => (&mut a.event, &mut a.event_at),
            ThreadCategory::Drawing => (&mut a.drawing, &mut a.drawing_at),
            ThreadCategory::Foreground | ThreadCategory::Background => return,
        };
        if let Some(old) = slot.replace(thread).filter(|&o| o != thread) {
            if at.take().is_some() {
                out.push(Action::RestoreSched { thread: old });
            }
        }
        if !a.raised() {
            a.until_ns = None;
        }
    }
}

impl SeamPolicy for BoostSeam {
    fn name(&self) -> &'static str {
        "boost"
    }

    fn on_fact(&mut self, now_ns: u64, fact: &Fact, out: &mut Vec<Action>) {
        match *fact {
            Fact::ThreadDeclared {
                app,
                thread,
                category,
            } => self.declared(app, thread, category, out),
            Fact::RunQueues { runnable, cpus } => {
                self.runnable = runnable;
                self.cpus = cpus.max(1);
            }
            Fact::InputPushed { app } => self.push(now_ns, app, out),
            Fact::HandlerFinished { app } => {
                if let Some(a) = self.apps.get_mut(&app) {
                    if let (Some(thread), Some(_)) = (a.event, a.event_at.take()) {
                        self.counters.restored_at_wait += 1;
                        out.push(Action::RestoreSched { thread });
                    }
                    if !a.raised() {
                        a.until_ns = None;
                    }
                }
            }
            Fact::AppGone { app } => {
                if let Some(a) = self.apps.remove(&app) {
                    for thread in [a.event, a.drawing].into_iter().flatten() {
                        self.counters.released += 1;
                        out.push(Action::Release { thread });
                    }
                }
            }
            Fact::WindowChanged { .. }
            | Fact::Forked { .. }
            | Fact::Exited { .. }
            | Fact::Adopted { .. } => {}
        }
    }

    fn wants_run_queues(&self) -> bool {
        self.config.mode == BoostMode::Nice
    }

    /// The event thread's boost ends when its handler does.
    fn wants_handler_finished(&self) -> bool {
        true
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = self.counters;
        vec![
            ("pushes", c.pushes),
            ("boosted", c.boosted),
            ("unneeded", c.unneeded),
            ("no_thread", c.no_thread),
            ("restored_at_wait", c.restored_at_wait),
            ("restored_at_budget", c.restored_at_budget),
            ("released", c.released),
        ]
    }

    fn next_deadline_ns(&self) -> Option<u64> {
        self.apps.values().filter_map(|a| a.until_ns).min()
    }

    fn on_deadline(
        &mut self,
        now_ns: u64,
        _usage: &mut dyn FnMut(ThreadRef) -> Option<ThreadSample>,
        out: &mut Vec<Action>,
    ) {
        for a in self.apps.values_mut() {
            if a.until_ns.is_none_or(|t| t > now_ns) {
                continue;
            }
            a.until_ns = None;
            for (thread, at) in [(a.event, &mut a.event_at), (a.drawing, &mut a.drawing_at)] {
                if let (Some(thread), Some(_)) = (thread, at.take()) {
                    self.counters.restored_at_budget += 1;
                    out.push(Action::RestoreSched { thread });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn app(i: u32) -> AppId {
        AppId {
            index: i,
            generation: 1,
        }
    }

    fn t(tid: i32) -> ThreadRef {
        ThreadRef {
            pid: 100,
            tid,
            process_start_ticks: 7,
        }
    }

    fn tell(p: &mut BoostSeam, now: u64, f: Fact) -> Vec<Action> {
        let mut out = Vec::new();
        p.on_fact(now, &f, &mut out);
        out
    }

    /// `runnable` tasks on `cpus` CPUs.
    fn run_queues(p: &mut BoostSeam, now: u64, runnable: u32, cpus: u32) -> Vec<Action> {
        tell(p, now, Fact::RunQueues { runnable, cpus })
    }

    /// App `app_index` declares thread `tid` of `category`.
    fn declare(
        p: &mut BoostSeam,
        now: u64,
        app_index: u32,
        tid: i32,
        category: ThreadCategory,
    ) -> Vec<Action> {
        let declared = Fact::ThreadDeclared {
            app: app(app_index),
            thread: t(tid),
            category,
        };
        tell(p, now, declared)
    }

    /// An input event pushed to app `app_index`.
    fn pushed(p: &mut BoostSeam, now: u64, app_index: u32) -> Vec<Action> {
        let a = app(app_index);
        tell(p, now, Fact::InputPushed { app: a })
    }

    /// App `app_index`'s handler finished (its event thread waits again).
    fn finished(p: &mut BoostSeam, now: u64, app_index: u32) -> Vec<Action> {
        let a = app(app_index);
        tell(p, now, Fact::HandlerFinished { app: a })
    }

    fn deadline(p: &mut BoostSeam, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        p.on_deadline(now, &mut |_| None, &mut out);
        out
    }

    /// App 1 with event thread 11 and drawing thread 12.
    fn declared(mode: BoostMode, c_ns: u64) -> BoostSeam {
        let mut p = BoostSeam::new(BoostSeamConfig {
            c_ns,
            ..BoostSeamConfig::new(mode)
        })
        .unwrap();
        for (tid, category) in [(11, ThreadCategory::Event), (12, ThreadCategory::Drawing)] {
            assert!(declare(&mut p, 0, 1, tid, category).is_empty());
        }
        p
    }

    fn nice(tid: i32, nice: i8) -> Action {
        Action::Nice {
            thread: t(tid),
            nice,
        }
    }

    fn restore(tid: i32) -> Action {
        Action::RestoreSched { thread: t(tid) }
    }

    /// Ten hogs on two CPUs: five others on the queue the thread joins; with C = 10 ms eq. 6 gives
    /// W′ = 10 × 6 × 1024 / 6 = 10240, so nice −11 (11916; −10 is 9548).
    #[test]
    fn a_push_raises_the_event_and_drawing_threads_to_eq_6s_nice() {
        let mut p = declared(BoostMode::Nice, 10 * MS);
        assert!(p.wants_run_queues());
        assert!(run_queues(&mut p, 0, 10, 2).is_empty());
        assert_eq!(p.load(), RunQueueLoad::nice0(5));
        assert_eq!(boost_nice(10 * MS, RunQueueLoad::nice0(5)), -11);
        let out = pushed(&mut p, 1_000, 1);
        assert_eq!(out, vec![nice(11, -11), nice(12, -11)]);
        assert_eq!(p.next_deadline_ns(), Some(1_000 + 10 * MS));
        // A second push at the same load asks nothing new but moves the budget's end.
        assert!(pushed(&mut p, 2_000, 1).is_empty());
        assert_eq!(p.next_deadline_ns(), Some(2_000 + 10 * MS));
        assert_eq!(p.boost_counters().boosted, 2);
        assert_eq!(p.boost_counters().pushes, 2);
    }

    #[test]
    fn the_event_thread_is_given_back_at_its_next_wait_the_drawing_thread_at_the_budget() {
        let mut p = declared(BoostMode::Nice, 10 * MS);
        run_queues(&mut p, 0, 10, 2);
        pushed(&mut p, 0, 1);
        let out = finished(&mut p, 3 * MS, 1);
        assert_eq!(out, vec![restore(11)]);
        // A second wait gives back nothing more.
        assert!(finished(&mut p, 4 * MS, 1).is_empty());
        assert_eq!(p.next_deadline_ns(), Some(10 * MS));
        assert!(deadline(&mut p, 10 * MS - 1).is_empty());
        assert_eq!(deadline(&mut p, 10 * MS), vec![restore(12)]);
        assert_eq!(p.next_deadline_ns(), None);
        let c = p.boost_counters();
        assert_eq!((c.restored_at_wait, c.restored_at_budget), (1, 1));
    }

    #[test]
    fn the_budget_running_out_gives_back_every_raised_thread() {
        let mut p = declared(BoostMode::Nice, 3 * MS);
        run_queues(&mut p, 0, 10, 2);
        let out = pushed(&mut p, 5, 1);
        assert_eq!(out.len(), 2);
        assert_eq!(p.next_deadline_ns(), Some(5 + 3 * MS));
        assert_eq!(deadline(&mut p, 4 * MS), vec![restore(11), restore(12)]);
        assert_eq!(p.next_deadline_ns(), None);
        // The handler finishing after the budget's end has nothing left to give back.
        assert!(finished(&mut p, 5 * MS, 1).is_empty());
        // The next push raises again.
        assert_eq!(pushed(&mut p, 6 * MS, 1).len(), 2);
        assert_eq!(p.boost_counters().boosted, 4);
    }

    #[test]
    fn an_app_that_leaves_has_its_threads_released() {
        let mut p = declared(BoostMode::Nice, 10 * MS);
        run_queues(&mut p, 0, 4, 2);
        pushed(&mut p, 0, 1);
        let out = tell(&mut p, 1, Fact::AppGone { app: app(1) });
        assert_eq!(
            out,
            vec![
                Action::Release { thread: t(11) },
                Action::Release { thread: t(12) }
            ]
        );
        assert_eq!(p.next_deadline_ns(), None);
        assert!(deadline(&mut p, u64::MAX).is_empty());
        // Its pushes find nothing to raise.
        assert!(pushed(&mut p, 2, 1).is_empty());
        assert_eq!(p.boost_counters().no_thread, 1);
        assert_eq!(p.boost_counters().released, 2);
    }

    #[test]
    fn the_budget_timer_lives_exactly_while_a_thread_is_raised() {
        // The policy's contract with the daemon: its name, and the facts it needs.
        let mut p = declared(BoostMode::Slice, 10 * MS);
        assert_eq!(p.name(), "boost");
        assert!(p.wants_handler_finished());
        pushed(&mut p, 0, 1);
        // The event thread declared again (the same thread): both stay raised, the budget too.
        declare(&mut p, 1, 1, 11, ThreadCategory::Event);
        assert_eq!(p.next_deadline_ns(), Some(10 * MS));
        // An app with an event thread only: once its handler finishes nothing is raised, so no
        // timer is left for it.
        declare(&mut p, 2, 2, 21, ThreadCategory::Event);
        pushed(&mut p, 3, 2);
        finished(&mut p, 4, 2);
        finished(&mut p, 5, 1);
        assert_eq!(deadline(&mut p, 10 * MS), vec![restore(12)]);
        assert_eq!(p.next_deadline_ns(), None);
        assert_eq!(
            p.counters(),
            vec![
                ("pushes", 2),
                ("boosted", 3),
                ("unneeded", 0),
                ("no_thread", 0),
                ("restored_at_wait", 2),
                ("restored_at_budget", 1),
                ("released", 0),
            ]
        );
    }

    #[test]
    fn a_boost_to_nice_0_is_not_a_boost() {
        // C equal to the period of a lone task: W′ = C × 1024 / P = 1024, nice 0's weight.
        let c_ns = crate::class::cfs::period_ns(1);
        assert_eq!(boost_nice(c_ns, RunQueueLoad::nice0(0)), 0);
        let mut p = declared(BoostMode::Nice, c_ns);
        run_queues(&mut p, 0, 0, 1);
        assert!(pushed(&mut p, 1, 1).is_empty());
        assert_eq!(p.boost_counters().unneeded, 1);
    }

    /// Two hogs on two CPUs (the seed's painting experiment): one other task, W′ = 10 × 2048 / 5
    /// = 4096, nice −7 (4904); ten hogs: nice −11. A push while raised asks the new level.
    #[test]
    fn the_load_changes_the_nice() {
        let mut p = declared(BoostMode::Nice, 10 * MS);
        run_queues(&mut p, 0, 2, 2);
        assert_eq!(pushed(&mut p, 0, 1), vec![nice(11, -7), nice(12, -7)]);
        run_queues(&mut p, 1, 10, 2);
        assert_eq!(pushed(&mut p, 2, 1), vec![nice(11, -11), nice(12, -11)]);
        // The same threads, raised further: still one boost each.
        assert_eq!(p.boost_counters().boosted, 2);
        // Three hogs: the least loaded queue holds one of them.
        finished(&mut p, 3, 1);
        run_queues(&mut p, 4, 3, 2);
        assert_eq!(pushed(&mut p, 5, 1), vec![nice(11, -7), nice(12, -7)]);
    }

    #[test]
    fn an_idle_machine_needs_no_boost_when_c_is_below_the_period() {
        let mut p = declared(BoostMode::Nice, MS);
        run_queues(&mut p, 0, 0, 2);
        assert!(pushed(&mut p, 0, 1).is_empty());
        assert_eq!(p.boost_counters().unneeded, 1);
        assert_eq!(p.next_deadline_ns(), None);
    }

    #[test]
    fn slice_mode_sets_the_short_slice_and_gives_it_back() {
        let mut p = declared(BoostMode::Slice, 10 * MS);
        assert!(!p.wants_run_queues());
        let slice = |tid| Action::Slice {
            thread: t(tid),
            slice_ns: BOOST_SLICE_NS,
        };
        assert_eq!(pushed(&mut p, 0, 1), vec![slice(11), slice(12)]);
        assert!(pushed(&mut p, 1, 1).is_empty());
        assert_eq!(finished(&mut p, 2, 1), vec![restore(11)]);
        assert_eq!(deadline(&mut p, 1 + 10 * MS), vec![restore(12)]);
    }

    /// Only threads an app declared are ever acted on: a push to an app that declared none does
    /// nothing, and one app's push never touches another's threads.
    #[test]
    fn threads_of_non_clients_are_never_touched() {
        let mut p = declared(BoostMode::Nice, 10 * MS);
        run_queues(&mut p, 0, 10, 2);
        for f in [
            Fact::InputPushed { app: app(2) },
            Fact::HandlerFinished { app: app(2) },
            Fact::AppGone { app: app(2) },
            Fact::WindowChanged {
                app: app(1),
                window: lull_model::WindowState::FRONT,
            },
            Fact::Forked {
                parent: t(11),
                child: t(99),
            },
            Fact::Adopted { thread: t(98) },
            Fact::Exited { thread: t(97) },
        ] {
            assert!(tell(&mut p, 1, f).is_empty(), "{f:?}");
        }
        // An app whose only declared thread is a foreground one has no event thread to raise.
        declare(&mut p, 2, 3, 31, ThreadCategory::Foreground);
        assert!(pushed(&mut p, 3, 3).is_empty());
        assert_eq!(p.boost_counters().no_thread, 2);
        let out = pushed(&mut p, 4, 1);
        assert!(out
            .iter()
            .all(|a| matches!(a.thread(), Some(x) if x == t(11) || x == t(12))));
    }

    #[test]
    fn a_thread_replaced_while_raised_is_given_back() {
        let mut p = declared(BoostMode::Slice, 10 * MS);
        pushed(&mut p, 0, 1);
        let out = declare(&mut p, 1, 1, 13, ThreadCategory::Drawing);
        assert_eq!(out, vec![restore(12)]);
        // The new drawing thread is raised at the next push; the event thread still is.
        let out = pushed(&mut p, 2, 1);
        assert_eq!(
            out,
            vec![Action::Slice {
                thread: t(13),
                slice_ns: BOOST_SLICE_NS
            }]
        );
    }

    #[test]
    fn configurations_out_of_range_are_refused() {
        let c = |c_ns, slice_ns| BoostSeamConfig {
            mode: BoostMode::Nice,
            c_ns,
            slice_ns,
        };
        assert!(BoostSeam::new(c(DEFAULT_C_NS, BOOST_SLICE_NS)).is_ok());
        assert_eq!(
            BoostSeam::new(c(0, BOOST_SLICE_NS)).unwrap_err(),
            BoostConfigError::C { c_ns: 0 }
        );
        assert!(BoostSeam::new(c(MAX_C_NS + 1, BOOST_SLICE_NS)).is_err());
        assert!(BoostSeam::new(c(MAX_C_NS, BOOST_SLICE_NS)).is_ok());
        assert_eq!(
            BoostSeam::new(c(MS, 99_999)).unwrap_err(),
            BoostConfigError::Slice { slice_ns: 99_999 }
        );
        assert!(BoostSeam::new(c(MS, SLICE_MAX_NS + 1)).is_err());
        assert_eq!(BoostMode::from_name("slice"), Some(BoostMode::Slice));
        assert_eq!(BoostMode::from_name("weight"), None);
    }
}
