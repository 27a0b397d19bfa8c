//! The stylus-tracking app (seed 000 chapter 6, figure 30): a full-screen window showing the
//! spiral to trace; the stylus trail as dots, a blue star at each press and a red star at each
//! release.
//!
//! The spiral guide, the dot and the two stars are composed once at start (four surfaces); each
//! handled event then costs one draw of the right surface at the event's point, clamped inside
//! the window (a draw reaching outside is refused whole by the server). The handler records the
//! mark and wakes the drawing thread, which waits for the display's pace
//! ([`ThreadCtx::next_frame`]: at most one frame per refresh) and then draws every mark waiting
//! as one frame, in one `DRAW_BATCH`.

use std::sync::Arc;

use lull::kds_runtime::{KdsApp, ThreadCtx};
use lull_kds::wire::DrawItem;
use lull_kds::{Fill, Layer, Rect, Surface};
use lull_model::{AppEvent, EventKind, Payload, ThreadCategory};
use lull_os::sys;
use lull_workload::spiral;

use super::{drawn, AppError, Drawn, LiveApp, MessagingAppReport, Shared, Stats, VideoAppReport};
use crate::TRACKING_KINDS;

/// Paper-white background.
const BACKGROUND_ARGB: u32 = 0xFFF4_F1E8;
/// The spiral guide to trace, light grey.
const GUIDE_ARGB: u32 = 0xFFC0_C0C0;
/// The stylus trail.
const TRAIL_ARGB: u32 = 0xFF20_2020;
/// Press and release stars (seed 000, figure 30: blue at a press, red at a release).
const BLUE_ARGB: u32 = 0xFF20_40E0;
const RED_ARGB: u32 = 0xFFE0_2020;
/// Side of a trail dot, px.
const DOT_PX: u32 = 3;
/// Side of a star's square, px.
const STAR_PX: u32 = 15;
/// Side of a guide dot, px.
const GUIDE_DOT_PX: u32 = 2;
/// Guide dots along the spiral: a round thousand, dense enough to read as a line. One surface
/// holds them with the background layer (`the_guide_fits_the_compositor`), but the count is not
/// that layer budget: filling it would move every dot.
const GUIDE_DOTS: u32 = 1000;
/// A star's inner radius over its outer radius (a regular five-pointed star: 0.382).
const STAR_INNER_RATIO: f64 = 0.382;

const SURFACE_GUIDE: u32 = 1;
const SURFACE_DOT: u32 = 2;
const SURFACE_BLUE_STAR: u32 = 3;
const SURFACE_RED_STAR: u32 = 4;

#[derive(Clone, Copy, Debug)]
struct Mark {
    surface: u32,
    x: i32,
    y: i32,
    injected_ns: u64,
}

#[derive(Debug, Default)]
struct State {
    stats: Stats,
    pending: Vec<Mark>,
    stopping: bool,
}

/// The tracking app.
#[derive(Debug)]
pub(crate) struct Tracking {
    shared: Shared<State>,
    window: Rect,
}

/// Attaches nothing itself: composes the surfaces on `kds`, draws the guide, and hands the
/// drawing loop to the drawing thread.
pub(crate) fn start(kds: &KdsApp) -> Result<Arc<dyn LiveApp>, AppError> {
    let window = kds.window();
    let ctx = kds.ctx(ThreadCategory::Drawing);
    ctx.compose(SURFACE_GUIDE, guide_surface(window))?;
    ctx.draw(SURFACE_GUIDE, 0, 0)?;
    ctx.compose(SURFACE_DOT, Surface::solid(DOT_PX, DOT_PX, TRAIL_ARGB))?;
    ctx.compose(SURFACE_BLUE_STAR, star(STAR_PX, BLUE_ARGB))?;
    ctx.compose(SURFACE_RED_STAR, star(STAR_PX, RED_ARGB))?;
    let app = Arc::new(Tracking {
        shared: Shared::new(State::default()),
        window,
    });
    crate::run_drawing(kds, &app, draw_loop)?;
    Ok(app)
}

