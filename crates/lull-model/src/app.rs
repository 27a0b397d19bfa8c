//! What the user can see of an application.

use serde::{Deserialize, Serialize};

/// Whether the app is the one the user is working with.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stacking {
    Foreground,
    Background,
}

/// Whether the app's window is on screen or hidden under a system decoration.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    Visible,
    Covered,
}

/// Whether the display is lit.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Screen {
    On,
    Off,
}

/// An application's window state as the window manager sets it and guiS reads it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, Deserialize)]
pub struct WindowState {
    pub stacking: Stacking,
    pub visibility: Visibility,
    pub screen: Screen,
}

impl WindowState {
    /// A freshly attached app: in front, visible, screen lit.
    pub const FRONT: WindowState = WindowState {
        stacking: Stacking::Foreground,
        visibility: Visibility::Visible,
        screen: Screen::On,
    };

    /// The seed's `CAN_SEE()`: drawing could reach the user's eyes.
    #[must_use]
    pub fn can_see(self) -> bool {
        self.stacking == Stacking::Foreground
            && self.visibility == Visibility::Visible
            && self.screen == Screen::On
    }

    #[must_use]
    pub fn in_foreground(self) -> bool {
        self.stacking == Stacking::Foreground
    }
}

impl Default for WindowState {
    fn default() -> Self {
        WindowState::FRONT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn can_see_needs_all_three() {
        assert!(WindowState::FRONT.can_see());
        let covered = WindowState {
            visibility: Visibility::Covered,
            ..WindowState::FRONT
        };
        assert!(!covered.can_see() && covered.in_foreground());
        let dark = WindowState {
            screen: Screen::Off,
            ..WindowState::FRONT
        };
        assert!(!dark.can_see());
        let back = WindowState {
            stacking: Stacking::Background,
            ..WindowState::FRONT
        };
        assert!(!back.can_see() && !back.in_foreground());
    }
}
