//! Totals and turns: memory bounded across all clients, not only per client,
//! and one client's flood served in turns so that it cannot hold back another's delivery. Each
//! case runs a real `lulld` loop with real clients and checks what the users see: the others
//! served, a typed refusal past a bound, and every refusal counted.
//!
//! Order is checked with counts the daemon takes inside its loop, never with time; [`GIVE_UP`]
//! is a hang guard only.

mod common;

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use lull::client::{EsmClient, Handled};
use lull::kds_client::{self, Attachment, KdsClientError};
use lull_esm::protocol::ClientMsg;
use lull_esm::EsmConfig;
use lull_kds::server::{SURFACE_BUDGET_SCREENS, TOTAL_SURFACE_BUDGET_SCREENS};
use lull_kds::wire::{self, ErrorCode, Reply};
use lull_kds::Surface;
use lull_model::{EventKind, RawEvent, TouchPhase};
use lull_os::event_loop::{FnSource, LoopCtl, PostAction};
use lull_os::sys;
use lulld::daemon::{DaemonState, MAX_MESSAGES_PER_TURN};
use lulld::kds::{MAX_PENDING_BYTES_PER_APP, MAX_PENDING_BYTES_TOTAL};
use lulld::test_support::TestDaemon;

/// A guard against a broken daemon hanging the suite; never reached when things work.
const GIVE_UP: Duration = Duration::from_secs(20);

/// Item 10, fairness. The daemon used to read every message an ESM connection had queued
/// before it served any other descriptor, so one app flooding its socket held back every other
/// app's delivery for as long as the flood lasted. Now a connection gets at most
/// [`MAX_MESSAGES_PER_TURN`] messages per turn of the loop. With the loop held, app A queues
/// thousands of messages and then an event for app B becomes due; when the loop runs again, B's
/// event is delivered after at most one turn's worth of A's messages, and all of A's are still
/// served afterwards.
#[test]
fn a_flood_on_one_connection_does_not_hold_back_anothers_delivery() {
    const FLOOD: u64 = 4_096;
    let (trigger_r, trigger_w) = sys::pipe(true).unwrap();
    let (release_r, release_w) = sys::pipe(false).unwrap();
    let (inject_r, inject_w) = sys::pipe(true).unwrap();
    let (probe_r, probe_w) = sys::pipe(true).unwrap();
    let (entered_tx, entered) = mpsc::channel();
    let (waits_tx, waits) = mpsc::channel();
    // `waits_by_message` when B's event was injected and pushed.
    let at_delivery = Arc::new(AtomicU64::new(u64::MAX));
    let at = Arc::clone(&at_delivery);
    let daemon = TestDaemon::start("quota-fair", EsmConfig::default(), move |d| {
        let fd = trigger_r.as_raw_fd();
        d.add_source(Box::new(FnSource {
            fd,
            f: move |st: &mut DaemonState, _: &mut LoopCtl<DaemonState>| {
                let _owned = (&trigger_r, &release_r);
                let mut b = [0u8; 1];
                let _ = sys::read(fd, &mut b);
                entered_tx.send(st.counters().waits_by_message).unwrap();
                // Blocking: the loop is held here until the test releases it.
                let _ = sys::read(release_r.as_raw_fd(), &mut b);
                PostAction::Continue
            },
        }))?;
        let ifd = inject_r.as_raw_fd();
        d.add_source(Box::new(FnSource {
            fd: ifd,
            f: move |st: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>| {
                let _owned = &inject_r;
                let mut b = [0u8; 8];
                while sys::read(ifd, &mut b).is_ok_and(|n| n > 0) {}
                at.store(st.counters().waits_by_message, Ordering::SeqCst);
                let touch = RawEvent::Touch {
                    phase: TouchPhase::Down,
                    x: 1,
                    y: 0,
                };
                st.inject(touch, sys::monotonic_ns(), ctl);
                PostAction::Continue
            },
        }))?;
        d.add_source(lulld::test_support::probe_source(
            probe_r,
            waits_tx,
            DaemonState::counters,
        ))?;
        Ok(())
    });
    // B waits for a touch on its own thread (a client is not `Send`).
    let path = daemon.path.clone();
    let (ready_tx, ready) = mpsc::channel();
    let b = thread::spawn(move || {
        let mut b = EsmClient::connect(&path).unwrap();
        b.register(EventKind::TouchPress, |_| {}).unwrap();
        ready_tx.send(()).unwrap();
        b.wait().unwrap()
    });
    ready.recv_timeout(GIVE_UP).unwrap();
    // Asked until the daemon sees B waiting (in EV_WAIT or its wait cell).
    let mut watcher = EsmClient::connect(&daemon.path).unwrap();
    let deadline = Instant::now() + GIVE_UP;
    while watcher.stats().unwrap().waiting < 1 {
        assert!(Instant::now() < deadline, "B never waited");
        thread::yield_now();
    }
    // A: a raw connection whose socket can hold the whole flood.
    let a = EsmClient::connect(&daemon.path).unwrap();
    let a_fd = a.raw_fd();
    // As root, `SO_SNDBUFFORCE` passes `wmem_max`.
    sys::set_socket_buffer(a_fd, sys::SocketBuffer::SendForce, 64 << 20).unwrap();
    sys::set_nonblocking(a_fd, true).unwrap();
    let mut wait_msg = Vec::new();
    ClientMsg::Wait.encode(&mut wait_msg);

    sys::write_all_once(trigger_w.as_raw_fd(), &[1]).unwrap();
    let before = entered.recv_timeout(GIVE_UP).unwrap();
    for i in 0..FLOOD {
        sys::send_msg(a_fd, &wait_msg).unwrap_or_else(|e| panic!("message {i} of A: {e}"));
    }
    // B's event becomes due after A's flood is queued.
    sys::write_all_once(inject_w.as_raw_fd(), &[1]).unwrap();
    sys::write_all_once(release_w.as_raw_fd(), &[1]).unwrap();

    let handled = b.join().unwrap();
    assert!(
        matches!(
            handled,
            Handled::Event {
                kind: EventKind::TouchPress,
                ..
            }
        ),
        "{handled:?}"
    );
    let served_before_b = at_delivery.load(Ordering::SeqCst) - before;
    assert!(
        served_before_b <= MAX_MESSAGES_PER_TURN as u64,
        "{served_before_b} of A's {FLOOD} messages were read before B's event was delivered"
    );
    // All of A's messages are served in the later turns: none lost.
    let deadline = Instant::now() + GIVE_UP;
    let c = loop {
        sys::write_all_once(probe_w.as_raw_fd(), &[1]).unwrap();
        let c = waits.recv_timeout(GIVE_UP).unwrap();
        if c.waits_by_message == before + FLOOD {
            break c;
        }
        assert!(Instant::now() < deadline, "A's flood not served: {c:?}");
        thread::yield_now();
    };
    assert!(
        c.turns_deferred >= FLOOD / MAX_MESSAGES_PER_TURN as u64 - 1,
        "{c:?}"
    );
    assert_eq!(c.malformed_rejected + c.not_reading_dropped, 0, "{c:?}");
    drop((a, watcher));
    let report = daemon.stop();
    assert_eq!(report.esm.pushed_direct, 1);
    report.accounting.unwrap();
}

