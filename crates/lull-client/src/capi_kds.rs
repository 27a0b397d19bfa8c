//! The C ABI of KDS apps (`include/lull.h`, KDS part): `kds_connect` (seed 000, figure 14), the
//! commands of figure 18 (`kds_compose`, `kds_draw`, `kds_detach`) and the threads API of
//! figure 19 (`kds_esm_register`, `kds_run_thread`), on top of [`KdsApp`] with guiS on.
//!
//! A `kds_t` is shared by every thread of the app: all functions but `kds_detach` may be called
//! from any thread at once, including from handlers and from functions running on the KDS
//! threads (the runtime serialises requests on the channel). `kds_detach` is the last call on a
//! `kds_t`; it waits for the KDS threads, so it is refused on one of them. The KDS threads may
//! still be inside a call on the handle when it starts: it touches the handle only through a
//! shared reference (taking the app out from under the handle's lock, after which their calls
//! fail with `KDS_ERR_STOPPING`) until every KDS thread has returned, and only then frees it.
//!
//! Errors: every `int` function returns `KDS_OK` or a negative `KDS_ERR_*`, and a failing call
//! (including a `kds_connect` that returns NULL) records its code, the server's refusal code and
//! a message for the calling thread (`kds_last_error`, `kds_last_refusal`,
//! `kds_last_error_message`). No panic crosses the boundary: one is caught and reported as
//! `KDS_ERR_INTERNAL`.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

use lull_kds::compose::MAX_LAYERS;
use lull_kds::pixmap::MAX_PIXELS;
use lull_kds::wire::MAX_DATA_LEN;
use lull_kds::{Fill, Layer, Rect, Surface};
use lull_model::{AppId, EventKind, Screen, Stacking, ThreadCategory};
use lull_model::{Visibility, WindowState};

use crate::capi::LullEvent;
use crate::kds_client::{self, KdsClientError};
use crate::kds_runtime::{AppOptions, KdsApp, ThreadCtx};

pub const KDS_OK: c_int = 0;
/// Nothing listens on the control socket.
pub const KDS_ERR_CONNECT: c_int = -1;
/// The display server closed the channel.
pub const KDS_ERR_SERVER_GONE: c_int = -2;
/// The display server sent something the library did not expect.
pub const KDS_ERR_PROTOCOL: c_int = -3;
/// The display server refused the request; `kds_last_refusal` gives its code.
pub const KDS_ERR_REFUSED: c_int = -4;
/// A required pointer was NULL.
pub const KDS_ERR_NULL: c_int = -5;
/// An argument is out of range (category, event kind, layer count, sizes).
pub const KDS_ERR_BAD_ARG: c_int = -6;
/// A path or name is not valid UTF-8.
pub const KDS_ERR_BAD_STRING: c_int = -7;
/// Socket error.
pub const KDS_ERR_IO: c_int = -8;
/// The app is detaching, or the calling thread's function was replaced: the call was not made.
pub const KDS_ERR_STOPPING: c_int = -9;
/// `kds_detach` called on one of the app's own KDS threads (it waits for them).
pub const KDS_ERR_WRONG_THREAD: c_int = -10;
/// A fault inside the library (a caught panic); the message says where.
pub const KDS_ERR_INTERNAL: c_int = -11;
/// The display server's socket refused this user (EACCES): a permission problem, not a missing
/// daemon.
pub const KDS_ERR_PERMISSION: c_int = -12;

/// `kds_thread_t` categories: the `ThreadCategory` wire numbers (docs/kds-protocol.md, `THREAD`).
pub const KDS_THREAD_EVENT: c_int = 0;
pub const KDS_THREAD_DRAWING: c_int = 1;
pub const KDS_THREAD_FOREGROUND: c_int = 2;
pub const KDS_THREAD_BACKGROUND: c_int = 3;

/// Most layers one `kds_compose` may carry: the compositor's bound.
pub const KDS_MAX_LAYERS: u32 = MAX_LAYERS as u32;
const _: () = assert!(MAX_LAYERS as u64 == KDS_MAX_LAYERS as u64);
/// Most draws one `kds_draw_batch` carries (`KDS_MAX_DRAW_BATCH` in `lull.h`).
pub const KDS_MAX_DRAW_BATCH: u32 = lull_kds::wire::MAX_DRAW_BATCH as u32;
const _: () = assert!(lull_kds::wire::MAX_DRAW_BATCH as u64 == KDS_MAX_DRAW_BATCH as u64);

/// What `kds_app_id` returns for a NULL handle (no app id has every bit set: an index that
/// large would need 2^32 apps).
pub const KDS_NO_APP: u64 = u64::MAX;

