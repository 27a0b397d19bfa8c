//! The four delivery paths the live measurements compare, all fed by the same device and ending
//! in the same application handler.
//!
//! **Device.** In every model a driver thread replays the workload ([`ReplaySource`]) and writes
//! each event as an evdev packet, stamped with its injection time, into a pipe: the device queue,
//! exactly what a `/dev/input/eventN` descriptor offers a reader.
//!
//! **App.** Every model's application runs [`TrackingApp::on_event`] on each event; its first act
//! is to read the clock, so latency = handler start − injection stamp.
//!
//! What differs is the path between the two:
//! - `esm`: the driver is a data-plane producer ([`run_producer_driver`]): `lulld` (the
//!   [`Daemon`](lulld::daemon::Daemon)) only routes, handing it the app's ring, and the driver
//!   writes each event there and wakes the app's event thread, which blocks in
//!   [`EsmClient::wait`](lull::client::EsmClient::wait). One hop, no timeout, no daemon.
//! - `pull-16ms` (seed 000's pull model): a hub polls the device queue every 16 ms and forwards
//!   what it finds to the app's socket; the app polls its socket every 16 ms.
//! - `vsync-batched` (Android-like): the hub blocks on the device queue; key and touch down/up go
//!   out at once, moves wait for the next 60 Hz frame; the app blocks in its looper and, while
//!   animating (it handled input since the last frame), ticks every frame.
//! - `blocking-middleware` (X11/Wayland-like): the hub blocks on the device queue and forwards
//!   each event over a socket; the app blocks on that socket. Two hops, two queues, no timeouts.

use std::cell::RefCell;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;
use std::sync::mpsc::Sender;
use std::sync::Arc;

use lull_apps::baseline::{
    fired, next_boundary, stop_source, BaselineHandler, PULL_PERIOD_NS, VSYNC_PERIOD_NS,
};
use lull_apps::TRACKING_KINDS;
use lull_esm::interpret;
use lull_esm::protocol::{DaemonMsg, MAX_MESSAGE};
use lull_model::DeliveryModel;
use lull_model::{AppEvent, EventKind, EventSeq, HandlerId, RawEvent};
use lull_os::evdev::{EvdevEncoder, EvdevSource};
use lull_os::event_loop::{EventLoop, FnSource, LoopCtl, PostAction, Source};
use lull_os::sys::{self, monotonic_ns, EventFd, TimerFd};
use lull_workload::Trace;
use lulld::replay::{ReplayCounters, ReplaySource};

/// The delivery models `lull live` runs: the ESM alone, then the three baselines (the ESM's
/// figures first, the others compared with them).
pub const LIVE_MODELS: [DeliveryModel; 4] = [
    DeliveryModel::Esm,
    DeliveryModel::Pull16ms,
    DeliveryModel::VsyncBatched,
    DeliveryModel::BlockingMiddleware,
];

/// The application every model runs: a stylus tracker that records, for each event, the time
/// from injection to the start of its handler.
#[derive(Debug)]
pub struct TrackingApp {
    pub latencies_ns: Vec<u64>,
    pub delivered: u64,
    /// Events the app was told it lost (overflow markers), where the model reports them.
    pub dropped_reported: u64,
    pub last_point: Option<(i32, i32)>,
    pub frames: u64,
    expected: u64,
    done: Option<Sender<()>>,
}

impl TrackingApp {
    /// An app that signals `done` once it has handled (or been told it lost) `expected` events.
    #[must_use]
    pub fn new(expected: u64, done: Sender<()>) -> TrackingApp {
        TrackingApp {
            latencies_ns: Vec::with_capacity(expected as usize),
            delivered: 0,
            dropped_reported: 0,
            last_point: None,
            frames: 0,
            expected,
            done: Some(done),
        }
    }

    /// The handler, shared by all models.
    pub fn on_event(&mut self, ev: &AppEvent) {
        let start_ns = monotonic_ns();
        self.latencies_ns
            .push(start_ns.saturating_sub(ev.injected_ns));
        self.delivered += 1;
        if let lull_model::Payload::Point { x, y } = ev.payload {
            self.last_point = Some((x, y));
        }
        self.check_done();
    }

    /// The overflow marker's handler.
    pub fn on_overflow(&mut self, dropped: u64) {
        self.dropped_reported += dropped;
        self.check_done();
    }

    /// A frame of the vsync model's app (drawing the stroke so far; nothing to draw here).
    pub fn on_frame(&mut self) {
        self.frames += 1;
    }

    fn check_done(&mut self) {
        if self.delivered + self.dropped_reported >= self.expected {
            if let Some(tx) = self.done.take() {
                let _ = tx.send(());
            }
        }
    }
}

/// Shared with the stack's threads: the app's results.
pub type AppCell = Arc<std::sync::Mutex<Option<TrackingApp>>>;

