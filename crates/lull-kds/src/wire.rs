//! The KDS command wire format (seed 000, figure 15), documented in `docs/kds-protocol.md`.
//!
//! Every message is `KDS_COMMAND { request_type: u32, data_length: u32, data: [u8; data_length] }`,
//! little-endian. The decoder checks the length before every read, refuses a `data_length` above
//! [`MAX_DATA_LEN`] before any byte of data arrives, and requires the data to be consumed exactly:
//! trailing bytes are an error, never ignored.

use lull_model::{EventKind, HandlerId, Screen, Stacking, ThreadCategory, Visibility, WindowState};
use serde::Serialize;

use crate::compose::{Fill, Layer, Surface, MAX_LAYERS};
use crate::geometry::Rect;

/// Bytes in the `{request_type, data_length}` header.
pub const HEADER_LEN: usize = 8;
/// Largest `data_length` accepted: room for four full-HD ARGB layers (4 × 8.3 MB) and margin.
pub const MAX_DATA_LEN: u32 = 64 << 20;

/// Request types, client → server.
pub mod request_type {
    pub const ATTACH: u32 = 1;
    pub const DETACH: u32 = 2;
    pub const COMPOSE: u32 = 3;
    pub const DRAW: u32 = 4;
    pub const ESM_REGISTER: u32 = 5;
    pub const THREAD: u32 = 6;
}

/// Message types, server → client (high bit set so a stray echo can never parse as a request).
pub mod reply_type {
    pub const ATTACHED: u32 = 0x8000_0001;
    pub const OK: u32 = 0x8000_0002;
    pub const ERROR: u32 = 0x8000_0003;
    pub const COMPOSED: u32 = 0x8000_0004;
    pub const WINDOW_STATE: u32 = 0x8000_0005;
}

/// A command from an application.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Request {
    /// On the control socket: ask for a private channel and a window of this size (0 × 0 asks for
    /// the whole screen).
    Attach { width: u32, height: u32 },
    /// Leave: the window, surfaces and registrations go.
    Detach,
    /// Flatten `surface` into the app's surface slot `surface_id` (figure 16).
    Compose { surface_id: u32, surface: Surface },
    /// Draw the flattened surface `surface_id` at `(x, y)` of the app's window (figure 17).
    Draw { surface_id: u32, x: i32, y: i32 },
    /// `esm_register` on the app's event thread, through the KDS so it can suspend it in the
    /// background (figure 19); `None` unregisters.
    EsmRegister {
        kind: EventKind,
        handler: Option<HandlerId>,
    },
    /// Declare which kernel thread runs which KDS thread category.
    Thread { category: ThreadCategory, tid: u32 },
}

/// A message to an application.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Reply {
    Attached {
        window: Rect,
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
    (request_type::ATTACH..=request_type::THREAD).contains(&ty)
}

