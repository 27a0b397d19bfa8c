//! Interrupts, the scheduler tick and thread timers.

use lull_model::time::NS_PER_S;
use lull_sched::CpuId;

use super::{Cx, DeviceWork, KAction, Kernel, Userspace};
use crate::event::{Ev, KernelEv};
use crate::platform::{IrqController, TimerMode};
use crate::soc::CState;

impl Kernel<'_> {
    /// Cycles of an interrupt's entry, source identification and exit.
    pub fn irq_cost(&self) -> u64 {
        let c = &self.plat.costs;
        match self.plat.interrupts.controller {
            IrqController::Vectored => c.irq_entry_exit_cycles,
            IrqController::Scanning => {
                c.irq_entry_exit_cycles
                    + u64::from(self.plat.interrupts.scanned_devices) * c.scan_per_device_cycles
            }
        }
    }

    /// Cycles to wake a thread (`try_to_wake_up`).
    pub fn wakeup_cycles(&self) -> u64 {
        self.plat.costs.wakeup_cycles
    }

    /// The core device interrupts go to: the first online core of the active cluster (the GIC's
    /// default affinity is CPU 0; with guiS idle forcing, the companion).
    pub fn irq_core(&self, cx: &Cx<'_, '_>) -> usize {
        let soc = &*cx.soc;
        if let (true, Some(lp)) = (self.irq_to_companion, soc.companion) {
            if let Some(c) = soc.cores.iter().position(|c| c.cluster == lp) {
                return c;
            }
        }
        soc.cores
            .iter()
            .position(|c| c.cluster == soc.active_cluster && c.state != CState::Offline)
            .or_else(|| {
                soc.cores
                    .iter()
                    .position(|c| c.cluster == soc.active_cluster)
            })
            .unwrap_or(0)
    }

    fn timer_core(&self, tid: usize, cx: &Cx<'_, '_>) -> usize {
        let c = self.tasks[tid].core;
        if cx.soc.is_active(cx.soc.cores[c].cluster) {
            c
        } else {
            self.irq_core(cx)
        }
    }

    /// A device interrupt costing `cycles` whose handler ends with `work` for user space.
    pub fn device_irq(
        &mut self,
        cycles: u64,
        work: DeviceWork,
        u: &mut dyn Userspace,
        cx: &mut Cx<'_, '_>,
    ) {
        let c = self.irq_core(cx);
        self.irq(c, cycles, KAction::Device(work), u, cx);
    }

    /// Kernel work of `cycles` on core `c`, in front of whatever it runs.
    fn irq(
        &mut self,
        c: usize,
        cycles: u64,
        act: KAction,
        u: &mut dyn Userspace,
        cx: &mut Cx<'_, '_>,
    ) {
        match cx.soc.cores[c].state {
            CState::Busy => {
                self.sync(c, cx);
                self.cpus[c].kwork.push_back((cycles, act));
                if self.cur_core != Some(c) {
                    self.run_core(c, u, cx);
                }
            }
            CState::Waking => self.cpus[c].kwork.push_back((cycles, act)),
            CState::Idle(_) => {
                self.cpus[c].kwork.push_back((cycles, act));
                self.kick(c, cx);
            }
            CState::Offline => {
                // Only reachable in the instant of a cluster switch; send it to the new cluster.
                let to = self.irq_core(cx);
                if to != c && cx.soc.cores[to].state != CState::Offline {
                    self.irq(to, cycles, act, u, cx);
                }
            }
        }
    }

    /// Handles the kernel's own event `e`, as every driver of a run does.
    pub fn handle(&mut self, e: KernelEv, u: &mut dyn Userspace, cx: &mut Cx<'_, '_>) {
        match e {
            KernelEv::CoreDone { core, gen } => self.core_done(core, gen, u, cx),
            KernelEv::WakeDone { core, gen } => self.wake_done(core, gen, u, cx),
            KernelEv::Poke(core) => self.poke(core, u, cx),
            KernelEv::Tick { core, gen } => self.tick(core, gen, u, cx),
            KernelEv::Timer { tid, gen } => self.timer_fired(tid, gen, u, cx),
        }
    }

    /// A thread's timer fired.
    pub fn timer_fired(
        &mut self,
        tid: usize,
        gen: u64,
        u: &mut dyn Userspace,
        cx: &mut Cx<'_, '_>,
    ) {
        if self.tasks[tid].timer_gen != gen {
            return;
        }
        let c = self.timer_core(tid, cx);
        self.tasks[tid].timer_soft_at = None;
        let cy = self.plat.costs.timer_expiry_cycles + self.plat.costs.wakeup_cycles;
        self.irq(c, cy, KAction::TimerWake { tid, gen }, u, cx);
        self.expire_soft_timers(c, u, cx);
    }

    /// The timer interrupt on core `c` runs its whole hrtimer queue: every timer there whose
    /// soft expiry has passed fires with it (`__hrtimer_run_queues` compares against the soft
    /// expiry).
    fn expire_soft_timers(&mut self, c: usize, u: &mut dyn Userspace, cx: &mut Cx<'_, '_>) {
        let now = cx.now();
        for tid in 0..self.tasks.len() {
            let due = self.tasks[tid]
                .timer_soft_at
                .is_some_and(|soft| soft <= now);
            if due && self.timer_core(tid, cx) == c {
                let gen = self.tasks[tid].timer_gen;
                self.timer_fired(tid, gen, u, cx);
            }
        }
    }

    /// A wakeup targeted core `c`: run it, or wake it if work waits for it.
    pub fn poke(&mut self, c: usize, u: &mut dyn Userspace, cx: &mut Cx<'_, '_>) {
        if cx.soc.cores[c].state == CState::Busy {
            self.run_core(c, u, cx);
        } else if matches!(cx.soc.cores[c].state, CState::Idle(_))
            && self.class.nr_queued(CpuId(c)) > 0
        {
            self.kick(c, cx);
        }
    }

    /// Core `c` finished waking: it executes from now.
    pub fn wake_done(&mut self, c: usize, gen: u64, u: &mut dyn Userspace, cx: &mut Cx<'_, '_>) {
        if self.cpus[c].gen != gen || cx.soc.cores[c].state != CState::Waking {
            return;
        }
        cx.soc.cores[c].state = CState::Busy;
        self.cpus[c].seg_start_ns = cx.now();
        if !self.cpus[c].tick_armed {
            self.arm_tick(c, cx);
        }
        self.run_core(c, u, cx);
    }

    /// Core `c`'s planned segment ended.
    pub fn core_done(&mut self, c: usize, gen: u64, u: &mut dyn Userspace, cx: &mut Cx<'_, '_>) {
        if self.cpus[c].gen == gen && cx.soc.cores[c].state == CState::Busy {
            self.run_core(c, u, cx);
        }
    }

    /// The tick rate.
    pub fn hz(&self) -> u32 {
        self.plat.timer.hz
    }

    pub(super) fn tick_period_ns(&self) -> u64 {
        NS_PER_S / u64::from(self.plat.timer.hz)
    }

    /// Arms the periodic tick of every online core (periodic-tick platforms, at the start).
    pub fn arm_periodic_ticks(&mut self, cx: &mut Cx<'_, '_>) {
        if self.plat.timer.mode == TimerMode::Periodic {
            for c in 0..self.cpus.len() {
                if cx.soc.cores[c].state != CState::Offline {
                    self.arm_tick(c, cx);
                }
            }
        }
    }

    pub(super) fn arm_tick(&mut self, c: usize, cx: &mut Cx<'_, '_>) {
        let p = self.tick_period_ns();
        let next = (cx.now() / p + 1) * p;
        let cpu = &mut self.cpus[c];
        cpu.tick_gen += 1;
        cpu.tick_armed = true;
        let gen = cpu.tick_gen;
        cx.eng
            .schedule_at(next, Ev::Kernel(KernelEv::Tick { core: c, gen }));
    }

    /// How late this timer's interrupt runs past its expiry: a draw from the platform's
    /// `irq_late_min_ns..=irq_late_max_ns`, and no draw at all (the run's random sequence
    /// untouched) on a platform whose timers are on time.
    fn timer_irq_late_ns(&self, cx: &mut Cx<'_, '_>) -> u64 {
        let (lo, hi) = (
            self.plat.timer.irq_late_min_ns,
            self.plat.timer.irq_late_max_ns,
        );
        if hi == 0 {
            return 0;
        }
        lo + cx.eng.rng().below(hi - lo + 1)
    }

    /// Core `c`'s tick fired.
    pub fn tick(&mut self, c: usize, gen: u64, u: &mut dyn Userspace, cx: &mut Cx<'_, '_>) {
        if self.cpus[c].tick_gen != gen {
            return;
        }
        let periodic = self.plat.timer.mode == TimerMode::Periodic;
        match cx.soc.cores[c].state {
            CState::Offline => {
                self.cpus[c].tick_armed = false;
                return;
            }
            CState::Idle(_) if !periodic => {
                self.cpus[c].tick_armed = false;
                return;
            }
            _ => {}
        }
        self.arm_tick(c, cx);
        let cy = self.plat.costs.tick_cycles;
        self.irq(c, cy, KAction::TickCheck, u, cx);
        // The tick is an hrtimer too: its interrupt runs the core's expired timers.
        self.expire_soft_timers(c, u, cx);
    }

    pub(super) fn arm_timer(&mut self, tid: usize, at: u64, cx: &mut Cx<'_, '_>) {
        let at = at + self.timer_irq_late_ns(cx);
        let t = &mut self.tasks[tid];
        t.timer_gen += 1;
        t.timer_at = Some(at);
        t.timer_soft_at = None;
        let gen = t.timer_gen;
        cx.eng
            .schedule_at(at, Ev::Kernel(KernelEv::Timer { tid, gen }));
    }
}
