//! The data plane: a producer outside the daemon writes events straight into
//! each registered app's ring, and the daemon is not woken per event.

mod common;

use std::os::fd::AsRawFd;
use std::sync::mpsc;
use std::thread;

use lull::client::{EsmClient, Handled};
use lull::producer::EsmProducer;
use lull_esm::protocol::{DaemonMsg, MAX_MESSAGE};
use lull_esm::EsmConfig;
use lull_model::{AppId, EventKind, RawEvent};
use lull_os::event_ring::RingConsumer;
use lull_os::sys;
use lulld::test_support::{wait_until, TestDaemon};

/// Events per test: below the ring's capacity (`lulld::daemon::RING_CAPACITY`), so a slow app
/// cannot make the producer drop and every app must get every event.
const N: u64 = 1000;

/// Loop wake-ups the control traffic of these tests may cost the daemon (connections,
/// registrations, `Produce`, closes, the stop): a few dozen at most, while the old path costs at
/// least one per event, so anything under this bound shows no per-event wake-up.
const CONTROL_WAKEUPS: u64 = 60;

/// An app on its own thread (handlers are not `Send`): registers for keys, says so, then waits
/// for `n` events and returns their sequence numbers and its counters.
/// An app's thread: the sequence numbers it read, and its counters.
type AppThread = thread::JoinHandle<(Vec<u64>, lull::client::ClientCounters)>;

fn app(path: std::path::PathBuf, n: u64, ready: mpsc::Sender<AppId>) -> AppThread {
    thread::spawn(move || {
        let mut c = EsmClient::connect(&path).unwrap();
        c.register(EventKind::Key, |_| {}).unwrap();
        ready.send(c.app()).unwrap();
        let mut seqs = Vec::new();
        while (seqs.len() as u64) < n {
            match c.wait().unwrap() {
                Handled::Event { seq, kind, .. } => {
                    assert_eq!(kind, EventKind::Key);
                    seqs.push(seq.0);
                }
                Handled::Overflow { dropped, .. } => panic!("{dropped} dropped below capacity"),
            }
        }
        (seqs, c.counters())
    })
}

fn key(i: u64) -> RawEvent {
    RawEvent::Key {
        code: (i % 200) as u16,
        pressed: i % 2 == 0,
    }
}

/// An app reading `N` key events on its own thread, once attached: the thread and its id.
fn attached_app(daemon: &TestDaemon) -> (AppThread, AppId) {
    let (tx, rx) = mpsc::channel();
    let thread = app(daemon.path.clone(), N, tx);
    (thread, rx.recv().unwrap())
}

/// Polls the producer's routes until `cond` holds of them.
fn wait_for_routes(p: &mut EsmProducer, what: &str, cond: impl Fn(&[(AppId, u32)]) -> bool) {
    wait_until(what, || {
        p.poll_routes().unwrap();
        cond(&p.routes())
    });
}

#[test]
fn one_producer_two_apps_every_event_in_order_without_daemon_wakeups() {
    let daemon = TestDaemon::start("dp-two", EsmConfig::default(), |_| Ok(()));
    let (tx, rx) = mpsc::channel();
    let a = app(daemon.path.clone(), N, tx.clone());
    let b = app(daemon.path.clone(), N, tx);
    let apps = [rx.recv().unwrap(), rx.recv().unwrap()];
    let mut p = EsmProducer::connect(&daemon.path, &[EventKind::Key]).unwrap();
    let mut routed: Vec<AppId> = p.routes().iter().map(|r| r.0).collect();
    routed.sort();
    let mut want = apps.to_vec();
    want.sort();
    assert_eq!(routed, want, "both apps routed at the producer's hello");
    for i in 0..N {
        assert_eq!(p.push(key(i), sys::monotonic_ns()).unwrap(), 2);
    }
    for h in [a, b] {
        let (seqs, counters) = h.join().unwrap();
        assert_eq!(seqs, (0..N).collect::<Vec<_>>(), "every event, in order");
        assert_eq!(counters.ring_records, N);
        assert_eq!(counters.rings, 1);
        assert_eq!(counters.batches, 0, "nothing came through the daemon");
    }
    let rc = p.ring_counters();
    assert_eq!(rc.produced, 2 * N);
    assert_eq!(rc.produced, rc.delivered + rc.dropped);
    drop(p);
    let report = daemon.stop();
    assert!(
        report.counters.loop_wakeups < CONTROL_WAKEUPS,
        "{} daemon wake-ups for {N} events",
        report.counters.loop_wakeups
    );
    assert_eq!(report.esm.raw_injected, 0, "no event went through the ESM");
    assert_eq!(report.rings.len(), 2);
    for r in &report.rings {
        let c = r.ring.counters;
        assert_eq!(c.produced, N, "{r:?}");
        assert_eq!(c.produced, c.delivered + c.dropped, "{r:?}");
        assert_eq!(r.ring.consumed, r.ring.head, "the app read all: {r:?}");
    }
}

