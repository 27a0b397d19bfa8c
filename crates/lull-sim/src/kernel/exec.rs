//! A core's execution. Its work is a queue of kernel items (interrupt handlers, the tick, context
//! switches; each with cycles and an action run when they are done) in front of the running
//! thread's current compute step. Work is counted in cycles and converted to time at the core's
//! frequency; a frequency change re-plans the segment in progress.

use lull_audit::AuditEventKind;
use lull_sched::CpuId;

use super::{Action, Cx, KAction, Kernel, TState, Userspace};
use crate::event::{Ev, KernelEv};
use crate::soc::CState;

pub(crate) fn cycles_to_ns(cycles: u64, khz: u64) -> u64 {
    ((u128::from(cycles) * 1_000_000).div_ceil(u128::from(khz.max(1)))) as u64
}

pub(crate) fn ns_to_cycles(ns: u64, khz: u64) -> u64 {
    ((u128::from(ns) * u128::from(khz)) / 1_000_000) as u64
}

/// `ns` run at `khz` of work, as time at `top_khz` (the fastest core at its top frequency).
fn scaled_ns(ns: u64, khz: u64, top_khz: u64) -> u64 {
    ((u128::from(ns) * u128::from(khz)) / u128::from(top_khz.max(1))) as u64
}

impl Kernel<'_> {
    /// Accounts the progress of core `c`'s current segment up to now.
    pub(super) fn sync(&mut self, c: usize, cx: &mut Cx<'_, '_>) {
        let now = cx.now();
        if cx.soc.cores[c].state != CState::Busy {
            self.cpus[c].seg_start_ns = now;
            return;
        }
        let elapsed = now.saturating_sub(self.cpus[c].seg_start_ns);
        if elapsed == 0 {
            return;
        }
        let khz = cx.soc.work_khz(c);
        let cpu = &mut self.cpus[c];
        let done = if now >= cpu.planned_end_ns {
            cpu.planned_cycles
        } else {
            ns_to_cycles(elapsed, khz).min(cpu.planned_cycles)
        };
        cpu.planned_cycles -= done;
        if cpu.planned_kwork {
            if let Some(front) = cpu.kwork.front_mut() {
                front.0 = front.0.saturating_sub(done);
            }
        } else if let Some(t) = self.class.current(CpuId(c)) {
            let th = &mut self.tasks[t.0];
            th.remaining = th.remaining.saturating_sub(done);
            th.exec_ns += elapsed;
            th.work_ns += scaled_ns(elapsed, khz, cx.soc.top_work_khz);
            self.class.update_curr(CpuId(c), elapsed);
        }
        self.cpus[c].seg_start_ns = now;
    }

    /// Accounts every core's progress up to now (at the end of a run).
    pub fn sync_all(&mut self, cx: &mut Cx<'_, '_>) {
        for c in 0..self.cpus.len() {
            self.sync(c, cx);
        }
    }

    /// Plans the next `cycles` of work on core `c` (kernel work or the running thread's).
    fn plan(&mut self, c: usize, cycles: u64, kwork: bool, cx: &mut Cx<'_, '_>) {
        let running = if kwork {
            None
        } else {
            self.class.current(CpuId(c)).map(|t| t.0)
        };
        self.util_mark(c, running, cx);
        let khz = cx.soc.work_khz(c);
        let now = cx.now();
        let cpu = &mut self.cpus[c];
        cpu.gen += 1;
        cpu.planned_cycles = cycles;
        cpu.planned_kwork = kwork;
        cpu.planned_end_ns = now + cycles_to_ns(cycles, khz);
        cpu.seg_start_ns = now;
        let gen = cpu.gen;
        let end = cpu.planned_end_ns;
        cx.eng
            .schedule_at(end, Ev::Kernel(KernelEv::CoreDone { core: c, gen }));
    }

    /// Runs core `c` until it must wait for time to pass (a planned segment) or goes idle.
    pub fn run_core(&mut self, c: usize, u: &mut dyn Userspace, cx: &mut Cx<'_, '_>) {
        if cx.soc.cores[c].state != CState::Busy {
            return;
        }
        let outer = self.cur_core.replace(c);
        self.sync(c, cx);
        self.run_core_loop(c, u, cx);
        self.cur_core = outer;
    }

    fn run_core_loop(&mut self, c: usize, u: &mut dyn Userspace, cx: &mut Cx<'_, '_>) {
        let cpu = CpuId(c);
        loop {
            if cx.soc.cores[c].state != CState::Busy {
                return;
            }
            if let Some(&(cy, act)) = self.cpus[c].kwork.front() {
                if cy > 0 {
                    self.plan(c, cy, true, cx);
                    return;
                }
                self.cpus[c].kwork.pop_front();
                self.kaction(c, act, u, cx);
                continue;
            }
            if std::mem::take(&mut self.cpus[c].resched) {
                if let Some(t) = self.class.current(cpu) {
                    if self.class.nr_queued(cpu) > 0 {
                        self.tasks[t.0].state = TState::Runnable;
                        self.class.put_prev(cpu);
                        self.audit_event(c, t.0, AuditEventKind::Preempt, cx);
                        u.off_cpu(t.0, cx.now(), true);
                    }
                }
            }
            if let Some(t) = self.class.current(cpu).map(|t| t.0) {
                if self.tasks[t].remaining == 0 && u.freeze_at_scheduling_point(t) {
                    // guiS at a scheduling point: the window changed under a running thread.
                    self.tasks[t].state = TState::Frozen;
                    self.block_current(c, t, cx);
                    continue;
                }
                u.on_cpu(t, cx.now());
                if self.tasks[t].remaining > 0 {
                    let r = self.tasks[t].remaining;
                    self.plan(c, r, false, cx);
                    return;
                }
                let action = u.next_action(t, self, cx);
                if !matches!(action, Action::Compute(_)) {
                    u.off_cpu(t, cx.now(), false);
                }
                match action {
                    Action::Compute(cy) => self.tasks[t].remaining = cy.max(1),
                    Action::Sleep(until) => {
                        self.tasks[t].state = TState::Sleeping;
                        self.block_current(c, t, cx);
                        self.arm_timer(t, until, cx);
                    }
                    Action::HrSleep { until, slack_ns } => {
                        self.tasks[t].state = TState::Sleeping;
                        self.block_current(c, t, cx);
                        self.arm_timer(t, until + slack_ns, cx);
                        self.tasks[t].timer_soft_at = Some(until);
                    }
                    Action::Block => {
                        self.tasks[t].state = TState::Sleeping;
                        self.block_current(c, t, cx);
                    }
                    Action::EvWait => {
                        self.tasks[t].state = TState::EvWait;
                        self.block_current(c, t, cx);
                    }
                }
                continue;
            }
            if let Some(t) = self.pick_next(c, cx) {
                let refill = self.refill_cycles(c, t, cx) + self.cross_cluster_refill(c, t, cx);
                let cost = self.plat.costs.context_switch_cycles + refill;
                let th = &mut self.tasks[t];
                if th.last_ran_core.is_some_and(|p| p != c) {
                    th.migrations += 1;
                }
                th.last_ran_core = Some(c);
                self.cpus[c].last_ran = Some((th.proc_id, th.cache_kib));
                th.state = TState::Running;
                th.core = c;
                th.switches += 1;
                self.cpus[c].kwork.push_back((cost, KAction::None));
                self.audit_event(c, t, AuditEventKind::SwitchIn, cx);
                continue;
            }
            self.enter_idle(c, u, cx);
            return;
        }
    }

    fn kaction(&mut self, c: usize, act: KAction, u: &mut dyn Userspace, cx: &mut Cx<'_, '_>) {
        match act {
            KAction::None => {}
            KAction::TickCheck => {
                self.cpus[c].freq_event = true;
                if self.class.tick(CpuId(c), cx.now()) {
                    self.cpus[c].resched = true;
                    // The running task used its slice: a boost ends here (seed 003 §IV).
                    self.boost_tick_expired(c);
                }
                self.tick_balance(c, cx);
                self.up_migrate(c, cx);
            }
            KAction::TimerWake { tid, gen } => {
                if self.tasks[tid].timer_gen == gen {
                    self.tasks[tid].timer_at = None;
                    self.wake(tid, &*u, cx);
                }
            }
            KAction::Device(w) => u.device_work(w, self, cx),
        }
    }

    /// Cycles the incoming thread spends reloading what an unrelated predecessor evicted.
    pub(crate) fn refill_cycles(&self, c: usize, t: usize, cx: &Cx<'_, '_>) -> u64 {
        let Some((prev_proc, prev_kib)) = self.cpus[c].last_ran else {
            return 0;
        };
        let th = &self.tasks[t];
        if prev_proc == th.proc_id {
            return 0;
        }
        let costs = &self.plat.costs;
        let kib = th.cache_kib.min(prev_kib).min(costs.l2_kib);
        let lines = kib * 1024 / costs.cache_line_bytes;
        let ns = lines * costs.dram_latency_ns / costs.refill_mlp;
        ns_to_cycles(ns, cx.soc.work_khz(c))
    }

    /// With both clusters online, a thread arriving from the other cluster refills its hot set
    /// from DRAM: the clusters have separate L2s, and what it left in the other one is of no use
    /// here (Exynos 5422: 2 MiB A15 L2, 512 KiB A7 L2). Platforms that run one cluster at a time
    /// charge nothing here: their measured switch latency covers the move.
    pub(crate) fn cross_cluster_refill(&self, c: usize, t: usize, cx: &Cx<'_, '_>) -> u64 {
        let th = &self.tasks[t];
        let Some(prev) = th.last_ran_core else {
            return 0;
        };
        if !cx.soc.all_active || cx.soc.cores[prev].cluster == cx.soc.cores[c].cluster {
            return 0;
        }
        let costs = &self.plat.costs;
        let lines = th.cache_kib.min(costs.l2_kib) * 1024 / costs.cache_line_bytes;
        let ns = lines * costs.dram_latency_ns / costs.refill_mlp;
        ns_to_cycles(ns, cx.soc.work_khz(c))
    }

    /// Sets core `c`'s OPP, re-planning the segment in progress at the new speed.
    pub fn set_opp(&mut self, c: usize, opp: usize, cx: &mut Cx<'_, '_>) {
        if cx.soc.cores[c].opp == opp {
            return;
        }
        self.sync(c, cx);
        self.util_sync(c, cx);
        cx.soc.cores[c].opp = opp;
        if cx.soc.cores[c].state == CState::Busy {
            let (cy, kw) = (self.cpus[c].planned_cycles, self.cpus[c].planned_kwork);
            self.plan(c, cy, kw, cx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_conversions_round_up_to_whole_cycles() {
        assert_eq!(cycles_to_ns(1, 1_000_000), 1);
        assert_eq!(cycles_to_ns(3, 2_000_000), 2);
        assert_eq!(ns_to_cycles(1_000, 2_000_000), 2_000);
    }
}
