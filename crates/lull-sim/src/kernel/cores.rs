//! Cores coming and going: switching all work between clusters, and hotplugging single cores of
//! the active cluster.

use std::collections::VecDeque;

use lull_audit::AuditEventKind;
use lull_model::time::NS_PER_US;
use lull_sched::class::Migration;
use lull_sched::{CpuId, TaskId};

use super::{Cx, KAction, Kernel, TState};
use crate::event::{Ev, KernelEv};
use crate::platform::FreqDomain;
use crate::soc::CState;

impl Kernel<'_> {
    /// Takes core `c` offline: its running and waiting threads (and sleepers its queue still
    /// holds) are handed back for another core, its pending kernel work (but a context switch in
    /// flight, which is redone) returned.
    fn offline(
        &mut self,
        c: usize,
        moved: &mut Vec<usize>,
        cx: &mut Cx<'_, '_>,
    ) -> Vec<(u64, KAction)> {
        self.sync(c, cx);
        self.util_mark(c, None, cx);
        let cpu = CpuId(c);
        if let Some(t) = self.class.current(cpu) {
            self.audit_event(c, t.0, AuditEventKind::Preempt, cx);
            self.class.put_prev(cpu);
        }
        for t in 0..self.tasks.len() {
            let queued =
                self.tasks[t].state == TState::Runnable || self.tasks[t].state == TState::Running;
            if (queued && self.tasks[t].core == c) || self.class.sleeping_on(TaskId(t)) == Some(cpu)
            {
                moved.push(t);
            }
        }
        let k = &mut self.cpus[c];
        let work = k
            .kwork
            .drain(..)
            .filter(|(_, a)| *a != KAction::None)
            .collect();
        cx.soc.cores[c].state = CState::Offline;
        k.gen += 1;
        k.tick_gen += 1;
        k.tick_armed = false;
        k.resched = false;
        work
    }

    /// Brings core `c` up; it executes after `latency_ns`, at its cluster's frequency when the
    /// cluster shares one clock.
    fn online(&mut self, c: usize, latency_ns: u64, cx: &mut Cx<'_, '_>) {
        let now = cx.now();
        let ci = cx.soc.cores[c].cluster;
        if cx.soc.plat.clusters[ci].freq_domain == FreqDomain::Cluster {
            let sibling = cx
                .soc
                .cluster_cores(ci)
                .find(|&k| k != c && cx.soc.cores[k].state != CState::Offline);
            if let Some(k) = sibling {
                cx.soc.cores[c].opp = cx.soc.cores[k].opp;
            }
        }
        cx.soc.cores[c].state = CState::Waking;
        let k = &mut self.cpus[c];
        k.gen += 1;
        k.last_ran = None;
        k.idle_since_ns = now;
        let gen = k.gen;
        cx.eng.schedule_at(
            now + latency_ns,
            Ev::Kernel(KernelEv::WakeDone { core: c, gen }),
        );
    }

    /// Moves threads taken off other cores to core `to`'s queue.
    fn rehome(&mut self, moved: Vec<usize>, to: usize, cx: &Cx<'_, '_>) {
        for t in moved {
            let from = self.tasks[t].core;
            let from = self.class.sleeping_on(TaskId(t)).map_or(CpuId(from), |c| c);
            self.class
                .migrate(TaskId(t), from, CpuId(to), Migration::Evacuate);
            self.util_migrate(t, from.0, to, cx);
            if self.tasks[t].state == TState::Running {
                self.tasks[t].state = TState::Runnable;
            }
            self.tasks[t].core = to;
        }
    }

    /// Moves all work from the active cluster to cluster `to`: its cores go offline, cores of
    /// `to` come up after the platform's switch latency, and each thread moves to the core of
    /// `to` in the same slot (position in its cluster) as the one it was on, the last core of
    /// `to` taking what has no slot there. How many cores come up: for a big.LITTLE pair, as many
    /// as were online (seed 001 §2.1: "the other will be activated with the same number of
    /// cores, so that thread migration can be performed on a one to one basis"); for a companion
    /// switch, every core of `to`.
    pub fn switch_cluster(&mut self, to: usize, cx: &mut Cx<'_, '_>) {
        if to == cx.soc.active_cluster {
            return;
        }
        self.cluster_switches += 1;
        let from = cx.soc.active_cluster;
        let leaving: Vec<usize> = cx.soc.cluster_cores(from).collect();
        let online_before = leaving
            .iter()
            .filter(|&&c| cx.soc.cores[c].state != CState::Offline)
            .count()
            .max(1);
        let all_to: Vec<usize> = cx.soc.cluster_cores(to).collect();
        let n = if self.plat.little_cluster().is_some() {
            online_before.min(all_to.len())
        } else {
            all_to.len()
        };
        let targets: Vec<usize> = all_to[..n].to_vec();
        let slot_of = |c: usize| leaving.iter().position(|&k| k == c).unwrap_or(0);
        let mut moved_per_target: Vec<Vec<usize>> = vec![Vec::new(); targets.len()];
        let mut moved_work = VecDeque::new();
        for &c in &leaving {
            let mut moved = Vec::new();
            moved_work.extend(self.offline(c, &mut moved, cx));
            moved_per_target[slot_of(c).min(targets.len() - 1)].extend(moved);
        }
        cx.soc.cluster_off[from] = false;
        cx.soc.active_cluster = to;
        let lat = self.plat.cluster_switch.latency_us * NS_PER_US;
        for &c in &targets {
            self.online(c, lat, cx);
        }
        let first = targets[0];
        self.cpus[first].kwork.extend(moved_work);
        for (i, moved) in moved_per_target.into_iter().enumerate() {
            self.rehome(moved, targets[i], cx);
        }
        for th in &mut self.tasks {
            if cx.soc.cores[th.core].cluster != to {
                let slot = slot_of(th.core).min(targets.len() - 1);
                th.core = targets[slot];
            }
        }
        // Ticks on the new cores start when they come up (WakeDone arms them).
    }

    /// Brings the active cluster to `n` online cores (at least one): the highest-numbered go
    /// offline first, their threads move to the cluster's first core; cores come back after
    /// `latency_ns`.
    pub fn set_online(&mut self, n: usize, latency_ns: u64, cx: &mut Cx<'_, '_>) {
        let cores: Vec<usize> = cx.soc.cluster_cores(cx.soc.active_cluster).collect();
        let n = n.clamp(1, cores.len());
        let online: Vec<usize> = cores
            .iter()
            .copied()
            .filter(|&c| cx.soc.cores[c].state != CState::Offline)
            .collect();
        if online.len() > n {
            let first = online[0];
            let mut moved = Vec::new();
            for &c in online[n..].iter().rev() {
                let work = self.offline(c, &mut moved, cx);
                self.cpus[first].kwork.extend(work);
            }
            self.rehome(moved, first, cx);
            if matches!(cx.soc.cores[first].state, CState::Idle(_)) {
                self.kick(first, cx);
            } else if cx.soc.cores[first].state == CState::Busy {
                cx.eng.schedule_in(0, Ev::Kernel(KernelEv::Poke(first)));
            }
        } else {
            let mut want = n - online.len();
            for &c in &cores {
                if want == 0 {
                    break;
                }
                if cx.soc.cores[c].state == CState::Offline {
                    self.online(c, latency_ns, cx);
                    want -= 1;
                }
            }
        }
    }
}

