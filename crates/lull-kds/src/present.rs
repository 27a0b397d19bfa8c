//! Presenting the screen: converting the damaged part of an ARGB [`Pixmap`] into the pixel layout
//! of a Linux frame buffer (`fbdev`).
//!
//! [`FbFormat`] mirrors what `linux/fb.h` tells about a frame buffer's memory: resolution, bits per
//! pixel, bytes per line and one [`Channel`] (the kernel's `fb_bitfield`) per colour. [`present`]
//! writes `damage ∩ pixmap ∩ screen` into a byte buffer laid out that way; the caller owns the
//! buffer (an `mmap` of `/dev/fb0` in `lull-os`, or a `Vec` in tests).
//!
//! Pixels are packed little-endian, as fbdev stores them on little-endian machines (x86, Arm).

use serde::Serialize;

use crate::geometry::Rect;
use crate::pixmap::Pixmap;

/// Bits per pixel this module can pack: the packed true-colour depths of fbdev drivers in use
/// (RGB565, RGB888, XRGB8888 and their channel orders). Palette depths (1, 2, 4, 8) need a
/// colour map and are refused.
pub const SUPPORTED_BPP: [u32; 3] = [16, 24, 32];

/// One colour channel of a packed pixel: `length` bits starting at bit `offset` (0 = least
/// significant). `length == 0` means the pixel has no such channel (e.g. no transparency).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize)]
pub struct Channel {
    pub offset: u32,
    pub length: u32,
}

impl Channel {
    #[must_use]
    pub const fn new(offset: u32, length: u32) -> Channel {
        Channel { offset, length }
    }
}

/// The layout of a frame buffer's visible memory.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize)]
pub struct FbFormat {
    /// Visible width in pixels.
    pub xres: u32,
    /// Visible height in pixels.
    pub yres: u32,
    pub bits_per_pixel: u32,
    /// Bytes from the start of one line to the start of the next (the stride; may exceed
    /// `xres × bytes per pixel`).
    pub line_length: u32,
    pub red: Channel,
    pub green: Channel,
    pub blue: Channel,
    pub transp: Channel,
}

/// Why a frame could not be presented.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error, Serialize)]
pub enum PresentError {
    #[error("a {xres}x{yres} frame buffer has no pixels")]
    ZeroSize { xres: u32, yres: u32 },
    #[error("{bits_per_pixel} bits per pixel is not supported (16, 24 or 32 only)")]
    UnsupportedDepth { bits_per_pixel: u32 },
    #[error(
        "the {channel} channel (bits {offset}..{offset}+{length}) does not fit a \
         {bits_per_pixel}-bit pixel"
    )]
    ChannelOutOfRange {
        channel: &'static str,
        offset: u32,
        length: u32,
        bits_per_pixel: u32,
    },
    #[error("a line of {line_length} bytes is shorter than the {needed} bytes of {xres} pixels")]
    LineTooShort {
        line_length: u32,
        xres: u32,
        needed: u64,
    },
    #[error("a buffer of {len} bytes is smaller than the frame buffer's {needed} bytes")]
    BufferTooSmall { len: u64, needed: u64 },
}

impl FbFormat {
    /// 32-bit XRGB (`DRM_FORMAT_XRGB8888`): blue in byte 0, green 1, red 2, byte 3 unused; lines
    /// packed with no padding. The most common fbdev layout, and the one headless tests use.
    #[must_use]
    pub fn xrgb8888(xres: u32, yres: u32) -> FbFormat {
        FbFormat {
            xres,
            yres,
            bits_per_pixel: 32,
            // Saturates for absurd widths; `validate` then refuses the line as too short.
            line_length: xres.saturating_mul(4),
            red: Channel::new(16, 8),
            green: Channel::new(8, 8),
            blue: Channel::new(0, 8),
            transp: Channel::new(0, 0),
        }
    }

