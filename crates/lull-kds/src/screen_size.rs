//! A screen or frame size given as text, `WIDTHxHEIGHT`: the one parser behind `lulld --screen`,
//! `lull kds --screen` and `lull-app --video-size`.

/// Largest side accepted: the side of the largest pixmap ([`crate::pixmap::MAX_PIXELS`] is
/// 8192 × 8192).
pub const MAX_SIDE_PX: u32 = 8192;

/// Why a `WIDTHxHEIGHT` text was refused; each message quotes the text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScreenSizeError {
    #[error("{0:?}: expected WIDTHxHEIGHT, e.g. 1920x1080")]
    NoSeparator(String),
    #[error("{0:?}: each side must be a whole number from 1 to {MAX_SIDE_PX}")]
    BadSide(String),
}

/// `WIDTHxHEIGHT` (or `X`), each side 1 to [`MAX_SIDE_PX`], as (width, height).
///
/// # Errors
/// [`ScreenSizeError`] naming the expected form.
pub fn parse_screen_size(s: &str) -> Result<(u32, u32), ScreenSizeError> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| ScreenSizeError::NoSeparator(s.to_owned()))?;
    let side = |v: &str| {
        v.parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_SIDE_PX).contains(n))
            .ok_or_else(|| ScreenSizeError::BadSide(s.to_owned()))
    };
    Ok((side(w)?, side(h)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_bad_ones_are_named() {
        assert_eq!(parse_screen_size("640x480"), Ok((640, 480)));
        assert_eq!(parse_screen_size("8192X1"), Ok((8192, 1)));
        assert_eq!(
            parse_screen_size("640").unwrap_err().to_string(),
            "\"640\": expected WIDTHxHEIGHT, e.g. 1920x1080"
        );
        for bad in ["0x480", "9000x10", "axb", "640x", "-1x5"] {
            assert_eq!(
                parse_screen_size(bad),
                Err(ScreenSizeError::BadSide(bad.to_owned())),
                "{bad}"
            );
        }
        assert!(parse_screen_size("9000x10")
            .unwrap_err()
            .to_string()
            .ends_with("from 1 to 8192"));
    }
}
