//! The painting app of seed 003 §VI-B-1 on Android 2.2, as user space of the simulated kernel:
//! the event path of the seed's figure 2, two (or more) CPU hogs, and the decomposition of each
//! touch's response (eq. 5) from the kernel's scheduling events.
//!
//! A touch raises the touchscreen's interrupt; its handler wakes InputDeviceReader, which reads
//! the event and queues it; InputDeviceDispatcher takes it, names the app's interactive task to
//! the kernel (the seed's TID passed during the binder call) and wakes it with the event; the
//! interactive task handles the touch and draws the dot into its surface (the work C), posts the
//! surface and waits for the next input; SurfaceFlinger composes; the frame is on the 60 Hz
//! display at the first refresh after the composition. The response is that span, split by
//! [`Decomposer`] into L_I (interrupt), L_S (interrupt handled → the task first runs), L_P (the
//! task runnable but not running), C (the task running) and the display part (posted → shown).

use std::borrow::Cow;
use std::collections::VecDeque;

use lull_model::time::NS_PER_S;
use lull_sched::response::{Decomposer, ResponseParts};

use crate::costs::{FRAMEWORK_CACHE_KIB, SYSTEM_DISPLAY_NICE};
use crate::kernel::{Action, Cx, DeviceWork, Kernel, Userspace};

/// The touchscreen driver's interrupt handler beyond the interrupt's entry and exit: acknowledge
/// the controller, take the sample, queue it for the reader. ESTIMATE 6 000 cycles (5 µs at
/// 1.2 GHz; the seed, §III-B: interrupt handling "may well be less than 100 microseconds").
pub const TOUCH_IRQ_CYCLES: u64 = 6_000;
/// InputDeviceReader reads one touch and queues it for dispatch (Android 2.2: the Java
/// `KeyInputQueue` reader thread, a `read` through JNI and a `MotionEvent` built in the VM).
/// ESTIMATE 0.2 M cycles (0.17 ms at 1.2 GHz).
pub const READER_CYCLES: u64 = 200_000;
/// InputDeviceDispatcher finds the focused window and delivers the touch over binder
/// (WindowManagerService's dispatcher thread). ESTIMATE 0.3 M cycles (0.25 ms at 1.2 GHz).
pub const DISPATCH_CYCLES: u64 = 300_000;
/// The interactive task's work per touch, C: handling the touch and drawing the dot into its
/// surface. 120 M cycles = 100 ms at the Tegra 250's 1.2 GHz: seed 003 §IV, "we observe that C
/// for usual applications is 100 ms on average" on this board. The seed's figure 6 shows the
/// painting app's own compute bar, but its value is lost in the text; the legacy response
/// (275.9 ms) less its preemption share (50.56 %) leaves 136 ms for C, L_I and L_S together.
pub const PAINT_CYCLES: u64 = 120_000_000;
/// SurfaceFlinger composes the posted surface with the others and flips (Tegra 2 composes with
/// its GPU; the CPU sets it up). ESTIMATE 2.4 M cycles (2 ms at 1.2 GHz).
pub const COMPOSE_CYCLES: u64 = 2_400_000;
/// A hog's compute step: it never blocks, so the step only bounds one planned segment (1 s at
/// 1.2 GHz).
pub const HOG_STEP_CYCLES: u64 = 1_200_000_000;

/// Nice of the input threads and SurfaceFlinger: Android's `THREAD_PRIORITY_URGENT_DISPLAY`
/// (−8; the seed, §III-A: SurfaceFlinger's weight is 6100).
pub const SYSTEM_NICE: i8 = SYSTEM_DISPLAY_NICE;
/// Nice of the app's interactive task and of the hogs (seed 003 §VI-B-1: "assigned nice value
/// 0"; Android's `THREAD_PRIORITY_DEFAULT`).
pub const APP_NICE: i8 = 0;
/// Hot cache set of the painting app's task: its view hierarchy and the part of the canvas a dot
/// touches. ESTIMATE 256 KiB.
pub const APP_CACHE_KIB: u64 = 256;
/// Hot cache set of a hog: a counting loop. ESTIMATE 4 KiB.
pub const HOG_CACHE_KIB: u64 = 4;

/// Address spaces (the cache-refill model charges switches between different ones).
const PROC_SYSTEM_SERVER: u32 = 1;
const PROC_SURFACEFLINGER: u32 = 2;
const PROC_APP: u32 = 3;
const PROC_HOG_BASE: u32 = 10;

/// What a thread is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Reader,
    Dispatcher,
    App,
    SurfaceFlinger,
    Hog,
}

