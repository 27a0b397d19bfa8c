//! The daemon's side of the display server ([`crate::kds`]): its sources in the loop — the
//! control socket's listener and connections, the apps' private channels, the frame timer and
//! the control connections' idle timer — and what they do to the daemon's state (windows pushed
//! to apps, the ESM registrations an `ATTACH` makes). The host itself (`KdsHost`) knows nothing
//! of the daemon; this module drives it.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::rc::Rc;

use lull_kds::server::Channel;
use lull_kds::wire::{self, ErrorCode, Reply, Request};
use lull_model::{AppId, WindowState};
use lull_os::event_loop::{FnSource, LoopCtl, PostAction};
use lull_os::procfs;
use lull_os::sys::{self, PeerCred};

use super::{Closer, Daemon, DaemonError, DaemonState};
use crate::kds::{
    ControlEntry, KdsHost, PrivateChannel, WindowStateHook, MAX_COMMANDS_PER_TURN,
    MAX_CONTROL_BUFFER, MAX_CONTROL_CONNECTIONS, MAX_CONTROL_PER_PEER, MAX_PENDING_BYTES_PER_APP,
    MAX_PENDING_BYTES_TOTAL, READ_CHUNK,
};

/// How far a turn on a channel got through its buffered commands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Processed {
    /// Every complete command was handled.
    Done,
    /// [`MAX_COMMANDS_PER_TURN`] were handled; complete commands may be left.
    More,
    /// The channel must close.
    Close,
}

/// Encodes `reply` and writes it to `fd` with `fds` attached, whole or not at all as far as the
/// reader can tell: a short write means the client is not reading and its channel must close.
fn send_reply(out: &mut Vec<u8>, fd: RawFd, reply: &Reply, fds: &[RawFd]) -> io::Result<()> {
    out.clear();
    wire::encode_reply(reply, out);
    let n = sys::send_with_fds(fd, out, fds)?;
    if n == out.len() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            "client socket full",
        ))
    }
}

/// One turn on a channel. Commands put off in the last turn (`deferred`) are handled first,
/// without reading; otherwise one chunk of at most `chunk` bytes is read into `inbuf` and
/// `process` handles what is buffered. So at most one partial message plus one chunk is ever
/// buffered, and one client gets one chunk per turn of the (level-triggered) loop, which calls
/// again while more is waiting. End of file and read errors are [`Processed::Close`].
fn channel_turn(
    fd: RawFd,
    inbuf: &mut Vec<u8>,
    deferred: bool,
    chunk: usize,
    process: impl FnOnce(&mut Vec<u8>) -> Processed,
) -> Processed {
    if deferred {
        return process(inbuf);
    }
    let start = inbuf.len();
    inbuf.resize(start + chunk, 0);
    let read = sys::read(fd, &mut inbuf[start..]);
    inbuf.truncate(start + *read.as_ref().unwrap_or(&0));
    match read {
        Ok(0) => Processed::Close,
        Ok(_) => process(inbuf),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Processed::Done,
        Err(_) => Processed::Close,
    }
}

/// Decodes the complete commands at the front of `buf`, at most [`MAX_COMMANDS_PER_TURN`], hands
/// each to `handle` and drops it from `buf`. `handle` returns `false` when the channel must
/// close; it is handed a message the decoder refused too, after which the channel closes.
fn each_command(
    buf: &mut Vec<u8>,
    mut handle: impl FnMut(Result<Request, wire::WireError>) -> bool,
) -> Processed {
    let mut at = 0;
    let mut handled = 0;
    let processed = loop {
        if handled == MAX_COMMANDS_PER_TURN {
            break Processed::More;
        }
        match wire::decode_request(&buf[at..]) {
            Ok(None) => break Processed::Done,
            Ok(Some((req, used))) => {
                at += used;
                handled += 1;
                if !handle(Ok(req)) {
                    break Processed::Close;
                }
            }
            Err(e) => {
                handle(Err(e));
                break Processed::Close;
            }
        }
    };
    buf.drain(..at);
    processed
}

