//! Seed 004's controller: user-space scheduling schemes for the threads of registered programs on
//! a machine with fast and slow CPUs (big and LITTLE; live here, a CPU with and a CPU without a
//! capacity thief), deciding only CPU masks from the sensed CPU time of each thread.
//!
//! The schemes (seed 004 §3, figures 3.1–3.9):
//!
//! | scheme | name | what each active thread is given |
//! | --- | --- | --- |
//! | [`Scheme::Baseline`] | `baseline` | nothing: monitored only (the seed's baseline is "just monitoring") |
//! | [`Scheme::AffinityOne`] | `affinity-1` | one CPU, in the order it first became active: slot `s` gets CPU `s mod n` of the CPUs slow first then fast (the seed's cores 0–3 LITTLE, 4–7 big) |
//! | [`Scheme::AffinityTwo`] | `affinity-2` | two CPUs, one slow and one fast: slot `s` gets slow CPU `s mod n_slow` and fast CPU `s mod n_fast` |
//! | [`Scheme::Toggle`] | `toggle-0.25s` … | the whole fast set or the whole slow set, swapped every period: active threads ranked by slot, even ranks start fast, odd ranks slow |
//! | [`Scheme::Equalise`] | `equalise` | Lull's own: every period the threads that have done the least work (scaled CPU time) get the fast set, the rest the slow set |
//!
//! **Why equalising should beat toggling.** Toggling gives every thread the fast cores for half of
//! the time whatever happened; a thread that was slowed by anything else (a late start, other
//! load, the scheme's own phase at the end of the run) stays behind, and the program ends with its
//! slowest thread. Equalising measures each thread's progress and hands the fast cores to those
//! behind, so the threads converge on equal progress and end together; threads already even are
//! not moved (a hysteresis of [`EQUALISE_MARGIN_NS`]). And when threads end, the fast CPUs go to
//! the threads left ([`fast_share`]) instead of idling by a fixed parity.
//!
//! **Active threads.** A registered program's threads include ones that do no work (a main thread
//! waiting in `join`, a launcher waiting for its children); giving such a thread a slot or a fast
//! core would waste it. A thread is *active* in a window when it used at least
//! [`ACTIVE_MIN_PERMILLE`] of one CPU over it; slots are handed out at first activity and kept.
//!
//! **Who is managed.** Every thread the substrate tells as `Adopted` (the registered processes'
//! threads at registration), and every task `Forked` from a managed one: later threads of a managed
//! process and the processes it starts, with their threads (seed 004 registers process ids and
//! follows their threads; following children too lets `lull ctl run -- sh -c …` work).
//!
//! Nothing here reads a clock: the substrate calls [`crate::seam::SeamPolicy::on_deadline`] every
//! sampling period and answers each thread's CPU use.

mod policy;
#[cfg(test)]
mod tests;

pub use policy::{Controller, ControllerCounters};

use crate::seam::CpuMask;
use crate::UnknownPolicy;

/// How often the controller senses its threads: 10 ms, the rate at which the issue watches a
/// CPU-bound program for the seed's ≈ 3 % monitoring overhead (seed 004 §3.1). The seed's module
/// sampled from a kernel timer whose period it does not state.
pub const DEFAULT_SAMPLE_PERIOD_NS: u64 = 10_000_000;

/// The toggling periods the seed compares (figure 3.9): 0.1, 0.25 and 0.5 s.
pub const SEED_TOGGLE_PERIODS_NS: [u64; 3] = [100_000_000, 250_000_000, 500_000_000];

/// The equalising scheme's decision period: 0.1 s, the seed's shortest toggling period, so that
/// equalising reacts at least as fast as any toggling it is compared with.
pub const DEFAULT_EQUALISE_PERIOD_NS: u64 = 100_000_000;

/// Hysteresis of the equalising scheme: a thread on the fast set keeps it unless it leads a
/// thread on the slow set by more than 5 ms of work (the work of half an equalising period on a
/// core a tenth slower: below that the gain does not pay for the migration's cache refill).
pub const EQUALISE_MARGIN_NS: u64 = 5_000_000;

/// A thread is active in a window when it used at least this share of one CPU (per mille):
/// a tenth. A CPU-bound thread sharing a CPU with three others still uses a quarter; a thread
/// parked in `join` or `waitpid` uses none.
pub const ACTIVE_MIN_PERMILLE: u64 = 100;

/// The fast and the slow CPUs the schemes place threads on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct CoreSets {
    /// Big cores (live: CPUs without a capacity thief).
    pub fast: CpuMask,
    /// LITTLE cores (live: CPUs with a capacity thief).
    pub slow: CpuMask,
}

/// A scheduling scheme (seed 004 §3).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Scheme {
    Baseline,
    AffinityOne,
    AffinityTwo,
    Toggle { period_ns: u64 },
    Equalise { period_ns: u64 },
}

/// The schemes an experiment runs when none are asked: seed 004's six (baseline, both
/// affinities, toggling every 0.1, 0.25 and 0.5 s) and Lull's equalising one.
pub const STANDARD: [&str; 7] = [
    "baseline",
    "affinity-1",
    "affinity-2",
    "toggle-0.1s",
    "toggle-0.25s",
    "toggle-0.5s",
    "equalise",
];

/// How an error names the periods `parse` takes besides [`STANDARD`]'s.
const ANY_PERIOD: &str = "toggle-<seconds>s";

/// The shortest toggling or equalising period taken: one sampling period, since decisions are
/// made at samples.
pub const MIN_PERIOD_NS: u64 = DEFAULT_SAMPLE_PERIOD_NS;

/// The longest: one minute (a longer period is a static affinity for any run of interest).
pub const MAX_PERIOD_NS: u64 = 60_000_000_000;

