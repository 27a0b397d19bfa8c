//! Lull's input path against a real kernel's evdev: a uinput device made here, read back through
//! its `/dev/input/eventN` node with Lull's decoder and the evdev ioctls (mask, grab, revoke),
//! and the per-descriptor buffer overflowing into `SYN_DROPPED`.
//!
//! These need `/dev/uinput` and evdev, as root: they run only in the lab guest (`lull lab vm
//! test`, which sets `LULL_GUEST`). Each is `#[ignore]`d so a plain `cargo test` passes them by,
//! and fails loudly when run with `--ignored` outside the guest.
//!
//! Writing to uinput is synchronous: when `emit` returns, the input core has passed the records
//! to every evdev descriptor's buffer. The waits below are therefore hang guards only (a poll
//! bounded by [`HANG_GUARD_MS`]); nothing sleeps to let the kernel catch up.

mod common;
use common::{require_guest, KEY_A};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;

use lull_model::{RawEvent, TouchPhase};
use lull_os::evdev::{
    EvdevDecoder, EvdevSource, InputRecord, ABS_X, ABS_Y, BTN_TOUCH, EV_ABS, EV_KEY, EV_SYN,
    RECORD_SIZE, SYN_DROPPED, SYN_REPORT,
};
use lull_os::evdev_ioctl::{self as ioctl, EvdevIoctlError};
use lull_os::event_loop::{EventLoop, FnSource, LoopCtl, PostAction};
use lull_os::sys;
use lull_os::uinput::{UinputCaps, UinputDevice};

/// The longest any wait on the kernel may take before the test calls it a hang. Everything it
/// waits for is already queued when the wait starts; a passing run never comes near this.
const HANG_GUARD_MS: i32 = 10_000;
const NS_PER_MS: u64 = 1_000_000;

/// The axes' range; the values written stay well inside it.
const AXIS_MAX: i32 = 65_535;

/// A touch screen: `BTN_TOUCH` and `KEY_A`, `ABS_X`/`ABS_Y`.
fn touch_caps() -> UinputCaps {
    UinputCaps {
        keys: vec![BTN_TOUCH, KEY_A],
        abs: vec![(ABS_X, 0, AXIS_MAX), (ABS_Y, 0, AXIS_MAX)],
        rel: vec![],
        msc: vec![],
    }
}

fn make_device(name: &str) -> (UinputDevice, PathBuf) {
    let dev = UinputDevice::create(name, &touch_caps()).expect("create the uinput device");
    let path = dev.event_path().expect("the device's evdev node");
    (dev, path)
}

