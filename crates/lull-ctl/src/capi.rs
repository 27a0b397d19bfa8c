//! The C ABI of `include/lull_ctl.h`: a [`crate::Ctl`] behind an opaque pointer, errors as
//! negative codes with [`lull_ctl_strerror`].

use std::ffi::{c_char, c_int, CStr};

use crate::Ctl;

/// Success.
pub const LULL_CTL_OK: i32 = 0;
/// `lull_ctl_sample`: every registered process has exited (not an error; `*n` is 0).
pub const LULL_CTL_ENDED: i32 = 1;
pub const LULL_CTL_ERR_NO_PROCESS: i32 = -1;
pub const LULL_CTL_ERR_KERNEL_THREAD: i32 = -2;
pub const LULL_CTL_ERR_PERMISSION: i32 = -3;
pub const LULL_CTL_ERR_NO_THREAD: i32 = -4;
pub const LULL_CTL_ERR_BAD_ARGUMENT: i32 = -5;
pub const LULL_CTL_ERR_IO: i32 = -6;
/// `lull_ctl_sample`: more threads than `cap`; the first `cap` were written, `*n` is how many
/// there are.
pub const LULL_CTL_ERR_SHORT_BUFFER: i32 = -7;

/// Bytes of a thread's name with its NUL (`TASK_COMM_LEN`, `include/linux/sched.h`).
pub const LULL_CTL_COMM_LEN: usize = 16;

/// One thread at one sample (`struct lull_ctl_thread`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LullCtlThread {
    pub t_ns: u64,
    pub cpu_ns: u64,
    pub work_ns: u64,
    pub delta_cpu_ns: u64,
    pub pid: i32,
    pub tid: i32,
    pub cpu: u32,
    pub state: c_char,
    pub comm: [c_char; LULL_CTL_COMM_LEN],
}

/// The handle of `include/lull_ctl.h`.
#[derive(Debug)]
pub struct LullCtl(Ctl);

/// Opens a handle (the proc connector when root). Never null.
#[no_mangle]
pub extern "C" fn lull_ctl_open() -> *mut LullCtl {
    Box::into_raw(Box::new(LullCtl(Ctl::new())))
}

/// Registers process `pid` with every thread it has.
///
/// # Safety
/// `ctl` is null or a handle from [`lull_ctl_open`] not yet closed.
#[no_mangle]
pub unsafe extern "C" fn lull_ctl_register(ctl: *mut LullCtl, pid: i32) -> c_int {
    // SAFETY: the caller's promise.
    let Some(ctl) = (unsafe { ctl.as_mut() }) else {
        return LULL_CTL_ERR_BAD_ARGUMENT;
    };
    match ctl.0.register(pid) {
        Ok(_) => LULL_CTL_OK,
        Err(e) => e.code(),
    }
}

/// Samples every thread of the registered processes into `out[0..cap]`; `*n` is the number of
/// threads.
///
/// # Safety
/// `ctl` as in [`lull_ctl_register`]; `out` is valid for `cap` elements (or `cap` is 0); `n` is
/// valid for a write.
#[no_mangle]
pub unsafe extern "C" fn lull_ctl_sample(
    ctl: *mut LullCtl,
    out: *mut LullCtlThread,
    cap: usize,
    n: *mut usize,
) -> c_int {
    // SAFETY: the caller's promise.
    let (Some(ctl), Some(n)) = (unsafe { ctl.as_mut() }, unsafe { n.as_mut() }) else {
        return LULL_CTL_ERR_BAD_ARGUMENT;
    };
    if out.is_null() && cap > 0 {
        return LULL_CTL_ERR_BAD_ARGUMENT;
    }
    let Some(samples) = ctl.0.sample() else {
        *n = 0;
        return LULL_CTL_ENDED;
    };
    *n = samples.len();
    for (i, s) in samples.iter().take(cap).enumerate() {
        let mut comm = [0 as c_char; LULL_CTL_COMM_LEN];
        for (d, b) in comm
            .iter_mut()
            .zip(s.comm.bytes().take(LULL_CTL_COMM_LEN - 1))
        {
            *d = b as c_char;
        }
        let t = LullCtlThread {
            t_ns: s.t_ns,
            cpu_ns: s.cpu_ns,
            work_ns: s.work_ns,
            delta_cpu_ns: s.delta_cpu_ns,
            pid: s.pid,
            tid: s.tid,
            cpu: s.cpu,
            state: u8::try_from(s.state).unwrap_or(b'?') as c_char,
            comm,
        };
        // SAFETY: `i < cap` and `out` is valid for `cap` elements.
        unsafe { out.add(i).write(t) };
    }
    if samples.len() > cap {
        LULL_CTL_ERR_SHORT_BUFFER
    } else {
        LULL_CTL_OK
    }
}

/// Sets the CPU mask (bit n for CPU n) of thread `tid`; put back at [`lull_ctl_close`].
///
/// # Safety
/// As [`lull_ctl_register`].
#[no_mangle]
pub unsafe extern "C" fn lull_ctl_set_mask(ctl: *mut LullCtl, tid: i32, mask: u64) -> c_int {
    // SAFETY: the caller's promise.
    let Some(ctl) = (unsafe { ctl.as_mut() }) else {
        return LULL_CTL_ERR_BAD_ARGUMENT;
    };
    match ctl.0.set_mask(tid, mask) {
        Ok(()) => LULL_CTL_OK,
        Err(e) => e.code(),
    }
}

/// Puts every mask back and frees the handle; null is ignored.
///
/// # Safety
/// `ctl` is null or a handle from [`lull_ctl_open`], not used again.
#[no_mangle]
pub unsafe extern "C" fn lull_ctl_close(ctl: *mut LullCtl) {
    if !ctl.is_null() {
        // SAFETY: the caller's promise: a Box we made, given back once.
        drop(unsafe { Box::from_raw(ctl) });
    }
}

/// A static description of a code from this ABI.
#[no_mangle]
pub extern "C" fn lull_ctl_strerror(code: c_int) -> *const c_char {
    let s: &'static CStr = match code {
        LULL_CTL_OK => c"success",
        LULL_CTL_ENDED => c"every registered process has exited",
        LULL_CTL_ERR_NO_PROCESS => c"no such process (or a thread id, not a process id)",
        LULL_CTL_ERR_KERNEL_THREAD => c"a kernel thread cannot be registered",
        LULL_CTL_ERR_PERMISSION => c"permission denied: run as root or as the owner of the process",
        LULL_CTL_ERR_NO_THREAD => c"no such thread",
        LULL_CTL_ERR_BAD_ARGUMENT => c"bad argument (null pointer, or a mask with no online CPU)",
        LULL_CTL_ERR_IO => c"system error reading /proc or /sys",
        LULL_CTL_ERR_SHORT_BUFFER => c"more threads than the buffer holds: *n says how many",
        _ => c"unknown lull_ctl code",
    };
    s.as_ptr()
}
