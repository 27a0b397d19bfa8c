//! `lull live vtcfs`: seed 003's painting experiment (§VI-B-1) live on this machine — the painting
//! app replaying a stylus recording while N CPU hogs run on the same CPUs, under the stock kernel
//! (`stock`: the daemon runs no policy) or the interactive boost on the daemon's seam (`nice`:
//! eq. 6's nice; `slice`: a short custom slice).
//!
//! The harness runs, as threads of this process, the daemon (display server, headless; guiS off
//! in the daemon, the app's own runtime gates on), the stylus driver writing into the daemon's
//! evdev pipe, and the hogs; the app is a `lull-app painting` process. Every policy of one
//! invocation runs in turn with the same hogs and recording.
//!
//! **Priorities.** The daemon's thread runs at [`DAEMON_NICE`] and the driver at
//! [`DRIVER_NICE`] under every policy, stock included: a phone's input dispatcher and compositor
//! run raised, and the driver stands for the touch controller's interrupt, which no task
//! competes with. So the policies differ only in what they do to the app's threads. (Without
//! root the two stay at nice 0; the report says so.)
//!
//! **Hogs.** Busy loops at nice 0, one thread each, free to run on every CPU. Each counts its
//! loop iterations; `hog_throughput` is the hogs' iterations per second over the replay, in
//! millions, summed, and `hog_cpu_share` their CPU time over the replay's wall time × CPUs.
//!
//! Figures: `response_us`, injection → the stroke's `DRAW` acknowledged ({mean, p50, p99, max},
//! nearest rank); `handler_cpu_us_mean`, the painting handler's CPU time per stroke (the C the
//! boost is sized for).

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::live_stack::{DaemonSockets, LiveDaemon, LiveDaemonError, LiveStack, SetupError};
use lull_model::time::{NS_PER_MS, NS_PER_S};
use lull_os::sys::{self, thread_cpu_ns, EventFd};
use lull_sched::boost::seam::{BoostMode, BoostSeamConfig};
use lull_sched::boost::DEFAULT_C_NS;
use lull_workload::Trace;
use lulld::boost::BoostStatus;
use lulld::daemon::DaemonReport;
use lulld::seam::SeamReport;
use serde::Serialize;

use crate::app_proc::{AppProc, AppProcError};
use crate::live::LatencyUs;
use crate::stack;
use lull_apps::AppReport;

/// The daemon thread's nice under every policy: Android's `ANDROID_PRIORITY_URGENT_DISPLAY`
/// (−8, `system/core/libsystem/include/system/thread_defs.h`), at which its compositor and input
/// dispatcher run.
pub const DAEMON_NICE: i32 = -8;
/// The stylus driver's nice: the highest, as it stands for the device's interrupt.
pub const DRIVER_NICE: i32 = -20;
/// Most hogs: 64 threads on a machine of a few CPUs is far past any phone's load.
pub const MAX_HOGS: u32 = 64;
/// From the app's ready line to the first event: the hogs and the app's threads settle.
const LEAD_NS: u64 = 300 * NS_PER_MS;
/// After the last event, for its stroke and frame.
const TAIL_NS: u64 = NS_PER_S;
/// A hog publishes its count every 65,536 iterations (well under a millisecond).
const HOG_PUBLISH_MASK: u64 = 0xFFFF;

/// Which policy runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VtcfsPolicy {
    Stock,
    Nice,
    Slice,
}

impl VtcfsPolicy {
    pub const ALL: [VtcfsPolicy; 3] = [VtcfsPolicy::Stock, VtcfsPolicy::Nice, VtcfsPolicy::Slice];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            VtcfsPolicy::Stock => "stock",
            VtcfsPolicy::Nice => "nice",
            VtcfsPolicy::Slice => "slice",
        }
    }

    fn mode(self) -> Option<BoostMode> {
        match self {
            VtcfsPolicy::Stock => None,
            VtcfsPolicy::Nice => Some(BoostMode::Nice),
            VtcfsPolicy::Slice => Some(BoostMode::Slice),
        }
    }
}

