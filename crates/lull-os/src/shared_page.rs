//! One page of memory an app shares with `lulld`: a memfd sealed against shrinking and growing,
//! mapped read-write by each side and read and written only through atomics. The wait cell
//! ([`crate::wait_cell`]) and the device account ([`crate::device_account`]) are each one page;
//! each gives its words their meaning.

use std::ffi::CStr;
use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU32, AtomicU64};

use rustix::fs::{fcntl_add_seals, fcntl_get_seals, fstat, ftruncate, memfd_create};
use rustix::fs::{MemfdFlags, SealFlags};

/// Bytes mapped: one page, the smallest a mapping can be.
pub(crate) const PAGE_BYTES: usize = 4096;

/// One side's mapping of a shared page.
#[derive(Debug)]
pub(crate) struct SharedPage {
    base: *mut std::ffi::c_void,
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
        let fd = memfd_create(name, MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
        ftruncate(&fd, PAGE_BYTES as u64)?;
        fcntl_add_seals(&fd, SealFlags::SEAL | SealFlags::SHRINK | SealFlags::GROW)?;
        SharedPage::map(fd)
    }

    /// Maps a page received from the other side. A descriptor that is not a sealed memory file
    /// of one page is refused (naming it `what`), so the peer cannot hand over something that
    /// faults when touched.
    ///
    /// # Errors
    /// `InvalidData` for a descriptor that is not such a page; the kernel's error from `mmap`.
    pub(crate) fn open(fd: OwnedFd, what: &str) -> io::Result<SharedPage> {
        let sealed = fcntl_get_seals(&fd)
            .is_ok_and(|seals| seals.contains(SealFlags::SHRINK | SealFlags::GROW));
        let size_ok = fstat(&fd).is_ok_and(|st| st.st_size == PAGE_BYTES as i64);
        if !sealed || !size_ok {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the {what} is not a sealed memory file of one page"),
            ));
        }
        SharedPage::map(fd)
    }

    fn map(fd: OwnedFd) -> io::Result<SharedPage> {
        use rustix::mm::{mmap, MapFlags, ProtFlags};
        // SAFETY: a new shared read-write mapping (no address asked for, so it replaces none) of
        // a file we hold, sealed against shrinking.
        let base = unsafe {
            mmap(
                std::ptr::null_mut(),
                PAGE_BYTES,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                &fd,
                0,
            )
        }?;
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
        // SAFETY: the mapping made in `map`, unmapped once; no reference into it outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.base, PAGE_BYTES) };
    }
}