/// Where one touch's response stands.
#[derive(Clone, Copy, Debug)]
enum Touch {
    /// Not injected yet.
    Pending,
    /// On its way (the decomposition so far).
    InFlight(Decomposer),
    Done(ResponseParts),
}

/// User space of one painting run.
#[derive(Debug)]
pub(crate) struct Painting {
    roles: Vec<Role>,
    pub reader: usize,
    pub dispatcher: usize,
    pub app: usize,
    pub surfaceflinger: usize,
    pub hogs: Vec<usize>,
    touches: Vec<Touch>,
    /// Touches the driver queued for the reader, the reader for the dispatcher, the dispatcher
    /// for the app, the app (posted) for SurfaceFlinger.
    reader_q: VecDeque<u32>,
    dispatch_q: VecDeque<u32>,
    app_q: VecDeque<u32>,
    compose_q: VecDeque<u32>,
    /// The touch each thread works on now (its compute step is under way).
    reader_busy: Option<u32>,
    dispatcher_busy: Option<u32>,
    app_busy: Option<u32>,
    composing: Option<u32>,
    /// The touch the app's task handles (from its first run to its post).
    handling: Option<u32>,
    refresh_ns: u64,
    /// The interactive task's work per touch, C (`[painting] paint_cycles`).
    paint_cycles: u64,
    done: usize,
    wakes: Vec<usize>,
}

impl Painting {
    /// Creates the threads (asleep) for `touches` touches of `paint_cycles` each and `hogs`
    /// hogs; the display refreshes at `refresh_hz`.
    pub fn new(
        k: &mut Kernel<'_>,
        touches: u32,
        hogs: u32,
        refresh_hz: u32,
        paint_cycles: u64,
    ) -> Painting {
        let mut roles = Vec::new();
        let mut add = |k: &mut Kernel<'_>, name: Cow<'static, str>, role, proc_id, nice, kib| {
            let t = k.add_task(name, proc_id, nice, kib);
            debug_assert_eq!(t, roles.len());
            roles.push(role);
            t
        };
        let reader = add(
            k,
            "InputDeviceReader".into(),
            Role::Reader,
            PROC_SYSTEM_SERVER,
            SYSTEM_NICE,
            FRAMEWORK_CACHE_KIB,
        );
        let dispatcher = add(
            k,
            "InputDeviceDispatcher".into(),
            Role::Dispatcher,
            PROC_SYSTEM_SERVER,
            SYSTEM_NICE,
            FRAMEWORK_CACHE_KIB,
        );
        let app = add(
            k,
            "painting".into(),
            Role::App,
            PROC_APP,
            APP_NICE,
            APP_CACHE_KIB,
        );
        let surfaceflinger = add(
            k,
            "SurfaceFlinger".into(),
            Role::SurfaceFlinger,
            PROC_SURFACEFLINGER,
            SYSTEM_NICE,
            FRAMEWORK_CACHE_KIB,
        );
        let hogs = (0..hogs)
            .map(|i| {
                add(
                    k,
                    format!("hog-{i}").into(),
                    Role::Hog,
                    PROC_HOG_BASE + i,
                    APP_NICE,
                    HOG_CACHE_KIB,
                )
            })
            .collect();
        Painting {
            roles,
            reader,
            dispatcher,
            app,
            surfaceflinger,
            hogs,
            touches: vec![Touch::Pending; touches as usize],
            reader_q: VecDeque::new(),
            dispatch_q: VecDeque::new(),
            app_q: VecDeque::new(),
            compose_q: VecDeque::new(),
            reader_busy: None,
            dispatcher_busy: None,
            app_busy: None,
            composing: None,
            handling: None,
            refresh_ns: NS_PER_S / u64::from(refresh_hz.max(1)),
            paint_cycles,
            done: 0,
            wakes: Vec::new(),
        }
    }

    /// Starts the hogs.
    pub fn start(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        k.wake_each(self.hogs.clone(), &*self, cx);
    }

    /// Touch `i` reaches the touchscreen now: its interrupt.
    pub fn touch(&mut self, i: u32, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        self.touches[i as usize] = Touch::InFlight(Decomposer::input(cx.now()));
        let cycles = k.irq_cost() + TOUCH_IRQ_CYCLES + k.wakeup_cycles();
        k.device_irq(cycles, DeviceWork::Input(i), self, cx);
    }

    /// Every touch's frame is on the display.
    pub fn all_done(&self) -> bool {
        self.done == self.touches.len()
    }