// ---------------------------------------------------------------------------------------------
// The device driver.

/// Runs the device driver on this thread: replays `trace` from `start_ns` into `device_w` as
/// evdev packets, until `stop` is signalled. Sends its replay counters to `report` when the last
/// event is written.
///
/// # Errors
/// The kernel's error setting up the loop.
pub fn run_driver(
    trace: Option<&Trace>,
    start_ns: u64,
    device_w: OwnedFd,
    stop: &EventFd,
    report: Sender<ReplayCounters>,
) -> io::Result<()> {
    /// A write that fails or falls short loses the event, which the app then never receives.
    struct Device {
        w: OwnedFd,
        enc: EvdevEncoder,
        buf: Vec<u8>,
    }
    impl DriverSink for Device {
        fn deliver(&mut self, raw: RawEvent, t_ns: u64) {
            self.buf.clear();
            if self.enc.encode(raw, t_ns, &mut self.buf).is_ok() {
                let _ = sys::write_all_once(self.w.as_raw_fd(), &self.buf);
            }
        }
    }
    let device = Device {
        w: device_w,
        enc: EvdevEncoder::new(),
        buf: Vec::new(),
    };
    drive(trace, start_ns, device, stop, report)
}

/// Where a device driver puts each replayed event.
trait DriverSink {
    fn deliver(&mut self, raw: RawEvent, t_ns: u64);
    /// After the last event, before its counters are reported.
    fn end(&mut self) {}
}

/// A push that fails loses the event, which the app then never receives.
impl DriverSink for lull::producer::EsmProducer {
    fn deliver(&mut self, raw: RawEvent, t_ns: u64) {
        let _ = self.push(raw, t_ns);
    }
    fn end(&mut self) {
        // The last event is in: report the drops of a full ring as soon as there is room.
        self.flush();
    }
}

/// The device drivers' loop: replays `trace` from `start_ns` into `sink` until `stop` is
/// signalled, sending the replay counters to `report` after the last event.
fn drive<D: DriverSink + 'static>(
    trace: Option<&Trace>,
    start_ns: u64,
    mut sink: D,
    stop: &EventFd,
    report: Sender<ReplayCounters>,
) -> io::Result<()> {
    let mut lp: EventLoop<D> = EventLoop::new()?;
    lp.insert(stop_source(stop.raw()))?;
    if let Some(trace) = trace {
        let src = ReplaySource::new(
            trace,
            start_ns,
            Box::new(|d: &mut D, _: &mut LoopCtl<D>, raw, t| d.deliver(raw, t)),
            Box::new(move |d: &mut D, c| {
                d.end();
                let _ = report.send(c);
            }),
        )?;
        lp.insert(Box::new(src))?;
    }
    lp.run(&mut sink)
}

/// The ESM model's device driver: as [`run_driver`], but a data-plane producer
/// ([`lull::producer::EsmProducer`]) connected to the daemon at `socket`, writing each event
/// straight into the rings of the apps registered for it; the daemon is not on the per-event
/// path.
///
/// # Errors
/// The kernel's error setting up the loop; the producer's connection error.
pub fn run_producer_driver(
    trace: Option<&Trace>,
    start_ns: u64,
    socket: &std::path::Path,
    stop: &EventFd,
    report: Sender<ReplayCounters>,
) -> io::Result<()> {
    let producer = lull::producer::EsmProducer::connect(socket, &TRACKING_KINDS)
        .map_err(|e| io::Error::other(e.to_string()))?;
    run_producer(trace, start_ns, producer, stop, report)
}

/// As [`run_producer_driver`], with a producer already connected (so that its connection and
/// routes are made before a measurement window opens).
///
/// # Errors
/// The kernel's error setting up the loop.
pub fn run_producer(
    trace: Option<&Trace>,
    start_ns: u64,
    producer: lull::producer::EsmProducer,
    stop: &EventFd,
    report: Sender<ReplayCounters>,
) -> io::Result<()> {
    drive(trace, start_ns, producer, stop, report)
}

// ---------------------------------------------------------------------------------------------
// ESM: the app side (the daemon is `lulld::daemon::Daemon`).

