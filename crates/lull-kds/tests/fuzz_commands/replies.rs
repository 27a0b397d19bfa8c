//! The client's reply parser (`decode_reply`) fed random and mutated bytes, as from a hostile
//! server.

use super::*;

pub(crate) fn app_id() -> impl Strategy<Value = AppId> {
    (any::<u32>(), any::<u32>()).prop_map(|(index, generation)| AppId { index, generation })
}

pub(crate) fn window_state() -> impl Strategy<Value = WindowState> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(bg, cov, off)| WindowState {
        stacking: if bg {
            Stacking::Background
        } else {
            Stacking::Foreground
        },
        visibility: if cov {
            Visibility::Covered
        } else {
            Visibility::Visible
        },
        screen: if off { Screen::Off } else { Screen::On },
    })
}

pub(crate) fn rect() -> impl Strategy<Value = Rect> {
    (any::<i32>(), any::<i32>(), any::<u32>(), any::<u32>())
        .prop_map(|(x, y, w, h)| Rect::new(x, y, w, h))
}

pub(crate) fn reply() -> impl Strategy<Value = Reply> {
    let info = (
        app_id(),
        any::<u32>(),
        rect(),
        window_state(),
        "\\PC{0,20}",
        proptest::array::uniform4(proptest::option::of(1u32..)),
    )
        .prop_map(|(app, pid, rect, state, name, threads)| WindowInfo {
            app,
            pid,
            rect,
            state,
            name: truncate_utf8(&name, MAX_NAME_LEN).to_owned(),
            threads,
        });
    prop_oneof![
        (app_id(), rect(), any::<u32>()).prop_map(|(app, window, refresh_period_ns)| {
            Reply::Attached {
                app,
                window,
                refresh_period_ns,
            }
        }),
        any::<u64>().prop_map(|frame_ns| Reply::FrameDone { frame_ns }),
        any::<u32>().prop_map(|request_type| Reply::Ok { request_type }),
        (any::<u32>(), any::<u32>(), "\\PC{0,40}").prop_map(|(request_type, code, message)| {
            Reply::Error {
                request_type,
                code,
                message,
            }
        }),
        (any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(surface_id, width, height)| {
            Reply::Composed {
                surface_id,
                width,
                height,
            }
        }),
        window_state().prop_map(Reply::WindowState),
        (any::<u32>(), any::<u32>()).prop_map(|(width, height)| Reply::Snapshot { width, height }),
        proptest::collection::vec(info, 0..4).prop_map(Reply::Windows),
    ]
}

/// Whatever `decode_reply` makes of `bytes`: a value that re-encodes to itself, a wait for more,
/// or a typed error — never a panic, never more bytes than given.
pub(crate) fn check_reply_bytes(bytes: &[u8]) -> Checked {
    count(&REPLY_INPUTS);
    match wire::decode_reply(bytes) {
        Ok(Some((r, used))) => {
            check!(
                (HEADER_LEN..=bytes.len()).contains(&used),
                "used {used} of {}",
                bytes.len()
            );
            let mut again = Vec::new();
            wire::encode_reply(&r, &mut again);
            check!(
                wire::decode_reply(&again) == Ok(Some((r.clone(), again.len()))),
                "{r:?} does not re-encode to itself"
            );
        }
        Ok(None) => check!(
            bytes.len() < HEADER_LEN
                || u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes")) as usize
                    > bytes.len() - HEADER_LEN,
            "a complete frame reported incomplete"
        ),
        Err(_) => {}
    }
    Ok(())
}

pub(crate) fn reply_case() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => proptest::collection::vec(any::<u8>(), 0..96),
        2 => (0x8000_0001u32..=0x8000_0007, proptest::collection::vec(any::<u8>(), 0..96))
            .prop_map(|(ty, body)| {
                let mut b = ty.to_le_bytes().to_vec();
                b.extend_from_slice(&(body.len() as u32).to_le_bytes());
                b.extend_from_slice(&body);
                b
            }),
        3 => (reply(), proptest::collection::vec(mutation(), 0..3)).prop_map(|(r, ms)| {
            let mut b = Vec::new();
            wire::encode_reply(&r, &mut b);
            for m in ms {
                mutate(&mut b, m);
            }
            b
        }),
    ]
}

#[test]
pub(crate) fn replies_from_a_hostile_server_never_panic_the_client() {
    let mut runner = seeded_runner(4_000, DEFAULT_SEED ^ 1);
    runner
        .run(&reply_case(), |bytes| check_reply_bytes(&bytes))
        .unwrap();
    // Valid replies come back whole, and every proper prefix waits for more.
    let mut runner = seeded_runner(1_000, DEFAULT_SEED ^ 2);
    runner
        .run(&reply(), |r| {
            let mut b = Vec::new();
            wire::encode_reply(&r, &mut b);
            prop_assert_eq!(wire::decode_reply(&b), Ok(Some((r.clone(), b.len()))));
            for cut in 0..b.len() {
                prop_assert_eq!(wire::decode_reply(&b[..cut]), Ok(None));
            }
            Ok(())
        })
        .unwrap();
}

#[test]
pub(crate) fn a_hostile_length_is_refused_before_any_data() {
    for ty in [wire::request_type::COMPOSE, wire::reply_type::WINDOWS] {
        let mut b = ty.to_le_bytes().to_vec();
        b.extend_from_slice(&(MAX_DATA_LEN + 1).to_le_bytes());
        let err = if ty < 0x8000_0000 {
            wire::decode_request(&b).map(|_| ())
        } else {
            wire::decode_reply(&b).map(|_| ())
        };
        assert_eq!(err, Err(wire::WireError::TooLong(MAX_DATA_LEN + 1)));
    }
}
