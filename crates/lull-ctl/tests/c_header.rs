//! `include/lull_ctl.h` is checked against the library: its functions and its struct are the
//! exports of `capi` with the same types, and its codes and name length are the library's
//! constants, one for one (a changed export or constant without the header fails here).

use std::ffi::CStr;

use lull_ctl::capi::*;

const HEADER: &str = include_str!("../../../include/lull_ctl.h");
const SOURCE: &str = include_str!("../src/capi.rs");

/// The Rust name of each type the C ABI passes, and its C spelling in `lull_ctl.h`. A new type
/// in an export needs a line here and its declaration in the header.
const C_NAMES: &[(&str, &str)] = &[
    ("u32", "uint32_t"),
    ("u64", "uint64_t"),
    ("i32", "int32_t"),
    ("usize", "size_t"),
    ("c_int", "int"),
    ("c_char", "char"),
    ("LullCtl", "lull_ctl"),
    ("LullCtlThread", "struct lull_ctl_thread"),
];

/// A C type in one spelling: single spaces, `*` apart.
fn c_type(t: &str) -> String {
    t.replace('*', " * ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The C spelling of a Rust type of the ABI (`*const T`, `*mut T`, a name of [`C_NAMES`]).
fn rust_to_c(t: &str) -> String {
    let t = t.trim();
    if let Some(inner) = t.strip_prefix("*const ") {
        return c_type(&format!("const {} *", rust_to_c(inner)));
    }
    if let Some(inner) = t.strip_prefix("*mut ") {
        return c_type(&format!("{} *", rust_to_c(inner)));
    }
    let name = t.rsplit("::").next().unwrap();
    C_NAMES
        .iter()
        .find(|(r, _)| *r == name)
        .unwrap_or_else(|| panic!("{t}: a type of the C ABI with no C name in C_NAMES"))
        .1
        .to_owned()
}

/// The text between the parenthesis at `open` and the one that closes it.
fn parenthesised(s: &str, open: usize) -> (&str, usize) {
    let mut depth = 0;
    let close = s
        .char_indices()
        .skip(open)
        .find(|&(_, c)| {
            depth += match c {
                '(' => 1,
                ')' => -1,
                _ => 0,
            };
            depth == 0
        })
        .unwrap()
        .0;
    (&s[open + 1..close], close)
}

/// Every `pub extern "C" fn` of `capi`: name → (C return type, C parameter types).
fn rust_exports() -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    for (i, _) in SOURCE.match_indices("extern \"C\" fn ") {
        let line_start = SOURCE[..i].rfind('\n').map_or(0, |n| n + 1);
        if !SOURCE[line_start..i].trim_start().starts_with("pub") {
            continue;
        }
        let rest = &SOURCE[i + "extern \"C\" fn ".len()..];
        let open = rest.find('(').unwrap();
        let name = rest[..open].trim().to_owned();
        let (inner, close) = parenthesised(rest, open);
        let params = inner
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|p| rust_to_c(p.split_once(':').unwrap().1))
            .collect();
        let after = rest[close + 1..].trim_start();
        let ret = match after.strip_prefix("->") {
            Some(r) => rust_to_c(r[..r.find('{').unwrap()].trim()),
            None => "void".to_owned(),
        };
        out.push((name, ret, params));
    }
    out.sort();
    out
}

/// The header without its comments and preprocessor lines.
fn header_code() -> String {
    let mut code = String::new();
    let mut rest = HEADER;
    while let Some(i) = rest.find("/*") {
        code.push_str(&rest[..i]);
        rest = &rest[i + rest[i..].find("*/").unwrap() + 2..];
    }
    code.push_str(rest);
    code.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Splits a C declaration `TYPE NAME` into its type and name.
fn c_decl(d: &str) -> (String, String) {
    let d = d.trim();
    let at = d
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap();
    (c_type(&d[..=at]), d[at + 1..].to_owned())
}

/// Every function the header declares: name → (return type, parameter types).
fn header_functions() -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    for stmt in header_code().split(';') {
        let stmt = stmt.split_whitespace().collect::<Vec<_>>().join(" ");
        let stmt = stmt.rsplit(['{', '}']).next().unwrap().trim();
        if stmt.starts_with("typedef") || !stmt.ends_with(')') {
            continue;
        }
        let open = stmt.find('(').unwrap();
        let (ret, name) = c_decl(&stmt[..open]);
        let inner = &stmt[open + 1..stmt.len() - 1];
        let params = if inner.trim() == "void" {
            Vec::new()
        } else {
            inner.split(',').map(|p| c_decl(p).0).collect()
        };
        out.push((name, ret, params));
    }
    out.sort();
    out
}

