//! Kernel input devices on the data plane, against a real kernel's evdev: a
//! uinput touch device replays `traces/stylus-spiral.trace`; `lulld` (with its display server, so
//! that one app has the focus) hands the focused app a masked descriptor of the device and
//! never reads it; the app's library reads and interprets the events itself. Then a focus change
//! revokes the old holder's descriptor and hands the new one its own.
//!
//! Needs `/dev/uinput` and evdev, as root: runs only in the lab guest (`lull lab vm --tests`,
//! which sets `LULL_GUEST`); `#[ignore]`d on the host.
//!
//! Writing to uinput is synchronous: when `emit` returns, evdev has queued the records for every
//! reader. The replay goes in chunks well below the descriptor's queue (so nothing overflows)
//! and waits for the focused app to have handled each chunk; every wait is a blocking receive
//! bounded only by a hang guard.

mod common;

use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use lull::client::{ClientCounters, ClientError, EsmClient, EsmParts, Handled};
use lull::kds_client::{attach, KdsAdmin};
use lull_esm::protocol::{ClientMsg, DaemonMsg};
use lull_esm::EsmConfig;
use lull_model::{AppEvent, EventKind, Payload};
use lull_os::evdev::{
    EvdevEncoder, InputRecord, ABS_X, ABS_Y, BTN_TOUCH, MSC_TIMESTAMP, RECORD_SIZE,
};
use lull_os::evdev_ioctl;
use lull_os::procfs;
use lull_os::sys;
use lull_os::uinput::{UinputCaps, UinputDevice};
use lull_workload::{TimedEvent, Trace};
use lulld::devices::DeviceEnd;
use lulld::test_support::{wait_until, TestDaemon, GIVE_UP};

/// Packets written before waiting for the app: 16 packets of at most 4 records (x, y,
/// `BTN_TOUCH` or the frame stamp, `SYN_REPORT`) are 64 records, half the 128-record queue evdev
/// gives this device (the lab's measurement, `docs/lab-vm.md`).
const CHUNK: usize = 16;
/// The axes' range: the trace stays within 0..=1440 (`traces/stylus-spiral.trace`).
const AXIS_MAX: i32 = 4095;

fn trace() -> Trace {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../traces/stylus-spiral.trace"
    );
    Trace::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// What a handler saw.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Seen {
    Event {
        kind: EventKind,
        payload: Payload,
        seq: u64,
    },
    Overflow,
}

impl Seen {
    fn of(e: &AppEvent) -> Seen {
        Seen::Event {
            kind: e.kind,
            payload: e.payload,
            seq: e.seq.0,
        }
    }
}

/// The event kinds both apps register.
const TOUCHES: [EventKind; 3] = [
    EventKind::TouchPress,
    EventKind::TouchMotion,
    EventKind::TouchRelease,
];

/// An app on its own thread (handlers are not `Send`): registers the three touch kinds, says
/// so, then waits until the daemon goes and returns its counters.
fn app(
    parts: EsmParts,
    seen: mpsc::Sender<Seen>,
    ready: mpsc::Sender<()>,
) -> thread::JoinHandle<ClientCounters> {
    thread::spawn(move || {
        let mut c = EsmClient::from_parts(parts);
        for kind in TOUCHES {
            let seen = seen.clone();
            c.register(kind, move |e: &AppEvent| {
                let _ = seen.send(Seen::of(e));
            })
            .unwrap();
        }
        ready.send(()).unwrap();
        loop {
            match c.wait() {
                Ok(Handled::Overflow { .. }) => {
                    let _ = seen.send(Seen::Overflow);
                }
                Ok(Handled::Event { .. }) => {}
                Err(ClientError::DaemonGone) => return c.counters(),
                Err(e) => panic!("wait: {e}"),
            }
        }
    })
}

/// The trace's events as the app's handlers must see them.
fn expected(trace: &Trace) -> Vec<(EventKind, Payload)> {
    trace
        .events
        .iter()
        .map(|e| lull_esm::interpret(e.raw))
        .collect()
}

