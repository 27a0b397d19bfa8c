//! The evdev ioctls the data plane uses on one device descriptor: which events this descriptor
//! receives (`EVIOCSMASK`), exclusive access (`EVIOCGRAB`), cutting a descriptor off for good
//! (`EVIOCREVOKE`) and the device's name (`EVIOCGNAME`). Each refusal is a typed
//! [`EvdevIoctlError`].
//!
//! The ioctl numbers are computed with the kernel's `_IOC` encoding (`ioc`), as the C macros
//! of `linux/input.h` and `linux/uinput.h` do; a unit test checks them against the numbers those
//! headers give.
//!
//! Every `unsafe` block here is one `ioctl` on a borrowed descriptor, with a buffer whose size the
//! ioctl number carries, or an integer argument.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use lull_model::EventKind;

use crate::evdev::{
    ABS_MT_POSITION_X, ABS_MT_POSITION_Y, ABS_X, ABS_Y, BTN_DIGI_FIRST, BTN_DIGI_LAST, BTN_MOUSE,
    BTN_TOUCH, EV_ABS, EV_KEY, EV_REL, EV_SYN, MOUSE_BUTTONS, MSC_TIMESTAMP, REL_X, REL_Y,
};
use crate::sys::Errno;

/// Linux's ioctl number encoding: direction, size, type and number packed into one word
/// (`include/uapi/asm-generic/ioctl.h`; powerpc, mips and sparc have their own
/// `arch/*/include/uapi/asm/ioctl.h` with 13 size bits and 3 direction bits).
pub(crate) mod ioc {
    /// Whether this architecture has its own encoding (powerpc, mips, sparc) rather than
    /// asm-generic's.
    pub(crate) const ARCH_OWN: bool = cfg!(any(
        target_arch = "powerpc",
        target_arch = "powerpc64",
        target_arch = "mips",
        target_arch = "mips64",
        target_arch = "sparc",
        target_arch = "sparc64"
    ));

    mod arch {
        use super::ARCH_OWN;
        pub(super) const SIZE_BITS: u32 = if ARCH_OWN { 13 } else { 14 };
        pub(super) const NONE: u32 = if ARCH_OWN { 1 } else { 0 };
        pub(super) const WRITE: u32 = if ARCH_OWN { 4 } else { 1 };
        pub(super) const READ: u32 = 2;
    }

    const NR_BITS: u32 = 8;
    const TYPE_BITS: u32 = 8;
    const TYPE_SHIFT: u32 = NR_BITS;
    const SIZE_SHIFT: u32 = TYPE_SHIFT + TYPE_BITS;
    const DIR_SHIFT: u32 = SIZE_SHIFT + arch::SIZE_BITS;
    /// The largest argument size the encoding holds.
    pub(crate) const MAX_SIZE: usize = (1 << arch::SIZE_BITS) - 1;

    /// `_IOC(dir, type, nr, size)`. Only called for constants: a size the encoding cannot hold
    /// stops the build, not a running program.
    const fn encode(dir: u32, ty: u8, nr: u8, size: usize) -> libc::Ioctl {
        assert!(
            size <= MAX_SIZE,
            "ioctl argument too large for the size field"
        );
        ((dir << DIR_SHIFT)
            | ((size as u32) << SIZE_SHIFT)
            | ((ty as u32) << TYPE_SHIFT)
            | nr as u32) as libc::Ioctl
    }

    /// `_IO(type, nr)`: no argument, or an integer passed by value.
    pub(crate) const fn none(ty: u8, nr: u8) -> libc::Ioctl {
        encode(arch::NONE, ty, nr, 0)
    }

    /// `_IOR(type, nr, size)`: the kernel writes `size` bytes.
    pub(crate) const fn read(ty: u8, nr: u8, size: usize) -> libc::Ioctl {
        encode(arch::READ, ty, nr, size)
    }

    /// `_IOW(type, nr, size)`: the kernel reads `size` bytes (or, for the `int` ioctls, takes
    /// the argument by value).
    pub(crate) const fn write(ty: u8, nr: u8, size: usize) -> libc::Ioctl {
        encode(arch::WRITE, ty, nr, size)
    }
}

/// The ioctl type of evdev (`'E'`, `linux/input.h`).
const EVDEV_IOC_TYPE: u8 = b'E';
/// `EVIOCGRAB`, `_IOW('E', 0x90, int)`.
pub(crate) const EVIOCGRAB: libc::Ioctl =
    ioc::write(EVDEV_IOC_TYPE, 0x90, size_of::<libc::c_int>());
