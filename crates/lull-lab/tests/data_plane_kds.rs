//! The data plane under the display server: an app's registrations through
//! the KDS (figure 19) route the producers of their kinds to it, and the window manager's input
//! suspension takes the input kinds off its rings and puts them back when it returns.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use lull::kds_client::KdsAdmin;
use lull::producer::EsmProducer;
use lull_model::{AppId, EventKind, RawEvent};
use lull_os::sys;
use lulld::test_support::{wait_until, TestDaemon};

fn key(i: u64) -> RawEvent {
    RawEvent::Key {
        code: (i % 200) as u16,
        pressed: i % 2 == 0,
    }
}

/// The kinds the producer routes to `app` now, after reading the daemon's route changes.
fn routed(p: &mut EsmProducer, app: AppId) -> u32 {
    p.poll_routes().unwrap();
    p.routes()
        .iter()
        .find(|(a, _)| *a == app)
        .map_or(0, |(_, k)| *k)
}

#[test]
fn kds_registrations_route_producers_and_input_suspension_reroutes() {
    let d = TestDaemon::start_kds("dp-kds", 320, 200);
    // The producer first: the app's registration through the server must route it.
    let mut p = EsmProducer::connect(&d.path, &[EventKind::Key]).unwrap();
    let app = common::attach_small(&d.kds_path(), "keys", false);
    let handled = Arc::new(AtomicU64::new(0));
    let h = Arc::clone(&handled);
    app.esm_register(EventKind::Key, move |_| {
        h.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    let id = app.app();
    let key_bit = 1u32 << EventKind::Key.index();
    wait_until("the registration routes the producer", || {
        routed(&mut p, id) == key_bit
    });
    for i in 0..10 {
        assert_eq!(p.push(key(i), sys::monotonic_ns()).unwrap(), 1);
    }
    wait_until("ten ring events handled", || {
        handled.load(Ordering::SeqCst) == 10
    });

    // In the background its input is suspended: no ring takes keys for it.
    let mut admin = KdsAdmin::connect(&d.kds_path()).unwrap();
    admin.background(id).unwrap();
    wait_until("the route ends", || routed(&mut p, id) == 0);
    let unrouted = p.counters().unrouted;
    for i in 10..15 {
        assert_eq!(p.push(key(i), sys::monotonic_ns()).unwrap(), 0);
    }
    assert_eq!(p.counters().unrouted, unrouted + 5, "no app takes them");

    // Back in front, a new ring.
    admin.foreground(id).unwrap();
    wait_until("the route is back", || routed(&mut p, id) == key_bit);
    for i in 15..25 {
        assert_eq!(p.push(key(i), sys::monotonic_ns()).unwrap(), 1);
    }
    wait_until("ten more handled", || handled.load(Ordering::SeqCst) == 20);
    assert_eq!(p.counters().rings, 2, "one ring before, one after");
    assert_eq!(app.counters().events, 20);
    let _ = app.detach();
    drop(p);
    let report = d.stop();
    // Both rings accounted for, from the daemon's side: 20 written, 20 read.
    let written: u64 = report.rings.iter().map(|r| r.ring.head).sum();
    let read: u64 = report.rings.iter().map(|r| r.ring.consumed).sum();
    assert_eq!((written, read), (20, 20), "{:?}", report.rings);
}

/// An app that detaches with events still queued passes over them (counted) instead of running
/// their handlers first: a backlog of slow handlers must not hold up the app's stop.
#[test]
fn a_detaching_app_leaves_its_queued_events_unhandled() {
    let d = TestDaemon::start_kds("dp-stop", 320, 200);
    let mut p = EsmProducer::connect(&d.path, &[EventKind::Key]).unwrap();
    let app = common::attach_small(&d.kds_path(), "slow", false);
    let handled = Arc::new(AtomicU64::new(0));
    let (entered_tx, entered_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let release_rx = std::sync::Mutex::new(release_rx);
    let h = Arc::clone(&handled);
    app.esm_register(EventKind::Key, move |_| {
        h.fetch_add(1, Ordering::SeqCst);
        let _ = entered_tx.send(());
        // The first handler holds the event thread until the test lets it go.
        let _ = release_rx.lock().unwrap().recv();
    })
    .unwrap();
    let id = app.app();
    wait_until("the registration routes the producer", || {
        routed(&mut p, id) == 1u32 << EventKind::Key.index()
    });
    for i in 0..10 {
        assert_eq!(p.push(key(i), sys::monotonic_ns()).unwrap(), 1);
    }
    entered_rx.recv().unwrap();
    // Detach while the first handler runs and nine events wait behind it.
    let detaching = std::thread::spawn(move || app.detach().unwrap());
    let mut admin = KdsAdmin::connect(&d.kds_path()).unwrap();
    wait_until("the server detached the app", || {
        admin.windows().unwrap().is_empty()
    });
    drop(release_tx);
    let counters = detaching.join().unwrap();
    assert_eq!(handled.load(Ordering::SeqCst), 1);
    assert_eq!(counters.events, 1);
    assert_eq!(counters.unhandled_at_stop, 9);
    d.stop();
}
