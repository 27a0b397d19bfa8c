//! The KDS command wire format (seed 000, figure 15), documented in `docs/kds-protocol.md`.
//!
//! Every message is `KDS_COMMAND { request_type: u32, data_length: u32, data: [u8; data_length] }`,
//! little-endian. The decoder checks the length before every read, refuses a `data_length` above
//! [`MAX_DATA_LEN`] before any byte of data arrives, and requires the data to be consumed exactly:
//! trailing bytes are an error, never ignored.

use lull_model::{
    AppId, EventKind, HandlerId, Screen, Stacking, ThreadCategory, Visibility, WindowState,
};
use serde::Serialize;

use crate::compose::{Fill, Layer, Surface, MAX_LAYERS};
use crate::geometry::Rect;

/// Bytes in the `{request_type, data_length}` header.
pub const HEADER_LEN: usize = 8;
/// Largest `data_length` accepted: room for four full-HD ARGB layers (4 × 8.3 MB) and margin.
pub const MAX_DATA_LEN: u32 = 64 << 20;
/// Longest application name in `ATTACH`, in bytes of UTF-8 (a label for `lull kds windows`).
pub const MAX_NAME_LEN: usize = 64;
/// Most windows one `WINDOWS` reply lists; the server attaches no more apps than this.
pub const MAX_WINDOWS: usize = 256;
/// Most draws one `DRAW_BATCH` carries: a frame's worth of marks with a wide margin (the
/// tracking app gathers at most a few per 60 Hz refresh); bounds the work one command asks.
pub const MAX_DRAW_BATCH: usize = 1024;

/// Request types, client → server.
pub mod request_type {
    pub const ATTACH: u32 = 1;
    pub const DETACH: u32 = 2;
    pub const COMPOSE: u32 = 3;
    pub const DRAW: u32 = 4;
    pub const ESM_REGISTER: u32 = 5;
    pub const THREAD: u32 = 6;
    /// Window-manager requests: control socket only, from a privileged peer.
    pub const WM_FOREGROUND: u32 = 7;
    pub const WM_BACKGROUND: u32 = 8;
    pub const WM_COVER: u32 = 9;
    pub const WM_SCREEN: u32 = 10;
    pub const SNAPSHOT: u32 = 11;
    pub const LIST_WINDOWS: u32 = 12;
    /// Private channel: tell me when the next frame may be drawn (answered by `FRAME_DONE`).
    pub const FRAME: u32 = 13;
    /// Private channel: several `DRAW`s in one message, one reply.
    pub const DRAW_BATCH: u32 = 14;

    /// The request's name as the protocol document writes it; `None` for a type no request has
    /// (0 is what the server puts in an error that answers no request: a connection turned away).
    #[must_use]
    pub fn name(t: u32) -> Option<&'static str> {
        Some(match t {
            ATTACH => "ATTACH",
            DETACH => "DETACH",
            COMPOSE => "COMPOSE",
            DRAW => "DRAW",
            ESM_REGISTER => "ESM_REGISTER",
            THREAD => "THREAD",
            WM_FOREGROUND => "WM_FOREGROUND",
            WM_BACKGROUND => "WM_BACKGROUND",
            WM_COVER => "WM_COVER",
            WM_SCREEN => "WM_SCREEN",
            SNAPSHOT => "SNAPSHOT",
            LIST_WINDOWS => "LIST_WINDOWS",
            FRAME => "FRAME",
            DRAW_BATCH => "DRAW_BATCH",
            _ => return None,
        })
    }
}

/// Message types, server → client (high bit set so a stray echo can never parse as a request).
pub mod reply_type {
    pub const ATTACHED: u32 = 0x8000_0001;
    pub const OK: u32 = 0x8000_0002;
    pub const ERROR: u32 = 0x8000_0003;
    pub const COMPOSED: u32 = 0x8000_0004;
    pub const WINDOW_STATE: u32 = 0x8000_0005;
    pub const SNAPSHOT: u32 = 0x8000_0006;
    pub const WINDOWS: u32 = 0x8000_0007;
    /// Pushed: the next frame may be drawn now (answers `FRAME` at a refresh boundary).
    pub const FRAME_DONE: u32 = 0x8000_0008;
}