/// Bytes of a `COMPOSE` request's data before its layers: surface id, width, height, layer count
/// (docs/kds-protocol.md).
const COMPOSE_HEAD_BYTES: u64 = 16;
/// Bytes of one layer's fixed fields: z, x, y, width, height, fill kind (docs/kds-protocol.md).
const LAYER_HEAD_BYTES: u64 = 24;
/// Bytes per ARGB pixel on the wire.
const PIXEL_BYTES: u64 = 4;

/// `kds_rect` of `lull.h`.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct KdsRect {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
}

/// `kds_layer` of `lull.h`: a rectangle in surface coordinates, its z-index and its paint —
/// `pixels` (row-major, `width × height` ARGB values) or, when `pixels` is NULL, `argb` solid.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KdsLayer {
    pub z: i32,
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
    pub argb: u32,
    pub pixels: *const u32,
}

/// `kds_window_state_t` of `lull.h`, with the wire numbers of `WINDOW_STATE`.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct KdsWindowState {
    /// 0 foreground, 1 background.
    pub stacking: u8,
    /// 0 visible, 1 covered.
    pub visibility: u8,
    /// 0 on, 1 off.
    pub screen: u8,
    /// 1 when drawing can reach the user's eyes (the seed's `CAN_SEE()`).
    pub can_see: u8,
}

impl From<WindowState> for KdsWindowState {
    fn from(w: WindowState) -> KdsWindowState {
        KdsWindowState {
            stacking: u8::from(w.stacking == Stacking::Background),
            visibility: u8::from(w.visibility == Visibility::Covered),
            screen: u8::from(w.screen == Screen::Off),
            can_see: u8::from(w.can_see()),
        }
    }
}

/// `kds_t` of `lull.h`: an attached app.
///
/// Every thread of the app shares the handle, so it is only ever used through `&KdsHandle`
/// until `kds_detach` has joined the KDS threads: the app sits behind a lock, each call holds
/// the lock while it uses the app, and `kds_detach` takes the app out (leaving `None`) before
/// stopping the threads.
#[derive(Debug)]
pub struct KdsHandle {
    /// `None` once `kds_detach` has started.
    app: Mutex<Option<KdsApp>>,
}

