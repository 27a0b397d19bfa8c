//! The machine's runnable task count, read cheaply enough for the event path.
//!
//! `/proc/loadavg`'s fourth field is `running/total`: `running` is the kernel's `nr_running()`,
//! the tasks on every CPU's run queue at this instant (running or ready), the reader included
//! (`fs/proc/loadavg.c`). The file is kept open and read with one `pread` at offset 0, which makes
//! the kernel format it afresh: one system call, no allocation. (`procs_running` of `/proc/stat`
//! is the same count, but that file formats every CPU's time counters first; `/proc/schedstat`
//! has no queue lengths.)

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Where the count is read.
pub const LOADAVG_PATH: &str = "/proc/loadavg";

/// `/proc/loadavg` kept open.
#[derive(Debug)]
pub struct RunnableProbe {
    file: File,
}

/// Why a reading failed.
#[derive(Debug, thiserror::Error)]
pub enum RunnableError {
    #[error("cannot read {LOADAVG_PATH}: {0}")]
    Read(#[from] io::Error),
    #[error("{LOADAVG_PATH} has no running/total field: {0:?}")]
    Malformed(String),
}

impl RunnableProbe {
    /// Opens [`LOADAVG_PATH`].
    ///
    /// # Errors
    /// The kernel's, when `/proc` is not mounted.
    pub fn open() -> Result<RunnableProbe, RunnableError> {
        Ok(RunnableProbe {
            file: File::open(LOADAVG_PATH)?,
        })
    }

    /// The tasks runnable on the machine now, the calling thread included.
    ///
    /// # Errors
    /// [`RunnableError`] when the read fails or the text is not the kernel's.
    pub fn read(&self) -> Result<u32, RunnableError> {
        // "0.16 0.61 1.02 2/345 12345\n": five fields, well under 128 bytes on any machine.
        let mut buf = [0u8; 128];
        let n = self.file.read_at(&mut buf, 0)?;
        parse_running(&buf[..n])
            .ok_or_else(|| RunnableError::Malformed(String::from_utf8_lossy(&buf[..n]).into()))
    }
}

/// The `running` of `/proc/loadavg`'s `running/total` field.
#[must_use]
pub fn parse_running(text: &[u8]) -> Option<u32> {
    let field = text.split(|b| b.is_ascii_whitespace()).nth(3)?;
    let slash = field.iter().position(|&b| b == b'/')?;
    std::str::from_utf8(&field[..slash]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_field_parses() {
        assert_eq!(parse_running(b"0.16 0.61 1.02 2/345 12345\n"), Some(2));
        assert_eq!(parse_running(b"10.00 9.50 3.25 12/1024 99\n"), Some(12));
        assert_eq!(parse_running(b"0.16 0.61 1.02 x/345 1\n"), None);
        assert_eq!(parse_running(b"0.16 0.61 1.02 2345 1\n"), None);
        assert_eq!(parse_running(b"0.16 0.61"), None);
        assert_eq!(parse_running(b""), None);
    }

    /// The reader itself is running while it reads.
    #[test]
    fn this_machine_counts_at_least_the_reader() {
        let p = RunnableProbe::open().unwrap();
        assert!(p.read().unwrap() >= 1);
        assert!(p.read().unwrap() >= 1, "a second pread formats afresh");
    }
}
