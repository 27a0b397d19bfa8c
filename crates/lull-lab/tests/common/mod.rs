//! What the lab's end-to-end tests share: a daemon's display server on a headless screen, a
//! probe of a daemon's state read on its own loop, events written to an evdev pipe, an app that
//! records what it is pushed, a small display-server app, a hand-made app speaking the protocol
//! itself, and whether the live audit recorder can run. Each test binary uses a part of it.
#![allow(dead_code)]

use std::cell::RefCell;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::rc::Rc;

use lull::client::EsmClient;
use lull::kds_runtime::{AppOptions, KdsApp};
use lull_esm::protocol::{ClientMsg, DaemonMsg, MAX_MESSAGE};
use lull_model::{AppId, EventKind, HandlerId, Payload, RawEvent};
use lull_os::evdev::EvdevEncoder;
use lull_os::sys;

/// Writes `raw`, stamped now, to the evdev pipe `device` as one whole packet.
pub fn write_evdev(enc: &mut EvdevEncoder, device: &OwnedFd, raw: RawEvent) {
    let mut buf = Vec::new();
    enc.encode(raw, sys::monotonic_ns(), &mut buf).unwrap();
    assert_eq!(
        sys::write_all_once(device.as_raw_fd(), &buf).unwrap(),
        buf.len()
    );
}

/// Linux's `KEY_A` (`input-event-codes.h`).
pub const KEY_A: u16 = 30;

/// Writes a press of key `code`, stamped now, to the evdev pipe `device`.
pub fn press_key(device: &OwnedFd, code: u16) {
    write_evdev(
        &mut EvdevEncoder::new(),
        device,
        RawEvent::Key {
            code,
            pressed: true,
        },
    );
}

/// Registers `app` for `kind` with a handler that records each payload it is pushed.
pub fn record_payloads(app: &mut EsmClient, kind: EventKind) -> Rc<RefCell<Vec<Payload>>> {
    let got = Rc::new(RefCell::new(Vec::new()));
    let g = Rc::clone(&got);
    app.register(kind, move |ev| g.borrow_mut().push(ev.payload))
        .unwrap();
    got
}

/// A 64 × 48 app named `name` on the display server at `kds_path`, gated by guiS if `guis`.
pub fn attach_small(kds_path: &Path, name: &str, guis: bool) -> KdsApp {
    KdsApp::attach(
        kds_path,
        &AppOptions {
            width: 64,
            height: 48,
            name: name.into(),
            guis,
        },
    )
    .unwrap()
}

/// A hand-made app, without the client library: connects to the daemon at `path`, reads its
/// `Welcome` and asks to register for `kind`; the daemon's answers are the test's to read.
pub fn hand_made_app(path: &Path, kind: EventKind) -> (OwnedFd, AppId) {
    let fd = sys::seqpacket_connect(path).unwrap();
    let mut buf = [0u8; MAX_MESSAGE];
    let (n, _cell) = sys::recv_with_fds(fd.as_raw_fd(), &mut buf).unwrap();
    let DaemonMsg::Welcome { app, .. } = DaemonMsg::decode(&buf[..n]).unwrap() else {
        panic!("no welcome")
    };
    let mut out = Vec::new();
    ClientMsg::Register {
        kind,
        handler: Some(HandlerId(0)),
    }
    .encode(&mut out);
    sys::send_msg(fd.as_raw_fd(), &out).unwrap();
    (fd, app)
}

/// Whether tracefs lets the live recorder run here (if not, says why: `SKIPPED`).
pub fn recorder_can_run() -> bool {
    let why = lull_os::tracefs::available().err();
    if let Some(why) = &why {
        lull_testkit::skip(format!("the live recorder cannot run here: {why}"));
    }
    why.is_none()
}
