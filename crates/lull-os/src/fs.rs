//! File-system calls the standard library lacks, through `rustix`: an exclusive lock on a
//! directory held for as long as its descriptor lives, and extended attributes (the cgroup
//! freezer keeps a process's original cgroup in one).

use std::fs::File;
use std::io;
use std::path::Path;

/// Opens directory `dir` and takes an exclusive `flock` on it without waiting: `EWOULDBLOCK`
/// when another descriptor holds it. The lock lasts as long as the returned file.
///
/// # Errors
/// The kernel's error opening or locking.
pub fn lock_dir(dir: &Path) -> io::Result<File> {
    use rustix::fs::{flock, open, FlockOperation, Mode, OFlags};
    let fd = open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    flock(&fd, FlockOperation::NonBlockingLockExclusive)?;
    Ok(File::from(fd))
}

/// Takes an exclusive `flock` on `file`, waiting for any other holder; the lock lasts as long
/// as the file stays open.
///
/// # Errors
/// The kernel's error locking.
pub fn lock_exclusive(file: &File) -> io::Result<()> {
    rustix::fs::flock(file, rustix::fs::FlockOperation::LockExclusive)?;
    Ok(())
}

/// Makes a FIFO (named pipe) at `path` with mode `mode`.
///
/// # Errors
/// The kernel's error (`EEXIST` when `path` exists).
pub fn make_fifo(path: &Path, mode: u32) -> io::Result<()> {
    use rustix::fs::{mknodat, FileType, Mode, CWD};
    mknodat(CWD, path, FileType::Fifo, Mode::from_raw_mode(mode), 0)?;
    Ok(())
}

/// Sets the extended attribute `name` of `path` to `value`.
///
/// # Errors
/// The kernel's error (`ENOTSUP` where the file system keeps none).
pub fn set_xattr(path: &Path, name: &str, value: &[u8]) -> io::Result<()> {
    rustix::fs::setxattr(path, name, value, rustix::fs::XattrFlags::empty())?;
    Ok(())
}

/// The extended attribute `name` of `path`, when it is set and holds at most `max_bytes`.
#[must_use]
pub fn get_xattr(path: &Path, name: &str, max_bytes: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; max_bytes];
    let len = rustix::fs::getxattr(path, name, &mut buf[..]).ok()?;
    buf.truncate(len);
    Some(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_lock_excludes_a_second_holder_until_dropped() {
        let scratch = crate::fileout::ScratchDir::new("lull-os-lock").unwrap();
        let dir = scratch.path();
        let first = lock_dir(dir).unwrap();
        let second = lock_dir(dir).unwrap_err();
        assert_eq!(second.kind(), io::ErrorKind::WouldBlock);
        drop(first);
        drop(lock_dir(dir).unwrap());
    }

    #[test]
    fn a_missing_attribute_reads_as_none() {
        assert_eq!(
            get_xattr(Path::new("/proc/self/stat"), "user.lull.nothing", 64),
            None
        );
    }
}
