//! The daemon's side of guiS's idle forcing ([`crate::guis`]): the rule evaluated after every
//! wait, window-state change, thread declaration and detach, and the idle action on its rising
//! edge.

use lull_kds::wire::Request;
use lull_model::{AppId, Screen};
use lull_os::event_loop::LoopCtl;

use super::DaemonState;
use crate::guis::{idle_level, GuisReport, IdleAction};

impl DaemonState {
    /// An app left the daemon; `ctl` is `None` at shutdown (no idle action then).
    pub(crate) fn guis_app_gone(&mut self, ctl: Option<&mut LoopCtl<DaemonState>>) {
        if let Some(ctl) = ctl {
            self.guis_evaluate_idle(ctl);
        }
    }

    /// guiS's report, with the actuator's counters.
    pub(crate) fn guis_report(&self) -> Option<GuisReport> {
        let freezer = self
            .seam
            .as_ref()
            .map(|s| s.actuator.counters())
            .unwrap_or_default();
        self.guis.as_ref().map(|g| g.report(freezer))
    }

    /// `app` sent `Wait`: it was running until now, and may be waiting now.
    pub(crate) fn guis_after_wait(&mut self, app: AppId, ctl: &mut LoopCtl<DaemonState>) {
        let Some(g) = self.guis.as_mut() else {
            return;
        };
        if self
            .kds
            .as_ref()
            .and_then(|k| k.server().pid(app))
            .is_none()
        {
            return;
        }
        g.edge.update(false);
        self.guis_evaluate_idle(ctl);
    }

    /// Idle forcing: evaluates the rule and runs the idle action on its rising edge.
    pub(crate) fn guis_evaluate_idle(&mut self, ctl: &mut LoopCtl<DaemonState>) {
        let (Some(_), Some(k)) = (self.guis.as_ref(), self.kds.as_ref()) else {
            return;
        };
        let idle = idle_level(|a| self.app_waiting(a), k.server());
        let (Some(g), Some(k)) = (self.guis.as_mut(), self.kds.as_ref()) else {
            return;
        };
        if g.acting {
            return;
        }
        if !g.children.is_empty() {
            g.reap_children();
        }
        g.counters.idle_evaluations += 1;
        if !g.edge.update(idle) {
            return;
        }
        g.counters.idle_forced += 1;
        let apps = k.server().wm().windows().len();
        match g.status.idle_action.clone() {
            IdleAction::None => {}
            IdleAction::ScreenOff => {
                g.counters.idle_screen_off += 1;
                g.acting = true;
                self.kds_wm_request(
                    &Request::WmScreen {
                        screen: Screen::Off,
                    },
                    ctl,
                );
                if let Some(g) = self.guis.as_mut() {
                    g.acting = false;
                }
            }
            IdleAction::Exec(cmd) => g.spawn_idle_command(&cmd, apps),
        }
    }
}
