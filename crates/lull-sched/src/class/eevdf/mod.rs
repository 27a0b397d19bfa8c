//! EEVDF (Earliest Eligible Virtual Deadline First), the rule Linux's fair class has used since
//! 6.6, with the behaviour and defaults of Linux 6.18 (`kernel/sched/fair.c`, feature switches
//! from `kernel/sched/features.h`): the [`Eevdf`] class.
//!
//! ## The model
//!
//! Every task (an *entity*) has a weight w ([`lull_model::weight::nice_to_weight`]), a virtual
//! runtime v that advances by ran × 1024 / w ([`calc_delta_fair_ns`]), a request length (its
//! *slice* r: the base slice, or the custom slice `sched_setattr` gave it) and a virtual deadline
//! d = v + r × 1024 / w set when a request starts. Each CPU's queue has a virtual time V, the
//! weighted mean of the vruntimes of the entities on it (the current one included). An entity's
//! lag w × (V − v) is the service it is owed; it is *eligible* when its lag is ≥ 0, and the CPU
//! runs the eligible entity with the earliest deadline. Lags sum to zero, so V is where an entity
//! that is owed nothing stands; an entity leaving the queue keeps its lag (`vlag` = V − v, in
//! virtual time) and is placed by it when it comes back.
//!
//! ## Linux 6.18 in this file
//!
//! | Linux (`fair.c`, `features.h`) | here |
//! |--------------------------------|------|
//! | `calc_delta_fair` | [`calc_delta_fair_ns`]: exact u128 arithmetic instead of `__calc_delta`'s inverse-weight approximation (`inv_weight`, a 32-bit fixed-point reciprocal) |
//! | `avg_vruntime`, `sum_w_vruntime`, `sum_weight`, `zero_vruntime`, `update_zero_vruntime` | `Eevdf::update_avg_vruntime` (V as a floor division of relative keys against a reference point that moves to V each time V is taken) |
//! | `vruntime_eligible`, `entity_eligible` | `Eevdf::vruntime_eligible`: Σ(v_i − v0)·w_i ≥ (v − v0)·W, no division |
//! | `entity_lag`, `update_entity_lag`, `cfs_rq_max_slice` | `Eevdf::entity_lag`: V − v clamped to ± calc_delta_fair(max slice + `TICK_NSEC`) |
//! | `place_entity` (`PLACE_LAG`, `PLACE_DEADLINE_INITIAL`, `PLACE_REL_DEADLINE`) | `Eevdf::place_entity` |
//! | `update_deadline`, `update_curr` | [`SchedClass::update_curr`], reported by [`SchedClass::tick`] |
//! | `pick_eevdf`, `pick_next_entity`, `set_next_entity` | [`SchedClass::pick_next`] |
//! | `set_protect_slice`, `update_protect_slice`, `protect_slice`, `cancel_protect_slice` (`RUN_TO_PARITY`) | `vprot`, set when an entity is picked |
//! | `check_preempt_wakeup_fair` (`PREEMPT_SHORT`) | [`SchedClass::wakeup_preempt`] |
//! | `dequeue_entity`, `set_delayed`, `finish_delayed_dequeue_entity`, `requeue_delayed_entity` (`DELAY_DEQUEUE`, `DELAY_ZERO`) | [`SchedClass::block`], [`SchedClass::pick_next`], [`SchedClass::enqueue`] |
//! | `reweight_entity`, `prio_changed_fair`, `__setparam_fair` | [`SchedClass::set_params`] |
//! | `migrate_task_rq_fair` with a non-sleep dequeue and an enqueue | [`SchedClass::migrate`] |
//! | `detach_tasks` walking `cfs_tasks` from its tail | [`SchedClass::steal_candidate`] |
//!
//! The feature switches are fields of [`Features`], [`Features::LINUX_6_18`] by default.
//!
//! ## Left out
//!
//! - `NEXT_BUDDY` (off by default) and `PICK_BUDDY`: in a single-level queue only `yield_to()`
//!   names a next buddy, and the protocol has no yield, so `PICK_BUDDY` never has one to pick.
//! - Group scheduling (the cgroup `cpu` controller), bandwidth control, the fair server, PELT.
//! - `SCHED_BATCH` / `SCHED_IDLE` and the idle-entity preemption rules: [`FairParams`] carries a
//!   weight and a slice, not a policy.
//! - `HRTICK` (off by default): a finished request is noticed at the next `update_curr`, as it is
//!   at a tick in Linux.
//! - The forced completions of a delayed dequeue (`task_dead_fair`, a class change,
//!   `wait_task_inactive`): the protocol has no such operation, so a delayed sleeper leaves when it
//!   is picked or woken, the two ordinary ways out.
//! - Cache-hot and affinity checks of `can_migrate_task`: the substrate's placement owns them.
//!
//! ## Where the arithmetic departs from the kernel's (on purpose)
//!
//! - [`calc_delta_fair_ns`] divides exactly (see above).
//! - Reweighting an entity on a queue places it at V − vlag·w/w′ directly, with the lag kept as a
//!   fraction until the last division; Linux 6.18 gets there by a dequeue, a rescale and
//!   `place_entity`, whose lag inflation multiplies the truncation of the rescaled lag by
//!   (W + w′)/W (microseconds of V for a nice −20 ↔ 19 change). The result is the kernel's
//!   position in exact arithmetic, and V moves by less than 1 ns. An expired protection stays
//!   expired across a reweight (6.18 keeps an expired `vprot` absolute, so moving vruntime left
//!   can revive it).

use super::{Enqueue, FairParams, Migration, SchedClass};
use crate::ids::{CpuId, TaskId};
use lull_model::weight::NICE_0_WEIGHT;

