//! `include/lull_ctl.h` is checked against the library: its functions and its struct are the
//! exports of `capi` with the same types, and its codes and name length are the library's
//! constants, one for one (a changed export or constant without the header fails here).

use std::ffi::CStr;

use lull_ctl::capi::*;
use lull_testkit::c_abi::CAbi;

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

const ABI: CAbi = CAbi {
    header: HEADER,
    rust_sources: &[SOURCE],
    c_names: C_NAMES,
    handles: &[],
};

/// Every exported function is declared in the header with the same parameter and return
/// types, and the header declares nothing the library does not export.
#[test]
fn header_functions_are_the_exports() {
    let rust = ABI.rust_exports();
    assert_eq!(rust.len(), 6, "the exports of capi: {rust:?}");
    assert_eq!(ABI.header_functions(), rust);
}

/// The handle's typedef names the library's opaque struct.
#[test]
fn header_handle_is_the_librarys() {
    assert!(SOURCE.contains("pub struct LullCtl("));
    let code = ABI.header_code();
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
    let rust = ABI.rust_struct("LullCtlThread");
    assert_eq!(rust.len(), 9, "{rust:?}");
    assert_eq!(ABI.header_struct("lull_ctl_thread"), rust);
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