impl KdsHandle {
    fn new(app: KdsApp) -> KdsHandle {
        KdsHandle {
            app: Mutex::new(Some(app)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<KdsApp>> {
        // A panic while the lock was held (caught at the boundary) leaves the app or `None`,
        // both consistent, so the poison is ignored.
        self.app.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the app with the lock held (so `kds_detach` cannot take the app
    /// from under it), or `KDS_ERR_STOPPING` recorded once `kds_detach` has taken it. `f` must
    /// not block for long: only the `ESM_REGISTER` round trip does.
    fn with_app<T>(&self, what: &str, f: impl FnOnce(&KdsApp) -> T) -> Result<T, c_int> {
        let g = self.lock();
        g.as_ref().map(f).ok_or_else(|| {
            fail(
                KDS_ERR_STOPPING,
                0,
                &format!("{what}: the app is detaching (kds_detach was called)"),
            )
        })
    }
}

/// `kds_thread_t` of `lull.h`: what a function running on a KDS thread is given.
pub type KdsThread = ThreadCtx;

/// A handler of `kds_esm_register`.
pub type KdsEventHandler = Option<unsafe extern "C" fn(*const LullEvent, *mut c_void)>;
/// A function of `kds_run_thread`.
pub type KdsThreadFn = Option<unsafe extern "C" fn(*mut KdsThread, *mut c_void)>;

/// The caller's `void *user`, handed to another thread; what it points to is the caller's to
/// keep valid and safe to use there (lull.h says so).
#[derive(Clone, Copy)]
struct UserPtr(*mut c_void);
// SAFETY: the pointer is only passed back to the caller's own code, whose contract covers use
// on the KDS threads.
unsafe impl Send for UserPtr {}

impl UserPtr {
    fn get(self) -> *mut c_void {
        self.0
    }
}

struct LastError {
    code: c_int,
    refusal: c_int,
    message: CString,
}

thread_local! {
    static LAST: RefCell<LastError> = RefCell::new(LastError {
        code: KDS_OK,
        refusal: 0,
        message: CString::default(),
    });
    /// Set on the app's KDS threads (event handlers and functions of `kds_run_thread`).
    static ON_KDS_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Records a failure for the calling thread and returns its code.
fn fail(code: c_int, refusal: c_int, message: &str) -> c_int {
    // A message with a NUL (never ours) is cut there rather than lost.
    let message = CString::new(message.split('\0').next().unwrap_or_default()).unwrap_or_default();
    LAST.with(|l| {
        *l.borrow_mut() = LastError {
            code,
            refusal,
            message,
        };
    });
    code
}

/// The code of a runtime error, recorded for the calling thread.
fn fail_client(e: &KdsClientError) -> c_int {
    let (code, refusal) = match e {
        KdsClientError::Connect { source, .. }
            if source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            (KDS_ERR_PERMISSION, 0)
        }
        KdsClientError::Connect { .. } | KdsClientError::Timeout { .. } => (KDS_ERR_CONNECT, 0),
        KdsClientError::ServerGone => (KDS_ERR_SERVER_GONE, 0),
        KdsClientError::Refused { code, .. } => (KDS_ERR_REFUSED, code.map_or(0, |c| c as c_int)),
        KdsClientError::Wire(_)
        | KdsClientError::Unexpected { .. }
        | KdsClientError::MissingDescriptors(_)
        | KdsClientError::Esm(_) => (KDS_ERR_PROTOCOL, 0),
        KdsClientError::Stopping => (KDS_ERR_STOPPING, 0),
        KdsClientError::Io(_) => (KDS_ERR_IO, 0),
    };
    fail(code, refusal, &e.to_string())
}

fn result(r: Result<(), KdsClientError>) -> c_int {
    r.map_or_else(|e| fail_client(&e), |()| KDS_OK)
}

/// Runs `f`, turning a panic into `KDS_ERR_INTERNAL`.
fn guard(what: &str, f: impl FnOnce() -> c_int) -> c_int {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        fail(
            KDS_ERR_INTERNAL,
            0,
            &format!("{what}: internal error (a panic was caught at the C boundary)"),
        )
    })
}

/// The handle behind `k`, or `KDS_ERR_NULL` recorded.
///
/// # Safety
/// `k` is NULL or a live handle from `kds_connect`.
unsafe fn handle<'a>(k: *const KdsHandle, what: &str) -> Result<&'a KdsHandle, c_int> {
    // SAFETY: the caller promises NULL or a live handle.
    unsafe { k.as_ref() }.ok_or_else(|| fail(KDS_ERR_NULL, 0, &format!("{what}: kds_t is NULL")))
}

/// A C string argument; NULL is `None`.
///
/// # Safety
/// `s` is NULL or a NUL-terminated string valid for the call.
unsafe fn c_str<'a>(s: *const c_char, what: &str) -> Result<Option<&'a str>, c_int> {
    if s.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller promises a valid NUL-terminated string.
    unsafe { CStr::from_ptr(s) }
        .to_str()
        .map(Some)
        .map_err(|_| fail(KDS_ERR_BAD_STRING, 0, &format!("{what} is not valid UTF-8")))
}

/// The 64-bit form of an app id in C: index in the low half, generation in the high half.
#[must_use]
pub fn app_id_bits(app: AppId) -> u64 {
    u64::from(app.generation) << 32 | u64::from(app.index)
}

/// The inverse of [`app_id_bits`].
#[must_use]
pub fn app_id_from_bits(bits: u64) -> AppId {
    AppId {
        index: bits as u32,
        generation: (bits >> 32) as u32,
    }
}

fn category(c: c_int) -> Result<ThreadCategory, c_int> {
    match c {
        KDS_THREAD_DRAWING => Ok(ThreadCategory::Drawing),
        KDS_THREAD_FOREGROUND => Ok(ThreadCategory::Foreground),
        KDS_THREAD_BACKGROUND => Ok(ThreadCategory::Background),
        KDS_THREAD_EVENT => Err(fail(
            KDS_ERR_BAD_ARG,
            0,
            "kds_run_thread: the event thread runs ESM handlers only (use kds_esm_register)",
        )),
        other => Err(fail(
            KDS_ERR_BAD_ARG,
            0,
            &format!("kds_run_thread: unknown thread category {other} (KDS_THREAD_DRAWING, _FOREGROUND or _BACKGROUND)"),
        )),
    }
}

/// `kds_connect` (figure 14): attaches to the display server at `path` (NULL:
/// `$LULL_KDS_SOCKET`, else the default control socket) with a `width × height` window (0 × 0:
/// the whole screen) labelled `name` (NULL: no label), and starts the app's four KDS threads.
/// Returns NULL on failure; `kds_last_error` says why.
///
/// # Safety
/// `path` and `name` are NULL or NUL-terminated strings valid for the call.
#[no_mangle]
pub unsafe extern "C" fn kds_connect(
    path: *const c_char,
    width: u32,
    height: u32,
    name: *const c_char,
) -> *mut KdsHandle {
    let mut out = std::ptr::null_mut();
    guard("kds_connect", || {
        // SAFETY: the caller's promise about `path` and `name`.
        let path = match unsafe { c_str(path, "kds_connect: the socket path") } {
            Ok(p) => p.map_or_else(kds_client::default_kds_socket, PathBuf::from),
            Err(code) => return code,
        };
        // SAFETY: as above.
        let name = match unsafe { c_str(name, "kds_connect: the name") } {
            Ok(n) => n.unwrap_or_default().to_owned(),
            Err(code) => return code,
        };
        let options = AppOptions {
            width,
            height,
            name,
            guis: true,
        };
        match KdsApp::attach(&path, &options) {
            Ok(app) => {
                out = Box::into_raw(Box::new(KdsHandle::new(app)));
                KDS_OK
            }
            Err(e) => fail_client(&e),
        }
    });
    out
}

/// The app's window on the screen.
///
/// # Safety
/// `k` is NULL or a live handle; `out` is NULL or valid for one `kds_rect` write.
#[no_mangle]
pub unsafe extern "C" fn kds_window(k: *const KdsHandle, out: *mut KdsRect) -> c_int {
    guard("kds_window", || {
        // SAFETY: the caller's promise about `k`.
        let h = match unsafe { handle(k, "kds_window") } {
            Ok(h) => h,
            Err(code) => return code,
        };
        if out.is_null() {
            return fail(KDS_ERR_NULL, 0, "kds_window: the output kds_rect is NULL");
        }
        let r = match h.with_app("kds_window", KdsApp::window) {
            Ok(r) => r,
            Err(code) => return code,
        };
        // SAFETY: checked non-NULL; the caller promises it is valid for a write.
        unsafe {
            out.write(KdsRect {
                x: r.x,
                y: r.y,
                width: r.width,
                height: r.height,
            });
        }
        KDS_OK
    })
}

/// The app's id, the same in the ESM and the display server: index in the low 32 bits,
/// generation in the high 32 (`lull kds` writes it `app<index>.<generation>`). `KDS_NO_APP` for
/// a NULL handle or one being detached.
///
/// # Safety
/// `k` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn kds_app_id(k: *const KdsHandle) -> u64 {
    // SAFETY: the caller's promise about `k`.
    unsafe { handle(k, "kds_app_id") }
        .and_then(|h| h.with_app("kds_app_id", |a| app_id_bits(a.app())))
        .unwrap_or(KDS_NO_APP)
}

/// Builds the surface of a `kds_compose` call, checking every bound before reading pixels.
///
/// # Safety
/// As [`kds_compose`].
unsafe fn surface_of(
    width: u32,
    height: u32,
    layers: *const KdsLayer,
    n: u32,
) -> Result<Surface, c_int> {
    if n > KDS_MAX_LAYERS {
        return Err(fail(
            KDS_ERR_BAD_ARG,
            0,
            &format!("kds_compose: {n} layers is more than KDS_MAX_LAYERS ({KDS_MAX_LAYERS})"),
        ));
    }
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(fail(
            KDS_ERR_BAD_ARG,
            0,
            &format!("kds_compose: a {width}x{height} surface is more than {MAX_PIXELS} pixels"),
        ));
    }
    let given: &[KdsLayer] = if n == 0 {
        &[]
    } else if layers.is_null() {
        return Err(fail(
            KDS_ERR_NULL,
            0,
            &format!("kds_compose: layers is NULL but n is {n}"),
        ));
    } else {
        // SAFETY: non-NULL; the caller promises `n` readable layers.
        unsafe { std::slice::from_raw_parts(layers, n as usize) }
    };
    let mut wire_bytes = COMPOSE_HEAD_BYTES;
    let mut out = Vec::with_capacity(given.len());
    for (i, l) in given.iter().enumerate() {
        let area = u64::from(l.width) * u64::from(l.height);
        let fill = if l.pixels.is_null() {
            wire_bytes += LAYER_HEAD_BYTES + PIXEL_BYTES;
            Fill::Solid(l.argb)
        } else {
            wire_bytes += LAYER_HEAD_BYTES + area * PIXEL_BYTES;
            if area > MAX_PIXELS || wire_bytes > u64::from(MAX_DATA_LEN) {
                return Err(fail(
                    KDS_ERR_BAD_ARG,
                    0,
                    &format!(
                        "kds_compose: layer {i} ({}x{} pixels) makes the request larger than the {MAX_DATA_LEN} bytes a command may carry",
                        l.width, l.height
                    ),
                ));
            }
            // SAFETY: non-NULL; the caller promises width × height readable pixels, and the
            // count is bounded above.
            Fill::Pixels(unsafe { std::slice::from_raw_parts(l.pixels, area as usize) }.to_vec())
        };
        out.push(Layer {
            z: l.z,
            rect: Rect::new(l.x, l.y, l.width, l.height),
            fill,
        });
    }
    if wire_bytes > u64::from(MAX_DATA_LEN) {
        return Err(fail(
            KDS_ERR_BAD_ARG,
            0,
            &format!("kds_compose: the request is larger than the {MAX_DATA_LEN} bytes a command may carry"),
        ));
    }
    Ok(Surface {
        width,
        height,
        layers: out,
    })
}

/// `COMPOSE` (figure 16): flattens `n` layers on a `width × height` surface into the server's
/// slot `surface_id`. Gated as drawing (guiS table 1): blocks while the window cannot be seen.
///
/// # Safety
/// `k` is NULL or a live handle; `layers` is NULL or points to `n` layers, each with `pixels`
/// NULL or pointing to `width × height` values.
#[no_mangle]
pub unsafe extern "C" fn kds_compose(
    k: *const KdsHandle,
    surface_id: u32,
    width: u32,
    height: u32,
    layers: *const KdsLayer,
    n: u32,
) -> c_int {
    guard("kds_compose", || {
        // SAFETY: the caller's promise about `k`.
        let h = match unsafe { handle(k, "kds_compose") } {
            Ok(h) => h,
            Err(code) => return code,
        };
        // SAFETY: the caller's promise about `layers`.
        let surface = match unsafe { surface_of(width, height, layers, n) } {
            Ok(s) => s,
            Err(code) => return code,
        };
        // The context holds the runtime's shared state itself: the handle's lock is not held
        // while the call waits at the gate.
        match h.with_app("kds_compose", |a| a.ctx(ThreadCategory::Drawing)) {
            Ok(ctx) => result(ctx.compose(surface_id, surface)),
            Err(code) => code,
        }
    })
}

/// `DRAW` (figure 17): the flattened surface `surface_id` at `(x, y)` of the window; refused
/// whole (`KDS_REFUSED_OUTSIDE_WINDOW`) if any pixel would leave it. Gated as drawing.
///
/// # Safety
/// `k` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn kds_draw(k: *const KdsHandle, surface_id: u32, x: i32, y: i32) -> c_int {
    guard("kds_draw", || {
        // SAFETY: the caller's promise about `k`.
        let h = match unsafe { handle(k, "kds_draw") } {
            Ok(h) => h,
            Err(code) => return code,
        };
        // As in kds_compose, the gate is waited at without the handle's lock.
        match h.with_app("kds_draw", |a| a.ctx(ThreadCategory::Drawing)) {
            Ok(ctx) => result(ctx.draw(surface_id, x, y)),
            Err(code) => code,
        }
    })
}

