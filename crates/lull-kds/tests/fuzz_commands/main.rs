//! The display server's parser and command handlers fuzzed together, against a model.
//!
//! Each case is a pure [`Kds`] on a 64 × 48 screen with an [`Esm`], up to four apps attached, and
//! a random sequence of steps: requests (valid and invalid) on random channels — each app's
//! private channel, stale or forged apps' channels, privileged and unprivileged control —
//! handed to [`Kds::handle`] directly, or encoded and decoded, or encoded, mutated and decoded
//! (so the parser feeds the handlers), or plain random bytes through `wire::decode_request` the
//! way the daemon's socket layer does it (every complete message handled, a malformed one closes
//! the channel); attaches and channel closes as the socket layer does them; events injected into
//! the ESM and `esm_wait`s.
//!
//! A model holds what every request is owed: each window's place, state and pixels, each app's
//! surfaces (within the per-app and all-apps surface budgets), threads and registrations, the
//! counters. After every step:
//!
//! - (a) nothing panicked;
//! - (b) a request (or malformed bytes) on app A's private channel changed no screen pixel
//!   outside A's window, nor any pixel of A's window that a window stacked above A hides — so an
//!   app can change another app's pixels only through the window manager or where its own
//!   window lies on top;
//! - (c) a refused request changed nothing observable: screen, damage, windows list, threads,
//!   ESM registrations, suspension, queues and counters (only `requests` and `refused` move);
//! - (d) `Esm::check_accounting` holds;
//! - (e) for every attached app, input suspended in the ESM ⇔ window in the background, and
//!   the ESM's handlers are the app's registrations with input set aside in the background;
//! - (f) the server's counters equal the model's (`requests = refused + succeeded`, composes,
//!   draws, pixels drawn, window-manager operations, state pushes, attaches, detaches);
//!
//! and besides: the reply is the one the model predicts (code by code), the pushed window
//! states are exactly the changed ones, the displayed screen equals the model's stacking of
//! the windows, every changed pixel lies in the reported damage, and each event pushed
//! directly goes to a handler the model says is registered (none to a background app's input).
//!
//! `decode_reply` (the client's parser) is fuzzed with random and mutated bytes too.
//!
//! The normal suite runs a short, seeded version. The long run:
//! `LULL_FUZZ_CASES=200000 cargo test --release -p lull-kds --test fuzz_commands -- --ignored --nocapture`
//! (`LULL_FUZZ_SEED` picks the seed).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use lull_esm::{AppState, Delivery, Esm, EsmConfig};
use lull_kds::compose::MAX_LAYERS;
use lull_kds::server::{
    request_type_of, Channel, Kds, KdsCounters, Outcome, BACKDROP_ARGB, DECORATION_ARGB, MAX_APPS,
    MAX_SURFACES, SURFACE_BUDGET_SCREENS, TOTAL_SURFACE_BUDGET_SCREENS,
};
use lull_kds::wire::{
    self, truncate_utf8, DrawItem, ErrorCode, Reply, Request, WindowInfo, HEADER_LEN, MAX_DATA_LEN,
    MAX_NAME_LEN,
};
use lull_kds::{Fill, Layer, Rect, Surface};
use lull_model::{
    AppId, EventKind, HandlerId, RawEvent, Screen, Stacking, ThreadCategory, TouchPhase,
    Visibility, WindowState,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

const SCREEN_W: u32 = 64;
const SCREEN_H: u32 = 48;
/// One to four live apps: enough for every stacking order, small enough to stack often.
const MAX_LIVE: usize = 4;
/// Thread ids of process `pid` in this test's world are `pid * TIDS_PER_PID + 0..TIDS_PER_PID`.
const TIDS_PER_PID: u32 = 100;
/// Private queue bound: small, so that queues fill and overflow within a case.
const QUEUE_BOUND: usize = 4;
/// Steps per case in the normal suite and in the long run.
const SHORT_STEPS: usize = 60;
const LONG_STEPS: usize = 120;
/// Cases of the seeded run in the normal suite (a few seconds in a debug build).
const SHORT_CASES: u32 = 150;
/// Cases of the long run when `LULL_FUZZ_CASES` is not set.
const DEFAULT_LONG_CASES: u32 = 1_000_000;
const DEFAULT_SEED: u64 = 0x6b64_735f_6675_7a7a;

// ------------------------------------------------------------------------------------------------
// What was run, for the closing note of the long run.

static CASES: AtomicU64 = AtomicU64::new(0);
static STEPS: AtomicU64 = AtomicU64::new(0);
static HANDLED: AtomicU64 = AtomicU64::new(0);
static DECODES: AtomicU64 = AtomicU64::new(0);
static MALFORMED: AtomicU64 = AtomicU64::new(0);
static ATTACHES: AtomicU64 = AtomicU64::new(0);
static INJECTS: AtomicU64 = AtomicU64::new(0);
/// Index 0: successes; 1..=11: `ERROR` replies by code.
/// Index 0: success; then one per `ErrorCode` by its number.
static OUTCOMES: [AtomicU64; ErrorCode::ALL.len() + 1] =
    [const { AtomicU64::new(0) }; ErrorCode::ALL.len() + 1];
static REPLY_INPUTS: AtomicU64 = AtomicU64::new(0);
/// Successes by request type (`wire::request_type`, 1..=12).
static SUCCEEDED: [AtomicU64; 15] = [const { AtomicU64::new(0) }; 15];

fn count(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// A check of a case: `Err` names the invariant broken.
type Checked = Result<(), TestCaseError>;

macro_rules! check {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(TestCaseError::fail(format!($($fmt)+)));
        }
    };
}

