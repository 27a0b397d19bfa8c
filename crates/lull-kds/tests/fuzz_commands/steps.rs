//! Generated steps. Apps are named by position so that a shrunk sequence still names something.

use super::*;

#[derive(Clone, Copy, Debug)]
pub(crate) enum Target {
    /// The n-th attached app (modulo how many there are).
    Live(u8),
    /// The n-th app that left (its id is stale).
    Stale(u8),
    /// An id that may never have been issued.
    Forged { index: u32, generation: u32 },
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Via {
    Private(Target),
    Control { privileged: bool },
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum TidGen {
    /// A thread of the process owning the channel.
    Own(u8),
    /// A thread of another attached app's process.
    OtherApp(u8, u8),
    Zero,
    Any(u32),
}

/// A request whose app ids and thread ids are resolved when it runs.
#[derive(Clone, Debug)]
pub(crate) enum ReqGen {
    Plain(Request),
    Thread(ThreadCategory, TidGen),
    Foreground(Target),
    Background(Target),
    Cover(Target, bool),
    /// `COMPOSE` of a surface sized as a fraction (n/256) of the sender's window.
    FitCompose {
        surface_id: u32,
        width: u8,
        height: u8,
        layers: Vec<Layer>,
    },
    /// `DRAW` of one of the sender's surfaces (the n-th it holds, or id n % 4 when it holds
    /// none) at a fraction (n/255) of the room the surface leaves in its window.
    FitDraw {
        surface: u8,
        x: u8,
        y: u8,
    },
    /// `DRAW_BATCH` of draws made as `FitDraw`'s.
    FitDrawBatch(Vec<(u8, u8, u8)>),
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Mutation {
    Flip { at: usize, xor: u8 },
    Truncate { keep: usize },
    Append { bytes: [u8; 4], n: u8 },
    SetLength(u32),
    SetType(u32),
    Overwrite { at: usize, word: u32 },
}

#[derive(Clone, Debug)]
pub(crate) enum Mode {
    /// Straight to `Kds::handle`.
    Direct,
    /// Encoded, decoded (a well-formed request must come back the same), then handled as the
    /// socket layer would.
    Encoded,
    /// Encoded, mutated, then fed to the socket layer's loop.
    Mutated(Vec<Mutation>),
}

#[derive(Clone, Debug)]
pub(crate) enum Op {
    Send {
        via: Via,
        req: ReqGen,
        mode: Mode,
    },
    Bytes {
        via: Via,
        bytes: Vec<u8>,
    },
    /// `ATTACH` on the control socket, as the socket layer runs it.
    Attach {
        width: u32,
        height: u32,
        name: String,
    },
    /// The app's channel (or ESM connection) closed.
    Close(Target),
    /// An app composing surfaces `first..first + count` in a row, as one trying to make the
    /// server hold more than [`MAX_SURFACES`] would.
    Flood {
        app: u8,
        first: u32,
        count: u8,
    },
    /// An app composing window-sized surfaces `first..first + count` in a row, as one trying to
    /// make the server hold more than its surface budget would.
    Hoard {
        app: u8,
        first: u32,
        count: u8,
    },
    Inject(RawEvent),
    Wait(Target),
}

pub(crate) fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        14 => any::<u8>().prop_map(Target::Live),
        2 => any::<u8>().prop_map(Target::Stale),
        1 => (0u32..8, 0u32..4).prop_map(|(index, generation)| Target::Forged { index, generation }),
    ]
}

pub(crate) fn via() -> impl Strategy<Value = Via> {
    prop_oneof![
        10 => target().prop_map(Via::Private),
        2 => Just(Via::Control { privileged: true }),
        2 => Just(Via::Control { privileged: false }),
    ]
}

pub(crate) fn coord() -> impl Strategy<Value = i32> {
    prop_oneof![
        10 => -12i32..76,
        1 => any::<i32>(),
        1 => prop_oneof![Just(i32::MIN), Just(i32::MAX), Just(-1), Just(0)],
    ]
}

pub(crate) fn extent() -> impl Strategy<Value = u32> {
    prop_oneof![
        10 => 0u32..72,
        1 => any::<u32>(),
        1 => prop_oneof![Just(u32::MAX), Just(0), Just(SCREEN_W), Just(SCREEN_H)],
    ]
}

pub(crate) fn layer() -> impl Strategy<Value = Layer> {
    let solid = (
        any::<i32>(),
        coord(),
        coord(),
        extent(),
        extent(),
        any::<u32>(),
    )
        .prop_map(|(z, x, y, w, h, argb)| Layer {
            z: z % 8,
            rect: Rect::new(x, y, w, h),
            fill: Fill::Solid(argb | 0xff00_0000),
        });
    // Pixel layers stay small (they are allocated); the count is sometimes wrong.
    let pixels = (
        -4i32..4,
        -20i32..70,
        -20i32..60,
        0u32..40,
        0u32..30,
        prop_oneof![8 => Just(0i64), 1 => -2i64..=2],
        any::<u32>(),
    )
        .prop_map(|(z, x, y, w, h, delta, seed)| {
            let n = usize::try_from((i64::from(w) * i64::from(h) + delta).max(0)).unwrap_or(0);
            let px = (0..n as u32)
                .map(|i| seed.wrapping_mul(2_654_435_761).wrapping_add(i) | 0xff00_0000)
                .collect();
            Layer {
                z,
                rect: Rect::new(x, y, w, h),
                fill: Fill::Pixels(px),
            }
        });
    prop_oneof![3 => solid, 2 => pixels]
}

pub(crate) fn surface() -> impl Strategy<Value = Surface> {
    let ordinary = (
        prop_oneof![10 => 0u32..66, 1 => any::<u32>()],
        prop_oneof![10 => 0u32..50, 1 => any::<u32>()],
        proptest::collection::vec(layer(), 0..5),
    )
        .prop_map(|(width, height, layers)| Surface {
            width,
            height,
            layers,
        });
    // One layer past the limit: refused whole.
    let too_many = (1u32..8, 1u32..8).prop_map(|(width, height)| Surface {
        width,
        height,
        layers: vec![
            Layer {
                z: 0,
                rect: Rect::new(0, 0, 1, 1),
                fill: Fill::Solid(0xff12_3456),
            };
            MAX_LAYERS + 1
        ],
    });
    prop_oneof![40 => ordinary, 1 => too_many]
}

pub(crate) fn kind() -> impl Strategy<Value = EventKind> {
    proptest::sample::select(EventKind::ALL.to_vec())
}

pub(crate) fn category() -> impl Strategy<Value = ThreadCategory> {
    proptest::sample::select(ThreadCategory::ALL.to_vec())
}

pub(crate) fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        5 => "[a-z0-9-]{0,12}",
        1 => "\\PC{0,40}",
        1 => "[é✓a]{20,40}",
    ]
}

