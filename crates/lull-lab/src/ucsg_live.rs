//! `lull live ucsg`: seed 001's experiment (§4.1) live on this machine — a foreground app (the
//! file manager, or the video player) with none, ZIP, FTP or both behind it, under the stock
//! kernel (`stock`: the daemon runs no policy; the kernel's fair class and the machine's own
//! governor decide) or UCSG on the daemon's seam (`ucsg`).
//!
//! The harness runs, as threads of this process, the daemon (display server, headless; with
//! `ucsg` also `Daemon::enable_ucsg`), the touch driver writing into the daemon's evdev pipe, and
//! the FTP server; the apps are `lull-app` processes: the background ones (`zip`, `ftp`) first,
//! each sent behind with `WM_BACKGROUND`, then the foreground one, brought to the front. Then the
//! background apps are told `go` and the touches (or the clip) start. ZIP compresses a generated
//! file ([`ZIP_BYTES`], generated deterministically and compressible like text, in a temporary
//! directory removed afterwards) with `gzip -6`; FTP downloads [`FTP_BYTES`] from the local
//! server paced at [`FTP_RATE_BYTES_PER_S`]. The run ends when the foreground session and every
//! background job have ended.
//!
//! Figures: the file manager's response time (touch injection → the frame showing the result,
//! mean and p99), the video's frames on time per second, the completion times of ZIP and FTP
//! (`go` → end), and `cpu_ms`, the CPU time of the apps and of the processes they spawned and
//! reaped (`/proc/PID/stat` utime + stime + cutime + cstime, read before they stop).

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::app_proc::{AppProc, AppProcError};
use crate::live_stack::{DaemonSockets, LiveDaemonError, LiveStack, SetupError};
use lull::kds_client::KdsAdmin;
use lull_model::time::{NS_PER_MS, NS_PER_S};
use lull_model::{RawEvent, TouchPhase};
use lull_os::sys::{self, EventFd};
use lull_workload::{TimedEvent, Trace};
use lulld::seam::SeamReport;
use lulld::ucsg::{UcsgConfig, UcsgStatus};
use serde::{Deserialize, Serialize};

use lull_apps::AppReport;

use crate::stack;

/// Seed 001 Table II: ZIP compresses 67.4 MB.
pub const ZIP_BYTES: u64 = 67_400_000;
/// Seed 001 Table II: FTP downloads 65.9 MB.
pub const FTP_BYTES: u64 = 65_900_000;
/// The download's pace: 40 Mbit/s. A Galaxy S4 has a 1×1 802.11n radio (72.2 Mbit/s at 20 MHz
/// with the short guard interval, the highest single-stream rate of 802.11n's MCS 7); TCP over
/// 802.11n delivers a little over half the PHY rate, so 40 Mbit/s = 5 MB/s, and 65.9 MB takes
/// about 13 s.
pub const FTP_RATE_BYTES_PER_S: u64 = 5_000_000;
/// Bytes the server writes per pacing step (a 10 ms quantum at the rate).
const FTP_STEP_BYTES: usize = 50_000;
/// Seed 001 Table II: the file manager opens and closes a directory ten times.
pub const FILE_MANAGER_CYCLES: u64 = 10;
/// From a touch that opens to the touch that closes, and from that to the next open: the user
/// looks at the listing for 2 s, then at the parent for 1 s (the seed does not say; these leave
/// room for a 1 s open and a 0.5 s close unloaded).
pub const OPEN_LOOK_NS: u64 = 2 * NS_PER_S;
pub const CLOSE_LOOK_NS: u64 = NS_PER_S;
/// Seed 001 Table II: the video plays 60 s of 640 × 360 at 30 fps.
pub const VIDEO_CLIP_MS: u64 = 60_000;
pub const VIDEO_W_PX: u32 = 640;
pub const VIDEO_H_PX: u32 = 360;
/// How long the background jobs may take at scale 1 (ZIP on a loaded 2-core machine: seconds;
/// FTP: 13 s paced).
const JOB_TIMEOUT: Duration = Duration::from_secs(600);
/// From the start to the first touch: the apps' threads settle after `go`.
const TOUCH_LEAD_NS: u64 = 200 * NS_PER_MS;
/// After the last touch, for its work and frame.
const TAIL_NS: u64 = 3 * NS_PER_S;
/// Words of the generated ZIP input, a text-like vocabulary (compresses about 3:1 with gzip -6,
/// as text does).
const VOCABULARY: [&str; 16] = [
    "the",
    "user",
    "centric",
    "scheduler",
    "governor",
    "thread",
    "cluster",
    "frequency",
    "core",
    "little",
    "big",
    "energy",
    "touch",
    "screen",
    "sensitivity",
    "period",
];

