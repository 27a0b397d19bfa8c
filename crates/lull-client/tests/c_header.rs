//! `include/lull.h` is checked against the library: its functions and structs are the exports
//! of `capi`, `capi_kds` and `capi_producer` with the same types (a changed export without the
//! header fails here), and it repeats the event kinds' wire numbers, the return codes and the burst bound
//! for C; they must be the library's: one constant per `lull_model::EventKind`, and the `ESM_*`
//! constants of `capi` and `capi_producer`.

use lull_model::EventKind;
use lull_testkit::c_abi::CAbi;

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
    use lull::capi_producer::ESM_MAX_BURST;
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

const ABI: CAbi = CAbi {
    header: include_str!("../../../include/lull.h"),
    rust_sources: RUST_SOURCES,
    c_names: C_NAMES,
    handles: HANDLES,
};

/// Every exported function is declared in the header with the same parameter and return
/// types, and the header declares nothing the library does not export.
#[test]
fn header_functions_are_the_exports() {
    let rust = ABI.rust_exports();
    assert!(rust.len() >= 25, "found only {} exports", rust.len());
    assert_eq!(ABI.header_functions(), rust);
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
            let c = ABI.rust_to_c(name);
            let tag = c.strip_prefix("struct ").unwrap_or(&c);
            // A typedef'd struct's tag is its name without `_t`.
            let tag = tag.strip_suffix("_t").unwrap_or(tag);
            assert_eq!(
                ABI.rust_struct(name),
                ABI.header_struct(tag),
                "{name} / struct {tag}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 6, "the C ABI's structs");
}