/// `kds_draw_item` of `lull.h`: one draw of [`kds_draw_batch`].
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct KdsDrawItem {
    pub surface_id: u32,
    pub x: i32,
    pub y: i32,
}

/// `DRAW_BATCH`: the `n` draws in order as one message and one reply, refused whole
/// (nothing drawn) if any one would be. Gated as drawing; `n` 0 does nothing.
///
/// # Safety
/// `k` is NULL or a live handle; `items` is NULL or points to `n` draws.
#[no_mangle]
pub unsafe extern "C" fn kds_draw_batch(
    k: *const KdsHandle,
    items: *const KdsDrawItem,
    n: u32,
) -> c_int {
    guard("kds_draw_batch", || {
        // SAFETY: the caller's promise about `k`.
        let h = match unsafe { handle(k, "kds_draw_batch") } {
            Ok(h) => h,
            Err(code) => return code,
        };
        if n > KDS_MAX_DRAW_BATCH {
            return fail(
                KDS_ERR_BAD_ARG,
                0,
                &format!("kds_draw_batch: {n} draws is more than KDS_MAX_DRAW_BATCH ({KDS_MAX_DRAW_BATCH})"),
            );
        }
        let given: &[KdsDrawItem] = if n == 0 {
            &[]
        } else if items.is_null() {
            return fail(
                KDS_ERR_NULL,
                0,
                &format!("kds_draw_batch: items is NULL but n is {n}"),
            );
        } else {
            // SAFETY: non-NULL; the caller promises `n` readable draws.
            unsafe { std::slice::from_raw_parts(items, n as usize) }
        };
        let batch: Vec<lull_kds::wire::DrawItem> = given
            .iter()
            .map(|d| lull_kds::wire::DrawItem {
                surface_id: d.surface_id,
                x: d.x,
                y: d.y,
            })
            .collect();
        match h.with_app("kds_draw_batch", |a| a.ctx(ThreadCategory::Drawing)) {
            Ok(ctx) => result(ctx.draw_batch(&batch)),
            Err(code) => code,
        }
    })
}