/// Writes `events` through the device, one `emit` (one packet) each.
fn emit(dev: &UinputDevice, enc: &mut EvdevEncoder, events: &[TimedEvent]) {
    let mut bytes = Vec::new();
    for e in events {
        bytes.clear();
        enc.encode(e.raw, e.at_ns, &mut bytes).unwrap();
        let records: Vec<InputRecord> = bytes
            .chunks_exact(RECORD_SIZE)
            .map(|c| InputRecord::from_bytes(c.try_into().unwrap()))
            .collect();
        dev.emit(&records).unwrap();
    }
}

/// Writes `events[range]` through the device, `CHUNK` packets at a time, and checks after each
/// chunk that `rx` got exactly those events, in order, numbered on from `*seq`.
fn replay(
    dev: &UinputDevice,
    enc: &mut EvdevEncoder,
    trace: &Trace,
    range: std::ops::Range<usize>,
    rx: &mpsc::Receiver<Seen>,
    seq: &mut u64,
) {
    let want = expected(trace);
    for start in range.clone().step_by(CHUNK) {
        let end = (start + CHUNK).min(range.end);
        emit(dev, enc, &trace.events[start..end]);
        for (i, &(kind, payload)) in want.iter().enumerate().take(end).skip(start) {
            let got = rx
                .recv_timeout(GIVE_UP)
                .unwrap_or_else(|_| panic!("event {i} of the trace never reached the focused app"));
            assert_eq!(
                got,
                Seen::Event {
                    kind,
                    payload,
                    seq: *seq
                },
                "event {i} of the trace"
            );
            *seq += 1;
        }
    }
}

/// The daemon thread's voluntary switches once it is asleep: the difference over a window is its
/// wake-ups in it (`lull_os::procfs`).
fn daemon_switches(tid: i32) -> u64 {
    let pid = std::process::id() as i32;
    assert!(
        lull_lab::measure::wait_asleep(&[(pid, tid)], Duration::from_secs(10)),
        "the daemon never went back to sleep"
    );
    procfs::sample(tid).unwrap().voluntary
}