mod model;
mod replies;
mod steps;

use model::*;
use replies::*;
use steps::*;

// ------------------------------------------------------------------------------------------------
// The harness: the server, the ESM, the model, and the checks.

struct Harness {
    kds: Kds,
    esm: Esm,
    model: Model,
    now_ns: u64,
}

impl Harness {
    fn new() -> Harness {
        Harness {
            kds: Kds::new(SCREEN_W, SCREEN_H).expect("small screen"),
            esm: Esm::new(EsmConfig {
                queue_bound: QUEUE_BOUND,
            })
            .expect("nonzero bound"),
            model: Model {
                next_pid: 10,
                ..Model::default()
            },
            now_ns: 0,
        }
    }

    fn resolve(&self, t: Target) -> AppId {
        let forged = |index, generation| AppId { index, generation };
        match t {
            Target::Live(i) if !self.model.order.is_empty() => {
                self.model.order[usize::from(i) % self.model.order.len()]
            }
            Target::Stale(i) if !self.model.departed.is_empty() => {
                self.model.departed[usize::from(i) % self.model.departed.len()]
            }
            Target::Forged { index, generation } => forged(index, generation),
            _ => forged(7, 3),
        }
    }

    fn channel(&self, via: Via) -> Channel {
        match via {
            Via::Private(t) => Channel::Private(self.resolve(t)),
            Via::Control { privileged } => Channel::Control { privileged },
        }
    }

    fn resolve_req(&self, channel: Channel, r: &ReqGen) -> Request {
        match r {
            ReqGen::Plain(req) => req.clone(),
            ReqGen::Thread(category, tid) => {
                let pid_of = |app: AppId| self.model.apps.get(&app).map(|m| m.pid);
                let tid = match *tid {
                    TidGen::Own(n) => match channel {
                        Channel::Private(app) => pid_of(app).map_or(12_345, |pid| {
                            pid * TIDS_PER_PID + u32::from(n) % TIDS_PER_PID
                        }),
                        Channel::Control { .. } => 12_345,
                    },
                    TidGen::OtherApp(a, n) => {
                        let app = self.resolve(Target::Live(a));
                        pid_of(app)
                            .map_or(1, |pid| pid * TIDS_PER_PID + u32::from(n) % TIDS_PER_PID)
                    }
                    TidGen::Zero => 0,
                    TidGen::Any(t) => t,
                };
                Request::Thread {
                    category: *category,
                    tid,
                }
            }
            ReqGen::Foreground(t) => Request::WmForeground {
                app: self.resolve(*t),
            },
            ReqGen::Background(t) => Request::WmBackground {
                app: self.resolve(*t),
            },
            ReqGen::Cover(t, covered) => Request::WmCover {
                app: self.resolve(*t),
                covered: *covered,
            },
            ReqGen::FitCompose {
                surface_id,
                width,
                height,
                layers,
            } => {
                let win = self.window_of(channel);
                Request::Compose {
                    surface_id: *surface_id,
                    surface: Surface {
                        width: win.width * (u32::from(*width) + 1) / 256,
                        height: win.height * (u32::from(*height) + 1) / 256,
                        layers: layers.clone(),
                    },
                }
            }
            ReqGen::FitDraw { surface, x, y } => {
                let win = self.window_of(channel);
                let held = match channel {
                    Channel::Private(app) => self
                        .model
                        .apps
                        .get(&app)
                        .map(|m| m.surfaces.iter().collect::<Vec<_>>())
                        .unwrap_or_default(),
                    Channel::Control { .. } => Vec::new(),
                };
                let (surface_id, size) = if held.is_empty() {
                    (u32::from(*surface % 4), None)
                } else {
                    let (id, s) = held[usize::from(*surface) % held.len()];
                    (*id, Some((s.width, s.height)))
                };
                let (x, y) = match size {
                    Some((w, h)) => (
                        ((win.width - w) * u32::from(*x) / 255) as i32,
                        ((win.height - h) * u32::from(*y) / 255) as i32,
                    ),
                    None => (i32::from(*x % 8), i32::from(*y % 8)),
                };
                Request::Draw { surface_id, x, y }
            }
            ReqGen::FitDrawBatch(draws) => Request::DrawBatch(
                draws
                    .iter()
                    .map(|&(surface, x, y)| {
                        match self.resolve_req(channel, &ReqGen::FitDraw { surface, x, y }) {
                            Request::Draw { surface_id, x, y } => DrawItem { surface_id, x, y },
                            _ => unreachable!("a FitDraw is a DRAW"),
                        }
                    })
                    .collect(),
            ),
        }
    }

