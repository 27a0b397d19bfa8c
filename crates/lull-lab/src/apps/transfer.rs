//! The two background workloads of seed 001's experiments (§4.1, Table II) as live KDS apps that
//! do their work on their declared background thread once told `go`:
//!
//! - **ZIP** compresses a file with a real compressor: `gzip -6 -c FILE` spawned by the
//!   background thread (so the kernel reports the compressor forked by a thread of the app, and
//!   a policy that follows forks knows it is the app's), its output discarded. CPU-bound.
//! - **FTP** downloads a file over TCP from a server (the harness's rate-limited one), writing it
//!   to a temporary file as a download manager does. I/O-bound with intermittent CPU.
//!
//! Each prints one line `{"done":true,"ok":B,"bytes":N}` on stdout when its work ends, and the
//! completion time (go → end) goes in its report.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;

use lull::kds_runtime::KdsApp;
use lull_model::{AppEvent, EventKind, ThreadCategory};
use lull_os::sys;

use super::{AppError, LiveApp, MessagingAppReport, Shared, Stats, VideoAppReport, WorkReport};

/// gzip's level: its default, 6 (`gzip(1)`).
pub const GZIP_LEVEL: &str = "-6";
/// Bytes per read of the download (a socket's typical receive chunk).
const DOWNLOAD_CHUNK_BYTES: usize = 64 * 1024;

/// What the app transfers.
#[derive(Clone, Debug)]
pub(crate) enum Job {
    Zip { input: PathBuf },
    Ftp { server: SocketAddr },
}

#[derive(Debug, Default)]
struct State {
    go_ns: Option<u64>,
    done_ns: Option<u64>,
    bytes: u64,
    ok: bool,
    error: Option<String>,
    stopping: bool,
}

#[derive(Debug)]
pub(crate) struct Transfer {
    shared: Shared<State>,
}

pub(crate) fn start(kds: &KdsApp, job: Job) -> Result<Arc<dyn LiveApp>, AppError> {
    let app = Arc::new(Transfer {
        shared: Shared::new(State::default()),
    });
    let a = Arc::clone(&app);
    kds.run_on(ThreadCategory::Background, move |_ctx| {
        {
            let g = a.shared.lock();
            let g = a.shared.wait_until(g, |s| s.stopping || s.go_ns.is_some());
            if g.stopping {
                return;
            }
        }
        let result = match &job {
            Job::Zip { input } => zip(input),
            Job::Ftp { server } => download(*server),
        };
        let done = sys::monotonic_ns();
        let mut g = a.shared.lock();
        g.done_ns = Some(done);
        match result {
            Ok(bytes) => {
                g.ok = true;
                g.bytes = bytes;
            }
            Err(e) => g.error = Some(e),
        }
        let line = format!("{{\"done\":true,\"ok\":{},\"bytes\":{}}}", g.ok, g.bytes);
        drop(g);
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    })?;
    Ok(app)
}

/// Compresses `input` with gzip; the bytes read.
fn zip(input: &std::path::Path) -> Result<u64, String> {
    let len = std::fs::metadata(input)
        .map_err(|e| format!("{}: {e}", input.display()))?
        .len();
    let status = Command::new("gzip")
        .arg(GZIP_LEVEL)
        .arg("-c")
        .arg(input)
        .stdout(Stdio::null())
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run gzip: {e}"))?;
    if status.success() {
        Ok(len)
    } else {
        Err(format!("gzip failed: {status}"))
    }
}

/// Downloads everything `server` sends into a temporary file (removed after); the bytes.
fn download(server: SocketAddr) -> Result<u64, String> {
    let mut s = TcpStream::connect(server).map_err(|e| format!("connect {server}: {e}"))?;
    let path = std::env::temp_dir().join(format!("lull-ftp-{}.part", std::process::id()));
    let mut file = std::fs::File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut buf = vec![0u8; DOWNLOAD_CHUNK_BYTES];
    let mut total = 0u64;
    let result = loop {
        match s.read(&mut buf) {
            Ok(0) => break Ok(total),
            Ok(n) => {
                total += n as u64;
                if let Err(e) = file.write_all(&buf[..n]) {
                    break Err(format!("{}: {e}", path.display()));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break Err(format!("download: {e}")),
        }
    };
    drop(file);
    let _ = std::fs::remove_file(&path);
    result
}

impl LiveApp for Transfer {
    fn kinds(&self) -> &'static [EventKind] {
        &[]
    }

    fn on_event(&self, ev: &AppEvent, start_ns: u64) {
        let _ = (ev, start_ns);
    }

    fn go(&self) {
        let mut g = self.shared.lock();
        if g.go_ns.is_none() {
            g.go_ns = Some(sys::monotonic_ns());
        }
        drop(g);
        self.shared.notify();
    }

    fn stop(&self) {
        self.shared.lock().stopping = true;
        self.shared.notify();
    }

    fn report(&self) -> (Stats, Option<MessagingAppReport>, Option<VideoAppReport>) {
        (Stats::default(), None, None)
    }

    fn work(&self) -> Option<WorkReport> {
        let g = self.shared.lock();
        Some(WorkReport {
            completion_ns: match (g.go_ns, g.done_ns) {
                (Some(a), Some(b)) if g.ok => Some(b.saturating_sub(a)),
                _ => None,
            },
            bytes: g.bytes,
            error: g.error.clone(),
            ..WorkReport::default()
        })
    }
}
