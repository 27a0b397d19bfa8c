//! One safe way to write a file at a path a user gave: [`write_file_atomically`].
//!
//! The destination may be anything, and the process may run as root, so the write never opens
//! the destination itself (a device node, a FIFO or a planted symlink would receive the bytes):
//! the bytes go to a new temporary file beside it, created with `O_EXCL | O_NOFOLLOW` under an
//! unpredictable name, synced, and renamed over the destination only once complete. A failure
//! at any step, a full disk among them, removes the temporary, leaving the old file or none.
//!
//! Scratch space under the system temporary directory goes through [`ScratchDir`]: a new
//! directory with an unpredictable name, made with `mkdir` (which never follows or reuses an
//! entry someone else planted), mode 0700, removed on drop.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

/// Mode the temporary file is created with: readable by its owner only until it is complete.
const TEMP_MODE: u32 = 0o600;

/// Mode a finished file gets before the umask, as `File::create` would give it.
const FINAL_MODE: u32 = 0o666;

/// Umask assumed when `/proc/self/status` does not say (the common default).
const FALLBACK_UMASK: u32 = 0o022;

/// How many random names are tried before giving up (each collision is a 1 in 2^64 event
/// unless someone creates names on purpose).
const NAME_ATTEMPTS: u32 = 16;

/// Why a file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum FileOutError {
    #[error("{}: names no file", .path.display())]
    NoFileName { path: PathBuf },
    #[error("{}: exists and is {what}, not a regular file; refusing to replace it", .path.display())]
    NotRegular { path: PathBuf, what: &'static str },
    #[error("{}: {op}: {source}", .path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

impl FileOutError {
    /// As an `io::Error` of the same kind whose message leaves out the destination, for
    /// callers whose own error names it.
    #[must_use]
    pub fn into_io(self) -> io::Error {
        match self {
            FileOutError::NoFileName { .. } => {
                io::Error::new(io::ErrorKind::InvalidInput, "names no file")
            }
            FileOutError::NotRegular { what, .. } => io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("exists and is {what}, not a regular file; refusing to replace it"),
            ),
            FileOutError::Io { op, source, .. } => {
                io::Error::new(source.kind(), format!("{op}: {source}"))
            }
        }
    }
}

fn random_suffix() -> io::Result<u64> {
    let mut b = [0u8; 8];
    // No flags: blocks only before the pool is seeded.
    let n = rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::empty())?;
    if n == b.len() {
        Ok(u64::from_ne_bytes(b))
    } else {
        Err(io::Error::other(
            "getrandom returned fewer bytes than asked",
        ))
    }
}

fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(FALLBACK_UMASK)
}

/// Creates a new temporary file beside `path` (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600).
fn create_temp(path: &Path, name: &std::ffi::OsStr) -> Result<(File, PathBuf), FileOutError> {
    let io_err = |op, source| FileOutError::Io {
        op,
        path: path.to_owned(),
        source,
    };
    for _ in 0..NAME_ATTEMPTS {
        let r = random_suffix().map_err(|e| io_err("getrandom", e))?;
        let mut tmp_name = OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".{r:016x}.tmp"));
        let tmp = path.with_file_name(tmp_name);
        let c = std::ffi::CString::new(tmp.as_os_str().as_bytes()).map_err(|e| {
            io_err(
                "temporary name",
                io::Error::new(io::ErrorKind::InvalidInput, e),
            )
        })?;
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let e = match rustix::fs::open(c.as_c_str(), flags, Mode::from_raw_mode(TEMP_MODE)) {
            Ok(fd) => return Ok((File::from(fd), tmp)),
            Err(e) => io::Error::from(e),
        };
        if e.kind() != io::ErrorKind::AlreadyExists {
            return Err(FileOutError::Io {
                op: "create temporary",
                path: tmp,
                source: e,
            });
        }
    }
    Err(io_err(
        "create temporary",
        io::Error::new(
            io::ErrorKind::AlreadyExists,
            "every random temporary name tried exists",
        ),
    ))
}

