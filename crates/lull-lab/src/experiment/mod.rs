//! `lull live experiment`: one of the three live apps (`lull_apps`, the `lull-app` binary)
//! under one delivery model, end to end on this machine, with latency, frames, and CPU time and
//! wake-ups per guiS thread category read from the kernel.
//!
//! The harness runs, as threads of this process: the daemon (`lulld`'s loop with its display
//! server on a headless 1920 × 1080 screen, plus guiS for `esm-kds-guis`), the device driver
//! replaying the workload (into an evdev pipe the hub reads under a baseline; under
//! `esm-kds-guis` as a data-plane producer writing the app's ring, so the daemon is not woken
//! per event), the baseline's hub, and for messaging the respondent. The app is a
//! separate process: `lull-app`, given the hub's connection by inheritance. The harness waits
//! for the app's ready line, waits until every measured thread is asleep, opens the measurement
//! window, starts the replay (or lets the clip start), waits for the workload's end plus
//! [`TAIL_NS`], closes the window, sends `stop`, and reads the app's report.
//!
//! Measured threads: every thread of the app, by the category it declared to the display server
//! (`WindowInfo::threads`; threads it did not declare — the runtime's channel thread, the main
//! thread, and under a baseline the runtime's unused event thread — are `other`), and the
//! daemon and hub threads as `server`. The driver stands for the input device and the
//! respondent for the remote party; the driver is listed but not counted, the respondent is not
//! measured.

use crate::live_stack::{DaemonSockets, LiveDaemon, LiveStack};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use lull::kds_client::KdsAdmin;
use lull_model::time::{ns_to_ms, NS_PER_MS, NS_PER_S};
use lull_model::{AppId, ThreadCategory};
use lull_os::procfs::{self, ThreadSample};
use lull_os::sys::{self, EventFd};
use lull_workload::Trace;
use lulld::daemon::{Daemon, DaemonError, DaemonReport};
use lulld::guis::{GuisConfig, GuisReport, GuisStatus, IdleAction};
use lulld::replay::ReplayCounters;
use serde::{Deserialize, Serialize};

use crate::measure;
use crate::respondent::{Respondent, RespondentHandle};
use crate::stack;
use lull_apps::{AppKind, AppReport, Ready, APP_MODELS};
use lull_model::DeliveryModel;

mod analyse;
mod error;
mod probe;
mod report;
mod reproduce;
mod spec;

pub use analyse::{analyse, RunArtefact};
pub use error::ExperimentError;
use probe::{app_probes, mark, Probe};
pub use probe::{Mark, ProbedThread, Reading};
pub use report::*;
pub use reproduce::*;
use spec::check_app_binary;
pub use spec::*;

/// The daemon thread's name, as probed and reported (`daemon_wakeups_per_event`).
const DAEMON_THREAD_NAME: &str = "lull-daemon";

