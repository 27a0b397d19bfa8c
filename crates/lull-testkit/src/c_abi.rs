//! Reading a C header beside the Rust side of the ABI it declares, so a test can check one
//! against the other: a changed export, parameter, struct field or type without the header
//! (or the reverse) fails the test instead of a C program at run time.
//!
//! It reads just enough C for Lull's own headers: comments, preprocessor lines, function
//! declarations, `typedef`s, and structs whose fields are `TYPE name`, `TYPE a, b` or
//! `TYPE name[LEN]`. The Rust side is read from the sources' text: `pub extern "C" fn` items and
//! `pub struct` bodies.

/// One C ABI: its header and the Rust sources that export it.
#[derive(Clone, Copy, Debug)]
pub struct CAbi {
    /// The header's text (`include_str!`).
    pub header: &'static str,
    /// The Rust sources with the `pub extern "C" fn`s and the `#[repr(C)]` structs.
    pub rust_sources: &'static [&'static str],
    /// The Rust name of each type the ABI passes, and its C spelling in the header.
    pub c_names: &'static [(&'static str, &'static str)],
    /// Opaque handles: C passes them as `T *` whatever the library does through them, Rust as
    /// `*const` where it only reads, so their `const` is not compared.
    pub handles: &'static [&'static str],
}

/// A function of the ABI: name, C return type, C parameter types.
pub type Function = (String, String, Vec<String>);

impl CAbi {
    /// A C type in one spelling: single spaces, `*` apart, `const` dropped before a handle.
    #[must_use]
    pub fn c_type(&self, t: &str) -> String {
        let t = t.replace('*', " * ");
        let mut words: Vec<&str> = t.split_whitespace().collect();
        if words.len() >= 2 && words[0] == "const" && self.handles.contains(&words[1]) {
            words.remove(0);
        }
        words.join(" ")
    }

    /// The C spelling of a Rust type of the ABI (`*const T`, `*mut T`, a name of `c_names`).
    ///
    /// # Panics
    /// A type with no C name in `c_names`: the test's table needs a line for it.
    #[must_use]
    pub fn rust_to_c(&self, t: &str) -> String {
        let t = t.trim();
        if let Some(inner) = t.strip_prefix("*const ") {
            return self.c_type(&format!("const {} *", self.rust_to_c(inner)));
        }
        if let Some(inner) = t.strip_prefix("*mut ") {
            return self.c_type(&format!("{} *", self.rust_to_c(inner)));
        }
        let name = t.rsplit("::").next().unwrap_or(t);
        self.c_names
            .iter()
            .find(|(r, _)| *r == name)
            .unwrap_or_else(|| panic!("{t}: a type of the C ABI with no C name in c_names"))
            .1
            .to_owned()
    }

    /// Every `pub extern "C" fn` of the Rust sources, sorted.
    ///
    /// # Panics
    /// A declaration this reader does not understand.
    #[must_use]
    pub fn rust_exports(&self) -> Vec<Function> {
        let mut out = Vec::new();
        for src in self.rust_sources {
            for (i, _) in src.match_indices("extern \"C\" fn ") {
                let line_start = src[..i].rfind('\n').map_or(0, |n| n + 1);
                if !src[line_start..i].trim_start().starts_with("pub") {
                    continue; // a function-pointer type, not an export
                }
                let rest = &src[i + "extern \"C\" fn ".len()..];
                let open = rest.find('(').expect("a parameter list");
                let name = rest[..open].trim().to_owned();
                let close = closing_paren(rest, open);
                let params = split_top(&rest[open + 1..close])
                    .iter()
                    .map(|p| self.rust_to_c(p.split_once(':').expect("name: type").1))
                    .collect();
                let after = rest[close + 1..].trim_start();
                let ret = match after.strip_prefix("->") {
                    Some(r) => self.rust_to_c(r[..r.find('{').expect("a body")].trim()),
                    None => "void".to_owned(),
                };
                out.push((name, ret, params));
            }
        }
        out.sort();
        out
    }