fn is_reply(ty: u32) -> bool {
    (reply_type::ATTACHED..=reply_type::WINDOW_STATE).contains(&ty)
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
        request_type::ATTACH => Request::Attach {
            width: r.u32("width")?,
            height: r.u32("height")?,
        },
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
            window: Rect::new(r.i32("x")?, r.i32("y")?, r.u32("width")?, r.u32("height")?),
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
        reply_type::WINDOW_STATE => {
            let stacking = match r.u8("stacking")? {
                0 => Stacking::Foreground,
                1 => Stacking::Background,
                v => return Err(r.bad("stacking", v.into())),
            };
            let visibility = match r.u8("visibility")? {
                0 => Visibility::Visible,
                1 => Visibility::Covered,
                v => return Err(r.bad("visibility", v.into())),
            };
            let screen = match r.u8("screen")? {
                0 => Screen::On,
                1 => Screen::Off,
                v => return Err(r.bad("screen", v.into())),
            };
            r.u8("reserved")?;
            Reply::WindowState(WindowState {
                stacking,
                visibility,
                screen,
            })
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
        Request::Attach { width, height } => {
            put_u32(out, *width);
            put_u32(out, *height);
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
    };
    finish(out, start, ty);
}

/// Appends `reply`'s encoding to `out`.
pub fn encode_reply(reply: &Reply, out: &mut Vec<u8>) {
    let start = begin(out);
    let ty = match reply {
        Reply::Attached { window } => {
            put_i32(out, window.x);
            put_i32(out, window.y);
            put_u32(out, window.width);
            put_u32(out, window.height);
            reply_type::ATTACHED
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
            out.push(u8::from(s.stacking == Stacking::Background));
            out.push(u8::from(s.visibility == Visibility::Covered));
            out.push(u8::from(s.screen == Screen::Off));
            out.push(0);
            reply_type::WINDOW_STATE
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(req: &Request) {
        let mut buf = Vec::new();
        encode_request(req, &mut buf);
        assert_eq!(
            decode_request(&buf).unwrap(),
            Some((req.clone(), buf.len()))
        );
        for cut in 0..buf.len() {
            assert_eq!(
                decode_request(&buf[..cut]).unwrap(),
                None,
                "prefix of {cut} bytes"
            );
        }
    }

    #[test]
    fn requests_round_trip_and_prefixes_wait() {
        round_trip(&Request::Attach {
            width: 25,
            height: 25,
        });
        round_trip(&Request::Detach);
        round_trip(&Request::Draw {
            surface_id: 1,
            x: -3,
            y: 4,
        });
        round_trip(&Request::EsmRegister {
            kind: EventKind::Key,
            handler: Some(HandlerId(9)),
        });
        round_trip(&Request::EsmRegister {
            kind: EventKind::Timer,
            handler: None,
        });
        round_trip(&Request::Thread {
            category: ThreadCategory::Background,
            tid: 4242,
        });
        round_trip(&Request::Compose {
            surface_id: 7,
            surface: Surface {
                width: 25,
                height: 25,
                layers: vec![
                    Layer {
                        z: 0,
                        rect: Rect::new(0, 0, 15, 15),
                        fill: Fill::Solid(0xffff_0000),
                    },
                    Layer {
                        z: 1,
                        rect: Rect::new(10, 10, 2, 1),
                        fill: Fill::Pixels(vec![1, 2]),
                    },
                ],
            },
        });
    }

    #[test]
    fn replies_round_trip() {
        for reply in [
            Reply::Attached {
                window: Rect::new(100, 50, 25, 25),
            },
            Reply::Ok {
                request_type: request_type::DRAW,
            },
            Reply::Error {
                request_type: 4,
                code: 2,
                message: "outside the window".into(),
            },
            Reply::Composed {
                surface_id: 1,
                width: 2,
                height: 3,
            },
            Reply::WindowState(WindowState {
                stacking: Stacking::Background,
                ..WindowState::FRONT
            }),
        ] {
            let mut buf = Vec::new();
            encode_reply(&reply, &mut buf);
            assert_eq!(decode_reply(&buf).unwrap(), Some((reply, buf.len())));
        }
    }

    fn header(ty: u32, len: u32) -> Vec<u8> {
        let mut v = ty.to_le_bytes().to_vec();
        v.extend_from_slice(&len.to_le_bytes());
        v
    }

    #[test]
    fn hostile_headers_fail_before_data() {
        assert_eq!(
            decode_request(&header(99, 0)),
            Err(WireError::UnknownType(99))
        );
        assert_eq!(
            decode_request(&header(reply_type::OK, 4)),
            Err(WireError::UnknownType(reply_type::OK))
        );
        assert_eq!(
            decode_request(&header(request_type::DRAW, u32::MAX)),
            Err(WireError::TooLong(u32::MAX))
        );
    }

    #[test]
    fn malformed_data_is_named() {
        let mut m = header(request_type::DRAW, 8);
        m.extend_from_slice(&[0; 8]);
        assert!(matches!(
            decode_request(&m),
            Err(WireError::Truncated {
                field: "y",
                missing: 4,
                ..
            })
        ));
        let mut m = header(request_type::DETACH, 1);
        m.push(0);
        assert!(matches!(
            decode_request(&m),
            Err(WireError::TrailingBytes { extra: 1, .. })
        ));
        let mut m = header(request_type::ESM_REGISTER, 8);
        m.extend_from_slice(&[7, 0, 1, 0, 0, 0, 0, 0]);
        assert!(matches!(
            decode_request(&m),
            Err(WireError::BadValue {
                field: "kind",
                value: 7,
                ..
            })
        ));
        // A layer claiming 2^32 × 2^32 pixels in a small message.
        let mut m = header(request_type::COMPOSE, 40);
        for v in [0u32, 1, 1, 1, 0, 0, 0, u32::MAX, u32::MAX, 1] {
            m.extend_from_slice(&v.to_le_bytes());
        }
        assert!(decode_request(&m).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 5000, ..ProptestConfig::default() })]

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_request(&bytes);
            let _ = decode_reply(&bytes);
        }

        #[test]
        fn valid_header_random_body_never_panics(
            ty in 1u32..=6,
            body in proptest::collection::vec(any::<u8>(), 0..200),
        ) {
            let mut m = header(ty, body.len() as u32);
            m.extend_from_slice(&body);
            match decode_request(&m) {
                Ok(Some((_, used))) => prop_assert_eq!(used, m.len()),
                Ok(None) => prop_assert!(false, "a complete frame is never incomplete"),
                Err(_) => {}
            }
        }
    }
}