/// The `code` of an `ERROR` reply: what kind of request failed and why.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
#[repr(u32)]
pub enum ErrorCode {
    /// The bytes were not a valid command; the server closes the channel after this reply.
    Malformed = 1,
    /// A request sent on the wrong kind of channel (`COMPOSE` on the control socket, `ATTACH` on a
    /// private channel).
    WrongChannel = 2,
    /// A window-manager request from a peer that is not the server's user or root.
    NotPermitted = 3,
    /// No attached app has that id.
    NoWindow = 4,
    /// `DRAW` of a surface id the app never composed.
    NoSurface = 5,
    /// `COMPOSE` refused (layer pixel count, surface larger than the window, too many surfaces).
    Compose = 6,
    /// `DRAW` would write outside the app's window (figure 17).
    OutsideWindow = 7,
    /// The server has attached as many apps as it will.
    TooManyApps = 8,
    /// `THREAD` named a thread that is not the caller's.
    BadThread = 9,
    /// `ATTACH` asked for a window the screen cannot hold.
    WindowTooLarge = 10,
    /// The ESM refused the registration.
    Esm = 11,
    /// The server lacked a resource for the request (descriptors or memory for an app's
    /// channels, a snapshot's memfd); the same request may succeed later.
    Resources = 12,
}

impl ErrorCode {
    pub const ALL: [ErrorCode; 12] = [
        ErrorCode::Malformed,
        ErrorCode::WrongChannel,
        ErrorCode::NotPermitted,
        ErrorCode::NoWindow,
        ErrorCode::NoSurface,
        ErrorCode::Compose,
        ErrorCode::OutsideWindow,
        ErrorCode::TooManyApps,
        ErrorCode::BadThread,
        ErrorCode::WindowTooLarge,
        ErrorCode::Esm,
        ErrorCode::Resources,
    ];

    #[must_use]
    pub fn from_u32(n: u32) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| *c as u32 == n)
    }

    /// The code's name as `docs/kds-protocol.md` writes it, for messages to users.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::Malformed => "malformed",
            ErrorCode::WrongChannel => "wrong channel",
            ErrorCode::NotPermitted => "not permitted",
            ErrorCode::NoWindow => "no window",
            ErrorCode::NoSurface => "no surface",
            ErrorCode::Compose => "compose",
            ErrorCode::OutsideWindow => "outside window",
            ErrorCode::TooManyApps => "too many apps",
            ErrorCode::BadThread => "bad thread",
            ErrorCode::WindowTooLarge => "window too large",
            ErrorCode::Esm => "ESM",
            ErrorCode::Resources => "resources",
        }
    }
}

/// One window as `LIST_WINDOWS` reports it.
#[derive(Clone, PartialEq, Eq, Debug, Serialize)]
pub struct WindowInfo {
    pub app: AppId,
    /// The attaching process, from the control socket's peer credentials.
    pub pid: u32,
    /// Position and size on the screen.
    pub rect: Rect,
    pub state: WindowState,
    pub name: String,
    /// The kernel thread the app declared for each category, in `ThreadCategory::ALL` order
    /// (`None`: not declared).
    pub threads: [Option<u32>; 4],
}

/// One draw of a `DRAW_BATCH`: what a `DRAW` carries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DrawItem {
    pub surface_id: u32,
    pub x: i32,
    pub y: i32,
}

