use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::fd::{read, write_all_once};
use super::{cvt, timespec_of};

/// A blocking eventfd (a reader sleeps in `read` itself rather than in epoll), close-on-exec.
///
/// # Errors
/// The kernel's error from `eventfd`.
pub fn blocking_eventfd() -> io::Result<OwnedFd> {
    Ok(rustix::event::eventfd(
        0,
        rustix::event::EventfdFlags::CLOEXEC,
    )?)
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

/// Sleeps while `word` holds `expected` (`FUTEX_WAIT`, process-private, no timeout). Returns
/// at once when it holds something else, and may return spuriously: callers re-check `word`.
pub fn futex_wait(word: &std::sync::atomic::AtomicU32, expected: u32) {
    use rustix::thread::futex;
    let _ = futex::wait(word, futex::Flags::PRIVATE, expected, None);
}

/// Wakes up to `n` threads sleeping in [`futex_wait`] on `word` (`FUTEX_WAKE`, process-private).
pub fn futex_wake(word: &std::sync::atomic::AtomicU32, n: u32) {
    use rustix::thread::futex;
    let _ = futex::wake(word, futex::Flags::PRIVATE, n);
}

#[cfg(test)]
mod tests {
    use crate::sys::*;
    use std::os::fd::AsRawFd;

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
}
