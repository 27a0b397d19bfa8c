//! The Linux frame buffer device (`/dev/fb0`): the screen's pixels presented to real hardware.
//!
//! [`FrameBuffer::open`] asks the kernel for the device's layout (`FBIOGET_VSCREENINFO`,
//! `FBIOGET_FSCREENINFO`), maps its memory shared and describes it as a
//! [`lull_kds::present::FbFormat`]; [`FrameBuffer::present`] converts a damaged rectangle into it
//! with [`lull_kds::present::present`]. Where there is no frame buffer the display server runs
//! headless, its screen an in-memory [`Pixmap`].
//!
//! The `unsafe` here is two ioctls into structs of the kernel's layout, and the `mmap`/`munmap`
//! of the device memory this struct owns.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

use lull_kds::present::{self, Channel, FbFormat, PresentError};
use lull_kds::{Pixmap, Rect};

/// The first frame buffer the kernel enumerates.
pub const DEFAULT_PATH: &str = "/dev/fb0";

/// `FBIOGET_VSCREENINFO` (`linux/fb.h`): read `struct fb_var_screeninfo`.
const FBIOGET_VSCREENINFO: libc::c_ulong = 0x4600;
/// `FBIOGET_FSCREENINFO` (`linux/fb.h`): read `struct fb_fix_screeninfo`.
const FBIOGET_FSCREENINFO: libc::c_ulong = 0x4602;
/// `FB_TYPE_PACKED_PIXELS`: each pixel's bits together, the only memory type packed here.
const FB_TYPE_PACKED_PIXELS: u32 = 0;
/// `FB_VISUAL_TRUECOLOR`: pixel bits are the colour itself, no colour map in between.
const FB_VISUAL_TRUECOLOR: u32 = 2;

/// `struct fb_bitfield`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct FbBitfield {
    offset: u32,
    length: u32,
    msb_right: u32,
}

/// `struct fb_var_screeninfo`: the mode (resolution, depth, channel layout, timings).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct FbVarScreeninfo {
    xres: u32,
    yres: u32,
    xres_virtual: u32,
    yres_virtual: u32,
    xoffset: u32,
    yoffset: u32,
    bits_per_pixel: u32,
    grayscale: u32,
    red: FbBitfield,
    green: FbBitfield,
    blue: FbBitfield,
    transp: FbBitfield,
    nonstd: u32,
    activate: u32,
    height: u32,
    width: u32,
    accel_flags: u32,
    pixclock: u32,
    left_margin: u32,
    right_margin: u32,
    upper_margin: u32,
    lower_margin: u32,
    hsync_len: u32,
    vsync_len: u32,
    sync: u32,
    vmode: u32,
    rotate: u32,
    colorspace: u32,
    reserved: [u32; 4],
}

/// `struct fb_fix_screeninfo`: the memory (its length, the line stride, type and visual).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct FbFixScreeninfo {
    id: [u8; 16],
    smem_start: libc::c_ulong,
    smem_len: u32,
    type_: u32,
    type_aux: u32,
    visual: u32,
    xpanstep: u16,
    ypanstep: u16,
    ywrapstep: u16,
    line_length: u32,
    mmio_start: libc::c_ulong,
    mmio_len: u32,
    accel: u32,
    capabilities: u16,
    reserved: [u16; 2],
}

// Sizes as `sizeof` gives them for `linux/fb.h` (checked with the C compiler on x86_64: 160
// and 80); the fixed struct holds two `unsigned long`s, so it is 68 bytes on 32-bit targets.
const _: () = assert!(std::mem::size_of::<FbVarScreeninfo>() == 160);
#[cfg(target_pointer_width = "64")]
const _: () = assert!(std::mem::size_of::<FbFixScreeninfo>() == 80);
#[cfg(target_pointer_width = "32")]
const _: () = assert!(std::mem::size_of::<FbFixScreeninfo>() == 68);

