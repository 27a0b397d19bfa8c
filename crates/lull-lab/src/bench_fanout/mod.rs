//! `lull bench fanout`: how many (event, app) deliveries per second the data plane hands out when
//! many apps listen to one source, and whether every one of them is accounted for.
//!
//! The stack is real: a [`Daemon`] on its own thread, only the control plane (it creates the
//! rings and routes, and is not woken per event); N clients, each an app registered for
//! `NetMessage` and calling `esm_wait` in a loop — threads of this process with their own
//! [`EsmClient`], or separate C programs (`apps/esm-c/fanout_client.c`, built at run time with
//! `cc` against `liblull.a`, `include/lull.h` with default settings); and one producer thread,
//! an [`EsmProducer`] connected to the daemon, which writes each event into every client's ring.
//! The source is that producer thread itself, paced by an absolute timerfd ticking every
//! [`PUSH_TICK_NS`] (each tick pushes the events due by then as one burst): the bench measures
//! the delivery path from producer to handler, not a device or a socket in front of it.
//!
//! Every pushed event is due to every client, so `deliveries expected = events × clients`; each
//! must end up handled or reported dropped by an overflow marker, and what is neither is
//! `lost_uncounted`. The identity is read from both sides: the producer's ring counters
//! (written, dropped, markers) and the clients' own counts (handled, dropped as the markers
//! said), and the daemon's reading of every ring's memfd at the stop.

mod clients;
pub mod curve;

use std::path::PathBuf;
use std::thread;

use lull::client::ClientError;
use lull::producer::EsmProducer;
use lull_model::time::{ns_to_ms, NS_PER_MS, NS_PER_S};
use lull_model::{EventKind, RawEvent};
use lull_os::procfs::{self, MeasureError};
use lull_os::sys::{self, Epoll, TimerFd};
use lulld::daemon::{DaemonCounters, DaemonError};
use serde::Serialize;

use crate::live_stack::{DaemonSockets, LiveStack, SetupError};
use crate::measure::{self, StackThread, Window};

pub use clients::{build_c_client, FANOUT_CLIENT_C};

/// The producer's pacing tick: 1 ms, so at 100,000 events/s a burst is 100 events.
pub const PUSH_TICK_NS: u64 = NS_PER_MS;
/// Time between starting the producer thread and its first push, so the window opens first.
pub const PUSH_LEAD_NS: u64 = 20 * NS_PER_MS;
/// The network channel the bench's events carry.
pub const FANOUT_CHANNEL: u32 = 16;
/// Most clients accepted: each is a thread or a process with a connection and a ring.
pub const MAX_CLIENTS: usize = 1_000;
/// Highest rate accepted, events per second (each goes to every client).
pub const MAX_RATE_PER_S: u64 = 10_000_000;
/// Longest run accepted, seconds.
pub const MAX_SECONDS: u64 = 600;
/// Longest run accepted.
pub const MAX_DURATION_NS: u64 = MAX_SECONDS * NS_PER_S;
/// After the last push, how long the clients may read nothing before the rest is declared
/// lost: far above any scheduling delay of a working stack.
pub const DRAIN_QUIET_NS: u64 = 2 * NS_PER_S;
/// How often the producer looks at what its clients have read while draining.
pub const DRAIN_POLL_NS: u64 = 100_000;

/// How the clients run.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum ClientMode {
    /// Threads of this process, each with an [`EsmClient`].
    Threads,
    /// Separate C programs (`apps/esm-c/fanout_client.c`) built with `cc` against the static
    /// library in `lib_dir`.
    Processes { lib_dir: PathBuf, cc: String },
}

impl ClientMode {
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            ClientMode::Threads => "threads",
            ClientMode::Processes { .. } => "processes",
        }
    }

    /// C processes built against the `liblull.a` beside the running executable (as `lull`
    /// is built), with `$CC` or `cc`.
    ///
    /// # Errors
    /// [`FanoutError::CClient`] when the executable's directory cannot be found.
    pub fn processes_beside_exe() -> Result<ClientMode, FanoutError> {
        let exe = std::env::current_exe().map_err(|e| {
            FanoutError::CClient(format!("cannot find the running executable: {e}"))
        })?;
        Ok(ClientMode::Processes {
            lib_dir: exe.parent().map(PathBuf::from).unwrap_or_default(),
            cc: std::env::var("CC")
                .ok()
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| "cc".into()),
        })
    }
}

