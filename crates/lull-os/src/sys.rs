//! Thin, safe wrappers over the few Linux system calls the live stack needs: the monotonic clock,
//! epoll, timerfd, eventfd, pipes and `SOCK_SEQPACKET` Unix sockets, and one thread's scheduling
//! (its nice value, `sched_setattr`'s attributes, its CPU mask) with the kernel's refusal as a
//! typed [`Errno`].
//!
//! Every `unsafe` block here is a single system call on file descriptors this module owns or
//! borrows, or on a thread id, with buffers whose length is passed alongside.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use lull_model::time::NS_PER_S;

pub(crate) fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn cvt_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

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

/// The calling thread's kernel id (for `/proc/self/task/TID`).
#[must_use]
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

fn timespec_of(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / NS_PER_S) as libc::time_t,
        tv_nsec: (ns % NS_PER_S) as _,
    }
}

/// An epoll instance.
#[derive(Debug)]
pub struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    /// # Errors
    /// The kernel's error from `epoll_create1`.
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall; the returned fd is owned from here on.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: `fd` was just returned by the kernel and nobody else owns it.
        Ok(Epoll {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Watches `fd` for readability (and hang-up, which epoll always reports), tagged `token`.
    ///
    /// # Errors
    /// The kernel's error from `epoll_ctl`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: `ev` is a valid epoll_event; the kernel copies it.
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }

    /// Keeps `fd` registered but stops (`false`) or resumes (`true`) reporting its readability:
    /// a listener out of descriptors is disarmed this way, or level-triggered epoll would wake
    /// the loop for it again at once.
    ///
    /// # Errors
    /// The kernel's error from `epoll_ctl`.
    pub fn set_armed(&self, fd: RawFd, token: u64, armed: bool) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: if armed { libc::EPOLLIN as u32 } else { 0 },
            u64: token,
        };
        // SAFETY: as in `add`.
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_MOD, fd, &mut ev) })?;
        Ok(())
    }

    /// Stops watching `fd`.
    ///
    /// # Errors
    /// The kernel's error from `epoll_ctl`.
    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: as in `add`.
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) })?;
        Ok(())
    }

    /// Blocks until at least one watched fd is ready — with no timeout (`-1`): the caller sleeps
    /// in the kernel until there is data. Returns the tokens of the ready fds in `out`.
    /// `EINTR` is retried.
    ///
    /// # Errors
    /// The kernel's error from `epoll_wait`.
    pub fn wait_forever(&self, out: &mut Vec<u64>) -> io::Result<()> {
        self.wait(out, -1)
    }

    /// The tokens of the fds ready now, without sleeping (timeout 0).
    ///
    /// # Errors
    /// The kernel's error from `epoll_wait`.
    pub fn ready_now(&self, out: &mut Vec<u64>) -> io::Result<()> {
        self.wait(out, 0)
    }

    fn wait(&self, out: &mut Vec<u64>, timeout_ms: i32) -> io::Result<()> {
        const MAX_EVENTS: usize = 64;
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; MAX_EVENTS];
        loop {
            // SAFETY: `evs` has room for MAX_EVENTS entries, the count we pass.
            let n = unsafe {
                libc::epoll_wait(
                    self.fd.as_raw_fd(),
                    evs.as_mut_ptr(),
                    MAX_EVENTS as i32,
                    timeout_ms,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            out.clear();
            out.extend(evs[..n as usize].iter().map(|e| e.u64));
            return Ok(());
        }
    }
}

/// A `CLOCK_MONOTONIC` timerfd.
#[derive(Debug)]
pub struct TimerFd {
    fd: OwnedFd,
}

impl TimerFd {
    /// # Errors
    /// The kernel's error from `timerfd_create`.
    pub fn new() -> io::Result<TimerFd> {
        // SAFETY: plain syscall; the fd is owned from here on.
        let fd = cvt(unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_CLOEXEC | libc::TFD_NONBLOCK,
            )
        })?;
        // SAFETY: fresh fd from the kernel.
        Ok(TimerFd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Arms the timer to expire at the absolute monotonic time `at_ns` (TFD_TIMER_ABSTIME), then
    /// every `interval_ns` if non-zero. A time already past expires at once.
    ///
    /// # Errors
    /// The kernel's error from `timerfd_settime`.
    pub fn set_abs(&self, at_ns: u64, interval_ns: u64) -> io::Result<()> {
        // An all-zero it_value would disarm; the earliest real time is 1 ns.
        let spec = libc::itimerspec {
            it_interval: timespec_of(interval_ns),
            it_value: timespec_of(at_ns.max(1)),
        };
        // SAFETY: `spec` is valid; the old value is not requested.
        cvt(unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        })?;
        Ok(())
    }

    /// Disarms the timer: it expires no more until armed again.
    ///
    /// # Errors
    /// The kernel's error from `timerfd_settime`.
    pub fn disarm(&self) -> io::Result<()> {
        let spec = libc::itimerspec {
            it_interval: timespec_of(0),
            it_value: timespec_of(0),
        };
        // SAFETY: `spec` is valid; the old value is not requested.
        cvt(unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) })?;
        Ok(())
    }

    /// Consumes the expirations counted so far (0 when none: the fd is non-blocking).
    ///
    /// # Errors
    /// Any read error but `EAGAIN`.
    pub fn take_expirations(&self) -> io::Result<u64> {
        read_u64(self.fd.as_raw_fd())
    }

    #[must_use]
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// An eventfd, used to wake a blocked loop (stop requests).
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    /// # Errors
    /// The kernel's error from `eventfd`.
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: plain syscall.
        let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
        // SAFETY: fresh fd from the kernel.
        Ok(EventFd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Adds one to the counter, waking whoever waits on the fd.
    ///
    /// # Errors
    /// The kernel's error from `write`.
    pub fn signal(&self) -> io::Result<()> {
        let one = 1u64.to_ne_bytes();
        write_all_once(self.fd.as_raw_fd(), &one).map(|_| ())
    }

    /// Reads and resets the counter (0 when it was 0).
    ///
    /// # Errors
    /// Any read error but `EAGAIN`.
    pub fn take(&self) -> io::Result<u64> {
        read_u64(self.fd.as_raw_fd())
    }

    #[must_use]
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

fn read_u64(fd: RawFd) -> io::Result<u64> {
    let mut buf = [0u8; 8];
    match read(fd, &mut buf) {
        Ok(8) => Ok(u64::from_ne_bytes(buf)),
        Ok(_) => Ok(0),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
        Err(e) => Err(e),
    }
}

/// `read(2)`, retrying `EINTR`.
///
/// # Errors
/// The kernel's error, including `WouldBlock` on a non-blocking fd with nothing to read.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is valid for `buf.len()` bytes.
        match cvt_size(unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) }) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// One `write(2)` (retrying `EINTR`); returns the bytes written.
