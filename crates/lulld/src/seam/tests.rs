//! guiS's table 1 through the seam: `Table1` told the facts the daemon tells it, its actions
//! applied by the actuator to live threads of this test process, with each freezer kind this
//! machine has (`SKIPPED` for the others).

use super::*;
use lull_actuate::freezer::FreezerKind;
use lull_actuate::test_support::{self, serial_adoption, subdirs, thread_cgroups, Sleeper};
use lull_model::WindowState;
use lull_sched::guis::Table1;

const APP: AppId = AppId {
    index: 1,
    generation: 0,
};

const BACKGROUND: WindowState = WindowState {
    stacking: lull_model::Stacking::Background,
    ..WindowState::FRONT
};

/// Table 1 on the seam with a freezer of `kind`, outside a daemon; `None` (printed `SKIPPED`)
/// without one.
fn host(test: &str, kind: FreezerKind) -> Option<SeamHost> {
    let freezer = test_support::open(test, kind)?;
    Some(SeamHost::new(
        vec![Box::new(Table1::new())],
        Actuator::new(Ok(freezer)),
    ))
}

/// `policies` on the seam with no freezer, for tests that freeze nothing.
fn without_freezer(policies: Vec<Box<dyn SeamPolicy>>) -> SeamHost {
    SeamHost::new(policies, Actuator::new(Err("none in this test".into())))
}

fn pid() -> i32 {
    std::process::id() as i32
}

/// Thread `tid` of this process as the daemon names it for an app attached while the process's
/// start time reads as the actuator reads it now.
fn named_now(s: &SeamHost, tid: i32) -> ThreadRef {
    ThreadRef {
        pid: pid(),
        tid,
        process_start_ticks: s.actuator.start_ticks_seen(pid()),
    }
}

fn holds(s: &SeamHost) -> bool {
    s.actuator.freezer().unwrap().holds(pid())
}

/// Waits until the kernel reports the adopted thread `tid` of this process frozen.
fn settled_frozen(s: &SeamHost, tid: i32) {
    let f = s.actuator.freezer().unwrap();
    let h = f.handles(pid()).into_iter().find(|h| h.tid == tid).unwrap();
    f.wait_settled(&h, true, test_support::GIVE_UP).unwrap();
}

fn background(s: &mut SeamHost, app: AppId) {
    s.tell(
        0,
        &Fact::WindowChanged {
            app,
            window: BACKGROUND,
        },
    );
}

/// Drawing declared T1, T2, T1 while table 1 forbids drawing: each adopted thread is frozen,
/// each replaced one thawed and given back (its process stays held: the release and the new
/// adoption are one batch), so the third declaration adopts T1 again; when the app leaves the
/// process is released and back where it was, no cgroup left.
fn redeclaring_gives_threads_back(kind: FreezerKind) {
    let _serial = serial_adoption();
    let Some(mut s) = host("seam-redeclare", kind) else {
        return;
    };
    let (t1, t2) = (Sleeper::start(), Sleeper::start());
    let before = [t1.tid, t2.tid, sys::gettid()].map(thread_cgroups);
    let root = s.actuator.freezer().unwrap().root().to_owned();
    let leaf = |tid: i32| root.join(pid().to_string()).join(format!("drawing-{tid}"));
    background(&mut s, APP);
    for (tid, old) in [(t1.tid, None), (t2.tid, Some(&t1)), (t1.tid, Some(&t2))] {
        s.declare(1, APP, ThreadCategory::Drawing, named_now(&s, tid));
        assert!(leaf(tid).is_dir());
        settled_frozen(&s, tid);
        if let Some(old) = old {
            old.answers();
            assert!(!leaf(old.tid).exists());
        }
        // Declared again as itself: asked again, and it already is as asked.
        s.declare(1, APP, ThreadCategory::Drawing, named_now(&s, tid));
    }
    assert_eq!(s.actuator.freezer().unwrap().handles(pid()).len(), 1);
    s.app_gone(2, APP);
    t1.answers();
    assert!(!holds(&s));
    assert_eq!([t1.tid, t2.tid, sys::gettid()].map(thread_cgroups), before);
    assert!(subdirs(&root).is_empty(), "{:?}", subdirs(&root));
    let c = s.actuator.counters();
    assert_eq!(
        (c.adopted, c.adopt_failed, c.freezes, c.thaws),
        (3, 0, 3, 0)
    );
    assert_eq!((c.released, c.release_errors, c.pid_reused), (1, 0, 0));
    let r = s.report().actuator;
    assert_eq!((r.freeze.applied, r.release.applied), (6, 3));
    assert_eq!(r.freeze.refused_total() + r.release.refused_total(), 0);
    s.close();
    assert!(!root.exists());
}

