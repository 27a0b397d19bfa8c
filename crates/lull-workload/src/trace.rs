//! The `lull-trace 1` format: one timed raw event per line.
//!
//! ```text
//! lull-trace 1
//! # anything after '#' is a comment; blank lines are ignored
//! <t_ns> touch down|move|up <x> <y>
//! <t_ns> key <code> down|up
//! <t_ns> mouse <dx> <dy> <buttons>
//! <t_ns> net <channel> <len>
//! <t_ns> timer <id>
//! ```
//!
//! `t_ns` is nanoseconds from the start of the trace, never decreases and is at most
//! [`MAX_SPAN_NS`] (24 hours). The reader accepts
//! nothing else: every malformed line is a [`TraceError`] naming the line.

use lull_model::{RawEvent, TouchPhase};

/// The first line of every trace.
pub const HEADER: &str = "lull-trace 1";
/// Largest trace the reader accepts, so a corrupt file cannot exhaust memory.
pub const MAX_EVENTS: usize = 10_000_000;
/// Latest event time the reader accepts: 24 hours. A recording is minutes long; a day leaves
/// room for any soak test while keeping `start + t_ns` far from `u64` overflow in the daemon's
/// replay and the simulator's clocks, so a corrupt or hostile time such as `u64::MAX` is refused
/// here rather than injected.
pub const MAX_SPAN_NS: u64 = 24 * 3_600 * 1_000_000_000;

/// One raw event at its time.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TimedEvent {
    /// Nanoseconds from the start of the trace.
    pub at_ns: u64,
    pub raw: RawEvent,
}

impl TimedEvent {
    /// The event as one line of a trace, without its newline (what a writer that streams a
    /// trace, one event at a time, appends after [`HEADER`]).
    #[must_use]
    pub fn line(&self) -> String {
        let at = self.at_ns;
        match self.raw {
            RawEvent::Touch { phase, x, y } => format!("{at} touch {} {x} {y}", phase_name(phase)),
            RawEvent::Key { code, pressed } => {
                format!("{at} key {code} {}", if pressed { "down" } else { "up" })
            }
            RawEvent::Mouse { dx, dy, buttons } => format!("{at} mouse {dx} {dy} {buttons}"),
            RawEvent::Net { channel, len } => format!("{at} net {channel} {len}"),
            RawEvent::Timer { id } => format!("{at} timer {id}"),
        }
    }
}

/// A recorded or generated sequence of raw events in time order.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct Trace {
    pub events: Vec<TimedEvent>,
}

/// Why a trace was rejected.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum TraceError {
    #[error("not a lull trace: the first line must be `{HEADER}`")]
    MissingHeader,
    #[error("line {line}: {reason}")]
    BadLine { line: usize, reason: Box<LineError> },
    #[error("line {line}: time {at_ns} ns is before the previous event's {previous_ns} ns")]
    TimeGoesBack {
        line: usize,
        at_ns: u64,
        previous_ns: u64,
    },
    #[error(
        "line {line}: time {at_ns} ns is past the longest trace the reader accepts \
         ({MAX_SPAN_NS} ns, 24 hours)"
    )]
    TooLong { line: usize, at_ns: u64 },
    #[error("more than {MAX_EVENTS} events")]
    TooManyEvents,
    #[error("cannot scale a trace of {events} events spanning {span_ns} ns to {target_ns} ns")]
    CannotScale {
        events: usize,
        span_ns: u64,
        target_ns: u64,
    },
}