/// Why a frame buffer could not be opened or drawn to.
#[derive(Debug, thiserror::Error)]
pub enum FbError {
    #[error("no frame buffer at {} (this machine has none); run headless", path.display())]
    Missing { path: PathBuf },
    #[error("{} is not a frame buffer device: {source}", path.display())]
    NotFrameBuffer {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A mode this backend does not draw: palette or grey visuals, planar memory, FOURCC modes,
    /// bit-reversed channels.
    #[error("{} is in a mode Lull cannot draw: {reason}", path.display())]
    UnsupportedMode { path: PathBuf, reason: String },
    #[error("frame buffer pixel layout not supported: {0}")]
    Unsupported(#[from] PresentError),
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// An open, mapped frame buffer device.
#[derive(Debug)]
pub struct FrameBuffer {
    path: PathBuf,
    format: FbFormat,
    map: NonNull<u8>,
    map_len: usize,
    /// Byte offset of the visible screen's top-left pixel within the map (panning offsets).
    visible_offset: usize,
    /// Kept open for the life of the mapping.
    _file: File,
}

// SAFETY: the mapping is owned by this value alone (no copies of the pointer escape), and writing
// to it needs `&mut self`, so moving it to another thread is as safe as moving a `Vec<u8>`.
unsafe impl Send for FrameBuffer {}

impl FrameBuffer {
    /// Opens and maps the frame buffer at `path` (read-write, close-on-exec).
    ///
    /// # Errors
    /// [`FbError::Missing`] if there is no such device (or no driver behind its node),
    /// [`FbError::NotFrameBuffer`] if the file does not answer the frame buffer ioctls,
    /// [`FbError::UnsupportedMode`] / [`FbError::Unsupported`] for layouts that cannot be drawn,
    /// [`FbError::Io`] for any other failure (permissions, `mmap`).
    pub fn open(path: &Path) -> Result<FrameBuffer, FbError> {
        let io_err = |op, source| FbError::Io {
            op,
            path: path.to_path_buf(),
            source,
        };
        // std opens with O_CLOEXEC always.
        let file = match File::options().read(true).write(true).open(path) {
            Ok(f) => f,
            Err(e) if is_missing(&e) => {
                return Err(FbError::Missing {
                    path: path.to_path_buf(),
                })
            }
            Err(e) => return Err(io_err("opening", e)),
        };
        let mut var = FbVarScreeninfo::default();
        // SAFETY: FBIOGET_VSCREENINFO writes one `fb_var_screeninfo`, which `var` is (layout
        // checked above); the fd is open for the whole call.
        let ret = unsafe {
            libc::ioctl(
                file.as_raw_fd(),
                FBIOGET_VSCREENINFO as _,
                &mut var as *mut FbVarScreeninfo,
            )
        };
        if ret < 0 {
            let e = io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::ENOTTY | libc::EINVAL) => FbError::NotFrameBuffer {
                    path: path.to_path_buf(),
                    source: e,
                },
                Some(libc::ENODEV | libc::ENXIO) => FbError::Missing {
                    path: path.to_path_buf(),
                },
                _ => io_err("FBIOGET_VSCREENINFO on", e),
            });
        }
        let mut fix = FbFixScreeninfo::default();
        // SAFETY: as above, for FBIOGET_FSCREENINFO and `fb_fix_screeninfo`.
        let ret = unsafe {
            libc::ioctl(
                file.as_raw_fd(),
                FBIOGET_FSCREENINFO as _,
                &mut fix as *mut FbFixScreeninfo,
            )
        };
        if ret < 0 {
            return Err(io_err("FBIOGET_FSCREENINFO on", io::Error::last_os_error()));
        }
        let (format, visible_offset) = describe(&var, &fix).map_err(|e| match e {
            Describe::Mode(reason) => FbError::UnsupportedMode {
                path: path.to_path_buf(),
                reason,
            },
            Describe::Layout(e) => FbError::Unsupported(e),
        })?;
        FrameBuffer::map(file, path, format, fix.smem_len as usize, visible_offset)
    }