pub(crate) fn req() -> impl Strategy<Value = ReqGen> {
    let plain = prop_oneof![
        1 => (extent(), extent(), name())
            .prop_map(|(width, height, name)| Request::Attach { width, height, name }),
        1 => Just(Request::Detach),
        5 => (0u32..12, surface())
            .prop_map(|(surface_id, surface)| Request::Compose { surface_id, surface }),
        5 => (0u32..12, coord(), coord()).prop_map(|(surface_id, x, y)| Request::Draw {
            surface_id,
            x,
            y
        }),
        5 => (kind(), proptest::option::weighted(0.8, 0u32..6))
            .prop_map(|(kind, h)| Request::EsmRegister { kind, handler: h.map(HandlerId) }),
        2 => any::<bool>().prop_map(|off| Request::WmScreen {
            screen: if off { Screen::Off } else { Screen::On }
        }),
        1 => Just(Request::Snapshot),
        1 => Just(Request::ListWindows),
        2 => Just(Request::Frame),
        3 => proptest::collection::vec((0u32..12, coord(), coord()), 1..4).prop_map(|v| {
            Request::DrawBatch(
                v.into_iter()
                    .map(|(surface_id, x, y)| DrawItem { surface_id, x, y })
                    .collect(),
            )
        }),
    ];
    let tid = prop_oneof![
        4 => any::<u8>().prop_map(TidGen::Own),
        2 => (any::<u8>(), any::<u8>()).prop_map(|(a, t)| TidGen::OtherApp(a, t)),
        1 => Just(TidGen::Zero),
        1 => any::<u32>().prop_map(TidGen::Any),
    ];
    let fit_compose = (
        0u32..10,
        any::<u8>(),
        any::<u8>(),
        proptest::collection::vec(layer(), 0..5),
    )
        .prop_map(|(surface_id, width, height, layers)| ReqGen::FitCompose {
            surface_id,
            width,
            height,
            layers,
        });
    let fit_draw = (any::<u8>(), any::<u8>(), any::<u8>())
        .prop_map(|(surface, x, y)| ReqGen::FitDraw { surface, x, y });
    prop_oneof![
        20 => plain.prop_map(ReqGen::Plain),
        10 => fit_compose,
        14 => fit_draw,
        4 => proptest::collection::vec((any::<u8>(), any::<u8>(), any::<u8>()), 1..5)
            .prop_map(ReqGen::FitDrawBatch),
        3 => (category(), tid).prop_map(|(c, t)| ReqGen::Thread(c, t)),
        3 => target().prop_map(ReqGen::Foreground),
        3 => target().prop_map(ReqGen::Background),
        2 => (target(), any::<bool>()).prop_map(|(t, c)| ReqGen::Cover(t, c)),
    ]
}

