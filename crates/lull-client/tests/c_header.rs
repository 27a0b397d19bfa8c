//! `include/lull.h` repeats the event kinds' wire numbers, the return codes and the burst bound
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
