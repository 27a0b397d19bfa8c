//! Property tests of the ESM over random interleavings of register, unregister, wait, inject,
//! suspend/restore of input handlers, and app crashes, across many apps.
//!
//! The checker holds its own, independent statement of what each app must receive — the apps
//! registered for a kind at injection time, each getting every such event exactly once, in
//! injection order, except events dropped by the documented overflow rule, which a marker
//! accounts for one by one — and compares what the ESM actually pushes with it.
//!
//! The last tests are tests of the test: deliberately broken dispatchers (one that loses an
//! event, one that duplicates one, one that reorders two, one that loses a direct push) must each
//! be caught.

use lull_esm::{Delivery, Esm, EsmConfig, EsmError, Push, RemovedApp};
use lull_model::{AppId, EventKind, EventSeq, HandlerId, RawEvent, TouchPhase};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// What the checker needs of an ESM; the real one and the broken ones implement it.
trait Subject {
    fn add_app(&mut self) -> AppId;
    fn remove_app(&mut self, app: AppId) -> Result<RemovedApp, EsmError>;
    fn register(&mut self, app: AppId, kind: EventKind, h: Option<HandlerId>);
    fn wait(&mut self, app: AppId) -> Option<Push>;
    fn inject(&mut self, raw: RawEvent, now_ns: u64, out: &mut Vec<Push>) -> Option<EventSeq>;
    fn suspend_input(&mut self, app: AppId);
    fn restore_input(&mut self, app: AppId);
    fn esm(&self) -> &Esm;
}

impl Subject for Esm {
    fn add_app(&mut self) -> AppId {
        Esm::add_app(self)
    }
    fn remove_app(&mut self, app: AppId) -> Result<RemovedApp, EsmError> {
        Esm::remove_app(self, app)
    }
    fn register(&mut self, app: AppId, kind: EventKind, h: Option<HandlerId>) {
        Esm::register(self, app, kind, h).unwrap();
    }
    fn wait(&mut self, app: AppId) -> Option<Push> {
        Esm::wait(self, app).unwrap()
    }
    fn inject(&mut self, raw: RawEvent, now_ns: u64, out: &mut Vec<Push>) -> Option<EventSeq> {
        Esm::inject(self, raw, now_ns, |p| out.push(p))
    }
    fn suspend_input(&mut self, app: AppId) {
        Esm::suspend_input(self, app).unwrap();
    }
    fn restore_input(&mut self, app: AppId) {
        Esm::restore_input(self, app).unwrap();
    }
    fn esm(&self) -> &Esm {
        self
    }
}

#[derive(Clone, Debug)]
enum Op {
    Register {
        app: usize,
        kind: EventKind,
        handler: Option<u8>,
    },
    Wait {
        app: usize,
    },
    Inject {
        kind: EventKind,
    },
    Suspend {
        app: usize,
    },
    Restore {
        app: usize,
    },
    Crash {
        app: usize,
    },
}

fn raw_of(kind: EventKind, i: u64) -> RawEvent {
    let v = i as i32;
    match kind {
        EventKind::TouchMotion => RawEvent::Touch {
            phase: TouchPhase::Move,
            x: v,
            y: -v,
        },
        EventKind::TouchPress => RawEvent::Touch {
            phase: TouchPhase::Down,
            x: v,
            y: 0,
        },
        EventKind::TouchRelease => RawEvent::Touch {
            phase: TouchPhase::Up,
            x: 0,
            y: v,
        },
        EventKind::Key => RawEvent::Key {
            code: (i % 200) as u16,
            pressed: i % 2 == 0,
        },
        EventKind::Mouse => RawEvent::Mouse {
            dx: v,
            dy: 1,
            buttons: 0,
        },
        EventKind::NetMessage => RawEvent::Net {
            channel: 1,
            len: i as u32,
        },
        EventKind::Timer => RawEvent::Timer { id: i as u32 },
    }
}

fn kind_strategy() -> impl Strategy<Value = EventKind> {
    (0..EventKind::COUNT as u16).prop_map(|n| EventKind::from_u16(n).unwrap())
}