    /// Bytes one pixel occupies.
    #[must_use]
    pub fn bytes_per_pixel(&self) -> u32 {
        self.bits_per_pixel / 8
    }

    /// Bytes `present` needs in its destination: `line_length` for every line but the last, whose
    /// padding beyond `xres` pixels is never written (a panned screen on the last page of device
    /// memory may end before it). At most `line_length × yres`.
    #[must_use]
    pub fn buffer_len(&self) -> u64 {
        u64::from(self.line_length) * u64::from(self.yres.saturating_sub(1))
            + u64::from(self.xres) * u64::from(self.bytes_per_pixel())
    }

    /// The screen as a rectangle at the origin.
    #[must_use]
    pub fn bounds(&self) -> Rect {
        Rect::new(0, 0, self.xres, self.yres)
    }

    /// Checks that this layout can be packed.
    ///
    /// # Errors
    /// [`PresentError::ZeroSize`], [`PresentError::UnsupportedDepth`],
    /// [`PresentError::ChannelOutOfRange`] or [`PresentError::LineTooShort`].
    pub fn validate(&self) -> Result<(), PresentError> {
        if self.xres == 0 || self.yres == 0 {
            return Err(PresentError::ZeroSize {
                xres: self.xres,
                yres: self.yres,
            });
        }
        if !SUPPORTED_BPP.contains(&self.bits_per_pixel) {
            return Err(PresentError::UnsupportedDepth {
                bits_per_pixel: self.bits_per_pixel,
            });
        }
        for (channel, c) in self.channels() {
            if u64::from(c.offset) + u64::from(c.length) > u64::from(self.bits_per_pixel) {
                return Err(PresentError::ChannelOutOfRange {
                    channel,
                    offset: c.offset,
                    length: c.length,
                    bits_per_pixel: self.bits_per_pixel,
                });
            }
        }
        let needed = u64::from(self.xres) * u64::from(self.bytes_per_pixel());
        if u64::from(self.line_length) < needed {
            return Err(PresentError::LineTooShort {
                line_length: self.line_length,
                xres: self.xres,
                needed,
            });
        }
        Ok(())
    }

