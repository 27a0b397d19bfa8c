//! The painting app (seed 003 §VI-B-1: a painting app whose response to each stylus event is
//! measured while CPU hogs run): the tracking app's window and drawing path, with real work per
//! event — each event paints one stroke, from the previous point of the gesture to this one, with
//! a soft round airbrush into the app's canvas.
//!
//! The handler (the event thread) renders the stroke — the interaction's work, C — and hands the
//! stroke's rectangle to the drawing thread, which sends that part of the canvas to the display
//! server (`COMPOSE` of the patch, then `DRAW` at its place). The response is injection → the
//! `DRAW` acknowledged, as the tracking app measures it. A press starts a gesture (one stamp); a
//! release ends it.
//!
//! The brush: stamps every [`STAMP_SPACING_PX`] along the stroke, each blending the paint into
//! the pixels within [`BRUSH_RADIUS_PX`] with a Gaussian falloff (σ = [`BRUSH_SIGMA_PX`]) at
//! [`BRUSH_FLOW`] — the dense low-flow stamps of a painting program's airbrush. The handler's CPU
//! time per stroke is reported (`work.handler_cpu_ns`): that is the C the seed's eq. 6 sizes a
//! boost for.

use std::sync::Arc;

use lull::kds_runtime::{KdsApp, ThreadCtx};
use lull_kds::{Fill, Layer, Rect, Surface};
use lull_model::{AppEvent, EventKind, Payload, ThreadCategory};
use lull_os::sys::{self, thread_cpu_ns};

use super::{
    drawn, AppError, Drawn, LiveApp, MessagingAppReport, Shared, Stats, VideoAppReport, WorkReport,
};
use crate::TRACKING_KINDS;

/// The canvas's paper.
const PAPER_ARGB: u32 = 0xFFF4_F1E8;
/// The paint, a deep blue.
const PAINT_ARGB: u32 = 0xFF1E_3A8C;
/// The brush's reach, px. With [`STAMP_SPACING_PX`] and the trace's stylus (a sample every
/// 10 ms, a few px apart) a stroke costs about a millisecond of one CPU of this machine
/// (measured, `work.handler_cpu_ns`); the seed describes its app only by its response times.
pub const BRUSH_RADIUS_PX: i32 = 32;
/// The falloff's σ, px: the stamp fades to e^-3.6 ≈ 3 % of its flow at the rim.
pub const BRUSH_SIGMA_PX: f32 = 12.0;
/// The distance between stamps along a stroke, px: an airbrush lays stamps far denser than a pixel
/// so that a stroke is smooth at any speed.
pub const STAMP_SPACING_PX: f32 = 0.25;
/// The paint one stamp lays at its centre (0..1).
pub const BRUSH_FLOW: f32 = 0.08;
/// Most stamps one stroke lays: a stroke longer than 256 px (a jump across the canvas) is laid
/// with wider spacing, so one event's work stays bounded.
pub const MAX_STAMPS: usize = 1024;
const SURFACE_PATCH: u32 = 1;

/// A stroke's rectangle waiting to be shown.
#[derive(Clone, Copy, Debug)]
struct Patch {
    rect: Rect,
    injected_ns: u64,
}

#[derive(Debug)]
struct State {
    stats: Stats,
    canvas: Vec<u32>,
    /// The previous point of the gesture (window coordinates), `None` between gestures.
    last: Option<(f32, f32)>,
    pending: Vec<Patch>,
    handler_cpu_ns: Vec<u64>,
    stopping: bool,
}

/// The painting app.
#[derive(Debug)]
pub(crate) struct Painting {
    shared: Shared<State>,
    window: Rect,
}

/// Paints the paper and hands the drawing loop to the drawing thread.
pub(crate) fn start(kds: &KdsApp) -> Result<Arc<dyn LiveApp>, AppError> {
    let window = kds.window();
    let ctx = kds.ctx(ThreadCategory::Drawing);
    ctx.compose(
        SURFACE_PATCH,
        Surface {
            width: window.width,
            height: window.height,
            layers: vec![Layer {
                z: 0,
                rect: Rect::new(0, 0, window.width, window.height),
                fill: Fill::Solid(PAPER_ARGB),
            }],
        },
    )?;
    ctx.draw(SURFACE_PATCH, 0, 0)?;
    let app = Arc::new(Painting {
        shared: Shared::new(State {
            stats: Stats::default(),
            canvas: vec![PAPER_ARGB; window.width as usize * window.height as usize],
            last: None,
            pending: Vec::new(),
            handler_cpu_ns: Vec::new(),
            stopping: false,
        }),
        window,
    });
    crate::run_drawing(kds, &app, draw_loop)?;
    Ok(app)
}

