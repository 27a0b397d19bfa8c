//! What `lull live experiment` reports: latency, frames and events, and CPU time and wake-ups
//! per thread group, with the daemon's and the app's own reports.

use lull_model::ThreadCategory;
use lulld::guis::GuisReport;
use lulld::kds::KdsReport;
use lulld::seam::SeamReport;
use serde::{Deserialize, Serialize};

use super::Scenario;
use crate::live::LatencyUs;
use lull_model::DeliveryModel;

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
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
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
    /// The thread's wake-ups and CPU time per event delivered and per frame drawn in the window
    /// (0 without events or frames): where the stack spends them (see [`Profile`]).
    pub wakeups_per_event: f64,
    pub wakeups_per_frame: f64,
    pub cpu_us_per_event: f64,
    pub cpu_us_per_frame: f64,
}

/// Where the stack's wake-ups and CPU time go, per event delivered and per frame drawn: the
/// measured threads' sums (the driver, standing for the device, apart), and what the display
/// server did for those frames. Each thread's own shares are in [`ThreadUsage`].
#[derive(Clone, Copy, PartialEq, Debug, Default, Serialize)]
pub struct Profile {
    pub events: u64,
    pub frames: u64,
    pub wakeups_per_event: f64,
    pub wakeups_per_frame: f64,
    pub cpu_us_per_event: f64,
    pub cpu_us_per_frame: f64,
    /// The driver's (the device's) wake-ups per event, not counted above.
    pub device_wakeups_per_event: f64,
    /// The display server over the whole run (set-up included): requests, draws, `FRAME`s and
    /// `FRAME_DONE`s, the frame timer's expiries, and screen restacks (skipped while a window
    /// covering the whole screen is scanned out directly).
    pub display: Option<DisplayProfile>,
}

/// The display server's work over a run (`KdsCounters` and `KdsHostCounters`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
pub struct DisplayProfile {
    pub requests: u64,
    pub draws: u64,
    pub draw_batches: u64,
    pub frame_requests: u64,
    pub frames_done: u64,
    pub frame_timer_expiries: u64,
    pub restacks: u64,
    pub restacked_pixels: u64,
    pub restacks_skipped: u64,
}

impl DisplayProfile {
    /// The display server's work from the daemon's report of it.
    #[must_use]
    pub fn of(k: &KdsReport) -> DisplayProfile {
        DisplayProfile {
            requests: k.server.requests,
            draws: k.server.draws,
            draw_batches: k.server.draw_batches,
            frame_requests: k.server.frame_requests,
            frames_done: k.server.frames_done,
            frame_timer_expiries: k.host.frame_timer_expiries,
            restacks: k.server.restacks,
            restacked_pixels: k.server.restacked_pixels,
            restacks_skipped: k.server.restacks_skipped,
        }
    }
}

/// `x / n`, 0 when `n` is 0.
fn per(x: f64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        x / n as f64
    }
}

impl ThreadUsage {
    /// Fills the per-event and per-frame shares.
    pub(super) fn share(&mut self, events: u64, frames: u64) {
        self.wakeups_per_event = per(self.wakeups as f64, events);
        self.wakeups_per_frame = per(self.wakeups as f64, frames);
        self.cpu_us_per_event = per(self.cpu_ms * 1_000.0, events);
        self.cpu_us_per_frame = per(self.cpu_ms * 1_000.0, frames);
    }
}

impl Profile {
    pub(super) fn of(
        threads: &[ThreadUsage],
        events: u64,
        frames: u64,
        display: Option<DisplayProfile>,
    ) -> Profile {
        let counted = threads.iter().filter(|t| t.group != Group::Device);
        let wakeups: u64 = counted.clone().map(|t| t.wakeups).sum();
        let cpu_us: f64 = counted.map(|t| t.cpu_ms * 1_000.0).sum();
        let device: u64 = threads
            .iter()
            .filter(|t| t.group == Group::Device)
            .map(|t| t.wakeups)
            .sum();
        Profile {
            events,
            frames,
            wakeups_per_event: per(wakeups as f64, events),
            wakeups_per_frame: per(wakeups as f64, frames),
            cpu_us_per_event: per(cpu_us, events),
            cpu_us_per_frame: per(cpu_us, frames),
            device_wakeups_per_event: per(device as f64, events),
            display,
        }
    }
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
    pub model: DeliveryModel,
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
    /// Per event and per frame, the stack's and the display server's (see [`Profile`]).
    pub profile: Profile,
    pub threads: Vec<ThreadUsage>,
}
