//! The stylus-tracking recording of seed 000 (figure 30), generated deterministically.
//!
//! The seed's user traced an Archimedean spiral by hand from its centre (A) to its end (Z) with
//! random stylus presses and releases, 1,614 motion, press and release events in all, and the
//! recording was replayed scaled into 10, 20 and 60 seconds. We cannot have their recording, so
//! we make one the same way: a hand's path along r = bθ with positional tremor, an uneven pace
//! sampled like a pointing device, and press/release pairs at random points of the path, where
//! the hand pauses briefly. Every number below is a property of a hand or a pointing device, not
//! a fit to the seed's results.

use lull_model::{RawEvent, TouchPhase};

use crate::rng::SplitMix64;
use crate::trace::{TimedEvent, Trace};

/// Events in the recording (seed 000, figure 30).
pub const SPIRAL_EVENTS: usize = 1614;
/// Press/release pairs; with the motions this makes `SPIRAL_EVENTS`. The seed's figure shows a
/// few dozen stars of each colour.
pub const SPIRAL_PRESS_PAIRS: usize = 40;
/// Generator seed; changing it changes the shipped trace file (a test compares the two).
pub const SPIRAL_SEED: u64 = 0x5EED_0000_F130;
/// Turns of the spiral from A to Z.
pub const SPIRAL_TURNS: f64 = 5.0;
/// Spiral centre and outer radius, in pixels of a 1920×1080 screen (the seed's 1080p display).
pub const SPIRAL_CENTRE_PX: (f64, f64) = (960.0, 540.0);
pub const SPIRAL_OUTER_RADIUS_PX: f64 = 480.0;
/// Pointer report interval of a USB mouse or stylus digitiser at 125 Hz (the USB HID default
/// polling interval of 8 ms), with ±25 % jitter for the hand's uneven pace.
pub const REPORT_INTERVAL_NS: u64 = 8_000_000;
/// Hand tremor amplitude, pixels (physiological tremor of a few tenths of a millimetre on a
/// ~0.25 mm pixel pitch).
pub const TREMOR_PX: f64 = 1.5;
/// Pause of the hand around a press, 60–180 ms (a deliberate click).
pub const CLICK_PAUSE_NS: (u64, u64) = (60_000_000, 180_000_000);

/// The point of the spiral A → Z (r = bθ, `SPIRAL_TURNS` turns out to `SPIRAL_OUTER_RADIUS_PX`
/// around `SPIRAL_CENTRE_PX`) a `fraction` (0 at A, 1 at Z) of its length along, screen px.
/// The arc length of r = bθ grows as θ², so θ ∝ √fraction.
#[must_use]
pub fn point_at(fraction: f64) -> (f64, f64) {
    let theta_end = SPIRAL_TURNS * std::f64::consts::TAU;
    let b = SPIRAL_OUTER_RADIUS_PX / theta_end;
    let theta = theta_end * fraction.sqrt();
    let r = b * theta;
    (
        SPIRAL_CENTRE_PX.0 + r * theta.cos(),
        SPIRAL_CENTRE_PX.1 + r * theta.sin(),
    )
}

/// The recording, with times as a hand would make them (about 14 s); scale it with
/// [`Trace::scaled_to`].
#[must_use]
pub fn stylus_spiral() -> Trace {
    let mut rng = SplitMix64::new(SPIRAL_SEED);
    let motions = SPIRAL_EVENTS - 2 * SPIRAL_PRESS_PAIRS;
    let segment = motions / SPIRAL_PRESS_PAIRS;
    // For each segment of the path: after which motion the press comes, and how many motions
    // later the release.
    let clicks: Vec<(usize, usize)> = (0..SPIRAL_PRESS_PAIRS)
        .map(|j| {
            let start = j * segment;
            let press_after = start + 2 + rng.below((segment / 2) as u64) as usize;
            let held = 1 + rng.below(6) as usize;
            (press_after, press_after + held)
        })
        .collect();

    let mut events = Vec::with_capacity(SPIRAL_EVENTS);
    let mut t_ns = 0u64;
    let mut point = (0, 0);
    let mut click = clicks.iter().peekable();
    let mut held_until: Option<usize> = None;
    for m in 0..motions {
        // Even arc length per report keeps the hand's speed steady along the widening spiral.
        let (on_x, on_y) = point_at(motion_progress(m, motions, rng.next_f64()));
        let x = on_x + (rng.next_f64() - 0.5) * 2.0 * TREMOR_PX;
        let y = on_y + (rng.next_f64() - 0.5) * 2.0 * TREMOR_PX;
        point = (x.round() as i32, y.round() as i32);
        t_ns += jittered(&mut rng, REPORT_INTERVAL_NS);
        events.push(TimedEvent {
            at_ns: t_ns,
            raw: touch(TouchPhase::Move, point),
        });
        if held_until == Some(m) {
            t_ns += jittered(&mut rng, REPORT_INTERVAL_NS);
            events.push(TimedEvent {
                at_ns: t_ns,
                raw: touch(TouchPhase::Up, point),
            });
            held_until = None;
        }
        if let Some(&&(press_after, release_after)) = click.peek() {
            if press_after == m {
                t_ns += pause(&mut rng);
                events.push(TimedEvent {
                    at_ns: t_ns,
                    raw: touch(TouchPhase::Down, point),
                });
                held_until = Some(release_after.min(motions - 1));
                click.next();
            }
        }
    }
    if held_until.is_some() {
        t_ns += jittered(&mut rng, REPORT_INTERVAL_NS);
        events.push(TimedEvent {
            at_ns: t_ns,
            raw: touch(TouchPhase::Up, point),
        });
    }
    Trace { events }
}

