//! Background/foreground round trips and input delivery, against a real display server (`lulld`
//! with its KDS, input from an evdev pipe, the app on the KDS runtime with guiS on).
//!
//! The contract (seed 000, figures 26–27; `Esm::suspend_input` / `Esm::restore_input`):
//!
//! - Sending an app to the background takes its input handlers out of the ESM's application
//!   list, in the same step of the daemon's loop as the window-manager request. An input event
//!   injected afterwards is not delivered to it; with no other listener it is dropped and counted
//!   in `EsmCounters::no_listener`, and it gets no sequence number.
//! - The app's private queue is left alone: an event already queued for it (the app was busy in
//!   a handler) when it went to the background is still delivered, once, in order, with the
//!   handler registered when it was injected — while the app is in the background.
//! - Bringing it back to the front restores its handlers (including any it registered while in
//!   the background); events injected afterwards are delivered exactly once, in order.
//!
//! Every phase is sequenced by replies and counters — the window manager's `OK`, the handlers'
//! own reports, and a probe source that reads the ESM inside the daemon's loop — never by sleeps.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::mpsc;
use std::time::Duration;

use lull::kds_client::KdsAdmin;
use lull::kds_runtime::{AppOptions, KdsApp};
use lull_esm::{AppCounters, EsmCounters};
use lull_model::{AppId, EventKind, EventSeq, HandlerId, Payload, RawEvent, Stacking, TouchPhase};
use lull_os::evdev::EvdevEncoder;
use lull_os::sys;
use lulld::daemon::{DaemonReport, DaemonState};
use lulld::test_support::TestDaemon;

/// A guard against a broken daemon hanging the suite; never reached when things work.
const GIVE_UP: Duration = Duration::from_secs(20);
const TOUCH: [EventKind; 3] = [
    EventKind::TouchPress,
    EventKind::TouchMotion,
    EventKind::TouchRelease,
];

/// One app as the ESM sees it.
#[derive(Clone, Copy, Debug)]
struct EsmApp {
    app: AppId,
    suspended: bool,
    /// Its handlers for [`TOUCH`], as the application list holds them.
    handlers: [Option<HandlerId>; 3],
    queued: usize,
    counters: AppCounters,
}

#[derive(Clone, Debug)]
struct Probed {
    esm: EsmCounters,
    apps: Vec<EsmApp>,
    accounting: Result<(), lull_esm::AccountingError>,
}

fn probe(st: &DaemonState) -> Probed {
    let esm = st.esm();
    Probed {
        esm: esm.counters(),
        apps: esm
            .apps()
            .map(|app| EsmApp {
                app,
                suspended: esm.input_suspended(app).expect("listed"),
                handlers: TOUCH.map(|k| esm.handler(app, k).expect("listed")),
                queued: esm.queued_events(app).expect("listed"),
                counters: esm.app_counters(app).expect("listed"),
            })
            .collect(),
        accounting: esm.check_accounting(),
    }
}

/// What a handler saw: which registration ran (its label), and the event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Seen {
    label: &'static str,
    kind: EventKind,
    seq: EventSeq,
    /// The injection number (the event's x coordinate).
    n: i32,
}

struct Bench {
    daemon: TestDaemon,
    device: OwnedFd,
    enc: EvdevEncoder,
    poke: OwnedFd,
    probed: mpsc::Receiver<Probed>,
    admin: KdsAdmin,
    app: KdsApp,
    /// Events injected so far (the next injection number).
    injected: i32,
}

impl Bench {
    fn start(tag: &str) -> Bench {
        let (ev_r, ev_w) = sys::pipe(false).unwrap();
        let (daemon, probe_w, probed) = TestDaemon::start_kds_probed(tag, 64, 48, ev_r, probe);
        let kds_path = daemon.kds_path();
        let app = KdsApp::attach(
            &kds_path,
            &AppOptions {
                width: 32,
                height: 32,
                name: "round-trip".into(),
                guis: true,
            },
        )
        .unwrap();
        let admin = KdsAdmin::connect(&kds_path).unwrap();
        Bench {
            daemon,
            device: ev_w,
            enc: EvdevEncoder::new(),
            poke: probe_w,
            probed,
            admin,
            app,
            injected: 0,
        }
    }

    fn probe(&mut self) -> Probed {
        assert_eq!(sys::write_all_once(self.poke.as_raw_fd(), &[1]).unwrap(), 1);
        self.probed.recv_timeout(GIVE_UP).unwrap()
    }

    fn mine(&mut self) -> (Probed, EsmApp) {
        let p = self.probe();
        let me = self.app.app();
        let a = *p.apps.iter().find(|a| a.app == me).expect("attached");
        (p, a)
    }

