//! `lulld`, the Lull daemon: one event loop, blocked in `epoll_wait(-1)`, hosting the ESM, the
//! display server and guiS. The binary (`src/main.rs`) parses options and runs a [`daemon::Daemon`].
//!
//! - [`daemon`]: the ESM host — the loop, the apps' connections, the event sources in the loop
//!   (evdev pipes, [`replay`]) — and its side of every host below: their loop sources and what
//!   they do to its state (`daemon/{kds,devices,routes,seam,guis,policy}.rs`). The hosts do not
//!   import the daemon; it imports them.
//! - [`devices`]: kernel input devices on the data plane — a masked descriptor of each device
//!   handed to every app that holds input, revoked (`EVIOCREVOKE`) when it stops holding it.
//! - [`routes`]: the data plane's routing table (producers, their rings per app, retired rings).
//! - [`sources`]: the datagram sockets and timers as a data-plane producer thread, off the loop.
//! - [`kds`]: the display server's sockets and presentation around the pure `lull_kds::server`.
//! - [`scx_feed`]: the display server's facts (window class, input pushes) written for lull-scx,
//!   Lull's sched_ext scheduler, into the map it pins; [`scx_feed_policy`]: the feed as a plug-in.
//! - [`policy`]: policies as plug-ins ([`daemon::Daemon::add_policy`]): each declares the facts
//!   it needs and the knobs it writes; the host arms each source once and refuses a second
//!   writer of a knob.
//! - [`seam`]: the policy seam — the facts the daemon knows told to the seam's policies
//!   (`lull_sched::guis::Table1` with guiS on), their actions applied by the actuator of
//!   `lull-actuate` (nice, `sched_setattr`, affinity, the cgroup freezer, cgroup v2
//!   `cpu.weight`, cpufreq), which reports per action kind what was applied, refused or
//!   unavailable here.
//! - [`ucsg`]: UCSG in the daemon — the seed-001 policy on the seam, with the proc connector and
//!   the seam's deadline timer, and what this machine lets it do.
//! - [`boost`]: seed 003's interactive boost in the daemon — the policy on the seam, with the
//!   run-queue sampler and the deadline timer of its budget, and what this machine lets it do.
//! - [`guis`]: guiS in the daemon — its configuration, status and counters, and idle forcing
//!   (table 1 itself runs on the seam); [`guis_policy`]: guiS as a plug-in.
//! - [`activation`]: systemd's socket activation (the ESM and display-server sockets passed as
//!   descriptors) and readiness notification, without libsystemd (`packaging/systemd/`).
//!
//! The daemon speaks to its clients only through the wire formats of `lull_esm::protocol` and
//! `lull_kds::wire`; it does not use the client library (`lull-client`). Tests that run the
//! daemon with real clients are in `lull-lab`, the crate that depends on both; `test_support`
//! (feature `test-support`) runs a daemon on a test's thread for them.

// Unsafe code lives in the OS layer (`lull_os::sys`), behind safe wrappers.
#![deny(unsafe_code)]

pub mod activation;
pub mod boost;
pub mod daemon;
pub mod devices;
pub mod guis;
pub mod guis_policy;
pub mod kds;
pub mod policy;
pub mod replay;
pub mod routes;
pub mod scx_feed;
pub mod scx_feed_policy;
pub mod seam;
pub mod sources;
#[cfg(feature = "test-support")]
pub mod test_support;
pub mod turn;
pub mod ucsg;