impl DaemonState {
    /// The display server, when the daemon runs one.
    #[must_use]
    pub fn kds(&self) -> Option<&KdsHost> {
        self.kds.as_ref()
    }

    /// Sets how long a control connection may say nothing before it is closed (the default is
    /// [`crate::kds::CONTROL_IDLE_TIMEOUT_MS`]); for tests and deployments that need another bound.
    pub fn set_kds_control_idle_timeout_ms(&mut self, timeout_ms: u64) {
        if let Some(k) = self.kds.as_mut() {
            k.control_idle_timeout_ns = timeout_ms.saturating_mul(1_000_000);
        }
    }

    /// Sets what runs on every window-state change (guiS).
    pub fn set_window_state_hook(&mut self, hook: WindowStateHook) {
        if let Some(k) = self.kds.as_mut() {
            k.on_window_state = Some(hook);
        }
    }

    /// Pushes each `(app, state)` to the app's private channel and to the hook.
    fn push_states(&mut self, pushes: Vec<(AppId, WindowState)>, ctl: &mut LoopCtl<DaemonState>) {
        // Input devices follow the window change before anyone hears of it; the seam's
        // policies hear of the change (and guiS freezes and thaws) before the apps do, while
        // their cooperative threads are still where the old state put them.
        self.devices_sync();
        self.seam_window_states(&pushes);
        // The data plane follows the ESM: an app whose input was just suspended loses its rings'
        // input kinds (the producers stop writing them), one restored gets them back.
        for &(app, _) in &pushes {
            self.reroute(app, ctl);
        }
        let Some(host) = self.kds.as_mut() else {
            return;
        };
        let mut gone = Vec::new();
        for (app, state) in pushes {
            if let Some(hook) = host.on_window_state.as_mut() {
                hook(app, state);
            }
            let Some(ch) = host.channels.get(&app) else {
                continue;
            };
            if send_reply(
                &mut host.out,
                ch.fd.as_raw_fd(),
                &Reply::WindowState(state),
                &[],
            )
            .is_err()
            {
                host.counters.not_reading_closed += 1;
                gone.push(app);
            }
        }
        for app in gone {
            self.disconnect(app, Some(ctl), Closer::Other);
        }
        // A held FRAME may have become visible, or the only waiting app hidden.
        self.kds_frame_timer_update(ctl);
        self.guis_evaluate_idle(ctl);
    }

    /// Runs a window-manager request on the daemon's own behalf (guiS's idle action) exactly as
    /// a privileged control connection's: ESM effects, then the state pushes.
    pub(crate) fn kds_wm_request(&mut self, req: &Request, ctl: &mut LoopCtl<DaemonState>) {
        if self.kds.is_none() {
            return;
        }
        let Ran { pushes, .. } = self.run_request(Channel::Control { privileged: true }, req);
        self.push_states(pushes, ctl);
    }

    /// Runs one request from `channel`; returns the reply and what to do after sending it.
    fn run_request(&mut self, channel: Channel, req: &Request) -> Ran {
        let host = self
            .kds
            .as_mut()
            .expect("KDS requests arrive only with a KDS");
        let pinned = match channel {
            Channel::Private(app) => host.channels.get(&app).and_then(|c| c.pid_start_ticks),
            Channel::Control { .. } => None,
        };
        // A thread of the attaching process, and that process still the one that attached.
        let same_process = |pid: u32, tid: u32| {
            sys::thread_of_process(pid, tid)
                && pinned.is_some()
                && i32::try_from(pid)
                    .ok()
                    .and_then(procfs::process_start_ticks)
                    == pinned
        };
        let outcome = host.kds.handle(&mut self.esm, channel, req, &same_process);
        let damage = host.kds.take_damage();
        host.present(damage);
        let memfd = if outcome.snapshot {
            let px = host.kds.displayed();
            let bytes: Vec<u8> = px.pixels().iter().flat_map(|p| p.to_le_bytes()).collect();
            sys::sealed_memfd("lull-kds-snapshot", &bytes).ok()
        } else {
            None
        };
        // Who holds input may have changed: devices follow before the reply goes out (window
        // changes also pass through `push_states`).
        if matches!(req, Request::EsmRegister { .. }) || !outcome.pushes.is_empty() {
            self.devices_sync();
        }
        let reply = match (outcome.snapshot, &memfd) {
            (true, None) => Some(Reply::Error {
                request_type: wire::request_type::SNAPSHOT,
                code: ErrorCode::Resources as u32,
                message: "the server could not create the snapshot's memfd".into(),
            }),
            _ => outcome.reply,
        };
        Ran {
            reply,
            pushes: outcome.pushes,
            detach: outcome.detach,
            memfd,
        }
    }

