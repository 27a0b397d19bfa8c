//! The KDS part of the C ABI (`include/lull.h`), called as a C program would, against a real
//! daemon: figure 18 through `kds_compose`/`kds_draw`, the threads API of figure 19, bad
//! arguments answered with codes, and the header's numbers checked against the Rust ones.

mod common;

use std::ffi::{c_int, c_void, CStr, CString};
use std::ptr;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;

use lull::capi::LullEvent;
use lull::capi_kds::*;
use lull::kds_client::KdsAdmin;
use lull_esm::EsmConfig;
use lull_kds::server::BACKDROP_ARGB;
use lull_kds::wire::ErrorCode;
use lull_model::ThreadCategory;
use lull_os::sys;
use lulld::test_support::TestDaemon;

const RED: u32 = 0xffff_0000;
const GREEN: u32 = 0xff00_ff00;
const BLUE: u32 = 0xff00_00ff;

fn last() -> (c_int, String) {
    // SAFETY: the library returns a NUL-terminated string owned by this thread.
    let m = unsafe { CStr::from_ptr(kds_last_error_message()) };
    (kds_last_error(), m.to_string_lossy().into_owned())
}

/// A request the server refuses fails with `KDS_ERR_REFUSED` and the server's reason `code`.
fn assert_refused(rc: c_int, code: ErrorCode) {
    assert_eq!(rc, KDS_ERR_REFUSED, "{:?}", last());
    assert_eq!(kds_last_refusal(), code as c_int, "{:?}", last());
}

fn solid(z: i32, x: i32, y: i32, side: u32, argb: u32) -> KdsLayer {
    KdsLayer {
        z,
        x,
        y,
        width: side,
        height: side,
        argb,
        pixels: ptr::null(),
    }
}

/// A daemon with its display server (screen `w × h`) and an evdev pipe whose write end is
/// returned, so the test can type keys.
fn daemon_with_keys(tag: &str, w: u32, h: u32) -> (TestDaemon, std::os::fd::OwnedFd) {
    let (r, wr) = sys::pipe(false).unwrap();
    let d = TestDaemon::start(tag, EsmConfig::default(), move |d| {
        d.add_evdev(r)?;
        lulld::test_support::enable_headless_kds(d, w, h)
    });
    (d, wr)
}

fn connect(path: &std::path::Path, side: u32) -> *mut KdsHandle {
    let p = CString::new(path.to_str().unwrap()).unwrap();
    let name = c"c-abi";
    // SAFETY: valid NUL-terminated strings.
    let k = unsafe { kds_connect(p.as_ptr(), side, side, name.as_ptr()) };
    assert!(!k.is_null(), "kds_connect: {:?}", last());
    k
}

#[test]
fn connect_failures_set_the_last_error() {
    let missing = c"/nonexistent/kds.sock";
    // SAFETY: valid NUL-terminated strings or NULL.
    let k = unsafe { kds_connect(missing.as_ptr(), 25, 25, ptr::null()) };
    assert!(k.is_null());
    let (code, msg) = last();
    assert_eq!(code, KDS_ERR_CONNECT);
    assert!(msg.contains("is lulld running"), "{msg}");
    let bad_utf8 = [0xffu8, 0xfe, 0];
    // SAFETY: a NUL-terminated byte string.
    let k = unsafe { kds_connect(bad_utf8.as_ptr().cast(), 25, 25, ptr::null()) };
    assert!(k.is_null());
    assert_eq!(kds_last_error(), KDS_ERR_BAD_STRING);
    // A window larger than the screen: refused by the server, with its reason.
    let daemon = TestDaemon::start_kds("kds-capi-big", 32, 32);
    let p = CString::new(daemon.kds_path().to_str().unwrap()).unwrap();
    // SAFETY: valid strings.
    let k = unsafe { kds_connect(p.as_ptr(), 33, 10, ptr::null()) };
    assert!(k.is_null());
    assert_eq!(kds_last_error(), KDS_ERR_REFUSED);
    assert_eq!(kds_last_refusal(), ErrorCode::WindowTooLarge as c_int);
    daemon.stop().accounting.unwrap();
}

