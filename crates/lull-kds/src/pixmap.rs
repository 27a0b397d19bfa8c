//! Pixel grids: the compositor's flattened surface, a window's buffer and the screen's frame
//! buffer are all [`Pixmap`]s of 32-bit ARGB pixels (alpha in the top byte).

use serde::Serialize;

use crate::geometry::Rect;

/// Largest pixmap accepted anywhere: 8192 × 8192 (256 MiB of ARGB). Bounds what a client can make
/// the server allocate; a 4K screen is 8.3 M pixels.
pub const MAX_PIXELS: u64 = 8192 * 8192;

/// A width × height grid of ARGB pixels, row-major.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Pixmap {
    width: u32,
    height: u32,
    pixels: Vec<u32>,
}

/// Why a pixmap could not be made or drawn to.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error, Serialize)]
pub enum DrawError {
    #[error("{width}x{height} pixels is more than the {MAX_PIXELS} allowed")]
    TooLarge { width: u32, height: u32 },
    #[error("{given} pixels given for a {width}x{height} pixmap")]
    PixelCount {
        width: u32,
        height: u32,
        given: usize,
    },
    /// Figure 17's check: a draw may not write one pixel outside the window.
    #[error("drawing {src_width}x{src_height} at ({x}, {y}) leaves the {width}x{height} window")]
    OutsideWindow {
        x: i32,
        y: i32,
        src_width: u32,
        src_height: u32,
        width: u32,
        height: u32,
    },
}

impl Pixmap {
    /// A pixmap of transparent black.
    ///
    /// # Errors
    /// [`DrawError::TooLarge`] beyond [`MAX_PIXELS`].
    pub fn new(width: u32, height: u32) -> Result<Pixmap, DrawError> {
        Pixmap::filled(width, height, 0)
    }

    /// A pixmap of one colour.
    ///
    /// # Errors
    /// [`DrawError::TooLarge`] beyond [`MAX_PIXELS`].
    pub fn filled(width: u32, height: u32, argb: u32) -> Result<Pixmap, DrawError> {
        let n = checked_len(width, height)?;
        Ok(Pixmap {
            width,
            height,
            pixels: vec![argb; n],
        })
    }

    /// A pixmap from row-major pixels.
    ///
    /// # Errors
    /// [`DrawError::TooLarge`] or [`DrawError::PixelCount`].
    pub fn from_pixels(width: u32, height: u32, pixels: Vec<u32>) -> Result<Pixmap, DrawError> {
        if checked_len(width, height)? != pixels.len() {
            return Err(DrawError::PixelCount {
                width,
                height,
                given: pixels.len(),
            });
        }
        Ok(Pixmap {
            width,
            height,
            pixels,
        })
    }

    #[must_use]
    pub fn width(&self) -> u32 {
        self.width
    }

    #[must_use]
    pub fn height(&self) -> u32 {
        self.height
    }

    #[must_use]
    pub fn bounds(&self) -> Rect {
        Rect::new(0, 0, self.width, self.height)
    }

    #[must_use]
    pub fn pixels(&self) -> &[u32] {
        &self.pixels
    }

    /// The pixel at `(x, y)`, if inside.
    #[must_use]
    pub fn get(&self, x: u32, y: u32) -> Option<u32> {
        (x < self.width && y < self.height)
            .then(|| self.pixels[y as usize * self.width as usize + x as usize])
    }

    /// The seed's `kds_draw_2d` (figure 17): copies `src` with its top-left at `(x, y)`. If any
    /// pixel would land outside this pixmap nothing is written and the draw is refused.
    ///
    /// # Errors
    /// [`DrawError::OutsideWindow`].
    pub fn draw(&mut self, x: i32, y: i32, src: &Pixmap) -> Result<(), DrawError> {
        let target = Rect::new(x, y, src.width, src.height);
        if !self.bounds().contains(target) {
            return Err(DrawError::OutsideWindow {
                x,
                y,
                src_width: src.width,
                src_height: src.height,
                width: self.width,
                height: self.height,
            });
        }
        self.blit_clipped(x, y, src);
        Ok(())
    }

    /// Copies the part of `src` that falls inside this pixmap when placed at `(x, y)`; the rest is
    /// clipped. Used to stack windows on the screen, where a window may hang off an edge.
    pub fn blit_clipped(&mut self, x: i32, y: i32, src: &Pixmap) {
        self.blit_pixels_clipped(Rect::new(x, y, src.width, src.height), &src.pixels);
    }

    /// Copies the part of `src`, placed at `(x, y)`, that falls inside `clip` (and this pixmap):
    /// restacking one damaged area of the screen touches only that area.
    pub fn blit_within(&mut self, clip: Rect, x: i32, y: i32, src: &Pixmap) {
        if let Some(clip) = self.bounds().intersect(clip) {
            self.blit_pixels_in(clip, Rect::new(x, y, src.width, src.height), &src.pixels);
        }
    }

    /// [`Pixmap::blit_clipped`] from raw row-major pixels covering `placed`; the caller ensures
    /// `pixels.len() == placed.area()`.
    pub(crate) fn blit_pixels_clipped(&mut self, placed: Rect, pixels: &[u32]) {
        self.blit_pixels_in(self.bounds(), placed, pixels);
    }

