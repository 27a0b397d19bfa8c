//! What can happen at an instant of simulated time: the events the engine carries between the
//! SoC, the kernel, user space and the power manager.

/// One timed event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Ev {
    /// The workload's `i`-th input event reaches its device.
    Inject(u32),
    /// The kernel's own events, which the kernel handles whoever drives the run
    /// ([`crate::kernel::Kernel::handle`]).
    Kernel(KernelEv),
    /// The display's vertical sync.
    Vsync,
    /// The power manager's sampling period.
    Governor,
    /// The spec's `i`-th window-manager change.
    Window(u32),
    /// A seam policy's deadline (stale unless `gen` is current).
    Seam { gen: u64 },
    /// The run ends.
    End,
}

/// The kernel's own events.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum KernelEv {
    /// A core's planned segment of work ends (stale unless `gen` is current).
    CoreDone { core: usize, gen: u64 },
    /// A core finished waking (idle exit, cluster switch, hotplug).
    WakeDone { core: usize, gen: u64 },
    /// Re-examine a core after a wakeup targeted it.
    Poke(usize),
    /// A core's scheduler tick.
    Tick { core: usize, gen: u64 },
    /// A thread's timer expires.
    Timer { tid: usize, gen: u64 },
}
