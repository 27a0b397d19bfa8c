//! Input traces and the running system (docs/traces.md): `lull input record` writes a
//! `lull-trace 1` file of what a running `lulld` delivers to a registered client, or of what an
//! input device reports; `lull input inject` replays a file into a running `lulld` as a
//! data-plane producer, each event at its time.

use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use lull::client::{ClientError, Delivery, EsmClient};
use lull::producer::EsmProducer;
use lull_model::{EventKind, RawEvent};
use lull_os::evdev::{EvdevDecoder, ABS_X, ABS_Y, RECORD_SIZE};
use lull_os::input_file::EventSourceError;
use lull_os::sys;
use lull_workload::trace::{TimedEvent, Trace, HEADER, MAX_SPAN_NS};

/// Records read from a device at a time (a multi-touch frame is a few dozen).
const DEVICE_READ_RECORDS: usize = 256;

/// Errors of recording and injecting.
#[derive(Debug, thiserror::Error)]
pub enum InputIoError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Source(#[from] EventSourceError),
    #[error("reading {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("writing the trace: {0}")]
    Write(#[source] io::Error),
    #[error("the daemon delivered a {kind} event whose data is not a {kind} event's; it cannot be written as a trace line")]
    Unrecordable { kind: EventKind },
    #[error("the recording passed the longest trace the format holds (24 hours)")]
    TooLong,
}

/// Writes a trace as its events come: the header at once, then one line per event, flushed,
/// so that a recording stopped at any moment (Ctrl-C) leaves a file the reader accepts.
#[derive(Debug)]
pub struct TraceWriter<W: Write> {
    out: W,
    first_stamp_ns: Option<u64>,
    last_at_ns: u64,
    events: u64,
    reordered: u64,
}

impl<W: Write> TraceWriter<W> {
    /// Starts a trace on `out`, with `comment` (any lines) as `#` comments under the header.
    ///
    /// # Errors
    /// The writer's.
    pub fn new(mut out: W, comment: &str) -> io::Result<TraceWriter<W>> {
        writeln!(out, "{HEADER}")?;
        for line in comment.lines() {
            writeln!(out, "# {line}")?;
        }
        out.flush()?;
        Ok(TraceWriter {
            out,
            first_stamp_ns: None,
            last_at_ns: 0,
            events: 0,
            reordered: 0,
        })
    }

    /// Appends `raw` stamped `stamp_ns` (any one clock; the first event is time 0). A stamp
    /// before the previous event's (rings of two producers read in another order than their
    /// stamps) is written at the previous event's time and counted, since a trace's time never
    /// goes back.
    ///
    /// # Errors
    /// [`InputIoError::Write`]; [`InputIoError::TooLong`] past 24 hours.
    pub fn push(&mut self, raw: RawEvent, stamp_ns: u64) -> Result<(), InputIoError> {
        let first = *self.first_stamp_ns.get_or_insert(stamp_ns);
        let mut at_ns = stamp_ns.saturating_sub(first);
        if at_ns < self.last_at_ns || stamp_ns < first {
            self.reordered += 1;
            at_ns = self.last_at_ns;
        }
        if at_ns > MAX_SPAN_NS {
            return Err(InputIoError::TooLong);
        }
        let line = TimedEvent { at_ns, raw }.line();
        writeln!(self.out, "{line}")
            .and_then(|()| self.out.flush())
            .map_err(InputIoError::Write)?;
        self.last_at_ns = at_ns;
        self.events += 1;
        Ok(())
    }

    /// Events written.
    #[must_use]
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Events written at their predecessor's time because their stamp was earlier.
    #[must_use]
    pub fn reordered(&self) -> u64 {
        self.reordered
    }

    /// The last event's time.
    #[must_use]
    pub fn span_ns(&self) -> u64 {
        self.last_at_ns
    }

    /// The writer back.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// When a recording stops (besides Ctrl-C, which leaves the file whole).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct RecordLimits {
    /// After this many events.
    pub max_events: Option<u64>,
    /// After this long from the start (a device recording only: a daemon's client blocks in
    /// its wait until the next event).
    pub max_ns: Option<u64>,
}

/// Why a recording ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordEnd {
    /// `max_events` reached.
    Count,
    /// `max_ns` passed.
    Time,
    /// The daemon went away, the device was unplugged, or the pipe's writer closed it.
    SourceGone,
}

impl std::fmt::Display for RecordEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RecordEnd::Count => "the event count was reached",
            RecordEnd::Time => "the time was up",
            RecordEnd::SourceGone => "the source went away",
        })
    }
}

/// What a recording did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
pub struct RecordReport {
    pub events: u64,
    pub span_ns: u64,
    /// Events written at their predecessor's time (see [`TraceWriter::push`]).
    pub reordered: u64,
    /// Events the daemon dropped before this client read them (its overflow markers), or the
    /// device's `SYN_DROPPED` reports: the trace lacks them.
    pub dropped: u64,
    pub ended: RecordEnd,
}