impl Scheme {
    /// Parses `baseline`, `affinity-1`, `affinity-2`, `toggle-<s>s` or `toggle-<ms>ms`,
    /// `equalise` or `equalise-<s>s`.
    ///
    /// # Errors
    /// [`UnknownPolicy`] for any other name or a period outside [`MIN_PERIOD_NS`] to
    /// [`MAX_PERIOD_NS`].
    pub fn parse(name: &str) -> Result<Scheme, UnknownPolicy> {
        let unknown = || {
            UnknownPolicy::new(
                "controller scheme",
                name,
                &[&STANDARD[..], &[ANY_PERIOD]].concat(),
            )
        };
        match name {
            "baseline" => return Ok(Scheme::Baseline),
            "affinity-1" => return Ok(Scheme::AffinityOne),
            "affinity-2" => return Ok(Scheme::AffinityTwo),
            "equalise" => {
                return Ok(Scheme::Equalise {
                    period_ns: DEFAULT_EQUALISE_PERIOD_NS,
                })
            }
            _ => {}
        }
        let (make, rest): (fn(u64) -> Scheme, &str) = if let Some(r) = name.strip_prefix("toggle-")
        {
            (|p| Scheme::Toggle { period_ns: p }, r)
        } else if let Some(r) = name.strip_prefix("equalise-") {
            (|p| Scheme::Equalise { period_ns: p }, r)
        } else {
            return Err(unknown());
        };
        let period_ns = parse_period_ns(rest).ok_or_else(unknown)?;
        if !(MIN_PERIOD_NS..=MAX_PERIOD_NS).contains(&period_ns) {
            return Err(unknown());
        }
        Ok(make(period_ns))
    }

    /// The name `parse` reads back (`toggle-0.25s`).
    #[must_use]
    pub fn name(self) -> String {
        match self {
            Scheme::Baseline => "baseline".into(),
            Scheme::AffinityOne => "affinity-1".into(),
            Scheme::AffinityTwo => "affinity-2".into(),
            Scheme::Toggle { period_ns } => format!("toggle-{}", period_name(period_ns)),
            Scheme::Equalise { period_ns } if period_ns == DEFAULT_EQUALISE_PERIOD_NS => {
                "equalise".into()
            }
            Scheme::Equalise { period_ns } => format!("equalise-{}", period_name(period_ns)),
        }
    }

    /// The decision period, for the schemes that have one.
    #[must_use]
    pub fn period_ns(self) -> Option<u64> {
        match self {
            Scheme::Toggle { period_ns } | Scheme::Equalise { period_ns } => Some(period_ns),
            _ => None,
        }
    }
}

/// `0.25s` → 250 ms, `100ms` → 100 ms; at most nanosecond precision.
fn parse_period_ns(s: &str) -> Option<u64> {
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1_000_000u64)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1_000_000_000u64)
    } else {
        return None;
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || int.len() > 6
        || frac.len() > 9
    {
        return None;
    }
    let whole: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut f_ns = 0u64;
    let mut unit = scale;
    for d in frac.bytes() {
        unit /= 10;
        f_ns += u64::from(d - b'0') * unit;
        if unit == 0 && d != b'0' {
            return None;
        }
    }
    whole.checked_mul(scale)?.checked_add(f_ns)
}

/// 250 ms → `0.25s`, 1 s → `1s`, 125 ms → `0.125s`.
fn period_name(ns: u64) -> String {
    let s = ns / 1_000_000_000;
    let frac = ns % 1_000_000_000;
    if frac == 0 {
        return format!("{s}s");
    }
    let digits = format!("{frac:09}");
    format!("{s}.{}s", digits.trim_end_matches('0'))
}

/// The mask slot `slot` gets under `affinity-1`: one CPU, slow CPUs first.
#[must_use]
pub fn affinity_one_mask(sets: CoreSets, slot: usize) -> CpuMask {
    let order: Vec<_> = sets.slow.cpus().chain(sets.fast.cpus()).collect();
    if order.is_empty() {
        return CpuMask::ALL;
    }
    CpuMask::of(&[order[slot % order.len()]])
}

/// The mask slot `slot` gets under `affinity-2`: one slow and one fast CPU (just one CPU when a
/// set is empty).
#[must_use]
pub fn affinity_two_mask(sets: CoreSets, slot: usize) -> CpuMask {
    let pick = |m: CpuMask| {
        let v: Vec<_> = m.cpus().collect();
        (!v.is_empty()).then(|| CpuMask::of(&[v[slot % v.len()]]))
    };
    match (pick(sets.slow), pick(sets.fast)) {
        (Some(s), Some(f)) => CpuMask(s.0 | f.0),
        (Some(m), None) | (None, Some(m)) => m,
        (None, None) => CpuMask::ALL,
    }
}

/// Under toggling, whether the thread of `rank` among the active threads is on the fast set in
/// toggle epoch `epoch` (the number of periods since the controller started).
#[must_use]
pub fn toggle_on_fast(rank: usize, epoch: u64) -> bool {
    (rank as u64 + epoch) % 2 == 0
}

/// How many of `active` threads the fast set takes under equalising: every thread while there
/// are no more threads than fast CPUs (a fast CPU left idle is work lost), one per fast CPU while
/// the slow CPUs can take the rest one each, and beyond that the fast set's share of the CPUs,
/// rounded to nearest.
#[must_use]
pub fn fast_share(sets: CoreSets, active: usize) -> usize {
    let nf = sets.fast.cpus().count();
    let ns = sets.slow.cpus().count();
    if active <= nf {
        return active;
    }
    ((active * nf + (nf + ns) / 2) / (nf + ns)).clamp(nf, active)
}
