//! Lull's lab: the whole live stack run and measured on this machine — the daemon (`lulld`), its
//! clients (`lull-client`) and the baselines they are compared with.
//!
//! - [`stack`]: the four delivery paths (ESM and the three baselines' hubs and apps) fed by the
//!   same device and app handler; [`live`] measures their latency, wake-ups and CPU time
//!   (`lull live latency`, `lull live idle`); [`channel`] compares daemon → app channels.
//! - the app processes (binaries `lull-app`, `lull-work`) are the crate `lull_apps`;
//!   [`experiment`] runs seed 000's three apps end to end (`lull live experiment`), with [`respondent`] answering
//!   the messaging app.
//! - [`vtcfs_live`]: seed 003's painting experiment live (`lull live vtcfs`): the painting app
//!   among CPU hogs, stock or with the daemon's interactive boost; [`vtcfs_overhead`]: hackbench
//!   with that machinery running and without (`lull live vtcfs-overhead`, seed 003 Table IV).
//! - [`measure`]: measurement windows over the kernel's per-thread counters, alone or summed per
//!   guiS thread category; [`guis_stats`]: the same counters for the apps of a running `lulld`
//!   (`lull guis stats`).
//! - [`kds_demo`]: `lull kds` — the window manager's requests, snapshots ([`png`]), and figure 18
//!   as a C program against a private display server.
//! - [`bench`](mod@bench): the in-process ESM dispatch and KDS compose benchmarks;
//!   [`bench_fanout`]: one data-plane producer to N apps (threads or C programs) through the rings a
//!   real daemon routes (`lull bench fanout`, with its clients × rate curve).
//! - [`audit`]: the live IPSA recorder and the seed-002 experiments.
//! - [`validate`]: the live side of `lull validate kernel` — this machine as Linux describes it
//!   ([`validate::probe`], with where each figure came from and two rt-app measurements), and
//!   rt-app workloads run on the real kernel ([`validate::run_live`]): per-thread CPU share from
//!   the kernel's counters and the summary of each thread's log.
//!
//! The tests that run the daemon with real clients live here too, in `tests/`: this is the crate
//! that depends on both.

pub(crate) mod app_proc;
pub mod artefact;
pub mod audit;
pub mod bench;
pub mod bench_fanout;
pub mod c_client;
pub mod channel;
pub mod doctor;
pub mod experiment;
pub mod guis_stats;
pub mod input_io;
pub mod kds_demo;
pub mod live;
pub mod live_stack;
pub mod measure;
pub mod png;
pub mod progress;
pub mod respondent;
pub mod scx;
pub mod sibling;
pub mod stack;
pub mod toggling_live;
pub mod ucsg_live;
pub mod validate;
pub mod vtcfs_live;
pub mod vtcfs_overhead;