fn op_strategy(apps: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..apps, kind_strategy(), proptest::option::weighted(0.8, 0u8..4))
            .prop_map(|(app, kind, handler)| Op::Register { app, kind, handler }),
        6 => (0..apps).prop_map(|app| Op::Wait { app }),
        8 => kind_strategy().prop_map(|kind| Op::Inject { kind }),
        1 => (0..apps).prop_map(|app| Op::Suspend { app }),
        1 => (0..apps).prop_map(|app| Op::Restore { app }),
        1 => (0..apps).prop_map(|app| Op::Crash { app }),
    ]
}

/// (queue bound, app count, operations)
fn case_strategy() -> impl Strategy<Value = (usize, usize, Vec<Op>)> {
    (1usize..5, 1usize..7).prop_flat_map(|(bound, apps)| {
        (
            Just(bound),
            Just(apps),
            proptest::collection::vec(op_strategy(apps), 0..250),
        )
    })
}

/// The checker's own model of one app.
#[derive(Default)]
struct Spec {
    registered: [Option<HandlerId>; EventKind::COUNT],
    suspended: Option<[Option<HandlerId>; EventKind::COUNT]>,
    /// Called `wait`, got nothing, and has not been pushed anything since.
    waiting: bool,
    /// Events it must receive, in order, with the handler registered at injection time.
    expected: Vec<(EventSeq, HandlerId)>,
    /// How many of `expected` it has received or had accounted for by a marker.
    consumed: usize,
}

impl Spec {
    fn listens(&self, kind: EventKind) -> Option<HandlerId> {
        self.registered[kind.index()]
    }
}

fn fail(msg: String) -> TestCaseError {
    TestCaseError::fail(msg)
}

/// Checks one delivery to `spec` against what it must receive next.
fn observe(spec: &mut Spec, app: usize, delivery: Delivery) -> Result<(), TestCaseError> {
    match delivery {
        Delivery::Event { handler, event } => {
            let Some(&(seq, h)) = spec.expected.get(spec.consumed) else {
                return Err(fail(format!(
                    "app {app} got {:?} it was never owed (duplicate?)",
                    event.seq
                )));
            };
            if event.seq != seq {
                return Err(fail(format!(
                    "app {app} got {:?} but was owed {:?} next (lost, duplicated or reordered)",
                    event.seq, seq
                )));
            }
            if handler != h {
                return Err(fail(format!(
                    "app {app}: {seq:?} carried {handler:?}, registered {h:?}"
                )));
            }
            spec.consumed += 1;
        }
        Delivery::Overflow {
            dropped,
            first,
            last,
        } => {
            let n = usize::try_from(dropped).unwrap();
            let span = spec
                .expected
                .get(spec.consumed..spec.consumed + n)
                .ok_or_else(|| {
                    fail(format!(
                        "app {app}: marker claims {dropped} drops, fewer were owed"
                    ))
                })?;
            if n == 0 || span[0].0 != first || span[n - 1].0 != last {
                return Err(fail(format!(
                    "app {app}: marker {first:?}..{last:?} x{dropped} does not match owed {:?}",
                    &span.iter().map(|e| e.0).collect::<Vec<_>>()
                )));
            }
            spec.consumed += n;
        }
    }
    Ok(())
}

fn check_counters(
    esm: &Esm,
    injects: u64,
    no_listener: u64,
    dispatched: u64,
) -> Result<(), TestCaseError> {
    esm.check_accounting().map_err(|e| fail(e.to_string()))?;
    let c = esm.counters();
    if (c.raw_injected, c.no_listener, c.dispatched) != (injects, no_listener, dispatched) {
        return Err(fail(format!(
            "counters {:?} disagree with the checker: injects {injects}, no listener {no_listener}, dispatched {dispatched}",
            c
        )));
    }
    Ok(())
}