/// `EVIOCREVOKE`, `_IOW('E', 0x91, int)`.
pub(crate) const EVIOCREVOKE: libc::Ioctl =
    ioc::write(EVDEV_IOC_TYPE, 0x91, size_of::<libc::c_int>());
/// `EVIOCSMASK`, `_IOW('E', 0x93, struct input_mask)`.
pub(crate) const EVIOCSMASK: libc::Ioctl =
    ioc::write(EVDEV_IOC_TYPE, 0x93, size_of::<libc::input_mask>());
/// `EVIOCGABS(abs)`, `_IOR('E', 0x40 + abs, struct input_absinfo)`.
const fn eviocgabs(abs: u16) -> libc::Ioctl {
    ioc::read(
        EVDEV_IOC_TYPE,
        0x40 + abs as u8,
        size_of::<libc::input_absinfo>(),
    )
}
/// Bytes [`device_name`] asks for. uinput names are at most 80 bytes and HID names 128
/// (`struct hid_device.name`); a longer name is cut here.
const NAME_BUF_BYTES: usize = 256;
/// `EVIOCGNAME(len)`, `_IOC(_IOC_READ, 'E', 0x06, len)`, for a buffer of [`NAME_BUF_BYTES`].
pub(crate) const EVIOCGNAME: libc::Ioctl = ioc::read(EVDEV_IOC_TYPE, 0x06, NAME_BUF_BYTES);

// Event types beyond those the decoder uses, and the code counts of each type, from
// `linux/input-event-codes.h`: what `evdev_get_mask_cnt` (`drivers/input/evdev.c`) knows. For
// any other type the kernel accepts a mask and ignores it.
pub use crate::evdev::EV_MSC;
pub const EV_SW: u16 = 0x05;
pub const EV_LED: u16 = 0x11;
pub const EV_SND: u16 = 0x12;
pub const EV_FF: u16 = 0x15;
/// `EV_CNT`: for `EV_SYN` the mask is over event types, not `SYN_*` codes.
const EV_CNT: usize = 0x20;
const KEY_CNT: usize = 0x300;
const REL_CNT: usize = 0x10;
const ABS_CNT: usize = 0x40;
const MSC_CNT: usize = 0x08;
const SW_CNT: usize = 0x11;
const LED_CNT: usize = 0x10;
const SND_CNT: usize = 0x08;
const FF_CNT: usize = 0x80;

/// The codes of event type `type_` an evdev mask covers (`evdev_get_mask_cnt`); `None` for a
/// type whose mask the kernel would accept and ignore.
#[must_use]
pub fn mask_code_count(type_: u16) -> Option<usize> {
    let count = match type_ {
        EV_SYN => EV_CNT,
        EV_KEY => KEY_CNT,
        EV_REL => REL_CNT,
        EV_ABS => ABS_CNT,
        EV_MSC => MSC_CNT,
        EV_SW => SW_CNT,
        EV_LED => LED_CNT,
        EV_SND => SND_CNT,
        EV_FF => FF_CNT,
        _ => return None,
    };
    Some(count)
}