/// Frame pacing: blocks until the app may draw its next frame — at once if it drew none in
/// the screen's current refresh period, else until the server's `FRAME_DONE` at the next
/// boundary (held while the window cannot be seen) — and counts the frame. Call it before
/// drawing each frame; draw only when something changed.
///
/// # Safety
/// `k` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn kds_next_frame(k: *const KdsHandle) -> c_int {
    guard("kds_next_frame", || {
        // SAFETY: the caller's promise about `k`.
        let h = match unsafe { handle(k, "kds_next_frame") } {
            Ok(h) => h,
            Err(code) => return code,
        };
        // As in kds_draw: waited for without the handle's lock.
        match h.with_app("kds_next_frame", |a| a.ctx(ThreadCategory::Drawing)) {
            Ok(ctx) => result(ctx.next_frame()),
            Err(code) => code,
        }
    })
}

/// `esm_register` through the display server (figure 19): `handler(event, user)` runs on the
/// app's event thread for every event of `kind` (an `ESM_KIND_*`); NULL unregisters. The server
/// sets input handlers aside while the app is in the background.
///
/// # Safety
/// `k` is NULL or a live handle; `user` must stay valid, and safe to use on the event thread,
/// while the handler is registered.
#[no_mangle]
pub unsafe extern "C" fn kds_esm_register(
    k: *const KdsHandle,
    kind: u16,
    handler: KdsEventHandler,
    user: *mut c_void,
) -> c_int {
    guard("kds_esm_register", || {
        // SAFETY: the caller's promise about `k`.
        let h = match unsafe { handle(k, "kds_esm_register") } {
            Ok(h) => h,
            Err(code) => return code,
        };
        let Some(kind) = EventKind::from_u16(kind) else {
            return fail(
                KDS_ERR_BAD_ARG,
                0,
                &format!("kds_esm_register: unknown event kind {kind}"),
            );
        };
        let r = h.with_app("kds_esm_register", |a| {
            let Some(f) = handler else {
                return a.esm_unregister(kind);
            };
            let user = UserPtr(user);
            a.esm_register(kind, move |ev| {
                ON_KDS_THREAD.with(|t| t.set(true));
                let e = crate::capi::to_c(ev);
                // SAFETY: the caller registered a valid function; `user` is theirs to vouch for.
                unsafe { f(&raw const e, user.get()) };
            })
            .map(|_| ())
        });
        r.map_or_else(|code| code, result)
    })
}

