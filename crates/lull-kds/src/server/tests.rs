use super::*;
use crate::figure18;
use lull_esm::EsmConfig;
use lull_model::{EventKind, HandlerId, RawEvent, Stacking, TouchPhase};

const WM: Channel = Channel::Control { privileged: true };

fn any_thread(_: u32, _: u32) -> bool {
    true
}

/// `request` on `ch`, from a thread the caller owns.
fn ask(kds: &mut Kds, esm: &mut Esm, ch: Channel, request: &Request) -> Outcome {
    kds.handle(esm, ch, request, &any_thread)
}

fn setup() -> (Kds, Esm, AppId) {
    let mut kds = Kds::new(100, 80).unwrap();
    let mut esm = Esm::new(EsmConfig::default()).unwrap();
    let app = esm.add_app();
    let (rect, pushes) = kds.attach(&mut esm, app, 1, 25, 25, "fig18").unwrap();
    assert_eq!(rect, Rect::new(37, 27, 25, 25));
    assert_eq!(pushes, [(app, WindowState::FRONT)]);
    (kds, esm, app)
}

#[test]
fn figure_18_lands_on_the_screen_at_the_window() {
    let (mut kds, mut esm, app) = setup();
    let ch = Channel::Private(app);
    let o = ask(
        &mut kds,
        &mut esm,
        ch,
        &Request::Compose {
            surface_id: 1,
            surface: figure18::surface(),
        },
    );
    assert!(matches!(o.reply, Some(Reply::Composed { width: 25, .. })));
    let o = ask(
        &mut kds,
        &mut esm,
        ch,
        &Request::Draw {
            surface_id: 1,
            x: 0,
            y: 0,
        },
    );
    assert!(matches!(o.reply, Some(Reply::Ok { .. })));
    assert_eq!(kds.take_damage(), Some(Rect::new(37, 27, 25, 25)));
    let s = kds.displayed();
    for y in 0..80u32 {
        for x in 0..100u32 {
            let (wx, wy) = (x.wrapping_sub(37), y.wrapping_sub(27));
            let want = if wx < 25 && wy < 25 {
                figure18::pixel(wx, wy)
            } else {
                BACKDROP_ARGB
            };
            assert_eq!(s.get(x, y), Some(want), "({x}, {y})");
        }
    }
}

#[test]
fn frame_is_answered_at_the_next_boundary_only_while_someone_waits() {
    let (mut kds, mut esm, app) = setup();
    let p = u64::from(kds.refresh_period_ns());
    assert!(!kds.frame_wanted(), "nobody asked: no timer");
    assert_eq!(kds.next_frame_ns(5), None);
    let o = ask(&mut kds, &mut esm, Channel::Private(app), &Request::Frame);
    assert_eq!(o.reply, None, "FRAME has no immediate reply");
    // A second FRAME before the answer is one request.
    ask(&mut kds, &mut esm, Channel::Private(app), &Request::Frame);
    let now = 7 * p + 11;
    assert_eq!(kds.next_frame_ns(now), Some(8 * p));
    let done = kds.frames_due(8 * p + 40);
    assert_eq!(done, [(app, Reply::FrameDone { frame_ns: 8 * p })]);
    assert!(
        !kds.frame_wanted(),
        "answered: the timer is not armed again"
    );
    assert!(kds.frames_due(9 * p).is_empty());
    let c = kds.counters();
    assert_eq!(
        (c.frame_requests, c.frame_requests_coalesced, c.frames_done),
        (2, 1, 1)
    );
}

#[test]
fn a_hidden_apps_frame_is_held_until_it_can_be_seen() {
    let (mut kds, mut esm, app) = setup();
    ask(&mut kds, &mut esm, Channel::Private(app), &Request::Frame);
    ask(&mut kds, &mut esm, WM, &Request::WmBackground { app });
    assert!(
        !kds.frame_wanted(),
        "a background app's request arms nothing"
    );
    assert!(
        kds.frames_due(u64::MAX / 2).is_empty(),
        "and is not answered"
    );
    ask(&mut kds, &mut esm, WM, &Request::WmForeground { app });
    assert!(kds.frame_wanted(), "held, not lost");
    assert_eq!(kds.frames_due(1).len(), 1);
    // Covered or screen off: held too.
    ask(&mut kds, &mut esm, Channel::Private(app), &Request::Frame);
    ask(
        &mut kds,
        &mut esm,
        WM,
        &Request::WmScreen {
            screen: Screen::Off,
        },
    );
    assert!(!kds.frame_wanted());
    // Gone with its app.
    kds.detach(app);
    ask(
        &mut kds,
        &mut esm,
        WM,
        &Request::WmScreen { screen: Screen::On },
    );
    assert!(!kds.frame_wanted());
}

