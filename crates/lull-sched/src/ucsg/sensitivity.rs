//! Seed 001 §3.1: the three sensitivity states, who is in which, and the transitions of figure 3.
//!
//! A thread's sensitivity follows from who owns it and what the user is doing, so every thread of
//! an app is always in the same state (§3.1.2: "all threads belonging to an application should be
//! in the same state"):
//!
//! | owner | display off | front app, touched < 500 ms ago | front app | behind |
//! | --- | --- | --- | --- | --- |
//! | app | low | high | medium | low |
//! | system | medium | medium | medium | medium |
//!
//! Inheritance at fork is inheritance of the owner: a thread forked by an app's thread belongs to
//! the app and so is in its state; a new app's first thread (forked by the system's Zygote,
//! medium) takes its app's state at once.

/// Seed 001 §3.1.2 footnote 6: a thread stays highly sensitive this long after the latest touch
/// (following Tolia et al.'s measurements of how soon users expect a response).
pub const HIGH_HOLD_NS: u64 = 500_000_000;

/// A sensitivity state (seed 001 §3.1.2).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Sensitivity {
    /// Background apps, and every app while the display is off.
    Low,
    /// The front app, and system threads.
    Medium,
    /// The front app while the user interacts with it.
    High,
}

impl Sensitivity {
    /// The value a core's total sensitivity sums (§3.2.2 footnote 8: high 3, medium 2, low 1).
    #[must_use]
    pub fn value(self) -> u32 {
        match self {
            Sensitivity::Low => 1,
            Sensitivity::Medium => 2,
            Sensitivity::High => 3,
        }
    }

    /// The nice value thread prioritization gives it (§3.2.2 footnote 7: −20, −10 and 10).
    #[must_use]
    pub fn nice(self) -> i8 {
        match self {
            Sensitivity::Low => 10,
            Sensitivity::Medium => -10,
            Sensitivity::High => -20,
        }
    }

    /// The name reports use.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Sensitivity::Low => "low",
            Sensitivity::Medium => "medium",
            Sensitivity::High => "high",
        }
    }
}

/// Who a thread belongs to.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Owner {
    /// A thread of no user app (§3.1.2: medium, and never changes).
    System,
    /// A thread of the app with this key (the substrate's numbering).
    App(u32),
}

/// What the user is doing: the front app, the display, the latest touch.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct UserState {
    /// The app in front (§3.1.2: "there is always a foreground application" once one started).
    pub foreground: Option<u32>,
    pub display_on: bool,
    /// Until when the front app is highly sensitive (the latest touch + [`HIGH_HOLD_NS`]).
    pub high_until_ns: Option<u64>,
    hold_ns: u64,
}

impl UserState {
    /// No app in front yet, display on, no touch; the high state lasts `hold_ns` after a touch.
    #[must_use]
    pub fn new(hold_ns: u64) -> UserState {
        UserState {
            foreground: None,
            display_on: true,
            high_until_ns: None,
            hold_ns,
        }
    }

    /// The state of a thread owned by `owner` (figure 3).
    #[must_use]
    pub fn sensitivity(&self, owner: Owner) -> Sensitivity {
        match owner {
            Owner::System => Sensitivity::Medium,
            Owner::App(_) if !self.display_on => Sensitivity::Low,
            Owner::App(a) if Some(a) == self.foreground => {
                if self.high_until_ns.is_some() {
                    Sensitivity::High
                } else {
                    Sensitivity::Medium
                }
            }
            Owner::App(_) => Sensitivity::Low,
        }
    }

    /// Medium → high: the user touched the screen or a button at `now_ns`; the 500 ms timer
    /// restarts. A touch with the display off changes nothing until the display is on.
    pub fn touch(&mut self, now_ns: u64) {
        self.high_until_ns = Some(now_ns.saturating_add(self.hold_ns));
    }

    /// Low → medium for `app`, medium/high → low for the app that was in front.
    pub fn foreground(&mut self, app: u32) {
        if self.foreground != Some(app) {
            self.foreground = Some(app);
            // The interaction was with the app that left the front.
            self.high_until_ns = None;
        }
    }

    /// The display toggle: off forces every app thread low; on restores the states before.
    pub fn display(&mut self, on: bool) {
        self.display_on = on;
    }

    /// High → medium once no touch came for the hold time. Whether anything changed.
    pub fn expire(&mut self, now_ns: u64) -> bool {
        match self.high_until_ns {
            Some(t) if now_ns >= t => {
                self.high_until_ns = None;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn figure_3_transitions() {
        let mut u = UserState::new(HIGH_HOLD_NS);
        let (a, b) = (Owner::App(1), Owner::App(2));
        // Started in front: medium (inherited from Zygote's medium); the other app is behind.
        u.foreground(1);
        assert_eq!(u.sensitivity(a), Sensitivity::Medium);
        assert_eq!(u.sensitivity(b), Sensitivity::Low);
        // Medium → high on a touch, for 500 ms after the latest touch.
        u.touch(100 * MS);
        assert_eq!(u.sensitivity(a), Sensitivity::High);
        assert_eq!(u.sensitivity(b), Sensitivity::Low);
        u.touch(400 * MS);
        assert!(!u.expire(899 * MS));
        assert_eq!(u.sensitivity(a), Sensitivity::High);
        // High → medium 500 ms after the latest touch.
        assert!(u.expire(900 * MS));
        assert_eq!(u.sensitivity(a), Sensitivity::Medium);
        assert!(!u.expire(901 * MS));
        // Medium → low and low → medium when the front app changes.
        u.foreground(2);
        assert_eq!(u.sensitivity(a), Sensitivity::Low);
        assert_eq!(u.sensitivity(b), Sensitivity::Medium);
        // A touch in progress does not follow the user to another app.
        u.touch(1000 * MS);
        u.foreground(1);
        assert_eq!(u.sensitivity(a), Sensitivity::Medium);
    }

    #[test]
    fn display_off_forces_low_and_on_restores() {
        let mut u = UserState::new(HIGH_HOLD_NS);
        u.foreground(1);
        u.display(false);
        assert_eq!(u.sensitivity(Owner::App(1)), Sensitivity::Low);
        assert_eq!(u.sensitivity(Owner::App(2)), Sensitivity::Low);
        // System threads never change.
        assert_eq!(u.sensitivity(Owner::System), Sensitivity::Medium);
        u.display(true);
        assert_eq!(u.sensitivity(Owner::App(1)), Sensitivity::Medium);
        assert_eq!(u.sensitivity(Owner::App(2)), Sensitivity::Low);
    }

    #[test]
    fn values_and_nice_levels_follow_the_footnotes() {
        let all = [Sensitivity::Low, Sensitivity::Medium, Sensitivity::High];
        assert_eq!(all.map(Sensitivity::value), [1, 2, 3]);
        assert_eq!(all.map(Sensitivity::nice), [10, -10, -20]);
        assert_eq!(all.map(Sensitivity::name), ["low", "medium", "high"]);
    }
}
