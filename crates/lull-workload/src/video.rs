//! The video test of seed 000 chapter 6: frame timing and a deterministic synthetic decoder.
//!
//! The seed plays a 30 s 1080p H.264 clip at 29.97 frames per second. We ship no clip and no
//! codec; [`Decoder`] makes each frame instead: moving colour bars above a moving grey ramp, with
//! the frame number drawn in a corner, plus a residual from real per-block decoder arithmetic
//! (coefficients drawn from [`SplitMix64`], dequantised and put through H.264's 8×8 integer
//! inverse transform). The amount of that arithmetic per block is fixed
//! ([`DECODE_ROUNDS_PER_BLOCK`]), so a frame costs the same CPU time whatever the clock says, of
//! the order of a software H.264 decoder's. Frames are independent: any index decodes on its own.

use crate::rng::SplitMix64;

/// The parameters of a clip.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct VideoParams {
    pub width_px: u32,
    pub height_px: u32,
    /// Frames per 1000 s (29 970 is NTSC's 29.97 fps).
    pub fps_milli: u64,
    pub duration_ms: u64,
}

/// Seed 000's clip: "1920x1080, 29.97 frames per second", 30 s (`experiments/marz/video.toml`).
pub const SEED000: VideoParams = VideoParams {
    width_px: 1920,
    height_px: 1080,
    fps_milli: 29_970,
    duration_ms: 30_000,
};

/// Side of a transform block, px (H.264 High profile's 8×8 transform).
pub const BLOCK_PX: u32 = 8;

/// Passes of the per-block decode work (draw 16 coefficients, dequantise, 8×8 inverse
/// transform, accumulate) for each 8×8 block of a frame; on top comes the per-pixel
/// reconstruction (residual added to the picture with saturation). Calibrated so that one 1080p
/// frame (32 400 blocks) costs 5–10 ms on one core in a release build: 8.4 ms measured on the
/// development machine (AMD EPYC virtual machine, `benches/video_decode.rs`; 6.1 ms with one pass,
/// 10.8 ms with three). That is the order of single-threaded software H.264 decoding of 1080p on
/// a desktop core, ESTIMATE ~3–8 ms per frame.
pub const DECODE_ROUNDS_PER_BLOCK: u32 = 2;

/// Coefficients per pass: the low-frequency end of the zig-zag scan, where a coded block's
/// energy sits.
const COEFFS_PER_ROUND: usize = 16;
/// Dequantisation scale of each scanned coefficient: coarser towards higher frequencies, as
/// with a real quantisation matrix.
const DEQUANT: [i32; COEFFS_PER_ROUND] = [8, 8, 8, 6, 6, 6, 6, 5, 5, 5, 5, 4, 4, 4, 4, 4];
/// The residual is the mean of the passes' transform outputs, shifted down to a film-grain
/// amplitude of a few grey levels so the picture stays recognisable.
const RESIDUAL_SHIFT: u32 = 3;
/// How far the colour bars and the ramp move per frame, px.
const SCROLL_PX_PER_FRAME: u64 = 4;
/// SMPTE 75 % colour bars, ARGB: white, yellow, cyan, green, magenta, red, blue.
const BARS_ARGB: [u32; 7] = [
    0xFFC0_C0C0,
    0xFFC0_C000,
    0xFF00_C0C0,
    0xFF00_C000,
    0xFFC0_00C0,
    0xFFC0_0000,
    0xFF00_00C0,
];
/// The frame-number box: top-left corner and the size of one font pixel, px.
const COUNTER_ORIGIN_PX: u32 = 16;
const COUNTER_SCALE_PX: u32 = 8;
/// Digits 0–9 in a 3×5 font, rows top first, 3 bits per row (left is the high bit).
const DIGITS_3X5: [u16; 10] = [
    0b111_101_101_101_111,
    0b010_110_010_010_111,
    0b111_001_111_100_111,
    0b111_001_111_001_111,
    0b101_101_111_001_001,
    0b111_100_111_001_111,
    0b111_100_111_101_111,
    0b111_001_001_001_001,
    0b111_101_111_101_111,
    0b111_101_111_001_111,
];
/// Zig-zag scan order of an 8×8 block (H.264 frame scan), first `COEFFS_PER_ROUND` positions.
const ZIGZAG: [usize; COEFFS_PER_ROUND] = [0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5];

