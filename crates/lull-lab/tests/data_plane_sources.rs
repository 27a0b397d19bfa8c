//! The daemon's network and timer sources on the data plane: a producer thread of `lulld`
//! writes each datagram or timer expiry straight into the registered apps' rings, and the
//! daemon's loop is not woken per event. Hostile apps against those rings: one that scribbles
//! on its read index, one that stops reading, one that dies mid-stream cannot stall the
//! producer or take an event from another app, and every event is accounted for from both
//! sides (the producer's counters in each ring, the app's read index).

mod common;

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use lull::client::{EsmClient, Handled};
use lull_esm::protocol::{DaemonMsg, MAX_MESSAGE};
use lull_esm::EsmConfig;
use lull_model::time::NS_PER_MS;
use lull_model::{AppId, EventKind, Payload};
use lull_os::event_ring::RingConsumer;
use lull_os::sys;
use lulld::daemon::{DaemonReport, RingRoute};
use lulld::test_support::TestDaemon;

/// Datagrams sent per round: few enough that the default receive buffer never overflows while
/// the app reads between rounds, so every datagram must arrive.
const ROUND: u64 = 32;
/// Rounds: 320 datagrams in all, far more than the daemon's control wake-ups below.
const ROUNDS: u64 = 10;
/// Timer events the good app waits for.
const TICKS: u64 = 100;
/// Loop wake-ups the control traffic of these tests may cost the daemon (connections,
/// registrations, the sources' `Produce`, closes, the stop): a few dozen, while reading the
/// events itself would cost at least one per event.
const CONTROL_WAKEUPS: u64 = 60;

/// What a hand-made app does to its ring.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Hostile {
    /// Writes an impossible read index (`u64::MAX`) and never reads.
    Scribbles,
    /// Registers and never reads.
    StopsReading,
}

/// A hand-made app: registers for `kind`, takes its ring (the memfd), and behaves as `how`.
struct BadApp {
    fd: OwnedFd,
    app: AppId,
    _memfd: OwnedFd,
}

fn bad_app(path: &Path, kind: EventKind, how: Hostile) -> BadApp {
    let (fd, app) = common::hand_made_app(path, kind);
    let mut buf = [0u8; MAX_MESSAGE];
    // The ring comes before `Registered` when the sources' producer is already routed, after it
    // when the producer says `Produce` later.
    let (mut memfd, mut registered) = (None, false);
    while memfd.is_none() || !registered {
        let (n, fds) = sys::recv_with_fds(fd.as_raw_fd(), &mut buf).unwrap();
        match DaemonMsg::decode(&buf[..n]).unwrap() {
            DaemonMsg::Ring { .. } => memfd = fds.into_iter().next(),
            DaemonMsg::Registered => registered = true,
            other => panic!("unexpected {other:?}"),
        }
    }
    let memfd = memfd.unwrap();
    if how == Hostile::Scribbles {
        RingConsumer::forge_consumer_index(&memfd, u64::MAX).unwrap();
    }
    BadApp {
        fd,
        app,
        _memfd: memfd,
    }
}

/// A good app on this thread, registered for `kind`, collecting payloads.
fn good_app(
    path: &Path,
    kind: EventKind,
) -> (EsmClient, std::rc::Rc<std::cell::RefCell<Vec<Payload>>>) {
    let mut c = EsmClient::connect(path).unwrap();
    let got = common::record_payloads(&mut c, kind);
    (c, got)
}

fn wait_events(c: &mut EsmClient, n: u64) -> Vec<u64> {
    (0..n)
        .map(|_| match c.wait().unwrap() {
            Handled::Event { seq, .. } => seq.0,
            Handled::Overflow { dropped, .. } => panic!("{dropped} dropped below capacity"),
        })
        .collect()
}

fn ring_of(report: &DaemonReport, app: AppId) -> RingRoute {
    *report
        .rings
        .iter()
        .find(|r| r.app == app)
        .unwrap_or_else(|| panic!("no ring for {app}: {:?}", report.rings))
}

/// Sequence numbers one after another: in order, none lost.
#[track_caller]
fn assert_in_order(seqs: &[u64]) {
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
}