/// The kinds the trace's events take (what its producer produces), each once.
fn input_kinds(trace: &Trace) -> Vec<lull_model::EventKind> {
    let mut kinds = Vec::new();
    for e in &trace.events {
        let k = lull_esm::interpret(e.raw).0;
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    kinds
}

/// `count / events`, 0 without events.
fn per_event(count: u64, events: u64) -> f64 {
    if events == 0 {
        0.0
    } else {
        count as f64 / events as f64
    }
}

/// How long the app may take from start to its ready line (a debug build composing the 1080p
/// tracking guide on a loaded machine takes about a second).
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the app may take from `stop` to its report (it detaches and joins its threads).
pub const REPORT_TIMEOUT: Duration = Duration::from_secs(30);
/// From opening the window to the replay's time 0: the driver thread arms its timer.
pub const REPLAY_LEAD_NS: u64 = 20 * NS_PER_MS;
/// After the workload's last event (or the clip's end), before the window closes: 15 periods of
/// pull-16ms, so every model's app has handled and drawn its last input.
pub const TAIL_NS: u64 = 250 * NS_PER_MS;
/// From the `WM_BACKGROUND` reply to opening the background window: the app's threads learn the
/// new state (a push, microseconds) and any request in flight at the change completes (one frame
/// at most, tens of milliseconds at 1080p), so the window holds the steady background state.
pub const BACKGROUND_LEAD_NS: u64 = 300 * NS_PER_MS;
/// After the lead, how long the harness waits for the drawing thread to be asleep.
pub const BACKGROUND_ASLEEP_TIMEOUT: Duration = Duration::from_secs(1);

// ---------------------------------------------------------------------------------------------
// The stack.

fn sleep_until_ns(at_ns: u64) {
    let now = sys::monotonic_ns();
    if at_ns > now {
        thread::sleep(Duration::from_nanos(at_ns - now));
    }
}

/// A freezer namespace of this run alone (concurrent runs each need their own cgroup).
fn freezer_namespace() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "lull-exp-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Switches guiS on in the daemon for the `esm-kds-guis` model: kernel enforcement of table 1
/// (the cgroup freezer, which needs root; without it the status says why and only the apps'
/// gates apply) and idle forcing, counted only.
fn switch_on_guis(d: &mut Daemon) -> Result<GuisStatus, DaemonError> {
    d.enable_guis(&GuisConfig {
        enabled: true,
        freezer_namespace: freezer_namespace(),
        idle_action: IdleAction::None,
    })
}

fn thread_err<E: std::fmt::Display>(e: E) -> ExperimentError {
    ExperimentError::Thread(e.to_string())
}

/// Everything running for one experiment; dropping it stops and joins all of it.
#[derive(Default)]
struct Stack {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<String>>,
    /// Copies the app's stderr into `stderr`; it returns at the app's end of file.
    stderr_reader: Option<JoinHandle<()>>,
    stdout_lines: Option<Receiver<String>>,
    driver_stop: Option<Arc<EventFd>>,
    driver: Option<JoinHandle<std::io::Result<()>>>,
    hub_stop: Option<Arc<EventFd>>,
    hub: Option<JoinHandle<std::io::Result<u64>>>,
    daemon: Option<LiveDaemon>,
    respondent: Option<RespondentHandle>,
}

/// What the stack's threads said when stopped.
struct Stopped {
    daemon: Option<DaemonReport>,
    hub_unsent: u64,
    respondent_messages: u64,
    error: Option<ExperimentError>,
}

impl Stack {
    fn stop_all(&mut self) -> Stopped {
        let mut error = None;
        if let Some(mut c) = self.child.take() {
            // Only on an error path: the normal path has waited for the app already.
            let _ = c.kill();
            let _ = c.wait();
        }
        self.stdin = None;
        for s in [self.driver_stop.take(), self.hub_stop.take()]
            .into_iter()
            .flatten()
        {
            let _ = s.signal();
        }
        if let Some(d) = &self.daemon {
            d.request_stop();
        }
        if let Some(h) = self.driver.take() {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => error = Some(thread_err(format!("driver: {e}"))),
                Err(_) => error = Some(thread_err("the driver panicked")),
            }
        }
        let mut hub_unsent = 0;
        if let Some(h) = self.hub.take() {
            match h.join() {
                Ok(Ok(n)) => hub_unsent = n,
                Ok(Err(e)) => error = Some(thread_err(format!("hub: {e}"))),
                Err(_) => error = Some(thread_err("the hub panicked")),
            }
        }
        let mut daemon = None;
        if let Some(d) = self.daemon.take() {
            match d.join() {
                Ok(r) => daemon = Some(r),
                Err(e) => error = Some(ExperimentError::Daemon(e)),
            }
        }
        let respondent_messages = self.respondent.take().map_or(0, |r| r.stop().messages);
        Stopped {
            daemon,
            hub_unsent,
            respondent_messages,
            error,
        }
    }

    /// The app's whole stderr, once it has exited: the reader has copied everything when it
    /// returns at end of file.
    fn exited_stderr(&mut self) -> String {
        if let Some(h) = self.stderr_reader.take() {
            let _ = h.join();
        }
        self.stderr()
    }

    /// The app's stderr so far.
    fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .trim()
            .to_owned()
    }

    /// The app's next line on stdout; its exit or silence is an error naming its stderr.
    fn next_line(
        &mut self,
        timeout: Duration,
        waiting_for: &str,
    ) -> Result<String, ExperimentError> {
        let rx = self
            .stdout_lines
            .as_ref()
            .ok_or_else(|| ExperimentError::AppProtocol("stdout is gone".into()))?;
        match rx.recv_timeout(timeout) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => Err(ExperimentError::AppProtocol(format!(
                "no {waiting_for} within {} s; stderr: {}",
                timeout.as_secs(),
                self.stderr()
            ))),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self
                    .child
                    .as_mut()
                    .and_then(|c| c.wait().ok())
                    .map_or_else(|| "unknown status".to_owned(), |s| s.to_string());
                self.child = None;
                Err(ExperimentError::AppFailed {
                    status,
                    stderr: self.exited_stderr(),
                })
            }
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        let _ = self.stop_all();
    }
}