    /// The header without its comments and preprocessor lines.
    #[must_use]
    pub fn header_code(&self) -> String {
        let mut code = String::new();
        let mut rest = self.header;
        while let Some(i) = rest.find("/*") {
            code.push_str(&rest[..i]);
            let end = rest[i..].find("*/").expect("a closed comment");
            rest = &rest[i + end + 2..];
        }
        code.push_str(rest);
        code.lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Splits a C declaration `TYPE NAME` into its type and name.
    #[must_use]
    pub fn c_decl(&self, d: &str) -> (String, String) {
        let d = d.trim();
        match d.rfind(|c: char| !(c.is_alphanumeric() || c == '_')) {
            Some(at) => (self.c_type(&d[..=at]), d[at + 1..].to_owned()),
            None => (String::new(), d.to_owned()),
        }
    }

    /// Every function the header declares, sorted.
    #[must_use]
    pub fn header_functions(&self) -> Vec<Function> {
        let mut out = Vec::new();
        for stmt in self.header_code().split(';') {
            let stmt = stmt.split_whitespace().collect::<Vec<_>>().join(" ");
            // A statement's tail after the last brace (an enum or struct body ends it).
            let stmt = stmt.rsplit(['{', '}']).next().unwrap_or("").trim();
            if stmt.starts_with("typedef") || !stmt.ends_with(')') {
                continue;
            }
            let Some(open) = stmt.find('(') else { continue };
            let (ret, name) = self.c_decl(&stmt[..open]);
            let inner = &stmt[open + 1..stmt.len() - 1];
            let params = if inner.trim() == "void" {
                Vec::new()
            } else {
                split_top(inner).iter().map(|p| self.c_decl(p).0).collect()
            };
            out.push((name, ret, params));
        }
        out.sort();
        out
    }

    /// The fields of the Rust `pub struct name`: (C type, name) each, an array `[T; LEN]` as
    /// (T, `name[LEN]`).
    ///
    /// # Panics
    /// No such struct in the sources.
    #[must_use]
    pub fn rust_struct(&self, name: &str) -> Vec<(String, String)> {
        let opening = format!("pub struct {name} {{");
        let src = self
            .rust_sources
            .iter()
            .find(|s| s.contains(&opening))
            .unwrap_or_else(|| panic!("struct {name}"));
        let body = &src[src.find(&opening).expect("found above")..];
        let body = &body[body.find('{').expect("a body") + 1..body.find("\n}").expect("its end")];
        body.lines()
            .map(str::trim)
            .filter(|l| l.starts_with("pub "))
            .map(|l| {
                let (n, t) = l["pub ".len()..].split_once(':').expect("name: type");
                let t = t.trim().trim_end_matches(',');
                match t.strip_prefix('[').and_then(|a| a.strip_suffix(']')) {
                    Some(array) => {
                        let (elem, len) = array.split_once(';').expect("[T; LEN]");
                        (
                            self.rust_to_c(elem),
                            format!("{}[{}]", n.trim(), len.trim()),
                        )
                    }
                    None => (self.rust_to_c(t), n.trim().to_owned()),
                }
            })
            .collect()
    }

    /// The fields of the C `struct tag { … }`: (type, name) each, `int32_t a, b;` as two, an
    /// array as (type, `name[LEN]`).
    ///
    /// # Panics
    /// No such struct in the header.
    #[must_use]
    pub fn header_struct(&self, tag: &str) -> Vec<(String, String)> {
        let code = self.header_code();
        let start = code
            .find(&format!("struct {tag} {{"))
            .unwrap_or_else(|| panic!("struct {tag} in the header"));
        let body = &code[start..];
        let body = &body[body.find('{').expect("a body") + 1..body.find('}').expect("its end")];
        let mut fields = Vec::new();
        for decl in body.split(';').map(str::trim).filter(|d| !d.is_empty()) {
            if let Some((decl, len)) = decl.split_once('[') {
                let (ty, name) = self.c_decl(decl);
                fields.push((ty, format!("{name}[{}]", len.trim_end_matches(']').trim())));
                continue;
            }
            let mut names = decl.split(',');
            let (ty, first) = self.c_decl(names.next().unwrap_or(""));
            fields.push((ty.clone(), first));
            fields.extend(names.map(|n| (ty.clone(), n.trim().to_owned())));
        }
        fields
    }
}

/// The index of the parenthesis that closes the one at `open`.
fn closing_paren(s: &str, open: usize) -> usize {
    let mut depth = 0;
    s.char_indices()
        .skip(open)
        .find(|&(_, c)| {
            depth += match c {
                '(' => 1,
                ')' => -1,
                _ => 0,
            };
            depth == 0
        })
        .expect("a closed parenthesis")
        .0
}

/// Splits `s` at the commas outside `<>` and `()` (a function-pointer parameter is one).
fn split_top(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for ch in s.chars() {
        match ch {
            '<' | '(' => depth += 1,
            '>' | ')' if !cur.ends_with('-') => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out.into_iter().map(|p| p.trim().to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABI: CAbi = CAbi {
        header: "/* a comment; with a semicolon */\n#define X 1\ntypedef struct H h_t;\n\
                 struct pt { int32_t x, y; char name[8]; };\n\
                 typedef void (*cb_fn)(int, int);\n\
                 int f(const h_t *h, cb_fn cb, uint32_t n);\nvoid g(void);\n",
        rust_sources: &[
            "pub struct Pt {\n    pub x: i32,\n    pub y: i32,\n    pub name: [c_char; 8],\n}\n\
             pub unsafe extern \"C\" fn f(h: *const H, cb: Cb, n: u32) -> c_int { 0 }\n\
             pub extern \"C\" fn g() {}\n",
        ],
        c_names: &[
            ("i32", "int32_t"),
            ("u32", "uint32_t"),
            ("c_int", "int"),
            ("c_char", "char"),
            ("H", "h_t"),
            ("Cb", "cb_fn"),
        ],
        handles: &["h_t"],
    };

    #[test]
    fn functions_and_structs_read_the_same_from_both_sides() {
        let header = ABI.header_functions();
        assert_eq!(header.len(), 2);
        assert_eq!(header[0].0, "f");
        assert_eq!(header[0].2[0], "h_t *", "a handle's const is not compared");
        assert_eq!(header[1], ("g".to_owned(), "void".to_owned(), Vec::new()));
        let rust = ABI.rust_exports();
        assert_eq!(rust[0].0, "f");
        assert_eq!(rust[0].1, "int");
        assert_eq!(rust[0].2[0], "h_t *");
        assert_eq!(rust[0].2[1], "cb_fn");
        assert_eq!(rust[0].2[2], "uint32_t");
        assert_eq!(rust, header);
        assert_eq!(ABI.rust_struct("Pt"), ABI.header_struct("pt"));
        assert_eq!(
            ABI.header_struct("pt")[2],
            ("char".into(), "name[8]".into())
        );
    }
}