/// Errors of `lull live vtcfs`.
#[derive(Debug, thiserror::Error)]
pub enum VtcfsLiveError {
    #[error("unknown app {0:?}; expected painting")]
    UnknownApp(String),
    #[error("unknown policy {0:?}; expected stock, nice or slice (or a comma-separated list)")]
    UnknownPolicy(String),
    #[error("--hogs {0} is outside 0..={MAX_HOGS}")]
    BadHogs(u32),
    #[error("--c-ms {0} is outside 1..=1000")]
    BadC(u64),
    #[error("--events {0}: at least 2 events are needed")]
    BadEvents(usize),
    #[error("--c-ms applies to the nice policy only")]
    CWithoutNice,
    #[error("--reps {0} is outside 1..=100")]
    BadReps(u32),
    #[error("hackbench: {0}")]
    Hackbench(String),
    #[error("the trace has no events")]
    EmptyTrace,
    #[error("cannot find the lull-app program at {0} (build it with `cargo build -p lull-apps`)")]
    AppBinary(PathBuf),
    #[error("app: {0}")]
    App(String),
    #[error("{0}")]
    AppProc(#[from] AppProcError),
    #[error("daemon: {0}")]
    Daemon(#[from] LiveDaemonError),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

impl VtcfsLiveError {
    /// A usage error (bad argument), not a failure to run.
    #[must_use]
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            VtcfsLiveError::UnknownApp(_)
                | VtcfsLiveError::UnknownPolicy(_)
                | VtcfsLiveError::BadHogs(_)
                | VtcfsLiveError::BadC(_)
                | VtcfsLiveError::BadEvents(_)
                | VtcfsLiveError::CWithoutNice
                | VtcfsLiveError::BadReps(_)
        )
    }
}

/// Parses `--app` (only `painting`).
///
/// # Errors
/// [`VtcfsLiveError::UnknownApp`].
pub fn parse_app(s: &str) -> Result<(), VtcfsLiveError> {
    if s == "painting" {
        Ok(())
    } else {
        Err(VtcfsLiveError::UnknownApp(s.into()))
    }
}

/// Parses `--policy`: one name or a comma-separated list, each once.
///
/// # Errors
/// [`VtcfsLiveError::UnknownPolicy`].
pub fn parse_policies(s: &str) -> Result<Vec<VtcfsPolicy>, VtcfsLiveError> {
    let mut out = Vec::new();
    for name in s.split(',') {
        let p = VtcfsPolicy::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .filter(|p| !out.contains(p))
            .ok_or_else(|| VtcfsLiveError::UnknownPolicy(s.into()))?;
        out.push(p);
    }
    Ok(out)
}

/// One invocation: every policy in turn.
#[derive(Clone, Debug)]
pub struct VtcfsLiveSpec {
    pub hogs: u32,
    pub policies: Vec<VtcfsPolicy>,
    /// C for the nice policy (the slice policy's budget too).
    pub c_ns: u64,
    /// The stylus recording.
    pub trace: Trace,
    pub app_binary: PathBuf,
}

impl VtcfsLiveSpec {
    /// Checks the numbers; `c_ms` is `None` for the seed's default C; `events` keeps the
    /// recording's first that many events.
    ///
    /// # Errors
    /// [`VtcfsLiveError`] naming the bad argument.
    pub fn new(
        hogs: u32,
        policies: Vec<VtcfsPolicy>,
        c_ms: Option<u64>,
        events: Option<usize>,
        mut trace: Trace,
        app_binary: PathBuf,
    ) -> Result<VtcfsLiveSpec, VtcfsLiveError> {
        if hogs > MAX_HOGS {
            return Err(VtcfsLiveError::BadHogs(hogs));
        }
        if let Some(c) = c_ms {
            if !(1..=1_000).contains(&c) {
                return Err(VtcfsLiveError::BadC(c));
            }
            if !policies.contains(&VtcfsPolicy::Nice) {
                return Err(VtcfsLiveError::CWithoutNice);
            }
        }
        if let Some(n) = events {
            if n < 2 {
                return Err(VtcfsLiveError::BadEvents(n));
            }
            trace.events.truncate(n);
        }
        if trace.events.is_empty() {
            return Err(VtcfsLiveError::EmptyTrace);
        }
        Ok(VtcfsLiveSpec {
            hogs,
            policies,
            c_ns: c_ms.map_or(DEFAULT_C_NS, |c| c * NS_PER_MS),
            trace,
            app_binary,
        })
    }
}

/// One policy's figures: the keys the issue names, then extra keys.
#[derive(Clone, Debug, Serialize)]
pub struct VtcfsLiveReport {
    pub policy: VtcfsPolicy,
    pub hogs: u32,
    /// Events injected.
    pub events: u64,
    /// Injection → the stroke's frame drawn, µs.
    pub response_us: LatencyUs,
    /// The same over every event injected, an event never drawn counted at [`TAIL_NS`]: it was
    /// still unanswered when the app was stopped, at least that long after its injection, so
    /// this is a lower bound. A scheduler that starves the app draws few strokes, and those
    /// early; `response_us` alone would reward it.
    pub response_all_us: LatencyUs,
    /// The hogs' loop iterations over the replay, millions per second, summed.
    pub hog_throughput: f64,
    /// Extra: the hogs' CPU time over the replay's wall time × CPUs.
    pub hog_cpu_share: f64,
    /// Extra: C, ms (nice and slice policies).
    pub c_ms: Option<f64>,
    /// Extra: strokes drawn (responses) and events the app was told it lost.
    pub responses: u64,
    pub dropped: u64,
    /// Extra: the painting handler's CPU time per stroke, µs (mean, p99).
    pub handler_cpu_us_mean: Option<f64>,
    pub handler_cpu_us_p99: Option<f64>,
    /// Extra: the nice the daemon and the driver ran at (`None`: the kernel refused; not root).
    pub daemon_nice: Option<i32>,
    pub driver_nice: Option<i32>,
    /// Extra: the 1-minute load average before the run (a busy machine skews every figure).
    pub loadavg_before: Option<f64>,
    /// Extra: what the boost found on this machine, and the seam's counts.
    pub boost: Option<BoostStatus>,
    pub seam: Option<SeamReport>,
}

pub(crate) fn loadavg_1min() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// One hog: its published iteration count and CPU time.
struct Hog {
    loops: Arc<AtomicU64>,
    cpu_ns: Arc<AtomicU64>,
    handle: JoinHandle<()>,
}

fn start_hogs(n: u32, stop: &Arc<AtomicBool>) -> std::io::Result<Vec<Hog>> {
    (0..n)
        .map(|i| {
            let loops = Arc::new(AtomicU64::new(0));
            let cpu_ns = Arc::new(AtomicU64::new(0));
            let (l, c, s) = (Arc::clone(&loops), Arc::clone(&cpu_ns), Arc::clone(stop));
            let handle = thread::Builder::new()
                .name(format!("lull-hog-{i}"))
                .spawn(move || {
                    let mut x = u64::from(i) | 1;
                    let mut count = 0u64;
                    loop {
                        // A linear congruential step: integer work the compiler cannot drop.
                        x = std::hint::black_box(
                            x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1),
                        );
                        count += 1;
                        if count & HOG_PUBLISH_MASK == 0 {
                            l.store(count, Ordering::Relaxed);
                            c.store(thread_cpu_ns(), Ordering::Relaxed);
                            if s.load(Ordering::Relaxed) {
                                return;
                            }
                        }
                    }
                })?;
            Ok(Hog {
                loops,
                cpu_ns,
                handle,
            })
        })
        .collect()
}