    /// Serves the private channel of `app`.
    fn serve_private(&mut self, app: AppId, ctl: &mut LoopCtl<DaemonState>) -> PostAction {
        let Some(host) = self.kds.as_mut() else {
            return PostAction::Remove;
        };
        let Some(ch) = host.channels.get_mut(&app) else {
            return PostAction::Remove;
        };
        let fd = ch.fd.as_raw_fd();
        let mut inbuf = std::mem::take(&mut ch.inbuf);
        let deferred = std::mem::take(&mut ch.deferred);
        let processed = channel_turn(fd, &mut inbuf, deferred, READ_CHUNK, |buf| {
            self.process_private(app, buf, ctl)
        });
        if processed == Processed::Close {
            self.disconnect(app, Some(ctl), Closer::KdsSource);
            // Its FRAME, if any, went with it: no expiry for nobody.
            self.kds_frame_timer_update(ctl);
            return PostAction::Remove;
        }
        let Some(host) = self.kds.as_mut() else {
            return PostAction::Remove;
        };
        let others_pending: usize = host
            .channels
            .iter()
            .filter(|(&a, _)| a != app)
            .map(|(_, c)| pending_claim(&c.inbuf))
            .sum();
        let Some(ch) = host.channels.get_mut(&app) else {
            return PostAction::Remove;
        };
        let over_own = over_quota(&inbuf);
        let over_total = others_pending + pending_claim(&inbuf) > MAX_PENDING_BYTES_TOTAL;
        if processed != Processed::More && (over_own || over_total) {
            let message = if over_own {
                host.counters.over_quota_closed += 1;
                format!(
                    "a message of {} bytes is over the {MAX_PENDING_BYTES_PER_APP} bytes an app \
                     may have buffered",
                    announced_len(&inbuf).unwrap_or(0)
                )
            } else {
                host.counters.over_total_quota_closed += 1;
                format!(
                    "a message of {} bytes would take the display server's unfinished messages \
                     over the {MAX_PENDING_BYTES_TOTAL} bytes all apps may have buffered; send \
                     it again when others have finished",
                    announced_len(&inbuf).unwrap_or(0)
                )
            };
            let reply = Reply::Error {
                request_type: u32::from_le_bytes(inbuf[..4].try_into().expect("4 bytes")),
                code: ErrorCode::Resources as u32,
                message,
            };
            let _ = send_reply(&mut host.out, fd, &reply, &[]);
            self.disconnect(app, Some(ctl), Closer::KdsSource);
            self.kds_frame_timer_update(ctl);
            return PostAction::Remove;
        }
        // Memory follows the message: room for the whole unfinished message at once (the
        // chunked reads would otherwise double the buffer past it), and none kept after it.
        match announced_len(&inbuf) {
            Some(n) if n > inbuf.len() => {
                inbuf.reserve_exact(n + READ_CHUNK - inbuf.len());
            }
            _ if inbuf.capacity() > 2 * (inbuf.len() + READ_CHUNK) => {
                inbuf.shrink_to(inbuf.len() + READ_CHUNK);
            }
            _ => {}
        }
        ch.inbuf = inbuf;
        let action = if processed == Processed::More {
            ch.deferred = true;
            host.counters.turns_deferred += 1;
            PostAction::Again
        } else {
            PostAction::Continue
        };
        self.kds_frame_timer_update(ctl);
        action
    }

