//! The display server's state machine (seed 000, chapter 4): attached apps, their surfaces and
//! window buffers, the window manager, and the screen those windows stack into.
//!
//! [`Kds::handle`] takes one decoded request, names the channel it came on, applies it, and
//! returns the reply plus what the caller must do next (push window states to apps, close the
//! channel). The ESM is passed in so that the window manager's effects — input handlers set aside
//! on background, put back on foreground (figures 26–27) — and `ESM_REGISTER` take effect in the
//! same step. The daemon in `lulld` owns the sockets; everything here is pure, so the command
//! handlers are fuzzed in-process (`tests/fuzz_commands/`).

use std::collections::BTreeMap;

use lull_esm::Esm;
use lull_model::{AppId, Screen, ThreadCategory, WindowState};
use serde::Serialize;

use crate::compose::{compose, ComposeError, Surface};
use crate::geometry::Rect;
use crate::pacing::{self, DEFAULT_REFRESH_PERIOD_NS, MIN_REFRESH_PERIOD_NS};
use crate::pixmap::{DrawError, Pixmap};
use crate::wire::{
    truncate_utf8, DrawItem, ErrorCode, Reply, Request, WindowInfo, MAX_NAME_LEN, MAX_WINDOWS,
};
use crate::wm::{WindowManager, WmEffect, WmError};

/// Most apps attached at once. Bounds the server's memory (each app's window buffer and
/// surfaces) and keeps a `WINDOWS` reply within [`MAX_WINDOWS`].
pub const MAX_APPS: usize = 64;
/// Most flattened surfaces one app may keep; a surface is at most the window's size, so an app
/// can make the server hold at most this many window-sized pixmaps plus its window buffer.
pub const MAX_SURFACES: usize = 8;
/// The pixels one app's surfaces may hold together, in screens: the surfaces an app draws from
/// are rarely more than a window's worth, and [`MAX_SURFACES`] full-screen ones would let 18 apps
/// make the server hold over a gigabyte. A `COMPOSE` past it is refused (`Resources`).
pub const SURFACE_BUDGET_SCREENS: u64 = 2;
/// The pixels all apps' surfaces may hold together, in screens: eight apps at their full
/// [`SURFACE_BUDGET_SCREENS`] (133 MB at 1920×1080). Without it [`MAX_APPS`] apps could make the
/// server hold 128 screens (1.06 GB at 1080p). A `COMPOSE` past it is refused (`Resources`)
/// until other apps free surfaces (by detaching).
pub const TOTAL_SURFACE_BUDGET_SCREENS: u64 = 16;
/// What the screen shows where no window is: opaque black.
pub const BACKDROP_ARGB: u32 = 0xff00_0000;
/// The system decoration drawn over a covered window (a notification shade, say): opaque dark
/// grey, so a snapshot shows that the app's own pixels are hidden.
pub const DECORATION_ARGB: u32 = 0xff30_3030;
/// Default screen size of the headless frame buffer: 1080p, the seed's video size.
pub const DEFAULT_SCREEN_WIDTH: u32 = 1920;
pub const DEFAULT_SCREEN_HEIGHT: u32 = 1080;

const _: () = assert!(MAX_APPS <= MAX_WINDOWS);

/// Which channel a request arrived on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Channel {
    /// The well-known control socket. `privileged` when the peer is the server's user or root
    /// (checked from its credentials): only such peers may run window-manager requests.
    Control { privileged: bool },
    /// An app's private channel, handed out by `ATTACH`.
    Private(AppId),
}

/// A refused request: the code the app sees and a message for people.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error, Serialize)]
#[error("{message}")]
pub struct KdsError {
    pub code: ErrorCode,
    pub message: String,
}

impl KdsError {
    fn new(code: ErrorCode, message: impl Into<String>) -> KdsError {
        KdsError {
            code,
            message: message.into(),
        }
    }
}

impl From<WmError> for KdsError {
    fn from(e: WmError) -> KdsError {
        let code = match e {
            WmError::NoWindow(_) | WmError::AlreadyOpen(_) => ErrorCode::NoWindow,
            WmError::TooLarge { .. } => ErrorCode::WindowTooLarge,
        };
        KdsError::new(code, e.to_string())
    }
}