/// Runs one case against `subject` and checks every delivery and, at the end, that every owed
/// event arrived.
fn run_case<S: Subject>(mut subject: S, apps: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut ids: Vec<AppId> = (0..apps).map(|_| subject.add_app()).collect();
    let mut specs: Vec<Spec> = (0..apps).map(|_| Spec::default()).collect();
    let (mut injects, mut no_listener, mut dispatched) = (0u64, 0u64, 0u64);
    let mut last_seq: Option<EventSeq> = None;
    let mut out = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Register { app, kind, handler } => {
                let h = handler.map(|n| HandlerId(u32::from(n)));
                subject.register(ids[app], kind, h);
                let spec = &mut specs[app];
                match spec.suspended.as_mut() {
                    Some(stash) if kind.is_input() => stash[kind.index()] = h,
                    _ => spec.registered[kind.index()] = h,
                }
            }
            Op::Suspend { app } => {
                subject.suspend_input(ids[app]);
                let spec = &mut specs[app];
                if spec.suspended.is_none() {
                    let mut stash = [None; EventKind::COUNT];
                    for k in EventKind::ALL.into_iter().filter(|k| k.is_input()) {
                        stash[k.index()] = spec.registered[k.index()].take();
                    }
                    spec.suspended = Some(stash);
                }
            }
            Op::Restore { app } => {
                subject.restore_input(ids[app]);
                let spec = &mut specs[app];
                if let Some(stash) = spec.suspended.take() {
                    for k in EventKind::ALL.into_iter().filter(|k| k.is_input()) {
                        spec.registered[k.index()] = stash[k.index()];
                    }
                }
            }
            Op::Wait { app } => match subject.wait(ids[app]) {
                None => {
                    // Nothing to push means nothing is owed beyond what arrived.
                    let spec = &mut specs[app];
                    if spec.consumed != spec.expected.len() {
                        return Err(fail(format!(
                            "step {step}: app {app} entered EV_WAIT owed {} more events",
                            spec.expected.len() - spec.consumed
                        )));
                    }
                    spec.waiting = true;
                }
                Some(p) => {
                    if p.app != ids[app] {
                        return Err(fail(format!(
                            "step {step}: wait of app {app} pushed to {:?}",
                            p.app
                        )));
                    }
                    let spec = &mut specs[app];
                    if spec.waiting {
                        return Err(fail(format!(
                            "step {step}: app {app} in EV_WAIT had a queue"
                        )));
                    }
                    observe(spec, app, p.delivery)?;
                }
            },
            Op::Inject { kind } => {
                injects += 1;
                out.clear();
                let seq = subject.inject(raw_of(kind, step as u64), step as u64, &mut out);
                let listeners: Vec<usize> = (0..apps)
                    .filter(|&a| specs[a].listens(kind).is_some())
                    .collect();
                match (seq, listeners.is_empty()) {
                    (None, true) => no_listener += 1,
                    (Some(seq), false) => {
                        if last_seq.is_some_and(|l| seq <= l) {
                            return Err(fail(format!(
                                "step {step}: sequence {seq:?} not increasing"
                            )));
                        }
                        last_seq = Some(seq);
                        dispatched += listeners.len() as u64;
                        for &a in &listeners {
                            let h = specs[a].listens(kind).unwrap();
                            specs[a].expected.push((seq, h));
                        }
                    }
                    (seq, _) => {
                        return Err(fail(format!(
                            "step {step}: inject returned {seq:?} with listeners {listeners:?}"
                        )))
                    }
                }
                // Exactly the waiting listeners are pushed, each once.
                let mut pushed: Vec<usize> = Vec::new();
                for p in &out {
                    let a = ids.iter().position(|&id| id == p.app).ok_or_else(|| {
                        fail(format!("step {step}: push to unknown app {:?}", p.app))
                    })?;
                    if !specs[a].waiting || pushed.contains(&a) {
                        return Err(fail(format!(
                            "step {step}: app {a} pushed while not waiting"
                        )));
                    }
                    pushed.push(a);
                    specs[a].waiting = false;
                    observe(&mut specs[a], a, p.delivery)?;
                }
                for &a in &listeners {
                    if specs[a].waiting {
                        return Err(fail(format!("step {step}: waiting app {a} was not pushed")));
                    }
                }
            }
            Op::Crash { app } => {
                let before = subject.esm().app_counters(ids[app]).unwrap();
                let removed = subject
                    .remove_app(ids[app])
                    .map_err(|e| fail(e.to_string()))?;
                let spec = &specs[app];
                let owed = (spec.expected.len() - spec.consumed) as u64;
                // Owed events are either still queued (discarded now) or dropped under a marker
                // the app never took.
                let dropped_unreported = owed.checked_sub(removed.discarded_events);
                if dropped_unreported.is_none_or(|d| d > before.overflow_dropped) {
                    return Err(fail(format!(
                        "step {step}: app {app} crashed owed {owed}, discarded {}",
                        removed.discarded_events
                    )));
                }
                ids[app] = subject.add_app();
                specs[app] = Spec::default();
            }
        }
        check_counters(subject.esm(), injects, no_listener, dispatched)?;
    }
    // Drain: every app takes what is left; then nothing may be owed.
    for a in 0..apps {
        let mut guard = 0;
        while let Some(p) = subject.wait(ids[a]) {
            observe(&mut specs[a], a, p.delivery)?;
            guard += 1;
            if guard > 10_000 {
                return Err(fail(format!("app {a}: wait never ran dry")));
            }
        }
        let spec = &specs[a];
        if spec.consumed != spec.expected.len() {
            return Err(fail(format!(
                "app {a} never received {} owed events",
                spec.expected.len() - spec.consumed
            )));
        }
    }
    check_counters(subject.esm(), injects, no_listener, dispatched)
}

