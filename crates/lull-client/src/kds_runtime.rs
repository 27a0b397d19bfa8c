//! The KDS client runtime (seed 000, figure 19): the four threads the display server gives an
//! app — event, drawing, foreground, background — created by the library at attach time. The
//! app hands a thread a function with [`KdsApp::run_on`]; event handlers are registered with
//! [`KdsApp::esm_register`] and run on the event thread, which blocks in `esm_wait`.
//!
//! guiS table 1, cooperative half: with guiS on, a thread passes [`ThreadCtx::gate`] (and every
//! `compose`/`draw`, which call it) only while table 1 lets its category run — drawing while the
//! window can be seen, foreground while in front, background always; the event thread runs only
//! when the ESM pushed it an event, because it sleeps in `esm_wait` otherwise. A parked thread
//! sleeps on a condition variable with no timeout and wakes when a `WINDOW_STATE` push allows it.
//! Threads that ignore the gate are the kernel's to stop (the freezer, in `lulld`).
//!
//! One more thread, the channel thread, reads the private channel: it hands each reply to the
//! thread that asked and applies each window-state push at once, so a parked thread wakes when
//! it may run even though no thread of the app is reading at that moment. It blocks in `recv`.
//!
//! **Frame pacing** ([`ThreadCtx::next_frame`], `lull_kds::pacing`): a thread about to draw a
//! frame asks the runtime first. The first frame in a refresh period of the screen goes at once;
//! a later one sends `FRAME` (once) and sleeps until the channel thread hands over
//! `FRAME_DONE` at the next refresh boundary. So an app draws at most once per refresh, and a
//! change after a quiet spell is drawn without waiting. While input is dense — the frame being
//! drawn had to wait — the next frame's `FRAME` is sent ahead, in the same write as this frame's
//! first `DRAW` or `DRAW_BATCH`, so the server wakes once for both (as a Wayland client asks for its frame
//! callback with each commit); when input stops, that costs one unused `FRAME_DONE`.
//!
//! Each waiter has a condition variable of its own — the thread waiting for a reply, each of
//! the four categories, and [`KdsApp::wait_until`] — so a reply or a handled event wakes only
//! the thread it concerns: an idle foreground or background thread sleeps through the app's
//! input and drawing (with one shared variable it woke about twice per event).

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use lull_kds::pacing::FramePacer;
use lull_kds::wire::{DrawItem, Reply, Request};
use lull_kds::{Rect, Surface};
use lull_model::{AppEvent, AppId, EventKind, HandlerId, ThreadCategory, WindowState};
use lull_os::sys;
use lull_sched::guis;

use crate::client::{Delivery, EsmClient, KindHandlers};
use crate::kds_client::{self, ChannelReader, ChannelWriter, KdsClientError};

type Handler = Box<dyn FnMut(&AppEvent) + Send>;
type Work = Box<dyn FnOnce(&ThreadCtx) + Send>;

/// What the runtime counts, per app (also in `lull-app`'s report, read back by the harness).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct RuntimeCounters {
    pub events: u64,
    pub overflow_markers: u64,
    pub dropped_reported: u64,
    /// Events naming a handler the app never registered (a server fault; counted, not trusted).
    pub unknown_handler: u64,
    pub state_pushes: u64,
    /// Times a thread found its category gated and parked.
    pub parks: u64,
    pub composes: u64,
    pub draws: u64,
    /// `DRAW_BATCH` requests (their draws count in `draws`).
    #[serde(default)]
    pub draw_batches: u64,
    /// Frames let through by [`ThreadCtx::next_frame`]; of them, those that waited for
    /// `FRAME_DONE` (the rest were the first of their refresh period).
    #[serde(default)]
    pub frames: u64,
    #[serde(default)]
    pub frames_waited: u64,
    /// `FRAME` requests sent.
    #[serde(default)]
    pub frame_requests: u64,
    /// Of them, sent ahead with a waited frame's first draw (input dense).
    #[serde(default)]
    pub frame_requests_ahead: u64,
    /// Events still queued when the app began to detach, passed over without running their
    /// handler: an app that stops does not work through a backlog nobody will see drawn (its
    /// drawing thread has already ended).
    #[serde(default)]
    pub unhandled_at_stop: u64,
}

