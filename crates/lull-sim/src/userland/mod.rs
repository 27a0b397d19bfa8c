//! User space of a run: the framework model under test (the pull model, the vsync-batched and
//! blocking baselines, ESM, ESM+KDS+guiS) and the app behaviours it delivers to.
//!
//! - [`framework`]: the input path from the device to the app (hubs, the ESM dispatcher, window
//!   changes, guiS's gate and idle forcing);
//! - [`apps`]: what each app thread does (handle, draw, decode);
//! - [`display`]: vsync, double buffering, composition.
//!
//! Each thread's behaviour is a small script: it queues steps (compute, the start of a handler,
//! an effect on the framework) and says how it waits when it has none. The kernel runs the
//! compute steps ([`crate::kernel::Userspace`]).

mod apps;
mod display;
mod framework;

use std::collections::VecDeque;

use lull_esm::{Esm, EsmConfig, Push};
use lull_model::time::NS_PER_MS;
use lull_model::{AppId, EventKind, HandlerId, ThreadCategory, WindowState};
use lull_workload::TimedEvent;

use crate::costs::*;
use crate::kernel::{Action, Cx, DeviceWork, Kernel, Userspace};
use crate::spec::{FrameworkSpec, SpecError, WorkloadSpec};
use lull_model::DeliveryModel;

/// What a thread is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    PullHub,
    PullApp,
    VsyncHub,
    VsyncApp,
    BlockHub,
    BlockApp,
    Compositor,
    EsmDispatcher,
    EsmApp,
    KdsEvent,
    KdsDrawing,
    KdsForeground,
    Decoder,
    /// A CPU-bound thread that never blocks (tests of the scheduler).
    #[cfg(test)]
    Hog,
}

/// One queued step of a thread.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Compute(u64),
    /// The handler of an event injected at this time starts now.
    HandlerStart(u64),
    Effect(Effect),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Effect {
    /// The hub has read this many events from the device queue into its own.
    HubTook(usize),
    /// Forward this many events from the hub's queue to the app's queue and wake the app.
    Forward(usize),
    /// The app starts drawing a frame: it shows every event handled so far.
    DrawStart,
    /// The app has drawn a frame and posts it to the compositor.
    PostFrame,
    /// The KDS drawing thread has drawn a frame (it composes it itself, no compositor hop).
    FrameDrawn,
    FrameReady,
    WakeDrawing,
    RequestVsync,
}

/// A thread's behaviour state.
#[derive(Debug)]
struct Behaviour {
    role: Role,
    category: Option<ThreadCategory>,
    todo: VecDeque<Op>,
    phase: u8,
    vsync_fired: bool,
    /// Injection times of events pushed to this thread and not yet handled.
    deliveries: VecDeque<u64>,
    /// The decoder's next video frame.
    frame: u64,
}

/// A thread to create: its kernel identity and its behaviour.
struct NewThread {
    name: &'static str,
    role: Role,
    /// Address space: 0 kernel, 1 system (hub, compositor), 2 the app.
    proc_id: u32,
    nice: i8,
    cache_kib: u64,
    category: Option<ThreadCategory>,
}

