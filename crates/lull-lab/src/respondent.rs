//! The respondent of the text-messaging test (seed 000 chapter 6, figure 37): a TCP server that
//! answers every message at once with a reply of random words.
//!
//! Protocol: newline-delimited UTF-8 on a TCP stream. For every line received the server sends
//! one line back at once: a reply (`lull_workload::messaging::reply_text`, lower-case words, the
//! same on every connection for a given seed), or a line starting with [`ERROR_PREFIX`]:
//!
//! - a line that is not UTF-8 gets `error: not UTF-8` and the connection carries on;
//! - a line longer than [`MAX_RESPONDENT_LINE_BYTES`] (newline excluded) gets `error: line longer than 4096
//!   bytes` and the connection is closed;
//! - a client that disconnects mid-line loses that partial line, nothing else.
//!
//! Threads: one blocked in `accept`, one per connection blocked in `read`; no timeouts, no
//! polling. [`RespondentHandle::stop`] wakes the acceptor with a connection of its own, shuts
//! every open connection down (which ends its blocked `read`) and joins them all.

use std::io::{self, Read, Write};
use std::net::ToSocketAddrs;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};

use lull_apps::MAX_RESPONDENT_LINE_BYTES;
use lull_workload::messaging::reply_text;
use lull_workload::rng::SplitMix64;

/// Every error line starts with this; replies are lower-case words and never do.
pub const ERROR_PREFIX: &str = "error: ";
/// The reply seed unless [`Respondent::with_seed`] sets one.
pub const DEFAULT_SEED: u64 = 1;

const NOT_UTF8_LINE: &[u8] = b"error: not UTF-8\n";
const TOO_LONG_LINE: &[u8] = b"error: line longer than 4096 bytes\n";
/// Bytes per `read`: one maximal line.
const READ_CHUNK_BYTES: usize = MAX_RESPONDENT_LINE_BYTES;

/// What the server did, totalled over all connections.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct RespondentCounters {
    /// Client connections accepted.
    pub connections: u64,
    /// Lines answered with a reply.
    pub messages: u64,
    /// Lines answered with an error line (not UTF-8, too long).
    pub bad_lines: u64,
    /// Bytes received, newlines and partial lines included.
    pub bytes_in: u64,
    /// Bytes sent, replies and error lines.
    pub bytes_out: u64,
}

#[derive(Debug, Default)]
struct Counters {
    connections: AtomicU64,
    messages: AtomicU64,
    bad_lines: AtomicU64,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
}

impl Counters {
    fn add(counter: &AtomicU64, n: usize) {
        counter.fetch_add(n as u64, Ordering::Relaxed);
    }

    fn snapshot(&self) -> RespondentCounters {
        RespondentCounters {
            connections: self.connections.load(Ordering::Relaxed),
            messages: self.messages.load(Ordering::Relaxed),
            bad_lines: self.bad_lines.load(Ordering::Relaxed),
            bytes_in: self.bytes_in.load(Ordering::Relaxed),
            bytes_out: self.bytes_out.load(Ordering::Relaxed),
        }
    }
}

/// A bound, not yet serving, respondent.
#[derive(Debug)]
pub struct Respondent {
    listener: TcpListener,
    seed: u64,
}

impl Respondent {
    /// Binds the listening socket (`"127.0.0.1:0"` picks a free port).
    ///
    /// # Errors
    /// The `bind` error.
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<Respondent> {
        Ok(Respondent {
            listener: TcpListener::bind(addr)?,
            seed: DEFAULT_SEED,
        })
    }

    /// The seed of every connection's reply sequence.
    #[must_use]
    pub fn with_seed(self, seed: u64) -> Respondent {
        Respondent { seed, ..self }
    }

    /// The address clients connect to.
    ///
    /// # Errors
    /// The `getsockname` error.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves on a thread of its own until [`RespondentHandle::stop`].
    ///
    /// # Errors
    /// If the address cannot be read or the thread cannot be started.
    pub fn spawn(self) -> io::Result<RespondentHandle> {
        let addr = self.listener.local_addr()?;
        let shared = Arc::new(Shared {
            stopping: AtomicBool::new(false),
            counters: Counters::default(),
            connections: Mutex::new(Vec::new()),
            seed: self.seed,
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            let listener = self.listener;
            thread::Builder::new()
                .name("respondent-accept".into())
                .spawn(move || accept_loop(&listener, &shared))?
        };
        Ok(RespondentHandle {
            addr,
            shared,
            acceptor: Some(acceptor),
        })
    }
}

#[derive(Debug)]
struct Shared {
    stopping: AtomicBool,
    counters: Counters,
    /// Open connections: a handle on each socket (to shut it down) and its thread.
    connections: Mutex<Vec<Connection>>,
    seed: u64,
}

#[derive(Debug)]
struct Connection {
    id: u64,
    stream: TcpStream,
    thread: JoinHandle<()>,
}

impl Shared {
    fn connections(&self) -> MutexGuard<'_, Vec<Connection>> {
        // A panicking connection thread cannot leave the list half-changed (push and remove
        // are single operations), so a poisoned lock is still consistent.
        self.connections
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A serving respondent; dropping it stops it too.
#[derive(Debug)]
pub struct RespondentHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl RespondentHandle {
    /// The address clients connect to.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The counters so far (connections still open may add to them).
    #[must_use]
    pub fn counters(&self) -> RespondentCounters {
        self.shared.counters.snapshot()
    }