///
/// # Errors
/// The kernel's error.
pub fn write_all_once(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    loop {
        // SAFETY: `buf` is valid for `buf.len()` bytes.
        match cvt_size(unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) }) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// A pipe: (read end, write end), both close-on-exec; the read end non-blocking if asked.
///
/// # Errors
/// The kernel's error from `pipe2`.
pub fn pipe(read_nonblocking: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both fds were just returned by the kernel.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    if read_nonblocking {
        set_nonblocking(r.as_raw_fd(), true)?;
    }
    Ok((r, w))
}

/// Sets or clears `O_NONBLOCK`.
///
/// # Errors
/// The kernel's error from `fcntl`.
pub fn set_nonblocking(fd: RawFd, on: bool) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL on a descriptor; no pointers.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    let flags = if on {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    // SAFETY: as above.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags) })?;
    Ok(())
}

/// A connected pair of `SOCK_SEQPACKET` Unix sockets (message boundaries kept, EOF on close).
///
/// # Errors
/// The kernel's error from `socketpair`.
pub fn seqpacket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    unix_pair(libc::SOCK_SEQPACKET)
}

/// A connected pair of `SOCK_STREAM` Unix sockets: a display server's private channel.
///
/// # Errors
/// The kernel's error from `socketpair`.
pub fn stream_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    unix_pair(libc::SOCK_STREAM)
}

fn unix_pair(ty: libc::c_int) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for two descriptors.
    cvt(unsafe { libc::socketpair(libc::AF_UNIX, ty | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) })?;
    // SAFETY: both fds were just returned by the kernel.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn sockaddr_un(path: &Path) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: sockaddr_un is plain old data; all-zero is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    if bytes.is_empty() || bytes.len() >= addr.sun_path.len() || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "socket path {} must be 1..{} bytes without NUL",
                path.display(),
                addr.sun_path.len() - 1
            ),
        ));
    }
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;
    Ok((addr, len as libc::socklen_t))
}

