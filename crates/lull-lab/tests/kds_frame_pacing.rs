//! Frame pacing against a real display server (`lulld` with its KDS; `docs/kds-protocol.md`,
//! `FRAME` / `FRAME_DONE`): the first frame of a refresh period goes at once, a second one in
//! the same period waits for `FRAME_DONE` at the next boundary, the server's one-shot frame
//! timer is armed once per answered request and never while nobody waits, a hidden app's
//! request is held until it can be seen, and a client spamming `FRAME` (or sending it on the
//! control socket) harms nobody. Sequenced by replies and counters, never by sleeps.

use std::sync::mpsc;
use std::time::Duration;

use lull::kds_client::{self, KdsAdmin, KdsClientError};
use lull::kds_runtime::{AppOptions, KdsApp};
use lull_kds::pacing::{self, DEFAULT_REFRESH_PERIOD_NS};
use lull_kds::wire::{self, DrawItem, ErrorCode, Reply, Request};
use lull_kds::Surface;
use lull_model::ThreadCategory;
use lull_os::sys;
use lulld::test_support::TestDaemon;

/// A guard against a broken server hanging the suite; never reached when things work.
const GIVE_UP: Duration = Duration::from_secs(20);

fn options(name: &str) -> AppOptions {
    AppOptions {
        width: 32,
        height: 32,
        name: name.into(),
        guis: false,
    }
}

#[test]
fn two_frames_in_one_period_wait_for_the_boundary_and_the_timer_fires_once() {
    let daemon = TestDaemon::start_kds("kds-pacing", 64, 48);
    let app = KdsApp::attach(&daemon.kds_path(), &options("paced")).unwrap();
    let (tx, rx) = mpsc::channel();
    app.run_on(ThreadCategory::Drawing, move |ctx| {
        let r = (|| -> Result<_, KdsClientError> {
            ctx.compose(1, Surface::solid(2, 2, 0xff00_00ff))?;
            // The first frame goes at once; the second may not come before the next boundary.
            // It comes in the very next period (at the boundary) unless the first was drawn
            // at the end of a period and the machine stalled past the next: then try again.
            for _ in 0..100 {
                ctx.next_frame()?;
                let first_ns = sys::monotonic_ns();
                ctx.draw_batch(&[DrawItem {
                    surface_id: 1,
                    x: 0,
                    y: 0,
                }])?;
                let asked_ns = sys::monotonic_ns();
                ctx.next_frame()?;
                let second_ns = sys::monotonic_ns();
                let p = DEFAULT_REFRESH_PERIOD_NS;
                // Only a second frame asked within the first's period must wait; one asked after
                // a draw that crossed the boundary goes at once and proves nothing.
                let asked_in_same =
                    pacing::period_index(asked_ns, p) == pacing::period_index(first_ns, p);
                if asked_in_same
                    && pacing::period_index(first_ns, p) + 1 == pacing::period_index(second_ns, p)
                {
                    return Ok((first_ns, second_ns));
                }
            }
            Err(KdsClientError::Stopping)
        })();
        tx.send(r).unwrap();
    })
    .unwrap();
    let (first_ns, second_ns) = rx.recv_timeout(GIVE_UP).unwrap().unwrap();
    // The second frame came at the next refresh boundary, not before.
    assert!(second_ns >= pacing::next_boundary_ns(first_ns, DEFAULT_REFRESH_PERIOD_NS));
    let c = app.counters();
    // Every wait was for a FRAME sent (by the wait, or ahead with a waited frame's draw).
    assert!(
        c.frames_waited >= 1 && c.frames_waited <= c.frame_requests,
        "{c:?}"
    );
    assert!(c.frame_requests_ahead < c.frame_requests, "{c:?}");
    assert!(c.draws >= 1 && c.draw_batches >= 1, "{c:?}");
    app.detach().unwrap();
    let kds = daemon.stop().kds.unwrap();
    assert_eq!(kds.server.frame_requests, c.frame_requests);
    assert_eq!(
        kds.server.frame_requests_coalesced, 0,
        "one FRAME at a time"
    );
    // Armed once per request, never with nobody waiting; every wait was answered by an expiry.
    assert_eq!(kds.host.frame_timer_arms, c.frame_requests);
    assert!(kds.host.frame_timer_expiries >= c.frames_waited);
    assert_eq!(kds.server.frames_done, kds.host.frame_timer_expiries);
    assert_eq!(kds.host.frame_timer_errors, 0);
}

