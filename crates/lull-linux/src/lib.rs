//! Lull on stock Linux: the adapter that gives the pure core a real clock, real processes and
//! real file descriptors.

pub mod audit;
pub mod bench;
pub mod capi;
pub mod channel;
pub mod client;
pub mod daemon;
pub mod evdev;
pub mod event_loop;
pub mod live;
pub mod measure;
pub mod protocol;
pub mod replay;
pub mod stack;
pub mod sys;
