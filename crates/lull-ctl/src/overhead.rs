//! What sensing costs: (a) one sample of one thread, over a process of parked threads sampled
//! many times, and (b) the slowdown of a fixed-work CPU-bound program watched every 10 ms,
//! against the seed's ≈ 3 % (seed 004 §3.1: "the measured performance overhead of our tool on
//! the system for monitoring is about 3%").
//!
//! The programs measured are given as commands ([`OverheadOptions`]), so that a caller can run
//! [`burn`] and [`park`] in a process of their own (`lull ctl burn`): plain and watched runs
//! alternate, so a drift of the machine's speed over the measurement falls on both alike.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use lull_model::stats;
use lull_os::sys;
use serde::Serialize;

use crate::error::CtlError;
use crate::registry::{FollowMode, Registry};
use crate::watch::{watch, WatchOptions};

/// Seed 004 §3.1: the monitoring overhead measured on the Odroid-XU3, in percent.
pub const SEED_MONITOR_OVERHEAD_PCT: f64 = 3.0;

/// The sampling interval of the slowdown measurement: 10 ms, the controller's
/// default (`lull_sched::controller::DEFAULT_SAMPLE_PERIOD_NS`).
pub const WATCH_INTERVAL_NS: u64 = lull_sched::controller::DEFAULT_SAMPLE_PERIOD_NS;

/// Threads of the parked process whose sampling cost is measured: 8, the seed's thread count.
pub const SAMPLE_THREADS: usize = 8;

/// What to measure with.
#[derive(Clone, Debug)]
pub struct OverheadOptions {
    /// A fixed-work CPU-bound program ([`burn`]).
    pub burn: Vec<OsString>,
    /// A program that starts [`SAMPLE_THREADS`] threads that block, prints one line once they
    /// are all there, and exits when its standard input closes ([`park`]).
    pub park: Vec<OsString>,
    /// Plain and watched runs of `burn`, each.
    pub reps: usize,
    /// Samples of the parked process timed.
    pub samples: usize,
}

/// What was measured.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct OverheadReport {
    /// Mean nanoseconds to sample one thread (read `schedstat` and `stat`, scale).
    pub sample_ns_per_thread: u64,
    /// Threads in each timed sample (the parked threads and the main thread).
    pub sample_threads: usize,
    pub samples: usize,
    /// Completion times of the plain and the watched runs, in run order.
    pub plain_ns: Vec<u64>,
    pub watched_ns: Vec<u64>,
    pub plain_median_ns: u64,
    pub watched_median_ns: u64,
    /// (watched median − plain median) / plain median, in percent.
    pub slowdown_pct: f64,
    pub seed_overhead_pct: f64,
    pub interval_ns: u64,
    pub follow: FollowMode,
}

fn spawn(cmd: &[OsString], stdin: Stdio, stdout: Stdio) -> Result<std::process::Child, CtlError> {
    let Some((p, a)) = cmd.split_first() else {
        return Err(CtlError::Spawn {
            command: String::new(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "no command given"),
        });
    };
    Command::new(p)
        .args(a)
        .stdin(stdin)
        .stdout(stdout)
        .spawn()
        .map_err(|source| CtlError::Spawn {
            command: p.to_string_lossy().into_owned(),
            source,
        })
}

/// The median of `runs` completion times, ns (0 for none).
fn median_ns(runs: &[u64]) -> u64 {
    let ns: Vec<f64> = runs.iter().map(|&n| n as f64).collect();
    stats::median(&ns).map_or(0, |m| m.round() as u64)
}