    /// Asks the daemon until every injected event has been through the ESM and `pred` holds.
    fn until(&mut self, what: &str, pred: impl Fn(&Probed, &EsmApp) -> bool) -> (Probed, EsmApp) {
        let deadline = std::time::Instant::now() + GIVE_UP;
        loop {
            let (p, a) = self.mine();
            if p.esm.raw_injected == self.injected as u64 && pred(&p, &a) {
                return (p, a);
            }
            assert!(
                std::time::Instant::now() < deadline,
                "daemon never reached: {what}; last {p:?}"
            );
            std::thread::yield_now();
        }
    }

    /// Injects the next numbered touch event of `kind`; returns its number.
    fn inject(&mut self, kind: EventKind) -> i32 {
        let n = self.injected;
        self.injected += 1;
        let phase = match kind {
            EventKind::TouchPress => TouchPhase::Down,
            EventKind::TouchMotion => TouchPhase::Move,
            EventKind::TouchRelease => TouchPhase::Up,
            other => unreachable!("{other:?} is not a touch kind"),
        };
        let mut buf = Vec::new();
        self.enc
            .encode(
                RawEvent::Touch { phase, x: n, y: 0 },
                sys::monotonic_ns(),
                &mut buf,
            )
            .unwrap();
        assert_eq!(
            sys::write_all_once(self.device.as_raw_fd(), &buf).unwrap(),
            buf.len()
        );
        n
    }

    fn stop(self) -> DaemonReport {
        let counters = self.app.detach().unwrap();
        assert_eq!(
            counters.unknown_handler, 0,
            "an event named no handler of ours"
        );
        assert_eq!(counters.overflow_markers, 0);
        drop(self.admin);
        let report = self.daemon.stop();
        report.accounting.clone().unwrap();
        report
    }
}

/// A handler for `kind` labelled `label` that reports every event it runs on `tx`.
fn reporter(
    label: &'static str,
    tx: &mpsc::Sender<Seen>,
) -> impl FnMut(&lull_model::AppEvent) + Send + 'static {
    let tx = tx.clone();
    move |ev| {
        let Payload::Point { x, .. } = ev.payload else {
            panic!("a touch event without a point: {ev:?}")
        };
        let _ = tx.send(Seen {
            label,
            kind: ev.kind,
            seq: ev.seq,
            n: x,
        });
    }
}

fn recv(rx: &mpsc::Receiver<Seen>, what: &str) -> Seen {
    rx.recv_timeout(GIVE_UP)
        .unwrap_or_else(|_| panic!("{what}: the handler never ran"))
}

