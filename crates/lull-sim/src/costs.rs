//! Cycle costs and priorities of the framework paths (user-space and kernel software, not the
//! SoC). All ESTIMATES: the seed gives no per-path costs, and none is published for Android 5.1
//! on Tegra K1. Each is set from the kind of work the path does, once, before any result was
//! seen; `docs/simulator.md` discusses them. The same app costs (handler, draw) come from the
//! spec and are shared by every model, so the models differ only in their event paths.

/// Polling interval of both pull-model loops. Source: seed 000 chapter 6, "all polling loop
/// delays were set to 16 milliseconds".
pub const POLL_INTERVAL_NS: u64 = 16_000_000;

/// One pass of the hub's polling loop with nothing to read: wake from its sleep, `epoll_wait`/
/// `read` on the two input queues (seed 000: mouse and keyboard), bookkeeping. ESTIMATE ~15 µs at
/// 2 GHz (two system calls and the reader's loop in native code).
pub const HUB_POLL_CYCLES: u64 = 30_000;
/// One pass of the app's polling loop with nothing to handle: the looper and message queue of
/// the app's virtual machine (seed 000 figure 4). ESTIMATE ~30 µs at 2 GHz (a trip through the VM).
pub const APP_POLL_CYCLES: u64 = 60_000;
/// The hub reads and translates one raw event. ESTIMATE.
pub const HUB_READ_CYCLES: u64 = 8_000;
/// The hub forwards one event over a socket to the app (send + the receiver's wakeup). ESTIMATE.
pub const FORWARD_CYCLES: u64 = 12_000;
/// The app receives one event and routes it to its handler (InputConsumer/VM dispatch). ESTIMATE.
pub const APP_RECEIVE_CYCLES: u64 = 10_000;
/// The input driver reads one sample from the device and queues it (evdev). ESTIMATE.
pub const INPUT_DRIVER_CYCLES: u64 = 3_000;
/// The ESM interpreter in interrupt context: package the event, look up the application list.
/// ESTIMATE (a table lookup and a small copy; `lull bench dispatch` measures the pure code at
/// well under a microsecond on this machine).
pub const ESM_INTERPRETER_CYCLES: u64 = 2_000;
/// The ESM dispatcher kernel thread hands one event to an app's handler. ESTIMATE.
pub const ESM_DISPATCH_CYCLES: u64 = 3_000;
/// Compose one posted frame (a SurfaceFlinger pass in the baselines, the KDS compositor inside the
/// kernel with KDS). ESTIMATE ~150 µs at 2 GHz (layer bookkeeping; pixels are moved by the display
/// hardware).
pub const COMPOSE_CYCLES: u64 = 300_000;
/// A vsync-driven app frame with nothing new to draw (Choreographer callbacks). ESTIMATE.
pub const FRAME_TICK_CYCLES: u64 = 20_000;
/// Hot cache set of framework threads (hub, compositor), KiB. ESTIMATE.
pub const FRAMEWORK_CACHE_KIB: u64 = 64;
/// Hot cache set of the ESM dispatcher kernel thread, KiB. ESTIMATE (kernel data only).
pub const KTHREAD_CACHE_KIB: u64 = 8;

/// Nice of the input hub and compositor threads. Source: Android
/// `PRIORITY_URGENT_DISPLAY` (-8), used by InputReader/InputDispatcher and SurfaceFlinger.
pub const SYSTEM_DISPLAY_NICE: i8 = -8;
/// Nice of application threads (Android `THREAD_PRIORITY_DEFAULT`).
pub const APP_NICE: i8 = 0;
/// Nice of the ESM dispatcher kernel thread: the seed schedules it "like any other kernel thread"
/// (kthreads run at nice 0).
pub const KTHREAD_NICE: i8 = 0;

/// The framework path costs of one run. Defaults are the constants above; a spec may override
/// any of them in a `[framework]` table (for sensitivity studies), never silently: every field
/// has a name and a unit.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FrameworkCosts {
    pub poll_interval_ns: u64,
    pub hub_poll_cycles: u64,
    pub app_poll_cycles: u64,
    pub hub_read_cycles: u64,
    pub forward_cycles: u64,
    pub app_receive_cycles: u64,
    pub input_driver_cycles: u64,
    pub esm_interpreter_cycles: u64,
    pub esm_dispatch_cycles: u64,
    pub compose_cycles: u64,
    pub frame_tick_cycles: u64,
}

impl Default for FrameworkCosts {
    fn default() -> Self {
        FrameworkCosts {
            poll_interval_ns: POLL_INTERVAL_NS,
            hub_poll_cycles: HUB_POLL_CYCLES,
            app_poll_cycles: APP_POLL_CYCLES,
            hub_read_cycles: HUB_READ_CYCLES,
            forward_cycles: FORWARD_CYCLES,
            app_receive_cycles: APP_RECEIVE_CYCLES,
            input_driver_cycles: INPUT_DRIVER_CYCLES,
            esm_interpreter_cycles: ESM_INTERPRETER_CYCLES,
            esm_dispatch_cycles: ESM_DISPATCH_CYCLES,
            compose_cycles: COMPOSE_CYCLES,
            frame_tick_cycles: FRAME_TICK_CYCLES,
        }
    }
}
