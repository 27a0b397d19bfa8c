//! Rectangles in pixel coordinates.

use serde::{Deserialize, Serialize};

/// An axis-aligned rectangle: origin `(x, y)` and size. Coordinates are signed so that a layer
/// or window may start left of or above its parent; sizes are unsigned.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default, Serialize, Deserialize)]
pub struct Rect {
    pub x: i32,
    pub y: i32,
    pub width: u32,
    pub height: u32,
}

impl Rect {
    #[must_use]
    pub const fn new(x: i32, y: i32, width: u32, height: u32) -> Rect {
        Rect {
            x,
            y,
            width,
            height,
        }
    }

    /// One past the right edge (widened, so it never overflows).
    #[must_use]
    pub fn right(self) -> i64 {
        i64::from(self.x) + i64::from(self.width)
    }

    /// One past the bottom edge.
    #[must_use]
    pub fn bottom(self) -> i64 {
        i64::from(self.y) + i64::from(self.height)
    }

    #[must_use]
    pub fn is_empty(self) -> bool {
        self.width == 0 || self.height == 0
    }

    /// Pixels covered.
    #[must_use]
    pub fn area(self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }

    /// Whether `other` lies wholly inside `self`.
    #[must_use]
    pub fn contains(self, other: Rect) -> bool {
        other.x >= self.x
            && other.y >= self.y
            && other.right() <= self.right()
            && other.bottom() <= self.bottom()
    }

    /// The smallest rectangle holding both (for accumulating damage).
    #[must_use]
    pub fn union(self, other: Rect) -> Rect {
        if self.is_empty() {
            return other;
        }
        if other.is_empty() {
            return self;
        }
        let x0 = i64::from(self.x).min(i64::from(other.x));
        let y0 = i64::from(self.y).min(i64::from(other.y));
        let x1 = self.right().max(other.right());
        let y1 = self.bottom().max(other.bottom());
        // Corners come from the inputs, so they fit i32; a span of two i32 extents fits u32.
        Rect {
            x: x0 as i32,
            y: y0 as i32,
            width: u32::try_from(x1 - x0).unwrap_or(u32::MAX),
            height: u32::try_from(y1 - y0).unwrap_or(u32::MAX),
        }
    }

    /// The overlap of two rectangles, if any.
    #[must_use]
    pub fn intersect(self, other: Rect) -> Option<Rect> {
        let x0 = i64::from(self.x).max(i64::from(other.x));
        let y0 = i64::from(self.y).max(i64::from(other.y));
        let x1 = self.right().min(other.right());
        let y1 = self.bottom().min(other.bottom());
        if x1 <= x0 || y1 <= y0 {
            return None;
        }
        // The overlap lies within both rectangles, so its corners fit i32 and its size u32.
        Some(Rect {
            x: i32::try_from(x0).ok()?,
            y: i32::try_from(y0).ok()?,
            width: u32::try_from(x1 - x0).ok()?,
            height: u32::try_from(y1 - y0).ok()?,
        })
    }

    /// `self` moved by `(dx, dy)`, or `None` if it would leave the i32 plane.
    #[must_use]
    pub fn offset(self, dx: i32, dy: i32) -> Option<Rect> {
        Some(Rect {
            x: self.x.checked_add(dx)?,
            y: self.y.checked_add(dy)?,
            ..self
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figure_18_squares_overlap_by_five() {
        let a = Rect::new(0, 0, 15, 15);
        let b = Rect::new(10, 10, 15, 15);
        assert_eq!(a.intersect(b), Some(Rect::new(10, 10, 5, 5)));
        assert!(!a.contains(b));
        assert!(Rect::new(0, 0, 25, 25).contains(b));
    }

    #[test]
    fn extremes_do_not_overflow() {
        let big = Rect::new(i32::MAX, i32::MAX, u32::MAX, u32::MAX);
        assert_eq!(big.right(), i64::from(i32::MAX) + i64::from(u32::MAX));
        assert!(Rect::new(0, 0, 10, 10).intersect(big).is_none());
        assert!(big.offset(1, 0).is_none());
        assert!(Rect::new(0, 0, 0, 5).is_empty());
    }

    /// Rectangles that only share an edge, or overlap along one axis only, do not intersect.
    #[test]
    fn touching_rectangles_do_not_intersect() {
        let a = Rect::new(0, 0, 10, 10);
        for b in [
            Rect::new(0, 10, 10, 10),
            Rect::new(10, 0, 10, 10),
            Rect::new(5, 10, 10, 3),
            Rect::new(10, 5, 3, 10),
            Rect::new(5, -3, 2, 3),
            Rect::new(-3, 5, 3, 2),
        ] {
            assert_eq!(a.intersect(b), None, "{b:?}");
            assert_eq!(b.intersect(a), None, "{b:?}");
        }
        assert_eq!(
            a.intersect(Rect::new(9, 9, 10, 10)),
            Some(Rect::new(9, 9, 1, 1))
        );
    }

    #[test]
    fn offset_moves_the_corner_and_keeps_the_size() {
        let r = Rect::new(10, 20, 15, 5);
        assert_eq!(r.offset(-12, 7), Some(Rect::new(-2, 27, 15, 5)));
        assert_eq!(r.offset(0, 0), Some(r));
        assert!(r.offset(0, i32::MAX).is_none());
        assert!(r.offset(i32::MIN, 0).is_some_and(|m| m.x == i32::MIN + 10));
    }
}
