//! Screen snapshots as PNG: a [`Pixmap`] encoded as 8-bit RGBA, written atomically, and read back
//! for checks.
//!
//! The PNG codec is the `png` crate, named `::png` here because this module has the same name.

use std::io::{self, Cursor};
use std::path::Path;

use ::png::{BitDepth, ColorType, Decoder, Encoder, Transformations};
use lull_kds::pixmap::{DrawError, MAX_PIXELS};
use lull_kds::Pixmap;

/// Why PNG bytes could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum PngError {
    /// PNG has no zero-width or zero-height images.
    #[error("a {width}x{height} pixmap has no pixels; PNG cannot hold it")]
    Empty { width: u32, height: u32 },
    #[error("PNG encoding failed: {0}")]
    Encode(#[source] ::png::EncodingError),
    #[error("not a readable PNG: {0}")]
    Decode(#[source] ::png::DecodingError),
    #[error("a {width}x{height} PNG is larger than the {MAX_PIXELS} pixels a pixmap may hold")]
    TooLarge { width: u32, height: u32 },
    #[error("PNG decoded to {color:?} at {depth:?}, which has no ARGB conversion")]
    UnsupportedOutput { color: ColorType, depth: BitDepth },
    #[error("decoded PNG does not fit a pixmap: {0}")]
    Pixmap(#[source] DrawError),
}

/// `p` as a PNG file: 8-bit RGBA, non-interlaced, alpha kept as is (straight, not premultiplied).
///
/// # Errors
/// [`PngError::Empty`] for a pixmap with no pixels; [`PngError::Encode`] should the encoder fail
/// (it writes to memory, so only on input it refuses).
pub fn encode_png(p: &Pixmap) -> Result<Vec<u8>, PngError> {
    let (width, height) = (p.width(), p.height());
    if width == 0 || height == 0 {
        return Err(PngError::Empty { width, height });
    }
    let rgba: Vec<u8> = p
        .pixels()
        .iter()
        .flat_map(|&argb| {
            let [b, g, r, a] = argb.to_le_bytes();
            [r, g, b, a]
        })
        .collect();
    let mut out = Vec::new();
    let mut encoder = Encoder::new(&mut out, width, height);
    encoder.set_color(ColorType::Rgba);
    encoder.set_depth(BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(PngError::Encode)?;
    writer.write_image_data(&rgba).map_err(PngError::Encode)?;
    writer.finish().map_err(PngError::Encode)?;
    Ok(out)
}

/// Writes `p` as a PNG to `path` with [`lull_os::fileout::write_file_atomically`]: a complete,
/// synced file renamed over `path`, or the old file untouched; a `path` that exists and is not a
/// regular file (a device, a symbolic link) is refused.
///
/// # Errors
/// `InvalidInput` for a path with no file name, one that is not a regular file, or a pixmap PNG
/// cannot hold; otherwise the error of the failing step (the temporary file is removed).
pub fn write_png(path: &Path, p: &Pixmap) -> io::Result<()> {
    let bytes = encode_png(p).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    lull_os::fileout::write_file_atomically(path, &bytes).map_err(|e| {
        let e = e.into_io();
        io::Error::new(e.kind(), format!("writing {}: {e}", path.display()))
    })
}

/// Reads PNG bytes into a pixmap. Any PNG is accepted: palette, grey, low and 16-bit depths and
/// transparency chunks are expanded to 8-bit ARGB; an image without alpha is opaque.
///
/// # Errors
/// [`PngError::Decode`] for bytes that are not a valid PNG (bad signature, checksum, truncation),
/// [`PngError::TooLarge`] beyond [`MAX_PIXELS`] (checked before the pixels are allocated).
pub fn decode_png(bytes: &[u8]) -> Result<Pixmap, PngError> {
    let mut decoder = Decoder::new(Cursor::new(bytes));
    decoder.set_transformations(Transformations::EXPAND | Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(PngError::Decode)?;
    let (width, height) = {
        let info = reader.info();
        (info.width, info.height)
    };
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(PngError::TooLarge { width, height });
    }
    let (color, depth) = reader.output_color_type();
    let channels = match (color, depth) {
        (ColorType::Grayscale, BitDepth::Eight) => 1,
        (ColorType::GrayscaleAlpha, BitDepth::Eight) => 2,
        (ColorType::Rgb, BitDepth::Eight) => 3,
        (ColorType::Rgba, BitDepth::Eight) => 4,
        _ => return Err(PngError::UnsupportedOutput { color, depth }),
    };
    let size = reader
        .output_buffer_size()
        .ok_or(PngError::TooLarge { width, height })?;
    let mut buf = vec![0; size];
    let frame = reader.next_frame(&mut buf).map_err(PngError::Decode)?;
    // The frame's own size: for an animated PNG it may be smaller than the canvas.
    let (width, height) = (frame.width, frame.height);
    let data = buf.get(..frame.buffer_size()).unwrap_or(&buf);
    let mut pixels = Vec::with_capacity(width as usize * height as usize);
    for row in data.chunks_exact(frame.line_size.max(1)) {
        let row_pixels = row.chunks_exact(channels).take(width as usize);
        pixels.extend(row_pixels.map(|c| {
            let [r, g, b, a] = match *c {
                [v] => [v, v, v, 0xff],
                [v, a] => [v, v, v, a],
                [r, g, b] => [r, g, b, 0xff],
                [r, g, b, a, ..] => [r, g, b, a],
                [] => [0; 4],
            };
            u32::from_le_bytes([b, g, r, a])
        }));
    }
    // A short count (malformed frame info) is refused here as `PixelCount`.
    Pixmap::from_pixels(width, height, pixels).map_err(PngError::Pixmap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn sample() -> Pixmap {
        Pixmap::from_pixels(
            3,
            2,
            vec![
                0x0000_0000,
                0xffff_ffff,
                0x00ff_0000,
                0xff00_ff00,
                0x8012_3456,
                0xff00_00ff,
            ],
        )
        .unwrap()
    }

    #[test]
    fn round_trip_keeps_every_channel_and_alpha() {
        let p = sample();
        let bytes = encode_png(&p).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(decode_png(&bytes).unwrap(), p);
    }

    #[test]
    fn grey_and_rgb_inputs_become_opaque_argb() {
        let mut out = Vec::new();
        let mut enc = Encoder::new(&mut out, 2, 1);
        enc.set_color(ColorType::Rgb);
        enc.set_depth(BitDepth::Eight);
        let mut w = enc.write_header().unwrap();
        w.write_image_data(&[1, 2, 3, 4, 5, 6]).unwrap();
        w.finish().unwrap();
        let p = decode_png(&out).unwrap();
        assert_eq!(p.pixels(), [0xff01_0203, 0xff04_0506]);

        let mut out = Vec::new();
        let mut enc = Encoder::new(&mut out, 1, 1);
        enc.set_color(ColorType::Grayscale);
        enc.set_depth(BitDepth::Sixteen);
        let mut w = enc.write_header().unwrap();
        w.write_image_data(&[0x7f, 0xff]).unwrap();
        w.finish().unwrap();
        assert_eq!(decode_png(&out).unwrap().pixels(), [0xff7f_7f7f]);
    }

    #[test]
    fn corrupt_bytes_give_typed_errors() {
        let good = encode_png(&sample()).unwrap();
        assert!(matches!(decode_png(b"not a png"), Err(PngError::Decode(_))));
        assert!(matches!(decode_png(&[]), Err(PngError::Decode(_))));
        assert!(matches!(
            decode_png(&good[..good.len() / 2]),
            Err(PngError::Decode(_))
        ));
        // Flip a bit inside the IHDR chunk: its CRC no longer matches.
        let mut bad = good.clone();
        bad[17] ^= 1;
        assert!(matches!(decode_png(&bad), Err(PngError::Decode(_))));
    }

    /// CRC-32 as PNG chunks use it (ISO 3309), bit by bit.
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &byte in bytes {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn oversized_header_is_refused_before_allocating() {
        // A valid PNG whose header is rewritten (with a correct checksum) to claim
        // 65536 × 65536 pixels: refused from the header alone.
        let mut bytes = encode_png(&sample()).unwrap();
        bytes[16..20].copy_from_slice(&65_536u32.to_be_bytes());
        bytes[20..24].copy_from_slice(&65_536u32.to_be_bytes());
        let crc = crc32(&bytes[12..29]);
        bytes[29..33].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            decode_png(&bytes),
            Err(PngError::TooLarge {
                width: 65_536,
                height: 65_536
            })
        ));
    }

    #[test]
    fn empty_pixmap_is_refused() {
        let p = Pixmap::new(0, 4).unwrap();
        assert!(matches!(
            encode_png(&p),
            Err(PngError::Empty {
                width: 0,
                height: 4
            })
        ));
        let scratch = lull_os::fileout::ScratchDir::new("lull-png-empty").unwrap();
        let dir = scratch.path();
        let err = write_png(&dir.join("x.png"), &p).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(fs::read_dir(dir).unwrap().count(), 0, "nothing left behind");
    }

    #[test]
    fn write_png_replaces_whole_file_and_leaves_no_temporary() {
        let scratch = lull_os::fileout::ScratchDir::new("lull-png-write").unwrap();
        let dir = scratch.path();
        let path = dir.join("screen.png");
        fs::write(&path, b"old").unwrap();
        write_png(&path, &sample()).unwrap();
        assert_eq!(decode_png(&fs::read(&path).unwrap()).unwrap(), sample());
        let names: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["screen.png"]);

        // A directory that does not exist: an error, and nothing created.
        let err = write_png(&dir.join("missing/screen.png"), &sample()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(err.to_string().contains("missing/screen.png"));
    }
}
