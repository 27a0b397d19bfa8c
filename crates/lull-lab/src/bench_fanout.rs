//! `lull bench fanout`: how many (event, app) deliveries per second the daemon hands out when many
//! apps listen to one source, and whether every one of them is accounted for.
//!
//! The stack is real and in this process: a [`Daemon`] on its own thread with a UDP source
//! ([`Daemon::add_net`] on a loopback socket, read by the daemon's source thread, a producer
//! writing each datagram into every registered client's ring), N client threads, each with its own
//! [`EsmClient`] registered for `NetMessage` and calling `esm_wait` in a loop, and a sender
//! thread that paces R datagrams per second with an absolute timerfd ticking every millisecond
//! (each tick sends the datagrams due by then, so the offered load comes in per-millisecond
//! bursts). Every accepted event is due to every client, so
//! `deliveries expected = accepted × clients`, and each one must end up either handled or
//! reported dropped by an overflow marker; what is neither is `lost_uncounted`, which must be 0.
//! Datagrams the kernel drops because the daemon's socket buffer is full never become events;
//! they are read from the kernel's own per-socket counter (`/proc/net/udp`, column `drops`).

use std::cell::Cell;
use std::net::UdpSocket;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use lull::client::{ClientError, EsmClient, Handled};
use lull_esm::{EsmConfig, EsmCounters};
use lull_model::time::{ns_to_ms, NS_PER_MS, NS_PER_S};
use lull_model::EventKind;
use lull_os::procfs::{self, MeasureError};
use lull_os::sys::{self, Epoll, TimerFd};
use lulld::daemon::{Daemon, DaemonConfig, DaemonCounters, DaemonError, SourcesThread, Stopper};
use serde::Serialize;

use crate::measure::{self, StackThread, ThreadDelta, Window};

/// The sender's pacing tick: 1 ms, so at 25,000 events/s a burst is 25 datagrams.
pub const SEND_TICK_NS: u64 = NS_PER_MS;
/// Time between starting the sender and its first datagram, so the window opens first.
pub const SEND_LEAD_NS: u64 = 20 * NS_PER_MS;
/// The network channel the daemon tags the bench's datagrams with.
pub const FANOUT_CHANNEL: u32 = 16;
/// Most clients accepted: threads of this process, each with a socket and a stack.
pub const MAX_CLIENTS: usize = 1_000;
/// Highest rate accepted, events per second (about what one sender thread can write over
/// loopback here).
pub const MAX_RATE_PER_S: u64 = 1_000_000;
/// Longest run accepted, seconds.
pub const MAX_SECONDS: u64 = 600;
/// Longest run accepted.
pub const MAX_DURATION_NS: u64 = MAX_SECONDS * NS_PER_S;
/// The queue bound a run uses unless told otherwise: the ESM's own default.
pub const DEFAULT_QUEUE_BOUND: usize = lull_esm::DEFAULT_QUEUE_BOUND;
/// After the last datagram, how long the clients may stay without progress before the rest is
/// declared lost: far above any queueing delay of a working stack.
pub const DRAIN_QUIET_NS: u64 = 2 * NS_PER_S;
/// How often the harness looks at the clients' progress while draining.
const DRAIN_POLL: Duration = Duration::from_millis(1);

/// Settings of one run.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FanoutConfig {
    pub clients: usize,
    /// Datagrams (events) per second offered to the daemon.
    pub rate_per_s: u64,
    /// How long the sender sends.
    pub duration_ns: u64,
    /// Each app's private queue bound in the daemon (the ESM's default unless changed).
    pub queue_bound: usize,
}

