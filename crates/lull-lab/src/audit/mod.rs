//! The live IPSA recorder on stock Linux, and the benchmarks of seed 002 chapter 3.
//!
//! - The tracefs instance with the scheduler tracepoints on (no kernel module), read through
//!   `per_cpu/cpuN/trace_pipe_raw`, is the OS layer's: [`lull_os::tracefs`].
//! - [`recorder`]: the extraction thread: raw pages → [`lull_audit::tracefs::RecordBuilder`] →
//!   per-CPU [`lull_audit::PerCpuRings`] → log file ([`lull_audit::LogEncoder`]).
//! - [`workload`]: forked benchmark children (matrix multiply, single-byte appends, pipe
//!   ping-pong, busy spin) measured with `wait4`'s `getrusage`.
//! - [`experiments`]: validation (§3.1) and perturbation (§3.2).
//! - [`files`]: loading a log or an ftrace text file for the analyses.
//! - [`tlp_table`]: seed 004's Table 1.1 on this machine (real programs, live) and of the
//!   modelled apps (simulated).

pub mod experiments;
pub mod files;
pub mod recorder;
pub mod tlp_table;
pub mod workload;

use lull_os::tracefs::InstanceError;
use thiserror::Error;

/// Why the recorder or an experiment cannot run.
#[derive(Debug, Error)]
pub enum AuditError {
    /// tracefs or its instance: unavailable, not root, an I/O error, an unexpected format.
    #[error(transparent)]
    Tracefs(#[from] InstanceError),
    #[error("writing the log: {0}")]
    Write(std::io::Error),
    #[error("log: {0}")]
    Log(#[from] lull_audit::LogError),
    #[error("benchmark child: {0}")]
    Child(std::io::Error),
    #[error("recorder thread panicked")]
    ThreadPanicked,
    #[error("{0}")]
    Experiment(String),
}