/// Refuses a destination that exists and is not a regular file; returns its file name.
fn check_destination(path: &Path) -> Result<OsString, FileOutError> {
    let name = path
        .file_name()
        .ok_or_else(|| FileOutError::NoFileName {
            path: path.to_owned(),
        })?
        .to_owned();
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.file_type().is_file() => Err(FileOutError::NotRegular {
            path: path.to_owned(),
            what: crate::input_file::file_type_name(m.file_type()),
        }),
        Ok(_) => Ok(name),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(name),
        Err(source) => Err(FileOutError::Io {
            op: "stat",
            path: path.to_owned(),
            source,
        }),
    }
}

/// A file being written to a user-given path a piece at a time (an audit log written while it
/// is recorded), with the promises of [`write_file_atomically`]: the bytes go to a new
/// temporary beside the destination (unpredictable name, `O_EXCL | O_NOFOLLOW`, 0600), which
/// [`AtomicFile::commit`] syncs and renames into place. Dropped without a commit, or after any
/// failure, the temporary is removed and the destination is untouched.
#[derive(Debug)]
pub struct AtomicFile {
    file: Option<File>,
    tmp: PathBuf,
    dest: PathBuf,
}

impl AtomicFile {
    /// Refuses a destination that exists and is not a regular file (a device, FIFO, socket,
    /// directory or symbolic link) before anything is created, then creates the temporary.
    ///
    /// # Errors
    /// [`FileOutError::NoFileName`], [`FileOutError::NotRegular`], or the failing step.
    pub fn create(path: &Path) -> Result<AtomicFile, FileOutError> {
        let name = check_destination(path)?;
        let (file, tmp) = create_temp(path, &name)?;
        Ok(AtomicFile {
            file: Some(file),
            tmp,
            dest: path.to_owned(),
        })
    }

    /// The destination this file will replace.
    #[must_use]
    pub fn destination(&self) -> &Path {
        &self.dest
    }

    /// Gives the file the usual mode (0666 less the umask), syncs it and renames it over the
    /// destination. On failure the temporary is removed (by `Drop`).
    ///
    /// # Errors
    /// The failing step as [`FileOutError::Io`] (`ENOSPC` from the sync among them).
    pub fn commit(mut self) -> Result<(), FileOutError> {
        let Some(f) = self.file.take() else {
            return Err(FileOutError::Io {
                op: "commit",
                path: self.tmp.clone(),
                source: io::Error::other("already closed"),
            });
        };
        let step = |op, source| FileOutError::Io {
            op,
            path: self.tmp.clone(),
            source,
        };
        let mode = Mode::from_raw_mode(FINAL_MODE & !umask());
        rustix::fs::fchmod(&f, mode).map_err(|e| step("chmod", e.into()))?;
        f.sync_all().map_err(|e| step("sync", e))?;
        drop(f);
        std::fs::rename(&self.tmp, &self.dest).map_err(|source| FileOutError::Io {
            op: "rename into place",
            path: self.dest.clone(),
            source,
        })?;
        // Renamed: nothing left for Drop to remove.
        self.tmp = PathBuf::new();
        Ok(())
    }

    fn file(&mut self) -> io::Result<&mut File> {
        self.file
            .as_mut()
            .ok_or_else(|| io::Error::other("file already committed"))
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file()?.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file()?.flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            drop(self.file.take());
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `bytes` to `path` as a whole: a new temporary file in the destination's directory
/// (unpredictable name, `O_EXCL | O_NOFOLLOW`, 0600) is written, synced, given the usual mode
/// (0666 less the umask) and renamed over `path`. A destination that exists and is not a
/// regular file (a device, FIFO, socket, directory or symbolic link) is refused before anything
/// is created. On any failure the temporary is removed and `path` is untouched.
///
/// # Errors
/// [`FileOutError::NoFileName`], [`FileOutError::NotRegular`], or the failing step as
/// [`FileOutError::Io`] (`ENOSPC` from the write or sync among them).
pub fn write_file_atomically(path: &Path, bytes: &[u8]) -> Result<(), FileOutError> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes).map_err(|source| FileOutError::Io {
        op: "write",
        path: f.tmp.clone(),
        source,
    })?;
    f.commit()
}