#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn the_focused_app_reads_the_device_itself_and_a_focus_change_revokes_it() {
    lull_testkit::require_guest();
    let trace = trace();
    let n = trace.events.len();
    assert_eq!(n, 1614);
    let dev = UinputDevice::create(
        "lull guest evdev fd",
        &UinputCaps {
            keys: vec![BTN_TOUCH],
            abs: vec![(ABS_X, 0, AXIS_MAX), (ABS_Y, 0, AXIS_MAX)],
            rel: vec![],
            msc: vec![MSC_TIMESTAMP],
        },
    )
    .expect("create the uinput device");
    let node = dev.event_path().unwrap();

    let tid = Arc::new(AtomicI32::new(0));
    let daemon_tid = Arc::clone(&tid);
    let dev_path = node.clone();
    let daemon = TestDaemon::start("evdev-fd", EsmConfig::default(), move |d| {
        daemon_tid.store(sys::gettid(), Ordering::SeqCst);
        lulld::test_support::enable_headless_kds(d, 320, 240)?;
        d.add_device(&dev_path).map_err(std::io::Error::other)?;
        Ok(())
    });
    let tid = tid.load(Ordering::SeqCst);

    // A attaches first and B after it: B is in front, A in the background (input suspended).
    let a = attach(&daemon.kds_path(), 0, 0, "a").unwrap();
    let b = attach(&daemon.kds_path(), 0, 0, "b").unwrap();
    let (a_app, a_channel) = (a.app, a.channel);
    let b_channel = b.channel;
    let (a_tx, a_rx) = mpsc::channel();
    let (b_tx, b_rx) = mpsc::channel();
    let (ready_tx, ready_rx) = mpsc::channel();
    let a_thread = app(a.esm.into_parts(), a_tx, ready_tx.clone());
    let b_thread = app(b.esm.into_parts(), b_tx, ready_tx);
    for _ in 0..2 {
        ready_rx.recv_timeout(GIVE_UP).expect("an app registered");
    }

    // 1. The whole trace to B, the focused app, through its own descriptor.
    let mut enc = EvdevEncoder::new();
    let before = daemon_switches(tid);
    let mut b_seq = 0;
    replay(&dev, &mut enc, &trace, 0..n, &b_rx, &mut b_seq);
    let wakeups_focused = daemon_switches(tid) - before;
    eprintln!(
        "evdev fd: {n}/{n} events to the focused app, daemon wake-ups {wakeups_focused} \
         ({} per event)",
        wakeups_focused as f64 / n as f64
    );
    assert_eq!(wakeups_focused, 0, "the daemon woke during the replay");

    // 2. The trace again; half-way the focus moves to A. The revocation is done when the window
    //    manager's request returns: the very next event goes to A, none of it to B.
    let half = n / 2;
    let before = daemon_switches(tid);
    replay(&dev, &mut enc, &trace, 0..half, &b_rx, &mut b_seq);
    let wakeups_b = daemon_switches(tid) - before;
    {
        let mut admin = KdsAdmin::connect(&daemon.kds_path()).unwrap();
        admin.foreground(a_app).unwrap();
    }
    let before = daemon_switches(tid);
    let mut a_seq = 0;
    replay(&dev, &mut enc, &trace, half..n, &a_rx, &mut a_seq);
    let wakeups_a = daemon_switches(tid) - before;
    eprintln!(
        "evdev fd: focus change after {half}: old holder {b_seq} events in all, new holder \
         {a_seq}; daemon wake-ups {wakeups_b} before and {wakeups_a} after it"
    );
    assert_eq!(
        (wakeups_b, wakeups_a),
        (0, 0),
        "the daemon woke during a replay"
    );
    assert_eq!(a_seq as usize, n - half);
    assert_eq!(b_seq as usize, n + half);

    let report = daemon.stop();
    let a_counters = a_thread.join().unwrap();
    let b_counters = b_thread.join().unwrap();
    drop((a_channel, b_channel));
    // B got nothing after the revocation, and A nothing before its hand-over.
    assert!(
        b_rx.try_recv().is_err(),
        "the old holder got an event after the revocation"
    );
    assert!(
        a_rx.try_recv().is_err(),
        "the new holder got more than the rest"
    );
    assert_eq!(b_counters.devices, 1);
    assert_eq!(
        b_counters.devices_ended, 1,
        "B saw its descriptor end (ENODEV)"
    );
    assert_eq!(a_counters.devices, 1);
    assert_eq!(
        (b_counters.device_events, a_counters.device_events),
        ((n + half) as u64, (n - half) as u64)
    );
    assert_eq!(b_counters.device_overflows + a_counters.device_overflows, 0);

    // The daemon's report: one descriptor each, B's ended by the suspension with nothing left
    // unread, A's live; the accounts agree with the apps.
    let routes = &report.devices.routes;
    eprintln!(
        "evdev fd: daemon report {:?}; loop wake-ups in all {}",
        report.devices, report.counters.loop_wakeups
    );
    assert_eq!(routes.len(), 2, "{routes:?}");
    let b_route = routes.iter().find(|r| r.end.is_some()).unwrap();
    assert_eq!(b_route.end, Some(DeviceEnd::InputSuspended));
    assert_eq!((b_route.unread_records, b_route.unread_events), (0, 0));
    assert_eq!(b_route.app_counts.delivered, (n + half) as u64);
    assert_eq!(b_route.app_counts.revoked, 1);
    let a_route = routes.iter().find(|r| r.end.is_none()).unwrap();
    assert_eq!(a_route.app, a_app);
    assert_eq!(a_route.app_counts.delivered, (n - half) as u64);
    assert_eq!(report.devices.counters.control_wakeups, 0);
    assert_eq!(report.devices.counters.handed, 2);
    assert_eq!(report.devices.counters.revoked, 1);
    // The daemon's ESM saw none of these events: they never went through it.
    assert_eq!(report.esm.raw_injected, 0);
    drop(dev);
    assert!(!node.exists());
}

/// An app spoken for with raw protocol messages, so the test holds its device descriptor itself.
struct RawApp {
    sock: std::os::fd::OwnedFd,
}

impl RawApp {
    fn connect(path: &std::path::Path) -> RawApp {
        let sock = sys::seqpacket_connect(path).unwrap();
        let (msg, fds) = recv(&sock);
        assert!(matches!(msg, DaemonMsg::Welcome { .. }) && fds.len() == 1);
        RawApp { sock }
    }