/// Closes the good app and the hostile apps' sockets, then stops the daemon: its report, and
/// the scribbler's and the sleeper's ids to find their rings in it.
fn stop_all(
    daemon: TestDaemon,
    app: EsmClient,
    scribbler: BadApp,
    sleeper: BadApp,
) -> (DaemonReport, AppId, AppId) {
    drop(app);
    let ids = (scribbler.app, sleeper.app);
    drop((scribbler.fd, sleeper.fd));
    (daemon.stop(), ids.0, ids.1)
}

/// A daemon whose sources read a UDP socket on the loopback as network channel `channel`: the
/// daemon and the socket's address.
fn net_daemon(name: &str, channel: u32) -> (TestDaemon, std::net::SocketAddr) {
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = udp.local_addr().unwrap();
    let daemon = TestDaemon::start(name, EsmConfig::default(), move |d| {
        d.add_net(OwnedFd::from(udp), channel)
    });
    (daemon, addr)
}

/// The daemon woke no more than its control traffic makes it: not for each of the `what` its
/// sources carried.
#[track_caller]
fn assert_control_wakeups_only(report: &DaemonReport, what: &str) {
    let wakeups = report.counters.loop_wakeups;
    assert!(
        wakeups < CONTROL_WAKEUPS,
        "{wakeups} daemon wake-ups for {what}"
    );
}

/// Every ring's identity from the producer's side, and the sources' producer's own.
fn check_identities(report: &DaemonReport) {
    for r in &report.rings {
        let c = r.ring.counters;
        assert_eq!(c.produced, c.delivered + c.dropped, "{r:?}");
    }
    let s = report.sources.expect("the sources' producer ran");
    assert!(s.connected);
    assert_eq!(
        s.rings.produced,
        s.rings.delivered + s.rings.dropped,
        "{s:?}"
    );
    assert_eq!(s.producer.queued, s.rings.delivered, "{s:?}");
    assert_eq!(s.producer.dropped, s.rings.dropped, "{s:?}");
    report.accounting.clone().unwrap();
}

#[test]
fn datagrams_reach_the_app_through_its_ring_without_daemon_wakeups() {
    let (daemon, addr) = net_daemon("dp-net", 5);
    let (mut app, got) = good_app(&daemon.path, EventKind::NetMessage);
    let id = app.app();
    let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut seqs = Vec::new();
    for round in 0..ROUNDS {
        for i in 0..ROUND {
            let len = ((round * ROUND + i) % 50) as usize;
            peer.send_to(&vec![0u8; len], addr).unwrap();
        }
        seqs.extend(wait_events(&mut app, ROUND));
    }
    let n = ROUND * ROUNDS;
    // In order, none missing: sequence numbers are the producer's, consecutive from the first
    // datagram routed to the app.
    assert_in_order(&seqs);
    let want: Vec<Payload> = (0..n)
        .map(|k| Payload::Net {
            channel: 5,
            len: (k % 50) as u32,
        })
        .collect();
    assert_eq!(*got.borrow(), want);
    let counters = app.counters();
    assert_eq!(counters.ring_records, n);
    assert_eq!(
        counters.batches, 0,
        "nothing came through the daemon's socket"
    );
    drop(app);
    let report = daemon.stop();
    assert_control_wakeups_only(&report, &format!("{n} datagrams"));
    assert_eq!(
        report.esm.raw_injected, 0,
        "no datagram went through the ESM"
    );
    assert_eq!(report.counters.net_datagrams, n);
    let r = ring_of(&report, id).ring;
    assert_eq!((r.counters.produced, r.counters.delivered), (n, n));
    assert_eq!(r.consumed, r.head, "the app read everything: {r:?}");
    check_identities(&report);
}

#[test]
fn timer_expiries_reach_the_app_through_its_ring_without_daemon_wakeups() {
    let daemon = TestDaemon::start("dp-timer", EsmConfig::default(), |d| {
        d.add_timer(9, sys::monotonic_ns(), NS_PER_MS)
    });
    let (mut app, got) = good_app(&daemon.path, EventKind::Timer);
    let seqs = wait_events(&mut app, TICKS);
    assert_in_order(&seqs);
    assert!(got.borrow().iter().all(|p| *p == Payload::Timer { id: 9 }));
    assert_eq!(app.counters().batches, 0);
    drop(app);
    let report = daemon.stop();
    assert_control_wakeups_only(&report, &format!("{TICKS} timer events"));
    assert_eq!(report.esm.raw_injected, 0);
    let s = report.sources.unwrap();
    assert_eq!(s.producer.events, report.counters.timer_expirations);
    // One app at most: each expiry was queued in its ring, dropped there, or found no app.
    assert_eq!(
        s.producer.events,
        s.producer.queued + s.producer.dropped + s.producer.unrouted
    );
    check_identities(&report);
}

