//! The fixed-size record the ring carries, and the overflow marker it can stand for.

/// Bytes of one record: one cache line, so a record never straddles two (x86-64 and most arm64
/// cores have 64-byte lines).
pub const RECORD_BYTES: usize = 64;
/// Payload bytes per record: what is left of [`RECORD_BYTES`] after the fixed fields.
pub const PAYLOAD_BYTES: usize = 44;

/// `flags` bit: this record is an overflow marker, not an event; its payload is an
/// [`OverflowMarker`].
pub const FLAG_OVERFLOW: u16 = 1;

/// One record in the ring, laid out identically in every process (`#[repr(C)]`, integers only,
/// native byte order since both sides run on the same machine):
///
/// | offset | bytes | field |
/// | --- | --- | --- |
/// | 0 | 8 | `seq`: the event's sequence number, given by the producer's source |
/// | 8 | 2 | `kind`: what the event is (the producer and app agree on the values) |
/// | 10 | 2 | `flags`: [`FLAG_OVERFLOW`] for a marker |
/// | 12 | 44 | `payload`: the event's bytes |
/// | 56 | 8 | `injected_ns`: `CLOCK_MONOTONIC` when the source injected the event |
///
/// Every bit pattern is a valid record, so a record read from memory another process writes is
/// at worst wrong, never undefined.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct RingRecord {
    pub seq: u64,
    pub kind: u16,
    pub flags: u16,
    pub payload: [u8; PAYLOAD_BYTES],
    pub injected_ns: u64,
}

const _: () = assert!(std::mem::size_of::<RingRecord>() == RECORD_BYTES);
const _: () = assert!(std::mem::align_of::<RingRecord>() == 8);
const _: () = assert!(std::mem::offset_of!(RingRecord, payload) == 12);
const _: () = assert!(std::mem::offset_of!(RingRecord, injected_ns) == 56);

impl RingRecord {
    /// An event record; `payload` is cut to [`PAYLOAD_BYTES`] and zero-padded.
    #[must_use]
    pub fn new(seq: u64, kind: u16, payload: &[u8], injected_ns: u64) -> RingRecord {
        let mut bytes = [0u8; PAYLOAD_BYTES];
        let n = payload.len().min(PAYLOAD_BYTES);
        bytes[..n].copy_from_slice(&payload[..n]);
        RingRecord {
            seq,
            kind,
            flags: 0,
            payload: bytes,
            injected_ns,
        }
    }

    /// The marker standing for a run of dropped events. Its `seq` is the run's last, so sequence
    /// numbers read in order never go backwards.
    #[must_use]
    pub fn marker(m: OverflowMarker, injected_ns: u64) -> RingRecord {
        let mut payload = [0u8; PAYLOAD_BYTES];
        payload[0..8].copy_from_slice(&m.dropped.to_ne_bytes());
        payload[8..16].copy_from_slice(&m.first_seq.to_ne_bytes());
        payload[16..24].copy_from_slice(&m.last_seq.to_ne_bytes());
        RingRecord {
            seq: m.last_seq,
            kind: 0,
            flags: FLAG_OVERFLOW,
            payload,
            injected_ns,
        }
    }

    /// The overflow this record reports, if it is a marker.
    #[must_use]
    pub fn overflow(&self) -> Option<OverflowMarker> {
        if self.flags & FLAG_OVERFLOW == 0 {
            return None;
        }
        let word = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&self.payload[i..i + 8]);
            u64::from_ne_bytes(b)
        };
        Some(OverflowMarker {
            dropped: word(0),
            first_seq: word(8),
            last_seq: word(16),
        })
    }
}

/// A run of events the producer dropped because the ring was full.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct OverflowMarker {
    /// Events dropped.
    pub dropped: u64,
    /// Sequence number of the first dropped event.
    pub first_seq: u64,
    /// Sequence number of the last dropped event.
    pub last_seq: u64,
}

/// An ESM event as a ring record: its payload encoded by `lull_esm::protocol`.
#[must_use]
pub fn ring_record_of(event: &lull_model::AppEvent) -> RingRecord {
    let payload = lull_esm::protocol::event_payload_bytes(event);
    RingRecord::new(event.seq.0, event.kind as u16, &payload, event.injected_ns)
}

/// The ESM delivery a ring record stands for: an event for `handler`, or the overflow marker.
/// The record comes from another process, so it is checked like a message.
///
/// # Errors
/// The protocol's refusal of the event's kind or payload.
pub fn delivery_of_record(
    rec: &RingRecord,
    handler: lull_model::HandlerId,
) -> Result<lull_esm::Delivery, lull_esm::protocol::ProtocolError> {
    if let Some(m) = rec.overflow() {
        return Ok(lull_esm::Delivery::Overflow {
            dropped: m.dropped,
            first: lull_model::EventSeq(m.first_seq),
            last: lull_model::EventSeq(m.last_seq),
        });
    }
    lull_esm::protocol::delivery_of_event_record(
        rec.seq,
        rec.kind,
        &rec.payload,
        rec.injected_ns,
        handler,
    )
}