    /// Registers `kind` (or unregisters it) and returns the device descriptor the daemon handed
    /// over before its `Registered`, if it did.
    fn register(&self, kind: EventKind, on: bool) -> Option<std::os::fd::OwnedFd> {
        let mut buf = Vec::new();
        ClientMsg::Register {
            kind,
            handler: on.then_some(lull_model::HandlerId(0)),
        }
        .encode(&mut buf);
        sys::send_msg(self.sock.as_raw_fd(), &buf).unwrap();
        let mut device = None;
        loop {
            match recv(&self.sock) {
                (DaemonMsg::Registered, _) => return device,
                (DaemonMsg::Device { device: 0 }, fds) => {
                    assert_eq!(fds.len(), 2, "a descriptor and its account");
                    device = fds.into_iter().next();
                }
                (other, _) => panic!("unexpected {other:?}"),
            }
        }
    }
}

fn recv(sock: &std::os::fd::OwnedFd) -> (DaemonMsg, Vec<std::os::fd::OwnedFd>) {
    let mut buf = [0u8; 256];
    let (n, fds) = sys::recv_with_fds(sock.as_raw_fd(), &mut buf).unwrap();
    (DaemonMsg::decode(&buf[..n]).unwrap(), fds)
}

/// Records a descriptor holds now (non-blocking), or the error of its read.
fn drain(fd: &std::os::fd::OwnedFd) -> Result<usize, i32> {
    sys::set_nonblocking(fd.as_raw_fd(), true).unwrap();
    let mut buf = vec![0u8; 256 * RECORD_SIZE];
    let mut records = 0;
    loop {
        match sys::read(fd.as_raw_fd(), &mut buf) {
            Ok(n) => records += n / RECORD_SIZE,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(records),
            Err(e) => return Err(e.raw_os_error().unwrap_or(0)),
        }
    }
}

/// Each app's descriptor carries only its registered kinds (`EVIOCSMASK`); unregistering and
/// dying each revoke it, the events left unread counted in the daemon's report, and the
/// revoked descriptor reads `ENODEV` at once.
#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn masks_follow_registrations_and_unregistering_or_dying_revokes() {
    lull_testkit::require_guest();
    const KEY_A: u16 = 30;
    let dev = UinputDevice::create(
        "lull guest evdev revoke",
        &UinputCaps {
            keys: vec![BTN_TOUCH, KEY_A],
            abs: vec![(ABS_X, 0, AXIS_MAX), (ABS_Y, 0, AXIS_MAX)],
            rel: vec![],
            msc: vec![],
        },
    )
    .unwrap();
    let node = dev.event_path().unwrap();
    let daemon = TestDaemon::start("evdev-revoke", EsmConfig::default(), move |d| {
        d.add_device(&node).map_err(std::io::Error::other)?;
        Ok(())
    });
    let (x, y, z) = (
        RawApp::connect(&daemon.path),
        RawApp::connect(&daemon.path),
        RawApp::connect(&daemon.path),
    );
    let fd_x = x
        .register(EventKind::TouchMotion, true)
        .expect("X's descriptor");
    let fd_y = y
        .register(EventKind::TouchMotion, true)
        .expect("Y's descriptor");
    let fd_z = z.register(EventKind::Key, true).expect("Z's descriptor");
    assert!(
        z.register(EventKind::NetMessage, true).is_none(),
        "no new descriptor"
    );

    // Five moves (x, y, SYN_REPORT each) and one key press (KEY_A, SYN_REPORT).
    let mut enc = EvdevEncoder::new();
    let mut bytes = Vec::new();
    for i in 0..5 {
        let raw = lull_model::RawEvent::Touch {
            phase: lull_model::TouchPhase::Move,
            x: 100 + i,
            y: 200 + i,
        };
        enc.encode(raw, 0, &mut bytes).unwrap();
    }
    enc.encode(
        lull_model::RawEvent::Key {
            code: KEY_A,
            pressed: true,
        },
        0,
        &mut bytes,
    )
    .unwrap();
    let records: Vec<InputRecord> = bytes
        .chunks_exact(RECORD_SIZE)
        .map(|c| InputRecord::from_bytes(c.try_into().unwrap()))
        .collect();
    dev.emit(&records).unwrap();
    assert_eq!(
        drain(&fd_z),
        Ok(2),
        "the key's descriptor got the key packet only"
    );

    // Y unregisters: revoked before `Registered` comes back; its 15 records unread.
    assert!(y.register(EventKind::TouchMotion, false).is_none());
    assert_eq!(drain(&fd_y), Err(sys::Errno::ENODEV.0));
    // X dies (its connection closes; the test keeps its descriptor to watch it end).
    // The descriptor's ioctls fail once it is revoked; reading it would take the records the
    // daemon is to count.
    drop(x);
    wait_until("X's descriptor revoked", || {
        evdev_ioctl::device_name(fd_x.as_fd()).is_err()
    });
    assert_eq!(drain(&fd_x), Err(sys::Errno::ENODEV.0));
    // Z keeps receiving.
    dev.emit(&records[records.len() - 2..]).unwrap();
    assert_eq!(drain(&fd_z), Ok(0), "a repeated key value is no event");

    let report = daemon.stop();
    let routes = &report.devices.routes;
    eprintln!("evdev revoke: {routes:?}");
    let ended: Vec<_> = routes
        .iter()
        .filter_map(|r| r.end.map(|e| (e, r.unread_records, r.unread_events)))
        .collect();
    assert!(
        ended.contains(&(DeviceEnd::Unregistered, 15, 5)),
        "{ended:?}"
    );
    assert!(ended.contains(&(DeviceEnd::AppGone, 15, 5)), "{ended:?}");
    let live: Vec<_> = routes.iter().filter(|r| r.end.is_none()).collect();
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].kinds, 1 << EventKind::Key.index());
    assert_eq!(report.devices.counters.revoked, 2);
    assert_eq!(report.devices.counters.control_wakeups, 0);
    drop((y, z));
}