    /// The sender's window, or the screen for a channel without one.
    fn window_of(&self, channel: Channel) -> Rect {
        match channel {
            Channel::Private(app) => self.model.apps.get(&app).map(|m| m.rect),
            Channel::Control { .. } => None,
        }
        .unwrap_or(Rect::new(0, 0, SCREEN_W, SCREEN_H))
    }

    fn observe(&self) -> Observed {
        let esm = self
            .esm
            .apps()
            .map(|a| {
                (
                    a,
                    EventKind::ALL
                        .iter()
                        .map(|&k| self.esm.handler(a, k).expect("listed app"))
                        .collect(),
                    self.esm.input_suspended(a).expect("listed app"),
                    self.esm.queued_events(a).expect("listed app"),
                    self.esm.state(a).expect("listed app"),
                    self.esm.app_counters(a).expect("listed app"),
                )
            })
            .collect();
        Observed {
            displayed: self.kds.displayed().pixels().to_vec(),
            windows: self.kds.windows(),
            esm,
            listeners: EventKind::ALL
                .iter()
                .map(|&k| self.esm.listeners(k))
                .collect(),
            esm_counters: self.esm.counters(),
            kds_counters: self.kds.counters(),
        }
    }

    /// The model's prediction for `req` on `channel`.
    fn predict(&self, channel: Channel, req: &Request) -> Expect {
        use ErrorCode as E;
        let m = &self.model;
        match (channel, req) {
            (_, Request::Attach { .. }) => Expect::Refused(E::WrongChannel),
            (
                Channel::Control { .. },
                Request::Detach
                | Request::Compose { .. }
                | Request::Draw { .. }
                | Request::DrawBatch(_)
                | Request::Frame
                | Request::EsmRegister { .. }
                | Request::Thread { .. },
            ) => Expect::Refused(E::WrongChannel),
            (
                Channel::Private(_) | Channel::Control { privileged: false },
                Request::WmForeground { .. }
                | Request::WmBackground { .. }
                | Request::WmCover { .. }
                | Request::WmScreen { .. }
                | Request::Snapshot
                | Request::ListWindows,
            ) => Expect::Refused(E::NotPermitted),
            (Channel::Private(_), Request::Detach) => Expect::Ok,
            (
                Channel::Private(app),
                Request::Compose {
                    surface_id,
                    surface,
                },
            ) => {
                let Some(a) = m.apps.get(&app) else {
                    return Expect::Refused(E::NoWindow);
                };
                if surface.width > a.rect.width
                    || surface.height > a.rect.height
                    || (!a.surfaces.contains_key(surface_id) && a.surfaces.len() >= MAX_SURFACES)
                {
                    return Expect::Refused(E::Compose);
                }
                if m.over_surface_budget(app, *surface_id, surface) {
                    return Expect::Refused(E::Resources);
                }
                match flatten(surface) {
                    Some(flat) => Expect::Composed {
                        surface_id: *surface_id,
                        flat,
                    },
                    None => Expect::Refused(E::Compose),
                }
            }
            (Channel::Private(app), Request::Draw { surface_id, x, y }) => {
                let Some(a) = m.apps.get(&app) else {
                    return Expect::Refused(E::NoWindow);
                };
                let Some(s) = a.surfaces.get(surface_id) else {
                    return Expect::Refused(E::NoSurface);
                };
                let inside = *x >= 0
                    && *y >= 0
                    && i64::from(*x) + i64::from(s.width) <= i64::from(a.rect.width)
                    && i64::from(*y) + i64::from(s.height) <= i64::from(a.rect.height);
                if inside {
                    Expect::Ok
                } else {
                    Expect::Refused(E::OutsideWindow)
                }
            }
            (Channel::Private(app), Request::Frame) => {
                if m.apps.contains_key(&app) {
                    Expect::NoReply
                } else {
                    Expect::Refused(E::NoWindow)
                }
            }
            (Channel::Private(app), Request::DrawBatch(items)) => {
                let Some(a) = m.apps.get(&app) else {
                    return Expect::Refused(E::NoWindow);
                };
                for d in items {
                    let Some(s) = a.surfaces.get(&d.surface_id) else {
                        return Expect::Refused(E::NoSurface);
                    };
                    let inside = d.x >= 0
                        && d.y >= 0
                        && i64::from(d.x) + i64::from(s.width) <= i64::from(a.rect.width)
                        && i64::from(d.y) + i64::from(s.height) <= i64::from(a.rect.height);
                    if !inside {
                        return Expect::Refused(E::OutsideWindow);
                    }
                }
                Expect::Ok
            }
            (Channel::Private(app), Request::EsmRegister { .. }) => {
                if m.apps.contains_key(&app) {
                    Expect::Ok
                } else {
                    Expect::Refused(E::Esm)
                }
            }
            (Channel::Private(app), Request::Thread { tid, .. }) => match m.apps.get(&app) {
                None => Expect::Refused(E::NoWindow),
                Some(a) if !thread_is_callers(a.pid, *tid) => Expect::Refused(E::BadThread),
                Some(_) => Expect::Ok,
            },
            (Channel::Control { privileged: true }, Request::ListWindows) => Expect::Windows,
            (Channel::Control { privileged: true }, Request::Snapshot) => Expect::Snapshot,
            (Channel::Control { privileged: true }, Request::WmScreen { .. }) => Expect::Ok,
            (
                Channel::Control { privileged: true },
                Request::WmForeground { app }
                | Request::WmBackground { app }
                | Request::WmCover { app, .. },
            ) => {
                if m.apps.contains_key(app) {
                    Expect::Ok
                } else {
                    Expect::Refused(E::NoWindow)
                }
            }
        }
    }

