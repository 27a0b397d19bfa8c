//! Taking ownership of a descriptor a parent passed by number: systemd's listening sockets
//! (`LISTEN_FDS`) and the harness's hub connection (`lull-app --hub-fd`).
//!
//! A bare number becomes an [`OwnedFd`] here alone, through one safe door,
//! [`adopt_inherited_socket`]. What makes it sound is what tells an inherited descriptor from
//! one the process opened itself: everything this workspace and the standard library open is
//! close-on-exec (`O_CLOEXEC`, `SOCK_CLOEXEC`, `F_DUPFD_CLOEXEC`), and the workspace clears the
//! flag only in a child between `fork` and `exec` (`pass_fds_at`, `proc_ctl::pass_fd_to_child`).
//! A descriptor that survived `exec` lacks it. Adoption sets it, under a process-wide lock, so a
//! second adoption of the same descriptor finds it claimed.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::{Mutex, PoisonError};

use rustix::fs::FileType;
use rustix::io::FdFlags;

use super::{borrowed, Errno};

/// Held from the check of a descriptor's close-on-exec flag until the flag is set, so two
/// threads adopting the same number cannot both find it unclaimed.
static CLAIM: Mutex<()> = Mutex::new(());

/// Why a descriptor number was not adopted. The descriptor is left as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AdoptError {
    #[error(
        "descriptor {0} is not one a parent passes (0, 1 and 2 are the standard streams; \
         negative numbers name nothing)"
    )]
    BadNumber(RawFd),
    #[error("descriptor {fd} is not open ({errno})")]
    NotOpen { fd: RawFd, errno: Errno },
    #[error("descriptor {fd} is {kind}, not a socket")]
    NotSocket { fd: RawFd, kind: &'static str },
    #[error(
        "descriptor {0} is close-on-exec: adopted already, or opened by this process rather \
         than inherited"
    )]
    AlreadyAdopted(RawFd),
    #[error("descriptor {fd}: {errno}")]
    Os { fd: RawFd, errno: Errno },
}

/// A file type as the errors name it.
fn kind_name(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a pipe",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "of an unknown file type",
    }
}

