//! EEVDF's properties over random sequences of wakeups, sleeps, ticks and migrations: the
//! invariants hold after every step, and every pick equals a reference `pick_eevdf` written
//! from the kernel's structure ([`reference_pick`]).

use super::*;
use proptest::prelude::*;

const TASKS: usize = 5;

#[derive(Clone, Debug)]
enum Op {
    Wake {
        task: usize,
        cpu: usize,
        act: bool,
    },
    Block {
        task: usize,
    },
    Run {
        cpu: usize,
        ran_ns: u64,
    },
    Pick {
        cpu: usize,
    },
    PutPrev {
        cpu: usize,
    },
    Tick {
        cpu: usize,
    },
    Params {
        task: usize,
        nice: i8,
        slice_ns: Option<u64>,
    },
    Steal {
        from: usize,
        evacuate: bool,
    },
    MoveSleeper {
        task: usize,
    },
}

fn ops(cpus: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => (0..TASKS, 0..cpus, any::<bool>())
            .prop_map(|(task, cpu, act)| Op::Wake { task, cpu, act }),
        2 => (0..TASKS).prop_map(|task| Op::Block { task }),
        4 => (0..cpus, 0u64..3_000_000).prop_map(|(cpu, ran_ns)| Op::Run { cpu, ran_ns }),
        2 => (0..cpus).prop_map(|cpu| Op::Pick { cpu }),
        1 => (0..cpus).prop_map(|cpu| Op::PutPrev { cpu }),
        3 => (0..cpus).prop_map(|cpu| Op::Tick { cpu }),
        2 => (0..TASKS, -20i8..=19, proptest::option::of(0u64..200_000_000))
            .prop_map(|(task, nice, slice_ns)| Op::Params { task, nice, slice_ns }),
        1 => (0..cpus, any::<bool>()).prop_map(|(from, evacuate)| Op::Steal { from, evacuate }),
        1 => (0..TASKS).prop_map(|task| Op::MoveSleeper { task }),
    ];
    proptest::collection::vec(op, 1..200)
}

fn features() -> impl Strategy<Value = Features> {
    any::<[bool; 7]>().prop_map(|f| Features {
        place_lag: f[0],
        place_deadline_initial: f[1],
        place_rel_deadline: f[2],
        run_to_parity: f[3],
        preempt_short: f[4],
        delay_dequeue: f[5],
        delay_zero: f[6],
    })
}

/// What the class answered, to compare runs.
#[derive(Clone, PartialEq, Eq, Debug)]
enum Seen {
    Picked(Option<TaskId>),
    Said(bool),
    Stole(Option<TaskId>),
}

/// A substrate keeping the protocol: where each runnable task is queued.
struct Driver {
    class: Eevdf,
    cpus: usize,
    runnable: [Option<CpuId>; TASKS],
    started: [bool; TASKS],
    seen: Vec<Seen>,
}

impl Driver {
    fn new(cpus: usize, features: Features, origin: u64, params: &[FairParams]) -> Driver {
        let config = EevdfConfig {
            features,
            ..EevdfConfig::for_machine(cpus, TICK_NS, None)
        };
        let mut class = Eevdf::with_origin(config, origin);
        for (i, &p) in params.iter().enumerate() {
            class.attach(TaskId(i), p);
        }
        Driver {
            class,
            cpus,
            runnable: [None; TASKS],
            started: [false; TASKS],
            seen: Vec::new(),
        }
    }

    fn pick(&mut self, cpu: CpuId) {
        let picked = self.class.pick_next(cpu, 0);
        if let Some(t) = picked {
            assert_eq!(
                self.runnable[t.0],
                Some(cpu),
                "picked a task not runnable here"
            );
        }
        self.seen.push(Seen::Picked(picked));
    }