/// A hand-made app that registers, takes its ring and writes an impossible consumer index into
/// it, then never reads.
fn scribbler(path: &std::path::Path) -> (std::os::fd::OwnedFd, AppId) {
    common::hand_made_app(path, EventKind::Key)
}

/// Reads the scribbler's messages until `Registered`; returns its ring's memfd.
fn scribbler_ring(fd: &std::os::fd::OwnedFd) -> std::os::fd::OwnedFd {
    let mut memfd = None;
    loop {
        let mut buf = [0u8; MAX_MESSAGE];
        let (n, fds) = sys::recv_with_fds(fd.as_raw_fd(), &mut buf).unwrap();
        match DaemonMsg::decode(&buf[..n]).unwrap() {
            DaemonMsg::Ring { .. } => memfd = fds.into_iter().next(),
            DaemonMsg::Registered => return memfd.expect("a ring before Registered"),
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn a_hostile_app_scribbling_its_index_stalls_neither_the_producer_nor_the_other_app() {
    let daemon = TestDaemon::start("dp-hostile", EsmConfig::default(), |_| Ok(()));
    let (good, good_id) = attached_app(&daemon);
    let mut p = EsmProducer::connect(&daemon.path, &[EventKind::Key]).unwrap();
    let (bad_fd, bad_id) = scribbler(&daemon.path);
    let memfd = scribbler_ring(&bad_fd);
    RingConsumer::forge_consumer_index(&memfd, u64::MAX).unwrap();
    // The producer learns of the new route between events.
    wait_for_routes(&mut p, "the producer routes the scribbler", |r| {
        r.iter().any(|r| r.0 == bad_id)
    });
    for i in 0..N {
        p.push(key(i), sys::monotonic_ns()).unwrap();
    }
    let (seqs, _) = good.join().unwrap();
    assert_eq!(
        seqs,
        (0..N).collect::<Vec<_>>(),
        "the other app got everything"
    );
    let rc = p.ring_counters();
    assert_eq!(rc.produced, 2 * N);
    assert_eq!(rc.delivered, N, "only the good app's ring took events");
    assert_eq!(rc.dropped, N, "the scribbler's were dropped and counted");
    assert_eq!(rc.hostile_tails, N);
    drop((bad_fd, p));
    let report = daemon.stop();
    let of = |app: AppId| report.rings.iter().find(|r| r.app == app).unwrap().ring;
    assert_eq!(of(good_id).counters.delivered, N);
    assert_eq!(of(bad_id).counters.dropped, N);
}

#[test]
fn an_app_that_dies_is_dropped_from_the_producers_routes() {
    let daemon = TestDaemon::start("dp-dies", EsmConfig::default(), |_| Ok(()));
    let (survivor, survivor_id) = attached_app(&daemon);
    let mut p = EsmProducer::connect(&daemon.path, &[EventKind::Key]).unwrap();
    let (dying_fd, dying_id) = scribbler(&daemon.path);
    let _ring = scribbler_ring(&dying_fd);
    wait_for_routes(&mut p, "the producer routes the second app", |r| {
        r.len() == 2
    });
    drop(dying_fd);
    wait_for_routes(&mut p, "the dead app's route is gone", |r| {
        r.iter().all(|r| r.0 != dying_id)
    });
    assert_eq!(p.routes(), vec![(survivor_id, 1 << EventKind::Key.index())]);
    assert_eq!(p.counters().rings_closed, 1);
    for i in 0..N {
        assert_eq!(p.push(key(i), sys::monotonic_ns()).unwrap(), 1);
    }
    let (seqs, _) = survivor.join().unwrap();
    assert_eq!(seqs.len() as u64, N);
    drop(p);
    let report = daemon.stop();
    assert_eq!(
        report.rings.len(),
        2,
        "the dead app's ring is retired, not lost"
    );
}