/// Longest stderr kept from the app.
const STDERR_KEEP_BYTES: usize = 64 * 1024;
/// Bytes per read of the app's stderr (a pipe's atomic-write size, 4 KiB on Linux).
const STDERR_READ_BYTES: usize = 4096;

fn spawn_app(
    spec: &ExperimentSpec,
    kds_path: &Path,
    hub_fd: Option<&OwnedFd>,
    respondent: Option<std::net::SocketAddr>,
    stack: &mut Stack,
) -> Result<(), ExperimentError> {
    let mut cmd = Command::new(&spec.app_binary);
    cmd.arg(spec.kind.name())
        .arg("--model")
        .arg(spec.model.name())
        .arg("--kds-socket")
        .arg(kds_path)
        .arg("--seed")
        .arg(spec.seed.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(addr) = respondent {
        cmd.arg("--respondent").arg(addr.to_string());
    }
    if let Workload::Clip {
        width_px,
        height_px,
        clip_ms,
    } = spec.workload
    {
        cmd.arg("--video-size")
            .arg(format!("{width_px}x{height_px}"))
            .arg("--clip-ms")
            .arg(clip_ms.to_string());
    }
    if let Some(fd) = hub_fd {
        let raw = lull_os::proc_ctl::pass_fd_to_child(&mut cmd, fd);
        cmd.arg("--hub-fd").arg(raw.to_string());
    }
    let mut child = cmd.spawn().map_err(|source| ExperimentError::Spawn {
        path: spec.app_binary.clone(),
        source,
    })?;
    stack.stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    stack.child = Some(child);
    let (tx, rx) = mpsc::channel();
    if let Some(out) = stdout {
        thread::Builder::new()
            .name("exp-app-stdout".into())
            .spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { return };
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            })?;
    }
    stack.stdout_lines = Some(rx);
    if let Some(mut err) = stderr {
        let keep = Arc::clone(&stack.stderr);
        stack.stderr_reader = Some(thread::Builder::new().name("exp-app-stderr".into()).spawn(
            move || {
                let mut buf = [0u8; STDERR_READ_BYTES];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    let mut k = keep
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    if k.len() < STDERR_KEEP_BYTES {
                        k.push_str(&String::from_utf8_lossy(&buf[..n]));
                    }
                }
            },
        )?);
    }
    Ok(())
}

/// Checks the spec before anything starts: the app binary is there, the background window
/// lies within the workload, and a replayed trace holds only input events. Gives the trace to
/// replay (none for a clip).
fn checked_workload(spec: &ExperimentSpec) -> Result<Option<Trace>, ExperimentError> {
    let span_ns = spec.workload.span_ns();
    check_app_binary(&spec.app_binary)?;
    if let Some(b) = spec.background {
        if b.at_ns.saturating_add(b.for_ns) > span_ns {
            return Err(ExperimentError::BackgroundOutsideWorkload {
                at_ms: b.at_ns / NS_PER_MS,
                for_ms: b.for_ns / NS_PER_MS,
                span_ms: span_ns / NS_PER_MS,
            });
        }
    }
    Ok(match &spec.workload {
        Workload::Replay { trace: t, .. } => {
            if let Some(e) = t
                .events
                .iter()
                .find(|e| !lull_esm::interpret(e.raw).0.is_input())
            {
                return Err(ExperimentError::NotInput(e.raw));
            }
            Some(t.clone())
        }
        Workload::Clip { .. } => None,
    })
}