    fn channels(&self) -> [(&'static str, Channel); 4] {
        [
            ("red", self.red),
            ("green", self.green),
            ("blue", self.blue),
            ("transparency", self.transp),
        ]
    }

    /// 32-bit pixels whose colour bytes sit where ARGB puts them, so a pixel is its ARGB value
    /// (with the alpha byte cleared when the layout has no transparency).
    fn argb_mask(&self) -> Option<u32> {
        let rgb = self.bits_per_pixel == 32
            && self.red == Channel::new(16, 8)
            && self.green == Channel::new(8, 8)
            && self.blue == Channel::new(0, 8);
        if !rgb {
            return None;
        }
        match self.transp {
            Channel { length: 0, .. } => Some(0x00ff_ffff),
            Channel {
                offset: 24,
                length: 8,
            } => Some(0xffff_ffff),
            _ => None,
        }
    }
}

/// Writes the pixels of `damage ∩ src ∩ screen` into `dst`, laid out as `fmt` says; everything
/// else in `dst` is left as it was. Pixmap pixel `(x, y)` lands at screen pixel `(x, y)`.
///
/// # Errors
/// Whatever [`FbFormat::validate`] finds, or [`PresentError::BufferTooSmall`] when `dst` is
/// shorter than [`FbFormat::buffer_len`] (`line_length × yres` less the last line's padding). Both are checked before anything is written.
pub fn present(
    src: &Pixmap,
    damage: Rect,
    fmt: &FbFormat,
    dst: &mut [u8],
) -> Result<(), PresentError> {
    fmt.validate()?;
    let needed = fmt.buffer_len();
    if (dst.len() as u64) < needed {
        return Err(PresentError::BufferTooSmall {
            len: dst.len() as u64,
            needed,
        });
    }
    let Some(vis) = damage
        .intersect(src.bounds())
        .and_then(|r| r.intersect(fmt.bounds()))
    else {
        return Ok(());
    };
    // `vis` lies inside both the pixmap and the screen, and `dst` holds the whole screen, so every
    // index below is in range and non-negative.
    let (x0, y0, w) = (vis.x as usize, vis.y as usize, vis.width as usize);
    let bpp = fmt.bytes_per_pixel() as usize;
    let (stride, src_w) = (fmt.line_length as usize, src.width() as usize);
    let rows = (y0..y0 + vis.height as usize).map(|y| {
        let s = y * src_w + x0;
        let d = y * stride + x0 * bpp;
        (s, d)
    });
    let pixels = src.pixels();
    if let Some(mask) = fmt.argb_mask() {
        for (s, d) in rows {
            let out = &mut dst[d..d + w * 4];
            for (o, &p) in out.chunks_exact_mut(4).zip(&pixels[s..s + w]) {
                o.copy_from_slice(&(p & mask).to_le_bytes());
            }
        }
        return Ok(());
    }
    let packer = Packer::new(fmt);
    for (s, d) in rows {
        let out = &mut dst[d..d + w * bpp];
        let row = &pixels[s..s + w];
        // One loop per width so each has a fixed-size store the compiler can unroll.
        match bpp {
            2 => packer.pack_row::<2>(row, out),
            3 => packer.pack_row::<3>(row, out),
            _ => packer.pack_row::<4>(row, out),
        }
    }
    Ok(())
}

/// Per-channel lookup tables from an 8-bit value to its scaled, shifted bits in the packed pixel;
/// a pixel is the OR of four lookups.
struct Packer {
    tables: [[u32; 256]; 4],
}

impl Packer {
    fn new(fmt: &FbFormat) -> Packer {
        // Order matches `pack`: alpha, red, green, blue (ARGB bytes 3, 2, 1, 0).
        let channels = [fmt.transp, fmt.red, fmt.green, fmt.blue];
        let mut tables = [[0u32; 256]; 4];
        for (table, c) in tables.iter_mut().zip(channels) {
            if c.length == 0 {
                continue;
            }
            let max = (1u64 << c.length) - 1;
            for (v, slot) in table.iter_mut().enumerate() {
                // Rounded rescale of 0..=255 onto 0..=max: 0 stays 0 and 255 becomes full scale.
                let scaled = (v as u64 * max + 127) / 255;
                // The channel fits in 32 bits (validated), so this neither truncates nor
                // overflows.
                *slot = (scaled << c.offset) as u32;
            }
        }
        Packer { tables }
    }

    /// Packs `row` into `out`, `N` bytes per pixel (the low `N` bytes of the packed value).
    fn pack_row<const N: usize>(&self, row: &[u32], out: &mut [u8]) {
        for (o, &p) in out.chunks_exact_mut(N).zip(row) {
            let bytes = self.pack(p).to_le_bytes();
            o.copy_from_slice(&bytes[..N]);
        }
    }

    fn pack(&self, argb: u32) -> u32 {
        let [b, g, r, a] = argb.to_le_bytes();
        self.tables[0][usize::from(a)]
            | self.tables[1][usize::from(r)]
            | self.tables[2][usize::from(g)]
            | self.tables[3][usize::from(b)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RED: u32 = 0xffff_0000;
    const GREEN: u32 = 0xff00_ff00;
    const BLUE: u32 = 0xff00_00ff;
    const UNTOUCHED: u8 = 0xaa;

    fn rgb565(xres: u32, yres: u32) -> FbFormat {
        FbFormat {
            xres,
            yres,
            bits_per_pixel: 16,
            line_length: xres * 2,
            red: Channel::new(11, 5),
            green: Channel::new(5, 6),
            blue: Channel::new(0, 5),
            transp: Channel::default(),
        }
    }

    fn buffer(fmt: &FbFormat) -> Vec<u8> {
        vec![UNTOUCHED; fmt.buffer_len() as usize]
    }

    fn pixel_bytes<'a>(fmt: &FbFormat, buf: &'a [u8], x: u32, y: u32) -> &'a [u8] {
        let bpp = fmt.bytes_per_pixel() as usize;
        let at = y as usize * fmt.line_length as usize + x as usize * bpp;
        &buf[at..at + bpp]
    }

