//! `watch`: samples one process's threads every interval until it exits (a clean end) or the
//! time asked is up.

use std::os::fd::AsRawFd;

use lull_os::sys;
use serde::Serialize;

use crate::error::CtlError;
use crate::registry::{Change, FollowMode, Registry, RegistryCounters, Sample};
use crate::wakeups::{wait_set, TOKEN_CONNECTOR, TOKEN_EXIT, TOKEN_TIMER};

/// What to watch.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct WatchOptions {
    pub pid: i32,
    /// The sampling interval (at least 1 ms: [`MIN_INTERVAL_NS`]).
    pub interval_ns: u64,
    /// Stop after this long; `None`: until the process exits.
    pub duration_ns: Option<u64>,
}

/// The shortest sampling interval taken: 1 ms, the timer slack of a normal thread being 50 µs
/// and one sample of a few dozen threads taking tens of microseconds (`lull ctl overhead`).
pub const MIN_INTERVAL_NS: u64 = 1_000_000;

/// How a watch ended, and what it saw.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct WatchSummary {
    pub pid: i32,
    /// The process exited during the watch (a clean end), rather than the time running out.
    pub process_exited: bool,
    pub duration_ns: u64,
    pub follow: FollowMode,
    /// Whether `work_ns` is scaled CPU time here; `unscaled_reason` says why not.
    pub scaled: bool,
    pub unscaled_reason: Option<String>,
    pub registry: RegistryCounters,
    /// Mean cost of one sample of every thread (reading and scaling), in nanoseconds.
    pub sample_cost_ns_mean: u64,
    /// Threads born and ended during the watch.
    pub born: u64,
    pub died: u64,
}

/// Watches `opts.pid`, calling `on_sample` for every thread at every sample.
///
/// # Errors
/// The registration's ([`Registry::register`]), an interval below [`MIN_INTERVAL_NS`]
/// ([`CtlError::Io`] with `InvalidInput`), and a failure of the timer or of epoll.
pub fn watch(
    opts: WatchOptions,
    mut on_sample: impl FnMut(&Sample),
) -> Result<WatchSummary, CtlError> {
    if opts.interval_ns < MIN_INTERVAL_NS {
        return Err(CtlError::Io {
            what: format!("sample every {} ns", opts.interval_ns),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the interval must be at least 1 ms",
            ),
        });
    }
    let io = |what: &'static str| move |e| CtlError::io(what, e);
    let mut reg = Registry::new(false);
    reg.register(opts.pid)?;
    let (epoll, timer) = wait_set(&reg)?;
    let start = sys::monotonic_ns();
    timer
        .set_abs(start + opts.interval_ns, opts.interval_ns)
        .map_err(io("arm the sampling timer"))?;
    // The process's end wakes the loop at once; without pidfds it shows at the next sample.
    let pidfd = sys::pidfd_open(opts.pid).ok();
    if let Some(fd) = &pidfd {
        epoll
            .add(fd.as_raw_fd(), TOKEN_EXIT)
            .map_err(io("watch the process's end"))?;
    }
    let end = opts.duration_ns.map(|d| start + d);
    let (mut samples, mut changes, mut ready) = (Vec::new(), Vec::new(), Vec::new());
    let (mut cost_ns, mut born, mut died) = (0u64, 0u64, 0u64);
    let mut count = |changes: &mut Vec<Change>| {
        for c in changes.drain(..) {
            match c {
                Change::Born { .. } => born += 1,
                Change::Died { .. } => died += 1,
            }
        }
    };
    let process_exited = loop {
        epoll.wait_forever(&mut ready).map_err(io("wait"))?;
        if ready.contains(&TOKEN_CONNECTOR) {
            reg.process_events(&mut changes);
            count(&mut changes);
        }
        if ready.contains(&TOKEN_EXIT) {
            break true;
        }
        if ready.contains(&TOKEN_TIMER) {
            let _ = timer.take_expirations();
            let t0 = sys::monotonic_ns();
            samples.clear();
            reg.sample(&mut samples, &mut changes);
            cost_ns += sys::monotonic_ns() - t0;
            count(&mut changes);
            for s in &samples {
                on_sample(s);
            }
            if !reg.any_alive() {
                break true;
            }
            if end.is_some_and(|e| sys::monotonic_ns() >= e) {
                break false;
            }
        }
    };
    let counters = reg.counters();
    Ok(WatchSummary {
        pid: opts.pid,
        process_exited,
        duration_ns: sys::monotonic_ns() - start,
        follow: reg.follow_mode().clone(),
        scaled: reg.speeds().scaled(),
        unscaled_reason: reg.speeds().unscaled_reason().map(str::to_owned),
        registry: counters,
        sample_cost_ns_mean: cost_ns.checked_div(counters.samples).unwrap_or(0),
        born,
        died,
    })
}