fn unix_socket(ty: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall.
    let fd = cvt(unsafe { libc::socket(libc::AF_UNIX, ty | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: fresh fd.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A listening `SOCK_SEQPACKET` socket bound at `path` (non-blocking accept).
///
/// # Errors
/// The kernel's error from `socket`, `bind` or `listen`, or a path too long for `sun_path`.
pub fn seqpacket_listen(path: &Path) -> io::Result<OwnedFd> {
    unix_listen(path, libc::SOCK_SEQPACKET)
}

/// A listening `SOCK_STREAM` Unix socket bound at `path` (non-blocking accept): the display
/// server's control socket, whose messages carry their own length.
///
/// # Errors
/// As [`seqpacket_listen`].
pub fn stream_listen(path: &Path) -> io::Result<OwnedFd> {
    unix_listen(path, libc::SOCK_STREAM)
}

/// Connects a blocking `SOCK_STREAM` Unix socket to `path`.
///
/// # Errors
/// The kernel's error from `socket` or `connect`.
pub fn stream_connect(path: &Path) -> io::Result<OwnedFd> {
    unix_connect(path, libc::SOCK_STREAM)
}

fn unix_listen(path: &Path, ty: libc::c_int) -> io::Result<OwnedFd> {
    let fd = unix_socket(ty)?;
    let (addr, len) = sockaddr_un(path)?;
    // SAFETY: `addr` is a valid sockaddr_un of length `len`.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), (&raw const addr).cast(), len) })?;
    // Backlog: connections not yet accepted; the loop accepts as soon as one arrives.
    const BACKLOG: i32 = 64;
    // SAFETY: plain syscall on our socket.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), BACKLOG) })?;
    set_nonblocking(fd.as_raw_fd(), true)?;
    Ok(fd)
}

/// Connects a blocking `SOCK_SEQPACKET` socket to `path`.
///
/// # Errors
/// The kernel's error from `socket` or `connect`.
pub fn seqpacket_connect(path: &Path) -> io::Result<OwnedFd> {
    unix_connect(path, libc::SOCK_SEQPACKET)
}

/// As [`seqpacket_connect`], with `SO_SNDTIMEO`/`SO_RCVTIMEO` of `timeout_ms` set first: the
/// `connect` (a full backlog) and later blocking calls fail with `WouldBlock` after that long,
/// until [`set_socket_timeouts`] changes them.
///
/// # Errors
/// The kernel's error from `socket`, `setsockopt` or `connect`.
pub fn seqpacket_connect_timeout(path: &Path, timeout_ms: u64) -> io::Result<OwnedFd> {
    unix_connect_timeout(path, libc::SOCK_SEQPACKET, timeout_ms)
}

/// As [`stream_connect`], with timeouts as [`seqpacket_connect_timeout`].
///
/// # Errors
/// The kernel's error from `socket`, `setsockopt` or `connect`.
pub fn stream_connect_timeout(path: &Path, timeout_ms: u64) -> io::Result<OwnedFd> {
    unix_connect_timeout(path, libc::SOCK_STREAM, timeout_ms)
}

fn unix_connect(path: &Path, ty: libc::c_int) -> io::Result<OwnedFd> {
    unix_connect_timeout(path, ty, 0)
}

fn unix_connect_timeout(path: &Path, ty: libc::c_int, timeout_ms: u64) -> io::Result<OwnedFd> {
    let fd = unix_socket(ty)?;
    if timeout_ms > 0 {
        set_socket_timeouts(fd.as_raw_fd(), timeout_ms)?;
    }
    let (addr, len) = sockaddr_un(path)?;
    loop {
        // SAFETY: `addr` is a valid sockaddr_un of length `len`.
        let r = unsafe { libc::connect(fd.as_raw_fd(), (&raw const addr).cast(), len) };
        match cvt(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
            Ok(_) => return Ok(fd),
        }
    }
}

/// Accepts one pending connection, non-blocking; `None` when there is none.
///
/// # Errors
/// The kernel's error from `accept4`, except `EAGAIN`.
pub fn accept(listener: BorrowedFd<'_>) -> io::Result<Option<OwnedFd>> {
    loop {
        // SAFETY: no address is requested.
        let r = unsafe {
            libc::accept4(
                listener.as_raw_fd(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            )
        };
        match cvt(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) => return Err(e),
            // SAFETY: fresh fd from the kernel.
            Ok(fd) => return Ok(Some(unsafe { OwnedFd::from_raw_fd(fd) })),
        }
    }
}

/// Sends one message (`MSG_NOSIGNAL`: a closed peer is an `EPIPE` error, not a signal).
/// Returns `WouldBlock` on a full non-blocking socket.
///
/// # Errors
/// The kernel's error from `send`.
pub fn send_msg(fd: RawFd, msg: &[u8]) -> io::Result<()> {
    loop {
        // SAFETY: `msg` is valid for its length.
        let r = unsafe { libc::send(fd, msg.as_ptr().cast(), msg.len(), libc::MSG_NOSIGNAL) };
        match cvt_size(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
            Ok(_) => return Ok(()),
        }
    }
}

/// Receives one message into `buf`; returns its length (0 = the peer closed). A message longer
/// than `buf` is reported with `truncated = true` (`MSG_TRUNC`).
///
/// # Errors
/// The kernel's error from `recv`, including `WouldBlock` on a non-blocking socket.
pub fn recv_msg(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, bool)> {
    loop {
        // SAFETY: `buf` is valid for its length. MSG_TRUNC makes the kernel return the real
        // length of a longer message, so truncation is detected rather than silently accepted.
        let r = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), libc::MSG_TRUNC) };
        match cvt_size(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
            Ok(n) => return Ok((n.min(buf.len()), n > buf.len())),
        }
    }
}

/// Most descriptors one message carries (`ATTACHED` passes two).
pub const MAX_PASSED_FDS: usize = 4;

/// Sends `bytes` with `fds` attached as `SCM_RIGHTS` (`MSG_NOSIGNAL | MSG_DONTWAIT`). Returns the
/// bytes sent, which on a stream socket may be fewer than asked.
///
/// # Errors
/// The kernel's error from `sendmsg`, `WouldBlock` on a full socket; `InvalidInput` for more
/// than [`MAX_PASSED_FDS`] descriptors.
pub fn send_with_fds(fd: RawFd, bytes: &[u8], fds: &[RawFd]) -> io::Result<usize> {
    if fds.len() > MAX_PASSED_FDS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "too many descriptors for one message",
        ));
    }
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // u64-aligned room for the control message.
    let mut cbuf = [0u64; 8];
    // SAFETY: msghdr is plain data; zeroed is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        let payload = std::mem::size_of_val(fds);
        // SAFETY: CMSG_SPACE only computes a size.
        let space = unsafe { libc::CMSG_SPACE(payload as u32) } as usize;
        debug_assert!(space <= std::mem::size_of_val(&cbuf));
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = space;
        // SAFETY: msg_control points at `space` bytes we own; CMSG_FIRSTHDR returns a pointer
        // inside it, CMSG_DATA one past its header, with room for `payload` bytes.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&raw const msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(payload as u32) as usize;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(c).cast(), fds.len());
        }
    }
    loop {
        // SAFETY: `msg` points at live buffers for the call.
        let r =
            unsafe { libc::sendmsg(fd, &raw const msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
        match cvt_size(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Receives into `buf` and collects any `SCM_RIGHTS` descriptors that came with the bytes
/// (`MSG_CMSG_CLOEXEC`). Returns `(bytes, fds)`; 0 bytes with no fds means the peer closed.
/// Descriptors beyond [`MAX_PASSED_FDS`] are closed by the kernel (`MSG_CTRUNC`) and reported
/// as an error, so a hostile peer cannot make the reader leak them.
///
/// # Errors
/// The kernel's error from `recvmsg`, including `WouldBlock` on a non-blocking socket.
pub fn recv_with_fds(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; 8];
    // SAFETY: msghdr is plain data; zeroed is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&cbuf);
    let n = loop {
        // SAFETY: `msg` points at live buffers for the call.
        let r = unsafe { libc::recvmsg(fd, &raw mut msg, libc::MSG_CMSG_CLOEXEC) };
        match cvt_size(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => break other?,
        }
    };
    let mut fds = Vec::new();
    // SAFETY: the kernel filled msg_control with `msg_controllen` bytes of control messages;
    // CMSG_FIRSTHDR/NXTHDR walk them within that length, and each SCM_RIGHTS payload holds
    // (cmsg_len - CMSG_LEN(0)) / sizeof(int) descriptors that are now ours.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&raw const msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(c).cast::<RawFd>();
                let count =
                    ((*c).cmsg_len - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                }
            }
            c = libc::CMSG_NXTHDR(&raw const msg, c);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "peer passed more descriptors than a message may carry",
        ));
    }
    Ok((n, fds))
}

/// Whether `err` says the process or the system is out of file descriptors (`EMFILE`,
/// `ENFILE`): `accept` fails so even with no connection waiting, as it takes the descriptor first.
#[must_use]
pub fn is_fd_exhaustion(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// Sets `SO_SNDTIMEO` and `SO_RCVTIMEO` of a blocking socket: a `connect` to a full backlog, a
/// `send` and a `recv` then fail with `WouldBlock` after `timeout_ms` (0: wait forever again).
///
/// # Errors
/// The kernel's error from `setsockopt`.
pub fn set_socket_timeouts(fd: RawFd, timeout_ms: u64) -> io::Result<()> {
    let tv = libc::timeval {
        tv_sec: (timeout_ms / 1000) as libc::time_t,
        tv_usec: ((timeout_ms % 1000) * 1000) as libc::suseconds_t,
    };
    for opt in [libc::SO_SNDTIMEO, libc::SO_RCVTIMEO] {
        // SAFETY: `tv` is a valid timeval of the size given.
        cvt(unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&raw const tv).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        })?;
    }
    Ok(())
}