/// Frames in the clip: those whose whole display interval fits in `duration_ms` (899 for
/// [`SEED000`]: 30 s × 29.97 = 899.1). A rate of 0 has no frames.
#[must_use]
pub fn frame_count(params: &VideoParams) -> u64 {
    let n = u128::from(params.duration_ms) * u128::from(params.fps_milli) / 1_000_000;
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// When frame `index` is due, ns from the clip's start (`index × 10¹² / fps_milli`, exact, so no
/// drift accumulates). A rate of 0 is never due (`u64::MAX`); times past `u64` saturate.
#[must_use]
pub fn frame_due_ns(params: &VideoParams, index: u64) -> u64 {
    if params.fps_milli == 0 {
        return u64::MAX;
    }
    let t = u128::from(index) * 1_000_000_000_000 / u128::from(params.fps_milli);
    u64::try_from(t).unwrap_or(u64::MAX)
}

/// Why a frame could not be decoded.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum VideoError {
    #[error("frame buffer holds {got} pixels; a {width_px}x{height_px} frame needs {expected}")]
    WrongBufferLength {
        width_px: u32,
        height_px: u32,
        expected: u64,
        got: u64,
    },
}

/// The synthetic decoder of one clip.
#[derive(Clone, Debug)]
pub struct Decoder {
    width_px: u32,
    height_px: u32,
    seed: u64,
    /// One row of the background of the frame being decoded (bars, then ramp).
    bars_row: Vec<u32>,
    ramp_row: Vec<u32>,
    /// The residuals of one band of blocks (`BLOCK_PX` rows).
    residual_rows: Vec<i8>,
}

impl Decoder {
    /// A decoder of `width_px × height_px` frames whose residuals are drawn from `seed`.
    #[must_use]
    pub fn new(width_px: u32, height_px: u32, seed: u64) -> Decoder {
        Decoder {
            width_px,
            height_px,
            seed,
            bars_row: vec![0; width_px as usize],
            ramp_row: vec![0; width_px as usize],
            residual_rows: vec![0; width_px as usize * BLOCK_PX as usize],
        }
    }

    #[must_use]
    pub fn width_px(&self) -> u32 {
        self.width_px
    }

    #[must_use]
    pub fn height_px(&self) -> u32 {
        self.height_px
    }

    /// Pixels in a frame: the length `decode_into` wants.
    #[must_use]
    pub fn frame_len(&self) -> u64 {
        u64::from(self.width_px) * u64::from(self.height_px)
    }

    /// Decodes frame `index` into `out`, row-major ARGB (alpha in the top byte, always opaque).
    /// The same index always gives the same pixels, whatever was decoded before.
    ///
    /// # Errors
    /// [`VideoError::WrongBufferLength`] unless `out` holds exactly [`Decoder::frame_len`]
    /// pixels; `out` is then untouched.
    pub fn decode_into(&mut self, index: u64, out: &mut [u32]) -> Result<(), VideoError> {
        let expected = self.frame_len();
        if out.len() as u64 != expected {
            return Err(VideoError::WrongBufferLength {
                width_px: self.width_px,
                height_px: self.height_px,
                expected,
                got: out.len() as u64,
            });
        }
        if expected == 0 {
            return Ok(());
        }
        self.background_rows(index);
        let (w, h) = (self.width_px as usize, self.height_px as usize);
        let bars_h = h * 2 / 3;
        let mut rng = SplitMix64::new(SplitMix64::new(self.seed ^ index).next_u64());
        let block = BLOCK_PX as usize;
        for band in (0..h).step_by(block) {
            // Decode a band of blocks into the residual rows, then add it to the background row
            // by row (contiguous, so the compiler vectorises it).
            let rows = block.min(h - band);
            for bx in (0..w).step_by(block) {
                let residual = decode_block(&mut rng);
                let cols = block.min(w - bx);
                for r in 0..rows {
                    self.residual_rows[r * w + bx..r * w + bx + cols]
                        .copy_from_slice(&residual[r * block..r * block + cols]);
                }
            }
            for r in 0..rows {
                let y = band + r;
                let background = if y < bars_h {
                    &self.bars_row
                } else {
                    &self.ramp_row
                };
                let residual = &self.residual_rows[r * w..(r + 1) * w];
                let row = &mut out[y * w..(y + 1) * w];
                for ((px, &bg), &res) in row.iter_mut().zip(background).zip(residual) {
                    *px = add_grey(bg, res);
                }
            }
        }
        self.draw_counter(index, out);
        Ok(())
    }

    /// The background rows of frame `index`: bars and ramp moved left by the frame's scroll.
    fn background_rows(&mut self, index: u64) {
        let w = u64::from(self.width_px);
        let shift = index.wrapping_mul(SCROLL_PX_PER_FRAME) % w;
        for x in 0..w {
            let xs = (x + shift) % w;
            let bar = (xs * BARS_ARGB.len() as u64 / w) as usize;
            self.bars_row[x as usize] = BARS_ARGB[bar];
            let g = (xs * 255 / w) as u32;
            self.ramp_row[x as usize] = 0xFF00_0000 | g << 16 | g << 8 | g;
        }
    }