/// Index of a category in per-category arrays.
fn slot(c: ThreadCategory) -> usize {
    ThreadCategory::ALL
        .iter()
        .position(|x| *x == c)
        .expect("every category is listed")
}

struct State {
    window: WindowState,
    /// guiS on: gates block as table 1 says; off: they never block.
    guis: bool,
    stopping: bool,
    server_gone: bool,
    /// The event thread is running a handler (the ESM pushed it an event).
    event_pending: bool,
    reply: Option<Result<Reply, KdsClientError>>,
    work: [Option<Work>; 4],
    /// Bumped each time a function is handed to a thread; a running function whose generation
    /// is older has been replaced.
    generation: [u64; 4],
    handlers: Vec<Option<Handler>>,
    counters: RuntimeCounters,
    /// Threads blocked in [`KdsApp::wait_until`]; the progress variable is signalled only when
    /// there are some, so counting costs no system call.
    progress_waiters: u32,
    /// One frame per refresh period of the screen.
    pacer: FramePacer,
    /// A `FRAME` was sent and its `FRAME_DONE` has not come.
    frame_requested: bool,
    /// Input is dense (the frame being drawn had to wait): its first draw carries the next
    /// frame's `FRAME` ([`Shared::request_then_frame`]).
    frame_ahead: bool,
}

struct Shared {
    app: AppId,
    window_rect: Rect,
    state: Mutex<State>,
    /// The thread waiting for its reply (one at a time: the writer lock serialises requests).
    reply_ready: Condvar,
    /// Per category: new work, a gate that may open, a sleep to cut short.
    category_changed: [Condvar; 4],
    /// The counters moved ([`KdsApp::wait_until`]).
    progress: Condvar,
    /// `FRAME_DONE` arrived ([`ThreadCtx::next_frame`]).
    frame_ready: Condvar,
    /// Serialises request/reply pairs on the channel.
    writer: Mutex<ChannelWriter>,
    /// The event thread's table of which handler each kind runs (for events it reads from a
    /// ring or a device itself), set before each registration goes to the server.
    kind_handlers: Arc<KindHandlers>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A thread that panicked while holding the lock leaves the state consistent (every
        // update is a single assignment), so the poison is ignored.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn wait_on<'a>(cv: &Condvar, g: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        cv.wait(g)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Wakes the threads of `category` (work handed over, or their gate may have opened).
    fn wake(&self, category: ThreadCategory) {
        self.category_changed[slot(category)].notify_all();
    }

    /// Wakes whoever waits for the counters; call with the lock held, after changing them.
    fn counted(&self, g: &State) {
        if g.progress_waiters > 0 {
            self.progress.notify_all();
        }
    }

    /// Wakes every waiter: a change all of them must see (window state, stop, server gone).
    fn wake_all(&self) {
        self.reply_ready.notify_all();
        self.frame_ready.notify_all();
        for cv in &self.category_changed {
            cv.notify_all();
        }
        self.progress.notify_all();
    }

    /// Sends `req` and waits for its reply from the channel thread.
    fn request(&self, req: &Request) -> Result<Reply, KdsClientError> {
        let mut w = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.lock().server_gone {
            return Err(KdsClientError::ServerGone);
        }
        w.send(req)?;
        self.await_reply()
    }

    /// Waits for the reply to the request just sent (the writer lock held by the caller).
    fn await_reply(&self) -> Result<Reply, KdsClientError> {
        let mut g = self.lock();
        loop {
            if let Some(r) = g.reply.take() {
                return r.and_then(kds_client::refused);
            }
            if g.server_gone {
                return Err(KdsClientError::ServerGone);
            }
            g = Self::wait_on(&self.reply_ready, g);
        }
    }

    /// Sends `req` and waits for its reply, as [`Shared::request`]; when the frame being drawn
    /// had to wait (input is dense), `FRAME` for the next frame goes in the same write, so the
    /// server wakes once for both.
    fn request_then_frame(&self, req: &Request) -> Result<Reply, KdsClientError> {
        let ahead = {
            let mut g = self.lock();
            let ahead = std::mem::take(&mut g.frame_ahead) && !g.frame_requested;
            if ahead {
                g.frame_requested = true;
                g.counters.frame_requests += 1;
                g.counters.frame_requests_ahead += 1;
            }
            ahead
        };
        if !ahead {
            return self.request(req);
        }
        let mut w = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.lock().server_gone {
            return Err(KdsClientError::ServerGone);
        }
        // The request first: its reply is the one awaited; FRAME has none.
        if let Err(e) = w.send_pair(req, &Request::Frame) {
            self.lock().frame_requested = false;
            return Err(e);
        }
        self.await_reply()
    }

    /// [`Shared::expect_ok`] through [`Shared::request_then_frame`] (a frame's draws).
    fn expect_ok_then_frame(&self, req: &Request) -> Result<(), KdsClientError> {
        match self.request_then_frame(req)? {
            Reply::Ok { .. } => Ok(()),
            _ => Err(KdsClientError::Unexpected {
                got: "another reply",
                want: "OK",
            }),
        }
    }

    fn expect_ok(&self, req: &Request) -> Result<(), KdsClientError> {
        match self.request(req)? {
            Reply::Ok { .. } => Ok(()),
            _ => Err(KdsClientError::Unexpected {
                got: "another reply",
                want: "OK",
            }),
        }
    }

    fn may_run(&self, g: &State, category: ThreadCategory) -> bool {
        !g.guis || guis::may_run(category, g.window, g.event_pending)
    }
}

/// What a function handed to a KDS thread can do.
pub struct ThreadCtx {
    shared: Arc<Shared>,
    category: ThreadCategory,
    generation: u64,
}

impl std::fmt::Debug for ThreadCtx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ThreadCtx({}, {})", self.shared.app, self.category)
    }
}