    /// Keeps the frame timer armed exactly while a visible app waits for `FRAME_DONE`; if the
    /// timer cannot be set, the waiting apps are answered at once (paced less, never stuck).
    fn kds_frame_timer_update(&mut self, ctl: &mut LoopCtl<DaemonState>) {
        let Some(host) = self.kds.as_mut() else {
            return;
        };
        if !host.update_frame_timer() {
            self.kds_frames_due(ctl);
        }
    }

    /// The frame timer expired: `FRAME_DONE` to every visible app that asked, then the timer is
    /// armed again only if some app still waits (none does, unless one was just made visible).
    pub(crate) fn kds_frame_timer_expired(&mut self, ctl: &mut LoopCtl<DaemonState>) {
        let Some(host) = self.kds.as_mut() else {
            return;
        };
        // Non-blocking: 0 when a disarm raced the expiry; the answers below are still right.
        let _ = host.frame_timer.take_expirations();
        host.frame_timer_armed = false;
        host.counters.frame_timer_expiries += 1;
        self.kds_frames_due(ctl);
        self.kds_frame_timer_update(ctl);
    }

    /// Sends `FRAME_DONE` to every visible app waiting for one.
    fn kds_frames_due(&mut self, ctl: &mut LoopCtl<DaemonState>) {
        let Some(host) = self.kds.as_mut() else {
            return;
        };
        let due = host.kds.frames_due(sys::monotonic_ns());
        let mut gone = Vec::new();
        for (app, reply) in due {
            let Some(ch) = host.channels.get(&app) else {
                continue;
            };
            if send_reply(&mut host.out, ch.fd.as_raw_fd(), &reply, &[]).is_err() {
                host.counters.not_reading_closed += 1;
                gone.push(app);
            }
        }
        for app in gone {
            self.disconnect(app, Some(ctl), Closer::Other);
        }
    }

    /// Handles the complete messages in `buf`, at most [`MAX_COMMANDS_PER_TURN`].
    fn process_private(
        &mut self,
        app: AppId,
        buf: &mut Vec<u8>,
        ctl: &mut LoopCtl<DaemonState>,
    ) -> Processed {
        each_command(buf, |req| {
            let req = match req {
                Ok(req) => req,
                Err(e) => {
                    if let Some(host) = self.kds.as_mut() {
                        host.counters.malformed_closed += 1;
                        if let Some(ch) = host.channels.get(&app) {
                            let _ =
                                send_reply(&mut host.out, ch.fd.as_raw_fd(), &malformed(&e), &[]);
                        }
                    }
                    return false;
                }
            };
            let Ran {
                reply,
                pushes,
                detach,
                ..
            } = self.run_request(Channel::Private(app), &req);
            if matches!(req, Request::EsmRegister { .. }) {
                // A registration through the display server (figure 19) routes the producers of
                // its kind to the app before the app hears it took (as the ESM socket's does).
                self.reroute(app, ctl);
            }
            let Some(host) = self.kds.as_mut() else {
                return false;
            };
            let Some(fd) = host.channels.get(&app).map(|c| c.fd.as_raw_fd()) else {
                return false;
            };
            if let Some(reply) = &reply {
                if send_reply(&mut host.out, fd, reply, &[]).is_err() {
                    host.counters.not_reading_closed += 1;
                    return false;
                }
            }
            self.push_states(pushes, ctl);
            if let (Request::Thread { category, tid }, Some(Reply::Ok { .. })) = (&req, &reply) {
                self.seam_thread_declared(app, *category, *tid);
                self.guis_evaluate_idle(ctl);
            }
            detach.is_none()
        })
    }