fn hog_totals(hogs: &[Hog]) -> (u64, u64) {
    hogs.iter().fold((0, 0), |(l, c), h| {
        (
            l + h.loops.load(Ordering::Relaxed),
            c + h.cpu_ns.load(Ordering::Relaxed),
        )
    })
}

/// Runs every policy of `spec` in turn.
///
/// # Errors
/// [`VtcfsLiveError`] when something cannot be set up or the app fails.
pub fn run(spec: &VtcfsLiveSpec) -> Result<Vec<VtcfsLiveReport>, VtcfsLiveError> {
    if !spec.app_binary.is_file() {
        return Err(VtcfsLiveError::AppBinary(spec.app_binary.clone()));
    }
    spec.policies.iter().map(|&p| run_one(spec, p)).collect()
}

/// The running machinery of one policy: the daemon, the hogs, the painting app and the stylus
/// driver (also `lull live vtcfs-overhead`'s, with no hogs).
pub(crate) struct Stack {
    daemon: Option<LiveDaemon>,
    /// Holds the sockets when there is no runtime directory; removed on drop.
    _scratch: lull_os::fileout::ScratchDir,
    hog_stop: Arc<AtomicBool>,
    hogs: Vec<Hog>,
    app: Option<AppProc>,
    driver: Option<JoinHandle<std::io::Result<()>>>,
    driver_stop: Arc<EventFd>,
    /// When the first event is due.
    pub(crate) t0_ns: u64,
    boost: Option<BoostSeamConfig>,
    boost_status: Option<BoostStatus>,
    daemon_nice: Option<i32>,
    driver_nice: Option<i32>,
}

impl Drop for Stack {
    fn drop(&mut self) {
        let _ = self.driver_stop.signal();
        self.hog_stop.store(true, Ordering::Relaxed);
        if let Some(d) = &self.daemon {
            d.request_stop();
        }
    }
}

/// What a stopped [`Stack`] left.
pub(crate) struct Stopped {
    pub(crate) app: AppReport,
    pub(crate) daemon: Option<DaemonReport>,
}

