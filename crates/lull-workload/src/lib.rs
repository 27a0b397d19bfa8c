//! Workloads as data, shared by the live stack and the simulator.
//!
//! - [`trace`]: the `lull-trace 1` text format of timed raw events, its strict reader and writer,
//!   and time scaling (seed 000 replays one recording "scaled to different time intervals").
//! - [`spiral`]: the deterministic generator of the stylus-tracking recording of seed 000
//!   figure 30 (1,614 motion, press and release events along an Archimedean spiral).
//!
//! Pure code: the reader takes a `&str`, never a path.

pub mod rng;
pub mod spiral;
pub mod trace;

pub use trace::{TimedEvent, Trace, TraceError};