fn open_node(path: &std::path::Path) -> OwnedFd {
    sys::open_read_nonblocking(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

fn rec(type_: u16, code: u16, value: i32) -> InputRecord {
    InputRecord::to_inject(type_, code, value)
}

fn syn() -> InputRecord {
    rec(EV_SYN, SYN_REPORT, 0)
}

/// What a record says, without the kernel's stamp.
fn what(r: &InputRecord) -> (u16, u16, i32) {
    (r.type_, r.code, r.value)
}

fn whats(rs: &[InputRecord]) -> Vec<(u16, u16, i32)> {
    rs.iter().map(what).collect()
}

/// `poll` on one descriptor; returns its `revents`.
fn poll(fd: &OwnedFd, timeout_ms: i32) -> i16 {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the call.
    let r = unsafe { libc::poll(&raw mut p, 1, timeout_ms) };
    assert!(r >= 0, "poll: {}", std::io::Error::last_os_error());
    p.revents
}

/// Reads what the descriptor holds now (it is non-blocking), as records.
fn read_available(fd: &OwnedFd) -> Vec<InputRecord> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 256 * RECORD_SIZE];
    loop {
        match sys::read(fd.as_raw_fd(), &mut buf) {
            Ok(0) => panic!("end of file on an evdev node"),
            Ok(n) => {
                assert_eq!(n % RECORD_SIZE, 0, "evdev returns whole records");
                for chunk in buf[..n].chunks_exact(RECORD_SIZE) {
                    out.push(InputRecord::from_bytes(chunk.try_into().unwrap()));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return out,
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// Reads exactly `n` records (waiting for them at most [`HANG_GUARD_MS`] each time), then
/// checks that no more are queued.
fn read_exactly(fd: &OwnedFd, n: usize) -> Vec<InputRecord> {
    let mut out = read_available(fd);
    while out.len() < n {
        assert_ne!(
            poll(fd, HANG_GUARD_MS) & libc::POLLIN,
            0,
            "only {} of {n} records within {HANG_GUARD_MS} ms: {:?}",
            out.len(),
            whats(&out)
        );
        out.extend(read_available(fd));
    }
    assert_eq!(
        out.len(),
        n,
        "more records than expected: {:?}",
        whats(&out)
    );
    assert_eq!(poll(fd, 0) & libc::POLLIN, 0, "records left after {n}");
    out
}

/// The errno of one `read` that is expected to fail.
fn read_errno(fd: &OwnedFd) -> Option<i32> {
    let mut buf = [0u8; RECORD_SIZE];
    sys::read(fd.as_raw_fd(), &mut buf).err()?.raw_os_error()
}

/// (a) Packets written to a uinput device come out of its evdev node, through Lull's
/// `EvdevSource` in an event loop, as the touch events they describe, stamped with the
/// monotonic clock at the time they were written.
#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn uinput_packets_decode_into_touch_events() {
    require_guest();
    let name = "lull guest touch a";
    let (dev, path) = make_device(name);
    assert!(
        path.to_string_lossy().starts_with("/dev/input/event"),
        "{}",
        path.display()
    );
    let fd = open_node(&path);
    assert_eq!(ioctl::device_name(fd.as_fd()), Ok(name.to_string()));
    sys::evdev_use_monotonic(fd.as_raw_fd()).expect("EVIOCSCLOCKID");

    struct Seen {
        events: Vec<(RawEvent, u64)>,
        want: usize,
        timed_out: bool,
    }
    let mut lp: EventLoop<Seen> = EventLoop::new().unwrap();
    let src = EvdevSource::new(fd, |s: &mut Seen, ctl: &mut LoopCtl<Seen>, ev, t| {
        s.events.push((ev, t));
        if s.events.len() >= s.want {
            ctl.stop();
        }
    })
    .unwrap();
    lp.insert(Box::new(src)).unwrap();
    let guard = sys::TimerFd::new().unwrap();
    guard
        .set_abs(sys::monotonic_ns() + HANG_GUARD_MS as u64 * NS_PER_MS, 0)
        .unwrap();
    let guard_fd = guard.raw();
    lp.insert(Box::new(FnSource {
        fd: guard_fd,
        f: |s: &mut Seen, ctl: &mut LoopCtl<Seen>| {
            s.timed_out = true;
            ctl.stop();
            PostAction::Continue
        },
    }))
    .unwrap();

    let before_ns = sys::monotonic_ns();
    // Down, a move, up: one write per packet, as a driver reports them.
    dev.emit(&[
        rec(EV_ABS, ABS_X, 100),
        rec(EV_ABS, ABS_Y, 200),
        rec(EV_KEY, BTN_TOUCH, 1),
        syn(),
    ])
    .unwrap();
    dev.emit(&[rec(EV_ABS, ABS_X, 110), rec(EV_ABS, ABS_Y, 215), syn()])
        .unwrap();
    // Only X moves: Y keeps its value.
    dev.emit(&[rec(EV_ABS, ABS_X, 120), rec(EV_KEY, BTN_TOUCH, 0), syn()])
        .unwrap();
    let after_ns = sys::monotonic_ns();

    let mut seen = Seen {
        events: Vec::new(),
        want: 3,
        timed_out: false,
    };
    lp.run(&mut seen).unwrap();
    assert!(
        !seen.timed_out,
        "events within {HANG_GUARD_MS} ms: {:?}",
        seen.events
    );
    let events: Vec<RawEvent> = seen.events.iter().map(|&(e, _)| e).collect();
    let touch = |phase, x, y| RawEvent::Touch { phase, x, y };
    assert_eq!(
        events,
        vec![
            touch(TouchPhase::Down, 100, 200),
            touch(TouchPhase::Move, 110, 215),
            touch(TouchPhase::Up, 120, 215),
        ]
    );
    // The kernel stamps in microseconds, on the clock EVIOCSCLOCKID chose.
    for &(_, t) in &seen.events {
        assert!(
            before_ns / 1000 * 1000 <= t && t <= after_ns,
            "stamp {t} outside [{before_ns}, {after_ns}]"
        );
    }
}

/// Dropping the device destroys it: its node goes and an open descriptor reads `ENODEV`.
#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn dropping_the_device_destroys_it() {
    require_guest();
    let (dev, path) = make_device("lull guest drop");
    let fd = open_node(&path);
    dev.emit(&[rec(EV_KEY, KEY_A, 1), syn()]).unwrap();
    drop(dev);
    assert!(!path.exists(), "{} outlived its device", path.display());
    assert_eq!(read_errno(&fd), Some(libc::ENODEV));
}

/// (b) `EVIOCSMASK` filters one descriptor and no other: the unmasked one gets every record,
/// the one masked to `EV_KEY` only the keys (with their `SYN_REPORT`s, none for a packet it
/// got nothing of), and one masked to the key `BTN_TOUCH` everything but `KEY_A`.
#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn an_event_mask_filters_one_descriptor() {
    require_guest();
    let (dev, path) = make_device("lull guest mask");
    let all = open_node(&path);
    let keys_only = open_node(&path);
    let touch_key_only = open_node(&path);
    ioctl::set_mask(keys_only.as_fd(), EV_SYN, &[EV_KEY]).unwrap();
    // BTN_TOUCH (330) is in the bitmap's sixth 64-bit word, KEY_A in its first.
    ioctl::set_mask(touch_key_only.as_fd(), EV_KEY, &[BTN_TOUCH]).unwrap();

    let p1 = [rec(EV_ABS, ABS_X, 10), rec(EV_ABS, ABS_Y, 20), syn()];
    let p2 = [rec(EV_KEY, KEY_A, 1), syn()];
    let p3 = [
        rec(EV_ABS, ABS_X, 11),
        rec(EV_KEY, BTN_TOUCH, 1),
        rec(EV_KEY, KEY_A, 0),
        syn(),
    ];
    for p in [&p1[..], &p2, &p3] {
        dev.emit(p).unwrap();
    }

    let everything: Vec<_> = [&p1[..], &p2, &p3].concat();
    assert_eq!(
        whats(&read_exactly(&all, everything.len())),
        whats(&everything)
    );
    let keys = [
        rec(EV_KEY, KEY_A, 1),
        syn(),
        rec(EV_KEY, BTN_TOUCH, 1),
        rec(EV_KEY, KEY_A, 0),
        syn(),
    ];
    assert_eq!(whats(&read_exactly(&keys_only, keys.len())), whats(&keys));
    let no_key_a = [
        rec(EV_ABS, ABS_X, 10),
        rec(EV_ABS, ABS_Y, 20),
        syn(),
        rec(EV_ABS, ABS_X, 11),
        rec(EV_KEY, BTN_TOUCH, 1),
        syn(),
    ];
    assert_eq!(
        whats(&read_exactly(&touch_key_only, no_key_a.len())),
        whats(&no_key_a)
    );
}

/// (c) `EVIOCGRAB`: while one descriptor holds the grab the other gets nothing; once it lets
/// go, both get the next packet (and the other never sees the one sent during the grab).
#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn a_grab_keeps_events_from_other_descriptors() {
    require_guest();
    let (dev, path) = make_device("lull guest grab");
    let holder = open_node(&path);
    let other = open_node(&path);
    ioctl::grab(holder.as_fd(), true).unwrap();
    assert_eq!(
        ioctl::grab(other.as_fd(), true),
        Err(EvdevIoctlError::AlreadyGrabbed)
    );
    assert_eq!(
        ioctl::grab(other.as_fd(), false),
        Err(EvdevIoctlError::NotGrabbed)
    );

    let during = [rec(EV_ABS, ABS_X, 30), rec(EV_ABS, ABS_Y, 40), syn()];
    dev.emit(&during).unwrap();
    assert_eq!(whats(&read_exactly(&holder, during.len())), whats(&during));
    assert_eq!(
        poll(&other, 0) & libc::POLLIN,
        0,
        "the other descriptor got records during the grab: {:?}",
        whats(&read_available(&other))
    );

    ioctl::grab(holder.as_fd(), false).unwrap();
    assert_eq!(
        ioctl::grab(holder.as_fd(), false),
        Err(EvdevIoctlError::NotGrabbed)
    );
    let after = [rec(EV_ABS, ABS_X, 31), syn()];
    dev.emit(&after).unwrap();
    assert_eq!(whats(&read_exactly(&other, after.len())), whats(&after));
    assert_eq!(whats(&read_exactly(&holder, after.len())), whats(&after));
}

/// (d) `EVIOCREVOKE`: the revoked descriptor's next read fails with `ENODEV` (even with
/// records queued) and it polls hung up, while the other descriptor carries on.
#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn a_revoked_descriptor_reads_enodev_while_others_carry_on() {
    require_guest();
    let (dev, path) = make_device("lull guest revoke");
    let kept = open_node(&path);
    let revoked = open_node(&path);
    let first = [rec(EV_KEY, KEY_A, 1), syn()];
    dev.emit(&first).unwrap();

    ioctl::revoke(revoked.as_fd()).unwrap();
    assert_eq!(read_errno(&revoked), Some(libc::ENODEV));
    let hung_up = libc::POLLHUP | libc::POLLERR;
    assert_eq!(poll(&revoked, 0) & hung_up, hung_up);
    assert_eq!(
        ioctl::revoke(revoked.as_fd()),
        Err(EvdevIoctlError::Revoked { op: "EVIOCREVOKE" })
    );
    assert_eq!(
        ioctl::grab(revoked.as_fd(), true),
        Err(EvdevIoctlError::Revoked { op: "EVIOCGRAB" })
    );

    assert_eq!(whats(&read_exactly(&kept, first.len())), whats(&first));
    let next = [rec(EV_KEY, KEY_A, 0), syn()];
    dev.emit(&next).unwrap();
    assert_eq!(whats(&read_exactly(&kept, next.len())), whats(&next));
    assert_eq!(read_errno(&revoked), Some(libc::ENODEV));
}

