//! The ESM hop with wait cells and batches, against a real `lulld` loop fed through its evdev
//! source: every event is delivered exactly once, in order, or dropped behind an overflow marker
//! that names it, whatever the interleaving of the app's waits and the daemon's pushes; and every
//! daemon wake-up is accounted for by an event packet, a message or the set-up.
//!
//! The app's handler takes a pseudo-random time (a counted busy loop, not a sleep), so bursts find
//! it sometimes waiting in its cell, sometimes running with events queued. Nothing is timed.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;

use lull::client::{EsmClient, Handled};
use lull_esm::EsmConfig;
use lull_model::{EventKind, RawEvent, TouchPhase};
use lull_os::evdev::EvdevEncoder;
use lull_os::sys;
use lulld::test_support::TestDaemon;

/// Events injected.
const EVENTS: i32 = 3_000;
/// A small private queue, so that bursts overflow it now and then.
const QUEUE_BOUND: usize = 8;

fn press(x: i32) -> RawEvent {
    RawEvent::Touch {
        phase: TouchPhase::Down,
        x,
        y: 0,
    }
}

/// What the app saw, in order: `Ok(x)` an event, `Err((dropped, first, last))` a marker.
type Seen = Vec<Result<i64, (u64, u64, u64)>>;

/// The writer stays at most this many events ahead of what the app has handled, so bursts meet
/// the app in every state (waiting, running with a short queue, overflowing) rather than
/// flooding it once.
const AHEAD: i64 = 3 * QUEUE_BOUND as i64;

fn run_app(
    path: std::path::PathBuf,
    ready: mpsc::Sender<()>,
    progress: Arc<AtomicI64>,
) -> (Seen, lull::client::ClientCounters) {
    let mut c = EsmClient::connect(&path).unwrap();
    let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let s2 = std::rc::Rc::clone(&seen);
    let mut lcg = 12_345u64;
    c.register(EventKind::TouchPress, move |ev| {
        // Busy for 0–4095 rounds of a multiply: from nothing to tens of microseconds.
        lcg = lcg.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let mut x = lcg;
        for _ in 0..(lcg >> 52) {
            x = std::hint::black_box(x.wrapping_mul(3).wrapping_add(7));
        }
        s2.borrow_mut().push(Ok(i64::from(match ev.payload {
            lull_model::Payload::Point { x, .. } => x,
            _ => -1,
        })));
    })
    .unwrap();
    ready.send(()).unwrap();
    loop {
        match c.wait().unwrap() {
            Handled::Event { .. } => {}
            Handled::Overflow {
                dropped,
                first,
                last,
            } => seen.borrow_mut().push(Err((dropped, first.0, last.0))),
        }
        let last = seen.borrow().last().copied();
        let handled = match last {
            Some(Ok(x)) => x,
            Some(Err((_, _, last))) => last as i64,
            None => -1,
        };
        progress.store(handled, Ordering::Release);
        let done = match last {
            Some(Ok(x)) => x == i64::from(EVENTS - 1),
            Some(Err((_, _, last))) => last == (EVENTS - 1) as u64,
            None => false,
        };
        if done {
            break;
        }
    }
    let out = seen.borrow().clone();
    (out, c.counters())
}

