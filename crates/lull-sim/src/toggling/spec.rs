//! Toggling specs (`kind = "toggling"`, `experiments/toggling/*.toml`): after the header every
//! kind shares (its platform a big.LITTLE pair with both clusters online), the program's threads
//! and their work, its synchronisation, and the controller's schemes to compare. A spec is a
//! boundary: every problem is a [`crate::SpecError`].

use lull_sched::controller::Scheme;
use serde::Deserialize;

use crate::header::Header;
use crate::policy::PolicySpec;
use crate::spec_error::{invalid, Problem};

/// The most threads a spec may have (the controller's masks cover 64 CPUs; the seed runs 8).
pub const MAX_THREADS: u32 = 64;
/// The most work a thread may have: 10 minutes at the fastest core's top speed.
pub const MAX_WORK_MS: u64 = 600_000;
/// The frequency governor of every toggling run: both clusters at their top frequency (seed 004
/// ran throughput benchmarks; the comparison is of placement). The simulator's other governors
/// drive the active cluster's clock only, which with both clusters online would leave one
/// cluster ungoverned.
pub const GOVERNOR: &str = "performance";
/// The shortest barrier phase: 100 µs of work (shorter is a spin lock, not a barrier).
pub const MIN_BARRIER_US: u64 = 100;

/// The tables of a toggling spec after its header.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawToggling {
    threads: u32,
    work_ms: u64,
    #[serde(default)]
    barrier_every_us: u64,
    hot_kib: u64,
    models: Vec<String>,
    #[serde(default)]
    policy: PolicySpec,
}

/// A checked toggling spec.
#[derive(Clone, PartialEq, Debug)]
pub struct TogglingSpec {
    pub header: Header,
    /// Worker threads, each with the same work.
    pub threads: u32,
    /// Each thread's work: this long on the fastest core at its top frequency.
    pub work_ms: u64,
    /// Every thread waits at a barrier for all others after this much work (at the fastest
    /// core's top speed); 0: no synchronisation.
    pub barrier_every_us: u64,
    /// Each thread's hot set, refilled when it moves to the other cluster.
    pub hot_kib: u64,
    /// The controller schemes, by name (`baseline` among them: speedups are against it).
    pub models: Vec<Scheme>,
    /// The kernel's policies under every model (the scheduler class and governor).
    pub policy: PolicySpec,
}

impl TogglingSpec {
    /// Checks a toggling spec's tables after its header.
    ///
    /// # Errors
    /// The first [`Problem`].
    pub(crate) fn from_parts(header: Header, raw: RawToggling) -> Result<TogglingSpec, Problem> {
        let platform = &header.platform;
        if !platform.both_clusters_online {
            return Err(invalid(
                "platform",
                format!(
                    "`{}` does not run both clusters at once (toggling needs fast and slow cores online together)",
                    platform.name
                ),
            ));
        }
        if raw.threads == 0 || raw.threads > MAX_THREADS {
            return Err(invalid("threads", format!("must be 1..={MAX_THREADS}")));
        }
        if raw.work_ms == 0 || raw.work_ms > MAX_WORK_MS {
            return Err(invalid("work_ms", format!("must be 1..={MAX_WORK_MS}")));
        }
        if raw.barrier_every_us != 0
            && !(MIN_BARRIER_US..=raw.work_ms * 1000).contains(&raw.barrier_every_us)
        {
            return Err(invalid(
                "barrier_every_us",
                format!("0 (no barrier) or {MIN_BARRIER_US}..=work_ms × 1000"),
            ));
        }
        if raw.hot_kib > 1 << 20 {
            return Err(invalid("hot_kib", "at most 1 GiB"));
        }
        if raw.models.is_empty() {
            return Err(invalid("models", "none to run"));
        }
        let mut models = Vec::new();
        for name in &raw.models {
            let s = Scheme::parse(name).map_err(|e| Problem::UnknownModel {
                name: name.clone(),
                known: e.known,
            })?;
            if models.contains(&s) {
                return Err(invalid("models", format!("`{name}` listed twice")));
            }
            models.push(s);
        }
        if !models.contains(&Scheme::Baseline) {
            return Err(invalid(
                "models",
                "`baseline` is missing (speedups are against it)",
            ));
        }
        if raw.policy.placement.is_some() {
            return Err(invalid(
                "policy.placement",
                "a toggling run places with the platform's global task scheduling (hmp)",
            ));
        }
        let mut policy = raw.policy;
        match policy.governor.as_deref() {
            None => policy.governor = Some(GOVERNOR.to_owned()),
            Some(GOVERNOR) => {}
            Some(other) => {
                return Err(invalid(
                    "policy.governor",
                    format!("`{other}`: with both clusters online the simulator models `{GOVERNOR}` only (its governors run one cluster's clock)"),
                ))
            }
        }
        if policy.cores.is_some() {
            return Err(invalid(
                "policy.cores",
                "a toggling run keeps every core of both clusters online",
            ));
        }
        Ok(TogglingSpec {
            header,
            threads: raw.threads,
            work_ms: raw.work_ms,
            barrier_every_us: raw.barrier_every_us,
            hot_kib: raw.hot_kib,
            models,
            policy,
        })
    }
}
