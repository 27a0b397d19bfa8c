//! Idle: the state a core enters when it has nothing to run (chosen by the run's idle governor),
//! the coupled cluster power-down, and waking a core (interrupt or wakeup IPI) at the state's
//! exit latency.

use lull_model::time::NS_PER_US;
use lull_sched::idle::NO_PREDICTION_NS;
use lull_sched::CpuId;

use super::{Cx, Kernel, Userspace};
use crate::event::{Ev, KernelEv};
use crate::platform::TimerMode;
use crate::soc::CState;

impl Kernel<'_> {
    /// The next timer interrupt core `c` will take: thread timers homed on it (or on a
    /// switched-out cluster, whose timers it takes as the interrupt core), the periodic tick,
    /// and a device interrupt user space asked for.
    fn next_timer_on(&self, c: usize, u: &dyn Userspace, cx: &Cx<'_, '_>) -> u64 {
        let now = cx.now();
        let irq_core = self.irq_core(cx);
        let mut next = NO_PREDICTION_NS;
        for t in &self.tasks {
            if let Some(at) = t.timer_at {
                if t.core == c || (!cx.soc.is_active(cx.soc.cores[t.core].cluster) && c == irq_core)
                {
                    next = next.min(at);
                }
            }
        }
        if self.plat.timer.mode == TimerMode::Periodic {
            let p = self.tick_period_ns();
            next = next.min((now / p + 1) * p);
        }
        if c == irq_core {
            if let Some(at) = u.next_device_interrupt_ns(now) {
                next = next.min(at);
            }
        }
        next
    }

    /// Core `c` has nothing to run: the idle governor picks a state; the cluster powers down
    /// when every online core of it votes so.
    pub(super) fn enter_idle(&mut self, c: usize, u: &dyn Userspace, cx: &mut Cx<'_, '_>) {
        self.util_mark(c, None, cx);
        let now = cx.now();
        let until = self.next_timer_on(c, u, cx).saturating_sub(now);
        let ci = cx.soc.cores[c].cluster;
        let cl = &cx.soc.plat.clusters[ci];
        let choice = self.idle_gov.select(CpuId(c), &self.idle_states[ci], until);
        cx.soc.cores[c].state = CState::Idle(choice.state);
        let cpu = &mut self.cpus[c];
        cpu.idle_since_ns = now;
        cpu.predicted_ns = choice.predicted_ns;
        cpu.gen += 1;
        if self.plat.timer.mode == TimerMode::Dynamic {
            cpu.tick_gen += 1;
            cpu.tick_armed = false;
        }
        // Coupled cluster power-down (CPUIDLE_FLAG_COUPLED): each core votes for the cluster
        // state when it enters idle, from its prediction then; the vote stands until it wakes.
        if let Some(off) = &cl.cluster_off {
            let deepest = cl.idle_states.len() - 1;
            let all = cx
                .soc
                .cluster_cores(ci)
                .filter(|&k| cx.soc.cores[k].state != CState::Offline)
                .all(|k| {
                    cx.soc.cores[k].state == CState::Idle(deepest)
                        && self.cpus[k].predicted_ns >= off.residency_us * NS_PER_US
                });
            if all {
                cx.soc.cluster_off[ci] = true;
            }
        }
    }

    /// Brings an idle core up, paying its exit latency (the cluster's if it was powered down).
    pub(super) fn kick(&mut self, c: usize, cx: &mut Cx<'_, '_>) {
        let CState::Idle(s) = cx.soc.cores[c].state else {
            return;
        };
        let now = cx.now();
        let ci = cx.soc.cores[c].cluster;
        let cl = &cx.soc.plat.clusters[ci];
        let exit_us = if cx.soc.cluster_off[ci] {
            cx.soc.cluster_off[ci] = false;
            cl.cluster_off
                .as_ref()
                .map_or(cl.idle_states[s].exit_us, |o| o.exit_us)
        } else {
            cl.idle_states[s].exit_us
        };
        let cpu = &mut self.cpus[c];
        self.idle_gov.reflect(CpuId(c), now - cpu.idle_since_ns);
        cx.soc.cores[c].state = CState::Waking;
        cpu.gen += 1;
        let gen = cpu.gen;
        cx.eng.schedule_at(
            now + exit_us * NS_PER_US,
            Ev::Kernel(KernelEv::WakeDone { core: c, gen }),
        );
    }
}
