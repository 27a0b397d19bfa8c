//! `lulld`, the Lull daemon: one event loop, blocked in `epoll_wait(-1)`, hosting the ESM, the
//! display server and guiS. The binary (`src/main.rs`) parses options and runs a [`daemon::Daemon`].
//!
//! - [`daemon`]: the ESM host — the loop, the apps' connections, the event sources (evdev,
//!   [`replay`], datagram socket, timer).
//! - [`kds`]: the display server's sockets and presentation around the pure `lull_kds::server`.
//! - [`guis`]: guiS's kernel half — table 1 enforced with the cgroup [`freezer`], idle forcing.
//! - [`freezer`]: freezing and thawing single threads of another process. It lives here, not in
//!   `lull-os`, because guiS in this daemon is its only user.
//!
//! The daemon speaks to its clients only through the wire formats of `lull_os::protocol` and
//! `lull_kds::wire`; it does not use the client library (`lull-client`). Tests that run the
//! daemon with real clients are in `lull-lab`, the crate that depends on both; `test_support`
//! (feature `test-support`) runs a daemon on a test's thread for them.

pub mod daemon;
pub mod freezer;
pub mod guis;
pub mod kds;
pub mod replay;
#[cfg(feature = "test-support")]
pub mod test_support;