#[test]
fn frame_on_the_control_socket_is_the_wrong_channel() {
    let (mut kds, mut esm, _) = setup();
    let o = ask(&mut kds, &mut esm, WM, &Request::Frame);
    assert!(matches!(
        o.reply,
        Some(Reply::Error { code, .. }) if code == ErrorCode::WrongChannel as u32
    ));
}

#[test]
fn a_draw_batch_draws_all_or_nothing() {
    let (mut kds, mut esm, app) = setup();
    let ch = Channel::Private(app);
    ask(
        &mut kds,
        &mut esm,
        ch,
        &Request::Compose {
            surface_id: 1,
            surface: Surface::solid(3, 3, 0xff11_2233),
        },
    );
    let before = kds.displayed().into_owned();
    let item = |x, y| DrawItem {
        surface_id: 1,
        x,
        y,
    };
    // The second draw leaves the 25 × 25 window: nothing of the batch is drawn.
    let o = ask(
        &mut kds,
        &mut esm,
        ch,
        &Request::DrawBatch(vec![item(0, 0), item(23, 0)]),
    );
    assert!(matches!(
        o.reply,
        Some(Reply::Error { code, .. }) if code == ErrorCode::OutsideWindow as u32
    ));
    assert_eq!(*kds.displayed(), before);
    let o = ask(
        &mut kds,
        &mut esm,
        ch,
        &Request::DrawBatch(vec![item(0, 0), item(22, 22)]),
    );
    assert!(
        matches!(o.reply, Some(Reply::Ok { request_type }) if request_type == crate::wire::request_type::DRAW_BATCH)
    );
    let s = kds.displayed();
    // The window is at (37, 27) on the screen.
    assert_eq!(s.get(37, 27), Some(0xff11_2233));
    assert_eq!(s.get(37 + 24, 27 + 24), Some(0xff11_2233));
    assert_eq!(kds.counters().draws, 2);
    assert_eq!(kds.counters().draw_batches, 1);
}

#[test]
fn refused_requests_name_their_code_and_change_nothing() {
    let (mut kds, mut esm, app) = setup();
    let ch = Channel::Private(app);
    let before = kds.displayed().into_owned();
    let code = |o: Outcome| match o.reply {
        Some(Reply::Error { code, .. }) => ErrorCode::from_u32(code),
        _ => None,
    };
    let draw = Request::Draw {
        surface_id: 9,
        x: 0,
        y: 0,
    };
    assert_eq!(
        code(ask(&mut kds, &mut esm, ch, &draw)),
        Some(ErrorCode::NoSurface)
    );
    ask(
        &mut kds,
        &mut esm,
        ch,
        &Request::Compose {
            surface_id: 9,
            surface: figure18::surface(),
        },
    );
    let off = Request::Draw {
        surface_id: 9,
        x: 1,
        y: 0,
    };
    assert_eq!(
        code(ask(&mut kds, &mut esm, ch, &off)),
        Some(ErrorCode::OutsideWindow)
    );
    let big = Request::Compose {
        surface_id: 2,
        surface: Surface {
            width: 26,
            height: 1,
            layers: vec![],
        },
    };
    assert_eq!(
        code(ask(&mut kds, &mut esm, ch, &big)),
        Some(ErrorCode::Compose)
    );
    let fg = Request::WmForeground { app };
    assert_eq!(
        code(ask(&mut kds, &mut esm, ch, &fg)),
        Some(ErrorCode::NotPermitted)
    );
    assert_eq!(
        code(ask(
            &mut kds,
            &mut esm,
            Channel::Control { privileged: false },
            &fg
        )),
        Some(ErrorCode::NotPermitted)
    );
    assert_eq!(
        code(ask(&mut kds, &mut esm, WM, &draw)),
        Some(ErrorCode::WrongChannel)
    );
    let thread = Request::Thread {
        category: ThreadCategory::Drawing,
        tid: 77,
    };
    assert_eq!(
        code(kds.handle(&mut esm, ch, &thread, &|_, _| false)),
        Some(ErrorCode::BadThread)
    );
    assert_eq!(kds.thread(app, ThreadCategory::Drawing), None);
    assert_eq!(*kds.displayed(), before);
    assert_eq!(kds.counters().refused, 7);
}