impl Stack {
    /// Starts the daemon (with the boost of `policy`), `hogs` hogs, the painting app, and the
    /// driver replaying `trace` from [`LEAD_NS`] on.
    pub(crate) fn start(
        policy: VtcfsPolicy,
        c_ns: u64,
        hogs: u32,
        trace: &Trace,
        app_binary: &std::path::Path,
    ) -> Result<Stack, VtcfsLiveError> {
        let boost = policy.mode().map(|mode| BoostSeamConfig {
            c_ns,
            ..BoostSeamConfig::new(mode)
        });
        let (device_r, device_w) = sys::pipe(false)?;
        let scratch = lull_os::fileout::ScratchDir::new("lull-vtcfs")?;
        let stack = LiveStack::new(DaemonSockets::fresh("vtcfs", scratch.path()));
        let kds_path = stack.sockets().kds.clone();
        let seam = boost;
        let (daemon, (boost_status, daemon_nice)) = stack.start(move |d| {
            let nice = sys::set_thread_nice(sys::gettid(), DAEMON_NICE)
                .ok()
                .map(|()| DAEMON_NICE);
            crate::live_stack::feed_if_loaded(d)?;
            let status = match &seam {
                Some(c) => Some(d.enable_boost(c)?),
                None => None,
            };
            d.add_evdev(device_r)?;
            Ok::<_, SetupError>((status, nice))
        })?;
        let hog_stop = Arc::new(AtomicBool::new(false));
        let mut stack = Stack {
            daemon: Some(daemon),
            _scratch: scratch,
            hog_stop: Arc::clone(&hog_stop),
            hogs: Vec::new(),
            app: None,
            driver: None,
            driver_stop: Arc::new(EventFd::new()?),
            t0_ns: 0,
            boost,
            boost_status,
            daemon_nice,
            driver_nice: None,
        };
        // The hogs, then the app.
        stack.hogs = start_hogs(hogs, &hog_stop)?;
        let mut c = Command::new(app_binary);
        c.arg("painting")
            .arg("--model")
            .arg("esm-kds-guis")
            .arg("--kds-socket")
            .arg(&kds_path);
        stack.app = Some(AppProc::spawn("painting", c)?);
        // The stylus.
        let t0 = sys::monotonic_ns() + LEAD_NS;
        let (replay_tx, _replay_rx) = mpsc::channel();
        let (nice_tx, nice_rx) = mpsc::channel();
        let s = Arc::clone(&stack.driver_stop);
        let trace = trace.clone();
        stack.driver = Some(thread::Builder::new().name("lull-driver".into()).spawn(
            move || {
                let nice = sys::set_thread_nice(sys::gettid(), DRIVER_NICE)
                    .ok()
                    .map(|()| DRIVER_NICE);
                let _ = nice_tx.send(nice);
                stack::run_driver(Some(&trace), t0, device_w, &s, replay_tx)
            },
        )?);
        stack.driver_nice = nice_rx.recv().ok().flatten();
        stack.t0_ns = t0;
        Ok(stack)
    }

    /// The hogs' iterations and CPU time so far.
    fn hog_totals(&self) -> (u64, u64) {
        hog_totals(&self.hogs)
    }

    /// Stops the driver, the app (its report), the hogs and the daemon (its report).
    pub(crate) fn stop(mut self) -> Result<Stopped, VtcfsLiveError> {
        let _ = self.driver_stop.signal();
        if let Some(d) = self.driver.take() {
            let _ = d.join();
        }
        let app = match self.app.take() {
            Some(a) => a.stop()?,
            None => return Err(VtcfsLiveError::App("not started".into())),
        };
        self.hog_stop.store(true, Ordering::Relaxed);
        for h in std::mem::take(&mut self.hogs) {
            let _ = h.handle.join();
        }
        Ok(Stopped {
            app,
            daemon: self.daemon.take().and_then(|d| d.join().ok()),
        })
    }
}

/// `answered_ns` padded to `events` samples with [`TAIL_NS`] (see
/// [`VtcfsLiveReport::response_all_us`]).
fn with_unanswered(answered_ns: &[u64], events: usize) -> Vec<u64> {
    let mut all = answered_ns.to_vec();
    if all.len() < events {
        all.resize(events, TAIL_NS);
    }
    all
}

pub(crate) fn sleep_until(at_ns: u64) {
    let now = sys::monotonic_ns();
    if at_ns > now {
        thread::sleep(Duration::from_nanos(at_ns - now));
    }
}

