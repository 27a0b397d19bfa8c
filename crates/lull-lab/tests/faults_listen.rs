//! Faults at the daemon's doors: running out of descriptors,
//! idle and greedy control connections, an empty datagram and a flooded network socket,
//! oversized requests. Each case runs a real `lulld` loop with real clients, reproduces the
//! failure and checks what the user sees: a clear error, the others still served, nothing lost
//! without a count.
//!
//! Waiting is done by asking (a probe of the daemon's state, a reply) with [`GIVE_UP`] as a
//! hang guard only; no assertion depends on how long anything takes. A case that changes the
//! process (its descriptor limit, its user) runs in a child process of this test binary.

mod common;

use std::io::{self, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use lull::client::{ClientError, EsmClient, Handled};
use lull::kds_client::{self, KdsAdmin, KdsClientError};
use lull_esm::{EsmConfig, EsmError, MAX_QUEUE_BOUND};
use lull_kds::wire::{self, ErrorCode, Reply};
use lull_kds::Surface;
use lull_model::{EventKind, Payload, RawEvent, TouchPhase};
use lull_os::evdev::EvdevEncoder;
use lull_os::sys;
use lulld::daemon::{Daemon, DaemonConfig, DaemonCounters, DaemonError, DaemonState};
use lulld::kds::{MAX_CONTROL_CONNECTIONS, MAX_CONTROL_PER_PEER, MAX_PENDING_BYTES_PER_APP};
use lulld::test_support::TestDaemon;

/// A guard against a broken daemon hanging the suite; never reached when things work.
const GIVE_UP: Duration = Duration::from_secs(20);

/// Set in a child process of this binary: which case's child part to run.
const CHILD_ENV: &str = "LULL_FAULTS_LISTEN_CHILD";

/// Runs the test `name` of this binary alone in a child process with `CHILD_ENV` = `role`
/// (as `uid` when given), killing it at [`GIVE_UP`]; returns its standard output.
fn run_child(name: &str, role: &str, uid: Option<u32>, extra_env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, role)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + GIVE_UP;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the child part of {name} hung");
        }
        thread::yield_now();
    };
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        status.success(),
        "child part of {name} failed:\n{out}\n{err}"
    );
    out
}

/// A daemon with its display server on a small screen, fed touches through an evdev pipe, and
/// a probe: each [`Probed::ask`] returns the daemon's counters, read on its own loop.
struct Probed {
    daemon: TestDaemon,
    device: OwnedFd,
    enc: EvdevEncoder,
    probe_w: OwnedFd,
    answers: mpsc::Receiver<(DaemonCounters, usize)>,
}

fn probe(st: &DaemonState) -> (DaemonCounters, usize) {
    (
        st.counters(),
        st.kds().map_or(0, |k| k.control_connections_open()),
    )
}

impl Probed {
    fn start(tag: &str, setup: impl FnOnce(&mut DaemonState) + Send + 'static) -> Probed {
        let (evdev_r, device) = sys::pipe(false).unwrap();
        let (probe_r, probe_w) = sys::pipe(true).unwrap();
        let (tx, answers) = mpsc::channel();
        let daemon = TestDaemon::start(tag, EsmConfig::default(), move |d| {
            lulld::test_support::enable_headless_kds(d, 64, 48)?;
            setup(d.state_mut());
            d.add_evdev(evdev_r)?;
            d.add_source(lulld::test_support::probe_source(probe_r, tx, probe))?;
            Ok(())
        });
        Probed {
            daemon,
            device,
            enc: EvdevEncoder::new(),
            probe_w,
            answers,
        }
    }

    fn ask(&self) -> (DaemonCounters, usize) {
        sys::write_all_once(self.probe_w.as_raw_fd(), &[1]).unwrap();
        self.answers
            .recv_timeout(GIVE_UP)
            .expect("the daemon answers its probe")
    }