// evdev's per-descriptor buffer (`drivers/input/evdev.c`): `evdev_compute_buffer_size` is
// `roundup_pow_of_two(max(hint_events_per_packet * EVDEV_BUF_PACKETS, EVDEV_MIN_BUFFER_SIZE))`,
// and the input core's hint (`input_estimate_events_per_packet`, `drivers/input/input.c`) is,
// for a device without multi-touch, 1 (`SYN_REPORT`) + one per absolute and relative axis + 7
// (room for key and misc events).
const EVDEV_MIN_BUFFER_SIZE: usize = 64;
const EVDEV_BUF_PACKETS: usize = 8;
const HINT_SYN_REPORT: usize = 1;
const HINT_KEY_MSC_ROOM: usize = 7;
/// Records to write without reading: far more than any buffer for this device.
const OVERFLOW_RECORDS: usize = 4096;
/// Gap between a packet's X and Y: a record lost from a packet shows as a pair off this gap.
const Y_GAP: i32 = 1000;

/// Touch moves with fresh values (the input core drops a record repeating the current one).
struct Pen {
    x: i32,
}

impl Pen {
    /// One `ABS_X`, `ABS_Y`, `SYN_REPORT` packet and the move it describes.
    fn packet(&mut self) -> ([InputRecord; 3], RawEvent) {
        self.x += 1;
        let (x, y) = (self.x, self.x + Y_GAP);
        assert!(y <= AXIS_MAX, "the pen ran off the axis");
        let move_ = RawEvent::Touch {
            phase: TouchPhase::Move,
            x,
            y,
        };
        ([rec(EV_ABS, ABS_X, x), rec(EV_ABS, ABS_Y, y), syn()], move_)
    }
}