/// Settings of one run.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct FanoutConfig {
    pub clients: usize,
    /// Events per second the producer pushes; each goes to every client.
    pub rate_per_s: u64,
    /// How long the producer pushes.
    pub duration_ns: u64,
    pub mode: ClientMode,
}

impl FanoutConfig {
    /// A run of `seconds` with client threads.
    #[must_use]
    pub fn new(clients: usize, rate_per_s: u64, seconds: u64) -> FanoutConfig {
        FanoutConfig {
            clients,
            rate_per_s,
            duration_ns: seconds.saturating_mul(NS_PER_S),
            mode: ClientMode::Threads,
        }
    }

    /// Checks the settings.
    ///
    /// # Errors
    /// [`FanoutError::BadConfig`] naming the value out of range.
    pub fn validate(&self) -> Result<(), FanoutError> {
        if !(1..=MAX_CLIENTS).contains(&self.clients) {
            return Err(FanoutError::BadConfig(format!(
                "clients must be 1..={MAX_CLIENTS}, got {}",
                self.clients
            )));
        }
        if !(1..=MAX_RATE_PER_S).contains(&self.rate_per_s) {
            return Err(FanoutError::BadConfig(format!(
                "rate must be 1..={MAX_RATE_PER_S} events/s, got {}",
                self.rate_per_s
            )));
        }
        if !(PUSH_TICK_NS..=MAX_DURATION_NS).contains(&self.duration_ns) {
            return Err(FanoutError::BadConfig(format!(
                "duration must be 1 ms..={} s, got {} ns",
                MAX_DURATION_NS / NS_PER_S,
                self.duration_ns
            )));
        }
        Ok(())
    }

    /// Events the producer pushes: `rate × duration`, at least one.
    #[must_use]
    pub fn events(&self) -> u64 {
        let n = u128::from(self.rate_per_s) * u128::from(self.duration_ns) / u128::from(NS_PER_S);
        u64::try_from(n).unwrap_or(u64::MAX).max(1)
    }
}

impl Default for FanoutConfig {
    fn default() -> Self {
        FanoutConfig::new(20, 100_000, 5)
    }
}