/// A KDS app registers through the display server (figure 19), from a thread other than its
/// event thread: the device's events its event thread reads itself reach the handler, none
/// filtered, while it is in front; sent to the background it gets nothing more.
#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn a_kds_app_registered_through_the_display_server_gets_the_device() {
    use lull::kds_runtime::{AppOptions, KdsApp};
    lull_testkit::require_guest();
    let dev = UinputDevice::create(
        "lull guest evdev kds",
        &UinputCaps {
            keys: vec![BTN_TOUCH],
            abs: vec![(ABS_X, 0, AXIS_MAX), (ABS_Y, 0, AXIS_MAX)],
            rel: vec![],
            msc: vec![MSC_TIMESTAMP],
        },
    )
    .unwrap();
    let node = dev.event_path().unwrap();
    let daemon = TestDaemon::start("evdev-kds", EsmConfig::default(), move |d| {
        lulld::test_support::enable_headless_kds(d, 320, 240)?;
        d.add_device(&node).map_err(std::io::Error::other)?;
        Ok(())
    });
    let options = AppOptions {
        width: 0,
        height: 0,
        name: "kds app".into(),
        guis: false,
    };
    let app = KdsApp::attach(&daemon.kds_path(), &options).unwrap();
    let (tx, rx) = mpsc::channel();
    for kind in TOUCHES {
        let tx = tx.clone();
        app.esm_register(kind, move |e: &AppEvent| {
            let _ = tx.send(Seen::of(e));
        })
        .unwrap();
    }
    let trace = trace();
    let mut enc = EvdevEncoder::new();
    let mut seq = 0;
    let part = 64;
    replay(&dev, &mut enc, &trace, 0..part, &rx, &mut seq);
    // Another app comes in front: this one is suspended and its descriptor revoked.
    let other = attach(&daemon.kds_path(), 0, 0, "other").unwrap();
    emit(&dev, &mut enc, &trace.events[part..2 * part]);
    let report = daemon.stop();
    drop(other);
    let counters = app.counters();
    drop(app);
    assert!(rx.try_recv().is_err(), "an event after the suspension");
    let routes = &report.devices.routes;
    eprintln!("evdev kds: {routes:?}; runtime {counters:?}");
    assert_eq!(routes.len(), 1, "{routes:?}");
    assert_eq!(routes[0].end, Some(DeviceEnd::InputSuspended));
    assert_eq!(routes[0].app_counts.delivered, part as u64);
    assert_eq!(routes[0].app_counts.filtered, 0);
}
