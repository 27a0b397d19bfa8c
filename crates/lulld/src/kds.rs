//! The display server inside `lulld`: the sockets around the pure [`lull_kds::server::Kds`].
//!
//! - **Control socket** (`SOCK_STREAM`, default `$XDG_RUNTIME_DIR/lull/kds.sock`): the seed's
//!   `kds_control_device` (figure 14). The kernel records each peer's credentials at `connect`
//!   (`SO_PEERCRED`). `ATTACH` on it creates the app: its window, its ESM registration, and two
//!   new socket pairs whose client ends travel back with `ATTACHED` as `SCM_RIGHTS` descriptors —
//!   the private KDS channel and the event thread's ESM connection. No path names them, so no
//!   other process can reach them. Window-manager requests, `SNAPSHOT` and `LIST_WINDOWS` are
//!   served here too, to peers running as the daemon's user or root.
//! - **Private channel** (`SOCK_STREAM`): every further command of that app. A command acts only
//!   on the app whose channel carried it; a malformed one gets `ERROR` and the channel closes.
//!
//! The app is one app to both servers: when its KDS channel or its ESM connection closes, both
//! go, with its window. Replies and `WINDOW_STATE` pushes are small and written without waiting;
//! a client whose socket is full is not reading and is dropped (counted), so no client can stall
//! the loop. Screen pixels leave only as a sealed memfd (`SNAPSHOT`).
//!
//! **Frame pacing.** `FRAME` is answered by `FRAME_DONE` at the screen's next refresh boundary
//! from one one-shot timerfd, armed only while some app that can be seen waits for one
//! ([`Kds::next_frame_ns`]) and disarmed otherwise: a screen where nothing changes costs the
//! daemon no wake-up.

use std::collections::HashMap;
use std::os::fd::{OwnedFd, RawFd};
use std::path::PathBuf;

use lull_kds::pacing::DEFAULT_REFRESH_PERIOD_NS;
use lull_kds::server::{Kds, KdsCounters, DEFAULT_SCREEN_HEIGHT, DEFAULT_SCREEN_WIDTH};
use lull_kds::Rect;
use lull_model::{AppId, WindowState};
use lull_os::event_loop::Token;
use lull_os::fbdev::FrameBuffer;
use lull_os::sys;

/// Bytes read from a channel per `read` call, and per readiness: a client that keeps its channel
/// full is served one chunk per turn of the loop, so input and other clients interleave with it.
pub(crate) const READ_CHUNK: usize = 64 * 1024;

/// Commands handled from one channel per turn of the loop. A well-behaved app sends one to a
/// few per frame; a client that sends more (64 KiB holds about 5,400 `DRAW`s, each of which may
/// restack a full-screen window) has the rest handled in later turns, after the other ready
/// descriptors — input among them — have been served.
pub const MAX_COMMANDS_PER_TURN: usize = 64;

/// Control connections open at once. A control connection only attaches or runs the window
/// manager, so a few dozen are plenty; beyond this a new one is closed at once (counted).
pub const MAX_CONTROL_CONNECTIONS: usize = 64;

/// Control connections one unprivileged user (`SO_PEERCRED` uid; not root, not the daemon's
/// user) may hold open at once: a quarter of [`MAX_CONTROL_CONNECTIONS`], so no one user can
/// lock the others out. An app holds one only while it attaches.
pub const MAX_CONTROL_PER_PEER: usize = MAX_CONTROL_CONNECTIONS / 4;

/// How long a control connection may stay open without sending one complete request before it
/// is closed with an `ERROR`: a client attaches within milliseconds of connecting; ten seconds
/// leaves a loaded machine room and frees an idle squatter's place.
pub const CONTROL_IDLE_TIMEOUT_MS: u64 = 10_000;

/// Bytes of one unfinished message an app's private channel may have buffered (the wire allows
/// 64 MiB): a `COMPOSE` of two full-screen layers at the default 1920×1080 (16.6 MB) fits; a
/// message announcing more is refused with `ERROR` `Resources` and the channel closes.
pub const MAX_PENDING_BYTES_PER_APP: usize = 16 << 20;

/// Bytes of unfinished messages all private channels may have buffered together: four apps'
/// [`MAX_PENDING_BYTES_PER_APP`] at once. Without it [`lull_kds::server::MAX_APPS`] apps could
/// make the daemon buffer 1 GiB. A message whose header would take the total past it is refused
/// with `ERROR` `Resources` and its channel closes, as one over the app's own bound.
pub const MAX_PENDING_BYTES_TOTAL: usize = 4 * MAX_PENDING_BYTES_PER_APP;

/// Bytes a control connection may have buffered: the largest control request (`ATTACH` with a
/// name of `MAX_NAME_LEN` bytes) is well under this, so more is a misbehaving peer.
pub(crate) const MAX_CONTROL_BUFFER: usize = 4096;

