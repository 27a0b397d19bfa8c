//! Criterion benchmark of what the interactive boost adds to the daemon's event path, system
//! calls included: per boosted event, the push (the run-queue reading, the policy, the actuator's
//! checks and `setpriority` or `sched_setattr`, the deadline timer) and the app's next wait (the
//! event thread given back). Threads are two parked threads of this process; as root the nice
//! values are really set (otherwise the kernel's `EPERM` is what is measured, and said).
//!
//! - `boost_event/nice_push_wait`: steady state, every push reads the run queues (the dearest
//!   case; the daemon reads them at most once per 5 ms of pushes) and raises the event thread,
//!   the wait gives it back; the drawing thread stays raised through the budget.
//! - `boost_event/nice_push_wait_budget`: both threads raised at each push and given back (the
//!   event thread at the wait, the drawing thread at the budget's end).
//! - `boost_event/slice_push_wait`: the same as the first in slice mode.

use criterion::{criterion_group, criterion_main, Criterion};
use lull_sched::boost::seam::{BoostMode, BoostSeamConfig};
use lull_sched::boost::DEFAULT_C_NS;
use lulld::test_support::BoostPath;

fn boost_event(c: &mut Criterion) {
    if lull_os::sys::geteuid() != 0 {
        eprintln!("not root: negative nice values are refused (EPERM); that path is measured");
    }
    let mut g = c.benchmark_group("boost_event");
    let nice = BoostSeamConfig::new(BoostMode::Nice);
    let slice = BoostSeamConfig::new(BoostMode::Slice);
    g.bench_function("nice_push_wait", |b| {
        let mut p = BoostPath::new(nice);
        b.iter(|| {
            p.push();
            p.wait();
        });
    });
    g.bench_function("nice_push_wait_budget", |b| {
        let mut p = BoostPath::new(nice);
        p.stamp_in_the_past(DEFAULT_C_NS);
        b.iter(|| {
            p.push();
            p.wait();
            p.budget_end();
        });
    });
    g.bench_function("slice_push_wait", |b| {
        let mut p = BoostPath::new(slice);
        b.iter(|| {
            p.push();
            p.wait();
        });
    });
    g.finish();
}

criterion_group!(benches, boost_event);
criterion_main!(benches);