impl Trace {
    /// Parses a trace.
    ///
    /// # Errors
    /// A [`TraceError`] for the first problem found.
    pub fn parse(text: &str) -> Result<Trace, TraceError> {
        let mut lines = text.lines().enumerate();
        let header = lines
            .by_ref()
            .map(|(_, l)| strip(l))
            .find(|l| !l.is_empty());
        if header != Some(HEADER) {
            return Err(TraceError::MissingHeader);
        }
        let mut events = Vec::new();
        let mut previous_ns = 0;
        for (i, line) in lines {
            let line_no = i + 1;
            let body = strip(line);
            if body.is_empty() {
                continue;
            }
            if events.len() == MAX_EVENTS {
                return Err(TraceError::TooManyEvents);
            }
            let ev = parse_line(body).map_err(|reason| TraceError::BadLine {
                line: line_no,
                reason: Box::new(reason),
            })?;
            if ev.at_ns > MAX_SPAN_NS {
                return Err(TraceError::TooLong {
                    line: line_no,
                    at_ns: ev.at_ns,
                });
            }
            if ev.at_ns < previous_ns {
                return Err(TraceError::TimeGoesBack {
                    line: line_no,
                    at_ns: ev.at_ns,
                    previous_ns,
                });
            }
            previous_ns = ev.at_ns;
            events.push(ev);
        }
        Ok(Trace { events })
    }

    /// Writes the trace in the format [`Trace::parse`] reads.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut out = String::with_capacity(self.events.len() * 28 + 16);
        out.push_str(HEADER);
        out.push('\n');
        for ev in &self.events {
            out.push_str(&ev.line());
            out.push('\n');
        }
        out
    }

    /// Time of the last event (the first is not necessarily at 0).
    #[must_use]
    pub fn span_ns(&self) -> u64 {
        self.events.last().map_or(0, |e| e.at_ns)
    }

    /// The same events with their times stretched or squeezed linearly so that the last one falls
    /// at `target_ns`; the order and the first event's offset ratio are kept.
    ///
    /// # Errors
    /// [`TraceError::CannotScale`] for an empty trace or one whose events all happen at 0.
    pub fn scaled_to(&self, target_ns: u64) -> Result<Trace, TraceError> {
        let span_ns = self.span_ns();
        if self.events.is_empty() || span_ns == 0 {
            return Err(TraceError::CannotScale {
                events: self.events.len(),
                span_ns,
                target_ns,
            });
        }
        let events = self
            .events
            .iter()
            .map(|e| TimedEvent {
                at_ns: u64::try_from(
                    u128::from(e.at_ns) * u128::from(target_ns) / u128::from(span_ns),
                )
                .expect("at_ns <= span_ns, so the result is <= target_ns"),
                raw: e.raw,
            })
            .collect();
        Ok(Trace { events })
    }
}

fn strip(line: &str) -> &str {
    line.split('#').next().unwrap_or("").trim()
}

fn phase_name(phase: TouchPhase) -> &'static str {
    match phase {
        TouchPhase::Down => "down",
        TouchPhase::Move => "move",
        TouchPhase::Up => "up",
    }
}

/// What is wrong with one event line of a trace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("missing event type")]
    MissingKind,
    #[error("touch phase must be down, move or up, not {0:?}")]
    TouchPhase(Option<String>),
    #[error("key state must be down or up, not {0:?}")]
    KeyState(Option<String>),
    #[error("unknown event type {0:?}")]
    UnknownKind(String),
    #[error("unexpected field {extra:?} after a {kind} event")]
    Extra { extra: String, kind: String },
    #[error("missing {0}")]
    MissingField(&'static str),
    #[error("{what} {text:?}: {reason}")]
    BadNumber {
        what: &'static str,
        text: String,
        reason: String,
    },
}

fn parse_line(body: &str) -> Result<TimedEvent, LineError> {
    let mut f = body.split_ascii_whitespace();
    let at_ns = num::<u64>(f.next(), "time")?;
    let kind = f.next().ok_or(LineError::MissingKind)?;
    let raw = match kind {
        "touch" => {
            let phase = match f.next() {
                Some("down") => TouchPhase::Down,
                Some("move") => TouchPhase::Move,
                Some("up") => TouchPhase::Up,
                other => return Err(LineError::TouchPhase(other.map(str::to_owned))),
            };
            RawEvent::Touch {
                phase,
                x: num(f.next(), "x")?,
                y: num(f.next(), "y")?,
            }
        }
        "key" => {
            let code = num(f.next(), "key code")?;
            let pressed = match f.next() {
                Some("down") => true,
                Some("up") => false,
                other => return Err(LineError::KeyState(other.map(str::to_owned))),
            };
            RawEvent::Key { code, pressed }
        }
        "mouse" => RawEvent::Mouse {
            dx: num(f.next(), "dx")?,
            dy: num(f.next(), "dy")?,
            buttons: num(f.next(), "buttons")?,
        },
        "net" => RawEvent::Net {
            channel: num(f.next(), "channel")?,
            len: num(f.next(), "len")?,
        },
        "timer" => RawEvent::Timer {
            id: num(f.next(), "timer id")?,
        },
        other => return Err(LineError::UnknownKind(other.to_owned())),
    };
    if let Some(extra) = f.next() {
        return Err(LineError::Extra {
            extra: extra.to_owned(),
            kind: kind.to_owned(),
        });
    }
    Ok(TimedEvent { at_ns, raw })
}

