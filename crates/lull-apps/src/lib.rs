//! The app processes of the live experiments. Seed 000 chapter 6's three live apps — stylus
//! tracking, text messaging, video — with seed 001's file manager, ZIP and FTP and seed 003's
//! painting app, as real programs (the `lull-app` binary) that attach to the display server, take their input through
//! one of the four delivery models, and draw real pixels through the KDS.
//!
//! **Input.** Under `esm-kds-guis` the handlers are registered with [`KdsApp::esm_register`] and
//! run on the runtime's event thread, pushed by the ESM. Under a baseline the events come from
//! the harness's hub (`lull_lab::stack::run_hub`) over the inherited `SOCK_SEQPACKET` descriptor
//! `--hub-fd`, and the app's own loop thread runs that model's app loop
//! ([`baseline::run_baseline_app`]: pull-16ms polls every 16 ms, vsync-batched blocks and ticks
//! frames while animating, blocking-middleware blocks); that thread is declared to the server as
//! the app's event thread. Every handler's first act is reading `CLOCK_MONOTONIC`: latency =
//! handler start − the event's injection stamp.
//!
//! **Drawing.** Every model draws through the KDS on the runtime's drawing thread; guiS (the
//! runtime's gates, plus the freezer in the daemon) is on only under `esm-kds-guis`. A handler
//! records what changed and wakes the drawing thread, which composes and draws it; the time the
//! `DRAW` is acknowledged is the frame's, and injection → that time is the event's frame latency.
//!
//! **Process interface** (the harness, `lull_lab::experiment`, is the other side): after attaching,
//! registering and connecting, the app prints one line `{"ready":true,"app":"app1.0","pid":N,
//! "start_ns":T|null}` (`start_ns`: when the video clip's first frame is due, monotonic ns) and
//! runs until it reads `stop` on stdin (or end of file); then it detaches and prints its
//! [`AppReport`] as one line of JSON. On an error it prints the message on stderr and exits 1.
//!
//! Also here: [`work`] (the `lull-work` binary, seed 004's CPU work) and [`baseline`], the app end
//! of the three baseline delivery models.

// Unsafe code lives in the OS layer (`lull_os::sys`), behind safe wrappers.
#![forbid(unsafe_code)]

pub mod baseline;
pub mod filemanager;
pub mod messaging;
pub mod painting;
pub mod tracking;
pub mod transfer;
pub mod video;
pub mod work;

use std::io::{BufRead, Write};
use std::net::SocketAddr;
use std::os::fd::{OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use lull::kds_client::KdsClientError;
use lull::kds_runtime::{AppOptions, KdsApp, RuntimeCounters};
use lull_model::{AppEvent, EventKind, ThreadCategory};
use lull_os::sys::{self, EventFd};
use serde::{Deserialize, Serialize};

use crate::baseline::BaselineHandler;
use lull_model::time::NS_PER_MS;
use lull_model::DeliveryModel;

/// How long after the ready line the video clip's first frame is due: time for the harness to
/// see the app's threads asleep and open its measurement window first (its settling takes a few
/// milliseconds), the lead `lull live latency` gives its stack too.
pub const VIDEO_START_LEAD_NS: u64 = START_LEAD_NS;
/// Time between starting a live stack's threads and the first injected event, so every thread is
/// set up and asleep before the measured window opens.
pub const START_LEAD_NS: u64 = 300 * NS_PER_MS;
/// How long `drain` waits for an app to answer the touches it was sent: far beyond a session's
/// backlog on a loaded machine, short enough that a stuck app fails the run.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// The kinds the tracking app (and the painting app) registers for.
pub const TRACKING_KINDS: [EventKind; 3] = [
    EventKind::TouchMotion,
    EventKind::TouchPress,
    EventKind::TouchRelease,
];
/// Longest line the respondent accepts, bytes without the newline: a message of the test is at
/// most `lull_workload::messaging::MAX_MESSAGE_CHARS` characters.
pub const MAX_RESPONDENT_LINE_BYTES: usize = 4096;
/// Longest video clip, ms: one hour, like the messaging session's bound. It bounds the report's
/// per-frame vectors (about 108,000 frames at 29.97 fps) and keeps frame times far from overflow.
pub const MAX_CLIP_MS: u64 = 3_600 * 1_000;

/// Which app.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AppKind {
    Tracking,
    Messaging,
    Video,
    /// Seed 001's file manager (`filemanager`).
    #[serde(rename = "filemanager")]
    FileManager,
    /// Seed 001's ZIP: a real compressor in the background.
    Zip,
    /// Seed 001's FTP: a real TCP download in the background.
    Ftp,
    /// Seed 003's painting app: one airbrush stroke per stylus event.
    Painting,
}

