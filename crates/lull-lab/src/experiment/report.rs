//! What `lull live experiment` reports: latency, frames and events, and CPU time and wake-ups
//! per thread group, with the daemon's and the app's own reports.

use lull_model::ThreadCategory;
use lulld::guis::GuisReport;
use lulld::seam::SeamReport;
use serde::Serialize;

use super::Scenario;
use crate::apps::AppModel;
use crate::live::LatencyUs;

/// Latency statistics in µs (nearest-rank percentiles) and the sample count.
#[derive(Clone, Copy, PartialEq, Debug, Default, Serialize)]
pub struct LatencyStats {
    #[serde(flatten)]
    pub us: LatencyUs,
    pub count: usize,
}

impl LatencyStats {
    #[must_use]
    pub fn of(samples_ns: &[u64]) -> LatencyStats {
        LatencyStats {
            us: LatencyUs::of(samples_ns),
            count: samples_ns.len(),
        }
    }
}

/// Whom a measured thread works for.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    Event,
    Drawing,
    Foreground,
    Background,
    /// App threads of no declared category (the runtime's channel thread, the main thread).
    Other,
    /// The daemon (ESM + display server) and the baseline's hub.
    Server,
    /// The replay driver, standing for the input device: listed, not counted.
    Device,
}

impl From<ThreadCategory> for Group {
    fn from(c: ThreadCategory) -> Group {
        match c {
            ThreadCategory::Event => Group::Event,
            ThreadCategory::Drawing => Group::Drawing,
            ThreadCategory::Foreground => Group::Foreground,
            ThreadCategory::Background => Group::Background,
        }
    }
}

/// A figure per group of threads; `total` is the app's threads and the server's.
#[derive(Clone, Copy, PartialEq, Debug, Default, Serialize)]
pub struct ByGroup<T> {
    pub event: T,
    pub drawing: T,
    pub foreground: T,
    pub background: T,
    pub other: T,
    pub server: T,
    pub total: T,
}

impl<T: Copy + std::ops::AddAssign> ByGroup<T> {
    pub(super) fn add(&mut self, g: Group, v: T) {
        let slot = match g {
            Group::Event => &mut self.event,
            Group::Drawing => &mut self.drawing,
            Group::Foreground => &mut self.foreground,
            Group::Background => &mut self.background,
            Group::Other => &mut self.other,
            Group::Server => &mut self.server,
            Group::Device => return,
        };
        *slot += v;
        self.total += v;
    }
}

/// One thread's share of a window.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct ThreadUsage {
    pub group: Group,
    /// The thread's name (`kds-drawing`, `app-loop`, `lull-daemon`, ...).
    pub name: String,
    pub tid: i32,
    pub wakeups: u64,
    pub wakeups_per_s: f64,
    pub involuntary_switches: u64,
    pub cpu_ms: f64,
}

/// Every injected event is delivered or dropped.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct Events {
    /// Written to the device by the driver.
    pub injected: u64,
    /// Handled by the app.
    pub delivered: u64,
    /// `injected − delivered`: never handled, for any reason.
    pub dropped: u64,
    /// Of those, the ones the stack counted: ESM overflow markers, events the hub could not
    /// forward.
    pub dropped_counted: u64,
}

/// The app in the background (scenario `background-10s`): the window opens once the app knows
/// it is in the background and its drawing thread is asleep, and closes when it is brought back.
#[derive(Clone, Copy, PartialEq, Debug, Default, Serialize)]
pub struct BackgroundWindow {
    pub drawing_cpu_ms: f64,
    pub foreground_cpu_ms: f64,
    pub background_cpu_ms: f64,
    /// Every thread of the app.
    pub app_cpu_ms: f64,
    /// The daemon (composing and drawing frames) and the hub.
    pub server_cpu_ms: f64,
    /// Frames whose `DRAW` was acknowledged inside the window.
    pub frames_drawn: u64,
    /// Of every thread of the app.
    pub wakeups: u64,
    pub drawing_wakeups: u64,
    pub window_s: f64,
}

/// The messaging app's network figures.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct MessagingSummary {
    pub sent: u64,
    pub replies: u64,
    /// Message written → reply handled.
    pub reply_rtt_us: LatencyStats,
    pub send_errors: u64,
    /// Messages the respondent answered.
    pub respondent_messages: u64,
}

/// The video app's figures.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct VideoSummary {
    pub width_px: u32,
    pub height_px: u32,
    pub frames: u64,
    pub decoded: u64,
    pub drawn: u64,
    /// Decoded after the next frame was due.
    pub late: u64,
    pub decode_ms_mean: f64,
}

/// Frame pacing as the app's runtime counted it (`lull::kds_runtime::RuntimeCounters`).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Pacing {
    pub frames: u64,
    pub frames_waited: u64,
    pub frame_requests: u64,
    /// `FRAME`s sent ahead with a waited frame's first draw (input dense).
    pub frame_requests_ahead: u64,
    pub draw_batches: u64,
}

/// The result of one run, as `lull live experiment --json` prints it.
#[derive(Clone, Debug, Serialize)]
pub struct ExperimentReport {
    pub app: String,
    pub model: AppModel,
    pub scenario: Scenario,
    /// Injection → handler start.
    pub latency_us: LatencyStats,
    /// Injection → the `DRAW` showing the event acknowledged.
    pub frame_latency_us: LatencyStats,
    /// The same figure under the name the comparison across the project uses: event injection
    /// → the frame that shows it acknowledged (one refresh period + the draw at most, with
    /// frame pacing).
    pub event_to_pixel_us: LatencyStats,
    /// The daemon thread's wake-ups in the window per event delivered (its loop serves input,
    /// the ESM and the display server).
    pub daemon_wakeups_per_event: f64,
    /// The app runtime's frame pacing: frames let through, of them those that waited for
    /// `FRAME_DONE`, and `FRAME` requests sent.
    pub pacing: Pacing,
    /// Of the app's threads and the server's, per second of the window.
    pub wakeups_per_s: f64,
    pub cpu_ms: ByGroup<f64>,
    pub wakeups: ByGroup<u64>,
    /// Frames the app drew (acknowledged `DRAW` passes of its drawing thread).
    pub frames_drawn: u64,
    pub events: Events,
    pub window_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_window: Option<BackgroundWindow>,
    pub messaging: Option<MessagingSummary>,
    pub video: Option<VideoSummary>,
    /// guiS in the daemon (`esm-kds-guis` only): whether the kernel enforced table 1 (and why
    /// not), and what it did (threads adopted, frozen, left parked in their gate, ...).
    pub guis: Option<GuisReport>,
    /// The policy seam in the daemon (`esm-kds-guis` only): the policies that ran (table 1) and
    /// what the actuator did per action kind — applied, put off, refused, unavailable here.
    pub seam: Option<SeamReport>,
    /// `COMPOSE`/`DRAW` requests the server refused.
    pub draw_errors: u64,
    pub threads: Vec<ThreadUsage>,
}
