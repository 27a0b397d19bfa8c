//! The C ABI of the client library (`include/lull.h`): the seed's `esm_register(kind, handler)`
//! and `esm_wait()`, plus connect/disconnect and error strings (for every `ESM_*` code, the
//! producer's of [`crate::capi_producer`] too).
//!
//! The connection belongs to the calling thread — the app's event thread, which registers its
//! handlers and then loops in `esm_wait()`. `esm_connect` is optional: the first `esm_register`
//! or `esm_wait` connects to `$LULL_SOCKET`, else the default socket.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr};
use std::path::PathBuf;

use lull_model::{AppEvent, EventKind, Payload};

use crate::client::{ClientError, EsmClient, Handled};

/// `esm_wait` ran a handler.
pub const ESM_OK: c_int = 0;
/// `esm_wait` received the overflow marker (see `esm_last_overflow`); no handler ran.
pub const ESM_OVERFLOW: c_int = 1;
pub const ESM_ERR_CONNECT: c_int = -1;
pub const ESM_ERR_DAEMON_GONE: c_int = -2;
pub const ESM_ERR_PROTOCOL: c_int = -3;
pub const ESM_ERR_BAD_KIND: c_int = -4;
pub const ESM_ERR_IO: c_int = -5;
pub const ESM_ERR_BAD_PATH: c_int = -6;
/// An `esm_*` call from inside a handler (the connection is busy running that handler).
pub const ESM_ERR_REENTRANT: c_int = -7;
/// An event's fields do not fit its kind (a key code above 65535, a negative channel, length or
/// timer id); a producer's (`esm_producer_*`).
pub const ESM_ERR_BAD_EVENT: c_int = -8;
/// A NULL pointer where one is required, or a count out of range; a producer's.
pub const ESM_ERR_BAD_ARG: c_int = -9;
/// The daemon's socket refused this user (EACCES): a permission problem, not a missing daemon.
pub const ESM_ERR_PERMISSION: c_int = -10;

/// `struct lull_event` of `lull.h`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LullEvent {
    pub seq: u64,
    /// CLOCK_MONOTONIC nanoseconds at injection; latency = handler start − this.
    pub injected_ns: u64,
    /// An `ESM_KIND_*`.
    pub kind: u16,
    /// Touch: x, y. Key: code, pressed. Mouse: dx, dy, buttons. Net: channel, len. Timer: id.
    pub a: i32,
    pub b: i32,
    pub c: i32,
}

/// `esm_handler` of `lull.h`.
pub type EsmHandler = Option<extern "C" fn(*const LullEvent)>;

thread_local! {
    static CLIENT: RefCell<Option<EsmClient>> = const { RefCell::new(None) };
    static LAST_OVERFLOW: RefCell<(u64, u64, u64)> = const { RefCell::new((0, 0, 0)) };
}

/// The `ESM_ERR_*` code of a client error (the producer's C ABI reports the same codes).
pub(crate) fn code(e: &ClientError) -> c_int {
    match e {
        ClientError::Connect { source, .. }
            if source.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            ESM_ERR_PERMISSION
        }
        ClientError::Connect { .. } | ClientError::ConnectTimeout { .. } => ESM_ERR_CONNECT,
        ClientError::DaemonGone | ClientError::Rejected(_) => ESM_ERR_DAEMON_GONE,
        ClientError::Protocol(_) | ClientError::Unexpected(..) | ClientError::NoWaitCell(_) => {
            ESM_ERR_PROTOCOL
        }
        ClientError::Io(_) => ESM_ERR_IO,
    }
}

/// `struct lull_event` of an event: what every C handler, ESM or KDS, receives.
#[must_use]
pub fn to_c(ev: &AppEvent) -> LullEvent {
    let (a, b, c) = match ev.payload {
        Payload::Point { x, y } => (x, y, 0),
        Payload::Key { code, pressed } => (i32::from(code), i32::from(pressed), 0),
        Payload::Mouse { dx, dy, buttons } => (dx, dy, buttons as i32),
        Payload::Net { channel, len } => (channel as i32, len as i32, 0),
        Payload::Timer { id } => (id as i32, 0, 0),
    };
    LullEvent {
        seq: ev.seq.0,
        injected_ns: ev.injected_ns,
        kind: ev.kind as u16,
        a,
        b,
        c,
    }
}

/// Where a thread connects without a path: `$LULL_SOCKET`, else the default socket.
pub(crate) fn default_path() -> PathBuf {
    std::env::var_os("LULL_SOCKET").map_or_else(lull_os::sys::default_socket_path, PathBuf::from)
}

fn with_client(f: impl FnOnce(&mut EsmClient) -> c_int) -> c_int {
    CLIENT.with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return ESM_ERR_REENTRANT;
        };
        if slot.is_none() {
            match EsmClient::connect(&default_path()) {
                Ok(c) => *slot = Some(c),
                Err(e) => return code(&e),
            }
        }
        f(slot.as_mut().expect("connected above"))
    })
}

/// Connects this thread to the daemon at `path` (NULL: `$LULL_SOCKET` or the default socket),
/// replacing an earlier connection. Returns `ESM_OK` or an `ESM_ERR_*`.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string valid for the call.
#[no_mangle]
pub unsafe extern "C" fn esm_connect(path: *const c_char) -> c_int {
    let path = if path.is_null() {
        default_path()
    } else {
        // SAFETY: the caller promises a valid NUL-terminated string.
        match unsafe { CStr::from_ptr(path) }.to_str() {
            Ok(s) => PathBuf::from(s),
            Err(_) => return ESM_ERR_BAD_PATH,
        }
    };
    match EsmClient::connect(&path) {
        Ok(c) => CLIENT.with(|cell| match cell.try_borrow_mut() {
            Ok(mut slot) => {
                *slot = Some(c);
                ESM_OK
            }
            Err(_) => ESM_ERR_REENTRANT,
        }),
        Err(e) => code(&e),
    }
}