    /// Channels that share bits (a grayscale layout may give red, green and blue the same ones)
    /// combine by OR, as `Packer` documents: any two full channels give the full value.
    #[test]
    fn channels_sharing_bits_are_ored() {
        let all = Channel::new(0, 8);
        let fmt = FbFormat {
            xres: 4,
            yres: 1,
            bits_per_pixel: 16,
            line_length: 8,
            red: all,
            green: all,
            blue: all,
            transp: all,
        };
        let src = Pixmap::from_pixels(
            4,
            1,
            vec![0xffff_0000, 0x00ff_ff00, 0x0000_ffff, 0x0010_2040],
        )
        .unwrap();
        let mut buf = buffer(&fmt);
        present(&src, src.bounds(), &fmt, &mut buf).unwrap();
        let px = |x| u16::from_le_bytes(pixel_bytes(&fmt, &buf, x, 0).try_into().unwrap());
        assert_eq!([px(0), px(1), px(2), px(3)], [0xff, 0xff, 0xff, 0x70]);
    }

    #[test]
    fn rgb565_scales_channels_down() {
        let fmt = rgb565(3, 1);
        let src = Pixmap::from_pixels(3, 1, vec![RED, GREEN, 0xff80_8080]).unwrap();
        let mut buf = buffer(&fmt);
        present(&src, src.bounds(), &fmt, &mut buf).unwrap();
        let px = |x| u16::from_le_bytes(pixel_bytes(&fmt, &buf, x, 0).try_into().unwrap());
        assert_eq!(px(0), 0xf800);
        assert_eq!(px(1), 0x07e0);
        // 0x80 of 255 is 16 of 31 and 32 of 63 after rounding.
        assert_eq!(px(2), (16 << 11) | (32 << 5) | 16);
    }

    #[test]
    fn bgr24_packs_three_bytes() {
        let fmt = FbFormat {
            xres: 2,
            yres: 2,
            bits_per_pixel: 24,
            // Padded stride, as some drivers align lines.
            line_length: 8,
            red: Channel::new(16, 8),
            green: Channel::new(8, 8),
            blue: Channel::new(0, 8),
            transp: Channel::default(),
        };
        let src = Pixmap::from_pixels(2, 2, vec![0xff11_2233, RED, GREEN, BLUE]).unwrap();
        let mut buf = buffer(&fmt);
        present(&src, src.bounds(), &fmt, &mut buf).unwrap();
        assert_eq!(
            buf,
            [
                0x33, 0x22, 0x11, 0, 0, 0xff, UNTOUCHED, UNTOUCHED, //
                0, 0xff, 0, 0xff, 0, 0, // the last line's padding is not needed
            ]
        );
    }

    #[test]
    fn rgb_and_bgr_orders_at_32_bits() {
        let src = Pixmap::from_pixels(1, 1, vec![0x8011_2233]).unwrap();
        let xrgb = FbFormat::xrgb8888(1, 1);
        let mut buf = buffer(&xrgb);
        present(&src, src.bounds(), &xrgb, &mut buf).unwrap();
        assert_eq!(buf, [0x33, 0x22, 0x11, 0], "XRGB: padding byte cleared");

        let argb = FbFormat {
            transp: Channel::new(24, 8),
            ..xrgb
        };
        present(&src, src.bounds(), &argb, &mut buf).unwrap();
        assert_eq!(buf, [0x33, 0x22, 0x11, 0x80], "ARGB: alpha kept");

        let xbgr = FbFormat {
            red: Channel::new(0, 8),
            blue: Channel::new(16, 8),
            ..xrgb
        };
        present(&src, src.bounds(), &xbgr, &mut buf).unwrap();
        assert_eq!(buf, [0x11, 0x22, 0x33, 0], "XBGR: red first in memory");

        let rgbx = FbFormat {
            red: Channel::new(24, 8),
            green: Channel::new(16, 8),
            blue: Channel::new(8, 8),
            ..xrgb
        };
        present(&src, src.bounds(), &rgbx, &mut buf).unwrap();
        assert_eq!(buf, [0, 0x33, 0x22, 0x11]);
    }