    /// Applies a request the model says succeeds; returns the detached app, if any.
    fn apply(&mut self, channel: Channel, req: &Request, expect: &Expect) -> Option<AppId> {
        let m = &mut self.model;
        m.counters.requests += 1;
        match (channel, req) {
            (Channel::Private(app), Request::Detach) => {
                m.remove(app);
                return Some(app);
            }
            (Channel::Private(app), Request::Compose { .. }) => {
                let Expect::Composed { surface_id, flat } = expect else {
                    unreachable!("predicted above")
                };
                m.counters.composes += 1;
                m.apps
                    .get_mut(&app)
                    .expect("attached")
                    .surfaces
                    .insert(*surface_id, flat.clone());
            }
            (Channel::Private(app), Request::Draw { surface_id, x, y }) => {
                m.draw(app, *surface_id, *x, *y);
            }
            (Channel::Private(app), Request::DrawBatch(items)) => {
                for d in items {
                    m.draw(app, d.surface_id, d.x, d.y);
                }
                m.counters.draw_batches += 1;
            }
            (Channel::Private(app), Request::Frame) => {
                let a = m.apps.get_mut(&app).expect("attached");
                m.counters.frame_requests += 1;
                m.counters.frame_requests_coalesced += u64::from(a.frame_pending);
                a.frame_pending = true;
            }
            (Channel::Private(app), Request::EsmRegister { kind, handler }) => {
                m.apps.get_mut(&app).expect("attached").regs[kind.index()] = *handler;
            }
            (Channel::Private(app), Request::Thread { category, tid }) => {
                let i = ThreadCategory::ALL
                    .iter()
                    .position(|c| c == category)
                    .expect("listed");
                m.apps.get_mut(&app).expect("attached").threads[i] = Some(*tid);
            }
            (_, Request::WmForeground { app }) => {
                m.counters.wm_ops += 1;
                if m.foreground_app() != Some(*app) {
                    m.demote_all();
                }
                m.raise(*app);
                let a = m.apps.get_mut(app).expect("attached");
                a.stacking = Stacking::Foreground;
                a.visibility = Visibility::Visible;
            }
            (_, Request::WmBackground { app }) => {
                m.counters.wm_ops += 1;
                m.stack.retain(|a| a != app);
                m.stack.insert(0, *app);
                m.apps.get_mut(app).expect("attached").stacking = Stacking::Background;
            }
            (_, Request::WmCover { app, covered }) => {
                m.counters.wm_ops += 1;
                m.apps.get_mut(app).expect("attached").visibility = if *covered {
                    Visibility::Covered
                } else {
                    Visibility::Visible
                };
            }
            (_, Request::WmScreen { screen }) => {
                m.counters.wm_ops += 1;
                m.screen_off = *screen == Screen::Off;
            }
            _ => {}
        }
        None
    }

