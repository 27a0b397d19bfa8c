//! The analysis of one run: a saved [`RunArtefact`] in, the [`ExperimentReport`] out. Pure —
//! no clock, no `/proc`, no processes — so it is tested on saved runs (`testdata/`).

use lull_model::time::{NS_PER_MS, NS_PER_S};
use lull_model::DeliveryModel;
use serde::{Deserialize, Serialize};

use super::per_event;
use super::probe::{totals, usage};
use super::{
    BackgroundWindow, DisplayProfile, Events, ExperimentReport, LatencyStats, Mark,
    MessagingSummary, Pacing, ProbedThread, Profile, Scenario, VideoSummary,
};
use lull_apps::AppReport;

/// What [`super::collect`] took from the machine for one run: the measured threads, their
/// counters at each mark, the app's own report and the stack's counts. Saved as JSON, it is
/// analysed again without the machine.
#[derive(Clone, PartialEq, Debug, Serialize, Deserialize)]
pub struct RunArtefact {
    pub app: String,
    pub model: DeliveryModel,
    pub scenario: Scenario,
    /// The measured threads, in the order of every mark's samples.
    pub threads: Vec<ProbedThread>,
    /// The daemon thread's name among `threads` (`daemon_wakeups_per_event`).
    pub daemon_thread: String,
    /// The measured window's ends.
    pub open: Mark,
    pub close: Mark,
    /// The background window's ends, when the scenario sends the app to the background.
    pub background: Option<(Mark, Mark)>,
    /// The app's final report line.
    pub report: AppReport,
    /// Events the driver injected.
    pub injected: u64,
    /// Events the baseline's hub still held when it stopped (counted as dropped).
    pub hub_unsent: u64,
    /// Messages the respondent answered (messaging).
    pub respondent_messages: u64,
    /// The display server's counters over the run.
    pub display: Option<DisplayProfile>,
}

/// Frames whose last `DRAW` was acknowledged between `a` and `b` (inclusive).
fn frames_between(frame_done_ns: &[u64], a: u64, b: u64) -> u64 {
    frame_done_ns.iter().filter(|&&t| t >= a && t <= b).count() as u64
}

fn secs_between(a: &Mark, b: &Mark) -> f64 {
    b.at_ns.saturating_sub(a.at_ns) as f64 / NS_PER_S as f64
}

