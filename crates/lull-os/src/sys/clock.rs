use lull_model::time::NS_PER_S;
use rustix::time::{clock_gettime, ClockId};

/// `CLOCK_MONOTONIC` in nanoseconds: the clock every stamp of the live stack uses, in every
/// process (it is system-wide, so stamps taken in different processes compare).
#[must_use]
pub fn monotonic_ns() -> u64 {
    clock_ns(ClockId::Monotonic)
}

/// `clock`'s time, ns; for the clocks Linux always has (monotonic, the calling thread's CPU).
fn clock_ns(clock: ClockId) -> u64 {
    let ts = clock_gettime(clock);
    u64::try_from(ts.tv_sec).unwrap_or(0) * NS_PER_S + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// The CPU time the calling thread has used, ns (`CLOCK_THREAD_CPUTIME_ID`).
#[must_use]
pub fn thread_cpu_ns() -> u64 {
    clock_ns(ClockId::ThreadCPUTime)
}

/// The kernel's clock ticks per second (`AT_CLKTCK`, what `sysconf(_SC_CLK_TCK)` reports), the
/// unit of `/proc`'s CPU times; at least 1.
#[must_use]
pub fn clock_ticks_per_s() -> u64 {
    rustix::param::clock_ticks_per_second().max(1)
}
