//! A virtual input device through `/dev/uinput`: the lab's stand-in for a touch screen,
//! keyboard or mouse. Records written to it come out of its `/dev/input/eventN` node like a
//! driver's, through the kernel's input core and evdev (value filtering, per-descriptor
//! buffers, masks, grabs and all).
//!
//! Every `unsafe` block here is one `ioctl` on the descriptor [`UinputDevice`] owns, with a
//! structure or buffer whose size the ioctl number carries, or an integer argument.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::evdev::{InputRecord, EV_ABS, EV_KEY, EV_MSC, EV_REL, RECORD_SIZE};

/// The uinput ioctls (`linux/uinput.h`), numbers computed as its `_IO*` macros do.
pub(crate) mod ioctls {
    use crate::evdev_ioctl::ioc;

    /// The ioctl type of uinput (`UINPUT_IOCTL_BASE`).
    const BASE: u8 = b'U';
    pub(crate) const UI_DEV_CREATE: libc::Ioctl = ioc::none(BASE, 1);
    pub(crate) const UI_DEV_DESTROY: libc::Ioctl = ioc::none(BASE, 2);
    pub(crate) const UI_DEV_SETUP: libc::Ioctl =
        ioc::write(BASE, 3, size_of::<libc::uinput_setup>());
    pub(crate) const UI_ABS_SETUP: libc::Ioctl =
        ioc::write(BASE, 4, size_of::<libc::uinput_abs_setup>());
    pub(crate) const UI_SET_EVBIT: libc::Ioctl = ioc::write(BASE, 100, size_of::<libc::c_int>());
    pub(crate) const UI_SET_KEYBIT: libc::Ioctl = ioc::write(BASE, 101, size_of::<libc::c_int>());
    pub(crate) const UI_SET_RELBIT: libc::Ioctl = ioc::write(BASE, 102, size_of::<libc::c_int>());
    pub(crate) const UI_SET_ABSBIT: libc::Ioctl = ioc::write(BASE, 103, size_of::<libc::c_int>());
    pub(crate) const UI_SET_MSCBIT: libc::Ioctl = ioc::write(BASE, 104, size_of::<libc::c_int>());
    /// Bytes asked of `UI_GET_SYSNAME`: the name is `inputN`, N below 2^32.
    pub(crate) const SYSNAME_BUF_BYTES: usize = 64;
    /// `UI_GET_SYSNAME(len)`, `_IOC(_IOC_READ, 'U', 44, len)`, for [`SYSNAME_BUF_BYTES`].
    pub(crate) const UI_GET_SYSNAME: libc::Ioctl = ioc::read(BASE, 44, SYSNAME_BUF_BYTES);
}

use ioctls::*;

/// The uinput device node (`Documentation/input/uinput.rst`).
const UINPUT_PATH: &str = "/dev/uinput";
/// Where the kernel lists a virtual input device and its handlers' nodes, by sysname.
const SYSFS_VIRTUAL_INPUT: &str = "/sys/devices/virtual/input";
/// Where devtmpfs (or udev) puts the evdev nodes.
const DEV_INPUT: &str = "/dev/input";
/// Longest device name: `UINPUT_MAX_NAME_SIZE` (80, `linux/uinput.h`) less the NUL.
pub const MAX_NAME_BYTES: usize = libc::UINPUT_MAX_NAME_SIZE - 1;
/// `BUS_VIRTUAL` (`linux/input.h`): the bus a device made by software reports.
const BUS_VIRTUAL: u16 = 0x06;
/// The largest code of each type (`KEY_MAX`, `ABS_MAX`, `REL_MAX`, `linux/input-event-codes.h`);
/// uinput refuses larger ones.
const KEY_MAX: u16 = 0x2ff;
const ABS_MAX: u16 = 0x3f;
const REL_MAX: u16 = 0x0f;
const MSC_MAX: u16 = 0x07;