/// The run's report; the daemon's guiS and seam reports are not in the artefact and are left
/// `None` (`super::run` carries them over).
#[must_use]
pub fn analyse(a: &RunArtefact) -> ExperimentReport {
    let report = &a.report;
    let (open, close) = (&a.open, &a.close);
    let mut threads = usage(&a.threads, open, close);
    let frames_in_window = frames_between(&report.frame_done_ns, open.at_ns, close.at_ns);
    for t in &mut threads {
        t.share(report.delivered, frames_in_window);
    }
    let profile = Profile::of(&threads, report.delivered, frames_in_window, a.display);
    let window_s = secs_between(open, close);
    let (cpu_ms, wakeups) = totals(&threads);
    let delivered = report.delivered;
    let background_window = a.background.as_ref().map(|(from, to)| {
        let (cpu, wk) = totals(&usage(&a.threads, from, to));
        BackgroundWindow {
            drawing_cpu_ms: cpu.drawing,
            foreground_cpu_ms: cpu.foreground,
            background_cpu_ms: cpu.background,
            app_cpu_ms: cpu.total - cpu.server,
            server_cpu_ms: cpu.server,
            frames_drawn: frames_between(&report.frame_done_ns, from.at_ns, to.at_ns),
            wakeups: wk.total - wk.server,
            drawing_wakeups: wk.drawing,
            window_s: secs_between(from, to),
        }
    });
    ExperimentReport {
        app: a.app.clone(),
        model: a.model,
        scenario: a.scenario,
        latency_us: LatencyStats::of(&report.latencies_ns),
        frame_latency_us: LatencyStats::of(&report.frame_latencies_ns),
        event_to_pixel_us: LatencyStats::of(&report.frame_latencies_ns),
        daemon_wakeups_per_event: per_event(
            threads
                .iter()
                .filter(|t| t.name == a.daemon_thread)
                .map(|t| t.wakeups)
                .sum(),
            delivered,
        ),
        pacing: Pacing {
            frames: report.runtime.frames,
            frames_waited: report.runtime.frames_waited,
            frame_requests: report.runtime.frame_requests,
            frame_requests_ahead: report.runtime.frame_requests_ahead,
            draw_batches: report.runtime.draw_batches,
        },
        wakeups_per_s: if window_s > 0.0 {
            wakeups.total as f64 / window_s
        } else {
            0.0
        },
        cpu_ms,
        wakeups,
        frames_drawn: report.frames_drawn,
        events: Events {
            injected: a.injected,
            delivered,
            dropped: a.injected.saturating_sub(delivered),
            dropped_counted: report.dropped_reported + a.hub_unsent,
        },
        window_s,
        background_window,
        messaging: report.messaging.as_ref().map(|m| MessagingSummary {
            sent: m.sent,
            replies: m.replies,
            reply_rtt_us: LatencyStats::of(&m.reply_rtt_ns),
            send_errors: m.send_errors,
            respondent_messages: a.respondent_messages,
        }),
        video: report.video.as_ref().map(|v| VideoSummary {
            width_px: v.width,
            height_px: v.height,
            frames: v.frames,
            decoded: v.decoded,
            drawn: v.drawn,
            late: v.late,
            decode_ms_mean: v.decode_ns_mean / NS_PER_MS as f64,
        }),
        guis: None,
        seam: None,
        draw_errors: report.draw_errors,
        profile,
        threads,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::Group;

    /// A saved run: the video app under ESM + KDS + guiS, 2 s measured, 1 s of it in the
    /// background; three threads (daemon, event, drawing) and the driver.
    fn video() -> RunArtefact {
        crate::artefact::saved("experiment/testdata/video-background.json")
    }

    #[test]
    fn a_saved_run_reads_back_as_it_was_written() {
        let a = video();
        let again: RunArtefact = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        assert_eq!(again, a);
    }

    #[test]
    fn the_window_counts_each_thread_between_the_marks() {
        let r = analyse(&video());
        assert_eq!(r.window_s, 2.0);
        // Daemon 110 − 10 = 100 wake-ups, event 60 − 20 = 40, drawing 35 − 5 = 30; the driver's
        // 500 are listed but not counted in the total.
        assert_eq!(r.wakeups.server, 100);
        assert_eq!(r.wakeups.event, 40);
        assert_eq!(r.wakeups.drawing, 30);
        assert_eq!(r.wakeups.total, 170);
        assert_eq!(r.wakeups_per_s, 85.0);
        // 20 events delivered: the daemon woke 5 times per event.
        assert_eq!(r.daemon_wakeups_per_event, 5.0);
        // CPU: daemon 30 ms, event 4 ms, drawing 16 ms.
        assert_eq!(r.cpu_ms.total, 50.0);
        let driver = r.threads.iter().find(|t| t.group == Group::Device).unwrap();
        assert_eq!(driver.wakeups, 500);
        assert_eq!(r.profile.device_wakeups_per_event, 25.0);
    }

    #[test]
    fn frames_are_counted_in_their_window_and_events_accounted() {
        let r = analyse(&video());
        // Five frames done at 1.1, 1.5, 2.2, 2.9 and 3.5 s; the window is 1–3 s, the background
        // 1.5–2.5 s.
        assert_eq!(r.profile.frames, 4);
        let bg = r.background_window.unwrap();
        assert_eq!(bg.frames_drawn, 2);
        assert_eq!(bg.window_s, 1.0);
        // Drawing 12 − 8 = 4 ms and 20 − 12 = 8 wake-ups in the background window.
        assert_eq!(bg.drawing_cpu_ms, 4.0);
        assert_eq!(bg.drawing_wakeups, 8);
        assert_eq!(bg.server_cpu_ms, 10.0);
        // 22 injected, 20 delivered: 2 dropped, of which the app was told of 1 and the hub
        // held 1.
        assert_eq!(
            (
                r.events.injected,
                r.events.dropped,
                r.events.dropped_counted
            ),
            (22, 2, 2)
        );
        assert!(r.guis.is_none() && r.seam.is_none());
        assert_eq!(r.video.unwrap().decode_ms_mean, 2.5);
    }
}
