//! `include/lull.h` is checked against the library: its functions and structs are the exports
//! of `capi`, `capi_kds` and `capi_producer` with the same types (a changed export without the
//! header fails here), and it repeats the event kinds' wire numbers, the return codes and the burst bound
//! for C; they must be the library's: one constant per `lull_model::EventKind`, and the `ESM_*`
//! constants of `capi` and `capi_producer`.

use lull_model::EventKind;

#[test]
fn header_kind_numbers_are_the_models() {
    let header = include_str!("../../../include/lull.h");
    let mut found = 0;
    for line in header.lines() {
        let Some(rest) = line.trim().strip_prefix("ESM_KIND_") else {
            continue;
        };
        let (name, value) = rest.split_once('=').expect("ESM_KIND_X = N");
        let number: u16 = value
            .trim()
            .trim_end_matches(',')
            .parse()
            .expect("a number");
        let kind = EventKind::from_u16(number).expect("a kind the model has");
        assert_eq!(
            name.trim(),
            kind.name().to_uppercase(),
            "ESM_KIND_{name} = {number}"
        );
        found += 1;
    }
    assert_eq!(
        found,
        EventKind::COUNT,
        "one ESM_KIND_ constant per EventKind"
    );
}

/// The header's `ESM_*` return codes and limits are the library's constants, one for one.
#[test]
fn header_codes_are_the_librarys() {
    use lull::capi::*;
    use lull::capi_producer::{ESM_ERR_BAD_ARG, ESM_ERR_BAD_EVENT, ESM_MAX_BURST};
    let rust: &[(&str, i64)] = &[
        ("ESM_OK", ESM_OK.into()),
        ("ESM_OVERFLOW", ESM_OVERFLOW.into()),
        ("ESM_ERR_CONNECT", ESM_ERR_CONNECT.into()),
        ("ESM_ERR_DAEMON_GONE", ESM_ERR_DAEMON_GONE.into()),
        ("ESM_ERR_PROTOCOL", ESM_ERR_PROTOCOL.into()),
        ("ESM_ERR_BAD_KIND", ESM_ERR_BAD_KIND.into()),
        ("ESM_ERR_IO", ESM_ERR_IO.into()),
        ("ESM_ERR_BAD_PATH", ESM_ERR_BAD_PATH.into()),
        ("ESM_ERR_REENTRANT", ESM_ERR_REENTRANT.into()),
        ("ESM_ERR_BAD_EVENT", ESM_ERR_BAD_EVENT.into()),
        ("ESM_ERR_BAD_ARG", ESM_ERR_BAD_ARG.into()),
        ("ESM_ERR_PERMISSION", ESM_ERR_PERMISSION.into()),
        ("ESM_MAX_BURST", ESM_MAX_BURST.into()),
    ];
    let header = include_str!("../../../include/lull.h");
    let mut found = Vec::new();
    for line in header.lines() {
        let line = line.trim();
        if !line.starts_with("ESM_") || line.starts_with("ESM_KIND_") {
            continue;
        }
        let Some((name, rest)) = line.split_once('=') else {
            continue;
        };
        let value: i64 = rest
            .split([',', '/'])
            .next()
            .unwrap()
            .trim()
            .parse()
            .expect("a number");
        found.push((name.trim().to_owned(), value));
    }
    let want: Vec<(String, i64)> = rust.iter().map(|(n, v)| ((*n).to_owned(), *v)).collect();
    assert_eq!(found, want);
    // Every code has its own description.
    for &(name, v) in &rust[..rust.len() - 1] {
        // SAFETY: esm_strerror returns a static NUL-terminated string.
        let s = unsafe { std::ffi::CStr::from_ptr(esm_strerror(v as i32)) };
        assert_ne!(s.to_str().unwrap(), "unknown error code", "{name}");
    }
}

/// The Rust name of each type the C ABI passes, and its C spelling in `lull.h`. A new type in
/// an export needs a line here and its declaration in the header.
const C_NAMES: &[(&str, &str)] = &[
    ("u8", "uint8_t"),
    ("u16", "uint16_t"),
    ("u32", "uint32_t"),
    ("u64", "uint64_t"),
    ("i32", "int32_t"),
    ("i64", "int64_t"),
    ("c_int", "int"),
    ("c_char", "char"),
    ("c_void", "void"),
    ("LullEvent", "struct lull_event"),
    ("EsmHandler", "esm_handler"),
    ("ProducerHandle", "esm_producer_t"),
    ("ProducerCountersC", "struct esm_producer_counters"),
    ("KdsHandle", "kds_t"),
    ("KdsThread", "kds_thread_t"),
    ("KdsRect", "kds_rect"),
    ("KdsLayer", "kds_layer"),
    ("KdsDrawItem", "kds_draw_item"),
    ("KdsWindowState", "kds_window_state_t"),
    ("KdsEventHandler", "kds_event_handler"),
    ("KdsThreadFn", "kds_thread_fn"),
];

