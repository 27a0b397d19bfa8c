//! The window manager: where each app's window is, which app is in front, what is covered, and
//! whether the screen is lit. Every change returns the [`WmEffect`]s it has — input handlers to
//! suspend or restore in the ESM (seed 000, figures 26–27) and new window states to push to the
//! app (and to guiS) — so the caller applies them in one place.

use lull_model::{AppId, Screen, Stacking, Visibility, WindowState};
use serde::Serialize;

use crate::geometry::Rect;

/// One consequence of a window-manager operation.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
pub enum WmEffect {
    /// The app went to the background: set its input handlers aside (`Esm::suspend_input`).
    SuspendInput(AppId),
    /// The app came to the foreground: put them back (`Esm::restore_input`).
    RestoreInput(AppId),
    /// The app's window state changed to this; tell the app and guiS.
    State(AppId, WindowState),
}

/// Why a window-manager operation was refused.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error, Serialize)]
pub enum WmError {
    #[error("{0} has no window")]
    NoWindow(AppId),
    #[error("{0} already has a window")]
    AlreadyOpen(AppId),
    #[error("a {width}x{height} window does not fit the {screen_width}x{screen_height} screen")]
    TooLarge {
        width: u32,
        height: u32,
        screen_width: u32,
        screen_height: u32,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
pub struct Window {
    pub app: AppId,
    /// Position and size on the screen.
    pub rect: Rect,
    pub stacking: Stacking,
    pub visibility: Visibility,
}

/// The windows of all attached apps, bottom to top, and the screen.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct WindowManager {
    screen_width: u32,
    screen_height: u32,
    screen: Screen,
    /// Bottom to top.
    stack: Vec<Window>,
}

impl WindowManager {
    #[must_use]
    pub fn new(screen_width: u32, screen_height: u32) -> WindowManager {
        WindowManager {
            screen_width,
            screen_height,
            screen: Screen::On,
            stack: Vec::new(),
        }
    }

    #[must_use]
    pub fn screen(&self) -> Screen {
        self.screen
    }

    /// Windows from bottom to top.
    #[must_use]
    pub fn windows(&self) -> &[Window] {
        &self.stack
    }

    /// The app's window.
    ///
    /// # Errors
    /// [`WmError::NoWindow`].
    pub fn window(&self, app: AppId) -> Result<Window, WmError> {
        self.stack
            .iter()
            .copied()
            .find(|w| w.app == app)
            .ok_or(WmError::NoWindow(app))
    }

    /// The app's window state.
    ///
    /// # Errors
    /// [`WmError::NoWindow`].
    pub fn state(&self, app: AppId) -> Result<WindowState, WmError> {
        let w = self.window(app)?;
        Ok(WindowState {
            stacking: w.stacking,
            visibility: w.visibility,
            screen: self.screen,
        })
    }

    /// The app in front, if any.
    #[must_use]
    pub fn foreground_app(&self) -> Option<AppId> {
        self.stack
            .iter()
            .rev()
            .find(|w| w.stacking == Stacking::Foreground)
            .map(|w| w.app)
    }

    /// Opens a window for `app`: the whole screen for 0 × 0, else centred. It comes to the front,
    /// and the app that was in front goes to the background.
    ///
    /// # Errors
    /// [`WmError::AlreadyOpen`], [`WmError::TooLarge`].
    pub fn open(
        &mut self,
        app: AppId,
        width: u32,
        height: u32,
    ) -> Result<(Rect, Vec<WmEffect>), WmError> {
        if self.window(app).is_ok() {
            return Err(WmError::AlreadyOpen(app));
        }
        let (w, h) = if width == 0 && height == 0 {
            (self.screen_width, self.screen_height)
        } else {
            (width, height)
        };
        if w > self.screen_width || h > self.screen_height || w == 0 || h == 0 {
            return Err(WmError::TooLarge {
                width,
                height,
                screen_width: self.screen_width,
                screen_height: self.screen_height,
            });
        }
        // Both fit the screen, so the centred origin is within 0..=i32::MAX.
        let x = i32::try_from((self.screen_width - w) / 2).unwrap_or(0);
        let y = i32::try_from((self.screen_height - h) / 2).unwrap_or(0);
        let rect = Rect::new(x, y, w, h);
        let mut effects = self.demote_foreground();
        self.stack.push(Window {
            app,
            rect,
            stacking: Stacking::Foreground,
            visibility: Visibility::Visible,
        });
        effects.push(WmEffect::State(app, self.state(app)?));
        Ok((rect, effects))
    }

    /// Removes `app`'s window. No other app is brought forward: that is the caller's choice.
    ///
    /// # Errors
    /// [`WmError::NoWindow`].
    pub fn close(&mut self, app: AppId) -> Result<Window, WmError> {
        let i = self.index(app)?;
        Ok(self.stack.remove(i))
    }

    /// Brings `app` to the front and makes it visible (figure 27); the app in front before goes to
    /// the background (figure 26).
    ///
    /// # Errors
    /// [`WmError::NoWindow`].
    pub fn foreground(&mut self, app: AppId) -> Result<Vec<WmEffect>, WmError> {
        let i = self.index(app)?;
        let before = self.state(app)?;
        let mut effects = if self.foreground_app() == Some(app) {
            Vec::new()
        } else {
            self.demote_foreground()
        };
        let mut w = self.stack.remove(i);
        w.stacking = Stacking::Foreground;
        w.visibility = Visibility::Visible;
        self.stack.push(w);
        if before.stacking == Stacking::Background {
            effects.push(WmEffect::RestoreInput(app));
        }
        self.push_state_if_changed(app, before, &mut effects)?;
        Ok(effects)
    }