/// How to run the display server.
#[derive(Clone, Debug)]
pub struct KdsConfig {
    pub socket_path: PathBuf,
    pub screen_width: u32,
    pub screen_height: u32,
    /// A Linux frame-buffer device to show the screen on (`/dev/fb0`); `None` runs headless,
    /// with the screen only in memory (and in `SNAPSHOT`).
    pub framebuffer: Option<PathBuf>,
}

impl Default for KdsConfig {
    fn default() -> Self {
        KdsConfig {
            socket_path: sys::default_kds_socket_path(),
            screen_width: DEFAULT_SCREEN_WIDTH,
            screen_height: DEFAULT_SCREEN_HEIGHT,
            framebuffer: None,
        }
    }
}

/// The socket layer's own counters (the server's are in [`KdsCounters`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct KdsHostCounters {
    pub control_connections: u64,
    /// Channels closed after a message the decoder refused.
    pub malformed_closed: u64,
    /// Clients dropped because their socket was full.
    pub not_reading_closed: u64,
    /// Frame-buffer presentations that failed (the screen stays correct in memory).
    pub present_errors: u64,
    /// Control connections closed at once because [`MAX_CONTROL_CONNECTIONS`] were open, or
    /// because the daemon was out of descriptors.
    pub control_refused: u64,
    /// Control connections closed for buffering more than a control request can be.
    pub control_oversized_closed: u64,
    /// Control connections closed with `ERROR` `Resources` because their user already held
    /// [`MAX_CONTROL_PER_PEER`] (also counted in `control_refused`).
    pub control_peer_limited: u64,
    /// Control connections closed for sending nothing for [`CONTROL_IDLE_TIMEOUT_MS`].
    pub control_idle_closed: u64,
    /// Private channels closed for announcing a message over [`MAX_PENDING_BYTES_PER_APP`].
    pub over_quota_closed: u64,
    /// Private channels closed for announcing a message that would take the unfinished messages
    /// of all apps past [`MAX_PENDING_BYTES_TOTAL`].
    pub over_total_quota_closed: u64,
    /// `ATTACH`es refused because the app's channels could not be made.
    pub attach_resource_errors: u64,
    /// Turns that ended with commands left for later ([`MAX_COMMANDS_PER_TURN`]).
    pub turns_deferred: u64,
    /// Times the one-shot frame timer was armed, and times it expired (each expiry is one
    /// wake-up of the daemon; both stay 0 while no app asks for a frame).
    pub frame_timer_arms: u64,
    pub frame_timer_expiries: u64,
    /// Times the timer could not be set (`timerfd_settime` failed); the pending `FRAME`s are
    /// then answered at once rather than never.
    pub frame_timer_errors: u64,
}

/// Everything the daemon reports about its display server when it stops.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct KdsReport {
    pub server: KdsCounters,
    pub host: KdsHostCounters,
}

pub(crate) struct PrivateChannel {
    pub(crate) fd: OwnedFd,
    pub(crate) token: Token,
    pub(crate) inbuf: Vec<u8>,
    /// The last turn stopped at [`MAX_COMMANDS_PER_TURN`]: `inbuf` may hold complete commands.
    pub(crate) deferred: bool,
    /// The attaching process's start time (`/proc/PID/stat`), read at `ATTACH`: with the pid it
    /// names that one process, so a `THREAD` after the process exited and its pid was reused is
    /// refused. `None` when it could not be read (the process was already gone).
    pub(crate) pid_start_ticks: Option<u64>,
}

/// What the daemon keeps of an open control connection (the connection is its source's).
pub(crate) struct ControlEntry {
    pub(crate) token: Token,
    /// Valid while the source is registered, which it is while the entry exists.
    pub(crate) fd: RawFd,
    pub(crate) uid: u32,
    pub(crate) privileged: bool,
    /// Cleared by its first complete request.
    pub(crate) idle_deadline_ns: Option<u64>,
}

/// Called with every window-state change the display server pushes to an app (guiS listens).
pub type WindowStateHook = Box<dyn FnMut(AppId, WindowState)>;

/// The display server's part of the daemon's state.
pub struct KdsHost {
    pub(crate) kds: Kds,
    pub(crate) channels: HashMap<AppId, PrivateChannel>,
    pub(crate) fb: Option<FrameBuffer>,
    pub(crate) counters: KdsHostCounters,
    pub(crate) out: Vec<u8>,
    pub(crate) on_window_state: Option<WindowStateHook>,
    /// Control connections open now, by id.
    pub(crate) control: HashMap<u64, ControlEntry>,
    pub(crate) next_control_id: u64,
    /// Closes control connections idle past their deadline, and whether it is armed.
    pub(crate) control_idle_timer: sys::TimerFd,
    pub(crate) control_idle_armed: bool,
    pub(crate) control_idle_timeout_ns: u64,
    /// The one-shot frame timer ([`crate::kds`], frame pacing), and whether it is armed.
    pub(crate) frame_timer: sys::TimerFd,
    pub(crate) frame_timer_armed: bool,
}

impl std::fmt::Debug for KdsHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KdsHost({} apps)", self.channels.len())
    }
}