/// Mode a scratch directory is created with: its owner's alone.
const SCRATCH_MODE: u32 = 0o700;

/// A private scratch directory, `DIR/PREFIX-RANDOM`, removed with everything in it on drop.
///
/// The name is unpredictable and the directory is made with `mkdir`, which fails on any
/// existing entry, a planted symbolic link included, so nothing another user put in the
/// temporary directory is ever followed or written through; a taken name is retried with a new
/// random one. Mode 0700 keeps other users out of what is created inside.
#[derive(Debug)]
pub struct ScratchDir {
    path: PathBuf,
    keep: bool,
}

impl ScratchDir {
    /// Creates `$TMPDIR/PREFIX-RANDOM` (the system temporary directory).
    ///
    /// # Errors
    /// The failing `getrandom` or `mkdir`, with the path in the message; `AlreadyExists` when
    /// every random name tried was taken.
    pub fn new(prefix: &str) -> io::Result<ScratchDir> {
        ScratchDir::new_in(&std::env::temp_dir(), prefix)
    }

    /// Creates `PARENT/PREFIX-RANDOM`.
    ///
    /// # Errors
    /// As [`ScratchDir::new`].
    pub fn new_in(parent: &Path, prefix: &str) -> io::Result<ScratchDir> {
        create_scratch(parent, prefix, random_suffix)
    }

