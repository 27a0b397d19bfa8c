//! Lull's OS layer on stock Linux: what the daemon (`lulld`), the client library (`lull-client`)
//! and the lab (`lull-lab`) need from the kernel. The wire protocol they speak is a pure codec,
//! `lull_esm::protocol`.
//!
//! - [`sys`]: thin, safe wrappers over the system calls the live stack uses, one module per
//!   subject (clock; epoll, timerfd, eventfd and futex; descriptors; Unix sockets and descriptor
//!   passing; signals; processes and pidfds; forked children; one thread's nice value,
//!   `sched_setattr` attributes and CPU mask; `Errno`), all returning `io::Result`.
//! - [`event_loop`]: the handler-per-descriptor loop over epoll, blocking with no timeout, that
//!   the daemon and the baselines' hubs and apps run.
//! - [`evdev`]: Linux input events from any descriptor, decoded per `SYN_REPORT` packet.
//! - [`evdev_ioctl`]: the evdev ioctls on one device descriptor — event mask, grab, revoke,
//!   name — with a typed error per refusal.
//! - [`device_account`]: the page an app shares with the daemon per input device descriptor
//!   the daemon hands it, where the app counts what it read.
//! - [`uinput`]: a virtual input device through `/dev/uinput`, for the lab guest's tests.
//! - [`bpf`]: BPF without clang or libbpf — the BTF reader, maps and programs, a sched_ext
//!   scheduler registered through its struct_ops map, a kprobe call counter.
//! - [`input_file`]: files a user names as input (traces, specs, logs), read with a bound per
//!   kind, refusing FIFOs, devices and directories; `--evdev` sources checked to be input devices.
//! - [`fileout`]: files Lull writes to a user-given path, replaced atomically through an
//!   unpredictable temporary, never through a symlink or over a device.
//! - [`fbdev`]: the frame buffer device the display server presents to.
//! - [`topology`]: the CPUs as sysfs describes them — online, clusters by capacity, cpufreq levels.
//! - [`tracefs`]: a private tracefs instance with the scheduler tracepoints on.
//! - [`proc_connector`]: the kernel's process events connector (netlink `CN_IDX_PROC`): fork,
//!   exec and exit of every task, for root; a length-checked decoder with a typed error per
//!   malformed message, and a count of overruns.
//! - [`procfs`]: `/proc` readings — a thread's CPU time, wake-ups, state and nice value, a
//!   process's start time, a thread parked in a futex wait, a process's threads by name.
//! - [`wait_cell`]: the page an ESM app shares with the daemon so that `esm_wait` costs the
//!   daemon no wake-up.
//! - [`event_ring`]: one app's data-plane queue, a sealed shared-memory ring woken by eventfd.
//! - [`runqueue`]: the machine's runnable task count (`/proc/loadavg`), one `pread` per reading.
//!
//! The cgroup freezer is not here: only the policy actuator in `lulld` freezes threads, so it
//! lives in that crate (`lull_actuate::freezer`).

pub mod bpf;
pub mod device_account;
pub mod evdev;
pub mod evdev_ioctl;
pub mod event_loop;
pub mod event_ring;
pub mod fbdev;
pub mod fileout;
pub mod fs;
pub mod input_file;
pub mod proc_connector;
pub mod proc_ctl;
pub mod procfs;
pub mod producer;
pub mod runqueue;
mod shared_page;
pub mod sys;
pub mod topology;
pub mod tracefs;
pub mod uinput;
pub mod wait_cell;