/// Hands `f(ctx, user)` to the app's drawing, foreground or background thread (figure 19). A
/// function the thread has not started yet is replaced; a running one sees
/// `kds_thread_should_stop`. `f` should call `kds_thread_gate` before each piece of work.
///
/// # Safety
/// `k` is NULL or a live handle; `user` must stay valid, and safe to use on that thread, until
/// `f` returns.
#[no_mangle]
pub unsafe extern "C" fn kds_run_thread(
    k: *const KdsHandle,
    category: c_int,
    f: KdsThreadFn,
    user: *mut c_void,
) -> c_int {
    guard("kds_run_thread", || {
        // SAFETY: the caller's promise about `k`.
        let h = match unsafe { handle(k, "kds_run_thread") } {
            Ok(h) => h,
            Err(code) => return code,
        };
        let c = match self::category(category) {
            Ok(c) => c,
            Err(code) => return code,
        };
        let Some(f) = f else {
            return fail(KDS_ERR_NULL, 0, "kds_run_thread: the function is NULL");
        };
        let user = UserPtr(user);
        let r = h.with_app("kds_run_thread", |a| {
            a.run_on(c, move |ctx| {
                ON_KDS_THREAD.with(|t| t.set(true));
                // The C side only reads through the pointer, via kds_thread_* calls.
                let p = std::ptr::from_ref(ctx).cast_mut();
                // SAFETY: the caller handed a valid function; `ctx` outlives the call.
                unsafe { f(p, user.get()) };
            })
        });
        r.map_or_else(|code| code, result)
    })
}

