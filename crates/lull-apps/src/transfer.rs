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
            Err(e) => g.error = Some(e.to_string()),
        }
        let line = format!("{{\"done\":true,\"ok\":{},\"bytes\":{}}}", g.ok, g.bytes);
        drop(g);
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    })?;
    Ok(app)
}

/// Why a background job failed (the app's report carries the message).
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    #[error("{}: {source}", path.display())]
    File {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("cannot run gzip: {0}")]
    GzipStart(std::io::Error),
    #[error("gzip failed: {0}")]
    GzipFailed(std::process::ExitStatus),
    #[error("connect {server}: {source}")]
    Connect {
        server: SocketAddr,
        source: std::io::Error,
    },
    #[error("scratch directory: {0}")]
    Scratch(std::io::Error),
    #[error("download: {0}")]
    Download(std::io::Error),
}

fn file_error(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> TransferError + '_ {
    move |source| TransferError::File {
        path: path.to_owned(),
        source,
    }
}

/// Compresses `input` with gzip; the bytes read.
fn zip(input: &std::path::Path) -> Result<u64, TransferError> {
    let len = std::fs::metadata(input).map_err(file_error(input))?.len();
    let status = Command::new("gzip")
        .arg(GZIP_LEVEL)
        .arg("-c")
        .arg(input)
        .stdout(Stdio::null())
        .stdin(Stdio::null())
        .status()
        .map_err(TransferError::GzipStart)?;
    if status.success() {
        Ok(len)
    } else {
        Err(TransferError::GzipFailed(status))
    }
}

/// Downloads everything `server` sends into a temporary file (removed after); the bytes.
fn download(server: SocketAddr) -> Result<u64, TransferError> {
    let mut s =
        TcpStream::connect(server).map_err(|source| TransferError::Connect { server, source })?;
    // A private directory, so the file is never one another user planted (removed on return).
    let scratch = lull_os::fileout::ScratchDir::new("lull-ftp").map_err(TransferError::Scratch)?;
    let path = scratch.path().join("download.part");
    let mut file = std::fs::File::create(&path).map_err(file_error(&path))?;
    let mut buf = vec![0u8; DOWNLOAD_CHUNK_BYTES];
    let mut total = 0u64;
    let result = loop {
        match s.read(&mut buf) {
            Ok(0) => break Ok(total),
            Ok(n) => {
                total += n as u64;
                if let Err(e) = file.write_all(&buf[..n]) {
                    break Err(file_error(&path)(e));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break Err(TransferError::Download(e)),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The download's file used to be `$TMPDIR/lull-ftp-PID.part`, created with
    /// `File::create`: a symlink planted at that name had its target overwritten. The file now
    /// lives in a private scratch directory, and the planted link and its target are untouched.
    #[test]
    fn a_symlink_planted_at_the_old_download_name_is_left_alone() {
        let tmp = std::env::temp_dir();
        let pid = std::process::id();
        let target = tmp.join(format!("lull-ftp-test-target-{pid}"));
        let planted = tmp.join(format!("lull-ftp-{pid}.part"));
        let _ = std::fs::remove_file(&planted);
        std::fs::write(&target, b"not lull's").unwrap();
        std::os::unix::fs::symlink(&target, &planted).unwrap();

        const SENT_BYTES: usize = 100_000;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let server = listener.local_addr().unwrap();
        let sender = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            s.write_all(&vec![b'x'; SENT_BYTES]).unwrap();
        });
        let got = download(server);
        sender.join().unwrap();

        let link_still = std::fs::symlink_metadata(&planted).map(|m| m.file_type().is_symlink());
        let theirs = std::fs::read(&target);
        let _ = std::fs::remove_file(&planted);
        let _ = std::fs::remove_file(&target);
        assert_eq!(got.unwrap(), SENT_BYTES as u64);
        assert!(link_still.unwrap(), "the planted link is still a link");
        assert_eq!(theirs.unwrap(), b"not lull's");
    }
}
