//! Scheduling policies as pure code, shared by the simulator and the live stack.
//!
//! - [`guis`]: the categorical GUI scheduler's rules (seed 000, chapter 5, table 1), idle forcing
//!   and the companion-core triage decision.
//! - [`cfs`]: the Completely Fair Scheduler's arithmetic as the design brief restates it (weights,
//!   virtual runtime, time slices, wakeup placement, tick and wakeup preemption).
//!
//! Nothing here does I/O, reads a clock or spawns a thread: time is passed in.

pub mod cfs;
pub mod guis;