/// When the process the actuator holds turns out to have exited and its pid to name another
/// process (simulated: `forge_pid_reuse`), it is counted and dropped without acting on the pid;
/// the apps attached from the exited process — whose threads carry its start time — adopt and
/// release nothing more; an app attached from the new process adopts afresh.
fn reused_pid_is_counted_and_not_trusted(kind: FreezerKind) {
    let _serial = serial_adoption();
    let Some(mut s) = host("seam-reuse", kind) else {
        return;
    };
    let (app2, app3) = (AppId { index: 2, ..APP }, AppId { index: 3, ..APP });
    let (t1, t2) = (Sleeper::start(), Sleeper::start());
    let before = [t1.tid, t2.tid, sys::gettid()].map(thread_cgroups);
    let root = s.actuator.freezer().unwrap().root().to_owned();
    for app in [APP, app2, app3] {
        background(&mut s, app);
    }
    let first = |tid| named_now(&s, tid);
    let (first_t1, first_t2) = (first(t1.tid), first(t2.tid));

    // Found on re-declaration (giving back the replaced thread).
    s.declare(1, APP, ThreadCategory::Drawing, first_t1);
    settled_frozen(&s, t1.tid);
    s.actuator.forge_pid_reuse(pid());
    s.declare(1, APP, ThreadCategory::Drawing, first_t2);
    t1.answers();
    assert!(!holds(&s));
    assert!(subdirs(&root).is_empty());
    let c = s.actuator.counters();
    assert_eq!((c.pid_reused, c.adopt_failed), (1, 1));

    // An app of the pid's new process adopts afresh; then found on another app's adoption.
    let second_t2 = named_now(&s, t2.tid);
    s.declare(1, app2, ThreadCategory::Foreground, second_t2);
    settled_frozen(&s, t2.tid);
    s.actuator.forge_pid_reuse(pid());
    s.declare(1, app3, ThreadCategory::Drawing, named_now(&s, t1.tid));
    t2.answers();
    let handles = s.actuator.freezer().unwrap().handles(pid());
    assert_eq!(handles.iter().map(|h| h.tid).collect::<Vec<_>>(), [t1.tid]);
    assert_eq!(s.actuator.counters().pid_reused, 2);

    // Apps of exited processes adopt and release nothing; the current one releases its process.
    s.declare(1, APP, ThreadCategory::Foreground, first_t2);
    s.declare(1, app2, ThreadCategory::Drawing, second_t2);
    s.app_gone(2, APP);
    s.app_gone(2, app2);
    assert!(holds(&s));
    s.app_gone(2, app3);
    t1.answers();
    assert!(!holds(&s));
    assert!(subdirs(&root).is_empty(), "{:?}", subdirs(&root));
    assert_eq!([t1.tid, t2.tid, sys::gettid()].map(thread_cgroups), before);
    let c = s.actuator.counters();
    assert_eq!((c.adopted, c.adopt_failed, c.pid_reused), (3, 3, 2));
    assert_eq!((c.released, c.release_errors), (1, 0));
    let r = s.report().actuator;
    assert_eq!((r.freeze.applied, r.freeze.refused_as("stale")), (3, 3));
    assert_eq!((r.release.applied, r.release.refused_as("stale")), (1, 5));
    s.close();
}

lull_actuate::per_freezer_kind!(
    redeclaring_gives_threads_back,
    reused_pid_is_counted_and_not_trusted,
);