/// Errors of a run.
#[derive(Debug, thiserror::Error)]
pub enum FanoutError {
    #[error("fan-out bench: {0}")]
    BadConfig(String),
    #[error("daemon: {0}")]
    Daemon(#[from] DaemonError),
    #[error("client: {0}")]
    Client(#[from] ClientError),
    #[error("C client: {0}")]
    CClient(String),
    #[error("C client: {0}")]
    CBuild(#[from] crate::c_client::CBuildError),
    #[error("the producer was routed to {routed} of {clients} clients")]
    Unrouted { routed: usize, clients: usize },
    #[error("measuring threads: {0}")]
    Measure(#[from] MeasureError),
    #[error("system call: {0}")]
    Io(#[from] std::io::Error),
    #[error("a bench thread failed: {0}")]
    Thread(String),
    #[error(transparent)]
    LiveDaemon(#[from] crate::live_stack::LiveDaemonError),
}

/// What one run measured. Counts are over the whole run; `*_cpu_ms` and `*_wakeups` over the
/// measured window (first push to the end of the drain), from `/proc`.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct FanoutReport {
    pub clients: usize,
    /// `threads` or `processes`.
    pub mode: &'static str,
    pub rate_per_s: u64,
    pub duration_s: f64,
    /// Records per ring (`lulld::daemon::RING_CAPACITY`).
    pub ring_capacity: u64,
    /// Events the producer pushed.
    pub events_pushed: u64,
    /// Bursts it pushed them in (one per pacing tick with something due).
    pub bursts: u64,
    /// `events_pushed × clients`: every event is due to every client.
    pub deliveries_expected: u64,
    /// The producer's side, summed over the rings: events written …
    pub ring_written: u64,
    /// … events dropped because the ring was full …
    pub ring_dropped: u64,
    /// … overflow markers written, and drops no marker covers yet (must be 0).
    pub ring_markers: u64,
    pub ring_unmarked: u64,
    /// Eventfd writes: wake-ups of clients that were blocked.
    pub ring_wakes: u64,
    /// The most records a ring held unread after a push (the clients' worst lag).
    pub ring_high_water: u64,
    /// Records still unread when the drain ended (0 unless a client stopped reading;
    /// `u64::MAX` when a client's index was impossible).
    pub ring_unread: u64,
    /// The clients' side: events their handlers ran …
    pub delivered: u64,
    /// … deliveries the overflow markers said were dropped …
    pub dropped_counted: u64,
    pub overflow_markers: u64,
    /// Expected deliveries neither handled nor counted dropped. Must be 0.
    pub lost_uncounted: u64,
    /// Deliveries beyond the expected (an event handled twice). Must be 0.
    pub excess: u64,
    /// Deliveries whose sequence number was not above the client's previous one. Must be 0.
    pub out_of_order: u64,
    /// Clients that failed to start or ended with an error.
    pub clients_failed: u64,
    /// Whether the producer's and the clients' counts agree (written = handled, dropped =
    /// counted dropped, and the daemon's reading of the rings the same).
    pub sides_agree: bool,
    /// Handled events per second, from the first push until the producer saw every ring read
    /// (it looks every [`DRAIN_POLL_NS`] once it has pushed the last event).
    pub deliveries_per_s: f64,
    /// Events per second the producer achieved over its pushing time.
    pub pushed_per_s: f64,
    pub producer_cpu_ms: f64,
    pub clients_cpu_ms: f64,
    /// The clients' voluntary context switches (sleeps) in the window.
    pub clients_wakeups: u64,
    pub daemon_cpu_ms: f64,
    pub daemon_wakeups: u64,
    /// The daemon loop's returns from `epoll_wait` over its whole life (control traffic only).
    pub daemon_loop_wakeups: u64,
    pub window_s: f64,
    pub daemon: DaemonCounters,
}

impl FanoutReport {
    /// Whether every expected delivery is accounted for exactly once, in order, from both sides.
    #[must_use]
    pub fn accounted(&self) -> bool {
        self.lost_uncounted == 0
            && self.excess == 0
            && self.out_of_order == 0
            && self.ring_unmarked == 0
            && self.sides_agree
    }

    /// Deliveries dropped (and counted) per delivery expected.
    #[must_use]
    pub fn loss(&self) -> f64 {
        if self.deliveries_expected == 0 {
            return 0.0;
        }
        (self.dropped_counted + self.lost_uncounted) as f64 / self.deliveries_expected as f64
    }
}

/// What one client reports at its end (a thread's return, a process's last line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
pub(crate) struct ClientResult {
    pub handled: u64,
    pub overflow_markers: u64,
    pub dropped: u64,
    pub out_of_order: u64,
    #[serde(skip)]
    pub failed: bool,
}

/// What the producer thread did.
#[derive(Clone, Copy, Debug, Default)]
struct Pushed {
    events: u64,
    bursts: u64,
    first_ns: u64,
    last_ns: u64,
    cpu_ns: u64,
    written: u64,
    dropped: u64,
    markers: u64,
    wakes: u64,
    unmarked: u64,
    high_water: u64,
    /// Records left unread when the drain ended (0 unless a client stopped reading).
    unread: u64,
    /// When the producer last saw its clients read something: when they had read everything,
    /// or their last progress before the drain gave up.
    drained_ns: u64,
}

fn thread_err<E: std::fmt::Display>(e: E) -> FanoutError {
    FanoutError::Thread(e.to_string())
}

/// Pushes `total` events at `rate_per_s` from `start_ns` in per-tick bursts, then writes the
/// markers still owed and waits until the clients have read everything (or read nothing for
/// [`DRAIN_QUIET_NS`]).
fn run_producer(
    mut producer: EsmProducer,
    total: u64,
    rate_per_s: u64,
    start_ns: u64,
) -> Result<Pushed, FanoutError> {
    let me = sys::gettid();
    let cpu_before = procfs::sample(me)?.run_ns;
    let timer = TimerFd::new()?;
    timer.set_abs(start_ns, PUSH_TICK_NS)?;
    let ep = Epoll::new()?;
    ep.add(timer.raw(), 0)?;
    let mut ready = Vec::new();
    let mut burst: Vec<(RawEvent, u64)> = Vec::new();
    let mut p = Pushed::default();
    while p.events < total {
        ready.clear();
        ep.wait_forever(&mut ready)?;
        timer.take_expirations()?;
        let now = sys::monotonic_ns();
        let elapsed = now.saturating_sub(start_ns);
        // Everything due by now: rate × elapsed, plus the first event at the start.
        let due_by_now = u128::from(rate_per_s) * u128::from(elapsed) / u128::from(NS_PER_S) + 1;
        let due = u64::try_from(due_by_now).unwrap_or(u64::MAX).min(total);
        if p.events == 0 {
            p.first_ns = now;
        }
        burst.clear();
        burst.extend((p.events..due).map(|i| {
            let ev = RawEvent::Net {
                channel: FANOUT_CHANNEL,
                len: u32::try_from(i % 1500).unwrap_or(0),
            };
            (ev, now)
        }));
        if !burst.is_empty() {
            producer.push_burst(&burst)?;
            p.bursts += 1;
        }
        p.events = due;
        p.last_ns = sys::monotonic_ns();
    }
    // Drain: markers need room, so flush until none is owed, and wait for the clients to read.
    let mut last_unread = u64::MAX;
    let mut last_change = sys::monotonic_ns();
    loop {
        let flushed = producer.flush();
        let unread = producer.unread().unwrap_or(u64::MAX);
        let now = sys::monotonic_ns();
        if flushed && unread == 0 {
            last_change = now;
            break;
        }
        if unread != last_unread {
            last_unread = unread;
            last_change = now;
        } else if now - last_change > DRAIN_QUIET_NS {
            break;
        }
        std::thread::sleep(std::time::Duration::from_nanos(DRAIN_POLL_NS));
    }
    let rc = producer.ring_counters();
    p.written = rc.delivered;
    p.dropped = rc.dropped;
    p.markers = rc.markers;
    p.wakes = rc.wakes;
    p.unmarked = producer.pending_dropped();
    p.high_water = producer.high_water();
    p.unread = producer.unread().unwrap_or(u64::MAX);
    p.drained_ns = last_change;
    p.cpu_ns = procfs::sample(me)?.run_ns.saturating_sub(cpu_before);
    Ok(p)
}

/// Runs the bench once.
///
/// # Errors
/// [`FanoutError`] when the stack cannot be set up or measured. Losses are not errors: they are
/// in the report ([`FanoutReport::accounted`]).
#[allow(clippy::too_many_lines)]
pub fn run(config: &FanoutConfig) -> Result<FanoutReport, FanoutError> {
    config.validate()?;
    let total = config.events();
    let scratch = lull_os::fileout::ScratchDir::new("lull-fanout")?;
    let c_program = match &config.mode {
        ClientMode::Threads => None,
        ClientMode::Processes { lib_dir, cc } => Some(build_c_client(scratch.path(), lib_dir, cc)?),
    };
    // The daemon on its own thread; an early return drops it, which stops and joins it.
    let live = LiveStack::new(DaemonSockets::in_dir(scratch.path())).thread_name("lull-daemon");
    let path = live.sockets().esm.clone();
    let (daemon, ()) = live.start(|_| Ok::<_, SetupError>(()))?;
    let daemon_thread = StackThread {
        role: "daemon".into(),
        tid: daemon.tid(),
    };
    let started = (|| {
        let clients = match &c_program {
            None => clients::Clients::threads(&path, config.clients)?,
            Some(bin) => clients::Clients::processes(bin, &path, config.clients)?,
        };
        let producer = EsmProducer::connect(&path, &[EventKind::NetMessage])?;
        let routed = producer.routes().len();
        if routed != clients.started() {
            return Err(FanoutError::Unrouted {
                routed,
                clients: clients.started(),
            });
        }
        Ok((clients, producer))
    })();
    let (clients, producer) = started?;
    let asleep: Vec<(i32, i32)> = std::iter::once((std::process::id() as i32, daemon_thread.tid))
        .chain(clients.tasks())
        .collect();
    measure::wait_asleep(&asleep, measure::SETTLE_TIMEOUT);
    let daemon_window = Window::open(std::slice::from_ref(&daemon_thread));
    let clients_before = clients.sample();
    let start_ns = sys::monotonic_ns() + PUSH_LEAD_NS;
    let rate = config.rate_per_s;
    let pushed = thread::Builder::new()
        .name("lull-producer".into())
        .spawn(move || run_producer(producer, total, rate, start_ns))
        .map_err(FanoutError::from)
        .and_then(|h| h.join().map_err(|_| thread_err("the producer panicked"))?);
    let clients_after = clients.sample();
    let daemon_delta = daemon_window.and_then(|w| w.close());
    let started_n = clients.started() as u64;
    daemon.request_stop();
    let results = clients.finish();
    let report = daemon.join()?;
    let pushed = pushed?;
    let (daemon_threads, window_ns) = daemon_delta?;
    let (clients_cpu_ns, clients_wakeups) = clients::usage(&clients_before?, &clients_after?);

    let expected = pushed.events * started_n;
    let delivered: u64 = results.iter().map(|r| r.handled).sum();
    let dropped_counted: u64 = results.iter().map(|r| r.dropped).sum();
    let daemon_rings = report
        .rings
        .iter()
        .fold((0u64, 0u64, 0u64), |(p, d, x), r| {
            let c = r.ring.counters;
            (p + c.produced, d + c.delivered, x + c.dropped)
        });
    let sides_agree = pushed.written == delivered
        && pushed.dropped == dropped_counted
        && daemon_rings == (expected, pushed.written, pushed.dropped);
    let span_ns = pushed.drained_ns.saturating_sub(pushed.first_ns);
    let per_s = |n: u64, ns: u64| {
        if ns > 0 {
            n as f64 * NS_PER_S as f64 / ns as f64
        } else {
            0.0
        }
    };
    Ok(FanoutReport {
        clients: config.clients,
        mode: config.mode.name(),
        rate_per_s: config.rate_per_s,
        duration_s: config.duration_ns as f64 / NS_PER_S as f64,
        ring_capacity: lulld::daemon::RING_CAPACITY,
        events_pushed: pushed.events,
        bursts: pushed.bursts,
        deliveries_expected: expected,
        ring_written: pushed.written,
        ring_dropped: pushed.dropped,
        ring_markers: pushed.markers,
        ring_unmarked: pushed.unmarked,
        ring_wakes: pushed.wakes,
        ring_high_water: pushed.high_water,
        ring_unread: pushed.unread,
        delivered,
        dropped_counted,
        overflow_markers: results.iter().map(|r| r.overflow_markers).sum(),
        lost_uncounted: expected.saturating_sub(delivered + dropped_counted),
        excess: (delivered + dropped_counted).saturating_sub(expected),
        out_of_order: results.iter().map(|r| r.out_of_order).sum(),
        clients_failed: results.iter().filter(|r| r.failed).count() as u64,
        sides_agree,
        deliveries_per_s: per_s(delivered, span_ns),
        pushed_per_s: per_s(
            pushed.events,
            pushed.last_ns.saturating_sub(pushed.first_ns),
        ),
        producer_cpu_ms: ns_to_ms(pushed.cpu_ns),
        clients_cpu_ms: ns_to_ms(clients_cpu_ns),
        clients_wakeups,
        daemon_cpu_ms: daemon_threads.iter().map(|t| t.cpu_ms).sum(),
        daemon_wakeups: daemon_threads.iter().map(|t| t.wakeups).sum(),
        daemon_loop_wakeups: report.counters.loop_wakeups,
        window_s: ns_to_ms(window_ns) / 1000.0,
        daemon: report.counters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_out_of_range_are_named() {
        let ok = FanoutConfig::default();
        assert!(ok.validate().is_ok());
        for bad in [
            FanoutConfig {
                clients: 0,
                ..ok.clone()
            },
            FanoutConfig {
                clients: MAX_CLIENTS + 1,
                ..ok.clone()
            },
            FanoutConfig {
                rate_per_s: 0,
                ..ok.clone()
            },
            FanoutConfig {
                rate_per_s: MAX_RATE_PER_S + 1,
                ..ok.clone()
            },
            FanoutConfig {
                duration_ns: 0,
                ..ok.clone()
            },
        ] {
            assert!(
                matches!(bad.validate(), Err(FanoutError::BadConfig(_))),
                "{bad:?}"
            );
        }
        assert_eq!(
            FanoutConfig {
                rate_per_s: 1000,
                duration_ns: NS_PER_S / 2,
                ..ok
            }
            .events(),
            500
        );
    }
}