/// Starts the baseline's hub on a thread reading `device`, probed as a server thread; gives
/// the app's end of its connection.
fn start_hub(
    model: DeliveryModel,
    device: OwnedFd,
    stack: &mut Stack,
    probes: &mut Vec<Probe>,
) -> Result<OwnedFd, ExperimentError> {
    let (hub_end, app_end) = sys::seqpacket_pair()?;
    let stop = Arc::new(EventFd::new()?);
    let s = Arc::clone(&stop);
    let (tx, rx) = mpsc::channel();
    stack.hub = Some(
        thread::Builder::new()
            .name("lull-hub".into())
            .spawn(move || {
                let _ = tx.send(sys::gettid());
                stack::run_hub(model, device, hub_end, &s)
            })?,
    );
    stack.hub_stop = Some(stop);
    probes.push(Probe {
        group: Group::Server,
        name: "lull-hub".into(),
        pid: std::process::id() as i32,
        tid: rx.recv().map_err(thread_err)?,
    });
    Ok(app_end)
}

/// Starts the replay driver on a thread, probed as the device: it writes `device` (under a
/// baseline) or, given `producer_of` (the daemon's socket and the trace's input kinds), writes
/// the app's ring as a data-plane producer. Gives the sender of the replay's start instant and
/// the receiver of its counters.
fn start_driver(
    trace: Option<Trace>,
    producer_of: Option<(PathBuf, Vec<lull_model::EventKind>)>,
    device_w: OwnedFd,
    stack: &mut Stack,
    probes: &mut Vec<Probe>,
) -> Result<(mpsc::Sender<u64>, Receiver<ReplayCounters>), ExperimentError> {
    let me = std::process::id() as i32;
    let (start_tx, start_rx) = mpsc::channel::<u64>();
    let (replay_tx, replay_rx) = mpsc::channel::<ReplayCounters>();
    let stop = Arc::new(EventFd::new()?);
    let s = Arc::clone(&stop);
    let (tx, rx) = mpsc::channel();
    stack.driver = Some(
        thread::Builder::new()
            .name("lull-driver".into())
            .spawn(move || {
                // The producer connects before the app attaches, outside the measured window;
                // the daemon routes it to the app when the app registers.
                let producer = match producer_of {
                    Some((path, kinds)) => {
                        match lull::producer::EsmProducer::connect(&path, &kinds) {
                            Ok(p) => Some(p),
                            Err(e) => {
                                let _ = tx.send(-1);
                                return Err(std::io::Error::other(format!("producer: {e}")));
                            }
                        }
                    }
                    None => None,
                };
                let _ = tx.send(sys::gettid());
                let Ok(start_ns) = start_rx.recv() else {
                    return Ok(());
                };
                match producer {
                    Some(p) => {
                        drop(device_w);
                        stack::run_producer(trace.as_ref(), start_ns, p, &s, replay_tx)
                    }
                    None => stack::run_driver(trace.as_ref(), start_ns, device_w, &s, replay_tx),
                }
            })?,
    );
    stack.driver_stop = Some(stop);
    let tid = rx.recv().map_err(thread_err)?;
    if tid < 0 {
        return Err(ExperimentError::Thread(
            "the driver could not connect to the daemon as a producer".into(),
        ));
    }
    probes.push(Probe {
        group: Group::Device,
        name: "lull-driver".into(),
        pid: me,
        tid,
    });
    Ok((start_tx, replay_rx))
}

/// The window's opening and closing marks, and the background window's if there was one.
type Marks = (Mark, Mark, Option<(Mark, Mark)>);

/// The measured window of one run, over its probed threads.
struct Window<'a> {
    probes: &'a [Probe],
    /// When the clip starts (video); `None`: the replay starts [`REPLAY_LEAD_NS`] after the
    /// window opens.
    start_ns: Option<u64>,
    span_ns: u64,
    background: Option<BackgroundPlan>,
    drawing: Option<&'a Probe>,
}

