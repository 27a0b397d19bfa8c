//! The compositor (seed 000, figure 16): flattens a surface's layers into one pixmap, lower z
//! first, so higher z lies on top.

use serde::Serialize;

use crate::geometry::Rect;
use crate::pixmap::{DrawError, Pixmap};

/// Most layers one surface may have; bounds the work one COMPOSE can ask for.
pub const MAX_LAYERS: usize = 1024;

/// What a layer is painted with.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Fill {
    /// One ARGB colour over the whole layer.
    Solid(u32),
    /// Row-major ARGB pixels, exactly width × height of them.
    Pixels(Vec<u32>),
}

/// A layer: a rectangle in surface coordinates, its z-index and its paint.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Layer {
    pub z: i32,
    pub rect: Rect,
    pub fill: Fill,
}

/// A surface: a canvas of `width × height` and its layers in any order.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Surface {
    pub width: u32,
    pub height: u32,
    pub layers: Vec<Layer>,
}

impl Surface {
    /// A `width × height` surface of one colour: one layer covering it.
    #[must_use]
    pub fn solid(width: u32, height: u32, argb: u32) -> Surface {
        Surface {
            width,
            height,
            layers: vec![Layer {
                z: 0,
                rect: Rect::new(0, 0, width, height),
                fill: Fill::Solid(argb),
            }],
        }
    }
}

/// Why a surface could not be flattened.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error, Serialize)]
pub enum ComposeError {
    #[error("{0} layers is more than the {MAX_LAYERS} allowed")]
    TooManyLayers(usize),
    #[error("layer {layer}: {given} pixels given for a {width}x{height} layer")]
    LayerPixelCount {
        layer: usize,
        width: u32,
        height: u32,
        given: usize,
    },
    #[error(transparent)]
    Canvas(#[from] DrawError),
}

/// Flattens `surface`: a transparent canvas, then each layer by increasing z (equal z in the
/// order given), each pixel of a higher layer replacing the one below, as the seed's compositor
/// does. Parts of a layer outside the canvas are clipped.
///
/// # Errors
/// A [`ComposeError`] for a surface too large, too many layers, or a layer whose pixel count does
/// not match its size.
pub fn compose(surface: &Surface) -> Result<Pixmap, ComposeError> {
    if surface.layers.len() > MAX_LAYERS {
        return Err(ComposeError::TooManyLayers(surface.layers.len()));
    }
    for (i, layer) in surface.layers.iter().enumerate() {
        if let Fill::Pixels(p) = &layer.fill {
            if p.len() as u64 != layer.rect.area() {
                return Err(ComposeError::LayerPixelCount {
                    layer: i,
                    width: layer.rect.width,
                    height: layer.rect.height,
                    given: p.len(),
                });
            }
        }
    }
    let mut flat = Pixmap::new(surface.width, surface.height)?;
    let mut order: Vec<&Layer> = surface.layers.iter().collect();
    order.sort_by_key(|l| l.z);
    for layer in order {
        match &layer.fill {
            Fill::Solid(argb) => flat.fill_rect(layer.rect, *argb),
            Fill::Pixels(pixels) => flat.blit_pixels_clipped(layer.rect, pixels),
        }
    }
    Ok(flat)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_z_keeps_given_order_and_pixels_layers_copy() {
        let s = Surface {
            width: 2,
            height: 1,
            layers: vec![
                Layer {
                    z: 0,
                    rect: Rect::new(0, 0, 2, 1),
                    fill: Fill::Pixels(vec![1, 2]),
                },
                Layer {
                    z: 0,
                    rect: Rect::new(1, 0, 1, 1),
                    fill: Fill::Solid(9),
                },
            ],
        };
        assert_eq!(compose(&s).unwrap().pixels(), &[1, 9]);
    }

    /// `n` one-pixel layers stacked on pixel (0, 0), layer i of colour i + 1, given top first.
    fn stacked(n: usize) -> Surface {
        Surface {
            width: 2,
            height: 1,
            layers: (0..n)
                .rev()
                .map(|i| Layer {
                    z: i as i32,
                    rect: Rect::new(0, 0, 1, 1),
                    fill: Fill::Solid(0xff00_0000 | (i as u32 + 1)),
                })
                .collect(),
        }
    }

    #[test]
    fn exactly_max_layers_compose_and_one_more_is_refused() {
        let flat = compose(&stacked(MAX_LAYERS)).unwrap();
        assert_eq!(flat.get(0, 0), Some(0xff00_0000 | MAX_LAYERS as u32));
        assert_eq!(flat.get(1, 0), Some(0));
        assert_eq!(
            compose(&stacked(MAX_LAYERS + 1)),
            Err(ComposeError::TooManyLayers(MAX_LAYERS + 1))
        );
    }

    #[test]
    fn bad_surfaces_are_refused() {
        let bad = Surface {
            width: 2,
            height: 2,
            layers: vec![Layer {
                z: 0,
                rect: Rect::new(0, 0, 2, 2),
                fill: Fill::Pixels(vec![0; 3]),
            }],
        };
        assert!(matches!(
            compose(&bad),
            Err(ComposeError::LayerPixelCount { layer: 0, .. })
        ));
        let huge = Surface {
            width: u32::MAX,
            height: 2,
            layers: vec![],
        };
        assert!(matches!(
            compose(&huge),
            Err(ComposeError::Canvas(DrawError::TooLarge { .. }))
        ));
    }
}