/// A command from an application.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Request {
    /// On the control socket: ask for a private channel and a window of this size (0 × 0 asks for
    /// the whole screen). `name` labels the window (at most [`MAX_NAME_LEN`] bytes).
    Attach {
        width: u32,
        height: u32,
        name: String,
    },
    /// Leave: the window, surfaces and registrations go.
    Detach,
    /// Flatten `surface` into the app's surface slot `surface_id` (figure 16).
    Compose { surface_id: u32, surface: Surface },
    /// Draw the flattened surface `surface_id` at `(x, y)` of the app's window (figure 17).
    Draw { surface_id: u32, x: i32, y: i32 },
    /// Several draws, applied in order as one: refused whole if any one would be (1 to
    /// [`MAX_DRAW_BATCH`] of them); answered with one `OK`.
    DrawBatch(Vec<DrawItem>),
    /// Ask to be told when the next frame may be drawn: the server pushes `FRAME_DONE` at the
    /// next refresh boundary while the app's window is visible. No immediate reply.
    Frame,
    /// `esm_register` on the app's event thread, through the KDS so it can suspend it in the
    /// background (figure 19); `None` unregisters.
    EsmRegister {
        kind: EventKind,
        handler: Option<HandlerId>,
    },
    /// Declare which kernel thread runs which KDS thread category.
    Thread { category: ThreadCategory, tid: u32 },
    /// Window manager (control socket): bring `app` to the front (figure 27).
    WmForeground { app: AppId },
    /// Window manager: send `app` to the background (figure 26).
    WmBackground { app: AppId },
    /// Window manager: cover (`true`) or uncover `app` with a system decoration.
    WmCover { app: AppId, covered: bool },
    /// Window manager: light or darken the screen.
    WmScreen { screen: Screen },
    /// Copy of the screen as displayed; answered with `SNAPSHOT` and a memfd of pixels.
    Snapshot,
    /// Every window, bottom to top; answered with `WINDOWS`.
    ListWindows,
}

/// A message to an application.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Reply {
    /// The private channel (and the event thread's ESM connection) travel with this message as
    /// `SCM_RIGHTS` descriptors.
    Attached {
        app: AppId,
        window: Rect,
        /// The screen's refresh period: its refresh boundaries are the multiples of this on
        /// `CLOCK_MONOTONIC`, so the app can tell whether one has passed since its last frame.
        refresh_period_ns: u32,
    },
    Ok {
        request_type: u32,
    },
    Error {
        request_type: u32,
        code: u32,
        message: String,
    },
    Composed {
        surface_id: u32,
        width: u32,
        height: u32,
    },
    WindowState(WindowState),
    /// The screen is `width × height`; its ARGB pixels, row-major, are in a memfd passed with
    /// this message as an `SCM_RIGHTS` descriptor.
    Snapshot {
        width: u32,
        height: u32,
    },
    Windows(Vec<WindowInfo>),
    /// Answers `FRAME`: the refresh boundary (`CLOCK_MONOTONIC`, ns) from which the app may draw
    /// its next frame.
    FrameDone {
        frame_ns: u64,
    },
}

/// Why bytes are not a valid message.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error, Serialize)]
pub enum WireError {
    #[error("unknown message type {0:#x}")]
    UnknownType(u32),
    #[error("data length {0} is more than the {MAX_DATA_LEN} allowed")]
    TooLong(u32),
    #[error("message type {ty:#x}: data ends {missing} bytes short of the field `{field}`")]
    Truncated {
        ty: u32,
        field: &'static str,
        missing: usize,
    },
    #[error("message type {ty:#x}: {extra} bytes after the last field")]
    TrailingBytes { ty: u32, extra: usize },
    #[error("message type {ty:#x}: field `{field}` has invalid value {value}")]
    BadValue {
        ty: u32,
        field: &'static str,
        value: u64,
    },
}

/// One message split off a buffer: its type, its data, and the bytes it took in all.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Frame<'a> {
    pub ty: u32,
    pub data: &'a [u8],
    pub used: usize,
}

/// Splits one message off the front of `buf`: `Ok(None)` while more bytes are needed. Fails as
/// soon as the header is known bad, so a hostile length costs no allocation.
///
/// # Errors
/// [`WireError::TooLong`], or [`WireError::UnknownType`] for a type `known` refuses.
pub fn frame(buf: &[u8], known: fn(u32) -> bool) -> Result<Option<Frame<'_>>, WireError> {
    let Some(header) = buf.get(..HEADER_LEN) else {
        return Ok(None);
    };
    let ty = u32::from_le_bytes(header[..4].try_into().expect("4 bytes"));
    let len = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
    if !known(ty) {
        return Err(WireError::UnknownType(ty));
    }
    if len > MAX_DATA_LEN {
        return Err(WireError::TooLong(len));
    }
    let used = HEADER_LEN + len as usize;
    Ok(buf
        .get(HEADER_LEN..used)
        .map(|data| Frame { ty, data, used }))
}

fn is_request(ty: u32) -> bool {
    (request_type::ATTACH..=request_type::DRAW_BATCH).contains(&ty)
}