/// Runs the ESM model's app on this thread: connect, register the tracking handlers, and call
/// `esm_wait` until the daemon goes away.
///
/// # Errors
/// A client error other than the daemon going away at the end.
pub fn run_esm_app(
    socket: &std::path::Path,
    app: TrackingApp,
    cell: &AppCell,
    ready: impl FnOnce(),
) -> Result<(), lull::client::ClientError> {
    let shared = Rc::new(RefCell::new(app));
    let mut client = lull::client::EsmClient::connect(socket)?;
    for kind in TRACKING_KINDS {
        let a = Rc::clone(&shared);
        client.register(kind, move |ev| a.borrow_mut().on_event(ev))?;
    }
    let a = Rc::clone(&shared);
    client.on_overflow(move |dropped, _, _| a.borrow_mut().on_overflow(dropped));
    ready();
    let result = loop {
        match client.wait() {
            Ok(_) => {}
            Err(lull::client::ClientError::DaemonGone) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    drop(client);
    let app = Rc::try_unwrap(shared).map(RefCell::into_inner).ok();
    *cell
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = app;
    result
}

// ---------------------------------------------------------------------------------------------
// Baselines: hubs.

struct Hub {
    to_app: OwnedFd,
    seq: u64,
    buf: Vec<u8>,
    /// Moves held for the next frame (vsync model).
    batch: Vec<(RawEvent, u64)>,
    vsync: Option<TimerFd>,
    vsync_armed: bool,
    dropped: u64,
}

impl Hub {
    /// Packages `raw` the way the ESM's interpreter does and sends it to the app.
    fn forward(&mut self, raw: RawEvent, stamp_ns: u64) {
        let (kind, payload) = interpret(raw);
        let event = AppEvent {
            seq: EventSeq(self.seq),
            kind,
            payload,
            injected_ns: stamp_ns,
        };
        self.seq += 1;
        DaemonMsg::Event {
            handler: HandlerId(0),
            event,
        }
        .encode(&mut self.buf);
        if sys::send_msg(self.to_app.as_raw_fd(), &self.buf).is_err() {
            self.dropped += 1;
        }
    }

    fn flush(&mut self) {
        for (raw, t) in std::mem::take(&mut self.batch) {
            self.forward(raw, t);
        }
    }
}

/// Runs a baseline hub on this thread until `stop`: reads the device queue `device_r` and
/// forwards to the app over `to_app` (a non-blocking `SOCK_SEQPACKET` end). Returns the events
/// it could not forward.
///
/// # Errors
/// The kernel's error setting up the loop.
pub fn run_hub(
    model: DeliveryModel,
    device_r: OwnedFd,
    to_app: OwnedFd,
    stop: &EventFd,
) -> io::Result<u64> {
    sys::set_nonblocking(to_app.as_raw_fd(), true)?;
    let mut lp: EventLoop<Hub> = EventLoop::new()?;
    lp.insert(stop_source(stop.raw()))?;
    let mut hub = Hub {
        to_app,
        seq: 0,
        buf: Vec::with_capacity(MAX_MESSAGE),
        batch: Vec::new(),
        vsync: None,
        vsync_armed: false,
        dropped: 0,
    };
    match model {
        DeliveryModel::Esm | DeliveryModel::EsmKdsGuis => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the ESM model has no hub",
            ))
        }
        DeliveryModel::BlockingMiddleware => {
            let src = EvdevSource::new(device_r, |h: &mut Hub, _: &mut LoopCtl<Hub>, raw, t| {
                h.forward(raw, t)
            })?;
            lp.insert(Box::new(src))?;
        }
        DeliveryModel::VsyncBatched => {
            let timer = TimerFd::new()?;
            let tfd = timer.raw();
            hub.vsync = Some(timer);
            let src = EvdevSource::new(device_r, |h: &mut Hub, _: &mut LoopCtl<Hub>, raw, t| {
                let (kind, _) = interpret(raw);
                if matches!(kind, EventKind::TouchMotion | EventKind::Mouse) {
                    h.batch.push((raw, t));
                    if !h.vsync_armed {
                        let at = next_boundary(monotonic_ns(), VSYNC_PERIOD_NS, 0);
                        if let Some(v) = &h.vsync {
                            h.vsync_armed = v.set_abs(at, 0).is_ok();
                        }
                    }
                } else {
                    // Order is kept: moves before a press or release go out with it.
                    h.flush();
                    h.forward(raw, t);
                }
            })?;
            lp.insert(Box::new(src))?;
            lp.insert(Box::new(FnSource {
                fd: tfd,
                f: |h: &mut Hub, _: &mut LoopCtl<Hub>| {
                    if fired(h.vsync.as_ref()) {
                        h.vsync_armed = false;
                        h.flush();
                    }
                    PostAction::Continue
                },
            }))?;
        }
        DeliveryModel::Pull16ms => {
            let timer = TimerFd::new()?;
            timer.set_abs(
                next_boundary(monotonic_ns(), PULL_PERIOD_NS, 0),
                PULL_PERIOD_NS,
            )?;
            let tfd = timer.raw();
            // The device queue is read only when the timer fires: the source is driven by the
            // tick, never registered on its own descriptor.
            let mut device =
                EvdevSource::new(device_r, |h: &mut Hub, _: &mut LoopCtl<Hub>, raw, t| {
                    h.forward(raw, t)
                })?;
            lp.insert(Box::new(FnSource {
                fd: tfd,
                f: move |h: &mut Hub, ctl: &mut LoopCtl<Hub>| {
                    let _ = timer.take_expirations();
                    let _ = device.ready(h, ctl);
                    PostAction::Continue
                },
            }))?;
        }
    }
    lp.run(&mut hub)?;
    Ok(hub.dropped)
}