impl Window<'_> {
    /// Waits until every probed thread sleeps, marks the window's opening, starts the replay,
    /// sends the app to the background and back if the plan says so (marking that window),
    /// and marks the closing after the workload's end and [`TAIL_NS`].
    fn measure(
        &self,
        start_tx: &mpsc::Sender<u64>,
        mut admin: KdsAdmin,
        app_id: AppId,
    ) -> Result<Marks, ExperimentError> {
        let probes = self.probes;
        let ids: Vec<(i32, i32)> = probes.iter().map(|p| (p.pid, p.tid)).collect();
        measure::wait_asleep(&ids, measure::SETTLE_TIMEOUT);
        let open = mark(probes);
        let t0 = self
            .start_ns
            .unwrap_or_else(|| sys::monotonic_ns() + REPLAY_LEAD_NS);
        start_tx.send(t0).map_err(thread_err)?;
        let mut background = None;
        if let Some(plan) = self.background {
            sleep_until_ns(t0 + plan.at_ns);
            admin.background(app_id)?;
            sleep_until_ns(sys::monotonic_ns() + BACKGROUND_LEAD_NS);
            if let Some(p) = self.drawing {
                measure::wait_asleep(&[(p.pid, p.tid)], BACKGROUND_ASLEEP_TIMEOUT);
            }
            let bg_open = mark(probes);
            sleep_until_ns(t0 + plan.at_ns + plan.for_ns);
            let bg_close = mark(probes);
            admin.foreground(app_id)?;
            background = Some((bg_open, bg_close));
        }
        drop(admin);
        sleep_until_ns(t0 + self.span_ns + TAIL_NS);
        Ok((open, mark(probes), background))
    }
}

/// Runs one experiment and measures it: [`collect`], then [`analyse`].
///
/// # Errors
/// As [`collect`].
pub fn run(spec: &ExperimentSpec) -> Result<ExperimentReport, ExperimentError> {
    let c = collect(spec)?;
    let mut report = analyse(&c.artefact);
    report.guis = c.status;
    report.seam = c.seam;
    Ok(report)
}

/// One run as collected, with the daemon's guiS report.
pub type Collected = crate::artefact::Collected<RunArtefact, GuisReport>;

/// Runs one experiment on this machine and keeps what was measured, unanalysed: the stack is
/// brought up, the app started, the window measured and everything stopped and joined.
///
/// # Errors
/// [`ExperimentError`] when the stack or the app cannot be set up, the app fails, or the ESM's
/// accounting breaks.
pub fn collect(spec: &ExperimentSpec) -> Result<Collected, ExperimentError> {
    let trace = checked_workload(spec)?;
    let scratch = lull_os::fileout::ScratchDir::new("lull-exp")?;
    let live =
        LiveStack::new(DaemonSockets::fresh("exp", scratch.path())).thread_name(DAEMON_THREAD_NAME);
    let mut stack = Stack::default();
    let up = bring_up(spec, trace, &live, &mut stack)?;

    // The measured window.
    let window = Window {
        probes: &up.probes,
        start_ns: clip_start(&spec.workload, up.ready.start_ns)?,
        span_ns: spec.workload.span_ns(),
        background: spec.background,
        drawing: up.drawing.as_ref(),
    };
    let (open, close, background) = window.measure(&up.start_tx, up.admin, up.app_id)?;

    let (report, stopped) = stop_app_and_stack(&mut stack)?;
    let daemon = stopped.daemon;
    let artefact = RunArtefact {
        app: spec.app_name.clone(),
        model: spec.model,
        scenario: spec.scenario,
        threads: up.probes.iter().map(ProbedThread::from).collect(),
        daemon_thread: DAEMON_THREAD_NAME.to_owned(),
        open,
        close,
        background,
        report,
        injected: up.replay_rx.try_recv().map_or(0, |c| c.injected),
        hub_unsent: stopped.hub_unsent,
        respondent_messages: stopped.respondent_messages,
        display: daemon
            .as_ref()
            .and_then(|d| d.kds.as_ref())
            .map(DisplayProfile::of),
    };
    let (status, seam) = daemon.map_or((None, None), |d| (d.guis, d.seam));
    Ok(Collected {
        artefact,
        status,
        seam,
    })
}