/// The facts of the event path: a push marks the app's handler as running, its next `Wait`
/// finishes it (once); a `Wait` with no push before it is not a finished handler. Table 1 asks
/// nothing of them, so the actuator is never called.
#[test]
fn pushes_and_waits_become_input_and_handler_facts() {
    #[derive(Debug, Default)]
    struct Recorder(std::rc::Rc<std::cell::RefCell<Vec<Fact>>>);
    impl SeamPolicy for Recorder {
        fn name(&self) -> &'static str {
            "recorder"
        }
        fn on_fact(&mut self, _now_ns: u64, fact: &Fact, _out: &mut Vec<Action>) {
            self.0.borrow_mut().push(*fact);
        }
    }
    let seen = std::rc::Rc::default();
    let mut s = without_freezer(vec![
        Box::new(Recorder(std::rc::Rc::clone(&seen))),
        Box::new(Table1::new()),
    ]);
    let other = AppId {
        index: 1,
        generation: 1,
    };
    s.connected(APP);
    s.waited(0, APP);
    s.input_pushed(1, APP);
    // The slot's next owner is another app: its Wait finishes nothing of APP's.
    s.waited(2, other);
    s.waited(3, APP);
    s.waited(4, APP);
    assert_eq!(
        *seen.borrow(),
        [
            Fact::InputPushed { app: APP },
            Fact::HandlerFinished { app: APP }
        ]
    );
    assert_eq!(s.report().policies, ["recorder", "guis"]);
    let r = s.report().actuator;
    for k in lull_sched::seam::ActionKind::ALL {
        let k = r.kind(k);
        assert_eq!(k.applied + k.put_off + k.unavailable + k.refused_total(), 0);
    }
}

/// What the seam adds to the event path with table 1 on: per push, the `InputPushed` fact (the
/// slot mark, every policy told, nothing to apply) and, at the app's next `Wait`, the
/// `HandlerFinished` fact — measured on this machine without the clock reads (the daemon reads
/// `CLOCK_MONOTONIC` once per fact, about 20 ns through the vDSO). Prints ns per push and `Wait`;
/// asserts nothing about time. Run with `--release --ignored --nocapture`.
#[test]
#[ignore = "measurement; run by hand"]
fn push_path_cost() {
    const ROUNDS: u32 = 1_000_000;
    let mut s = without_freezer(vec![Box::new(Table1::new())]);
    let apps: Vec<AppId> = (0..8)
        .map(|index| AppId {
            index,
            generation: 0,
        })
        .collect();
    for &app in &apps {
        s.connected(app);
        background(&mut s, app);
    }
    let start = std::time::Instant::now();
    for r in 0..ROUNDS {
        let app = apps[r as usize % apps.len()];
        s.input_pushed(u64::from(r), std::hint::black_box(app));
        s.waited(u64::from(r), std::hint::black_box(app));
    }
    let ns = start.elapsed().as_nanos() as f64 / f64::from(ROUNDS);
    println!("{ns:.1} ns per push and Wait (table 1, 8 apps)");
}

/// Records the process facts it is told (and asks for a deadline only when told to).
#[derive(Debug, Default)]
struct Recorder {
    facts: std::rc::Rc<std::cell::RefCell<Vec<Fact>>>,
    deadline: Option<u64>,
    samples: std::rc::Rc<std::cell::RefCell<Vec<Option<ThreadSample>>>>,
}

impl SeamPolicy for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn on_fact(&mut self, _: u64, fact: &Fact, _: &mut Vec<Action>) {
        self.facts.borrow_mut().push(*fact);
    }
    fn wants_process_facts(&self) -> bool {
        true
    }
    fn next_deadline_ns(&self) -> Option<u64> {
        self.deadline
    }
    fn on_deadline(
        &mut self,
        _: u64,
        usage: &mut dyn FnMut(ThreadRef) -> Option<ThreadSample>,
        _: &mut Vec<Action>,
    ) {
        let me = ThreadRef {
            pid: pid(),
            tid: sys::gettid(),
            process_start_ticks: 0,
        };
        self.samples.borrow_mut().push(usage(me));
        self.deadline = None;
    }
}

/// Blocks until `fd` is readable (no timeout: what the test waits for is the kernel's event).
fn wait_readable(fd: std::os::fd::RawFd) {
    let _ = sys::poll_readable(&[fd], None, &mut [false]);
}

