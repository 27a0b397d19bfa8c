//! systemd's socket activation and readiness against the real `lulld` binary: the test binds the
//! ESM and display-server sockets itself, passes them as descriptors 3 and 4 with `LISTEN_PID`,
//! `LISTEN_FDS` and `LISTEN_FDNAMES` set (as systemd does for `packaging/systemd/lulld.socket`
//! and `lulld-kds.socket`), waits for `READY=1` on its own `NOTIFY_SOCKET`, and talks to the
//! daemon through the passed sockets with the client library.
//!
//! The binary is the workspace's `target/<profile>/lulld`, which `cargo test --workspace` (and
//! `./test.sh`) builds; with `cargo test -p lull-lab` alone it may be missing, and the tests say
//! so and skip.

use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use lull::client::{EsmClient, Handled};
use lull::kds_client::KdsAdmin;
use lull_model::{EventKind, Payload, RawEvent, TouchPhase};
use lull_os::evdev::EvdevEncoder;
use lull_os::sys;

/// A guard against a daemon that never becomes ready (it would fail the test, not hang it);
/// readiness itself is the datagram, not a delay.
const READY_GUARD: Duration = Duration::from_secs(60);
/// Passed descriptors are moved above this first, so that placing them at 3 and 4 in the child
/// cannot overwrite one with the other.
const HIGH_FD: RawFd = 100;

fn lulld_binary() -> Option<PathBuf> {
    // target/<profile>/deps/<this test> → target/<profile>/lulld
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("lulld");
    bin.is_file().then_some(bin)
}

/// A fresh private directory for a test's sockets, removed on drop (even when the test fails).
fn temp_dir(tag: &str) -> lull_os::fileout::ScratchDir {
    lull_os::fileout::ScratchDir::new(&format!("lull-activation-{tag}")).unwrap()
}

fn dup_high(fd: &OwnedFd) -> OwnedFd {
    let high = lull_os::sys::dup_at_least(fd.as_fd(), HIGH_FD).unwrap();
    assert!(high.as_raw_fd() >= HIGH_FD);
    high
}

/// Starts `lulld ARGS` with `passed` as descriptors 3, 4, … named `names`, `LISTEN_PID` its own
/// pid (set by the shell that execs it, which keeps its pid), `NOTIFY_SOCKET` `notify` and
/// `stdin` as its standard input.
fn spawn_activated(
    bin: &Path,
    passed: &[&OwnedFd],
    names: &str,
    notify: &Path,
    stdin: Stdio,
    args: &[&str],
) -> Child {
    let high: Vec<OwnedFd> = passed.iter().map(|fd| dup_high(fd)).collect();
    let raw: Vec<RawFd> = high.iter().map(AsRawFd::as_raw_fd).collect();
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(r#"LISTEN_PID=$$ exec "$0" "$@""#)
        .arg(bin)
        .args(args)
        .env("LISTEN_FDS", passed.len().to_string())
        .env("LISTEN_FDNAMES", names)
        .env("NOTIFY_SOCKET", notify)
        .env_remove("LISTEN_PID")
        .stdin(stdin)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // dup2 leaves the new descriptors without close-on-exec, as the protocol wants.
    lull_os::sys::pass_fds_at(&mut cmd, raw, 3);
    let child = cmd.spawn().unwrap();
    drop(high);
    child
}

fn stderr_of(child: &mut Child) -> String {
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut s);
    }
    s
}