/// A full-screen window on the test's small screen.
fn attach(kds: &std::path::Path, name: &str) -> Attachment {
    kds_client::attach(kds, 0, 0, name).unwrap()
}

/// Item 10, total surfaces. Each app's surfaces were bounded (two screens), but
/// `MAX_APPS` apps could still make the server hold 128 screens of them (over a gigabyte at
/// 1080p). Now all apps' surfaces together hold at most [`TOTAL_SURFACE_BUDGET_SCREENS`]: the
/// `COMPOSE` past it is refused with `Resources`, the app keeps its channel, the others are
/// served, and it fits again once another app has detached. Every refusal is counted.
#[test]
fn the_display_servers_surfaces_are_bounded_in_total() {
    let d = TestDaemon::start_kds("quota-surfaces", 64, 48);
    let kds = d.kds_path();
    let full = || Surface::solid(64, 48, 0xff11_2233);
    let fillers = (TOTAL_SURFACE_BUDGET_SCREENS / SURFACE_BUDGET_SCREENS) as usize;
    let mut apps: Vec<Attachment> = (0..fillers)
        .map(|i| attach(&kds, &format!("filler-{i}")))
        .collect();
    for app in &mut apps {
        for id in 0..SURFACE_BUDGET_SCREENS as u32 {
            app.channel.compose(id, full()).unwrap();
        }
    }
    let mut late = attach(&kds, "late");
    match late.channel.compose(0, full()) {
        Err(KdsClientError::Refused {
            code: Some(ErrorCode::Resources),
            message,
            ..
        }) => assert!(message.contains("all apps"), "{message}"),
        other => panic!("expected the total budget refusal, got {other:?}"),
    }
    // Still served: a surface that replaces one of a filler's fits, and the late app's channel
    // is open (its DRAW is answered, refused for want of a surface).
    apps[0]
        .channel
        .compose(0, Surface::solid(8, 8, 0xff00_00ff))
        .unwrap();
    assert!(matches!(
        late.channel.draw(0, 0, 0),
        Err(KdsClientError::Refused {
            code: Some(ErrorCode::NoSurface),
            ..
        })
    ));
    // A filler leaves: its room is the late app's once the server has seen it go (asked until
    // then; each refusal meanwhile is counted too).
    drop(apps.remove(1));
    let mut refusals = 1;
    let deadline = Instant::now() + GIVE_UP;
    loop {
        match late.channel.compose(0, full()) {
            Ok(()) => break,
            Err(KdsClientError::Refused {
                code: Some(ErrorCode::Resources),
                ..
            }) => refusals += 1,
            Err(e) => panic!("{e}"),
        }
        assert!(Instant::now() < deadline, "the filler's room never freed");
        thread::yield_now();
    }
    late.channel.draw(0, 0, 0).unwrap();
    drop((apps, late));
    let report = d.stop();
    assert_eq!(report.kds.unwrap().server.surface_budget_refused, refusals);
    report.accounting.unwrap();
}

