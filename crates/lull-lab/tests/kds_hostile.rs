//! Hostile clients against a real display server (`lulld` with its KDS on a 64 × 48 headless
//! screen, input from an evdev pipe).
//!
//! Every test runs one well-behaved app — figure 18 drawn in its 25 × 25 window, a touch-press
//! handler registered through the display server, its window in front — and one attacker. After
//! each attack the good app must be untouched: its window's pixels in a `SNAPSHOT` are the ones
//! it drew, the ESM still lists its handler (not suspended), and a press injected through the
//! evdev pipe runs its handler. The daemon's counters, read when it stops, must record each
//! refusal exactly.
//!
//! The daemon is observed in its own loop by a probe source (a pipe the test writes a byte to;
//! the source answers with the counters, the ESM's view of each app and the window list), so the
//! tests wait for states by asking, never by sleeping.

mod common;

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use lull::kds_client::{self, Attachment, KdsAdmin, KdsChannel, KdsClientError};
use lull::kds_runtime::{AppOptions, KdsApp};
use lull_kds::figure18::{self, GREEN_ARGB as GREEN, RED_ARGB as RED};
use lull_kds::wire::{self, request_type, ErrorCode, Reply, Request, WindowInfo, MAX_DATA_LEN};
use lull_kds::{Fill, Layer, Rect, Surface};
use lull_model::{
    AppId, EventKind, EventSeq, HandlerId, Payload, RawEvent, Screen, Stacking, ThreadCategory,
    TouchPhase, WindowState,
};
use lull_os::evdev::EvdevEncoder;
use lull_os::sys;
use lull_workload::rng::SplitMix64;
use lulld::daemon::{DaemonReport, DaemonState};
use lulld::kds::{MAX_COMMANDS_PER_TURN, MAX_CONTROL_CONNECTIONS};
use lulld::test_support::TestDaemon;

/// A guard against a broken daemon hanging the suite; never reached when things work.
const GIVE_UP: Duration = Duration::from_secs(20);
const SCREEN_W: u32 = 64;
const SCREEN_H: u32 = 48;
/// The good app's window: figure 18's 25 × 25, centred on the screen.
const GOOD_W: u32 = 25;
const GOOD_RECT: Rect = Rect::new(19, 11, 25, 25);
/// The attacker's window: larger, so that part of it shows around the good app's.
const HOSTILE_W: u32 = 40;
const HOSTILE_H: u32 = 30;
const HOSTILE_RECT: Rect = Rect::new(12, 9, 40, 30);
/// A screen pixel inside the attacker's window and outside the good app's.
const HOSTILE_ONLY_PIXEL: (u32, u32) = (13, 10);
const BLUE: u32 = 0xff00_00ff;
/// The kernel's overflow user and group (`nobody`).
const NOBODY: u32 = 65_534;

/// What the probe reads inside the daemon's loop.
#[derive(Clone, Debug)]
struct Probed {
    /// Every ESM app: id, input suspended, its touch-press handler.
    esm_apps: Vec<(AppId, bool, Option<HandlerId>)>,
    windows: Vec<WindowInfo>,
    control_open: usize,
}

fn probe(st: &DaemonState) -> Probed {
    let esm = st.esm();
    let host = st.kds().expect("the test daemon runs a display server");
    Probed {
        esm_apps: esm
            .apps()
            .map(|a| {
                (
                    a,
                    esm.input_suspended(a).expect("listed"),
                    esm.handler(a, EventKind::TouchPress).expect("listed"),
                )
            })
            .collect(),
        windows: host.server().windows(),
        control_open: host.control_connections_open(),
    }
}

/// A daemon with a display server, an evdev pipe and a probe; the good app attached and drawn.
struct Bench {
    daemon: TestDaemon,
    kds_path: PathBuf,
    device: OwnedFd,
    enc: EvdevEncoder,
    poke: OwnedFd,
    probed: mpsc::Receiver<Probed>,
    admin: KdsAdmin,
    good: KdsApp,
    good_press: HandlerId,
    presses: mpsc::Receiver<(EventSeq, Payload)>,
    /// The good app's window as a snapshot showed it after it drew.
    golden: Vec<u32>,
    next_x: i32,
}

fn crop(shot: &lull_kds::Pixmap, r: Rect) -> Vec<u32> {
    let mut out = Vec::with_capacity(r.area() as usize);
    for y in r.y..r.y + r.height as i32 {
        for x in r.x..r.x + r.width as i32 {
            out.push(shot.get(x as u32, y as u32).expect("inside the screen"));
        }
    }
    out
}

