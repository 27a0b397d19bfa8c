//! The wire protocol between `lulld` and its clients (and between a baseline hub and its app).
//!
//! Transport: a `SOCK_SEQPACKET` Unix socket, so each message is one packet and the kernel keeps
//! the boundaries; a closed peer reads as end of file. Every message is a one-byte tag followed by
//! fixed-size little-endian fields; a message of the wrong length for its tag, an unknown tag,
//! kind or flag, or an event whose payload does not fit its kind is rejected with a
//! [`ProtocolError`] — the parser never panics (it is fuzzed in the tests).
//!
//! | dir | tag | message | body |
//! | --- | --- | --- | --- |
//! | c→d | 1 | `Register` | kind u16, has-handler u8 (0/1), handler u32 (0 when none) |
//! | c→d | 2 | `Wait` | — |
//! | c→d | 3 | `Stats` | — |
//! | d→c | 0x80 | `Welcome` | app index u32, generation u32, queue bound u32 |
//! | d→c | 0x81 | `Event` | handler u32, seq u64, kind u16, injected_ns u64, payload tag u8, a i32, b i32, c i32 |
//! | d→c | 0x82 | `Overflow` | dropped u64, first seq u64, last seq u64 |
//! | d→c | 0x83 | `Stats` | apps u32, waiting u32, registrations u32, queued u64, then the 10 [`EsmCounters`] u64 |
//! | d→c | 0x84 | `Error` | code u8 — the daemon closes the connection after it |
//! | d→c | 0x85 | `Registered` | — the `Register` before it is in effect |
//! | d→c | 0x86 | `Batch` | count u8 (1..=[`MAX_BATCH`]), then `count` deliveries, each an `Event` or `Overflow` message whole (tag included) |
//! | d→c | 0x87 | `Ring` | producer u32; with a ring's consumer end (memfd, eventfd) |
//! | d→c | 0x88 | `Route` | app index u32, generation u32, kinds u32; to a producer |
//! | d→c | 0x89 | `Device` | device u32; with an input device descriptor and its account (`SCM_RIGHTS`) |
//!
//! The ESM's deliveries to an app always travel in a `Batch`: the events its private queue held
//! when it waited (or that arrived together), in order, overflow markers in place; one wait
//! covers them all. Single `Event` and `Overflow` messages are what a baseline hub sends.
//!
//! A pure codec (bytes in, messages out), so it lives with the ESM it carries; the sockets it
//! travels on are `lull_os::sys`'s.

use crate::{Delivery, EsmCounters};
use lull_model::{AppEvent, AppId, EventKind, EventSeq, HandlerId, Payload};

/// Largest message either side sends; receive buffers are this big, longer packets are rejected.
pub const MAX_MESSAGE: usize = 128;

const T_REGISTER: u8 = 1;
const T_WAIT: u8 = 2;
const T_STATS: u8 = 3;
const T_PRODUCE: u8 = 4;
const T_WELCOME: u8 = 0x80;
const T_EVENT: u8 = 0x81;
const T_OVERFLOW: u8 = 0x82;
const T_STATS_REPLY: u8 = 0x83;
const T_ERROR: u8 = 0x84;
const T_REGISTERED: u8 = 0x85;
const T_BATCH: u8 = 0x86;
const T_RING: u8 = 0x87;
const T_ROUTE: u8 = 0x88;
const T_DEVICE: u8 = 0x89;

/// Most deliveries one `Batch` carries: as evdev's `read()` hands over what fits the caller's
/// buffer, a batch hands over at most this many of the queued items; the rest follow at the next
/// wait. 64 is the ESM's default queue bound (`lull_esm::DEFAULT_QUEUE_BOUND`), so one wait
/// catches up a full queue, and keeps a packet near two kilobytes.
pub const MAX_BATCH: usize = 64;
/// Bytes of one `Event` message, tag included.
const EVENT_BYTES: usize = 36;
/// Bytes of one `Overflow` message, tag included.
const OVERFLOW_BYTES: usize = 25;
/// Largest packet the daemon sends an ESM app: a full batch of events.
pub const MAX_PACKET: usize = 2 + MAX_BATCH * EVENT_BYTES;