    #[test]
    fn fast_path_matches_table_path() {
        let pixels: Vec<u32> = (0..64u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let src = Pixmap::from_pixels(8, 8, pixels).unwrap();
        for transp in [Channel::default(), Channel::new(24, 8)] {
            let fmt = FbFormat {
                transp,
                ..FbFormat::xrgb8888(8, 8)
            };
            assert!(fmt.argb_mask().is_some());
            let mut fast = buffer(&fmt);
            present(&src, src.bounds(), &fmt, &mut fast).unwrap();
            let packer = Packer::new(&fmt);
            let slow: Vec<u8> = src
                .pixels()
                .iter()
                .flat_map(|&p| packer.pack(p).to_le_bytes())
                .collect();
            assert_eq!(fast, slow);
        }
    }

    /// Damage hanging off each edge of the screen (and of a pixmap smaller than the screen) is
    /// clipped; only pixels inside all three are written.
    #[test]
    fn damage_is_clipped_at_every_edge() {
        let fmt = FbFormat::xrgb8888(6, 5);
        let src = Pixmap::filled(5, 4, RED).unwrap();
        let cases = [
            (Rect::new(-3, 1, 5, 2), Rect::new(0, 1, 2, 2)),
            (Rect::new(1, -3, 2, 5), Rect::new(1, 0, 2, 2)),
            (Rect::new(3, 1, 100, 1), Rect::new(3, 1, 2, 1)),
            (Rect::new(1, 2, 1, 100), Rect::new(1, 2, 1, 2)),
            (Rect::new(-9, -9, 100, 100), Rect::new(0, 0, 5, 4)),
            (
                Rect::new(i32::MIN, i32::MIN, u32::MAX, u32::MAX),
                Rect::new(0, 0, 5, 4),
            ),
            (Rect::new(5, 0, 1, 5), Rect::default()),
            (Rect::new(i32::MAX, 0, u32::MAX, 1), Rect::default()),
        ];
        for (damage, expect) in cases {
            let mut buf = buffer(&fmt);
            present(&src, damage, &fmt, &mut buf).unwrap();
            for y in 0..fmt.yres {
                for x in 0..fmt.xres {
                    let inside =
                        !expect.is_empty() && expect.contains(Rect::new(x as i32, y as i32, 1, 1));
                    let want: &[u8] = if inside {
                        &[0, 0, 0xff, 0]
                    } else {
                        &[UNTOUCHED; 4]
                    };
                    assert_eq!(
                        pixel_bytes(&fmt, &buf, x, y),
                        want,
                        "{damage:?} at ({x}, {y})"
                    );
                }
            }
        }
    }

    #[test]
    fn pixels_outside_damage_are_untouched() {
        let fmt = rgb565(4, 4);
        let src = Pixmap::filled(4, 4, BLUE).unwrap();
        let mut buf = buffer(&fmt);
        present(&src, Rect::new(1, 1, 2, 2), &fmt, &mut buf).unwrap();
        let written: Vec<(u32, u32)> = (0..4)
            .flat_map(|y| (0..4).map(move |x| (x, y)))
            .filter(|&(x, y)| pixel_bytes(&fmt, &buf, x, y) != [UNTOUCHED; 2])
            .collect();
        assert_eq!(written, [(1, 1), (2, 1), (1, 2), (2, 2)]);
        assert_eq!(pixel_bytes(&fmt, &buf, 1, 1), 0x001fu16.to_le_bytes());
    }

    #[test]
    fn short_buffer_is_refused_before_writing() {
        let fmt = FbFormat::xrgb8888(4, 4);
        let src = Pixmap::filled(4, 4, RED).unwrap();
        let mut buf = vec![UNTOUCHED; 63];
        assert_eq!(
            present(&src, Rect::new(0, 0, 1, 1), &fmt, &mut buf),
            Err(PresentError::BufferTooSmall {
                len: 63,
                needed: 64
            })
        );
        assert!(buf.iter().all(|&b| b == UNTOUCHED));
        // Even an empty damage checks the buffer.
        assert!(present(&src, Rect::default(), &fmt, &mut buf).is_err());

        // With a padded stride every line but the last needs its padding.
        let padded = FbFormat {
            line_length: 20,
            ..fmt
        };
        assert_eq!(padded.buffer_len(), 3 * 20 + 16);
        let mut buf = vec![UNTOUCHED; 75];
        assert_eq!(
            present(&src, src.bounds(), &padded, &mut buf),
            Err(PresentError::BufferTooSmall {
                len: 75,
                needed: 76
            })
        );
        let mut buf = vec![UNTOUCHED; 76];
        present(&src, src.bounds(), &padded, &mut buf).unwrap();
        assert_eq!(&buf[60..], [0, 0, 0xff, 0].repeat(4));
    }

    #[test]
    fn bad_formats_are_refused() {
        let ok = FbFormat::xrgb8888(4, 4);
        assert_eq!(ok.validate(), Ok(()));
        let bad = [
            (
                FbFormat {
                    bits_per_pixel: 8,
                    ..ok
                },
                PresentError::UnsupportedDepth { bits_per_pixel: 8 },
            ),
            (
                FbFormat { xres: 0, ..ok },
                PresentError::ZeroSize { xres: 0, yres: 4 },
            ),
            (
                FbFormat {
                    transp: Channel::new(28, 8),
                    ..ok
                },
                PresentError::ChannelOutOfRange {
                    channel: "transparency",
                    offset: 28,
                    length: 8,
                    bits_per_pixel: 32,
                },
            ),
            (
                FbFormat {
                    red: Channel::new(u32::MAX, 8),
                    ..ok
                },
                PresentError::ChannelOutOfRange {
                    channel: "red",
                    offset: u32::MAX,
                    length: 8,
                    bits_per_pixel: 32,
                },
            ),
            (
                FbFormat {
                    line_length: 15,
                    ..ok
                },
                PresentError::LineTooShort {
                    line_length: 15,
                    xres: 4,
                    needed: 16,
                },
            ),
            (
                FbFormat::xrgb8888(u32::MAX, 1),
                PresentError::LineTooShort {
                    line_length: u32::MAX,
                    xres: u32::MAX,
                    needed: u64::from(u32::MAX) * 4,
                },
            ),
        ];
        let src = Pixmap::filled(4, 4, RED).unwrap();
        for (fmt, err) in bad {
            assert_eq!(fmt.validate(), Err(err));
            let mut buf = vec![0; 1024];
            assert_eq!(present(&src, src.bounds(), &fmt, &mut buf), Err(err));
        }
    }

    #[test]
    fn wide_channels_scale_up() {
        // 2-10-10-10 ARGB: a 10-bit channel takes 255 to 1023.
        let fmt = FbFormat {
            red: Channel::new(20, 10),
            green: Channel::new(10, 10),
            blue: Channel::new(0, 10),
            transp: Channel::new(30, 2),
            ..FbFormat::xrgb8888(1, 1)
        };
        let src = Pixmap::from_pixels(1, 1, vec![0xffff_0000]).unwrap();
        let mut buf = buffer(&fmt);
        present(&src, src.bounds(), &fmt, &mut buf).unwrap();
        assert_eq!(
            u32::from_le_bytes(buf.try_into().unwrap()),
            (3 << 30) | (1023 << 20)
        );
    }
}