/// User space of one run.
#[derive(Debug)]
pub(crate) struct Userland<'s> {
    spec: &'s FrameworkSpec,
    model: DeliveryModel,
    /// Indexed like the kernel's tasks.
    threads: Vec<Behaviour>,
    events: Vec<TimedEvent>,
    // The input path.
    device_q: VecDeque<(u64, bool)>,
    hub_q: VecDeque<(u64, bool)>,
    hub_moves: usize,
    app_q: VecDeque<u64>,
    esm: Esm,
    app_id: AppId,
    esm_pushes: VecDeque<Push>,
    /// The app's window state as the window manager last set it.
    window: WindowState,
    // The display.
    frames_posted: u64,
    /// Frames drawn (posted to the compositor, or composed inside the KDS).
    frames_drawn: u64,
    /// Injection times of events handled and not yet in a frame being drawn.
    handled_undrawn: Vec<u64>,
    /// Injection times of the events the frame being drawn shows.
    in_frame: Vec<u64>,
    /// Event injection → the end of the draw of the first frame showing it, ns.
    frame_latencies_ns: Vec<u64>,
    #[cfg(test)]
    handled_order: Vec<u64>,
    frame_ready: bool,
    dirty: bool,
    vsync_waiters: Vec<usize>,
    vsync_scheduled: bool,
    last_post_refresh: Option<u64>,
    // The video.
    video_frames: u64,
    video_period_ns: u64,
    decode_cycles: u64,
    // guiS idle forcing.
    idle_forced: bool,
    forced_ns: u64,
    last_input_ns: Option<u64>,
    last_gui_active_ns: Option<u64>,
    // What the report counts.
    latencies_ns: Vec<u64>,
    injected: u64,
    dropped: u64,
    // Thread ids by role.
    hub: Option<usize>,
    app: Option<usize>,
    compositor: Option<usize>,
    dispatcher: Option<usize>,
    event_thread: Option<usize>,
    drawing: Option<usize>,
}