/// A client's request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ClientMsg {
    /// `esm_register(kind, handler)`; `None` unregisters (the seed's NULL handler).
    Register {
        kind: EventKind,
        handler: Option<HandlerId>,
    },
    /// `esm_wait()`: push me the next event, or park me in `EV_WAIT`.
    Wait,
    /// Ask for the daemon's counters (answered with [`DaemonMsg::Stats`]).
    Stats,
    /// This connection is a producer, not an app: it writes events of `kinds` (a bit per
    /// [`EventKind::index`]) straight into the rings of the apps registered for them. Answered
    /// with one [`DaemonMsg::Route`] per app routed now, then [`DaemonMsg::Registered`].
    Produce { kinds: u32 },
}

/// Counters and census the daemon reports.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct StatsReply {
    pub apps: u32,
    pub waiting: u32,
    pub registrations: u32,
    pub queued_events: u64,
    pub counters: EsmCounters,
}

/// Why the daemon closed a connection.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum ErrorCode {
    /// The client sent a message the parser rejected.
    Malformed = 1,
    /// The client did not read its socket and the daemon could not write to it.
    NotReading = 2,
}

/// Why the daemon refused, in words (for error messages).
impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ErrorCode::Malformed => "it sent a message the daemon could not parse",
            ErrorCode::NotReading => {
                "it did not read its socket, so the daemon could not write to it"
            }
        })
    }
}

impl ErrorCode {
    fn from_u8(n: u8) -> Option<ErrorCode> {
        match n {
            1 => Some(ErrorCode::Malformed),
            2 => Some(ErrorCode::NotReading),
            _ => None,
        }
    }
}

/// What the daemon (or a hub) sends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DaemonMsg {
    Welcome {
        app: AppId,
        queue_bound: u32,
    },
    Event {
        handler: HandlerId,
        event: AppEvent,
    },
    /// The overflow marker (see `lull_esm::Delivery::Overflow`).
    Overflow {
        dropped: u64,
        first: EventSeq,
        last: EventSeq,
    },
    Stats(StatsReply),
    Error(ErrorCode),
    /// The client's `Register` is in the application list: every event injected from now on
    /// reaches it. Makes `esm_register` synchronous, as the seed's system call is.
    Registered,
    /// To an app, with the consumer end of a new ring (memfd, eventfd) as `SCM_RIGHTS`: the
    /// producer `producer` writes the app's events there from now on.
    Ring {
        producer: u32,
    },
    /// To a producer: push events of `kinds` (a bit per [`EventKind::index`]) to `app`; 0 means
    /// the app is gone, unregistered or suspended. With two descriptors (memfd, eventfd) it is a
    /// new ring's producer end.
    Route {
        app: AppId,
        kinds: u32,
    },
    /// To an app, with two descriptors as `SCM_RIGHTS`: a fresh read-only evdev descriptor of
    /// input device `device`, masked (`EVIOCSMASK`) to the kinds the app registered, and the
    /// device account the app counts its reads in (`crate::device_account`). The app reads the
    /// device itself from now on, until the daemon revokes the descriptor (`EVIOCREVOKE`: its
    /// reads then fail with `ENODEV`).
    Device {
        device: u32,
    },
}

/// Why a message was rejected.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("empty message")]
    Empty,
    #[error("message longer than {MAX_MESSAGE} bytes")]
    TooLong,
    #[error("unknown message tag {0:#04x}")]
    UnknownTag(u8),
    #[error("message tag {tag:#04x} needs {expected} bytes, got {got}")]
    BadLength {
        tag: u8,
        expected: usize,
        got: usize,
    },
    #[error("unknown event kind {0}")]
    UnknownKind(u16),
    #[error("flag byte {0} is neither 0 nor 1")]
    BadFlag(u8),
    #[error("a registration without a handler must carry handler 0, got {0}")]
    StrayHandler(u32),
    #[error("unknown payload tag {0}")]
    UnknownPayload(u8),
    #[error("payload does not fit event kind {0}")]
    PayloadMismatch(EventKind),
    #[error("unknown error code {0}")]
    UnknownErrorCode(u8),
    #[error("a batch must carry 1 to {MAX_BATCH} deliveries, says {0}")]
    BadBatchCount(u8),
    #[error("a batch's delivery has tag {0:#04x}, not Event or Overflow")]
    NotADelivery(u8),
    #[error("a batch's length does not match its deliveries")]
    BatchLength,
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn u8(&mut self) -> u8 {
        let v = self.b[self.at];
        self.at += 1;
        v
    }
    fn u16(&mut self) -> u16 {
        let v = u16::from_le_bytes([self.b[self.at], self.b[self.at + 1]]);
        self.at += 2;
        v
    }
    fn u32(&mut self) -> u32 {
        let mut a = [0; 4];
        a.copy_from_slice(&self.b[self.at..self.at + 4]);
        self.at += 4;
        u32::from_le_bytes(a)
    }
    fn i32(&mut self) -> i32 {
        self.u32() as i32
    }
    /// An [`AppId`]: index, then generation.
    fn app_id(&mut self) -> AppId {
        AppId {
            index: self.u32(),
            generation: self.u32(),
        }
    }
    fn u64(&mut self) -> u64 {
        let mut a = [0; 8];
        a.copy_from_slice(&self.b[self.at..self.at + 8]);
        self.at += 8;
        u64::from_le_bytes(a)
    }
}