/// Whether `fd` is a datagram socket (`SO_TYPE` is `SOCK_DGRAM`); `false` for anything else,
/// a pipe or a file included.
#[must_use]
pub fn is_datagram_socket(fd: RawFd) -> bool {
    let mut ty: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `ty` and `len` are valid out-pointers of the size given.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TYPE,
            (&raw mut ty).cast(),
            &raw mut len,
        )
    };
    r == 0 && ty == libc::SOCK_DGRAM
}

/// Turns on `SO_RXQ_OVFL`: every datagram then carries the socket's count of datagrams the
/// kernel dropped (receive buffer full) so far, read by [`recv_counting_drops`].
///
/// # Errors
/// The kernel's error from `setsockopt`.
pub fn enable_drop_count(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: `on` is a valid int of the size given.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RXQ_OVFL,
            (&raw const on).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Receives one datagram into `buf` (truncated to its length); returns its length and the
/// socket's cumulative kernel drop count when `SO_RXQ_OVFL` is on and the kernel attached it.
///
/// # Errors
/// The kernel's error from `recvmsg`, including `WouldBlock` on a non-blocking socket.
pub fn recv_counting_drops(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<u32>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cbuf = [0u64; 8];
    // SAFETY: msghdr is plain data; zeroed is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&cbuf);
    let n = loop {
        // SAFETY: `msg` points at live buffers for the call.
        let r = unsafe { libc::recvmsg(fd, &raw mut msg, 0) };
        match cvt_size(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => break other?,
        }
    };
    let mut drops = None;
    // SAFETY: the kernel filled msg_control with `msg_controllen` bytes of control messages;
    // an SO_RXQ_OVFL one carries one u32.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&raw const msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_RXQ_OVFL {
                drops = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<u32>()));
            }
            c = libc::CMSG_NXTHDR(&raw const msg, c);
        }
    }
    Ok((n, drops))
}

/// `poll(2)` for readability of `fds`, retried on `EINTR`: blocks for up to `timeout_ms`
/// (`None`: without end), and fills `ready[i]` with whether `fds[i]` is readable or closed
/// (`POLLIN`, `POLLHUP`, `POLLERR`). Returns how many are.
///
/// # Errors
/// The kernel's error from `poll`; `InvalidInput` when `ready` is shorter than `fds`.
pub fn poll_readable(
    fds: &[RawFd],
    timeout_ms: Option<u32>,
    ready: &mut [bool],
) -> io::Result<usize> {
    if ready.len() < fds.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "poll_readable: fewer result slots than descriptors",
        ));
    }
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let timeout = timeout_ms.map_or(-1, |t| libc::c_int::try_from(t).unwrap_or(libc::c_int::MAX));
    let n = loop {
        // SAFETY: a valid array of pollfds of the length given.
        let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout) };
        match cvt(r) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => break other?,
        }
    };
    for (slot, p) in ready.iter_mut().zip(&pfds) {
        *slot = p.revents != 0;
    }
    Ok(usize::try_from(n).unwrap_or(0))
}

/// `SO_MEMINFO` (`include/uapi/asm-generic/socket.h`; the same on x86 and arm64), which the
/// libc crate does not name.
const SO_MEMINFO: libc::c_int = 55;
/// Entries of the `SO_MEMINFO` array (`SK_MEMINFO_VARS`, `include/uapi/linux/sock_diag.h`).
const SK_MEMINFO_VARS: usize = 9;

/// The socket's cumulative count of datagrams the kernel dropped (receive buffer full), read
/// with `SO_MEMINFO`: the same counter `SO_RXQ_OVFL` attaches to each datagram, but readable
/// when no datagram follows the drops.
///
/// # Errors
/// The kernel's error from `getsockopt`.
pub fn socket_drop_count(fd: RawFd) -> io::Result<u32> {
    let mut info = [0u32; SK_MEMINFO_VARS];
    let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
    // SAFETY: `info` is writable for `len` bytes; the kernel writes at most that.
    cvt(unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            SO_MEMINFO,
            info.as_mut_ptr().cast(),
            &raw mut len,
        )
    })?;
    let at = usize::try_from(libc::SK_MEMINFO_DROPS).unwrap_or(usize::MAX);
    if (len as usize) < (at + 1) * std::mem::size_of::<u32>() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "SO_MEMINFO returned no drop count",
        ));
    }
    Ok(info[at])
}

/// `shutdown(fd, SHUT_RDWR)`: ends reads blocked on the socket and tells the peer; errors (a
/// socket already shut) are of no interest.
pub fn shutdown(fd: RawFd) {
    // SAFETY: plain syscall, no pointers.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}

/// The credentials of a Unix socket's peer as the kernel recorded them at `connect`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
pub struct PeerCred {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
}

/// `SO_PEERCRED`.
///
/// # Errors
/// The kernel's error from `getsockopt`.
pub fn peer_cred(fd: RawFd) -> io::Result<PeerCred> {
    // SAFETY: ucred is plain data.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid out-pointers of the size given.
    cvt(unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &raw mut len,
        )
    })?;
    Ok(PeerCred {
        pid: cred.pid,
        uid: cred.uid,
        gid: cred.gid,
    })
}

/// `SIGINT`, for [`signal_process`]: the signal a program takes as "stop cleanly".
pub const SIGINT: i32 = libc::SIGINT;

/// Sends signal `sig` to process `pid` (`kill(2)`).
///
/// # Errors
/// The kernel's error (`ESRCH`: no such process; `EPERM`).
pub fn signal_process(pid: u32, sig: i32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    // SAFETY: kill takes plain integers; a positive pid names one process.
    cvt(unsafe { libc::kill(pid, sig) }).map(|_| ())
}

/// Bytes queued to read on a socket (`FIONREAD`; on a datagram socket the size of the next
/// datagram, 0 when none).
///
/// # Errors
/// The kernel's error from `ioctl`.
pub fn unread_bytes(fd: BorrowedFd<'_>) -> io::Result<u64> {
    Ok(rustix::io::ioctl_fionread(fd)?)
}

