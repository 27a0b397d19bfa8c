//! The framework models' input path: the input driver, the hub of each baseline (polling every
//! 16 ms, vsync-batched, blocking), the ESM's interpreter and dispatcher kernel thread, the
//! window manager's changes, and guiS (its gate on each thread and its idle forcing with
//! companion-core triage).

use lull_esm::{Delivery, Push};
use lull_model::{ThreadCategory, WindowState};
use lull_sched::guis;

use super::{Op, Userland};
use crate::kernel::{Action, Cx, DeviceWork, Kernel, Userspace};
use crate::spec::is_discrete;
use lull_model::DeliveryModel;

impl Userland<'_> {
    /// The workload's `i`-th event reaches its device: an interrupt whose handler (and, for the
    /// push models, the ESM interpreter) runs on the interrupt core.
    pub fn inject(&mut self, i: u32, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        self.injected += 1;
        let fw = &self.spec.framework;
        let mut cy = k.irq_cost() + fw.input_driver_cycles;
        cy += match self.model {
            DeliveryModel::Pull16ms => 0,
            DeliveryModel::VsyncBatched | DeliveryModel::BlockingMiddleware => k.wakeup_cycles(),
            DeliveryModel::Esm | DeliveryModel::EsmKdsGuis => {
                fw.esm_interpreter_cycles + k.wakeup_cycles()
            }
        };
        k.device_irq(cy, DeviceWork::Input(i), self, cx);
    }

    /// The input driver has the event: queue it for the hub, or let the ESM interpret and push it.
    pub(super) fn deliver_input(&mut self, i: u32, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        let ev = self.events[i as usize];
        let discrete = is_discrete(&ev.raw);
        match self.model {
            DeliveryModel::Pull16ms => self.device_q.push_back((ev.at_ns, discrete)),
            DeliveryModel::VsyncBatched | DeliveryModel::BlockingMiddleware => {
                self.device_q.push_back((ev.at_ns, discrete));
                if let Some(h) = self.hub {
                    k.wake(h, &*self, cx);
                }
            }
            DeliveryModel::Esm | DeliveryModel::EsmKdsGuis => {
                let listeners = self.esm.listeners(lull_esm::interpret(ev.raw).0);
                let mut pushes = Vec::new();
                let accepted = self.esm.inject(ev.raw, ev.at_ns, |p| pushes.push(p));
                if accepted.is_none() {
                    // Nobody listens: on the companion core this is the triage that lets the
                    // device rest.
                    self.dropped += 1;
                    return;
                }
                // User input some app takes restarts guiS's idle hold-off.
                if lull_esm::interpret(ev.raw).0.is_input() {
                    self.last_input_ns = Some(ev.at_ns);
                }
                // Companion-core triage: an event some app listens to wakes the main cluster.
                if self.idle_forced && guis::triage_wakes_main(listeners) {
                    self.set_idle_forced(false, k);
                    k.switch_cluster(cx.soc.main_cluster, cx);
                }
                if !pushes.is_empty() {
                    self.esm_pushes.extend(pushes);
                    if let Some(d) = self.dispatcher {
                        k.wake(d, &*self, cx);
                    }
                }
            }
        }
    }

    /// The pull model's hub: every 16 ms, read whatever the device queue holds.
    pub(super) fn pull_hub(&mut self, t: usize, cx: &Cx<'_, '_>) -> Option<Action> {
        let fw = self.spec.framework;
        if self.threads[t].phase == 0 {
            self.threads[t].phase = 1;
            let n = self.device_q.len();
            self.push_ops(
                t,
                [
                    Op::Compute(fw.hub_poll_cycles + n as u64 * fw.hub_read_cycles),
                    Op::Effect(super::Effect::HubTook(n)),
                ],
            );
            None
        } else {
            self.threads[t].phase = 0;
            Some(Action::Sleep(cx.now() + fw.poll_interval_ns))
        }
    }

    /// The blocking baseline's hub: read and forward everything, then block.
    pub(super) fn block_hub(&mut self, t: usize) -> Option<Action> {
        if self.device_q.is_empty() {
            return Some(Action::Block);
        }
        let fw = self.spec.framework;
        let n = self.device_q.len();
        self.push_ops(
            t,
            [
                Op::Compute(n as u64 * (fw.hub_read_cycles + fw.forward_cycles)),
                Op::Effect(super::Effect::HubTook(n)),
                Op::Effect(super::Effect::Forward(n)),
            ],
        );
        None
    }

    /// The vsync-batched hub (Android's InputReader/InputDispatcher): presses and releases go out
    /// at once, moves wait for the next frame.
    pub(super) fn vsync_hub(&mut self, t: usize) -> Option<Action> {
        use super::Effect;
        let fw = self.spec.framework;
        if !self.device_q.is_empty() {
            let evs: Vec<(u64, bool)> = self.device_q.iter().copied().collect();
            let n = evs.len();
            let mut ops = vec![
                Op::Compute(n as u64 * fw.hub_read_cycles),
                Op::Effect(Effect::HubTook(n)),
            ];
            let mut any_move = false;
            for (_, discrete) in evs {
                if discrete {
                    ops.push(Op::Compute(fw.forward_cycles));
                    // Forwarding takes the oldest: flush batched moves before a press so order
                    // is kept.
                    let k = self.hub_moves + 1;
                    ops.push(Op::Effect(Effect::Forward(k)));
                    self.hub_moves = 0;
                } else {
                    self.hub_moves += 1;
                    any_move = true;
                }
            }
            if any_move && self.hub_moves > 0 {
                ops.push(Op::Effect(Effect::RequestVsync));
            }
            self.push_ops(t, ops);
            return None;
        }
        if std::mem::take(&mut self.threads[t].vsync_fired) && self.hub_moves > 0 {
            let k = self.hub_moves;
            self.hub_moves = 0;
            self.push_ops(
                t,
                [
                    Op::Compute(k as u64 * fw.forward_cycles),
                    Op::Effect(Effect::Forward(k)),
                ],
            );
            return None;
        }
        Some(Action::Block)
    }

    /// The hub has read `n` events from the device queue.
    pub(super) fn hub_took(&mut self, n: usize) {
        for _ in 0..n {
            if let Some(ev) = self.device_q.pop_front() {
                if self.window.in_foreground() {
                    self.hub_q.push_back(ev);
                } else {
                    // No window of this app has focus: the hub routes the event nowhere.
                    self.dropped += 1;
                }
            }
        }
    }

    /// The hub forwards its `n` oldest events to the app and wakes it.
    pub(super) fn forward(&mut self, n: usize, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        for _ in 0..n {
            if let Some((at, _)) = self.hub_q.pop_front() {
                self.app_q.push_back(at);
            }
        }
        if let Some(a) = self.app {
            // The hub knows which thread receives the input: it names it to the kernel's
            // interactive boost (seed 003's InputDeviceDispatcher passing the TID).
            k.name_interactive(a);
            k.wake(a, &*self, cx);
        }
    }

    /// The ESM dispatcher kernel thread: one push at a time to the app's event thread.
    pub(super) fn esm_dispatcher(
        &mut self,
        t: usize,
        k: &mut Kernel<'_>,
        cx: &mut Cx<'_, '_>,
    ) -> Option<Action> {
        let Some(p) = self.esm_pushes.pop_front() else {
            return Some(Action::Block);
        };
        self.push_ops(t, [Op::Compute(self.spec.framework.esm_dispatch_cycles)]);
        self.hand_to_app(p, k, cx);
        None
    }

    /// The dispatcher hands a push to the app's event thread, waking it from `EV_WAIT`.
    fn hand_to_app(&mut self, p: Push, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        let target = if self.model == DeliveryModel::EsmKdsGuis {
            self.event_thread
        } else {
            self.app
        };
        let Some(t) = target else { return };
        self.take_push(t, p);
        k.name_interactive(t);
        k.wake(t, &*self, cx);
    }

    pub(super) fn take_push(&mut self, t: usize, p: Push) {
        match p.delivery {
            Delivery::Event { event, .. } => {
                self.threads[t].deliveries.push_back(event.injected_ns);
            }
            // Overflow drops are counted by the ESM itself (`overflow_dropped`), read at the end.
            Delivery::Overflow { .. } => {}
        }
    }

    /// Whether an ESM event is pushed to thread `t` or on its way to the app.
    pub(super) fn event_pending(&self, t: usize) -> bool {
        !self.threads[t].deliveries.is_empty()
            || self.esm.queued_events(self.app_id).unwrap_or(0) > 0
            || !self.esm_pushes.is_empty()
    }

    /// The window manager changes the app's state (seed 000 figs. 26–28). With KDS the input
    /// handlers leave the ESM's application list in the background and come back in front, and
    /// guiS re-evaluates which threads may run.
    pub fn window_change(&mut self, i: u32, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        let w = self.spec.window[i as usize];
        let before = self.window;
        self.window = WindowState {
            stacking: w.stacking,
            screen: w.screen,
            ..before
        };
        if self.model != DeliveryModel::EsmKdsGuis {
            return;
        }
        let res = if self.window.in_foreground() {
            self.esm.restore_input(self.app_id)
        } else {
            self.esm.suspend_input(self.app_id)
        };
        res.expect("the app is attached");
        // Waiting threads that may no longer run leave their queues (the event thread is gated
        // by the ESM's EV_WAIT, not by the window); frozen ones that may run again are thawed.
        k.freeze_waiting(
            |t| self.threads[t].category != Some(ThreadCategory::Event) && self.gated_off(t),
            cx,
        );
        for t in 0..self.threads.len() {
            if k.is_frozen(t) && !self.gated_off(t) {
                k.wake(t, &*self, cx);
            }
        }
    }

    /// guiS idle forcing at the power manager's sampling period: when the app sleeps after the
    /// hold-off, interrupts and all work move to the companion core.
    pub fn maybe_force_idle(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        let Some(lp) = cx.soc.companion else {
            return;
        };
        if self.model != DeliveryModel::EsmKdsGuis
            || self.idle_forced
            || cx.soc.active_cluster != cx.soc.main_cluster
        {
            return;
        }
        let runnable = (0..self.threads.len())
            .filter(|&t| self.threads[t].category.is_some() && k.is_runnable(t))
            .count() as u32;
        let pending = self.event_thread.is_some_and(|e| self.event_pending(e));
        let act = guis::AppActivity {
            runnable_allowed: runnable,
            event_pending: pending,
            last_input_ns: self.last_input_ns,
            last_active_ns: self.last_gui_active_ns,
        };
        if guis::force_idle(&[act], cx.now(), guis::DEFAULT_IDLE_FORCE_HOLDOFF_NS) {
            self.set_idle_forced(true, k);
            k.switch_cluster(lp, cx);
        }
    }

    /// guiS's forced idle begins or ends; interrupts follow it.
    pub fn set_idle_forced(&mut self, forced: bool, k: &mut Kernel<'_>) {
        self.idle_forced = forced;
        k.route_irqs_to_companion(guis::irq_target(forced) == guis::IrqTarget::Companion);
    }
}

impl crate::pm::IdleForcing for Userland<'_> {
    fn set_idle_forced(&mut self, forced: bool, k: &mut Kernel<'_>) {
        Userland::set_idle_forced(self, forced, k);
    }

    fn maybe_force_idle(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        Userland::maybe_force_idle(self, k, cx);
    }
}