#[test]
fn hostile_apps_stall_neither_the_network_producer_nor_the_good_app() {
    let (daemon, addr) = net_daemon("dp-net-hostile", 6);
    let scribbler = bad_app(&daemon.path, EventKind::NetMessage, Hostile::Scribbles);
    let sleeper = bad_app(&daemon.path, EventKind::NetMessage, Hostile::StopsReading);
    let dying = bad_app(&daemon.path, EventKind::NetMessage, Hostile::StopsReading);
    let (mut app, _) = good_app(&daemon.path, EventKind::NetMessage);
    let (good, dying_id) = (app.app(), dying.app);
    let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut seqs = Vec::new();
    // Past the sleeper's ring capacity: whole rounds to fill it, and 8 more.
    let rounds = lulld::routes::RING_CAPACITY / ROUND + 8;
    let mut dying = Some(dying);
    for round in 0..rounds {
        if round == rounds / 2 {
            // Dies mid-stream, its ring half full.
            drop(dying.take());
        }
        for _ in 0..ROUND {
            peer.send_to(&[3; 7], addr).unwrap();
        }
        seqs.extend(wait_events(&mut app, ROUND));
    }
    let n = ROUND * rounds;
    assert_eq!(seqs.len() as u64, n);
    assert_in_order(&seqs);
    let (report, scribbler_id, sleeper_id) = stop_all(daemon, app, scribbler, sleeper);
    assert_eq!(report.counters.net_datagrams, n);
    let ring = |a| ring_of(&report, a).ring.counters;
    assert_eq!(ring(good).delivered, n);
    assert_eq!(ring(good).dropped, 0);
    // The scribbler's index is impossible from its first event: all its events dropped, counted.
    assert_eq!(ring(scribbler_id).delivered, 0);
    assert_eq!(ring(scribbler_id).dropped, n);
    assert_eq!(ring(scribbler_id).hostile_tails, n);
    // The sleeper's ring fills, then drops the rest.
    let s = ring(sleeper_id);
    assert_eq!(s.delivered, lulld::routes::RING_CAPACITY);
    assert_eq!(s.dropped, n - lulld::routes::RING_CAPACITY);
    // The dead app's ring is retired with its counts, and got nothing after its death.
    let d = ring(dying_id);
    assert!(d.produced < n, "{d:?}");
    assert_eq!(d.produced, d.delivered + d.dropped);
    check_identities(&report);
}

#[test]
fn hostile_apps_stall_neither_the_timer_producer_nor_the_good_app() {
    let daemon = TestDaemon::start("dp-timer-hostile", EsmConfig::default(), |d| {
        d.add_timer(4, sys::monotonic_ns(), NS_PER_MS)
    });
    let scribbler = bad_app(&daemon.path, EventKind::Timer, Hostile::Scribbles);
    let sleeper = bad_app(&daemon.path, EventKind::Timer, Hostile::StopsReading);
    let dying = bad_app(&daemon.path, EventKind::Timer, Hostile::StopsReading);
    let (mut app, _) = good_app(&daemon.path, EventKind::Timer);
    let good = app.app();
    let mut seqs = wait_events(&mut app, TICKS / 2);
    let dying_id = dying.app;
    drop(dying);
    seqs.extend(wait_events(&mut app, TICKS / 2));
    assert_in_order(&seqs);
    let (report, scribbler_id, sleeper_id) = stop_all(daemon, app, scribbler, sleeper);
    let ring = |a| ring_of(&report, a).ring.counters;
    assert!(ring(good).delivered >= TICKS);
    assert_eq!(ring(good).dropped, 0);
    // The timer runs from the start: a few ticks may have entered the scribbler's ring before it
    // scribbled; every one after was dropped for its impossible index and counted.
    let sc = ring(scribbler_id);
    assert!(sc.dropped >= TICKS, "{sc:?}");
    assert_eq!(sc.hostile_tails, sc.dropped, "{sc:?}");
    assert!(ring(sleeper_id).delivered >= TICKS);
    let d = ring(dying_id);
    assert_eq!(d.produced, d.delivered + d.dropped);
    check_identities(&report);
}