fn fresh(bound: usize) -> Esm {
    Esm::new(EsmConfig { queue_bound: bound }).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn every_event_reaches_every_registered_app_once_in_order((bound, apps, ops) in case_strategy()) {
        run_case(fresh(bound), apps, &ops)?;
    }
}

/// Many apps, long runs, roomy queues: the shape of a busy desktop rather than a stress test.
#[test]
fn many_apps_long_interleavings() {
    let strategy = (
        Just(64usize),
        Just(40usize),
        proptest::collection::vec(op_strategy(40), 2000..4000),
    );
    let mut runner = TestRunner::new(Config {
        cases: 32,
        ..Config::default()
    });
    runner
        .run(&strategy, |(bound, apps, ops)| {
            run_case(fresh(bound), apps, &ops)
        })
        .unwrap();
}

// --- tests of the test -------------------------------------------------------------------------

/// Which way a broken ESM misbehaves.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// The n-th push out of a private queue is lost.
    LoseQueued,
    /// The n-th push out of a private queue is pushed again on the next wait.
    DuplicateQueued,
    /// The n-th push out of a private queue is swapped with the one after it.
    ReorderQueued,
    /// The n-th direct push to a waiting app is lost.
    LoseDirect,
}

struct Broken {
    inner: Esm,
    fault: Fault,
    /// Fire at the n-th opportunity.
    at: u32,
    seen: u32,
    held: Option<Push>,
}

impl Broken {
    fn new(bound: usize, fault: Fault, at: u32) -> Broken {
        Broken {
            inner: fresh(bound),
            fault,
            at,
            seen: 0,
            held: None,
        }
    }
}

