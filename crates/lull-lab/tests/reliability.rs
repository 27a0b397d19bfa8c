//! The daemon's reliability promises, each against a real `lulld` loop on a real Unix socket,
//! fed through its evdev source from a pipe.
//!
//! Waiting for the daemon to reach a state is done by asking it (the `Stats` request) until it
//! answers as expected — a request/response loop, never a sleep.

mod common;

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use lull::client::{ClientError, EsmClient, Handled};
use lull_esm::protocol::{ErrorCode, StatsReply};
use lull_esm::EsmConfig;
use lull_model::{EventKind, RawEvent, TouchPhase};
use lull_os::evdev::EvdevEncoder;
use lull_os::sys;
use lulld::daemon::DaemonReport;
use lulld::test_support::TestDaemon;

/// A guard against a broken daemon hanging the suite; never reached when things work.
const GIVE_UP: Duration = Duration::from_secs(20);

struct Running {
    daemon: TestDaemon,
    device: OwnedFd,
    enc: EvdevEncoder,
}

impl Running {
    fn start(tag: &str, queue_bound: usize) -> Running {
        let (r, w) = sys::pipe(false).unwrap();
        let daemon = TestDaemon::start(tag, EsmConfig { queue_bound }, move |d| d.add_evdev(r));
        Running {
            daemon,
            device: w,
            enc: EvdevEncoder::new(),
        }
    }

    fn inject(&mut self, raw: RawEvent) {
        common::write_evdev(&mut self.enc, &self.device, raw);
    }

    fn stop(self) -> DaemonReport {
        self.daemon.stop()
    }
}

/// Asks the daemon over `control` until `pred` holds.
fn until(control: &mut EsmClient, what: &str, pred: impl Fn(&StatsReply) -> bool) -> StatsReply {
    let deadline = Instant::now() + GIVE_UP;
    loop {
        let s = control.stats().unwrap();
        if pred(&s) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "daemon never reached: {what}; last {s:?}"
        );
        thread::yield_now();
    }
}

fn press(x: i32) -> RawEvent {
    RawEvent::Touch {
        phase: TouchPhase::Down,
        x,
        y: 0,
    }
}

fn motion(x: i32) -> RawEvent {
    RawEvent::Touch {
        phase: TouchPhase::Move,
        x,
        y: 0,
    }
}

/// Runs in a child process (see `crashed_app_leaves_nothing_behind`): registers for presses and
/// aborts inside the handler of the first one.
#[test]
#[ignore = "child process of crashed_app_leaves_nothing_behind"]
fn crash_child() {
    let Some(path) = std::env::var_os("LULL_CRASH_CHILD_SOCKET") else {
        return;
    };
    let mut c = EsmClient::connect(Path::new(&path)).unwrap();
    c.register(EventKind::TouchPress, |_| std::process::abort())
        .unwrap();
    c.register(EventKind::TouchMotion, |_| std::process::abort())
        .unwrap();
    loop {
        c.wait().unwrap();
    }
}

#[test]
fn crashed_app_leaves_nothing_behind_and_others_keep_being_served() {
    let mut d = Running::start("crash", 64);
    let mut control = EsmClient::connect(&d.daemon.path).unwrap();

    // A well-behaved app on its own thread, counting presses.
    let path = d.daemon.path.clone();
    let (got_tx, got_rx) = std::sync::mpsc::channel();
    let good = thread::spawn(move || {
        let mut c = EsmClient::connect(&path).unwrap();
        c.register(EventKind::TouchPress, move |ev| {
            got_tx.send(ev.seq).unwrap()
        })
        .unwrap();
        while c.wait().is_ok() {}
    });
    // The crashing app, a separate process.
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "crash_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LULL_CRASH_CHILD_SOCKET", &d.daemon.path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    until(&mut control, "both apps waiting", |s| {
        s.waiting == 2 && s.registrations == 3
    });

    // The child is pushed the press and dies inside its handler.
    d.inject(press(1));
    let status = child.wait().unwrap();
    assert!(!status.success(), "the child must have crashed");
    assert_eq!(got_rx.recv_timeout(GIVE_UP).unwrap().0, 0);

    // Its registrations and queue are gone; the control connection and the good app remain.
    let s = until(&mut control, "crashed app removed", |s| s.apps == 2);
    assert_eq!(
        s.registrations, 1,
        "only the good app's press handler is left"
    );
    assert_eq!(s.queued_events, 0);
    // Events the dead app would have listened to have no listener now, and the good app still
    // gets its presses.
    until(&mut control, "good app waiting again", |s| s.waiting == 1);
    d.inject(motion(2));
    d.inject(press(3));
    assert_eq!(got_rx.recv_timeout(GIVE_UP).unwrap().0, 1);
    let s = until(&mut control, "both events seen", |s| {
        s.counters.raw_injected == 3
    });
    assert_eq!(s.counters.no_listener, 1, "the motion had no listener left");

    drop(control);
    let report = d.stop();
    good.join().unwrap();
    report.accounting.unwrap();
    assert_eq!(report.counters.connections, 3);
}

