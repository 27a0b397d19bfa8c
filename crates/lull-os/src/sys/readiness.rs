use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use lull_model::time::{NS_PER_MS, NS_PER_S};
use rustix::event::epoll;
use rustix::time::{Itimerspec, TimerfdTimerFlags, Timespec};

use super::borrowed;
use super::fd::write_all_once;

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
        Ok(Epoll {
            fd: epoll::create(epoll::CreateFlags::CLOEXEC)?,
        })
    }

    /// Watches `fd` for readability (and hang-up, which epoll always reports), tagged `token`.
    ///
    /// # Errors
    /// The kernel's error from `epoll_ctl`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        epoll::add(
            &self.fd,
            borrowed(&fd)?,
            epoll::EventData::new_u64(token),
            epoll::EventFlags::IN,
        )?;
        Ok(())
    }

    /// Keeps `fd` registered but stops (`false`) or resumes (`true`) reporting its readability:
    /// a listener out of descriptors is disarmed this way, or level-triggered epoll would wake
    /// the loop for it again at once.
    ///
    /// # Errors
    /// The kernel's error from `epoll_ctl`.
    pub fn set_armed(&self, fd: RawFd, token: u64, armed: bool) -> io::Result<()> {
        let flags = if armed {
            epoll::EventFlags::IN
        } else {
            epoll::EventFlags::empty()
        };
        epoll::modify(
            &self.fd,
            borrowed(&fd)?,
            epoll::EventData::new_u64(token),
            flags,
        )?;
        Ok(())
    }

    /// Stops watching `fd`.
    ///
    /// # Errors
    /// The kernel's error from `epoll_ctl`.
    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        epoll::delete(&self.fd, borrowed(&fd)?)?;
        Ok(())
    }

    /// Blocks until at least one watched fd is ready — with no timeout: the caller sleeps in the
    /// kernel until there is data. Returns the tokens of the ready fds in `out`. `EINTR` is
    /// retried.
    ///
    /// # Errors
    /// The kernel's error from `epoll_wait`.
    pub fn wait_forever(&self, out: &mut Vec<u64>) -> io::Result<()> {
        self.wait(out, None)
    }

    /// The tokens of the fds ready now, without sleeping (timeout 0).
    ///
    /// # Errors
    /// The kernel's error from `epoll_wait`.
    pub fn ready_now(&self, out: &mut Vec<u64>) -> io::Result<()> {
        self.wait(out, Some(&timespec_ns(0)))
    }

    fn wait(&self, out: &mut Vec<u64>, timeout: Option<&Timespec>) -> io::Result<()> {
        const MAX_EVENTS: usize = 64;
        let none = epoll::Event {
            flags: epoll::EventFlags::empty(),
            data: epoll::EventData::new_u64(0),
        };
        let mut evs = [none; MAX_EVENTS];
        loop {
            match epoll::wait(&self.fd, &mut evs[..], timeout) {
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
                Ok(n) => {
                    out.clear();
                    out.extend(evs[..n].iter().map(|e| e.data.u64()));
                    return Ok(());
                }
            }
        }
    }
}

/// `ns` as the kernel's `timespec`.
fn timespec_ns(ns: u64) -> Timespec {
    Timespec {
        tv_sec: i64::try_from(ns / NS_PER_S).unwrap_or(i64::MAX),
        tv_nsec: i64::try_from(ns % NS_PER_S).unwrap_or(0),
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
        use rustix::time::{timerfd_create, TimerfdClockId, TimerfdFlags};
        Ok(TimerFd {
            fd: timerfd_create(
                TimerfdClockId::Monotonic,
                TimerfdFlags::CLOEXEC | TimerfdFlags::NONBLOCK,
            )?,
        })
    }

    /// Arms the timer to expire at the absolute monotonic time `at_ns` (TFD_TIMER_ABSTIME), then
    /// every `interval_ns` if non-zero. A time already past expires at once.
    ///
    /// # Errors
    /// The kernel's error from `timerfd_settime`.
    pub fn set_abs(&self, at_ns: u64, interval_ns: u64) -> io::Result<()> {
        // An all-zero it_value would disarm; the earliest real time is 1 ns.
        self.set(TimerfdTimerFlags::ABSTIME, at_ns.max(1), interval_ns)
    }

    /// Disarms the timer: it expires no more until armed again.
    ///
    /// # Errors
    /// The kernel's error from `timerfd_settime`.
    pub fn disarm(&self) -> io::Result<()> {
        self.set(TimerfdTimerFlags::empty(), 0, 0)
    }

    fn set(&self, flags: TimerfdTimerFlags, value_ns: u64, interval_ns: u64) -> io::Result<()> {
        let spec = Itimerspec {
            it_interval: timespec_ns(interval_ns),
            it_value: timespec_ns(value_ns),
        };
        rustix::time::timerfd_settime(&self.fd, flags, &spec)?;
        Ok(())
    }

    /// Consumes the expirations counted so far (0 when none: the fd is non-blocking).
    ///
    /// # Errors
    /// Any read error but `EAGAIN`.
    pub fn take_expirations(&self) -> io::Result<u64> {
        read_u64(self.fd.as_fd())
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
        use rustix::event::{eventfd, EventfdFlags};
        Ok(EventFd {
            fd: eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?,
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
        read_u64(self.fd.as_fd())
    }

    #[must_use]
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

fn read_u64(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut buf = [0u8; 8];
    loop {
        return match rustix::io::read(fd, &mut buf) {
            Ok(8) => Ok(u64::from_ne_bytes(buf)),
            Ok(_) | Err(rustix::io::Errno::AGAIN) => Ok(0),
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => Err(e.into()),
        };
    }
}

/// `poll(2)` for readability of `fds`, retried on `EINTR`: blocks for up to `timeout_ms`
/// (`None`: without end), and fills `ready[i]` with whether `fds[i]` is readable or closed
/// (`POLLIN`, `POLLHUP`, `POLLERR`). Returns how many are.
///
/// # Errors
/// The kernel's error from `poll`; `EBADF` for a negative number; `InvalidInput` when `ready`
/// is shorter than `fds`.
pub fn poll_readable(
    fds: &[RawFd],
    timeout_ms: Option<u32>,
    ready: &mut [bool],
) -> io::Result<usize> {
    use rustix::event::{poll, PollFd, PollFlags};
    if ready.len() < fds.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "poll_readable: fewer result slots than descriptors",
        ));
    }
    let mut pfds = fds
        .iter()
        .map(|fd| Ok(PollFd::from_borrowed_fd(borrowed(fd)?, PollFlags::IN)))
        .collect::<io::Result<Vec<_>>>()?;
    let timeout = timeout_ms.map(|ms| timespec_ns(u64::from(ms) * NS_PER_MS));
    let n = loop {
        match poll(&mut pfds, timeout.as_ref()) {
            Err(rustix::io::Errno::INTR) => continue,
            other => break other?,
        }
    };
    for (slot, p) in ready.iter_mut().zip(&pfds) {
        *slot = !p.revents().is_empty();
    }
    Ok(n)
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