pub(crate) fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), 1u8..=255).prop_map(|(at, xor)| Mutation::Flip { at, xor }),
        2 => any::<usize>().prop_map(|keep| Mutation::Truncate { keep }),
        2 => (any::<[u8; 4]>(), 1u8..=4).prop_map(|(bytes, n)| Mutation::Append { bytes, n }),
        2 => prop_oneof![
            any::<u32>(),
            0u32..64,
            Just(MAX_DATA_LEN),
            Just(MAX_DATA_LEN + 1),
            Just(u32::MAX)
        ]
        .prop_map(Mutation::SetLength),
        1 => prop_oneof![0u32..14, any::<u32>()].prop_map(Mutation::SetType),
        2 => (any::<usize>(), any::<u32>()).prop_map(|(at, word)| Mutation::Overwrite { at, word }),
    ]
}

pub(crate) fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![
        6 => Just(Mode::Direct),
        3 => Just(Mode::Encoded),
        1 => proptest::collection::vec(mutation(), 1..4).prop_map(Mode::Mutated),
    ]
}

pub(crate) fn raw_event() -> impl Strategy<Value = RawEvent> {
    let phase = proptest::sample::select(vec![TouchPhase::Down, TouchPhase::Move, TouchPhase::Up]);
    prop_oneof![
        4 => (phase, -5i32..70, -5i32..50).prop_map(|(phase, x, y)| RawEvent::Touch { phase, x, y }),
        1 => (any::<u16>(), any::<bool>()).prop_map(|(code, pressed)| RawEvent::Key { code, pressed }),
        1 => (-3i32..3, -3i32..3, 0u32..4)
            .prop_map(|(dx, dy, buttons)| RawEvent::Mouse { dx, dy, buttons }),
        1 => (0u32..3, 0u32..100).prop_map(|(channel, len)| RawEvent::Net { channel, len }),
        1 => (0u32..3).prop_map(|id| RawEvent::Timer { id }),
    ]
}

pub(crate) fn random_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Noise.
        2 => proptest::collection::vec(any::<u8>(), 0..64),
        // A plausible header (request type 1..=12, small length) and a random body.
        3 => (1u32..=12, proptest::collection::vec(any::<u8>(), 0..80), any::<bool>()).prop_map(
            |(ty, body, exact)| {
                let len = if exact { body.len() as u32 } else { body.len() as u32 + 3 };
                let mut b = ty.to_le_bytes().to_vec();
                b.extend_from_slice(&len.to_le_bytes());
                b.extend_from_slice(&body);
                b
            }
        ),
    ]
}

/// What a window manager sends on the privileged control socket.
pub(crate) fn wm_req() -> impl Strategy<Value = ReqGen> {
    prop_oneof![
        3 => target().prop_map(ReqGen::Foreground),
        3 => target().prop_map(ReqGen::Background),
        3 => (target(), any::<bool>()).prop_map(|(t, c)| ReqGen::Cover(t, c)),
        1 => any::<bool>().prop_map(|off| ReqGen::Plain(Request::WmScreen {
            screen: if off { Screen::Off } else { Screen::On }
        })),
    ]
}

pub(crate) fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (wm_req(), prop_oneof![3 => Just(Mode::Direct), 1 => Just(Mode::Encoded)])
            .prop_map(|(req, mode)| Op::Send { via: Via::Control { privileged: true }, req, mode }),
        14 => (via(), req(), mode()).prop_map(|(via, req, mode)| Op::Send { via, req, mode }),
        1 => (via(), random_bytes()).prop_map(|(via, bytes)| Op::Bytes { via, bytes }),
        4 => (
            prop_oneof![6 => 1u32..40, 1 => Just(0u32), 1 => extent()],
            prop_oneof![6 => 1u32..36, 1 => Just(0u32), 1 => extent()],
            name()
        )
            .prop_map(|(width, height, name)| Op::Attach { width, height, name }),
        1 => target().prop_map(Op::Close),
        1 => (any::<u8>(), 0u32..4, 1u8..=12)
            .prop_map(|(app, first, count)| Op::Flood { app, first, count }),
        1 => (any::<u8>(), 0u32..4, 1u8..=MAX_SURFACES as u8)
            .prop_map(|(app, first, count)| Op::Hoard { app, first, count }),
        4 => raw_event().prop_map(Op::Inject),
        3 => target().prop_map(Op::Wait),
    ]
}

/// A case: the apps attached first, then the steps.
pub(crate) fn case(steps: usize) -> impl Strategy<Value = (Vec<(u32, u32)>, Vec<Op>)> {
    (
        proptest::collection::vec((1u32..=SCREEN_W, 1u32..=SCREEN_H), 1..=MAX_LIVE),
        proptest::collection::vec(op(), 1..steps),
    )
}