/// Figure 18 through the C calls, every bad argument answered with a code, and the screen
/// exactly what was drawn.
#[test]
fn figure_18_and_bad_arguments() {
    let daemon = TestDaemon::start_kds("kds-capi-fig18", 64, 48);
    let k = connect(&daemon.kds_path(), 25);
    let mut win = KdsRect::default();
    // SAFETY (this block and the calls below): `k` is live until kds_detach; pointers are
    // valid or deliberately NULL.
    unsafe {
        assert_eq!(kds_window(ptr::null(), &raw mut win), KDS_ERR_NULL);
        assert_eq!(kds_window(k, ptr::null_mut()), KDS_ERR_NULL);
        assert_eq!(kds_window(k, &raw mut win), KDS_OK);
    }
    assert_eq!(
        win,
        KdsRect {
            x: 19,
            y: 11,
            width: 25,
            height: 25
        }
    );
    // SAFETY: as above.
    let id = unsafe { kds_app_id(k) };
    // SAFETY: NULL is allowed.
    assert_eq!(unsafe { kds_app_id(ptr::null()) }, KDS_NO_APP);
    let mut admin = KdsAdmin::connect(&daemon.kds_path()).unwrap();
    let listed = admin.windows().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(app_id_bits(listed[0].app), id);
    assert_eq!(listed[0].name, "c-abi");

    let layers = [solid(0, 0, 0, 15, RED), solid(1, 10, 10, 15, GREEN)];
    // SAFETY: as above.
    unsafe {
        assert_eq!(
            kds_compose(ptr::null(), 1, 25, 25, layers.as_ptr(), 2),
            KDS_ERR_NULL
        );
        assert_eq!(kds_compose(k, 1, 25, 25, ptr::null(), 2), KDS_ERR_NULL);
        // n beyond the bound is refused before any layer is read.
        assert_eq!(
            kds_compose(k, 1, 25, 25, layers.as_ptr(), KDS_MAX_LAYERS + 1),
            KDS_ERR_BAD_ARG
        );
        assert!(last().1.contains("KDS_MAX_LAYERS"));
        // A pixel layer too large to carry is refused before its pixels are read.
        let one = [0u32];
        let huge = [KdsLayer {
            pixels: one.as_ptr(),
            ..solid(0, 0, 0, 100_000, RED)
        }];
        assert_eq!(kds_compose(k, 1, 25, 25, huge.as_ptr(), 1), KDS_ERR_BAD_ARG);
        // The same size as a solid fill is only a rectangle: it is clipped, not refused.
        let big_solid = [solid(0, 0, 0, 100_000, BLUE)];
        assert_eq!(kds_compose(k, 2, 25, 25, big_solid.as_ptr(), 1), KDS_OK);
        // A surface larger than the window: refused by the server, with its reason.
        assert_refused(
            kds_compose(k, 3, 26, 25, layers.as_ptr(), 2),
            ErrorCode::Compose,
        );
        // Zero layers, NULL layers: an empty (transparent) surface.
        assert_eq!(kds_compose(k, 4, 1, 1, ptr::null(), 0), KDS_OK);
        // A pixels layer: 2 × 1 pixels.
        let px = [BLUE, GREEN];
        let pixel_layer = [KdsLayer {
            pixels: px.as_ptr(),
            width: 2,
            height: 1,
            ..solid(0, 0, 0, 0, 0)
        }];
        assert_eq!(kds_compose(k, 5, 2, 1, pixel_layer.as_ptr(), 1), KDS_OK);

        assert_eq!(kds_draw(ptr::null(), 1, 0, 0), KDS_ERR_NULL);
        assert_refused(kds_draw(k, 77, 0, 0), ErrorCode::NoSurface);
        assert_refused(kds_draw(k, 5, 24, 0), ErrorCode::OutsideWindow);
        // DRAW_BATCH: NULL with n > 0, more than the bound, one draw outside (all refused),
        // then a batch that fits; n 0 does nothing.
        let at = |x, y| KdsDrawItem {
            surface_id: 5,
            x,
            y,
        };
        let batch = [at(0, 0), at(23, 24)];
        assert_eq!(kds_draw_batch(ptr::null(), batch.as_ptr(), 2), KDS_ERR_NULL);
        assert_eq!(kds_draw_batch(k, ptr::null(), 2), KDS_ERR_NULL);
        assert_eq!(kds_draw_batch(k, ptr::null(), 0), KDS_OK);
        assert_eq!(
            kds_draw_batch(k, batch.as_ptr(), KDS_MAX_DRAW_BATCH + 1),
            KDS_ERR_BAD_ARG
        );
        let leaves = [at(0, 0), at(24, 0)];
        assert_refused(
            kds_draw_batch(k, leaves.as_ptr(), 2),
            ErrorCode::OutsideWindow,
        );
        assert_eq!(kds_draw_batch(k, batch.as_ptr(), 2), KDS_OK);
        // Frame pacing: NULL, then two frames (the second waits for FRAME_DONE unless a
        // refresh boundary passed between the calls).
        assert_eq!(kds_next_frame(ptr::null()), KDS_ERR_NULL);
        assert_eq!(kds_next_frame(k), KDS_OK);
        assert_eq!(kds_next_frame(k), KDS_OK);
        // Figure 18: two squares, the second over the first.
        assert_eq!(kds_compose(k, 1, 25, 25, layers.as_ptr(), 2), KDS_OK);
        assert_eq!(kds_draw(k, 1, 0, 0), KDS_OK);
    }

    // Every pixel of the screen: backdrop outside the window; inside, green where layer 2 is,
    // red where only layer 1 is, transparent elsewhere.
    let shot = admin.snapshot().unwrap();
    for y in 0..48u32 {
        for x in 0..64u32 {
            let (wx, wy) = (x as i32 - 19, y as i32 - 11);
            let want = if !(0..25).contains(&wx) || !(0..25).contains(&wy) {
                BACKDROP_ARGB
            } else if wx >= 10 && wy >= 10 {
                GREEN
            } else if wx < 15 && wy < 15 {
                RED
            } else {
                0
            };
            assert_eq!(shot.get(x, y), Some(want), "({x}, {y})");
        }
    }

    let mut st = KdsWindowState::default();
    // SAFETY: as above.
    unsafe {
        assert_eq!(kds_window_state(k, ptr::null_mut()), KDS_ERR_NULL);
        assert_eq!(kds_window_state(ptr::null(), &raw mut st), KDS_ERR_NULL);
        assert_eq!(kds_window_state(k, &raw mut st), KDS_OK);
    }
    assert_eq!(
        st,
        KdsWindowState {
            stacking: 0,
            visibility: 0,
            screen: 0,
            can_see: 1
        }
    );
    // SAFETY: NULL is refused; `k` is live and given up here.
    unsafe {
        assert_eq!(kds_detach(ptr::null_mut()), KDS_ERR_NULL);
        assert_eq!(kds_detach(k), KDS_OK);
    }
    assert!(admin.windows().unwrap().is_empty());
    let shot = admin.snapshot().unwrap();
    assert!(shot.pixels().iter().all(|p| *p == BACKDROP_ARGB));
    daemon.stop().accounting.unwrap();
}