#[test]
fn an_idle_app_arms_no_timer() {
    let daemon = TestDaemon::start_kds("kds-pacing-idle", 64, 48);
    let app = KdsApp::attach(&daemon.kds_path(), &options("idle")).unwrap();
    let (tx, rx) = mpsc::channel();
    app.run_on(ThreadCategory::Drawing, move |ctx| {
        // One frame, the first of its period: drawn at once, no FRAME sent.
        let r = ctx
            .compose(1, Surface::solid(2, 2, 0xff00_ff00))
            .and_then(|()| ctx.next_frame())
            .and_then(|()| ctx.draw(1, 0, 0));
        tx.send(r).unwrap();
    })
    .unwrap();
    rx.recv_timeout(GIVE_UP).unwrap().unwrap();
    assert_eq!(app.counters().frame_requests, 0);
    app.detach().unwrap();
    let kds = daemon.stop().kds.unwrap();
    assert_eq!(kds.host.frame_timer_arms, 0, "{:?}", kds.host);
    assert_eq!(kds.host.frame_timer_expiries, 0);
}

#[test]
fn a_background_apps_frame_is_held_until_it_comes_forward() {
    let daemon = TestDaemon::start_kds("kds-pacing-hidden", 64, 48);
    let path = daemon.kds_path();
    let mut a = kds_client::attach(&path, 16, 16, "held").unwrap();
    assert_eq!(
        a.refresh_period_ns, DEFAULT_REFRESH_PERIOD_NS,
        "ATTACHED tells the period"
    );
    let mut admin = KdsAdmin::connect(&path).unwrap();
    admin.background(a.app).unwrap();
    a.channel.send(&Request::Frame).unwrap();
    // A request after the FRAME is answered first: the FRAME is held, not answered at the
    // boundary (whatever the time). Answers come in order, so had FRAME_DONE been sent it
    // would be seen while waiting for this OK.
    a.channel
        .declare_thread(ThreadCategory::Drawing, sys::gettid() as u32)
        .unwrap();
    assert_eq!(a.channel.take_frame_done(), None);
    admin.foreground(a.app).unwrap();
    // Now it can be seen: FRAME_DONE at the next boundary.
    let frame_ns = loop {
        match a.channel.next_message().unwrap() {
            Reply::FrameDone { frame_ns } => break frame_ns,
            Reply::WindowState(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(
        frame_ns % u64::from(DEFAULT_REFRESH_PERIOD_NS),
        0,
        "a boundary"
    );
    assert!(frame_ns <= sys::monotonic_ns());
    a.channel.detach().unwrap();
    let kds = daemon.stop().kds.unwrap();
    assert_eq!(kds.server.frames_done, 1);
    assert_eq!(kds.host.frame_timer_arms, 1, "armed only once visible");
}

#[test]
fn spamming_frame_is_coalesced_and_frame_on_the_control_socket_is_refused() {
    let daemon = TestDaemon::start_kds("kds-pacing-spam", 64, 48);
    let path = daemon.kds_path();
    // FRAME before ATTACH, on the control socket.
    let fd = sys::stream_connect(&path).unwrap();
    let mut out = Vec::new();
    wire::encode_request(&Request::Frame, &mut out);
    sys::write_all_once(std::os::fd::AsRawFd::as_raw_fd(&fd), &out).unwrap();
    let mut buf = Vec::new();
    let reply = loop {
        if let Some((r, _)) = wire::decode_reply(&buf).unwrap() {
            break r;
        }
        let mut chunk = [0u8; 512];
        let n = sys::read(std::os::fd::AsRawFd::as_raw_fd(&fd), &mut chunk).unwrap();
        assert!(n > 0, "the server closed without an answer");
        buf.extend_from_slice(&chunk[..n]);
    };
    assert!(
        matches!(reply, Reply::Error { code, .. } if code == ErrorCode::WrongChannel as u32),
        "{reply:?}"
    );
    drop(fd);
    // Thousands of FRAMEs in one burst: one pending request, answered once per boundary.
    let mut a = kds_client::attach(&path, 16, 16, "spam").unwrap();
    const SPAM: u64 = 5_000;
    let mut burst = Vec::new();
    for _ in 0..SPAM {
        wire::encode_request(&Request::Frame, &mut burst);
    }
    let written = sys::write_all_once(a.channel.raw_fd(), &burst).unwrap() as u64;
    let sent = written / burst.len() as u64 * SPAM + (written % burst.len() as u64) / 8;
    // The server is still serving the channel (and others): a later request is answered.
    a.channel
        .declare_thread(ThreadCategory::Drawing, sys::gettid() as u32)
        .unwrap();
    let other = kds_client::attach(&path, 8, 8, "bystander").unwrap();
    other.channel.detach().unwrap();
    a.channel.detach().unwrap();
    let kds = daemon.stop().kds.unwrap();
    let s = kds.server;
    assert_eq!(s.frame_requests, sent, "every whole FRAME was taken: {s:?}");
    // Each request that found none pending was answered, but for one pending at the detach.
    let fresh = s.frame_requests - s.frame_requests_coalesced;
    assert!(
        fresh == s.frames_done || fresh == s.frames_done + 1,
        "{s:?}"
    );
    // A spammer gets at most one FRAME_DONE per refresh: a burst handled within a few turns of
    // the loop gets a handful, not thousands.
    assert!(s.frames_done * 10 < s.frame_requests, "{s:?}");
}