impl AppKind {
    pub const ALL: [AppKind; 7] = [
        AppKind::Tracking,
        AppKind::Messaging,
        AppKind::Video,
        AppKind::FileManager,
        AppKind::Zip,
        AppKind::Ftp,
        AppKind::Painting,
    ];

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            AppKind::Tracking => "tracking",
            AppKind::Messaging => "messaging",
            AppKind::Video => "video",
            AppKind::FileManager => "filemanager",
            AppKind::Zip => "zip",
            AppKind::Ftp => "ftp",
            AppKind::Painting => "painting",
        }
    }

    #[must_use]
    pub fn from_name(s: &str) -> Option<AppKind> {
        AppKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// The delivery models an app runs under: ESM + KDS + guiS, then the three baselines (KDS for
/// drawing, no guiS, input from a hub).
pub const APP_MODELS: [DeliveryModel; 4] = [
    DeliveryModel::EsmKdsGuis,
    DeliveryModel::Pull16ms,
    DeliveryModel::VsyncBatched,
    DeliveryModel::BlockingMiddleware,
];

/// The app model called `name` (one of [`APP_MODELS`]).
#[must_use]
pub fn app_model(name: &str) -> Option<DeliveryModel> {
    DeliveryModel::from_name(name).filter(|m| APP_MODELS.contains(m))
}

/// Everything `lull-app` is told on its command line.
#[derive(Clone, Debug)]
pub struct AppConfig {
    pub kind: AppKind,
    pub model: DeliveryModel,
    pub kds_socket: PathBuf,
    /// The inherited hub descriptor (baselines).
    pub hub_fd: Option<RawFd>,
    /// The respondent's address (messaging).
    pub respondent: Option<SocketAddr>,
    /// Video clip length, at most [`MAX_CLIP_MS`]; default seed 000's 30 s.
    pub clip_ms: Option<u64>,
    /// Video frame size; default seed 000's 1920 × 1080.
    pub video_size: Option<(u32, u32)>,
    /// Seed of the video decoder's residuals.
    pub seed: u64,
    /// The file ZIP compresses.
    pub zip_input: Option<PathBuf>,
    /// The server FTP downloads from.
    pub ftp_server: Option<SocketAddr>,
    /// Shrinks the file manager's work (0 < scale ≤ 1; 1 = seed 001's 1 s and 0.5 s).
    pub scale: f64,
}

/// Errors of an app.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("display server: {0}")]
    Kds(#[from] KdsClientError),
    #[error("{model} needs --hub-fd (the harness's hub connection)")]
    MissingHubFd { model: &'static str },
    #[error("--hub-fd: {0}")]
    BadHubFd(#[source] sys::AdoptError),
    #[error("--hub-fd is only for the baselines, not {0}")]
    UnexpectedHubFd(&'static str),
    #[error("messaging needs --respondent ADDR")]
    MissingRespondent,
    #[error("zip needs --zip-input FILE")]
    MissingZipInput,
    #[error("ftp needs --ftp-server ADDR")]
    MissingFtpServer,
    #[error("cannot connect to the respondent at {addr}: {source}")]
    Respondent {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("video: {0}")]
    Video(String),
    #[error("the app loop thread failed: {0}")]
    Loop(String),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// The messaging app's part of the report.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
pub struct MessagingAppReport {
    pub sent: u64,
    pub replies: u64,
    /// Send → reply handled, per reply.
    pub reply_rtt_ns: Vec<u64>,
    /// Messages that could not be written to the respondent.
    pub send_errors: u64,
}

/// The video app's part of the report.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
pub struct VideoAppReport {
    /// Frames in the clip.
    pub frames: u64,
    pub decoded: u64,
    /// Frames drawn (the drawing thread draws the newest decoded frame; a frame decoded while
    /// the previous one was still being drawn replaces it undrawn).
    pub drawn: u64,
    pub decode_ns_mean: f64,
    /// Frames whose decoding finished after the next frame was due.
    pub late: u64,
    pub width: u32,
    pub height: u32,
}

/// The file manager's and the background transfers' part of the report.
#[derive(Clone, PartialEq, Debug, Default, Serialize, Deserialize)]
pub struct WorkReport {
    /// File manager: the work of each open and close in its handler, ns.
    pub open_ns: Vec<u64>,
    pub close_ns: Vec<u64>,
    /// ZIP, FTP: `go` → the work's end, when it succeeded.
    pub completion_ns: Option<u64>,
    pub bytes: u64,
    pub error: Option<String>,
    /// Painting: the handler's CPU time per stroke, ns (the interaction's work C).
    #[serde(default)]
    pub handler_cpu_ns: Vec<u64>,
    /// File manager: touches whose view a later touch replaced before it was drawn.
    #[serde(default)]
    pub superseded_touches: u64,
}

/// The final line of `lull-app`.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct AppReport {
    pub app: AppKind,
    pub model: DeliveryModel,
    pub delivered: u64,
    /// Events the app was told it lost (ESM overflow markers).
    pub dropped_reported: u64,
    pub latencies_ns: Vec<u64>,
    /// Injection → the `DRAW` showing that event's change acknowledged (events that change the
    /// display: every touch event, key presses).
    pub frame_latencies_ns: Vec<u64>,
    pub frames_drawn: u64,
    /// When each frame's last `DRAW` was acknowledged (monotonic ns).
    pub frame_done_ns: Vec<u64>,
    /// `COMPOSE`/`DRAW` requests the server refused.
    pub draw_errors: u64,
    pub runtime: RuntimeCounters,
    pub messaging: Option<MessagingAppReport>,
    pub video: Option<VideoAppReport>,
    #[serde(default)]
    pub work: Option<WorkReport>,
}

/// The ready line.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct Ready {
    pub ready: bool,
    /// The app's id, as `app<index>.<generation>`.
    pub app: String,
    pub pid: u32,
    /// When the clip's first frame is due (video), monotonic ns.
    pub start_ns: Option<u64>,
}

// ---------------------------------------------------------------------------------------------
// What the apps share.

/// Runs `draw_loop` on the app's drawing thread, with its own handle on the app.
pub(crate) fn run_drawing<A: Send + Sync + 'static>(
    kds: &KdsApp,
    app: &Arc<A>,
    draw_loop: fn(&lull::kds_runtime::ThreadCtx, &A),
) -> Result<(), AppError> {
    let a = Arc::clone(app);
    kds.run_on(ThreadCategory::Drawing, move |ctx| draw_loop(ctx, &a))?;
    Ok(())
}

/// A mutex-protected state and the condition variable its threads wait on.
#[derive(Debug, Default)]
pub(crate) struct Shared<S> {
    state: Mutex<S>,
    wake: Condvar,
}

impl<S> Shared<S> {
    pub(crate) fn new(s: S) -> Shared<S> {
        Shared {
            state: Mutex::new(s),
            wake: Condvar::new(),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, S> {
        // Every update of an app's state is a few assignments made under the lock without
        // calls that panic, so a poisoned lock still guards consistent data.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A drawing thread's wait for its next pass: guiS's gate for its category, then until
    /// `ready` or the app is `stopping` (checked under the lock), then the next frame (at most
    /// one per refresh). `false`: the thread returns (its category stopped, the app stopping, or
    /// the server gone).
    pub(crate) fn next_pass(
        &self,
        ctx: &lull::kds_runtime::ThreadCtx,
        stopping: impl Fn(&S) -> bool,
        ready: impl FnMut(&mut S) -> bool,
    ) -> bool {
        ctx.gate() && self.wait_for_frame(ctx, stopping, ready)
    }

    /// [`Shared::next_pass`] of an input-driven app: after the gate, a frame asked for ahead
    /// (input dense) first gets its slot, before the wait for a change.
    pub(crate) fn next_input_pass(
        &self,
        ctx: &lull::kds_runtime::ThreadCtx,
        stopping: impl Fn(&S) -> bool,
        ready: impl FnMut(&mut S) -> bool,
    ) -> bool {
        ctx.gate()
            && !matches!(drawn(ctx.await_frame_done()), Drawn::Stop)
            && self.wait_for_frame(ctx, stopping, ready)
    }

    /// Blocks (no timeout) until `ready` or `stopping`, then asks for the next frame.
    fn wait_for_frame(
        &self,
        ctx: &lull::kds_runtime::ThreadCtx,
        stopping: impl Fn(&S) -> bool,
        mut ready: impl FnMut(&mut S) -> bool,
    ) -> bool {
        {
            let g = self.lock();
            let g = self.wait_until(g, |s| stopping(s) || ready(s));
            if stopping(&g) {
                return false;
            }
        }
        !matches!(drawn(ctx.next_frame()), Drawn::Stop)
    }

    /// [`Shared::wait_until`] for at most `timeout`; the state as it then stands.
    pub(crate) fn wait_until_for(
        &self,
        timeout: Duration,
        mut ready: impl FnMut(&S) -> bool,
    ) -> MutexGuard<'_, S> {
        let g = self.lock();
        self.wake
            .wait_timeout_while(g, timeout, |s| !ready(s))
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0
    }

    pub(crate) fn wait_until<'a>(
        &self,
        mut g: MutexGuard<'a, S>,
        mut ready: impl FnMut(&mut S) -> bool,
    ) -> MutexGuard<'a, S> {
        while !ready(&mut g) {
            g = self
                .wake
                .wait(g)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        g
    }

    pub(crate) fn notify(&self) {
        self.wake.notify_all();
    }
}

/// Handling and drawing figures every app keeps. One entry per handled event and per frame, so
/// the counts are the lengths.
#[derive(Clone, Debug, Default)]
pub(crate) struct Stats {
    /// Per handled event.
    pub latencies_ns: Vec<u64>,
    pub frame_latencies_ns: Vec<u64>,
    /// Per frame drawn.
    pub frame_done_ns: Vec<u64>,
    pub draw_errors: u64,
}

impl Stats {
    /// An event whose handler started at `start_ns`.
    pub(crate) fn handled(&mut self, ev: &AppEvent, start_ns: u64) {
        self.latencies_ns
            .push(start_ns.saturating_sub(ev.injected_ns));
    }

    /// A frame acknowledged at `done_ns`, showing the events injected at `injected_ns`.
    pub(crate) fn frame(&mut self, done_ns: u64, injected_ns: &[u64]) {
        self.frame_done_ns.push(done_ns);
        self.frame_latencies_ns
            .extend(injected_ns.iter().map(|&i| done_ns.saturating_sub(i)));
    }

    /// Events handled.
    pub(crate) fn delivered(&self) -> u64 {
        self.latencies_ns.len() as u64
    }

    /// Frames drawn.
    pub(crate) fn frames_drawn(&self) -> u64 {
        self.frame_done_ns.len() as u64
    }
}

/// What a `COMPOSE`/`DRAW` result means for the drawing loop.
pub(crate) enum Drawn {
    Ok,
    /// Refused by the server (counted); the loop carries on.
    Refused,
    /// The app is stopping or the server has gone: return.
    Stop,
}

pub(crate) fn drawn(r: Result<(), KdsClientError>) -> Drawn {
    match r {
        Ok(()) => Drawn::Ok,
        Err(KdsClientError::Refused { .. }) => Drawn::Refused,
        Err(_) => Drawn::Stop,
    }
}

/// One app's logic, driven by whichever delivery model runs it.
pub(crate) trait LiveApp: Send + Sync + 'static {
    /// The kinds its handlers take.
    fn kinds(&self) -> &'static [EventKind];
    /// The handler; `start_ns` is the clock read as its first act.
    fn on_event(&self, ev: &AppEvent, start_ns: u64);
    /// The pull model's poll of the app's other inputs (after its input socket).
    fn on_poll(&self) {}
    /// Makes the app's own waits return (drawing, network), before the runtime stops.
    fn stop(&self);
    /// The figures, once stopped.
    fn report(&self) -> (Stats, Option<MessagingAppReport>, Option<VideoAppReport>);
    /// The harness said `go` (apps whose work waits for it: ZIP, FTP).
    fn go(&self) {}
    /// The file manager's and transfers' figures.
    fn work(&self) -> Option<WorkReport> {
        None
    }
    /// Waits, at most `timeout`, until `presses` touch presses have been handled and each
    /// answered by a frame (its own or a later touch's); the presses handled so far. Apps that
    /// answer no touches have nothing to wait for.
    fn drain(&self, presses: u64, timeout: Duration) -> u64 {
        let _ = timeout;
        presses
    }
}

/// A baseline's loop calling an app's handlers.
struct LoopHandler(Arc<dyn LiveApp>);

impl BaselineHandler for LoopHandler {
    fn on_event(&mut self, ev: &AppEvent) {
        let start_ns = sys::monotonic_ns();
        self.0.on_event(ev, start_ns);
    }

    fn on_poll(&mut self) {
        self.0.on_poll();
    }
}

/// Takes ownership of the inherited hub descriptor, which must be a socket.
fn adopt_hub_fd(fd: RawFd) -> Result<OwnedFd, AppError> {
    sys::adopt_inherited_socket(fd).map_err(AppError::BadHubFd)
}

/// The baseline's app loop on a thread of its own.
struct AppLoop {
    stop: Arc<EventFd>,
    handle: std::thread::JoinHandle<std::io::Result<()>>,
}

fn start_loop(
    model: DeliveryModel,
    hub: OwnedFd,
    app: Arc<dyn LiveApp>,
    kds: &KdsApp,
) -> Result<AppLoop, AppError> {
    let stop = Arc::new(EventFd::new()?);
    let s = Arc::clone(&stop);
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("app-loop".into())
        .spawn(move || {
            let _ = tx.send(sys::gettid());
            baseline::run_baseline_app(model, hub, LoopHandler(app), &s).map(|_| ())
        })?;
    let tid = rx
        .recv()
        .map_err(|_| AppError::Loop("the loop thread ended at once".into()))?;
    kds.declare_thread(ThreadCategory::Event, tid)?;
    Ok(AppLoop { stop, handle })
}

/// Window size an app asks for (0 × 0: the whole screen).
fn window_size(cfg: &AppConfig) -> (u32, u32) {
    match cfg.kind {
        AppKind::Tracking | AppKind::Painting => (0, 0),
        AppKind::Messaging => (messaging::WINDOW_W_PX, messaging::WINDOW_H_PX),
        AppKind::Video => cfg.video_size.unwrap_or((
            lull_workload::video::SEED000.width_px,
            lull_workload::video::SEED000.height_px,
        )),
        AppKind::FileManager => (filemanager::WINDOW_W_PX, filemanager::WINDOW_H_PX),
        // A background app's window is never seen; the smallest the server takes.
        AppKind::Zip | AppKind::Ftp => (1, 1),
    }
}

/// Runs one app: attach, set up, print the ready line on `out`, run until `stop` on `input`,
/// detach, and return the report (the caller prints it).
///
/// # Errors
/// [`AppError`] when the app cannot be set up.
pub fn run(
    cfg: &AppConfig,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Result<AppReport, AppError> {
    let baseline = cfg.model.is_baseline().then_some(cfg.model);
    let hub = match (baseline, cfg.hub_fd) {
        (Some(_), Some(fd)) => Some(adopt_hub_fd(fd)?),
        (Some(_), None) => {
            return Err(AppError::MissingHubFd {
                model: cfg.model.name(),
            })
        }
        (None, Some(_)) => return Err(AppError::UnexpectedHubFd(cfg.model.name())),
        (None, None) => None,
    };
    let (width, height) = window_size(cfg);
    let kds = KdsApp::attach(
        &cfg.kds_socket,
        &AppOptions {
            width,
            height,
            name: cfg.kind.name().to_owned(),
            guis: cfg.model.runs_guis(),
        },
    )?;
    let mut start_ns = None;
    let app: Arc<dyn LiveApp> = match cfg.kind {
        AppKind::Tracking => tracking::start(&kds)?,
        AppKind::Painting => painting::start(&kds)?,
        AppKind::Messaging => {
            let addr = cfg.respondent.ok_or(AppError::MissingRespondent)?;
            messaging::start(&kds, addr, cfg.model == DeliveryModel::Pull16ms)?
        }
        AppKind::Video => {
            let mut params = lull_workload::video::SEED000;
            params.width_px = width;
            params.height_px = height;
            if let Some(ms) = cfg.clip_ms {
                params.duration_ms = ms;
            }
            let at = sys::monotonic_ns() + VIDEO_START_LEAD_NS;
            start_ns = Some(at);
            video::start(&kds, params, cfg.seed, at)?
        }
        AppKind::FileManager => filemanager::start(&kds, cfg.scale)?,
        AppKind::Zip => transfer::start(
            &kds,
            transfer::Job::Zip {
                input: cfg.zip_input.clone().ok_or(AppError::MissingZipInput)?,
            },
        )?,
        AppKind::Ftp => transfer::start(
            &kds,
            transfer::Job::Ftp {
                server: cfg.ftp_server.ok_or(AppError::MissingFtpServer)?,
            },
        )?,
    };
    let app_loop = match (baseline, hub) {
        (Some(model), Some(hub)) => Some(start_loop(model, hub, Arc::clone(&app), &kds)?),
        _ => {
            for &kind in app.kinds() {
                let a = Arc::clone(&app);
                kds.esm_register(kind, move |ev| {
                    let start_ns = sys::monotonic_ns();
                    a.on_event(ev, start_ns);
                })?;
            }
            None
        }
    };
    let ready = Ready {
        ready: true,
        app: kds.app().to_string(),
        pid: std::process::id(),
        start_ns,
    };
    writeln!(
        out,
        "{}",
        serde_json::to_string(&ready).map_err(std::io::Error::other)?
    )?;
    out.flush()?;

    // Until `stop` (or the harness closing our stdin).
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 || line.trim() == "stop" {
            break;
        }
        if line.trim() == "go" {
            app.go();
        }
        if let Some(n) = line.trim().strip_prefix("drain ") {
            match n.parse() {
                Ok(presses) => {
                    let handled = app.drain(presses, DRAIN_TIMEOUT);
                    writeln!(out, "{{\"drained\":{handled}}}")?;
                }
                Err(_) => writeln!(
                    out,
                    "{}",
                    serde_json::json!({ "error": format!("drain takes a count of touch presses, not {n:?}") })
                )?,
            }
            out.flush()?;
        }
    }

    let mut loop_error = None;
    if let Some(l) = app_loop {
        let _ = l.stop.signal();
        match l.handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => loop_error = Some(e.to_string()),
            Err(_) => loop_error = Some("panicked".into()),
        }
    }
    app.stop();
    let counters = kds.detach()?;
    if let Some(e) = loop_error {
        return Err(AppError::Loop(e));
    }
    let (stats, messaging, video) = app.report();
    let work = app.work();
    Ok(AppReport {
        app: cfg.kind,
        model: cfg.model,
        delivered: stats.delivered(),
        dropped_reported: counters.dropped_reported,
        frames_drawn: stats.frames_drawn(),
        latencies_ns: stats.latencies_ns,
        frame_latencies_ns: stats.frame_latencies_ns,
        frame_done_ns: stats.frame_done_ns,
        draw_errors: stats.draw_errors,
        runtime: counters,
        messaging,
        video,
        work,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in AppKind::ALL {
            assert_eq!(AppKind::from_name(k.name()), Some(k));
        }
        assert!(APP_MODELS.iter().all(|&m| app_model(m.name()) == Some(m)));
        assert_eq!(app_model("esm"), None);
    }

    #[test]
    fn stats_measure_from_injection() {
        let mut s = Stats::default();
        let ev = AppEvent {
            seq: lull_model::EventSeq(0),
            kind: EventKind::Key,
            payload: lull_model::Payload::Key {
                code: 30,
                pressed: true,
            },
            injected_ns: 1_000,
        };
        s.handled(&ev, 1_500);
        s.frame(4_000, &[1_000, 2_000]);
        assert_eq!(s.latencies_ns, [500]);
        assert_eq!(s.frame_latencies_ns, [3_000, 2_000]);
        assert_eq!((s.delivered(), s.frames_drawn()), (1, 1));
    }

    #[test]
    fn a_hub_fd_must_be_an_inherited_socket() {
        use std::os::fd::{AsFd, AsRawFd, IntoRawFd};
        assert!(matches!(
            adopt_hub_fd(1),
            Err(AppError::BadHubFd(sys::AdoptError::BadNumber(1)))
        ));
        assert!(matches!(
            adopt_hub_fd(RawFd::MAX),
            Err(AppError::BadHubFd(sys::AdoptError::NotOpen { .. }))
        ));
        // A regular file handed over is refused (and left open: the app did not take it).
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        sys::set_cloexec(file.as_fd(), false).unwrap();
        let raw = file.as_raw_fd();
        match adopt_hub_fd(raw) {
            Err(e @ AppError::BadHubFd(sys::AdoptError::NotSocket { fd, .. })) => {
                assert_eq!(fd, raw);
                let why = e.to_string();
                assert!(why.starts_with("--hub-fd: "), "{why}");
                assert!(why.contains("not a socket"), "{why}");
            }
            Err(e) => panic!("a regular file refused for the wrong reason: {e}"),
            Ok(hub) => {
                let _ = hub.into_raw_fd();
                panic!("a regular file adopted as the hub");
            }
        }
        // A socket passed across exec (no close-on-exec) is adopted, once.
        let (one, _other) = sys::seqpacket_pair().unwrap();
        sys::set_cloexec(one.as_fd(), false).unwrap();
        let raw = one.into_raw_fd();
        let hub = adopt_hub_fd(raw).unwrap();
        assert_eq!(hub.as_raw_fd(), raw);
        assert!(matches!(
            adopt_hub_fd(raw),
            Err(AppError::BadHubFd(sys::AdoptError::AlreadyAdopted(_)))
        ));
    }
}