    /// Stops accepting, closes every connection, waits for all threads and returns the final
    /// counters.
    #[must_use]
    pub fn stop(mut self) -> RespondentCounters {
        self.shut_down();
        self.shared.counters.snapshot()
    }

    fn shut_down(&mut self) {
        let Some(acceptor) = self.acceptor.take() else {
            return;
        };
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wake the blocked accept with a connection of our own; the acceptor sees `stopping`
        // and returns, closing the listener. Should that connection fail (no file descriptor
        // left), the acceptor is left to end with the process rather than hang the stop.
        if TcpStream::connect(wake_addr(self.addr)).is_ok() {
            let _ = acceptor.join();
        }
        let open: Vec<Connection> = std::mem::take(&mut *self.shared.connections());
        for c in &open {
            let _ = c.stream.shutdown(Shutdown::Both);
        }
        for c in open {
            let _ = c.thread.join();
        }
    }
}

impl Drop for RespondentHandle {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// Where the stopper connects: the bound address, with an unspecified IP replaced by loopback.
fn wake_addr(addr: SocketAddr) -> SocketAddr {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, addr.port())
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    let mut next_id = 0u64;
    loop {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            // A connection that failed between SYN and accept, or a signal: keep serving.
            Err(e) if is_transient_accept_error(&e) => continue,
            Err(_) => return,
        };
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(handle) = stream.try_clone() else {
            continue;
        };
        shared.counters.connections.fetch_add(1, Ordering::Relaxed);
        let id = next_id;
        next_id += 1;
        let conn_shared = Arc::clone(shared);
        let mut list = shared.connections();
        let spawned = thread::Builder::new()
            .name("respondent-conn".into())
            .spawn(move || {
                serve(&stream, &conn_shared);
                conn_shared.connections().retain(|c| c.id != id);
            });
        // Registered under the lock the thread's own removal needs, so the removal always
        // finds its entry. If no thread could be started, `handle` is dropped: the client sees
        // the connection close.
        if let Ok(thread) = spawned {
            list.push(Connection {
                id,
                stream: handle,
                thread,
            });
        }
    }
}

fn is_transient_accept_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::Interrupted
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

/// Answers one connection's lines until it closes, fails or sends an overlong line.
fn serve(stream: &TcpStream, shared: &Shared) {
    let c = &shared.counters;
    let mut rng = SplitMix64::new(shared.seed);
    let mut pending: Vec<u8> = Vec::with_capacity(READ_CHUNK_BYTES);
    let mut chunk = vec![0u8; READ_CHUNK_BYTES];
    let mut out: Vec<u8> = Vec::new();
    loop {
        let n = match (&*stream).read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        Counters::add(&c.bytes_in, n);
        pending.extend_from_slice(&chunk[..n]);
        out.clear();
        let mut consumed = 0;
        let mut too_long = false;
        while let Some(pos) = pending[consumed..].iter().position(|&b| b == b'\n') {
            let line = &pending[consumed..consumed + pos];
            consumed += pos + 1;
            if line.len() > MAX_RESPONDENT_LINE_BYTES {
                too_long = true;
                break;
            }
            if std::str::from_utf8(line).is_ok() {
                out.extend_from_slice(reply_text(&mut rng).as_bytes());
                out.push(b'\n');
                Counters::add(&c.messages, 1);
            } else {
                out.extend_from_slice(NOT_UTF8_LINE);
                Counters::add(&c.bad_lines, 1);
            }
        }
        pending.drain(..consumed);
        too_long |= pending.len() > MAX_RESPONDENT_LINE_BYTES;
        if too_long {
            out.extend_from_slice(TOO_LONG_LINE);
            Counters::add(&c.bad_lines, 1);
        }
        if !out.is_empty() {
            if (&*stream).write_all(&out).is_err() {
                return;
            }
            Counters::add(&c.bytes_out, out.len());
        }
        if too_long {
            let _ = stream.shutdown(Shutdown::Both);
            return;
        }
    }
}