    /// One request through `Kds::handle`, checked against the model. Returns whether the socket
    /// layer would close the channel afterwards (`DETACH`).
    fn request(&mut self, channel: Channel, req: &Request) -> Result<bool, TestCaseError> {
        count(&HANDLED);
        let expect = self.predict(channel, req);
        let before = self.observe();
        let states_before = self.model.states();
        let outcome: Outcome = self.kds.handle(&mut self.esm, channel, req, &|pid, tid| {
            thread_is_callers(pid, tid)
        });
        let ty = request_type_of(req);
        if let Expect::Refused(code) = expect {
            count(&OUTCOMES[code as usize]);
            match &outcome.reply {
                Some(Reply::Error {
                    request_type,
                    code: got,
                    message,
                }) => {
                    check!(
                        *request_type == ty && *got == code as u32 && !message.is_empty(),
                        "{req:?} on {channel:?}: expected ERROR {code:?}, got {:?}",
                        outcome.reply
                    );
                }
                other => {
                    return Err(TestCaseError::fail(format!(
                        "{req:?} on {channel:?}: expected ERROR {code:?}, got {other:?}"
                    )))
                }
            }
            check!(
                outcome.pushes.is_empty() && outcome.detach.is_none() && !outcome.snapshot,
                "refused {req:?} asked for more: {outcome:?}"
            );
            // (c) nothing observable moved but the two counters (three for a surface budget).
            let budget = u64::from(code == ErrorCode::Resources);
            self.model.counters.requests += 1;
            self.model.counters.refused += 1;
            self.model.counters.surface_budget_refused += budget;
            let mut after = self.observe();
            check!(
                after.kds_counters.requests == before.kds_counters.requests + 1
                    && after.kds_counters.refused == before.kds_counters.refused + 1
                    && after.kds_counters.surface_budget_refused
                        == before.kds_counters.surface_budget_refused + budget,
                "refused {req:?}: counters {:?} -> {:?}",
                before.kds_counters,
                after.kds_counters
            );
            after.kds_counters.requests = before.kds_counters.requests;
            after.kds_counters.refused = before.kds_counters.refused;
            after.kds_counters.surface_budget_refused = before.kds_counters.surface_budget_refused;
            check!(
                after == before,
                "refused {req:?} on {channel:?} ({code:?}) changed state"
            );
            let damage = self.kds.take_damage();
            check!(damage.is_none(), "refused {req:?} left damage {damage:?}");
            return Ok(false);
        }
        count(&OUTCOMES[0]);
        count(&SUCCEEDED[ty as usize]);
        let reply_ok = match (&expect, &outcome.reply) {
            (Expect::NoReply, None) => true,
            (_, None) => false,
            (_, Some(reply)) => match (&expect, reply) {
                (Expect::Ok, Reply::Ok { request_type }) => *request_type == ty,
                (
                    Expect::Composed { surface_id, flat },
                    Reply::Composed {
                        surface_id: id,
                        width,
                        height,
                    },
                ) => id == surface_id && *width == flat.width && *height == flat.height,
                (Expect::Snapshot, Reply::Snapshot { width, height }) => {
                    *width == SCREEN_W && *height == SCREEN_H && outcome.snapshot
                }
                (Expect::Windows, Reply::Windows(list)) => *list == self.model.windows(),
                _ => false,
            },
        };
        check!(
            reply_ok,
            "{req:?} on {channel:?}: expected {expect:?}, got {:?}",
            outcome.reply
        );
        check!(
            outcome.snapshot == (expect == Expect::Snapshot),
            "snapshot flag wrong for {req:?}"
        );
        let detached = self.apply(channel, req, &expect);
        check!(
            outcome.detach == detached,
            "{req:?}: detach {:?}, model {detached:?}",
            outcome.detach
        );
        // Exactly the windows whose state changed are pushed, once each, with the new state.
        let mut want: Vec<(AppId, WindowState)> = self
            .model
            .states()
            .into_iter()
            .filter(|(a, s)| states_before.get(a) != Some(s))
            .collect();
        let mut got = outcome.pushes.clone();
        want.sort_by_key(|p| p.0);
        got.sort_by_key(|p| p.0);
        check!(got == want, "{req:?}: pushed {got:?}, changed {want:?}");
        self.model.counters.state_pushes += got.len() as u64;
        if let Some(app) = detached {
            // The socket layer removes the app from the ESM after the reply.
            let _ = self.esm.remove_app(app);
        }
        Ok(detached.is_some())
    }

    /// `ATTACH` as the socket layer runs it.
    fn attach(&mut self, width: u32, height: u32, name: &str) -> Checked {
        count(&ATTACHES);
        let before = self.observe();
        let app = self.esm.add_app();
        let pid = self.model.next_pid;
        self.model.next_pid += 1;
        let (w, h) = if width == 0 && height == 0 {
            (SCREEN_W, SCREEN_H)
        } else {
            (width, height)
        };
        let fits = w > 0 && h > 0 && w <= SCREEN_W && h <= SCREEN_H;
        let room = self.model.apps.len() < MAX_APPS;
        let states_before = self.model.states();
        let r = self
            .kds
            .attach(&mut self.esm, app, pid, width, height, name);
        self.model.counters.requests += 1;
        match r {
            Ok((rect, pushes)) => {
                check!(fits && room, "attach {width}x{height} accepted: {rect:?}");
                let want = Rect::new(
                    ((SCREEN_W - w) / 2) as i32,
                    ((SCREEN_H - h) / 2) as i32,
                    w,
                    h,
                );
                check!(rect == want, "attach {width}x{height}: window {rect:?}");
                let m = &mut self.model;
                m.demote_all();
                m.apps.insert(
                    app,
                    MApp {
                        pid,
                        name: name.to_owned(),
                        rect,
                        stacking: Stacking::Foreground,
                        visibility: Visibility::Visible,
                        buffer: vec![0; (w * h) as usize],
                        surfaces: BTreeMap::new(),
                        threads: [None; 4],
                        regs: [None; EventKind::COUNT],
                        frame_pending: false,
                    },
                );
                m.stack.push(app);
                m.order.push(app);
                m.counters.attached += 1;
                let mut want: Vec<(AppId, WindowState)> = m
                    .states()
                    .into_iter()
                    .filter(|(a, s)| states_before.get(a) != Some(s))
                    .collect();
                let mut got = pushes;
                want.sort_by_key(|p| p.0);
                got.sort_by_key(|p| p.0);
                check!(got == want, "attach pushed {got:?}, changed {want:?}");
                m.counters.state_pushes += got.len() as u64;
            }
            Err(e) => {
                let code = if room {
                    ErrorCode::WindowTooLarge
                } else {
                    ErrorCode::TooManyApps
                };
                check!(
                    !(fits && room) && e.code == code,
                    "attach {width}x{height} refused: {e:?}"
                );
                count(&OUTCOMES[code as usize]);
                self.model.counters.refused += 1;
                self.esm.remove_app(app).expect("just added");
                let mut after = self.observe();
                after.kds_counters.requests = before.kds_counters.requests;
                after.kds_counters.refused = before.kds_counters.refused;
                check!(after == before, "a refused attach changed state");
                check!(
                    self.kds.take_damage().is_none(),
                    "a refused attach left damage"
                );
            }
        }
        Ok(())
    }