fn is_reply(ty: u32) -> bool {
    (reply_type::ATTACHED..=reply_type::FRAME_DONE).contains(&ty)
}

/// Decodes one request from the front of `buf`; `Ok(None)` while incomplete.
///
/// # Errors
/// A [`WireError`] naming the first malformation. The stream cannot be resynchronised after one:
/// the server closes that channel.
pub fn decode_request(buf: &[u8]) -> Result<Option<(Request, usize)>, WireError> {
    let Some(Frame { ty, data, used }) = frame(buf, is_request)? else {
        return Ok(None);
    };
    let mut r = Reader { ty, data };
    let req = match ty {
        request_type::ATTACH => {
            let width = r.u32("width")?;
            let height = r.u32("height")?;
            let name = r.rest_utf8("name", MAX_NAME_LEN)?;
            Request::Attach {
                width,
                height,
                name,
            }
        }
        request_type::DETACH => Request::Detach,
        request_type::COMPOSE => {
            let surface_id = r.u32("surface_id")?;
            let width = r.u32("width")?;
            let height = r.u32("height")?;
            let n = r.u32("layer_count")?;
            if n as usize > MAX_LAYERS {
                return Err(r.bad("layer_count", n.into()));
            }
            let mut layers = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let z = r.i32("z")?;
                let rect = Rect::new(
                    r.i32("x")?,
                    r.i32("y")?,
                    r.u32("layer_width")?,
                    r.u32("layer_height")?,
                );
                let fill = match r.u32("fill_kind")? {
                    0 => Fill::Solid(r.u32("argb")?),
                    1 => {
                        let count = usize::try_from(rect.area())
                            .map_err(|_| r.bad("layer_size", rect.area()))?;
                        Fill::Pixels(r.u32_array("pixels", count)?)
                    }
                    other => return Err(r.bad("fill_kind", other.into())),
                };
                layers.push(Layer { z, rect, fill });
            }
            Request::Compose {
                surface_id,
                surface: Surface {
                    width,
                    height,
                    layers,
                },
            }
        }
        request_type::DRAW => Request::Draw {
            surface_id: r.u32("surface_id")?,
            x: r.i32("x")?,
            y: r.i32("y")?,
        },
        request_type::DRAW_BATCH => {
            let n = r.u32("draw_count")?;
            if n == 0 || n as usize > MAX_DRAW_BATCH {
                return Err(r.bad("draw_count", n.into()));
            }
            let mut items = Vec::with_capacity(n as usize);
            for _ in 0..n {
                items.push(DrawItem {
                    surface_id: r.u32("surface_id")?,
                    x: r.i32("x")?,
                    y: r.i32("y")?,
                });
            }
            Request::DrawBatch(items)
        }
        request_type::FRAME => Request::Frame,
        request_type::ESM_REGISTER => {
            let raw_kind = r.u16("kind")?;
            let kind =
                EventKind::from_u16(raw_kind).ok_or_else(|| r.bad("kind", raw_kind.into()))?;
            let flags = r.u16("flags")?;
            let handler = r.u32("handler")?;
            let handler = match flags {
                0 => None,
                1 => Some(HandlerId(handler)),
                other => return Err(r.bad("flags", other.into())),
            };
            Request::EsmRegister { kind, handler }
        }
        request_type::THREAD => {
            let raw = r.u32("category")?;
            let category = *ThreadCategory::ALL
                .get(raw as usize)
                .ok_or_else(|| r.bad("category", raw.into()))?;
            Request::Thread {
                category,
                tid: r.u32("tid")?,
            }
        }
        request_type::WM_FOREGROUND => Request::WmForeground { app: r.app()? },
        request_type::WM_BACKGROUND => Request::WmBackground { app: r.app()? },
        request_type::WM_COVER => {
            let app = r.app()?;
            let covered = match r.u32("covered")? {
                0 => false,
                1 => true,
                v => return Err(r.bad("covered", v.into())),
            };
            Request::WmCover { app, covered }
        }
        request_type::WM_SCREEN => {
            let screen = match r.u32("screen")? {
                0 => Screen::On,
                1 => Screen::Off,
                v => return Err(r.bad("screen", v.into())),
            };
            Request::WmScreen { screen }
        }
        request_type::SNAPSHOT => Request::Snapshot,
        request_type::LIST_WINDOWS => Request::ListWindows,
        _ => unreachable!("frame() admits only request types"),
    };
    r.finish()?;
    Ok(Some((req, used)))
}