impl Bench {
    fn start(tag: &str) -> Bench {
        let (ev_r, ev_w) = sys::pipe(false).unwrap();
        let (daemon, probe_w, probed) =
            TestDaemon::start_kds_probed(tag, SCREEN_W, SCREEN_H, ev_r, probe);
        let kds_path = daemon.kds_path();
        let good = KdsApp::attach(
            &kds_path,
            &AppOptions {
                width: GOOD_W,
                height: GOOD_W,
                name: "good".into(),
                guis: true,
            },
        )
        .unwrap();
        assert_eq!(good.window(), GOOD_RECT);
        let (ptx, presses) = mpsc::channel();
        let good_press = good
            .esm_register(EventKind::TouchPress, move |ev| {
                let _ = ptx.send((ev.seq, ev.payload));
            })
            .unwrap();
        let (dtx, drawn) = mpsc::channel();
        good.run_on(ThreadCategory::Drawing, move |ctx| {
            ctx.compose(1, figure18::surface()).unwrap();
            ctx.draw(1, 0, 0).unwrap();
            dtx.send(()).unwrap();
        })
        .unwrap();
        drawn.recv_timeout(GIVE_UP).unwrap();
        let mut admin = KdsAdmin::connect(&kds_path).unwrap();
        let shot = admin.snapshot().unwrap();
        let golden = crop(&shot, GOOD_RECT);
        assert_eq!(shot.get(19, 11), Some(RED));
        assert_eq!(shot.get(19 + 24, 11 + 24), Some(GREEN));
        assert_eq!(shot.get(19 + 20, 11 + 2), Some(0), "transparent corner");
        let mut b = Bench {
            daemon,
            kds_path,
            device: ev_w,
            enc: EvdevEncoder::new(),
            poke: probe_w,
            probed,
            admin,
            good,
            good_press,
            presses,
            golden,
            next_x: 0,
        };
        b.assert_good_untouched("after attaching");
        b
    }

    fn probe(&mut self) -> Probed {
        assert_eq!(sys::write_all_once(self.poke.as_raw_fd(), &[1]).unwrap(), 1);
        self.probed.recv_timeout(GIVE_UP).unwrap()
    }

    /// Asks the daemon until `pred` holds.
    fn until(&mut self, what: &str, pred: impl Fn(&Probed) -> bool) -> Probed {
        let deadline = std::time::Instant::now() + GIVE_UP;
        loop {
            let p = self.probe();
            if pred(&p) {
                return p;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "daemon never reached: {what}; last {p:?}"
            );
            std::thread::yield_now();
        }
    }

    fn inject(&mut self, raw: RawEvent) {
        common::write_evdev(&mut self.enc, &self.device, raw);
    }

    /// The good app's pixels, ESM registration and event delivery, all as they were.
    fn assert_good_untouched(&mut self, what: &str) {
        let shot = self.admin.snapshot().unwrap();
        assert_eq!(
            crop(&shot, GOOD_RECT),
            self.golden,
            "{what}: the good app's pixels changed"
        );
        let p = self.probe();
        let good = self.good.app();
        assert!(
            p.esm_apps
                .iter()
                .any(|&(a, s, h)| a == good && !s && h == Some(self.good_press)),
            "{what}: the good app's handler is not in the application list: {:?}",
            p.esm_apps
        );
        let top = p.windows.last().expect("the good app's window");
        assert_eq!(
            (top.app, top.state),
            (good, WindowState::FRONT),
            "{what}: the good app is not in front"
        );
        let x = self.next_x;
        self.next_x += 1;
        self.inject(RawEvent::Touch {
            phase: TouchPhase::Down,
            x,
            y: 7,
        });
        let (_, payload) = self
            .presses
            .recv_timeout(GIVE_UP)
            .unwrap_or_else(|_| panic!("{what}: the good app's handler never ran"));
        assert_eq!(payload, Payload::Point { x, y: 7 }, "{what}");
    }

    /// An attacker attached through the control socket; the window manager then puts the good
    /// app back in front.
    fn hostile(&mut self) -> Attachment {
        let a = kds_client::attach(&self.kds_path, HOSTILE_W, HOSTILE_H, "hostile").unwrap();
        assert_eq!(a.window, HOSTILE_RECT);
        self.admin.foreground(self.good.app()).unwrap();
        a
    }

    fn windows(&mut self) -> Vec<AppId> {
        self.admin
            .windows()
            .unwrap()
            .into_iter()
            .map(|w| w.app)
            .collect()
    }

    fn stop(self) -> DaemonReport {
        let Bench {
            daemon,
            good,
            admin,
            presses,
            ..
        } = self;
        good.detach().unwrap();
        drop(admin);
        let report = daemon.stop();
        assert!(presses.try_recv().is_err(), "a press handled twice");
        report.accounting.clone().unwrap();
        report
    }
}

/// The next reply on an app's channel, window-state pushes skipped; `None` once the server
/// closed the channel.
fn next_reply(ch: &mut KdsChannel) -> Option<Reply> {
    loop {
        match ch.next_message() {
            Ok(Reply::WindowState(_)) => continue,
            Ok(r) => return Some(r),
            Err(KdsClientError::ServerGone) => return None,
            Err(e) => panic!("channel failed: {e}"),
        }
    }
}

