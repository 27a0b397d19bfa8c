//! Files a user names as input, read with a bound: the one reader behind `lulld --replay`, the
//! `lull` command's spec, trace, rt-app, ftrace and audit-log arguments and the Python package.
//!
//! The file is opened with `O_NONBLOCK` (a FIFO's `open` would otherwise wait for a writer, deaf
//! to signals the daemon has blocked for its signalfd) and checked with `fstat` on the open
//! descriptor, so a path swapped between the check and the read cannot slip through. Anything
//! that is not a regular file is refused: a FIFO or a character device such as `/dev/zero` has
//! no end, and a directory has no bytes. A regular file larger than its kind's bound is refused
//! before a byte is read, and the read itself stops one byte past the bound, so a file that grows
//! while it is read cannot take more memory than that either.
//!
//! Devices the daemon reads as event sources (`--evdev`) are not inputs of this kind; they are
//! checked by [`open_event_source`].

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use thiserror::Error;

const MIB: u64 = 1 << 20;

/// One kind of input file: its name in messages and the most bytes it may hold.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct InputKind {
    /// What the file is, for messages: "replay trace", "spec".
    pub what: &'static str,
    pub max_bytes: u64,
}

/// A `lull-trace 1` workload (`lulld --replay`, `lull` trace arguments). The shipped
/// stylus spiral is 49 KB for 10 s; 64 MiB holds about 2.5 million events, hours of input at a
/// stylus's 120 Hz.
pub const TRACE: InputKind = InputKind {
    what: "trace",
    max_bytes: 64 * MIB,
};

/// A TOML experiment or platform spec. The largest shipped spec is a few KB; 1 MiB is generous
/// for any hand-written or generated file.
pub const SPEC: InputKind = InputKind {
    what: "spec",
    max_bytes: MIB,
};

/// An rt-app workload (JSON). rt-app's own examples are under 10 KB; 4 MiB is a generated file
/// with thousands of tasks.
pub const RTAPP_JSON: InputKind = InputKind {
    what: "rt-app workload",
    max_bytes: 4 * MIB,
};

/// ftrace text (`trace-cmd report`, `/sys/kernel/tracing/trace`). A busy two-CPU machine writes
/// about 10 MB per second of scheduler events; 1 GiB is over a minute of them, more than the
/// TLP and latency analyses are meant for, and still fits in this machine's memory.
pub const FTRACE_TEXT: InputKind = InputKind {
    what: "ftrace text",
    max_bytes: 1024 * MIB,
};

/// An audit log (62-byte entries, `lull audit record`). 1 GiB is about 17 million records, more
/// than any ring configuration `lull audit record` offers keeps.
pub const AUDIT_LOG: InputKind = InputKind {
    what: "audit log",
    max_bytes: 1024 * MIB,
};

/// A results or summary JSON file read back by the CLI or the Python package.
pub const RESULTS_JSON: InputKind = InputKind {
    what: "results file",
    max_bytes: 64 * MIB,
};

/// Why an input file was not read. Each message names the path and the problem.
#[derive(Debug, Error)]
pub enum ReadError {
    #[error("{what} {}: cannot open: {source}", path.display())]
    Open {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("{what} {}: is {found}, not a regular file", path.display())]
    NotRegular {
        what: &'static str,
        path: PathBuf,
        /// "a FIFO", "a character device", "a directory", …
        found: &'static str,
    },
    #[error(
        "{what} {}: {size_bytes} bytes is more than the {max_bytes} bytes a {what} may hold",
        path.display()
    )]
    TooLarge {
        what: &'static str,
        path: PathBuf,
        size_bytes: u64,
        max_bytes: u64,
    },
    #[error("{what} {}: cannot read: {source}", path.display())]
    Read {
        what: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("{what} {}: not UTF-8 text (invalid byte at offset {at})", path.display())]
    NotUtf8 {
        what: &'static str,
        path: PathBuf,
        at: usize,
    },
}

