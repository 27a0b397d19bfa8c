//! The display server's client side: `kds_connect` (figure 14) and the commands of figures 18–19
//! for Rust programs, plus the window-manager requests for tools such as `lull kds`.
//!
//! [`attach`] connects to the control socket, sends `ATTACH`, and receives the app's private
//! channel and its event thread's ESM connection as descriptors; the control connection is then
//! closed, as in the seed. [`KdsChannel::request`] sends one command and waits for its reply;
//! `WINDOW_STATE` messages that arrive meanwhile are kept for [`KdsChannel::take_states`].
//! [`crate::kds_runtime`] builds the four KDS threads on top of this.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use lull_kds::wire::{self, ErrorCode, Reply, Request, WindowInfo};
use lull_kds::{Pixmap, Rect, Surface};
use lull_model::{AppId, EventKind, HandlerId, Screen, ThreadCategory, WindowState};
use lull_os::sys;

use crate::client::{ClientError, EsmClient};

/// What to do about a failed connect: a permission problem is not a missing daemon.
fn connect_hint(e: &io::Error) -> &'static str {
    match e.kind() {
        io::ErrorKind::PermissionDenied => {
            " (a permission problem: the socket is the daemon's user's and its group's, e.g. \
             root:input mode 0660; run as a member of that group, or as root)"
        }
        _ => " (is lulld running with its display server?)",
    }
}