    fn until(&self, what: &str, pred: impl Fn(&(DaemonCounters, usize)) -> bool) {
        let deadline = Instant::now() + GIVE_UP;
        loop {
            let a = self.ask();
            if pred(&a) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "never happened: {what}; last {a:?}"
            );
            thread::yield_now();
        }
    }

    fn press(&mut self, x: i32) {
        let mut buf = Vec::new();
        let raw = RawEvent::Touch {
            phase: TouchPhase::Down,
            x,
            y: 0,
        };
        self.enc.encode(raw, sys::monotonic_ns(), &mut buf).unwrap();
        assert_eq!(
            sys::write_all_once(self.device.as_raw_fd(), &buf).unwrap(),
            buf.len()
        );
    }

    fn kds_path(&self) -> PathBuf {
        self.daemon.kds_path()
    }
}

/// A connected app that counts its presses.
fn pressed_app(path: &Path) -> EsmClient {
    let mut app = EsmClient::connect(path).unwrap();
    app.register(EventKind::TouchPress, |_| {}).unwrap();
    assert_eq!(app.stats().unwrap().registrations, 1);
    app
}

fn expect_press(app: &mut EsmClient) {
    assert!(matches!(
        app.wait().unwrap(),
        Handled::Event {
            kind: EventKind::TouchPress,
            ..
        }
    ));
}

/// Descriptors this process has open.
fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd").unwrap().count() as u64
}

/// Item 1. At the descriptor limit, `accept` fails with `EMFILE` even with nothing waiting; the
/// ESM listener used to spin on it (level-triggered) and the display server's to loop in its
/// accept forever, so nothing else ran. Now both pause until a descriptor frees: an app already
/// connected keeps getting its input, a display client is told why it is turned away, a client
/// in the backlog connects once descriptors free, and the daemon stops when asked.
#[test]
fn at_the_descriptor_limit_the_daemon_serves_its_clients_and_stops_on_request() {
    const NAME: &str = "at_the_descriptor_limit_the_daemon_serves_its_clients_and_stops_on_request";
    if std::env::var(CHILD_ENV).is_err() {
        // The descriptor limit is the process's: lowered in a child, so other tests keep theirs.
        run_child(NAME, "fd-limit", None, &[]);
        return;
    }
    let mut d = Probed::start("faults-fd-limit", |_| {});
    let mut app = pressed_app(&d.daemon.path);
    // The limit: what is open now and a few more, then filled with /dev/null up to it.
    let limit = open_fds() + 16;
    lull_os::sys::set_fd_limit(limit).unwrap();
    let mut fillers = Vec::new();
    loop {
        match std::fs::File::open("/dev/null") {
            Ok(f) => fillers.push(f),
            Err(e) if lull_os::sys::Errno::of(&e) == Some(lull_os::sys::Errno::EMFILE) => break,
            Err(e) => panic!("{e}"),
        }
    }
    // One descriptor freed for a client in the backlog: the daemon, with none left, cannot
    // accept it, and its listener pauses.
    drop(fillers.pop());
    let esm_path = d.daemon.path.clone();
    let late = thread::spawn(move || EsmClient::connect(&esm_path).map(EsmClient::into_parts));
    d.until("the ESM listener paused", |(c, _)| c.listener_pauses >= 1);
    // The app connected before still gets its input.
    d.press(1);
    expect_press(&mut app);
    // A display client at the limit is told why, not left hanging or just closed.
    drop(fillers.pop());
    let before = d.ask().0.listener_pauses;
    match kds_client::attach(&d.kds_path(), 0, 0, "at-the-limit") {
        Err(KdsClientError::Refused {
            code: Some(ErrorCode::Resources),
            message,
            ..
        }) => assert!(message.contains("out of file descriptors"), "{message}"),
        other => panic!("expected a refusal naming the cause, got {other:?}"),
    }
    d.until("the display server's listener paused", |(c, _)| {
        c.listener_pauses > before
    });
    d.press(2);
    expect_press(&mut app);
    // Descriptors free: the client waiting in the backlog is taken in and greeted.
    drop(fillers);
    let mut late =
        EsmClient::from_parts(late.join().unwrap().expect("the waiting client connects"));
    late.register(EventKind::TouchPress, |_| {}).unwrap();
    d.press(3);
    expect_press(&mut app);
    expect_press(&mut late);
    drop((app, late));
    // The stop request (the same path as SIGTERM's signalfd) is honoured.
    let report = d.daemon.stop();
    report.accounting.unwrap();
    assert!(report.counters.listener_pauses >= 2);
    // A spinning listener woke the loop millions of times; a paused one a handful (the
    // events, probes and retries of this test).
    assert!(
        report.counters.loop_wakeups < 10_000,
        "{:?}",
        report.counters
    );
}