#[test]
fn background_suspends_input_and_foreground_restores_it() {
    let (mut kds, mut esm, app) = setup();
    let ch = Channel::Private(app);
    ask(
        &mut kds,
        &mut esm,
        ch,
        &Request::EsmRegister {
            kind: EventKind::TouchPress,
            handler: Some(HandlerId(3)),
        },
    );
    let press = RawEvent::Touch {
        phase: TouchPhase::Down,
        x: 1,
        y: 2,
    };
    let mut pushed = 0;
    esm.inject(press, 1, |_| pushed += 1);
    assert_eq!(esm.queued_events(app).unwrap(), 1, "running app: queued");
    let o = ask(&mut kds, &mut esm, WM, &Request::WmBackground { app });
    assert_eq!(o.pushes[0].1.stacking, Stacking::Background);
    assert!(esm.input_suspended(app).unwrap());
    esm.inject(press, 2, |_| pushed += 1);
    assert_eq!(
        esm.queued_events(app).unwrap(),
        1,
        "not delivered while away"
    );
    let o = ask(&mut kds, &mut esm, WM, &Request::WmForeground { app });
    assert_eq!(o.pushes, [(app, WindowState::FRONT)]);
    esm.inject(press, 3, |_| pushed += 1);
    assert_eq!(esm.queued_events(app).unwrap(), 2);
    assert_eq!(pushed, 0);
}

#[test]
fn covering_paints_the_decoration_and_screen_off_shows_black() {
    let (mut kds, mut esm, app) = setup();
    ask(
        &mut kds,
        &mut esm,
        WM,
        &Request::WmCover { app, covered: true },
    );
    assert_eq!(kds.displayed().get(40, 30), Some(DECORATION_ARGB));
    ask(
        &mut kds,
        &mut esm,
        WM,
        &Request::WmScreen {
            screen: Screen::Off,
        },
    );
    assert!(kds.displayed().pixels().iter().all(|&p| p == BACKDROP_ARGB));
}

#[test]
fn a_second_app_stacks_on_top_and_detach_uncovers() {
    let (mut kds, mut esm, a) = setup();
    let b = esm.add_app();
    let (rb, pushes) = kds.attach(&mut esm, b, 2, 0, 0, "full").unwrap();
    assert_eq!(rb, Rect::new(0, 0, 100, 80));
    assert!(pushes.iter().any(|(x, s)| *x == a && !s.in_foreground()));
    assert!(esm.input_suspended(a).unwrap());
    let windows = kds.windows();
    assert_eq!(windows.len(), 2);
    assert_eq!(windows[1].name, "full");
    let o = ask(&mut kds, &mut esm, Channel::Private(b), &Request::Detach);
    assert_eq!(o.detach, Some(b));
    assert_eq!(kds.windows().len(), 1);
    assert_eq!(kds.counters().detached, 1);
}

/// Restacks the whole screen by hand (backdrop, windows bottom to top, decoration over
/// covered ones): what every displayed screen must equal.
fn restacked_by_hand(kds: &Kds) -> Vec<u32> {
    let (w, h) = (kds.screen.width(), kds.screen.height());
    let mut out = vec![BACKDROP_ARGB; (w * h) as usize];
    for win in kds.wm().windows() {
        let buf = &kds.clients[&win.app].buffer;
        for y in 0..win.rect.height {
            for x in 0..win.rect.width {
                let (sx, sy) = (win.rect.x as u32 + x, win.rect.y as u32 + y);
                out[(sy * w + sx) as usize] = if win.visibility == lull_model::Visibility::Covered {
                    DECORATION_ARGB
                } else {
                    buf.get(x, y).unwrap()
                };
            }
        }
    }
    out
}