    /// The frame number in white on a black box at the top left, clipped to the frame.
    fn draw_counter(&self, index: u64, out: &mut [u32]) {
        let digits = index.to_string();
        let s = COUNTER_SCALE_PX;
        let box_w = digits.len() as u32 * 4 * s + s;
        let box_h = 7 * s;
        let (w, h) = (self.width_px, self.height_px);
        for y in COUNTER_ORIGIN_PX..(COUNTER_ORIGIN_PX + box_h).min(h) {
            for x in COUNTER_ORIGIN_PX..(COUNTER_ORIGIN_PX + box_w).min(w) {
                let (cx, cy) = ((x - COUNTER_ORIGIN_PX) / s, (y - COUNTER_ORIGIN_PX) / s);
                // Font pixel (cx, cy) in a grid with a one-pixel margin and a gap after each digit.
                let lit = (1..=5).contains(&cy) && cx >= 1 && (cx - 1) % 4 < 3 && {
                    let d = digits.as_bytes().get(((cx - 1) / 4) as usize);
                    d.is_some_and(|&d| {
                        let glyph = DIGITS_3X5[usize::from(d - b'0')];
                        let bit = 14 - ((cy - 1) * 3 + (cx - 1) % 4);
                        glyph >> bit & 1 == 1
                    })
                };
                out[y as usize * w as usize + x as usize] =
                    if lit { 0xFFFF_FFFF } else { 0xFF00_0000 };
            }
        }
    }
}

/// One 8×8 block's residual: `DECODE_ROUNDS_PER_BLOCK` passes of coefficient drawing,
/// dequantisation and inverse transform, averaged.
fn decode_block(rng: &mut SplitMix64) -> [i8; 64] {
    let mut acc = [0i32; 64];
    for _ in 0..DECODE_ROUNDS_PER_BLOCK {
        let mut coef = [0i32; 64];
        let levels = [rng.next_u64(), rng.next_u64()];
        for (k, &pos) in ZIGZAG.iter().enumerate() {
            let level = i32::from((levels[k / 8] >> (8 * (k % 8))) as u8 as i8);
            coef[pos] = level * DEQUANT[k];
        }
        inverse_transform_8x8(&mut coef);
        for (a, c) in acc.iter_mut().zip(coef) {
            *a += c;
        }
    }
    acc.map(|a| ((a / DECODE_ROUNDS_PER_BLOCK as i32) >> RESIDUAL_SHIFT).clamp(-128, 127) as i8)
}

/// H.264's 8×8 integer inverse transform (ITU-T H.264 §8.5.13): rows, then columns, then
/// `(x + 32) >> 6`.
fn inverse_transform_8x8(block: &mut [i32; 64]) {
    for row in 0..8 {
        let mut v = [0i32; 8];
        v.copy_from_slice(&block[row * 8..row * 8 + 8]);
        block[row * 8..row * 8 + 8].copy_from_slice(&butterfly_8(v));
    }
    for col in 0..8 {
        let v = std::array::from_fn(|i| block[i * 8 + col]);
        let out = butterfly_8(v);
        for (i, o) in out.into_iter().enumerate() {
            block[i * 8 + col] = (o + 32) >> 6;
        }
    }
}

fn butterfly_8(d: [i32; 8]) -> [i32; 8] {
    let a0 = d[0] + d[4];
    let a4 = d[0] - d[4];
    let a2 = (d[2] >> 1) - d[6];
    let a6 = d[2] + (d[6] >> 1);
    let b0 = a0 + a6;
    let b2 = a4 + a2;
    let b4 = a4 - a2;
    let b6 = a0 - a6;
    let a1 = -d[3] + d[5] - d[7] - (d[7] >> 1);
    let a3 = d[1] + d[7] - d[3] - (d[3] >> 1);
    let a5 = -d[1] + d[7] + d[5] + (d[5] >> 1);
    let a7 = d[3] + d[5] + d[1] + (d[1] >> 1);
    let b1 = a1 + (a7 >> 2);
    let b7 = a7 - (a1 >> 2);
    let b3 = a3 + (a5 >> 2);
    let b5 = (a3 >> 2) - a5;
    [
        b0 + b7,
        b2 + b5,
        b4 + b3,
        b6 + b1,
        b6 - b1,
        b4 - b3,
        b2 - b5,
        b0 - b7,
    ]
}

