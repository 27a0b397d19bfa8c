//! Utilisation tracking for governors that read it (schedutil): per-task PELT with util_est
//! ([`lull_sched::pelt::PeltSet`]), fed at every change of what a core executes and of which
//! tasks are queued where. Runs whose governor samples busy time instead track nothing. The load
//! balancer's PELT load ([`lull_sched::balance::LoadTracker`]) is fed at the same points in
//! every run.

use lull_sched::pelt::{self, PeltSet};
use lull_sched::{CpuId, TaskId};

use super::{Cx, Kernel};

impl Kernel<'_> {
    /// Starts tracking utilisation (before the first thread runs).
    pub fn track_utilisation(&mut self) {
        self.pelt = Some(PeltSet::new(self.cpus.len()));
    }

    /// Brings core `c`'s signals up to now and records which thread's cycles execute from here
    /// on.
    pub(super) fn util_mark(&mut self, c: usize, running: Option<usize>, cx: &Cx<'_, '_>) {
        let before = std::mem::replace(&mut self.cpus[c].running_task, running);
        if before != running {
            let now = cx.now();
            if let Some(b) = before {
                self.load.set_running(TaskId(b), false, now);
            }
            if let Some(r) = running {
                self.load.set_running(TaskId(r), true, now);
            }
        }
        let Some(p) = self.pelt.as_mut() else {
            return;
        };
        let core = &cx.soc.cores[c];
        let scale = pelt::invariance_scale(cx.soc.khz(c), core.max_khz, core.capacity);
        p.update_cpu(CpuId(c), cx.now(), before.map(TaskId), scale);
    }

    /// Brings core `c`'s signals up to now, nothing changing.
    pub(super) fn util_sync(&mut self, c: usize, cx: &Cx<'_, '_>) {
        let running = self.cpus[c].running_task;
        self.util_mark(c, running, cx);
    }

    /// Thread `t` joins core `c`'s queue.
    pub(super) fn util_enqueue(&mut self, c: usize, t: usize, cx: &Cx<'_, '_>) {
        let weight = u64::from(self.tasks[t].params.weight);
        self.load.enqueue(TaskId(t), CpuId(c), weight, cx.now());
        if self.pelt.is_some() {
            self.util_sync(c, cx);
        }
        if let Some(p) = self.pelt.as_mut() {
            p.enqueue(CpuId(c), TaskId(t));
        }
    }

    /// Thread `t` leaves core `c`'s queue to sleep (or be frozen).
    pub(super) fn util_sleep(&mut self, c: usize, t: usize, cx: &Cx<'_, '_>) {
        self.load.dequeue(TaskId(t), cx.now());
        if self.pelt.is_some() {
            self.util_sync(c, cx);
        }
        if let Some(p) = self.pelt.as_mut() {
            p.dequeue(CpuId(c), TaskId(t), true);
        }
    }

    /// Thread `t` moves from core `from`'s queue to core `to`'s.
    pub(super) fn util_migrate(&mut self, t: usize, from: usize, to: usize, cx: &Cx<'_, '_>) {
        if let Some(p) = self.pelt.as_mut() {
            p.dequeue(CpuId(from), TaskId(t), false);
        }
        self.util_enqueue(to, t, cx);
    }

    /// Core `c`'s utilisation now for frequency selection (PELT with util_est, frequency- and
    /// capacity-invariant, 0..=its capacity); 0 when nothing is tracked.
    pub fn cpu_util(&mut self, c: usize, cx: &Cx<'_, '_>) -> u64 {
        self.util_sync(c, cx);
        self.pelt
            .as_ref()
            .map_or(0, |p| p.cpu_util(CpuId(c), cx.soc.cores[c].capacity))
    }
}