/// The stack of one experiment, up and waiting for the window: the app has said it is ready
/// and its window is found.
struct Running {
    /// Every measured thread: the daemon's, the hub's and driver's, the app's.
    probes: Vec<Probe>,
    /// The app's drawing thread, when it declared one.
    drawing: Option<Probe>,
    /// Starts the driver's replay at the instant sent.
    start_tx: mpsc::Sender<u64>,
    /// The driver's counters when it ends.
    replay_rx: Receiver<ReplayCounters>,
    admin: KdsAdmin,
    app_id: AppId,
    ready: Ready,
    /// The device pipe's read end when no hub took it (under ESM + KDS + guiS), kept open for
    /// the run as before the split.
    _device_r: Option<OwnedFd>,
}

/// Brings the stack up in the order the module docs give: the daemon (with guiS when the model
/// runs it), the baseline's hub, the driver, the respondent (messaging), then the app, whose
/// ready line and window it waits for.
fn bring_up(
    spec: &ExperimentSpec,
    trace: Option<Trace>,
    live: &LiveStack,
    stack: &mut Stack,
) -> Result<Running, ExperimentError> {
    let baseline = spec.model.is_baseline().then_some(spec.model);
    let (esm_path, kds_path) = (live.sockets().esm.clone(), live.sockets().kds.clone());
    let me = std::process::id() as i32;
    let mut probes: Vec<Probe> = Vec::new();
    // The device under a baseline: a pipe the driver writes and the hub reads. Under ESM + KDS +
    // guiS the driver is a data-plane producer writing the app's ring (`docs/live.md`).
    let (device_r, device_w) = sys::pipe(false)?;
    let mut device_r = Some(device_r);

    // The daemon, built on its own thread (its sources are not `Send`); headless, on the
    // default screen: seed 000's 1080p display.
    {
        let guis = spec.model.runs_guis();
        let (daemon, ()) = live.start(move |d| {
            if guis {
                switch_on_guis(d)?;
            }
            Ok::<_, DaemonError>(())
        })?;
        probes.push(Probe {
            group: Group::Server,
            name: DAEMON_THREAD_NAME.into(),
            pid: me,
            tid: daemon.tid(),
        });
        stack.daemon = Some(daemon);
    }

    // The baseline's hub.
    let app_end = match baseline {
        Some(model) => {
            let device = device_r
                .take()
                .ok_or_else(|| thread_err("the device is taken"))?;
            Some(start_hub(model, device, stack, &mut probes)?)
        }
        None => None,
    };

    // The driver: replays the workload into the device from the instant it is given.
    let producer_of = match (&trace, baseline) {
        (Some(t), None) => Some((esm_path, input_kinds(t))),
        _ => None,
    };
    let (start_tx, replay_rx) = start_driver(trace, producer_of, device_w, stack, &mut probes)?;

    // The respondent (messaging).
    let respondent = if spec.kind == AppKind::Messaging {
        let r = Respondent::bind("127.0.0.1:0")?.spawn()?;
        let addr = r.local_addr();
        stack.respondent = Some(r);
        Some(addr)
    } else {
        None
    };

    // The app.
    spawn_app(spec, &kds_path, app_end.as_ref(), respondent, stack)?;
    drop(app_end);
    let line = stack.next_line(READY_TIMEOUT, "ready line")?;
    let ready: Ready = serde_json::from_str(&line)
        .map_err(|e| ExperimentError::AppProtocol(format!("ready line {line:?}: {e}")))?;
    let mut admin = KdsAdmin::connect(&kds_path)?;
    let window = admin
        .windows()?
        .into_iter()
        .find(|w| w.pid == ready.pid)
        .ok_or(ExperimentError::NoWindow(ready.pid))?;
    let app_probes = app_probes(ready.pid, &window.threads)?;
    let drawing = app_probes
        .iter()
        .find(|p| p.group == Group::Drawing)
        .cloned();
    probes.extend(app_probes);
    Ok(Running {
        probes,
        drawing,
        start_tx,
        replay_rx,
        admin,
        app_id: window.app,
        ready,
        _device_r: device_r,
    })
}

