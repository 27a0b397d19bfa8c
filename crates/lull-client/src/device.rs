//! An input device descriptor the daemon handed this app (`DaemonMsg::Device`): the app reads the
//! kernel's evdev queue itself, with no daemon on the way, and runs the interpreter here — the
//! same two steps `lulld` runs for a device it reads: `lull_os::evdev::EvdevDecoder` (records →
//! raw events, per `SYN_REPORT` packet) and `lull_esm::interpret` (raw event → kind and payload).
//!
//! Events are numbered per descriptor from 0. `SYN_DROPPED` (the kernel's queue for this
//! descriptor overflowed) becomes the ESM's overflow marker, in place; the kernel does not say
//! how many events it dropped, so the marker's `dropped` is 0 (unknown) and its `first` and
//! `last` are the number the next event will carry. A read that fails with `ENODEV` means the
//! daemon revoked the descriptor (`EVIOCREVOKE`) or the device went away: the descriptor is
//! closed, and nothing reaches the handlers.

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use lull_esm::Delivery;
use lull_model::{AppEvent, EventKind, EventSeq, HandlerId};
use lull_os::device_account::{DeviceAccount, DeviceCounts};
use lull_os::evdev::{EvdevDecoder, InputRecord, RECORD_SIZE};
use lull_os::sys;

/// Records read per `read(2)`. The kernel hands out only whole packets, so a read that can take
/// the descriptor's whole queue never splits one; evdev sizes a client's queue at eight packets
/// of the device's hint, rounded up to a power of two (`evdev_compute_buffer_size`,
/// `drivers/input/evdev.c`): 64 to 128 records for a touch screen or a keyboard, more for a
/// many-contact panel. 1024 covers those and costs 24 KiB per descriptor.
pub const READ_RECORDS: usize = 1024;

/// What one [`DeviceReader::read`] found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DeviceRead {
    /// Records were read (and perhaps more wait: read again).
    Data { more: bool },
    /// Nothing queued.
    Empty,
    /// Revoked, or the device is gone: drop the reader.
    Gone,
}

/// One device descriptor and its interpreter state.
#[derive(Debug)]
pub struct DeviceReader {
    pub device: u32,
    fd: OwnedFd,
    account: DeviceAccount,
    decoder: EvdevDecoder,
    buf: Vec<u8>,
    counts: DeviceCounts,
    next_seq: u64,
    /// The last poll said the descriptor has something (or it is new).
    pub(crate) readable: bool,
}

/// Why a `Device` message's descriptors were refused.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("a device comes with exactly two descriptors")]
    Descriptors,
    /// The account page could not be mapped or the device descriptor set non-blocking.
    #[error("{0}")]
    Account(std::io::Error),
}

impl DeviceReader {
    /// Takes the two descriptors of a `Device` message (the evdev descriptor and its account).
    ///
    /// # Errors
    /// The refusal: not two descriptors, or the second is not an account page.
    pub fn from_fds(device: u32, fds: Vec<OwnedFd>) -> Result<DeviceReader, DeviceError> {
        let mut fds = fds.into_iter();
        let (Some(fd), Some(account), None) = (fds.next(), fds.next(), fds.next()) else {
            return Err(DeviceError::Descriptors);
        };
        let account = DeviceAccount::open(account).map_err(DeviceError::Account)?;
        sys::set_nonblocking(fd.as_raw_fd(), true).map_err(DeviceError::Account)?;
        let mut decoder = EvdevDecoder::new();
        sync_position(&fd, &mut decoder);
        Ok(DeviceReader {
            device,
            fd,
            account,
            decoder,
            buf: vec![0; READ_RECORDS * RECORD_SIZE],
            counts: DeviceCounts::default(),
            next_seq: 0,
            readable: true,
        })
    }

    /// The descriptor to poll.
    #[must_use]
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// What this descriptor delivered so far.
    #[must_use]
    pub fn counts(&self) -> DeviceCounts {
        self.counts
    }

    /// Reads what the descriptor holds (one `read`), interprets it and appends to `out` an
    /// event for each one of a kind in `by_kind` (others are counted as filtered) and an
    /// overflow marker for each `SYN_DROPPED`; publishes the counts in the account page.
    pub fn read(
        &mut self,
        by_kind: &[Option<HandlerId>; EventKind::COUNT],
        out: &mut VecDeque<Delivery>,
    ) -> DeviceRead {
        let n = match sys::read(self.fd.as_raw_fd(), &mut self.buf) {
            Ok(0) => return self.gone(),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                self.readable = false;
                return DeviceRead::Empty;
            }
            // ENODEV: revoked or unplugged; any other error ends the descriptor as well.
            Err(_) => return self.gone(),
        };
        let more = n == self.buf.len();
        self.readable = more;
        let whole = n - n % RECORD_SIZE;
        let counts = &mut self.counts;
        let next_seq = &mut self.next_seq;
        for chunk in self.buf[..whole].chunks_exact(RECORD_SIZE) {
            let rec = InputRecord::from_bytes(chunk.try_into().expect("chunks_exact"));
            counts.records += 1;
            let dropped_before = self.decoder.counters.syn_dropped;
            self.decoder.feed(rec, &mut |raw, stamp_ns| {
                let (kind, payload) = lull_esm::interpret(raw);
                let seq = EventSeq(*next_seq);
                *next_seq += 1;
                counts.events += 1;
                match by_kind[kind.index()] {
                    Some(handler) => {
                        counts.delivered += 1;
                        out.push_back(Delivery::Event {
                            handler,
                            event: AppEvent {
                                seq,
                                kind,
                                payload,
                                injected_ns: stamp_ns,
                            },
                        });
                    }
                    None => counts.filtered += 1,
                }
            });
            if self.decoder.counters.syn_dropped > dropped_before {
                // What was lost may have moved the pen: read where it is now, as libevdev does.
                sync_position(&self.fd, &mut self.decoder);
                counts.overflows += 1;
                out.push_back(Delivery::Overflow {
                    dropped: 0,
                    first: EventSeq(*next_seq),
                    last: EventSeq(*next_seq),
                });
            }
        }
        counts.packets = self.decoder.counters.packets;
        self.account.publish(&self.counts);
        DeviceRead::Data { more }
    }

    fn gone(&mut self) -> DeviceRead {
        self.readable = false;
        self.counts.revoked = 1;
        self.account.publish(&self.counts);
        DeviceRead::Gone
    }
}