impl LiveApp for Painting {
    fn kinds(&self) -> &'static [EventKind] {
        &TRACKING_KINDS
    }

    fn on_event(&self, ev: &AppEvent, start_ns: u64) {
        let cpu0 = thread_cpu_ns();
        let mut g = self.shared.lock();
        g.stats.handled(ev, start_ns);
        let Payload::Point { x, y } = ev.payload else {
            return;
        };
        let to = ((x - self.window.x) as f32, (y - self.window.y) as f32);
        let from = match ev.kind {
            EventKind::TouchPress => to,
            _ => g.last.unwrap_or(to),
        };
        g.last = (ev.kind != EventKind::TouchRelease).then_some(to);
        let (w, h) = (self.window.width, self.window.height);
        let rect = stroke(&mut g.canvas, w, h, from, to);
        if let Some(rect) = rect {
            g.pending.push(Patch {
                rect,
                injected_ns: ev.injected_ns,
            });
        }
        g.handler_cpu_ns.push(thread_cpu_ns().saturating_sub(cpu0));
        drop(g);
        if rect.is_some() {
            self.shared.notify();
        }
    }

    fn stop(&self) {
        self.shared.lock().stopping = true;
        self.shared.notify();
    }

    fn report(&self) -> (Stats, Option<MessagingAppReport>, Option<VideoAppReport>) {
        (self.shared.lock().stats.clone(), None, None)
    }

    fn work(&self) -> Option<WorkReport> {
        Some(WorkReport {
            handler_cpu_ns: self.shared.lock().handler_cpu_ns.clone(),
            ..WorkReport::default()
        })
    }
}

/// Lays the stroke `from` → `to` on the `w × h` canvas; the rectangle it touched, if any.
fn stroke(canvas: &mut [u32], w: u32, h: u32, from: (f32, f32), to: (f32, f32)) -> Option<Rect> {
    let (dx, dy) = (to.0 - from.0, to.1 - from.1);
    let len = dx.hypot(dy);
    let steps = ((len / STAMP_SPACING_PX).ceil() as usize).clamp(1, MAX_STAMPS);
    for i in 0..=steps {
        let t = i as f32 / steps as f32;
        stamp(canvas, w, h, from.0 + dx * t, from.1 + dy * t);
    }
    let r = BRUSH_RADIUS_PX as f32;
    let x0 = (from.0.min(to.0) - r).floor().max(0.0) as i32;
    let y0 = (from.1.min(to.1) - r).floor().max(0.0) as i32;
    let x1 = ((from.0.max(to.0) + r).ceil() as i32 + 1).min(w as i32);
    let y1 = ((from.1.max(to.1) + r).ceil() as i32 + 1).min(h as i32);
    (x1 > x0 && y1 > y0).then(|| Rect::new(x0, y0, (x1 - x0) as u32, (y1 - y0) as u32))
}

/// One stamp of the brush centred on `(cx, cy)`.
fn stamp(canvas: &mut [u32], w: u32, h: u32, cx: f32, cy: f32) {
    let r = BRUSH_RADIUS_PX;
    let two_sigma_sq = 2.0 * BRUSH_SIGMA_PX * BRUSH_SIGMA_PX;
    let (px, py) = (cx.round() as i32, cy.round() as i32);
    let paint = [
        PAINT_ARGB >> 16 & 0xFF,
        PAINT_ARGB >> 8 & 0xFF,
        PAINT_ARGB & 0xFF,
    ]
    .map(|c| c as f32);
    for y in (py - r).max(0)..(py + r + 1).min(h as i32) {
        let fy = y as f32 - cy;
        for x in (px - r).max(0)..(px + r + 1).min(w as i32) {
            let fx = x as f32 - cx;
            let d2 = fx * fx + fy * fy;
            if d2 > (r * r) as f32 {
                continue;
            }
            let a = BRUSH_FLOW * (-d2 / two_sigma_sq).exp();
            let i = y as usize * w as usize + x as usize;
            let p = canvas[i];
            let old = [p >> 16 & 0xFF, p >> 8 & 0xFF, p & 0xFF].map(|c| c as f32);
            let mix = |k: usize| (old[k] + (paint[k] - old[k]) * a).round() as u32;
            canvas[i] = 0xFF00_0000 | mix(0) << 16 | mix(1) << 8 | mix(2);
        }
    }
}