impl Kernel<'_> {
    /// `sched_setaffinity`'s immediate move: thread `t`, queued or running on a core other than
    /// `to`, leaves it for `to`'s queue at once (Linux moves it through the migration stopper);
    /// a sleeping thread is placed by its affinity when it wakes.
    pub fn move_task(&mut self, t: usize, to: usize, cx: &mut Cx<'_, '_>) {
        let from = self.tasks[t].core;
        if from == to || cx.soc.cores[to].state == CState::Offline {
            return;
        }
        match self.tasks[t].state {
            TState::Running => {
                self.sync(from, cx);
                self.util_mark(from, None, cx);
                self.audit_event(from, t, AuditEventKind::Preempt, cx);
                self.class.put_prev(CpuId(from));
                self.tasks[t].state = TState::Runnable;
                // The segment planned for it is void; the core picks again.
                self.cpus[from].gen += 1;
                cx.eng.schedule_in(0, Ev::Kernel(KernelEv::Poke(from)));
            }
            TState::Runnable => self.sync(from, cx),
            TState::Sleeping | TState::EvWait | TState::Frozen => return,
        }
        self.rehome(vec![t], to, cx);
        match cx.soc.cores[to].state {
            CState::Idle(_) => self.kick(to, cx),
            CState::Busy => {
                if self.class.wakeup_preempt(CpuId(to), TaskId(t)) {
                    self.cpus[to].resched = true;
                }
                cx.eng.schedule_in(0, Ev::Kernel(KernelEv::Poke(to)));
            }
            CState::Waking | CState::Offline => {}
        }
    }
}