/// guiS table 1 for the calling KDS thread: blocks while its category may not run. 1: run; 0:
/// return now (the app is detaching or the function was replaced); `KDS_ERR_NULL` for NULL.
///
/// # Safety
/// `ctx` is NULL or the context passed to the running function.
#[no_mangle]
pub unsafe extern "C" fn kds_thread_gate(ctx: *const KdsThread) -> c_int {
    guard("kds_thread_gate", || {
        // SAFETY: the caller's promise about `ctx`.
        match unsafe { ctx.as_ref() } {
            Some(c) => c_int::from(c.gate()),
            None => fail(KDS_ERR_NULL, 0, "kds_thread_gate: kds_thread_t is NULL"),
        }
    })
}

/// 1 when the running function should return (the app is detaching or the function was
/// replaced), 0 otherwise; `KDS_ERR_NULL` for NULL. Never blocks.
///
/// # Safety
/// `ctx` is NULL or the context passed to the running function.
#[no_mangle]
pub unsafe extern "C" fn kds_thread_should_stop(ctx: *const KdsThread) -> c_int {
    guard("kds_thread_should_stop", || {
        // SAFETY: the caller's promise about `ctx`.
        match unsafe { ctx.as_ref() } {
            Some(c) => c_int::from(c.should_stop()),
            None => fail(
                KDS_ERR_NULL,
                0,
                "kds_thread_should_stop: kds_thread_t is NULL",
            ),
        }
    })
}

/// The window's state as last pushed by the server.
///
/// # Safety
/// `k` is NULL or a live handle; `out` is NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn kds_window_state(k: *const KdsHandle, out: *mut KdsWindowState) -> c_int {
    guard("kds_window_state", || {
        // SAFETY: the caller's promise about `k`.
        let h = match unsafe { handle(k, "kds_window_state") } {
            Ok(h) => h,
            Err(code) => return code,
        };
        if out.is_null() {
            return fail(
                KDS_ERR_NULL,
                0,
                "kds_window_state: the output kds_window_state_t is NULL",
            );
        }
        let state = match h.with_app("kds_window_state", KdsApp::window_state) {
            Ok(s) => s,
            Err(code) => return code,
        };
        // SAFETY: checked non-NULL; the caller promises it is valid for a write.
        unsafe { out.write(state.into()) };
        KDS_OK
    })
}

/// `DETACH`: the window and registrations go, the KDS threads stop (a running function must
/// return once told), and the handle is freed — also when the server was already gone. On one
/// of the app's KDS threads it is refused with `KDS_ERR_WRONG_THREAD` and frees nothing.
///
/// The KDS threads may still be using the handle when it is called (a drawing function inside
/// `kds_compose`, a handler inside `kds_window_state`): the handle is only shared until they
/// have all returned. The app is first taken out from under the handle's lock — so a call the
/// threads make from then on fails with `KDS_ERR_STOPPING`, and a call blocked at a gate
/// returns it — then the threads are stopped and joined, and only then is the handle freed.
/// A second `kds_detach` that reaches the handle while the first runs returns
/// `KDS_ERR_STOPPING` and frees nothing.
///
/// # Safety
/// `k` is NULL or a live handle. Once this is called, only the app's own KDS threads may still
/// use `k` (the library waits for them): no other thread may be in a call on `k` or start one
/// — the library cannot wait for a call it has not seen yet — and nothing may use `k` after
/// this returns.
#[no_mangle]
pub unsafe extern "C" fn kds_detach(k: *mut KdsHandle) -> c_int {
    guard("kds_detach", || {
        // SAFETY: the caller's promise about `k`. Only this shared reference is used until every
        // KDS thread, which may hold one too, has returned.
        let h = match unsafe { handle(k, "kds_detach") } {
            Ok(h) => h,
            Err(code) => return code,
        };
        if ON_KDS_THREAD.with(Cell::get) {
            return fail(
                KDS_ERR_WRONG_THREAD,
                0,
                "kds_detach: called on one of the app's KDS threads, which it waits for",
            );
        }
        // Taken out under the lock, which is released at once: the KDS threads may need it
        // (to fail with KDS_ERR_STOPPING) before they can return.
        let taken = h.lock().take();
        let Some(app) = taken else {
            return fail(
                KDS_ERR_STOPPING,
                0,
                "kds_detach: the app is already detaching (kds_detach was called on another thread)",
            );
        };
        // Stops and joins every KDS thread. A panic in here unwinds past the free below: the
        // handle is leaked rather than freed under threads that may still run.
        let r = app.detach().map(|_| ());
        // The KDS threads are done with the lock (joined above); a call another thread made
        // against the contract is at least not freed from under while it holds the lock.
        drop(h.lock());
        // SAFETY: `k` came from Box::into_raw in kds_connect and is freed only here, by the one
        // kds_detach that took the app (any other returned above). Every KDS thread has been
        // joined and `h` is not used again, so no reference to the handle is left but the
        // caller's pointer, which the contract says no other thread uses any more.
        drop(unsafe { Box::from_raw(k) });
        result(r)
    })
}