impl ThreadCtx {
    #[must_use]
    pub fn category(&self) -> ThreadCategory {
        self.category
    }

    #[must_use]
    pub fn app(&self) -> AppId {
        self.shared.app
    }

    /// The app's window on the screen.
    #[must_use]
    pub fn window(&self) -> Rect {
        self.shared.window_rect
    }

    #[must_use]
    pub fn window_state(&self) -> WindowState {
        self.shared.lock().window
    }

    /// The app is detaching, or another function was handed to this thread: return soon.
    #[must_use]
    pub fn should_stop(&self) -> bool {
        let g = self.shared.lock();
        g.stopping || g.server_gone || g.generation[slot(self.category)] != self.generation
    }

    /// guiS table 1: blocks while this thread's category may not run. Returns `false` when the
    /// function should return instead ([`ThreadCtx::should_stop`]).
    pub fn gate(&self) -> bool {
        let s = &self.shared;
        let mut g = s.lock();
        let mut parked = false;
        loop {
            if g.stopping || g.server_gone || g.generation[slot(self.category)] != self.generation {
                return false;
            }
            if s.may_run(&g, self.category) {
                return true;
            }
            if !parked {
                parked = true;
                g.counters.parks += 1;
                s.counted(&g);
            }
            g = Shared::wait_on(&s.category_changed[slot(self.category)], g);
        }
    }