impl ReadError {
    /// The path the error names.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::Open { path, .. }
            | ReadError::NotRegular { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::Read { path, .. }
            | ReadError::NotUtf8 { path, .. } => path,
        }
    }

    /// Whether the file does not exist (for callers that treat absence as "nothing yet").
    pub fn is_not_found(&self) -> bool {
        matches!(self, ReadError::Open { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

/// What an `fstat` file type is, for messages (a file's kind is always one of these seven).
pub(crate) fn file_type_name(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "a regular file"
    }
}

/// Opens without blocking (a FIFO without a writer) and without leaking into children.
fn open_nonblocking(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

/// Reads the whole of `path`, a regular file of at most `kind.max_bytes` bytes.
///
/// # Errors
/// [`ReadError`] naming the path: it cannot be opened or read, it is not a regular file, or it is
/// larger than the bound.
pub fn read_bounded(path: &Path, kind: InputKind) -> Result<Vec<u8>, ReadError> {
    let what = kind.what;
    let f = open_nonblocking(path).map_err(|source| ReadError::Open {
        what,
        path: path.to_owned(),
        source,
    })?;
    let read_err = |source| ReadError::Read {
        what,
        path: path.to_owned(),
        source,
    };
    let meta = f.metadata().map_err(read_err)?;
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular {
            what,
            path: path.to_owned(),
            found: file_type_name(meta.file_type()),
        });
    }
    let too_large = |size_bytes| ReadError::TooLarge {
        what,
        path: path.to_owned(),
        size_bytes,
        max_bytes: kind.max_bytes,
    };
    if meta.len() > kind.max_bytes {
        return Err(too_large(meta.len()));
    }
    // The size fstat gave is a hint: the file may grow while it is read, so the read stops one
    // byte past the bound and that byte is the refusal.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    f.take(kind.max_bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() as u64 > kind.max_bytes {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_bounded`] for text: the file must also be UTF-8.
///
/// # Errors
/// As [`read_bounded`], and [`ReadError::NotUtf8`] with the offset of the first bad byte.
pub fn read_bounded_text(path: &Path, kind: InputKind) -> Result<String, ReadError> {
    let bytes = read_bounded(path, kind)?;
    String::from_utf8(bytes).map_err(|e| ReadError::NotUtf8 {
        what: kind.what,
        path: path.to_owned(),
        at: e.utf8_error().valid_up_to(),
    })
}

/// Why a path cannot be the daemon's event source (`lulld --evdev`).
#[derive(Debug, Error)]
pub enum EventSourceError {
    #[error("evdev source {}: cannot open: {source}", path.display())]
    Open { path: PathBuf, source: io::Error },
    #[error(
        "evdev source {}: is {found}, not an input device (give /dev/input/eventN, or a pipe \
         of struct input_event records)",
        path.display()
    )]
    NotInputDevice {
        path: PathBuf,
        /// "a directory", "a regular file", "a character device that is not evdev", …
        found: &'static str,
    },
}