/// Decodes one reply from the front of `buf`; `Ok(None)` while incomplete.
///
/// # Errors
/// A [`WireError`] naming the first malformation.
pub fn decode_reply(buf: &[u8]) -> Result<Option<(Reply, usize)>, WireError> {
    let Some(Frame { ty, data, used }) = frame(buf, is_reply)? else {
        return Ok(None);
    };
    let mut r = Reader { ty, data };
    let reply = match ty {
        reply_type::ATTACHED => Reply::Attached {
            app: r.app()?,
            window: r.rect()?,
            refresh_period_ns: r.u32("refresh_period_ns")?,
        },
        reply_type::FRAME_DONE => Reply::FrameDone {
            frame_ns: r.u64("frame_ns")?,
        },
        reply_type::OK => Reply::Ok {
            request_type: r.u32("request_type")?,
        },
        reply_type::ERROR => {
            let request_type = r.u32("request_type")?;
            let code = r.u32("code")?;
            let rest = r.take("message", r.data.len())?;
            let message = String::from_utf8(rest.to_vec())
                .map_err(|e| r.bad("message", e.utf8_error().valid_up_to() as u64))?;
            Reply::Error {
                request_type,
                code,
                message,
            }
        }
        reply_type::COMPOSED => Reply::Composed {
            surface_id: r.u32("surface_id")?,
            width: r.u32("width")?,
            height: r.u32("height")?,
        },
        reply_type::WINDOW_STATE => Reply::WindowState(r.window_state()?),
        reply_type::SNAPSHOT => Reply::Snapshot {
            width: r.u32("width")?,
            height: r.u32("height")?,
        },
        reply_type::WINDOWS => {
            let n = r.u32("window_count")?;
            if n as usize > MAX_WINDOWS {
                return Err(r.bad("window_count", n.into()));
            }
            let mut list = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let app = r.app()?;
                let pid = r.u32("pid")?;
                let rect = r.rect()?;
                let state = r.window_state()?;
                let len = usize::from(r.u16("name_length")?);
                if len > MAX_NAME_LEN {
                    return Err(r.bad("name_length", len as u64));
                }
                let raw = r.take("name", len)?;
                let name = String::from_utf8(raw.to_vec())
                    .map_err(|e| r.bad("name", e.utf8_error().valid_up_to() as u64))?;
                let mut threads = [None; 4];
                for t in &mut threads {
                    // 0 is no thread: the kernel never gives a thread id 0.
                    *t = Some(r.u32("tid")?).filter(|&tid| tid != 0);
                }
                list.push(WindowInfo {
                    app,
                    pid,
                    rect,
                    state,
                    name,
                    threads,
                });
            }
            Reply::Windows(list)
        }
        _ => unreachable!("frame() admits only reply types"),
    };
    r.finish()?;
    Ok(Some((reply, used)))
}