/// Why the display server could not be set up in the daemon.
#[derive(Debug, thiserror::Error)]
pub enum KdsSetupError {
    #[error("screen {width}x{height}: {source}")]
    Screen {
        width: u32,
        height: u32,
        source: lull_kds::DrawError,
    },
    #[error(transparent)]
    FrameBuffer(#[from] lull_os::fbdev::FbError),
    #[error("the frame timer (timerfd): {0}")]
    FrameTimer(std::io::Error),
    #[error("the control connections' idle timer (timerfd): {0}")]
    IdleTimer(std::io::Error),
}

impl KdsHost {
    pub(crate) fn new(config: &KdsConfig) -> Result<KdsHost, KdsSetupError> {
        let mut kds = Kds::new(config.screen_width, config.screen_height).map_err(|source| {
            KdsSetupError::Screen {
                width: config.screen_width,
                height: config.screen_height,
                source,
            }
        })?;
        let fb = match &config.framebuffer {
            None => None,
            Some(path) => Some(FrameBuffer::open(path)?),
        };
        // The headless screen's 60 Hz (`FRAME_DONE` comes at multiples of its period).
        kds.set_refresh_period_ns(DEFAULT_REFRESH_PERIOD_NS);
        let frame_timer = sys::TimerFd::new().map_err(KdsSetupError::FrameTimer)?;
        let control_idle_timer = sys::TimerFd::new().map_err(KdsSetupError::IdleTimer)?;
        let mut host = KdsHost {
            kds,
            channels: HashMap::new(),
            fb,
            counters: KdsHostCounters::default(),
            out: Vec::with_capacity(256),
            on_window_state: None,
            control: HashMap::new(),
            next_control_id: 0,
            control_idle_timer,
            control_idle_armed: false,
            control_idle_timeout_ns: CONTROL_IDLE_TIMEOUT_MS * 1_000_000,
            frame_timer,
            frame_timer_armed: false,
        };
        host.present(Some(Rect::new(
            0,
            0,
            config.screen_width,
            config.screen_height,
        )));
        Ok(host)
    }

    /// The server state (windows, screen, threads each app declared).
    #[must_use]
    pub fn server(&self) -> &Kds {
        &self.kds
    }

    /// The start time (`/proc/PID/stat`) of the process that attached `app`, read at `ATTACH`:
    /// with the pid it names that one process.
    #[must_use]
    pub fn pid_start_ticks(&self, app: AppId) -> Option<u64> {
        self.channels.get(&app).and_then(|c| c.pid_start_ticks)
    }

    /// Control connections open now.
    #[must_use]
    pub fn control_connections_open(&self) -> usize {
        self.control.len()
    }

    /// Arms the idle timer for the earliest deadline of the control connections, if any.
    pub(crate) fn arm_control_idle(&mut self) {
        let earliest = self
            .control
            .values()
            .filter_map(|e| e.idle_deadline_ns)
            .min();
        self.control_idle_armed = match earliest {
            Some(at) => self.control_idle_timer.set_abs(at, 0).is_ok(),
            // No connection left to time out: a timer left armed would wake an idle daemon.
            None => {
                let _ = self.control_idle_timer.disarm();
                false
            }
        };
    }

    #[must_use]
    pub fn report(&self) -> KdsReport {
        KdsReport {
            server: self.kds.counters(),
            host: self.counters,
        }
    }

    /// Forgets `app` (its window and channel); returns its channel's source token.
    pub(crate) fn detach(&mut self, app: AppId) -> Option<Token> {
        let ch = self.channels.remove(&app)?;
        self.kds.detach(app);
        let damage = self.kds.take_damage();
        self.present(damage);
        Some(ch.token)
    }

    /// Arms the frame timer for the next refresh boundary when a visible app waits for
    /// `FRAME_DONE` and it is not armed; disarms it when nobody waits any more (the app left or
    /// was hidden). Reads the clock only to arm. Returns `false` when the timer could not be
    /// set: the caller answers the waiting apps at once instead.
    pub(crate) fn update_frame_timer(&mut self) -> bool {
        let wanted = self.kds.frame_wanted();
        if wanted == self.frame_timer_armed {
            return true;
        }
        let set = if wanted {
            match self.kds.next_frame_ns(sys::monotonic_ns()) {
                Some(at) => self.frame_timer.set_abs(at, 0),
                None => Ok(()),
            }
        } else {
            self.frame_timer.disarm()
        };
        if set.is_err() {
            self.counters.frame_timer_errors += 1;
            self.frame_timer_armed = false;
            return !wanted;
        }
        self.frame_timer_armed = wanted;
        self.counters.frame_timer_arms += u64::from(wanted);
        true
    }

    pub(crate) fn present(&mut self, damage: Option<Rect>) {
        let (Some(fb), Some(d)) = (self.fb.as_mut(), damage) else {
            return;
        };
        if fb.present(&self.kds.displayed(), d).is_err() {
            self.counters.present_errors += 1;
        }
    }
}