#[test]
fn app_that_stops_waiting_fills_its_queue_then_sees_the_overflow_marker() {
    const BOUND: usize = 8;
    const SENT: u64 = 20;
    let mut d = Running::start("overflow", BOUND);
    let mut app = EsmClient::connect(&d.daemon.path).unwrap();
    assert_eq!(app.queue_bound() as usize, BOUND);
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let s2 = std::rc::Rc::clone(&seen);
    app.register(EventKind::TouchMotion, move |ev| {
        s2.borrow_mut().push(ev.seq.0)
    })
    .unwrap();
    until(&mut app, "registered", |s| s.registrations == 1);
    // The app never calls wait while the events arrive.
    for i in 0..SENT {
        d.inject(motion(i as i32));
    }
    let s = until(&mut app, "all events injected", |s| {
        s.counters.raw_injected == SENT
    });
    assert_eq!(s.queued_events, BOUND as u64);
    assert_eq!(s.counters.queued, BOUND as u64);
    assert_eq!(s.counters.overflow_dropped, SENT - BOUND as u64);

    // Waking up, it gets the bound's worth of events in order, then the marker naming the rest.
    for _ in 0..BOUND {
        assert!(matches!(
            app.wait().unwrap(),
            Handled::Event {
                kind: EventKind::TouchMotion,
                ..
            }
        ));
    }
    assert_eq!(*seen.borrow(), (0..BOUND as u64).collect::<Vec<_>>());
    match app.wait().unwrap() {
        Handled::Overflow {
            dropped,
            first,
            last,
        } => {
            assert_eq!(dropped, SENT - BOUND as u64);
            assert_eq!((first.0, last.0), (BOUND as u64, SENT - 1));
        }
        other => panic!("expected the overflow marker, got {other:?}"),
    }
    assert_eq!(app.counters().dropped_reported, SENT - BOUND as u64);
    let s = app.stats().unwrap();
    assert_eq!(s.counters.overflow_markers, 1);
    assert_eq!(s.queued_events, 0);

    // Afterwards delivery is normal again.
    d.inject(motion(99));
    assert!(matches!(app.wait().unwrap(), Handled::Event { .. }));
    drop(app);
    d.stop().accounting.unwrap();
}