/// `kds_t` is shared by threads: composes and draws from several at once all succeed.
#[test]
fn one_handle_from_many_threads() {
    struct Shared(*mut KdsHandle);
    // SAFETY: lull.h promises every call but kds_detach is safe from any thread.
    unsafe impl Sync for Shared {}
    let daemon = TestDaemon::start_kds("kds-capi-threads", 64, 48);
    let k = Shared(connect(&daemon.kds_path(), 20));
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let k = &k;
            s.spawn(move || {
                for i in 0..20u32 {
                    let l = [solid(0, 0, 0, 20, 0xff00_0000 | t << 8 | i)];
                    // SAFETY: the handle is live until the scope ends.
                    unsafe {
                        assert_eq!(kds_compose(k.0, t, 20, 20, l.as_ptr(), 1), KDS_OK);
                        assert_eq!(kds_draw(k.0, t, 0, 0), KDS_OK);
                    }
                }
            });
        }
    });
    // SAFETY: no thread uses it any more.
    assert_eq!(unsafe { kds_detach(k.0) }, KDS_OK);
    let report = daemon.stop();
    assert_eq!(report.kds.unwrap().server.draws, 80);
}

struct DrawLoop {
    k: *mut KdsHandle,
    tx: Mutex<Sender<c_int>>,
}