/// The code of the calling thread's last failed `kds_*` call (`KDS_OK` if none failed).
#[no_mangle]
pub extern "C" fn kds_last_error() -> c_int {
    LAST.with(|l| l.borrow().code)
}

/// After `KDS_ERR_REFUSED`: the server's reason (a `KDS_REFUSED_*`); 0 otherwise.
#[no_mangle]
pub extern "C" fn kds_last_refusal() -> c_int {
    LAST.with(|l| l.borrow().refusal)
}

/// A message about the calling thread's last failure ("" if none), valid until its next
/// failing `kds_*` call.
#[no_mangle]
pub extern "C" fn kds_last_error_message() -> *const c_char {
    LAST.with(|l| l.borrow().message.as_ptr())
}

/// A static description of a `KDS_*` code.
#[no_mangle]
pub extern "C" fn kds_strerror(code: c_int) -> *const c_char {
    let s: &'static CStr = match code {
        KDS_OK => c"ok",
        KDS_ERR_CONNECT => c"cannot connect to the display server: nothing answers on its socket (is lulld running?)",
        KDS_ERR_PERMISSION => c"not allowed to connect to the display server's socket: run as a member of its group (input, as packaged) or as root",
        KDS_ERR_SERVER_GONE => c"the display server closed the connection",
        KDS_ERR_PROTOCOL => c"the display server sent an unexpected or malformed message",
        KDS_ERR_REFUSED => c"the display server refused the request",
        KDS_ERR_NULL => c"a required pointer is NULL",
        KDS_ERR_BAD_ARG => c"an argument is out of range",
        KDS_ERR_BAD_STRING => c"a path or name is not valid UTF-8",
        KDS_ERR_IO => c"socket error talking to the display server",
        KDS_ERR_STOPPING => c"the app is detaching or the thread's function was replaced",
        KDS_ERR_WRONG_THREAD => c"kds_detach called on one of the app's KDS threads",
        KDS_ERR_INTERNAL => c"internal error in the KDS library",
        _ => c"unknown error code",
    };
    s.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_kds::wire::ErrorCode;
    use lull_model::{AppEvent, EventSeq, Payload, ThreadCategory};

    #[test]
    fn app_ids_round_trip_through_64_bits() {
        let a = AppId {
            index: 3,
            generation: 7,
        };
        assert_eq!(app_id_bits(a), 7 << 32 | 3);
        assert_eq!(app_id_from_bits(app_id_bits(a)), a);
        assert_ne!(
            app_id_bits(AppId {
                index: u32::MAX,
                generation: u32::MAX - 1
            }),
            KDS_NO_APP
        );
    }

    #[test]
    fn thread_numbers_are_the_models() {
        for (n, c) in [
            (KDS_THREAD_EVENT, ThreadCategory::Event),
            (KDS_THREAD_DRAWING, ThreadCategory::Drawing),
            (KDS_THREAD_FOREGROUND, ThreadCategory::Foreground),
            (KDS_THREAD_BACKGROUND, ThreadCategory::Background),
        ] {
            assert_eq!(ThreadCategory::ALL[n as usize], c);
        }
    }

    #[test]
    fn refusals_carry_the_servers_code() {
        let e = KdsClientError::Refused {
            request: 4,
            code: Some(ErrorCode::OutsideWindow),
            message: "outside".into(),
        };
        assert_eq!(fail_client(&e), KDS_ERR_REFUSED);
        assert_eq!(kds_last_refusal(), ErrorCode::OutsideWindow as c_int);
        // SAFETY: the message is a NUL-terminated string owned by this thread.
        let m = unsafe { CStr::from_ptr(kds_last_error_message()) };
        assert!(m.to_str().unwrap().contains("outside"));
    }

    #[test]
    fn events_convert_as_for_esm_handlers() {
        let e = crate::capi::to_c(&AppEvent {
            seq: EventSeq(5),
            kind: EventKind::Key,
            payload: Payload::Key {
                code: 30,
                pressed: true,
            },
            injected_ns: 9,
        });
        assert_eq!((e.seq, e.injected_ns, e.kind, e.a, e.b), (5, 9, 3, 30, 1));
    }

    #[test]
    fn every_code_has_a_message() {
        for code in -11..=0 {
            // SAFETY: static NUL-terminated strings.
            let s = unsafe { CStr::from_ptr(kds_strerror(code)) };
            assert_ne!(s.to_str().unwrap(), "unknown error code", "code {code}");
        }
    }
}
