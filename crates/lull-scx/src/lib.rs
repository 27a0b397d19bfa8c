//! `lull-scx`: Lull's scheduling policies as a Linux scheduler, loaded through sched_ext.
//!
//! The BPF side (`src/bpf/main.bpf.c`, compiled by clang at build time) decides at every
//! wake-up from tables that [`tables`] fills from lull-sched's pure policies, and from the facts
//! lulld writes into the pinned map `lull_os::bpf::scx_facts::FACTS_PIN_PATH`. [`scheduler`]
//! loads it, watches it, and unloads it. [`ucsg`] runs UCSG's sensitivity states and core
//! allocation (lull-sched's `Ucsg`) over the same facts in user space, and [`placement`] writes
//! its answer (thread → CPU) into the map the BPF side enforces. `docs/scx.md` describes the
//! design and its figures.
//!
//! Licence: GPL-2.0-only (sched_ext loads GPL-compatible programs only); the rest of Lull keeps
//! its own.

pub mod placement;
pub mod scheduler;
pub mod tables;
pub mod ucsg;

pub use scheduler::{LoadError, RunStats, ScxOptions};
pub use tables::Tables;
