use super::*;
use proptest::prelude::*;

#[test]
fn every_request_type_and_error_code_has_a_name() {
    for t in 1..=request_type::DRAW_BATCH {
        assert!(request_type::name(t).is_some(), "request type {t}");
    }
    assert_eq!(request_type::name(0), None, "0 answers no request");
    assert_eq!(request_type::name(request_type::DRAW_BATCH + 1), None);
    let names: std::collections::HashSet<_> = ErrorCode::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(names.len(), ErrorCode::ALL.len(), "names are distinct");
}

fn round_trip(req: &Request) {
    let mut buf = Vec::new();
    encode_request(req, &mut buf);
    assert_eq!(
        decode_request(&buf).unwrap(),
        Some((req.clone(), buf.len()))
    );
    for cut in 0..buf.len() {
        assert_eq!(
            decode_request(&buf[..cut]).unwrap(),
            None,
            "prefix of {cut} bytes"
        );
    }
}

/// A wire decoder: a whole message and the bytes it took, or `None` for a prefix of one.
type Decoder<M> = fn(&[u8]) -> Result<Option<(M, usize)>, WireError>;

/// `messages` encoded one after another into one buffer decode back, each taking its own bytes.
fn decode_one_after_another<M: PartialEq + std::fmt::Debug>(
    messages: &[M],
    encode: fn(&M, &mut Vec<u8>),
    decode: Decoder<M>,
) {
    let mut buf = Vec::new();
    for m in messages {
        encode(m, &mut buf);
    }
    let mut rest = &buf[..];
    for m in messages {
        let (got, used) = decode(rest).unwrap().expect("a whole message");
        assert_eq!(&got, m);
        rest = &rest[used..];
    }
    assert!(rest.is_empty());
}

/// A writer batches messages into one buffer: each frame's length counts only its own body,
/// not what the buffer held before it.
#[test]
fn messages_appended_to_a_buffer_decode_one_after_another() {
    let requests = [
        Request::Attach {
            width: 25,
            height: 25,
            name: "first".into(),
        },
        Request::WmScreen { screen: Screen::On },
        Request::Snapshot,
    ];
    decode_one_after_another(&requests, encode_request, decode_request);

    let replies = [
        Reply::Ok { request_type: 7 },
        Reply::Error {
            request_type: 2,
            code: 3,
            message: "second".into(),
        },
        Reply::FrameDone {
            frame_ns: 16_666_667,
        },
    ];
    decode_one_after_another(&replies, encode_reply, decode_reply);
}

#[test]
fn requests_round_trip_and_prefixes_wait() {
    round_trip(&Request::Attach {
        width: 25,
        height: 25,
        name: "figure-18 ✓".into(),
    });
    round_trip(&Request::WmForeground {
        app: AppId {
            index: 3,
            generation: 9,
        },
    });
    round_trip(&Request::WmBackground {
        app: AppId {
            index: 0,
            generation: 0,
        },
    });
    round_trip(&Request::WmCover {
        app: AppId {
            index: 1,
            generation: 2,
        },
        covered: true,
    });
    round_trip(&Request::WmScreen {
        screen: Screen::Off,
    });
    round_trip(&Request::Snapshot);
    round_trip(&Request::ListWindows);
    round_trip(&Request::Detach);
    round_trip(&Request::Frame);
    round_trip(&Request::DrawBatch(vec![
        DrawItem {
            surface_id: 2,
            x: -1,
            y: 7,
        },
        DrawItem {
            surface_id: 3,
            x: 1919,
            y: 0,
        },
    ]));
    round_trip(&Request::Draw {
        surface_id: 1,
        x: -3,
        y: 4,
    });
    round_trip(&Request::EsmRegister {
        kind: EventKind::Key,
        handler: Some(HandlerId(9)),
    });
    round_trip(&Request::EsmRegister {
        kind: EventKind::Timer,
        handler: None,
    });
    round_trip(&Request::Thread {
        category: ThreadCategory::Background,
        tid: 4242,
    });
    round_trip(&Request::Compose {
        surface_id: 7,
        surface: Surface {
            width: 25,
            height: 25,
            layers: vec![
                Layer {
                    z: 0,
                    rect: Rect::new(0, 0, 15, 15),
                    fill: Fill::Solid(0xffff_0000),
                },
                Layer {
                    z: 1,
                    rect: Rect::new(10, 10, 2, 1),
                    fill: Fill::Pixels(vec![1, 2]),
                },
            ],
        },
    });
}

