//! Thin, safe wrappers over the Linux system calls the live stack needs, one module per subject:
//!
//! - [`child`]: forked children that run Rust code — `fork`, the async-signal-safe calls
//!   such a child makes, reaping it with its CPU times.
//! - [`clock`]: the monotonic clock, the calling thread's CPU time, the clock tick.
//! - [`readiness`]: epoll, timerfd, eventfd, `poll` and futexes — waiting for descriptors and
//!   words.
//! - [`fd`]: reading and writing one descriptor, pipes, sealed memfds, non-blocking opens.
//! - [`inherited`]: adopting a socket a parent passed by number (socket activation, the hub
//!   connection), the one place a bare number becomes an `OwnedFd`.
//! - [`socket`]: Unix sockets — pairs, listeners, connects, messages with passed descriptors,
//!   timeouts, drop counts, the peer's credentials and the daemon's default socket paths.
//! - [`signal`]: sending signals, the termination signalfd, ending a child with its parent.
//! - [`process`]: thread and user ids, pidfds.
//! - [`sched`]: one thread's scheduling — its nice value, `sched_setattr`'s attributes and its
//!   CPU mask.
//! - [`errno`]: [`Errno`], the typed view of the kernel's refusal.
//!
//! One error convention: every fallible wrapper returns [`std::io::Result`]; where a caller
//! needs the kernel's `errno` as a value (to report or match it), [`Errno::from`] turns the
//! `io::Error` into one.
//!
//! Most wrappers go through `rustix`: Unix sockets (pairs, listeners, connects, accepts,
//! messages, `SCM_RIGHTS`, timeouts, shutdown, socket options), epoll, timerfd, eventfds,
//! `poll`, futexes, pipes, `read` and `write`, fcntl flags, memfds, clocks and the clock tick,
//! `kill`, pidfds, thread and user ids, rlimits, waitpid, the parent-death signal, nice values
//! and CPU affinity. A wrapper that takes a bare `RawFd` (its callers across the workspace hold
//! numbers) borrows it through `borrowed`, the one `unsafe` borrow. The rest are bare `libc`
//! calls, each saying why where it is: `rustix` lacks `sched_{get,set}attr`, `signalfd` (and
//! blocks signals only in its unsafe runtime module), `close_range`, `wait4`'s resource usage,
//! `SO_RXQ_OVFL` and its control message, `SO_MEMINFO` and `SO_SNDBUFFORCE`, and its
//! `SO_PEERCRED` cannot hold the pid 0 the kernel reports for a peer in another pid namespace;
//! `fork`, `_exit` and the code between `fork` and `exec` must stay bare system calls; and an
//! ioctl through `rustix` is as unsafe as the bare one. Every such `unsafe` block is a single
//! system call on descriptors these modules own or borrow, or on a thread id, with buffers whose
//! length is passed alongside. Adopting an inherited descriptor makes its checks through
//! `rustix` and ends in `OwnedFd::from_raw_fd`, sound for the reasons [`inherited`] gives.

use std::io;
use std::os::fd::{BorrowedFd, RawFd};

pub mod child;
pub mod clock;
pub mod errno;
pub mod fd;
pub mod inherited;
pub mod process;
pub mod readiness;
pub mod sched;
pub mod signal;
pub mod socket;

pub use child::*;
pub use clock::*;
pub use errno::*;
pub use fd::*;
pub use inherited::*;
pub use process::*;
pub use readiness::*;
pub use sched::*;
pub use signal::*;
pub use socket::*;

/// Borrows the bare descriptor number `fd` for the calls `rustix` makes on it: the wrappers
/// that take a `RawFd` keep that signature (their callers across the workspace hold numbers).
/// `EBADF` for a negative number, which no descriptor has.
pub(crate) fn borrowed(fd: &RawFd) -> io::Result<BorrowedFd<'_>> {
    if *fd < 0 {
        return Err(Errno(libc::EBADF).into());
    }
    // SAFETY: not -1 (the one value `BorrowedFd` cannot hold). The borrow ends with the caller's
    // reference to the number, within the one wrapper that makes system calls on it; a number
    // that is not open makes the kernel answer `EBADF`, as the raw call did.
    Ok(unsafe { BorrowedFd::borrow_raw(*fd) })
}

pub(crate) fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

pub(crate) fn cvt_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}