    /// `ATTACH` from a control connection: creates the app and sends it its channels.
    fn attach(
        &mut self,
        control_fd: RawFd,
        cred: PeerCred,
        width: u32,
        height: u32,
        name: &str,
        ctl: &mut LoopCtl<DaemonState>,
    ) -> io::Result<()> {
        // The channels first: once the window manager has taken the app in, other apps' states
        // have changed, and every later path must still tell them.
        let made = (|| -> io::Result<_> {
            let (srv_chan, cli_chan) = sys::stream_pair()?;
            let (srv_esm, cli_esm) = sys::seqpacket_pair()?;
            sys::set_nonblocking(srv_chan.as_raw_fd(), true)?;
            sys::set_nonblocking(srv_esm.as_raw_fd(), true)?;
            Ok((srv_chan, cli_chan, srv_esm, cli_esm))
        })();
        let host = self.kds.as_mut().expect("attach needs a KDS");
        let (srv_chan, cli_chan, srv_esm, cli_esm) = match made {
            Ok(fds) => fds,
            Err(e) => {
                host.counters.attach_resource_errors += 1;
                let reply = Reply::Error {
                    request_type: wire::request_type::ATTACH,
                    code: ErrorCode::Resources as u32,
                    message: format!("the server could not create the app's channels: {e}"),
                };
                return send_reply(&mut host.out, control_fd, &reply, &[]);
            }
        };
        let app = self.esm.add_app();
        let pid = u32::try_from(cred.pid).unwrap_or(0);
        let attached = host
            .kds
            .attach(&mut self.esm, app, pid, width, height, name);
        let (window, pushes) = match attached {
            Ok(ok) => ok,
            Err(e) => {
                let _ = self.esm.remove_app(app);
                let reply = Reply::Error {
                    request_type: wire::request_type::ATTACH,
                    code: e.code as u32,
                    message: e.message,
                };
                return send_reply(&mut host.out, control_fd, &reply, &[]);
            }
        };
        let damage = host.kds.take_damage();
        host.present(damage);
        let raw = srv_chan.as_raw_fd();
        let token = ctl.insert(Box::new(FnSource {
            fd: raw,
            f: move |st: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>| {
                st.serve_private(app, ctl)
            },
        }));
        host.channels.insert(
            app,
            PrivateChannel {
                fd: srv_chan,
                token,
                inbuf: Vec::new(),
                deferred: false,
                pid_start_ticks: i32::try_from(pid)
                    .ok()
                    .and_then(procfs::process_start_ticks),
            },
        );
        // The event thread's ESM connection: an ordinary ESM client of the daemon, already
        // greeted, so the app needs no path to the ESM socket.
        self.add_connection(app, srv_esm, ctl);
        // The app it sent to the background loses its devices before the reply goes out.
        self.devices_sync();
        let host = self.kds.as_mut().expect("present");
        let reply = Reply::Attached {
            app,
            window,
            refresh_period_ns: host.kds.refresh_period_ns(),
        };
        let sent = send_reply(
            &mut host.out,
            control_fd,
            &reply,
            &[cli_chan.as_raw_fd(), cli_esm.as_raw_fd()],
        );
        // Our copies of the client ends close here; the client holds its own.
        drop((cli_chan, cli_esm));
        if let Err(e) = sent {
            // The app is gone before it knew it had come; the apps its arrival sent to the
            // background are told all the same.
            self.disconnect(app, Some(ctl), Closer::Other);
            self.push_states(pushes, ctl);
            return Err(e);
        }
        self.push_states(pushes, ctl);
        Ok(())
    }
}

/// The whole length (header and data) the message at the front of `buf` announces, once its
/// header is there.
fn announced_len(buf: &[u8]) -> Option<usize> {
    let len = buf.get(4..wire::HEADER_LEN)?;
    Some(wire::HEADER_LEN + u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize)
}