    /// Sleeps until the monotonic instant `deadline_ns`, waking early when the app stops.
    /// Returns `false` when it woke because the function should return.
    pub fn sleep_until_ns(&self, deadline_ns: u64) -> bool {
        let s = &self.shared;
        let mut g = s.lock();
        loop {
            if g.stopping || g.server_gone || g.generation[slot(self.category)] != self.generation {
                return false;
            }
            let now = sys::monotonic_ns();
            if now >= deadline_ns {
                return true;
            }
            let wait = std::time::Duration::from_nanos(deadline_ns - now);
            g = s.category_changed[slot(self.category)]
                .wait_timeout(g, wait)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// `COMPOSE` after passing the gate.
    ///
    /// # Errors
    /// [`KdsClientError::Refused`] from the server; `ServerGone`, or `Unexpected` when the gate
    /// returned because the app is stopping.
    pub fn compose(&self, surface_id: u32, surface: Surface) -> Result<(), KdsClientError> {
        self.gated()?;
        let r = self.shared.request(&Request::Compose {
            surface_id,
            surface,
        })?;
        let mut g = self.shared.lock();
        g.counters.composes += 1;
        self.shared.counted(&g);
        drop(g);
        match r {
            Reply::Composed { .. } => Ok(()),
            _ => Err(KdsClientError::Unexpected {
                got: "another reply",
                want: "COMPOSED",
            }),
        }
    }

    /// Frame pacing: blocks until this thread may draw its next frame, then counts it as drawn
    /// in the current refresh period. At once when no frame was drawn in this period yet;
    /// otherwise `FRAME` is sent (once, however many threads wait) and the call returns when
    /// `FRAME_DONE` comes at the next boundary — which the server holds while the window cannot
    /// be seen. Passes the gate first.
    ///
    /// # Errors
    /// [`KdsClientError::Stopping`] when the app is stopping or the function was replaced;
    /// `ServerGone`, or a socket error sending `FRAME`.
    pub fn next_frame(&self) -> Result<(), KdsClientError> {
        self.gated()?;
        let s = &self.shared;
        let mut g = s.lock();
        let mut waited = false;
        loop {
            if g.stopping || g.generation[slot(self.category)] != self.generation {
                return Err(KdsClientError::Stopping);
            }
            if g.server_gone {
                return Err(KdsClientError::ServerGone);
            }
            let now = sys::monotonic_ns();
            if g.pacer.may_draw(now) {
                // Input is dense when this frame had to wait: then the next frame's FRAME goes
                // ahead with this frame's draw. (Sending it for every frame in consecutive
                // refreshes too cost more than it saved when input was sparse: at tracking-60s
                // all 525 such requests went unused, each waking the daemon, the channel
                // thread and the drawing thread once.)
                g.frame_ahead = waited;
                g.pacer.drew(now);
                g.counters.frames += 1;
                g.counters.frames_waited += u64::from(waited);
                s.counted(&g);
                return Ok(());
            }
            if !g.frame_requested {
                g.frame_requested = true;
                g.counters.frame_requests += 1;
                drop(g);
                // Sent outside the state lock (the channel thread needs it to hand over the
                // answer); the writer lock orders it with other requests.
                let sent = s
                    .writer
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .send(&Request::Frame);
                g = s.lock();
                if let Err(e) = sent {
                    g.frame_requested = false;
                    return Err(e);
                }
                continue;
            }
            waited = true;
            g = Shared::wait_on(&s.frame_ready, g);
        }
    }

    /// While a `FRAME` sent ahead is unanswered, blocks until its `FRAME_DONE`; returns at once
    /// otherwise. A drawing loop calls it before waiting for its next change: under dense input
    /// the change is then already there when the frame may be drawn, and the handler's wake-up
    /// finds nobody waiting — one wake-up of the drawing thread per frame fewer.
    ///
    /// # Errors
    /// As [`ThreadCtx::next_frame`].
    pub fn await_frame_done(&self) -> Result<(), KdsClientError> {
        let s = &self.shared;
        let mut g = s.lock();
        loop {
            if g.stopping || g.generation[slot(self.category)] != self.generation {
                return Err(KdsClientError::Stopping);
            }
            if g.server_gone {
                return Err(KdsClientError::ServerGone);
            }
            if !g.frame_requested {
                return Ok(());
            }
            g = Shared::wait_on(&s.frame_ready, g);
        }
    }

    /// `DRAW_BATCH` after passing the gate: the draws in order, as one message and one reply
    /// per [`lull_kds::wire::MAX_DRAW_BATCH`] of them, each message refused whole if any of its
    /// draws would be. An empty batch sends nothing.
    ///
    /// # Errors
    /// As [`ThreadCtx::compose`].
    pub fn draw_batch(&self, items: &[DrawItem]) -> Result<(), KdsClientError> {
        if items.is_empty() {
            return Ok(());
        }
        self.gated()?;
        for chunk in items.chunks(lull_kds::wire::MAX_DRAW_BATCH) {
            self.shared
                .expect_ok_then_frame(&Request::DrawBatch(chunk.to_vec()))?;
            let mut g = self.shared.lock();
            g.counters.draws += chunk.len() as u64;
            g.counters.draw_batches += 1;
            self.shared.counted(&g);
        }
        Ok(())
    }

    /// `DRAW` after passing the gate.
    ///
    /// # Errors
    /// As [`ThreadCtx::compose`].
    pub fn draw(&self, surface_id: u32, x: i32, y: i32) -> Result<(), KdsClientError> {
        self.gated()?;
        self.shared
            .expect_ok_then_frame(&Request::Draw { surface_id, x, y })?;
        let mut g = self.shared.lock();
        g.counters.draws += 1;
        self.shared.counted(&g);
        drop(g);
        Ok(())
    }

    fn gated(&self) -> Result<(), KdsClientError> {
        if self.gate() {
            Ok(())
        } else {
            Err(KdsClientError::Stopping)
        }
    }
}

/// An attached app with its four KDS threads.
pub struct KdsApp {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for KdsApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KdsApp({})", self.shared.app)
    }
}

/// How to attach.
#[derive(Clone, Debug)]
pub struct AppOptions {
    pub width: u32,
    pub height: u32,
    pub name: String,
    /// Apply guiS table 1 in the runtime's gates (on by default; off for the baselines).
    pub guis: bool,
}

impl KdsApp {
    /// Attaches to the display server at `path`, starts the event, drawing, foreground,
    /// background and channel threads, and declares each KDS thread to the server.
    ///
    /// # Errors
    /// As [`kds_client::attach`]; a thread that cannot be started is an I/O error.
    pub fn attach(path: &Path, options: &AppOptions) -> Result<KdsApp, KdsClientError> {
        let a = kds_client::attach(path, options.width, options.height, &options.name)?;
        let (reader, writer, states) = a.channel.split()?;
        let window = states.last().copied().unwrap_or(WindowState::FRONT);
        let shared = Arc::new(Shared {
            app: a.app,
            window_rect: a.window,
            state: Mutex::new(State {
                window,
                guis: options.guis,
                stopping: false,
                server_gone: false,
                event_pending: false,
                reply: None,
                work: [None, None, None, None],
                generation: [0; 4],
                handlers: Vec::new(),
                counters: RuntimeCounters::default(),
                progress_waiters: 0,
                pacer: FramePacer::new(a.refresh_period_ns),
                frame_requested: false,
                frame_ahead: false,
            }),
            reply_ready: Condvar::new(),
            category_changed: std::array::from_fn(|_| Condvar::new()),
            progress: Condvar::new(),
            frame_ready: Condvar::new(),
            writer: Mutex::new(writer),
            kind_handlers: a.esm.kind_handlers(),
        });
        // The app exists before its threads do, so that a thread that cannot be started drops
        // it: the started threads are told to stop and the channel closes (the server detaches).
        let esm = a.esm.into_parts();
        let mut app = KdsApp {
            shared: Arc::clone(&shared),
            threads: Vec::new(),
        };
        let s = Arc::clone(&shared);
        app.threads
            .push(spawn("kds-channel", move || channel_thread(&s, reader))?);
        let s = Arc::clone(&shared);
        let (tx, rx) = std::sync::mpsc::channel();
        app.threads.push(spawn("kds-event", move || {
            let _ = tx.send(sys::gettid());
            event_thread(&s, EsmClient::from_parts(esm));
        })?);
        let mut tids = vec![(ThreadCategory::Event, rx.recv().unwrap_or(0))];
        for category in [
            ThreadCategory::Drawing,
            ThreadCategory::Foreground,
            ThreadCategory::Background,
        ] {
            let s = Arc::clone(&shared);
            let (tx, rx) = std::sync::mpsc::channel();
            app.threads.push(spawn(thread_name(category), move || {
                let _ = tx.send(sys::gettid());
                work_thread(&s, category);
            })?);
            tids.push((category, rx.recv().unwrap_or(0)));
        }
        for (category, tid) in tids {
            let tid = u32::try_from(tid).unwrap_or(0);
            app.shared.expect_ok(&Request::Thread { category, tid })?;
        }
        Ok(app)
    }