    /// Maps `map_len` bytes of `file` shared; `format` at `visible_offset` must fit inside them.
    fn map(
        file: File,
        path: &Path,
        format: FbFormat,
        map_len: usize,
        visible_offset: usize,
    ) -> Result<FrameBuffer, FbError> {
        let io_err = |source| FbError::Io {
            op: "mapping",
            path: path.to_path_buf(),
            source,
        };
        // `present` relies on this for the bounds of its slice; `describe` has checked it for
        // devices, this keeps the invariant local.
        let needed = visible_offset as u64 + format.buffer_len();
        if needed > map_len as u64 {
            return Err(FbError::Unsupported(PresentError::BufferTooSmall {
                len: map_len as u64,
                needed,
            }));
        }
        // SAFETY: a fresh shared mapping of `map_len` bytes of the file, which the kernel
        // validates; the result is checked before use and unmapped only in Drop.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io_err(io::Error::last_os_error()));
        }
        let map = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| io_err(io::Error::from(io::ErrorKind::InvalidData)))?;
        Ok(FrameBuffer {
            path: path.to_path_buf(),
            format,
            map,
            map_len,
            visible_offset,
            _file: file,
        })
    }

    /// The device's pixel layout.
    #[must_use]
    pub fn format(&self) -> &FbFormat {
        &self.format
    }

    /// The device path it was opened from.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the part of `src` inside `damage` to the screen (see [`present::present`]).
    ///
    /// # Errors
    /// [`FbError::Unsupported`] should the mapping be smaller than the layout (checked at open,
    /// so only if the kernel's description changes).
    pub fn present(&mut self, src: &Pixmap, damage: Rect) -> Result<(), FbError> {
        // SAFETY: `map` points at `map_len` mapped, writable bytes owned by `self` (unmapped only
        // in Drop) and `visible_offset <= map_len` (checked in `map`). Other processes (the
        // console) may also write the device memory; bytes are plain data, so that only affects
        // what is shown, not memory safety of this slice's use.
        let dst = unsafe {
            std::slice::from_raw_parts_mut(
                self.map.as_ptr().add(self.visible_offset),
                self.map_len - self.visible_offset,
            )
        };
        present::present(src, damage, &self.format, dst)?;
        Ok(())
    }
}

impl Drop for FrameBuffer {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `open`, once; no slice into it outlives
        // `&mut self`.
        unsafe {
            libc::munmap(self.map.as_ptr().cast(), self.map_len);
        }
    }
}

/// Whether an open error means there is no device: no node, or a node with no driver behind it.
fn is_missing(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
        || matches!(e.raw_os_error(), Some(libc::ENODEV | libc::ENXIO))
}

#[derive(Debug)]
enum Describe {
    Mode(String),
    Layout(PresentError),
}

