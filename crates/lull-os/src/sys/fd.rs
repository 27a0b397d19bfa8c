use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::Path;

use super::{borrowed, cvt};

/// `read(2)`, retrying `EINTR`.
///
/// # Errors
/// The kernel's error, including `WouldBlock` on a non-blocking fd with nothing to read.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    let fd = borrowed(&fd)?;
    loop {
        match rustix::io::read(fd, &mut *buf) {
            Err(rustix::io::Errno::INTR) => continue,
            other => return Ok(other?),
        }
    }
}

/// One `write(2)` (retrying `EINTR`); returns the bytes written.
///
/// # Errors
/// The kernel's error.
pub fn write_all_once(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    let fd = borrowed(&fd)?;
    loop {
        match rustix::io::write(fd, buf) {
            Err(rustix::io::Errno::INTR) => continue,
            other => return Ok(other?),
        }
    }
}

/// `write(2)` until all of `buf` is written (retrying `EINTR`), as `Write::write_all` does on a
/// descriptor the caller holds only by number.
///
/// # Errors
/// The kernel's error; `WriteZero` when a write takes nothing.
pub fn write_all(fd: RawFd, buf: &[u8]) -> io::Result<()> {
    let mut rest = buf;
    while !rest.is_empty() {
        match write_all_once(fd, rest)? {
            0 => return Err(io::ErrorKind::WriteZero.into()),
            n => rest = &rest[n..],
        }
    }
    Ok(())
}

/// A pipe: (read end, write end), both close-on-exec; the read end non-blocking if asked.
///
/// # Errors
/// The kernel's error from `pipe2`.
pub fn pipe(read_nonblocking: bool) -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
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
    use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
    let fd = borrowed(&fd)?;
    let mut flags = fcntl_getfl(fd)?;
    flags.set(OFlags::NONBLOCK, on);
    fcntl_setfl(fd, flags)?;
    Ok(())
}

/// Whether `err` says the process or the system is out of file descriptors (`EMFILE`,
/// `ENFILE`): `accept` fails so even with no connection waiting, as it takes the descriptor first.
#[must_use]
pub fn is_fd_exhaustion(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// Bytes queued to read on a socket (`FIONREAD`; on a datagram socket the size of the next
/// datagram, 0 when none).
///
/// # Errors
/// The kernel's error from `ioctl`.
pub fn unread_bytes(fd: BorrowedFd<'_>) -> io::Result<u64> {
    Ok(rustix::io::ioctl_fionread(fd)?)
}

/// An anonymous memory file holding `bytes`, sealed against further writes and resizing, so the
/// receiver can map it without the sender changing it underneath.
///
/// # Errors
/// The kernel's error from `memfd_create`, `write` or `fcntl`.
pub fn sealed_memfd(name: &str, bytes: &[u8]) -> io::Result<OwnedFd> {
    use rustix::fs::{fcntl_add_seals, memfd_create, MemfdFlags, SealFlags};
    let cname = std::ffi::CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "memfd name holds NUL"))?;
    let fd = memfd_create(
        cname.as_c_str(),
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?;
    let mut file = std::fs::File::from(fd);
    std::io::Write::write_all(&mut file, bytes)?;
    let fd = OwnedFd::from(file);
    let seals = SealFlags::SEAL | SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE;
    fcntl_add_seals(&fd, seals)?;
    Ok(fd)
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
/// Hand-written: `rustix`'s `ioctl` is as unsafe as the bare call.
///
/// # Errors
/// The kernel's error from `ioctl`.
pub fn evdev_use_monotonic(fd: RawFd) -> io::Result<()> {
    let clock: libc::c_int = libc::CLOCK_MONOTONIC;
    // SAFETY: EVIOCSCLOCKID reads one int from the pointer, which is valid for the call.
    cvt(unsafe { libc::ioctl(fd, EVIOCSCLOCKID, &clock) })?;
    Ok(())
}

/// Sets or clears `FD_CLOEXEC` on `fd`.
///
/// # Errors
/// The kernel's error from `fcntl`.
pub fn set_cloexec(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    use rustix::io::{fcntl_getfd, fcntl_setfd, FdFlags};
    let mut flags = fcntl_getfd(fd)?;
    flags.set(FdFlags::CLOEXEC, on);
    fcntl_setfd(fd, flags)?;
    Ok(())
}

/// Whether `fd` is closed on `exec` (`FD_CLOEXEC`).
///
/// # Errors
/// The kernel's error from `fcntl`.
pub fn is_cloexec(fd: BorrowedFd<'_>) -> io::Result<bool> {
    Ok(rustix::io::fcntl_getfd(fd)?.contains(rustix::io::FdFlags::CLOEXEC))
}

/// A close-on-exec duplicate of `fd` numbered `min` or above (`F_DUPFD_CLOEXEC`).
///
/// # Errors
/// The kernel's error (`EMFILE`, `EINVAL` for a `min` past the limit).
pub fn dup_at_least(fd: BorrowedFd<'_>, min: RawFd) -> io::Result<OwnedFd> {
    let min = u32::try_from(min).map_err(|_| io::Error::from(super::Errno::EINVAL))?;
    Ok(rustix::io::fcntl_dupfd_cloexec(fd, min as _)?)
}

/// Makes the child `cmd` starts find `fds` at descriptors `first`, `first + 1`, … without
/// close-on-exec (socket activation passes listeners so). The descriptors in `fds` must stay
/// open until the command is spawned. The child's half runs between `fork` and `exec`, where
/// only async-signal-safe calls are allowed: `fcntl` and `dup2` are bare system calls,
/// hand-written.
///
/// The child moves every descriptor above the targets first (close-on-exec copies), then each
/// into place, so a descriptor already numbered like a target is neither overwritten before
/// it moves nor left close-on-exec (`dup2` onto itself would keep the flag).
pub fn pass_fds_at(cmd: &mut std::process::Command, mut fds: Vec<RawFd>, first: RawFd) {
    use std::os::unix::process::CommandExt;
    let above = first.saturating_add(RawFd::try_from(fds.len()).unwrap_or(RawFd::MAX));
    // SAFETY: the closure only calls fcntl and dup2 and builds the error from errno, as
    // `Command` itself does on its failure path; it rewrites the child's copy of `fds` in
    // place, allocating nothing.
    unsafe {
        cmd.pre_exec(move || {
            for fd in &mut fds {
                *fd = cvt(libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, above))?;
            }
            for (fd, to) in fds.iter().zip(first..) {
                cvt(libc::dup2(*fd, to))?;
            }
            Ok(())
        });
    }
}

