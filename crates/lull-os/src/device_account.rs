//! The device account: one page an app shares with `lulld` for each input device descriptor the
//! daemon hands it, where the app's library counts what it read from that descriptor. The daemon
//! never reads the device itself (the kernel's evdev queues the app's events and wakes the app),
//! so this page is how the daemon's report learns, per app and device, what was delivered —
//! read from its own copy of the memfd, also after the app died.
//!
//! | word | written by | counts |
//! | --- | --- | --- |
//! | `records` | app | `struct input_event` records read |
//! | `packets` | app | complete packets (`SYN_REPORT`) decoded |
//! | `events` | app | events the interpreter made of them |
//! | `delivered` | app | events handed to a handler (`esm_wait` returned them) |
//! | `filtered` | app | events of a kind the app has no handler for (the mask cannot tell a touch press from a motion: both are positions and `BTN_TOUCH`) |
//! | `overflows` | app | `SYN_DROPPED` seen, each delivered as an overflow marker |
//! | `revoked` | app | 1 once the descriptor read `ENODEV` (revoked or the device gone) |
//!
//! `events = delivered + filtered` once the app has run every event it read. The page is the
//! app's own report about itself: an app can write anything there and harms only its own line of
//! the report. The daemon creates it (a `memfd` sealed against shrinking and growing, so the app
//! cannot truncate it under the daemon's mapping).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::shared_page::SharedPage;

/// The words, in page order.
const RECORDS: usize = 0;
const PACKETS: usize = 1;
const EVENTS: usize = 2;
const DELIVERED: usize = 3;
const FILTERED: usize = 4;
const OVERFLOWS: usize = 5;
const REVOKED: usize = 6;
const WORDS: usize = 7;

/// What an app reported about one device descriptor.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, serde::Serialize)]
pub struct DeviceCounts {
    pub records: u64,
    pub packets: u64,
    pub events: u64,
    pub delivered: u64,
    pub filtered: u64,
    pub overflows: u64,
    pub revoked: u64,
}

/// One side's mapping of a device account.
#[derive(Debug)]
pub struct DeviceAccount {
    page: SharedPage,
}

impl DeviceAccount {
    /// A new account, every count 0 (the daemon's side).
    ///
    /// # Errors
    /// The kernel's error from `memfd_create`, `ftruncate`, `fcntl` or `mmap`.
    pub fn create() -> io::Result<DeviceAccount> {
        let page = SharedPage::create(c"lull-device-account")?;
        Ok(DeviceAccount { page })
    }

    /// Maps an account received from the daemon (the app's side). A descriptor that is not a
    /// sealed memory file of one page is refused, so nothing the app maps can fault when touched.
    ///
    /// # Errors
    /// `InvalidData` for a descriptor that is not an account; the kernel's error from `mmap`.
    pub fn open(fd: OwnedFd) -> io::Result<DeviceAccount> {
        let page = SharedPage::open(fd, "device account")?;
        Ok(DeviceAccount { page })
    }

    fn word(&self, i: usize) -> &AtomicU64 {
        debug_assert!(i < WORDS);
        self.page.u64_word(i)
    }

    /// The descriptor, to pass to the app.
    #[must_use]
    pub fn raw_fd(&self) -> RawFd {
        self.page.fd().as_raw_fd()
    }

    /// A second descriptor of the same page (for a test that plays both sides).
    ///
    /// # Errors
    /// The kernel's error from `fcntl(F_DUPFD_CLOEXEC)`.
    pub fn try_clone_fd(&self) -> io::Result<OwnedFd> {
        self.page.fd().try_clone()
    }

    /// Publishes the app's counts (the app's side; one relaxed store per word: the daemon reads
    /// them only for its report).
    pub fn publish(&self, c: &DeviceCounts) {
        for (i, v) in [
            c.records,
            c.packets,
            c.events,
            c.delivered,
            c.filtered,
            c.overflows,
            c.revoked,
        ]
        .into_iter()
        .enumerate()
        {
            self.word(i).store(v, Ordering::Relaxed);
        }
    }

    /// What the app last published.
    #[must_use]
    pub fn read(&self) -> DeviceCounts {
        let w = |i| self.word(i).load(Ordering::Relaxed);
        DeviceCounts {
            records: w(RECORDS),
            packets: w(PACKETS),
            events: w(EVENTS),
            delivered: w(DELIVERED),
            filtered: w(FILTERED),
            overflows: w(OVERFLOWS),
            revoked: w(REVOKED),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_app_publishes_the_daemon_reads() {
        let daemon = DeviceAccount::create().unwrap();
        let dup = daemon.try_clone_fd().unwrap();
        let app = DeviceAccount::open(dup).unwrap();
        assert_eq!(daemon.read(), DeviceCounts::default());
        let c = DeviceCounts {
            records: 12,
            packets: 4,
            events: 4,
            delivered: 3,
            filtered: 1,
            overflows: 0,
            revoked: 1,
        };
        app.publish(&c);
        drop(app);
        assert_eq!(daemon.read(), c, "kept after the app's side is gone");
    }

    #[test]
    fn a_descriptor_that_is_not_an_account_is_refused() {
        let (r, _w) = crate::sys::pipe(false).unwrap();
        assert_eq!(
            DeviceAccount::open(r).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        let small = crate::sys::sealed_memfd("x", &[0u8; 16]).unwrap();
        assert!(DeviceAccount::open(small).is_err(), "wrong size");
    }
}