/// Adds `r` grey levels to each colour channel of an ARGB pixel, saturating (without branches:
/// on flat colour bars the sign of `r` is random, and mispredicted clamps would cost more than
/// the decode work itself).
fn add_grey(argb: u32, r: i8) -> u32 {
    let [_, red, green, blue] = argb.to_be_bytes();
    u32::from_be_bytes([
        0xFF,
        red.saturating_add_signed(r),
        green.saturating_add_signed(r),
        blue.saturating_add_signed(r),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(d: &mut Decoder, index: u64) -> Vec<u32> {
        let mut out = vec![0; d.frame_len() as usize];
        d.decode_into(index, &mut out).unwrap();
        out
    }

    #[test]
    fn seed000_timing() {
        assert_eq!(frame_count(&SEED000), 899);
        assert_eq!(frame_due_ns(&SEED000, 0), 0);
        assert_eq!(frame_due_ns(&SEED000, 1), 33_366_700);
        assert_eq!(frame_due_ns(&SEED000, 29_970), 1_000_000_000_000);
        // Every counted frame's display interval ends within the clip.
        let n = frame_count(&SEED000);
        assert!(frame_due_ns(&SEED000, n) <= 30_000_000_000);
        assert!(frame_due_ns(&SEED000, n + 1) > 30_000_000_000);
        let stopped = VideoParams {
            fps_milli: 0,
            ..SEED000
        };
        assert_eq!(frame_count(&stopped), 0);
        assert_eq!(frame_due_ns(&stopped, 1), u64::MAX);
        assert_eq!(frame_due_ns(&SEED000, u64::MAX), u64::MAX);
    }

    #[test]
    fn same_index_same_pixels_whatever_came_before() {
        let mut a = Decoder::new(200, 120, 9);
        let mut b = Decoder::new(200, 120, 9);
        let f5 = frame(&mut a, 5);
        let _ = frame(&mut b, 77);
        assert_eq!(frame(&mut b, 5), f5);
        assert_eq!(frame(&mut a, 5), f5);
    }

    #[test]
    fn frames_differ_between_indices_and_seeds() {
        let mut d = Decoder::new(200, 120, 9);
        let (f0, f1) = (frame(&mut d, 0), frame(&mut d, 1));
        let changed = f0.iter().zip(&f1).filter(|(a, b)| a != b).count();
        assert!(changed > f0.len() / 2, "{changed}");
        assert_ne!(frame(&mut Decoder::new(200, 120, 10), 0), f0);
    }

    #[test]
    fn picture_shows_bars_and_counter() {
        let mut d = Decoder::new(1920, 1080, 1);
        let f = frame(&mut d, 0);
        assert!(f.iter().all(|p| p >> 24 == 0xFF));
        // Frame 0, left bar: near 75 % white despite the residual.
        let p = f[300 * 1920 + 100];
        for shift in [0, 8, 16] {
            assert!(((p >> shift) & 0xFF).abs_diff(0xC0) < 40, "{p:#x}");
        }
        // The counter box's "0": its margin is black, its top-left font pixel white.
        assert_eq!(f[(16 + 2) * 1920 + 16 + 2], 0xFF00_0000);
        assert_eq!(f[(16 + 8 + 2) * 1920 + 16 + 8 + 2], 0xFFFF_FFFF);
        // The 0 glyph's centre is dark.
        assert_eq!(f[(16 + 24 + 2) * 1920 + 16 + 16 + 2], 0xFF00_0000);
    }

    #[test]
    fn wrong_buffer_is_an_error_and_untouched() {
        let mut d = Decoder::new(64, 32, 1);
        let mut short = vec![7u32; 64 * 32 - 1];
        assert_eq!(
            d.decode_into(0, &mut short),
            Err(VideoError::WrongBufferLength {
                width_px: 64,
                height_px: 32,
                expected: 2048,
                got: 2047
            })
        );
        assert!(short.iter().all(|&p| p == 7));
        assert!(d.decode_into(0, &mut []).is_err());
    }

    #[test]
    fn odd_and_tiny_sizes_decode() {
        for (w, h) in [(0, 0), (1, 1), (13, 7), (3, 100), (100, 3)] {
            let mut d = Decoder::new(w, h, 2);
            let mut out = vec![0; (w * h) as usize];
            d.decode_into(123_456, &mut out).unwrap();
            assert!(out.iter().all(|p| p >> 24 == 0xFF));
        }
    }

    #[test]
    fn inverse_transform_of_a_dc_block_is_flat() {
        let mut b = [0i32; 64];
        b[0] = 64 * 10;
        inverse_transform_8x8(&mut b);
        assert!(b.iter().all(|&v| v == 10), "{b:?}");
    }
}
