//! Lull's deterministic discrete-event simulator of a mobile SoC and its kernel.
//!
//! - [`engine`]: integer-nanosecond event queue, FIFO among simultaneous events, seedable RNG;
//! - [`platform`]: SoC profiles as data (`platforms/*.toml`): clusters, OPPs, idle states, the
//!   companion core, interrupt controller, timer, display, board;
//! - [`load()`]: every spec (`experiments/**/*.toml`) by its `kind`: the header all kinds share,
//!   one [`SpecError`] with the file, line and column; [`Experiment`]: running any kind with
//!   [`RunOpts`] into a [`Report`];
//! - [`spec`]: framework-model specs, their workloads and `[policy]` table;
//! - `policy`: the `lull-sched` policies a run uses, by name or the platform's defaults;
//! - `soc`: cores' power states and OPPs, the power model and the 1 ms power meter;
//! - `kernel`: threads, scheduling through the chosen class and placement, each core's
//!   execution, ticks, timers, interrupts, idle states, cluster switching and hotplug;
//! - `userland`: the framework models (pull, vsync-batched, blocking, ESM, ESM+KDS+guiS with
//!   `lull-esm`) and the app behaviours;
//! - `pm`: the frequency governor, core management and guiS idle forcing;
//! - [`world`]: one run, wiring the above to the event queue;
//! - [`rtapp`]: rt-app workloads run on the same kernel, logged as rt-app logs its periods;
//! - [`report`]: figures per model (power sampled each 1 ms, energy, latency, residency);
//! - [`ucsg`]: seed 001's experiments on a modelled Galaxy S4;
//! - [`vtcfs`]: seed 003's painting experiment on a modelled Tegra 250 (the interactive boost
//!   lives in the kernel, `kernel::boost`);
//! - [`interbench`], [`hackbench`]: seed 003's benchmarks (figure 7, table IV) on the same kernel,
//!   run, like rt-app workloads, by `drive` (the event loop of a user space without devices);
//! - [`seam`]: a `lull_sched::seam::SeamPolicy` driven by the simulated kernel;
//! - [`toggling`]: seed 004's affinity and toggling schemes on a modelled Odroid-XU3 (both
//!   clusters online), through the seam.
//!
//! Figures from here are modelled, never measured. `docs/simulator.md` documents every mechanism
//! and constant.

pub mod costs;
mod drive;
pub mod engine;
mod event;
pub mod experiment;
pub mod hackbench;
pub mod header;
pub mod interbench;
mod kernel;
pub mod load;
pub mod platform;
mod pm;
mod policy;
pub mod report;
pub mod rtapp;
pub mod seam;
mod soc;
pub mod spec;
pub mod spec_error;
pub mod toggling;
pub mod ucsg;
mod userland;
pub mod vtcfs;
pub mod world;

pub use experiment::{Experiment, Figures, Report, RunError, RunOpts};
pub use header::ResultHeader;
pub use kernel::BoostCounters;
pub use kernel::BoostKind;
pub use load::{load, Header, Kind, Spec};
pub use policy::POLICY_SLOTS;
pub use report::{
    latency_change_ms, power_reduction_pct, seed_000_reported, ExperimentResult, LatencyStats,
    ModelResult, POWER_SERIES_BUCKET_MS,
};
pub use spec::{FrameworkSpec, StylusSpec};
pub use spec_error::{Problem, SpecError, TextPos};
pub use world::{run_model, run_model_with_audit, run_spec, run_spec_audited};