    /// The app's channel or ESM connection closed: the socket layer removes it everywhere.
    fn close(&mut self, app: AppId) {
        self.kds.detach(app);
        let _ = self.esm.remove_app(app);
        self.model.remove(app);
    }

    /// Bytes arriving on `channel`, as the socket layer handles them: every complete message in
    /// order, a malformed one closing the channel (and, for a private channel, removing the app).
    fn bytes(&mut self, channel: Channel, bytes: &[u8]) -> Checked {
        let mut at = 0;
        loop {
            count(&DECODES);
            match wire::decode_request(&bytes[at..]) {
                Ok(None) => return Ok(()),
                Ok(Some((req, used))) => {
                    check!(
                        used >= HEADER_LEN && used <= bytes.len() - at,
                        "decode used {used} of {}",
                        bytes.len() - at
                    );
                    check_request_idempotent(&req)?;
                    at += used;
                    if let (
                        Channel::Control { .. },
                        Request::Attach {
                            width,
                            height,
                            name,
                        },
                    ) = (channel, &req)
                    {
                        self.attach(*width, *height, name)?;
                        continue;
                    }
                    if self.request(channel, &req)? {
                        return Ok(());
                    }
                }
                Err(_) => {
                    count(&MALFORMED);
                    if let Channel::Private(app) = channel {
                        if self.model.apps.contains_key(&app) {
                            self.close(app);
                        }
                    }
                    return Ok(());
                }
            }
        }
    }

    fn step(&mut self, op: &Op) -> Checked {
        count(&STEPS);
        self.now_ns += 1_000;
        let before = self.kds.displayed().pixels().to_vec();
        let mut region = None;
        match op {
            Op::Send { via, req, mode } => {
                let channel = self.channel(*via);
                region = self.region_of(channel);
                let req = self.resolve_req(channel, req);
                match mode {
                    Mode::Direct => {
                        self.request(channel, &req)?;
                    }
                    Mode::Encoded => {
                        let mut buf = Vec::new();
                        wire::encode_request(&req, &mut buf);
                        if well_formed(&req) {
                            check!(
                                wire::decode_request(&buf) == Ok(Some((req.clone(), buf.len()))),
                                "{req:?} does not survive the wire"
                            );
                        }
                        self.bytes(channel, &buf)?;
                    }
                    Mode::Mutated(ms) => {
                        let mut buf = Vec::new();
                        wire::encode_request(&req, &mut buf);
                        for m in ms {
                            mutate(&mut buf, *m);
                        }
                        self.bytes(channel, &buf)?;
                    }
                }
            }
            Op::Bytes { via, bytes } => {
                let channel = self.channel(*via);
                region = self.region_of(channel);
                self.bytes(channel, bytes)?;
            }
            Op::Attach {
                width,
                height,
                name,
            } => {
                if self.model.apps.len() < MAX_LIVE {
                    self.attach(*width, *height, name)?;
                }
            }
            Op::Flood { app, first, count } => {
                let channel = Channel::Private(self.resolve(Target::Live(*app)));
                region = self.region_of(channel);
                // Surfaces one to three pixels wide under a two-pixel layer.
                self.compose_in_a_row(channel, *first, *count, |id| (1 + id % 3, 1, 2, 1))?;
            }
            Op::Hoard { app, first, count } => {
                let channel = Channel::Private(self.resolve(Target::Live(*app)));
                region = self.region_of(channel);
                let win = self.window_of(channel);
                let (w, h) = (win.width, win.height);
                self.compose_in_a_row(channel, *first, *count, |_| (w, h, w, h))?;
            }
            Op::Close(t) => {
                let app = self.resolve(*t);
                self.close(app);
            }
            Op::Inject(raw) => {
                count(&INJECTS);
                let mut pushes = Vec::new();
                self.esm.inject(*raw, self.now_ns, |p| pushes.push(p));
                for p in pushes {
                    let Delivery::Event { handler, event } = p.delivery else {
                        return Err(TestCaseError::fail("an overflow marker pushed directly"));
                    };
                    let m = self.model.apps.get(&p.app);
                    check!(
                        m.and_then(|m| m.effective(event.kind)) == Some(handler),
                        "{:?} pushed to {} with {handler:?}; the model has {:?}",
                        event.kind,
                        p.app,
                        m.map(|m| (m.stacking, m.regs))
                    );
                }
            }
            Op::Wait(t) => {
                let app = self.resolve(*t);
                let r = self.esm.wait(app);
                check!(
                    r.is_ok() == self.model.apps.contains_key(&app),
                    "wait({app}) = {r:?}"
                );
            }
        }
        self.check_after(&before, region.as_deref())
    }

