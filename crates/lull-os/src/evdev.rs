//! The evdev source: Linux `struct input_event` records from any descriptor — a real
//! `/dev/input/eventN`, or a pipe written by the replay driver or a test — decoded per
//! `SYN_REPORT` packet into [`RawEvent`]s stamped with the packet's time.
//!
//! [`EvdevDecoder`] and [`EvdevEncoder`] are pure (bytes in, events out) so they are tested
//! without I/O; [`EvdevSource`] is the event-loop source that reads a descriptor into the decoder.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use lull_model::time::{NS_PER_S, NS_PER_US};
use lull_model::{RawEvent, TouchPhase};

use crate::event_loop::{LoopCtl, PostAction, Source};

// Event types and codes of `linux/input-event-codes.h`.
pub const EV_SYN: u16 = 0x00;
pub const EV_KEY: u16 = 0x01;
pub const EV_REL: u16 = 0x02;
pub const EV_ABS: u16 = 0x03;
pub const EV_MSC: u16 = 0x04;
pub const SYN_REPORT: u16 = 0;
pub const SYN_DROPPED: u16 = 3;
pub const REL_X: u16 = 0x00;
pub const REL_Y: u16 = 0x01;
pub const ABS_X: u16 = 0x00;
pub const ABS_Y: u16 = 0x01;
pub const ABS_MT_POSITION_X: u16 = 0x35;
pub const ABS_MT_POSITION_Y: u16 = 0x36;
/// First mouse button (`BTN_LEFT`); `BTN_LEFT + i` is bit `i` of `RawEvent::Mouse::buttons`.
pub const BTN_MOUSE: u16 = 0x110;
/// Mouse buttons the decoder tracks (`BTN_LEFT` … `BTN_TASK`).
pub const MOUSE_BUTTONS: u16 = 8;
/// The digitizer tool/contact block `BTN_TOOL_PEN` … `BTN_TOOL_QUADTAP`.
pub const BTN_DIGI_FIRST: u16 = 0x140;
pub const BTN_DIGI_LAST: u16 = 0x14f;
pub const BTN_TOUCH: u16 = 0x14a;
/// `MSC_TIMESTAMP`: the device's own stamp of a frame (touch screens and pads send one per
/// frame). The input core drops an axis record that repeats the axis's value, so a frame in which
/// the contact stayed where it was carries only this stamp: the decoder reads such a frame as a
/// move to the same point, and the encoder writes a repeated move that way.
pub const MSC_TIMESTAMP: u16 = 0x05;

/// Size of `struct timeval` on this target (two longs).
const TIMEVAL_SIZE: usize = std::mem::size_of::<libc::timeval>();
/// Size of one `struct input_event`: timeval, u16 type, u16 code, s32 value.
pub const RECORD_SIZE: usize = TIMEVAL_SIZE + 8;

/// One `struct input_event`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct InputRecord {
    /// The record's time in nanoseconds (the kernel stores microseconds).
    pub time_ns: u64,
    pub type_: u16,
    pub code: u16,
    pub value: i32,
}

impl InputRecord {
    /// A record to inject through `/dev/uinput` ([`crate::uinput`]): the kernel ignores a written
    /// record's time and stamps the packet itself, so it is left 0.
    #[must_use]
    pub const fn to_inject(type_: u16, code: u16, value: i32) -> InputRecord {
        InputRecord {
            time_ns: 0,
            type_,
            code,
            value,
        }
    }

    /// The record in the kernel's native layout.
    #[must_use]
    pub fn to_bytes(self) -> [u8; RECORD_SIZE] {
        let mut b = [0u8; RECORD_SIZE];
        let sec = (self.time_ns / NS_PER_S) as libc::time_t;
        let usec = ((self.time_ns % NS_PER_S) / NS_PER_US) as libc::suseconds_t;
        let half = TIMEVAL_SIZE / 2;
        b[..half].copy_from_slice(&sec.to_ne_bytes());
        b[half..TIMEVAL_SIZE].copy_from_slice(&usec.to_ne_bytes());
        b[TIMEVAL_SIZE..TIMEVAL_SIZE + 2].copy_from_slice(&self.type_.to_ne_bytes());
        b[TIMEVAL_SIZE + 2..TIMEVAL_SIZE + 4].copy_from_slice(&self.code.to_ne_bytes());
        b[TIMEVAL_SIZE + 4..].copy_from_slice(&self.value.to_ne_bytes());
        b
    }