/// The bytes a channel's buffer holds or, for an unfinished message, will hold once it is whole.
fn pending_claim(buf: &[u8]) -> usize {
    if buf.is_empty() {
        return 0;
    }
    announced_len(buf).unwrap_or(0).max(buf.len())
}

/// Whether the unfinished message at the front of `buf` announces more than an app may buffer.
fn over_quota(buf: &[u8]) -> bool {
    announced_len(buf).is_some_and(|n| n > MAX_PENDING_BYTES_PER_APP)
}

/// Tells a control connection why it is closed (`ERROR` `Resources`, request type 0: it is not
/// an answer to any request), then closes it.
fn refuse_control(out: &mut Vec<u8>, conn: OwnedFd, message: String) {
    let reply = Reply::Error {
        request_type: 0,
        code: ErrorCode::Resources as u32,
        message,
    };
    let _ = send_reply(out, conn.as_raw_fd(), &reply, &[]);
}

/// A request run, and what remains to do after its reply is sent.
struct Ran {
    /// `None`: nothing to send now (`FRAME`).
    reply: Option<Reply>,
    /// Window states to push to apps.
    pushes: Vec<(AppId, WindowState)>,
    /// The app detached: close its channels.
    detach: Option<AppId>,
    /// `SNAPSHOT`: the memfd of pixels to send with the reply.
    memfd: Option<OwnedFd>,
}

fn malformed(e: &wire::WireError) -> Reply {
    Reply::Error {
        request_type: match e {
            wire::WireError::UnknownType(t) => *t,
            wire::WireError::TooLong(_) => 0,
            wire::WireError::Truncated { ty, .. }
            | wire::WireError::TrailingBytes { ty, .. }
            | wire::WireError::BadValue { ty, .. } => *ty,
        },
        code: ErrorCode::Malformed as u32,
        message: e.to_string(),
    }
}

/// One connection to the control socket.
struct ControlConn {
    id: u64,
    fd: OwnedFd,
    cred: PeerCred,
    privileged: bool,
    inbuf: Vec<u8>,
    /// As [`PrivateChannel::deferred`].
    deferred: bool,
}

impl ControlConn {
    /// Serves what arrived, [`MAX_CONTROL_BUFFER`] bytes and [`MAX_COMMANDS_PER_TURN`] commands
    /// at most per turn; `Remove` when the connection is done.
    fn ready(&mut self, st: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>) -> PostAction {
        let fd = self.fd.as_raw_fd();
        let mut inbuf = std::mem::take(&mut self.inbuf);
        let deferred = std::mem::take(&mut self.deferred);
        let mut processed = channel_turn(fd, &mut inbuf, deferred, MAX_CONTROL_BUFFER, |buf| {
            self.process(st, buf, ctl)
        });
        self.inbuf = inbuf;
        if processed == Processed::Done && self.inbuf.len() > MAX_CONTROL_BUFFER {
            // What is left is one unfinished request longer than any control request.
            if let Some(host) = st.kds.as_mut() {
                host.counters.control_oversized_closed += 1;
            }
            processed = Processed::Close;
        }
        if processed == Processed::Close {
            if let Some(host) = st.kds.as_mut() {
                host.control.remove(&self.id);
                host.arm_control_idle();
            }
            st.fds_freed = true;
            PostAction::Remove
        } else if processed == Processed::More {
            self.deferred = true;
            if let Some(host) = st.kds.as_mut() {
                host.counters.turns_deferred += 1;
            }
            PostAction::Again
        } else {
            PostAction::Continue
        }
    }

