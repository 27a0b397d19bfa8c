//! BPF without clang or libbpf: raw `bpf(2)` calls, hand-assembled instructions, and a reader of
//! the kernel's BTF, enough for what Lull loads into a kernel.
//!
//! - [`btf`]: a bounds-checked parser of BTF blobs (`/sys/kernel/btf/vmlinux`): structs, their
//!   members, and a member's byte offset and size; and a writer of small blobs.
//! - [`syscall`]: maps (create, update, lookup, delete), program and BTF loading with the
//!   verifier's log on failure, pinning, and the [`syscall::Insn`] encoding.
//! - [`sched_ext`]: a sched_ext scheduler registered through a struct_ops map with no BPF
//!   program at all (every callback is optional: tasks then run from the global FIFO queue),
//!   and the state sched_ext reports in sysfs.
//! - [`scx_facts`]: the facts lulld writes for lull-scx (a pinned map of per-thread records).
//! - [`kprobe_counter`]: a kprobe program counting calls of one kernel function into a map.
//!
//! Everything here needs root (`CAP_BPF`, `CAP_PERFMON`, `CAP_SYS_ADMIN`) and a kernel built with
//! the features in question; a missing feature is a typed error that says which.

pub mod btf;
pub mod kprobe_counter;
pub mod sched_ext;
pub mod scx_facts;
pub mod syscall;

pub use kprobe_counter::KprobeCounter;
pub use sched_ext::{SchedExtError, SchedExtScheduler, SchedExtState};
pub use syscall::BpfError;
