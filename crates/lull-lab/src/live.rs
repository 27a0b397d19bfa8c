//! `lull live latency` and `lull live idle`: run one delivery model end to end on this machine
//! and measure latency, wake-ups and CPU time from the kernel.
//!
//! The stack's parts — device driver, daemon or hub, app — are threads of this process talking
//! over the same pipes and Unix sockets they would use as separate processes (`lulld` runs the
//! same daemon standalone). Every thread of the stack is measured through
//! `/proc/self/task/TID/{schedstat,status}` (see [`crate::measure`]); the thread that runs the
//! harness is not part of the stack and is not counted.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use lull_apps::START_LEAD_NS;
use lull_model::stats::{change_pct, nearest_rank, CDF_PERCENTS};
use lull_model::time::{ns_to_us, NS_PER_S, NS_PER_US};
use lull_os::procfs::MeasureError;
use lull_os::sys::{self, EventFd};

use crate::live_stack::{DaemonSockets, LiveDaemon, LiveStack, SetupError};
use lull_workload::{Trace, TraceError};
use lulld::daemon::DaemonError;

use crate::measure::{self, StackThread, ThreadDelta, Window};
use crate::stack::{self, AppCell, TrackingApp, LIVE_MODELS};
use lull_model::DeliveryModel;

/// How long after the last event the harness waits for the app before declaring the rest lost:
/// many pull periods.
pub const DRAIN_NS: u64 = 2 * NS_PER_S;
/// Longest idle run accepted.
pub const MAX_IDLE_S: u64 = 3600;

/// The workloads of `lull live latency`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
pub enum Workload {
    #[serde(rename = "tracking-10s")]
    Tracking10s,
    #[serde(rename = "tracking-20s")]
    Tracking20s,
    #[serde(rename = "tracking-60s")]
    Tracking60s,
}

impl Workload {
    pub const ALL: [Workload; 3] = [
        Workload::Tracking10s,
        Workload::Tracking20s,
        Workload::Tracking60s,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Workload::Tracking10s => "tracking-10s",
            Workload::Tracking20s => "tracking-20s",
            Workload::Tracking60s => "tracking-60s",
        }
    }

    #[must_use]
    pub fn from_name(s: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == s)
    }

    /// The length the stylus recording is scaled to (seed 000, chapter 6).
    #[must_use]
    pub fn span_ns(self) -> u64 {
        match self {
            Workload::Tracking10s => 10 * NS_PER_S,
            Workload::Tracking20s => 20 * NS_PER_S,
            Workload::Tracking60s => 60 * NS_PER_S,
        }
    }
}