    #[must_use]
    pub fn app(&self) -> AppId {
        self.shared.app
    }

    /// The window on the screen.
    #[must_use]
    pub fn window(&self) -> Rect {
        self.shared.window_rect
    }

    #[must_use]
    pub fn window_state(&self) -> WindowState {
        self.shared.lock().window
    }

    #[must_use]
    pub fn counters(&self) -> RuntimeCounters {
        self.shared.lock().counters
    }

    /// `esm_register` through the display server (figure 19): `handler` runs on the event
    /// thread for every event of `kind`. The server sets it aside while the app is in the
    /// background and puts it back in front.
    ///
    /// # Errors
    /// As [`kds_client::KdsChannel::request`].
    pub fn esm_register(
        &self,
        kind: EventKind,
        handler: impl FnMut(&AppEvent) + Send + 'static,
    ) -> Result<HandlerId, KdsClientError> {
        let id = {
            let mut g = self.shared.lock();
            g.handlers.push(Some(Box::new(handler)));
            HandlerId(u32::try_from(g.handlers.len() - 1).unwrap_or(u32::MAX))
        };
        // Before the server routes a producer here: its first ring event finds the handler.
        self.shared.kind_handlers.set(kind, Some(id));
        self.shared.expect_ok(&Request::EsmRegister {
            kind,
            handler: Some(id),
        })?;
        Ok(id)
    }