    /// Handles the complete messages in `buf`, at most [`MAX_COMMANDS_PER_TURN`].
    fn process(
        &mut self,
        st: &mut DaemonState,
        buf: &mut Vec<u8>,
        ctl: &mut LoopCtl<DaemonState>,
    ) -> Processed {
        let fd = self.fd.as_raw_fd();
        let (cred, privileged, id) = (self.cred, self.privileged, self.id);
        each_command(buf, |req| {
            if let Some(e) = st.kds.as_mut().and_then(|h| h.control.get_mut(&id)) {
                // It spoke: no longer idle (a malformed request closes it below anyway).
                e.idle_deadline_ns = None;
            }
            let req = match req {
                Ok(req) => req,
                Err(e) => {
                    if let Some(host) = st.kds.as_mut() {
                        host.counters.malformed_closed += 1;
                        let _ = send_reply(&mut host.out, fd, &malformed(&e), &[]);
                    }
                    return false;
                }
            };
            if let Request::Attach {
                width,
                height,
                name,
            } = &req
            {
                return st.attach(fd, cred, *width, *height, name, ctl).is_ok();
            }
            let Ran {
                reply,
                pushes,
                memfd,
                ..
            } = st.run_request(Channel::Control { privileged }, &req);
            let fds: Vec<RawFd> = memfd.iter().map(AsRawFd::as_raw_fd).collect();
            let host = st.kds.as_mut().expect("control connections need a KDS");
            if let Some(reply) = &reply {
                if send_reply(&mut host.out, fd, reply, &fds).is_err() {
                    host.counters.not_reading_closed += 1;
                    return false;
                }
            }
            st.push_states(pushes, ctl);
            true
        })
    }
}

/// The control socket's listening source: accepts and records each peer's credentials. A peer
/// turned away (too many connections in all or from its user, or the daemon out of
/// descriptors) is told why in an `ERROR` before its connection closes.
pub(crate) fn control_listener(
    listener: Rc<OwnedFd>,
) -> FnSource<impl FnMut(&mut DaemonState, &mut LoopCtl<DaemonState>) -> PostAction> {
    let fd = listener.as_raw_fd();
    // A descriptor held in reserve: when `accept` fails for want of descriptors, it is given up
    // to accept one waiting connection and tell it why it is closed; then the listener pauses
    // (`DaemonState::listener_out_of_fds`) until descriptors free.
    let mut reserve: Option<OwnedFd> = reserve_fd();
    FnSource {
        fd,
        f: move |st: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>| loop {
            let conn = match sys::accept(listener.as_fd()) {
                Ok(Some(conn)) => conn,
                Ok(None) => return PostAction::Continue,
                Err(e) if sys::Errno::of(&e) == Some(sys::Errno::ECONNABORTED) => continue,
                Err(e) => {
                    if sys::is_fd_exhaustion(&e) && reserve.take().is_some() {
                        if let (Ok(Some(conn)), Some(host)) =
                            (sys::accept(listener.as_fd()), st.kds.as_mut())
                        {
                            host.counters.control_refused += 1;
                            refuse_control(
                                &mut host.out,
                                conn,
                                "the display server is out of file descriptors; try again \
                                 later"
                                    .into(),
                            );
                        }
                        reserve = reserve_fd();
                    }
                    return st.listener_out_of_fds();
                }
            };
            let Some(host) = st.kds.as_mut() else {
                continue;
            };
            let Ok(cred) = sys::peer_cred(conn.as_raw_fd()) else {
                continue;
            };
            let privileged = cred.uid == 0 || cred.uid == sys::geteuid();
            if host.control.len() >= MAX_CONTROL_CONNECTIONS {
                host.counters.control_refused += 1;
                refuse_control(
                    &mut host.out,
                    conn,
                    format!(
                        "the display server has {MAX_CONTROL_CONNECTIONS} control connections \
                         open, the most it holds; try again later"
                    ),
                );
                continue;
            }
            let of_peer = host
                .control
                .values()
                .filter(|e| !e.privileged && e.uid == cred.uid)
                .count();
            if !privileged && of_peer >= MAX_CONTROL_PER_PEER {
                host.counters.control_refused += 1;
                host.counters.control_peer_limited += 1;
                refuse_control(
                    &mut host.out,
                    conn,
                    format!(
                        "user {} already has {MAX_CONTROL_PER_PEER} control connections open, \
                         the most one user may; close one and try again",
                        cred.uid
                    ),
                );
                continue;
            }
            host.counters.control_connections += 1;
            let id = host.next_control_id;
            host.next_control_id += 1;
            let raw = conn.as_raw_fd();
            let mut cc = ControlConn {
                id,
                fd: conn,
                cred,
                privileged,
                inbuf: Vec::new(),
                deferred: false,
            };
            let token = ctl.insert(Box::new(FnSource {
                fd: raw,
                f: move |st: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>| cc.ready(st, ctl),
            }));
            let deadline = sys::monotonic_ns().saturating_add(host.control_idle_timeout_ns);
            host.control.insert(
                id,
                ControlEntry {
                    token,
                    fd: raw,
                    uid: cred.uid,
                    privileged,
                    idle_deadline_ns: Some(deadline),
                },
            );
            if !host.control_idle_armed {
                host.arm_control_idle();
            }
        },
    }
}