fn run_one(spec: &VtcfsLiveSpec, policy: VtcfsPolicy) -> Result<VtcfsLiveReport, VtcfsLiveError> {
    let loadavg_before = loadavg_1min();
    let stack = Stack::start(policy, spec.c_ns, spec.hogs, &spec.trace, &spec.app_binary)?;
    let t0 = stack.t0_ns;
    sleep_until(t0);
    let (loops0, cpu0) = stack.hog_totals();
    let span_ns = spec.trace.span_ns();
    sleep_until(t0 + span_ns);
    let (loops1, cpu1) = stack.hog_totals();
    let window_ns = (sys::monotonic_ns() - t0).max(1);
    sleep_until(t0 + span_ns + TAIL_NS);
    let (boost, boost_status) = (stack.boost, stack.boost_status.clone());
    let (daemon_nice, driver_nice) = (stack.daemon_nice, stack.driver_nice);
    let Stopped {
        app: report,
        daemon: daemon_report,
    } = stack.stop()?;

    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as f64;
    let handler = report
        .work
        .as_ref()
        .map(|w| LatencyUs::of(&w.handler_cpu_ns))
        .unwrap_or_default();
    Ok(VtcfsLiveReport {
        policy,
        hogs: spec.hogs,
        events: spec.trace.events.len() as u64,
        response_us: LatencyUs::of(&report.frame_latencies_ns),
        response_all_us: LatencyUs::of(&with_unanswered(
            &report.frame_latencies_ns,
            spec.trace.events.len(),
        )),
        hog_throughput: (loops1 - loops0) as f64 / 1e6 / (window_ns as f64 / NS_PER_S as f64),
        hog_cpu_share: (cpu1 - cpu0) as f64 / (window_ns as f64 * cpus),
        c_ms: boost.map(|b| b.c_ns as f64 / NS_PER_MS as f64),
        responses: report.frame_latencies_ns.len() as u64,
        dropped: report.dropped_reported,
        handler_cpu_us_mean: handler.mean,
        handler_cpu_us_p99: handler.p99,
        daemon_nice,
        driver_nice,
        loadavg_before,
        boost: boost_status,
        seam: daemon_report.and_then(|d| d.seam),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace() -> Trace {
        lull_workload::spiral::stylus_spiral()
    }

    #[test]
    fn unanswered_events_count_at_the_tail() {
        assert_eq!(with_unanswered(&[5, 7], 4), [5, 7, TAIL_NS, TAIL_NS]);
        assert_eq!(with_unanswered(&[5, 7, 9], 2), [5, 7, 9]);
    }

    #[test]
    fn arguments_are_checked() {
        assert!(parse_app("painting").is_ok());
        assert!(parse_app("tracking").unwrap_err().is_usage());
        assert_eq!(
            parse_policies("stock,nice").unwrap(),
            [VtcfsPolicy::Stock, VtcfsPolicy::Nice]
        );
        assert!(parse_policies("stock,stock").unwrap_err().is_usage());
        assert!(parse_policies("eevdf").unwrap_err().is_usage());
        assert!(parse_policies("").unwrap_err().is_usage());
        let spec = |hogs, p: &[VtcfsPolicy], c, ev| {
            VtcfsLiveSpec::new(hogs, p.to_vec(), c, ev, trace(), PathBuf::from("lull-app"))
        };
        let s = spec(2, &[VtcfsPolicy::Nice], Some(3), Some(50)).unwrap();
        assert_eq!((s.c_ns, s.trace.events.len()), (3 * NS_PER_MS, 50));
        assert_eq!(
            spec(2, &[VtcfsPolicy::Stock], None, None).unwrap().c_ns,
            DEFAULT_C_NS
        );
        for bad in [
            spec(MAX_HOGS + 1, &[VtcfsPolicy::Stock], None, None),
            spec(2, &[VtcfsPolicy::Nice], Some(0), None),
            spec(2, &[VtcfsPolicy::Nice], Some(1_001), None),
            spec(2, &[VtcfsPolicy::Stock], Some(3), None),
            spec(2, &[VtcfsPolicy::Stock], None, Some(1)),
        ] {
            assert!(bad.unwrap_err().is_usage());
        }
    }

    #[test]
    fn a_missing_app_binary_is_named() {
        let s = VtcfsLiveSpec::new(
            0,
            vec![VtcfsPolicy::Stock],
            None,
            Some(10),
            trace(),
            PathBuf::from("/nonexistent/lull-app"),
        )
        .unwrap();
        assert!(matches!(run(&s), Err(VtcfsLiveError::AppBinary(_))));
    }
}