    /// `esm_register(kind, NULL)`.
    ///
    /// # Errors
    /// As [`KdsApp::esm_register`].
    pub fn esm_unregister(&self, kind: EventKind) -> Result<(), KdsClientError> {
        self.shared.expect_ok(&Request::EsmRegister {
            kind,
            handler: None,
        })?;
        // After the server ended the route: a ring event still in flight runs the old handler.
        self.shared.kind_handlers.set(kind, None);
        Ok(())
    }

    /// Hands `f` to the drawing, foreground or background thread (figure 19). A function the
    /// thread has not started yet is replaced; a running one sees [`ThreadCtx::should_stop`].
    ///
    /// # Errors
    /// [`KdsClientError::Unexpected`] for the event thread, which runs handlers only.
    pub fn run_on(
        &self,
        category: ThreadCategory,
        f: impl FnOnce(&ThreadCtx) + Send + 'static,
    ) -> Result<(), KdsClientError> {
        if category == ThreadCategory::Event {
            return Err(KdsClientError::Unexpected {
                got: "the event thread",
                want: "the drawing, foreground or background thread",
            });
        }
        let mut g = self.shared.lock();
        let i = slot(category);
        g.work[i] = Some(Box::new(f));
        g.generation[i] += 1;
        drop(g);
        self.shared.wake(category);
        Ok(())
    }

    /// Declares that kernel thread `tid` (of this process) does the work of `category` — for an
    /// app whose event loop is its own thread rather than the runtime's (the baselines), so the
    /// server's accounting and guiS see the thread that really runs it.
    ///
    /// # Errors
    /// [`lull_kds::wire::ErrorCode::BadThread`] for a thread of another process.
    pub fn declare_thread(&self, category: ThreadCategory, tid: i32) -> Result<(), KdsClientError> {
        let tid = u32::try_from(tid).unwrap_or(0);
        self.shared.expect_ok(&Request::Thread { category, tid })
    }

    /// A context for calling `compose`/`draw` from a thread of the app's own (not one of the
    /// four), gated as `category`.
    #[must_use]
    pub fn ctx(&self, category: ThreadCategory) -> ThreadCtx {
        let generation = self.shared.lock().generation[slot(category)];
        ThreadCtx {
            shared: Arc::clone(&self.shared),
            category,
            generation,
        }
    }

    /// Blocks until `done` holds of the runtime's counters (for programs that wait for a number
    /// of events); woken by every change.
    pub fn wait_until(&self, mut done: impl FnMut(&RuntimeCounters) -> bool) {
        let mut g = self.shared.lock();
        g.progress_waiters += 1;
        while !done(&g.counters) && !g.server_gone && !g.stopping {
            g = Shared::wait_on(&self.shared.progress, g);
        }
        g.progress_waiters -= 1;
    }