    fn apply(&mut self, op: &Op) {
        let other = |c: usize, cpus: usize| CpuId((c + 1) % cpus);
        match *op {
            Op::Wake { task, cpu, act } if self.runnable[task].is_none() => {
                let t = TaskId(task);
                let cpu = self.class.sleeping_on(t).unwrap_or(CpuId(cpu));
                let how = if self.started[task] {
                    Enqueue::Wakeup
                } else {
                    Enqueue::New
                };
                self.class.enqueue(cpu, t, how);
                self.runnable[task] = Some(cpu);
                self.started[task] = true;
                let preempt = self.class.wakeup_preempt(cpu, t);
                self.seen.push(Seen::Said(preempt));
                if preempt && act {
                    self.class.put_prev(cpu);
                    self.pick(cpu);
                }
            }
            Op::Block { task } => {
                if let Some(cpu) = self.runnable[task].take() {
                    self.class.block(cpu, TaskId(task));
                }
            }
            Op::Run { cpu, ran_ns } => self.class.update_curr(CpuId(cpu), ran_ns),
            Op::Pick { cpu } if self.class.current(CpuId(cpu)).is_none() => {
                self.pick(CpuId(cpu));
            }
            Op::PutPrev { cpu } => self.class.put_prev(CpuId(cpu)),
            Op::Tick { cpu } => {
                let cpu = CpuId(cpu);
                let yield_now = self.class.tick(cpu, 0);
                self.seen.push(Seen::Said(yield_now));
                if yield_now {
                    self.class.put_prev(cpu);
                    self.pick(cpu);
                }
            }
            Op::Params {
                task,
                nice,
                slice_ns,
            } => self.set_params(TaskId(task), nice, slice_ns),
            Op::Steal { from, evacuate } if self.cpus > 1 => {
                let from = CpuId(from);
                let stolen = self.class.steal_candidate(from, &|_| true);
                self.seen.push(Seen::Stole(stolen));
                if let Some(t) = stolen {
                    assert_eq!(self.runnable[t.0], Some(from));
                    assert_ne!(self.class.current(from), Some(t));
                    let to = other(from.0, self.cpus);
                    let how = if evacuate {
                        Migration::Evacuate
                    } else {
                        Migration::Balance
                    };
                    self.class.migrate(t, from, to, how);
                    self.runnable[t.0] = Some(to);
                }
            }
            Op::MoveSleeper { task } if self.cpus > 1 => {
                let t = TaskId(task);
                if let Some(from) = self.class.sleeping_on(t) {
                    let to = other(from.0, self.cpus);
                    self.class.migrate(t, from, to, Migration::Evacuate);
                    assert_eq!(self.class.sleeping_on(t), Some(to));
                }
            }
            _ => {}
        }
        self.check();
    }

    /// A reweight of a task on a queue leaves V where it was, unless its lag had to be
    /// clamped: V is compared as the class reports it (rounded down to whole
    /// nanoseconds), so it may read 1 ns off when the exact value sits near a whole
    /// nanosecond; v′ itself is rounded to the nearest nanosecond, which moves the exact
    /// V by less than w′/W′ < 1 ns.
    fn set_params(&mut self, t: TaskId, nice: i8, slice_ns: Option<u64>) {
        let params = FairParams {
            custom_slice_ns: slice_ns,
            ..FairParams::nice(nice)
        };
        let before = *self.class.ent(t);
        let cpu = match before.at {
            At::Queued(c) | At::Current(c) | At::Delayed(c) => Some(c),
            At::Off => None,
        };
        let measured = cpu.map(|c| {
            let v0 = self.class.avg_vruntime(c);
            let lag = v0.wrapping_sub(before.vruntime) as i64;
            let unclamped = lag.abs() + 1 < self.class.lag_limit(c, t);
            (c, v0, lag, unclamped)
        });
        self.class.set_params(t, params);
        let after = *self.class.ent(t);
        match measured {
            Some((c, v0, lag, true)) => {
                let v1 = self.class.avg_vruntime(c);
                let moved = v1.wrapping_sub(v0) as i64;
                assert!(moved.abs() <= 1, "V moved by {moved} ns");
                // w′·lag′ = w·lag up to the rounding of v′ (< 1 ns of w′), of V
                // before and after (< 1 ns of w and of w′).
                let (w, w1) = (i128::from(before.weight), i128::from(after.weight));
                let lag1 = i128::from(v1.wrapping_sub(after.vruntime) as i64);
                let err = (w1 * lag1 - w * i128::from(lag)).abs();
                assert!(err <= 2 * w1 + w, "lag·w moved by {err}");
            }
            Some((_, _, _, false)) => {}
            None => {
                let scaled =
                    i128::from(before.vlag) * i128::from(before.weight) / i128::from(after.weight);
                assert_eq!(i128::from(after.vlag), scaled);
            }
        }
    }