    /// For a private channel: the screen pixels its requests may change.
    /// `COMPOSE`s of surfaces `first..first + count` on `channel`, each `size(id)` = (width,
    /// height, and the size of its one solid layer at the origin), as `Flood` and `Hoard` send.
    fn compose_in_a_row(
        &mut self,
        channel: Channel,
        first: u32,
        count: u8,
        size: impl Fn(u32) -> (u32, u32, u32, u32),
    ) -> Result<(), TestCaseError> {
        for id in first..first + u32::from(count) {
            let (width, height, layer_w, layer_h) = size(id);
            let surface = Surface {
                width,
                height,
                layers: vec![Layer {
                    z: 0,
                    rect: Rect::new(0, 0, layer_w, layer_h),
                    fill: Fill::Solid(0xff00_0000 | id),
                }],
            };
            self.request(
                channel,
                &Request::Compose {
                    surface_id: id,
                    surface,
                },
            )?;
        }
        Ok(())
    }

    fn region_of(&self, channel: Channel) -> Option<Vec<bool>> {
        match channel {
            Channel::Private(app) => Some(self.model.may_change(app)),
            Channel::Control { .. } => None,
        }
    }

    fn check_after(&mut self, before: &[u32], region: Option<&[bool]>) -> Checked {
        let shown = self.kds.displayed().pixels().to_vec();
        let damage = self.kds.take_damage();
        for (i, (a, b)) in before.iter().zip(&shown).enumerate() {
            if a == b {
                continue;
            }
            let (x, y) = (
                (i % SCREEN_W as usize) as i32,
                (i / SCREEN_W as usize) as i32,
            );
            // (b) only the sender's own visible pixels.
            if let Some(region) = region {
                check!(
                    region[i],
                    "pixel ({x}, {y}) changed outside the sender's visible window"
                );
            }
            check!(
                damage.is_some_and(|d| d.contains(Rect::new(x, y, 1, 1))),
                "pixel ({x}, {y}) changed outside the damage {damage:?}"
            );
        }
        check!(
            shown == self.model.displayed(),
            "the screen differs from the model's stacking"
        );
        check!(
            self.kds.windows() == self.model.windows(),
            "windows {:?}\nmodel   {:?}",
            self.kds.windows(),
            self.model.windows()
        );
        // (d)
        if let Err(e) = self.esm.check_accounting() {
            return Err(TestCaseError::fail(format!("ESM accounting: {e}")));
        }
        // (e) and the registrations as the app made them.
        check!(
            self.esm.apps().count() == self.model.apps.len(),
            "the ESM has {} apps, the display server {}",
            self.esm.apps().count(),
            self.model.apps.len()
        );
        for (&app, m) in &self.model.apps {
            let suspended = self.esm.input_suspended(app);
            check!(
                suspended == Ok(m.stacking == Stacking::Background),
                "{app}: suspended {suspended:?}, stacking {:?}",
                m.stacking
            );
            for k in EventKind::ALL {
                let h = self.esm.handler(app, k);
                check!(
                    h == Ok(m.effective(k)),
                    "{app} {k:?}: ESM has {h:?}, model {:?}",
                    m.effective(k)
                );
            }
        }
        for k in EventKind::ALL {
            let n = self
                .model
                .apps
                .values()
                .filter(|m| m.effective(k).is_some())
                .count();
            check!(
                self.esm.listeners(k) == n,
                "{k:?}: {} listeners, model {n}",
                self.esm.listeners(k)
            );
        }
        let foregrounds = self
            .model
            .apps
            .values()
            .filter(|m| m.stacking == Stacking::Foreground)
            .count();
        check!(foregrounds <= 1, "{foregrounds} windows in front");
        // (f)
        let c = self.kds.counters();
        // How the server brings the screen up to date (restacking or direct scanout) is its own
        // choice: the model predicts what is displayed (checked below), not those counters.
        let mut model = self.model.counters;
        model.restacks = c.restacks;
        model.restacked_pixels = c.restacked_pixels;
        model.restacks_skipped = c.restacks_skipped;
        check!(c == model, "counters {c:?}\nmodel    {model:?}");
        check!(
            c.restacked_pixels >= c.restacks,
            "a restack of no pixel: {c:?}"
        );
        check!(c.requests >= c.refused, "more refused than requests: {c:?}");
        for &app in &self.model.order {
            for (i, cat) in ThreadCategory::ALL.iter().enumerate() {
                check!(
                    self.kds.thread(app, *cat) == self.model.apps[&app].threads[i],
                    "{app} {cat:?} thread"
                );
            }
            check!(
                self.kds.pid(app) == Some(self.model.apps[&app].pid),
                "{app} pid"
            );
        }
        Ok(())
    }
}

/// A request the encoder writes in a form the decoder gives back unchanged.
fn well_formed(req: &Request) -> bool {
    match req {
        Request::Attach { name, .. } => name.len() <= MAX_NAME_LEN,
        Request::Compose { surface, .. } => {
            surface.layers.len() <= MAX_LAYERS
                && surface.layers.iter().all(|l| match &l.fill {
                    Fill::Pixels(p) => p.len() as u64 == l.rect.area(),
                    Fill::Solid(_) => true,
                })
        }
        _ => true,
    }
}

/// What decoded once encodes to bytes that decode to the same request.
fn check_request_idempotent(req: &Request) -> Checked {
    let mut buf = Vec::new();
    wire::encode_request(req, &mut buf);
    check!(
        wire::decode_request(&buf) == Ok(Some((req.clone(), buf.len()))),
        "decoded {req:?} does not re-encode to itself"
    );
    Ok(())
}