/// Errors of talking to the display server.
#[derive(Debug, thiserror::Error)]
pub enum KdsClientError {
    #[error(
        "cannot connect to the display server at {path}: {source}{}",
        connect_hint(source)
    )]
    Connect { path: PathBuf, source: io::Error },
    #[error("the display server closed the connection")]
    ServerGone,
    #[error("the display server at {path} did not answer within {timeout_ms} ms (it may be out of file descriptors, stopped or hung)")]
    Timeout { path: PathBuf, timeout_ms: u64 },
    #[error("the display server {}: {message}{}", refused_what(*request), code_note(*code))]
    Refused {
        request: u32,
        code: Option<ErrorCode>,
        message: String,
    },
    #[error("the display server sent a malformed message: {0}")]
    Wire(#[from] wire::WireError),
    #[error("the display server sent {got} where {want} was expected")]
    Unexpected {
        got: &'static str,
        want: &'static str,
    },
    #[error("ATTACHED arrived with {0} descriptors instead of 2")]
    MissingDescriptors(usize),
    #[error("the app is detaching; the call was not made")]
    Stopping,
    #[error("the event thread's ESM connection failed: {0}")]
    Esm(#[from] ClientError),
    #[error("socket error talking to the display server: {0}")]
    Io(#[from] io::Error),
}

/// "refused COMPOSE", or "turned the connection away" for an error that answers no request.
fn refused_what(request: u32) -> String {
    match wire::request_type::name(request) {
        Some(name) => format!("refused {name}"),
        None if request == 0 => "turned the connection away".to_string(),
        None => format!("refused request type {request}"),
    }
}

/// The error code's name, in parentheses, when the reply carried a known one.
fn code_note(code: Option<ErrorCode>) -> String {
    code.map(|c| format!(" ({})", c.name())).unwrap_or_default()
}

fn reply_name(r: &Reply) -> &'static str {
    match r {
        Reply::Attached { .. } => "ATTACHED",
        Reply::Ok { .. } => "OK",
        Reply::Error { .. } => "ERROR",
        Reply::Composed { .. } => "COMPOSED",
        Reply::WindowState(_) => "WINDOW_STATE",
        Reply::Snapshot { .. } => "SNAPSHOT",
        Reply::Windows(_) => "WINDOWS",
        Reply::FrameDone { .. } => "FRAME_DONE",
    }
}

/// A framed stream to the server: sends requests, reads whole replies with their descriptors.
#[derive(Debug)]
struct Stream {
    fd: OwnedFd,
    inbuf: Vec<u8>,
    fds: Vec<OwnedFd>,
    out: Vec<u8>,
}

impl Stream {
    fn new(fd: OwnedFd) -> Stream {
        Stream {
            fd,
            inbuf: Vec::new(),
            fds: Vec::new(),
            out: Vec::new(),
        }
    }

    fn send(&mut self, req: &Request) -> Result<(), KdsClientError> {
        self.send_all(std::iter::once(req))
    }

    /// Sends `reqs` in one write, so the server reads them in one turn.
    fn send_all<'a>(
        &mut self,
        reqs: impl IntoIterator<Item = &'a Request>,
    ) -> Result<(), KdsClientError> {
        self.out.clear();
        for req in reqs {
            wire::encode_request(req, &mut self.out);
        }
        let mut sent = 0;
        while sent < self.out.len() {
            match sys::write_all_once(self.fd.as_raw_fd(), &self.out[sent..]) {
                Ok(n) => sent += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
                    ) =>
                {
                    return Err(KdsClientError::ServerGone)
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// The next whole message, blocking.
    fn recv(&mut self) -> Result<Reply, KdsClientError> {
        loop {
            if let Some((reply, used)) = wire::decode_reply(&self.inbuf)? {
                self.inbuf.drain(..used);
                return Ok(reply);
            }
            let mut chunk = [0u8; 4096];
            let (n, fds) = match sys::recv_with_fds(self.fd.as_raw_fd(), &mut chunk) {
                Ok(r) => r,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                    return Err(KdsClientError::ServerGone)
                }
                Err(e) => return Err(e.into()),
            };
            self.fds.extend(fds);
            if n == 0 {
                return Err(KdsClientError::ServerGone);
            }
            self.inbuf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// Turns an `ERROR` reply into [`KdsClientError::Refused`].
pub(crate) fn refused(reply: Reply) -> Result<Reply, KdsClientError> {
    match reply {
        Reply::Error {
            request_type,
            code,
            message,
        } => Err(KdsClientError::Refused {
            request: request_type,
            code: ErrorCode::from_u32(code),
            message,
        }),
        other => Ok(other),
    }
}

/// Where `kds_connect(NULL, …)` and `lull kds` connect: `$LULL_KDS_SOCKET`, else the default
/// control socket (`kds.sock` beside the ESM socket).
#[must_use]
pub fn default_kds_socket() -> PathBuf {
    std::env::var_os("LULL_KDS_SOCKET")
        .filter(|p| !p.is_empty())
        .map_or_else(sys::default_kds_socket_path, PathBuf::from)
}

/// An app's private channel to the display server.
#[derive(Debug)]
pub struct KdsChannel {
    stream: Stream,
    states: Vec<WindowState>,
    /// The latest `FRAME_DONE` seen while waiting for a reply.
    frame_done: Option<u64>,
}

impl KdsChannel {
    /// Sends `req` and returns its reply; window states pushed meanwhile are kept.
    ///
    /// # Errors
    /// [`KdsClientError::Refused`] for an `ERROR` reply; others when the channel fails.
    pub fn request(&mut self, req: &Request) -> Result<Reply, KdsClientError> {
        self.stream.send(req)?;
        loop {
            match self.stream.recv()? {
                Reply::WindowState(s) => self.states.push(s),
                // The answer to a `FRAME` sent earlier with `send`: kept, not a reply.
                Reply::FrameDone { frame_ns } => self.frame_done = Some(frame_ns),
                other => return refused(other),
            }
        }
    }

    /// Sends `req` without waiting for its reply (the runtime's channel thread reads it).
    ///
    /// # Errors
    /// [`KdsClientError::ServerGone`] or a socket error.
    pub fn send(&mut self, req: &Request) -> Result<(), KdsClientError> {
        self.stream.send(req)
    }

    /// The next message from the server, blocking: a reply or a window-state push.
    ///
    /// # Errors
    /// [`KdsClientError::ServerGone`] when the server closed the channel.
    pub fn next_message(&mut self) -> Result<Reply, KdsClientError> {
        self.stream.recv()
    }

    /// The refresh boundary of the latest `FRAME_DONE` that arrived while [`KdsChannel::request`]
    /// waited for a reply, taken.
    pub fn take_frame_done(&mut self) -> Option<u64> {
        self.frame_done.take()
    }

    /// Window states pushed since the last call, oldest first.
    pub fn take_states(&mut self) -> Vec<WindowState> {
        std::mem::take(&mut self.states)
    }

    /// `COMPOSE` (figure 16): flatten `surface` into the server-side slot `surface_id`.
    ///
    /// # Errors
    /// As [`KdsChannel::request`].
    pub fn compose(&mut self, surface_id: u32, surface: Surface) -> Result<(), KdsClientError> {
        match self.request(&Request::Compose {
            surface_id,
            surface,
        })? {
            Reply::Composed { .. } => Ok(()),
            other => Err(unexpected(&other, "COMPOSED")),
        }
    }

    /// `DRAW` (figure 17): the flattened surface at `(x, y)` of the window.
    ///
    /// # Errors
    /// As [`KdsChannel::request`]; [`ErrorCode::OutsideWindow`] for a draw leaving the window.
    pub fn draw(&mut self, surface_id: u32, x: i32, y: i32) -> Result<(), KdsClientError> {
        self.expect_ok(&Request::Draw { surface_id, x, y })
    }

    /// `esm_register` through the display server (figure 19), so the server can set the handler
    /// aside while the app is in the background.
    ///
    /// # Errors
    /// As [`KdsChannel::request`].
    pub fn esm_register(
        &mut self,
        kind: EventKind,
        handler: Option<HandlerId>,
    ) -> Result<(), KdsClientError> {
        self.expect_ok(&Request::EsmRegister { kind, handler })
    }

    /// Declares that kernel thread `tid` runs the app's `category` thread.
    ///
    /// # Errors
    /// As [`KdsChannel::request`].
    pub fn declare_thread(
        &mut self,
        category: ThreadCategory,
        tid: u32,
    ) -> Result<(), KdsClientError> {
        self.expect_ok(&Request::Thread { category, tid })
    }

    /// `DETACH`: the window and registrations go; the server closes the channel.
    ///
    /// # Errors
    /// As [`KdsChannel::request`].
    pub fn detach(mut self) -> Result<(), KdsClientError> {
        self.expect_ok(&Request::Detach)
    }

    fn expect_ok(&mut self, req: &Request) -> Result<(), KdsClientError> {
        match self.request(req)? {
            Reply::Ok { .. } => Ok(()),
            other => Err(unexpected(&other, "OK")),
        }
    }

    /// Splits the channel into a reading half and a writing half, for a runtime whose channel
    /// thread reads while other threads send. Window states already seen are returned too.
    ///
    /// # Errors
    /// The kernel's error duplicating the descriptor.
    pub fn split(self) -> Result<(ChannelReader, ChannelWriter, Vec<WindowState>), KdsClientError> {
        let writer = ChannelWriter {
            stream: Stream::new(self.stream.fd.try_clone()?),
        };
        Ok((
            ChannelReader {
                stream: self.stream,
            },
            writer,
            self.states,
        ))
    }

    /// The channel's descriptor (for tests that misbehave on purpose).
    #[doc(hidden)]
    #[must_use]
    pub fn raw_fd(&self) -> i32 {
        self.stream.fd.as_raw_fd()
    }
}

/// The reading half of a split [`KdsChannel`].
#[derive(Debug)]
pub struct ChannelReader {
    stream: Stream,
}

impl ChannelReader {
    /// The next message, blocking.
    ///
    /// # Errors
    /// [`KdsClientError::ServerGone`] when the server closed the channel.
    pub fn next_message(&mut self) -> Result<Reply, KdsClientError> {
        self.stream.recv()
    }
}

/// The writing half of a split [`KdsChannel`].
#[derive(Debug)]
pub struct ChannelWriter {
    stream: Stream,
}

impl ChannelWriter {
    /// Sends one request whole.
    ///
    /// # Errors
    /// [`KdsClientError::ServerGone`] or a socket error.
    pub fn send(&mut self, req: &Request) -> Result<(), KdsClientError> {
        self.stream.send(req)
    }

    /// Sends `first` then `then` in one write (one wake-up of the server for both).
    ///
    /// # Errors
    /// As [`ChannelWriter::send`].
    pub fn send_pair(&mut self, first: &Request, then: &Request) -> Result<(), KdsClientError> {
        self.stream.send_all([first, then])
    }

    /// Shuts the channel down both ways, which ends the reader's blocking read and tells the
    /// server the app has gone.
    pub fn shutdown(&self) {
        sys::shutdown(self.stream.fd.as_raw_fd());
    }
}

fn unexpected(got: &Reply, want: &'static str) -> KdsClientError {
    KdsClientError::Unexpected {
        got: reply_name(got),
        want,
    }
}

/// What `ATTACH` gives an app.
#[derive(Debug)]
pub struct Attachment {
    /// The app's id, the same in the ESM and the display server.
    pub app: AppId,
    /// The app's window on the screen.
    pub window: Rect,
    /// The screen's refresh period (frame pacing, `lull_kds::pacing`).
    pub refresh_period_ns: u32,
    pub channel: KdsChannel,
    /// The event thread's ESM connection, already attached to `app`.
    pub esm: EsmClient,
}

/// `kds_connect` (figure 14): asks the server at `path` for a `width × height` window (0 × 0:
/// the whole screen) labelled `name`.
///
/// # Errors
/// [`KdsClientError::Connect`] when nothing listens there, [`KdsClientError::Refused`] when
/// the server declines.
pub fn attach(
    path: &Path,
    width: u32,
    height: u32,
    name: &str,
) -> Result<Attachment, KdsClientError> {
    let timeout_ms = crate::client::CONNECT_TIMEOUT_MS;
    let timed_out = |e: KdsClientError| match e {
        KdsClientError::Io(e) if e.kind() == io::ErrorKind::WouldBlock => KdsClientError::Timeout {
            path: path.to_owned(),
            timeout_ms,
        },
        other => other,
    };
    // Timeouts on the control connection only: it lives for this one exchange.
    let fd = sys::stream_connect_timeout(path, timeout_ms).map_err(|source| {
        if source.kind() == io::ErrorKind::WouldBlock {
            timed_out(KdsClientError::Io(source))
        } else {
            KdsClientError::Connect {
                path: path.to_owned(),
                source,
            }
        }
    })?;
    let mut control = Stream::new(fd);
    let sent = control.send(&Request::Attach {
        width,
        height,
        name: wire::truncate_utf8(name, wire::MAX_NAME_LEN).to_owned(),
    });
    if let Err(e) = sent {
        // A server that turns the connection away says why before it closes it (a limit, or
        // out of descriptors): that reason, when it came, is the error to report.
        return match control.recv() {
            Ok(Reply::Error {
                request_type,
                code,
                message,
            }) => Err(KdsClientError::Refused {
                request: request_type,
                code: ErrorCode::from_u32(code),
                message,
            }),
            _ => Err(timed_out(e)),
        };
    }
    let (app, window, refresh_period_ns) = match refused(control.recv().map_err(timed_out)?)? {
        Reply::Attached {
            app,
            window,
            refresh_period_ns,
        } => (app, window, refresh_period_ns),
        other => return Err(unexpected(&other, "ATTACHED")),
    };
    let fds = std::mem::take(&mut control.fds);
    let count = fds.len();
    let mut fds = fds.into_iter();
    let (Some(chan), Some(esm), None) = (fds.next(), fds.next(), fds.next()) else {
        return Err(KdsClientError::MissingDescriptors(count));
    };
    // The seed closes the control device once attached (figure 14).
    drop(control);
    let esm = EsmClient::from_fd(esm)?;
    Ok(Attachment {
        app,
        window,
        refresh_period_ns,
        channel: KdsChannel {
            stream: Stream::new(chan),
            states: Vec::new(),
            frame_done: None,
        },
        esm,
    })
}

/// The window manager's view of the server: a control connection for `lull kds` and for tests.
#[derive(Debug)]
pub struct KdsAdmin {
    stream: Stream,
    path: PathBuf,
    timeout_ms: u64,
}

impl KdsAdmin {
    /// Connects to the control socket at `path`, giving up on the connect and on each reply
    /// after [`crate::client::CONNECT_TIMEOUT_MS`].
    ///
    /// # Errors
    /// [`KdsClientError::Connect`], or [`KdsClientError::Timeout`].
    pub fn connect(path: &Path) -> Result<KdsAdmin, KdsClientError> {
        KdsAdmin::connect_timeout(path, crate::client::CONNECT_TIMEOUT_MS)
    }

    /// As [`KdsAdmin::connect`], with `timeout_ms`. Every window-manager request is answered
    /// at once, so a daemon that is stopped or wedged gives a `Timeout` naming the socket,
    /// never a wait without end.
    ///
    /// # Errors
    /// As [`KdsAdmin::connect`].
    pub fn connect_timeout(path: &Path, timeout_ms: u64) -> Result<KdsAdmin, KdsClientError> {
        let fd = sys::stream_connect_timeout(path, timeout_ms).map_err(|source| {
            if source.kind() == io::ErrorKind::WouldBlock {
                KdsClientError::Timeout {
                    path: path.to_owned(),
                    timeout_ms,
                }
            } else {
                KdsClientError::Connect {
                    path: path.to_owned(),
                    source,
                }
            }
        })?;
        Ok(KdsAdmin {
            stream: Stream::new(fd),
            path: path.to_owned(),
            timeout_ms,
        })
    }

    fn request(&mut self, req: &Request) -> Result<Reply, KdsClientError> {
        let (path, timeout_ms) = (&self.path, self.timeout_ms);
        let timed_out = |e: KdsClientError| match e {
            KdsClientError::Io(e) if e.kind() == io::ErrorKind::WouldBlock => {
                KdsClientError::Timeout {
                    path: path.clone(),
                    timeout_ms,
                }
            }
            other => other,
        };
        self.stream.send(req).map_err(timed_out)?;
        let reply = self.stream.recv().map_err(timed_out)?;
        refused(reply)
    }

    fn expect_ok(&mut self, req: &Request) -> Result<(), KdsClientError> {
        match self.request(req)? {
            Reply::Ok { .. } => Ok(()),
            other => Err(unexpected(&other, "OK")),
        }
    }

    /// Brings `app` to the front (figure 27).
    ///
    /// # Errors
    /// [`ErrorCode::NoWindow`], [`ErrorCode::NotPermitted`], or a channel failure.
    pub fn foreground(&mut self, app: AppId) -> Result<(), KdsClientError> {
        self.expect_ok(&Request::WmForeground { app })
    }

    /// Sends `app` to the background (figure 26).
    ///
    /// # Errors
    /// As [`KdsAdmin::foreground`].
    pub fn background(&mut self, app: AppId) -> Result<(), KdsClientError> {
        self.expect_ok(&Request::WmBackground { app })
    }

    /// Covers or uncovers `app` with a system decoration.
    ///
    /// # Errors
    /// As [`KdsAdmin::foreground`].
    pub fn cover(&mut self, app: AppId, covered: bool) -> Result<(), KdsClientError> {
        self.expect_ok(&Request::WmCover { app, covered })
    }

    /// Lights or darkens the screen.
    ///
    /// # Errors
    /// As [`KdsAdmin::foreground`].
    pub fn set_screen(&mut self, screen: Screen) -> Result<(), KdsClientError> {
        self.expect_ok(&Request::WmScreen { screen })
    }

    /// Every window, bottom to top.
    ///
    /// # Errors
    /// As [`KdsAdmin::foreground`].
    pub fn windows(&mut self) -> Result<Vec<WindowInfo>, KdsClientError> {
        match self.request(&Request::ListWindows)? {
            Reply::Windows(w) => Ok(w),
            other => Err(unexpected(&other, "WINDOWS")),
        }
    }

    /// The screen as displayed.
    ///
    /// # Errors
    /// As [`KdsAdmin::foreground`]; [`KdsClientError::MissingDescriptors`] without the memfd.
    pub fn snapshot(&mut self) -> Result<Pixmap, KdsClientError> {
        let (width, height) = match self.request(&Request::Snapshot)? {
            Reply::Snapshot { width, height } => (width, height),
            other => return Err(unexpected(&other, "SNAPSHOT")),
        };
        let mut fds = std::mem::take(&mut self.stream.fds);
        if fds.len() != 1 {
            return Err(KdsClientError::MissingDescriptors(fds.len()));
        }
        let file = std::fs::File::from(fds.remove(0));
        let len = u64::from(width) * u64::from(height) * 4;
        if file.metadata()?.len() != len {
            return Err(KdsClientError::Refused {
                request: wire::request_type::SNAPSHOT,
                code: None,
                message: format!("the snapshot memfd does not hold {width}x{height} pixels"),
            });
        }
        let mut bytes = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
        // The server's write left the shared file offset at the end: read from 0.
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut bytes, 0)?;
        let pixels: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Pixmap::from_pixels(width, height, pixels).map_err(|e| KdsClientError::Refused {
            request: wire::request_type::SNAPSHOT,
            code: None,
            message: format!("snapshot does not match its size: {e}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_permission_is_not_blamed_on_a_missing_daemon() {
        let err = |kind| KdsClientError::Connect {
            path: PathBuf::from("/run/lull/kds.sock"),
            source: io::Error::from(kind),
        };
        let denied = err(io::ErrorKind::PermissionDenied).to_string();
        assert!(denied.contains("a permission problem"), "{denied}");
        assert!(!denied.contains("is lulld running"), "{denied}");
        let missing = err(io::ErrorKind::NotFound).to_string();
        assert!(missing.contains("is lulld running"), "{missing}");
    }
}