    /// `DETACH`: the server drops the window and registrations; then the threads stop (a
    /// function handed to a thread must return once [`ThreadCtx::should_stop`] says so).
    /// Events still queued for the event thread are not handled
    /// ([`RuntimeCounters::unhandled_at_stop`]).
    ///
    /// # Errors
    /// [`KdsClientError::ServerGone`] when the server was already gone (the threads still stop).
    pub fn detach(mut self) -> Result<RuntimeCounters, KdsClientError> {
        {
            let mut g = self.shared.lock();
            g.stopping = true;
        }
        self.shared.wake_all();
        let r = self.shared.expect_ok(&Request::Detach);
        self.shared
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .shutdown();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let counters = self.shared.lock().counters;
        match r {
            Ok(()) | Err(KdsClientError::ServerGone) => Ok(counters),
            Err(e) => Err(e),
        }
    }
}

impl Drop for KdsApp {
    fn drop(&mut self) {
        if self.threads.is_empty() {
            return;
        }
        // Dropped without detach: tell every thread to stop and close the channel (the server
        // detaches the app at end of file); threads running app code are not waited for.
        self.shared.lock().stopping = true;
        self.shared.wake_all();
        self.shared
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .shutdown();
    }
}

fn thread_name(c: ThreadCategory) -> &'static str {
    match c {
        ThreadCategory::Event => "kds-event",
        ThreadCategory::Drawing => "kds-drawing",
        ThreadCategory::Foreground => "kds-foreground",
        ThreadCategory::Background => "kds-background",
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>, KdsClientError> {
    Ok(std::thread::Builder::new().name(name.into()).spawn(f)?)
}

fn channel_thread(s: &Shared, mut reader: ChannelReader) {
    loop {
        let msg = reader.next_message();
        let mut g = s.lock();
        match msg {
            Ok(Reply::WindowState(w)) => {
                g.window = w;
                g.counters.state_pushes += 1;
                drop(g);
                // Any gate may open (or close, which a running thread sees at its next gate).
                s.wake_all();
            }
            Ok(Reply::FrameDone { .. }) => {
                // The boundary has passed (the server's timer fired at it): the pacer lets the
                // waiting thread through on its own clock reading.
                g.frame_requested = false;
                drop(g);
                s.frame_ready.notify_all();
            }
            Ok(reply) => {
                g.reply = Some(Ok(reply));
                drop(g);
                s.reply_ready.notify_all();
            }
            Err(_) => {
                g.server_gone = true;
                drop(g);
                s.wake_all();
                return;
            }
        }
    }
}

fn event_thread(s: &Shared, mut esm: EsmClient) {
    loop {
        let d = esm.wait_delivery();
        match d {
            Ok(Delivery::Event { handler, event }) => {
                let taken = {
                    let mut g = s.lock();
                    if g.stopping {
                        // Drained to the server's end of the channel, but not handled: a
                        // backlog of slow handlers (an app behind CPU hogs) would otherwise
                        // hold the detach for as long as the backlog takes.
                        g.counters.unhandled_at_stop += 1;
                        continue;
                    }
                    g.event_pending = true;
                    g.counters.events += 1;
                    g.handlers
                        .get_mut(handler.0 as usize)
                        .and_then(Option::take)
                };
                // An event thread's gate (a thread of the app's own gated as `Event`) opens.
                s.wake(ThreadCategory::Event);
                match taken {
                    Some(mut h) => {
                        h(&event);
                        let mut g = s.lock();
                        if let Some(slot) = g.handlers.get_mut(handler.0 as usize) {
                            *slot = Some(h);
                        }
                        g.event_pending = false;
                        s.counted(&g);
                    }
                    None => {
                        let mut g = s.lock();
                        g.counters.unknown_handler += 1;
                        g.event_pending = false;
                        s.counted(&g);
                    }
                }
                // The gate closing again wakes nobody: a thread past it finishes its step.
            }
            Ok(Delivery::Overflow { dropped, .. }) => {
                let mut g = s.lock();
                g.counters.overflow_markers += 1;
                g.counters.dropped_reported += dropped;
                s.counted(&g);
            }
            Err(_) => {
                s.lock().server_gone = true;
                s.wake_all();
                return;
            }
        }
    }
}

fn work_thread(s: &Arc<Shared>, category: ThreadCategory) {
    let i = slot(category);
    loop {
        let (work, generation) = {
            let mut g = s.lock();
            loop {
                if g.stopping || g.server_gone {
                    return;
                }
                if let Some(w) = g.work[i].take() {
                    break (w, g.generation[i]);
                }
                g = Shared::wait_on(&s.category_changed[i], g);
            }
        };
        let ctx = ThreadCtx {
            shared: Arc::clone(s),
            category,
            generation,
        };
        work(&ctx);
    }
}