/// Everything a request asks of the caller beyond sending `reply` on the channel it came on.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Outcome {
    /// What to send back on the channel; `None` for `FRAME`, answered later by `FRAME_DONE`.
    pub reply: Option<Reply>,
    /// Window states to push to apps (on their private channels) and to guiS.
    pub pushes: Vec<(AppId, WindowState)>,
    /// `DETACH`: after the reply, close the app's channels and remove it from the ESM.
    pub detach: Option<AppId>,
    /// `SNAPSHOT`: send the pixels of [`Kds::displayed`] with the reply.
    pub snapshot: bool,
}

impl Outcome {
    fn reply(reply: Reply) -> Outcome {
        Outcome {
            reply: Some(reply),
            pushes: Vec::new(),
            detach: None,
            snapshot: false,
        }
    }
}

/// What the server counts.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct KdsCounters {
    pub attached: u64,
    pub detached: u64,
    pub requests: u64,
    /// Requests answered with `ERROR`.
    pub refused: u64,
    pub composes: u64,
    pub draws: u64,
    /// Pixels written into window buffers by `DRAW`.
    pub pixels_drawn: u64,
    pub wm_ops: u64,
    /// `WINDOW_STATE` messages the caller was asked to push.
    pub state_pushes: u64,
    /// `DRAW_BATCH` requests applied (their draws count in `draws`).
    pub draw_batches: u64,
    /// `FRAME` requests taken.
    pub frame_requests: u64,
    /// `FRAME` requests that found one already pending for the app (one answer serves both).
    pub frame_requests_coalesced: u64,
    /// `FRAME_DONE` answers the caller was asked to send.
    pub frames_done: u64,
    /// `COMPOSE`s refused (`Resources`) for going past the app's [`SURFACE_BUDGET_SCREENS`] or
    /// all apps' [`TOTAL_SURFACE_BUDGET_SCREENS`].
    pub surface_budget_refused: u64,
    /// Screen restacks (backdrop and every window over the damaged area), and their pixels.
    pub restacks: u64,
    pub restacked_pixels: u64,
    /// Restacks not done because the top window covers the whole lit screen, uncovered, and is
    /// shown as it is (direct scanout).
    pub restacks_skipped: u64,
}

#[derive(Clone, Debug)]
struct Client {
    name: String,
    pid: u32,
    /// What the app has drawn, window-sized; stacked into the screen.
    buffer: Pixmap,
    surfaces: BTreeMap<u32, Pixmap>,
    threads: [Option<u32>; 4],
    /// A `FRAME` waits for its `FRAME_DONE` (held while the window cannot be seen).
    frame_requested: bool,
}

/// The display server.
#[derive(Clone, Debug)]
pub struct Kds {
    wm: WindowManager,
    clients: BTreeMap<AppId, Client>,
    /// The windows stacked, as they would show with the screen lit.
    screen: Pixmap,
    damage: Option<Rect>,
    /// Direct scanout: the app whose window covers the whole lit screen, uncovered, on top, and
    /// is displayed as it is — window buffers are opaque, so nothing under it shows — while
    /// `screen` is not restacked (it is stale until the next restack, which then covers it all).
    scanout: Option<AppId>,
    counters: KdsCounters,
    /// The screen's refresh period ([`crate::pacing`]).
    refresh_period_ns: u32,
}

impl Kds {
    /// A server with an empty `width × height` screen.
    ///
    /// # Errors
    /// [`DrawError::TooLarge`] for a screen beyond [`crate::pixmap::MAX_PIXELS`].
    pub fn new(width: u32, height: u32) -> Result<Kds, DrawError> {
        Ok(Kds {
            wm: WindowManager::new(width, height),
            clients: BTreeMap::new(),
            screen: Pixmap::filled(width, height, BACKDROP_ARGB)?,
            damage: None,
            scanout: None,
            counters: KdsCounters::default(),
            refresh_period_ns: DEFAULT_REFRESH_PERIOD_NS,
        })
    }

    /// The screen's refresh period, ns.
    #[must_use]
    pub fn refresh_period_ns(&self) -> u32 {
        self.refresh_period_ns
    }

    /// Sets the screen's refresh period (at least [`MIN_REFRESH_PERIOD_NS`]; a shorter one is
    /// raised to it, so the frame timer can never spin). Returns the period in force.
    pub fn set_refresh_period_ns(&mut self, period_ns: u32) -> u32 {
        self.refresh_period_ns = period_ns.max(MIN_REFRESH_PERIOD_NS);
        self.refresh_period_ns
    }