#[test]
fn a_full_screen_window_on_top_is_scanned_out_without_restacking() {
    let (mut kds, mut esm, small) = setup();
    let full = esm.add_app();
    kds.attach(&mut esm, full, 2, 0, 0, "full").unwrap();
    let draw = |kds: &mut Kds, esm: &mut Esm, app, argb| {
        let ch = Channel::Private(app);
        let side = if app == full { 10 } else { 5 };
        kds.handle(
            esm,
            ch,
            &Request::Compose {
                surface_id: 1,
                surface: Surface::solid(side, side, argb),
            },
            &any_thread,
        );
        let o = kds.handle(
            esm,
            ch,
            &Request::Draw {
                surface_id: 1,
                x: 3,
                y: 4,
            },
            &any_thread,
        );
        assert!(matches!(o.reply, Some(Reply::Ok { .. })), "{o:?}");
    };
    let before = kds.counters();
    draw(&mut kds, &mut esm, full, 0xff00_ff00);
    let after = kds.counters();
    assert_eq!(after.restacks, before.restacks, "scanned out: no restack");
    assert_eq!(after.restacks_skipped, before.restacks_skipped + 1);
    assert_eq!(kds.displayed().get(3, 4), Some(0xff00_ff00));
    assert_eq!(kds.displayed().pixels(), restacked_by_hand(&kds));
    // The small window comes in front: the screen is restacked whole, the full window's
    // draw included.
    ask(
        &mut kds,
        &mut esm,
        WM,
        &Request::WmForeground { app: small },
    );
    assert!(kds.counters().restacks > after.restacks);
    assert_eq!(kds.displayed().pixels(), restacked_by_hand(&kds));
    draw(&mut kds, &mut esm, small, 0xff00_00ff);
    assert_eq!(kds.displayed().pixels(), restacked_by_hand(&kds));
    // Covered on top, the full window is no longer shown as it is.
    ask(&mut kds, &mut esm, WM, &Request::WmForeground { app: full });
    ask(
        &mut kds,
        &mut esm,
        WM,
        &Request::WmCover {
            app: full,
            covered: true,
        },
    );
    assert_eq!(kds.displayed().pixels(), restacked_by_hand(&kds));
    assert!(kds
        .displayed()
        .pixels()
        .iter()
        .all(|&p| p == DECORATION_ARGB));
    ask(
        &mut kds,
        &mut esm,
        WM,
        &Request::WmCover {
            app: full,
            covered: false,
        },
    );
    draw(&mut kds, &mut esm, full, 0xffff_0000);
    assert_eq!(kds.displayed().pixels(), restacked_by_hand(&kds));
    // Its window gone, the one under it shows again.
    kds.detach(full);
    assert_eq!(kds.displayed().pixels(), restacked_by_hand(&kds));
    assert_eq!(kds.displayed().get(37 + 3, 27 + 4), Some(0xff00_00ff));
}

#[test]
fn the_refresh_period_set_paces_frames_and_is_at_least_the_minimum() {
    let (mut kds, mut esm, app) = setup();
    assert_eq!(kds.refresh_period_ns(), DEFAULT_REFRESH_PERIOD_NS);
    assert_eq!(kds.set_refresh_period_ns(5_000_000), 5_000_000);
    assert_eq!(kds.refresh_period_ns(), 5_000_000);
    ask(&mut kds, &mut esm, Channel::Private(app), &Request::Frame);
    // A FRAME at 12 ms is answered at the 15 ms boundary, carrying it.
    assert_eq!(kds.next_frame_ns(12_000_000), Some(15_000_000));
    assert_eq!(
        kds.frames_due(15_000_001),
        [(
            app,
            Reply::FrameDone {
                frame_ns: 15_000_000
            }
        )]
    );
    // Shorter than the minimum: raised to it, and the minimum is what is in force.
    assert_eq!(kds.set_refresh_period_ns(10), MIN_REFRESH_PERIOD_NS);
    assert_eq!(kds.refresh_period_ns(), MIN_REFRESH_PERIOD_NS);
    assert_eq!(kds.set_refresh_period_ns(0), MIN_REFRESH_PERIOD_NS);
}

#[test]
fn apps_are_the_attached_ones() {
    let (mut kds, mut esm, a) = setup();
    assert_eq!(kds.apps().collect::<Vec<_>>(), [a]);
    let b = esm.add_app();
    kds.attach(&mut esm, b, 2, 10, 10, "b").unwrap();
    assert_eq!(kds.apps().collect::<Vec<_>>(), [a, b]);
    assert_eq!((kds.pid(a), kds.pid(b)), (Some(1), Some(2)));
    kds.detach(a);
    assert_eq!(kds.apps().collect::<Vec<_>>(), [b]);
    assert_eq!(kds.pid(a), None);
}