fn check_len(msg: &[u8], expected: usize) -> Result<Reader<'_>, ProtocolError> {
    if msg.len() != expected {
        return Err(ProtocolError::BadLength {
            tag: msg[0],
            expected,
            got: msg.len(),
        });
    }
    Ok(Reader { b: msg, at: 1 })
}

fn first(msg: &[u8]) -> Result<u8, ProtocolError> {
    match msg.first() {
        None => Err(ProtocolError::Empty),
        Some(_) if msg.len() > MAX_MESSAGE => Err(ProtocolError::TooLong),
        Some(&t) => Ok(t),
    }
}

fn kind(n: u16) -> Result<EventKind, ProtocolError> {
    EventKind::from_u16(n).ok_or(ProtocolError::UnknownKind(n))
}

impl ClientMsg {
    /// Encodes the message into `out` (cleared first).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        match *self {
            ClientMsg::Register { kind, handler } => {
                out.push(T_REGISTER);
                out.extend_from_slice(&(kind as u16).to_le_bytes());
                out.push(u8::from(handler.is_some()));
                out.extend_from_slice(&handler.map_or(0, |h| h.0).to_le_bytes());
            }
            ClientMsg::Wait => out.push(T_WAIT),
            ClientMsg::Stats => out.push(T_STATS),
            ClientMsg::Produce { kinds } => {
                out.push(T_PRODUCE);
                out.extend_from_slice(&kinds.to_le_bytes());
            }
        }
    }

    /// Parses one client message.
    ///
    /// # Errors
    /// A [`ProtocolError`] naming the first problem.
    pub fn decode(msg: &[u8]) -> Result<ClientMsg, ProtocolError> {
        match first(msg)? {
            T_REGISTER => {
                let mut r = check_len(msg, 8)?;
                let kind = kind(r.u16())?;
                let flag = r.u8();
                let h = r.u32();
                let handler = match flag {
                    0 if h == 0 => None,
                    0 => return Err(ProtocolError::StrayHandler(h)),
                    1 => Some(HandlerId(h)),
                    f => return Err(ProtocolError::BadFlag(f)),
                };
                Ok(ClientMsg::Register { kind, handler })
            }
            T_WAIT => check_len(msg, 1).map(|_| ClientMsg::Wait),
            T_STATS => check_len(msg, 1).map(|_| ClientMsg::Stats),
            T_PRODUCE => {
                let mut r = check_len(msg, 5)?;
                Ok(ClientMsg::Produce { kinds: r.u32() })
            }
            t => Err(ProtocolError::UnknownTag(t)),
        }
    }
}

fn payload_fields(p: Payload) -> (u8, i32, i32, i32) {
    match p {
        Payload::Point { x, y } => (1, x, y, 0),
        Payload::Key { code, pressed } => (2, i32::from(code), i32::from(pressed), 0),
        Payload::Mouse { dx, dy, buttons } => (3, dx, dy, buttons as i32),
        Payload::Net { channel, len } => (4, channel as i32, len as i32, 0),
        Payload::Timer { id } => (5, id as i32, 0, 0),
    }
}