    /// Whether some app that can be seen waits for `FRAME_DONE`: the caller keeps its one-shot
    /// frame timer armed, for [`Kds::next_frame_ns`], exactly while this holds. Requests of apps
    /// that cannot be seen are held, and arm nothing, until they can.
    #[must_use]
    pub fn frame_wanted(&self) -> bool {
        self.clients
            .iter()
            .any(|(app, c)| c.frame_requested && self.can_see(*app))
    }

    /// When the frame timer should expire, if it should be armed at all: the first refresh
    /// boundary after `now_ns`.
    #[must_use]
    pub fn next_frame_ns(&self, now_ns: u64) -> Option<u64> {
        self.frame_wanted()
            .then(|| pacing::next_boundary_ns(now_ns, self.refresh_period_ns))
    }

    /// The frame timer expired at `now_ns`: every app that can be seen and waits is answered
    /// (`FRAME_DONE` with the boundary just passed) and waits no more. Held requests stay.
    pub fn frames_due(&mut self, now_ns: u64) -> Vec<(AppId, Reply)> {
        let frame_ns = pacing::boundary_at_or_before_ns(now_ns, self.refresh_period_ns);
        let due: Vec<AppId> = self
            .clients
            .iter()
            .filter(|(app, c)| c.frame_requested && self.can_see(**app))
            .map(|(app, _)| *app)
            .collect();
        for app in &due {
            if let Some(c) = self.clients.get_mut(app) {
                c.frame_requested = false;
            }
        }
        self.counters.frames_done += due.len() as u64;
        due.into_iter()
            .map(|app| (app, Reply::FrameDone { frame_ns }))
            .collect()
    }

    fn can_see(&self, app: AppId) -> bool {
        self.wm.state(app).is_ok_and(WindowState::can_see)
    }

    #[must_use]
    pub fn counters(&self) -> KdsCounters {
        self.counters
    }

    #[must_use]
    pub fn wm(&self) -> &WindowManager {
        &self.wm
    }

