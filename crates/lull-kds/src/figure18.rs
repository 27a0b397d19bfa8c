//! Seed 000's figure 18 as data: a 25 × 25 window whose surface has two 15 × 15 squares, layer 1
//! (z 0, red) at (0, 0) and layer 2 (z 1, green) at (10, 10), so layer 2 hides a 5 × 5 corner of
//! layer 1. The Rust example, the tests and `apps/kds-c/figure18.c` draw exactly this.

use crate::{Fill, Layer, Rect, Surface};

/// The window's and the surface's side.
pub const WINDOW_PX: u32 = 25;
/// Each square's side.
pub const SQUARE_PX: u32 = 15;
/// Where layer 2 starts, on both axes.
pub const OFFSET_PX: i32 = 10;
/// Layer 1's colour.
pub const RED_ARGB: u32 = 0xffff_0000;
/// Layer 2's colour.
pub const GREEN_ARGB: u32 = 0xff00_ff00;

/// The two layers, bottom first.
#[must_use]
pub fn layers() -> Vec<Layer> {
    vec![
        Layer {
            z: 0,
            rect: Rect::new(0, 0, SQUARE_PX, SQUARE_PX),
            fill: Fill::Solid(RED_ARGB),
        },
        Layer {
            z: 1,
            rect: Rect::new(OFFSET_PX, OFFSET_PX, SQUARE_PX, SQUARE_PX),
            fill: Fill::Solid(GREEN_ARGB),
        },
    ]
}

/// The window-sized surface holding [`layers`].
#[must_use]
pub fn surface() -> Surface {
    Surface {
        width: WINDOW_PX,
        height: WINDOW_PX,
        layers: layers(),
    }
}

/// The flattened surface's pixel at window coordinates (`x`, `y`): green where layer 2 lies, red
/// where only layer 1 does, transparent (0) elsewhere in the window.
#[must_use]
pub fn pixel(x: u32, y: u32) -> u32 {
    let off = OFFSET_PX as u32;
    if (off..off + SQUARE_PX).contains(&x) && (off..off + SQUARE_PX).contains(&y) {
        GREEN_ARGB
    } else if x < SQUARE_PX && y < SQUARE_PX {
        RED_ARGB
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compositor_flattens_it_to_the_pixel_oracle() {
        let flat = crate::compose(&surface()).unwrap();
        for y in 0..WINDOW_PX {
            for x in 0..WINDOW_PX {
                assert_eq!(flat.get(x, y), Some(pixel(x, y)), "({x}, {y})");
            }
        }
        // The overlap is green, layer 1's own corner red, the far corners transparent.
        assert_eq!(pixel(12, 12), GREEN_ARGB);
        assert_eq!(pixel(0, 0), RED_ARGB);
        assert_eq!(pixel(24, 0), 0);
        assert_eq!(pixel(0, 24), 0);
    }

    /// Figure 18 with its layers given top first: flattening goes by z, not by list order.
    #[test]
    fn figure_18_flattens_by_z_whatever_the_order() {
        let mut s = surface();
        s.layers.reverse();
        let flat = crate::compose(&s).unwrap();
        for y in 0..s.height {
            for x in 0..s.width {
                assert_eq!(flat.get(x, y), Some(pixel(x, y)), "pixel ({x}, {y})");
            }
        }
    }
}