/// Appends `req`'s encoding to `out`.
pub fn encode_request(req: &Request, out: &mut Vec<u8>) {
    let start = begin(out);
    let ty = match req {
        Request::Attach {
            width,
            height,
            name,
        } => {
            put_u32(out, *width);
            put_u32(out, *height);
            out.extend_from_slice(name.as_bytes());
            request_type::ATTACH
        }
        Request::Detach => request_type::DETACH,
        Request::Compose {
            surface_id,
            surface,
        } => {
            put_u32(out, *surface_id);
            put_u32(out, surface.width);
            put_u32(out, surface.height);
            put_u32(out, u32::try_from(surface.layers.len()).unwrap_or(u32::MAX));
            for l in &surface.layers {
                put_i32(out, l.z);
                put_i32(out, l.rect.x);
                put_i32(out, l.rect.y);
                put_u32(out, l.rect.width);
                put_u32(out, l.rect.height);
                match &l.fill {
                    Fill::Solid(argb) => {
                        put_u32(out, 0);
                        put_u32(out, *argb);
                    }
                    Fill::Pixels(p) => {
                        put_u32(out, 1);
                        out.reserve(p.len() * 4);
                        for &px in p {
                            put_u32(out, px);
                        }
                    }
                }
            }
            request_type::COMPOSE
        }
        Request::Draw { surface_id, x, y } => {
            put_u32(out, *surface_id);
            put_i32(out, *x);
            put_i32(out, *y);
            request_type::DRAW
        }
        Request::DrawBatch(items) => {
            put_u32(out, u32::try_from(items.len()).unwrap_or(u32::MAX));
            for d in items {
                put_u32(out, d.surface_id);
                put_i32(out, d.x);
                put_i32(out, d.y);
            }
            request_type::DRAW_BATCH
        }
        Request::Frame => request_type::FRAME,
        Request::EsmRegister { kind, handler } => {
            out.extend_from_slice(&(*kind as u16).to_le_bytes());
            out.extend_from_slice(&u16::from(handler.is_some()).to_le_bytes());
            put_u32(out, handler.map_or(0, |h| h.0));
            request_type::ESM_REGISTER
        }
        Request::Thread { category, tid } => {
            let index = ThreadCategory::ALL
                .iter()
                .position(|c| c == category)
                .expect("listed");
            put_u32(out, index as u32);
            put_u32(out, *tid);
            request_type::THREAD
        }
        Request::WmForeground { app } => {
            put_app(out, *app);
            request_type::WM_FOREGROUND
        }
        Request::WmBackground { app } => {
            put_app(out, *app);
            request_type::WM_BACKGROUND
        }
        Request::WmCover { app, covered } => {
            put_app(out, *app);
            put_u32(out, u32::from(*covered));
            request_type::WM_COVER
        }
        Request::WmScreen { screen } => {
            put_u32(out, u32::from(*screen == Screen::Off));
            request_type::WM_SCREEN
        }
        Request::Snapshot => request_type::SNAPSHOT,
        Request::ListWindows => request_type::LIST_WINDOWS,
    };
    finish(out, start, ty);
}

/// Appends `reply`'s encoding to `out`.
pub fn encode_reply(reply: &Reply, out: &mut Vec<u8>) {
    let start = begin(out);
    let ty = match reply {
        Reply::Attached {
            app,
            window,
            refresh_period_ns,
        } => {
            put_app(out, *app);
            put_rect(out, *window);
            put_u32(out, *refresh_period_ns);
            reply_type::ATTACHED
        }
        Reply::FrameDone { frame_ns } => {
            out.extend_from_slice(&frame_ns.to_le_bytes());
            reply_type::FRAME_DONE
        }
        Reply::Ok { request_type } => {
            put_u32(out, *request_type);
            reply_type::OK
        }
        Reply::Error {
            request_type,
            code,
            message,
        } => {
            put_u32(out, *request_type);
            put_u32(out, *code);
            out.extend_from_slice(message.as_bytes());
            reply_type::ERROR
        }
        Reply::Composed {
            surface_id,
            width,
            height,
        } => {
            put_u32(out, *surface_id);
            put_u32(out, *width);
            put_u32(out, *height);
            reply_type::COMPOSED
        }
        Reply::WindowState(s) => {
            put_window_state(out, *s);
            reply_type::WINDOW_STATE
        }
        Reply::Snapshot { width, height } => {
            put_u32(out, *width);
            put_u32(out, *height);
            reply_type::SNAPSHOT
        }
        Reply::Windows(list) => {
            put_u32(out, u32::try_from(list.len()).unwrap_or(u32::MAX));
            for w in list {
                put_app(out, w.app);
                put_u32(out, w.pid);
                put_rect(out, w.rect);
                put_window_state(out, w.state);
                // Names are capped at MAX_NAME_LEN bytes on the way in; cut on a char boundary.
                let name = truncate_utf8(&w.name, MAX_NAME_LEN);
                out.extend_from_slice(&(name.len() as u16).to_le_bytes());
                out.extend_from_slice(name.as_bytes());
                for t in w.threads {
                    put_u32(out, t.unwrap_or(0));
                }
            }
            reply_type::WINDOWS
        }
    };
    finish(out, start, ty);
}

fn begin(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER_LEN]);
    start
}

