//! The display: vsync, frame pacing (at most one frame per refresh period, the next one allowed
//! by a one-shot frame callback at vsync), the compositor of the baselines, and frames becoming
//! ready (drawn or decoded).

use lull_model::time::NS_PER_S;

use super::{Op, Userland};
use crate::event::Ev;
use crate::kernel::{Action, Cx, DeviceWork, Kernel};
use lull_model::DeliveryModel;

/// What a drawing thread does about the frame ([`Userland::frame_due`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum FrameDue {
    /// Nothing changed: no frame is owed.
    No,
    /// A frame is owed but one already went out in this refresh period: the display's frame
    /// callback is armed and wakes the thread at the next vsync; meanwhile it waits as usual
    /// (events still reach it at once).
    Paced,
    /// Draw now (the owed frame is taken).
    Draw,
}

impl Userland<'_> {
    fn refresh_hz(&self) -> u64 {
        u64::from(self.spec.header.platform.display.refresh_hz)
    }

    fn refresh_index(&self, now: u64) -> u64 {
        now * self.refresh_hz() / NS_PER_S
    }

    /// The next vsync after `now`.
    pub(super) fn next_vsync_ns(&self, now: u64) -> u64 {
        let hz = self.refresh_hz();
        let k = now * hz / NS_PER_S + 1;
        (k * NS_PER_S).div_ceil(hz)
    }

    /// Whether a frame already went out in the refresh period of `now`: frame pacing allows at
    /// most one per period (the live KDS's frame callbacks, as Wayland's `wl_surface.frame`).
    fn posted_this_refresh(&self, now: u64) -> bool {
        self.last_post_refresh == Some(self.refresh_index(now))
    }

    /// Whether drawing thread `t` owes a frame (input dirtied it or a video frame is ready), and
    /// if so whether it may draw now (which takes the owed frame) or is paced to the next vsync,
    /// whose frame callback the display arms for it now.
    pub(super) fn frame_due(&mut self, t: usize, cx: &mut Cx<'_, '_>) -> FrameDue {
        if !(self.dirty || self.frame_ready) {
            return FrameDue::No;
        }
        if self.posted_this_refresh(cx.now()) {
            self.request_vsync(t, cx);
            return FrameDue::Paced;
        }
        self.dirty = false;
        self.frame_ready = false;
        self.threads[t].vsync_fired = false;
        FrameDue::Draw
    }

    /// Something visible changed for drawing thread `t`. The first change after a quiet spell
    /// wakes it at once; while a frame already went out in this refresh period, the display arms
    /// its one-shot frame callback instead (once) and `t` sleeps on until the next vsync. No
    /// callback is armed while nothing changes, so an idle display wakes nobody.
    pub(super) fn change_pending(&mut self, t: usize, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        if self.vsync_waiters.contains(&t) {
            return;
        }
        if self.posted_this_refresh(cx.now()) {
            self.request_vsync(t, cx);
        } else {
            k.wake(t, &*self, cx);
        }
    }

    /// A frame goes out now (KDS composes it in the drawing thread, with no extra hop).
    pub(super) fn mark_posted(&mut self, now: u64) {
        self.last_post_refresh = Some(self.refresh_index(now));
        self.frames_drawn += 1;
        for at in self.in_frame.drain(..) {
            self.frame_latencies_ns.push(now.saturating_sub(at));
        }
    }

    /// A frame's drawing starts: it shows every event handled so far.
    pub(super) fn draw_start(&mut self) {
        self.in_frame.append(&mut self.handled_undrawn);
    }

    /// Frames drawn and posted so far (video frames shown included).
    pub fn frames_drawn(&self) -> u64 {
        self.frames_drawn
    }

    /// Thread `t` wants to run at the next vsync.
    pub(super) fn request_vsync(&mut self, t: usize, cx: &mut Cx<'_, '_>) {
        if !self.vsync_waiters.contains(&t) {
            self.vsync_waiters.push(t);
        }
        if !self.vsync_scheduled {
            self.vsync_scheduled = true;
            let at = self.next_vsync_ns(cx.now());
            cx.eng.schedule_at(at, Ev::Vsync);
        }
    }

    /// The vsync interrupt fires.
    pub fn vsync(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        self.vsync_scheduled = false;
        let cy = k.irq_cost() + k.wakeup_cycles();
        k.device_irq(cy, DeviceWork::Vsync, self, cx);
    }

    /// The vsync handler wakes every thread that asked for it.
    pub(super) fn vsync_handled(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        let waiters = std::mem::take(&mut self.vsync_waiters);
        for t in waiters {
            self.threads[t].vsync_fired = true;
            k.wake(t, &*self, cx);
        }
    }

    /// An app posts a frame to the compositor.
    pub(super) fn post_frame(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        self.mark_posted(cx.now());
        self.frames_posted += 1;
        if let Some(c) = self.compositor {
            k.wake(c, &*self, cx);
        }
    }

    /// The baselines' compositor (SurfaceFlinger): one pass per posted frame.
    pub(super) fn compositor(&mut self, t: usize) -> Option<Action> {
        if self.frames_posted > 0 {
            self.frames_posted -= 1;
            self.push_ops(t, [Op::Compute(self.spec.framework.compose_cycles)]);
            return None;
        }
        Some(Action::Block)
    }

    /// A decoded video frame is ready to show.
    pub(super) fn frame_ready(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        self.frame_ready = true;
        match self.model {
            // The pull app finds it at its next poll, the vsync app at its next vsync.
            DeliveryModel::Pull16ms | DeliveryModel::VsyncBatched => {}
            DeliveryModel::BlockingMiddleware | DeliveryModel::Esm => {
                if let Some(a) = self.app {
                    self.change_pending(a, k, cx);
                }
            }
            DeliveryModel::EsmKdsGuis => {
                if let Some(d) = self.drawing {
                    self.change_pending(d, k, cx);
                }
            }
        }
    }

    /// Whether the video is still playing at `now`.
    pub(super) fn video_playing(&self, now: u64) -> bool {
        self.video_frames > 0 && now < self.video_frames * self.video_period_ns
    }
}
