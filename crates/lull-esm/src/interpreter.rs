//! The event interpreter's translation step (seed 000, figure 10).

use lull_model::{EventKind, Payload, RawEvent, TouchPhase};

/// Repackages a driver's event into the kind applications register for and the payload their
/// handler receives. Finding the listeners is [`Esm::inject`](crate::Esm::inject)'s job.
#[must_use]
#[inline]
pub fn interpret(raw: RawEvent) -> (EventKind, Payload) {
    match raw {
        RawEvent::Touch { phase, x, y } => {
            let kind = match phase {
                TouchPhase::Down => EventKind::TouchPress,
                TouchPhase::Move => EventKind::TouchMotion,
                TouchPhase::Up => EventKind::TouchRelease,
            };
            (kind, Payload::Point { x, y })
        }
        RawEvent::Key { code, pressed } => (EventKind::Key, Payload::Key { code, pressed }),
        RawEvent::Mouse { dx, dy, buttons } => {
            (EventKind::Mouse, Payload::Mouse { dx, dy, buttons })
        }
        RawEvent::Net { channel, len } => (EventKind::NetMessage, Payload::Net { channel, len }),
        RawEvent::Timer { id } => (EventKind::Timer, Payload::Timer { id }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touch_phases_map_to_three_kinds() {
        let at = |phase| interpret(RawEvent::Touch { phase, x: 3, y: 4 });
        assert_eq!(
            at(TouchPhase::Down),
            (EventKind::TouchPress, Payload::Point { x: 3, y: 4 })
        );
        assert_eq!(at(TouchPhase::Move).0, EventKind::TouchMotion);
        assert_eq!(at(TouchPhase::Up).0, EventKind::TouchRelease);
    }

    #[test]
    fn other_sources_keep_their_data() {
        assert_eq!(
            interpret(RawEvent::Net { channel: 2, len: 9 }),
            (EventKind::NetMessage, Payload::Net { channel: 2, len: 9 })
        );
        assert_eq!(interpret(RawEvent::Timer { id: 5 }).0, EventKind::Timer);
        assert_eq!(
            interpret(RawEvent::Key {
                code: 30,
                pressed: true
            })
            .1,
            Payload::Key {
                code: 30,
                pressed: true
            }
        );
    }
}
