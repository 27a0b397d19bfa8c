//! The C ABI of `include/lull.h`, called as a C program would, against a real daemon.

use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::thread;

use lull::capi::{
    esm_connect, esm_disconnect, esm_register, esm_strerror, esm_wait, LullEvent, ESM_ERR_BAD_KIND,
    ESM_ERR_CONNECT, ESM_ERR_DAEMON_GONE, ESM_OK,
};
use lull_esm::EsmConfig;
use lull_model::{RawEvent, TouchPhase};
use lull_os::evdev::EvdevEncoder;
use lull_os::sys;
use lulld::test_support::TestDaemon;

static LAST_X: AtomicI64 = AtomicI64::new(-1);
static LAST_KIND: AtomicU64 = AtomicU64::new(99);

extern "C" fn on_press(ev: *const LullEvent) {
    // SAFETY: the library passes a valid event for the duration of the call.
    let ev = unsafe { &*ev };
    LAST_X.store(i64::from(ev.a), Ordering::SeqCst);
    LAST_KIND.store(u64::from(ev.kind), Ordering::SeqCst);
}

#[test]
fn register_wait_and_daemon_gone_through_the_c_abi() {
    let (r, w) = sys::pipe(false).unwrap();
    let daemon = TestDaemon::start("capi", EsmConfig::default(), move |d| d.add_evdev(r));

    let cpath = CString::new(daemon.path.to_str().unwrap()).unwrap();
    let missing = CString::new("/nonexistent/lull.sock").unwrap();
    // SAFETY: valid NUL-terminated strings.
    assert_eq!(unsafe { esm_connect(missing.as_ptr()) }, ESM_ERR_CONNECT);
    assert_eq!(unsafe { esm_connect(cpath.as_ptr()) }, ESM_OK);
    assert_eq!(esm_register(99, Some(on_press)), ESM_ERR_BAD_KIND);
    assert_eq!(esm_register(1, Some(on_press)), ESM_OK);
    // The first wait parks the app; the press written afterwards is pushed to it. The write
    // happens on another thread once this one is blocked in the daemon's EV_WAIT (the daemon
    // queues it otherwise, with the same result).
    let writer = thread::spawn(move || {
        let mut buf = Vec::new();
        EvdevEncoder::new()
            .encode(
                RawEvent::Touch {
                    phase: TouchPhase::Down,
                    x: 42,
                    y: 7,
                },
                sys::monotonic_ns(),
                &mut buf,
            )
            .unwrap();
        sys::write_all_once(w.as_raw_fd(), &buf).unwrap();
        w
    });
    assert_eq!(esm_wait(), ESM_OK);
    assert_eq!(LAST_X.load(Ordering::SeqCst), 42);
    assert_eq!(LAST_KIND.load(Ordering::SeqCst), 1);
    let _w = writer.join().unwrap();

    daemon.stop().accounting.unwrap();
    assert_eq!(esm_wait(), ESM_ERR_DAEMON_GONE);
    // SAFETY: esm_strerror returns a static NUL-terminated string.
    let msg = unsafe { std::ffi::CStr::from_ptr(esm_strerror(ESM_ERR_DAEMON_GONE)) };
    assert!(msg.to_str().unwrap().contains("closed"));
    assert_eq!(esm_disconnect(), ESM_OK);
}

/// `include/lull.h` and the C example compile as C11 with warnings as errors (linking needs the
/// `cdylib`/`staticlib` artifacts, which `cargo build -p lull-client` makes; see docs/live.md).
#[test]
fn header_and_c_example_compile() {
    if !lull_testkit::c_build::have_cc() {
        lull_testkit::skip("no C compiler (cc)");
        return;
    }
    let scratch = lull_os::fileout::ScratchDir::new("lull-tracker").unwrap();
    let out = scratch.path().join("tracker.o");
    lull_testkit::c_build::compile(
        &lull_testkit::c_build::workspace_root().join("apps/esm-c/tracker.c"),
        &out,
    );
}