    /// Reads a record in the kernel's native layout. Negative times read as 0.
    #[must_use]
    pub fn from_bytes(b: &[u8; RECORD_SIZE]) -> InputRecord {
        let half = TIMEVAL_SIZE / 2;
        let mut sec = [0u8; TIMEVAL_SIZE / 2];
        sec.copy_from_slice(&b[..half]);
        let mut usec = [0u8; TIMEVAL_SIZE / 2];
        usec.copy_from_slice(&b[half..TIMEVAL_SIZE]);
        let sec = u64::try_from(libc::time_t::from_ne_bytes(sec)).unwrap_or(0);
        let usec = u64::try_from(libc::suseconds_t::from_ne_bytes(usec)).unwrap_or(0);
        InputRecord {
            time_ns: sec
                .saturating_mul(NS_PER_S)
                .saturating_add(usec.saturating_mul(NS_PER_US)),
            type_: u16::from_ne_bytes([b[TIMEVAL_SIZE], b[TIMEVAL_SIZE + 1]]),
            code: u16::from_ne_bytes([b[TIMEVAL_SIZE + 2], b[TIMEVAL_SIZE + 3]]),
            value: i32::from_ne_bytes([
                b[TIMEVAL_SIZE + 4],
                b[TIMEVAL_SIZE + 5],
                b[TIMEVAL_SIZE + 6],
                b[TIMEVAL_SIZE + 7],
            ]),
        }
    }
}

/// What the decoder saw.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct DecoderCounters {
    pub records: u64,
    pub packets: u64,
    pub events: u64,
    /// `SYN_DROPPED` seen: the kernel's buffer overflowed; the packet in progress is discarded.
    pub syn_dropped: u64,
    /// Records of types and codes the decoder does not use (e.g. `EV_MSC`, pressure).
    pub ignored_records: u64,
}

/// Turns a stream of records into raw events, one packet (up to `SYN_REPORT`) at a time.
#[derive(Clone, Debug, Default)]
pub struct EvdevDecoder {
    x: i32,
    y: i32,
    position_changed: bool,
    touch_change: Option<bool>,
    /// The packet carried `MSC_TIMESTAMP` (a frame of the device; see [`MSC_TIMESTAMP`]).
    stamped: bool,
    keys: Vec<(u16, bool)>,
    dx: i32,
    dy: i32,
    buttons: u32,
    buttons_changed: bool,
    rel_seen: bool,
    /// After `SYN_DROPPED`, everything up to the next `SYN_REPORT` is discarded (evdev's rule).
    dropping: bool,
    pub counters: DecoderCounters,
}

impl EvdevDecoder {
    #[must_use]
    pub fn new() -> EvdevDecoder {
        EvdevDecoder::default()
    }

    /// Sets the touch position a packet moving only one axis is read against: a reader that
    /// starts in the middle of a device's stream takes it from the device (`EVIOCGABS`).
    pub fn set_position(&mut self, x: i32, y: i32) {
        self.x = x;
        self.y = y;
    }