fn code_of(r: Result<(), KdsClientError>) -> Option<ErrorCode> {
    match r {
        Err(KdsClientError::Refused { code, .. }) => code,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A raw control connection.
struct Raw {
    s: UnixStream,
    buf: Vec<u8>,
}

impl Raw {
    fn connect(path: &Path) -> Raw {
        let s = UnixStream::connect(path).unwrap();
        s.set_read_timeout(Some(GIVE_UP)).unwrap();
        Raw { s, buf: Vec::new() }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap();
    }

    /// As [`Raw::next`], with a reset connection counted as closed (a server that closes with
    /// our request unread may reset it).
    fn next_or_reset(&mut self) -> Option<Reply> {
        loop {
            if let Some((r, used)) = wire::decode_reply(&self.buf).unwrap() {
                self.buf.drain(..used);
                return Some(r);
            }
            let mut chunk = [0u8; 4096];
            match self.s.read(&mut chunk) {
                Ok(0) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return None,
                Err(e) => panic!("the server answers: {e}"),
            }
        }
    }

    /// The next whole reply, or `None` at end of file.
    fn next(&mut self) -> Option<Reply> {
        loop {
            if let Some((r, used)) = wire::decode_reply(&self.buf).unwrap() {
                self.buf.drain(..used);
                return Some(r);
            }
            let mut chunk = [0u8; 4096];
            let n = self.s.read(&mut chunk).expect("the server answers");
            if n == 0 {
                assert!(self.buf.is_empty(), "the server sent half a reply");
                return None;
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

fn encoded(req: &Request) -> Vec<u8> {
    let mut b = Vec::new();
    wire::encode_request(req, &mut b);
    b
}

fn assert_error(r: Option<Reply>, want: ErrorCode, what: &str) -> u32 {
    match r {
        Some(Reply::Error {
            request_type, code, ..
        }) if code == want as u32 => request_type,
        other => panic!("{what}: expected ERROR {want:?}, got {other:?}"),
    }
}

// ------------------------------------------------------------------------------------------------
// The control socket.

#[test]
fn random_bytes_on_the_control_socket_get_malformed_and_close() {
    const CONNECTIONS: u64 = 64;
    let mut b = Bench::start("kds-hostile-noise");
    let mut rng = SplitMix64::new(0x6b64_735f_6e6f_6973);
    let mut wrong_channel = 0;
    for i in 0..CONNECTIONS {
        let mut raw = Raw::connect(&b.kds_path);
        let len = match i % 4 {
            1 => 8 + 12,
            3 => 8 + rng.below(24) as usize,
            _ => 8 + rng.below(120) as usize,
        };
        let mut bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        if i % 2 == 1 {
            // An app command's header with the exact length, a random body: a DRAW's three
            // numbers are always valid; for the others the body decides.
            let ty = if i % 4 == 1 {
                request_type::DRAW
            } else {
                2 + rng.below(5) as u32
            };
            bytes[..4].copy_from_slice(&ty.to_le_bytes());
            bytes[4..8].copy_from_slice(&((len - 8) as u32).to_le_bytes());
        }
        raw.send(&bytes);
        match wire::decode_request(&bytes) {
            Err(e) => {
                let ty = assert_error(raw.next(), ErrorCode::Malformed, &format!("{e}"));
                if let wire::WireError::UnknownType(t) = e {
                    assert_eq!(ty, t);
                }
                assert_eq!(raw.next(), None, "then the server closes");
            }
            Ok(Some((req, used))) => {
                assert_eq!(used, bytes.len());
                // An app command on the control socket: refused, the connection stays.
                assert_error(raw.next(), ErrorCode::WrongChannel, &format!("{req:?}"));
                wrong_channel += 1;
            }
            Ok(None) => unreachable!("at least a header was sent"),
        }
        if i % 16 == 0 {
            b.assert_good_untouched(&format!("noise connection {i}"));
        }
    }
    b.assert_good_untouched("after the noise");
    let report = b.stop();
    let kds = report.kds.unwrap();
    assert_eq!(kds.host.malformed_closed, CONNECTIONS - wrong_channel);
    assert_eq!(kds.server.refused, wrong_channel);
    assert!(
        wrong_channel > 0,
        "the body-decides half reached the handlers"
    );
    // The good app's attach, the admin, and the noise.
    assert_eq!(kds.host.control_connections, CONNECTIONS + 2);
}

#[test]
fn an_oversized_data_length_is_refused_before_any_data() {
    let mut b = Bench::start("kds-hostile-huge");
    let mut raw = Raw::connect(&b.kds_path);
    let mut header = request_type::COMPOSE.to_le_bytes().to_vec();
    header.extend_from_slice(&(MAX_DATA_LEN + 1).to_le_bytes());
    raw.send(&header);
    match raw.next() {
        Some(Reply::Error { code, message, .. }) => {
            assert_eq!(code, ErrorCode::Malformed as u32);
            assert!(message.contains("data length"), "{message}");
        }
        other => panic!("expected ERROR Malformed, got {other:?}"),
    }
    assert_eq!(raw.next(), None);
    b.assert_good_untouched("oversized header on the control socket");

    // The same on an attached app's private channel: that app, and only it, is gone.
    let mut h = b.hostile();
    sys::write_all_once(h.channel.raw_fd(), &header).unwrap();
    assert_error(next_reply(&mut h.channel), ErrorCode::Malformed, "huge");
    assert_eq!(next_reply(&mut h.channel), None);
    assert!(!b.windows().contains(&h.app));
    b.until("the attacker left the ESM", |p| {
        p.esm_apps.iter().all(|e| e.0 != h.app)
    });
    b.assert_good_untouched("oversized header on a private channel");
    let kds = b.stop().kds.unwrap();
    assert_eq!(kds.host.malformed_closed, 2);
    assert_eq!(kds.server.refused, 0);
}

#[test]
fn a_control_connection_buffering_more_than_a_request_is_closed() {
    let mut b = Bench::start("kds-hostile-ctl-buffer");
    // A well-formed header announcing 1 MiB (under MAX_DATA_LEN, far over any control request),
    // then data that never completes it.
    let mut cmd = request_type::ATTACH.to_le_bytes().to_vec();
    cmd.extend_from_slice(&(1u32 << 20).to_le_bytes());
    cmd.extend_from_slice(&[0x5a; 16 * 1024]);
    let mut raw = Raw::connect(&b.kds_path);
    let _ = raw.s.write_all(&cmd);
    assert_eq!(raw.next_or_reset(), None, "closed without a reply");
    b.assert_good_untouched("a control connection that never completes its request");
    let kds = b.stop().kds.unwrap();
    assert_eq!(kds.host.control_oversized_closed, 1);
    assert_eq!(kds.server.attached, 1);
}

#[test]
fn control_connections_beyond_the_cap_are_closed_and_the_server_goes_on() {
    let mut b = Bench::start("kds-hostile-ctl-cap");
    let list = encoded(&Request::ListWindows);
    // The bench's admin connection is the only one left open (the good app's closed after it
    // attached); two more than the cap are attempted.
    b.until("only the admin connection is open", |p| p.control_open == 1);
    let extra = 2;
    let mut conns: Vec<Raw> = (0..MAX_CONTROL_CONNECTIONS - 1 + extra)
        .map(|_| Raw::connect(&b.kds_path))
        .collect();
    let mut served = 0;
    for c in &mut conns {
        let _ = c.s.write_all(&list);
        if matches!(c.next_or_reset(), Some(Reply::Windows(_))) {
            served += 1;
        }
    }
    // Accepted in connection order: the last `extra` found the cap reached.
    assert_eq!(served, MAX_CONTROL_CONNECTIONS - 1);
    b.assert_good_untouched("a flood of control connections");
    drop(conns);
    // Closed connections free their places: a new one is served.
    let mut again = Raw::connect(&b.kds_path);
    again.send(&list);
    assert!(matches!(again.next(), Some(Reply::Windows(_))));
    drop(again);
    let kds = b.stop().kds.unwrap();
    assert_eq!(kds.host.control_refused, extra as u64);
}

#[test]
fn an_attach_whose_client_left_still_tells_the_app_it_sent_back() {
    let mut b = Bench::start("kds-hostile-attach-gone");
    let mut raw = Raw::connect(&b.kds_path);
    raw.send(&encoded(&Request::Attach {
        width: 10,
        height: 10,
        name: "gone".into(),
    }));
    // Gone before the server reads the request: its ATTACHED cannot be delivered.
    drop(raw);
    let good = b.good.app();
    b.until("the new window came and went", |p| {
        p.windows.len() == 1 && p.esm_apps.len() == 1 && p.esm_apps[0].1
    });
    // The good app was sent to the back by the arrival; a reply on its channel comes after any
    // push before it, so once this request returns the runtime has applied the push.
    b.good.esm_register(EventKind::Timer, |_| {}).unwrap();
    assert_eq!(
        b.good.window_state().stacking,
        Stacking::Background,
        "the good app was never told it went to the back"
    );
    b.admin.foreground(good).unwrap();
    b.assert_good_untouched("an attach whose client left");
    let kds = b.stop().kds.unwrap();
    assert_eq!((kds.server.attached, kds.server.detached), (2, 2));
}

#[test]
fn a_truncated_command_then_close_changes_nothing() {
    let mut b = Bench::start("kds-hostile-truncated");
    let mut cmd = request_type::COMPOSE.to_le_bytes().to_vec();
    cmd.extend_from_slice(&100u32.to_le_bytes());
    cmd.extend_from_slice(&[0xab; 20]);
    let mut raw = Raw::connect(&b.kds_path);
    raw.send(&cmd);
    raw.s.shutdown(std::net::Shutdown::Write).unwrap();
    // The server answers nothing and closes its end once it has read the end of file.
    assert_eq!(raw.next(), None);
    b.assert_good_untouched("truncated command on the control socket");

    // On a private channel: the app closing its channel leaves everywhere.
    let h = b.hostile();
    sys::write_all_once(h.channel.raw_fd(), &cmd).unwrap();
    let Attachment {
        app, channel, esm, ..
    } = h;
    drop(channel);
    b.until("the attacker left", |p| {
        p.esm_apps.iter().all(|e| e.0 != app) && p.windows.iter().all(|w| w.app != app)
    });
    drop(esm);
    b.assert_good_untouched("truncated command on a private channel");
    let kds = b.stop().kds.unwrap();
    assert_eq!(kds.host.malformed_closed, 0);
    assert_eq!(kds.server.refused, 0);
    assert_eq!((kds.server.attached, kds.server.detached), (2, 2));
}

#[test]
fn an_app_command_on_the_control_socket_is_wrong_channel() {
    let mut b = Bench::start("kds-hostile-wrong-channel");
    let mut raw = Raw::connect(&b.kds_path);
    raw.send(&encoded(&Request::Compose {
        surface_id: 1,
        surface: Surface::solid(4, 4, BLUE),
    }));
    let ty = assert_error(raw.next(), ErrorCode::WrongChannel, "COMPOSE on control");
    assert_eq!(ty, request_type::COMPOSE);
    raw.send(&encoded(&Request::Draw {
        surface_id: 1,
        x: 0,
        y: 0,
    }));
    assert_error(raw.next(), ErrorCode::WrongChannel, "DRAW on control");
    // The connection is still served.
    raw.send(&encoded(&Request::ListWindows));
    assert!(matches!(raw.next(), Some(Reply::Windows(w)) if w.len() == 1));
    b.assert_good_untouched("app commands on the control socket");
    let kds = b.stop().kds.unwrap();
    assert_eq!(kds.server.refused, 2);
    assert_eq!(kds.host.malformed_closed, 0);
}

// ------------------------------------------------------------------------------------------------
// An attached attacker.

#[test]
fn drawing_outside_its_window_is_refused_and_the_channel_keeps_working() {
    let mut b = Bench::start("kds-hostile-outside");
    let mut h = b.hostile();
    h.channel.compose(1, Surface::solid(10, 10, BLUE)).unwrap();
    for (x, y) in [(35, 0), (-1, 0), (0, 25), (i32::MAX, i32::MAX)] {
        assert_eq!(
            code_of(h.channel.draw(1, x, y)),
            Some(ErrorCode::OutsideWindow),
            "({x}, {y})"
        );
        b.assert_good_untouched(&format!("draw at ({x}, {y})"));
    }
    // Still attached and served: a draw inside lands in its own window only.
    h.channel.draw(1, 0, 0).unwrap();
    let shot = b.admin.snapshot().unwrap();
    let (px, py) = HOSTILE_ONLY_PIXEL;
    assert_eq!(shot.get(px, py), Some(BLUE));
    assert_eq!(shot.get(HOSTILE_RECT.x as u32 - 1, py), Some(0xff00_0000));
    b.assert_good_untouched("draw inside its own window");
    drop(h);
    let kds = b.stop().kds.unwrap();
    assert_eq!(kds.server.refused, 4);
    assert_eq!(kds.host.malformed_closed, 0);
}

#[test]
fn a_flood_of_commands_is_served_in_fair_turns_and_in_order() {
    let mut b = Bench::start("kds-hostile-flood");
    let mut h = b.hostile();
    h.channel.compose(1, Surface::solid(10, 10, BLUE)).unwrap();
    // Writes of BATCH commands — more than one turn's worth, so each write is served over two
    // turns — of a valid draw and one refused (outside) alternately, so the replies show the
    // order they were handled in. A batch's replies (each a small message the kernel charges
    // about 1 KiB for) fit in the server's socket buffer, so the client is never dropped for
    // not reading while it is reading.
    const BATCH: usize = MAX_COMMANDS_PER_TURN + MAX_COMMANDS_PER_TURN / 2;
    const BATCHES: usize = 10;
    for _ in 0..BATCHES {
        let mut bytes = Vec::new();
        for i in 0..BATCH {
            let x = if i % 2 == 0 { 0 } else { 1000 };
            wire::encode_request(
                &Request::Draw {
                    surface_id: 1,
                    x,
                    y: 0,
                },
                &mut bytes,
            );
        }
        assert_eq!(
            sys::write_all_once(h.channel.raw_fd(), &bytes).unwrap(),
            bytes.len()
        );
        for i in 0..BATCH {
            match next_reply(&mut h.channel) {
                Some(Reply::Ok { .. }) if i % 2 == 0 => {}
                Some(Reply::Error { code, .. })
                    if i % 2 == 1 && code == ErrorCode::OutsideWindow as u32 => {}
                other => panic!("reply {i}: {other:?}"),
            }
        }
    }
    b.assert_good_untouched("a flood of draws");
    drop(h);
    let kds = b.stop().kds.unwrap();
    assert_eq!(kds.server.refused, (BATCH * BATCHES) as u64 / 2);
    assert_eq!(kds.host.not_reading_closed, 0);
    // Nothing more arrived after each write until its replies were read: the turn that handled
    // the rest of a batch ran because the one before had put it off.
    assert!(kds.host.turns_deferred >= BATCHES as u64, "{:?}", kds.host);
}

#[test]
fn drawing_a_surface_it_never_composed_is_refused() {
    let mut b = Bench::start("kds-hostile-nosurface");
    let mut h = b.hostile();
    assert_eq!(code_of(h.channel.draw(7, 0, 0)), Some(ErrorCode::NoSurface));
    b.assert_good_untouched("draw of an uncomposed surface");
    drop(h);
    let kds = b.stop().kds.unwrap();
    assert_eq!(kds.server.refused, 1);
}

#[test]
fn composing_beyond_its_window_or_its_surface_quota_is_refused() {
    let mut b = Bench::start("kds-hostile-compose");
    let mut h = b.hostile();
    for (w, hh) in [
        (HOSTILE_W + 1, HOSTILE_H),
        (HOSTILE_W, HOSTILE_H + 1),
        (u32::MAX, 1),
    ] {
        assert_eq!(
            code_of(
                h.channel
                    .compose(1, Surface::solid(w, hh, BLUE))
                    .map(|_| ())
            ),
            Some(ErrorCode::Compose),
            "{w}x{hh}"
        );
    }
    // A layer whose pixel count does not match its size.
    let lying = Surface {
        width: 4,
        height: 4,
        layers: vec![Layer {
            z: 0,
            rect: Rect::new(0, 0, 2, 2),
            fill: Fill::Pixels(vec![BLUE; 4]),
        }],
    };
    h.channel.compose(1, lying).unwrap();
    for id in 0..lull_kds::server::MAX_SURFACES as u32 {
        h.channel.compose(id, Surface::solid(2, 2, BLUE)).unwrap();
    }
    assert_eq!(
        code_of(h.channel.compose(
            lull_kds::server::MAX_SURFACES as u32,
            Surface::solid(2, 2, BLUE)
        )),
        Some(ErrorCode::Compose),
        "one surface past the quota"
    );
    b.assert_good_untouched("oversized composes");
    drop(h);
    let kds = b.stop().kds.unwrap();
    assert_eq!(kds.server.refused, 4);
}

/// Runs as a child process (see `declaring_a_thread_of_another_process_is_refused`): blocks
/// until its standard input closes, so its process id names a live process the test owns.
#[test]
#[ignore = "child process of declaring_a_thread_of_another_process_is_refused"]
fn idle_child() {
    if std::env::var_os("LULL_IDLE_CHILD").is_none() {
        return;
    }
    let mut sink = Vec::new();
    let _ = io::stdin().read_to_end(&mut sink);
}

#[test]
fn declaring_a_thread_of_another_process_is_refused() {
    let mut b = Bench::start("kds-hostile-thread");
    let mut h = b.hostile();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "idle_child", "--test-threads=1"])
        .env("LULL_IDLE_CHILD", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let foreign = [0, 1, child.id(), u32::MAX];
    for tid in foreign {
        assert_eq!(
            code_of(h.channel.declare_thread(ThreadCategory::Background, tid)),
            Some(ErrorCode::BadThread),
            "tid {tid}"
        );
    }
    drop(child.stdin.take());
    child.wait().unwrap();
    let p = b.probe();
    let w = p.windows.iter().find(|w| w.app == h.app).unwrap();
    assert_eq!(w.threads, [None; 4], "no refused declaration was kept");
    // The boundary is the process: a thread of the caller's own process is accepted.
    h.channel
        .declare_thread(ThreadCategory::Background, sys::gettid() as u32)
        .unwrap();
    b.assert_good_untouched("foreign thread declarations");
    drop(h);
    let kds = b.stop().kds.unwrap();
    assert_eq!(kds.server.refused, foreign.len() as u64);
}

#[test]
fn window_manager_requests_on_a_private_channel_are_not_permitted() {
    let mut b = Bench::start("kds-hostile-wm");
    let mut h = b.hostile();
    let good = b.good.app();
    let attempts = [
        Request::WmBackground { app: good },
        Request::WmForeground { app: h.app },
        Request::WmCover {
            app: good,
            covered: true,
        },
        Request::WmScreen {
            screen: Screen::Off,
        },
        Request::Snapshot,
        Request::ListWindows,
    ];
    for req in &attempts {
        match h.channel.request(req) {
            Err(KdsClientError::Refused { code, request, .. }) => {
                assert_eq!(code, Some(ErrorCode::NotPermitted), "{req:?}");
                assert_eq!(request, lull_kds::server::request_type_of(req));
            }
            other => panic!("{req:?}: {other:?}"),
        }
        b.assert_good_untouched(&format!("{req:?} on a private channel"));
    }
    let p = b.probe();
    let hw = p.windows.iter().find(|w| w.app == h.app).unwrap();
    assert_eq!(hw.state.stacking, Stacking::Background, "still behind");
    drop(h);
    let kds = b.stop().kds.unwrap();
    assert_eq!(kds.server.refused, attempts.len() as u64);
}

#[test]
fn random_bytes_on_a_private_channel_close_only_that_channel() {
    let mut b = Bench::start("kds-hostile-private-noise");
    let mut rng = SplitMix64::new(0x0070_7269_7661_7465);
    const ATTACKERS: u64 = 8;
    for i in 0..ATTACKERS {
        let mut h = b.hostile();
        let mut bytes: Vec<u8> = (0..8 + rng.below(64))
            .map(|_| rng.next_u64() as u8)
            .collect();
        // A type no request has.
        bytes[..4].copy_from_slice(&(13 + rng.below(1 << 20) as u32).to_le_bytes());
        sys::write_all_once(h.channel.raw_fd(), &bytes).unwrap();
        assert_error(next_reply(&mut h.channel), ErrorCode::Malformed, "noise");
        assert_eq!(next_reply(&mut h.channel), None, "then the channel closes");
        assert!(!b.windows().contains(&h.app), "its window is gone");
        b.until("the attacker left the ESM", |p| {
            p.esm_apps.iter().all(|e| e.0 != h.app)
        });
        b.assert_good_untouched(&format!("attacker {i}"));
    }
    let kds = b.stop().kds.unwrap();
    assert_eq!(kds.host.malformed_closed, ATTACKERS);
    assert_eq!(kds.server.attached, 1 + ATTACKERS);
    assert_eq!(kds.server.refused, 0);
}

#[test]
fn an_app_that_stops_reading_is_dropped() {
    /// Window-state pushes tried before giving up; the kernel's socket buffer holds a few
    /// hundred small messages.
    const MAX_TOGGLES: u32 = 100_000;
    let mut b = Bench::start("kds-hostile-not-reading");
    let h = b.hostile();
    // The attacker never reads its channel; every cover toggle pushes it a window state.
    let mut toggles = 0;
    let refused = loop {
        assert!(
            toggles < MAX_TOGGLES,
            "the server never dropped the attacker"
        );
        match b.admin.cover(h.app, toggles % 2 == 0) {
            Ok(()) => toggles += 1,
            Err(KdsClientError::Refused { code, .. }) => break code,
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(
        refused,
        Some(ErrorCode::NoWindow),
        "dropped after {toggles}"
    );
    println!("the attacker was dropped after {toggles} window-state pushes it never read");
    assert!(!b.windows().contains(&h.app));
    b.until("the attacker left the ESM", |p| {
        p.esm_apps.iter().all(|e| e.0 != h.app)
    });
    b.assert_good_untouched("after the attacker was dropped");
    drop(h);
    let kds = b.stop().kds.unwrap();
    assert_eq!(kds.host.not_reading_closed, 1);
    assert_eq!(kds.server.refused, 1, "the cover that found no window");
}

#[test]
fn closing_its_esm_connection_removes_the_app_everywhere() {
    let mut b = Bench::start("kds-hostile-esm-close");
    let h = b.hostile();
    let Attachment {
        app,
        mut channel,
        esm,
        ..
    } = h;
    channel.compose(1, Surface::solid(4, 4, BLUE)).unwrap();
    drop(esm);
    // The server closes the KDS channel too.
    assert_eq!(next_reply(&mut channel), None);
    assert!(!b.windows().contains(&app));
    b.until("the app left the ESM", |p| {
        p.esm_apps.iter().all(|e| e.0 != app)
    });
    b.assert_good_untouched("after the ESM connection closed");
    let kds = b.stop().kds.unwrap();
    assert_eq!((kds.server.attached, kds.server.detached), (2, 2));
    assert_eq!(kds.server.refused, 0);
}

// ------------------------------------------------------------------------------------------------
// No way to reach another client's channel.

#[test]
fn a_draw_naming_another_apps_surface_id_stays_in_the_callers_window() {
    let mut b = Bench::start("kds-hostile-surface-id");
    let mut h = b.hostile();
    // The good app composed surface 1; the attacker has none of its own yet.
    assert_eq!(
        code_of(h.channel.draw(1, 0, 0)),
        Some(ErrorCode::NoSurface),
        "surface ids are per app"
    );
    h.channel
        .compose(1, Surface::solid(HOSTILE_W, HOSTILE_H, BLUE))
        .unwrap();
    h.channel.draw(1, 0, 0).unwrap();
    let shot = b.admin.snapshot().unwrap();
    let (px, py) = HOSTILE_ONLY_PIXEL;
    assert_eq!(shot.get(px, py), Some(BLUE), "its own window shows it");
    b.assert_good_untouched("the attacker's surface 1 drawn");
    // The good app's surface 1 is still figure 18.
    let (tx, rx) = mpsc::channel();
    b.good
        .run_on(ThreadCategory::Drawing, move |ctx| {
            ctx.draw(1, 0, 0).unwrap();
            tx.send(()).unwrap();
        })
        .unwrap();
    rx.recv_timeout(GIVE_UP).unwrap();
    b.assert_good_untouched("the good app redrew its surface 1");
    // Only the window manager decides what lies on top.
    b.admin.foreground(h.app).unwrap();
    let shot = b.admin.snapshot().unwrap();
    assert!(crop(&shot, GOOD_RECT).iter().all(|&p| p == BLUE));
    b.admin.foreground(b.good.app()).unwrap();
    b.assert_good_untouched("the window manager restacked");
    drop(h);
    let kds = b.stop().kds.unwrap();
    assert_eq!(kds.server.refused, 1);
}

/// Sends `requests` on a control connection made by a child process running as `nobody`, and
/// returns every byte the server answered until it closed the connection.
fn as_nobody(path: &Path, requests: &[u8]) -> Vec<u8> {
    // Everything the child touches is prepared before `fork`: afterwards it makes only raw
    // system calls (the parent has other threads, whose locks the child must not need).
    let addr = sys::PreparedUnixAddr::new(path).expect("socket path too long");
    let (r, w) = sys::pipe(false).unwrap();
    let w_raw = w.as_raw_fd();
    // SAFETY: the child runs only async-signal-safe system calls on memory prepared above and
    // leaves with `_exit`.
    let forked = unsafe { sys::fork() }.expect("fork failed");
    let sys::Forked::Parent(pid) = forked else {
        let w_fd = u32::try_from(w_raw).unwrap_or(3);
        sys::close_range(3, w_fd.saturating_sub(1));
        sys::close_range(w_fd + 1, 1023);
        // Only this (the only) thread's credentials change.
        if sys::become_user(NOBODY, NOBODY).is_err() {
            sys::exit_now(10);
        }
        let Ok(s) = addr.connect_stream() else {
            sys::exit_now(12);
        };
        let mut off = 0;
        while off < requests.len() {
            match sys::write_all_once(s.as_raw_fd(), &requests[off..]) {
                Ok(n) if n > 0 => off += n,
                _ => sys::exit_now(13),
            }
        }
        let _ = sys::shutdown_write(s.as_fd());
        let mut buf = [0u8; 4096];
        loop {
            let n = match sys::read(s.as_raw_fd(), &mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(_) => sys::exit_now(14),
            };
            let mut off = 0;
            while off < n {
                match sys::write_all_once(w_raw, &buf[off..n]) {
                    Ok(m) if m > 0 => off += m,
                    _ => sys::exit_now(15),
                }
            }
        }
        sys::exit_now(0);
    };
    drop(w);
    let mut answer = Vec::new();
    std::fs::File::from(r).read_to_end(&mut answer).unwrap();
    let exit = sys::reap(pid).unwrap();
    assert_eq!(
        exit.code,
        Some(0),
        "the unprivileged child failed: {exit:?}"
    );
    answer
}

#[test]
fn an_unprivileged_peer_cannot_move_another_apps_window() {
    if sys::geteuid() != 0 {
        lull_testkit::skip("needs root to make an unprivileged peer (setuid to nobody)");
        return;
    }
    let mut b = Bench::start("kds-hostile-unprivileged");
    // The socket's file mode is the umask's; let `nobody` connect (the check under test is the
    // server's, on the peer's credentials).
    std::fs::set_permissions(&b.kds_path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let good = b.good.app();
    let attempts = [
        Request::WmBackground { app: good },
        Request::WmCover {
            app: good,
            covered: true,
        },
        Request::WmForeground { app: good },
        Request::WmScreen {
            screen: Screen::Off,
        },
        Request::Snapshot,
        Request::ListWindows,
    ];
    let mut bytes = Vec::new();
    for r in &attempts {
        wire::encode_request(r, &mut bytes);
    }
    let answer = as_nobody(&b.kds_path, &bytes);
    let mut at = 0;
    for req in &attempts {
        let (reply, used) = wire::decode_reply(&answer[at..]).unwrap().unwrap();
        at += used;
        match reply {
            Reply::Error {
                request_type, code, ..
            } => {
                assert_eq!(code, ErrorCode::NotPermitted as u32, "{req:?}");
                assert_eq!(request_type, lull_kds::server::request_type_of(req));
            }
            other => panic!("{req:?}: {other:?}"),
        }
    }
    assert_eq!(at, answer.len(), "nothing more, and no snapshot descriptor");
    b.assert_good_untouched("window-manager requests from an unprivileged peer");
    let kds = b.stop().kds.unwrap();
    assert_eq!(kds.server.refused, attempts.len() as u64);
    assert_eq!(kds.server.wm_ops, 0, "no window-manager operation ran");
}