#[test]
fn round_trips_deliver_every_front_event_once_and_no_background_event() {
    /// Background/foreground round trips.
    const ROUNDS: usize = 6;
    /// Events injected in each phase.
    const PER_PHASE: usize = 9;
    let mut b = Bench::start("kds-roundtrip");
    let (tx, rx) = mpsc::channel();
    let mut ids: Vec<(EventKind, &'static str, HandlerId)> = Vec::new();
    for (kind, label) in TOUCH.into_iter().zip(["press", "motion", "release"]) {
        let id = b.app.esm_register(kind, reporter(label, &tx)).unwrap();
        ids.push((kind, label, id));
    }
    let registered = |ids: &[(EventKind, &'static str, HandlerId)]| {
        TOUCH.map(|k| ids.iter().rev().find(|e| e.0 == k).map(|e| e.2))
    };
    let label_of = |ids: &[(EventKind, &'static str, HandlerId)], k: EventKind| {
        ids.iter().rev().find(|e| e.0 == k).expect("registered").1
    };

    let mut delivered: Vec<Seen> = Vec::new();
    let mut front: Vec<i32> = Vec::new();
    let mut dropped = 0u64;
    for round in 0..ROUNDS {
        // In front: every event delivered, in order, to the handler registered for its kind.
        let (_, me) = b.mine();
        assert!(!me.suspended, "round {round}");
        assert_eq!(
            me.handlers,
            registered(&ids),
            "round {round}: handlers restored"
        );
        for i in 0..PER_PHASE {
            let kind = TOUCH[(round + i) % 3];
            let n = b.inject(kind);
            front.push(n);
            let s = recv(&rx, &format!("round {round}, event {n}"));
            assert_eq!((s.n, s.kind), (n, kind), "round {round}: in order");
            assert_eq!(s.label, label_of(&ids, kind), "the registered handler ran");
            delivered.push(s);
        }

        // To the background: input handlers leave the application list at once.
        b.admin.background(b.app.app()).unwrap();
        let (_, me) = b.mine();
        assert!(me.suspended, "round {round}: suspended with the WM's OK");
        assert_eq!(me.handlers, [None; 3]);
        if round == 2 {
            // A registration made in the background waits for the foreground.
            let id = b
                .app
                .esm_register(EventKind::TouchPress, reporter("press-v2", &tx))
                .unwrap();
            ids.push((EventKind::TouchPress, "press-v2", id));
            let (_, me) = b.mine();
            assert_eq!(me.handlers, [None; 3], "not listed while in the background");
        }
        let before = b.probe().esm;
        for i in 0..PER_PHASE {
            b.inject(TOUCH[(round + i) % 3]);
        }
        dropped += PER_PHASE as u64;
        let (p, me) = b.until("background events through the ESM", |_, _| true);
        assert_eq!(
            p.esm.no_listener - before.no_listener,
            PER_PHASE as u64,
            "round {round}: dropped as having no listener"
        );
        assert_eq!(p.esm.accepted, before.accepted, "no sequence numbers taken");
        assert_eq!(me.queued, 0);
        assert!(
            rx.try_recv().is_err(),
            "round {round}: a background event was delivered"
        );

        // Back to the front.
        b.admin.foreground(b.app.app()).unwrap();
        b.app
            .wait_until(|c| c.state_pushes as usize >= 2 * round + 3);
        assert_eq!(b.app.window_state().stacking, Stacking::Foreground);
    }

    // Exactly the front events, each once, in order, with increasing sequence numbers.
    let got: Vec<i32> = delivered.iter().map(|s| s.n).collect();
    assert_eq!(got, front);
    assert!(delivered.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(
        delivered.iter().map(|s| s.seq.0).collect::<Vec<_>>(),
        (0..front.len() as u64).collect::<Vec<_>>(),
        "background events took no sequence numbers"
    );
    assert!(
        delivered.iter().any(|s| s.label == "press-v2"),
        "the press registered in the background ran after the foreground"
    );
    assert!(rx.try_recv().is_err(), "nothing delivered twice");
    let (p, me) = b.until("all through", |_, _| true);
    assert_eq!(p.esm.raw_injected, front.len() as u64 + dropped);
    assert_eq!(p.esm.no_listener, dropped);
    assert_eq!(p.esm.accepted, front.len() as u64);
    assert_eq!(me.counters.dispatched, front.len() as u64);
    p.accounting.unwrap();
    let report = b.stop();
    let kds = report.kds.unwrap();
    assert_eq!(kds.server.wm_ops, 2 * ROUNDS as u64);
    assert_eq!(kds.server.refused, 0);
}

#[test]
fn an_event_queued_when_the_app_goes_to_the_background_is_still_delivered_once() {
    let mut b = Bench::start("kds-roundtrip-queued");
    let (tx, rx) = mpsc::channel();
    let (started_tx, started) = mpsc::channel();
    let (release, gate) = mpsc::channel::<()>();
    // The press handler stays busy on its first event until the test releases it.
    let report = reporter("press", &tx);
    let mut first = Some((started_tx, gate));
    let mut report_press = report;
    b.app
        .esm_register(EventKind::TouchPress, move |ev| {
            report_press(ev);
            if let Some((started, gate)) = first.take() {
                started.send(()).unwrap();
                let _ = gate.recv();
            }
        })
        .unwrap();
    b.app
        .esm_register(EventKind::TouchMotion, reporter("motion", &tx))
        .unwrap();

    let busy = b.inject(EventKind::TouchPress);
    started.recv_timeout(GIVE_UP).unwrap();
    assert_eq!(recv(&rx, "the busy press").n, busy);
    // The app is in its handler, so the next event waits in its private queue.
    let queued = b.inject(EventKind::TouchMotion);
    b.until("the motion queued", |_, me| me.queued == 1);

    b.admin.background(b.app.app()).unwrap();
    let (_, me) = b.mine();
    assert!(me.suspended);
    assert_eq!(
        me.queued, 1,
        "going to the background leaves the queue alone"
    );
    let lost = b.inject(EventKind::TouchMotion);
    let (p, me) = b.until("the background motion dropped", |p, _| {
        p.esm.no_listener == 1
    });
    assert_eq!(me.queued, 1, "not queued: no listener");
    assert_eq!(p.esm.accepted, 2);

    // The handler returns; the queued event is delivered although the app is in the background.
    release.send(()).unwrap();
    let s = recv(&rx, "the queued motion");
    assert_eq!(
        (s.n, s.kind, s.label),
        (queued, EventKind::TouchMotion, "motion")
    );
    assert_eq!(s.seq, EventSeq(1));
    let (_, me) = b.mine();
    assert!(me.suspended, "delivered while still in the background");
    assert_eq!(me.queued, 0);
    assert_eq!(me.counters.pushed_from_queue, 1);

    b.admin.foreground(b.app.app()).unwrap();
    let after = b.inject(EventKind::TouchPress);
    let s = recv(&rx, "the press after the foreground");
    assert_eq!((s.n, s.seq), (after, EventSeq(2)));
    assert!(rx.try_recv().is_err(), "nothing delivered twice");
    assert_ne!(lost, after);
    let (p, me) = b.until("all through", |_, _| true);
    assert_eq!(p.esm.raw_injected, 4);
    assert_eq!(p.esm.no_listener, 1);
    // The busy press, the queued motion and the last press; the lost motion never reached it.
    assert_eq!(me.counters.dispatched, 3);
    p.accounting.unwrap();
    b.stop();
}