impl FanoutConfig {
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
        if !(SEND_TICK_NS..=MAX_DURATION_NS).contains(&self.duration_ns) {
            return Err(FanoutError::BadConfig(format!(
                "duration must be 1 ms..={} s, got {} ns",
                MAX_DURATION_NS / NS_PER_S,
                self.duration_ns
            )));
        }
        if self.queue_bound == 0 {
            return Err(FanoutError::BadConfig(
                "queue bound must be at least 1".into(),
            ));
        }
        Ok(())
    }

    /// Events the sender sends: `rate × duration`, at least one.
    #[must_use]
    pub fn events(&self) -> u64 {
        let n = u128::from(self.rate_per_s) * u128::from(self.duration_ns) / u128::from(NS_PER_S);
        u64::try_from(n).unwrap_or(u64::MAX).max(1)
    }
}

impl FanoutConfig {
    /// A run of `seconds` with the default queue bound.
    #[must_use]
    pub fn new(clients: usize, rate_per_s: u64, seconds: u64) -> FanoutConfig {
        FanoutConfig {
            clients,
            rate_per_s,
            duration_ns: seconds.saturating_mul(NS_PER_S),
            queue_bound: DEFAULT_QUEUE_BOUND,
        }
    }
}

impl Default for FanoutConfig {
    fn default() -> Self {
        FanoutConfig {
            clients: 20,
            rate_per_s: 25_000,
            duration_ns: 5 * NS_PER_S,
            queue_bound: DEFAULT_QUEUE_BOUND,
        }
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
    #[error("measuring threads: {0}")]
    Measure(#[from] MeasureError),
    #[error("system call: {0}")]
    Io(#[from] std::io::Error),
    #[error("a bench thread failed: {0}")]
    Thread(String),
}

/// What one run measured. Counts are over the whole run; `*_cpu_ms` and `*_wakeups` over the
/// measured window (first datagram to the end of the drain), from `/proc/self/task/TID`.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct FanoutReport {
    pub clients: usize,
    pub rate_per_s: u64,
    pub duration_s: f64,
    pub queue_bound: usize,
    /// Datagrams the sender wrote.
    pub events_sent: u64,
    /// Datagrams the sender could not write (counted, not retried).
    pub send_failed: u64,
    /// Datagrams the kernel dropped at the daemon's full socket buffer (its `drops` counter).
    pub socket_dropped: u64,
    /// Datagrams the daemon's source thread read and produced.
    pub events_injected: u64,
    /// Events routed to at least one client (someone listened).
    pub events_accepted: u64,
    /// Events pushed into the clients' rings (`events_accepted × clients` when every client
    /// was registered throughout).
    pub deliveries_expected: u64,
    /// Events the clients' handlers ran.
    pub delivered: u64,
    /// Deliveries the clients were told they lost (the sum of their overflow markers).
    pub dropped_counted: u64,
    /// Overflow markers received.
    pub overflow_markers: u64,
    /// Expected deliveries neither delivered nor counted dropped. Must be 0.
    pub lost_uncounted: u64,
    /// Deliveries beyond the expected (an event handled twice). Must be 0.
    pub excess: u64,
    /// Deliveries whose sequence number was not above the client's previous one. Must be 0.
    pub out_of_order: u64,
    /// Clients the daemon closed (their socket was full) or that failed.
    pub clients_failed: u64,
    /// Delivered events per second, from the first datagram sent to the last handler run.
    pub deliveries_per_s: f64,
    /// Datagrams per second the sender achieved over its sending time.
    pub sent_per_s: f64,
    pub daemon_cpu_ms: f64,
    /// The daemon thread's voluntary context switches (sleeps) in the window.
    pub daemon_wakeups: u64,
    /// The daemon loop's returns from `epoll_wait` over its whole life (its own counter).
    pub daemon_loop_wakeups: u64,
    /// The daemon's source thread (the producer writing the clients' rings): CPU time and
    /// wake-ups in the window.
    pub producer_cpu_ms: f64,
    pub producer_wakeups: u64,
    /// The producer's side of the clients' rings: pushes, drops, markers written.
    pub rings: lull_os::event_ring::RingCounters,
    pub clients_cpu_ms: f64,
    pub clients_wakeups: u64,
    pub sender_cpu_ms: f64,
    pub window_s: f64,
    pub esm: EsmCounters,
    pub daemon: DaemonCounters,
}

impl FanoutReport {
    /// Whether every expected delivery is accounted for exactly once, in order.
    #[must_use]
    pub fn accounted(&self) -> bool {
        self.lost_uncounted == 0 && self.excess == 0 && self.out_of_order == 0
    }
}

/// Progress a client shares with the harness while the run goes on.
#[derive(Debug, Default)]
struct Progress {
    /// Deliveries handled plus deliveries reported dropped.
    accounted: AtomicU64,
    last_ns: AtomicU64,
}

/// What a client thread returns.
#[derive(Clone, Copy, Debug, Default)]
struct ClientResult {
    delivered: u64,
    dropped_counted: u64,
    overflow_markers: u64,
    out_of_order: u64,
    failed: bool,
}

fn bench_socket_path() -> PathBuf {
    use std::sync::atomic::AtomicU32;
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(std::env::temp_dir, PathBuf::from);
    dir.join(format!(
        "lull-fanout-{}-{}.sock",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

fn thread_err<E: std::fmt::Display>(e: E) -> FanoutError {
    FanoutError::Thread(e.to_string())
}

/// The kernel's count of datagrams dropped at the UDP socket `fd` (IPv4), from the `drops`
/// column of its line in `/proc/net/udp`, found by the socket's inode.
///
/// # Errors
/// When the socket or its line cannot be read.
pub fn udp_socket_drops(fd: i32) -> std::io::Result<u64> {
    let inode = {
        // SAFETY: `st` is written by fstat before it is read.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fd is a descriptor the caller owns; st is valid.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        st.st_ino
    };
    let table = std::fs::read_to_string("/proc/net/udp")?;
    parse_udp_drops(&table, inode).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no line for socket inode {inode} in /proc/net/udp"),
        )
    })
}

/// The `drops` (last) column of the line of `/proc/net/udp` whose `inode` (tenth column) is
/// `inode`.
fn parse_udp_drops(table: &str, inode: u64) -> Option<u64> {
    table.lines().skip(1).find_map(|line| {
        let cols: Vec<&str> = line.split_whitespace().collect();
        (cols.get(9)?.parse::<u64>().ok()? == inode)
            .then(|| cols.last()?.parse().ok())
            .flatten()
    })
}

/// One client: register for network messages, `esm_wait` until the daemon goes away.
fn run_client(path: &Path, progress: &Progress, ready: mpsc::Sender<StackThread>) -> ClientResult {
    let mut out = ClientResult::default();
    let Ok(mut client) = EsmClient::connect(path) else {
        out.failed = true;
        return out;
    };
    let handled = Rc::new(Cell::new(0u64));
    let h = Rc::clone(&handled);
    // The handler's whole work: count the delivery.
    if client
        .register(EventKind::NetMessage, move |_| h.set(h.get() + 1))
        .is_err()
    {
        out.failed = true;
        return out;
    }
    let _ = ready.send(StackThread::current("client"));
    drop(ready);
    let mut last_seq: Option<u64> = None;
    loop {
        let seen = match client.wait() {
            Ok(Handled::Event { seq, .. }) => {
                progress.accounted.fetch_add(1, Ordering::Relaxed);
                (seq.0, seq.0)
            }
            Ok(Handled::Overflow {
                dropped,
                first,
                last,
            }) => {
                progress.accounted.fetch_add(dropped, Ordering::Relaxed);
                (first.0, last.0)
            }
            Err(ClientError::DaemonGone) => break,
            Err(_) => {
                out.failed = true;
                break;
            }
        };
        progress
            .last_ns
            .store(sys::monotonic_ns(), Ordering::Release);
        if last_seq.is_some_and(|prev| seen.0 <= prev) {
            out.out_of_order += 1;
        }
        last_seq = Some(seen.1);
    }
    let c = client.counters();
    out.delivered = handled.get();
    out.dropped_counted = c.dropped_reported;
    out.overflow_markers = c.overflow_markers;
    out
}

/// What the sender did.
#[derive(Clone, Copy, Debug, Default)]
struct Sent {
    sent: u64,
    failed: u64,
    first_ns: u64,
    last_ns: u64,
    /// The sender thread's own CPU time (it exits before the window closes).
    cpu_ns: u64,
}

/// Sends `total` datagrams to `to` at `rate_per_s`, from `start_ns`, in per-tick bursts.
fn run_sender(
    to: std::net::SocketAddr,
    total: u64,
    rate_per_s: u64,
    start_ns: u64,
) -> Result<Sent, FanoutError> {
    let me = sys::gettid();
    let cpu_before = procfs::sample(me)?.run_ns;
    let sock = UdpSocket::bind("127.0.0.1:0")?;
    sock.connect(to)?;
    let timer = TimerFd::new()?;
    timer.set_abs(start_ns, SEND_TICK_NS)?;
    let ep = Epoll::new()?;
    ep.add(timer.raw(), 0)?;
    let mut ready = Vec::new();
    let mut s = Sent::default();
    let payload = [0u8; 1];
    while s.sent + s.failed < total {
        ready.clear();
        ep.wait_forever(&mut ready)?;
        timer.take_expirations()?;
        let now = sys::monotonic_ns();
        let elapsed = now.saturating_sub(start_ns);
        // Everything due by now: rate × elapsed, plus the first datagram at the start.
        let due_by_now = u128::from(rate_per_s) * u128::from(elapsed) / u128::from(NS_PER_S) + 1;
        let due = u64::try_from(due_by_now).unwrap_or(u64::MAX).min(total);
        if s.sent + s.failed == 0 {
            s.first_ns = now;
        }
        while s.sent + s.failed < due {
            match sock.send(&payload) {
                Ok(_) => s.sent += 1,
                Err(_) => s.failed += 1,
            }
        }
        s.last_ns = sys::monotonic_ns();
    }
    s.cpu_ns = procfs::sample(me)?.run_ns.saturating_sub(cpu_before);
    Ok(s)
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
    let path = bench_socket_path();
    let udp = UdpSocket::bind("127.0.0.1:0")?;
    let udp_addr = udp.local_addr()?;
    let udp_fd: OwnedFd = OwnedFd::from(udp);
    // A second descriptor of the same socket, to read its drop counter after the run.
    let udp_probe = udp_fd.try_clone()?;
    let drops_before = udp_socket_drops(udp_probe.as_raw_fd())?;

    // The daemon, built on its own thread (its sources are not `Send`).
    let (up_tx, up_rx) = mpsc::channel::<Result<(Stopper, SourcesThread, StackThread), String>>();
    let daemon_path = path.clone();
    let queue_bound = config.queue_bound;
    let daemon = thread::Builder::new().name("lull-daemon".into()).spawn(
        move || -> Result<_, FanoutError> {
            let built = Daemon::bind(&DaemonConfig {
                socket_path: daemon_path,
                esm: EsmConfig { queue_bound },
            })
            .map_err(FanoutError::from)
            .and_then(|mut d| {
                d.add_net(udp_fd, FANOUT_CHANNEL)?;
                Ok(d)
            });
            let d = match built {
                Ok(d) => d,
                Err(e) => {
                    let _ = up_tx.send(Err(e.to_string()));
                    return Err(e);
                }
            };
            let _ = up_tx.send(Ok((
                d.stopper(),
                d.sources_thread(),
                StackThread::current("daemon"),
            )));
            Ok(d.run()?)
        },
    )?;
    let (stopper, sources_thread, daemon_thread) = up_rx
        .recv()
        .map_err(thread_err)?
        .map_err(FanoutError::Thread)?;
    let stop_daemon = |stopper: &Stopper| stopper.stop();

    // The clients.
    let progress: Vec<Arc<Progress>> = (0..config.clients).map(|_| Arc::default()).collect();
    let (ready_tx, ready_rx) = mpsc::channel::<StackThread>();
    let mut clients = Vec::with_capacity(config.clients);
    for (i, p) in progress.iter().enumerate() {
        let (p, path, ready) = (Arc::clone(p), path.clone(), ready_tx.clone());
        let spawned = thread::Builder::new()
            .name(format!("lull-client-{i}"))
            .spawn(move || run_client(&path, &p, ready));
        match spawned {
            Ok(h) => clients.push(h),
            Err(e) => {
                stop_daemon(&stopper);
                return Err(e.into());
            }
        }
    }
    drop(ready_tx);
    // Every client that registered sends its thread once; one that failed drops its sender.
    let client_threads: Vec<StackThread> = ready_rx.iter().collect();
    // Wait until the daemon has every registered client in EV_WAIT, asking over a control
    // connection (an app with no registrations) that closes before the window opens.
    let settled = (|| -> Result<(), FanoutError> {
        let mut control = EsmClient::connect(&path)?;
        let deadline = Instant::now() + measure::SETTLE_TIMEOUT;
        while (control.stats()?.waiting as usize) < client_threads.len()
            && Instant::now() < deadline
        {
            thread::sleep(DRAIN_POLL);
        }
        Ok(())
    })();
    if let Err(e) = settled {
        stop_daemon(&stopper);
        return Err(e);
    }

    let mut measured = vec![daemon_thread];
    // The daemon's source thread, the producer that reads the socket and writes the rings.
    if let Some(tid) = sources_thread.tid() {
        measured.push(StackThread {
            role: "producer".into(),
            tid,
        });
    }
    measured.extend(client_threads.iter().cloned());
    let pid = std::process::id() as i32;
    let tids: Vec<(i32, i32)> = measured.iter().map(|t| (pid, t.tid)).collect();
    measure::wait_asleep(&tids, measure::SETTLE_TIMEOUT);
    let start_ns = sys::monotonic_ns() + SEND_LEAD_NS;
    let rate = config.rate_per_s;
    let window = Window::open(&measured);
    let sender = match thread::Builder::new()
        .name("lull-sender".into())
        .spawn(move || run_sender(udp_addr, total, rate, start_ns))
    {
        Ok(h) => h,
        Err(e) => {
            stop_daemon(&stopper);
            return Err(e.into());
        }
    };
    let sent = sender
        .join()
        .map_err(|_| thread_err("the sender panicked"))?;

    // Drain: wait until the clients stop making progress for DRAIN_QUIET_NS, or until they have
    // accounted for every delivery the daemon owes them.
    let accounted = || {
        progress
            .iter()
            .map(|p| p.accounted.load(Ordering::Relaxed))
            .sum::<u64>()
    };
    let owed = u64::try_from(client_threads.len()).unwrap_or(u64::MAX);
    let mut last = accounted();
    let mut last_change = Instant::now();
    let quiet = Duration::from_nanos(DRAIN_QUIET_NS);
    let sent_ok = sent.as_ref().map_or(0, |s| s.sent);
    while last_change.elapsed() < quiet {
        // Every datagram sent reaches every client unless the kernel dropped it at the socket;
        // stop early once all the others are in.
        let dropped_now =
            udp_socket_drops(udp_probe.as_raw_fd()).map_or(0, |d| d.saturating_sub(drops_before));
        if last >= sent_ok.saturating_sub(dropped_now).saturating_mul(owed) {
            break;
        }
        thread::sleep(DRAIN_POLL);
        let now = accounted();
        if now != last {
            last = now;
            last_change = Instant::now();
        }
    }
    let window_result = window.and_then(|w| w.close());
    stop_daemon(&stopper);
    let results: Vec<ClientResult> = clients
        .into_iter()
        .map(|h| {
            h.join().unwrap_or(ClientResult {
                failed: true,
                ..ClientResult::default()
            })
        })
        .collect();
    let report = daemon
        .join()
        .map_err(|_| thread_err("the daemon panicked"))??;
    report.accounting.map_err(FanoutError::Thread)?;
    let sent = sent?;
    let (threads, window_ns) = window_result?;
    let socket_dropped = udp_socket_drops(udp_probe.as_raw_fd())?.saturating_sub(drops_before);

    let failed_to_start = config.clients - client_threads.len();
    // The datagrams are a producer's (the daemon's source thread): every one routed is pushed
    // into every registered client's ring, so what is owed is the rings' pushes.
    let src = report.sources.unwrap_or_default();
    let events_accepted = src.producer.events - src.producer.unrouted;
    let expected = src.rings.produced;
    let delivered: u64 = results.iter().map(|r| r.delivered).sum();
    let dropped_counted: u64 = results.iter().map(|r| r.dropped_counted).sum();
    let last_delivery_ns = progress
        .iter()
        .map(|p| p.last_ns.load(Ordering::Acquire))
        .max()
        .unwrap_or(0);
    let span_ns = last_delivery_ns.saturating_sub(sent.first_ns);
    let role_sum = |role: &str, f: fn(&ThreadDelta) -> f64| -> f64 {
        threads.iter().filter(|t| t.role == role).map(f).sum()
    };
    Ok(FanoutReport {
        clients: config.clients,
        rate_per_s: config.rate_per_s,
        duration_s: config.duration_ns as f64 / NS_PER_S as f64,
        queue_bound: config.queue_bound,
        events_sent: sent.sent,
        send_failed: sent.failed,
        socket_dropped,
        events_injected: src.producer.events,
        events_accepted,
        deliveries_expected: expected,
        delivered,
        dropped_counted,
        overflow_markers: results.iter().map(|r| r.overflow_markers).sum(),
        lost_uncounted: expected.saturating_sub(delivered + dropped_counted),
        excess: (delivered + dropped_counted).saturating_sub(expected),
        out_of_order: results.iter().map(|r| r.out_of_order).sum(),
        clients_failed: results.iter().filter(|r| r.failed).count() as u64 + failed_to_start as u64,
        deliveries_per_s: if span_ns > 0 {
            delivered as f64 * NS_PER_S as f64 / span_ns as f64
        } else {
            0.0
        },
        sent_per_s: {
            let ns = sent.last_ns.saturating_sub(sent.first_ns);
            if ns > 0 {
                sent.sent as f64 * NS_PER_S as f64 / ns as f64
            } else {
                0.0
            }
        },
        daemon_cpu_ms: role_sum("daemon", |t| t.cpu_ms),
        daemon_wakeups: role_sum("daemon", |t| t.wakeups as f64) as u64,
        producer_cpu_ms: role_sum("producer", |t| t.cpu_ms),
        producer_wakeups: role_sum("producer", |t| t.wakeups as f64) as u64,
        daemon_loop_wakeups: report.counters.loop_wakeups,
        clients_cpu_ms: role_sum("client", |t| t.cpu_ms),
        clients_wakeups: role_sum("client", |t| t.wakeups as f64) as u64,
        sender_cpu_ms: ns_to_ms(sent.cpu_ns),
        window_s: ns_to_ms(window_ns) / 1000.0,
        esm: report.esm,
        daemon: report.counters,
        rings: src.rings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drops_column_is_found_by_inode() {
        let table = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
  1: 0100007F:A1B2 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4242 2 0000000000000000 17\n\
  2: 0100007F:A1B3 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4243 2 0000000000000000 0\n";
        assert_eq!(parse_udp_drops(table, 4242), Some(17));
        assert_eq!(parse_udp_drops(table, 4243), Some(0));
        assert_eq!(parse_udp_drops(table, 9), None);
    }

    #[test]
    fn settings_out_of_range_are_named() {
        let ok = FanoutConfig::default();
        assert!(ok.validate().is_ok());
        for bad in [
            FanoutConfig { clients: 0, ..ok },
            FanoutConfig {
                clients: MAX_CLIENTS + 1,
                ..ok
            },
            FanoutConfig {
                rate_per_s: 0,
                ..ok
            },
            FanoutConfig {
                duration_ns: 0,
                ..ok
            },
            FanoutConfig {
                queue_bound: 0,
                ..ok
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
