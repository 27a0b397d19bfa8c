//! Lull's shared vocabulary.
//!
//! Every other crate speaks in these types: who an application is, what an event is, which of the
//! four thread categories a thread belongs to, what the user can see of an app, and the units of
//! time. Nothing here does I/O, reads a clock or spawns a thread.

pub mod app;
pub mod delivery;
pub mod event;
pub mod ids;
pub mod stats;
pub mod thread;
pub mod time;
pub mod weight;

pub use app::{Screen, Stacking, Visibility, WindowState};
pub use delivery::DeliveryModel;
pub use event::{AppEvent, EventKind, EventSeq, Payload, RawEvent, TouchPhase};
pub use ids::{AppId, HandlerId};
pub use thread::ThreadCategory;