    fn check(&self) {
        self.class.check_invariants();
        for i in 0..self.cpus {
            let cpu = CpuId(i);
            for protect in [true, false] {
                assert_eq!(
                    self.class.pick_eevdf(cpu, protect),
                    reference_pick(&self.class, cpu, protect),
                    "{cpu:?} pick (protect {protect})"
                );
            }
            let here = self.runnable.iter().filter(|&&c| c == Some(cpu)).count();
            let class_count =
                self.class.nr_queued(cpu) + usize::from(self.class.current(cpu).is_some());
            assert_eq!(class_count, here, "{cpu:?} runnable count");
            // Σ w_i·(V − v_i) over the queue. V is the weighted mean, so the sum is 0
            // but for V's rounding down to a whole nanosecond: in (−W, 0]. What this
            // checks is that the sums V is computed from (relative keys against a
            // moving reference point) agree with the entities after every operation.
            let avg = self.class.avg_vruntime(cpu);
            let rq = &self.class.rqs[i];
            let (mut lag_sum, mut weight) = (0i128, 0i128);
            for &t in rq.curr.iter().chain(rq.tree.iter()) {
                let e = self.class.ent(t);
                lag_sum += i128::from(e.weight) * i128::from(avg.wrapping_sub(e.vruntime) as i64);
                weight += i128::from(e.weight);
            }
            assert!(
                lag_sum <= 0 && (weight == 0 || lag_sum > -weight),
                "{cpu:?}: Σ w·lag = {lag_sum}, W = {weight}"
            );
        }
        for (i, &at) in self.runnable.iter().enumerate() {
            let t = TaskId(i);
            if at.is_none() {
                assert!((0..self.cpus).all(|c| self.class.current(CpuId(c)) != Some(t)));
            } else {
                assert_eq!(self.class.sleeping_on(t), None);
            }
        }
    }
}

/// Linux 6.18's `pick_eevdf` written from the kernel's structure, independently of the
/// class's: eligibility as Σ w_i·(v_i − v) ≥ 0 over the queue (current entity included),
/// the tree walked in deadline order with ties in insertion order (an rbtree puts an equal
/// key to the right), the leftmost eligible entity as the tree's best, then
/// `if (!best || (curr && entity_before(curr, best))) best = curr`.
fn reference_pick(class: &Eevdf, cpu: CpuId, protect: bool) -> Option<TaskId> {
    let rq = &class.rqs[cpu.0];
    let queue: Vec<TaskId> = rq.curr.iter().chain(rq.tree.iter()).copied().collect();
    if queue.len() == 1 {
        return Some(queue[0]);
    }
    let eligible = |t: TaskId| {
        let v = class.ent(t).vruntime;
        let lag_sum: i128 = queue
            .iter()
            .map(|&q| {
                let e = class.ent(q);
                i128::from(e.weight) * i128::from(e.vruntime.wrapping_sub(v) as i64)
            })
            .sum();
        lag_sum >= 0
    };
    let before = |a: u64, b: u64| (a.wrapping_sub(b) as i64) < 0;
    let curr = rq.curr.filter(|&c| eligible(c));
    if let Some(c) = curr {
        let e = class.ent(c);
        if protect && before(e.vruntime, e.vprot) {
            return Some(c);
        }
    }
    let mut by_deadline = rq.tree.clone();
    by_deadline.sort_by(|&x, &y| {
        let (ex, ey) = (class.ent(x), class.ent(y));
        (ex.deadline.wrapping_sub(ey.deadline) as i64)
            .cmp(&0)
            .then(ex.inserted.cmp(&ey.inserted))
    });
    let best = by_deadline.into_iter().find(|&t| eligible(t));
    match (best, curr) {
        (None, c) => c,
        (Some(b), Some(c)) if before(class.ent(c).deadline, class.ent(b).deadline) => Some(c),
        (Some(b), _) => Some(b),
    }
}

fn params() -> impl Strategy<Value = Vec<FairParams>> {
    proptest::collection::vec(
        (-20i8..=19, proptest::option::of(0u64..200_000_000)).prop_map(
            |(nice, custom_slice_ns)| FairParams {
                custom_slice_ns,
                ..FairParams::nice(nice)
            },
        ),
        TASKS,
    )
}

proptest! {
    /// One CPU: Σ w·lag stays 0 to V's rounding and reweights keep V, whatever the
    /// sequence of wakeups, blocks, runs, picks, put-backs, ticks and reweights.
    #[test]
    fn lags_balance_and_reweights_keep_v_on_one_cpu(
        features in features(),
        params in params(),
        ops in ops(1),
    ) {
        let mut driver = Driver::new(1, features, INITIAL_VRUNTIME, &params);
        for op in &ops {
            driver.apply(op);
        }
    }

    /// Two CPUs with migrations: no panic while the protocol is kept, and the same
    /// answers when virtual time starts where Linux starts it, 2^20 ns before wrapping.
    #[test]
    fn decisions_do_not_depend_on_where_virtual_time_starts(
        features in features(),
        params in params(),
        ops in ops(2),
    ) {
        let mut plain = Driver::new(2, features, INITIAL_VRUNTIME, &params);
        let mut wrapping = Driver::new(2, features, (1u64 << 20).wrapping_neg(), &params);
        for op in &ops {
            plain.apply(op);
            wrapping.apply(op);
        }
        prop_assert_eq!(&plain.seen, &wrapping.seen);
    }
}
