//! Scheduling: wakeups, blocking, guiS freezing, picking the next thread and new-idle balancing,
//! each decided by the run's [`lull_sched`] policies (the class keeps the run queues).

use lull_audit::AuditEventKind;
use lull_sched::balance;
use lull_sched::class::{Enqueue, Migration};
use lull_sched::placement::{CpuState, TickBalance};
use lull_sched::seam::CpuMask;
use lull_sched::{CpuId, TaskId};

use super::boost::BoostEnd;
use super::{Cx, Kernel, TState, Userspace};
use crate::event::{Ev, KernelEv};
use crate::soc::CState;

impl Kernel<'_> {
    /// Makes thread `t` runnable, unless guiS holds it: core selection, class placement,
    /// preemption check.
    pub fn wake(&mut self, t: usize, u: &dyn Userspace, cx: &mut Cx<'_, '_>) {
        self.wake_gated(t, true, u, cx);
    }

    /// [`Kernel::wake`]s each of `threads` in turn (a workload's start: the threads that run
    /// from the beginning).
    pub fn wake_each(
        &mut self,
        threads: impl IntoIterator<Item = usize>,
        u: &dyn Userspace,
        cx: &mut Cx<'_, '_>,
    ) {
        for t in threads {
            self.wake(t, u, cx);
        }
    }

    /// As [`Kernel::wake`]; `gate` false at thread creation, when every thread runs its
    /// initialisation (the event thread must reach `esm_wait` before guiS gates it).
    pub fn wake_gated(&mut self, t: usize, gate: bool, u: &dyn Userspace, cx: &mut Cx<'_, '_>) {
        match self.tasks[t].state {
            TState::Running | TState::Runnable => return,
            TState::Sleeping | TState::EvWait | TState::Frozen => {}
        }
        if gate && u.gated_off(t) {
            self.tasks[t].state = TState::Frozen;
            return;
        }
        self.tasks[t].timer_soft_at = None;
        if self.tasks[t].timer_at.take().is_some() {
            self.tasks[t].timer_gen += 1;
        }
        let c = self.select_core(t, cx);
        // The class places the task against the current task's up-to-date virtual time, as
        // Linux's enqueue and wakeup-preemption paths call `update_curr` first.
        self.sync(c, cx);
        self.boost_on_wakeup(t, c);
        let how = if std::mem::replace(&mut self.tasks[t].started, true) {
            self.tasks[t].wakeups += 1;
            Enqueue::Wakeup
        } else {
            Enqueue::New
        };
        self.class.enqueue(CpuId(c), TaskId(t), how);
        self.util_enqueue(c, t, cx);
        self.tasks[t].state = TState::Runnable;
        self.tasks[t].core = c;
        self.tasks[t].woken_ns = cx.now();
        self.cpus[c].freq_event = true;
        self.audit_event(c, t, AuditEventKind::Unblock, cx);
        match cx.soc.cores[c].state {
            CState::Idle(_) => self.kick(c, cx),
            CState::Busy => {
                if self.class.wakeup_preempt(CpuId(c), TaskId(t)) {
                    self.cpus[c].resched = true;
                }
                if self.cur_core != Some(c) {
                    cx.eng.schedule_in(0, Ev::Kernel(KernelEv::Poke(c)));
                }
            }
            CState::Waking | CState::Offline => {}
        }
    }

    /// Core `c`'s running thread `t` stops running (its state is already set).
    pub(super) fn block_current(&mut self, c: usize, t: usize, cx: &mut Cx<'_, '_>) {
        self.class.block(CpuId(c), TaskId(t));
        self.boost_end(t, BoostEnd::Block);
        self.util_sleep(c, t, cx);
        self.cpus[c].freq_event = true;
        self.audit_event(c, t, AuditEventKind::Block, cx);
    }

    /// guiS after a window change: every waiting thread `hold` picks leaves its queue, frozen.
    pub fn freeze_waiting(&mut self, hold: impl Fn(usize) -> bool, cx: &mut Cx<'_, '_>) {
        for c in 0..self.cpus.len() {
            for t in 0..self.tasks.len() {
                if self.tasks[t].state == TState::Runnable && self.tasks[t].core == c && hold(t) {
                    self.class.block(CpuId(c), TaskId(t));
                    self.boost_end(t, BoostEnd::Block);
                    self.util_sleep(c, t, cx);
                    self.tasks[t].state = TState::Frozen;
                    self.audit_event(c, t, AuditEventKind::Block, cx);
                }
            }
        }
    }

    /// Threads that are running or waiting to run.
    pub fn is_runnable(&self, t: usize) -> bool {
        matches!(self.tasks[t].state, TState::Running | TState::Runnable)
    }

    /// Whether thread `t` is frozen by guiS.
    pub fn is_frozen(&self, t: usize) -> bool {
        self.tasks[t].state == TState::Frozen
    }

    /// The next thread for core `c`, pulling one from the busiest core of its cluster first if
    /// its own queue is empty (new-idle balance).
    pub(super) fn pick_next(&mut self, c: usize, cx: &mut Cx<'_, '_>) -> Option<usize> {
        let cpu = CpuId(c);
        if self.class.nr_queued(cpu) == 0 {
            self.refresh_cpu_view(cx);
            if let Some(from) = self.placement.newidle_source(cpu, &self.cpu_view) {
                let tasks = &self.tasks;
                if let Some(t) = self
                    .class
                    .steal_candidate(from, &|t| tasks[t.0].allowed.contains(cpu))
                {
                    self.class.migrate(t, from, cpu, Migration::Balance);
                    self.util_migrate(t.0, from.0, c, cx);
                    self.tasks[t.0].core = c;
                }
            }
        }
        self.class.pick_next(cpu, cx.now()).map(|t| t.0)
    }

    /// Load balancing at core `c`'s tick: an idle core of its cluster is woken to pull when `c`
    /// has threads waiting, and once per balance interval `c` itself balances on the cores'
    /// PELT load (Linux's `sched_balance_rq` for a busy CPU): it pulls a waiting thread whose
    /// load fits in the imbalance and is not cache hot, counting a failure when none does; after
    /// enough failures the busiest core's stopper pushes one regardless (active balance).
    pub(super) fn tick_balance(&mut self, c: usize, cx: &mut Cx<'_, '_>) {
        let cpu = CpuId(c);
        if self.class.current(cpu).is_none() {
            return;
        }
        self.refresh_cpu_view(cx);
        if let Some(idle) = self.placement.idle_balance_target(cpu, &self.cpu_view) {
            self.kick(idle.0, cx);
        }
        let now = cx.now();
        if now < self.cpus[c].next_balance_ns {
            return;
        }
        for (o, v) in self.cpu_view.iter_mut().enumerate() {
            (v.load_avg, v.util_avg) = self.load.cpu_load_util(CpuId(o), now);
            v.capacity = cx.soc.cores[o].capacity;
        }
        let cluster_cpus = cx.soc.cluster_cores(cx.soc.cores[c].cluster).count();
        let decision = self.placement.tick_balance(cpu, &self.cpu_view);
        let balanced = decision == TickBalance::Balanced;
        let interval_ms =
            balance::next_interval_ms(self.cpus[c].balance_interval_ms, cluster_cpus, balanced);
        self.cpus[c].balance_interval_ms = interval_ms;
        self.cpus[c].next_balance_ns = now + interval_ms * balance::BUSY_FACTOR * 1_000_000;
        let TickBalance::Pull { from, imbalance } = decision else {
            self.cpus[c].balance_failed = 0;
            return;
        };
        let failed = self.cpus[c].balance_failed;
        let (tasks, load) = (&self.tasks, &self.load);
        let allowed = |t: TaskId| tasks[t.0].allowed.contains(cpu);
        let mut pick = self.class.steal_candidate(from, &|t| {
            allowed(t)
                && balance::can_detach(
                    load.task_load(t, now),
                    load.task_hot(t, now),
                    failed,
                    imbalance,
                )
        });
        if pick.is_none() {
            self.cpus[c].balance_failed += 1;
            if !balance::need_active_balance(self.cpus[c].balance_failed) {
                return;
            }
            // Active balance: the busiest core's stopper preempts its task and pushes a waiting
            // one here, with neither the load nor the cache-hot test.
            pick = self.class.steal_candidate(from, &allowed);
        }
        let Some(t) = pick else {
            // Every waiting task is pinned elsewhere.
            return;
        };
        self.cpus[c].balance_failed = 0;
        self.class.migrate(t, from, cpu, Migration::Balance);
        self.util_migrate(t.0, from.0, c, cx);
        self.tasks[t.0].core = c;
        if self.class.wakeup_preempt(cpu, t) {
            self.cpus[c].resched = true;
        }
    }

    /// Big.LITTLE up-migration at core `c`'s tick, with both clusters online: placement may
    /// name a faster idle core for the thread running on `c`, which moves there at once if its
    /// affinity allows.
    pub(super) fn up_migrate(&mut self, c: usize, cx: &mut Cx<'_, '_>) {
        if !cx.soc.all_active {
            return;
        }
        let Some(t) = self.class.current(CpuId(c)).map(|t| t.0) else {
            return;
        };
        self.refresh_cpu_view(cx);
        let Some(to) = self.placement.up_migration_target(CpuId(c), &self.cpu_view) else {
            return;
        };
        if self.tasks[t].allowed.contains(to) {
            self.move_task(t, to.0, cx);
        }
    }

    /// `sched_setaffinity`: thread `t` may run on `allowed` only from now on; if it runs or
    /// waits on a core outside the mask it moves at once to the core placement picks inside it
    /// (Linux moves it through the migration stopper). A sleeping thread is placed by its
    /// affinity when it wakes.
    pub fn set_affinity_now(&mut self, t: usize, allowed: CpuMask, cx: &mut Cx<'_, '_>) {
        self.tasks[t].allowed = allowed;
        let th = &self.tasks[t];
        if !matches!(th.state, TState::Running | TState::Runnable)
            || allowed.contains(CpuId(th.core))
        {
            return;
        }
        let to = self.select_core(t, cx);
        if allowed.contains(CpuId(to)) {
            self.move_task(t, to, cx);
        }
    }

    fn is_idle_core(&self, c: usize, cx: &Cx<'_, '_>) -> bool {
        cx.soc.cores[c].state != CState::Offline
            && self.class.current(CpuId(c)).is_none()
            && self.class.nr_queued(CpuId(c)) == 0
            && self.cpus[c].kwork.is_empty()
    }

    /// The cores as placement sees them now.
    fn refresh_cpu_view(&mut self, cx: &Cx<'_, '_>) {
        let mut view = std::mem::take(&mut self.cpu_view);
        view.clear();
        view.extend((0..self.cpus.len()).map(|c| CpuState {
            cluster: cx.soc.cores[c].cluster,
            active: cx.soc.is_active(cx.soc.cores[c].cluster),
            online: cx.soc.cores[c].state != CState::Offline,
            idle: self.is_idle_core(c, cx),
            has_current: self.class.current(CpuId(c)).is_some(),
            nr_queued: self.class.nr_queued(CpuId(c)),
            allowed: true,
            load_avg: 0,
            util_avg: 0,
            capacity: cx.soc.cores[c].capacity,
        }));
        self.cpu_view = view;
    }

    /// The core a waking thread goes to: back to the queue the class still keeps it on (EEVDF's
    /// delayed dequeue), else where placement says.
    fn select_core(&mut self, t: usize, cx: &Cx<'_, '_>) -> usize {
        if let Some(c) = self.class.sleeping_on(TaskId(t)) {
            return c.0;
        }
        self.refresh_cpu_view(cx);
        let allowed = self.tasks[t].allowed;
        for (c, v) in self.cpu_view.iter_mut().enumerate() {
            v.allowed = allowed.contains(CpuId(c));
        }
        self.placement
            .select_cpu(TaskId(t), CpuId(self.tasks[t].core), &self.cpu_view)
            .0
    }
}