#[test]
fn daemon_going_away_gives_clients_a_clear_error() {
    let d = Running::start("gone", 64);
    let path = d.daemon.path.clone();
    let mut control = EsmClient::connect(&path).unwrap();
    let p = path.clone();
    let waiter = thread::spawn(move || {
        let mut c = EsmClient::connect(&p).unwrap();
        c.register(EventKind::Key, |_| {}).unwrap();
        c.wait().map(|_| ())
    });
    until(&mut control, "app waiting", |s| s.waiting == 1);
    drop(control);
    d.stop();
    let err = waiter.join().unwrap().unwrap_err();
    assert!(matches!(err, ClientError::DaemonGone), "{err}");
    assert!(err.to_string().contains("closed the connection"));
    assert!(!path.exists(), "the daemon removes its socket file");

    let err = EsmClient::connect(&path).unwrap_err();
    assert!(matches!(err, ClientError::Connect { .. }));
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[test]
fn malformed_messages_close_only_that_connection() {
    let mut d = Running::start("malformed", 64);
    let mut good = EsmClient::connect(&d.daemon.path).unwrap();
    let bad = EsmClient::connect(&d.daemon.path).unwrap();
    let mut control = EsmClient::connect(&d.daemon.path).unwrap();
    let n = std::rc::Rc::new(std::cell::Cell::new(0));
    let n2 = std::rc::Rc::clone(&n);
    good.register(EventKind::TouchPress, move |_| n2.set(n2.get() + 1))
        .unwrap();
    until(&mut control, "good registered", |s| {
        s.registrations == 1 && s.apps == 3
    });

    // An unknown event kind in a registration.
    sys::send_msg(bad.raw_fd(), &[1, 0xff, 0xff, 1, 0, 0, 0, 0]).unwrap();
    let mut buf = [0u8; 128];
    let (len, _) = sys::recv_msg(bad.raw_fd(), &mut buf).unwrap();
    assert_eq!(
        lull_esm::protocol::DaemonMsg::decode(&buf[..len]).unwrap(),
        lull_esm::protocol::DaemonMsg::Error(ErrorCode::Malformed)
    );
    assert_eq!(
        sys::recv_msg(bad.raw_fd(), &mut buf).unwrap().0,
        0,
        "then the daemon closes it"
    );
    until(&mut control, "bad client removed", |s| s.apps == 2);

    // The well-behaved app is undisturbed.
    d.inject(press(5));
    assert!(matches!(good.wait().unwrap(), Handled::Event { .. }));
    assert_eq!(n.get(), 1);
    drop((good, bad, control));
    let report = d.stop();
    assert_eq!(report.counters.malformed_rejected, 1);
    report.accounting.unwrap();
}

/// Random client messages over real connections: each connection sends one message; the daemon
/// must reject exactly those the parser rejects (answering `Error(Malformed)` and closing), serve
/// the rest, and keep serving a bystander throughout.
#[test]
fn fuzzed_connections_never_disturb_the_daemon_or_others() {
    const CASES: u32 = 1500;
    let d = Running::start("fuzz", 64);
    let mut bystander = EsmClient::connect(&d.daemon.path).unwrap();
    let mut rng = lull_workload::rng::SplitMix64::new(0x00f0_0d5e_ed00);
    let mut expected_malformed = 0u64;
    for i in 0..CASES {
        let len = 1 + rng.below(160) as usize;
        let mut msg: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        if i % 2 == 0 {
            msg[0] = 1 + rng.below(3) as u8;
        }
        let valid = msg.len() <= lull_esm::protocol::MAX_MESSAGE
            && lull_esm::protocol::ClientMsg::decode(&msg).is_ok();
        let conn = sys::seqpacket_connect(&d.daemon.path).unwrap();
        let mut buf = [0u8; 256];
        let (n, _) = sys::recv_msg(conn.as_raw_fd(), &mut buf).unwrap();
        assert!(n > 0, "welcome");
        sys::send_msg(conn.as_raw_fd(), &msg).unwrap();
        if !valid {
            expected_malformed += 1;
            let (n, _) = sys::recv_msg(conn.as_raw_fd(), &mut buf).unwrap();
            assert_eq!(
                lull_esm::protocol::DaemonMsg::decode(&buf[..n]).unwrap(),
                lull_esm::protocol::DaemonMsg::Error(ErrorCode::Malformed),
                "case {i}: {msg:?}"
            );
            assert_eq!(sys::recv_msg(conn.as_raw_fd(), &mut buf).unwrap().0, 0);
        }
        drop(conn);
        if i % 100 == 0 {
            bystander.stats().unwrap();
        }
    }
    let s = until(&mut bystander, "every fuzz connection gone", |s| {
        s.apps == 1
    });
    assert_eq!(s.registrations, 0);
    drop(bystander);
    let report = d.stop();
    assert_eq!(report.counters.malformed_rejected, expected_malformed);
    assert_eq!(report.counters.connections, u64::from(CASES) + 1);
    report.accounting.unwrap();
}

/// Connections that pile up before the daemon runs its accept loop are all accepted in one wake.
#[test]
fn a_burst_of_connections_is_accepted_whole() {
    const BURST: usize = 50;
    let d = Running::start("burst", 64);
    let conns: Vec<OwnedFd> = (0..BURST)
        .map(|_| sys::seqpacket_connect(&d.daemon.path).unwrap())
        .collect();
    let mut buf = [0u8; 128];
    for c in &conns {
        let (n, _) = sys::recv_msg(c.as_raw_fd(), &mut buf).unwrap();
        assert!(matches!(
            lull_esm::protocol::DaemonMsg::decode(&buf[..n]).unwrap(),
            lull_esm::protocol::DaemonMsg::Welcome { .. }
        ));
    }
    let mut control = EsmClient::connect(&d.daemon.path).unwrap();
    assert_eq!(control.stats().unwrap().apps as usize, BURST + 1);
    drop(conns);
    until(&mut control, "burst gone", |s| s.apps == 1);
    drop(control);
    d.stop().accounting.unwrap();
}