/// What a virtual device can report. Each axis starts at its minimum: the input core drops a
/// record that repeats an axis's or key's current value, so the first report of an axis must
/// differ from its minimum to be seen.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct UinputCaps {
    /// `EV_KEY` codes (keys and buttons, `BTN_TOUCH` included).
    pub keys: Vec<u16>,
    /// `EV_ABS` axes: (code, minimum, maximum), with no fuzz, flat zone or resolution.
    pub abs: Vec<(u16, i32, i32)>,
    /// `EV_REL` axes.
    pub rel: Vec<u16>,
    /// `EV_MSC` codes (`MSC_TIMESTAMP` for a device that stamps its frames).
    pub msc: Vec<u16>,
}

/// Why a virtual device could not be made or used.
#[derive(Debug, thiserror::Error)]
pub enum UinputError {
    #[error("no {UINPUT_PATH}: load the uinput module (modprobe uinput)")]
    NotAvailable,
    #[error("{op}: {source}")]
    Io {
        op: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("device name longer than uinput's {MAX_NAME_BYTES} bytes")]
    NameTooLong,
    #[error("device name is empty; uinput refuses a device without one")]
    NameEmpty,
    #[error("device name holds a NUL byte")]
    NameHasNul,
    #[error("{kind} code {code:#x} is beyond the kernel's largest, {max:#x}")]
    CodeOutOfRange {
        kind: &'static str,
        code: u16,
        max: u16,
    },
    #[error("absolute axis {code:#x}: minimum {min} is above maximum {max}")]
    AbsRange { code: u16, min: i32, max: i32 },
    #[error("{sysname} has no evdev node: load the evdev module (modprobe evdev)")]
    NoEventNode { sysname: String },
    #[error("uinput took {written} of {expected} bytes")]
    ShortWrite { written: usize, expected: usize },
}

fn io_err(op: &'static str) -> impl FnOnce(io::Error) -> UinputError {
    move |source| UinputError::Io { op, source }
}

/// A virtual input device: owns the `/dev/uinput` descriptor; dropping it destroys the device
/// (its evdev nodes then read `ENODEV`).
#[derive(Debug)]
pub struct UinputDevice {
    fd: OwnedFd,
}

/// Checks what uinput would refuse with a bare `EINVAL`, so the caller learns which field.
fn validate(name: &str, caps: &UinputCaps) -> Result<(), UinputError> {
    if name.is_empty() {
        return Err(UinputError::NameEmpty);
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(UinputError::NameTooLong);
    }
    if name.as_bytes().contains(&0) {
        return Err(UinputError::NameHasNul);
    }
    let check = |kind, code, max| {
        if code > max {
            Err(UinputError::CodeOutOfRange { kind, code, max })
        } else {
            Ok(())
        }
    };
    for &k in &caps.keys {
        check("key", k, KEY_MAX)?;
    }
    for &r in &caps.rel {
        check("relative axis", r, REL_MAX)?;
    }
    for &m in &caps.msc {
        check("misc", m, MSC_MAX)?;
    }
    for &(code, min, max) in &caps.abs {
        check("absolute axis", code, ABS_MAX)?;
        if min > max {
            return Err(UinputError::AbsRange { code, min, max });
        }
    }
    Ok(())
}

/// `struct uinput_setup` for `name` (validated: 1 to [`MAX_NAME_BYTES`] bytes, no NUL).
fn setup_struct(name: &str) -> libc::uinput_setup {
    let mut name_field = [0 as libc::c_char; libc::UINPUT_MAX_NAME_SIZE];
    for (d, s) in name_field.iter_mut().zip(name.as_bytes()) {
        *d = *s as libc::c_char;
    }
    libc::uinput_setup {
        id: libc::input_id {
            bustype: BUS_VIRTUAL,
            vendor: 0,
            product: 0,
            version: 1,
        },
        name: name_field,
        ff_effects_max: 0,
    }
}

/// `struct uinput_abs_setup` for one axis. Fuzz and flat are 0: a virtual device reports exact
/// values, and fuzz would make the input core drop small moves.
fn abs_setup(code: u16, min: i32, max: i32) -> libc::uinput_abs_setup {
    libc::uinput_abs_setup {
        code,
        absinfo: libc::input_absinfo {
            value: min,
            minimum: min,
            maximum: max,
            fuzz: 0,
            flat: 0,
            resolution: 0,
        },
    }
}