    /// The directory.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keeps the directory (output a user asked for): it is not removed on drop.
    #[must_use]
    pub fn keep(mut self) -> PathBuf {
        self.keep = true;
        std::mem::take(&mut self.path)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if !self.keep && !self.path.as_os_str().is_empty() {
            // std's `remove_dir_all` removes symbolic links inside, never what they name.
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// [`ScratchDir::new_in`] with the random source given, so a test can make names collide.
fn create_scratch(
    parent: &Path,
    prefix: &str,
    mut next: impl FnMut() -> io::Result<u64>,
) -> io::Result<ScratchDir> {
    use std::os::unix::fs::DirBuilderExt;
    let named = |p: &Path, op: &str, e: io::Error| {
        io::Error::new(e.kind(), format!("{}: {op}: {e}", p.display()))
    };
    for _ in 0..NAME_ATTEMPTS {
        let r = next().map_err(|e| named(parent, "getrandom", e))?;
        let path = parent.join(format!("{prefix}-{r:016x}"));
        match std::fs::DirBuilder::new().mode(SCRATCH_MODE).create(&path) {
            Ok(()) => return Ok(ScratchDir { path, keep: false }),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(named(&path, "mkdir", e)),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "{}: every random name tried for a {prefix}-* scratch directory exists",
            parent.display()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_testkit::dir_names;

    fn scratch(tag: &str) -> ScratchDir {
        ScratchDir::new(&format!("lull-fileout-{tag}")).unwrap()
    }

    #[test]
    fn writes_and_replaces_a_regular_file() {
        let scratch = scratch("regular");
        let d = scratch.path();
        let p = d.join("out.txt");
        write_file_atomically(&p, b"one").unwrap();
        write_file_atomically(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(dir_names(d), ["out.txt"]);
    }

    #[test]
    fn refuses_what_is_not_a_regular_file() {
        let scratch = scratch("refuse");
        let d = scratch.path();
        let target = d.join("target");
        std::fs::write(&target, b"keep").unwrap();
        let link = d.join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let sub = d.join("sub");
        std::fs::create_dir(&sub).unwrap();
        for (p, what) in [(&link, "symbolic link"), (&sub, "directory")] {
            let e = write_file_atomically(p, b"x").unwrap_err();
            assert!(matches!(e, FileOutError::NotRegular { .. }), "{e}");
            assert!(e.to_string().contains(what), "{e}");
        }
        let e = write_file_atomically(Path::new("/dev/null"), b"x").unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert_eq!(dir_names(d), ["link", "sub", "target"]);
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_it() {
        let scratch = scratch("nodir");
        let d = scratch.path();
        let p = d.join("absent").join("out");
        let e = write_file_atomically(&p, b"x").unwrap_err();
        assert!(e.to_string().contains("absent"), "{e}");
    }

    #[test]
    fn a_streamed_file_appears_only_on_commit_and_is_removed_when_dropped() {
        let scratch = scratch("stream");
        let d = scratch.path();
        let p = d.join("log.audit");
        std::fs::write(&p, b"old").unwrap();
        let mut f = AtomicFile::create(&p).unwrap();
        f.write_all(b"new ").unwrap();
        f.write_all(b"bytes").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        f.commit().unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new bytes");
        let mut g = AtomicFile::create(&p).unwrap();
        g.write_all(b"abandoned").unwrap();
        drop(g);
        assert_eq!(std::fs::read(&p).unwrap(), b"new bytes");
        assert_eq!(dir_names(d), ["log.audit"]);
        let e = AtomicFile::create(Path::new("/dev/full")).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
    }

    #[test]
    fn scratch_dirs_are_private_unpredictable_and_removed_on_drop() {
        use std::os::unix::fs::PermissionsExt;
        let a = ScratchDir::new("lull-scratch-test").unwrap();
        let b = ScratchDir::new("lull-scratch-test").unwrap();
        assert_ne!(a.path(), b.path());
        for d in [&a, &b] {
            let m = std::fs::symlink_metadata(d.path()).unwrap();
            assert!(m.file_type().is_dir());
            assert_eq!(m.permissions().mode() & 0o777, SCRATCH_MODE);
            let name = d.path().file_name().unwrap().to_string_lossy().into_owned();
            assert!(name.starts_with("lull-scratch-test-"), "{name}");
        }
        let inner = a.path().join("sub");
        std::fs::create_dir(&inner).unwrap();
        std::fs::write(inner.join("f"), b"x").unwrap();
        let (pa, pb) = (a.path().to_owned(), b.path().to_owned());
        drop(a);
        assert!(!pa.exists());
        let kept = b.keep();
        assert_eq!(kept, pb);
        assert!(kept.is_dir());
        std::fs::remove_dir_all(&kept).unwrap();
    }

    #[test]
    fn a_scratch_dir_never_reuses_or_follows_a_planted_name() {
        let scratch = scratch("planted");
        let d = scratch.path();
        let target = d.join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("theirs"), b"keep").unwrap();
        // The first two names the generator gives are taken: a symlink to a directory and a
        // directory; the third is free.
        let taken = |r: u64| d.join(format!("s-{r:016x}"));
        std::os::unix::fs::symlink(&target, taken(1)).unwrap();
        std::fs::create_dir(taken(2)).unwrap();
        let mut n = 0;
        let s = create_scratch(d, "s", || {
            n += 1;
            Ok(n)
        })
        .unwrap();
        assert_eq!(s.path(), taken(3));
        std::fs::write(s.path().join("mine"), b"x").unwrap();
        drop(s);
        assert!(std::fs::symlink_metadata(taken(1))
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(dir_names(&target), ["theirs"]);
        assert_eq!(
            dir_names(d),
            ["s-0000000000000001", "s-0000000000000002", "target"]
        );
        // Every name taken: an error naming the directory, nothing created.
        let e = create_scratch(d, "s", || Ok(1)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert!(e.to_string().contains(&*d.to_string_lossy()), "{e}");
    }
}