#[test]
fn replies_round_trip() {
    for reply in [
        Reply::Attached {
            app: AppId {
                index: 2,
                generation: 1,
            },
            window: Rect::new(100, 50, 25, 25),
            refresh_period_ns: 16_666_667,
        },
        Reply::FrameDone {
            frame_ns: u64::MAX - 3,
        },
        Reply::Snapshot {
            width: 640,
            height: 480,
        },
        Reply::Windows(vec![WindowInfo {
            app: AppId {
                index: 1,
                generation: 0,
            },
            pid: 4242,
            rect: Rect::new(-1, 2, 3, 4),
            state: WindowState::FRONT,
            name: "tracking".into(),
            threads: [Some(10), None, Some(12), None],
        }]),
        Reply::Windows(Vec::new()),
        // The limits themselves are allowed: MAX_WINDOWS windows with names of
        // MAX_NAME_LEN bytes.
        Reply::Windows(
            (0..MAX_WINDOWS as u32)
                .map(|index| WindowInfo {
                    app: AppId {
                        index,
                        generation: 0,
                    },
                    pid: 1,
                    rect: Rect::new(0, 0, 1, 1),
                    state: WindowState::FRONT,
                    name: "n".repeat(MAX_NAME_LEN),
                    threads: [None; 4],
                })
                .collect(),
        ),
        Reply::Ok {
            request_type: request_type::DRAW,
        },
        Reply::Error {
            request_type: 4,
            code: 2,
            message: "outside the window".into(),
        },
        Reply::Composed {
            surface_id: 1,
            width: 2,
            height: 3,
        },
        Reply::WindowState(WindowState {
            stacking: Stacking::Background,
            ..WindowState::FRONT
        }),
    ] {
        let mut buf = Vec::new();
        encode_reply(&reply, &mut buf);
        assert_eq!(decode_reply(&buf).unwrap(), Some((reply, buf.len())));
    }
}

fn header(ty: u32, len: u32) -> Vec<u8> {
    let mut v = ty.to_le_bytes().to_vec();
    v.extend_from_slice(&len.to_le_bytes());
    v
}

#[test]
fn hostile_headers_fail_before_data() {
    assert_eq!(
        decode_request(&header(99, 0)),
        Err(WireError::UnknownType(99))
    );
    assert_eq!(
        decode_request(&header(reply_type::OK, 4)),
        Err(WireError::UnknownType(reply_type::OK))
    );
    assert_eq!(
        decode_request(&header(request_type::DRAW, u32::MAX)),
        Err(WireError::TooLong(u32::MAX))
    );
    // The largest length allowed is allowed: the frame waits for its data.
    assert_eq!(
        decode_request(&header(request_type::DRAW, MAX_DATA_LEN)),
        Ok(None)
    );
    assert_eq!(
        decode_request(&header(request_type::DRAW, MAX_DATA_LEN + 1)),
        Err(WireError::TooLong(MAX_DATA_LEN + 1))
    );
}

#[test]
fn a_compose_of_exactly_max_layers_is_read_and_one_more_is_refused() {
    let layer = |i: usize| Layer {
        z: i as i32,
        rect: Rect::new(0, 0, 1, 1),
        fill: Fill::Solid(i as u32),
    };
    round_trip(&Request::Compose {
        surface_id: 1,
        surface: Surface {
            width: 1,
            height: 1,
            layers: (0..MAX_LAYERS).map(layer).collect(),
        },
    });
    let mut buf = Vec::new();
    encode_request(
        &Request::Compose {
            surface_id: 1,
            surface: Surface {
                width: 1,
                height: 1,
                layers: (0..=MAX_LAYERS).map(layer).collect(),
            },
        },
        &mut buf,
    );
    assert_eq!(
        decode_request(&buf),
        Err(WireError::BadValue {
            ty: request_type::COMPOSE,
            field: "layer_count",
            value: MAX_LAYERS as u64 + 1,
        })
    );
}