/// The effective user id of this process.
#[must_use]
pub fn geteuid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Makes the child `cmd` starts get `SIGTERM` when the thread that started it ends, and refuse
/// to start (the spawn fails) when the starting process is already gone: a command a controller
/// runs never outlives it. The child's half runs between `fork` and `exec`, where only
/// async-signal-safe calls are allowed: `rustix`'s `prctl` and `getppid` are bare system calls
/// (no allocation, no lock).
pub fn end_with_parent(cmd: &mut std::process::Command) {
    use rustix::process::{getppid, set_parent_process_death_signal, Signal};
    use std::os::unix::process::CommandExt;
    let parent = rustix::process::getpid();
    // SAFETY: the closure makes only async-signal-safe system calls (see above); the error it
    // builds on the failure path is what `Command` itself does there.
    unsafe {
        cmd.pre_exec(move || {
            set_parent_process_death_signal(Some(Signal::TERM))?;
            // The starter may have died between fork and prctl: then nobody would end the command.
            if getppid() != Some(parent) {
                return Err(io::Error::other("the starting process is gone"));
            }
            Ok(())
        });
    }
}

/// An anonymous memory file holding `bytes`, sealed against further writes and resizing, so the
/// receiver can map it without the sender changing it underneath.
///
/// # Errors
/// The kernel's error from `memfd_create`, `write` or `fcntl`.
pub fn sealed_memfd(name: &str, bytes: &[u8]) -> io::Result<OwnedFd> {
    let cname = std::ffi::CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "memfd name holds NUL"))?;
    // SAFETY: a valid C string and flags.
    let fd = cvt(unsafe {
        libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING)
    })?;
    // SAFETY: fresh fd from the kernel.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut file = std::fs::File::from(fd);
    std::io::Write::write_all(&mut file, bytes)?;
    let fd = OwnedFd::from(file);
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: fcntl on our fd, no pointers.
    cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) })?;
    Ok(fd)
}

/// Whether thread `tid` belongs to process `pid` (`/proc/PID/task/TID` exists).
#[must_use]
pub fn thread_of_process(pid: u32, tid: u32) -> bool {
    pid != 0 && tid != 0 && Path::new(&format!("/proc/{pid}/task/{tid}")).exists()
}

/// Runtime directory for the daemon's socket: `$XDG_RUNTIME_DIR/lull` when set, else `/run/lull`.
#[must_use]
pub fn default_socket_path() -> std::path::PathBuf {
    let dir = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(
            || std::path::PathBuf::from("/run"),
            std::path::PathBuf::from,
        );
    dir.join("lull").join("esm.sock")
}

/// The display server's control socket: `kds.sock` beside [`default_socket_path`].
#[must_use]
pub fn default_kds_socket_path() -> std::path::PathBuf {
    default_socket_path().with_file_name("kds.sock")
}

/// The signals whose default action ends the process and that a process can catch: a daemon
/// that holds others' threads frozen must see each of them and clean up before it exits.
/// (`SIGKILL` and `SIGSTOP` cannot be caught; the fault signals `SIGSEGV`, `SIGBUS`, `SIGFPE`,
/// `SIGILL`, `SIGSYS`, `SIGTRAP` and `SIGABRT` are synchronous and cannot go through a signalfd.)
pub const TERMINATION_SIGNALS: [libc::c_int; 15] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGPIPE,
    libc::SIGVTALRM,
    libc::SIGPROF,
    libc::SIGIO,
    libc::SIGPWR,
    libc::SIGSTKFLT,
    libc::SIGXCPU,
    libc::SIGXFSZ,
];

/// Blocks every terminating signal ([`TERMINATION_SIGNALS`] and the real-time signals the C
/// library leaves to programs) for the calling thread (and threads it spawns later) and returns a
/// signalfd that becomes readable when one arrives, so a loop can stop cleanly on them. Read it
/// with [`read_signal`].
///
/// # Errors
/// The kernel's error from `sigprocmask` or `signalfd`.
pub fn termination_signalfd() -> io::Result<OwnedFd> {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it in place.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t; the signal numbers are valid.
    unsafe {
        libc::sigemptyset(&mut set);
        for sig in TERMINATION_SIGNALS {
            libc::sigaddset(&mut set, sig);
        }
        // The C library's own real-time signals are below SIGRTMIN(): it refuses none here.
        for sig in libc::SIGRTMIN()..=libc::SIGRTMAX() {
            libc::sigaddset(&mut set, sig);
        }
    }
    // SAFETY: `set` is initialised; the old mask is not requested.
    cvt(unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) })?;
    // SAFETY: -1 asks for a new signalfd for `set`.
    let fd = cvt(unsafe { libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) })?;
    // SAFETY: fresh fd from the kernel.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// One signal read from a signalfd.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SignalInfo {
    pub signo: i32,
    /// The sender's pid (0 for the kernel).
    pub pid: u32,
}

impl SignalInfo {
    /// A `SIGPIPE` or `SIGXFSZ` this process caused itself (a write to a closed pipe, past the
    /// file-size limit): the write's error already reports it, and it is no request to stop.
    #[must_use]
    pub fn self_inflicted(&self) -> bool {
        matches!(self.signo, libc::SIGPIPE | libc::SIGXFSZ) && self.pid == std::process::id()
    }

    /// The signal's name (`SIGHUP`), or its number.
    #[must_use]
    pub fn name(&self) -> String {
        let abbrev = match self.signo {
            libc::SIGHUP => "SIGHUP",
            libc::SIGINT => "SIGINT",
            libc::SIGQUIT => "SIGQUIT",
            libc::SIGTERM => "SIGTERM",
            libc::SIGUSR1 => "SIGUSR1",
            libc::SIGUSR2 => "SIGUSR2",
            libc::SIGALRM => "SIGALRM",
            libc::SIGPIPE => "SIGPIPE",
            libc::SIGVTALRM => "SIGVTALRM",
            libc::SIGPROF => "SIGPROF",
            libc::SIGIO => "SIGIO",
            libc::SIGPWR => "SIGPWR",
            libc::SIGSTKFLT => "SIGSTKFLT",
            libc::SIGXCPU => "SIGXCPU",
            libc::SIGXFSZ => "SIGXFSZ",
            n => return format!("signal {n}"),
        };
        abbrev.to_owned()
    }
}