/// Sets this process's limit on open descriptors (`RLIMIT_NOFILE`, soft and hard) to `n`.
///
/// # Errors
/// The kernel's error (`EPERM` raising the hard limit without privilege).
pub fn set_fd_limit(n: u64) -> io::Result<()> {
    use rustix::process::{setrlimit, Resource, Rlimit};
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(n),
            maximum: Some(n),
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two descriptors passed in swapped places, one of them already at its target: the child
    /// finds each where it was asked to, open across the exec.
    #[test]
    fn passed_descriptors_land_at_their_numbers_even_when_they_overlap_the_targets() {
        let (a, _a_peer) = super::super::seqpacket_pair().unwrap();
        let (b, _b_peer) = super::super::seqpacket_pair().unwrap();
        let (ia, ib) = (inode(a.as_raw_fd()), inode(b.as_raw_fd()));
        // b goes to a's number (one source is a later target) and a to a's number + 1.
        let first = a.as_raw_fd();
        let mut cmd = std::process::Command::new("sh");
        cmd.arg("-c").arg(format!(
            "readlink /proc/self/fd/{first}; readlink /proc/self/fd/{}",
            first + 1
        ));
        pass_fds_at(&mut cmd, vec![b.as_raw_fd(), a.as_raw_fd()], first);
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text, format!("{ib}\n{ia}\n"));
    }

    fn inode(fd: RawFd) -> String {
        std::fs::read_link(format!("/proc/self/fd/{fd}"))
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn write_all_writes_every_byte_or_says_why_not() {
        let (r, w) = pipe(false).unwrap();
        // More than one page, so the pipe's reader sees it in pieces.
        let sent: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        write_all(w.as_raw_fd(), &sent).unwrap();
        drop(w);
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut std::fs::File::from(r), &mut got).unwrap();
        assert_eq!(got, sent);

        let (r, w) = pipe(false).unwrap();
        drop(r);
        let e = write_all(w.as_raw_fd(), b"no reader").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EPIPE));
    }
}