/// Opens an event source for the daemon, read-only and non-blocking: an evdev device node (whose
/// stamps are switched to `CLOCK_MONOTONIC`) or a pipe or socket of `struct input_event` records
/// (whose writer chose the clock). Refuses what epoll cannot wait on or what is no input device:
/// a directory, a regular file, a character device such as `/dev/null` that answers no evdev
/// ioctl.
///
/// # Errors
/// [`EventSourceError`] naming the path.
pub fn open_event_source(path: &Path) -> Result<OwnedFd, EventSourceError> {
    let f = open_nonblocking(path).map_err(|source| match source.raw_os_error() {
        Some(libc::EISDIR) => EventSourceError::NotInputDevice {
            path: path.to_owned(),
            found: "a directory",
        },
        _ => EventSourceError::Open {
            path: path.to_owned(),
            source,
        },
    })?;
    let meta = f.metadata().map_err(|source| EventSourceError::Open {
        path: path.to_owned(),
        source,
    })?;
    let t = meta.file_type();
    let not_input = |found| EventSourceError::NotInputDevice {
        path: path.to_owned(),
        found,
    };
    if t.is_fifo() || t.is_socket() {
        return Ok(OwnedFd::from(f));
    }
    if !t.is_char_device() {
        return Err(not_input(file_type_name(t)));
    }
    // Every evdev node answers EVIOCSCLOCKID; `/dev/null` and other devices do not.
    if crate::sys::evdev_use_monotonic(f.as_raw_fd()).is_err() {
        return Err(not_input("a character device that is not evdev"));
    }
    Ok(OwnedFd::from(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: InputKind = InputKind {
        what: "test input",
        max_bytes: 8,
    };

    /// A fresh private directory for one test's file, removed on drop (even when the test
    /// fails). Not `fileout::ScratchDir`: `fileout` imports this module.
    struct Scratch(PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    impl Scratch {
        fn file(&self) -> PathBuf {
            self.0.join("input")
        }
    }

    fn scratch(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "lull-os-input-{name}-{}-{}",
            std::process::id(),
            crate::sys::monotonic_ns()
        ));
        // `mkdir` fails on any existing entry, a planted link included: the directory is new.
        std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
            .create(&dir)
            .unwrap();
        Scratch(dir)
    }

    #[test]
    fn a_small_regular_file_is_read_whole() {
        let dir = scratch("small");
        let p = dir.file();
        std::fs::write(&p, b"12345678").unwrap();
        assert_eq!(read_bounded(&p, TINY).unwrap(), b"12345678");
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn one_byte_past_the_bound_is_refused_naming_the_path() {
        let dir = scratch("large");
        let p = dir.file();
        std::fs::write(&p, b"123456789").unwrap();
        let e = read_bounded(&p, TINY).unwrap_err();
        assert!(matches!(
            e,
            ReadError::TooLarge {
                size_bytes: 9,
                max_bytes: 8,
                ..
            }
        ));
        assert!(e.to_string().contains(&p.display().to_string()));
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn devices_and_directories_are_not_regular_files() {
        for (path, found) in [
            ("/dev/zero", "a character device"),
            ("/dev/null", "a character device"),
            ("/tmp", "a directory"),
        ] {
            let e = read_bounded(Path::new(path), TINY).unwrap_err();
            assert!(
                matches!(e, ReadError::NotRegular { found: f, .. } if f == found),
                "{path}: {e}"
            );
            assert_eq!(
                e.to_string(),
                format!("test input {path}: is {found}, not a regular file")
            );
        }
    }

    #[test]
    fn text_that_is_not_utf8_names_the_offset() {
        let dir = scratch("latin1");
        let p = dir.file();
        std::fs::write(&p, b"ab\xe9").unwrap();
        let e = read_bounded_text(&p, TINY).unwrap_err();
        assert!(matches!(e, ReadError::NotUtf8 { at: 2, .. }), "{e}");
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn a_missing_file_is_not_found() {
        let e = read_bounded(Path::new("/nonexistent/lull"), TINY).unwrap_err();
        assert!(e.is_not_found());
        assert!(e
            .to_string()
            .starts_with("test input /nonexistent/lull: cannot open"));
    }

    #[test]
    fn event_sources_refuse_what_is_no_input_device() {
        let dir = scratch("records");
        let p = dir.file();
        std::fs::write(&p, [0u8; 24]).unwrap();
        for (path, found) in [
            (
                Path::new("/dev/null"),
                "a character device that is not evdev",
            ),
            (Path::new("/tmp"), "a directory"),
            (p.as_path(), "a regular file"),
        ] {
            let e = open_event_source(path).unwrap_err();
            assert!(
                matches!(&e, EventSourceError::NotInputDevice { found: f, .. } if *f == found),
                "{}: {e}",
                path.display()
            );
            assert!(e.to_string().contains("not an input device"));
        }
        std::fs::remove_file(&p).unwrap();
    }
}
