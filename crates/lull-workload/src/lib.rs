//! Workloads as data, shared by the live stack and the simulator.
//!
//! - [`trace`]: the `lull-trace 1` text format of timed raw events, its strict reader and writer,
//!   and time scaling (seed 000 replays one recording "scaled to different time intervals").
//! - [`spiral`]: the deterministic generator of the stylus-tracking recording of seed 000
//!   figure 30 (1,614 motion, press and release events along an Archimedean spiral).
//! - [`messaging`]: the text-messaging test's simulated keyboard (seed 000 chapter 6, figure 37):
//!   messages of random words, their key events, send and reading times.
//! - [`video`]: the video test's frame timing and a deterministic synthetic decoder whose
//!   per-frame work stands in for software H.264 decoding.
//!
//! - [`rtapp`]: rt-app JSON workloads, rt-app log files and the per-thread summary of both.
//!
//! Pure code: the reader takes a `&str`, never a path.

pub mod messaging;
pub mod rng;
pub mod rtapp;
pub mod spiral;
pub mod trace;
pub mod video;

pub use trace::{TimedEvent, Trace, TraceError};
