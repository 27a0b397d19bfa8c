//! The program's worker threads as user space: each computes its share of the work in steps and,
//! with a barrier, waits after every phase until all unfinished threads have arrived (the last to
//! arrive wakes the others, as a pthread barrier does). Each thread's core is noted at every
//! step for the core-over-time plot.

use crate::drive::Workload;
use crate::kernel::{Action, Cx, Kernel, Userspace};
use crate::pm::IdleForcing;

/// The longest compute step: 1 ms of work at the fastest core's top speed. It sets how often a
/// thread's core is noted for the plot (every 1 ms on a big core, 2.7 ms on a LITTLE one at the
/// Odroid's top frequencies); the kernel may move a thread within a step, and the plot shows it
/// at the next step.
pub const STEP_US: u64 = 1000;

/// One worker.
#[derive(Debug)]
pub(crate) struct Worker {
    /// Work left, in cycles of the fastest core type.
    left: u64,
    /// Work left in the current barrier phase.
    phase_left: u64,
    /// When it finished.
    pub done_ns: Option<u64>,
    /// (from when, on which core) at each change of core seen at a step.
    pub trace: Vec<(u64, usize)>,
}

/// The program.
#[derive(Debug)]
pub(crate) struct Program {
    pub workers: Vec<Worker>,
    step_cycles: u64,
    /// Cycles per barrier phase; 0: no barrier.
    phase_cycles: u64,
    waiting: Vec<usize>,
    alive: usize,
    exited: Vec<usize>,
}

impl Program {
    /// `threads` workers of `work_cycles` each, with a barrier every `phase_cycles` (0: none),
    /// created in the kernel as threads 0.. of one process.
    pub fn new(
        k: &mut Kernel<'_>,
        threads: u32,
        work_cycles: u64,
        phase_cycles: u64,
        step_cycles: u64,
        hot_kib: u64,
    ) -> Program {
        let workers = (0..threads)
            .map(|i| {
                let t = k.add_task(format!("worker-{i}"), 1, 0, hot_kib);
                debug_assert_eq!(t, i as usize);
                Worker {
                    left: work_cycles,
                    phase_left: phase_len(phase_cycles, work_cycles),
                    done_ns: None,
                    trace: Vec::new(),
                }
            })
            .collect();
        Program {
            workers,
            step_cycles: step_cycles.max(1),
            phase_cycles,
            waiting: Vec::new(),
            alive: threads as usize,
            exited: Vec::new(),
        }
    }

    /// Wakes every waiting thread and starts the next phase for all unfinished ones.
    fn release(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>, running: usize) {
        let woken = std::mem::take(&mut self.waiting);
        for w in &mut self.workers {
            if w.left > 0 {
                w.phase_left = phase_len(self.phase_cycles, w.left);
            }
        }
        for t in woken {
            if t != running {
                k.wake(t, &*self, cx);
            }
        }
    }
}

fn phase_len(phase_cycles: u64, left: u64) -> u64 {
    if phase_cycles == 0 {
        left
    } else {
        phase_cycles.min(left)
    }
}

/// Cycles of the fastest core type in `us` at `khz`.
pub(crate) fn cycles_in_us(us: u64, khz: u64) -> u64 {
    us * khz / 1000
}

impl Userspace for Program {
    fn next_action(&mut self, t: usize, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) -> Action {
        let now = cx.now();
        let core = k.tasks[t].core;
        let w = &mut self.workers[t];
        if w.trace.last().map(|&(_, c)| c) != Some(core) {
            w.trace.push((now, core));
        }
        if w.left == 0 {
            if w.done_ns.is_none() {
                w.done_ns = Some(now);
                self.alive -= 1;
                self.exited.push(t);
                if !self.waiting.is_empty() && self.waiting.len() == self.alive {
                    self.release(k, cx, t);
                }
            }
            return Action::Block;
        }
        if self.phase_cycles > 0 && w.phase_left == 0 {
            self.waiting.push(t);
            if self.waiting.len() < self.alive {
                return Action::Block;
            }
            self.release(k, cx, t);
        }
        let w = &mut self.workers[t];
        let step = self.step_cycles.min(w.phase_left);
        w.left -= step;
        w.phase_left -= step;
        Action::Compute(step)
    }
}

impl IdleForcing for Program {}

impl Workload for Program {
    /// Every worker starts at once (created by the main thread, which then waits in `join`).
    fn start(&mut self, k: &mut Kernel<'_>, cx: &mut Cx<'_, '_>) {
        k.wake_each(0..self.workers.len(), &*self, cx);
    }

    fn finished(&self) -> bool {
        self.alive == 0
    }

    fn take_exited(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.exited)
    }
}