/// The base slice before scaling by the CPU count: `normalized_sysctl_sched_base_slice`, 0.7 ms
/// (`kernel/sched/fair.c`). Also the protection length `set_protect_slice` uses when
/// `RUN_TO_PARITY` is off.
pub const NORMALIZED_BASE_SLICE_NS: u64 = 700_000;
/// CPUs counted when scaling the base slice: `get_update_sysctl_factor` takes
/// `min(num_online_cpus(), 8)` (`kernel/sched/fair.c`).
pub const MAX_SCALED_CPUS: usize = 8;
/// Shortest custom slice: `__setparam_fair` clamps `sched_runtime` to `NSEC_PER_MSEC / 10`
/// (`kernel/sched/fair.c`, Linux 6.12 and later).
pub const MIN_CUSTOM_SLICE_NS: u64 = 100_000;
/// Longest custom slice: `__setparam_fair` clamps `sched_runtime` to `NSEC_PER_MSEC * 100`.
pub const MAX_CUSTOM_SLICE_NS: u64 = 100_000_000;
/// Where each queue's virtual time starts. Linux's `init_cfs_rq` starts `zero_vruntime` at
/// `(u64)-(1LL << 20)` so that wrapping shows early; the arithmetic here compares vruntimes by
/// signed differences as the kernel does and starts at 0 so that examples read plainly (a test
/// runs the same sequences from the kernel's starting point and checks the decisions agree).
pub const INITIAL_VRUNTIME: u64 = 0;

/// The base slice Linux uses on a machine with `cpus` online CPUs: `sysctl_sched_base_slice` =
/// 0.7 ms × (1 + ilog2(min(cpus, 8))), the default `SCHED_TUNABLESCALING_LOG` scaling
/// (`update_sysctl`, `get_update_sysctl_factor`). 0.7, 1.4, 2.1 and 2.8 ms for 1, 2, 4 and 8 or
/// more CPUs; no CPUs counts as one.
#[must_use]
pub fn default_base_slice_ns(cpus: usize) -> u64 {
    let counted = cpus.clamp(1, MAX_SCALED_CPUS);
    NORMALIZED_BASE_SLICE_NS * (1 + u64::from(counted.ilog2()))
}

/// The slice a custom request of `requested_ns` gets, as `__setparam_fair` clamps it.
#[must_use]
pub fn clamp_custom_slice_ns(requested_ns: u64) -> u64 {
    requested_ns.clamp(MIN_CUSTOM_SLICE_NS, MAX_CUSTOM_SLICE_NS)
}

/// Virtual time for `delta_ns` of real time at `weight`: delta × 1024 / w (`calc_delta_fair`).
/// Exact (u128, rounded down), where the kernel multiplies by a cached 32-bit reciprocal of the
/// weight; saturates at `u64::MAX`. A zero weight counts as 1.
#[must_use]
pub fn calc_delta_fair_ns(delta_ns: u64, weight: u32) -> u64 {
    if weight == NICE_0_WEIGHT {
        return delta_ns;
    }
    let v = u128::from(delta_ns) * u128::from(NICE_0_WEIGHT) / u128::from(weight.max(1));
    u64::try_from(v).unwrap_or(u64::MAX)
}

/// The `kernel/sched/features.h` switches that shape EEVDF. Each field is named after its feature.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Features {
    /// `PLACE_LAG`: an entity joining a queue is placed by the lag it left with.
    pub place_lag: bool,
    /// `PLACE_DEADLINE_INITIAL`: a new task's first request is half a slice.
    pub place_deadline_initial: bool,
    /// `PLACE_REL_DEADLINE`: a dequeue that is not a sleep (migration) keeps the deadline
    /// relative to the vruntime, so the request goes on where it was.
    pub place_rel_deadline: bool,
    /// `RUN_TO_PARITY`: a picked entity is protected until it reaches its deadline or has run the
    /// shortest slice on its queue; off, it is protected for [`NORMALIZED_BASE_SLICE_NS`] at most.
    pub run_to_parity: bool,
    /// `PREEMPT_SHORT`: a woken task with a shorter slice than the current one may preempt it
    /// inside its protection.
    pub preempt_short: bool,
    /// `DELAY_DEQUEUE`: an entity that sleeps while not eligible stays on its queue until it is
    /// picked or woken, so that sleeping does not erase the service it owes.
    pub delay_dequeue: bool,
    /// `DELAY_ZERO`: a delayed entity leaves (or is requeued) with its lag clamped to ≤ 0.
    pub delay_zero: bool,
}

impl Features {
    /// Linux 6.18's defaults: all on (`features.h`).
    pub const LINUX_6_18: Features = Features {
        place_lag: true,
        place_deadline_initial: true,
        place_rel_deadline: true,
        run_to_parity: true,
        preempt_short: true,
        delay_dequeue: true,
        delay_zero: true,
    };
}

impl Default for Features {
    fn default() -> Features {
        Features::LINUX_6_18
    }
}

/// The tunables of an [`Eevdf`] class.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct EevdfConfig {
    /// CPUs (run queues) the class schedules.
    pub cpus: usize,
    /// `sysctl_sched_base_slice`: the request length of a task without a custom slice.
    pub base_slice_ns: u64,
    /// The scheduler tick period (`TICK_NSEC`): lag is bounded by the longest slice plus a tick.
    pub tick_ns: u64,
    /// Feature switches.
    pub features: Features,
}

impl EevdfConfig {
    /// The configuration Linux 6.18 has on a machine with `cpus` CPUs and a `tick_ns` tick:
    /// `base_slice_ns`, or [`default_base_slice_ns`] for `cpus`, and the default features.
    #[must_use]
    pub fn for_machine(cpus: usize, tick_ns: u64, base_slice_ns: Option<u64>) -> EevdfConfig {
        EevdfConfig {
            cpus,
            base_slice_ns: base_slice_ns.unwrap_or_else(|| default_base_slice_ns(cpus)),
            tick_ns,
            features: Features::LINUX_6_18,
        }
    }
}

/// Where an entity is (`se->on_rq`, `cfs_rq->curr`, `se->sched_delayed`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum At {
    /// On no queue: asleep, or attached and not yet enqueued.
    Off,
    /// Waiting in `cpu`'s queue (the kernel's tree).
    Queued(CpuId),
    /// `cpu`'s current entity (out of the tree, still counted in V).
    Current(CpuId),
    /// Asleep but still in `cpu`'s queue (`DELAY_DEQUEUE`).
    Delayed(CpuId),
}

