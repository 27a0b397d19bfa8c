//! The fan-out bench's clients: threads of this process with an [`EsmClient`] each, or separate
//! C programs built from `apps/esm-c/fanout_client.c`. Both register for network messages,
//! count every delivery, check its order, and report when the daemon goes away.

use std::cell::Cell;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::rc::Rc;
use std::sync::mpsc;
use std::thread;

use lull::client::{ClientError, EsmClient, Handled};
use lull_model::EventKind;
use lull_os::procfs::{self, MeasureError, ThreadSample};
use lull_os::sys;

use super::{ClientResult, FanoutError};
use crate::c_client::{self, CProgram};

/// The C client's source, built by [`build_c_client`].
pub const FANOUT_CLIENT_C: &str = include_str!("../../../../apps/esm-c/fanout_client.c");

/// Compiles the C client in `dir` with `cc` against `lib_dir`'s static library; returns the
/// program's path.
///
/// # Errors
/// [`FanoutError::CBuild`] naming what is missing or the compiler's complaint.
pub fn build_c_client(dir: &Path, lib_dir: &Path, cc: &str) -> Result<PathBuf, FanoutError> {
    let program = CProgram {
        stem: "fanout_client",
        source: FANOUT_CLIENT_C,
        opt: "-O2",
    };
    Ok(c_client::build(dir, lib_dir, cc, program)?)
}

/// One client thread: register for network messages, `esm_wait` until the daemon goes away.
fn run_thread_client(path: &Path, ready: mpsc::Sender<i32>) -> ClientResult {
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
    let _ = ready.send(sys::gettid());
    drop(ready);
    let mut next_seq = 0u64;
    loop {
        let (first, last) = match client.wait() {
            Ok(Handled::Event { seq, .. }) => (seq.0, seq.0),
            Ok(Handled::Overflow { first, last, .. }) => (first.0, last.0),
            Err(ClientError::DaemonGone) => break,
            Err(_) => {
                out.failed = true;
                break;
            }
        };
        if first < next_seq {
            out.out_of_order += 1;
        }
        next_seq = last + 1;
    }
    let c = client.counters();
    out.handled = handled.get();
    out.dropped = c.dropped_reported;
    out.overflow_markers = c.overflow_markers;
    out
}

/// A C client process and its output.
pub(super) struct CProcess {
    child: Child,
    stdout: BufReader<ChildStdout>,
    ready: bool,
}

/// The running clients.
pub(super) enum Clients {
    Threads {
        handles: Vec<thread::JoinHandle<ClientResult>>,
        tids: Vec<i32>,
    },
    Processes(Vec<CProcess>),
}

impl Clients {
    /// Starts `n` client threads; returns once each has registered (or failed).
    pub(super) fn threads(path: &Path, n: usize) -> Result<Clients, FanoutError> {
        let (ready_tx, ready_rx) = mpsc::channel::<i32>();
        let mut handles = Vec::with_capacity(n);
        for i in 0..n {
            let (path, ready) = (path.to_owned(), ready_tx.clone());
            handles.push(
                thread::Builder::new()
                    .name(format!("lull-client-{i}"))
                    .spawn(move || run_thread_client(&path, ready))?,
            );
        }
        drop(ready_tx);
        // Every client that registered sends its thread id once; one that failed drops its
        // sender.
        let tids = ready_rx.iter().collect();
        Ok(Clients::Threads { handles, tids })
    }

    /// Starts `n` C client processes; returns once each has said it is registered (or failed).
    pub(super) fn processes(bin: &Path, path: &Path, n: usize) -> Result<Clients, FanoutError> {
        let mut procs = Vec::with_capacity(n);
        for _ in 0..n {
            let mut child = Command::new(bin)
                .arg(path)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| FanoutError::CClient(format!("starting {}: {e}", bin.display())))?;
            let stdout = BufReader::new(child.stdout.take().expect("piped"));
            procs.push(CProcess {
                child,
                stdout,
                ready: false,
            });
        }
        for p in &mut procs {
            let mut line = String::new();
            p.ready = p.stdout.read_line(&mut line).is_ok() && line.trim() == "ready";
            if !p.ready {
                let _ = p.child.kill();
            }
        }
        Ok(Clients::Processes(procs))
    }

    /// Clients that registered.
    pub(super) fn started(&self) -> usize {
        match self {
            Clients::Threads { tids, .. } => tids.len(),
            Clients::Processes(p) => p.iter().filter(|p| p.ready).count(),
        }
    }

    /// `(pid, tid)` of every client that registered.
    pub(super) fn tasks(&self) -> Vec<(i32, i32)> {
        match self {
            Clients::Threads { tids, .. } => {
                let pid = std::process::id() as i32;
                tids.iter().map(|&t| (pid, t)).collect()
            }
            Clients::Processes(p) => p
                .iter()
                .filter(|p| p.ready)
                .map(|p| {
                    let pid = p.child.id() as i32;
                    (pid, pid)
                })
                .collect(),
        }
    }

    /// Every client task's counters now.
    pub(super) fn sample(&self) -> Result<Vec<ThreadSample>, MeasureError> {
        self.tasks()
            .into_iter()
            .map(|(pid, tid)| procfs::sample_thread(pid, tid))
            .collect()
    }

    /// Once the daemon has stopped: every client's result (one per client asked for).
    pub(super) fn finish(self) -> Vec<ClientResult> {
        let failed = ClientResult {
            failed: true,
            ..ClientResult::default()
        };
        match self {
            Clients::Threads { handles, .. } => handles
                .into_iter()
                .map(|h| h.join().unwrap_or(failed))
                .collect(),
            Clients::Processes(procs) => procs
                .into_iter()
                .map(|mut p| {
                    if !p.ready {
                        let _ = p.child.wait();
                        return failed;
                    }
                    let mut line = String::new();
                    let read = p.stdout.read_line(&mut line);
                    let status = p.child.wait();
                    match (read, status) {
                        (Ok(_), Ok(s)) if s.success() => {
                            serde_json::from_str::<ClientResult>(line.trim()).unwrap_or(failed)
                        }
                        _ => failed,
                    }
                })
                .collect(),
        }
    }
}

/// CPU time and voluntary switches (sleeps) of the clients between two samples.
pub(super) fn usage(before: &[ThreadSample], after: &[ThreadSample]) -> (u64, u64) {
    before
        .iter()
        .zip(after)
        .fold((0, 0), |(cpu, wakes), (b, a)| {
            (
                cpu + a.run_ns.saturating_sub(b.run_ns),
                wakes + a.voluntary.saturating_sub(b.voluntary),
            )
        })
}