fn report<W: Write>(w: &TraceWriter<W>, dropped: u64, ended: RecordEnd) -> RecordReport {
    RecordReport {
        events: w.events(),
        span_ns: w.span_ns(),
        reordered: w.reordered(),
        dropped,
        ended,
    }
}

/// A client of a running daemon registered for the kinds it records: once
/// [`DaemonRecorder::connect`] returns, every event the daemon or a producer delivers to apps
/// of those kinds reaches it too (input only while it is not suspended).
#[derive(Debug)]
pub struct DaemonRecorder {
    client: EsmClient,
}

impl DaemonRecorder {
    /// Connects to the daemon at `socket` and registers for `kinds`.
    ///
    /// # Errors
    /// [`InputIoError::Client`]: no daemon there, a refused permission, a protocol fault.
    pub fn connect(socket: &Path, kinds: &[EventKind]) -> Result<DaemonRecorder, InputIoError> {
        let mut client = EsmClient::connect(socket)?;
        for &kind in kinds {
            client.register(kind, |_| {})?;
        }
        Ok(DaemonRecorder { client })
    }

    /// Writes every event delivered, at the time its producer stamped it, until
    /// `limits.max_events` or the daemon goes away. `on_event` sees the count after each.
    ///
    /// # Errors
    /// [`InputIoError`]; a daemon that goes away ends the recording without one.
    pub fn record<W: Write>(
        &mut self,
        limits: RecordLimits,
        writer: &mut TraceWriter<W>,
        mut on_event: impl FnMut(u64),
    ) -> Result<RecordReport, InputIoError> {
        let mut dropped = 0;
        loop {
            if limits.max_events.is_some_and(|n| writer.events() >= n) {
                return Ok(report(writer, dropped, RecordEnd::Count));
            }
            match self.client.wait_delivery() {
                Ok(Delivery::Event { event, .. }) => {
                    let raw = lull_esm::uninterpret(event.kind, event.payload)
                        .ok_or(InputIoError::Unrecordable { kind: event.kind })?;
                    writer.push(raw, event.injected_ns)?;
                    on_event(writer.events());
                }
                Ok(Delivery::Overflow { dropped: n, .. }) => dropped += n,
                Err(ClientError::DaemonGone) => {
                    return Ok(report(writer, dropped, RecordEnd::SourceGone))
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// An input device (or a pipe of `struct input_event` records) open for recording: once
/// [`DeviceRecorder::open`] returns, every event the device reports is read.
#[derive(Debug)]
pub struct DeviceRecorder {
    path: PathBuf,
    fd: std::os::fd::OwnedFd,
    decoder: EvdevDecoder,
}

impl DeviceRecorder {
    /// Opens `path` (an evdev node's stamps are switched to `CLOCK_MONOTONIC`).
    ///
    /// # Errors
    /// [`InputIoError::Source`] naming the path: cannot open it, or it is no input device.
    pub fn open(path: &Path) -> Result<DeviceRecorder, InputIoError> {
        let fd = lull_os::input_file::open_event_source(path)?;
        let mut decoder = EvdevDecoder::new();
        // A touch moved along one axis is read against the position the device holds now.
        if let (Ok(x), Ok(y)) = (
            lull_os::evdev_ioctl::abs_value(fd.as_fd(), ABS_X),
            lull_os::evdev_ioctl::abs_value(fd.as_fd(), ABS_Y),
        ) {
            decoder.set_position(x, y);
        }
        Ok(DeviceRecorder {
            path: path.to_owned(),
            fd,
            decoder,
        })
    }

    /// Writes every event the device reports, at the device's time, until a limit or the device
    /// goes away (unplugged, or the pipe's writer closed it). `on_event` sees the count after
    /// each.
    ///
    /// # Errors
    /// [`InputIoError`] naming the path.
    pub fn record<W: Write>(
        &mut self,
        limits: RecordLimits,
        writer: &mut TraceWriter<W>,
        mut on_event: impl FnMut(u64),
    ) -> Result<RecordReport, InputIoError> {
        let path = self.path.clone();
        let read_err = |source| InputIoError::Read {
            path: path.clone(),
            source,
        };
        let raw_fd = self.fd.as_raw_fd();
        let deadline_ns = limits.max_ns.map(|d| sys::monotonic_ns().saturating_add(d));
        let mut buf = vec![0u8; DEVICE_READ_RECORDS * RECORD_SIZE];
        let mut held = 0usize;
        let mut events: Vec<(RawEvent, u64)> = Vec::new();
        let mut ready = [false];
        loop {
            let dropped = self.decoder.counters.syn_dropped;
            if limits.max_events.is_some_and(|n| writer.events() >= n) {
                return Ok(report(writer, dropped, RecordEnd::Count));
            }
            let timeout_ms = match deadline_ns {
                Some(end) => {
                    let now = sys::monotonic_ns();
                    if now >= end {
                        return Ok(report(writer, dropped, RecordEnd::Time));
                    }
                    Some(u32::try_from((end - now).div_ceil(1_000_000)).unwrap_or(u32::MAX))
                }
                None => None,
            };
            if sys::poll_readable(&[raw_fd], timeout_ms, &mut ready).map_err(read_err)? == 0 {
                continue;
            }
            let n = match sys::read(raw_fd, &mut buf[held..]) {
                Ok(0) => return Ok(report(writer, dropped, RecordEnd::SourceGone)),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                // An unplugged device (or one revoked) reads ENODEV.
                Err(e) if e.raw_os_error() == Some(sys::Errno::ENODEV.0) => {
                    return Ok(report(writer, dropped, RecordEnd::SourceGone))
                }
                Err(e) => return Err(read_err(e)),
            };
            held += n;
            events.clear();
            let used = self
                .decoder
                .feed_bytes(&buf[..held], &mut |raw, t_ns| events.push((raw, t_ns)));
            buf.copy_within(used..held, 0);
            held -= used;
            for &(raw, t_ns) in &events {
                if limits.max_events.is_some_and(|n| writer.events() >= n) {
                    break;
                }
                writer.push(raw, t_ns)?;
                on_event(writer.events());
            }
        }
    }
}

/// What an injection did.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct InjectReport {
    pub events: u64,
    /// Deliveries into apps' rings, summed over events (an event routed to two apps counts 2).
    pub queued: u64,
    /// Events no app was registered for when they were pushed.
    pub unrouted: u64,
    /// Apps routed at the end.
    pub apps: usize,
    /// Events dropped because an app's ring was full (marked there, so the app knows).
    pub dropped: u64,
    /// The latest an event was pushed after its time.
    pub late_max_ns: u64,
}

/// Connects to the daemon at `socket` as a producer of the trace's kinds and pushes each event
/// at its time from now, stamped with the moment it is pushed (so an app's latency is measured
/// from there). `on_event` sees how many were pushed.
///
/// # Errors
/// [`InputIoError::Client`] when the daemon cannot be reached or goes away.
pub fn inject(
    socket: &Path,
    trace: &Trace,
    mut on_event: impl FnMut(u64),
) -> Result<InjectReport, InputIoError> {
    let mut kinds: Vec<EventKind> = trace
        .events
        .iter()
        .map(|e| lull_esm::interpret(e.raw).0)
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    let mut out = InjectReport::default();
    if kinds.is_empty() {
        return Ok(out);
    }
    let mut producer = EsmProducer::connect(socket, &kinds)?;
    let start_ns = sys::monotonic_ns();
    for ev in &trace.events {
        let due_ns = start_ns.saturating_add(ev.at_ns);
        let now = sys::monotonic_ns();
        if due_ns > now {
            std::thread::sleep(Duration::from_nanos(due_ns - now));
        }
        let now = sys::monotonic_ns();
        out.late_max_ns = out.late_max_ns.max(now.saturating_sub(due_ns));
        let queued = producer.push(ev.raw, now)?;
        out.events += 1;
        out.queued += u64::from(queued);
        if queued == 0 {
            out.unrouted += 1;
        }
        on_event(out.events);
    }
    producer.flush();
    out.apps = producer.routes().len();
    out.dropped = producer.ring_counters().dropped;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_model::TouchPhase;

    #[test]
    fn a_streamed_trace_reads_back_with_times_from_its_first_event() {
        let mut w = TraceWriter::new(Vec::new(), "recorded from a test\nsecond line").unwrap();
        let key = |code, pressed| RawEvent::Key { code, pressed };
        w.push(key(30, true), 5_000).unwrap();
        w.push(
            RawEvent::Touch {
                phase: TouchPhase::Down,
                x: 1,
                y: 2,
            },
            9_000,
        )
        .unwrap();
        // Earlier than its predecessor: written at its time, counted.
        w.push(key(30, false), 8_000).unwrap();
        w.push(RawEvent::Timer { id: 3 }, 20_000).unwrap();
        assert_eq!((w.events(), w.reordered(), w.span_ns()), (4, 1, 15_000));
        let text = String::from_utf8(w.into_inner()).unwrap();
        assert!(text.starts_with("lull-trace 1\n# recorded from a test\n# second line\n"));
        let t = Trace::parse(&text).unwrap();
        let times: Vec<u64> = t.events.iter().map(|e| e.at_ns).collect();
        assert_eq!(times, [0, 4_000, 4_000, 15_000]);
        assert_eq!(t.events[2].raw, key(30, false));
    }

    #[test]
    fn a_stamp_before_the_first_is_written_at_time_zero_and_counted() {
        let mut w = TraceWriter::new(Vec::new(), "").unwrap();
        w.push(RawEvent::Timer { id: 1 }, 100).unwrap();
        w.push(RawEvent::Timer { id: 2 }, 50).unwrap();
        assert_eq!((w.reordered(), w.span_ns()), (1, 0));
    }

    #[test]
    fn a_recording_past_the_formats_span_is_refused() {
        let mut w = TraceWriter::new(Vec::new(), "").unwrap();
        w.push(RawEvent::Timer { id: 1 }, 0).unwrap();
        assert!(matches!(
            w.push(RawEvent::Timer { id: 1 }, MAX_SPAN_NS + 1),
            Err(InputIoError::TooLong)
        ));
        assert_eq!(w.events(), 1);
    }
}