    /// Copies the pixels of `placed` that fall in `clip`, which lies inside this pixmap.
    fn blit_pixels_in(&mut self, clip: Rect, placed: Rect, pixels: &[u32]) {
        debug_assert_eq!(pixels.len() as u64, placed.area());
        let Some(vis) = clip.intersect(placed) else {
            return;
        };
        let (w, dst_w, src_w) = (
            vis.width as usize,
            self.width as usize,
            placed.width as usize,
        );
        // Inside both by construction, so these are non-negative.
        let sx = (i64::from(vis.x) - i64::from(placed.x)) as usize;
        let sy = (i64::from(vis.y) - i64::from(placed.y)) as usize;
        for row in 0..vis.height as usize {
            let d = (vis.y as usize + row) * dst_w + vis.x as usize;
            let s = (sy + row) * src_w + sx;
            self.pixels[d..d + w].copy_from_slice(&pixels[s..s + w]);
        }
    }

    /// Fills the part of `rect` inside this pixmap with `argb`.
    pub fn fill_rect(&mut self, rect: Rect, argb: u32) {
        let Some(vis) = self.bounds().intersect(rect) else {
            return;
        };
        let (w, dst_w) = (vis.width as usize, self.width as usize);
        for row in 0..vis.height as usize {
            let d = (vis.y as usize + row) * dst_w + vis.x as usize;
            self.pixels[d..d + w].fill(argb);
        }
    }
}

fn checked_len(width: u32, height: u32) -> Result<usize, DrawError> {
    let n = u64::from(width) * u64::from(height);
    if n > MAX_PIXELS {
        return Err(DrawError::TooLarge { width, height });
    }
    usize::try_from(n).map_err(|_| DrawError::TooLarge { width, height })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draw_inside_copies_and_outside_refuses_whole() {
        let mut win = Pixmap::new(10, 10).unwrap();
        let src = Pixmap::filled(3, 2, 0xff00_00ff).unwrap();
        win.draw(7, 8, &src).unwrap();
        assert_eq!(win.get(9, 9), Some(0xff00_00ff));
        assert_eq!(win.get(6, 8), Some(0));
        let before = win.clone();
        for (x, y) in [(8, 0), (0, 9), (-1, 0), (0, -1), (i32::MAX, 0)] {
            assert!(matches!(
                win.draw(x, y, &src),
                Err(DrawError::OutsideWindow { .. })
            ));
        }
        assert_eq!(win, before, "a refused draw writes nothing");
    }

    #[test]
    fn blit_clips_at_every_edge() {
        let mut screen = Pixmap::new(4, 4).unwrap();
        let src = Pixmap::filled(3, 3, 7).unwrap();
        screen.blit_clipped(-2, 2, &src);
        let lit: Vec<_> = (0..4)
            .flat_map(|y| (0..4).map(move |x| (x, y)))
            .filter(|&(x, y)| screen.get(x, y) == Some(7))
            .collect();
        assert_eq!(lit, [(0, 2), (0, 3)]);
        screen.blit_clipped(100, 100, &src);
    }

    /// Row-major: (x, y) is pixel y × width + x; a coordinate at the width or height is outside.
    #[test]
    fn get_reads_row_major_and_nothing_past_an_edge() {
        let p = Pixmap::from_pixels(3, 2, vec![1, 2, 3, 4, 5, 6]).unwrap();
        assert_eq!(
            (p.get(0, 0), p.get(2, 0), p.get(0, 1), p.get(2, 1)),
            (Some(1), Some(3), Some(4), Some(6))
        );
        for (x, y) in [
            (3, 0),
            (0, 2),
            (3, 1),
            (2, 2),
            (3, 2),
            (u32::MAX, 0),
            (0, u32::MAX),
        ] {
            assert_eq!(p.get(x, y), None, "({x}, {y})");
        }
    }

    #[test]
    fn sizes_are_checked() {
        assert!(matches!(
            Pixmap::new(8193, 8192),
            Err(DrawError::TooLarge { .. })
        ));
        assert!(matches!(
            Pixmap::from_pixels(2, 2, vec![0; 3]),
            Err(DrawError::PixelCount { .. })
        ));
        assert_eq!(Pixmap::new(0, 5).unwrap().pixels().len(), 0);
    }

    /// The largest pixmap is 8192 × 8192 pixels in any shape: exactly that many pass the size
    /// check (and meet the pixel count), one more row does not (checked without allocating).
    #[test]
    fn the_size_limit_is_exactly_8192_squared() {
        assert_eq!(checked_len(8192, 8192), Ok(67_108_864));
        assert_eq!(checked_len(1, 8192 * 8192), Ok(67_108_864));
        for (w, h) in [
            (8192, 8193),
            (8193, 8192),
            (2, 8192 * 4096 + 1),
            (u32::MAX, u32::MAX),
        ] {
            assert!(
                matches!(checked_len(w, h), Err(DrawError::TooLarge { width, height }) if (width, height) == (w, h)),
                "{w} x {h}"
            );
        }
        assert!(matches!(
            Pixmap::from_pixels(8192, 8192, Vec::new()),
            Err(DrawError::PixelCount { .. })
        ));
    }
}