fn finish(out: &mut [u8], start: usize, ty: u32) {
    let len = u32::try_from(out.len() - start - HEADER_LEN).unwrap_or(u32::MAX);
    out[start..start + 4].copy_from_slice(&ty.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&len.to_le_bytes());
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_app(out: &mut Vec<u8>, app: AppId) {
    put_u32(out, app.index);
    put_u32(out, app.generation);
}

fn put_rect(out: &mut Vec<u8>, r: Rect) {
    put_i32(out, r.x);
    put_i32(out, r.y);
    put_u32(out, r.width);
    put_u32(out, r.height);
}

fn put_window_state(out: &mut Vec<u8>, s: WindowState) {
    out.push(u8::from(s.stacking == Stacking::Background));
    out.push(u8::from(s.visibility == Visibility::Covered));
    out.push(u8::from(s.screen == Screen::Off));
    out.push(0);
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
#[must_use]
pub fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Reads fields off a message's data, checking the length before each read.
struct Reader<'a> {
    ty: u32,
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], WireError> {
        if self.data.len() < n {
            return Err(WireError::Truncated {
                ty: self.ty,
                field,
                missing: n - self.data.len(),
            });
        }
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], WireError> {
        Ok(self.take(field, N)?.try_into().expect("took N bytes"))
    }

    fn u8(&mut self, field: &'static str) -> Result<u8, WireError> {
        Ok(self.array::<1>(field)?[0])
    }

    fn u16(&mut self, field: &'static str) -> Result<u16, WireError> {
        Ok(u16::from_le_bytes(self.array(field)?))
    }

    fn u32(&mut self, field: &'static str) -> Result<u32, WireError> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }

    fn u64(&mut self, field: &'static str) -> Result<u64, WireError> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, WireError> {
        Ok(i32::from_le_bytes(self.array(field)?))
    }

    fn u32_array(&mut self, field: &'static str, count: usize) -> Result<Vec<u32>, WireError> {
        // The byte count is checked against the data before allocating, so a claimed size larger
        // than the message costs nothing.
        let bytes = count.checked_mul(4).ok_or(WireError::BadValue {
            ty: self.ty,
            field,
            value: count as u64,
        })?;
        let raw = self.take(field, bytes)?;
        Ok(raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect())
    }

    fn app(&mut self) -> Result<AppId, WireError> {
        Ok(AppId {
            index: self.u32("app_index")?,
            generation: self.u32("app_generation")?,
        })
    }

    fn rect(&mut self) -> Result<Rect, WireError> {
        Ok(Rect::new(
            self.i32("x")?,
            self.i32("y")?,
            self.u32("width")?,
            self.u32("height")?,
        ))
    }

    fn window_state(&mut self) -> Result<WindowState, WireError> {
        let stacking = match self.u8("stacking")? {
            0 => Stacking::Foreground,
            1 => Stacking::Background,
            v => return Err(self.bad("stacking", v.into())),
        };
        let visibility = match self.u8("visibility")? {
            0 => Visibility::Visible,
            1 => Visibility::Covered,
            v => return Err(self.bad("visibility", v.into())),
        };
        let screen = match self.u8("screen")? {
            0 => Screen::On,
            1 => Screen::Off,
            v => return Err(self.bad("screen", v.into())),
        };
        match self.u8("reserved")? {
            0 => Ok(WindowState {
                stacking,
                visibility,
                screen,
            }),
            v => Err(self.bad("reserved", v.into())),
        }
    }

    /// The rest of the data as UTF-8 of at most `max` bytes.
    fn rest_utf8(&mut self, field: &'static str, max: usize) -> Result<String, WireError> {
        let n = self.data.len();
        if n > max {
            return Err(self.bad(field, n as u64));
        }
        let raw = self.take(field, n)?;
        String::from_utf8(raw.to_vec())
            .map_err(|e| self.bad(field, e.utf8_error().valid_up_to() as u64))
    }

    fn bad(&self, field: &'static str, value: u64) -> WireError {
        WireError::BadValue {
            ty: self.ty,
            field,
            value,
        }
    }

    fn finish(self) -> Result<(), WireError> {
        if self.data.is_empty() {
            Ok(())
        } else {
            Err(WireError::TrailingBytes {
                ty: self.ty,
                extra: self.data.len(),
            })
        }
    }
}

#[cfg(test)]
mod tests;