/// When the measured clip starts: the video app's ready line says (`start_ns`); a replay has
/// none (it starts [`REPLAY_LEAD_NS`] after the window opens).
///
/// # Errors
/// [`ExperimentError::AppProtocol`] when a clip's ready line has no `start_ns`.
fn clip_start(
    workload: &Workload,
    ready_start_ns: Option<u64>,
) -> Result<Option<u64>, ExperimentError> {
    match (workload, ready_start_ns) {
        (Workload::Clip { .. }, Some(at)) => Ok(Some(at)),
        (Workload::Clip { .. }, None) => Err(ExperimentError::AppProtocol(
            "the video app's ready line has no start_ns".into(),
        )),
        (Workload::Replay { .. }, _) => Ok(None),
    }
}

/// Tells the app to stop, reads its report, waits for it, then stops and joins the rest of the
/// stack and checks the ESM's accounting.
fn stop_app_and_stack(stack: &mut Stack) -> Result<(AppReport, Stopped), ExperimentError> {
    if let Some(mut stdin) = stack.stdin.take() {
        writeln!(stdin, "stop")?;
        stdin.flush()?;
    }
    let line = stack.next_line(REPORT_TIMEOUT, "report")?;
    let report: AppReport = serde_json::from_str(&line)
        .map_err(|e| ExperimentError::AppProtocol(format!("report line: {e}")))?;
    if let Some(mut c) = stack.child.take() {
        let status = c.wait()?;
        if !status.success() {
            return Err(ExperimentError::AppFailed {
                status: status.to_string(),
                stderr: stack.exited_stderr(),
            });
        }
    }
    let mut stopped = stack.stop_all();
    if let Some(e) = stopped.error.take() {
        return Err(e);
    }
    if let Some(d) = &stopped.daemon {
        d.accounting.clone().map_err(ExperimentError::Accounting)?;
    }
    Ok((report, stopped))
}

#[cfg(test)]
mod tests {
    use super::probe::totals;
    use super::*;

    #[test]
    fn a_clip_starts_where_its_ready_line_says_and_a_replay_at_its_lead() {
        let clip = Workload::Clip {
            width_px: 64,
            height_px: 48,
            clip_ms: 1000,
        };
        assert_eq!(clip_start(&clip, Some(42)).unwrap(), Some(42));
        assert!(matches!(
            clip_start(&clip, None),
            Err(ExperimentError::AppProtocol(m)) if m.contains("no start_ns")
        ));
        let replay = Workload::Replay {
            trace: Trace::default(),
            span_ns: 1,
        };
        assert_eq!(clip_start(&replay, Some(42)).unwrap(), None);
    }

    #[test]
    fn the_display_profile_is_the_daemons_display_counters() {
        let mut k = lulld::kds::KdsReport {
            server: lull_kds::server::KdsCounters::default(),
            host: lulld::kds::KdsHostCounters::default(),
        };
        k.server.requests = 1;
        k.server.draws = 2;
        k.server.draw_batches = 3;
        k.server.frame_requests = 4;
        k.server.frames_done = 5;
        k.host.frame_timer_expiries = 6;
        k.server.restacks = 7;
        k.server.restacked_pixels = 8;
        k.server.restacks_skipped = 9;
        assert_eq!(
            DisplayProfile::of(&k),
            DisplayProfile {
                requests: 1,
                draws: 2,
                draw_batches: 3,
                frame_requests: 4,
                frames_done: 5,
                frame_timer_expiries: 6,
                restacks: 7,
                restacked_pixels: 8,
                restacks_skipped: 9,
            }
        );
    }

    #[test]
    fn groups_sum_without_the_device() {
        let t = |group, cpu_ms, wakeups| ThreadUsage {
            group,
            name: String::new(),
            tid: 0,
            wakeups,
            wakeups_per_s: 0.0,
            involuntary_switches: 0,
            cpu_ms,
            wakeups_per_event: 0.0,
            wakeups_per_frame: 0.0,
            cpu_us_per_event: 0.0,
            cpu_us_per_frame: 0.0,
        };
        let (cpu, wk) = totals(&[
            t(Group::Drawing, 2.0, 3),
            t(Group::Server, 1.0, 5),
            t(Group::Device, 100.0, 100),
            t(Group::Drawing, 1.0, 1),
        ]);
        assert_eq!((cpu.drawing, cpu.server, cpu.total), (3.0, 1.0, 4.0));
        assert_eq!((wk.drawing, wk.server, wk.total), (4, 5, 9));
    }
}