/// Opaque handles: C hands them around as `T *` whatever the library does through them, the
/// Rust side as `*const` where it only reads; their `const` is not compared.
const HANDLES: &[&str] = &["kds_t", "kds_thread_t", "esm_producer_t"];

const RUST_SOURCES: &[&str] = &[
    include_str!("../src/capi.rs"),
    include_str!("../src/capi_kds.rs"),
    include_str!("../src/capi_producer.rs"),
];

/// A C type in one spelling: single spaces, `*` apart, `const` dropped before a handle.
fn c_type(t: &str) -> String {
    let t = t.replace('*', " * ");
    let mut words: Vec<&str> = t.split_whitespace().collect();
    if words.len() >= 2 && words[0] == "const" && HANDLES.contains(&words[1]) {
        words.remove(0);
    }
    words.join(" ")
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

/// Splits `s` at the commas outside `<>` and `()`.
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

/// Every `pub extern "C" fn` of the library: name → (C return type, C parameter types).
fn rust_exports() -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    for src in RUST_SOURCES {
        for (i, _) in src.match_indices("extern \"C\" fn ") {
            let line_start = src[..i].rfind('\n').map_or(0, |n| n + 1);
            if !src[line_start..i].trim_start().starts_with("pub") {
                continue; // a function-pointer type, not an export
            }
            let rest = &src[i + "extern \"C\" fn ".len()..];
            let open = rest.find('(').unwrap();
            let name = rest[..open].trim().to_owned();
            // The parameters end at the parenthesis that closes the first one.
            let mut depth = 0;
            let close = rest
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
            let params = split_top(&rest[open + 1..close])
                .iter()
                .map(|p| rust_to_c(p.split_once(':').unwrap().1))
                .collect();
            let after = rest[close + 1..].trim_start();
            let ret = match after.strip_prefix("->") {
                Some(r) => rust_to_c(r[..r.find('{').unwrap()].trim()),
                None => "void".to_owned(),
            };
            out.push((name, ret, params));
        }
    }
    out.sort();
    out
}

/// The header without its comments.
fn header_code() -> String {
    let header = include_str!("../../../include/lull.h");
    let mut code = String::new();
    let mut rest = header;
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
        // A statement's tail after the last brace (an enum or struct body ends it).
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
            split_top(inner).iter().map(|p| c_decl(p).0).collect()
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
    assert!(rust.len() >= 25, "found only {} exports", rust.len());
    assert_eq!(header_functions(), rust);
}

/// The fields of a `#[repr(C)]` struct: (C type, name) each.
fn rust_struct(name: &str) -> Vec<(String, String)> {
    let src = RUST_SOURCES
        .iter()
        .find(|s| s.contains(&format!("pub struct {name} {{")))
        .unwrap_or_else(|| panic!("struct {name}"));
    let body = &src[src.find(&format!("pub struct {name} {{")).unwrap()..];
    let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
    body.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("pub "))
        .map(|l| {
            let (n, t) = l["pub ".len()..].split_once(':').unwrap();
            (rust_to_c(t.trim_end_matches(',')), n.trim().to_owned())
        })
        .collect()
}

/// The fields of the C struct `tag` (`struct tag { … }`): (type, name) each, `int32_t a, b;`
/// as two.
fn header_struct(tag: &str) -> Vec<(String, String)> {
    let code = header_code();
    let start = code
        .find(&format!("struct {tag} {{"))
        .unwrap_or_else(|| panic!("struct {tag} in lull.h"));
    let body = &code[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find('}').unwrap()];
    let mut fields = Vec::new();
    for decl in body.split(';').map(str::trim).filter(|d| !d.is_empty()) {
        let mut names = decl.split(',');
        let (ty, first) = c_decl(names.next().unwrap());
        fields.push((ty.clone(), first));
        fields.extend(names.map(|n| (ty.clone(), n.trim().to_owned())));
    }
    fields
}

/// Every `#[repr(C)]` struct of the ABI has the header's fields, in order, of the same types.
#[test]
fn header_structs_are_the_librarys() {
    let mut checked = 0;
    for src in RUST_SOURCES {
        for (i, _) in src.match_indices("#[repr(C)]") {
            let rest = &src[i..];
            let name = rest[rest.find("pub struct ").unwrap() + "pub struct ".len()..]
                .split(|c: char| !c.is_alphanumeric())
                .next()
                .unwrap();
            let c = rust_to_c(name);
            let tag = c.strip_prefix("struct ").unwrap_or(&c);
            // A typedef'd struct's tag is its name without `_t`.
            let tag = tag.strip_suffix("_t").unwrap_or(tag);
            assert_eq!(
                rust_struct(name),
                header_struct(tag),
                "{name} / struct {tag}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 6, "the C ABI's structs");
}