/// The seed's `esm_register(event, handler)`: `handler` runs in `esm_wait` for every event of
/// `kind`; a NULL handler unregisters. Returns `ESM_OK` or an `ESM_ERR_*`.
#[no_mangle]
pub extern "C" fn esm_register(kind: u16, handler: EsmHandler) -> c_int {
    let Some(kind) = EventKind::from_u16(kind) else {
        return ESM_ERR_BAD_KIND;
    };
    with_client(|c| {
        let r = match handler {
            Some(h) => c
                .register(kind, move |ev| {
                    let e = to_c(ev);
                    h(&raw const e);
                })
                .map(|_| ()),
            None => c.unregister(kind),
        };
        r.map_or_else(|e| code(&e), |()| ESM_OK)
    })
}

/// The seed's `esm_wait()`: blocks until the daemon pushes an event and runs its handler
/// (`ESM_OK`), or receives the overflow marker (`ESM_OVERFLOW`); `ESM_ERR_DAEMON_GONE` when the
/// daemon went away.
#[no_mangle]
pub extern "C" fn esm_wait() -> c_int {
    with_client(|c| match c.wait() {
        Ok(Handled::Event { .. }) => ESM_OK,
        Ok(Handled::Overflow {
            dropped,
            first,
            last,
        }) => {
            LAST_OVERFLOW.with(|o| *o.borrow_mut() = (dropped, first.0, last.0));
            ESM_OVERFLOW
        }
        Err(e) => code(&e),
    })
}

/// After `esm_wait` returned `ESM_OVERFLOW`: how many events were lost and their sequence range.
///
/// # Safety
/// Each pointer is NULL or valid for one `uint64_t` write.
#[no_mangle]
pub unsafe extern "C" fn esm_last_overflow(dropped: *mut u64, first: *mut u64, last: *mut u64) {
    let (d, f, l) = LAST_OVERFLOW.with(|o| *o.borrow());
    for (p, v) in [(dropped, d), (first, f), (last, l)] {
        if !p.is_null() {
            // SAFETY: the caller promises a valid pointer or NULL (checked).
            unsafe { p.write(v) };
        }
    }
}

/// Closes this thread's connection; the daemon drops the app's registrations and queue.
/// Returns `ESM_OK`, or `ESM_ERR_REENTRANT` from inside a handler.
#[no_mangle]
pub extern "C" fn esm_disconnect() -> c_int {
    CLIENT.with(|cell| match cell.try_borrow_mut() {
        Ok(mut slot) => {
            *slot = None;
            ESM_OK
        }
        Err(_) => ESM_ERR_REENTRANT,
    })
}

/// A static description of an `ESM_*` code.
#[no_mangle]
pub extern "C" fn esm_strerror(code: c_int) -> *const c_char {
    let s: &'static CStr = match code {
        ESM_OK => c"ok",
        ESM_OVERFLOW => c"events were lost: the app's private queue overflowed",
        ESM_ERR_CONNECT => c"cannot connect to the ESM daemon: nothing answers on its socket (is lulld running?)",
        ESM_ERR_PERMISSION => c"not allowed to connect to the ESM daemon's socket: run as a member of its group (input, as packaged) or as root",
        ESM_ERR_DAEMON_GONE => c"the ESM daemon closed the connection",
        ESM_ERR_PROTOCOL => c"the ESM daemon sent a malformed message",
        ESM_ERR_BAD_KIND => c"unknown event kind",
        ESM_ERR_IO => c"socket error talking to the ESM daemon",
        ESM_ERR_BAD_PATH => c"socket path is not valid UTF-8",
        ESM_ERR_REENTRANT => c"esm_* called from inside a handler",
        ESM_ERR_BAD_EVENT => c"the event's fields do not fit its kind",
        ESM_ERR_BAD_ARG => c"a NULL pointer or a count out of range",
        _ => c"unknown error code",
    };
    s.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_refused_permission_has_its_own_code() {
        let err = |kind| ClientError::Connect {
            path: PathBuf::from("/run/lull/esm.sock"),
            source: std::io::Error::from(kind),
        };
        assert_eq!(
            code(&err(std::io::ErrorKind::PermissionDenied)),
            ESM_ERR_PERMISSION
        );
        assert_eq!(code(&err(std::io::ErrorKind::NotFound)), ESM_ERR_CONNECT);
    }

    #[test]
    fn every_code_is_described() {
        // SAFETY: esm_strerror returns a static, NUL-terminated string.
        let describe = |c| unsafe { CStr::from_ptr(esm_strerror(c)) };
        let unknown = describe(i32::MIN);
        for c in [
            ESM_OK,
            ESM_OVERFLOW,
            ESM_ERR_CONNECT,
            ESM_ERR_DAEMON_GONE,
            ESM_ERR_PROTOCOL,
            ESM_ERR_BAD_KIND,
            ESM_ERR_IO,
            ESM_ERR_BAD_PATH,
            ESM_ERR_REENTRANT,
            ESM_ERR_BAD_EVENT,
            ESM_ERR_BAD_ARG,
            ESM_ERR_PERMISSION,
        ] {
            assert_ne!(describe(c), unknown, "{c}");
        }
    }
}
