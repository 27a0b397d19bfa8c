//! One page of memory an app shares with `lulld`: a memfd sealed against shrinking and growing,
//! mapped read-write by each side and read and written only through atomics. The wait cell
//! ([`crate::wait_cell`]) and the device account ([`crate::device_account`]) are each one page;
//! each gives its words their meaning.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64};

/// Bytes mapped: one page, the smallest a mapping can be.
pub(crate) const PAGE_BYTES: usize = 4096;

/// One side's mapping of a shared page.
#[derive(Debug)]
pub(crate) struct SharedPage {
    base: *mut libc::c_void,
    fd: OwnedFd,
}

// SAFETY: the mapping is shared memory accessed only through atomics; it lives as long as the
// page.
unsafe impl Send for SharedPage {}
// SAFETY: as above.
unsafe impl Sync for SharedPage {}

impl SharedPage {
    /// A new page of zeroes named `name` (the daemon's side), sealed against any size change
    /// and against new seals.
    ///
    /// # Errors
    /// The kernel's error from `memfd_create`, `ftruncate`, `fcntl` or `mmap`.
    pub(crate) fn create(name: &CStr) -> io::Result<SharedPage> {
        // SAFETY: a valid C string and flags.
        let raw = crate::sys::cvt(unsafe {
            libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING)
        })?;
        // SAFETY: a fresh descriptor from the kernel.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: ftruncate on our descriptor.
        crate::sys::cvt(unsafe { libc::ftruncate(fd.as_raw_fd(), PAGE_BYTES as libc::off_t) })?;
        let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
        // SAFETY: fcntl on our descriptor, no pointers.
        crate::sys::cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) })?;
        SharedPage::map(fd)
    }

    /// Maps a page received from the other side. A descriptor that is not a sealed memory file
    /// of one page is refused (naming it `what`), so the peer cannot hand over something that
    /// faults when touched.
    ///
    /// # Errors
    /// `InvalidData` for a descriptor that is not such a page; the kernel's error from `mmap`.
    pub(crate) fn open(fd: OwnedFd, what: &str) -> io::Result<SharedPage> {
        // SAFETY: fcntl on a descriptor we own, no pointers.
        let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
        let want = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
        // SAFETY: stat is plain data; fstat fills it.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid out-pointer.
        let size_ok = unsafe { libc::fstat(fd.as_raw_fd(), &raw mut st) } == 0
            && st.st_size == PAGE_BYTES as libc::off_t;
        if seals < 0 || seals & want != want || !size_ok {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the {what} is not a sealed memory file of one page"),
            ));
        }
        SharedPage::map(fd)
    }

    fn map(fd: OwnedFd) -> io::Result<SharedPage> {
        // SAFETY: a shared read-write mapping of a file we hold, sealed against shrinking.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedPage { base, fd })
    }

    /// The page's `i`th 64-bit word.
    pub(crate) fn u64_word(&self, i: usize) -> &AtomicU64 {
        assert!(i < PAGE_BYTES / 8, "word {i} is past the page");
        // SAFETY: `base` points at a live page-aligned mapping of PAGE_BYTES; i is within it.
        unsafe { &*self.base.cast::<AtomicU64>().add(i) }
    }

    /// The page's `i`th 32-bit word.
    pub(crate) fn u32_word(&self, i: usize) -> &AtomicU32 {
        assert!(i < PAGE_BYTES / 4, "word {i} is past the page");
        // SAFETY: `base` points at a live page-aligned mapping of PAGE_BYTES; i is within it.
        unsafe { &*self.base.cast::<AtomicU32>().add(i) }
    }

    /// The memfd, to pass to the other side.
    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.base, PAGE_BYTES) };
    }
}
