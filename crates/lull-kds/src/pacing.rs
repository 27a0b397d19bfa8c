//! Frame pacing by the display (`FRAME` / `FRAME_DONE`, `docs/kds-protocol.md`): an app draws at
//! most one frame per refresh period of the screen, and only when something changed.
//!
//! The screen's refresh boundaries are the multiples of its period on `CLOCK_MONOTONIC`, so the
//! server and every app agree on them without exchanging a message. An app whose last frame was
//! drawn before the latest boundary draws at once ([`FramePacer::may_draw`]); one that already
//! drew in the current period asks the server with `FRAME` and draws when `FRAME_DONE` arrives
//! at the next boundary. The server answers from a one-shot timer armed only while a visible app
//! waits ([`next_boundary_ns`]), so a screen where nothing changes costs no wake-up.
//!
//! Pure: the caller passes the time in.

/// Refresh period of the headless screen: 60 Hz, the display the seed's chapter 6 apps draw
/// on (seed 000 counts frames "on a 60 Hz display"); 1 s / 60, rounded to the nanosecond.
pub const DEFAULT_REFRESH_PERIOD_NS: u32 = 16_666_667;
/// Shortest refresh period a server may be configured with: 1 kHz, beyond any real panel; it
/// keeps a mistyped period from turning the frame timer into a busy loop.
pub const MIN_REFRESH_PERIOD_NS: u32 = 1_000_000;

/// The refresh period `t_ns` falls in (its index since the clock's origin).
#[must_use]
pub fn period_index(t_ns: u64, period_ns: u32) -> u64 {
    t_ns / u64::from(period_ns.max(1))
}

/// The first refresh boundary strictly after `now_ns`: when a `FRAME` sent at `now_ns` is
/// answered.
#[must_use]
pub fn next_boundary_ns(now_ns: u64, period_ns: u32) -> u64 {
    let p = u64::from(period_ns.max(1));
    (period_index(now_ns, period_ns) + 1).saturating_mul(p)
}

/// The latest refresh boundary at or before `now_ns` (what `FRAME_DONE` carries).
#[must_use]
pub fn boundary_at_or_before_ns(now_ns: u64, period_ns: u32) -> u64 {
    period_index(now_ns, period_ns) * u64::from(period_ns.max(1))
}

/// An app's side of the pacing rule: at most one frame per refresh period.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FramePacer {
    period_ns: u32,
    /// The refresh period the last frame was drawn in; `None` before the first.
    last_index: Option<u64>,
}

impl FramePacer {
    #[must_use]
    pub fn new(period_ns: u32) -> FramePacer {
        FramePacer {
            period_ns: period_ns.max(1),
            last_index: None,
        }
    }

    #[must_use]
    pub fn period_ns(&self) -> u32 {
        self.period_ns
    }

    /// Whether a frame may be drawn at `now_ns` without asking: no frame yet in this period.
    #[must_use]
    pub fn may_draw(&self, now_ns: u64) -> bool {
        self.last_index
            .is_none_or(|last| period_index(now_ns, self.period_ns) > last)
    }

    /// Records a frame drawn at `now_ns` (the period it starts in is used).
    pub fn drew(&mut self, now_ns: u64) {
        self.last_index = Some(period_index(now_ns, self.period_ns));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u32 = DEFAULT_REFRESH_PERIOD_NS;

    #[test]
    fn boundaries_are_multiples_of_the_period() {
        assert_eq!(next_boundary_ns(0, P), u64::from(P));
        assert_eq!(next_boundary_ns(u64::from(P) - 1, P), u64::from(P));
        // Exactly on a boundary: the next one, so a FRAME is never answered at once.
        assert_eq!(next_boundary_ns(u64::from(P), P), 2 * u64::from(P));
        assert_eq!(
            boundary_at_or_before_ns(2 * u64::from(P) + 5, P),
            2 * u64::from(P)
        );
        assert_eq!(next_boundary_ns(u64::MAX, P), u64::MAX, "saturates");
    }

    #[test]
    fn one_frame_per_period_and_the_first_at_once() {
        let mut f = FramePacer::new(P);
        let t0 = 10 * u64::from(P) + 3;
        assert!(
            f.may_draw(t0),
            "the first change after a quiet spell draws at once"
        );
        f.drew(t0);
        assert!(!f.may_draw(t0 + 1));
        assert!(!f.may_draw(11 * u64::from(P) - 1), "same period");
        assert!(f.may_draw(11 * u64::from(P)), "from the next boundary");
        f.drew(11 * u64::from(P));
        assert!(f.may_draw(50 * u64::from(P)), "after a quiet spell");
    }

    #[test]
    fn a_zero_period_does_not_divide_by_zero() {
        let f = FramePacer::new(0);
        assert_eq!(f.period_ns(), 1);
        assert_eq!(next_boundary_ns(5, 0), 6);
    }

    #[test]
    fn the_period_is_the_one_given() {
        assert_eq!(FramePacer::new(P).period_ns(), P);
        assert_eq!(FramePacer::new(2).period_ns(), 2);
    }
}