/// Measures; see the module docs.
///
/// # Errors
/// A command that cannot start or fails, and the watch's errors.
pub fn measure(opts: &OverheadOptions) -> Result<OverheadReport, CtlError> {
    // (a) The cost of a sample.
    let mut parked = spawn(&opts.park, Stdio::piped(), Stdio::piped())?;
    let mut line = String::new();
    if let Some(out) = parked.stdout.take() {
        BufReader::new(out)
            .read_line(&mut line)
            .map_err(|e| CtlError::io("read the parked program's ready line", e))?;
    }
    let pid = i32::try_from(parked.id()).unwrap_or(i32::MAX);
    let mut reg = Registry::new(false);
    let follow = reg.follow_mode().clone();
    let threads = reg.register(pid)?.len();
    let (mut samples, mut changes) = (Vec::new(), Vec::new());
    let samples_n = opts.samples.max(1);
    let t0 = sys::monotonic_ns();
    for _ in 0..samples_n {
        samples.clear();
        reg.sample(&mut samples, &mut changes);
    }
    let total = sys::monotonic_ns() - t0;
    drop(parked.stdin.take());
    let _ = parked.wait();
    let per_thread = total / (samples_n as u64 * threads.max(1) as u64);

    // (b) The slowdown of a CPU-bound program watched every 10 ms.
    let (mut plain, mut watched) = (Vec::new(), Vec::new());
    for _ in 0..opts.reps.max(1) {
        let t = sys::monotonic_ns();
        let status = spawn(&opts.burn, Stdio::null(), Stdio::null())?
            .wait()
            .map_err(|e| CtlError::io("wait for the CPU-bound program", e))?;
        plain.push(sys::monotonic_ns() - t);
        check(status)?;

        let t = sys::monotonic_ns();
        let mut child = spawn(&opts.burn, Stdio::null(), Stdio::null())?;
        let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        // A program that ends before it is registered was watched for no time: counted as it is.
        let _ = watch(
            WatchOptions {
                pid,
                interval_ns: WATCH_INTERVAL_NS,
                duration_ns: None,
            },
            |_| {},
        );
        let status = child
            .wait()
            .map_err(|e| CtlError::io("wait for the CPU-bound program", e))?;
        watched.push(sys::monotonic_ns() - t);
        check(status)?;
    }
    let (pm, wm) = (median_ns(&plain), median_ns(&watched));
    Ok(OverheadReport {
        sample_ns_per_thread: per_thread,
        sample_threads: threads,
        samples: samples_n,
        plain_median_ns: pm,
        watched_median_ns: wm,
        slowdown_pct: stats::change_pct(pm as f64, wm as f64).unwrap_or(0.0),
        plain_ns: plain,
        watched_ns: watched,
        seed_overhead_pct: SEED_MONITOR_OVERHEAD_PCT,
        interval_ns: WATCH_INTERVAL_NS,
        follow,
    })
}

fn check(status: std::process::ExitStatus) -> Result<(), CtlError> {
    if status.success() {
        Ok(())
    } else {
        Err(CtlError::Io {
            what: "run the CPU-bound program".into(),
            source: std::io::Error::other(format!("it ended with {status}")),
        })
    }
}

/// A fixed amount of CPU-bound work: `threads` threads, each `rounds` rounds of a 64-bit
/// multiply-xorshift hash (no memory traffic, no synchronisation: seed 004's Blackscholes
/// kind). Returns the hashes folded together, for the caller to print so the work is not
/// optimised away.
#[must_use]
pub fn burn(threads: usize, rounds: u64) -> u64 {
    let handles: Vec<_> = (0..threads.max(1) as u64)
        .map(|i| std::thread::spawn(move || hash_rounds(i, rounds)))
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().unwrap_or(0))
        .fold(0, |a, b| a ^ b)
}

/// `rounds` rounds of the hash from `seed`.
#[must_use]
pub fn hash_rounds(seed: u64, rounds: u64) -> u64 {
    let mut x = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    for _ in 0..rounds {
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 29;
    }
    std::hint::black_box(x)
}

/// Starts `threads` threads blocked reading a pipe nobody writes, prints `ready` on standard
/// output, and returns when standard input closes (the threads end with the process).
///
/// # Errors
/// A failure to make the pipe or to write the line.
pub fn park(threads: usize) -> std::io::Result<()> {
    let (r, _w) = sys::pipe(false)?;
    let r = std::sync::Arc::new(r);
    for _ in 0..threads {
        let r = std::sync::Arc::clone(&r);
        std::thread::spawn(move || {
            let mut b = [0u8; 1];
            let _ = sys::read(std::os::fd::AsRawFd::as_raw_fd(&*r), &mut b);
        });
    }
    // The threads exist once spawned (clone has returned); blocked or about to block is the same
    // to a sampler.
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    let mut sink = Vec::new();
    std::io::stdin().read_to_end(&mut sink)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_deterministic_and_depends_on_its_rounds() {
        assert_eq!(hash_rounds(1, 1000), hash_rounds(1, 1000));
        assert_ne!(hash_rounds(1, 1000), hash_rounds(1, 1001));
        assert_eq!(burn(2, 1000), hash_rounds(0, 1000) ^ hash_rounds(1, 1000));
    }

    #[test]
    fn median_takes_the_middle() {
        assert_eq!(median_ns(&[5, 1, 3]), 3);
        assert_eq!(median_ns(&[4, 1, 3, 2]), 3);
        assert_eq!(median_ns(&[]), 0);
    }
}