/// Writes `bytes` on an app's channel without the client library (which only sends whole
/// messages).
fn write_raw(app: &Attachment, bytes: &[u8]) {
    sys::write_all(app.channel.raw_fd(), bytes).unwrap();
}

/// Item 10, unfinished messages in total. Each app's unfinished message was bounded (16 MiB),
/// but 64 apps could each leave one unfinished and make the daemon buffer 1 GiB. Now the
/// unfinished messages of all apps together claim at most [`MAX_PENDING_BYTES_TOTAL`]: the
/// message whose header would go past it is refused with `Resources` and its channel closes,
/// while an app sending whole messages is served throughout. Counted: `over_total_quota_closed`.
#[test]
fn unfinished_messages_are_bounded_in_total() {
    let d = TestDaemon::start_kds("quota-pending", 64, 48);
    let kds = d.kds_path();
    let mut good = attach(&kds, "good");
    // Headers announcing the largest message an app may buffer, and a little of its data.
    let mut header = wire::request_type::COMPOSE.to_le_bytes().to_vec();
    let data_len = u32::try_from(MAX_PENDING_BYTES_PER_APP - wire::HEADER_LEN).unwrap();
    header.extend_from_slice(&data_len.to_le_bytes());
    header.extend_from_slice(&[0; 1024]);
    let holders_fit = MAX_PENDING_BYTES_TOTAL / MAX_PENDING_BYTES_PER_APP;
    let holders: Vec<Attachment> = (0..holders_fit)
        .map(|i| {
            let h = attach(&kds, &format!("holder-{i}"));
            write_raw(&h, &header);
            h
        })
        .collect();
    // A round trip after the holders' headers: the server has read them (they were ready
    // first) and they claim the whole total, which is not over it.
    good.channel
        .compose(0, Surface::solid(4, 4, 0xff00_ff00))
        .unwrap();
    let mut over = attach(&kds, "over");
    write_raw(&over, &header);
    // Window states may come first (the new window goes to the front).
    let refusal = loop {
        match over.channel.next_message() {
            Ok(Reply::WindowState(_)) => {}
            other => break other,
        }
    };
    match refusal {
        Ok(Reply::Error { code, message, .. }) => {
            assert_eq!(code, ErrorCode::Resources as u32);
            assert!(message.contains("all apps"), "{message}");
        }
        other => panic!("expected the total quota refusal, got {other:?}"),
    }
    assert!(matches!(
        over.channel.next_message(),
        Err(KdsClientError::ServerGone)
    ));
    // The good app is served while the holders' messages stay unfinished.
    good.channel.draw(0, 0, 0).unwrap();
    drop((holders, over, good));
    let report = d.stop();
    let host = report.kds.unwrap().host;
    assert_eq!(host.over_total_quota_closed, 1, "{host:?}");
    assert_eq!(host.over_quota_closed, 0, "{host:?}");
    report.accounting.unwrap();
}