/// Takes ownership of socket `fd`, which this process inherited from its parent, and makes it
/// close-on-exec (so children the process starts do not inherit it in turn).
///
/// # Errors
/// [`AdoptError`]: a number below 3, a descriptor that is not open, not a socket, or already
/// close-on-exec (adopted before, or never inherited), or the kernel's refusal to read or set
/// its flags. A refused descriptor is neither closed nor changed.
pub fn adopt_inherited_socket(fd: RawFd) -> Result<OwnedFd, AdoptError> {
    if fd <= 2 {
        return Err(AdoptError::BadNumber(fd));
    }
    let os = |e: rustix::io::Errno| Errno(e.raw_os_error());
    let _claim = CLAIM.lock().unwrap_or_else(PoisonError::into_inner);
    let b = borrowed(&fd).map_err(|e| AdoptError::Os {
        fd,
        errno: Errno::from(e),
    })?;
    let flags = rustix::io::fcntl_getfd(b).map_err(|e| {
        if e == rustix::io::Errno::BADF {
            AdoptError::NotOpen { fd, errno: os(e) }
        } else {
            AdoptError::Os { fd, errno: os(e) }
        }
    })?;
    if flags.contains(FdFlags::CLOEXEC) {
        return Err(AdoptError::AlreadyAdopted(fd));
    }
    let stat = rustix::fs::fstat(b).map_err(|e| AdoptError::Os { fd, errno: os(e) })?;
    let kind = FileType::from_raw_mode(stat.st_mode);
    if kind != FileType::Socket {
        return Err(AdoptError::NotSocket {
            fd,
            kind: kind_name(kind),
        });
    }
    rustix::io::fcntl_setfd(b, flags | FdFlags::CLOEXEC)
        .map_err(|e| AdoptError::Os { fd, errno: os(e) })?;
    // SAFETY: `fd` is open (F_GETFD answered) and a socket. It was not close-on-exec, which no
    // descriptor this process opened itself is (see the module's comment), so it was inherited
    // and nothing in the process owns it; setting the flag under `CLAIM` before returning makes
    // this the one adoption of it, as a second call finds the flag set and refuses.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys;
    use std::os::fd::{AsFd, AsRawFd, IntoRawFd};

    /// A descriptor made to look inherited: close-on-exec cleared, as `exec` leaves one.
    fn as_if_inherited(fd: &impl AsFd) {
        sys::set_cloexec(fd.as_fd(), false).unwrap();
    }

    /// Adopts a number the test still owns, where adoption must be refused; an adoption that
    /// wrongly succeeds is forgotten (not closed twice) and fails the test.
    fn refused(fd: RawFd) -> AdoptError {
        match adopt_inherited_socket(fd) {
            Err(e) => e,
            Ok(owned) => {
                let _ = owned.into_raw_fd();
                panic!("descriptor {fd} adopted")
            }
        }
    }

    #[test]
    fn an_inherited_socket_is_adopted_once() {
        let (one, other) = sys::seqpacket_pair().unwrap();
        as_if_inherited(&one);
        let raw = one.into_raw_fd();
        let owned = adopt_inherited_socket(raw).unwrap();
        assert_eq!(owned.as_raw_fd(), raw);
        assert!(sys::is_cloexec(owned.as_fd()).unwrap());
        // The adopted socket is the pair's end: it reaches the other.
        sys::write_all_once(owned.as_raw_fd(), b"hub").unwrap();
        let mut buf = [0u8; 8];
        let n = sys::read(other.as_raw_fd(), &mut buf).unwrap();
        assert_eq!(&buf[..n], b"hub");
        assert_eq!(refused(raw), AdoptError::AlreadyAdopted(raw));
    }

    #[test]
    fn a_descriptor_the_process_opened_is_not_taken_for_inherited() {
        let (one, _other) = sys::seqpacket_pair().unwrap();
        let raw = one.as_raw_fd();
        assert_eq!(refused(raw), AdoptError::AlreadyAdopted(raw));
        // Refused, and left as it was.
        assert!(sys::is_cloexec(one.as_fd()).unwrap());
    }

    #[test]
    fn a_regular_file_is_refused() {
        let file = std::fs::File::open("/proc/self/stat").unwrap();
        as_if_inherited(&file);
        let raw = file.as_raw_fd();
        let e = refused(raw);
        assert_eq!(
            e,
            AdoptError::NotSocket {
                fd: raw,
                kind: "a regular file"
            }
        );
        assert!(e.to_string().contains("not a socket"), "{e}");
        // Refused, and left as it was: still open, still not close-on-exec.
        assert!(!sys::is_cloexec(file.as_fd()).unwrap());
        let (r, w) = sys::pipe(false).unwrap();
        as_if_inherited(&r);
        assert_eq!(
            refused(r.as_raw_fd()),
            AdoptError::NotSocket {
                fd: r.as_raw_fd(),
                kind: "a pipe"
            }
        );
        drop(w);
    }

    #[test]
    fn a_closed_descriptor_number_is_refused() {
        // A number well above those the other tests hold, closed again at once.
        let (r, _w) = sys::pipe(false).unwrap();
        let high = sys::dup_at_least(r.as_fd(), 900).unwrap();
        let raw = high.as_raw_fd();
        drop(high);
        let e = refused(raw);
        assert_eq!(
            e,
            AdoptError::NotOpen {
                fd: raw,
                errno: Errno(libc::EBADF)
            }
        );
        assert!(e.to_string().contains("not open"), "{e}");
        // No descriptor can have the largest number.
        assert!(matches!(
            refused(RawFd::MAX),
            AdoptError::NotOpen { fd: RawFd::MAX, .. }
        ));
    }

    #[test]
    fn the_standard_streams_and_negative_numbers_are_refused() {
        for fd in [-1, 0, 1, 2] {
            assert_eq!(refused(fd), AdoptError::BadNumber(fd));
        }
    }
}