fn num<T: std::str::FromStr>(field: Option<&str>, what: &'static str) -> Result<T, LineError>
where
    T::Err: std::fmt::Display,
{
    let s = field.ok_or(LineError::MissingField(what))?;
    s.parse().map_err(|e: T::Err| LineError::BadNumber {
        what,
        text: s.to_owned(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_every_event_type() {
        let t = Trace::parse(
            "# comment first\nlull-trace 1\n0 touch down 1 2\n5 touch move -3 4 # trailing\n\n\
             6 touch up 0 0\n7 key 30 down\n8 mouse -1 1 3\n9 net 2 40\n9 timer 1\n",
        )
        .unwrap();
        assert_eq!(t.events.len(), 7);
        assert_eq!(
            t.events[1].raw,
            RawEvent::Touch {
                phase: TouchPhase::Move,
                x: -3,
                y: 4
            }
        );
        assert_eq!(Trace::parse(&t.to_text()).unwrap(), t);
    }

    #[test]
    fn rejects_bad_input_with_line_numbers() {
        assert_eq!(Trace::parse(""), Err(TraceError::MissingHeader));
        assert_eq!(
            Trace::parse("lull-trace 2\n"),
            Err(TraceError::MissingHeader)
        );
        let bad = |text: &str| Trace::parse(&format!("{HEADER}\n{text}")).unwrap_err();
        assert!(matches!(
            bad("x touch down 1 2"),
            TraceError::BadLine { line: 2, .. }
        ));
        assert!(matches!(
            bad("1 touch sideways 1 2"),
            TraceError::BadLine { .. }
        ));
        assert!(matches!(bad("1 touch down 1"), TraceError::BadLine { .. }));
        assert!(matches!(
            bad("1 touch down 1 2 3"),
            TraceError::BadLine { .. }
        ));
        assert!(matches!(
            bad("1 key 70000 down"),
            TraceError::BadLine { .. }
        ));
        assert!(matches!(bad("1 warp 1"), TraceError::BadLine { .. }));
        assert!(matches!(bad("-1 timer 1"), TraceError::BadLine { .. }));
        assert_eq!(
            bad("5 timer 1\n4 timer 2"),
            TraceError::TimeGoesBack {
                line: 3,
                at_ns: 4,
                previous_ns: 5
            }
        );
    }

    #[test]
    fn scaling_keeps_order_and_ends_on_target() {
        let t = Trace::parse("lull-trace 1\n0 timer 1\n10 timer 2\n40 timer 3\n").unwrap();
        let s = t.scaled_to(400).unwrap();
        let times: Vec<u64> = s.events.iter().map(|e| e.at_ns).collect();
        assert_eq!(times, [0, 100, 400]);
        assert!(matches!(
            Trace::default().scaled_to(5),
            Err(TraceError::CannotScale { .. })
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn reader_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = Trace::parse(&text);
            let _ = Trace::parse(&format!("{HEADER}\n{text}"));
        }

        #[test]
        fn reader_never_panics_on_near_valid_lines(
            lines in proptest::collection::vec(
                "[0-9]{1,21} (touch|key|mouse|net|timer|x) (down|up|move|-?[0-9]{1,12}) ?(-?[0-9]{0,12}) ?(-?[0-9]{0,12})",
                0..20)
        ) {
            let _ = Trace::parse(&format!("{HEADER}\n{}", lines.join("\n")));
        }
    }
}