impl UinputDevice {
    /// Opens `/dev/uinput`, declares `caps` (`UI_SET_EVBIT`/`KEYBIT`/`RELBIT`/`ABSBIT`,
    /// `UI_ABS_SETUP`), names the device (`UI_DEV_SETUP`, bus `BUS_VIRTUAL`) and creates it
    /// (`UI_DEV_CREATE`). When this returns, the kernel has registered the device and made its
    /// evdev node.
    ///
    /// # Errors
    /// [`UinputError::NotAvailable`] without uinput; a name or capability uinput would refuse;
    /// [`UinputError::Io`] for the kernel's refusal of a step (`EACCES` on the node for a user
    /// without access).
    pub fn create(name: &str, caps: &UinputCaps) -> Result<UinputDevice, UinputError> {
        validate(name, caps)?;
        let dev = UinputDevice::open(Path::new(UINPUT_PATH))?;
        let mut types = Vec::new();
        if !caps.keys.is_empty() {
            types.push(EV_KEY);
        }
        if !caps.rel.is_empty() {
            types.push(EV_REL);
        }
        if !caps.abs.is_empty() {
            types.push(EV_ABS);
        }
        if !caps.msc.is_empty() {
            types.push(EV_MSC);
        }
        for t in types {
            dev.set_bit("UI_SET_EVBIT", UI_SET_EVBIT, t)?;
        }
        for &k in &caps.keys {
            dev.set_bit("UI_SET_KEYBIT", UI_SET_KEYBIT, k)?;
        }
        for &r in &caps.rel {
            dev.set_bit("UI_SET_RELBIT", UI_SET_RELBIT, r)?;
        }
        for &m in &caps.msc {
            dev.set_bit("UI_SET_MSCBIT", UI_SET_MSCBIT, m)?;
        }
        for &(code, min, max) in &caps.abs {
            dev.set_bit("UI_SET_ABSBIT", UI_SET_ABSBIT, code)?;
            let setup = abs_setup(code, min, max);
            // SAFETY: a valid `struct uinput_abs_setup`, the size UI_ABS_SETUP carries.
            let r = unsafe { libc::ioctl(dev.fd.as_raw_fd(), UI_ABS_SETUP, &raw const setup) };
            crate::sys::cvt(r).map_err(io_err("UI_ABS_SETUP"))?;
        }
        let setup = setup_struct(name);
        // SAFETY: a valid `struct uinput_setup`, the size UI_DEV_SETUP carries.
        let r = unsafe { libc::ioctl(dev.fd.as_raw_fd(), UI_DEV_SETUP, &raw const setup) };
        crate::sys::cvt(r).map_err(io_err("UI_DEV_SETUP"))?;
        // SAFETY: no argument.
        let r = unsafe { libc::ioctl(dev.fd.as_raw_fd(), UI_DEV_CREATE) };
        crate::sys::cvt(r).map_err(io_err("UI_DEV_CREATE"))?;
        Ok(dev)
    }