/// One task's EEVDF state (the fields of `struct sched_entity` this rule reads).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Entity {
    /// Load weight, at least 1.
    weight: u32,
    /// The clamped custom slice (`se->custom_slice`), if any.
    custom_slice_ns: Option<u64>,
    /// The request length (`se->slice`).
    slice_ns: u64,
    /// Virtual runtime, compared by signed differences (it may wrap).
    vruntime: u64,
    /// Virtual deadline of the current request.
    deadline: u64,
    /// V − v saved when the entity left its queue (`se->vlag`); meaningful while [`At::Off`].
    vlag: i64,
    /// End of the protected stretch (`se->vprot`); meaningful while current.
    vprot: u64,
    at: At,
    /// When it entered its queue's tree: the tie-break among equal deadlines (an rbtree inserts
    /// an equal key to the right).
    inserted: u64,
    /// When it was last enqueued on or picked from its queue: the position in `rq->cfs_tasks`,
    /// which `account_entity_enqueue` and `set_next_task_fair` move to the head.
    touched: u64,
}

/// How `place_entity` sets the deadline.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Deadline {
    /// A new task (`ENQUEUE_INITIAL`): half a slice with `PLACE_DEADLINE_INITIAL`.
    Initial,
    /// A new request of a whole slice.
    Fresh,
    /// The request goes on: the deadline this far past the vruntime (`se->rel_deadline`).
    Relative(i64),
}

/// One CPU's queue (`struct cfs_rq`).
#[derive(Clone, Debug)]
struct Rq {
    /// Waiting and delayed entities (the kernel's tree), in insertion order. Picks scan it: the
    /// queues a simulated CPU holds are short, and a scan keeps wrap-safe comparisons simple.
    tree: Vec<TaskId>,
    /// The current entity, out of the tree and of the sums, counted in V separately.
    curr: Option<TaskId>,
    /// The reference point v0 of the relative keys (`zero_vruntime`).
    zero_vruntime: u64,
    /// Σ (v_i − v0) × w_i over the tree (`sum_w_vruntime`).
    sum_w_vruntime: i128,
    /// Σ w_i over the tree (`sum_weight`).
    sum_weight: u64,
    /// Delayed entities in the tree.
    delayed: usize,
    /// A reschedule was requested (`resched_curr_lazy`) and not yet acted on.
    resched: bool,
    /// The task `put_prev` just put back: picking it again is Linux's `prev == next`, which
    /// neither renews its protection nor moves it in `cfs_tasks`.
    last_put: Option<TaskId>,
}

impl Rq {
    fn new(origin: u64) -> Rq {
        Rq {
            tree: Vec::new(),
            curr: None,
            zero_vruntime: origin,
            sum_w_vruntime: 0,
            sum_weight: 0,
            delayed: 0,
            resched: false,
            last_put: None,
        }
    }
}

/// The EEVDF class (see the module documentation).
///
/// Time reaches the class only through [`SchedClass::update_curr`]. Linux settles the current
/// entity's account before it enqueues, dequeues, puts back or checks a wakeup on its queue
/// (`update_curr` opens `enqueue_entity`, `dequeue_entity`, `put_prev_entity` and
/// `check_preempt_wakeup_fair`); a substrate calls `update_curr` before those operations so that
/// V is where Linux would have it.
#[derive(Clone, Debug)]
pub struct Eevdf {
    config: EevdfConfig,
    rqs: Vec<Rq>,
    tasks: Vec<Option<Entity>>,
    /// Orders insertions and touches.
    seq: u64,
}

fn sat_i64(x: i128) -> i64 {
    i64::try_from(x).unwrap_or(if x < 0 { i64::MIN } else { i64::MAX })
}

