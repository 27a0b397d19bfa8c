//! Lull's deterministic discrete-event simulator of a mobile SoC and its kernel.
//!
//! - [`engine`]: integer-nanosecond event queue, FIFO among simultaneous events, seedable RNG;
//! - [`platform`]: SoC profiles as data (`platforms/*.toml`): clusters, OPPs, idle states, the
//!   companion core, interrupt controller, timer, display, board;
//! - [`spec`]: experiment specs (`experiments/**/*.toml`) and their workloads;
//! - [`world`]: one run — SoC (power, idle governor, DVFS, cluster switching), kernel (threads,
//!   per-core CFS run queues via `lull-sched`, ticks, timers, interrupts, context switches, cache
//!   refill, load balancing) and the framework models, with ESM from `lull-esm`;
//! - [`report`]: figures per model (power sampled each 1 ms, energy, latency, residency).
//!
//! Figures from here are modelled, never measured. `docs/simulator.md` documents every mechanism
//! and constant.

pub mod costs;
pub mod engine;
pub mod platform;
pub mod report;
pub mod spec;
pub mod world;

pub use report::{
    latency_change_ms, power_reduction_pct, run_model, run_model_with_audit, run_spec,
    seed_000_reported, ExperimentResult, LatencyStats, ModelResult,
};
pub use spec::{Model, Spec, SpecError};