    fn open(path: &Path) -> Result<UinputDevice, UinputError> {
        // Write-only: events and ioctls, no force-feedback requests to read. std opens with
        // O_CLOEXEC.
        match std::fs::OpenOptions::new().write(true).open(path) {
            Ok(f) => Ok(UinputDevice { fd: f.into() }),
            // ENOENT: no node; ENODEV/ENXIO: a node with no driver behind it.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOENT | libc::ENODEV | libc::ENXIO)
                ) =>
            {
                Err(UinputError::NotAvailable)
            }
            Err(source) => Err(UinputError::Io {
                op: "open /dev/uinput",
                source,
            }),
        }
    }

    fn set_bit(&self, op: &'static str, request: libc::Ioctl, bit: u16) -> Result<(), UinputError> {
        // The kernel takes the bit as the ioctl's `unsigned long` argument, by value.
        // SAFETY: an integer argument; no memory is passed.
        let r = unsafe { libc::ioctl(self.fd.as_raw_fd(), request, libc::c_ulong::from(bit)) };
        crate::sys::cvt(r).map_err(io_err(op))?;
        Ok(())
    }

    /// The kernel's name for the device, `inputN` (`UI_GET_SYSNAME`).
    ///
    /// # Errors
    /// [`UinputError::Io`] for the kernel's refusal.
    pub fn sysname(&self) -> Result<String, UinputError> {
        let mut buf = [0u8; SYSNAME_BUF_BYTES];
        // SAFETY: `buf` is writable for SYSNAME_BUF_BYTES bytes, the size UI_GET_SYSNAME carries.
        let r = unsafe { libc::ioctl(self.fd.as_raw_fd(), UI_GET_SYSNAME, buf.as_mut_ptr()) };
        crate::sys::cvt(r).map_err(io_err("UI_GET_SYSNAME"))?;
        // The kernel NUL-terminates what it copies.
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
    }

    /// The device's evdev node, `/dev/input/eventN`: the `eventN` entry the evdev handler made
    /// under `/sys/devices/virtual/input/<sysname>/`.
    ///
    /// # Errors
    /// [`UinputError::NoEventNode`] when evdev made none (the module is not loaded);
    /// [`UinputError::Io`] when sysfs cannot be read.
    pub fn event_path(&self) -> Result<PathBuf, UinputError> {
        let sysname = self.sysname()?;
        let dir = Path::new(SYSFS_VIRTUAL_INPUT).join(&sysname);
        let entries =
            std::fs::read_dir(&dir).map_err(io_err("read the device's sysfs directory"))?;
        for entry in entries {
            let entry = entry.map_err(io_err("read the device's sysfs directory"))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let is_event_node = name
                .strip_prefix("event")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if is_event_node {
                return Ok(Path::new(DEV_INPUT).join(name));
            }
        }
        Err(UinputError::NoEventNode { sysname })
    }

    /// Writes `records` (`struct input_event`s) in one `write`: the kernel injects each as if
    /// the device's driver reported it, ignoring the time fields (the kernel stamps the packet
    /// itself, on each reader's clock). The input core silently drops a record of a type or code the
    /// device did not declare, and one that repeats an axis's or key's current value; a
    /// packet's `EV_SYN`/`SYN_REPORT` is the caller's to write.
    ///
    /// # Errors
    /// [`UinputError::Io`] for the kernel's refusal; [`UinputError::ShortWrite`] if it took
    /// part of the records.
    pub fn emit(&self, records: &[InputRecord]) -> Result<(), UinputError> {
        if records.is_empty() {
            return Ok(());
        }
        let mut bytes = Vec::with_capacity(records.len() * RECORD_SIZE);
        for r in records {
            bytes.extend_from_slice(&r.to_bytes());
        }
        let written = crate::sys::write_all_once(self.fd.as_raw_fd(), &bytes)
            .map_err(io_err("write to /dev/uinput"))?;
        if written != bytes.len() {
            return Err(UinputError::ShortWrite {
                written,
                expected: bytes.len(),
            });
        }
        Ok(())
    }
}

