//! Interbench specs (`kind = "interbench"`, `experiments/vtcfs/interbench-*.toml`): after the
//! header every kind shares, the benchmarked task, the background loads it runs against, how
//! long and how often, and the models (each a `[policy]` table). A spec is a boundary: every
//! problem is a [`crate::SpecError`].

use serde::{Deserialize, Serialize};

use crate::header::Header;
pub use crate::policy::{check_models, ModelListError, PolicyModel};
use crate::spec_error::{invalid, Problem};

/// Interbench's default length of one benchmark run (`ud.duration = 30` in interbench 0.31), the
/// seed's too (§VI-B-2: "each simulation has run for 30 seconds").
pub const SEED_DURATION_S: u64 = 30;
/// The seed's repetitions (§VI-B-2: "repeated ten times").
pub const SEED_REPEATS: u32 = 10;
/// The longest run a spec may ask for: ten of the seed's runs.
pub const MAX_DURATION_S: u64 = 300;
/// The most repetitions a spec may ask for.
pub const MAX_REPEATS: u32 = 100;
/// Burn's threads when a spec does not say: interbench 0.31's `ud.cpu_load` default (`-L 4`);
/// seed 003 names no `-L`, so it ran the default.
pub const DEFAULT_BURN_THREADS: u32 = 4;
/// The most Burn threads a spec may ask for.
pub const MAX_BURN_THREADS: u32 = 64;

/// Interbench's simulated interactive tasks that a spec benchmarks (interbench 0.31's
/// `threadlist` entries with `.bench = 1`; seed 003 table II).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bench {
    /// A window dragged across the screen: 0 to 100 % of a CPU in 1 ms steps.
    X,
    /// 5 % of a CPU every 50 ms.
    Audio,
    /// 40 % of a CPU at 60 frames a second.
    Video,
    /// All the CPU it can get, never sleeping; latency is how late each 100 ms of work ends.
    Gaming,
}

impl Bench {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Bench::X => "x",
            Bench::Audio => "audio",
            Bench::Video => "video",
            Bench::Gaming => "gaming",
        }
    }

    /// The same task as a background load, for the benchmarks that are also loads: interbench
    /// never runs a task against itself.
    #[must_use]
    pub fn as_load(self) -> Option<Load> {
        match self {
            Bench::X => Some(Load::X),
            Bench::Video => Some(Load::Video),
            Bench::Audio | Bench::Gaming => None,
        }
    }
}

/// Interbench's background loads that seed 003 used (table II; interbench's `.load = 1`
/// entries; Write, Read and Compile are not in the seed's figure).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Load {
    /// No load.
    None,
    /// The Video task as a load, at nice 0.
    Video,
    /// The X task as a load.
    X,
    /// Four fully CPU-bound threads (interbench's `-L` default, `ud.cpu_load = 4`).
    Burn,
    /// One thread touching and copying 110 % of the RAM (memory and swap pressure).
    Memload,
}

impl Load {
    pub const ALL: [Load; 5] = [Load::None, Load::Video, Load::X, Load::Burn, Load::Memload];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Load::None => "none",
            Load::Video => "video",
            Load::X => "x",
            Load::Burn => "burn",
            Load::Memload => "memload",
        }
    }
}

/// The tables of an interbench spec after its header.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawInterbench {
    benchmark: Bench,
    loads: Vec<Load>,
    duration_s: u64,
    repeats: u32,
    /// The board's RAM (interbench reads MemTotal), for Memload.
    ram_mib: u64,
    /// Burn's CPU-bound threads (interbench's `-L`).
    #[serde(default = "default_burn_threads")]
    burn_threads: u32,
    models: Vec<PolicyModel>,
}

fn default_burn_threads() -> u32 {
    DEFAULT_BURN_THREADS
}

/// A checked interbench spec.
#[derive(Clone, PartialEq, Debug)]
pub struct InterbenchSpec {
    pub header: Header,
    pub benchmark: Bench,
    pub loads: Vec<Load>,
    /// Length of each benchmark run, s (interbench rounds it up to a multiple of 10 s so that
    /// X goes through its whole range; so does the parser).
    pub duration_s: u64,
    /// Runs per model and load; each starts the benchmarked task at another offset within a
    /// scheduler tick.
    pub repeats: u32,
    pub ram_mib: u64,
    /// Burn's CPU-bound threads (interbench's `-L`; [`DEFAULT_BURN_THREADS`]).
    pub burn_threads: u32,
    pub models: Vec<PolicyModel>,
}

impl InterbenchSpec {
    /// Checks an interbench spec's tables after its header.
    ///
    /// # Errors
    /// The first [`Problem`].
    pub(crate) fn from_parts(
        header: Header,
        raw: RawInterbench,
    ) -> Result<InterbenchSpec, Problem> {
        if raw.loads.is_empty() {
            return Err(invalid("loads", "no load to run against"));
        }
        for (i, l) in raw.loads.iter().enumerate() {
            if raw.loads[..i].contains(l) {
                return Err(invalid("loads", format!("`{}` listed twice", l.name())));
            }
            if raw.benchmark.as_load() == Some(*l) {
                return Err(invalid(
                    "loads",
                    format!(
                        "interbench does not run `{}` against itself",
                        raw.benchmark.name()
                    ),
                ));
            }
        }
        if raw.duration_s == 0 || raw.duration_s > MAX_DURATION_S {
            return Err(invalid(
                "duration_s",
                format!("must be 1..={MAX_DURATION_S}"),
            ));
        }
        if raw.repeats == 0 || raw.repeats > MAX_REPEATS {
            return Err(invalid("repeats", format!("must be 1..={MAX_REPEATS}")));
        }
        if !(64..=65_536).contains(&raw.ram_mib) {
            return Err(invalid("ram_mib", "must be 64..=65536 (MiB)"));
        }
        if raw.burn_threads == 0 || raw.burn_threads > MAX_BURN_THREADS {
            return Err(invalid(
                "burn_threads",
                format!("must be 1..={MAX_BURN_THREADS}"),
            ));
        }
        check_models(&raw.models, &header.platform)?;
        Ok(InterbenchSpec {
            header,
            benchmark: raw.benchmark,
            loads: raw.loads,
            duration_s: round_up_to_10(raw.duration_s),
            repeats: raw.repeats,
            ram_mib: raw.ram_mib,
            burn_threads: raw.burn_threads,
            models: raw.models,
        })
    }

    /// The seed's size: 30 s runs, ten of them per model and load.
    pub fn seed_size(&mut self) {
        self.duration_s = SEED_DURATION_S;
        self.repeats = SEED_REPEATS;
    }
}

/// Interbench's `if (ud.duration % 10) ud.duration += 10 - ud.duration % 10`: X's 101 steps of
/// 100 ms each fit a multiple of 10 s.
fn round_up_to_10(s: u64) -> u64 {
    s.div_ceil(10) * 10
}