const PACKET_RECORDS: usize = 3;

/// (e) Overflow: more packets than a descriptor's buffer holds, unread, leave it with
/// `SYN_DROPPED` first; Lull's decoder counts it, drops the partial packet after it (up to and
/// including the next `SYN_REPORT`), decodes the rest as the last packets written, and carries on
/// with the packets written after. The buffer's size is also measured: the most 3-record packets
/// a fresh descriptor holds without a drop.
#[test]
#[ignore = "needs the lab guest: run by `lull lab vm --tests`"]
fn an_overflow_reads_syn_dropped_and_the_decoder_resumes() {
    require_guest();
    let (dev, path) = make_device("lull guest overflow");
    let mut pen = Pen { x: 0 };
    let axes = touch_caps().abs.len() + touch_caps().rel.len();
    let hint = HINT_SYN_REPORT + axes + HINT_KEY_MSC_ROOM;
    let buffer = (hint * EVDEV_BUF_PACKETS)
        .max(EVDEV_MIN_BUFFER_SIZE)
        .next_power_of_two();

    // The buffer's capacity: a ring of `buffer` slots holds `buffer - 1` records.
    let mut fitted_packets = 0;
    for packets in 1..=buffer {
        let fd = open_node(&path);
        for _ in 0..packets {
            dev.emit(&pen.packet().0).unwrap();
        }
        let got = read_available(&fd);
        if got
            .iter()
            .any(|r| (r.type_, r.code) == (EV_SYN, SYN_DROPPED))
        {
            break;
        }
        assert_eq!(got.len(), packets * PACKET_RECORDS);
        fitted_packets = packets;
    }
    eprintln!(
        "evdev buffer: {} records of {} packets fit; the kernel's formula gives {buffer} slots",
        fitted_packets * PACKET_RECORDS,
        fitted_packets
    );
    assert_eq!(
        fitted_packets,
        (buffer - 1) / PACKET_RECORDS,
        "the buffer is not the {buffer} slots evdev_compute_buffer_size gives"
    );

    let fd = open_node(&path);
    let mut written = Vec::new();
    let mut records = Vec::new();
    for _ in 0..OVERFLOW_RECORDS / PACKET_RECORDS {
        let (p, ev) = pen.packet();
        records.extend(p);
        written.push(ev);
    }
    dev.emit(&records).unwrap();
    let got = read_available(&fd);
    eprintln!(
        "after {} records unread: {} read, starting {:?}",
        records.len(),
        got.len(),
        whats(&got[..got.len().min(4)])
    );
    assert!(
        got.len() < buffer,
        "{} records from a {buffer}-slot buffer",
        got.len()
    );
    assert_eq!(
        got.first().map(what),
        Some((EV_SYN, SYN_DROPPED, 0)),
        "the overflowed buffer starts with SYN_DROPPED"
    );
    let drops = got
        .iter()
        .filter(|r| (r.type_, r.code) == (EV_SYN, SYN_DROPPED))
        .count();
    assert_eq!(drops, 1);

    let mut decoder = EvdevDecoder::new();
    let mut decoded = Vec::new();
    for r in &got {
        decoder.feed(*r, &mut |e, _| decoded.push(e));
    }
    assert_eq!(decoder.counters.syn_dropped, 1);
    // Every packet after the first SYN_REPORT is whole; the one before it is what the overflow
    // left of a packet, which the decoder must not turn into an event.
    let reports = got
        .iter()
        .filter(|r| (r.type_, r.code) == (EV_SYN, SYN_REPORT))
        .count();
    assert_eq!(decoder.counters.packets as usize, reports - 1);
    let tail = &written[written.len() - decoded.len()..];
    assert_eq!(
        decoded, tail,
        "the decoded events are the last ones written"
    );
    assert!(!decoded.is_empty());

    // And reading goes on as if nothing happened.
    let mut next_records = Vec::new();
    let mut next = Vec::new();
    for _ in 0..3 {
        let (p, ev) = pen.packet();
        next_records.extend(p);
        next.push(ev);
    }
    dev.emit(&next_records).unwrap();
    let got = read_exactly(&fd, next_records.len());
    let mut decoded = Vec::new();
    for r in &got {
        decoder.feed(*r, &mut |e, _| decoded.push(e));
    }
    assert_eq!(decoded, next);
    assert_eq!(decoder.counters.syn_dropped, 1);
}