/// COMPOSEs of `app` as (surface id, width, height), each answered `Composed` or with the error
/// code it got.
fn compose_all(
    kds: &mut Kds,
    esm: &mut Esm,
    app: AppId,
    surfaces: &[(u32, u32, u32)],
) -> Vec<Result<(), ErrorCode>> {
    surfaces
        .iter()
        .map(|&(surface_id, w, h)| {
            let o = kds.handle(
                esm,
                Channel::Private(app),
                &Request::Compose {
                    surface_id,
                    surface: Surface::solid(w, h, 0xff11_2233),
                },
                &any_thread,
            );
            match o.reply {
                Some(Reply::Composed { .. }) => Ok(()),
                Some(Reply::Error { code, .. }) => Err(ErrorCode::from_u32(code).unwrap()),
                other => panic!("{other:?}"),
            }
        })
        .collect()
}

#[test]
fn an_apps_surfaces_stop_at_two_screens_counting_all_but_the_one_replaced() {
    // A 100 × 80 screen: the budget is 2 × 8,000 = 16,000 pixels.
    let mut kds = Kds::new(100, 80).unwrap();
    let mut esm = Esm::new(EsmConfig::default()).unwrap();
    let app = esm.add_app();
    kds.attach(&mut esm, app, 1, 0, 0, "full").unwrap();
    let got = compose_all(
        &mut kds,
        &mut esm,
        app,
        &[
            (1, 100, 80), // 8,000
            (2, 100, 79), // 15,900
            (3, 100, 1),  // 16,000: exactly the budget
            (4, 1, 1),    // 16,001: one pixel over
            (3, 100, 1),  // replaces 3: 16,000 again
            (1, 100, 80), // replaces 1: 16,000 again
            (3, 50, 2),   // replaces 3 by as many pixels
            (2, 100, 80), // replaces 2 by 100 more: 16,100
            (2, 100, 1),  // replaces 2 by 100: 8,200
            (4, 100, 78), // 16,000 with the new surface
            (5, 1, 1),    // 16,001
        ],
    );
    use ErrorCode::Resources;
    assert_eq!(
        got,
        [
            Ok(()),
            Ok(()),
            Ok(()),
            Err(Resources),
            Ok(()),
            Ok(()),
            Ok(()),
            Err(Resources),
            Ok(()),
            Ok(()),
            Err(Resources)
        ]
    );
    let c = kds.counters();
    assert_eq!((c.composes, c.surface_budget_refused), (8, 3));
}

#[test]
fn all_apps_surfaces_stop_at_sixteen_screens() {
    // A 20 × 10 screen: 200 pixels; each app may keep 400, all apps together 3,200.
    let mut kds = Kds::new(20, 10).unwrap();
    let mut esm = Esm::new(EsmConfig::default()).unwrap();
    let mut apps = Vec::new();
    for pid in 1..=9 {
        let app = esm.add_app();
        kds.attach(&mut esm, app, pid, 0, 0, "full").unwrap();
        apps.push(app);
    }
    for &app in &apps[..7] {
        let got = compose_all(&mut kds, &mut esm, app, &[(1, 20, 10), (2, 20, 10)]);
        assert_eq!(got, [Ok(()), Ok(())]);
    }
    use ErrorCode::Resources;
    // 2,800 kept by seven apps, 100 by the ninth: 2,900.
    let got = compose_all(&mut kds, &mut esm, apps[8], &[(1, 10, 10)]);
    assert_eq!(got, [Ok(())]);
    let got = compose_all(
        &mut kds,
        &mut esm,
        apps[7],
        &[
            (1, 20, 10), // 3,100
            (2, 20, 10), // 3,300: the caller's own other surface counts too
            (2, 10, 10), // 3,200: exactly the budget
            (2, 10, 10), // replaces its own surface 2: 3,200 again
        ],
    );
    assert_eq!(got, [Ok(()), Err(Resources), Ok(()), Ok(())]);
    // One pixel more is refused, also under an id another app uses (only the caller's own
    // surface of that id is replaced).
    let got = compose_all(&mut kds, &mut esm, apps[8], &[(2, 1, 1), (5, 1, 1)]);
    assert_eq!(got, [Err(Resources), Err(Resources)]);
    // An app that leaves frees its two screens: 2,800.
    kds.detach(apps[0]);
    let got = compose_all(&mut kds, &mut esm, apps[8], &[(2, 20, 10), (1, 20, 10)]);
    assert_eq!(got, [Ok(()), Ok(())]);
    let c = kds.counters();
    assert_eq!((c.composes, c.surface_budget_refused), (20, 3));
}