/// Reads one pending signal from a signalfd; `None` when none is pending.
///
/// # Errors
/// The kernel's error from `read`.
pub fn read_signal(fd: BorrowedFd<'_>) -> io::Result<Option<SignalInfo>> {
    // SAFETY: signalfd_siginfo is plain data.
    let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::signalfd_siginfo>();
    // SAFETY: `info` is writable for `size` bytes.
    let n = unsafe { libc::read(fd.as_raw_fd(), std::ptr::addr_of_mut!(info).cast(), size) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::WouldBlock {
            Ok(None)
        } else {
            Err(e)
        };
    }
    if usize::try_from(n).ok() != Some(size) {
        return Ok(None);
    }
    Ok(Some(SignalInfo {
        signo: i32::try_from(info.ssi_signo).unwrap_or(0),
        pid: info.ssi_pid,
    }))
}

/// Opens a file read-only and non-blocking (an evdev device node).
///
/// # Errors
/// The kernel's error from `open`.
pub fn open_read_nonblocking(path: &Path) -> io::Result<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    Ok(OwnedFd::from(f))
}

/// `EVIOCSCLOCKID`, `_IOW('E', 0xa0, int)` in `linux/input.h`.
const EVIOCSCLOCKID: libc::c_ulong = 0x4004_45a0;

/// Asks an evdev device to stamp its events with `CLOCK_MONOTONIC` (the kernel's default is
/// `CLOCK_REALTIME`), so stamps compare with the rest of the stack. Fails with `ENOTTY` on
/// anything that is not an evdev device (a pipe), where the writer chose the clock.
///
/// # Errors
/// The kernel's error from `ioctl`.
pub fn evdev_use_monotonic(fd: RawFd) -> io::Result<()> {
    let clock: libc::c_int = libc::CLOCK_MONOTONIC;
    // SAFETY: EVIOCSCLOCKID reads one int from the pointer, which is valid for the call.
    cvt(unsafe { libc::ioctl(fd, EVIOCSCLOCKID, &clock) })?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// One thread's scheduling: what the policy actuator in `lulld` sets (nice, the fair class's
// custom slice, the CPU mask).

/// What the kernel said when it refused a call: its `errno`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Errno(pub i32);

impl Errno {
    pub const EPERM: Errno = Errno(libc::EPERM);
    pub const ESRCH: Errno = Errno(libc::ESRCH);
    pub const EINVAL: Errno = Errno(libc::EINVAL);
    pub const EACCES: Errno = Errno(libc::EACCES);
    pub const EBUSY: Errno = Errno(libc::EBUSY);
    pub const ENOENT: Errno = Errno(libc::ENOENT);
    pub const ENODEV: Errno = Errno(libc::ENODEV);
    pub const EIO: Errno = Errno(libc::EIO);

    /// The `errno` the last failed call of this thread left.
    fn last() -> Errno {
        Errno(io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }

    /// The symbolic name (`EPERM`, `ESRCH`, `EINVAL`, …), `None` for a value not listed here.
    #[must_use]
    pub fn name(self) -> Option<&'static str> {
        let name = match self.0 {
            libc::EPERM => "EPERM",
            libc::ENOENT => "ENOENT",
            libc::ESRCH => "ESRCH",
            libc::EINTR => "EINTR",
            libc::EIO => "EIO",
            libc::ENXIO => "ENXIO",
            libc::E2BIG => "E2BIG",
            libc::EBADF => "EBADF",
            libc::EAGAIN => "EAGAIN",
            libc::ENOMEM => "ENOMEM",
            libc::EACCES => "EACCES",
            libc::EFAULT => "EFAULT",
            libc::EBUSY => "EBUSY",
            libc::EEXIST => "EEXIST",
            libc::EXDEV => "EXDEV",
            libc::ENODEV => "ENODEV",
            libc::ENOTDIR => "ENOTDIR",
            libc::EISDIR => "EISDIR",
            libc::EINVAL => "EINVAL",
            libc::ENFILE => "ENFILE",
            libc::EMFILE => "EMFILE",
            libc::ENOSPC => "ENOSPC",
            libc::EROFS => "EROFS",
            libc::EDOM => "EDOM",
            libc::ERANGE => "ERANGE",
            libc::ENAMETOOLONG => "ENAMETOOLONG",
            libc::ENOSYS => "ENOSYS",
            libc::ENOTEMPTY => "ENOTEMPTY",
            libc::ENODATA => "ENODATA",
            libc::EOVERFLOW => "EOVERFLOW",
            libc::EOPNOTSUPP => "EOPNOTSUPP",
            libc::ETIMEDOUT => "ETIMEDOUT",
            libc::ESTALE => "ESTALE",
            libc::ECANCELED => "ECANCELED",
            _ => return None,
        };
        Some(name)
    }
}

impl std::fmt::Display for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = io::Error::from_raw_os_error(self.0);
        match self.name() {
            Some(name) => write!(f, "{name} ({text})"),
            None => write!(f, "errno {} ({text})", self.0),
        }
    }
}

impl std::error::Error for Errno {}

impl From<Errno> for io::Error {
    fn from(e: Errno) -> io::Error {
        io::Error::from_raw_os_error(e.0)
    }
}

/// A thread id for the calls below: 0 would name the calling thread and a negative one a
/// process group, so only positive ids are passed on (`EINVAL` otherwise).
fn thread_id(tid: i32) -> Result<libc::pid_t, Errno> {
    if tid > 0 {
        Ok(tid)
    } else {
        Err(Errno::EINVAL)
    }
}

/// `setpriority(PRIO_PROCESS, tid, nice)`: on Linux, the nice value of the one thread `tid`.
/// Lowering it below what it was needs `CAP_SYS_NICE` (or `RLIMIT_NICE`).
///
/// # Errors
/// The kernel's `errno`: `ESRCH` (no such thread), `EPERM`/`EACCES` (not allowed); `EINVAL` for
/// an id that is not positive.
pub fn set_thread_nice(tid: i32, nice: i32) -> Result<(), Errno> {
    let who = libc::id_t::try_from(thread_id(tid)?).map_err(|_| Errno::EINVAL)?;
    // SAFETY: plain syscall, no pointers.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, who, nice) };
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(())
    }
}