    /// Attached apps.
    pub fn apps(&self) -> impl Iterator<Item = AppId> + '_ {
        self.clients.keys().copied()
    }

    /// The kernel thread the app declared for `category`, if any.
    #[must_use]
    pub fn thread(&self, app: AppId, category: ThreadCategory) -> Option<u32> {
        let i = ThreadCategory::ALL.iter().position(|c| *c == category)?;
        self.clients.get(&app).and_then(|c| c.threads[i])
    }

    /// The attaching process of `app`.
    #[must_use]
    pub fn pid(&self, app: AppId) -> Option<u32> {
        self.clients.get(&app).map(|c| c.pid)
    }

    /// The screen as the user sees it: the stacked windows, or black with the screen off.
    #[must_use]
    pub fn displayed(&self) -> std::borrow::Cow<'_, Pixmap> {
        match self.wm.screen() {
            Screen::On => match self.scanout.and_then(|app| self.clients.get(&app)) {
                Some(c) => std::borrow::Cow::Borrowed(&c.buffer),
                None => std::borrow::Cow::Borrowed(&self.screen),
            },
            Screen::Off => std::borrow::Cow::Owned(
                Pixmap::filled(self.screen.width(), self.screen.height(), BACKDROP_ARGB)
                    .expect("same size as the screen"),
            ),
        }
    }

    /// The screen area changed since the last call (for presenting to a frame buffer).
    pub fn take_damage(&mut self) -> Option<Rect> {
        self.damage.take()
    }

    /// Every window, bottom to top.
    #[must_use]
    pub fn windows(&self) -> Vec<WindowInfo> {
        self.wm
            .windows()
            .iter()
            .filter_map(|w| {
                let c = self.clients.get(&w.app)?;
                Some(WindowInfo {
                    app: w.app,
                    pid: c.pid,
                    rect: w.rect,
                    state: self.wm.state(w.app).ok()?,
                    name: c.name.clone(),
                    threads: c.threads,
                })
            })
            .collect()
    }

    /// `ATTACH` for the ESM app `app` (the caller has just added it to the ESM): opens its
    /// window, in front. Returns the window and the states to push (the app that was in front
    /// goes to the background, so its input is set aside in `esm`).
    ///
    /// # Errors
    /// [`ErrorCode::TooManyApps`], [`ErrorCode::WindowTooLarge`], or [`ErrorCode::NoWindow`] for
    /// an app already attached.
    pub fn attach(
        &mut self,
        esm: &mut Esm,
        app: AppId,
        pid: u32,
        width: u32,
        height: u32,
        name: &str,
    ) -> Result<(Rect, Vec<(AppId, WindowState)>), KdsError> {
        self.counters.requests += 1;
        let r = self.attach_inner(esm, app, pid, width, height, name);
        match &r {
            Ok((_, pushes)) => self.counters.state_pushes += pushes.len() as u64,
            Err(_) => self.counters.refused += 1,
        }
        r
    }

    fn attach_inner(
        &mut self,
        esm: &mut Esm,
        app: AppId,
        pid: u32,
        width: u32,
        height: u32,
        name: &str,
    ) -> Result<(Rect, Vec<(AppId, WindowState)>), KdsError> {
        if self.clients.len() >= MAX_APPS {
            return Err(KdsError::new(
                ErrorCode::TooManyApps,
                format!("the display server already has {MAX_APPS} apps attached"),
            ));
        }
        let (rect, effects) = self.wm.open(app, width, height)?;
        let buffer = match Pixmap::new(rect.width, rect.height) {
            Ok(b) => b,
            Err(e) => {
                let _ = self.wm.close(app);
                return Err(KdsError::new(ErrorCode::WindowTooLarge, e.to_string()));
            }
        };
        self.clients.insert(
            app,
            Client {
                name: truncate_utf8(name, MAX_NAME_LEN).to_owned(),
                pid,
                buffer,
                surfaces: BTreeMap::new(),
                threads: [None; 4],
                frame_requested: false,
            },
        );
        self.counters.attached += 1;
        self.add_damage(rect);
        self.recompose(rect);
        Ok((rect, self.apply(esm, effects)))
    }

    /// The app left (`DETACH`, or its channel closed): its window, surfaces and thread
    /// declarations go. Removing it from the ESM is the caller's part (it owns the connection).
    pub fn detach(&mut self, app: AppId) {
        if self.clients.remove(&app).is_some() {
            self.counters.detached += 1;
        }
        if let Ok(w) = self.wm.close(app) {
            self.add_damage(w.rect);
            self.recompose(w.rect);
        }
    }

    /// Applies one request from `channel`. `thread_is_callers(pid, tid)` tells whether thread
    /// `tid` belongs to process `pid` (the caller reads that from the kernel), so an app can
    /// never declare — and have guiS freeze — a thread of another process.
    pub fn handle(
        &mut self,
        esm: &mut Esm,
        channel: Channel,
        request: &Request,
        thread_is_callers: &dyn Fn(u32, u32) -> bool,
    ) -> Outcome {
        self.counters.requests += 1;
        let ty = request_type_of(request);
        match self.handle_inner(esm, channel, request, thread_is_callers) {
            Ok(outcome) => {
                self.counters.state_pushes += outcome.pushes.len() as u64;
                outcome
            }
            Err(e) => {
                self.counters.refused += 1;
                Outcome::reply(Reply::Error {
                    request_type: ty,
                    code: e.code as u32,
                    message: e.message,
                })
            }
        }
    }

    fn handle_inner(
        &mut self,
        esm: &mut Esm,
        channel: Channel,
        request: &Request,
        thread_is_callers: &dyn Fn(u32, u32) -> bool,
    ) -> Result<Outcome, KdsError> {
        let ty = request_type_of(request);
        let ok = || Ok(Outcome::reply(Reply::Ok { request_type: ty }));
        match (channel, request) {
            (Channel::Control { .. }, Request::Attach { .. }) => Err(KdsError::new(
                ErrorCode::WrongChannel,
                "ATTACH is answered by the server's socket layer, which hands out the channel",
            )),
            (Channel::Private(_), Request::Attach { .. }) => Err(KdsError::new(
                ErrorCode::WrongChannel,
                "ATTACH goes on the control socket; this channel is already attached",
            )),
            (Channel::Private(app), Request::Detach) => {
                self.detach(app);
                Ok(Outcome {
                    detach: Some(app),
                    ..Outcome::reply(Reply::Ok { request_type: ty })
                })
            }
            (
                Channel::Private(app),
                Request::Compose {
                    surface_id,
                    surface,
                },
            ) => {
                let (width, height) = self.compose(app, *surface_id, surface)?;
                Ok(Outcome::reply(Reply::Composed {
                    surface_id: *surface_id,
                    width,
                    height,
                }))
            }
            (Channel::Private(app), Request::Draw { surface_id, x, y }) => {
                self.draw(app, *surface_id, *x, *y)?;
                ok()
            }
            (Channel::Private(app), Request::DrawBatch(items)) => {
                self.draw_batch(app, items)?;
                ok()
            }
            (Channel::Private(app), Request::Frame) => {
                let client = self.client_mut(app)?;
                let coalesced = client.frame_requested;
                client.frame_requested = true;
                self.counters.frame_requests += 1;
                self.counters.frame_requests_coalesced += u64::from(coalesced);
                Ok(Outcome {
                    reply: None,
                    ..Outcome::reply(Reply::Ok { request_type: ty })
                })
            }
            (Channel::Private(app), Request::EsmRegister { kind, handler }) => {
                esm.register(app, *kind, *handler)
                    .map_err(|e| KdsError::new(ErrorCode::Esm, e.to_string()))?;
                ok()
            }
            (Channel::Private(app), Request::Thread { category, tid }) => {
                let client = self.client_mut(app)?;
                if *tid == 0 || !thread_is_callers(client.pid, *tid) {
                    return Err(KdsError::new(
                        ErrorCode::BadThread,
                        format!("thread {tid} is not a thread of process {}", client.pid),
                    ));
                }
                let i = ThreadCategory::ALL
                    .iter()
                    .position(|c| c == category)
                    .expect("listed");
                client.threads[i] = Some(*tid);
                ok()
            }
            (
                Channel::Control { .. },
                Request::Detach
                | Request::Compose { .. }
                | Request::Draw { .. }
                | Request::DrawBatch(_)
                | Request::Frame
                | Request::EsmRegister { .. }
                | Request::Thread { .. },
            ) => Err(KdsError::new(
                ErrorCode::WrongChannel,
                "app commands go on the private channel ATTACH returned",
            )),
            (Channel::Control { privileged: true }, Request::ListWindows) => {
                Ok(Outcome::reply(Reply::Windows(self.windows())))
            }
            (Channel::Control { privileged: true }, Request::Snapshot) => {
                let s = &self.screen;
                Ok(Outcome {
                    snapshot: true,
                    ..Outcome::reply(Reply::Snapshot {
                        width: s.width(),
                        height: s.height(),
                    })
                })
            }
            (Channel::Control { privileged: true }, wm_request) => {
                let effects = match *wm_request {
                    Request::WmForeground { app } => self.wm.foreground(app)?,
                    Request::WmBackground { app } => self.wm.background(app)?,
                    Request::WmCover { app, covered } => self.wm.cover(app, covered)?,
                    Request::WmScreen { screen } => self.wm.set_screen(screen),
                    _ => unreachable!("every other request is matched above"),
                };
                self.counters.wm_ops += 1;
                // Stacking or covering may change any part of the screen.
                let all = self.screen.bounds();
                self.add_damage(all);
                self.recompose(all);
                Ok(Outcome {
                    pushes: self.apply(esm, effects),
                    ..Outcome::reply(Reply::Ok { request_type: ty })
                })
            }
            (Channel::Control { privileged: false }, _) | (Channel::Private(_), _) => {
                Err(KdsError::new(
                    ErrorCode::NotPermitted,
                    "window-manager requests need the control socket and the server's user or root",
                ))
            }
        }
    }

    /// Applies the window manager's effects to the ESM and returns the states to push.
    fn apply(&mut self, esm: &mut Esm, effects: Vec<WmEffect>) -> Vec<(AppId, WindowState)> {
        let mut pushes = Vec::new();
        for e in effects {
            match e {
                // The app is attached to both, so the ESM knows it; a failure would mean the
                // caller removed it from the ESM first, in which case there is nothing to do.
                WmEffect::SuspendInput(app) => {
                    let _ = esm.suspend_input(app);
                }
                WmEffect::RestoreInput(app) => {
                    let _ = esm.restore_input(app);
                }
                WmEffect::State(app, s) => pushes.push((app, s)),
            }
        }
        pushes
    }

    fn client_mut(&mut self, app: AppId) -> Result<&mut Client, KdsError> {
        self.clients
            .get_mut(&app)
            .ok_or_else(|| KdsError::new(ErrorCode::NoWindow, format!("{app} is not attached")))
    }

    /// `kds_compose` (figure 16) into the app's surface slot `surface_id`.
    fn compose(
        &mut self,
        app: AppId,
        surface_id: u32,
        surface: &Surface,
    ) -> Result<(u32, u32), KdsError> {
        let window = self.wm.window(app)?.rect;
        let client = self.client_mut(app)?;
        if surface.width > window.width || surface.height > window.height {
            return Err(KdsError::new(
                ErrorCode::Compose,
                format!(
                    "a {}x{} surface cannot be drawn in the {}x{} window",
                    surface.width, surface.height, window.width, window.height
                ),
            ));
        }
        if !client.surfaces.contains_key(&surface_id) && client.surfaces.len() >= MAX_SURFACES {
            return Err(KdsError::new(
                ErrorCode::Compose,
                format!("an app may keep at most {MAX_SURFACES} surfaces"),
            ));
        }
        let screen_px = u64::from(self.screen.width()) * u64::from(self.screen.height());
        let budget_px = SURFACE_BUDGET_SCREENS * screen_px;
        let client = self.clients.get_mut(&app).expect("checked above");
        let kept_px: u64 = client
            .surfaces
            .iter()
            .filter(|(&id, _)| id != surface_id)
            .map(|(_, p)| u64::from(p.width()) * u64::from(p.height()))
            .sum();
        let new_px = u64::from(surface.width) * u64::from(surface.height);
        if kept_px + new_px > budget_px {
            self.counters.surface_budget_refused += 1;
            return Err(KdsError::new(
                ErrorCode::Resources,
                format!(
                    "the app's surfaces would hold {} bytes, over its budget of {} bytes \
                     ({SURFACE_BUDGET_SCREENS} screens); DRAW from fewer or smaller surfaces",
                    (kept_px + new_px) * 4,
                    budget_px * 4
                ),
            ));
        }
        // Every app's surfaces but the one this COMPOSE replaces, if any.
        let others_px: u64 = self
            .clients
            .iter()
            .flat_map(|(&a, c)| {
                c.surfaces
                    .iter()
                    .filter(move |(&id, _)| a != app || id != surface_id)
            })
            .map(|(_, p)| u64::from(p.width()) * u64::from(p.height()))
            .sum();
        let total_px = TOTAL_SURFACE_BUDGET_SCREENS * screen_px;
        if others_px + new_px > total_px {
            self.counters.surface_budget_refused += 1;
            return Err(KdsError::new(
                ErrorCode::Resources,
                format!(
                    "the display server's surfaces would hold {} bytes, over its budget of {} \
                     bytes for all apps ({TOTAL_SURFACE_BUDGET_SCREENS} screens); try again \
                     when other apps have detached",
                    (others_px + new_px) * 4,
                    total_px * 4
                ),
            ));
        }
        let flat = compose(surface)
            .map_err(|e: ComposeError| KdsError::new(ErrorCode::Compose, e.to_string()))?;
        let size = (flat.width(), flat.height());
        let client = self.clients.get_mut(&app).expect("checked above");
        client.surfaces.insert(surface_id, flat);
        self.counters.composes += 1;
        Ok(size)
    }

    /// `kds_draw_2d` (figure 17): the flattened surface into the app's window at `(x, y)`,
    /// refused whole if one pixel would land outside.
    fn draw(&mut self, app: AppId, surface_id: u32, x: i32, y: i32) -> Result<(), KdsError> {
        let window = self.wm.window(app)?.rect;
        let client = self.client_mut(app)?;
        let src = client.surfaces.get(&surface_id).ok_or_else(|| {
            KdsError::new(
                ErrorCode::NoSurface,
                format!("no surface {surface_id}: COMPOSE it first"),
            )
        })?;
        client
            .buffer
            .draw(x, y, src)
            .map_err(|e| KdsError::new(ErrorCode::OutsideWindow, e.to_string()))?;
        let area = src.bounds().area();
        // Inside the window by the check above, so the sums stay within the window's i32 span.
        let on_screen = Rect::new(window.x + x, window.y + y, src.width(), src.height());
        self.counters.draws += 1;
        self.counters.pixels_drawn += area;
        self.add_damage(on_screen);
        self.recompose(on_screen);
        Ok(())
    }

    /// `DRAW_BATCH`: every draw is checked before any is made, so a refused batch writes
    /// nothing (as a refused `DRAW` does); then each is drawn in order.
    fn draw_batch(&mut self, app: AppId, items: &[DrawItem]) -> Result<(), KdsError> {
        let client = self.client_mut(app)?;
        let bounds = client.buffer.bounds();
        for d in items {
            let src = client.surfaces.get(&d.surface_id).ok_or_else(|| {
                KdsError::new(
                    ErrorCode::NoSurface,
                    format!("no surface {}: COMPOSE it first", d.surface_id),
                )
            })?;
            if !bounds.contains(Rect::new(d.x, d.y, src.width(), src.height())) {
                return Err(KdsError::new(
                    ErrorCode::OutsideWindow,
                    format!(
                        "a {}x{} surface at ({}, {}) leaves the {}x{} window; nothing of the batch was drawn",
                        src.width(),
                        src.height(),
                        d.x,
                        d.y,
                        bounds.width,
                        bounds.height
                    ),
                ));
            }
        }
        for d in items {
            self.draw(app, d.surface_id, d.x, d.y)?;
        }
        self.counters.draw_batches += 1;
        Ok(())
    }

    fn add_damage(&mut self, r: Rect) {
        let Some(r) = self.screen.bounds().intersect(r) else {
            return;
        };
        self.damage = Some(match self.damage {
            None => r,
            Some(d) => d.union(r),
        });
    }

    /// The app that can be scanned out directly: the screen is lit and its top window covers
    /// all of it, uncovered (as Wayland compositors scan a full-screen opaque surface out).
    fn scanout_candidate(&self) -> Option<AppId> {
        if self.wm.screen() != Screen::On {
            return None;
        }
        let top = self.wm.windows().last()?;
        (top.rect == self.screen.bounds()
            && top.visibility == lull_model::Visibility::Visible
            && self.clients.contains_key(&top.app))
        .then_some(top.app)
    }

    /// Restacks the part `area` of the screen: backdrop, then every window bottom to top, each
    /// covered window under the system decoration — unless one window is scanned out directly.
    fn recompose(&mut self, area: Rect) {
        if let Some(app) = self.scanout_candidate() {
            self.scanout = Some(app);
            self.counters.restacks_skipped += 1;
            return;
        }
        // Leaving direct scanout: the screen missed every change meanwhile.
        let area = if self.scanout.take().is_some() {
            self.screen.bounds()
        } else {
            area
        };
        let Some(area) = self.screen.bounds().intersect(area) else {
            return;
        };
        self.counters.restacks += 1;
        self.counters.restacked_pixels += area.area();
        self.screen.fill_rect(area, BACKDROP_ARGB);
        for w in self.wm.windows() {
            let Some(client) = self.clients.get(&w.app) else {
                continue;
            };
            self.screen
                .blit_within(area, w.rect.x, w.rect.y, &client.buffer);
            if w.visibility == lull_model::Visibility::Covered {
                if let Some(part) = area.intersect(w.rect) {
                    self.screen.fill_rect(part, DECORATION_ARGB);
                }
            }
        }
    }
}

/// The wire number of a request's type (for `OK` and `ERROR` replies).
#[must_use]
pub fn request_type_of(r: &Request) -> u32 {
    use crate::wire::request_type as t;
    match r {
        Request::Attach { .. } => t::ATTACH,
        Request::Detach => t::DETACH,
        Request::Compose { .. } => t::COMPOSE,
        Request::Draw { .. } => t::DRAW,
        Request::DrawBatch(_) => t::DRAW_BATCH,
        Request::Frame => t::FRAME,
        Request::EsmRegister { .. } => t::ESM_REGISTER,
        Request::Thread { .. } => t::THREAD,
        Request::WmForeground { .. } => t::WM_FOREGROUND,
        Request::WmBackground { .. } => t::WM_BACKGROUND,
        Request::WmCover { .. } => t::WM_COVER,
        Request::WmScreen { .. } => t::WM_SCREEN,
        Request::Snapshot => t::SNAPSHOT,
        Request::ListWindows => t::LIST_WINDOWS,
    }
}

#[cfg(test)]
mod tests;
