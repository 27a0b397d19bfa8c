//! The live side of `lull validate kernel`: this machine as the kernel describes it, and rt-app
//! workloads run on it.
//!
//! - [`machine`]: [`probe`] — online CPUs, tick rate, EEVDF base slice, idle states, frequency,
//!   timer slack, each with its [`Source`], and two figures measured with short rt-app runs
//!   (ns per busy loop, idle timer wake-up latency).
//! - [`live`]: [`run_live`] — one workload under rt-app: every worker's CPU share from the
//!   kernel's own counters, and its log's periods summarised as the simulator's are.
//!
//! - [`figures`]: one thread's [`Figures`], live or modelled.
//! - [`collection`]: the live runs apart from their analysis, saved and loaded
//!   (`--save-live`, `--live-from`), and [`collection::validate_all`], the two in one go.
//! - [`compare`]: each workload live and in the simulator on a profile of this machine, with
//!   the bounds the validation holds the simulator to.
//!
//! Runs are meant one after another on an otherwise idle machine: each one measures how the
//! kernel shares the CPUs among the workload's threads alone.

pub mod collection;
pub mod compare;
pub mod figures;
pub mod live;
pub mod machine;
pub mod timeline;

pub use figures::Figures;
pub use live::{find_rt_app, run_live, LiveError, LiveOptions, LiveRun, LiveThread, RtAppMissing};
pub use machine::{probe, Machine, Source, Sourced};
