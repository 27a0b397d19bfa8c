use lull_model::time::NS_PER_S;

/// `CLOCK_MONOTONIC` in nanoseconds: the clock every stamp of the live stack uses, in every
/// process (it is system-wide, so stamps taken in different processes compare).
#[must_use]
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// `clock`'s time, ns; for the clocks Linux always has (monotonic, the calling thread's CPU).
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; the callers pass clocks that always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    u64::try_from(ts.tv_sec).unwrap_or(0) * NS_PER_S + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// The CPU time the calling thread has used, ns (`CLOCK_THREAD_CPUTIME_ID`).
#[must_use]
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The kernel's clock ticks per second (`_SC_CLK_TCK`), the unit of `/proc`'s CPU times; at
/// least 1.
#[must_use]
pub fn clock_ticks_per_s() -> u64 {
    // SAFETY: sysconf reads a constant of the running system; it takes no pointers.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(hz).unwrap_or(1).max(1)
}