// ---------------------------------------------------------------------------------------------
// Baselines: apps.

impl BaselineHandler for TrackingApp {
    fn on_event(&mut self, ev: &AppEvent) {
        TrackingApp::on_event(self, ev);
    }

    fn on_frame(&mut self) {
        TrackingApp::on_frame(self);
    }
}

// ---------------------------------------------------------------------------------------------
// The raw one-hop reference.

/// Added to the eventfd counter by the waker to end the reference run; an event adds 1, so the
/// low half of what the sleeper reads counts events and the high half says stop.
const ONE_HOP_STOP: u64 = 1 << 32;

/// What the one-hop reference measured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OneHop {
    /// One per wake-up of the sleeper.
    pub latencies_ns: Vec<u64>,
    /// Events the sleeper consumed (equal to the trace's length unless an error cut it short).
    pub events: u64,
}

/// The floor any push model pays for one hop on this machine: a waker thread, paced by the
/// trace's times from `start_ns` (absolute timerfd), stamps the time into memory shared with a
/// sleeper thread and writes an eventfd; the sleeper, blocked in `read` on it, takes
/// latency = woken − stamp. One hop, no protocol, no copies but the 8-byte counter. Returns one
/// latency per wake-up (events the sleeper found merged in one read count once, at the latest
/// stamp).
///
/// # Errors
/// The kernel's error creating or using the descriptors.
pub fn run_one_hop(trace: &Trace, start_ns: u64) -> io::Result<OneHop> {
    use std::sync::atomic::{AtomicU64, Ordering};
    // A blocking eventfd: the sleeper sleeps in `read` itself, not in epoll.
    let efd = Arc::new(lull_os::sys::blocking_eventfd()?);
    let stamp = Arc::new(AtomicU64::new(0));
    let sleeper = {
        let (efd, stamp) = (Arc::clone(&efd), Arc::clone(&stamp));
        let capacity = trace.events.len();
        std::thread::Builder::new()
            .name("lull-one-hop".into())
            .spawn(move || -> io::Result<OneHop> {
                let mut out = OneHop {
                    latencies_ns: Vec::with_capacity(capacity),
                    events: 0,
                };
                let mut b = [0u8; 8];
                loop {
                    let n = sys::read(efd.as_raw_fd(), &mut b)?;
                    let woken = monotonic_ns();
                    if n != 8 {
                        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "short read"));
                    }
                    let c = u64::from_ne_bytes(b);
                    let events = c & (ONE_HOP_STOP - 1);
                    if events > 0 {
                        out.events += events;
                        out.latencies_ns
                            .push(woken.saturating_sub(stamp.load(Ordering::Acquire)));
                    }
                    if c >= ONE_HOP_STOP {
                        return Ok(out);
                    }
                }
            })?
    };
    let waker = (|| -> io::Result<()> {
        let timer = TimerFd::new()?;
        let ep = sys::Epoll::new()?;
        ep.add(timer.raw(), 0)?;
        let mut ready = Vec::new();
        for e in &trace.events {
            timer.set_abs(start_ns + e.at_ns, 0)?;
            loop {
                ready.clear();
                ep.wait_forever(&mut ready)?;
                if timer.take_expirations()? > 0 {
                    break;
                }
            }
            stamp.store(monotonic_ns(), Ordering::Release);
            sys::write_all_once(efd.as_raw_fd(), &1u64.to_ne_bytes())?;
        }
        Ok(())
    })();
    // Stop the sleeper whatever happened above.
    let stopped = sys::write_all_once(efd.as_raw_fd(), &ONE_HOP_STOP.to_ne_bytes());
    let out = sleeper
        .join()
        .map_err(|_| io::Error::other("the one-hop sleeper panicked"))??;
    waker?;
    stopped?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_model::time::NS_PER_MS;

    #[test]
    fn the_one_hop_reference_consumes_every_event() {
        let trace = Trace {
            events: (0..20)
                .map(|i| lull_workload::TimedEvent {
                    at_ns: i * NS_PER_MS,
                    raw: RawEvent::Touch {
                        phase: lull_model::TouchPhase::Move,
                        x: 0,
                        y: 0,
                    },
                })
                .collect(),
        };
        let hop = run_one_hop(&trace, monotonic_ns()).unwrap();
        // Every event is consumed; two are merged into one wake-up only if the sleeper was kept
        // off the CPU past the next event's time.
        assert_eq!(hop.events, 20);
        assert!((1..=20).contains(&hop.latencies_ns.len()));
    }
}