/// The scheduling attributes of one thread (`struct sched_attr`, `sched(7)`), as far as this
/// crate uses them: the version-0 fields, without utilisation clamps.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SchedAttr {
    /// `SCHED_OTHER`, `SCHED_BATCH`, `SCHED_IDLE`, `SCHED_FIFO`, `SCHED_RR`, `SCHED_DEADLINE`.
    pub policy: u32,
    /// `SCHED_FLAG_*`; of these only `SCHED_FLAG_RESET_ON_FORK` describes a fair thread.
    pub flags: u64,
    pub nice: i32,
    /// The real-time priority (0 for the fair policies).
    pub priority: u32,
    /// For a fair thread, its slice: what `sched_getattr` reports and, since Linux 6.12, a
    /// custom slice `sched_setattr` sets (0 there means the default slice). For
    /// `SCHED_DEADLINE`, the runtime.
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}

impl SchedAttr {
    /// Whether the policy is one of the fair class's (`SCHED_OTHER`, `SCHED_BATCH`,
    /// `SCHED_IDLE`), whose threads have a nice value and a slice.
    #[must_use]
    pub fn is_fair(&self) -> bool {
        [libc::SCHED_OTHER, libc::SCHED_BATCH, libc::SCHED_IDLE]
            .iter()
            .any(|&p| u32::try_from(p) == Ok(self.policy))
    }

    /// Of the flags, only `SCHED_FLAG_RESET_ON_FORK`: the one a fair thread's attributes keep
    /// when they are set again (the others ask `sched_setattr` for something).
    #[must_use]
    pub fn reset_on_fork_flag(&self) -> u64 {
        self.flags & libc::SCHED_FLAG_RESET_ON_FORK as u64
    }
}

/// `SCHED_ATTR_SIZE_VER0` (`include/uapi/linux/sched/types.h`): the size of the fields
/// [`SchedAttr`] carries.
const SCHED_ATTR_SIZE_VER0: u32 = 48;

/// `sched_getattr(tid, …)`.
///
/// # Errors
/// The kernel's `errno` (`ESRCH`: no such thread).
pub fn sched_getattr(tid: i32) -> Result<SchedAttr, Errno> {
    let tid = thread_id(tid)?;
    let mut a = libc::sched_attr {
        size: 0,
        sched_policy: 0,
        sched_flags: 0,
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: 0,
        sched_deadline: 0,
        sched_period: 0,
    };
    // SAFETY: `a` is a valid, writable `struct sched_attr` of at least the size passed; the
    // kernel writes at most that many bytes.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &raw mut a,
            SCHED_ATTR_SIZE_VER0 as libc::c_uint,
            0 as libc::c_uint,
        )
    };
    if r < 0 {
        return Err(Errno::last());
    }
    Ok(SchedAttr {
        policy: a.sched_policy,
        flags: a.sched_flags,
        nice: a.sched_nice,
        priority: a.sched_priority,
        runtime_ns: a.sched_runtime,
        deadline_ns: a.sched_deadline,
        period_ns: a.sched_period,
    })
}

/// `sched_setattr(tid, attr, 0)` with the version-0 fields of `attr`.
///
/// # Errors
/// The kernel's `errno`: `ESRCH`, `EPERM` (not allowed), `EINVAL` (attributes it refuses).
pub fn sched_setattr(tid: i32, attr: &SchedAttr) -> Result<(), Errno> {
    let tid = thread_id(tid)?;
    let mut a = libc::sched_attr {
        size: SCHED_ATTR_SIZE_VER0,
        sched_policy: attr.policy,
        sched_flags: attr.flags,
        sched_nice: attr.nice,
        sched_priority: attr.priority,
        sched_runtime: attr.runtime_ns,
        sched_deadline: attr.deadline_ns,
        sched_period: attr.period_ns,
    };
    // SAFETY: `a` is a valid `struct sched_attr` whose `size` says how much the kernel reads.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &raw mut a, 0 as libc::c_uint) };
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(())
    }
}

/// Bits in one word of a CPU mask as the kernel reads it (an array of `unsigned long`).
const CPU_MASK_WORD_BITS: usize = libc::c_ulong::BITS as usize;
/// CPUs a [`CpuSet`] can name: glibc's `CPU_SETSIZE`.
pub const CPU_SET_SIZE: usize = 1024;

/// A set of CPUs for [`sched_getaffinity`] and [`sched_setaffinity`] (CPUs 0 to
/// [`CPU_SET_SIZE`] − 1).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct CpuSet {
    words: [libc::c_ulong; CPU_SET_SIZE / CPU_MASK_WORD_BITS],
}

impl CpuSet {
    #[must_use]
    pub fn empty() -> CpuSet {
        CpuSet {
            words: [0; CPU_SET_SIZE / CPU_MASK_WORD_BITS],
        }
    }

    /// CPUs 0 to 63, bit `n` for CPU `n`.
    #[must_use]
    pub fn from_mask(mask: u64) -> CpuSet {
        let mut s = CpuSet::empty();
        for cpu in (0..64).filter(|c| mask & (1 << c) != 0) {
            s.insert(cpu);
        }
        s
    }

    /// Adds `cpu` (ignored beyond [`CPU_SET_SIZE`]).
    pub fn insert(&mut self, cpu: usize) {
        if cpu < CPU_SET_SIZE {
            self.words[cpu / CPU_MASK_WORD_BITS] |= 1 << (cpu % CPU_MASK_WORD_BITS);
        }
    }

    #[must_use]
    pub fn contains(&self, cpu: usize) -> bool {
        cpu < CPU_SET_SIZE
            && self.words[cpu / CPU_MASK_WORD_BITS] & (1 << (cpu % CPU_MASK_WORD_BITS)) != 0
    }

    /// CPUs 0 to 63 of the set as a bit mask.
    #[must_use]
    pub fn low_mask(&self) -> u64 {
        (0..64)
            .filter(|&c| self.contains(c))
            .fold(0, |m, c| m | 1 << c)
    }

    /// The CPUs in the set, ascending.
    pub fn cpus(&self) -> impl Iterator<Item = usize> + '_ {
        (0..CPU_SET_SIZE).filter(|&c| self.contains(c))
    }
}

/// `sched_getaffinity(tid)`: the CPUs thread `tid` may run on.
///
/// # Errors
/// The kernel's `errno` (`ESRCH`: no such thread).
pub fn sched_getaffinity(tid: i32) -> Result<CpuSet, Errno> {
    let tid = thread_id(tid)?;
    let mut set = CpuSet::empty();
    // SAFETY: `set.words` is writable for the size passed; the kernel writes at most that many
    // bytes (the raw call returns how many; the rest stays zero).
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getaffinity,
            tid,
            std::mem::size_of_val(&set.words),
            set.words.as_mut_ptr(),
        )
    };
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(set)
    }
}

