//! The C ABI of a data-plane producer (`esm_producer_*` in `include/lull.h`): a source outside
//! the daemon that writes events straight into the rings of the apps registered for them
//! ([`crate::producer::EsmProducer`]).
//!
//! Unlike an app's connection (one per thread, in [`crate::capi`]), a producer is a handle: the
//! caller may keep several and move one between threads, using each from one thread at a time.

use std::ffi::{c_char, c_int, CStr};
use std::path::PathBuf;

use lull_model::{EventKind, RawEvent, TouchPhase};
use lull_os::sys;

use crate::capi::{
    code, default_path, LullEvent, ESM_ERR_BAD_ARG, ESM_ERR_BAD_EVENT, ESM_ERR_BAD_KIND,
    ESM_ERR_BAD_PATH, ESM_OK,
};
use crate::producer::EsmProducer;

/// Most events one `esm_producer_push_burst` takes (a bound on what one call may hold in
/// memory: 4096 × 64-byte records is 256 KiB, four times a default ring).
pub const ESM_MAX_BURST: u32 = 4096;

/// `esm_producer_t` of `lull.h`.
#[derive(Debug)]
pub struct ProducerHandle {
    producer: EsmProducer,
    /// A burst's events converted, kept to reuse the allocation.
    raws: Vec<(RawEvent, u64)>,
}

/// `struct esm_producer_counters` of `lull.h`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProducerCountersC {
    /// Events pushed.
    pub events: u64,
    /// Ring pushes (one per event per routed app) that queued the event …
    pub queued: u64,
    /// … and that dropped it (the ring was full; counted and marked in that ring).
    pub dropped: u64,
    /// Events no app was routed for.
    pub unrouted: u64,
    /// Rings received from the daemon, and rings whose route it ended.
    pub rings: u64,
    pub rings_closed: u64,
    /// Overflow markers written into the rings.
    pub markers: u64,
    /// Eventfd writes (wake-ups of waiting apps).
    pub wakes: u64,
    /// Records the routed apps have yet to read; `UINT64_MAX` when an app's index is impossible.
    pub unread: u64,
}

/// The raw event a C event stands for: its kind and the fields `struct lull_event` documents.
fn raw_of(ev: &LullEvent) -> Result<RawEvent, c_int> {
    let kind = EventKind::from_u16(ev.kind).ok_or(ESM_ERR_BAD_KIND)?;
    let unsigned = |v: i32| u32::try_from(v).map_err(|_| ESM_ERR_BAD_EVENT);
    let touch = |phase| RawEvent::Touch {
        phase,
        x: ev.a,
        y: ev.b,
    };
    Ok(match kind {
        EventKind::TouchMotion => touch(TouchPhase::Move),
        EventKind::TouchPress => touch(TouchPhase::Down),
        EventKind::TouchRelease => touch(TouchPhase::Up),
        EventKind::Key => RawEvent::Key {
            code: u16::try_from(ev.a).map_err(|_| ESM_ERR_BAD_EVENT)?,
            pressed: ev.b != 0,
        },
        EventKind::Mouse => RawEvent::Mouse {
            dx: ev.a,
            dy: ev.b,
            buttons: unsigned(ev.c)?,
        },
        EventKind::NetMessage => RawEvent::Net {
            channel: unsigned(ev.a)?,
            len: unsigned(ev.b)?,
        },
        EventKind::Timer => RawEvent::Timer {
            id: unsigned(ev.a)?,
        },
    })
}