impl LiveApp for Tracking {
    fn kinds(&self) -> &'static [EventKind] {
        &TRACKING_KINDS
    }

    fn on_event(&self, ev: &AppEvent, start_ns: u64) {
        let mut g = self.shared.lock();
        g.stats.handled(ev, start_ns);
        if let Payload::Point { x, y } = ev.payload {
            let (surface, side) = match ev.kind {
                EventKind::TouchPress => (SURFACE_BLUE_STAR, STAR_PX),
                EventKind::TouchRelease => (SURFACE_RED_STAR, STAR_PX),
                _ => (SURFACE_DOT, DOT_PX),
            };
            let (x, y) = place(self.window, x, y, side);
            g.pending.push(Mark {
                surface,
                x,
                y,
                injected_ns: ev.injected_ns,
            });
            drop(g);
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
}

/// Where a `side × side` mark centred on screen point `(x, y)` goes in the window: centred on
/// the point, clamped so that all of it lies inside.
fn place(window: Rect, x: i32, y: i32, side: u32) -> (i32, i32) {
    let half = (side / 2) as i32;
    let clamp = |v: i32, extent: u32| {
        let max = extent.saturating_sub(side) as i32;
        v.clamp(0, max.max(0))
    };
    (
        clamp(x - window.x - half, window.width),
        clamp(y - window.y - half, window.height),
    )
}

fn draw_loop(ctx: &ThreadCtx, app: &Tracking) {
    let mut batch = Vec::new();
    let mut items = Vec::new();
    let mut injected = Vec::new();
    loop {
        // Something changed: wait for the display's pace; marks arriving meanwhile join this
        // frame (the handler's wake-up finds no one waiting on the app's variable).
        if !app
            .shared
            .next_input_pass(ctx, |s| s.stopping, |s| !s.pending.is_empty())
        {
            return;
        }
        std::mem::swap(&mut app.shared.lock().pending, &mut batch);
        items.clear();
        injected.clear();
        for m in batch.drain(..) {
            items.push(DrawItem {
                surface_id: m.surface,
                x: m.x,
                y: m.y,
            });
            injected.push(m.injected_ns);
        }
        match drawn(ctx.draw_batch(&items)) {
            Drawn::Ok => {
                let done = sys::monotonic_ns();
                app.shared.lock().stats.frame(done, &injected);
            }
            Drawn::Refused => app.shared.lock().stats.draw_errors += items.len() as u64,
            Drawn::Stop => return,
        }
    }
}

/// The window's background with the spiral to trace (the recording's spiral, seed 000 figure
/// 30), as dots evenly spaced along its length.
fn guide_surface(window: Rect) -> Surface {
    let mut layers = vec![Layer {
        z: 0,
        rect: Rect::new(0, 0, window.width, window.height),
        fill: Fill::Solid(BACKGROUND_ARGB),
    }];
    for i in 0..GUIDE_DOTS {
        let (x, y) = spiral::point_at(f64::from(i) / f64::from(GUIDE_DOTS));
        let (x, y) = place(window, x.round() as i32, y.round() as i32, GUIDE_DOT_PX);
        layers.push(Layer {
            z: 1,
            rect: Rect::new(x, y, GUIDE_DOT_PX, GUIDE_DOT_PX),
            fill: Fill::Solid(GUIDE_ARGB),
        });
    }
    Surface {
        width: window.width,
        height: window.height,
        layers,
    }
}

/// A five-pointed star of colour `argb` on the background, `side × side` pixels.
fn star(side: u32, argb: u32) -> Surface {
    let c = f64::from(side) / 2.0;
    let outer = c;
    let inner = outer * STAR_INNER_RATIO;
    // Ten vertices, alternately outer and inner, the first pointing up.
    let vertices: Vec<(f64, f64)> = (0..10)
        .map(|k| {
            let r = if k % 2 == 0 { outer } else { inner };
            let a = -std::f64::consts::FRAC_PI_2 + f64::from(k) * std::f64::consts::PI / 5.0;
            (c + r * a.cos(), c + r * a.sin())
        })
        .collect();
    let pixels = (0..side * side)
        .map(|i| {
            let p = (f64::from(i % side) + 0.5, f64::from(i / side) + 0.5);
            if inside(&vertices, p) {
                argb
            } else {
                BACKGROUND_ARGB
            }
        })
        .collect();
    Surface {
        width: side,
        height: side,
        layers: vec![Layer {
            z: 0,
            rect: Rect::new(0, 0, side, side),
            fill: Fill::Pixels(pixels),
        }],
    }
}

/// Even-odd ray casting: whether `p` lies inside the polygon.
fn inside(poly: &[(f64, f64)], p: (f64, f64)) -> bool {
    let mut odd = false;
    let mut j = poly.len() - 1;
    for i in 0..poly.len() {
        let (xi, yi) = poly[i];
        let (xj, yj) = poly[j];
        if (yi > p.1) != (yj > p.1) && p.0 < (xj - xi) * (p.1 - yi) / (yj - yi) + xi {
            odd = !odd;
        }
        j = i;
    }
    odd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_stay_inside_the_window() {
        let w = Rect::new(100, 50, 200, 100);
        assert_eq!(place(w, 200, 100, 15), (93, 43));
        assert_eq!(place(w, 0, 0, 15), (0, 0));
        assert_eq!(place(w, 10_000, 10_000, 15), (185, 85));
    }

    #[test]
    fn the_star_has_its_centre_and_not_its_corners() {
        let s = star(STAR_PX, BLUE_ARGB);
        let Fill::Pixels(p) = &s.layers[0].fill else {
            panic!("pixels")
        };
        let at = |x: u32, y: u32| p[(y * STAR_PX + x) as usize];
        assert_eq!(at(7, 7), BLUE_ARGB);
        assert_eq!(at(7, 0), BLUE_ARGB, "top point");
        assert_eq!(at(0, 0), BACKGROUND_ARGB);
        assert_eq!(at(14, 14), BACKGROUND_ARGB);
    }

    #[test]
    fn the_guide_fits_the_compositor() {
        let g = guide_surface(Rect::new(0, 0, 1920, 1080));
        assert!(g.layers.len() <= lull_kds::compose::MAX_LAYERS);
        lull_kds::compose(&g).unwrap();
    }
}