/// The foreground app.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Foreground {
    #[serde(rename = "filemanager")]
    FileManager,
    Video,
}

/// What runs behind it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub enum Background {
    #[serde(rename = "none")]
    None,
    #[serde(rename = "zip")]
    Zip,
    #[serde(rename = "ftp")]
    Ftp,
    #[serde(rename = "zip+ftp")]
    ZipFtp,
}

/// Which policy runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    Stock,
    Ucsg,
}

/// Errors of `lull live ucsg`.
#[derive(Debug, thiserror::Error)]
pub enum UcsgLiveError {
    #[error("unknown foreground {0:?}; expected filemanager or video")]
    UnknownForeground(String),
    #[error("unknown background {0:?}; expected none, zip, ftp or zip+ftp")]
    UnknownBackground(String),
    #[error("unknown policy {0:?}; expected stock or ucsg")]
    UnknownPolicy(String),
    #[error("scale {0} is outside (0, 1]")]
    BadScale(f64),
    #[error("cannot find the lull-app program at {0} (build it with `cargo build -p lull-apps`)")]
    AppBinary(PathBuf),
    #[error("{app}: {why}")]
    App { app: &'static str, why: String },
    #[error("{0}")]
    AppProc(#[from] AppProcError),
    #[error("daemon: {0}")]
    Daemon(#[from] LiveDaemonError),
    #[error("display server: {0}")]
    Kds(#[from] lull::kds_client::KdsClientError),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

impl UcsgLiveError {
    /// A usage error (bad argument), not a failure to run.
    #[must_use]
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            UcsgLiveError::UnknownForeground(_)
                | UcsgLiveError::UnknownBackground(_)
                | UcsgLiveError::UnknownPolicy(_)
                | UcsgLiveError::BadScale(_)
        )
    }
}

/// Parses `--foreground`.
///
/// # Errors
/// [`UcsgLiveError::UnknownForeground`].
pub fn parse_foreground(s: &str) -> Result<Foreground, UcsgLiveError> {
    match s {
        "filemanager" => Ok(Foreground::FileManager),
        "video" => Ok(Foreground::Video),
        _ => Err(UcsgLiveError::UnknownForeground(s.into())),
    }
}

/// Parses `--background`.
///
/// # Errors
/// [`UcsgLiveError::UnknownBackground`].
pub fn parse_background(s: &str) -> Result<Background, UcsgLiveError> {
    match s {
        "none" => Ok(Background::None),
        "zip" => Ok(Background::Zip),
        "ftp" => Ok(Background::Ftp),
        "zip+ftp" => Ok(Background::ZipFtp),
        _ => Err(UcsgLiveError::UnknownBackground(s.into())),
    }
}

/// Parses `--policy`.
///
/// # Errors
/// [`UcsgLiveError::UnknownPolicy`].
pub fn parse_policy(s: &str) -> Result<Policy, UcsgLiveError> {
    match s {
        "stock" => Ok(Policy::Stock),
        "ucsg" => Ok(Policy::Ucsg),
        _ => Err(UcsgLiveError::UnknownPolicy(s.into())),
    }
}

impl Background {
    fn zip(self) -> bool {
        matches!(self, Background::Zip | Background::ZipFtp)
    }
    fn ftp(self) -> bool {
        matches!(self, Background::Ftp | Background::ZipFtp)
    }
}

/// One run.
#[derive(Clone, Debug)]
pub struct UcsgLiveSpec {
    pub foreground: Foreground,
    pub background: Background,
    pub policy: Policy,
    /// Shrinks sizes and times (0 < scale ≤ 1): the file manager's work and pauses, the video's
    /// length, ZIP's and FTP's bytes.
    pub scale: f64,
    pub app_binary: PathBuf,
}

pub use lull_model::stats::{CompletionS, ResponseMs};

/// The report: the keys the issue names, then extra keys.
#[derive(Clone, Debug, Serialize)]
pub struct UcsgLiveReport {
    pub policy: Policy,
    pub foreground: Foreground,
    pub background: Background,
    pub response_ms: Option<ResponseMs>,
    pub fps: Option<f64>,
    pub completion_s: CompletionS,
    pub cpu_ms: f64,
    /// Extra: the scale of the run.
    pub scale: f64,
    /// Extra: the file manager's work per open and close in its handler, ms (mean).
    pub open_ms_mean: Option<f64>,
    pub close_ms_mean: Option<f64>,
    /// Extra: touches injected, frames drawn in answer, and touches answered by a later
    /// touch's frame (the app was still busy when the next touch came: one frame for both).
    pub touches: u64,
    pub responses: u64,
    pub superseded: u64,
    /// Extra: what UCSG found on this machine, and the seam's counts per action kind.
    pub ucsg: Option<UcsgStatus>,
    pub seam: Option<SeamReport>,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / NS_PER_MS as f64
}

/// The touches of the file manager's session: `FILE_MANAGER_CYCLES` × (press + release to open,
/// then to close), scaled.
#[must_use]
pub fn file_manager_trace(scale: f64) -> Trace {
    let s = |ns: u64| (ns as f64 * scale) as u64;
    let mut events = Vec::new();
    let mut t = 0;
    let touch = |at, events: &mut Vec<TimedEvent>| {
        for (dt, phase) in [(0, TouchPhase::Down), (NS_PER_MS, TouchPhase::Up)] {
            events.push(TimedEvent {
                at_ns: at + dt,
                raw: RawEvent::Touch {
                    phase,
                    x: (VIDEO_W_PX / 2) as i32,
                    y: (VIDEO_H_PX / 2) as i32,
                },
            });
        }
    };
    for _ in 0..FILE_MANAGER_CYCLES {
        touch(t, &mut events);
        t += s(OPEN_LOOK_NS);
        touch(t, &mut events);
        t += s(CLOSE_LOOK_NS);
    }
    Trace { events }
}

/// Writes `bytes` of text-like data to `path`, the same for every run.
///
/// # Errors
/// The file system's.
pub fn generate_zip_input(path: &Path, bytes: u64) -> std::io::Result<()> {
    let mut rng = lull_workload::rng::SplitMix64::new(0x5eed_0001);
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut written = 0u64;
    let mut line = String::new();
    while written < bytes {
        line.clear();
        for _ in 0..12 {
            let word = VOCABULARY[(rng.next_u64() % VOCABULARY.len() as u64) as usize];
            line.push_str(word);
            line.push(' ');
        }
        // A number per line, as logs and documents have: less compressible than words alone.
        line.push_str(&format!("{}\n", rng.next_u64() % 100_000));
        let take = (bytes - written).min(line.len() as u64) as usize;
        w.write_all(&line.as_bytes()[..take])?;
        written += take as u64;
    }
    w.flush()
}

/// The FTP server: sends `bytes` to the first client, paced at [`FTP_RATE_BYTES_PER_S`].
fn ftp_server(bytes: u64, stop: Arc<AtomicBool>) -> std::io::Result<(SocketAddr, JoinHandle<()>)> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let h = thread::Builder::new()
        .name("lull-ftpd".into())
        .spawn(move || {
            let Ok((mut s, _)) = l.accept() else { return };
            let chunk = vec![0xA5u8; FTP_STEP_BYTES];
            let start = sys::monotonic_ns();
            let mut sent = 0u64;
            while sent < bytes && !stop.load(Ordering::Relaxed) {
                let n = (bytes - sent).min(FTP_STEP_BYTES as u64) as usize;
                if s.write_all(&chunk[..n]).is_err() {
                    return;
                }
                sent += n as u64;
                // Pacing: the next write when the rate allows it.
                let due = start + sent * NS_PER_S / FTP_RATE_BYTES_PER_S;
                let now = sys::monotonic_ns();
                if due > now {
                    thread::sleep(Duration::from_nanos(due - now));
                }
            }
        })?;
    Ok((addr, h))
}

/// `lull-app KIND` for this cell: under ESM + KDS + guiS, on the cell's display server, at its
/// scale.
fn app_command(spec: &UcsgLiveSpec, kds_path: &Path, kind: &str) -> Command {
    let mut c = Command::new(&spec.app_binary);
    c.arg(kind)
        .arg("--model")
        .arg("esm-kds-guis")
        .arg("--kds-socket")
        .arg(kds_path)
        .arg("--scale")
        .arg(spec.scale.to_string());
    c
}

/// The app of process `pid` as the display server knows it.
fn window_of(admin: &mut KdsAdmin, pid: u32) -> Result<lull_model::AppId, UcsgLiveError> {
    admin
        .windows()?
        .into_iter()
        .find(|w| w.pid == pid)
        .map(|w| w.app)
        .ok_or_else(|| UcsgLiveError::App {
            app: "display server",
            why: format!("no window of process {pid}"),
        })
}

/// A background app and, for ftp, the server thread it downloads from.
type BackgroundApps = (Vec<AppProc>, Option<JoinHandle<()>>);

/// Starts the cell's background apps (zip on a generated input in `work_dir`, ftp from a local
/// server stopped by `ftp_stop`), each sent to the background as soon as it is up.
fn start_background(
    spec: &UcsgLiveSpec,
    app: &dyn Fn(&str) -> Command,
    admin: &mut KdsAdmin,
    work_dir: &Path,
    ftp_stop: &Arc<AtomicBool>,
) -> Result<BackgroundApps, UcsgLiveError> {
    let scaled = |b: u64| ((b as f64 * spec.scale) as u64).max(1);
    let mut bg = Vec::new();
    let mut ftpd = None;
    if spec.background.zip() {
        let input = work_dir.join("zip-input.txt");
        generate_zip_input(&input, scaled(ZIP_BYTES))?;
        let mut c = app("zip");
        c.arg("--zip-input").arg(&input);
        let p = AppProc::spawn("zip", c)?;
        let id = window_of(admin, p.pid)?;
        admin.background(id)?;
        bg.push(p);
    }
    if spec.background.ftp() {
        let (addr, h) = ftp_server(scaled(FTP_BYTES), Arc::clone(ftp_stop))?;
        ftpd = Some(h);
        let mut c = app("ftp");
        c.arg("--ftp-server").arg(addr.to_string());
        let p = AppProc::spawn("ftp", c)?;
        let id = window_of(admin, p.pid)?;
        admin.background(id)?;
        bg.push(p);
    }
    Ok((bg, ftpd))
}

/// Runs one cell: [`collect`], then [`analyse`].
///
/// # Errors
/// As [`collect`].
pub fn run(spec: &UcsgLiveSpec) -> Result<UcsgLiveReport, UcsgLiveError> {
    let c = collect(spec)?;
    let mut report = analyse(&c.artefact);
    report.ucsg = c.status;
    report.seam = c.seam;
    Ok(report)
}

/// What one cell took from the machine, unanalysed: the foreground app's report, the
/// background jobs' completion times, the apps' CPU time. Saved as JSON, it is analysed again
/// without the machine.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct UcsgArtefact {
    pub policy: Policy,
    pub foreground: Foreground,
    pub background: Background,
    pub scale: f64,
    /// The video's clip length at this scale, ms.
    pub clip_ms: u64,
    /// Touch-downs the driver replayed.
    pub touches: u64,
    pub foreground_report: AppReport,
    /// Each background job's completion, ns (`None`: not run, or not reported).
    pub zip_completion_ns: Option<u64>,
    pub ftp_completion_ns: Option<u64>,
    /// CPU time of every app process, ms.
    pub cpu_ms: f64,
}

/// One cell as collected, with UCSG's status on this machine.
pub type UcsgCollected = crate::artefact::Collected<UcsgArtefact, UcsgStatus>;

/// Runs one cell on this machine and keeps what was measured.
///
/// # Errors
/// [`UcsgLiveError`] when something cannot be set up or an app fails.
#[allow(clippy::too_many_lines)] // one sequence of steps, in the order the module docs give
pub fn collect(spec: &UcsgLiveSpec) -> Result<UcsgCollected, UcsgLiveError> {
    if !(spec.scale > 0.0 && spec.scale <= 1.0) {
        return Err(UcsgLiveError::BadScale(spec.scale));
    }
    if !spec.app_binary.is_file() {
        return Err(UcsgLiveError::AppBinary(spec.app_binary.clone()));
    }
    let scale = spec.scale;
    // Private scratch space (the zip input, and the sockets when there is no runtime
    // directory), removed with everything in it when the cell ends.
    let scratch = lull_os::fileout::ScratchDir::new("lull-ucsg")?;
    let work_dir = scratch.path().to_owned();

    // The daemon.
    let (device_r, device_w) = sys::pipe(false)?;
    let ucsg_on = spec.policy == Policy::Ucsg;
    let stack = LiveStack::new(DaemonSockets::fresh("ucsg", &work_dir));
    let kds_path = stack.sockets().kds.clone();
    let (daemon, ucsg_status) = stack.start(move |d| {
        crate::live_stack::feed_if_loaded(d)?;
        let status = if ucsg_on {
            Some(d.enable_ucsg(&UcsgConfig::default())?)
        } else {
            None
        };
        d.add_evdev(device_r)?;
        Ok::<_, SetupError>(status)
    })?;

    let app = |kind: &str| app_command(spec, &kds_path, kind);

    // The background apps, each sent behind as soon as it is up.
    let mut admin = KdsAdmin::connect(&kds_path)?;
    let ftp_stop = Arc::new(AtomicBool::new(false));
    let (mut bg, ftpd) = start_background(spec, &app, &mut admin, &work_dir, &ftp_stop)?;

    // The foreground app, in front.
    let clip_ms = ((VIDEO_CLIP_MS as f64 * scale) as u64).max(1);
    let mut fg = match spec.foreground {
        Foreground::FileManager => AppProc::spawn("filemanager", app("filemanager"))?,
        Foreground::Video => {
            let mut c = app("video");
            c.arg("--video-size")
                .arg(format!("{VIDEO_W_PX}x{VIDEO_H_PX}"))
                .arg("--clip-ms")
                .arg(clip_ms.to_string());
            AppProc::spawn("video", c)?
        }
    };
    let fg_id = window_of(&mut admin, fg.pid)?;
    admin.foreground(fg_id)?;
    drop(admin);

    // Go: the background jobs, then the touches (the clip started with the app).
    let t0 = sys::monotonic_ns() + TOUCH_LEAD_NS;
    for p in &mut bg {
        p.say("go")?;
    }
    let trace = (spec.foreground == Foreground::FileManager).then(|| file_manager_trace(scale));
    let touches = trace.as_ref().map_or(0, touch_presses);
    let (replay_tx, _replay_rx) = mpsc::channel();
    let driver_stop = Arc::new(EventFd::new()?);
    let driver = {
        let s = Arc::clone(&driver_stop);
        let trace = trace.clone();
        thread::Builder::new()
            .name("lull-driver".into())
            .spawn(move || stack::run_driver(trace.as_ref(), t0, device_w, &s, replay_tx))?
    };
    let session_ns = match &trace {
        Some(t) => t.span_ns() + (TAIL_NS as f64 * scale) as u64,
        None => clip_ms * NS_PER_MS + (TAIL_NS as f64 * scale) as u64,
    };
    let end = t0 + session_ns;
    let now = sys::monotonic_ns();
    if end > now {
        thread::sleep(Duration::from_nanos(end - now));
    }
    // Wait for every background job's end.
    for p in &mut bg {
        let line = p.line(JOB_TIMEOUT, "end of its job")?;
        if !line.contains("\"ok\":true") {
            return Err(p.err(format!("job failed: {line}")).into());
        }
    }
    // Let the file manager answer every touch before it is stopped: on a loaded machine it may
    // still be working through the last ones (it replies at once when it has).
    if touches > 0 {
        fg.say(&format!("drain {touches}"))?;
        let reply = fg.line(lull_apps::DRAIN_TIMEOUT + JOB_TIMEOUT, "drain reply")?;
        if !reply.starts_with("{\"drained\":") {
            return Err(fg.err(format!("drain refused: {reply}")).into());
        }
    }
    let cpu_ms = fg.cpu_ms() + bg.iter().map(AppProc::cpu_ms).sum::<f64>();
    let _ = driver_stop.signal();
    let _ = driver.join();
    ftp_stop.store(true, Ordering::Relaxed);

    let foreground_report = fg.stop()?;
    let (mut zip_completion_ns, mut ftp_completion_ns) = (None, None);
    for p in bg {
        let name = p.name;
        let done = p.stop()?.work.and_then(|w| w.completion_ns);
        match name {
            "zip" => zip_completion_ns = done,
            _ => ftp_completion_ns = done,
        }
    }
    if let Some(h) = ftpd {
        let _ = h.join();
    }
    let daemon_report = daemon.join().ok();
    Ok(UcsgCollected {
        artefact: UcsgArtefact {
            policy: spec.policy,
            foreground: spec.foreground,
            background: spec.background,
            scale,
            clip_ms,
            touches,
            foreground_report,
            zip_completion_ns,
            ftp_completion_ns,
            cpu_ms,
        },
        status: ucsg_status,
        seam: daemon_report.and_then(|d| d.seam),
    })
}

/// The touch presses of a trace (each asks the file manager for one answer).
fn touch_presses(t: &Trace) -> u64 {
    t.events
        .iter()
        .filter(|e| {
            matches!(
                e.raw,
                RawEvent::Touch {
                    phase: TouchPhase::Down,
                    ..
                }
            )
        })
        .count() as u64
}

/// The cell's report from what [`collect`] kept. Pure; the daemon's UCSG status and seam report
/// are not in the artefact and are left `None` ([`run`] carries them over).
#[must_use]
pub fn analyse(a: &UcsgArtefact) -> UcsgLiveReport {
    let fg = &a.foreground_report;
    let response_ms = (a.foreground == Foreground::FileManager)
        .then(|| ResponseMs::of_ns(&fg.frame_latencies_ns))
        .flatten();
    let fps = fg.video.as_ref().map(|v| {
        let on_time = v.decoded.saturating_sub(v.late).min(v.drawn);
        on_time as f64 / (a.clip_ms as f64 / 1_000.0)
    });
    let secs = |ns: Option<u64>| ns.map(|ns| ns as f64 / NS_PER_S as f64);
    let mean_ms = |v: &[u64]| (!v.is_empty()).then(|| ms(v.iter().sum::<u64>() / v.len() as u64));
    let work = fg.work.clone().unwrap_or_default();
    UcsgLiveReport {
        policy: a.policy,
        foreground: a.foreground,
        background: a.background,
        response_ms,
        fps,
        completion_s: CompletionS {
            zip: secs(a.zip_completion_ns),
            ftp: secs(a.ftp_completion_ns),
        },
        cpu_ms: a.cpu_ms,
        scale: a.scale,
        open_ms_mean: mean_ms(&work.open_ns),
        close_ms_mean: mean_ms(&work.close_ns),
        touches: a.touches,
        responses: fg.frame_latencies_ns.len() as u64,
        superseded: work.superseded_touches,
        ucsg: None,
        seam: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A saved cell: the file manager in front of zip under UCSG, three touches answered.
    fn saved() -> UcsgArtefact {
        crate::artefact::saved("testdata/ucsg-filemanager-zip.json")
    }

    #[test]
    fn a_saved_cell_is_analysed_into_the_report() {
        let r = analyse(&saved());
        // Responses 10, 20, 30 ms: mean 20, p99 (nearest rank) the largest.
        let resp = r.response_ms.unwrap();
        assert_eq!((resp.mean, resp.p99), (20.0, 30.0));
        assert_eq!(r.responses, 3);
        assert_eq!(r.touches, 3);
        // Saved before the count existed: none superseded.
        assert_eq!(r.superseded, 0);
        assert_eq!(r.completion_s.zip, Some(2.5));
        assert_eq!(r.completion_s.ftp, None);
        assert_eq!(r.open_ms_mean, Some(5.0));
        assert_eq!(r.close_ms_mean, Some(1.0));
        assert_eq!(r.fps, None);
        assert!(r.ucsg.is_none() && r.seam.is_none());
    }

    #[test]
    fn a_touch_answered_by_a_later_touchs_frame_is_counted_apart() {
        let mut a = saved();
        a.touches = 5;
        a.foreground_report
            .work
            .get_or_insert_with(Default::default)
            .superseded_touches = 2;
        let r = analyse(&a);
        assert_eq!((r.touches, r.responses, r.superseded), (5, 3, 2));
    }

    #[test]
    fn a_video_cell_counts_the_frames_on_time_over_the_clip() {
        let mut a = saved();
        a.foreground = Foreground::Video;
        a.foreground_report.video = Some(lull_apps::VideoAppReport {
            frames: 30,
            decoded: 30,
            drawn: 28,
            decode_ns_mean: 1e6,
            late: 4,
            width: 640,
            height: 360,
        });
        let r = analyse(&a);
        // 30 decoded, 4 late: 26 on time (≤ 28 drawn) in a 1 s clip.
        assert_eq!(r.fps, Some(26.0));
        assert_eq!(r.response_ms, None);
    }

    #[test]
    fn names_parse() {
        assert_eq!(parse_foreground("video").unwrap(), Foreground::Video);
        assert_eq!(parse_background("zip+ftp").unwrap(), Background::ZipFtp);
        assert_eq!(parse_policy("ucsg").unwrap(), Policy::Ucsg);
        assert!(parse_foreground("browser").unwrap_err().is_usage());
        assert!(parse_background("zip,ftp").unwrap_err().is_usage());
        assert!(parse_policy("eevdf").unwrap_err().is_usage());
    }

    #[test]
    fn the_session_is_ten_opens_and_closes() {
        let t = file_manager_trace(1.0);
        assert_eq!(t.events.len() as u64, 4 * FILE_MANAGER_CYCLES);
        assert_eq!(
            t.events.last().unwrap().at_ns,
            (FILE_MANAGER_CYCLES - 1) * (OPEN_LOOK_NS + CLOSE_LOOK_NS) + OPEN_LOOK_NS + NS_PER_MS
        );
    }

    #[test]
    fn the_zip_input_is_deterministic_and_sized() {
        let scratch = lull_os::fileout::ScratchDir::new("lull-zip-input").unwrap();
        let (a, b) = (scratch.path().join("a"), scratch.path().join("b"));
        generate_zip_input(&a, 10_000).unwrap();
        generate_zip_input(&b, 10_000).unwrap();
        let (x, y) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        assert_eq!(x.len(), 10_000);
        assert_eq!(x, y);
    }

    #[test]
    fn a_bad_scale_is_refused() {
        let spec = UcsgLiveSpec {
            foreground: Foreground::FileManager,
            background: Background::None,
            policy: Policy::Stock,
            scale: 0.0,
            app_binary: PathBuf::from("lull-app"),
        };
        assert!(matches!(run(&spec), Err(UcsgLiveError::BadScale(_))));
    }
}