/// A child forked and reaped here reaches the policy as `Forked` then `Exited`, named with the
/// pid the kernel gave it and this process as its parent. Root only.
#[test]
fn a_child_is_told_as_forked_then_exited() {
    let connector = match ProcConnector::open() {
        Ok(c) => c,
        Err(e) => {
            lull_testkit::skip(&e);
            return;
        }
    };
    let rec = Recorder::default();
    let facts = std::rc::Rc::clone(&rec.facts);
    let mut s = without_freezer(vec![Box::new(rec)]);
    assert!(s.wants_process_facts());
    let fd = connector.raw();
    s.start_process_facts(Some(connector), None);
    // `cat` waits on its stdin, so it is alive (its start time readable) when its fork is
    // read; closing the pipe ends it.
    let mut child = std::process::Command::new("cat")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let cpid = child.id() as i32;
    let forked = |f: &Fact| matches!(*f, Fact::Forked { child, .. } if child.tid == cpid);
    while !facts.borrow().iter().any(forked) {
        wait_readable(fd);
        s.process_events();
    }
    drop(child.stdin.take());
    child.wait().unwrap();
    let exited = |f: &Fact| matches!(*f, Fact::Exited { thread } if thread.tid == cpid);
    while !facts.borrow().iter().any(exited) {
        wait_readable(fd);
        s.process_events();
    }
    let mine: Vec<Fact> = facts
        .borrow()
        .iter()
        .filter(|f| match **f {
            Fact::Forked { child, .. } => child.pid == cpid,
            Fact::Exited { thread } => thread.pid == cpid,
            _ => false,
        })
        .copied()
        .collect();
    let [Fact::Forked { parent, child }, Fact::Exited { thread }] = mine[..] else {
        panic!("expected Forked then Exited, got {mine:?}");
    };
    assert_eq!((parent.pid, child.pid, child.tid), (pid(), cpid, cpid));
    assert_eq!(
        parent.process_start_ticks,
        procfs::process_start_ticks(pid()).unwrap()
    );
    assert_eq!(thread, child, "the exit names the task the fork did");
    let r = s.report();
    let pf = r.process_facts.unwrap();
    assert!(
        pf.forked >= 1 && pf.exited >= 1 && pf.connector.malformed == 0,
        "{pf:?}"
    );
}

/// The deadline timer is armed only while a policy asks, and its firing runs the policy with
/// the thread's CPU use read from `/proc`.
#[test]
fn the_deadline_timer_runs_only_when_asked() {
    let rec = Recorder {
        deadline: Some(1),
        ..Recorder::default()
    };
    let samples = std::rc::Rc::clone(&rec.samples);
    let mut s = without_freezer(vec![Box::new(rec)]);
    s.set_timer(TimerFd::new().unwrap());
    assert_eq!(s.timer.as_ref().unwrap().1, Some(1));
    let fd = s.timer.as_ref().unwrap().0.raw();
    wait_readable(fd);
    s.deadline();
    let got = samples.borrow().clone();
    assert_eq!(got.len(), 1);
    assert!(got[0].is_some(), "this thread's CPU use reads");
    // The policy asks nothing more: disarmed.
    assert_eq!(s.timer.as_ref().unwrap().1, None);
    assert_eq!(s.report().deadlines, 1);
}

// ---------------------------------------------------------------------------------------------
// The interactive boost through the seam, beside table 1 (root: negative nice values).

mod boost {
    use super::*;
    use lull_sched::boost::seam::{BoostMode, BoostSeam, BoostSeamConfig};

    const C_NS: u64 = 10_000_000;

    fn nice_of(tid: i32) -> i32 {
        procfs::thread_nice(pid(), tid).unwrap()
    }

    fn boost(mode: BoostMode) -> Box<BoostSeam> {
        Box::new(
            BoostSeam::new(BoostSeamConfig {
                c_ns: C_NS,
                ..BoostSeamConfig::new(mode)
            })
            .unwrap(),
        )
    }

    /// APP connects, declares `thread` its event thread and is pushed an event.
    fn pushed_with_event_thread(s: &mut SeamHost, thread: ThreadRef) {
        s.connected(APP);
        s.declare(1, APP, ThreadCategory::Event, thread);
        s.input_pushed(2, APP);
    }

