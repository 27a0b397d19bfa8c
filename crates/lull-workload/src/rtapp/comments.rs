//! Comments in rt-app files. rt-app reads its JSON with json-c's default (non-strict) tokener,
//! which accepts `/* … */` and `// …` comments outside strings; the shipped workloads use them
//! to say what they probe. They are blanked to spaces (newlines kept) so that JSON error
//! positions still point into the original text.

/// Why the comments of a file cannot be removed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct UnterminatedComment {
    /// 1-based line where the `/*` opens.
    pub line: usize,
}

/// `text` with every comment outside a string replaced by spaces.
///
/// # Errors
/// [`UnterminatedComment`] for a `/*` without its `*/`.
pub fn blank(text: &str) -> Result<String, UnterminatedComment> {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let mut line = 1;
    let mut in_string = false;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' {
            line += 1;
        }
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match (b, bytes.get(i + 1)) {
            (b'"', _) => in_string = true,
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
                continue;
            }
            (b'/', Some(b'*')) => {
                let open_line = line;
                out[i] = b' ';
                out[i + 1] = b' ';
                i += 2;
                loop {
                    match (bytes.get(i), bytes.get(i + 1)) {
                        (Some(b'*'), Some(b'/')) => {
                            out[i] = b' ';
                            out[i + 1] = b' ';
                            i += 2;
                            break;
                        }
                        (Some(&c), _) => {
                            if c == b'\n' {
                                line += 1;
                            } else {
                                out[i] = b' ';
                            }
                            i += 1;
                        }
                        (None, _) => return Err(UnterminatedComment { line: open_line }),
                    }
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    // Only ASCII comment bytes became spaces; whole UTF-8 sequences inside comments became
    // spaces byte by byte, so the result is still UTF-8.
    Ok(String::from_utf8(out).expect("blanking comments keeps UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_become_spaces_and_strings_keep_their_slashes() {
        let text = "// head\n{ \"a\": \"x // y /* z */\", /* b\nc */ \"d\": 1 }";
        let out = blank(text).unwrap();
        assert_eq!(out.len(), text.len());
        assert_eq!(out.lines().count(), text.lines().count());
        assert!(out.contains("\"x // y /* z */\""));
        assert!(!out.contains("head"));
        assert!(!out.contains('b'));
        assert_eq!(out.trim_start().chars().next(), Some('{'));
    }

    #[test]
    fn an_escaped_quote_does_not_end_a_string() {
        let text = r#"{ "a": "q\" // still string" }"#;
        assert_eq!(blank(text).unwrap(), text);
    }

    #[test]
    fn an_unterminated_block_comment_names_its_line() {
        assert_eq!(
            blank("{\n\n /* open").unwrap_err(),
            UnterminatedComment { line: 3 }
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_keeps_length(s in ".{0,200}") {
            if let Ok(out) = blank(&s) {
                proptest::prop_assert_eq!(out.len(), s.len());
            }
        }
    }
}