/// Connects to the daemon at `path` (NULL: `$LULL_SOCKET` or the default socket) as a producer
/// of the `n_kinds` kinds at `kinds`; returns once the daemon has routed every app registered
/// for them now, or NULL with `*error` (if not NULL) set to an `ESM_ERR_*`.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `kinds` points to `n_kinds` values; `error` is
/// NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn esm_producer_connect(
    path: *const c_char,
    kinds: *const u16,
    n_kinds: u32,
    error: *mut c_int,
) -> *mut ProducerHandle {
    let fail = |e: c_int| {
        if !error.is_null() {
            // SAFETY: the caller promises a valid pointer or NULL (checked).
            unsafe { error.write(e) };
        }
        std::ptr::null_mut()
    };
    if kinds.is_null() || n_kinds == 0 || n_kinds as usize > EventKind::COUNT {
        return fail(ESM_ERR_BAD_ARG);
    }
    // SAFETY: the caller promises `n_kinds` values at `kinds` (checked non-NULL).
    let raw_kinds = unsafe { std::slice::from_raw_parts(kinds, n_kinds as usize) };
    let Some(kinds) = raw_kinds
        .iter()
        .map(|&k| EventKind::from_u16(k))
        .collect::<Option<Vec<_>>>()
    else {
        return fail(ESM_ERR_BAD_KIND);
    };
    let path = if path.is_null() {
        default_path()
    } else {
        // SAFETY: the caller promises a valid NUL-terminated string.
        match unsafe { CStr::from_ptr(path) }.to_str() {
            Ok(s) => PathBuf::from(s),
            Err(_) => return fail(ESM_ERR_BAD_PATH),
        }
    };
    match EsmProducer::connect(&path, &kinds) {
        Ok(producer) => {
            if !error.is_null() {
                // SAFETY: as above.
                unsafe { error.write(ESM_OK) };
            }
            Box::into_raw(Box::new(ProducerHandle {
                producer,
                raws: Vec::new(),
            }))
        }
        Err(e) => fail(code(&e)),
    }
}

/// Pushes `n` events that arrived together into the rings of the apps routed for their kinds,
/// with one publication and at most one wake-up per ring; an `injected_ns` of 0 is stamped with
/// `CLOCK_MONOTONIC` now, `seq` is ignored (the producer numbers events). Never blocks: a full
/// ring drops the event, counted and marked there. Returns `ESM_OK`, or an `ESM_ERR_*` with
/// nothing pushed.
///
/// # Safety
/// `p` is NULL or a live handle from `esm_producer_connect`, used by no other thread during the
/// call; `events` points to `n` events.
#[no_mangle]
pub unsafe extern "C" fn esm_producer_push_burst(
    p: *mut ProducerHandle,
    events: *const LullEvent,
    n: u32,
) -> c_int {
    if p.is_null() || (events.is_null() && n > 0) || n > ESM_MAX_BURST {
        return ESM_ERR_BAD_ARG;
    }
    // SAFETY: a live handle, not shared during the call (the caller's promise).
    let h = unsafe { &mut *p };
    let events = if n == 0 {
        &[][..]
    } else {
        // SAFETY: the caller promises `n` events at `events` (checked non-NULL).
        unsafe { std::slice::from_raw_parts(events, n as usize) }
    };
    h.raws.clear();
    let now = sys::monotonic_ns();
    for ev in events {
        match raw_of(ev) {
            Ok(raw) => h.raws.push((
                raw,
                if ev.injected_ns == 0 {
                    now
                } else {
                    ev.injected_ns
                },
            )),
            Err(e) => return e,
        }
    }
    match h.producer.push_burst(&h.raws) {
        Ok(_) => ESM_OK,
        Err(e) => code(&e),
    }
}

/// Pushes one event (`esm_producer_push_burst` of one); returns the number of rings it was
/// queued in (0 or more), or an `ESM_ERR_*`.
///
/// # Safety
/// As `esm_producer_push_burst`, with `ev` one valid event.
#[no_mangle]
pub unsafe extern "C" fn esm_producer_push(p: *mut ProducerHandle, ev: *const LullEvent) -> c_int {
    if p.is_null() || ev.is_null() {
        return ESM_ERR_BAD_ARG;
    }
    // SAFETY: the caller's promises, checked non-NULL.
    let (h, ev) = unsafe { (&mut *p, &*ev) };
    let raw = match raw_of(ev) {
        Ok(raw) => raw,
        Err(e) => return e,
    };
    let at = if ev.injected_ns == 0 {
        sys::monotonic_ns()
    } else {
        ev.injected_ns
    };
    match h.producer.push(raw, at) {
        Ok(queued) => c_int::try_from(queued).unwrap_or(c_int::MAX),
        Err(e) => code(&e),
    }
}

/// Writes the overflow markers of drop runs not yet reported, where the ring has room: 1 when
/// none is left, 0 when some wait for their app to read, `ESM_ERR_BAD_ARG` for NULL.
///
/// # Safety
/// As `esm_producer_push_burst`.
#[no_mangle]
pub unsafe extern "C" fn esm_producer_flush(p: *mut ProducerHandle) -> c_int {
    if p.is_null() {
        return ESM_ERR_BAD_ARG;
    }
    // SAFETY: the caller's promise, checked non-NULL.
    c_int::from(unsafe { &mut *p }.producer.flush())
}

