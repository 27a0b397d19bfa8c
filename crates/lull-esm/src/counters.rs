//! What happened to every event, so that every report can account for all of them.

use serde::Serialize;

/// Whole-ESM counters. They obey, at every moment:
///
/// - `raw_injected = accepted + no_listener`
/// - `dispatched = pushed_direct + queued + overflow_dropped`
/// - `queued = pushed_from_queue + discarded_on_exit + (events now in queues)`
///
/// An "(event, app)" pair is one event on its way to one registered app, so one accepted event
/// with three listeners is three dispatches.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct EsmCounters {
    /// Raw events offered to the interpreter.
    pub raw_injected: u64,
    /// Raw events that had at least one listener and got a sequence number.
    pub accepted: u64,
    /// Raw events discarded by the interpreter because no app was registered for their kind.
    pub no_listener: u64,
    /// (event, app) pairs handed to the dispatcher.
    pub dispatched: u64,
    /// Pairs pushed at once because the app was in `EV_WAIT`.
    pub pushed_direct: u64,
    /// Pairs appended to the app's private queue.
    pub queued: u64,
    /// Pairs dropped because the app's private queue held its bound of events; every one of them
    /// is reported to its app by an overflow marker.
    pub overflow_dropped: u64,
    /// Queued pairs later pushed by `wait`.
    pub pushed_from_queue: u64,
    /// Queued pairs discarded because their app left before taking them.
    pub discarded_on_exit: u64,
    /// Overflow markers pushed to apps.
    pub overflow_markers: u64,
}

/// Per-application counters; same meanings as in [`EsmCounters`], for one app.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct AppCounters {
    pub dispatched: u64,
    pub pushed_direct: u64,
    pub queued: u64,
    pub overflow_dropped: u64,
    pub pushed_from_queue: u64,
    pub overflow_markers: u64,
}
