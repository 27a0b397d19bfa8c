//! The video app (seed 000 chapter 6): plays a clip at 29.97 frames per second, decoding on the
//! background thread and drawing on the drawing thread.
//!
//! The background thread decodes frame `i` when it is due (`frame_due_ns`, paced with
//! `ThreadCtx::sleep_until_ns`) with the synthetic decoder of `lull_workload::video` — real
//! per-block decoder arithmetic of a stated cost, 5–10 ms per 1080p frame — and hands it to the
//! drawing thread, which composes it as one `Fill::Pixels` layer of the clip's size and draws it
//! at the window's origin. The drawing thread draws the newest decoded frame: one decoded while
//! the previous was still being drawn replaces it undrawn. Table 1 always lets the background
//! thread run; with guiS on, the drawing thread is parked (by its gate, and by the freezer in the
//! daemon) while the window cannot be seen, and draws nothing; without guiS it keeps drawing.

use std::sync::Arc;

use lull::kds_runtime::{KdsApp, ThreadCtx};
use lull_kds::{Fill, Layer, Rect, Surface};
use lull_model::{AppEvent, EventKind, ThreadCategory};
use lull_os::sys;
use lull_workload::video::{frame_count, frame_due_ns, Decoder, VideoParams};

use super::{drawn, AppError, Drawn, LiveApp, MessagingAppReport, Shared, Stats, VideoAppReport};

const SURFACE_FRAME: u32 = 1;

#[derive(Debug, Default)]
struct State {
    stats: Stats,
    /// The newest decoded frame not yet taken by the drawing thread.
    newest: Option<Vec<u32>>,
    /// The report's `decoded` and `late`, and the sum behind its `decode_ns_mean`.
    decoded: u64,
    late: u64,
    decode_ns_total: u64,
    stopping: bool,
}

/// The video app.
#[derive(Debug)]
pub(crate) struct Video {
    shared: Shared<State>,
    params: VideoParams,
}

/// Starts the player: the clip's frame 0 is due at the monotonic instant `start_ns`.
pub(crate) fn start(
    kds: &KdsApp,
    params: VideoParams,
    seed: u64,
    start_ns: u64,
) -> Result<Arc<dyn LiveApp>, AppError> {
    let window = kds.window();
    if (window.width, window.height) != (params.width_px, params.height_px) {
        return Err(AppError::Video(format!(
            "the server gave a {}x{} window for a {}x{} clip (larger than the screen?)",
            window.width, window.height, params.width_px, params.height_px
        )));
    }
    let app = Arc::new(Video {
        shared: Shared::new(State::default()),
        params,
    });
    crate::run_drawing(kds, &app, draw_loop)?;
    let a = Arc::clone(&app);
    kds.run_on(ThreadCategory::Background, move |ctx| {
        decode_loop(ctx, &a, seed, start_ns);
    })?;
    Ok(app)
}

impl LiveApp for Video {
    fn kinds(&self) -> &'static [EventKind] {
        &[]
    }

    fn on_event(&self, ev: &AppEvent, start_ns: u64) {
        // The player takes no input; an event reaching it is still counted.
        self.shared.lock().stats.handled(ev, start_ns);
    }

    fn stop(&self) {
        self.shared.lock().stopping = true;
        self.shared.notify();
    }

    fn report(&self) -> (Stats, Option<MessagingAppReport>, Option<VideoAppReport>) {
        let g = self.shared.lock();
        let p = &self.params;
        let r = VideoAppReport {
            frames: frame_count(p),
            decoded: g.decoded,
            drawn: g.stats.frames_drawn(),
            decode_ns_mean: if g.decoded > 0 {
                g.decode_ns_total as f64 / g.decoded as f64
            } else {
                0.0
            },
            late: g.late,
            width: p.width_px,
            height: p.height_px,
        };
        (g.stats.clone(), None, Some(r))
    }
}

/// The background thread: decodes each frame when it is due.
fn decode_loop(ctx: &ThreadCtx, app: &Video, seed: u64, start_ns: u64) {
    let p = app.params;
    let mut decoder = Decoder::new(p.width_px, p.height_px, seed);
    let len = usize::try_from(decoder.frame_len()).unwrap_or(0);
    // A frame replaced undrawn, reused for the next one instead of allocating 8.3 MB (1080p)
    // again. One is enough: this thread alone returns buffers, at most one per frame it takes;
    // a drawn frame leaves with its `COMPOSE`.
    let mut spare: Option<Vec<u32>> = None;
    for i in 0..frame_count(&p) {
        if !ctx.sleep_until_ns(start_ns.saturating_add(frame_due_ns(&p, i))) {
            return;
        }
        // `decode_into` writes every pixel, so a reused frame needs no clearing.
        let mut frame = spare.take().unwrap_or_else(|| vec![0u32; len]);
        let t0 = sys::monotonic_ns();
        if decoder.decode_into(i, &mut frame).is_err() {
            return;
        }
        let t1 = sys::monotonic_ns();
        let mut g = app.shared.lock();
        if g.stopping {
            return;
        }
        g.decoded += 1;
        g.decode_ns_total += t1 - t0;
        if t1 > start_ns.saturating_add(frame_due_ns(&p, i + 1)) {
            g.late += 1;
        }
        spare = g.newest.replace(frame);
        drop(g);
        app.shared.notify();
    }
}

/// The drawing thread: draws the newest decoded frame.
fn draw_loop(ctx: &ThreadCtx, app: &Video) {
    let p = app.params;
    loop {
        // At most one frame per refresh (29.97 fps never waits on a 60 Hz screen).
        if !app
            .shared
            .next_pass(ctx, |s| s.stopping, |s| s.newest.is_some())
        {
            return;
        }
        let frame = app.shared.lock().newest.take();
        let Some(pixels) = frame else {
            continue;
        };
        let surface = Surface {
            width: p.width_px,
            height: p.height_px,
            layers: vec![Layer {
                z: 0,
                rect: Rect::new(0, 0, p.width_px, p.height_px),
                fill: Fill::Pixels(pixels),
            }],
        };
        let r = ctx
            .compose(SURFACE_FRAME, surface)
            .and_then(|()| ctx.draw(SURFACE_FRAME, 0, 0));
        match drawn(r) {
            Drawn::Ok => {
                let done = sys::monotonic_ns();
                app.shared.lock().stats.frame(done, &[]);
            }
            Drawn::Refused => app.shared.lock().stats.draw_errors += 1,
            Drawn::Stop => return,
        }
    }
}