    /// The decomposition of every touch whose frame was shown, in touch order.
    pub fn responses(&self) -> Vec<ResponseParts> {
        self.touches
            .iter()
            .filter_map(|t| match t {
                Touch::Done(p) => Some(*p),
                Touch::Pending | Touch::InFlight(_) => None,
            })
            .collect()
    }

    fn decomposer(&mut self, i: u32) -> Option<&mut Decomposer> {
        match &mut self.touches[i as usize] {
            Touch::InFlight(d) => Some(d),
            Touch::Pending | Touch::Done(_) => None,
        }
    }

    /// SurfaceFlinger finished composing touch `i`'s frame at `now`: it is shown at the next
    /// refresh.
    fn shown(&mut self, i: u32, now: u64) {
        let at = (now / self.refresh_ns + 1) * self.refresh_ns;
        if let Touch::InFlight(d) = self.touches[i as usize] {
            self.touches[i as usize] = Touch::Done(d.done(at));
            self.done += 1;
        }
    }

    fn step(&mut self, t: usize, now: u64, k: &mut Kernel<'_>) -> Action {
        match self.roles[t] {
            Role::Reader => {
                if let Some(i) = self.reader_busy.take() {
                    self.dispatch_q.push_back(i);
                    self.wakes.push(self.dispatcher);
                }
                take_next(&mut self.reader_q, &mut self.reader_busy, READER_CYCLES)
            }
            Role::Dispatcher => {
                if let Some(i) = self.dispatcher_busy.take() {
                    self.app_q.push_back(i);
                    // The framework knows which task receives the input and tells the kernel
                    // before the binder call wakes it.
                    k.name_interactive(self.app);
                    self.wakes.push(self.app);
                }
                take_next(
                    &mut self.dispatch_q,
                    &mut self.dispatcher_busy,
                    DISPATCH_CYCLES,
                )
            }
            Role::App => {
                if let Some(i) = self.app_busy.take() {
                    // The dot is drawn: post the surface; the handler is done.
                    if let Some(d) = self.decomposer(i) {
                        d.stop(now, false);
                    }
                    self.handling = None;
                    self.compose_q.push_back(i);
                    self.wakes.push(self.surfaceflinger);
                }
                let next = self.handling.take().or_else(|| self.app_q.pop_front());
                match next {
                    Some(i) => {
                        self.handling = Some(i);
                        self.app_busy = Some(i);
                        if let Some(d) = self.decomposer(i) {
                            d.run(now);
                        }
                        Action::Compute(self.paint_cycles)
                    }
                    None => Action::Block,
                }
            }
            Role::SurfaceFlinger => {
                if let Some(i) = self.composing.take() {
                    self.shown(i, now);
                }
                take_next(&mut self.compose_q, &mut self.composing, COMPOSE_CYCLES)
            }
            Role::Hog => Action::Compute(HOG_STEP_CYCLES),
        }
    }

    fn flush_wakes(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        while let Some(t) = self.wakes.pop() {
            k.wake(t, &*self, cx);
        }
    }
}

/// A pipeline stage's next touch: taken from its queue `q` as its `busy` one, run for `cycles`;
/// with none queued, the stage blocks.
fn take_next(q: &mut VecDeque<u32>, busy: &mut Option<u32>, cycles: u64) -> Action {
    match q.pop_front() {
        Some(i) => {
            *busy = Some(i);
            Action::Compute(cycles)
        }
        None => Action::Block,
    }
}

impl Userspace for Painting {
    fn next_action(&mut self, t: usize, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) -> Action {
        let a = self.step(t, cx.now(), k);
        self.flush_wakes(k, cx);
        a
    }

    fn device_work(&mut self, w: DeviceWork, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        if let DeviceWork::Input(i) = w {
            let now = cx.now();
            if let Some(d) = self.decomposer(i) {
                d.interrupt_done(now);
            }
            self.reader_q.push_back(i);
            self.wakes.push(self.reader);
        }
        self.flush_wakes(k, cx);
    }

    fn on_cpu(&mut self, t: usize, now: u64) {
        if t != self.app {
            return;
        }
        // The task is on a core: the touch it handles (or is about to take) runs from now.
        if self.handling.is_none() {
            self.handling = self.app_q.pop_front();
        }
        if let Some(i) = self.handling {
            if let Some(d) = self.decomposer(i) {
                d.run(now);
            }
        }
    }

    fn off_cpu(&mut self, t: usize, now: u64, preempted: bool) {
        if t != self.app {
            return;
        }
        if let Some(i) = self.handling {
            if let Some(d) = self.decomposer(i) {
                d.stop(now, preempted);
            }
        }
    }
}

impl crate::pm::IdleForcing for Painting {}