fn draw_loop(ctx: &ThreadCtx, app: &Painting) {
    let mut batch = Vec::new();
    let mut injected = Vec::new();
    loop {
        let mut patches = Vec::new();
        // At most one frame per refresh; strokes arriving meanwhile join it.
        if !app
            .shared
            .next_input_pass(ctx, |s| s.stopping, |s| !s.pending.is_empty())
        {
            return;
        }
        {
            let mut g = app.shared.lock();
            std::mem::swap(&mut g.pending, &mut batch);
            // The pixels of each patch, copied out under the lock.
            for p in batch.drain(..) {
                patches.push((p, patch_surface(&g.canvas, app.window.width, p.rect)));
            }
        }
        injected.clear();
        for (p, surface) in patches {
            let shown = ctx
                .compose(SURFACE_PATCH, surface)
                .and_then(|()| ctx.draw(SURFACE_PATCH, p.rect.x, p.rect.y));
            match drawn(shown) {
                Drawn::Ok => injected.push(p.injected_ns),
                Drawn::Refused => app.shared.lock().stats.draw_errors += 1,
                Drawn::Stop => return,
            }
        }
        if !injected.is_empty() {
            let done = sys::monotonic_ns();
            app.shared.lock().stats.frame(done, &injected);
        }
    }
}

/// The canvas's pixels under `rect`, as a surface.
fn patch_surface(canvas: &[u32], w: u32, rect: Rect) -> Surface {
    let mut pixels = Vec::with_capacity(rect.width as usize * rect.height as usize);
    for y in rect.y..rect.y + rect.height as i32 {
        let row = y as usize * w as usize;
        pixels.extend_from_slice(
            &canvas[row + rect.x as usize..row + rect.x as usize + rect.width as usize],
        );
    }
    Surface {
        width: rect.width,
        height: rect.height,
        layers: vec![Layer {
            z: 0,
            rect: Rect::new(0, 0, rect.width, rect.height),
            fill: Fill::Pixels(pixels),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stroke_paints_along_its_path_and_bounds_what_it_touched() {
        let (w, h) = (200, 100);
        let mut c = vec![PAPER_ARGB; (w * h) as usize];
        let r = stroke(&mut c, w, h, (50.0, 50.0), (150.0, 50.0)).unwrap();
        assert_eq!((r.x, r.y), (50 - BRUSH_RADIUS_PX, 50 - BRUSH_RADIUS_PX));
        assert_eq!(r.width as i32, 100 + 2 * BRUSH_RADIUS_PX + 1);
        let at = |x: usize, y: usize| c[y * w as usize + x];
        // On the path: painted; far from it: paper.
        assert_ne!(at(100, 50), PAPER_ARGB);
        assert_eq!(at(100, 5), PAPER_ARGB);
        // More paint on the path than near the brush's rim: red falls from the paper's 0xF4
        // towards the paint's 0x1E.
        let red = |p: u32| p >> 16 & 0xFF;
        assert!(red(at(100, 50)) < red(at(100, 75)));
        // Nothing outside the rectangle changed.
        for y in 0..h as i32 {
            for x in 0..w as i32 {
                let inside =
                    x >= r.x && x < r.x + r.width as i32 && y >= r.y && y < r.y + r.height as i32;
                if !inside {
                    assert_eq!(at(x as usize, y as usize), PAPER_ARGB, "{x},{y}");
                }
            }
        }
    }

    #[test]
    fn a_stroke_at_the_edge_stays_inside_the_canvas() {
        let (w, h) = (40, 30);
        let mut c = vec![PAPER_ARGB; (w * h) as usize];
        let r = stroke(&mut c, w, h, (0.0, 0.0), (39.0, 29.0)).unwrap();
        assert_eq!(r, Rect::new(0, 0, 40, 30));
        let s = patch_surface(&c, w, r);
        assert_eq!(s.layers.len(), 1);
        lull_kds::compose::compose(&s).unwrap();
    }

    #[test]
    fn a_long_jump_lays_a_bounded_number_of_stamps() {
        let (w, h) = (64, 64);
        let mut c = vec![PAPER_ARGB; (w * h) as usize];
        // 10,000 px at 0.25 px would be 40,000 stamps; the stroke still ends where it should.
        assert!(stroke(&mut c, w, h, (-5_000.0, 32.0), (5_000.0, 32.0)).is_some());
    }
}