impl<'s> Userland<'s> {
    /// User space of `model` on `spec`'s workload; its threads are created in `k`.
    ///
    /// # Errors
    /// A message when the spec's workload cannot be built (a bad trace).
    pub fn new(
        spec: &'s FrameworkSpec,
        model: DeliveryModel,
        k: &mut Kernel<'_>,
    ) -> Result<Userland<'s>, SpecError> {
        let events = spec.input_events()?;
        let mut esm = Esm::new(EsmConfig::default()).expect("the default ESM config is valid");
        let app_id = esm.add_app();
        let (video_frames, video_period_ns, decode_cycles) = match spec.workload {
            WorkloadSpec::Video {
                duration_ms,
                fps_milli,
                decode_cycles_per_frame,
                ..
            } => {
                let period = 1_000_000_000_000 / fps_milli;
                (
                    (duration_ms * NS_PER_MS) / period,
                    period,
                    decode_cycles_per_frame,
                )
            }
            _ => (0, 0, 0),
        };
        let mut u = Userland {
            spec,
            model,
            threads: Vec::new(),
            events,
            device_q: VecDeque::new(),
            hub_q: VecDeque::new(),
            hub_moves: 0,
            app_q: VecDeque::new(),
            esm,
            app_id,
            esm_pushes: VecDeque::new(),
            window: WindowState::FRONT,
            frames_posted: 0,
            frames_drawn: 0,
            handled_undrawn: Vec::new(),
            in_frame: Vec::new(),
            frame_latencies_ns: Vec::new(),
            #[cfg(test)]
            handled_order: Vec::new(),
            frame_ready: false,
            dirty: false,
            vsync_waiters: Vec::new(),
            vsync_scheduled: false,
            last_post_refresh: None,
            video_frames,
            video_period_ns,
            decode_cycles,
            idle_forced: false,
            forced_ns: 0,
            last_input_ns: None,
            last_gui_active_ns: None,
            latencies_ns: Vec::new(),
            injected: 0,
            dropped: 0,
            hub: None,
            app: None,
            compositor: None,
            dispatcher: None,
            event_thread: None,
            drawing: None,
        };
        u.build_threads(k);
        Ok(u)
    }

    fn add_thread(&mut self, k: &mut Kernel<'_>, n: NewThread) -> usize {
        let NewThread {
            name,
            role,
            proc_id,
            nice,
            cache_kib,
            category,
        } = n;
        let t = k.add_task(name, proc_id, nice, cache_kib);
        debug_assert_eq!(t, self.threads.len());
        self.threads.push(Behaviour {
            role,
            category,
            todo: VecDeque::new(),
            phase: 0,
            vsync_fired: false,
            deliveries: VecDeque::new(),
            frame: 0,
        });
        t
    }

    fn build_threads(&mut self, k: &mut Kernel<'_>) {
        // Process ids: 0 kernel, 1 system (hub, compositor), 2 the app.
        let app_kib = self.spec.app.cache_kib;
        let fw = FRAMEWORK_CACHE_KIB;
        let video = self.video_frames > 0;
        // Every kind the workloads inject; the apps arm no timers.
        let kinds: Vec<EventKind> = EventKind::ALL
            .into_iter()
            .filter(|&k| k != EventKind::Timer)
            .collect();
        match self.model {
            DeliveryModel::Pull16ms
            | DeliveryModel::VsyncBatched
            | DeliveryModel::BlockingMiddleware => {
                let (hub, app) = match self.model {
                    DeliveryModel::Pull16ms => (Role::PullHub, Role::PullApp),
                    DeliveryModel::VsyncBatched => (Role::VsyncHub, Role::VsyncApp),
                    _ => (Role::BlockHub, Role::BlockApp),
                };
                self.hub = Some(self.add_thread(
                    k,
                    NewThread {
                        name: "hub",
                        role: hub,
                        proc_id: 1,
                        nice: SYSTEM_DISPLAY_NICE,
                        cache_kib: fw,
                        category: None,
                    },
                ));
                self.app = Some(self.add_thread(
                    k,
                    NewThread {
                        name: "app",
                        role: app,
                        proc_id: 2,
                        nice: APP_NICE,
                        cache_kib: app_kib,
                        category: None,
                    },
                ));
            }
            DeliveryModel::Esm | DeliveryModel::EsmKdsGuis => {
                self.dispatcher = Some(self.add_thread(
                    k,
                    NewThread {
                        name: "esm-dispatcher",
                        role: Role::EsmDispatcher,
                        proc_id: 0,
                        nice: KTHREAD_NICE,
                        cache_kib: KTHREAD_CACHE_KIB,
                        category: None,
                    },
                ));
                if self.model == DeliveryModel::Esm {
                    self.app = Some(self.add_thread(
                        k,
                        NewThread {
                            name: "app",
                            role: Role::EsmApp,
                            proc_id: 2,
                            nice: APP_NICE,
                            cache_kib: app_kib,
                            category: None,
                        },
                    ));
                } else {
                    // KDS splits the app by category (the foreground thread only ever blocks).
                    let mut kds = |name, role, cat| {
                        self.add_thread(
                            k,
                            NewThread {
                                name,
                                role,
                                proc_id: 2,
                                nice: APP_NICE,
                                cache_kib: app_kib,
                                category: Some(cat),
                            },
                        )
                    };
                    let event = kds("event", Role::KdsEvent, ThreadCategory::Event);
                    let drawing = kds("drawing", Role::KdsDrawing, ThreadCategory::Drawing);
                    kds(
                        "foreground",
                        Role::KdsForeground,
                        ThreadCategory::Foreground,
                    );
                    self.event_thread = Some(event);
                    self.drawing = Some(drawing);
                }
            }
        }
        if self.model != DeliveryModel::EsmKdsGuis {
            self.compositor = Some(self.add_thread(
                k,
                NewThread {
                    name: "compositor",
                    role: Role::Compositor,
                    proc_id: 1,
                    nice: SYSTEM_DISPLAY_NICE,
                    cache_kib: fw,
                    category: None,
                },
            ));
        }
        if video {
            let cat =
                (self.model == DeliveryModel::EsmKdsGuis).then_some(ThreadCategory::Background);
            // A decoder's working set is its reference frames; the hot part that survives in L2
            // is bounded by L2 (refill is capped there).
            let l2 = self.spec.header.platform.costs.l2_kib;
            self.add_thread(
                k,
                NewThread {
                    name: "decoder",
                    role: Role::Decoder,
                    proc_id: 2,
                    nice: APP_NICE,
                    cache_kib: l2,
                    category: cat,
                },
            );
        }
        if matches!(self.model, DeliveryModel::Esm | DeliveryModel::EsmKdsGuis) {
            for (i, &kind) in kinds.iter().enumerate() {
                self.esm
                    .register(self.app_id, kind, Some(HandlerId(i as u32)))
                    .expect("the app was just added");
            }
        }
    }

    /// A CPU-bound thread that never blocks, for the scheduler's tests.
    #[cfg(test)]
    pub fn add_hog(&mut self, k: &mut Kernel<'_>, name: &'static str, nice: i8) -> usize {
        self.add_thread(
            k,
            NewThread {
                name,
                role: Role::Hog,
                proc_id: 9,
                nice,
                cache_kib: 64,
                category: None,
            },
        )
    }

    /// A light thread that polls every 16 ms (the pull hub's loop), for the scheduler's tests.
    #[cfg(test)]
    pub fn add_poller(&mut self, k: &mut Kernel<'_>, name: &'static str) -> usize {
        self.add_thread(
            k,
            NewThread {
                name,
                role: Role::PullHub,
                proc_id: 9,
                nice: 0,
                cache_kib: 64,
                category: None,
            },
        )
    }

    /// Every thread starts as if just created: runnable, ungated (each runs its initialisation).
    pub fn start(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        for t in 0..self.threads.len() {
            k.wake_gated(t, false, &*self, cx);
        }
    }

    /// The workload's input events, for the run to inject.
    pub fn input_times_ns(&self) -> impl Iterator<Item = u64> + '_ {
        self.events.iter().map(|e| e.at_ns)
    }

    /// Accounts `dt` of run time (guiS forced-idle time).
    pub fn account(&mut self, dt: u64) {
        if self.idle_forced {
            self.forced_ns += dt;
        }
    }

    /// Rest of board plus the display, on or off as the window manager left the screen.
    pub fn fixed_power_mw(&self) -> f64 {
        let plat = &self.spec.header.platform;
        let d = &plat.display;
        let display = if self.window.screen == lull_model::Screen::On {
            d.on_mw
        } else {
            d.off_mw
        };
        (plat.board.rest_mw + display) as f64
    }

    fn push_ops(&mut self, t: usize, ops: impl IntoIterator<Item = Op>) {
        self.threads[t].todo.extend(ops);
    }

    /// The thread's behaviour: queue its next steps, or say how it waits.
    fn script(&mut self, t: usize, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) -> Option<Action> {
        match self.threads[t].role {
            Role::PullHub => self.pull_hub(t, cx),
            Role::VsyncHub => self.vsync_hub(t),
            Role::BlockHub => self.block_hub(t),
            Role::Compositor => self.compositor(t),
            Role::EsmDispatcher => self.esm_dispatcher(t, k, cx),
            Role::PullApp => self.pull_app(t, cx),
            Role::VsyncApp => self.vsync_app(t, cx),
            Role::BlockApp => self.block_app(t, cx),
            Role::EsmApp | Role::KdsEvent => self.event_handler(t, cx),
            Role::KdsDrawing => self.kds_drawing(t, cx),
            Role::KdsForeground => Some(Action::Block),
            Role::Decoder => self.decoder(t, cx),
            #[cfg(test)]
            Role::Hog => {
                self.push_ops(t, [Op::Compute(1_000_000)]);
                None
            }
        }
    }

    fn effect(&mut self, t: usize, e: Effect, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        match e {
            Effect::HubTook(n) => self.hub_took(n),
            Effect::Forward(n) => self.forward(n, k, cx),
            Effect::DrawStart => self.draw_start(),
            Effect::PostFrame => self.post_frame(k, cx),
            Effect::FrameDrawn => self.mark_posted(cx.now()),
            Effect::FrameReady => self.frame_ready(k, cx),
            Effect::WakeDrawing => {
                self.dirty = true;
                if let Some(d) = self.drawing {
                    self.change_pending(d, k, cx);
                }
            }
            Effect::RequestVsync => self.request_vsync(t, cx),
        }
    }

    /// Events injected but neither handled nor dropped when the run ended (still in a device,
    /// hub, app or ESM queue, or pushed to a thread that had not started its handler).
    pub fn pending_events(&self) -> u64 {
        let in_threads: usize = self.threads.iter().map(|t| t.deliveries.len()).sum();
        let in_queues = self.device_q.len() + self.hub_q.len() + self.app_q.len() + in_threads;
        let in_pushes = self.esm_pushes.len();
        (in_queues + in_pushes) as u64 + self.esm.total_queued_events()
    }

    /// The ESM dispatcher kernel thread (the daemon of the seed's model), in the ESM models.
    pub fn dispatcher_thread(&self) -> Option<usize> {
        self.dispatcher
    }

    /// Replaces the workload's input events (tests of pacing and delivery).
    #[cfg(test)]
    pub fn set_events(&mut self, events: Vec<TimedEvent>) {
        self.events = events;
    }

    /// The ESM's counters (tests of delivery).
    #[cfg(test)]
    pub fn esm_counters(&self) -> lull_esm::EsmCounters {
        self.esm.counters()
    }

    /// Injection times of the events whose handlers started, in the order they started.
    #[cfg(test)]
    pub fn handled_order(&self) -> &[u64] {
        &self.handled_order
    }

    /// Event-to-frame latencies (injection → the end of the draw of the first frame showing
    /// the event), ns, in the order the frames were drawn.
    pub fn take_frame_latencies(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.frame_latencies_ns)
    }

    /// Handler-start latencies, events injected, events dropped (no listener or overflow), time
    /// under guiS forced idle.
    pub fn take_results(&mut self) -> (Vec<u64>, u64, u64, u64) {
        (
            std::mem::take(&mut self.latencies_ns),
            self.injected,
            self.dropped + self.esm.counters().overflow_dropped,
            self.forced_ns,
        )
    }
}