    /// Feeds one record; at `SYN_REPORT` the packet's events go to `out` with the report's time.
    pub fn feed(&mut self, r: InputRecord, out: &mut impl FnMut(RawEvent, u64)) {
        self.counters.records += 1;
        match (r.type_, r.code) {
            (EV_SYN, SYN_REPORT) => {
                if std::mem::take(&mut self.dropping) {
                    self.clear_packet();
                    return;
                }
                self.counters.packets += 1;
                self.emit(r.time_ns, out);
            }
            (EV_SYN, SYN_DROPPED) => {
                self.counters.syn_dropped += 1;
                self.dropping = true;
            }
            _ if self.dropping => {}
            (EV_ABS, ABS_X | ABS_MT_POSITION_X) => {
                self.x = r.value;
                self.position_changed = true;
            }
            (EV_ABS, ABS_Y | ABS_MT_POSITION_Y) => {
                self.y = r.value;
                self.position_changed = true;
            }
            (EV_KEY, BTN_TOUCH) => self.touch_change = Some(r.value != 0),
            (EV_MSC, MSC_TIMESTAMP) => self.stamped = true,
            (EV_KEY, c) if (BTN_MOUSE..BTN_MOUSE + MOUSE_BUTTONS).contains(&c) => {
                let bit = 1u32 << (c - BTN_MOUSE);
                if r.value != 0 {
                    self.buttons |= bit;
                } else {
                    self.buttons &= !bit;
                }
                self.buttons_changed = true;
            }
            (EV_KEY, c) if (BTN_DIGI_FIRST..=BTN_DIGI_LAST).contains(&c) => {
                self.counters.ignored_records += 1;
            }
            // value 2 is autorepeat: the key is still down.
            (EV_KEY, c) => self.keys.push((c, r.value != 0)),
            (EV_REL, REL_X) => {
                self.dx = self.dx.saturating_add(r.value);
                self.rel_seen = true;
            }
            (EV_REL, REL_Y) => {
                self.dy = self.dy.saturating_add(r.value);
                self.rel_seen = true;
            }
            _ => self.counters.ignored_records += 1,
        }
    }

    /// Feeds whole records from `bytes`; returns how many bytes were used (a trailing partial
    /// record is left for the caller to complete).
    pub fn feed_bytes(&mut self, bytes: &[u8], out: &mut impl FnMut(RawEvent, u64)) -> usize {
        let mut used = 0;
        for chunk in bytes.chunks_exact(RECORD_SIZE) {
            let rec: &[u8; RECORD_SIZE] = chunk.try_into().expect("chunks_exact");
            self.feed(InputRecord::from_bytes(rec), out);
            used += RECORD_SIZE;
        }
        used
    }

    fn clear_packet(&mut self) {
        self.position_changed = false;
        self.touch_change = None;
        self.stamped = false;
        self.keys.clear();
        self.dx = 0;
        self.dy = 0;
        self.buttons_changed = false;
        self.rel_seen = false;
    }

    fn emit(&mut self, t: u64, out: &mut impl FnMut(RawEvent, u64)) {
        let mut n = 0;
        for &(code, pressed) in &self.keys {
            out(RawEvent::Key { code, pressed }, t);
            n += 1;
        }
        let (x, y) = (self.x, self.y);
        match self.touch_change {
            Some(true) => {
                out(
                    RawEvent::Touch {
                        phase: TouchPhase::Down,
                        x,
                        y,
                    },
                    t,
                );
                n += 1;
            }
            Some(false) => {
                out(
                    RawEvent::Touch {
                        phase: TouchPhase::Up,
                        x,
                        y,
                    },
                    t,
                );
                n += 1;
            }
            // A stamped frame with nothing else in it: the contact stayed where it was.
            None if self.position_changed
                || (self.stamped
                    && self.keys.is_empty()
                    && !self.rel_seen
                    && !self.buttons_changed) =>
            {
                out(
                    RawEvent::Touch {
                        phase: TouchPhase::Move,
                        x,
                        y,
                    },
                    t,
                );
                n += 1;
            }
            None => {}
        }
        if self.rel_seen || self.buttons_changed {
            out(
                RawEvent::Mouse {
                    dx: self.dx,
                    dy: self.dy,
                    buttons: self.buttons,
                },
                t,
            );
            n += 1;
        }
        self.counters.events += n;
        self.clear_packet();
    }
}

/// Why a raw event has no evdev form.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum EvdevError {
    #[error("{0}: not user input; only touch, key and mouse events travel as evdev records")]
    NotInput(RawEvent),
    #[error("key code {0:#x} is reserved for touch or mouse buttons")]
    ReservedKeyCode(u16),
    #[error("mouse buttons {0:#x} use bits beyond the {MOUSE_BUTTONS} tracked buttons")]
    TooManyButtons(u32),
}

/// Writes raw events as evdev packets, the way a device driver would. Keeps the mouse button
/// state so that only changed buttons are reported, as the kernel does.
#[derive(Clone, Copy, Debug, Default)]
pub struct EvdevEncoder {
    buttons: u32,
    /// The touch position last written: a move to it again goes as a stamped frame.
    touch_at: Option<(i32, i32)>,
}