#[test]
fn bursts_are_delivered_once_in_order_or_marked() {
    let (r, w) = sys::pipe(false).unwrap();
    let daemon = TestDaemon::start(
        "batches",
        EsmConfig {
            queue_bound: QUEUE_BOUND,
        },
        move |d| d.add_evdev(r),
    );
    let (ready_tx, ready_rx) = mpsc::channel();
    let path = daemon.path.clone();
    let progress = Arc::new(AtomicI64::new(-1));
    let p2 = Arc::clone(&progress);
    let app = thread::spawn(move || run_app(path, ready_tx, p2));
    ready_rx.recv().unwrap();

    // Bursts of 1–24 events per write, each burst one read for the daemon.
    let mut enc = EvdevEncoder::new();
    let mut lcg = 99u64;
    let mut x = 0;
    let mut writes = 0u64;
    let mut buf = Vec::new();
    while x < EVENTS {
        lcg = lcg.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let burst = 1 + (lcg >> 59) as i32 % 24;
        while i64::from(x) - progress.load(Ordering::Acquire) > AHEAD {
            thread::yield_now();
        }
        buf.clear();
        for _ in 0..burst.min(EVENTS - x) {
            let mut one = Vec::new();
            enc.encode(press(x), sys::monotonic_ns(), &mut one).unwrap();
            buf.extend_from_slice(&one);
            x += 1;
        }
        assert_eq!(sys::write_all_once(w.as_raw_fd(), &buf).unwrap(), buf.len());
        writes += 1;
    }
    let (seen, client) = app.join().unwrap();
    let report = daemon.stop();
    report.accounting.clone().unwrap();

    // Exactly once, in order: events ascend by one, a marker covers exactly the gap it names.
    let mut next = 0u64;
    let mut dropped = 0u64;
    for item in &seen {
        match *item {
            Ok(x) => {
                assert_eq!(x as u64, next, "in order, none twice: {seen:?}");
                next += 1;
            }
            Err((n, first, last)) => {
                assert_eq!(
                    (first, last - first + 1),
                    (next, n),
                    "the marker names the gap"
                );
                next = last + 1;
                dropped += n;
            }
        }
    }
    assert_eq!(next, EVENTS as u64);
    assert_eq!(dropped, report.esm.overflow_dropped);
    assert_eq!(client.dropped_reported, dropped);
    assert_eq!(
        report.counters.deliveries_sent,
        client.events + client.overflow_markers
    );
    assert_eq!(client.batches, report.counters.batches_sent);
    assert_eq!(
        client.waits_by_message, report.counters.waits_by_message,
        "every wait message reached the daemon"
    );
    // Every daemon wake-up came from an event write, a message, or the connection's set-up and
    // the stop (accept, register, stop: 3), never from anything unaccounted.
    let messages = report.counters.waits_by_message + 1;
    assert!(
        report.counters.loop_wakeups <= writes + messages + 3,
        "{} wake-ups for {writes} writes and {messages} messages",
        report.counters.loop_wakeups
    );
    eprintln!(
        "{EVENTS} events in {writes} writes: {} batches, {} delivered, {dropped} dropped; waits {} by cell, {} by message; {} daemon wake-ups",
        client.batches,
        client.events,
        client.waits_by_cell,
        client.waits_by_message,
        report.counters.loop_wakeups
    );
}

#[test]
fn a_silent_wait_is_seen_by_the_next_event() {
    // One event at a time, the next written only after the app handled the previous: the daemon
    // learns of every wait from the cell or a message, and each event reaches the app.
    let (r, w) = sys::pipe(false).unwrap();
    let daemon = TestDaemon::start("silent-wait", EsmConfig { queue_bound: 4 }, move |d| {
        d.add_evdev(r)
    });
    let (tx, rx) = mpsc::channel();
    let (ready_tx, ready_rx) = mpsc::channel();
    let path = daemon.path.clone();
    let mut enc = EvdevEncoder::new();
    let app = thread::spawn(move || {
        let mut c = EsmClient::connect(&path).unwrap();
        c.register(EventKind::TouchPress, move |ev| tx.send(ev.seq.0).unwrap())
            .unwrap();
        ready_tx.send(()).unwrap();
        for _ in 0..200 {
            c.wait().unwrap();
        }
        c.counters()
    });
    ready_rx.recv().unwrap();
    for i in 0..200 {
        let mut buf = Vec::new();
        enc.encode(press(i), sys::monotonic_ns(), &mut buf).unwrap();
        sys::write_all_once(w.as_raw_fd(), &buf).unwrap();
        assert_eq!(rx.recv().unwrap(), i as u64);
    }
    let client = app.join().unwrap();
    let report = daemon.stop();
    assert_eq!(client.events, 200);
    assert_eq!(
        client.waits_by_cell + client.waits_by_message,
        client.batches,
        "one told wait per batch"
    );
    assert!(client.waits_by_cell > 0, "{client:?}");
    assert_eq!(
        report.counters.waits_by_cell + report.counters.waits_by_message,
        200
    );
}