impl Userspace for Userland<'_> {
    fn next_action(&mut self, t: usize, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) -> Action {
        loop {
            if let Some(op) = self.threads[t].todo.pop_front() {
                match op {
                    Op::Compute(cy) => return Action::Compute(cy),
                    Op::HandlerStart(inj) => {
                        let now = cx.now();
                        self.latencies_ns.push(now.saturating_sub(inj));
                        self.handled_undrawn.push(inj);
                        #[cfg(test)]
                        self.handled_order.push(inj);
                    }
                    Op::Effect(e) => self.effect(t, e, k, cx),
                }
                continue;
            }
            if let Some(a) = self.script(t, k, cx) {
                return a;
            }
        }
    }

    fn device_work(&mut self, w: DeviceWork, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        match w {
            DeviceWork::Input(i) => self.deliver_input(i, k, cx),
            DeviceWork::Vsync => self.vsync_handled(k, cx),
        }
    }

    fn gated_off(&self, t: usize) -> bool {
        self.model == DeliveryModel::EsmKdsGuis
            && self.threads[t].category.is_some_and(|cat| {
                !lull_sched::guis::may_run(cat, self.window, self.event_pending(t))
            })
    }

    fn freeze_at_scheduling_point(&self, t: usize) -> bool {
        // The event thread parks itself in EV_WAIT through `esm_wait` instead.
        self.threads[t].todo.is_empty()
            && self.threads[t].category != Some(ThreadCategory::Event)
            && self.gated_off(t)
    }

    fn on_cpu(&mut self, t: usize, now: u64) {
        if self.threads[t].category.is_some() {
            self.last_gui_active_ns = Some(now);
        }
    }

    fn next_device_interrupt_ns(&self, now: u64) -> Option<u64> {
        self.vsync_scheduled.then(|| self.next_vsync_ns(now))
    }
}