/// Every exported function is declared in the header with the same parameter and return
/// types, and the header declares nothing the library does not export.
#[test]
fn header_functions_are_the_exports() {
    let rust = rust_exports();
    assert_eq!(rust.len(), 6, "the exports of capi: {rust:?}");
    assert_eq!(header_functions(), rust);
}

/// The handle's typedef names the library's opaque struct.
#[test]
fn header_handle_is_the_librarys() {
    assert!(SOURCE.contains("pub struct LullCtl("));
    let code = header_code();
    let typedefs: Vec<&str> = code
        .split(';')
        .map(str::trim)
        .filter(|s| s.starts_with("typedef"))
        .collect();
    assert_eq!(typedefs, ["typedef struct LullCtl lull_ctl"]);
}

/// `struct lull_ctl_thread` has `LullCtlThread`'s fields, in order, of the same types (an
/// array field as `TYPE name[LEN]` against `[T; LEN]`).
#[test]
fn header_struct_is_the_librarys() {
    let body = &SOURCE[SOURCE.find("pub struct LullCtlThread {").unwrap()..];
    let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
    let rust: Vec<(String, String)> = body
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("pub "))
        .map(|l| {
            let (n, t) = l["pub ".len()..].split_once(':').unwrap();
            let t = t.trim().trim_end_matches(',');
            match t.strip_prefix('[').and_then(|a| a.strip_suffix(']')) {
                Some(array) => {
                    let (elem, len) = array.split_once(';').unwrap();
                    (rust_to_c(elem), format!("{}[{}]", n.trim(), len.trim()))
                }
                None => (rust_to_c(t), n.trim().to_owned()),
            }
        })
        .collect();

    let code = header_code();
    let body = &code[code.find("struct lull_ctl_thread {").expect("the struct")..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    let header: Vec<(String, String)> = body
        .split(';')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| match d.split_once('[') {
            Some((decl, len)) => {
                let (ty, name) = c_decl(decl);
                (ty, format!("{name}[{}]", len.trim_end_matches(']').trim()))
            }
            None => c_decl(d),
        })
        .collect();
    assert_eq!(rust.len(), 9, "{rust:?}");
    assert_eq!(header, rust);
}

/// The header's `LULL_CTL_*` codes and its name length are the library's constants, one for
/// one, and every code has its own description.
#[test]
fn header_constants_are_the_librarys() {
    let codes: &[(&str, i32)] = &[
        ("LULL_CTL_OK", LULL_CTL_OK),
        ("LULL_CTL_ENDED", LULL_CTL_ENDED),
        ("LULL_CTL_ERR_NO_PROCESS", LULL_CTL_ERR_NO_PROCESS),
        ("LULL_CTL_ERR_KERNEL_THREAD", LULL_CTL_ERR_KERNEL_THREAD),
        ("LULL_CTL_ERR_PERMISSION", LULL_CTL_ERR_PERMISSION),
        ("LULL_CTL_ERR_NO_THREAD", LULL_CTL_ERR_NO_THREAD),
        ("LULL_CTL_ERR_BAD_ARGUMENT", LULL_CTL_ERR_BAD_ARGUMENT),
        ("LULL_CTL_ERR_IO", LULL_CTL_ERR_IO),
        ("LULL_CTL_ERR_SHORT_BUFFER", LULL_CTL_ERR_SHORT_BUFFER),
    ];
    // Every `pub const` of capi is in the table above or is the name length.
    let rust_consts = SOURCE.matches("pub const LULL_CTL_").count();
    assert_eq!(rust_consts, codes.len() + 1, "a constant missing here");

    let mut found = Vec::new();
    let mut comm_len = None;
    for line in HEADER.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("#define LULL_CTL_COMM_LEN") {
            comm_len = Some(rest.trim().parse::<usize>().expect("a number"));
        } else if line.starts_with("LULL_CTL_") {
            let (name, value) = line.split_once('=').expect("LULL_CTL_X = N");
            let value: i32 = value
                .trim()
                .trim_end_matches(',')
                .parse()
                .expect("a number");
            found.push((name.trim().to_owned(), value));
        }
    }
    let want: Vec<(String, i32)> = codes.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect();
    assert_eq!(found, want);
    assert_eq!(comm_len, Some(LULL_CTL_COMM_LEN));

    let unknown = description(i32::MIN);
    let mut seen = Vec::new();
    for &(name, code) in codes {
        let s = description(code);
        assert_ne!(s, unknown, "{name} has no description");
        assert!(!seen.contains(&s), "{name} shares its description");
        seen.push(s);
    }
}

fn description(code: i32) -> String {
    // SAFETY: lull_ctl_strerror returns a static NUL-terminated string for any code.
    unsafe { CStr::from_ptr(lull_ctl_strerror(code)) }
        .to_str()
        .unwrap()
        .to_owned()
}