impl Drop for UinputDevice {
    fn drop(&mut self) {
        // Closing the descriptor would destroy the device too; saying so makes it explicit and
        // happens before any other holder of a duplicate descriptor could keep it alive.
        // SAFETY: no argument. A failure leaves the close to destroy it.
        unsafe { libc::ioctl(self.fd.as_raw_fd(), UI_DEV_DESTROY) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers `linux/uinput.h` gives (printed by a C program built against the header,
    /// x86_64; the same on every architecture with the asm-generic encoding).
    #[test]
    fn ioctl_numbers_match_the_c_header() {
        if crate::evdev_ioctl::ioc::ARCH_OWN {
            return lull_testkit::skip("these are the asm-generic encoding's numbers");
        }
        // `Ioctl` is `c_ulong` on glibc, `c_int` on musl; every number fits 32 bits.
        let n = |x: libc::Ioctl| x as u32;
        assert_eq!(n(UI_DEV_CREATE), 0x5501);
        assert_eq!(n(UI_DEV_DESTROY), 0x5502);
        assert_eq!(n(UI_DEV_SETUP), 0x405c_5503);
        assert_eq!(n(UI_ABS_SETUP), 0x401c_5504);
        assert_eq!(n(UI_SET_EVBIT), 0x4004_5564);
        assert_eq!(n(UI_SET_KEYBIT), 0x4004_5565);
        assert_eq!(n(UI_SET_RELBIT), 0x4004_5566);
        assert_eq!(n(UI_SET_ABSBIT), 0x4004_5567);
        assert_eq!(n(UI_SET_MSCBIT), 0x4004_5568);
        assert_eq!(n(UI_GET_SYSNAME), 0x8040_552c, "UI_GET_SYSNAME(64)");
    }

    /// The structures the ioctls carry have the header's sizes (`sizeof` in the same C program).
    #[test]
    fn ioctl_structures_have_the_kernel_sizes() {
        assert_eq!(size_of::<libc::uinput_setup>(), 92);
        assert_eq!(size_of::<libc::uinput_abs_setup>(), 28);
    }

    #[test]
    fn names_and_capabilities_uinput_would_refuse_are_typed() {
        let ok = UinputCaps {
            keys: vec![crate::evdev::BTN_TOUCH],
            abs: vec![(0, 0, 100)],
            rel: vec![],
            msc: vec![crate::evdev::MSC_TIMESTAMP],
        };
        assert!(validate("lull touch", &ok).is_ok());
        assert!(matches!(validate("", &ok), Err(UinputError::NameEmpty)));
        assert!(validate(&"n".repeat(MAX_NAME_BYTES), &ok).is_ok());
        assert!(matches!(
            validate(&"n".repeat(MAX_NAME_BYTES + 1), &ok),
            Err(UinputError::NameTooLong)
        ));
        assert!(matches!(
            validate("a\0b", &ok),
            Err(UinputError::NameHasNul)
        ));
        let bad_key = UinputCaps {
            keys: vec![KEY_MAX + 1],
            ..UinputCaps::default()
        };
        assert!(matches!(
            validate("k", &bad_key),
            Err(UinputError::CodeOutOfRange {
                kind: "key",
                code: 0x300,
                max: KEY_MAX
            })
        ));
        let bad_rel = UinputCaps {
            rel: vec![REL_MAX + 1],
            ..UinputCaps::default()
        };
        assert!(matches!(
            validate("r", &bad_rel),
            Err(UinputError::CodeOutOfRange { code: 0x10, .. })
        ));
        let bad_msc = UinputCaps {
            msc: vec![MSC_MAX + 1],
            ..UinputCaps::default()
        };
        assert!(matches!(
            validate("m", &bad_msc),
            Err(UinputError::CodeOutOfRange { kind: "misc", .. })
        ));
        let bad_axis = UinputCaps {
            abs: vec![(ABS_MAX + 1, 0, 1)],
            ..UinputCaps::default()
        };
        assert!(matches!(
            validate("a", &bad_axis),
            Err(UinputError::CodeOutOfRange { code: 0x40, .. })
        ));
        let bad_range = UinputCaps {
            abs: vec![(1, 5, 4)],
            ..UinputCaps::default()
        };
        assert!(matches!(
            validate("a", &bad_range),
            Err(UinputError::AbsRange {
                code: 1,
                min: 5,
                max: 4
            })
        ));
    }

    #[test]
    fn setup_structures_carry_the_name_and_range() {
        let s = setup_struct("lull");
        assert_eq!(s.id.bustype, BUS_VIRTUAL);
        let name: Vec<u8> = s.name.iter().map(|&c| c as u8).collect();
        assert_eq!(&name[..5], b"lull\0");
        assert!(name[4..].iter().all(|&b| b == 0));
        // A name of the longest length keeps its terminating NUL.
        let long = setup_struct(&"x".repeat(MAX_NAME_BYTES));
        assert_eq!(long.name[MAX_NAME_BYTES], 0);
        let a = abs_setup(1, -5, 7);
        assert_eq!(
            (
                a.code,
                a.absinfo.value,
                a.absinfo.minimum,
                a.absinfo.maximum
            ),
            (1, -5, -5, 7)
        );
        assert_eq!((a.absinfo.fuzz, a.absinfo.flat), (0, 0));
    }

    /// Without the uinput node the answer is the typed one that says to load the module.
    #[test]
    fn a_missing_node_is_not_available() {
        let err = UinputDevice::open(Path::new("/nonexistent/uinput")).unwrap_err();
        assert!(matches!(err, UinputError::NotAvailable), "{err}");
        assert!(err.to_string().contains("modprobe uinput"));
    }
}