/// Errors of a live run.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error("unknown model {0:?}; expected one of {known}", known = DeliveryModel::names(&LIVE_MODELS))]
    UnknownModel(String),
    #[error("unknown workload {0:?}; expected one of tracking-10s, tracking-20s, tracking-60s")]
    UnknownWorkload(String),
    #[error("idle seconds must be 1..={MAX_IDLE_S}, got {0}")]
    BadSeconds(u64),
    #[error("trace: {0}")]
    Trace(#[from] TraceError),
    #[error(transparent)]
    TraceFile(#[from] lull_os::input_file::ReadError),
    #[error("the trace holds an event with no evdev form ({0}); live tracking replays input only")]
    NotInput(lull_model::RawEvent),
    #[error("measuring threads: {0}")]
    Measure(#[from] MeasureError),
    #[error("daemon: {0}")]
    Daemon(#[from] DaemonError),
    #[error("system call: {0}")]
    Io(#[from] std::io::Error),
    #[error("a stack thread failed: {0}")]
    Thread(String),
    #[error(transparent)]
    LiveDaemon(#[from] crate::live_stack::LiveDaemonError),
}

/// Parses `--model`.
///
/// # Errors
/// [`LiveError::UnknownModel`].
pub fn parse_model(s: &str) -> Result<DeliveryModel, LiveError> {
    DeliveryModel::from_name(s)
        .filter(|m| LIVE_MODELS.contains(m))
        .ok_or_else(|| LiveError::UnknownModel(s.to_owned()))
}

/// Parses `--workload`.
///
/// # Errors
/// [`LiveError::UnknownWorkload`].
pub fn parse_workload(s: &str) -> Result<Workload, LiveError> {
    Workload::from_name(s).ok_or_else(|| LiveError::UnknownWorkload(s.to_owned()))
}

/// Loads a trace file (the shipped one is `traces/stylus-spiral.trace`).
///
/// # Errors
/// [`LiveError::TraceFile`] or [`LiveError::Trace`].
pub fn load_trace(path: &std::path::Path) -> Result<Trace, LiveError> {
    let text = lull_os::input_file::read_bounded_text(path, lull_os::input_file::TRACE)?;
    Ok(Trace::parse(&text)?)
}

/// The stylus recording the live experiments replay unless told otherwise, relative to the
/// working directory (the repository root).
pub const DEFAULT_TRACE: &str = "traces/stylus-spiral.trace";

/// The recording at `path`; without one, [`DEFAULT_TRACE`] when it is there, else the
/// built-in spiral it was generated from (`lull_workload::spiral`).
///
/// # Errors
/// The recording cannot be read or parsed.
pub fn stylus_trace(path: Option<&std::path::Path>) -> Result<Trace, LiveError> {
    let default = std::path::Path::new(DEFAULT_TRACE);
    match path {
        Some(p) => load_trace(p),
        None if default.exists() => load_trace(default),
        None => Ok(lull_workload::spiral::stylus_spiral()),
    }
}

/// Latency statistics in microseconds; `None` when nothing was delivered.
#[derive(Clone, Copy, PartialEq, Debug, Default, serde::Serialize)]
pub struct LatencyUs {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
    /// The distribution: values at `lull_model::stats::CDF_PERCENTS` (0 = min … 100 = max),
    /// nearest rank; `None` when nothing was delivered.
    pub cdf: Option<[f64; CDF_PERCENTS.len()]>,
}

impl LatencyUs {
    /// Statistics of `samples_ns` (nearest-rank percentiles).
    #[must_use]
    pub fn of(samples_ns: &[u64]) -> LatencyUs {
        if samples_ns.is_empty() {
            return LatencyUs::default();
        }
        let mut s = samples_ns.to_vec();
        s.sort_unstable();
        let rank = |percent| nearest_rank(&s, percent).map(ns_to_us);
        let mean = s.iter().map(|&v| v as f64).sum::<f64>() / s.len() as f64 / NS_PER_US as f64;
        LatencyUs {
            mean: Some(mean),
            p50: rank(50),
            p99: rank(99),
            max: Some(ns_to_us(s[s.len() - 1])),
            cdf: Some(CDF_PERCENTS.map(|p| nearest_rank(&s, p).map_or(0.0, ns_to_us))),
        }
    }
}

/// The result of one run, in the shape `lull live … --json` prints.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LiveReport {
    pub model: DeliveryModel,
    /// A workload name, or `idle-<S>s`.
    pub workload: String,
    pub events_injected: u64,
    pub events_delivered: u64,
    /// Injected events whose handler never ran (lost anywhere on the path).
    pub events_dropped: u64,
    pub latency_us: LatencyUs,
    /// Wake-ups of all the stack's threads together, per second of the measured window.
    pub wakeups_per_s: f64,
    /// CPU time of all the stack's threads together over the window.
    pub cpu_ms: f64,
    pub window_s: f64,
    /// Per thread: role, wake-ups, wake-ups per second, CPU time.
    pub threads: Vec<ThreadDelta>,
    /// ESM latency runs only: the raw one-hop reference ([`stack::run_one_hop`]) on the same
    /// trace, run right after the measured window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub one_hop_us: Option<LatencyUs>,
    /// ESM latency runs only: the ESM's median latency over the one-hop reference's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub esm_over_one_hop: Option<f64>,
    /// ESM latency runs only: the daemon loop's wake-ups over its whole life (the app's connect
    /// and registrations, a few, included) per event delivered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daemon_wakeups_per_event: Option<f64>,
    /// ESM latency runs only: the producer's (the driver thread's) wake-ups in the window per
    /// event delivered (voluntary context switches, `/proc/self/task/<tid>/status`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer_wakeups_per_event: Option<f64>,
    /// ESM latency runs only: the app thread's wake-ups in the window per event delivered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_wakeups_per_event: Option<f64>,
    /// ESM runs only: every ring's accounting at the daemon's stop, from both sides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rings: Option<RingAccounting>,
}

/// The data plane's accounting of a run, summed over its rings: the producer's side (what it
/// published in each ring's header), the app's side (its read index), and what the app's handler
/// saw. `produced = delivered + dropped`, `consumed = delivered + markers` once the app has read
/// everything, and the handler ran for every delivered event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RingAccounting {
    pub rings: u64,
    pub produced: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub markers: u64,
    /// Records the apps say they read (their read indexes), events and markers.
    pub consumed: u64,
    /// Events the app's handler ran for, and the dropped events its overflow markers reported.
    pub handled: u64,
    pub dropped_reported: u64,
    /// Whether the identities above hold.
    pub balanced: bool,
}

impl RingAccounting {
    /// Sums the daemon's ring reports and checks them against what the app handled.
    #[must_use]
    pub fn of(rings: &[lulld::daemon::RingRoute], handled: u64, dropped_reported: u64) -> Self {
        let mut a = RingAccounting {
            rings: rings.len() as u64,
            produced: 0,
            delivered: 0,
            dropped: 0,
            markers: 0,
            consumed: 0,
            handled,
            dropped_reported,
            balanced: false,
        };
        for r in rings {
            let c = r.ring.counters;
            a.produced += c.produced;
            a.delivered += c.delivered;
            a.dropped += c.dropped;
            a.markers += c.markers;
            a.consumed += r.ring.consumed;
        }
        a.balanced = a.produced == a.delivered + a.dropped
            && a.consumed == a.delivered + a.markers
            && a.handled == a.delivered
            && a.dropped_reported == a.dropped;
        a
    }
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct RunSpec {
    pub model: DeliveryModel,
    /// `None`: an idle run of `idle_s` seconds.
    pub trace: Option<Trace>,
    pub workload_name: String,
    pub idle_s: u64,
}

impl RunSpec {
    /// A latency run of `workload` on the stylus recording `base`.
    ///
    /// # Errors
    /// [`LiveError::Trace`] when the trace cannot be scaled.
    pub fn latency(
        model: DeliveryModel,
        workload: Workload,
        base: &Trace,
    ) -> Result<RunSpec, LiveError> {
        Ok(RunSpec {
            model,
            trace: Some(base.scaled_to(workload.span_ns())?),
            workload_name: workload.name().to_owned(),
            idle_s: 0,
        })
    }

    /// An idle run.
    ///
    /// # Errors
    /// [`LiveError::BadSeconds`] outside `1..=MAX_IDLE_S`.
    pub fn idle(model: DeliveryModel, seconds: u64) -> Result<RunSpec, LiveError> {
        if !(1..=MAX_IDLE_S).contains(&seconds) {
            return Err(LiveError::BadSeconds(seconds));
        }
        Ok(RunSpec {
            model,
            trace: None,
            workload_name: format!("idle-{seconds}s"),
            idle_s: seconds,
        })
    }
}

fn thread_err<E: std::fmt::Display>(e: E) -> LiveError {
    LiveError::Thread(e.to_string())
}

/// The stack's threads as a run starts them: their join handles, how to stop each, and the
/// threads measured (each sends its id on `tid_tx` as it starts).
struct StackThreads {
    handles: Vec<thread::JoinHandle<Result<(), LiveError>>>,
    stops: Vec<Box<dyn Fn()>>,
    probed: Vec<StackThread>,
    tid_tx: mpsc::Sender<StackThread>,
    tid_rx: mpsc::Receiver<StackThread>,
}

impl StackThreads {
    fn new() -> StackThreads {
        let (tid_tx, tid_rx) = mpsc::channel();
        StackThreads {
            handles: Vec::new(),
            stops: Vec::new(),
            probed: Vec::new(),
            tid_tx,
            tid_rx,
        }
    }
}

/// Starts the device driver, the same replay in every model: the baselines' drivers write the
/// device queue their hub reads; the ESM's is a data-plane producer writing the app's ring.
fn start_driver(
    spec: &RunSpec,
    path: &Path,
    device_w: OwnedFd,
    start_rx: mpsc::Receiver<u64>,
    replay_tx: mpsc::Sender<lulld::replay::ReplayCounters>,
    st: &mut StackThreads,
) -> Result<Arc<EventFd>, LiveError> {
    let driver_stop = Arc::new(EventFd::new()?);
    let stop = Arc::clone(&driver_stop);
    let trace = spec.trace.clone();
    let tid_tx = st.tid_tx.clone();
    let (model, producer_path) = (spec.model, path.to_path_buf());
    st.handles.push(
        thread::Builder::new()
            .name("lull-driver".into())
            .spawn(move || {
                let _ = tid_tx.send(StackThread::current("driver"));
                let start_ns = start_rx.recv().map_err(thread_err)?;
                if model == DeliveryModel::Esm {
                    drop(device_w);
                    stack::run_producer_driver(
                        trace.as_ref(),
                        start_ns,
                        &producer_path,
                        &stop,
                        replay_tx,
                    )?;
                } else {
                    stack::run_driver(trace.as_ref(), start_ns, device_w, &stop, replay_tx)?;
                }
                Ok(())
            })?,
    );
    let s = Arc::clone(&driver_stop);
    st.stops.push(Box::new(move || {
        let _ = s.signal();
    }));
    st.probed.push(st.tid_rx.recv().map_err(thread_err)?);
    Ok(driver_stop)
}

/// Starts the ESM stack: the daemon on its own thread, then the app, and waits until the
/// daemon has the app in `EV_WAIT`. Gives the running daemon.
fn start_esm(
    sockets: &DaemonSockets,
    app: TrackingApp,
    app_cell: &AppCell,
    st: &mut StackThreads,
) -> Result<LiveDaemon, LiveError> {
    // The daemon, on its own thread (`LiveStack`), with nothing set up beyond the ESM.
    let (daemon, ()) = LiveStack::new(sockets.clone())
        .thread_name("lull-daemon")
        .start(|_| Ok::<_, SetupError>(()))?;
    st.probed.push(StackThread {
        role: "daemon".into(),
        tid: daemon.tid(),
    });
    let path = sockets.esm.as_path();
    let cell = Arc::clone(app_cell);
    let tx = st.tid_tx.clone();
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let app_path = path.to_path_buf();
    st.handles.push(
        thread::Builder::new()
            .name("lull-app".into())
            .spawn(move || {
                let _ = tx.send(StackThread::current("app"));
                stack::run_esm_app(&app_path, app, &cell, || {
                    let _ = ready_tx.send(());
                })
                .map_err(thread_err)
            })?,
    );
    st.probed.push(st.tid_rx.recv().map_err(thread_err)?);
    ready_rx.recv().map_err(thread_err)?;
    // Wait until the daemon has the app in EV_WAIT (asked over a control connection that
    // closes before the window opens).
    let mut control = lull::client::EsmClient::connect(path).map_err(thread_err)?;
    let deadline = std::time::Instant::now() + measure::SETTLE_TIMEOUT;
    while control.stats().map_err(thread_err)?.waiting < 1 && std::time::Instant::now() < deadline {
        thread::sleep(Duration::from_millis(1));
    }
    drop(control);
    Ok(daemon)
}

/// Starts a baseline's stack: its hub reading `device_r`, then the app.
fn start_baseline(
    baseline: DeliveryModel,
    device_r: OwnedFd,
    app: TrackingApp,
    app_cell: &AppCell,
    st: &mut StackThreads,
) -> Result<(), LiveError> {
    let (hub_end, app_end) = sys::seqpacket_pair()?;
    let hub_stop = Arc::new(EventFd::new()?);
    let app_stop = Arc::new(EventFd::new()?);
    let (s, tx) = (Arc::clone(&hub_stop), st.tid_tx.clone());
    st.handles.push(
        thread::Builder::new()
            .name("lull-hub".into())
            .spawn(move || {
                let _ = tx.send(StackThread::current("hub"));
                stack::run_hub(baseline, device_r, hub_end, &s)?;
                Ok(())
            })?,
    );
    st.probed.push(st.tid_rx.recv().map_err(thread_err)?);
    let (s, tx, cell) = (
        Arc::clone(&app_stop),
        st.tid_tx.clone(),
        Arc::clone(app_cell),
    );
    st.handles.push(
        thread::Builder::new()
            .name("lull-app".into())
            .spawn(move || {
                let _ = tx.send(StackThread::current("app"));
                let app = lull_apps::baseline::run_baseline_app(baseline, app_end, app, &s)?;
                *cell
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(app);
                Ok(())
            })?,
    );
    st.probed.push(st.tid_rx.recv().map_err(thread_err)?);
    st.stops.push(Box::new(move || {
        let _ = hub_stop.signal();
    }));
    st.stops.push(Box::new(move || {
        let _ = app_stop.signal();
    }));
    Ok(())
}

/// Runs one model on one workload (or idle) and measures it: [`collect`], then [`analyse`].
///
/// # Errors
/// As [`collect`].
pub fn run(spec: &RunSpec) -> Result<LiveReport, LiveError> {
    Ok(analyse(&collect(spec)?))
}

/// What one live run took from the machine, unanalysed: the measured threads over the window,
/// the app's latencies and counts, the one-hop reference's, the daemon's. Saved as JSON, it is
/// analysed again without the machine.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LiveArtefact {
    pub model: DeliveryModel,
    /// A workload name, or `idle-<S>s`.
    pub workload: String,
    /// Whether events were replayed (an idle run replays none).
    pub replayed: bool,
    pub threads: Vec<ThreadDelta>,
    pub window_ns: u64,
    pub injected: u64,
    pub delivered: u64,
    /// Dropped events the app's overflow markers reported.
    pub dropped_reported: u64,
    pub latencies_ns: Vec<u64>,
    /// ESM latency runs only: the raw one-hop reference's latencies on the same events' times.
    pub one_hop_latencies_ns: Option<Vec<u64>>,
    /// The daemon loop's wake-ups over its life (ESM runs).
    pub daemon_loop_wakeups: Option<u64>,
    /// ESM runs: every ring's accounting at the daemon's stop.
    pub rings: Option<RingAccounting>,
}

/// Runs one model on one workload (or idle) on this machine and keeps what was measured.
///
/// # Errors
/// [`LiveError`] when the stack cannot be set up or measured.
pub fn collect(spec: &RunSpec) -> Result<LiveArtefact, LiveError> {
    if let Some(trace) = &spec.trace {
        if let Some(e) = trace
            .events
            .iter()
            .find(|e| !lull_esm::interpret(e.raw).0.is_input())
        {
            return Err(LiveError::NotInput(e.raw));
        }
    }
    let expected = spec.trace.as_ref().map_or(0, |t| t.events.len() as u64);
    let (device_r, device_w) = sys::pipe(false)?;
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let (replay_tx, replay_rx) = mpsc::channel();
    let (start_tx, start_rx) = mpsc::channel::<u64>();
    let app_cell: AppCell = Arc::new(Mutex::new(None));
    let app = TrackingApp::new(expected, done_tx);
    let mut st = StackThreads::new();

    let sockets = DaemonSockets::fresh("live", &std::env::temp_dir());
    start_driver(spec, &sockets.esm, device_w, start_rx, replay_tx, &mut st)?;
    let daemon = match spec.model {
        DeliveryModel::Esm => {
            drop(device_r);
            Some(start_esm(&sockets, app, &app_cell, &mut st)?)
        }
        baseline => {
            start_baseline(baseline, device_r, app, &app_cell, &mut st)?;
            None
        }
    };

    let start_ns = sys::monotonic_ns() + START_LEAD_NS;
    start_tx.send(start_ns).map_err(thread_err)?;
    // The window opens on a quiet stack (this harness thread is outside it).
    let pid = std::process::id() as i32;
    let tids: Vec<(i32, i32)> = st.probed.iter().map(|t| (pid, t.tid)).collect();
    measure::wait_asleep(&tids, measure::SETTLE_TIMEOUT);
    let window = Window::open(&st.probed)?;
    if let Some(trace) = &spec.trace {
        let last_ns = start_ns + trace.span_ns() + DRAIN_NS;
        let wait = Duration::from_nanos(last_ns.saturating_sub(sys::monotonic_ns()));
        let _ = done_rx.recv_timeout(wait);
    } else {
        thread::sleep(Duration::from_secs(spec.idle_s));
    }
    let measured = window.close();
    for stop in &st.stops {
        stop();
    }
    if let Some(d) = &daemon {
        d.request_stop();
    }
    let mut thread_error = None;
    for h in st.handles {
        match h.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => thread_error = Some(e),
            Err(_) => thread_error = Some(LiveError::Thread("a stack thread panicked".into())),
        }
    }
    if let Some(e) = thread_error {
        return Err(e);
    }
    let (threads, window_ns) = measured?;
    let injected = replay_rx
        .try_recv()
        .map_or(0, |c: lulld::replay::ReplayCounters| c.injected);
    let app = app_cell
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    let (delivered, dropped_reported, latencies_ns) = app.map_or((0, 0, Vec::new()), |a| {
        (a.delivered, a.dropped_reported, a.latencies_ns)
    });
    // The reference runs after the window, on a quiet machine, with the same events' times.
    let one_hop_latencies_ns = match (&spec.trace, spec.model) {
        (Some(trace), DeliveryModel::Esm) => {
            Some(stack::run_one_hop(trace, sys::monotonic_ns() + START_LEAD_NS)?.latencies_ns)
        }
        _ => None,
    };
    let daemon_report = match daemon {
        Some(d) => {
            let report = d.join()?;
            report
                .accounting
                .clone()
                .map_err(|e| LiveError::Thread(e.to_string()))?;
            Some(report)
        }
        None => None,
    };
    Ok(LiveArtefact {
        model: spec.model,
        workload: spec.workload_name.clone(),
        replayed: spec.trace.is_some(),
        threads,
        window_ns,
        injected,
        delivered,
        dropped_reported,
        latencies_ns,
        one_hop_latencies_ns,
        daemon_loop_wakeups: daemon_report.as_ref().map(|r| r.counters.loop_wakeups),
        rings: daemon_report
            .as_ref()
            .map(|r| RingAccounting::of(&r.rings, delivered, dropped_reported)),
    })
}

/// The run's report from what [`collect`] kept. Pure.
#[must_use]
pub fn analyse(a: &LiveArtefact) -> LiveReport {
    let window_s = a.window_ns as f64 / NS_PER_S as f64;
    let wakeups: u64 = a.threads.iter().map(|t| t.wakeups).sum();
    let latency_us = LatencyUs::of(&a.latencies_ns);
    let one_hop_us = a.one_hop_latencies_ns.as_deref().map(LatencyUs::of);
    let esm_over_one_hop = one_hop_us
        .and_then(|h| h.p50)
        .zip(latency_us.p50)
        .and_then(|(hop, esm)| (hop > 0.0).then(|| esm / hop));
    let per_event = a.replayed && a.delivered > 0;
    let delivered = a.delivered as f64;
    let daemon_wakeups_per_event = a
        .daemon_loop_wakeups
        .filter(|_| per_event)
        .map(|w| w as f64 / delivered);
    let role_per_event = |role: &str| {
        a.threads
            .iter()
            .find(|t| t.role == role)
            .filter(|_| per_event && a.model == DeliveryModel::Esm)
            .map(|t| t.wakeups as f64 / delivered)
    };
    LiveReport {
        model: a.model,
        workload: a.workload.clone(),
        events_injected: a.injected,
        events_delivered: a.delivered,
        events_dropped: a.injected.saturating_sub(a.delivered),
        latency_us,
        wakeups_per_s: if window_s > 0.0 {
            wakeups as f64 / window_s
        } else {
            0.0
        },
        cpu_ms: a.threads.iter().map(|t| t.cpu_ms).sum(),
        window_s,
        threads: a.threads.clone(),
        one_hop_us,
        esm_over_one_hop,
        daemon_wakeups_per_event,
        producer_wakeups_per_event: role_per_event("driver"),
        app_wakeups_per_event: role_per_event("app"),
        rings: a.rings,
    }
}

/// Idle wake-ups per second of a baseline and of ESM.
#[derive(Clone, Copy, PartialEq, Debug, serde::Serialize)]
pub struct IdleWakeups {
    pub baseline: f64,
    pub esm: f64,
}

/// ESM against one baseline, each in percent by [`change_pct`].
#[derive(Clone, Copy, PartialEq, Debug, serde::Serialize)]
pub struct EsmVsBaseline {
    pub baseline: DeliveryModel,
    /// Change of the mean latency under input.
    pub mean_latency_change_pct: Option<f64>,
    /// Change of the wake-ups per second under input.
    pub wakeups_change_pct: Option<f64>,
    pub idle_wakeups_per_s: IdleWakeups,
    pub idle_wakeups_change_pct: Option<f64>,
}

/// ESM against every baseline, from one latency run and one idle run per model; `latency[i]` and
/// `idle[i]` are of the same model, and the ESM's come first (as in [`LIVE_MODELS`]).
#[must_use]
pub fn esm_vs_baselines(latency: &[LiveReport], idle: &[LiveReport]) -> Vec<EsmVsBaseline> {
    let (Some(esm), Some(esm_idle)) = (latency.first(), idle.first()) else {
        return Vec::new();
    };
    latency
        .iter()
        .zip(idle)
        .skip(1)
        .map(|(b, bi)| EsmVsBaseline {
            baseline: b.model,
            mean_latency_change_pct: change_pct(
                b.latency_us.mean.unwrap_or(0.0),
                esm.latency_us.mean.unwrap_or(0.0),
            ),
            wakeups_change_pct: change_pct(b.wakeups_per_s, esm.wakeups_per_s),
            idle_wakeups_per_s: IdleWakeups {
                baseline: bi.wakeups_per_s,
                esm: esm_idle.wakeups_per_s,
            },
            idle_wakeups_change_pct: change_pct(bi.wakeups_per_s, esm_idle.wakeups_per_s),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A saved ESM run on a short trace: 4 of 5 events delivered, the fifth dropped and marked.
    fn esm_run() -> LiveArtefact {
        crate::artefact::saved("testdata/live-esm-tracking.json")
    }

    #[test]
    fn a_saved_run_is_analysed_into_the_report() {
        let r = analyse(&esm_run());
        assert_eq!(
            (r.events_injected, r.events_delivered, r.events_dropped),
            (5, 4, 1)
        );
        assert_eq!(r.window_s, 2.0);
        // 200 + 4 + 100 wake-ups over 2 s; 10 + 2 + 20 ms of CPU.
        assert_eq!(r.wakeups_per_s, 152.0);
        assert_eq!(r.cpu_ms, 32.0);
        // Nearest rank: the 2nd of 4 sorted latencies is the median, 200 µs; the one hop's 100.
        assert_eq!(r.latency_us.p50, Some(200.0));
        assert_eq!(r.one_hop_us.and_then(|h| h.p50), Some(100.0));
        assert_eq!(r.esm_over_one_hop, Some(2.0));
        assert_eq!(r.daemon_wakeups_per_event, Some(2.0));
        assert_eq!(r.producer_wakeups_per_event, Some(50.0));
        assert_eq!(r.app_wakeups_per_event, Some(25.0));
        assert!(r.rings.is_some_and(|x| x.balanced));
    }

    #[test]
    fn an_idle_run_has_no_per_event_figures() {
        let mut a = esm_run();
        a.replayed = false;
        let r = analyse(&a);
        assert_eq!(r.daemon_wakeups_per_event, None);
        assert_eq!(r.producer_wakeups_per_event, None);
        assert_eq!(r.wakeups_per_s, 152.0);
    }

    #[test]
    fn a_baseline_gets_no_producer_or_app_share() {
        let mut a = esm_run();
        a.model = DeliveryModel::Pull16ms;
        a.one_hop_latencies_ns = None;
        let r = analyse(&a);
        assert_eq!(r.producer_wakeups_per_event, None);
        assert_eq!(r.esm_over_one_hop, None);
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let s: Vec<u64> = (1..=100).map(|i| i * 1000).collect();
        let l = LatencyUs::of(&s);
        assert_eq!(l.p50, Some(50.0));
        assert_eq!(l.p99, Some(99.0));
        assert_eq!(l.max, Some(100.0));
        assert_eq!(l.mean, Some(50.5));
        let cdf = l.cdf.unwrap();
        assert_eq!((cdf[0], cdf[7], cdf[14]), (1.0, 50.0, 100.0));
        assert_eq!(LatencyUs::of(&[]), LatencyUs::default());
        assert_eq!(LatencyUs::of(&[]).cdf, None);
    }

    #[test]
    fn bad_arguments_are_named() {
        assert!(matches!(
            parse_model("push"),
            Err(LiveError::UnknownModel(_))
        ));
        assert!(matches!(
            parse_workload("tracking-5s"),
            Err(LiveError::UnknownWorkload(_))
        ));
        assert!(matches!(
            RunSpec::idle(DeliveryModel::Esm, 0),
            Err(LiveError::BadSeconds(0))
        ));
        assert_eq!(
            parse_model("vsync-batched").unwrap(),
            DeliveryModel::VsyncBatched
        );
    }
}
