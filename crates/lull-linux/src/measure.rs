//! Wake-ups and CPU time of threads, read from the kernel.
//!
//! For each thread, `/proc/self/task/TID/schedstat` gives the nanoseconds it ran on a CPU, and
//! `/proc/self/task/TID/status` its `voluntary_ctxt_switches`: the times it blocked. A thread
//! that is blocked at both ends of a window has been woken exactly as many times as it blocked in
//! between, so the difference of voluntary switches over the window is its wake-up count.
//! (Involuntary switches are preemptions of a running thread, not wake-ups, and are reported
//! apart.)

use std::fs;
use std::io;

use lull_model::time::{ns_to_ms, NS_PER_S};

use crate::sys::gettid;

/// Why a thread's counters could not be read.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error("cannot read {path}: {source}")]
    Read { path: String, source: io::Error },
    #[error("{path} has no {field} (kernel without schedstats?)")]
    Missing { path: String, field: &'static str },
}

/// One thread's kernel counters at one moment.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct ThreadSample {
    pub run_ns: u64,
    pub voluntary: u64,
    pub involuntary: u64,
    /// Scheduler state letter from `/proc/.../stat` (`S` = sleeping).
    pub state: char,
}

fn read(path: String) -> Result<(String, String), MeasureError> {
    match fs::read_to_string(&path) {
        Ok(s) => Ok((s, path)),
        Err(source) => Err(MeasureError::Read { path, source }),
    }
}

/// Reads the counters of thread `tid` of this process.
///
/// # Errors
/// [`MeasureError`] when the files are missing (thread gone) or lack a field.
pub fn sample(tid: i32) -> Result<ThreadSample, MeasureError> {
    let (schedstat, path) = read(format!("/proc/self/task/{tid}/schedstat"))?;
    let run_ns = schedstat
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or(MeasureError::Missing {
            path,
            field: "run time",
        })?;
    let (status, path) = read(format!("/proc/self/task/{tid}/status"))?;
    let field = |name: &'static str| -> Result<u64, MeasureError> {
        status
            .lines()
            .find_map(|l| {
                l.strip_prefix(name)
                    .map(|v| v.trim_start_matches(':').trim().parse().ok())
            })
            .flatten()
            .ok_or(MeasureError::Missing {
                path: path.clone(),
                field: name,
            })
    };
    let voluntary = field("voluntary_ctxt_switches")?;
    let involuntary = field("nonvoluntary_ctxt_switches")?;
    let (stat, path) = read(format!("/proc/self/task/{tid}/stat"))?;
    // The state follows the parenthesised command name, which may itself contain spaces.
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].trim_start().chars().next())
        .ok_or(MeasureError::Missing {
            path,
            field: "state",
        })?;
    Ok(ThreadSample {
        run_ns,
        voluntary,
        involuntary,
        state,
    })
}

/// A named thread of the stack under measurement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackThread {
    pub role: String,
    pub tid: i32,
}

impl StackThread {
    /// The calling thread, under `role`.
    #[must_use]
    pub fn current(role: &str) -> StackThread {
        StackThread {
            role: role.to_owned(),
            tid: gettid(),
        }
    }
}

/// One thread's share of a measured window.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ThreadDelta {
    pub role: String,
    pub wakeups: u64,
    pub wakeups_per_s: f64,
    pub involuntary_switches: u64,
    pub cpu_ms: f64,
}

/// Counters of a set of threads at the start of a window.
#[derive(Clone, Debug)]
pub struct Window {
    threads: Vec<(StackThread, ThreadSample)>,
    start_ns: u64,
}

impl Window {
    /// Samples every thread now.
    ///
    /// # Errors
    /// As [`sample`].
    pub fn open(threads: &[StackThread]) -> Result<Window, MeasureError> {
        let start_ns = crate::sys::monotonic_ns();
        let threads = threads
            .iter()
            .map(|t| sample(t.tid).map(|s| (t.clone(), s)))
            .collect::<Result<_, _>>()?;
        Ok(Window { threads, start_ns })
    }

    /// Samples every thread again; returns the per-thread differences and the window length.
    ///
    /// # Errors
    /// As [`sample`].
    pub fn close(&self) -> Result<(Vec<ThreadDelta>, u64), MeasureError> {
        let end_ns = crate::sys::monotonic_ns();
        let secs = (end_ns - self.start_ns) as f64 / NS_PER_S as f64;
        let mut out = Vec::new();
        for (t, before) in &self.threads {
            let after = sample(t.tid)?;
            let wakeups = after.voluntary - before.voluntary;
            out.push(ThreadDelta {
                role: t.role.clone(),
                wakeups,
                wakeups_per_s: if secs > 0.0 {
                    wakeups as f64 / secs
                } else {
                    0.0
                },
                involuntary_switches: after.involuntary - before.involuntary,
                cpu_ms: ns_to_ms(after.run_ns - before.run_ns),
            });
        }
        Ok((out, end_ns - self.start_ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_thread_counts_one_wakeup_per_block() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (ack_tx, ack_rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            tid_tx.send(gettid()).unwrap();
            while rx.recv().is_ok() {
                ack_tx.send(()).unwrap();
            }
        });
        let tid = tid_rx.recv().unwrap();
        let s = sample(tid).unwrap();
        assert!(s.voluntary >= 1 || s.run_ns > 0);
        for _ in 0..3 {
            tx.send(()).unwrap();
            ack_rx.recv().unwrap();
        }
        let after = sample(tid).unwrap();
        // Each message wakes the thread at least once (it blocks again before our next send is
        // acknowledged, except when it had not yet blocked).
        assert!(after.voluntary >= s.voluntary + 2, "{s:?} -> {after:?}");
        drop(tx);
        h.join().unwrap();
    }
}