impl EvdevEncoder {
    #[must_use]
    pub fn new() -> EvdevEncoder {
        EvdevEncoder::default()
    }

    /// Appends the packet for `raw`, stamped `time_ns`, to `out`.
    ///
    /// # Errors
    /// [`EvdevError`] for events with no evdev form; `out` is then unchanged.
    pub fn encode(
        &mut self,
        raw: RawEvent,
        time_ns: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), EvdevError> {
        let mut push = |type_, code, value| {
            out.extend_from_slice(
                &InputRecord {
                    time_ns,
                    type_,
                    code,
                    value,
                }
                .to_bytes(),
            );
        };
        match raw {
            RawEvent::Touch { phase, x, y } => {
                push(EV_ABS, ABS_X, x);
                push(EV_ABS, ABS_Y, y);
                match phase {
                    TouchPhase::Down => push(EV_KEY, BTN_TOUCH, 1),
                    TouchPhase::Up => push(EV_KEY, BTN_TOUCH, 0),
                    // The input core would drop both axis records of a repeated move, and the
                    // packet with them: the frame's stamp (microseconds, wrapping as the
                    // kernel's s32 does) carries it.
                    TouchPhase::Move if self.touch_at == Some((x, y)) => {
                        push(EV_MSC, MSC_TIMESTAMP, (time_ns / NS_PER_US) as i32);
                    }
                    TouchPhase::Move => {}
                }
                self.touch_at = Some((x, y));
            }
            RawEvent::Key { code, pressed } => {
                let reserved = code == BTN_TOUCH
                    || (BTN_MOUSE..BTN_MOUSE + MOUSE_BUTTONS).contains(&code)
                    || (BTN_DIGI_FIRST..=BTN_DIGI_LAST).contains(&code);
                if reserved {
                    return Err(EvdevError::ReservedKeyCode(code));
                }
                push(EV_KEY, code, i32::from(pressed));
            }
            RawEvent::Mouse { dx, dy, buttons } => {
                if buttons >> MOUSE_BUTTONS != 0 {
                    return Err(EvdevError::TooManyButtons(buttons));
                }
                if dx != 0 {
                    push(EV_REL, REL_X, dx);
                }
                if dy != 0 {
                    push(EV_REL, REL_Y, dy);
                }
                let changed = buttons ^ self.buttons;
                for i in 0..MOUSE_BUTTONS {
                    if changed & (1 << i) != 0 {
                        push(EV_KEY, BTN_MOUSE + i, i32::from(buttons & (1 << i) != 0));
                    }
                }
                if dx == 0 && dy == 0 && changed == 0 {
                    // Nothing would tell the decoder an event happened; a zero move keeps the
                    // event countable.
                    push(EV_REL, REL_X, 0);
                }
                self.buttons = buttons;
            }
            RawEvent::Net { .. } | RawEvent::Timer { .. } => return Err(EvdevError::NotInput(raw)),
        }
        out.extend_from_slice(
            &InputRecord {
                time_ns,
                type_: EV_SYN,
                code: SYN_REPORT,
                value: 0,
            }
            .to_bytes(),
        );
        Ok(())
    }
}

/// Receives each decoded event and its packet's stamp.
pub type EvdevSink<S> = dyn FnMut(&mut S, &mut LoopCtl<S>, RawEvent, u64);

/// Reads records from a descriptor and hands each decoded event, with its packet's time, to a
/// sink. On end of file (pipe writer gone, device unplugged) it unregisters itself.
pub struct EvdevSource<S> {
    fd: OwnedFd,
    decoder: EvdevDecoder,
    buf: Vec<u8>,
    filled: usize,
    sink: Box<EvdevSink<S>>,
}

impl<S> std::fmt::Debug for EvdevSource<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "EvdevSource(fd {}, {:?})",
            self.fd.as_raw_fd(),
            self.decoder.counters
        )
    }
}

/// Records read per `read(2)`: evdev's smallest client buffer (`EVDEV_MIN_BUFFER_SIZE`) in one
/// call. Larger devices have larger buffers (128 records for two axes and keys, measured in the
/// lab guest); the source reads again until the descriptor is empty.
const READ_RECORDS: usize = 64;