fn mutate(buf: &mut Vec<u8>, m: Mutation) {
    match m {
        Mutation::Flip { at, xor } => {
            if !buf.is_empty() {
                let i = at % buf.len();
                buf[i] ^= xor;
            }
        }
        Mutation::Truncate { keep } => {
            let keep = keep % (buf.len() + 1);
            buf.truncate(keep);
        }
        Mutation::Append { bytes, n } => buf.extend_from_slice(&bytes[..usize::from(n)]),
        Mutation::SetLength(len) => {
            if buf.len() >= HEADER_LEN {
                buf[4..8].copy_from_slice(&len.to_le_bytes());
            }
        }
        Mutation::SetType(ty) => {
            if buf.len() >= 4 {
                buf[..4].copy_from_slice(&ty.to_le_bytes());
            }
        }
        Mutation::Overwrite { at, word } => {
            if buf.len() >= 4 {
                let i = at % (buf.len() - 3);
                buf[i..i + 4].copy_from_slice(&word.to_le_bytes());
            }
        }
    }
}

fn run_case(initial: &[(u32, u32)], ops: &[Op]) -> Checked {
    count(&CASES);
    let mut h = Harness::new();
    for (i, &(w, hh)) in initial.iter().enumerate() {
        h.attach(w, hh, &format!("app{i}"))?;
    }
    let blank = vec![BACKDROP_ARGB; (SCREEN_W * SCREEN_H) as usize];
    h.check_after(&blank, None)?;
    for op in ops {
        h.step(op)?;
    }
    Ok(())
}

fn seeded_runner(cases: u32, seed: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&seed.wrapping_add(i as u64).to_le_bytes());
    }
    TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

#[test]
fn commands_from_hostile_channels_keep_every_invariant() {
    let mut runner = seeded_runner(SHORT_CASES, DEFAULT_SEED);
    runner
        .run(&case(SHORT_STEPS), |(initial, ops)| {
            run_case(&initial, &ops)
        })
        .unwrap();
    // A run that never reaches a refusal proves nothing about it: every code an app or a
    // window manager can provoke here must have come up (TooManyApps needs 64 apps).
    let missing: Vec<ErrorCode> = ErrorCode::ALL
        .into_iter()
        // Malformed comes from the socket layer. Resources here is the app's surface budget;
        // all apps' budget needs more apps than `MAX_LIVE` on this screen (the server's unit
        // tests reach it).
        .filter(|c| !matches!(c, ErrorCode::Malformed | ErrorCode::TooManyApps))
        .filter(|&c| {
            c != ErrorCode::WindowTooLarge && OUTCOMES[c as usize].load(Ordering::Relaxed) == 0
        })
        .collect();
    assert!(missing.is_empty(), "never refused with {missing:?}");
    // And every request type an app or the window manager can have accepted was accepted.
    let never: Vec<u32> = (wire::request_type::DETACH..=wire::request_type::DRAW_BATCH)
        .filter(|&t| SUCCEEDED[t as usize].load(Ordering::Relaxed) == 0)
        .collect();
    assert!(never.is_empty(), "request types never accepted: {never:?}");
    assert!(MALFORMED.load(Ordering::Relaxed) > 0);
}

// ------------------------------------------------------------------------------------------------
// The long run.

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
#[ignore = "long fuzz run; see the module comment"]
fn long_fuzz_of_commands_and_replies() {
    let cases = env_u64("LULL_FUZZ_CASES")
        .map_or(DEFAULT_LONG_CASES, |n| u32::try_from(n).unwrap_or(u32::MAX));
    let seed = env_u64("LULL_FUZZ_SEED").unwrap_or(DEFAULT_SEED);
    let started = std::time::Instant::now();
    let mut runner = seeded_runner(cases, seed);
    let result = runner.run(&case(LONG_STEPS), |(initial, ops)| run_case(&initial, &ops));
    let mut runner = seeded_runner(cases.saturating_mul(4), seed ^ 1);
    let replies = runner.run(&reply_case(), |bytes| check_reply_bytes(&bytes));
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    println!(
        "seed {seed:#x}: {} cases, {} steps, {} requests handled, {} decodes ({} malformed), \
         {} attaches, {} injected events; {} reply inputs; {:.1} s",
        load(&CASES),
        load(&STEPS),
        load(&HANDLED),
        load(&DECODES),
        load(&MALFORMED),
        load(&ATTACHES),
        load(&INJECTS),
        load(&REPLY_INPUTS),
        started.elapsed().as_secs_f64()
    );
    println!("succeeded: {}", load(&OUTCOMES[0]));
    for t in wire::request_type::ATTACH..=wire::request_type::DRAW_BATCH {
        println!("  request type {t}: {}", load(&SUCCEEDED[t as usize]));
    }
    // Malformed bytes never reach the handlers: they are the `malformed` decodes above.
    for c in ErrorCode::ALL
        .into_iter()
        .filter(|&c| c != ErrorCode::Malformed)
    {
        println!("refused {c:?}: {}", load(&OUTCOMES[c as usize]));
    }
    result.unwrap();
    replies.unwrap();
}