    /// Sends `app` to the bottom of the stack and the background (figure 26).
    ///
    /// # Errors
    /// [`WmError::NoWindow`].
    pub fn background(&mut self, app: AppId) -> Result<Vec<WmEffect>, WmError> {
        let i = self.index(app)?;
        let before = self.state(app)?;
        let mut w = self.stack.remove(i);
        w.stacking = Stacking::Background;
        self.stack.insert(0, w);
        let mut effects = Vec::new();
        if before.stacking == Stacking::Foreground {
            effects.push(WmEffect::SuspendInput(app));
        }
        self.push_state_if_changed(app, before, &mut effects)?;
        Ok(effects)
    }

    /// Covers (`true`) or uncovers `app`'s window with a system decoration: it stays in the
    /// foreground, but nothing it draws can be seen.
    ///
    /// # Errors
    /// [`WmError::NoWindow`].
    pub fn cover(&mut self, app: AppId, covered: bool) -> Result<Vec<WmEffect>, WmError> {
        let i = self.index(app)?;
        let before = self.state(app)?;
        self.stack[i].visibility = if covered {
            Visibility::Covered
        } else {
            Visibility::Visible
        };
        let mut effects = Vec::new();
        self.push_state_if_changed(app, before, &mut effects)?;
        Ok(effects)
    }

    /// Lights or darkens the screen; every window's state changes.
    pub fn set_screen(&mut self, screen: Screen) -> Vec<WmEffect> {
        if self.screen == screen {
            return Vec::new();
        }
        self.screen = screen;
        self.stack
            .iter()
            .map(|w| {
                WmEffect::State(
                    w.app,
                    WindowState {
                        stacking: w.stacking,
                        visibility: w.visibility,
                        screen,
                    },
                )
            })
            .collect()
    }

    fn index(&self, app: AppId) -> Result<usize, WmError> {
        self.stack
            .iter()
            .position(|w| w.app == app)
            .ok_or(WmError::NoWindow(app))
    }

    fn demote_foreground(&mut self) -> Vec<WmEffect> {
        let mut effects = Vec::new();
        for w in &mut self.stack {
            if w.stacking == Stacking::Foreground {
                w.stacking = Stacking::Background;
                effects.push(WmEffect::SuspendInput(w.app));
                effects.push(WmEffect::State(
                    w.app,
                    WindowState {
                        stacking: w.stacking,
                        visibility: w.visibility,
                        screen: self.screen,
                    },
                ));
            }
        }
        effects
    }

    fn push_state_if_changed(
        &self,
        app: AppId,
        before: WindowState,
        effects: &mut Vec<WmEffect>,
    ) -> Result<(), WmError> {
        let after = self.state(app)?;
        if after != before {
            effects.push(WmEffect::State(app, after));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(i: u32) -> AppId {
        AppId::first_in_slot(i)
    }

    #[test]
    fn opening_centres_and_demotes_the_previous_front() {
        let mut wm = WindowManager::new(100, 60);
        let (r, e) = wm.open(app(1), 0, 0).unwrap();
        assert_eq!(r, Rect::new(0, 0, 100, 60));
        assert_eq!(e, [WmEffect::State(app(1), WindowState::FRONT)]);
        let (r, e) = wm.open(app(2), 20, 10).unwrap();
        assert_eq!(r, Rect::new(40, 25, 20, 10));
        assert!(e.contains(&WmEffect::SuspendInput(app(1))));
        assert_eq!(wm.foreground_app(), Some(app(2)));
        assert_eq!(wm.state(app(1)).unwrap().stacking, Stacking::Background);
        assert!(matches!(
            wm.open(app(2), 1, 1),
            Err(WmError::AlreadyOpen(_))
        ));
        assert!(matches!(
            wm.open(app(3), 101, 1),
            Err(WmError::TooLarge { .. })
        ));
    }

    #[test]
    fn background_foreground_round_trip_suspends_then_restores() {
        let mut wm = WindowManager::new(10, 10);
        wm.open(app(1), 0, 0).unwrap();
        let e = wm.background(app(1)).unwrap();
        assert_eq!(e[0], WmEffect::SuspendInput(app(1)));
        assert!(wm.background(app(1)).unwrap().is_empty(), "idempotent");
        let e = wm.foreground(app(1)).unwrap();
        assert_eq!(
            e,
            [
                WmEffect::RestoreInput(app(1)),
                WmEffect::State(app(1), WindowState::FRONT)
            ]
        );
        assert!(wm.foreground(app(1)).unwrap().is_empty());
    }

    #[test]
    fn covering_and_screen_off_hide_without_touching_input() {
        let mut wm = WindowManager::new(10, 10);
        wm.open(app(1), 0, 0).unwrap();
        let e = wm.cover(app(1), true).unwrap();
        assert_eq!(e.len(), 1);
        let s = wm.state(app(1)).unwrap();
        assert!(s.in_foreground() && !s.can_see());
        wm.cover(app(1), false).unwrap();
        let e = wm.set_screen(Screen::Off);
        assert!(matches!(
            e[..],
            [WmEffect::State(
                _,
                WindowState {
                    screen: Screen::Off,
                    ..
                }
            )]
        ));
        assert!(!wm.state(app(1)).unwrap().can_see());
        assert!(wm.set_screen(Screen::Off).is_empty());
    }

    #[test]
    fn unknown_apps_are_refused() {
        let mut wm = WindowManager::new(10, 10);
        assert_eq!(wm.foreground(app(9)), Err(WmError::NoWindow(app(9))));
        assert_eq!(wm.close(app(9)), Err(WmError::NoWindow(app(9))));
    }
}