/// The producer's counters, summed over every ring it has had.
///
/// # Safety
/// `p` as `esm_producer_push_burst`; `out` is NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn esm_producer_counters(
    p: *const ProducerHandle,
    out: *mut ProducerCountersC,
) -> c_int {
    if p.is_null() || out.is_null() {
        return ESM_ERR_BAD_ARG;
    }
    // SAFETY: the caller's promise, checked non-NULL.
    let producer = &unsafe { &*p }.producer;
    let c = producer.counters();
    let rc = producer.ring_counters();
    let counters = ProducerCountersC {
        events: c.events,
        queued: c.queued,
        dropped: c.dropped,
        unrouted: c.unrouted,
        rings: c.rings,
        rings_closed: c.rings_closed,
        markers: rc.markers,
        wakes: rc.wakes,
        unread: producer.unread().unwrap_or(u64::MAX),
    };
    // SAFETY: the caller's promise, checked non-NULL.
    unsafe { out.write(counters) };
    ESM_OK
}

/// Closes the producer: its rings end (apps keep what they have not read yet) and the handle
/// is freed. NULL is ignored.
///
/// # Safety
/// `p` is NULL or a live handle, not used again.
#[no_mangle]
pub unsafe extern "C" fn esm_producer_close(p: *mut ProducerHandle) {
    if !p.is_null() {
        // SAFETY: a handle from `Box::into_raw` in `esm_producer_connect`, closed once.
        drop(unsafe { Box::from_raw(p) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: u16, a: i32, b: i32, c: i32) -> LullEvent {
        LullEvent {
            seq: 0,
            injected_ns: 0,
            kind,
            a,
            b,
            c,
        }
    }

    #[test]
    fn c_events_map_to_raw_events_and_bad_fields_are_refused() {
        assert_eq!(
            raw_of(&ev(1, 3, 4, 0)),
            Ok(RawEvent::Touch {
                phase: TouchPhase::Down,
                x: 3,
                y: 4
            })
        );
        assert_eq!(
            raw_of(&ev(3, 30, 1, 0)),
            Ok(RawEvent::Key {
                code: 30,
                pressed: true
            })
        );
        assert_eq!(
            raw_of(&ev(5, 16, 100, 0)),
            Ok(RawEvent::Net {
                channel: 16,
                len: 100
            })
        );
        assert_eq!(raw_of(&ev(99, 0, 0, 0)), Err(ESM_ERR_BAD_KIND));
        assert_eq!(raw_of(&ev(3, 70_000, 0, 0)), Err(ESM_ERR_BAD_EVENT));
        assert_eq!(raw_of(&ev(5, -1, 0, 0)), Err(ESM_ERR_BAD_EVENT));
        assert_eq!(raw_of(&ev(6, -5, 0, 0)), Err(ESM_ERR_BAD_EVENT));
        // Every kind the interpreter knows round-trips to the same kind.
        for k in 0..EventKind::COUNT as u16 {
            let raw = raw_of(&ev(k, 1, 1, 1)).unwrap();
            assert_eq!(lull_esm::interpret(raw).0 as u16, k);
        }
    }

    #[test]
    fn null_and_out_of_range_arguments_are_refused() {
        let mut err = 0;
        // SAFETY: NULL kinds are what is tested; `err` is valid.
        let p =
            unsafe { esm_producer_connect(std::ptr::null(), std::ptr::null(), 1, &raw mut err) };
        assert!(p.is_null());
        assert_eq!(err, ESM_ERR_BAD_ARG);
        let kinds = [99u16];
        // SAFETY: one kind at `kinds`; `err` is valid.
        let p = unsafe { esm_producer_connect(std::ptr::null(), kinds.as_ptr(), 1, &raw mut err) };
        assert!(p.is_null());
        assert_eq!(err, ESM_ERR_BAD_KIND);
        // SAFETY: NULL handles are refused before anything is read.
        unsafe {
            assert_eq!(
                esm_producer_push(std::ptr::null_mut(), std::ptr::null()),
                ESM_ERR_BAD_ARG
            );
            assert_eq!(
                esm_producer_push_burst(std::ptr::null_mut(), std::ptr::null(), 1),
                ESM_ERR_BAD_ARG
            );
            assert_eq!(esm_producer_flush(std::ptr::null_mut()), ESM_ERR_BAD_ARG);
            assert_eq!(
                esm_producer_counters(std::ptr::null(), std::ptr::null_mut()),
                ESM_ERR_BAD_ARG
            );
            esm_producer_close(std::ptr::null_mut());
        }
    }
}