impl<S> EvdevSource<S> {
    /// Takes `fd` (made non-blocking) and a sink for `(event, stamp_ns)`.
    ///
    /// # Errors
    /// The kernel's error from `fcntl`.
    pub fn new(
        fd: OwnedFd,
        sink: impl FnMut(&mut S, &mut LoopCtl<S>, RawEvent, u64) + 'static,
    ) -> io::Result<Self> {
        crate::sys::set_nonblocking(fd.as_raw_fd(), true)?;
        Ok(EvdevSource {
            fd,
            decoder: EvdevDecoder::new(),
            buf: vec![0; READ_RECORDS * RECORD_SIZE],
            filled: 0,
            sink: Box::new(sink),
        })
    }
}

impl<S> Source<S> for EvdevSource<S> {
    fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn ready(&mut self, state: &mut S, ctl: &mut LoopCtl<S>) -> PostAction {
        loop {
            match crate::sys::read(self.fd.as_raw_fd(), &mut self.buf[self.filled..]) {
                Ok(0) => return PostAction::Remove,
                Ok(n) => {
                    let offered = self.buf.len() - self.filled;
                    self.filled += n;
                    let sink = &mut self.sink;
                    let used = self
                        .decoder
                        .feed_bytes(&self.buf[..self.filled], &mut |ev, t| {
                            sink(state, ctl, ev, t)
                        });
                    self.buf.copy_within(used..self.filled, 0);
                    self.filled -= used;
                    // A short read drained the descriptor (a pipe or an evdev device returns
                    // what it holds): no second read just to hear `EAGAIN` on the event path.
                    // The loop is level-triggered, so anything arriving later wakes it again.
                    if n < offered {
                        return PostAction::Continue;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return PostAction::Continue,
                Err(_) => return PostAction::Remove,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The bytes of `recs` (type, code, value), each stamped `time_ns`.
    fn records(time_ns: u64, recs: &[(u16, u16, i32)]) -> Vec<u8> {
        recs.iter()
            .flat_map(|&(type_, code, value)| {
                InputRecord {
                    time_ns,
                    type_,
                    code,
                    value,
                }
                .to_bytes()
            })
            .collect()
    }

    fn decode_all(bytes: &[u8]) -> (Vec<(RawEvent, u64)>, EvdevDecoder) {
        let mut d = EvdevDecoder::new();
        let mut out = Vec::new();
        let used = d.feed_bytes(bytes, &mut |e, t| out.push((e, t)));
        assert_eq!(used, bytes.len());
        (out, d)
    }

    #[test]
    fn touch_packet_round_trips_with_microsecond_stamp() {
        let mut enc = EvdevEncoder::new();
        let mut bytes = Vec::new();
        let down = RawEvent::Touch {
            phase: TouchPhase::Down,
            x: 10,
            y: 20,
        };
        enc.encode(down, 1_234_567_891, &mut bytes).unwrap();
        assert_eq!(bytes.len(), 4 * RECORD_SIZE);
        let (out, d) = decode_all(&bytes);
        assert_eq!(out, vec![(down, 1_234_567_000)]);
        assert_eq!(d.counters.packets, 1);
    }

    #[test]
    fn syn_dropped_discards_the_packet_in_progress() {
        let bytes = records(
            5_000,
            &[
                (EV_ABS, ABS_X, 1),
                (EV_SYN, SYN_DROPPED, 0),
                (EV_ABS, ABS_Y, 2),
                (EV_SYN, SYN_REPORT, 0),
                (EV_KEY, 30, 1),
                (EV_SYN, SYN_REPORT, 0),
            ],
        );
        let (out, d) = decode_all(&bytes);
        assert_eq!(
            out,
            vec![(
                RawEvent::Key {
                    code: 30,
                    pressed: true
                },
                5_000
            )]
        );
        assert_eq!(d.counters.syn_dropped, 1);
    }

    /// What the input core leaves of a repeated move (the axis records dropped as unchanged):
    /// the frame's stamp alone, read as a move to the same point; a stamp beside a key is only
    /// the key's frame.
    #[test]
    fn a_stamped_frame_without_change_is_a_move_in_place() {
        let bytes = records(
            7_000,
            &[
                (EV_ABS, ABS_X, 5),
                (EV_ABS, ABS_Y, 6),
                (EV_SYN, SYN_REPORT, 0),
                (EV_MSC, MSC_TIMESTAMP, 99),
                (EV_SYN, SYN_REPORT, 0),
                (EV_MSC, MSC_TIMESTAMP, 100),
                (EV_KEY, 30, 1),
                (EV_SYN, SYN_REPORT, 0),
            ],
        );
        let (out, _) = decode_all(&bytes);
        let at = RawEvent::Touch {
            phase: TouchPhase::Move,
            x: 5,
            y: 6,
        };
        let key = RawEvent::Key {
            code: 30,
            pressed: true,
        };
        assert_eq!(out, vec![(at, 7_000), (at, 7_000), (key, 7_000)]);
        // The encoder stamps a repeated move, and only that one.
        let mut enc = EvdevEncoder::new();
        let mut b = Vec::new();
        enc.encode(at, 1_000, &mut b).unwrap();
        assert_eq!(b.len(), 3 * RECORD_SIZE);
        b.clear();
        enc.encode(at, 2_000, &mut b).unwrap();
        assert_eq!(b.len(), 4 * RECORD_SIZE);
        let stamp =
            InputRecord::from_bytes(b[2 * RECORD_SIZE..3 * RECORD_SIZE].try_into().unwrap());
        assert_eq!(
            (stamp.type_, stamp.code, stamp.value),
            (EV_MSC, MSC_TIMESTAMP, 2)
        );
    }

    #[test]
    fn events_without_evdev_form_are_refused() {
        let mut enc = EvdevEncoder::new();
        let mut out = Vec::new();
        assert!(matches!(
            enc.encode(RawEvent::Timer { id: 1 }, 0, &mut out),
            Err(EvdevError::NotInput(_))
        ));
        assert_eq!(
            enc.encode(
                RawEvent::Key {
                    code: BTN_TOUCH,
                    pressed: true
                },
                0,
                &mut out
            ),
            Err(EvdevError::ReservedKeyCode(BTN_TOUCH))
        );
        assert!(out.is_empty());
    }

    fn input_event() -> impl Strategy<Value = RawEvent> {
        let phase = prop_oneof![
            Just(TouchPhase::Down),
            Just(TouchPhase::Move),
            Just(TouchPhase::Up)
        ];
        prop_oneof![
            (phase, -5000i32..5000, -5000i32..5000).prop_map(|(phase, x, y)| RawEvent::Touch {
                phase,
                x,
                y
            }),
            (1u16..0x100, any::<bool>())
                .prop_map(|(code, pressed)| RawEvent::Key { code, pressed }),
            (-100i32..100, -100i32..100, 0u32..256).prop_map(|(dx, dy, buttons)| RawEvent::Mouse {
                dx,
                dy,
                buttons
            }),
        ]
    }

    proptest! {
        /// Whatever sequence of input events a driver writes, the decoder gives back exactly that
        /// sequence with the packets' (microsecond) stamps — however the bytes are split across
        /// reads.
        #[test]
        fn encoder_and_decoder_agree(events in proptest::collection::vec((input_event(), 0u64..1u64 << 50), 0..60), split in 0usize..2000) {
            let mut enc = EvdevEncoder::new();
            let mut bytes = Vec::new();
            for &(e, t) in &events {
                enc.encode(e, t, &mut bytes).unwrap();
            }
            let split = split.min(bytes.len());
            let mut d = EvdevDecoder::new();
            let mut out = Vec::new();
            let mut pending: Vec<u8> = bytes[..split].to_vec();
            let used = d.feed_bytes(&pending, &mut |e, t| out.push((e, t)));
            pending.drain(..used);
            pending.extend_from_slice(&bytes[split..]);
            let used = d.feed_bytes(&pending, &mut |e, t| out.push((e, t)));
            prop_assert_eq!(used, pending.len());
            let expected: Vec<_> = events.iter().map(|&(e, t)| (e, t / 1000 * 1000)).collect();
            prop_assert_eq!(out, expected);
        }

        /// Arbitrary bytes never make the decoder panic.
        #[test]
        fn decoder_survives_garbage(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
            let mut d = EvdevDecoder::new();
            let _ = d.feed_bytes(&bytes, &mut |_, _| {});
        }
    }
}
