//! What the app's threads do under each framework model: take events and run the handler, draw
//! when a frame is owed, decode video. The handler and drawing costs come from the spec and are
//! the same for every model, so the models differ only in their event paths.

use super::display::FrameDue;
use super::{Effect, Op, Role, Userland};
use crate::kernel::{Action, Cx};

impl Userland<'_> {
    /// A blocking baseline app takes everything its hub delivered: per event the handler start
    /// (for latency), receiving and handling; the frame is then dirty.
    fn take_app_queue(&mut self) -> Vec<Op> {
        let work = self.spec.framework.app_receive_cycles + self.spec.app.handler_cycles;
        let ops = self
            .app_q
            .drain(..)
            .flat_map(|at| [Op::HandlerStart(at), Op::Compute(work)])
            .collect();
        self.dirty = true;
        ops
    }

    fn draw_ops(&self) -> [Op; 3] {
        [
            Op::Effect(Effect::DrawStart),
            Op::Compute(self.spec.app.draw_cycles),
            Op::Effect(Effect::PostFrame),
        ]
    }

    /// The pull model's app: every 16 ms, poll the hub, handle what it has, draw if owed.
    pub(super) fn pull_app(&mut self, t: usize, cx: &mut Cx<'_, '_>) -> Option<Action> {
        let fw = self.spec.framework;
        match self.threads[t].phase {
            0 => {
                self.threads[t].phase = 1;
                let batch: Vec<u64> = self.hub_q.drain(..).map(|(at, _)| at).collect();
                let mut ops = vec![Op::Compute(fw.app_poll_cycles)];
                for &at in &batch {
                    ops.push(Op::HandlerStart(at));
                    ops.push(Op::Compute(
                        fw.app_receive_cycles + self.spec.app.handler_cycles,
                    ));
                }
                if !batch.is_empty() {
                    self.dirty = true;
                }
                self.push_ops(t, ops);
                None
            }
            1 => {
                // Paced: the frame callback wakes the looper at the next vsync, whose pass
                // draws.
                if self.frame_due(t, cx) == FrameDue::Draw {
                    let ops = self.draw_ops();
                    self.push_ops(t, ops);
                }
                self.threads[t].phase = 2;
                None
            }
            _ => {
                self.threads[t].phase = 0;
                Some(Action::Sleep(cx.now() + fw.poll_interval_ns))
            }
        }
    }

    /// The vsync-batched app (Android's looper with Choreographer): handle what arrives, draw at
    /// the next vsync, tick every frame while the video plays.
    pub(super) fn vsync_app(&mut self, t: usize, cx: &Cx<'_, '_>) -> Option<Action> {
        let now = cx.now();
        if !self.app_q.is_empty() {
            let mut ops = self.take_app_queue();
            ops.push(Op::Effect(Effect::RequestVsync));
            self.push_ops(t, ops);
            return None;
        }
        if std::mem::take(&mut self.threads[t].vsync_fired) {
            let playing = self.video_playing(now);
            let mut ops = Vec::new();
            if std::mem::take(&mut self.dirty) | std::mem::take(&mut self.frame_ready) {
                ops.extend(self.draw_ops());
            } else {
                ops.push(Op::Compute(self.spec.framework.frame_tick_cycles));
            }
            if playing {
                ops.push(Op::Effect(Effect::RequestVsync));
            }
            self.push_ops(t, ops);
            return None;
        }
        if self.video_playing(now) && !self.vsync_waiters.contains(&t) {
            // The app animates while the video plays: it asks for every frame.
            self.push_ops(t, [Op::Effect(Effect::RequestVsync)]);
            return None;
        }
        Some(Action::Block)
    }

    /// The blocking baseline's app: handle what the hub forwarded, draw if owed, block.
    pub(super) fn block_app(&mut self, t: usize, cx: &mut Cx<'_, '_>) -> Option<Action> {
        if !self.app_q.is_empty() {
            let ops = self.take_app_queue();
            self.push_ops(t, ops);
            return None;
        }
        match self.frame_due(t, cx) {
            // Paced: the hub's next event or the frame callback wakes it.
            FrameDue::No | FrameDue::Paced => Some(Action::Block),
            FrameDue::Draw => {
                let ops = self.draw_ops();
                self.push_ops(t, ops);
                None
            }
        }
    }

    /// The ESM app's thread (drawing too, without KDS) and the KDS event thread: run the
    /// handler of each pushed event, then `esm_wait`.
    pub(super) fn event_handler(&mut self, t: usize, cx: &mut Cx<'_, '_>) -> Option<Action> {
        let kds = self.threads[t].role == Role::KdsEvent;
        if let Some(at) = self.threads[t].deliveries.pop_front() {
            let mut ops = vec![
                Op::HandlerStart(at),
                Op::Compute(self.spec.app.handler_cycles),
            ];
            if kds {
                ops.push(Op::Effect(Effect::WakeDrawing));
            } else {
                self.dirty = true;
            }
            self.push_ops(t, ops);
            return None;
        }
        // Without KDS the app's one thread draws, once its private queue is empty; paced, it
        // parks in EV_WAIT and the next event or the frame callback wakes it.
        if !kds
            && self.esm.queued_events(self.app_id).unwrap_or(0) == 0
            && self.frame_due(t, cx) == FrameDue::Draw
        {
            let ops = self.draw_ops();
            self.push_ops(t, ops);
            return None;
        }
        // Woken by the frame callback while the ESM had it in EV_WAIT: a push the dispatcher
        // has not handed over yet is older than anything in the private queue, so the thread
        // waits for it rather than take a later event first.
        if !self.esm_pushes.is_empty() {
            return Some(Action::EvWait);
        }
        match self.esm.wait(self.app_id).expect("the app is attached") {
            Some(p) => {
                self.take_push(t, p);
                None
            }
            None => Some(Action::EvWait),
        }
    }

    /// The KDS drawing thread: draws and composes in one step when a frame is owed.
    pub(super) fn kds_drawing(&mut self, t: usize, cx: &mut Cx<'_, '_>) -> Option<Action> {
        match self.frame_due(t, cx) {
            // Paced: the frame callback wakes it at the next vsync.
            FrameDue::No | FrameDue::Paced => Some(Action::Block),
            FrameDue::Draw => {
                // KDS: the app's draw commands and the in-kernel composition, no extra hop.
                self.push_ops(
                    t,
                    [
                        Op::Effect(Effect::DrawStart),
                        Op::Compute(self.spec.app.draw_cycles),
                        Op::Effect(Effect::FrameDrawn),
                        Op::Compute(self.spec.framework.compose_cycles),
                    ],
                );
                None
            }
        }
    }

    /// The video decoder: each frame in its own display slot, like a player pacing by
    /// timestamps.
    pub(super) fn decoder(&mut self, t: usize, cx: &Cx<'_, '_>) -> Option<Action> {
        let frame = self.threads[t].frame;
        if frame >= self.video_frames {
            return Some(Action::Block);
        }
        let due = frame * self.video_period_ns;
        if due > cx.now() {
            return Some(Action::Sleep(due));
        }
        self.threads[t].frame += 1;
        self.push_ops(
            t,
            [
                Op::Compute(self.decode_cycles),
                Op::Effect(Effect::FrameReady),
            ],
        );
        None
    }
}