    /// Table 1 freezes the drawing thread (the app is behind) while the boost raises and gives
    /// back the event and drawing threads' nice: the boost's `RestoreSched` leaves the freezer's
    /// hold alone, the thaw leaves the nice alone, and when the app goes both are undone.
    fn boost_and_table_1_do_not_fight(kind: FreezerKind) {
        if sys::geteuid() != 0 {
            lull_testkit::skip("negative nice values need root");
            return;
        }
        let _serial = serial_adoption();
        let Some(freezer) = test_support::open("seam-boost", kind) else {
            return;
        };
        let mut s = SeamHost::new(
            vec![Box::new(Table1::new()), boost(BoostMode::Nice)],
            Actuator::new(Ok(freezer)),
        );
        let (ev, draw) = (Sleeper::start(), Sleeper::start());
        assert_eq!((nice_of(ev.tid), nice_of(draw.tid)), (0, 0));
        s.connected(APP);
        background(&mut s, APP);
        s.declare(1, APP, ThreadCategory::Event, named_now(&s, ev.tid));
        s.declare(1, APP, ThreadCategory::Drawing, named_now(&s, draw.tid));
        settled_frozen(&s, draw.tid);
        // Ten hogs on two CPUs, C = 10 ms: eq. 6 gives nice −11.
        s.tell(
            2,
            &Fact::RunQueues {
                runnable: 10,
                cpus: 2,
            },
        );
        s.input_pushed(2, APP);
        assert_eq!((nice_of(ev.tid), nice_of(draw.tid)), (-11, -11));
        s.waited(3, APP);
        assert_eq!((nice_of(ev.tid), nice_of(draw.tid)), (0, -11));
        assert!(s.actuator.holds(named_now(&s, draw.tid)));
        // The budget ran out long ago (the push's stamp was 2 ns after boot).
        s.deadline();
        assert_eq!(nice_of(draw.tid), 0);
        // Still frozen by table 1, still held by the freezer.
        let f = s.actuator.freezer().unwrap();
        let h = f
            .handles(pid())
            .into_iter()
            .find(|h| h.tid == draw.tid)
            .unwrap();
        assert!(f.is_frozen(&h).unwrap());
        // Raised again, then the app leaves mid-handler: everything is given back.
        s.input_pushed(4, APP);
        assert_eq!((nice_of(ev.tid), nice_of(draw.tid)), (-11, -11));
        s.app_gone(5, APP);
        draw.answers();
        assert_eq!((nice_of(ev.tid), nice_of(draw.tid)), (0, 0));
        assert!(!holds(&s));
        assert_eq!(s.actuator.held_threads(), 0);
        let r = s.report();
        assert_eq!(r.actuator.nice.applied, 4);
        assert_eq!(r.actuator.restore_sched.applied, 2);
        assert_eq!(r.actuator.nice.refused_total(), 0);
        assert_eq!(r.policy_counters["boost"]["restored_at_budget"], 1);
        s.close();
    }

    /// A thread named with a start time its pid no longer has (the process exited and the pid
    /// names a later one) is never touched: the boost's actions are refused as stale.
    #[test]
    fn a_reused_pid_is_refused() {
        let mut s = without_freezer(vec![boost(BoostMode::Slice)]);
        let t = Sleeper::start();
        let mut stale = named_now(&s, t.tid);
        stale.process_start_ticks += 1;
        let slice_before = sys::sched_getattr(t.tid).unwrap();
        pushed_with_event_thread(&mut s, stale);
        s.waited(3, APP);
        assert_eq!(sys::sched_getattr(t.tid).unwrap(), slice_before);
        let r = s.report().actuator;
        assert_eq!(r.slice.applied, 0);
        assert_eq!(r.slice.refused_as("stale"), 1);
        assert_eq!(s.actuator.held_threads(), 0);
        s.close();
    }

    /// Slice mode on a live thread (any user may shorten its own threads' slices): the slice is
    /// set at the push and the default is back at the wait.
    #[test]
    fn slice_mode_gives_the_slice_back() {
        let mut s = without_freezer(vec![boost(BoostMode::Slice)]);
        let t = Sleeper::start();
        let before = sys::sched_getattr(t.tid).unwrap();
        let thread = named_now(&s, t.tid);
        pushed_with_event_thread(&mut s, thread);
        let r = s.report().actuator;
        if r.slice.unavailable_reason.is_some() {
            lull_testkit::skip(format!("{:?}", r.slice.unavailable_reason));
            return;
        }
        assert_eq!(sys::sched_getattr(t.tid).unwrap().runtime_ns, 100_000);
        s.waited(3, APP);
        assert_eq!(sys::sched_getattr(t.tid).unwrap(), before);
        assert_eq!(s.actuator.held_threads(), 0);
        s.close();
    }

    lull_actuate::per_freezer_kind!(boost_and_table_1_do_not_fight);
}