impl Subject for Broken {
    fn add_app(&mut self) -> AppId {
        self.inner.add_app()
    }
    fn remove_app(&mut self, app: AppId) -> Result<RemovedApp, EsmError> {
        self.inner.remove_app(app)
    }
    fn register(&mut self, app: AppId, kind: EventKind, h: Option<HandlerId>) {
        Subject::register(&mut self.inner, app, kind, h);
    }
    fn wait(&mut self, app: AppId) -> Option<Push> {
        if let Some(p) = self.held.filter(|p| p.app == app) {
            // Duplicate: the same push again. Reorder: the next one went out first; now this.
            self.held = None;
            return Some(p);
        }
        let p = Subject::wait(&mut self.inner, app)?;
        self.seen += 1;
        if self.seen != self.at {
            return Some(p);
        }
        match self.fault {
            Fault::LoseQueued => Subject::wait(&mut self.inner, app),
            Fault::DuplicateQueued => {
                self.held = Some(p);
                Some(p)
            }
            Fault::ReorderQueued => match Subject::wait(&mut self.inner, app) {
                Some(next) => {
                    self.held = Some(p);
                    Some(next)
                }
                None => Some(p),
            },
            Fault::LoseDirect => Some(p),
        }
    }
    fn inject(&mut self, raw: RawEvent, now_ns: u64, out: &mut Vec<Push>) -> Option<EventSeq> {
        let seq = Subject::inject(&mut self.inner, raw, now_ns, out);
        if matches!(self.fault, Fault::LoseDirect) && !out.is_empty() {
            self.seen += 1;
            if self.seen == self.at {
                out.pop();
            }
        }
        seq
    }
    fn suspend_input(&mut self, app: AppId) {
        Subject::suspend_input(&mut self.inner, app);
    }
    fn restore_input(&mut self, app: AppId) {
        Subject::restore_input(&mut self.inner, app);
    }
    fn esm(&self) -> &Esm {
        &self.inner
    }
}

fn caught(fault: Fault) -> bool {
    let mut runner = TestRunner::new(Config {
        cases: 500,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&(case_strategy(), 1u32..6), |((bound, apps, ops), at)| {
            run_case(Broken::new(bound, fault, at), apps, &ops)
        })
        .is_err()
}

#[test]
fn a_lost_queued_event_is_caught() {
    assert!(caught(Fault::LoseQueued));
}

#[test]
fn a_duplicated_event_is_caught() {
    assert!(caught(Fault::DuplicateQueued));
}

#[test]
fn a_reordered_pair_is_caught() {
    assert!(caught(Fault::ReorderQueued));
}

#[test]
fn a_lost_direct_push_is_caught() {
    assert!(caught(Fault::LoseDirect));
}

#[test]
fn the_real_esm_passes_the_broken_ones_harness() {
    // The harness of the tests above, with a fault that never fires, must pass: the catches
    // above are the faults', not the harness's.
    let mut runner = TestRunner::new(Config {
        cases: 200,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&case_strategy(), |(bound, apps, ops)| {
            run_case(Broken::new(bound, Fault::LoseQueued, u32::MAX), apps, &ops)
        })
        .unwrap();
}

#[test]
fn the_cases_exercise_every_path() {
    // A property that never meets an overflow or a crash proves nothing about them.
    use std::cell::Cell;
    let totals = Cell::new([0u64; 5]);
    let mut runner = TestRunner::new(Config {
        cases: 300,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&case_strategy(), |(bound, apps, ops)| {
            let mut esm = fresh(bound);
            run_case(&mut esm, apps, &ops)?;
            let c = esm.counters();
            let mut t = totals.get();
            for (slot, v) in t.iter_mut().zip([
                c.pushed_direct,
                c.pushed_from_queue,
                c.overflow_markers,
                c.discarded_on_exit,
                c.no_listener,
            ]) {
                *slot += v;
            }
            totals.set(t);
            Ok(())
        })
        .unwrap();
    assert!(
        totals.get().iter().all(|&v| v > 0),
        "paths hit: {:?}",
        totals.get()
    );
}

impl<S: Subject> Subject for &mut S {
    fn add_app(&mut self) -> AppId {
        (**self).add_app()
    }
    fn remove_app(&mut self, app: AppId) -> Result<RemovedApp, EsmError> {
        (**self).remove_app(app)
    }
    fn register(&mut self, app: AppId, kind: EventKind, h: Option<HandlerId>) {
        (**self).register(app, kind, h);
    }
    fn wait(&mut self, app: AppId) -> Option<Push> {
        (**self).wait(app)
    }
    fn inject(&mut self, raw: RawEvent, now_ns: u64, out: &mut Vec<Push>) -> Option<EventSeq> {
        (**self).inject(raw, now_ns, out)
    }
    fn suspend_input(&mut self, app: AppId) {
        (**self).suspend_input(app);
    }
    fn restore_input(&mut self, app: AppId) {
        (**self).restore_input(app);
    }
    fn esm(&self) -> &Esm {
        (**self).esm()
    }
}