#[test]
fn lulld_serves_on_the_passed_sockets_and_reports_ready() {
    let Some(bin) = lulld_binary() else {
        lull_testkit::skip("the lulld binary is not built (cargo build -p lulld)");
        return;
    };
    let scratch = temp_dir("serve");
    let dir = scratch.path();
    let esm_path = dir.join("esm.sock");
    let kds_path = dir.join("kds.sock");
    let notify_path = dir.join("notify.sock");
    let esm = sys::seqpacket_listen(&esm_path).unwrap();
    let kds = sys::stream_listen(&kds_path).unwrap();
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    notify.set_read_timeout(Some(READY_GUARD)).unwrap();
    // The evdev source: `struct input_event` records written into a pipe, the daemon's stdin.
    let (r, w) = sys::pipe(false).unwrap();

    // The display server's socket first, to show that names, not positions, decide.
    let mut child = spawn_activated(
        &bin,
        &[&kds, &esm],
        "kds:esm",
        &notify_path,
        Stdio::from(r),
        &[
            "--evdev",
            "/dev/stdin",
            "--screen",
            "64x48",
            "--guis",
            "off",
        ],
    );
    drop((esm, kds));
    let mut buf = [0u8; 256];
    let n = match notify.recv(&mut buf) {
        Ok(n) => n,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no READY=1 ({e}); lulld said: {}", stderr_of(&mut child));
        }
    };
    let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(msg.starts_with("READY=1\n"), "{msg:?}");
    assert!(msg.contains(&esm_path.display().to_string()), "{msg:?}");

    // ESM through the passed socket: register, inject a touch through evdev, receive it.
    let mut c = EsmClient::connect(&esm_path).unwrap();
    let got = std::rc::Rc::new(std::cell::Cell::new(None));
    let g = std::rc::Rc::clone(&got);
    c.register(EventKind::TouchPress, move |ev| {
        if let Payload::Point { x, y } = ev.payload {
            g.set(Some((x, y)));
        }
    })
    .unwrap();
    // The reply comes after the registration is served: the event cannot arrive before it.
    assert_eq!(c.stats().unwrap().registrations, 1);
    let mut packet = Vec::new();
    EvdevEncoder::new()
        .encode(
            RawEvent::Touch {
                phase: TouchPhase::Down,
                x: 17,
                y: 29,
            },
            sys::monotonic_ns(),
            &mut packet,
        )
        .unwrap();
    assert_eq!(
        sys::write_all_once(w.as_raw_fd(), &packet).unwrap(),
        packet.len()
    );
    match c.wait().unwrap() {
        Handled::Event { kind, .. } => assert_eq!(kind, EventKind::TouchPress),
        other => panic!("{other:?}"),
    }
    assert_eq!(got.get(), Some((17, 29)));

    // The display server through its passed socket.
    let mut admin = KdsAdmin::connect(&kds_path).unwrap();
    assert!(admin.windows().unwrap().is_empty());
    drop((admin, c));

    lull_os::sys::signal_process(child.id(), lull_os::sys::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    let err = stderr_of(&mut child);
    assert!(status.success(), "{status}: {err}");
    assert!(
        err.contains(&format!("listening on {}", esm_path.display())),
        "{err}"
    );
    assert!(err.contains(&format!("display server on {}", kds_path.display())));
    // The socket files belong to whoever bound them (systemd's socket units): they stay.
    assert!(esm_path.exists() && kds_path.exists());
}

/// Runs lulld with `passed` named `names` and returns its failure message.
fn refused(tag: &str, passed: &[&OwnedFd], names: &str, args: &[&str]) -> Option<String> {
    let bin = lulld_binary()?;
    let scratch = temp_dir(tag);
    let notify = scratch.path().join("notify.sock");
    let mut child = spawn_activated(&bin, passed, names, &notify, Stdio::null(), args);
    let status = child.wait().unwrap();
    let err = stderr_of(&mut child);
    assert!(!status.success(), "lulld accepted it: {err}");
    Some(err)
}

#[test]
fn lulld_refuses_passed_sockets_it_cannot_use() {
    if lulld_binary().is_none() {
        lull_testkit::skip("the lulld binary is not built (cargo build -p lulld)");
        return;
    }
    let scratch = temp_dir("refuse");
    let dir = scratch.path();
    let stream = sys::stream_listen(&dir.join("stream.sock")).unwrap();
    let seqpacket = sys::seqpacket_listen(&dir.join("seqpacket.sock")).unwrap();

    // A stream socket where the ESM's sequential-packet socket belongs.
    let err = refused("wrong-type", &[&stream], "esm", &["--no-kds"]).unwrap();
    assert!(
        err.contains("is a SOCK_STREAM socket; it must be SOCK_SEQPACKET"),
        "{err}"
    );
    // A connected socket, not a listening one (what Accept=yes would pass).
    let (conn, _peer) = sys::seqpacket_pair().unwrap();
    let err = refused("connected", &[&conn], "esm", &["--no-kds"]).unwrap();
    assert!(err.contains("is not listening"), "{err}");
    // A socket unit without FileDescriptorName=: systemd names it after the unit.
    let err = refused("unnamed", &[&seqpacket], "lulld.socket", &["--no-kds"]).unwrap();
    assert!(err.contains("named \"lulld.socket\""), "{err}");
    // The display server's socket with the display server turned off.
    let err = refused("no-kds", &[&seqpacket, &stream], "esm:kds", &["--no-kds"]).unwrap();
    assert!(err.contains("--no-kds"), "{err}");
    // A --socket that is not where the passed socket is bound.
    let err = refused(
        "other-path",
        &[&seqpacket],
        "esm",
        &["--no-kds", "--socket", "/nonexistent/esm.sock"],
    )
    .unwrap();
    assert!(err.contains("systemd passed the socket bound at"), "{err}");
}
