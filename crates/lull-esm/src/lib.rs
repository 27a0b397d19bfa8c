//! The Event Stream Model (seed 000, chapter 3) as pure code.
//!
//! Events enter through [`Esm::inject`]: the [interpreter](interpret) packages a driver's
//! [`RawEvent`](lull_model::RawEvent) into an application event and finds the applications
//! registered for its kind, dropping it at once (counted) when there are none; the dispatcher then
//! pushes it to each app that waits in `EV_WAIT`, or appends it to that app's private FIFO queue.
//! [`Esm::wait`] is the seed's `esm_wait`: it pushes the oldest queued item or parks the app in
//! `EV_WAIT`. A push is returned to the caller — the live daemon writes it to the app's channel,
//! the simulator schedules the app's handler — so this crate does no I/O, reads no clock and
//! spawns no thread.
//!
//! [`protocol`] is the ESM's wire codec between `lulld` and its clients (and between a baseline
//! hub and its app); it reads and writes bytes only.
//!
//! Private queues are bounded. The overflow rule is documented on [`Delivery::Overflow`].

mod counters;
mod esm;
mod interpreter;
pub mod protocol;

pub use counters::{AppCounters, EsmCounters};
pub use esm::{
    AccountingError, AppState, Delivery, Esm, EsmConfig, EsmError, Push, RemovedApp,
    DEFAULT_QUEUE_BOUND, MAX_QUEUED_EVENTS_TOTAL, MAX_QUEUE_BOUND,
};
pub use interpreter::{interpret, uninterpret};
