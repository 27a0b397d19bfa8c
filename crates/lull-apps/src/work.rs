//! `lull-work`: a fixed amount of CPU work split over N threads, with or without a barrier every
//! few milliseconds — the stand-ins for seed 004's PARSEC Blackscholes (8 threads, no
//! synchronisation) and Vips (fine-grained synchronisation) in `lull live toggling`.
//!
//! The work is a fixed number of rounds of a hash loop (a chain of multiply–xor–shift steps,
//! each depending on the last, so the compiler cannot fold or vectorise it): completion time is
//! the metric, and it does not depend on any calibration made at run time. `--work-ms W` is
//! W × [`ROUNDS_PER_MS`] rounds per thread, that constant measured once on this machine, so that
//! W is roughly the milliseconds one thread takes alone on an unloaded CPU here.
//!
//! With `--barrier-ms B` every thread waits at a `std::sync::Barrier` after each B ×
//! [`ROUNDS_PER_MS`] rounds: a thread slowed by a slow CPU holds the others up at every barrier.
//!
//! `--report FILE` writes, when every thread is done, a JSON object
//! `{"threads","rounds_per_thread","barrier_rounds","finish_ns":[…],"checksum"}`: each worker's
//! finish time after the start, in thread order, so the experiment can report the spread.

use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use serde::Serialize;

/// Hash rounds one thread does in a millisecond alone on an idle CPU of this machine (2-CPU
/// Linux 6.18 VM): 400 million rounds took 0.88 s in a release build (456 per µs), rounded
/// down. Only sizes work: any value gives a fixed, repeatable amount of it.
pub const ROUNDS_PER_MS: u64 = 450_000;

/// Most worker threads (the seed's runs have 8; 64 leaves room without letting a typo start
/// thousands).
pub const MAX_THREADS: u32 = 64;

/// Most work per thread: ten minutes.
pub const MAX_WORK_MS: u64 = 600_000;

/// The workload binary's arguments.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct WorkArgs {
    pub threads: u32,
    pub work_ms: u64,
    /// Work between barriers, ms of [`ROUNDS_PER_MS`]; `None`: no synchronisation.
    pub barrier_ms: Option<u64>,
    pub report: Option<PathBuf>,
}

/// A bad `lull-work` command line.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WorkArgError {
    #[error("--threads is required (1..={MAX_THREADS})")]
    MissingThreads,
    #[error("--work-ms is required (1..={MAX_WORK_MS})")]
    MissingWork,
    #[error("{flag} needs a value")]
    MissingValue { flag: String },
    #[error("{flag} {value:?}: expected a whole number in {range}")]
    BadNumber {
        flag: String,
        value: String,
        range: String,
    },
    #[error("--barrier-ms {barrier_ms} is more than --work-ms {work_ms}")]
    BarrierAboveWork { barrier_ms: u64, work_ms: u64 },
    #[error("unknown argument {0:?}; usage: lull-work --threads N --work-ms W [--barrier-ms B] [--report FILE]")]
    Unknown(String),
}

fn number(flag: &str, value: &str, lo: u64, hi: u64) -> Result<u64, WorkArgError> {
    value
        .parse::<u64>()
        .ok()
        .filter(|v| (lo..=hi).contains(v))
        .ok_or_else(|| WorkArgError::BadNumber {
            flag: flag.into(),
            value: value.into(),
            range: format!("{lo}..={hi}"),
        })
}

impl WorkArgs {
    /// Parses the arguments after the program name.
    ///
    /// # Errors
    /// [`WorkArgError`] for a missing, unknown or out-of-range argument.
    pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<WorkArgs, WorkArgError> {
        let mut threads = None;
        let mut work_ms = None;
        let mut barrier_ms = None;
        let mut report = None;
        let mut it = args.iter().map(AsRef::as_ref);
        while let Some(flag) = it.next() {
            let mut value = || {
                it.next()
                    .ok_or_else(|| WorkArgError::MissingValue { flag: flag.into() })
            };
            match flag {
                "--threads" => {
                    threads = Some(number(flag, value()?, 1, MAX_THREADS.into())? as u32);
                }
                "--work-ms" => work_ms = Some(number(flag, value()?, 1, MAX_WORK_MS)?),
                "--barrier-ms" => barrier_ms = Some(number(flag, value()?, 1, MAX_WORK_MS)?),
                "--report" => report = Some(PathBuf::from(value()?)),
                other => return Err(WorkArgError::Unknown(other.into())),
            }
        }
        let threads = threads.ok_or(WorkArgError::MissingThreads)?;
        let work_ms = work_ms.ok_or(WorkArgError::MissingWork)?;
        if let Some(b) = barrier_ms.filter(|&b| b > work_ms) {
            return Err(WorkArgError::BarrierAboveWork {
                barrier_ms: b,
                work_ms,
            });
        }
        Ok(WorkArgs {
            threads,
            work_ms,
            barrier_ms,
            report,
        })
    }

    /// The command-line form `parse` reads back.
    #[must_use]
    pub fn to_args(&self) -> Vec<String> {
        let mut v = vec![
            "--threads".into(),
            self.threads.to_string(),
            "--work-ms".into(),
            self.work_ms.to_string(),
        ];
        if let Some(b) = self.barrier_ms {
            v.extend(["--barrier-ms".into(), b.to_string()]);
        }
        if let Some(r) = &self.report {
            v.extend(["--report".into(), r.display().to_string()]);
        }
        v
    }

    /// Rounds each thread does.
    #[must_use]
    pub fn rounds_per_thread(&self) -> u64 {
        self.work_ms * ROUNDS_PER_MS
    }