/// Composes and draws on the handle until a call fails, sending 0 after the first draw and
/// then the failing code.
unsafe extern "C" fn draw_until_refused(_ctx: *mut KdsThread, user: *mut c_void) {
    // SAFETY: the test passes a DrawLoop that outlives the function.
    let d = unsafe { &*user.cast::<DrawLoop>() };
    let l = [solid(0, 0, 0, 8, RED)];
    let mut first = true;
    loop {
        let mut st = KdsWindowState::default();
        // SAFETY: the handle is used on the app's own drawing thread, which kds_detach waits for.
        let rc = unsafe {
            match kds_compose(d.k, 1, 8, 8, l.as_ptr(), 1) {
                KDS_OK => match kds_draw(d.k, 1, 0, 0) {
                    KDS_OK => kds_window_state(d.k, &raw mut st),
                    rc => rc,
                },
                rc => rc,
            }
        };
        if rc != KDS_OK {
            d.tx.lock().unwrap().send(rc).unwrap();
            return;
        }
        if first {
            first = false;
            d.tx.lock().unwrap().send(KDS_OK).unwrap();
        }
    }
}

/// `kds_detach` while the drawing thread is inside `kds_compose`/`kds_draw` on the same handle:
/// the thread's calls fail, it returns, and only then is the handle freed.
#[test]
fn detach_while_the_drawing_thread_uses_the_handle() {
    let daemon = TestDaemon::start_kds("kds-capi-detach-busy", 64, 48);
    let k = connect(&daemon.kds_path(), 16);
    let (tx, rx) = channel();
    let d = Box::new(DrawLoop {
        k,
        tx: Mutex::new(tx),
    });
    let user: *mut c_void = ptr::from_ref(&*d).cast_mut().cast();
    // SAFETY: `k` is live; `d` outlives the function (kds_detach joins the thread).
    unsafe {
        assert_eq!(
            kds_run_thread(k, KDS_THREAD_DRAWING, Some(draw_until_refused), user),
            KDS_OK
        );
    }
    assert_eq!(rx.recv().unwrap(), KDS_OK, "{:?}", last());
    // SAFETY: only the app's KDS threads use the handle meanwhile.
    assert_eq!(unsafe { kds_detach(k) }, KDS_OK, "{:?}", last());
    // The thread had returned (with a failed call) before kds_detach did.
    assert_ne!(rx.try_recv().unwrap(), KDS_OK);
    drop(d);
    let kds = daemon.stop().kds.unwrap();
    assert_eq!((kds.server.attached, kds.server.detached), (1, 1));
}

struct HandlerCtx {
    k: *mut KdsHandle,
    tx: Mutex<Sender<(LullEvent, c_int, c_int)>>,
}

unsafe extern "C" fn on_key(ev: *const LullEvent, user: *mut c_void) {
    // SAFETY: the test passes a HandlerCtx that outlives the registration; the event is valid
    // for the call.
    let (ctx, ev) = unsafe { (&*user.cast::<HandlerCtx>(), *ev) };
    // A handler may use the handle, but detaching from the event thread is refused.
    // SAFETY: the handle is live.
    let detach = unsafe { kds_detach(ctx.k) };
    let mut st = KdsWindowState::default();
    // SAFETY: as above.
    let state = unsafe { kds_window_state(ctx.k, &raw mut st) };
    ctx.tx.lock().unwrap().send((ev, detach, state)).unwrap();
}