/// Item 1, client side. A daemon that never takes the connection (out of descriptors, stuck)
/// used to leave `EsmClient::connect` blocked forever; now it fails with an error naming the
/// socket and the wait.
#[test]
fn a_client_of_a_daemon_that_never_answers_gets_a_clear_error() {
    let scratch = lull_os::fileout::ScratchDir::new("lull-faults-mute").unwrap();
    let path = scratch.path().join("esm.sock");
    // Listening, never accepting: a connect lands in the backlog and no welcome comes.
    let listener = sys::seqpacket_listen(&path).unwrap();
    let err = EsmClient::connect_timeout(&path, 50).unwrap_err();
    assert!(matches!(err, ClientError::ConnectTimeout { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()) && msg.contains("did not answer"));
    drop(listener);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_window_manager_client_of_a_daemon_that_never_answers_gets_a_clear_error() {
    let scratch = lull_os::fileout::ScratchDir::new("lull-faults-mute-wm").unwrap();
    let path = scratch.path().join("kds.sock");
    // The backlog takes the connect; nothing ever answers a request.
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let mut admin = KdsAdmin::connect_timeout(&path, 50).expect("the connect lands in the backlog");
    let err = admin.windows().unwrap_err();
    assert!(matches!(err, KdsClientError::Timeout { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains(&path.display().to_string()) && msg.contains("did not answer"),
        "{msg}"
    );
    drop(listener);
    std::fs::remove_file(&path).unwrap();
}

/// Reads one reply from a raw control connection (`None` at end of file or reset).
fn next_reply(s: &mut UnixStream, buf: &mut Vec<u8>) -> Option<Reply> {
    loop {
        if let Some((r, used)) = wire::decode_reply(buf).unwrap() {
            buf.drain(..used);
            return Some(r);
        }
        let mut chunk = [0u8; 4096];
        match s.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return None,
            Err(e) => panic!("the server answers: {e}"),
        }
    }
}

fn connect_raw(path: &Path) -> UnixStream {
    let s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(GIVE_UP)).unwrap();
    s
}

/// The child part of the per-user case: as an unprivileged user, holds as many control
/// connections as one user may, then reports what the next one is told.
fn peer_limit_child() {
    let path = PathBuf::from(std::env::var("LULL_FAULTS_KDS").unwrap());
    let held: Vec<UnixStream> = (0..MAX_CONTROL_PER_PEER)
        .map(|_| connect_raw(&path))
        .collect();
    let mut extra = connect_raw(&path);
    let reply = next_reply(&mut extra, &mut Vec::new());
    match reply {
        Some(Reply::Error { code, message, .. }) => {
            println!("PEER-REFUSED {code} {message}");
        }
        other => println!("PEER-UNEXPECTED {other:?}"),
    }
    drop(held);
}

/// Item 3. Idle control connections used to lock every new display client out (no idle
/// timeout, no per-user limit) and the client saw only "closed the connection". Now one
/// unprivileged user holds at most `MAX_CONTROL_PER_PEER`, a connection that says nothing is
/// closed after the idle timeout, and whoever is turned away is told why.
#[test]
fn idle_control_connections_are_limited_per_user_and_closed_with_a_reason() {
    const NAME: &str = "idle_control_connections_are_limited_per_user_and_closed_with_a_reason";
    if std::env::var(CHILD_ENV).as_deref() == Ok("peer-limit") {
        peer_limit_child();
        return;
    }
    // Short enough that the test sees it happen; the default is CONTROL_IDLE_TIMEOUT_MS.
    const IDLE_MS: u64 = 200;
    let d = Probed::start("faults-idle-ctl", |st| {
        st.set_kds_control_idle_timeout_ms(IDLE_MS);
    });
    let kds = d.kds_path();
    // An unprivileged user (nobody) cannot take more than its share.
    std::fs::set_permissions(&kds, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = run_child(
        NAME,
        "peer-limit",
        Some(65_534),
        &[("LULL_FAULTS_KDS", kds.to_str().unwrap())],
    );
    // The harness prints the test's name on the same line.
    let line = out
        .lines()
        .find_map(|l| l.find("PEER-").map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("no result from the child: {out}"));
    assert!(
        line.starts_with(&format!("PEER-REFUSED {}", ErrorCode::Resources as u32))
            && line.contains("user 65534 already has"),
        "{line}"
    );
    // Idle connections as root, every place taken: a new client is refused with the reason.
    d.until("the child's connections are gone", |(_, open)| *open == 0);
    let mut idle: Vec<UnixStream> = (0..MAX_CONTROL_CONNECTIONS)
        .map(|_| connect_raw(&kds))
        .collect();
    d.until("every place taken", |(_, open)| {
        *open == MAX_CONTROL_CONNECTIONS
    });
    match kds_client::attach(&kds, 0, 0, "locked-out") {
        Err(KdsClientError::Refused { message, .. }) => {
            assert!(message.contains("control connections open"), "{message}");
        }
        other => panic!("expected a refusal naming the cause, got {other:?}"),
    }
    // Each idle one is told why it is closed, then closed.
    for s in &mut idle {
        let mut buf = Vec::new();
        match next_reply(s, &mut buf) {
            Some(Reply::Error { message, .. }) => {
                assert!(message.contains("sent no request"), "{message}");
            }
            other => panic!("expected the idle reason, got {other:?}"),
        }
        assert!(next_reply(s, &mut buf).is_none());
    }
    // Their places are free: a client attaches.
    let att = kds_client::attach(&kds, 0, 0, "after-idle").expect("attaches");
    drop(att);
    drop(idle);
    let report = d.daemon.stop();
    let host = report.kds.unwrap().host;
    assert_eq!(host.control_peer_limited, 1);
    assert_eq!(host.control_idle_closed, MAX_CONTROL_CONNECTIONS as u64);
    report.accounting.unwrap();
}

/// Item 9. An empty UDP datagram used to read as end of stream and switch the network source
/// off for good; datagrams the kernel dropped were counted nowhere. Now an empty datagram is
/// delivered like any other, and kernel drops (`SO_RXQ_OVFL`) are in the daemon's counters and
/// in the report's accounting: every datagram sent is received or counted dropped.
/// A loopback UDP socket with the smallest receive buffer, so a burst sent before the daemon
/// (and its sources' producer thread) runs overflows it.
fn udp_with_the_smallest_buffer() -> std::net::UdpSocket {
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    lull_os::sys::set_socket_buffer(udp.as_raw_fd(), lull_os::sys::SocketBuffer::Receive, 1)
        .unwrap();
    udp
}

/// Bytes queued on a UDP socket (the size of the next datagram, 0 when none).
fn unread_bytes(udp: &std::net::UdpSocket) -> u64 {
    sys::unread_bytes(std::os::fd::AsFd::as_fd(udp)).unwrap()
}

/// Datagrams in the bursts that overflow the smallest receive buffer.
const BURST: u64 = 2_000;

/// Sends `n` datagrams of 100 bytes from `peer` to `addr`.
fn burst(peer: &std::net::UdpSocket, addr: std::net::SocketAddr, n: u64) {
    for _ in 0..n {
        peer.send_to(&[1; 100], addr).unwrap();
    }
}

#[test]
fn an_empty_datagram_keeps_the_network_source_and_kernel_drops_are_counted() {
    let udp = udp_with_the_smallest_buffer();
    let addr = udp.local_addr().unwrap();
    // The test's own view of the daemon's socket: to know when the burst's survivors were read.
    let watch = udp.try_clone().unwrap();
    let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    // The burst arrives before anything reads the socket: most of it cannot fit.
    burst(&peer, addr, BURST);
    let (probe_r, probe_w) = sys::pipe(true).unwrap();
    let (counts_tx, counts) = mpsc::channel();
    let daemon = TestDaemon::start("faults-net", EsmConfig::default(), move |d| {
        d.add_net(OwnedFd::from(udp), 3)?;
        d.add_source(lulld::test_support::probe_source(
            probe_r,
            counts_tx,
            DaemonState::counters,
        ))?;
        Ok(())
    });
    let mut app = EsmClient::connect(&daemon.path).unwrap();
    let got = common::record_payloads(&mut app, EventKind::NetMessage);
    // The receive buffer is full of the burst until the sources' thread reads it, and a datagram
    // sent before then would be dropped by the kernel: wait until the socket is empty.
    let deadline = Instant::now() + GIVE_UP;
    while unread_bytes(&watch) != 0 {
        assert!(Instant::now() < deadline, "the burst was never read");
        thread::yield_now();
    }
    drop(watch);
    // The empty datagram, then one with data: both arrive; the source is still on. What is left
    // of the burst may come first, if the app registered before the producer read it.
    peer.send_to(&[], addr).unwrap();
    peer.send_to(&[7; 9], addr).unwrap();
    let last_two =
        |v: &Vec<Payload>| v.len() >= 2 && v[v.len() - 1] == Payload::Net { channel: 3, len: 9 };
    while !last_two(&got.borrow()) {
        assert!(matches!(app.wait().unwrap(), Handled::Event { .. }));
    }
    let seen = got.borrow().clone();
    assert_eq!(
        seen[seen.len() - 2..],
        [
            Payload::Net { channel: 3, len: 0 },
            Payload::Net { channel: 3, len: 9 }
        ]
    );
    assert!(seen[..seen.len() - 2].iter().all(|p| *p
        == Payload::Net {
            channel: 3,
            len: 100
        }));
    let app_events = seen.len() as u64;
    drop(app);
    let sent = BURST + 2;
    let deadline = Instant::now() + GIVE_UP;
    let c = loop {
        sys::write_all_once(probe_w.as_raw_fd(), &[1]).unwrap();
        let c: DaemonCounters = counts.recv_timeout(GIVE_UP).unwrap();
        if c.net_datagrams + c.net_kernel_drops == sent {
            break c;
        }
        assert!(
            Instant::now() < deadline,
            "datagrams unaccounted for: {c:?}"
        );
        thread::yield_now();
    };
    assert!(c.net_kernel_drops > 0, "the burst fitted: {c:?}");
    assert_eq!(c.sources_ended, 0);
    let report = daemon.stop();
    assert_eq!(report.lost_before_esm, report.counters.net_kernel_drops);
    // Every datagram sent is produced by the sources' thread or counted lost before it …
    let src = report.sources.expect("the sources' producer ran");
    assert_eq!(src.producer.events + report.lost_before_esm, sent);
    // … and every produced one was routed to the app (delivered) or found no app yet.
    assert_eq!(
        src.producer.events,
        src.producer.queued + src.producer.unrouted
    );
    assert_eq!(src.rings.produced, src.rings.delivered + src.rings.dropped);
    assert_eq!(src.rings.delivered, app_events, "{src:?}");
    report.accounting.unwrap();
}

/// Drops that no later datagram reports, and datagrams still unread at the stop, are counted:
/// a burst overflows the receive buffer before the daemon runs, nothing follows it, and the
/// daemon stops; every datagram sent is produced or counted lost before it.
#[test]
fn a_burst_with_nothing_after_it_is_accounted_for_at_the_stop() {
    let udp = udp_with_the_smallest_buffer();
    let addr = udp.local_addr().unwrap();
    let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    burst(&peer, addr, BURST);
    let daemon = TestDaemon::start("faults-net-stop", EsmConfig::default(), move |d| {
        d.add_net(OwnedFd::from(udp), 4)
    });
    let report = daemon.stop();
    let c = report.counters;
    assert!(c.net_kernel_drops > 0, "the burst fitted: {c:?}");
    assert_eq!(
        report.lost_before_esm,
        c.net_kernel_drops + c.net_unread_at_stop
    );
    let produced = report.sources.map_or(0, |s| s.producer.events);
    assert_eq!(produced, c.net_datagrams, "{c:?}");
    assert_eq!(produced + report.lost_before_esm, BURST, "{c:?}");
    report.accounting.unwrap();
}

/// Item 10, the queue bound. `--queue-bound 1000000` used to be accepted (60 stuck apps took
/// the daemon from 3 to 265 MB); now a bound over `MAX_QUEUE_BOUND` is refused before anything
/// is created.
#[test]
fn a_queue_bound_over_the_maximum_is_refused_before_start_up() {
    let scratch = lull_os::fileout::ScratchDir::new("lull-faults-qb").unwrap();
    let path = scratch.path().join("esm.sock");
    let err = Daemon::bind(&DaemonConfig {
        socket_path: path.clone(),
        esm: EsmConfig {
            queue_bound: 1_000_000,
        },
    })
    .unwrap_err();
    assert!(
        matches!(
            err,
            DaemonError::Esm(EsmError::QueueBoundTooLarge(1_000_000))
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains(&MAX_QUEUE_BOUND.to_string()));
    assert!(!path.exists());
}

/// Item 10, buffered bytes and surfaces. An app could make the server buffer a 64 MiB message
/// and keep 8 full-screen surfaces; now a message announcing more than
/// `MAX_PENDING_BYTES_PER_APP` is refused at its header and that app's channel closes, a
/// `COMPOSE` past the app's surface budget is refused with the app still served, and the
/// other apps are served throughout.
#[test]
fn one_apps_oversized_requests_are_refused_and_the_others_served() {
    let d = Probed::start("faults-quota", |_| {});
    let kds = d.kds_path();
    let mut good = kds_client::attach(&kds, 0, 0, "good").unwrap();
    let mut greedy = kds_client::attach(&kds, 0, 0, "greedy").unwrap();
    // Surfaces: two full screens (64 × 48) fit the budget, a third does not.
    let full = || Surface::solid(64, 48, 0xff11_2233);
    greedy.channel.compose(0, full()).unwrap();
    greedy.channel.compose(1, full()).unwrap();
    match greedy.channel.compose(2, full()) {
        Err(KdsClientError::Refused {
            code: Some(ErrorCode::Resources),
            message,
            ..
        }) => assert!(message.contains("budget"), "{message}"),
        other => panic!("expected the budget refusal, got {other:?}"),
    }
    // Still served: replacing a surface stays within the budget.
    greedy
        .channel
        .compose(0, Surface::solid(8, 8, 0xff00_00ff))
        .unwrap();
    // A message announcing more than an app may buffer: refused at its header.
    let mut header = wire::request_type::COMPOSE.to_le_bytes().to_vec();
    let announced = u32::try_from(MAX_PENDING_BYTES_PER_APP).unwrap() + 1;
    header.extend_from_slice(&announced.to_le_bytes());
    header.extend_from_slice(&[0; 1024]);
    sys::write_all(greedy.channel.raw_fd(), &header).unwrap();
    match greedy.channel.next_message() {
        Ok(Reply::Error { code, message, .. }) => {
            assert_eq!(code, ErrorCode::Resources as u32);
            assert!(message.contains("over the"), "{message}");
        }
        other => panic!("expected the quota refusal, got {other:?}"),
    }
    assert!(matches!(
        greedy.channel.next_message(),
        Err(KdsClientError::ServerGone)
    ));
    // The good app is served throughout.
    good.channel
        .compose(0, Surface::solid(4, 4, 0xff00_ff00))
        .unwrap();
    good.channel.draw(0, 0, 0).unwrap();
    drop((good, greedy));
    let report = d.daemon.stop();
    assert_eq!(report.kds.unwrap().host.over_quota_closed, 1);
    report.accounting.unwrap();
}