/// `a` is earlier than `b` in (possibly wrapping) virtual time.
fn vbefore(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// `protect_slice`: the entity has not run past its protected point.
fn protect_slice(e: &Entity) -> bool {
    vbefore(e.vruntime, e.vprot)
}

impl Eevdf {
    /// A class with `config`.
    #[must_use]
    pub fn new(config: EevdfConfig) -> Eevdf {
        Eevdf::with_origin(config, INITIAL_VRUNTIME)
    }

    fn with_origin(config: EevdfConfig, origin: u64) -> Eevdf {
        Eevdf {
            config,
            rqs: vec![Rq::new(origin); config.cpus],
            tasks: Vec::new(),
            seq: 0,
        }
    }

    /// The class's configuration.
    #[must_use]
    pub fn config(&self) -> &EevdfConfig {
        &self.config
    }

    /// A task's virtual runtime.
    #[must_use]
    pub fn vruntime(&self, task: TaskId) -> Option<u64> {
        self.get(task).map(|e| e.vruntime)
    }

    /// A task's virtual deadline.
    #[must_use]
    pub fn deadline(&self, task: TaskId) -> Option<u64> {
        self.get(task).map(|e| e.deadline)
    }

    /// A task's request length.
    #[must_use]
    pub fn slice_ns(&self, task: TaskId) -> Option<u64> {
        self.get(task).map(|e| e.slice_ns)
    }

    /// The lag (V − v, virtual ns) a task kept when it last left a queue (`se->vlag`).
    #[must_use]
    pub fn saved_lag(&self, task: TaskId) -> Option<i64> {
        self.get(task).map(|e| e.vlag)
    }

    /// Whether a task on a queue (waiting, current or delayed) is eligible; `None` off queues.
    #[must_use]
    pub fn is_eligible(&self, task: TaskId) -> Option<bool> {
        let e = self.get(task)?;
        match e.at {
            At::Queued(cpu) | At::Current(cpu) | At::Delayed(cpu) => {
                Some(self.vruntime_eligible(cpu, e.vruntime))
            }
            At::Off => None,
        }
    }

    /// V of `cpu`'s queue (`avg_vruntime`, rounded down); the reference point when it is empty.
    #[must_use]
    pub fn avg_vruntime(&self, cpu: CpuId) -> u64 {
        let rq = &self.rqs[cpu.0];
        rq.zero_vruntime.wrapping_add(self.avg_key(cpu) as u64)
    }

    /// The end of the current task's protected stretch (`vprot`), if `cpu` has a current task.
    #[must_use]
    pub fn protected_until(&self, cpu: CpuId) -> Option<u64> {
        self.rqs[cpu.0].curr.map(|t| self.ent(t).vprot)
    }

    fn get(&self, task: TaskId) -> Option<&Entity> {
        self.tasks.get(task.0).and_then(Option::as_ref)
    }

    fn ent(&self, task: TaskId) -> &Entity {
        self.get(task).expect("the substrate attached the task")
    }

    fn ent_mut(&mut self, task: TaskId) -> &mut Entity {
        self.tasks
            .get_mut(task.0)
            .and_then(Option::as_mut)
            .expect("the substrate attached the task")
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// `entity_key`: v − v0 as a signed distance.
    fn key(&self, cpu: CpuId, vruntime: u64) -> i64 {
        vruntime.wrapping_sub(self.rqs[cpu.0].zero_vruntime) as i64
    }

    /// Σ (v_i − v0)·w_i and Σ w_i over the queue, the current entity included.
    fn totals(&self, cpu: CpuId) -> (i128, i128) {
        let rq = &self.rqs[cpu.0];
        let (mut sum, mut weight) = (rq.sum_w_vruntime, i128::from(rq.sum_weight));
        if let Some(c) = rq.curr {
            let e = self.ent(c);
            sum += i128::from(self.key(cpu, e.vruntime)) * i128::from(e.weight);
            weight += i128::from(e.weight);
        }
        (sum, weight)
    }

    /// V − v0, rounded down as `avg_vruntime` rounds it (so that an entity placed at V with no lag
    /// is eligible).
    fn avg_key(&self, cpu: CpuId) -> i64 {
        let (sum, weight) = self.totals(cpu);
        if weight == 0 {
            0
        } else {
            sat_i64(sum.div_euclid(weight))
        }
    }

    /// `avg_vruntime` with its side effect: V, and the reference point moved to it
    /// (`update_zero_vruntime`: v0' = v0 + δ, Σ(v_i − v0')·w_i = Σ(v_i − v0)·w_i − δ·W), which
    /// keeps the keys lag-sized however long the queue runs.
    fn update_avg_vruntime(&mut self, cpu: CpuId) -> u64 {
        let delta = self.avg_key(cpu);
        let rq = &mut self.rqs[cpu.0];
        rq.sum_w_vruntime -= i128::from(rq.sum_weight) * i128::from(delta);
        rq.zero_vruntime = rq.zero_vruntime.wrapping_add(delta as u64);
        rq.zero_vruntime
    }

    /// `vruntime_eligible`: V ≥ v, decided as Σ(v_i − v0)·w_i ≥ (v − v0)·W without the rounding a
    /// division would bring.
    fn vruntime_eligible(&self, cpu: CpuId, vruntime: u64) -> bool {
        let (sum, weight) = self.totals(cpu);
        sum >= i128::from(self.key(cpu, vruntime)) * weight
    }

    fn entity_eligible(&self, cpu: CpuId, task: TaskId) -> bool {
        self.vruntime_eligible(cpu, self.ent(task).vruntime)
    }

    /// Linux's `cfs_rq->nr_queued`: entities on the queue, current and delayed ones included.
    fn nr_on_rq(&self, cpu: CpuId) -> usize {
        let rq = &self.rqs[cpu.0];
        rq.tree.len() + usize::from(rq.curr.is_some())
    }

    fn slices(&self, cpu: CpuId) -> impl Iterator<Item = u64> + '_ {
        let rq = &self.rqs[cpu.0];
        rq.curr
            .iter()
            .chain(rq.tree.iter())
            .map(|&t| self.ent(t).slice_ns)
    }

    /// `cfs_rq_min_slice`: the shortest slice on the queue, current entity included.
    fn min_slice(&self, cpu: CpuId) -> Option<u64> {
        self.slices(cpu).min()
    }

    /// `cfs_rq_max_slice`: the longest slice on the queue (0 when empty).
    fn max_slice(&self, cpu: CpuId) -> u64 {
        self.slices(cpu).max().unwrap_or(0)
    }

    /// The bound on a lag in `task`'s virtual time: calc_delta_fair(max slice + `TICK_NSEC`)
    /// (`entity_lag` in 6.18; the comment above it speaks of twice the slice, the code of the
    /// longest slice on the queue plus a tick).
    fn lag_limit(&self, cpu: CpuId, task: TaskId) -> i64 {
        let span = self.max_slice(cpu).saturating_add(self.config.tick_ns);
        sat_i64(i128::from(calc_delta_fair_ns(span, self.ent(task).weight)))
    }

    /// `entity_lag`: V − v, clamped by [`Eevdf::lag_limit`].
    fn entity_lag(&self, cpu: CpuId, task: TaskId, avg: u64) -> i64 {
        let limit = self.lag_limit(cpu, task);
        (avg.wrapping_sub(self.ent(task).vruntime) as i64).clamp(-limit, limit)
    }

    /// `update_entity_lag`: saves the lag of an entity still counted in V.
    fn update_entity_lag(&mut self, cpu: CpuId, task: TaskId) {
        let avg = self.update_avg_vruntime(cpu);
        let vlag = self.entity_lag(cpu, task, avg);
        self.ent_mut(task).vlag = vlag;
    }

    /// `__enqueue_entity`: into the tree and the sums.
    fn tree_add(&mut self, cpu: CpuId, task: TaskId) {
        let seq = self.next_seq();
        let e = self.ent(task);
        let (key, weight) = (self.key(cpu, e.vruntime), e.weight);
        let rq = &mut self.rqs[cpu.0];
        rq.tree.push(task);
        rq.sum_w_vruntime += i128::from(key) * i128::from(weight);
        rq.sum_weight += u64::from(weight);
        self.ent_mut(task).inserted = seq;
    }

    /// `__dequeue_entity`: out of the tree and the sums.
    fn tree_remove(&mut self, cpu: CpuId, task: TaskId) {
        let e = self.ent(task);
        let (key, weight) = (self.key(cpu, e.vruntime), e.weight);
        let rq = &mut self.rqs[cpu.0];
        let at = rq
            .tree
            .iter()
            .position(|&t| t == task)
            .unwrap_or_else(|| panic!("{task:?} is not queued on {cpu:?}"));
        rq.tree.remove(at);
        rq.sum_w_vruntime -= i128::from(key) * i128::from(weight);
        rq.sum_weight -= u64::from(weight);
    }

    /// `place_entity`, for an entity not yet counted in `cpu`'s V.
    ///
    /// - The slice goes back to the base slice unless the task has a custom one.
    /// - `PLACE_LAG`: v = V − vl with the saved lag inflated to vl = vl′ × (W + w_i) / W (W: the
    ///   weight already on the queue, current entity included), because adding the entity moves
    ///   V by −w_i·vl/(W + w_i); after it joins, its lag is vl′ again. An empty queue forgets the
    ///   lag (there is no one to owe or be owed).
    /// - The deadline: `PLACE_REL_DEADLINE` keeps a relative one; otherwise v + slice × 1024 / w,
    ///   halved for a new task (`PLACE_DEADLINE_INITIAL`: the others are on average half-way
    ///   through their requests).
    fn place_entity(&mut self, cpu: CpuId, task: TaskId, how: Deadline) {
        let avg = self.update_avg_vruntime(cpu);
        let (base, features) = (self.config.base_slice_ns, self.config.features);
        let (_, load) = self.totals(cpu);
        let queued = self.nr_on_rq(cpu);
        let e = self.ent_mut(task);
        if e.custom_slice_ns.is_none() {
            e.slice_ns = base;
        }
        let mut lag = 0i64;
        if features.place_lag && queued > 0 && e.vlag != 0 {
            // Linux warns on a zero load and divides by 1.
            let load = load.max(1);
            lag = sat_i64(i128::from(e.vlag) * (load + i128::from(e.weight)) / load);
        }
        e.vruntime = avg.wrapping_sub(lag as u64);
        e.deadline = match how {
            Deadline::Relative(rel) if features.place_rel_deadline => {
                e.vruntime.wrapping_add(rel as u64)
            }
            Deadline::Relative(_) | Deadline::Fresh | Deadline::Initial => {
                let mut vslice = calc_delta_fair_ns(e.slice_ns, e.weight);
                if how == Deadline::Initial && features.place_deadline_initial {
                    vslice /= 2;
                }
                e.vruntime.wrapping_add(vslice)
            }
        };
    }

    /// `update_deadline`: once the vruntime reaches the deadline the request is used up; a new
    /// one starts where the vruntime is (slice back to the base slice unless custom), and the
    /// caller asks for a reschedule.
    fn update_deadline(&mut self, cpu: CpuId, task: TaskId) -> bool {
        let base = self.config.base_slice_ns;
        let e = self.ent_mut(task);
        if vbefore(e.vruntime, e.deadline) {
            return false;
        }
        if e.custom_slice_ns.is_none() {
            e.slice_ns = base;
        }
        e.deadline = e
            .vruntime
            .wrapping_add(calc_delta_fair_ns(e.slice_ns, e.weight));
        self.update_avg_vruntime(cpu);
        true
    }

    /// `pick_eevdf`: the eligible entity with the earliest deadline.
    ///
    /// - A lone entity is picked whatever its lag (`nr_queued == 1`).
    /// - The current entity stays a candidate only while eligible; with `protect` it is kept
    ///   outright while inside its protected stretch (`protect_slice`).
    /// - In the tree, the earliest deadline among eligible entities wins, ties going to the one
    ///   inserted first (the kernel's leftmost-then-heap search finds that one).
    /// - The current entity beats the tree's choice only with a strictly earlier deadline.
    fn pick_eevdf(&self, cpu: CpuId, protect: bool) -> Option<TaskId> {
        let rq = &self.rqs[cpu.0];
        if self.nr_on_rq(cpu) == 1 {
            return rq.curr.or_else(|| rq.tree.first().copied());
        }
        let curr = rq.curr.filter(|&c| self.entity_eligible(cpu, c));
        if let Some(c) = curr {
            if protect && protect_slice(self.ent(c)) {
                return Some(c);
            }
        }
        let best = rq
            .tree
            .iter()
            .copied()
            .filter(|&t| self.entity_eligible(cpu, t))
            .min_by_key(|&t| {
                let e = self.ent(t);
                (self.key(cpu, e.deadline), e.inserted)
            });
        match (best, curr) {
            (Some(b), Some(c)) if vbefore(self.ent(c).deadline, self.ent(b).deadline) => Some(c),
            (Some(b), _) => Some(b),
            (None, c) => c,
        }
    }

    /// `set_protect_slice`, for an entity just taken out of the tree and not yet current: it is
    /// protected up to its deadline, or for the shortest slice left on the queue if that is
    /// shorter (`RUN_TO_PARITY`; without it, for at most [`NORMALIZED_BASE_SLICE_NS`]).
    fn set_protect_slice(&mut self, cpu: CpuId, task: TaskId) {
        let quantum = if self.config.features.run_to_parity {
            self.min_slice(cpu).unwrap_or(u64::MAX)
        } else {
            NORMALIZED_BASE_SLICE_NS
        };
        let e = self.ent_mut(task);
        let quantum = quantum.min(e.slice_ns);
        let mut vprot = e.deadline;
        if quantum != e.slice_ns {
            let end = e
                .vruntime
                .wrapping_add(calc_delta_fair_ns(quantum, e.weight));
            if vbefore(end, vprot) {
                vprot = end;
            }
        }
        e.vprot = vprot;
    }

    /// `update_protect_slice`: a shorter slice joined the queue; the current entity's protection
    /// ends no later than that slice from now.
    fn update_protect_slice(&mut self, cpu: CpuId, task: TaskId) {
        let quantum = self.min_slice(cpu).unwrap_or(u64::MAX);
        let e = self.ent_mut(task);
        let end = e
            .vruntime
            .wrapping_add(calc_delta_fair_ns(quantum, e.weight));
        if vbefore(end, e.vprot) {
            e.vprot = end;
        }
    }

    /// The heart of `check_preempt_wakeup_fair` (6.17 and later): `do_preempt_short` is set when
    /// the woken entity has a shorter slice (`PREEMPT_SHORT`); the pick then ignores the current
    /// entity's protection, and the woken entity preempts when it is the pick — so it must be
    /// eligible and have the earliest deadline among the eligible. A short-slice preemption
    /// cancels what is left of the protection (`cancel_protect_slice`); a short-slice wakeup
    /// that does not preempt shortens it to the new shortest slice (`update_protect_slice`).
    /// (6.12–6.16 decided `do_preempt_short` first — eligible, shorter slice, earlier deadline or
    /// an ineligible current — and cancelled the protection even when the pick then went
    /// elsewhere.)
    fn check_preempt(&mut self, cpu: CpuId, curr: TaskId, woken: TaskId) -> bool {
        let features = self.config.features;
        let do_preempt_short =
            features.preempt_short && self.ent(woken).slice_ns < self.ent(curr).slice_ns;
        if self.pick_eevdf(cpu, !do_preempt_short) == Some(woken) {
            if do_preempt_short {
                let c = self.ent_mut(curr);
                if protect_slice(c) {
                    c.vprot = c.vruntime;
                }
            }
            self.rqs[cpu.0].resched = true;
            return true;
        }
        if features.run_to_parity && do_preempt_short {
            self.update_protect_slice(cpu, curr);
        }
        false
    }

    /// The end of a delayed dequeue (`dequeue_entities` with `DEQUEUE_DELAYED`,
    /// `finish_delayed_dequeue_entity`): the lag is saved, clamped to ≤ 0 with `DELAY_ZERO`.
    fn finish_delayed_dequeue(&mut self, cpu: CpuId, task: TaskId) {
        self.update_entity_lag(cpu, task);
        self.tree_remove(cpu, task);
        self.rqs[cpu.0].delayed -= 1;
        let delay_zero = self.config.features.delay_zero;
        let e = self.ent_mut(task);
        if delay_zero && e.vlag > 0 {
            e.vlag = 0;
        }
        e.at = At::Off;
    }

    /// `requeue_delayed_entity`: a delayed entity woke before it was picked. With `DELAY_ZERO`,
    /// one whose lag has turned positive is placed afresh at V (lag 0, a new request); one still
    /// owing service stays where it is.
    fn requeue_delayed(&mut self, cpu: CpuId, task: TaskId) {
        if self.config.features.delay_zero {
            self.update_entity_lag(cpu, task);
            if self.ent(task).vlag > 0 {
                self.tree_remove(cpu, task);
                self.ent_mut(task).vlag = 0;
                self.place_entity(cpu, task, Deadline::Fresh);
                self.tree_add(cpu, task);
            }
        }
        self.rqs[cpu.0].delayed -= 1;
        self.ent_mut(task).at = At::Queued(cpu);
    }

    /// `reweight_entity` for an entity on `cpu`'s queue: lag_i = w_i·(V − v_i) is kept, so
    /// vlag′ = vlag·w/w′ and v′ = V − vlag′, which leaves V where it was; the deadline (and the
    /// current entity's protected point) stay as far from V in real time: (d − V)·w/w′. The lag
    /// is clamped first, as `update_entity_lag` does. See the module documentation for how this
    /// differs from 6.18's step-by-step arithmetic.
    fn reweight_on_rq(&mut self, cpu: CpuId, task: TaskId, weight: u32) {
        let avg = self.update_avg_vruntime(cpu);
        let (sum, total) = self.totals(cpu);
        let e = *self.ent(task);
        let in_tree = matches!(e.at, At::Queued(_) | At::Delayed(_));
        let (old, new) = (i128::from(e.weight), i128::from(weight));
        // W·(V − v) exactly: V = v0 + sum / total before rounding.
        let limit = i128::from(self.lag_limit(cpu, task)) * total;
        let lag_num = (sum - i128::from(self.key(cpu, e.vruntime)) * total).clamp(-limit, limit);
        // v′ − v0 = sum/total − (old/new)·lag_num/total, to the nearest nanosecond.
        let den = total * new;
        let key = sat_i64((sum * new - old * lag_num + den / 2).div_euclid(den));
        let scale = |rel: u64| sat_i64(i128::from(rel.wrapping_sub(avg) as i64) * old / new);
        let deadline = avg.wrapping_add(scale(e.deadline) as u64);
        // Current in Linux's sense: running, or put back and not yet picked again (picking it
        // then is `prev == next`, which never stopped it being current), so a live protection
        // is rescaled (`rel_vprot`), not ended.
        let current = match e.at {
            At::Current(_) => true,
            At::Queued(on) => self.rqs[on.0].last_put == Some(task),
            At::Delayed(_) | At::Off => false,
        };
        let protected = current && protect_slice(&e);
        let vprot_rel = scale(e.vprot);
        if in_tree {
            self.tree_remove(cpu, task);
        }
        let vruntime = self.rqs[cpu.0].zero_vruntime.wrapping_add(key as u64);
        let ent = self.ent_mut(task);
        ent.weight = weight;
        ent.vruntime = vruntime;
        ent.deadline = deadline;
        ent.vprot = if protected {
            avg.wrapping_add(vprot_rel as u64)
        } else {
            vruntime
        };
        ent.vlag = avg.wrapping_sub(vruntime) as i64;
        if in_tree {
            let inserted = e.inserted;
            self.tree_add(cpu, task);
            // Still the same node in the kernel's tree: keep its tie-break position.
            self.ent_mut(task).inserted = inserted;
        }
    }

    #[cfg(test)]
    fn check_invariants(&self) {
        for (i, rq) in self.rqs.iter().enumerate() {
            let cpu = CpuId(i);
            let (mut sum, mut weight, mut delayed) = (0i128, 0u64, 0usize);
            for &t in &rq.tree {
                let e = self.ent(t);
                sum += i128::from(self.key(cpu, e.vruntime)) * i128::from(e.weight);
                weight += u64::from(e.weight);
                match e.at {
                    At::Delayed(c) if c == cpu => delayed += 1,
                    At::Queued(c) if c == cpu => {}
                    other => panic!("{t:?} in {cpu:?}'s tree is {other:?}"),
                }
            }
            assert_eq!(rq.sum_w_vruntime, sum, "{cpu:?} key sum");
            assert_eq!(rq.sum_weight, weight, "{cpu:?} weight sum");
            assert_eq!(rq.delayed, delayed, "{cpu:?} delayed count");
            if let Some(c) = rq.curr {
                assert_eq!(self.ent(c).at, At::Current(cpu));
                assert!(!rq.tree.contains(&c));
            }
        }
        for (i, e) in self.tasks.iter().enumerate() {
            let Some(e) = e else { continue };
            let t = TaskId(i);
            match e.at {
                At::Off => {}
                At::Current(c) => assert_eq!(self.rqs[c.0].curr, Some(t)),
                At::Queued(c) | At::Delayed(c) => assert!(self.rqs[c.0].tree.contains(&t)),
            }
        }
    }
}

impl SchedClass for Eevdf {
    fn name(&self) -> &'static str {
        "eevdf"
    }

    /// `__sched_fork`: no lag, no history; `__setparam_fair` for the slice. A zero weight counts
    /// as 1, so that no division is by zero (a task's weight in the kernel is never below 15).
    fn attach(&mut self, task: TaskId, params: FairParams) {
        if self.tasks.len() <= task.0 {
            self.tasks.resize(task.0 + 1, None);
        }
        if let Some(e) = &self.tasks[task.0] {
            assert_eq!(e.at, At::Off, "{task:?} attached again while on a queue");
        }
        let custom_slice_ns = params
            .custom_slice_ns
            .filter(|&s| s != 0)
            .map(clamp_custom_slice_ns);
        self.tasks[task.0] = Some(Entity {
            weight: params.weight.max(1),
            custom_slice_ns,
            slice_ns: custom_slice_ns.unwrap_or(self.config.base_slice_ns),
            vruntime: INITIAL_VRUNTIME,
            deadline: INITIAL_VRUNTIME,
            vlag: 0,
            vprot: INITIAL_VRUNTIME,
            at: At::Off,
            inserted: 0,
            touched: 0,
        });
    }

    /// `__setparam_fair` for the slice (a zero or absent custom slice means the base slice; the
    /// request under way keeps its deadline, the next one uses the new slice) and
    /// `reweight_entity` for the weight: off a queue, the saved lag is scaled by w/w′; on one,
    /// see `reweight_on_rq`. Then `prio_changed_fair`: a current task made lighter is asked to
    /// reschedule, a waiting one made heavier is checked as a wakeup; the request is reported by
    /// the next [`SchedClass::tick`].
    fn set_params(&mut self, task: TaskId, params: FairParams) {
        let base = self.config.base_slice_ns;
        let weight = params.weight.max(1);
        let custom_slice_ns = params
            .custom_slice_ns
            .filter(|&s| s != 0)
            .map(clamp_custom_slice_ns);
        let e = *self.ent(task);
        // Linux saves the lag (clamped by the slices of the moment) before it changes anything.
        let cpu = match e.at {
            _ if weight == e.weight => None,
            At::Off => {
                let ent = self.ent_mut(task);
                ent.vlag = sat_i64(i128::from(e.vlag) * i128::from(e.weight) / i128::from(weight));
                ent.weight = weight;
                None
            }
            At::Queued(cpu) | At::Current(cpu) | At::Delayed(cpu) => {
                self.reweight_on_rq(cpu, task, weight);
                Some(cpu)
            }
        };
        let ent = self.ent_mut(task);
        ent.custom_slice_ns = custom_slice_ns;
        ent.slice_ns = custom_slice_ns.unwrap_or(base);
        let Some(cpu) = cpu else {
            return;
        };
        if self.nr_on_rq(cpu) == 1 {
            return;
        }
        match (e.at, self.rqs[cpu.0].curr) {
            (At::Current(_), _) if weight < e.weight => self.rqs[cpu.0].resched = true,
            (At::Queued(_), Some(curr)) if !self.rqs[cpu.0].resched => {
                self.check_preempt(cpu, curr, task);
            }
            _ => {}
        }
    }

    /// `enqueue_entity` (`place_entity`, then into the tree) for a task off every queue; for a
    /// delayed sleeper, `requeue_delayed_entity` on its own queue.
    fn enqueue(&mut self, cpu: CpuId, task: TaskId, how: Enqueue) {
        match self.ent(task).at {
            At::Delayed(on) => {
                assert_eq!(
                    on, cpu,
                    "{task:?} sleeps on {on:?}'s queue, enqueued on {cpu:?}"
                );
                self.requeue_delayed(cpu, task);
            }
            At::Off => {
                let deadline = match how {
                    Enqueue::New => {
                        self.ent_mut(task).vlag = 0;
                        Deadline::Initial
                    }
                    Enqueue::Wakeup => Deadline::Fresh,
                };
                self.place_entity(cpu, task, deadline);
                self.tree_add(cpu, task);
                let seq = self.next_seq();
                let e = self.ent_mut(task);
                e.at = At::Queued(cpu);
                e.touched = seq;
            }
            other => panic!("{task:?} enqueued on {cpu:?} while {other:?}"),
        }
    }

    /// `dequeue_entity` with `DEQUEUE_SLEEP`. The current task, if not eligible, stays on the
    /// queue as a delayed sleeper (`DELAY_DEQUEUE`, `set_delayed`): still in V and in the
    /// queue's weight, not counted by [`SchedClass::nr_queued`]. Otherwise its lag is saved and
    /// it leaves. A task blocked while waiting never ran into its sleep: Linux stops such a task
    /// only through a special state (frozen, stopped) with `DEQUEUE_SPECIAL`, which is never
    /// delayed, so it leaves at once with its lag.
    fn block(&mut self, cpu: CpuId, task: TaskId) {
        match self.ent(task).at {
            At::Current(on) if on == cpu => {
                let delay = self.config.features.delay_dequeue && !self.entity_eligible(cpu, task);
                let rq = &mut self.rqs[cpu.0];
                rq.resched = false;
                rq.last_put = None;
                if delay {
                    rq.curr = None;
                    rq.delayed += 1;
                    self.tree_add(cpu, task);
                    self.ent_mut(task).at = At::Delayed(cpu);
                } else {
                    self.update_entity_lag(cpu, task);
                    self.rqs[cpu.0].curr = None;
                    self.ent_mut(task).at = At::Off;
                }
            }
            At::Queued(on) if on == cpu => {
                self.update_entity_lag(cpu, task);
                self.tree_remove(cpu, task);
                self.ent_mut(task).at = At::Off;
            }
            other => panic!("{task:?} blocked on {cpu:?} while {other:?}"),
        }
    }

    /// A dequeue that is not a sleep (lag saved; with `PLACE_REL_DEADLINE` the deadline kept
    /// relative to the vruntime) and an enqueue on `to` placed by that lag against `to`'s V. EEVDF
    /// treats [`Migration::Balance`] and [`Migration::Evacuate`] alike: its vruntimes mean
    /// nothing outside their queue, and lag is what moves. A delayed sleeper may be moved too (an
    /// evacuated CPU's queue); it stays delayed on `to`, as Linux's `migrate_load` balancing
    /// moves it.
    fn migrate(&mut self, task: TaskId, from: CpuId, to: CpuId, _how: Migration) {
        let delayed = match self.ent(task).at {
            At::Queued(on) if on == from => false,
            At::Delayed(on) if on == from => true,
            other => panic!("{task:?} migrated from {from:?} while {other:?}"),
        };
        self.update_entity_lag(from, task);
        let e = *self.ent(task);
        let deadline = if self.config.features.place_rel_deadline {
            Deadline::Relative(e.deadline.wrapping_sub(e.vruntime) as i64)
        } else {
            Deadline::Fresh
        };
        self.tree_remove(from, task);
        if delayed {
            self.rqs[from.0].delayed -= 1;
            self.rqs[to.0].delayed += 1;
        }
        self.place_entity(to, task, deadline);
        self.tree_add(to, task);
        let seq = self.next_seq();
        let ent = self.ent_mut(task);
        ent.at = if delayed {
            At::Delayed(to)
        } else {
            At::Queued(to)
        };
        ent.touched = seq;
    }

    /// `pick_next_entity` + `set_next_entity`: the `pick_eevdf` choice leaves the tree,
    /// is protected (`set_protect_slice`, unless it is the task just put back: Linux's
    /// `prev == next` keeps the old protection) and becomes current. A delayed sleeper picked
    /// this way finishes its dequeue and the pick starts again.
    fn pick_next(&mut self, cpu: CpuId, _now_ns: u64) -> Option<TaskId> {
        let rq = &mut self.rqs[cpu.0];
        assert!(rq.curr.is_none(), "pick on {cpu:?} with a current task");
        let last_put = rq.last_put.take();
        rq.resched = false;
        loop {
            let task = self.pick_eevdf(cpu, true)?;
            if self.ent(task).at == At::Delayed(cpu) {
                self.finish_delayed_dequeue(cpu, task);
                continue;
            }
            self.tree_remove(cpu, task);
            if last_put != Some(task) {
                self.set_protect_slice(cpu, task);
                let seq = self.next_seq();
                self.ent_mut(task).touched = seq;
            }
            self.ent_mut(task).at = At::Current(cpu);
            self.rqs[cpu.0].curr = Some(task);
            return Some(task);
        }
    }

    /// `put_prev_entity`: the current entity goes back into the tree.
    fn put_prev(&mut self, cpu: CpuId) {
        let rq = &mut self.rqs[cpu.0];
        let Some(task) = rq.curr.take() else {
            return;
        };
        rq.resched = false;
        rq.last_put = Some(task);
        self.tree_add(cpu, task);
        self.ent_mut(task).at = At::Queued(cpu);
    }

    /// `update_curr`: the vruntime advances by calc_delta_fair(ran); `update_deadline` starts a
    /// new request once the deadline is reached. With another entity on the queue (a delayed
    /// sleeper counts, as in `cfs_rq->nr_queued`), a finished request or a protection run out
    /// requests a reschedule (`resched_curr_lazy`), which [`SchedClass::tick`] reports.
    fn update_curr(&mut self, cpu: CpuId, ran_ns: u64) {
        let Some(task) = self.rqs[cpu.0].curr else {
            return;
        };
        if ran_ns == 0 {
            return;
        }
        let e = self.ent_mut(task);
        e.vruntime = e
            .vruntime
            .wrapping_add(calc_delta_fair_ns(ran_ns, e.weight));
        let resched = self.update_deadline(cpu, task);
        if self.nr_on_rq(cpu) == 1 {
            return;
        }
        if resched || !protect_slice(self.ent(task)) {
            self.rqs[cpu.0].resched = true;
        }
    }

    /// `task_tick_fair` leaves the decision to `update_curr`, which the substrate runs for the
    /// tick's time first: true while a reschedule is requested and not yet acted on.
    fn tick(&mut self, cpu: CpuId, _now_ns: u64) -> bool {
        let rq = &self.rqs[cpu.0];
        rq.curr.is_some() && rq.resched
    }

    /// `check_preempt_wakeup_fair` (see `check_preempt`). A reschedule already requested is
    /// reported again (Linux returns early because `need_resched` is set and will be acted on).
    /// A new task is checked like any wakeup: 6.18 looks at `WF_FORK` only for `NEXT_BUDDY`.
    fn wakeup_preempt(&mut self, cpu: CpuId, woken: TaskId) -> bool {
        let Some(curr) = self.rqs[cpu.0].curr else {
            return false;
        };
        if curr == woken {
            return false;
        }
        if self.rqs[cpu.0].resched {
            return true;
        }
        if self.ent(woken).at != At::Queued(cpu) {
            return false;
        }
        self.check_preempt(cpu, curr, woken)
    }

    fn current(&self, cpu: CpuId) -> Option<TaskId> {
        self.rqs[cpu.0].curr
    }

    /// Waiting tasks: the tree without its delayed sleepers (Linux's `h_nr_runnable`).
    fn nr_queued(&self, cpu: CpuId) -> usize {
        let rq = &self.rqs[cpu.0];
        rq.tree.len() - rq.delayed
    }

    /// The waiting task least recently enqueued on or picked from `cpu`: the tail of Linux's
    /// `cfs_tasks`, where `detach_tasks` starts. Never the current task nor a delayed sleeper
    /// (`can_migrate_task` refuses both outside `migrate_load` balancing).
    fn steal_candidate(&self, cpu: CpuId, movable: &dyn Fn(TaskId) -> bool) -> Option<TaskId> {
        self.rqs[cpu.0]
            .tree
            .iter()
            .copied()
            .filter(|&t| self.ent(t).at == At::Queued(cpu) && movable(t))
            .min_by_key(|&t| self.ent(t).touched)
    }

    fn sleeping_on(&self, task: TaskId) -> Option<CpuId> {
        match self.get(task)?.at {
            At::Delayed(cpu) => Some(cpu),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