struct ThreadReport {
    tx: Mutex<Sender<(&'static str, c_int)>>,
    go: Mutex<Receiver<()>>,
}

unsafe extern "C" fn on_foreground(ctx: *mut KdsThread, user: *mut c_void) {
    // SAFETY: the test passes a ThreadReport that outlives the function.
    let r = unsafe { &*user.cast::<ThreadReport>() };
    let send = |what, v| r.tx.lock().unwrap().send((what, v)).unwrap();
    // SAFETY (every call below): `ctx` is the running function's context.
    send("gate in front", unsafe { kds_thread_gate(ctx) });
    send("should stop in front", unsafe {
        kds_thread_should_stop(ctx)
    });
    r.go.lock().unwrap().recv().unwrap();
    // Now in the background: guiS table 1 parks the foreground category until detach.
    let mut passes = 0;
    while unsafe { kds_thread_gate(ctx) } == 1 {
        passes += 1;
    }
    send("gate passes in background", passes);
    send("should stop at detach", unsafe {
        kds_thread_should_stop(ctx)
    });
}

/// Figure 19 through the C calls: a key handler on the event thread, a function on the
/// foreground thread gated by guiS, and their bad arguments.
#[test]
fn figure_19_threads_and_handlers() {
    let (daemon, keys) = daemon_with_keys("kds-capi-fig19", 64, 48);
    let k = connect(&daemon.kds_path(), 16);
    let (tx, rx) = channel();
    let hctx = Box::new(HandlerCtx {
        k,
        tx: Mutex::new(tx),
    });
    let user: *mut c_void = ptr::from_ref(&*hctx).cast_mut().cast();
    // SAFETY: `k` is live; `hctx` outlives the registration (it is dropped after detach).
    unsafe {
        assert_eq!(
            kds_esm_register(ptr::null(), 3, Some(on_key), user),
            KDS_ERR_NULL
        );
        assert_eq!(kds_esm_register(k, 99, Some(on_key), user), KDS_ERR_BAD_ARG);
        assert_eq!(kds_esm_register(k, 3, Some(on_key), user), KDS_OK);
    }
    // The registration is in effect once kds_esm_register returned: type a key.
    common::press_key(&keys, common::KEY_A);
    let (ev, detach, state) = rx.recv().unwrap();
    assert_eq!((ev.kind, ev.a, ev.b), (3, 30, 1));
    assert_eq!(detach, KDS_ERR_WRONG_THREAD);
    assert_eq!(state, KDS_OK);
    // NULL unregisters.
    // SAFETY: as above.
    assert_eq!(
        unsafe { kds_esm_register(k, 3, None, ptr::null_mut()) },
        KDS_OK
    );

    let (ttx, trx) = channel();
    let (go_tx, go_rx) = channel();
    let report = Box::new(ThreadReport {
        tx: Mutex::new(ttx),
        go: Mutex::new(go_rx),
    });
    let ruser: *mut c_void = ptr::from_ref(&*report).cast_mut().cast();
    // SAFETY: as above; `report` outlives the function (it returns before detach does).
    unsafe {
        assert_eq!(
            kds_run_thread(
                ptr::null(),
                KDS_THREAD_FOREGROUND,
                Some(on_foreground),
                ruser
            ),
            KDS_ERR_NULL
        );
        assert_eq!(
            kds_run_thread(k, KDS_THREAD_EVENT, Some(on_foreground), ruser),
            KDS_ERR_BAD_ARG
        );
        assert!(last().1.contains("kds_esm_register"));
        assert_eq!(
            kds_run_thread(k, 7, Some(on_foreground), ruser),
            KDS_ERR_BAD_ARG
        );
        assert_eq!(
            kds_run_thread(k, KDS_THREAD_FOREGROUND, None, ruser),
            KDS_ERR_NULL
        );
        assert_eq!(kds_thread_gate(ptr::null()), KDS_ERR_NULL);
        assert_eq!(kds_thread_should_stop(ptr::null()), KDS_ERR_NULL);
        assert_eq!(
            kds_run_thread(k, KDS_THREAD_FOREGROUND, Some(on_foreground), ruser),
            KDS_OK
        );
    }
    assert_eq!(trx.recv().unwrap(), ("gate in front", 1));
    assert_eq!(trx.recv().unwrap(), ("should stop in front", 0));
    // Send the app to the background and wait for the library to have the pushed state.
    let mut admin = KdsAdmin::connect(&daemon.kds_path()).unwrap();
    let app = admin.windows().unwrap()[0].app;
    admin.background(app).unwrap();
    let mut st = KdsWindowState::default();
    loop {
        // SAFETY: as above.
        assert_eq!(unsafe { kds_window_state(k, &raw mut st) }, KDS_OK);
        if st.stacking == 1 {
            break;
        }
        std::thread::yield_now();
    }
    assert_eq!(st.can_see, 0);
    go_tx.send(()).unwrap();
    // SAFETY: no other thread uses the handle; the function returns once told to stop.
    assert_eq!(unsafe { kds_detach(k) }, KDS_OK);
    assert_eq!(trx.recv().unwrap(), ("gate passes in background", 0));
    assert_eq!(trx.recv().unwrap(), ("should stop at detach", 1));
    drop((hctx, report));
    let kds = daemon.stop().kds.unwrap();
    assert_eq!((kds.server.attached, kds.server.detached), (1, 1));
}

/// The header's numbers are the library's.
#[test]
fn header_numbers_are_the_librarys() {
    let header = include_str!("../../../include/lull.h");
    let value = |name: &str| -> i64 {
        let line = header
            .lines()
            .find(|l| l.trim().starts_with(&format!("{name} =")))
            .unwrap_or_else(|| panic!("{name} is not in lull.h"));
        let v = line.split('=').nth(1).unwrap();
        let v = v.split([',', '/', '}']).next().unwrap().trim();
        v.parse().unwrap()
    };
    for (name, code) in [
        ("KDS_OK", KDS_OK),
        ("KDS_ERR_CONNECT", KDS_ERR_CONNECT),
        ("KDS_ERR_SERVER_GONE", KDS_ERR_SERVER_GONE),
        ("KDS_ERR_PROTOCOL", KDS_ERR_PROTOCOL),
        ("KDS_ERR_REFUSED", KDS_ERR_REFUSED),
        ("KDS_ERR_NULL", KDS_ERR_NULL),
        ("KDS_ERR_BAD_ARG", KDS_ERR_BAD_ARG),
        ("KDS_ERR_BAD_STRING", KDS_ERR_BAD_STRING),
        ("KDS_ERR_IO", KDS_ERR_IO),
        ("KDS_ERR_STOPPING", KDS_ERR_STOPPING),
        ("KDS_ERR_WRONG_THREAD", KDS_ERR_WRONG_THREAD),
        ("KDS_ERR_INTERNAL", KDS_ERR_INTERNAL),
        ("KDS_THREAD_EVENT", KDS_THREAD_EVENT),
        ("KDS_THREAD_DRAWING", KDS_THREAD_DRAWING),
        ("KDS_THREAD_FOREGROUND", KDS_THREAD_FOREGROUND),
        ("KDS_THREAD_BACKGROUND", KDS_THREAD_BACKGROUND),
    ] {
        assert_eq!(value(name), i64::from(code), "{name}");
    }
    assert_eq!(value("KDS_MAX_LAYERS"), i64::from(KDS_MAX_LAYERS));
    assert_eq!(value("KDS_MAX_DRAW_BATCH"), i64::from(KDS_MAX_DRAW_BATCH));
    for c in ThreadCategory::ALL {
        let name = format!("KDS_THREAD_{}", c.name().to_uppercase());
        assert_eq!(
            ThreadCategory::ALL[usize::try_from(value(&name)).unwrap()],
            c
        );
    }
    // One KDS_REFUSED_ per wire error code, named after it.
    for c in ErrorCode::ALL {
        let camel = format!("{c:?}");
        let mut snake = String::new();
        for (i, ch) in camel.chars().enumerate() {
            if ch.is_uppercase() && i > 0 {
                snake.push('_');
            }
            snake.push(ch.to_ascii_uppercase());
        }
        assert_eq!(
            value(&format!("KDS_REFUSED_{snake}")),
            i64::from(c as u32),
            "{c:?}"
        );
    }
    assert_eq!(
        header.matches("KDS_REFUSED_").count() - header.matches("KDS_REFUSED_*").count() - 1,
        ErrorCode::ALL.len(),
        "one KDS_REFUSED_ constant per ErrorCode (plus the mention in kds_draw's comment)"
    );
}