/// Why an evdev ioctl failed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum EvdevIoctlError {
    #[error("{op}: not an evdev device (ENOTTY)")]
    NotEvdev { op: &'static str },
    #[error("{op}: the device is gone or this descriptor was revoked (ENODEV)")]
    Revoked { op: &'static str },
    #[error("EVIOCGRAB: the device is already grabbed, by this or another descriptor (EBUSY)")]
    AlreadyGrabbed,
    #[error("EVIOCGRAB: this descriptor holds no grab to release (EINVAL)")]
    NotGrabbed,
    #[error("EVIOCSMASK: event type {0:#x} has no mask; the kernel would ignore it")]
    UnmaskableType(u16),
    #[error("EVIOCSMASK: code {code:#x} is beyond the {count} codes of event type {type_:#x}")]
    CodeOutOfRange { type_: u16, code: u16, count: usize },
    #[error("{op}: {errno}")]
    Kernel { op: &'static str, errno: Errno },
}

impl EvdevIoctlError {
    fn from_errno(op: &'static str, errno: Errno) -> EvdevIoctlError {
        match errno.0 {
            libc::ENOTTY => EvdevIoctlError::NotEvdev { op },
            libc::ENODEV => EvdevIoctlError::Revoked { op },
            _ => EvdevIoctlError::Kernel { op, errno },
        }
    }
}

fn last_errno() -> Errno {
    Errno(io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// One ioctl whose argument is an integer passed by value. It goes as a full `unsigned long`
/// (the kernel's `arg`), so no upper bits of a narrower variadic argument reach the kernel.
fn ioctl_value(
    fd: BorrowedFd<'_>,
    request: libc::Ioctl,
    value: libc::c_ulong,
) -> Result<(), Errno> {
    // SAFETY: an integer argument; no memory is passed.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), request, value) };
    if r < 0 {
        Err(last_errno())
    } else {
        Ok(())
    }
}

/// The bitmap `EVIOCSMASK` reads for `codes` of event type `type_`: an array of `unsigned long`
/// with bit `c % BITS` of word `c / BITS` for code `c`, as the kernel's `bits_from_user` reads
/// it, long enough for every code the kernel masks for that type.
///
/// # Errors
/// [`EvdevIoctlError::UnmaskableType`] for a type the kernel has no mask for,
/// [`EvdevIoctlError::CodeOutOfRange`] for a code beyond the type's.
pub fn mask_bitmap(type_: u16, codes: &[u16]) -> Result<Vec<libc::c_ulong>, EvdevIoctlError> {
    const WORD_BITS: usize = libc::c_ulong::BITS as usize;
    let count = mask_code_count(type_).ok_or(EvdevIoctlError::UnmaskableType(type_))?;
    let mut words = vec![0; count.div_ceil(WORD_BITS)];
    for &code in codes {
        let c = usize::from(code);
        if c >= count {
            return Err(EvdevIoctlError::CodeOutOfRange { type_, code, count });
        }
        words[c / WORD_BITS] |= 1 << (c % WORD_BITS);
    }
    Ok(words)
}

/// The `struct input_mask` for `bitmap` (which must outlive the ioctl it is passed to).
fn input_mask(type_: u16, bitmap: &[libc::c_ulong]) -> libc::input_mask {
    libc::input_mask {
        type_: u32::from(type_),
        // At most KEY_CNT bits: 96 bytes.
        codes_size: std::mem::size_of_val(bitmap) as u32,
        codes_ptr: bitmap.as_ptr() as u64,
    }
}

/// `EVIOCSMASK`: from now on this descriptor receives, of event type `type_`, only `codes`
/// (the other descriptors on the device are not affected). For `type_ == EV_SYN`, `codes` are
/// event types: the descriptor receives only those types. `EV_SYN` records always pass, and
/// the kernel drops a `SYN_REPORT` whose packet this descriptor got nothing of. The mask
/// applies to events queued after the call, not those already waiting.
///
/// # Errors
/// As [`mask_bitmap`]; the kernel's refusal (`Revoked`, `NotEvdev`, `Kernel`).
pub fn set_mask(fd: BorrowedFd<'_>, type_: u16, codes: &[u16]) -> Result<(), EvdevIoctlError> {
    const OP: &str = "EVIOCSMASK";
    let bitmap = mask_bitmap(type_, codes)?;
    let mask = input_mask(type_, &bitmap);
    // SAFETY: `mask` is a valid `struct input_mask` whose `codes_ptr` points at `bitmap`,
    // readable for `codes_size` bytes and alive for the call.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), EVIOCSMASK, &raw const mask) };
    if r < 0 {
        return Err(EvdevIoctlError::from_errno(OP, last_errno()));
    }
    Ok(())
}

/// The evdev masks that let through what the decoder makes events of `kinds` from (a bit per
/// [`EventKind::index`]), and nothing else: `(type, codes)` for each masked type, the event-type
/// mask (`EV_SYN`) last. Touch kinds need the positions, `BTN_TOUCH` and the frame stamp; keys
/// every key code but the touch, mouse and digitizer buttons; the mouse its two relative axes
/// and buttons. The three touch kinds share their records (a press is a position and
/// `BTN_TOUCH`), so any one of them lets all three through.
#[must_use]
pub fn kind_masks(kinds: u32) -> Vec<(u16, Vec<u16>)> {
    let has = |k: EventKind| kinds & (1 << k.index()) != 0;
    let touch =
        has(EventKind::TouchMotion) || has(EventKind::TouchPress) || has(EventKind::TouchRelease);
    let key = has(EventKind::Key);
    let mouse = has(EventKind::Mouse);
    let mut abs = Vec::new();
    let mut keys = Vec::new();
    let mut rel = Vec::new();
    let mut msc = Vec::new();
    let mut types = Vec::new();
    if touch {
        abs.extend([ABS_X, ABS_Y, ABS_MT_POSITION_X, ABS_MT_POSITION_Y]);
        keys.push(BTN_TOUCH);
        msc.push(MSC_TIMESTAMP);
        types.extend([EV_ABS, EV_MSC]);
    }
    if mouse {
        rel.extend([REL_X, REL_Y]);
        keys.extend(BTN_MOUSE..BTN_MOUSE + MOUSE_BUTTONS);
        types.push(EV_REL);
    }
    if key {
        let reserved = |c: u16| {
            c == BTN_TOUCH
                || (BTN_MOUSE..BTN_MOUSE + MOUSE_BUTTONS).contains(&c)
                || (BTN_DIGI_FIRST..=BTN_DIGI_LAST).contains(&c)
        };
        keys.extend((0..KEY_CNT as u16).filter(|&c| !reserved(c)));
    }
    if !keys.is_empty() {
        keys.sort_unstable();
        types.push(EV_KEY);
    }
    types.sort_unstable();
    vec![
        (EV_ABS, abs),
        (EV_KEY, keys),
        (EV_REL, rel),
        (EV_MSC, msc),
        (EV_SYN, types),
    ]
}

/// Sets [`kind_masks`]`(kinds)` on `fd`: from now on the descriptor receives only what events of
/// those kinds are made of (with `kinds` 0, nothing at all: the daemon's own descriptor on a
/// device it hands out).
///
/// # Errors
/// As [`set_mask`].
pub fn set_kind_mask(fd: BorrowedFd<'_>, kinds: u32) -> Result<(), EvdevIoctlError> {
    for (type_, codes) in kind_masks(kinds) {
        set_mask(fd, type_, &codes)?;
    }
    Ok(())
}

/// `EVIOCGRAB`: with `on`, this descriptor alone receives the device's events (every other
/// evdev descriptor and the kernel's other input handlers get none) until it ungrabs or is
/// closed; without, it gives the grab back.
///
/// # Errors
/// [`EvdevIoctlError::AlreadyGrabbed`] when some descriptor holds the grab,
/// [`EvdevIoctlError::NotGrabbed`] when releasing a grab this descriptor does not hold; the
/// kernel's other refusals.
pub fn grab(fd: BorrowedFd<'_>, on: bool) -> Result<(), EvdevIoctlError> {
    const OP: &str = "EVIOCGRAB";
    ioctl_value(fd, EVIOCGRAB, libc::c_ulong::from(on)).map_err(|errno| match errno.0 {
        libc::EBUSY if on => EvdevIoctlError::AlreadyGrabbed,
        libc::EINVAL if !on => EvdevIoctlError::NotGrabbed,
        _ => EvdevIoctlError::from_errno(OP, errno),
    })
}

/// `EVIOCREVOKE`: cuts this descriptor off the device for good — it receives no more events,
/// its reads and ioctls fail with `ENODEV` and it polls `POLLHUP | POLLERR` — while other
/// descriptors (duplicates of this one included: the revocation is of the open file) carry on.
/// A grab it held is released.
///
/// # Errors
/// [`EvdevIoctlError::Revoked`] when it already was; the kernel's other refusals.
pub fn revoke(fd: BorrowedFd<'_>) -> Result<(), EvdevIoctlError> {
    // The kernel refuses any argument but 0 (reserved).
    ioctl_value(fd, EVIOCREVOKE, 0).map_err(|e| EvdevIoctlError::from_errno("EVIOCREVOKE", e))
}

/// `EVIOCGABS`: the current value of absolute axis `code` (at most `ABS_MAX`, 0x3f). A reader
/// that starts in the middle of a stream (a fresh descriptor, or after `SYN_DROPPED`) needs it: the
/// input core sends an axis only when it changes, so a packet moving one axis says nothing of
/// the other.
///
/// # Errors
/// [`EvdevIoctlError::CodeOutOfRange`] beyond `ABS_MAX`; the kernel's refusal (`NotEvdev`,
/// `Revoked`, `Kernel` with `EINVAL` for an axis the device lacks).
pub fn abs_value(fd: BorrowedFd<'_>, code: u16) -> Result<i32, EvdevIoctlError> {
    if usize::from(code) >= ABS_CNT {
        return Err(EvdevIoctlError::CodeOutOfRange {
            type_: EV_ABS,
            code,
            count: ABS_CNT,
        });
    }
    // SAFETY: input_absinfo is plain data; zeroed is valid.
    let mut info: libc::input_absinfo = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is writable for the size EVIOCGABS carries.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), eviocgabs(code), &raw mut info) };
    if r < 0 {
        return Err(EvdevIoctlError::from_errno("EVIOCGABS", last_errno()));
    }
    Ok(info.value)
}

/// `EVIOCGNAME`: the device's name as its driver gave it (invalid UTF-8 replaced, cut at
/// 256 bytes); empty for a device without one.
///
/// # Errors
/// The kernel's refusal (`Revoked`, `NotEvdev`, `Kernel`).
pub fn device_name(fd: BorrowedFd<'_>) -> Result<String, EvdevIoctlError> {
    let mut buf = [0u8; NAME_BUF_BYTES];
    // SAFETY: `buf` is writable for NAME_BUF_BYTES bytes, the size EVIOCGNAME carries.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), EVIOCGNAME, buf.as_mut_ptr()) };
    if r < 0 {
        let errno = last_errno();
        // The kernel's answer for a device whose driver set no name.
        if errno.0 == libc::ENOENT {
            return Ok(String::new());
        }
        return Err(EvdevIoctlError::from_errno("EVIOCGNAME", errno));
    }
    // The kernel returns the bytes it copied, the NUL included when it fit.
    let copied = usize::try_from(r).unwrap_or(0).min(buf.len());
    let bytes = &buf[..copied];
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    Ok(String::from_utf8_lossy(&bytes[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers `linux/input.h` gives (printed by a C program built
    /// against the headers, x86_64; the same on every architecture with the asm-generic
    /// encoding, since none of these arguments changes size with the word length).
    #[test]
    fn ioctl_numbers_match_the_c_headers() {
        if ioc::ARCH_OWN {
            return lull_testkit::skip("these are the asm-generic encoding's numbers");
        }
        // `Ioctl` is `c_ulong` on glibc, `c_int` on musl; every number fits 32 bits.
        let n = |x: libc::Ioctl| x as u32;
        assert_eq!(n(EVIOCGRAB), 0x4004_4590);
        assert_eq!(n(EVIOCREVOKE), 0x4004_4591);
        assert_eq!(n(EVIOCSMASK), 0x4010_4593);
        assert_eq!(n(EVIOCGNAME), 0x8100_4506, "EVIOCGNAME(256)");
        assert_eq!(n(eviocgabs(0)), 0x8018_4540, "EVIOCGABS(ABS_X)");
        assert_eq!(
            n(eviocgabs(0x36)),
            0x8018_4576,
            "EVIOCGABS(ABS_MT_POSITION_Y)"
        );
        // The one `sys::fd` hard-codes.
        assert_eq!(
            n(ioc::write(b'E', 0xa0, size_of::<libc::c_int>())),
            0x4004_45a0
        );
    }

    /// The structures the ioctls carry have the headers' sizes (`sizeof` in the same C program).
    #[test]
    fn ioctl_structures_have_the_kernel_sizes() {
        assert_eq!(size_of::<libc::input_mask>(), 16);
    }

    #[test]
    fn mask_bitmaps_set_one_bit_per_code() {
        const WORD_BITS: usize = libc::c_ulong::BITS as usize;
        // Event types: one word of EV_CNT = 32 bits.
        let types = mask_bitmap(EV_SYN, &[EV_KEY, EV_ABS]).unwrap();
        assert_eq!(types, vec![(1 << EV_KEY) | (1 << EV_ABS)]);
        // Keys: KEY_CNT = 768 bits; BTN_TOUCH (330) lands in word 330 / WORD_BITS.
        let keys = mask_bitmap(EV_KEY, &[30, crate::evdev::BTN_TOUCH, 0x2ff]).unwrap();
        assert_eq!(keys.len(), KEY_CNT / WORD_BITS);
        let set: Vec<usize> = (0..KEY_CNT)
            .filter(|&c| keys[c / WORD_BITS] & (1 << (c % WORD_BITS)) != 0)
            .collect();
        assert_eq!(set, [30, 330, 0x2ff]);
        // An empty list masks every code of the type out.
        assert!(mask_bitmap(EV_ABS, &[]).unwrap().iter().all(|&w| w == 0));
        // Counts that are not a multiple of the word round up (SW_CNT = 17).
        assert_eq!(mask_bitmap(EV_SW, &[16]).unwrap(), vec![1 << 16]);
    }

    #[test]
    fn mask_bitmaps_refuse_what_the_kernel_would_ignore() {
        assert_eq!(
            mask_bitmap(0x14, &[]), // EV_REP: no mask in evdev
            Err(EvdevIoctlError::UnmaskableType(0x14))
        );
        assert_eq!(
            mask_bitmap(0x1f, &[]),
            Err(EvdevIoctlError::UnmaskableType(0x1f))
        );
        assert_eq!(
            mask_bitmap(EV_ABS, &[0x40]),
            Err(EvdevIoctlError::CodeOutOfRange {
                type_: EV_ABS,
                code: 0x40,
                count: 0x40
            })
        );
        assert_eq!(
            mask_bitmap(EV_SYN, &[0x20]),
            Err(EvdevIoctlError::CodeOutOfRange {
                type_: EV_SYN,
                code: 0x20,
                count: 0x20
            })
        );
    }

    #[test]
    fn kind_masks_let_through_what_the_decoder_needs() {
        let bit = |k: EventKind| 1u32 << k.index();
        let get = |kinds, t| {
            kind_masks(kinds)
                .into_iter()
                .find(|(ty, _)| *ty == t)
                .map(|(_, c)| c)
                .unwrap()
        };
        let press = bit(EventKind::TouchPress);
        assert_eq!(get(press, EV_SYN), vec![EV_KEY, EV_ABS, EV_MSC]);
        assert_eq!(get(press, EV_KEY), vec![BTN_TOUCH]);
        assert_eq!(
            get(press, EV_ABS),
            vec![ABS_X, ABS_Y, ABS_MT_POSITION_X, ABS_MT_POSITION_Y]
        );
        let key = bit(EventKind::Key);
        assert_eq!(get(key, EV_SYN), vec![EV_KEY]);
        let keys = get(key, EV_KEY);
        assert!(keys.contains(&30) && !keys.contains(&BTN_TOUCH) && !keys.contains(&BTN_MOUSE));
        assert!(get(key, EV_ABS).is_empty());
        let mouse = bit(EventKind::Mouse);
        assert_eq!(get(mouse, EV_SYN), vec![EV_KEY, EV_REL]);
        assert_eq!(get(mouse, EV_REL), vec![REL_X, REL_Y]);
        // Nothing: every type masked out.
        assert!(kind_masks(0).iter().all(|(_, c)| c.is_empty()));
        // Every mask is one the kernel takes.
        for kinds in [0, press, key, mouse, press | key | mouse] {
            for (t, codes) in kind_masks(kinds) {
                mask_bitmap(t, &codes).unwrap();
            }
        }
    }

    /// The `struct input_mask` in the kernel's layout: type, size in bytes, then the pointer.
    #[test]
    fn input_mask_carries_the_bitmap() {
        let bitmap = mask_bitmap(EV_KEY, &[1]).unwrap();
        let m = input_mask(EV_KEY, &bitmap);
        assert_eq!(m.type_, u32::from(EV_KEY));
        assert_eq!(m.codes_size as usize, KEY_CNT / 8);
        assert_eq!(m.codes_ptr, bitmap.as_ptr() as u64);
        // SAFETY: input_mask is plain data of its size.
        let bytes: [u8; 16] = unsafe { std::mem::transmute(m) };
        assert_eq!(bytes[..4], u32::from(EV_KEY).to_ne_bytes());
        assert_eq!(bytes[4..8], (KEY_CNT as u32 / 8).to_ne_bytes());
        assert_eq!(bytes[8..], (bitmap.as_ptr() as u64).to_ne_bytes());
    }

    /// On a descriptor that is not an evdev device (a pipe), every call says so.
    #[test]
    fn a_pipe_is_not_an_evdev_device() {
        use std::os::fd::AsFd;
        let (r, _w) = crate::sys::pipe(false).unwrap();
        let fd = r.as_fd();
        assert_eq!(
            grab(fd, true),
            Err(EvdevIoctlError::NotEvdev { op: "EVIOCGRAB" })
        );
        assert_eq!(
            revoke(fd),
            Err(EvdevIoctlError::NotEvdev { op: "EVIOCREVOKE" })
        );
        assert_eq!(
            set_mask(fd, EV_SYN, &[EV_KEY]),
            Err(EvdevIoctlError::NotEvdev { op: "EVIOCSMASK" })
        );
        assert_eq!(
            device_name(fd),
            Err(EvdevIoctlError::NotEvdev { op: "EVIOCGNAME" })
        );
        assert_eq!(
            abs_value(fd, 0),
            Err(EvdevIoctlError::NotEvdev { op: "EVIOCGABS" })
        );
    }
}