#[test]
fn malformed_data_is_named() {
    let mut m = header(request_type::DRAW, 8);
    m.extend_from_slice(&[0; 8]);
    assert!(matches!(
        decode_request(&m),
        Err(WireError::Truncated {
            field: "y",
            missing: 4,
            ..
        })
    ));
    let mut m = header(request_type::DETACH, 1);
    m.push(0);
    assert!(matches!(
        decode_request(&m),
        Err(WireError::TrailingBytes { extra: 1, .. })
    ));
    let mut m = header(request_type::ESM_REGISTER, 8);
    m.extend_from_slice(&[7, 0, 1, 0, 0, 0, 0, 0]);
    assert!(matches!(
        decode_request(&m),
        Err(WireError::BadValue {
            field: "kind",
            value: 7,
            ..
        })
    ));
    // A batch of exactly the limit is read.
    let full = Request::DrawBatch(
        (0..MAX_DRAW_BATCH as u32)
            .map(|i| DrawItem {
                surface_id: i,
                x: 1,
                y: 2,
            })
            .collect(),
    );
    let mut m = Vec::new();
    encode_request(&full, &mut m);
    assert_eq!(decode_request(&m), Ok(Some((full, m.len()))));
    // A batch of no draws, and one claiming more than the limit in a short message.
    for n in [0u32, MAX_DRAW_BATCH as u32 + 1] {
        let mut m = header(request_type::DRAW_BATCH, 4);
        m.extend_from_slice(&n.to_le_bytes());
        assert!(matches!(
            decode_request(&m),
            Err(WireError::BadValue {
                field: "draw_count",
                ..
            })
        ));
    }
    // A batch of two whose second draw is cut short.
    let mut m = header(request_type::DRAW_BATCH, 20);
    m.extend_from_slice(&2u32.to_le_bytes());
    m.extend_from_slice(&[0; 16]);
    assert!(matches!(
        decode_request(&m),
        Err(WireError::Truncated { field: "x", .. })
    ));
    let mut m = header(request_type::FRAME, 4);
    m.extend_from_slice(&[0; 4]);
    assert!(matches!(
        decode_request(&m),
        Err(WireError::TrailingBytes { extra: 4, .. })
    ));
    // A layer claiming 2^32 × 2^32 pixels in a small message.
    let mut m = header(request_type::COMPOSE, 40);
    for v in [0u32, 1, 1, 1, 0, 0, 0, u32::MAX, u32::MAX, 1] {
        m.extend_from_slice(&v.to_le_bytes());
    }
    assert!(decode_request(&m).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 5000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode_request(&bytes);
        let _ = decode_reply(&bytes);
    }

    #[test]
    fn valid_header_random_body_never_panics(
        ty in 1u32..=12,
        body in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        let mut m = header(ty, body.len() as u32);
        m.extend_from_slice(&body);
        match decode_request(&m) {
            Ok(Some((_, used))) => prop_assert_eq!(used, m.len()),
            Ok(None) => prop_assert!(false, "a complete frame is never incomplete"),
            Err(_) => {}
        }
    }
}

#[test]
fn names_are_cut_to_the_last_whole_character_within_the_limit() {
    assert_eq!(truncate_utf8("abcdef", 3), "abc");
    assert_eq!(truncate_utf8("abc", 3), "abc");
    assert_eq!(truncate_utf8("ab", 3), "ab");
    assert_eq!(truncate_utf8("", 0), "");
    // 'é' is 2 bytes (1..3), '€' 3 bytes: a limit inside one keeps what is before it.
    assert_eq!(truncate_utf8("a\u{e9}", 2), "a");
    assert_eq!(truncate_utf8("a\u{e9}", 3), "a\u{e9}");
    assert_eq!(truncate_utf8("\u{20ac}\u{20ac}", 5), "\u{20ac}");
    assert_eq!(truncate_utf8("\u{20ac}", 2), "");
    // A WINDOWS reply sends a name past MAX_NAME_LEN cut the same way.
    let long = format!("{}\u{e9}", "n".repeat(MAX_NAME_LEN - 1));
    let mut out = Vec::new();
    encode_reply(
        &Reply::Windows(vec![WindowInfo {
            app: AppId {
                index: 1,
                generation: 0,
            },
            pid: 5,
            rect: Rect::new(0, 0, 1, 1),
            state: WindowState::FRONT,
            name: long,
            threads: [None; 4],
        }]),
        &mut out,
    );
    match decode_reply(&out) {
        Ok(Some((Reply::Windows(list), _))) => {
            assert_eq!(list[0].name, "n".repeat(MAX_NAME_LEN - 1));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_truncated_field_names_the_bytes_it_lacks() {
    // DRAW's `y` with 2 of its 4 bytes, and ATTACHED's refresh period with 1 of 4.
    let mut m = header(request_type::DRAW, 10);
    m.extend_from_slice(&[0; 10]);
    assert_eq!(
        decode_request(&m),
        Err(WireError::Truncated {
            ty: request_type::DRAW,
            field: "y",
            missing: 2
        })
    );
    let mut m = header(reply_type::ATTACHED, 8 + 16 + 1);
    m.extend_from_slice(&[0; 8 + 16 + 1]);
    assert_eq!(
        decode_reply(&m),
        Err(WireError::Truncated {
            ty: reply_type::ATTACHED,
            field: "refresh_period_ns",
            missing: 3
        })
    );
}

#[test]
fn an_attach_name_of_exactly_max_name_len_is_read_and_one_byte_more_is_refused() {
    let attach = |name: String| {
        let mut m = Vec::new();
        encode_request(
            &Request::Attach {
                width: 3,
                height: 4,
                name,
            },
            &mut m,
        );
        decode_request(&m).map(|r| r.map(|(req, _)| req))
    };
    let name = "n".repeat(MAX_NAME_LEN);
    assert_eq!(
        attach(name.clone()),
        Ok(Some(Request::Attach {
            width: 3,
            height: 4,
            name
        }))
    );
    assert_eq!(
        attach("n".repeat(MAX_NAME_LEN + 1)),
        Err(WireError::BadValue {
            ty: request_type::ATTACH,
            field: "name",
            value: MAX_NAME_LEN as u64 + 1
        })
    );
}