/// The layout of the visible screen and its byte offset in the device memory, from the kernel's
/// two descriptions; refuses what [`present::present`] cannot pack.
fn describe(var: &FbVarScreeninfo, fix: &FbFixScreeninfo) -> Result<(FbFormat, usize), Describe> {
    if fix.type_ != FB_TYPE_PACKED_PIXELS {
        return Err(Describe::Mode(format!(
            "memory type {} is not packed pixels",
            fix.type_
        )));
    }
    if fix.visual != FB_VISUAL_TRUECOLOR {
        return Err(Describe::Mode(format!(
            "visual {} is not true colour (palette and direct-colour maps are not loaded)",
            fix.visual
        )));
    }
    if var.grayscale != 0 || var.nonstd != 0 {
        return Err(Describe::Mode(format!(
            "grayscale/FOURCC {} or non-standard format {}",
            var.grayscale, var.nonstd
        )));
    }
    if [var.red, var.green, var.blue, var.transp]
        .iter()
        .any(|c| c.msb_right != 0)
    {
        return Err(Describe::Mode(
            "a channel stores its most significant bit on the right".to_owned(),
        ));
    }
    let channel = |c: FbBitfield| Channel::new(c.offset, c.length);
    let format = FbFormat {
        xres: var.xres,
        yres: var.yres,
        bits_per_pixel: var.bits_per_pixel,
        line_length: fix.line_length,
        red: channel(var.red),
        green: channel(var.green),
        blue: channel(var.blue),
        transp: channel(var.transp),
    };
    format.validate().map_err(Describe::Layout)?;
    let offset = u64::from(var.yoffset) * u64::from(fix.line_length)
        + u64::from(var.xoffset) * u64::from(format.bytes_per_pixel());
    let needed = offset + format.buffer_len();
    if needed > u64::from(fix.smem_len) {
        return Err(Describe::Layout(PresentError::BufferTooSmall {
            len: u64::from(fix.smem_len),
            needed,
        }));
    }
    // Fits because it is at most `smem_len`, a `u32`.
    Ok((format, offset as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xrgb_mode(xres: u32, yres: u32) -> (FbVarScreeninfo, FbFixScreeninfo) {
        let bits = |offset, length| FbBitfield {
            offset,
            length,
            msb_right: 0,
        };
        let var = FbVarScreeninfo {
            xres,
            yres,
            xres_virtual: xres,
            yres_virtual: yres * 2,
            bits_per_pixel: 32,
            red: bits(16, 8),
            green: bits(8, 8),
            blue: bits(0, 8),
            ..FbVarScreeninfo::default()
        };
        let fix = FbFixScreeninfo {
            smem_len: xres * 4 * yres * 2,
            type_: FB_TYPE_PACKED_PIXELS,
            visual: FB_VISUAL_TRUECOLOR,
            line_length: xres * 4,
            ..FbFixScreeninfo::default()
        };
        (var, fix)
    }

    #[test]
    fn struct_sizes_match_the_kernel_header() {
        assert_eq!(std::mem::size_of::<FbBitfield>(), 12);
        assert_eq!(std::mem::size_of::<FbVarScreeninfo>(), 160);
        #[cfg(target_pointer_width = "64")]
        assert_eq!(std::mem::size_of::<FbFixScreeninfo>(), 80);
        // Offsets the ioctl results are read from (`offsetof` in `linux/fb.h`, x86_64).
        #[cfg(target_pointer_width = "64")]
        {
            assert_eq!(std::mem::offset_of!(FbFixScreeninfo, smem_len), 24);
            assert_eq!(std::mem::offset_of!(FbFixScreeninfo, line_length), 48);
        }
        assert_eq!(std::mem::offset_of!(FbVarScreeninfo, red), 32);
        assert_eq!(std::mem::offset_of!(FbVarScreeninfo, nonstd), 80);
    }

    /// The mapping, `present` and `munmap` on a regular file standing in for device memory (this
    /// machine has no frame buffer): pixels land at the panned offset, nothing else changes.
    #[test]
    fn present_writes_through_the_mapping() {
        let scratch = crate::fileout::ScratchDir::new("lull-fbdev-map").unwrap();
        let path = scratch.path().join("fb");
        let (mut var, fix) = xrgb_mode(4, 2);
        var.yoffset = 2;
        let (format, offset) = describe(&var, &fix).unwrap();
        std::fs::write(&path, vec![0xaau8; fix.smem_len as usize]).unwrap();
        let file = File::options().read(true).write(true).open(&path).unwrap();
        assert!(matches!(
            FrameBuffer::map(file.try_clone().unwrap(), &path, format, 40, offset),
            Err(FbError::Unsupported(PresentError::BufferTooSmall { .. }))
        ));
        let mut fb = FrameBuffer::map(file, &path, format, fix.smem_len as usize, offset).unwrap();
        assert_eq!(fb.format(), &FbFormat::xrgb8888(4, 2));
        let screen = Pixmap::filled(4, 2, 0xff12_3456).unwrap();
        fb.present(&screen, Rect::new(3, 1, 5, 5)).unwrap();
        drop(fb);
        let bytes = std::fs::read(&path).unwrap();
        let changed: Vec<usize> = (0..bytes.len()).filter(|&i| bytes[i] != 0xaa).collect();
        // Second page (offset 32), line 1 (16 bytes on), pixel 3 (12 bytes on).
        assert_eq!(changed, [60, 61, 62, 63]);
        assert_eq!(bytes[60..64], [0x56, 0x34, 0x12, 0]);
    }

    #[test]
    fn missing_path_is_missing() {
        let path = Path::new("/nonexistent/lull/fb9");
        match FrameBuffer::open(path) {
            Err(e @ FbError::Missing { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains("/nonexistent/lull/fb9"), "{msg}");
                assert!(msg.contains("run headless"), "{msg}");
            }
            other => panic!("expected Missing, got {other:?}"),
        }
    }

    #[test]
    fn regular_file_is_not_a_frame_buffer() {
        let scratch = crate::fileout::ScratchDir::new("lull-fbdev-test").unwrap();
        let path = scratch.path().join("fb");
        std::fs::write(&path, [0u8; 64]).unwrap();
        let result = FrameBuffer::open(&path);
        match result {
            Err(FbError::NotFrameBuffer { source, .. }) => {
                assert_eq!(source.raw_os_error(), Some(libc::ENOTTY));
            }
            other => panic!("expected NotFrameBuffer, got {other:?}"),
        }
    }

    #[test]
    fn character_device_that_is_not_a_frame_buffer() {
        // /dev/null answers ioctls with ENOTTY, like any non-fb device.
        let path = Path::new("/dev/null");
        if !path.exists() {
            lull_testkit::skip("no /dev/null");
            return;
        }
        assert!(matches!(
            FrameBuffer::open(path),
            Err(FbError::NotFrameBuffer { .. })
        ));
    }

    #[test]
    fn describes_xrgb_and_panning_offset() {
        let (mut var, fix) = xrgb_mode(640, 480);
        let (fmt, off) = describe(&var, &fix).unwrap();
        assert_eq!(fmt, FbFormat::xrgb8888(640, 480));
        assert_eq!(off, 0);
        // A virtual screen 8 pixels wider and twice as high, panned to the second page and 2
        // pixels right: the visible screen ends 24 bytes before the memory does.
        var.xres_virtual = 648;
        let fix = FbFixScreeninfo {
            line_length: 648 * 4,
            smem_len: 648 * 4 * 960,
            ..fix
        };
        var.yoffset = 480;
        var.xoffset = 2;
        let (fmt, off) = describe(&var, &fix).unwrap();
        assert_eq!(fmt.line_length, 648 * 4);
        assert_eq!(off, 480 * 648 * 4 + 8);
        assert_eq!(off as u64 + fmt.buffer_len() + 24, u64::from(fix.smem_len));
        // One line further would run past the device memory.
        var.yoffset = 481;
        assert!(matches!(
            describe(&var, &fix),
            Err(Describe::Layout(PresentError::BufferTooSmall { .. }))
        ));
    }

    #[test]
    fn refuses_modes_it_cannot_draw() {
        let (var, fix) = xrgb_mode(8, 8);
        let palette = FbFixScreeninfo { visual: 3, ..fix };
        assert!(matches!(describe(&var, &palette), Err(Describe::Mode(_))));
        let planar = FbFixScreeninfo { type_: 1, ..fix };
        assert!(matches!(describe(&var, &planar), Err(Describe::Mode(_))));
        let fourcc = FbVarScreeninfo {
            grayscale: 0x3231_5659,
            ..var
        };
        assert!(matches!(describe(&fourcc, &fix), Err(Describe::Mode(_))));
        let reversed = FbVarScreeninfo {
            red: FbBitfield {
                msb_right: 1,
                ..var.red
            },
            ..var
        };
        assert!(matches!(describe(&reversed, &fix), Err(Describe::Mode(_))));
        let depth8 = FbVarScreeninfo {
            bits_per_pixel: 8,
            ..var
        };
        assert!(matches!(
            describe(&depth8, &fix),
            Err(Describe::Layout(PresentError::UnsupportedDepth { .. }))
        ));
    }
}
