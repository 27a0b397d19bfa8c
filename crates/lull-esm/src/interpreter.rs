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

/// The driver's event an app's event was made from: [`interpret`] undone, so that what an app
/// received can be written down and replayed (`lull input record`). `None` when the payload
/// does not belong to the kind (no interpreted event has that shape).
#[must_use]
pub fn uninterpret(kind: EventKind, payload: Payload) -> Option<RawEvent> {
    let touch = |phase| match payload {
        Payload::Point { x, y } => Some(RawEvent::Touch { phase, x, y }),
        _ => None,
    };
    match (kind, payload) {
        (EventKind::TouchPress, _) => touch(TouchPhase::Down),
        (EventKind::TouchMotion, _) => touch(TouchPhase::Move),
        (EventKind::TouchRelease, _) => touch(TouchPhase::Up),
        (EventKind::Key, Payload::Key { code, pressed }) => Some(RawEvent::Key { code, pressed }),
        (EventKind::Mouse, Payload::Mouse { dx, dy, buttons }) => {
            Some(RawEvent::Mouse { dx, dy, buttons })
        }
        (EventKind::NetMessage, Payload::Net { channel, len }) => {
            Some(RawEvent::Net { channel, len })
        }
        (EventKind::Timer, Payload::Timer { id }) => Some(RawEvent::Timer { id }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uninterpret_undoes_interpret_and_refuses_mismatched_payloads() {
        let raws = [
            RawEvent::Touch {
                phase: TouchPhase::Down,
                x: 1,
                y: -2,
            },
            RawEvent::Touch {
                phase: TouchPhase::Move,
                x: 3,
                y: 4,
            },
            RawEvent::Touch {
                phase: TouchPhase::Up,
                x: 5,
                y: 6,
            },
            RawEvent::Key {
                code: 30,
                pressed: true,
            },
            RawEvent::Key {
                code: 31,
                pressed: false,
            },
            RawEvent::Mouse {
                dx: -1,
                dy: 2,
                buttons: 4,
            },
            RawEvent::Net { channel: 2, len: 9 },
            RawEvent::Timer { id: 5 },
        ];
        for raw in raws {
            let (kind, payload) = interpret(raw);
            assert_eq!(uninterpret(kind, payload), Some(raw));
            // Every other kind refuses this payload, except the touch kinds among themselves.
            for other in EventKind::ALL.into_iter().filter(|&k| k != kind) {
                let both_touch = [kind, other].iter().all(|k| {
                    matches!(
                        k,
                        EventKind::TouchPress | EventKind::TouchMotion | EventKind::TouchRelease
                    )
                });
                assert_eq!(
                    uninterpret(other, payload).is_some(),
                    both_touch,
                    "{other} with {payload:?}"
                );
            }
        }
    }

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