fn payload_of(kind: EventKind, tag: u8, a: i32, b: i32, c: i32) -> Result<Payload, ProtocolError> {
    let mismatch = ProtocolError::PayloadMismatch(kind);
    let p = match tag {
        1 if c == 0 => Payload::Point { x: a, y: b },
        2 if c == 0 && (0..=1).contains(&b) => Payload::Key {
            code: u16::try_from(a).map_err(|_| mismatch)?,
            pressed: b == 1,
        },
        3 => Payload::Mouse {
            dx: a,
            dy: b,
            buttons: c as u32,
        },
        4 if c == 0 => Payload::Net {
            channel: a as u32,
            len: b as u32,
        },
        5 if b == 0 && c == 0 => Payload::Timer { id: a as u32 },
        1..=5 => return Err(mismatch),
        t => return Err(ProtocolError::UnknownPayload(t)),
    };
    let fits = match kind {
        EventKind::TouchMotion | EventKind::TouchPress | EventKind::TouchRelease => {
            matches!(p, Payload::Point { .. })
        }
        EventKind::Key => matches!(p, Payload::Key { .. }),
        EventKind::Mouse => matches!(p, Payload::Mouse { .. }),
        EventKind::NetMessage => matches!(p, Payload::Net { .. }),
        EventKind::Timer => matches!(p, Payload::Timer { .. }),
    };
    if fits {
        Ok(p)
    } else {
        Err(mismatch)
    }
}

