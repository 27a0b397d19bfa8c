//! Events: what a device driver hands the ESM ([`RawEvent`]) and what an application's handler
//! receives ([`AppEvent`]).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The kinds of event an application can register a handler for.
///
/// The discriminants are stable: they travel on the wire and through the C ABI.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(u16)]
pub enum EventKind {
    /// A stylus or finger moved while in contact.
    TouchMotion = 0,
    /// A stylus or finger touched down.
    TouchPress = 1,
    /// A stylus or finger lifted.
    TouchRelease = 2,
    /// A key went down or up.
    Key = 3,
    /// A relative pointer moved or a mouse button changed.
    Mouse = 4,
    /// A message arrived from a network peer.
    NetMessage = 5,
    /// A timer the app armed expired.
    Timer = 6,
}

impl EventKind {
    /// How many kinds there are; the ESM's application list has one row per kind.
    pub const COUNT: usize = 7;

    pub const ALL: [EventKind; EventKind::COUNT] = [
        EventKind::TouchMotion,
        EventKind::TouchPress,
        EventKind::TouchRelease,
        EventKind::Key,
        EventKind::Mouse,
        EventKind::NetMessage,
        EventKind::Timer,
    ];

    /// Dense index, `0..COUNT`.
    #[must_use]
    pub fn index(self) -> usize {
        self as usize
    }

    /// The kind with wire number `n`, if there is one.
    #[must_use]
    pub fn from_u16(n: u16) -> Option<EventKind> {
        EventKind::ALL.get(usize::from(n)).copied()
    }

    /// User input: the kinds the display server deregisters while an app is in the background
    /// (seed 000, figure 26). Network messages and timers keep arriving.
    #[must_use]
    pub fn is_input(self) -> bool {
        matches!(
            self,
            EventKind::TouchMotion
                | EventKind::TouchPress
                | EventKind::TouchRelease
                | EventKind::Key
                | EventKind::Mouse
        )
    }

    /// The lower-case name used in specs, traces, JSON and on the command line.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            EventKind::TouchMotion => "touch_motion",
            EventKind::TouchPress => "touch_press",
            EventKind::TouchRelease => "touch_release",
            EventKind::Key => "key",
            EventKind::Mouse => "mouse",
            EventKind::NetMessage => "net_message",
            EventKind::Timer => "timer",
        }
    }

    /// The kind called `name` (see [`EventKind::name`]).
    #[must_use]
    pub fn from_name(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a touch contact is in its life.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TouchPhase {
    Down,
    Move,
    Up,
}

/// An event as a driver reports it, before the interpreter packages it for applications
/// (seed 000, figure 9: the driver's translation of an interrupt).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RawEvent {
    Touch { phase: TouchPhase, x: i32, y: i32 },
    Key { code: u16, pressed: bool },
    Mouse { dx: i32, dy: i32, buttons: u32 },
    Net { channel: u32, len: u32 },
    Timer { id: u32 },
}

/// For people (`lull input show`, error messages): `touch down at (100, 200)`, `key 30
/// pressed`, `mouse moved (+3, -1), buttons 0x1`, `5 bytes on network channel 2`, `timer 7 fired`.
impl fmt::Display for RawEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            RawEvent::Touch { phase, x, y } => {
                let phase = match phase {
                    TouchPhase::Down => "down",
                    TouchPhase::Move => "move",
                    TouchPhase::Up => "up",
                };
                write!(f, "touch {phase} at ({x}, {y})")
            }
            RawEvent::Key { code, pressed } => {
                let how = if pressed { "pressed" } else { "released" };
                write!(f, "key {code} {how}")
            }
            RawEvent::Mouse { dx, dy, buttons } => {
                write!(f, "mouse moved ({dx:+}, {dy:+}), buttons {buttons:#x}")
            }
            RawEvent::Net { channel, len } => write!(f, "{len} bytes on network channel {channel}"),
            RawEvent::Timer { id } => write!(f, "timer {id} fired"),
        }
    }
}

/// The data an application's handler gets with an event.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Payload {
    /// Absolute position of a touch contact, in screen pixels.
    Point {
        x: i32,
        y: i32,
    },
    Key {
        code: u16,
        pressed: bool,
    },
    Mouse {
        dx: i32,
        dy: i32,
        buttons: u32,
    },
    /// `len` bytes arrived on the app's network `channel`.
    Net {
        channel: u32,
        len: u32,
    },
    Timer {
        id: u32,
    },
}

/// Sequence number the ESM gives each raw event it accepts, in injection order.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default, Serialize, Deserialize,
)]
pub struct EventSeq(pub u64);

/// An event packaged for an application (the seed's "application readable event").
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct AppEvent {
    pub seq: EventSeq,
    pub kind: EventKind,
    pub payload: Payload,
    /// When the event entered the ESM; latency is measured from here to handler start.
    pub injected_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_events_read_as_words() {
        let cases = [
            (
                RawEvent::Touch {
                    phase: TouchPhase::Down,
                    x: 100,
                    y: -2,
                },
                "touch down at (100, -2)",
            ),
            (
                RawEvent::Touch {
                    phase: TouchPhase::Move,
                    x: 0,
                    y: 1,
                },
                "touch move at (0, 1)",
            ),
            (
                RawEvent::Touch {
                    phase: TouchPhase::Up,
                    x: 3,
                    y: 4,
                },
                "touch up at (3, 4)",
            ),
            (
                RawEvent::Key {
                    code: 30,
                    pressed: true,
                },
                "key 30 pressed",
            ),
            (
                RawEvent::Key {
                    code: 30,
                    pressed: false,
                },
                "key 30 released",
            ),
            (
                RawEvent::Mouse {
                    dx: 3,
                    dy: -1,
                    buttons: 1,
                },
                "mouse moved (+3, -1), buttons 0x1",
            ),
            (
                RawEvent::Net { channel: 2, len: 5 },
                "5 bytes on network channel 2",
            ),
            (RawEvent::Timer { id: 7 }, "timer 7 fired"),
        ];
        for (raw, text) in cases {
            assert_eq!(raw.to_string(), text);
        }
    }

    #[test]
    fn kinds_round_trip_by_number_and_name() {
        for (i, k) in EventKind::ALL.into_iter().enumerate() {
            assert_eq!(k.index(), i);
            assert_eq!(EventKind::from_u16(k as u16), Some(k));
            assert_eq!(EventKind::from_name(k.name()), Some(k));
            assert_eq!(k.to_string(), k.name());
        }
        assert_eq!(EventKind::from_u16(EventKind::COUNT as u16), None);
        assert_eq!(EventKind::from_name("TouchMotion"), None);
    }

    #[test]
    fn only_user_input_is_input() {
        assert!(EventKind::Key.is_input());
        assert!(!EventKind::NetMessage.is_input());
        assert!(!EventKind::Timer.is_input());
    }
}