/// How far along the path motion `m` of `motions` is: its share, pushed on by up to half a share
/// for the hand's uneven pace (`unit` in [0, 1)).
fn motion_progress(m: usize, motions: usize, unit: f64) -> f64 {
    (m as f64 + unit * 0.5) / motions as f64
}

fn touch(phase: TouchPhase, (x, y): (i32, i32)) -> RawEvent {
    RawEvent::Touch { phase, x, y }
}

fn jittered(rng: &mut SplitMix64, mean_ns: u64) -> u64 {
    let f = 0.75 + rng.next_f64() * 0.5;
    (mean_ns as f64 * f) as u64
}

fn pause(rng: &mut SplitMix64) -> u64 {
    CLICK_PAUSE_NS.0 + rng.below(CLICK_PAUSE_NS.1 - CLICK_PAUSE_NS.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(t: &Trace, phase: TouchPhase) -> usize {
        t.events
            .iter()
            .filter(|e| matches!(e.raw, RawEvent::Touch { phase: p, .. } if p == phase))
            .count()
    }

    #[test]
    fn has_the_seeds_event_count_and_balanced_clicks() {
        let t = stylus_spiral();
        assert_eq!(t.events.len(), SPIRAL_EVENTS);
        assert_eq!(count(&t, TouchPhase::Down), SPIRAL_PRESS_PAIRS);
        assert_eq!(count(&t, TouchPhase::Up), SPIRAL_PRESS_PAIRS);
        // Presses and releases alternate, starting with a press.
        let mut down = false;
        for e in &t.events {
            if let RawEvent::Touch { phase, .. } = e.raw {
                match phase {
                    TouchPhase::Down => {
                        assert!(!down);
                        down = true;
                    }
                    TouchPhase::Up => {
                        assert!(down);
                        down = false;
                    }
                    TouchPhase::Move => {}
                }
            }
        }
        assert!(!down);
    }

    #[test]
    fn is_deterministic_and_time_ordered() {
        let (a, b) = (stylus_spiral(), stylus_spiral());
        assert_eq!(a, b);
        assert!(a.events.windows(2).all(|w| w[0].at_ns < w[1].at_ns));
        let span_s = a.span_ns() as f64 / 1e9;
        assert!((10.0..20.0).contains(&span_s), "a hand's pace: {span_s} s");
    }

    #[test]
    fn stays_on_a_1080p_screen() {
        for e in stylus_spiral().events {
            let RawEvent::Touch { x, y, .. } = e.raw else {
                panic!()
            };
            assert!((0..1920).contains(&x) && (0..1080).contains(&y));
        }
    }

    #[test]
    fn the_path_runs_from_the_centre_out_to_the_outer_radius() {
        let near = |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).hypot(a.1 - b.1) < 1e-6;
        assert!(near(point_at(0.0), SPIRAL_CENTRE_PX));
        // Whole turns end where they started: on the centre's right.
        let z = (
            SPIRAL_CENTRE_PX.0 + SPIRAL_OUTER_RADIUS_PX,
            SPIRAL_CENTRE_PX.1,
        );
        assert!(near(point_at(1.0), z));
    }

    #[test]
    fn every_motion_lies_on_the_path_within_tremor_and_rounding() {
        let motions = SPIRAL_EVENTS - 2 * SPIRAL_PRESS_PAIRS;
        // Per axis: the tremor, half a pixel of rounding, and the sampling step along the path's
        // stretch a motion may fall in (half a share: under 3 px of path, sampled 32 times).
        let tolerance = TREMOR_PX + 0.5 + 0.2;
        let moves = stylus_spiral()
            .events
            .into_iter()
            .filter_map(|e| match e.raw {
                RawEvent::Touch {
                    phase: TouchPhase::Move,
                    x,
                    y,
                } => Some((f64::from(x), f64::from(y))),
                _ => None,
            });
        let mut n = 0;
        for (m, (x, y)) in moves.enumerate() {
            let off = (0..=32)
                .map(|k| point_at(motion_progress(m, motions, f64::from(k) / 32.0)))
                .map(|(px, py)| (x - px).abs().max((y - py).abs()))
                .fold(f64::INFINITY, f64::min);
            assert!(
                off <= tolerance,
                "motion {m} at ({x}, {y}) is {off} px off the path"
            );
            n += 1;
        }
        assert_eq!(n, motions);
    }

    #[test]
    fn shipped_trace_is_the_generators_output() {
        let shipped = include_str!("../../../traces/stylus-spiral.trace");
        assert_eq!(Trace::parse(shipped).unwrap(), stylus_spiral());
    }
}