/// `sched_setaffinity(tid, set)`: the kernel keeps the CPUs of `set` that the thread's cpuset
/// allows and that are online.
///
/// # Errors
/// The kernel's `errno`: `ESRCH`, `EPERM`, `EINVAL` (no CPU of `set` is allowed and online).
pub fn sched_setaffinity(tid: i32, set: &CpuSet) -> Result<(), Errno> {
    let tid = thread_id(tid)?;
    // SAFETY: `set.words` is readable for the size passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_setaffinity,
            tid,
            std::mem::size_of_val(&set.words),
            set.words.as_ptr(),
        )
    };
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(())
    }
}

/// `pidfd_open(pid, 0)` (Linux 5.3+): a descriptor naming process `pid` for as long as it is
/// open — after the process exits it names no other, even when the pid is reused.
///
/// # Errors
/// The kernel's `errno`: `ESRCH` (no such process), `ENOSYS` (a kernel without pidfds),
/// `EINVAL` for a pid that is not positive.
pub fn pidfd_open(pid: i32) -> Result<OwnedFd, Errno> {
    let pid = thread_id(pid)?;
    // SAFETY: plain syscall; flags 0; the returned fd is owned from here on.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0 as libc::c_uint) };
    if r < 0 {
        return Err(Errno::last());
    }
    let fd = RawFd::try_from(r).map_err(|_| Errno::EINVAL)?;
    // SAFETY: a fresh descriptor from the kernel that nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `PIDFD_THREAD` (`include/uapi/linux/pidfd.h`, Linux 6.9+): a pidfd for one thread, readable
/// when that thread exits. The kernel defines it as `O_EXCL`.
const PIDFD_THREAD: libc::c_uint = libc::O_EXCL as libc::c_uint;

/// A pidfd naming thread `tid` alone (Linux 6.9+), which polls readable when that thread exits;
/// `EINVAL` on an older kernel.
///
/// # Errors
/// The kernel's errno.
pub fn pidfd_open_thread(tid: i32) -> Result<OwnedFd, Errno> {
    let tid = thread_id(tid)?;
    // SAFETY: plain syscall; the returned fd is owned from here on.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_open, tid, PIDFD_THREAD) };
    if r < 0 {
        return Err(Errno::last());
    }
    let fd = RawFd::try_from(r).map_err(|_| Errno::EINVAL)?;
    // SAFETY: a fresh descriptor from the kernel that nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether the process a pidfd names has exited (the descriptor polls readable then). Any
/// doubt (the poll fails) says it has.
#[must_use]
pub fn pidfd_exited(pidfd: BorrowedFd<'_>) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut p = [PollFd::new(&pidfd, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    poll(&mut p, Some(&now)) != Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_readable_says_which_descriptors_have_data() {
        let (r1, _w1) = pipe(true).unwrap();
        let (r2, w2) = pipe(true).unwrap();
        let fds = [r1.as_raw_fd(), r2.as_raw_fd()];
        let mut ready = [true; 2];
        assert_eq!(poll_readable(&fds, Some(0), &mut ready).unwrap(), 0);
        assert_eq!(ready, [false, false]);
        write_all_once(w2.as_raw_fd(), b"x").unwrap();
        assert_eq!(poll_readable(&fds, None, &mut ready).unwrap(), 1);
        assert_eq!(ready, [false, true]);
        assert!(
            poll_readable(&fds, Some(0), &mut [false]).is_err(),
            "too few slots"
        );
    }

    #[test]
    fn errno_names() {
        assert_eq!(Errno::ESRCH.name(), Some("ESRCH"));
        assert_eq!(Errno(libc::EPERM).name(), Some("EPERM"));
        assert_eq!(Errno(4095).name(), None);
        assert!(Errno::EINVAL.to_string().starts_with("EINVAL ("));
        assert!(Errno(4095).to_string().starts_with("errno 4095 ("));
    }

    #[test]
    fn cpu_sets_hold_their_cpus() {
        let s = CpuSet::from_mask(0b1010_0001);
        assert_eq!(s.cpus().collect::<Vec<_>>(), [0, 5, 7]);
        assert_eq!(s.low_mask(), 0b1010_0001);
        let mut big = CpuSet::empty();
        big.insert(1000);
        big.insert(CPU_SET_SIZE);
        assert!(big.contains(1000) && !big.contains(CPU_SET_SIZE));
        assert_eq!(big.low_mask(), 0);
    }

    #[test]
    fn a_pidfd_says_when_its_process_exits() {
        use std::os::fd::AsFd;
        let own = pidfd_open(std::process::id() as i32).unwrap();
        assert!(!pidfd_exited(own.as_fd()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let fd = pidfd_open(child.id() as i32).unwrap();
        child.wait().unwrap();
        assert!(pidfd_exited(fd.as_fd()));
        assert_eq!(pidfd_open(0).err(), Some(Errno::EINVAL));
    }

    /// The calling thread's own attributes and mask read back as the kernel reports them in
    /// `/proc` (no privilege needed: nothing is changed).
    #[test]
    fn own_thread_reads_back() {
        let me = gettid();
        let attr = sched_getattr(me).unwrap();
        let stat = std::fs::read_to_string(format!("/proc/self/task/{me}/stat")).unwrap();
        let after_name: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..]
            .split_whitespace()
            .collect();
        // Field 19 (nice) and 41 (policy), counted from field 3 right after the name.
        assert_eq!(after_name[19 - 3].parse::<i32>().unwrap(), attr.nice);
        assert_eq!(after_name[41 - 3].parse::<u32>().unwrap(), attr.policy);
        let set = sched_getaffinity(me).unwrap();
        assert!(set.cpus().count() >= 1);
        sched_setaffinity(me, &set).unwrap();
        assert_eq!(sched_getaffinity(me).unwrap(), set);
        // Ids that are not positive name no one thread.
        assert_eq!(sched_getattr(0), Err(Errno::EINVAL));
        assert_eq!(set_thread_nice(-1, 0), Err(Errno::EINVAL));
        assert_eq!(sched_setaffinity(0, &set), Err(Errno::EINVAL));
    }
}