    /// The work between two barriers, in rounds (`None`: no barrier).
    #[must_use]
    pub fn barrier_rounds(&self) -> Option<u64> {
        self.barrier_ms.map(|b| b * ROUNDS_PER_MS)
    }
}

/// `rounds` steps of the hash chain from `state`. Each step depends on the last.
#[must_use]
pub fn hash_rounds(mut state: u64, rounds: u64) -> u64 {
    for i in 0..rounds {
        state = state.wrapping_add(i | 1);
        state ^= state >> 31;
        state = state.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        state ^= state >> 29;
    }
    state
}

/// The chunks a thread's work is cut into: barrier-sized pieces and the remainder (every thread
/// gets the same list, so every thread reaches every barrier).
#[must_use]
pub fn chunks(total: u64, barrier: Option<u64>) -> Vec<u64> {
    match barrier {
        None => vec![total],
        Some(b) => {
            let b = b.max(1);
            let mut v = vec![b; usize::try_from(total / b).unwrap_or(usize::MAX)];
            if total % b != 0 {
                v.push(total % b);
            }
            v
        }
    }
}

/// What `--report` writes.
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct WorkReport {
    pub threads: u32,
    pub rounds_per_thread: u64,
    pub barrier_rounds: Option<u64>,
    /// Each worker's finish, ns after the start, in thread order.
    pub finish_ns: Vec<u64>,
    /// The threads' final states xor'ed (printed so the work cannot be optimised away).
    pub checksum: u64,
}

/// Runs the work: `threads` threads, each `rounds_per_thread` rounds in barrier chunks.
///
/// # Panics
/// When a worker thread cannot be started or panics (the binary reports it and exits non-zero).
#[must_use]
pub fn run(args: &WorkArgs) -> WorkReport {
    let chunk_list = Arc::new(chunks(args.rounds_per_thread(), args.barrier_rounds()));
    let barrier = Arc::new(Barrier::new(args.threads as usize));
    let start = Instant::now();
    let handles: Vec<_> = (0..args.threads)
        .map(|t| {
            let chunk_list = Arc::clone(&chunk_list);
            let barrier = Arc::clone(&barrier);
            let sync = args.barrier_ms.is_some();
            std::thread::Builder::new()
                .name(format!("work-{t}"))
                .spawn(move || {
                    let mut state = u64::from(t) + 1;
                    for &n in chunk_list.iter() {
                        state = hash_rounds(state, n);
                        if sync {
                            barrier.wait();
                        }
                    }
                    let done = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    (std::hint::black_box(state), done)
                })
                .expect("spawn a worker thread")
        })
        .collect();
    let mut finish_ns = Vec::with_capacity(handles.len());
    let mut checksum = 0;
    for h in handles {
        let (state, done) = h.join().expect("a worker thread panicked");
        checksum ^= state;
        finish_ns.push(done);
    }
    WorkReport {
        threads: args.threads,
        rounds_per_thread: args.rounds_per_thread(),
        barrier_rounds: args.barrier_rounds(),
        finish_ns,
        checksum,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_back() {
        let a =
            WorkArgs::parse(&["--threads", "4", "--work-ms", "700", "--barrier-ms", "5"]).unwrap();
        assert_eq!(a.threads, 4);
        assert_eq!(a.barrier_rounds(), Some(5 * ROUNDS_PER_MS));
        assert_eq!(WorkArgs::parse(&a.to_args()).unwrap(), a);
    }

    #[test]
    fn bad_arguments_are_typed_errors() {
        let e = |a: &[&str]| WorkArgs::parse(a).unwrap_err();
        assert_eq!(e(&["--work-ms", "5"]), WorkArgError::MissingThreads);
        assert_eq!(e(&["--threads", "2"]), WorkArgError::MissingWork);
        assert!(matches!(
            e(&["--threads", "0", "--work-ms", "5"]),
            WorkArgError::BadNumber { .. }
        ));
        assert!(matches!(
            e(&["--threads", "65", "--work-ms", "5"]),
            WorkArgError::BadNumber { .. }
        ));
        assert!(matches!(
            e(&["--threads", "x", "--work-ms", "5"]),
            WorkArgError::BadNumber { .. }
        ));
        assert!(matches!(
            e(&["--threads"]),
            WorkArgError::MissingValue { .. }
        ));
        assert!(matches!(e(&["--frob"]), WorkArgError::Unknown(_)));
        assert_eq!(
            e(&["--threads", "2", "--work-ms", "5", "--barrier-ms", "6"]),
            WorkArgError::BarrierAboveWork {
                barrier_ms: 6,
                work_ms: 5
            }
        );
    }

    #[test]
    fn chunks_cover_the_work_exactly() {
        assert_eq!(chunks(10, None), vec![10]);
        assert_eq!(chunks(10, Some(3)), vec![3, 3, 3, 1]);
        assert_eq!(chunks(9, Some(3)), vec![3, 3, 3]);
        assert_eq!(chunks(10, Some(3)).iter().sum::<u64>(), 10);
    }

    #[test]
    fn hash_depends_on_its_input_and_length() {
        assert_ne!(hash_rounds(1, 100), hash_rounds(2, 100));
        assert_ne!(hash_rounds(1, 100), hash_rounds(1, 101));
        // Chunked work equals unchunked work only if the chain restarts its counter per chunk:
        // it does, so the checksum depends on the barrier size too (documented, harmless).
        assert_eq!(hash_rounds(7, 0), 7);
    }

    #[test]
    fn a_tiny_run_reports_every_thread() {
        let a =
            WorkArgs::parse(&["--threads", "3", "--work-ms", "1", "--barrier-ms", "1"]).unwrap();
        let r = run(&a);
        assert_eq!(r.finish_ns.len(), 3);
        assert_eq!(r.rounds_per_thread, ROUNDS_PER_MS);
    }
}
