//! `include/lull.h` repeats the event kinds' wire numbers for C; they must be
//! `lull_model::EventKind`'s, one constant per kind.

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