impl DaemonMsg {
    /// Encodes the message into `out` (cleared first).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        match *self {
            DaemonMsg::Welcome { app, queue_bound } => {
                out.push(T_WELCOME);
                out.extend_from_slice(&app.index.to_le_bytes());
                out.extend_from_slice(&app.generation.to_le_bytes());
                out.extend_from_slice(&queue_bound.to_le_bytes());
            }
            DaemonMsg::Event { handler, event } => {
                out.push(T_EVENT);
                out.extend_from_slice(&handler.0.to_le_bytes());
                out.extend_from_slice(&event.seq.0.to_le_bytes());
                out.extend_from_slice(&(event.kind as u16).to_le_bytes());
                out.extend_from_slice(&event.injected_ns.to_le_bytes());
                let (t, a, b, c) = payload_fields(event.payload);
                out.push(t);
                for v in [a, b, c] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            DaemonMsg::Overflow {
                dropped,
                first,
                last,
            } => {
                out.push(T_OVERFLOW);
                for v in [dropped, first.0, last.0] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            DaemonMsg::Stats(s) => {
                out.push(T_STATS_REPLY);
                for v in [s.apps, s.waiting, s.registrations] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
                for v in [s.queued_events]
                    .into_iter()
                    .chain(counters_fields(s.counters))
                {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            DaemonMsg::Error(code) => {
                out.push(T_ERROR);
                out.push(code as u8);
            }
            DaemonMsg::Registered => out.push(T_REGISTERED),
            DaemonMsg::Ring { producer } => {
                out.push(T_RING);
                out.extend_from_slice(&producer.to_le_bytes());
            }
            DaemonMsg::Device { device } => {
                out.push(T_DEVICE);
                out.extend_from_slice(&device.to_le_bytes());
            }
            DaemonMsg::Route { app, kinds } => {
                out.push(T_ROUTE);
                out.extend_from_slice(&app.index.to_le_bytes());
                out.extend_from_slice(&app.generation.to_le_bytes());
                out.extend_from_slice(&kinds.to_le_bytes());
            }
        }
    }

    /// Parses one daemon message.
    ///
    /// # Errors
    /// A [`ProtocolError`] naming the first problem.
    pub fn decode(msg: &[u8]) -> Result<DaemonMsg, ProtocolError> {
        match first(msg)? {
            T_WELCOME => {
                let mut r = check_len(msg, 13)?;
                Ok(DaemonMsg::Welcome {
                    app: r.app_id(),
                    queue_bound: r.u32(),
                })
            }
            T_EVENT => {
                let mut r = check_len(msg, 36)?;
                let handler = HandlerId(r.u32());
                let seq = EventSeq(r.u64());
                let kind = kind(r.u16())?;
                let injected_ns = r.u64();
                let (t, a, b, c) = (r.u8(), r.i32(), r.i32(), r.i32());
                let payload = payload_of(kind, t, a, b, c)?;
                Ok(DaemonMsg::Event {
                    handler,
                    event: AppEvent {
                        seq,
                        kind,
                        payload,
                        injected_ns,
                    },
                })
            }
            T_OVERFLOW => {
                let mut r = check_len(msg, 25)?;
                Ok(DaemonMsg::Overflow {
                    dropped: r.u64(),
                    first: EventSeq(r.u64()),
                    last: EventSeq(r.u64()),
                })
            }
            T_STATS_REPLY => {
                let mut r = check_len(msg, 1 + 12 + 8 * 11)?;
                let (apps, waiting, registrations) = (r.u32(), r.u32(), r.u32());
                let queued_events = r.u64();
                let mut f = [0u64; 10];
                for v in &mut f {
                    *v = r.u64();
                }
                Ok(DaemonMsg::Stats(StatsReply {
                    apps,
                    waiting,
                    registrations,
                    queued_events,
                    counters: counters_from(f),
                }))
            }
            T_ERROR => {
                let mut r = check_len(msg, 2)?;
                let n = r.u8();
                ErrorCode::from_u8(n)
                    .map(DaemonMsg::Error)
                    .ok_or(ProtocolError::UnknownErrorCode(n))
            }
            T_REGISTERED => {
                check_len(msg, 1)?;
                Ok(DaemonMsg::Registered)
            }
            T_RING => {
                let mut r = check_len(msg, 5)?;
                Ok(DaemonMsg::Ring { producer: r.u32() })
            }
            T_DEVICE => {
                let mut r = check_len(msg, 5)?;
                Ok(DaemonMsg::Device { device: r.u32() })
            }
            T_ROUTE => {
                let mut r = check_len(msg, 13)?;
                Ok(DaemonMsg::Route {
                    app: r.app_id(),
                    kinds: r.u32(),
                })
            }
            t => Err(ProtocolError::UnknownTag(t)),
        }
    }
}

/// Bytes of an event's payload in a ring record ([`event_payload_bytes`]).
pub const RING_PAYLOAD_BYTES: usize = 13;

/// An event's payload as a ring record carries it: its tag and three fields (little-endian), as
/// in an `Event` message. The record's `kind` is the [`EventKind`] number.
#[must_use]
pub fn event_payload_bytes(event: &AppEvent) -> [u8; RING_PAYLOAD_BYTES] {
    let (t, a, b, c) = payload_fields(event.payload);
    let mut p = [0u8; RING_PAYLOAD_BYTES];
    p[0] = t;
    p[1..5].copy_from_slice(&a.to_le_bytes());
    p[5..9].copy_from_slice(&b.to_le_bytes());
    p[9..13].copy_from_slice(&c.to_le_bytes());
    p
}

/// The event a ring record that is not an overflow marker stands for, for `handler`. The record
/// comes from another process, so it is checked like a message.
///
/// # Errors
/// [`ProtocolError::UnknownKind`], [`ProtocolError::UnknownPayload`] or
/// [`ProtocolError::PayloadMismatch`]; [`ProtocolError::BadLength`] for a payload shorter than
/// [`RING_PAYLOAD_BYTES`].
pub fn delivery_of_event_record(
    seq: u64,
    kind_number: u16,
    payload: &[u8],
    injected_ns: u64,
    handler: HandlerId,
) -> Result<Delivery, ProtocolError> {
    let kind = kind(kind_number)?;
    if payload.len() < RING_PAYLOAD_BYTES {
        return Err(ProtocolError::BadLength {
            tag: 0,
            expected: RING_PAYLOAD_BYTES,
            got: payload.len(),
        });
    }
    let word = |i: usize| {
        let mut b = [0u8; 4];
        b.copy_from_slice(&payload[i..i + 4]);
        i32::from_le_bytes(b)
    };
    let payload = payload_of(kind, payload[0], word(1), word(5), word(9))?;
    Ok(Delivery::Event {
        handler,
        event: AppEvent {
            seq: EventSeq(seq),
            kind,
            payload,
            injected_ns,
        },
    })
}

/// What one packet from the daemon holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DaemonPacket {
    /// One message.
    Msg(DaemonMsg),
    /// A batch: its deliveries were appended to the caller's buffer.
    Batch { count: usize },
}

/// Encodes `items` (1..=[`MAX_BATCH`] of them) as one `Batch` into `out` (cleared first).
///
/// # Panics
/// On an empty or oversized batch: the daemon never builds one.
pub fn encode_batch(items: &[Delivery], out: &mut Vec<u8>) {
    assert!(
        (1..=MAX_BATCH).contains(&items.len()),
        "batch of {}",
        items.len()
    );
    out.clear();
    out.push(T_BATCH);
    out.push(items.len() as u8);
    let mut one = Vec::with_capacity(EVENT_BYTES);
    for d in items {
        delivery_msg(*d).encode(&mut one);
        out.extend_from_slice(&one);
    }
}

/// The message that carries one delivery on its own.
#[must_use]
pub fn delivery_msg(d: Delivery) -> DaemonMsg {
    match d {
        Delivery::Event { handler, event } => DaemonMsg::Event { handler, event },
        Delivery::Overflow {
            dropped,
            first,
            last,
        } => DaemonMsg::Overflow {
            dropped,
            first,
            last,
        },
    }
}

impl DaemonPacket {
    /// Parses one packet from the daemon; a batch's deliveries are appended to `items` (only
    /// when the whole batch parses, so a bad packet leaves `items` as it was).
    ///
    /// # Errors
    /// A [`ProtocolError`] naming the first problem.
    pub fn decode(
        msg: &[u8],
        items: &mut std::collections::VecDeque<Delivery>,
    ) -> Result<DaemonPacket, ProtocolError> {
        match msg.first() {
            Some(&T_BATCH) => {}
            _ => return DaemonMsg::decode(msg).map(DaemonPacket::Msg),
        }
        if msg.len() > MAX_PACKET {
            return Err(ProtocolError::TooLong);
        }
        let count = *msg.get(1).ok_or(ProtocolError::BatchLength)?;
        if count == 0 || usize::from(count) > MAX_BATCH {
            return Err(ProtocolError::BadBatchCount(count));
        }
        let before = items.len();
        let mut at = 2;
        for _ in 0..count {
            let len = match msg.get(at) {
                Some(&T_EVENT) => EVENT_BYTES,
                Some(&T_OVERFLOW) => OVERFLOW_BYTES,
                Some(&t) => {
                    items.truncate(before);
                    return Err(ProtocolError::NotADelivery(t));
                }
                None => {
                    items.truncate(before);
                    return Err(ProtocolError::BatchLength);
                }
            };
            let Some(one) = msg.get(at..at + len) else {
                items.truncate(before);
                return Err(ProtocolError::BatchLength);
            };
            let d = match DaemonMsg::decode(one) {
                Ok(DaemonMsg::Event { handler, event }) => Delivery::Event { handler, event },
                Ok(DaemonMsg::Overflow {
                    dropped,
                    first,
                    last,
                }) => Delivery::Overflow {
                    dropped,
                    first,
                    last,
                },
                Ok(_) => unreachable!("the tag was checked"),
                Err(e) => {
                    items.truncate(before);
                    return Err(e);
                }
            };
            items.push_back(d);
            at += len;
        }
        if at != msg.len() {
            items.truncate(before);
            return Err(ProtocolError::BatchLength);
        }
        Ok(DaemonPacket::Batch {
            count: usize::from(count),
        })
    }
}

fn counters_fields(c: EsmCounters) -> [u64; 10] {
    [
        c.raw_injected,
        c.accepted,
        c.no_listener,
        c.dispatched,
        c.pushed_direct,
        c.queued,
        c.overflow_dropped,
        c.pushed_from_queue,
        c.discarded_on_exit,
        c.overflow_markers,
    ]
}

fn counters_from(f: [u64; 10]) -> EsmCounters {
    EsmCounters {
        raw_injected: f[0],
        accepted: f[1],
        no_listener: f[2],
        dispatched: f[3],
        pushed_direct: f[4],
        queued: f[5],
        overflow_dropped: f[6],
        pushed_from_queue: f[7],
        discarded_on_exit: f[8],
        overflow_markers: f[9],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn kind_s() -> impl Strategy<Value = EventKind> {
        (0..EventKind::COUNT).prop_map(|i| EventKind::ALL[i])
    }

    fn client_s() -> impl Strategy<Value = ClientMsg> {
        prop_oneof![
            (kind_s(), proptest::option::of(any::<u32>())).prop_map(|(kind, h)| {
                ClientMsg::Register {
                    kind,
                    handler: h.map(HandlerId),
                }
            }),
            Just(ClientMsg::Wait),
            Just(ClientMsg::Stats),
        ]
    }

    fn event_s() -> impl Strategy<Value = AppEvent> {
        (
            kind_s(),
            any::<u64>(),
            any::<u64>(),
            any::<i32>(),
            any::<i32>(),
            any::<u32>(),
            any::<u16>(),
            any::<bool>(),
        )
            .prop_map(|(kind, seq, t, a, b, c, code, pressed)| {
                let payload = match kind {
                    EventKind::TouchMotion | EventKind::TouchPress | EventKind::TouchRelease => {
                        Payload::Point { x: a, y: b }
                    }
                    EventKind::Key => Payload::Key { code, pressed },
                    EventKind::Mouse => Payload::Mouse {
                        dx: a,
                        dy: b,
                        buttons: c,
                    },
                    EventKind::NetMessage => Payload::Net {
                        channel: c,
                        len: a as u32,
                    },
                    EventKind::Timer => Payload::Timer { id: c },
                };
                AppEvent {
                    seq: EventSeq(seq),
                    kind,
                    payload,
                    injected_ns: t,
                }
            })
    }

    #[test]
    fn malformed_client_messages_are_named() {
        assert_eq!(ClientMsg::decode(&[]), Err(ProtocolError::Empty));
        assert_eq!(ClientMsg::decode(&[9]), Err(ProtocolError::UnknownTag(9)));
        assert_eq!(
            ClientMsg::decode(&[2, 0]),
            Err(ProtocolError::BadLength {
                tag: 2,
                expected: 1,
                got: 2
            })
        );
        assert_eq!(
            ClientMsg::decode(&[1, 99, 0, 1, 0, 0, 0, 0]),
            Err(ProtocolError::UnknownKind(99))
        );
        assert_eq!(
            ClientMsg::decode(&[1, 0, 0, 7, 0, 0, 0, 0]),
            Err(ProtocolError::BadFlag(7))
        );
        assert_eq!(
            ClientMsg::decode(&[1, 0, 0, 0, 5, 0, 0, 0]),
            Err(ProtocolError::StrayHandler(5))
        );
        assert_eq!(ClientMsg::decode(&[0x81; 200]), Err(ProtocolError::TooLong));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// The daemon's parser of client messages never panics, and whatever it accepts
        /// re-encodes to exactly the bytes it read (there is one encoding per message).
        #[test]
        fn client_parser_fuzz(bytes in proptest::collection::vec(any::<u8>(), 0..160)) {
            if let Ok(m) = ClientMsg::decode(&bytes) {
                let mut out = Vec::new();
                m.encode(&mut out);
                prop_assert_eq!(out, bytes);
            }
        }

        /// Same for the client's parser of daemon messages, with the tag forced to a daemon tag
        /// half the time so the field checks get exercised.
        #[test]
        fn daemon_parser_fuzz(tag in 0x80u8..=T_DEVICE, mut bytes in proptest::collection::vec(any::<u8>(), 0..160), force in any::<bool>()) {
            if force && !bytes.is_empty() {
                bytes[0] = tag;
            }
            if let Ok(m) = DaemonMsg::decode(&bytes) {
                let mut out = Vec::new();
                m.encode(&mut out);
                prop_assert_eq!(out, bytes);
            }
        }

        #[test]
        fn client_messages_round_trip(m in client_s()) {
            let mut out = Vec::new();
            m.encode(&mut out);
            prop_assert_eq!(ClientMsg::decode(&out), Ok(m));
        }

        #[test]
        fn events_round_trip(event in event_s(), h in any::<u32>(), d in any::<u64>(), f in any::<u64>()) {
            let mut out = Vec::new();
            for m in [
                DaemonMsg::Event { handler: HandlerId(h), event },
                DaemonMsg::Overflow { dropped: d, first: EventSeq(f), last: EventSeq(d) },
                DaemonMsg::Welcome { app: AppId { index: h, generation: f as u32 }, queue_bound: 64 },
                DaemonMsg::Error(ErrorCode::Malformed),
                DaemonMsg::Registered,
                DaemonMsg::Ring { producer: h },
                DaemonMsg::Route { app: AppId { index: h, generation: d as u32 }, kinds: f as u32 },
                DaemonMsg::Device { device: h },
            ] {
                m.encode(&mut out);
                prop_assert!(out.len() <= MAX_MESSAGE);
                prop_assert_eq!(DaemonMsg::decode(&out), Ok(m));
            }
        }

        #[test]
        fn batches_round_trip(
            items in proptest::collection::vec(
                (event_s(), any::<u32>(), any::<bool>(), any::<u64>()).prop_map(|(event, h, marker, d)| {
                    if marker {
                        Delivery::Overflow { dropped: d, first: EventSeq(d / 2), last: EventSeq(d) }
                    } else {
                        Delivery::Event { handler: HandlerId(h), event }
                    }
                }),
                1..=MAX_BATCH,
            ),
        ) {
            let mut out = Vec::new();
            encode_batch(&items, &mut out);
            prop_assert!(out.len() <= MAX_PACKET);
            let mut got = std::collections::VecDeque::from([Delivery::Overflow { dropped: 1, first: EventSeq(0), last: EventSeq(0) }]);
            prop_assert_eq!(DaemonPacket::decode(&out, &mut got), Ok(DaemonPacket::Batch { count: items.len() }));
            prop_assert_eq!(got.len(), items.len() + 1, "appended after what was there");
            prop_assert_eq!(got.into_iter().skip(1).collect::<Vec<_>>(), items);
        }

        /// Any bytes after a batch tag: a typed error that leaves the buffer as it was, or a
        /// batch that re-encodes to the same bytes.
        #[test]
        fn batch_parser_fuzz(count in any::<u8>(), body in proptest::collection::vec(any::<u8>(), 0..400), tags in proptest::collection::vec(prop_oneof![Just(T_EVENT), Just(T_OVERFLOW), any::<u8>()], 0..8)) {
            let mut bytes = vec![T_BATCH, count];
            let mut rest = body.into_iter();
            for t in tags {
                bytes.push(t);
                let len = if t == T_EVENT { EVENT_BYTES - 1 } else { OVERFLOW_BYTES - 1 };
                bytes.extend(rest.by_ref().take(len));
            }
            bytes.extend(rest.take(3));
            let mut got = std::collections::VecDeque::new();
            match DaemonPacket::decode(&bytes, &mut got) {
                Ok(DaemonPacket::Batch { count: n }) => {
                    prop_assert_eq!(n, got.len());
                    let items: Vec<_> = got.into_iter().collect();
                    let mut out = Vec::new();
                    encode_batch(&items, &mut out);
                    prop_assert_eq!(out, bytes);
                }
                Ok(DaemonPacket::Msg(_)) => prop_assert!(false, "a batch tag parsed as a message"),
                Err(_) => prop_assert!(got.is_empty()),
            }
        }
    }

    /// The `Device` message: five bytes, its number little-endian; any other length is named.
    #[test]
    fn device_messages_are_checked() {
        let mut out = Vec::new();
        DaemonMsg::Device {
            device: 0x0102_0304,
        }
        .encode(&mut out);
        assert_eq!(out, [T_DEVICE, 4, 3, 2, 1]);
        assert_eq!(
            DaemonMsg::decode(&out),
            Ok(DaemonMsg::Device {
                device: 0x0102_0304
            })
        );
        assert_eq!(
            DaemonMsg::decode(&[T_DEVICE, 1, 2]),
            Err(ProtocolError::BadLength {
                tag: T_DEVICE,
                expected: 5,
                got: 3
            })
        );
        // Not a delivery: a batch refuses it.
        let mut q = std::collections::VecDeque::new();
        assert_eq!(
            DaemonPacket::decode(&[T_BATCH, 1, T_DEVICE, 0, 0, 0, 0], &mut q),
            Err(ProtocolError::NotADelivery(T_DEVICE))
        );
    }

    #[test]
    fn malformed_batches_are_named() {
        let mut q = std::collections::VecDeque::new();
        assert_eq!(
            DaemonPacket::decode(&[T_BATCH], &mut q),
            Err(ProtocolError::BatchLength)
        );
        assert_eq!(
            DaemonPacket::decode(&[T_BATCH, 0], &mut q),
            Err(ProtocolError::BadBatchCount(0))
        );
        assert_eq!(
            DaemonPacket::decode(&[T_BATCH, (MAX_BATCH + 1) as u8], &mut q),
            Err(ProtocolError::BadBatchCount((MAX_BATCH + 1) as u8))
        );
        assert_eq!(
            DaemonPacket::decode(&[T_BATCH, 1, T_WELCOME], &mut q),
            Err(ProtocolError::NotADelivery(T_WELCOME))
        );
        assert_eq!(
            DaemonPacket::decode(&[T_BATCH, 1, T_OVERFLOW, 0], &mut q),
            Err(ProtocolError::BatchLength)
        );
        let mut one = Vec::new();
        encode_batch(
            &[Delivery::Overflow {
                dropped: 3,
                first: EventSeq(1),
                last: EventSeq(3),
            }],
            &mut one,
        );
        one.push(0);
        assert_eq!(
            DaemonPacket::decode(&one, &mut q),
            Err(ProtocolError::BatchLength)
        );
        assert_eq!(
            DaemonPacket::decode(&vec![T_BATCH; MAX_PACKET + 1], &mut q),
            Err(ProtocolError::TooLong)
        );
        assert!(q.is_empty());
    }
}
