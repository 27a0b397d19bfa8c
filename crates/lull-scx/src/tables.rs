//! The numbers the BPF side decides with, computed once at load from lull-sched's pure
//! policies (the same functions the simulator runs) and written into its read-only data.
//!
//! Why tables and not calls to user space: a decision is needed at every wake-up, inside the
//! kernel's enqueue path; a user-space round trip per wake-up (scx_rustland's design) costs a
//! context switch each way, which is more than the wake-up's whole scheduling latency budget
//! under load. The policies' inputs that vary per decision — the run queue's length, the time
//! since the latest input — are few and small, so each policy becomes a lookup: eq. 6 by run
//! queue length, the CFS period by run queue length, the weight by sensitivity.

use lull_model::weight::{nice_to_weight, NICE_0_WEIGHT};
use lull_sched::boost::{boost_weight, RunQueueLoad};
use lull_sched::class::cfs::{period_ns, SLEEPER_CREDIT_NS};
use lull_sched::class::eevdf::MIN_CUSTOM_SLICE_NS;
use lull_sched::ucsg::sensitivity::{Sensitivity, HIGH_HOLD_NS};

/// Run-queue lengths the tables cover (`LULL_NR_MAX` in `intf.h`).
pub const NR_MAX: usize = 64;
/// `enum lull_class`'s count.
pub const CLASS_NR: usize = 4;
/// The weight of a visible app behind the front one: nice 0's. UCSG names no state for it (its
/// apps are either in front or not); guiS lets its drawing thread run, so it gets plain fair
/// service rather than the background's low weight.
pub const VISIBLE_NICE: i8 = 0;

/// What the BPF side reads (its `const volatile` globals).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Tables {
    /// By `enum lull_class`: other (unused: such threads keep their own weight), front (UCSG
    /// medium), visible ([`VISIBLE_NICE`]), behind (UCSG low).
    pub class_weight: [u64; CLASS_NR],
    /// The front app within [`HIGH_HOLD_NS`] of an input: UCSG high.
    pub high_weight: u64,
    pub high_hold_ns: u64,
    /// Eq. 6's W′ for a thread waking into a queue of n runnable tasks (index n, itself
    /// included; index 0 unused).
    pub boost_weight: [u64; NR_MAX + 1],
    /// The CFS period P for n runnable tasks (seed 003: 5 ms below 5 tasks, else n × 1 ms).
    pub period_ns: [u64; NR_MAX + 1],
    /// No slice is shorter: the shortest custom slice Linux gives a fair task.
    pub min_slice_ns: u64,
    /// CFS's sleeper credit: a woken task's vtime is lifted to at most this below the queue's.
    pub sleeper_credit_ns: u64,
    /// No task's vtime is placed more than this ahead of the queue's: the CFS period of
    /// [`NR_MAX`] tasks (64 ms). Behind ten nice-0 hogs on two CPUs a task so placed waits about
    /// 10 × 64 / 2 = 320 ms, well inside the watchdog's 5 s, where a nice-19 task charged by its
    /// weight alone (a hundred times its run) was measured waiting 5.7 s in the lab guest.
    pub max_lead_ns: u64,
}

fn weight(nice: i8) -> u64 {
    u64::from(nice_to_weight(nice))
}

impl Tables {
    /// The tables for an interaction of `c_ns` of work (seed 003's C).
    #[must_use]
    pub fn new(c_ns: u64) -> Tables {
        let mut boost = [0u64; NR_MAX + 1];
        let mut period = [0u64; NR_MAX + 1];
        for n in 1..=NR_MAX {
            boost[n] = u64::from(boost_weight(c_ns, RunQueueLoad::nice0(n as u64 - 1)));
            period[n] = period_ns(n as u64);
        }
        Tables {
            class_weight: [
                u64::from(NICE_0_WEIGHT),
                weight(Sensitivity::Medium.nice()),
                weight(VISIBLE_NICE),
                weight(Sensitivity::Low.nice()),
            ],
            high_weight: weight(Sensitivity::High.nice()),
            high_hold_ns: HIGH_HOLD_NS,
            boost_weight: boost,
            period_ns: period,
            min_slice_ns: MIN_CUSTOM_SLICE_NS,
            sleeper_credit_ns: SLEEPER_CREDIT_NS,
            max_lead_ns: period[NR_MAX],
        }
    }

    /// The slice the BPF side gives a task of weight `w` among `n` runnable tasks, the others at
    /// nice 0 (seed 003 eq. 7, TS = P × W / ΣW), as `slice_for` in `main.bpf.c` computes it.
    #[must_use]
    pub fn slice_ns(&self, w: u64, n: usize) -> u64 {
        let n = n.clamp(1, NR_MAX);
        let others = (n as u64 - 1) * u64::from(NICE_0_WEIGHT);
        (self.period_ns[n] * w / (w + others)).max(self.min_slice_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_sched::boost::DEFAULT_C_NS;

    /// Seed 003 example 1: ten nice-0 hogs and the input task with C = 100 ms: W′ is capped
    /// at nice −20's 88761 and the slice is 9.86 ms.
    #[test]
    fn example_1_of_seed_003() {
        let t = Tables::new(100_000_000);
        assert_eq!(t.boost_weight[11], 88_761);
        let s = t.slice_ns(t.boost_weight[11], 11);
        assert!((9_850_000..9_870_000).contains(&s), "{s}");
        // A nice-0 task among eleven gets P/n = 1 ms.
        assert_eq!(t.slice_ns(1024, 11), 1_000_000);
    }

    #[test]
    fn weights_follow_ucsg_and_the_boost_grows_with_the_queue() {
        let t = Tables::new(DEFAULT_C_NS);
        assert_eq!(t.high_weight, 88_761);
        assert_eq!(t.class_weight[1], 9_548); // medium: nice -10
        assert_eq!(t.class_weight[3], 110); // low: nice 10
        assert!(t.class_weight[3] < t.class_weight[2] && t.class_weight[2] < t.class_weight[1]);
        for n in 2..NR_MAX {
            assert!(t.boost_weight[n + 1] >= t.boost_weight[n], "{n}");
        }
        assert_eq!(t.slice_ns(1024, 0), t.period_ns[1]);
        assert_eq!(t.max_lead_ns, 64_000_000);
        assert!(t.max_lead_ns > t.sleeper_credit_ns);
    }
}