/// The control connections' idle timer: closes each connection that has said nothing since its
/// deadline, telling it why, and arms the timer for the next deadline.
pub(crate) fn control_idle_source(
    fd: RawFd,
) -> FnSource<impl FnMut(&mut DaemonState, &mut LoopCtl<DaemonState>) -> PostAction> {
    FnSource {
        fd,
        f: |st: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>| {
            let Some(host) = st.kds.as_mut() else {
                return PostAction::Continue;
            };
            let _ = host.control_idle_timer.take_expirations();
            let now = sys::monotonic_ns();
            let idle: Vec<u64> = host
                .control
                .iter()
                .filter(|(_, e)| e.idle_deadline_ns.is_some_and(|d| d <= now))
                .map(|(&id, _)| id)
                .collect();
            let timeout_ms = host.control_idle_timeout_ns / 1_000_000;
            for id in idle {
                let Some(e) = host.control.remove(&id) else {
                    continue;
                };
                host.counters.control_idle_closed += 1;
                let reply = Reply::Error {
                    request_type: 0,
                    code: ErrorCode::Resources as u32,
                    message: format!(
                        "the control connection sent no request for {timeout_ms} ms and is \
                         closed; connect again to attach"
                    ),
                };
                // The source still owns the descriptor; it closes when the source is removed.
                let _ = send_reply(&mut host.out, e.fd, &reply, &[]);
                ctl.remove(e.token);
                st.fds_freed = true;
            }
            if let Some(host) = st.kds.as_mut() {
                host.arm_control_idle();
            }
            PostAction::Continue
        },
    }
}

/// The frame timer's source: each expiry answers the waiting apps ([`crate::kds`], frame pacing).
pub(crate) fn frame_timer_source(
    fd: RawFd,
) -> FnSource<impl FnMut(&mut DaemonState, &mut LoopCtl<DaemonState>) -> PostAction> {
    FnSource {
        fd,
        f: |st: &mut DaemonState, ctl: &mut LoopCtl<DaemonState>| {
            st.kds_frame_timer_expired(ctl);
            PostAction::Continue
        },
    }
}

/// A descriptor to give up when the daemon runs out of them (`/dev/null`, read-only).
fn reserve_fd() -> Option<OwnedFd> {
    std::fs::File::open("/dev/null").ok().map(OwnedFd::from)
}

impl Daemon {
    pub(super) fn serve_kds(
        &mut self,
        host: KdsHost,
        listener: OwnedFd,
    ) -> Result<(), DaemonError> {
        let listener = Rc::new(listener);
        self.lp.insert(Box::new(control_listener(listener)))?;
        // Frame pacing: the display server's one-shot frame timer (above).
        let timer_fd = host.frame_timer.raw();
        self.lp.insert(Box::new(frame_timer_source(timer_fd)))?;
        let idle_fd = host.control_idle_timer.raw();
        self.lp.insert(Box::new(control_idle_source(idle_fd)))?;
        self.state.kds = Some(host);
        Ok(())
    }
}
