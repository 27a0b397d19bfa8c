//! The model: what every request is owed (windows, their pixels and stacking, each app's
//! surfaces within the budgets, threads, registrations, counters), and the compositor written
//! again from its definition.

use super::*;

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Flat {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) pixels: Vec<u32>,
}

#[derive(Clone, Debug)]
pub(crate) struct MApp {
    pub(crate) pid: u32,
    pub(crate) name: String,
    pub(crate) rect: Rect,
    pub(crate) stacking: Stacking,
    pub(crate) visibility: Visibility,
    /// What the app has drawn, window-sized, starting transparent.
    pub(crate) buffer: Vec<u32>,
    pub(crate) surfaces: BTreeMap<u32, Flat>,
    pub(crate) threads: [Option<u32>; 4],
    /// The app's registrations as it made them (the ESM sets input aside in the background).
    pub(crate) regs: [Option<HandlerId>; EventKind::COUNT],
    /// A `FRAME` waits for its answer.
    pub(crate) frame_pending: bool,
}

impl MApp {
    pub(crate) fn effective(&self, kind: EventKind) -> Option<HandlerId> {
        if self.stacking == Stacking::Background && kind.is_input() {
            None
        } else {
            self.regs[kind.index()]
        }
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Model {
    pub(crate) apps: BTreeMap<AppId, MApp>,
    /// Bottom to top.
    pub(crate) stack: Vec<AppId>,
    /// Attached apps in attach order (what `Target::Live` indexes).
    pub(crate) order: Vec<AppId>,
    pub(crate) departed: Vec<AppId>,
    pub(crate) screen_off: bool,
    pub(crate) counters: KdsCounters,
    pub(crate) next_pid: u32,
}

impl Model {
    pub(crate) fn screen(&self) -> Screen {
        if self.screen_off {
            Screen::Off
        } else {
            Screen::On
        }
    }

    pub(crate) fn state(&self, app: AppId) -> WindowState {
        let m = &self.apps[&app];
        WindowState {
            stacking: m.stacking,
            visibility: m.visibility,
            screen: self.screen(),
        }
    }

    pub(crate) fn states(&self) -> BTreeMap<AppId, WindowState> {
        self.stack.iter().map(|&a| (a, self.state(a))).collect()
    }

    pub(crate) fn foreground_app(&self) -> Option<AppId> {
        self.stack
            .iter()
            .rev()
            .copied()
            .find(|a| self.apps[a].stacking == Stacking::Foreground)
    }

    pub(crate) fn demote_all(&mut self) {
        for m in self.apps.values_mut() {
            m.stacking = Stacking::Background;
        }
    }

    pub(crate) fn raise(&mut self, app: AppId) {
        self.stack.retain(|&a| a != app);
        self.stack.push(app);
    }

    pub(crate) fn windows(&self) -> Vec<WindowInfo> {
        self.stack
            .iter()
            .map(|&app| {
                let m = &self.apps[&app];
                WindowInfo {
                    app,
                    pid: m.pid,
                    rect: m.rect,
                    state: self.state(app),
                    name: truncate_utf8(&m.name, MAX_NAME_LEN).to_owned(),
                    threads: m.threads,
                }
            })
            .collect()
    }

    /// A draw the model has checked: the surface's pixels into the app's buffer.
    pub(crate) fn draw(&mut self, app: AppId, surface_id: u32, x: i32, y: i32) {
        let a = self.apps.get_mut(&app).expect("attached");
        let s = &a.surfaces[&surface_id];
        let ww = a.rect.width as usize;
        for sy in 0..s.height as usize {
            for sx in 0..s.width as usize {
                a.buffer[(y as usize + sy) * ww + x as usize + sx] =
                    s.pixels[sy * s.width as usize + sx];
            }
        }
        self.counters.draws += 1;
        self.counters.pixels_drawn += u64::from(s.width) * u64::from(s.height);
    }

    /// Whether a `COMPOSE` of `surface` as `app`'s `surface_id` would pass the app's budget
    /// or all apps' budget (in screens of pixels; the surface it replaces, if any, not
    /// counted). The budgets are in requested pixels, as the flattened surface keeps the
    /// requested size.
    pub(crate) fn over_surface_budget(
        &self,
        app: AppId,
        surface_id: u32,
        surface: &Surface,
    ) -> bool {
        let screen_px = u64::from(SCREEN_W) * u64::from(SCREEN_H);
        let px = |f: &Flat| u64::from(f.width) * u64::from(f.height);
        let new_px = u64::from(surface.width) * u64::from(surface.height);
        let held_px = |a: AppId, m: &MApp| -> u64 {
            m.surfaces
                .iter()
                .filter(|(&id, _)| a != app || id != surface_id)
                .map(|(_, f)| px(f))
                .sum()
        };
        let own_px = held_px(app, &self.apps[&app]);
        let all_px: u64 = self.apps.iter().map(|(&a, m)| held_px(a, m)).sum();
        own_px + new_px > SURFACE_BUDGET_SCREENS * screen_px
            || all_px + new_px > TOTAL_SURFACE_BUDGET_SCREENS * screen_px
    }

    pub(crate) fn remove(&mut self, app: AppId) -> bool {
        if self.apps.remove(&app).is_none() {
            return false;
        }
        self.stack.retain(|&a| a != app);
        self.order.retain(|&a| a != app);
        self.departed.push(app);
        self.counters.detached += 1;
        true
    }

    /// The screen as the user should see it.
    pub(crate) fn displayed(&self) -> Vec<u32> {
        let (w, h) = (SCREEN_W as usize, SCREEN_H as usize);
        let mut s = vec![BACKDROP_ARGB; w * h];
        if self.screen_off {
            return s;
        }
        for app in &self.stack {
            let m = &self.apps[app];
            let r = m.rect;
            for y in 0..r.height as usize {
                for x in 0..r.width as usize {
                    let (sx, sy) = (r.x as usize + x, r.y as usize + y);
                    s[sy * w + sx] = if m.visibility == Visibility::Covered {
                        DECORATION_ARGB
                    } else {
                        m.buffer[y * r.width as usize + x]
                    };
                }
            }
        }
        s
    }

    /// Screen pixels a request on `app`'s channel may change: its window less what the windows
    /// stacked above it hide.
    pub(crate) fn may_change(&self, app: AppId) -> Vec<bool> {
        let (w, h) = (SCREEN_W as usize, SCREEN_H as usize);
        let mut ok = vec![false; w * h];
        let Some(i) = self.stack.iter().position(|&a| a == app) else {
            return ok;
        };
        let inside = |r: Rect, x: usize, y: usize| {
            let (x, y) = (x as i64, y as i64);
            x >= i64::from(r.x) && x < r.right() && y >= i64::from(r.y) && y < r.bottom()
        };
        let own = self.apps[&app].rect;
        let above: Vec<Rect> = self.stack[i + 1..]
            .iter()
            .map(|a| self.apps[a].rect)
            .collect();
        for y in 0..h {
            for x in 0..w {
                ok[y * w + x] = inside(own, x, y) && !above.iter().any(|&r| inside(r, x, y));
            }
        }
        ok
    }
}

/// The compositor of figure 16, written again from its definition: a transparent canvas, layers
/// by increasing z (equal z in order given), each pixel of a layer replacing the one below.
pub(crate) fn flatten(s: &Surface) -> Option<Flat> {
    if s.layers.len() > MAX_LAYERS {
        return None;
    }
    for l in &s.layers {
        if let Fill::Pixels(p) = &l.fill {
            if p.len() as u64 != l.rect.area() {
                return None;
            }
        }
    }
    let (w, h) = (s.width as usize, s.height as usize);
    let mut px = vec![0u32; w * h];
    let mut order: Vec<&Layer> = s.layers.iter().collect();
    order.sort_by_key(|l| l.z);
    for l in order {
        for y in 0..h {
            let ly = y as i64 - i64::from(l.rect.y);
            if ly < 0 || ly >= i64::from(l.rect.height) {
                continue;
            }
            for x in 0..w {
                let lx = x as i64 - i64::from(l.rect.x);
                if lx < 0 || lx >= i64::from(l.rect.width) {
                    continue;
                }
                px[y * w + x] = match &l.fill {
                    Fill::Solid(c) => *c,
                    Fill::Pixels(p) => p[(ly * i64::from(l.rect.width) + lx) as usize],
                };
            }
        }
    }
    Some(Flat {
        width: s.width,
        height: s.height,
        pixels: px,
    })
}

/// Whether `tid` is a thread of process `pid` in this test's world.
pub(crate) fn thread_is_callers(pid: u32, tid: u32) -> bool {
    tid != 0 && tid / TIDS_PER_PID == pid
}

/// What the model says a request must get.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Expect {
    Ok,
    /// Taken, answered later (`FRAME`).
    NoReply,
    Composed {
        surface_id: u32,
        flat: Flat,
    },
    Snapshot,
    Windows,
    Refused(ErrorCode),
}

/// One app as the ESM sees it: handlers, input suspended, queued events, state, counters.
pub(crate) type EsmApp = (
    AppId,
    Vec<Option<HandlerId>>,
    bool,
    usize,
    AppState,
    lull_esm::AppCounters,
);

/// Everything a refused request must leave alone.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Observed {
    pub(crate) displayed: Vec<u32>,
    pub(crate) windows: Vec<WindowInfo>,
    pub(crate) esm: Vec<EsmApp>,
    pub(crate) listeners: Vec<usize>,
    pub(crate) esm_counters: lull_esm::EsmCounters,
    pub(crate) kds_counters: KdsCounters,
}
