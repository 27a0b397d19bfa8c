//! Hackbench specs (`kind = "hackbench"`, `experiments/vtcfs/hackbench*.toml`): after the
//! header every kind shares, the transports, the sizes as seed 003 counts them (pairs),
//! hackbench's loops, fds and message size, and the models. A spec is a boundary: every problem
//! is a [`crate::SpecError`].

use serde::Deserialize;

use super::channel::Transport;
use crate::header::Header;
use crate::policy::{check_models, PolicyModel};
use crate::spec_error::{invalid, Problem};

/// Hackbench's default loops (`static unsigned int loops = 100`, rt-tests `hackbench.c`), the
/// size seed 003's times fit (table IV: 4-14 s on the Tegra 250).
pub const SEED_LOOPS: u64 = 100;
/// Hackbench's default senders and receivers per group (`num_fds = 20`).
pub const DEFAULT_FDS: u32 = 20;
/// Hackbench's default message (`datasize = 100`), the seed's "100-byte data".
pub const DEFAULT_DATASIZE: u32 = 100;
/// The most loops a spec may ask for.
pub const MAX_LOOPS: u64 = 10_000;
/// The most workers a run may have (groups × 2 × fds).
pub const MAX_TASKS: u64 = 4_000;

fn default_fds() -> u32 {
    DEFAULT_FDS
}

fn default_datasize() -> u32 {
    DEFAULT_DATASIZE
}

/// The tables of a hackbench spec after its header.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHackbench {
    transports: Vec<Transport>,
    pairs: Vec<u32>,
    loops: u64,
    #[serde(default = "default_fds")]
    fds: u32,
    #[serde(default = "default_datasize")]
    datasize: u32,
    models: Vec<PolicyModel>,
}

/// A checked hackbench spec.
#[derive(Clone, PartialEq, Debug)]
pub struct HackbenchSpec {
    pub header: Header,
    pub transports: Vec<Transport>,
    /// Sender-receiver pairs, seed 003's unit; each is `pairs / fds` hackbench groups.
    pub pairs: Vec<u32>,
    pub loops: u64,
    pub fds: u32,
    pub datasize: u32,
    /// The first model is the baseline the others' overhead is measured against.
    pub models: Vec<PolicyModel>,
}

impl HackbenchSpec {
    /// Checks a hackbench spec's tables after its header.
    ///
    /// # Errors
    /// The first [`Problem`].
    pub(crate) fn from_parts(header: Header, raw: RawHackbench) -> Result<HackbenchSpec, Problem> {
        if raw.transports.is_empty() {
            return Err(invalid("transports", "none to run (pipe, socket)"));
        }
        for (i, t) in raw.transports.iter().enumerate() {
            if raw.transports[..i].contains(t) {
                return Err(invalid(
                    "transports",
                    format!("`{}` listed twice", t.name()),
                ));
            }
        }
        if raw.fds == 0 || raw.fds > 1000 {
            return Err(invalid("fds", "must be 1..=1000"));
        }
        if raw.datasize == 0 || raw.datasize > 4096 {
            return Err(invalid("datasize", "must be 1..=4096 bytes"));
        }
        if raw.loops == 0 || raw.loops > MAX_LOOPS {
            return Err(invalid("loops", format!("must be 1..={MAX_LOOPS}")));
        }
        if raw.pairs.is_empty() {
            return Err(invalid("pairs", "no size to run"));
        }
        for (i, &p) in raw.pairs.iter().enumerate() {
            if p == 0 || p % raw.fds != 0 {
                return Err(invalid(
                    "pairs",
                    format!(
                        "{p} is not a positive multiple of fds ({}): a group has fds senders and fds receivers",
                        raw.fds
                    ),
                ));
            }
            if u64::from(p) * 2 > MAX_TASKS {
                return Err(invalid(
                    "pairs",
                    format!("{p} pairs are more than {MAX_TASKS} tasks"),
                ));
            }
            if raw.pairs[..i].contains(&p) {
                return Err(invalid("pairs", format!("{p} listed twice")));
            }
        }
        check_models(&raw.models, &header.platform)?;
        Ok(HackbenchSpec {
            header,
            transports: raw.transports,
            pairs: raw.pairs,
            loops: raw.loops,
            fds: raw.fds,
            datasize: raw.datasize,
            models: raw.models,
        })
    }

    /// The seed's size: hackbench's 100 loops.
    pub fn seed_size(&mut self) {
        self.loops = SEED_LOOPS;
    }
}