/// Starts the decoder from the device's current touch position (the input core sends an axis
/// only when it changes). On anything but an evdev descriptor with both axes (a pipe in a test,
/// a keyboard) the decoder keeps what it had. A packet queued between the daemon's open and
/// this query that moved one axis only is read against the other axis's newer value.
fn sync_position(fd: &OwnedFd, decoder: &mut EvdevDecoder) {
    use lull_os::evdev::{ABS_X, ABS_Y};
    use lull_os::evdev_ioctl::abs_value;
    use std::os::fd::AsFd;
    if let (Ok(x), Ok(y)) = (abs_value(fd.as_fd(), ABS_X), abs_value(fd.as_fd(), ABS_Y)) {
        decoder.set_position(x, y);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_model::{Payload, RawEvent, TouchPhase};
    use lull_os::evdev::{EvdevEncoder, EV_SYN, SYN_DROPPED};

    fn reader() -> (DeviceReader, OwnedFd, DeviceAccount) {
        let (r, w) = sys::pipe(false).unwrap();
        let account = DeviceAccount::create().unwrap();
        let dup = account.try_clone_fd().unwrap();
        (DeviceReader::from_fds(3, vec![r, dup]).unwrap(), w, account)
    }

    fn touch(phase: TouchPhase, x: i32, y: i32) -> RawEvent {
        RawEvent::Touch { phase, x, y }
    }

    /// Packets in, the ESM's events out (numbered, stamped, each to its kind's handler); a kind
    /// without a handler counted as filtered; `SYN_DROPPED` as a marker in place; the end of the
    /// descriptor as `Gone`; the counts in the account page.
    #[test]
    fn records_become_the_esm_events_and_markers() {
        let (mut d, w, account) = reader();
        let mut by_kind = [None; EventKind::COUNT];
        by_kind[EventKind::TouchPress.index()] = Some(HandlerId(1));
        by_kind[EventKind::TouchMotion.index()] = Some(HandlerId(2));
        let mut bytes = Vec::new();
        let mut enc = EvdevEncoder::new();
        enc.encode(touch(TouchPhase::Down, 10, 20), 1_000, &mut bytes)
            .unwrap();
        enc.encode(touch(TouchPhase::Move, 11, 21), 2_000, &mut bytes)
            .unwrap();
        bytes.extend(
            InputRecord {
                time_ns: 3_000,
                type_: EV_SYN,
                code: SYN_DROPPED,
                value: 0,
            }
            .to_bytes(),
        );
        bytes.extend(
            InputRecord {
                time_ns: 3_000,
                type_: EV_SYN,
                code: 0,
                value: 0,
            }
            .to_bytes(),
        );
        enc.encode(touch(TouchPhase::Up, 12, 22), 4_000, &mut bytes)
            .unwrap();
        sys::write_all_once(w.as_raw_fd(), &bytes).unwrap();
        let mut out = VecDeque::new();
        assert_eq!(d.read(&by_kind, &mut out), DeviceRead::Data { more: false });
        let got: Vec<_> = out.drain(..).collect();
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(matches!(
            got[0],
            Delivery::Event { handler: HandlerId(1), event } if event.seq == EventSeq(0)
                && event.kind == EventKind::TouchPress
                && event.payload == Payload::Point { x: 10, y: 20 }
                && event.injected_ns == 1_000
        ));
        assert!(matches!(
            got[1],
            Delivery::Event { handler: HandlerId(2), event } if event.seq == EventSeq(1)
        ));
        assert_eq!(
            got[2],
            Delivery::Overflow {
                dropped: 0,
                first: EventSeq(2),
                last: EventSeq(2)
            }
        );
        // The release (no handler) is counted, not delivered.
        let c = account.read();
        assert_eq!(
            (c.events, c.delivered, c.filtered, c.overflows),
            (3, 2, 1, 1)
        );
        assert_eq!(c.records as usize * RECORD_SIZE, bytes.len());
        assert_eq!(d.read(&by_kind, &mut out), DeviceRead::Empty);
        drop(w);
        assert_eq!(d.read(&by_kind, &mut out), DeviceRead::Gone);
        assert_eq!(account.read().revoked, 1);
        assert!(out.is_empty());
    }

    #[test]
    fn a_device_message_needs_its_two_descriptors() {
        let (r, _w) = sys::pipe(false).unwrap();
        assert!(DeviceReader::from_fds(0, vec![r]).is_err());
        let (r, _w) = sys::pipe(false).unwrap();
        let (r2, _w2) = sys::pipe(false).unwrap();
        assert!(
            DeviceReader::from_fds(0, vec![r, r2]).is_err(),
            "not an account"
        );
    }
}
