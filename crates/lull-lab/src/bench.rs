//! In-process throughput of the ESM's interpreter and dispatcher (`lull bench dispatch`).
//!
//! Every app registers one handler for touch motion and waits in `EV_WAIT`. One round injects a
//! raw event, takes the pushes the dispatcher hands out, and lets each pushed app call `wait`
//! again (its handler did nothing), so the loop exercises exactly the ESM's share of an event's
//! path: interpretation, the application-list look-up, the push and the return to `EV_WAIT`.

use std::hint::black_box;
use std::time::Instant;

use lull_esm::{Delivery, Esm, EsmConfig, Push};
use lull_model::{AppId, EventKind, HandlerId, RawEvent, TouchPhase};
use serde::Serialize;

/// App counts the issue asks for.
pub const DEFAULT_APP_COUNTS: [usize; 3] = [1, 10, 100];
/// Deliveries per measured run: enough for runs of a few hundred milliseconds here, so timer
/// resolution and start-up vanish in the mean.
pub const DEFAULT_DELIVERIES_PER_RUN: u64 = 20_000_000;
/// Repetitions per app count; the best is reported, as the least disturbed by the rest of the
/// machine.
pub const DEFAULT_REPEATS: u32 = 3;

/// One measured run.
#[derive(Clone, Copy, PartialEq, Debug, Serialize)]
pub struct DispatchRun {
    pub apps: usize,
    pub events: u64,
    /// Raw events through interpreter and dispatcher per second.
    pub events_per_s: f64,
    /// (event, app) deliveries per second: `events_per_s × apps`.
    pub deliveries_per_s: f64,
    pub ns_per_event: f64,
    pub ns_per_delivery: f64,
}

/// Where an event's time goes, for one listening app.
#[derive(Clone, Copy, PartialEq, Debug, Serialize)]
pub struct DispatchBreakdown {
    /// Interpreter and application-list look-up only: nobody listens, the event is dropped.
    pub no_listener_ns: f64,
    /// The app waits in `EV_WAIT`: interpret, look up, push, and the app's `wait` (empty queue).
    pub direct_push_ns: f64,
    /// The app is busy: interpret, look up, append to its private queue, and later the `wait`
    /// that pops it.
    pub queued_ns: f64,
}

#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct DispatchBench {
    pub runs: Vec<DispatchRun>,
    pub breakdown: DispatchBreakdown,
}

/// Bench settings.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct DispatchBenchConfig {
    pub app_counts: Vec<usize>,
    pub deliveries_per_run: u64,
    pub repeats: u32,
}

impl Default for DispatchBenchConfig {
    fn default() -> Self {
        DispatchBenchConfig {
            app_counts: DEFAULT_APP_COUNTS.to_vec(),
            deliveries_per_run: DEFAULT_DELIVERIES_PER_RUN,
            repeats: DEFAULT_REPEATS,
        }
    }
}

fn motion(i: u64) -> RawEvent {
    // Vary the payload so nothing can be hoisted out of the loop.
    let x = (i & 0x3ff) as i32;
    RawEvent::Touch {
        phase: TouchPhase::Move,
        x,
        y: x ^ 0x155,
    }
}

fn waiting_apps(n: usize) -> (Esm, Vec<AppId>) {
    let mut esm = Esm::new(EsmConfig::default()).expect("default config is valid");
    let apps: Vec<AppId> = (0..n).map(|_| esm.add_app()).collect();
    for (i, &app) in apps.iter().enumerate() {
        let handler = HandlerId(u32::try_from(i).unwrap_or(u32::MAX));
        esm.register(app, EventKind::TouchMotion, Some(handler))
            .expect("app is attached");
        let _ = esm.wait(app).expect("app is attached");
    }
    (esm, apps)
}

/// One run of `events` rounds over `apps` waiting apps; returns the elapsed nanoseconds.
fn run_once(apps: usize, events: u64) -> u64 {
    let (mut esm, _) = waiting_apps(apps);
    let mut pushed: Vec<AppId> = Vec::with_capacity(apps);
    let mut checksum = 0u64;
    let start = Instant::now();
    for i in 0..events {
        esm.inject(motion(i), i, |p: Push| {
            if let Delivery::Event { event, .. } = p.delivery {
                checksum = checksum.wrapping_add(event.seq.0);
            }
            pushed.push(p.app);
        });
        for &app in &pushed {
            let next = esm.wait(app).expect("pushed apps are attached");
            debug_assert!(next.is_none());
        }
        pushed.clear();
    }
    let elapsed = start.elapsed();
    black_box(checksum);
    assert_eq!(
        esm.counters().pushed_direct,
        events * apps as u64,
        "every delivery was pushed"
    );
    u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX).max(1)
}

fn per_event_ns(events: u64, mut f: impl FnMut(u64)) -> f64 {
    let start = Instant::now();
    for i in 0..events {
        f(i);
    }
    start.elapsed().as_nanos() as f64 / events as f64
}

fn breakdown(events: u64, direct_push_ns: f64) -> DispatchBreakdown {
    let mut esm = Esm::new(EsmConfig::default()).expect("default config is valid");
    let no_listener_ns = per_event_ns(events, |i| {
        black_box(esm.inject(motion(i), i, |_| {}));
    });
    // A freshly added app is running and never waits on an empty queue here, so every event is
    // queued and later popped; batches stay within the queue bound so nothing overflows.
    let mut esm = Esm::new(EsmConfig::default()).expect("default config is valid");
    let app = esm.add_app();
    esm.register(app, EventKind::TouchMotion, Some(HandlerId(0)))
        .expect("attached");
    let batch = esm.queue_bound() as u64;
    let batches = (events / batch).max(1);
    let queued_ns = per_event_ns(batches, |b| {
        for i in 0..batch {
            black_box(esm.inject(motion(b * batch + i), i, |_| {}));
        }
        for _ in 0..batch {
            black_box(esm.wait(app).expect("attached"));
        }
    }) / batch as f64;
    assert_eq!(
        esm.counters().overflow_dropped,
        0,
        "batches fit the queue bound"
    );
    DispatchBreakdown {
        no_listener_ns,
        direct_push_ns,
        queued_ns,
    }
}

/// Runs the dispatch benchmark.
#[must_use]
pub fn dispatch(config: &DispatchBenchConfig) -> DispatchBench {
    let runs = config
        .app_counts
        .iter()
        .map(|&apps| {
            let apps = apps.max(1);
            let events = (config.deliveries_per_run / apps as u64).max(1);
            let best_ns = (0..config.repeats.max(1))
                .map(|_| run_once(apps, events))
                .min()
                .unwrap_or(1);
            let secs = best_ns as f64 / 1e9;
            DispatchRun {
                apps,
                events,
                events_per_s: events as f64 / secs,
                deliveries_per_s: (events * apps as u64) as f64 / secs,
                ns_per_event: best_ns as f64 / events as f64,
                ns_per_delivery: best_ns as f64 / (events * apps as u64) as f64,
            }
        })
        .collect::<Vec<_>>();
    let round_ns = match runs.iter().find(|r: &&DispatchRun| r.apps == 1) {
        Some(r) => r.ns_per_event,
        None => {
            run_once(1, config.deliveries_per_run.max(1)) as f64
                / config.deliveries_per_run.max(1) as f64
        }
    };
    DispatchBench {
        breakdown: breakdown(config.deliveries_per_run.max(1), round_ns),
        runs,
    }
}

// The KDS compositor (`lull bench compose`): seed 000's figure 16 compose and figure 17 draw on
// full-screen layers, timed beside a plain copy of the same bytes measured in the same run.

/// Layers, each covering the whole surface: the benchmark of docs/kds.md.
pub const COMPOSE_LAYERS: u32 = 4;
/// Surface, window and screen width: 1080p, the seed's video size.
pub const COMPOSE_WIDTH_PX: u32 = 1920;
/// Surface, window and screen height.
pub const COMPOSE_HEIGHT_PX: u32 = 1080;
/// Measured iterations per path. A 1080p compose takes a few milliseconds, so 30 rounds of the
/// three paths take well under a second; 30 samples make the nearest-rank p90 the 27th.
pub const DEFAULT_COMPOSE_ITERATIONS: u32 = 30;
/// Unmeasured rounds first, so page faults of the fresh buffers and the allocator's first
/// mappings are not in the figures.
pub const DEFAULT_COMPOSE_WARMUP: u32 = 3;

/// Median and 90th percentile (nearest rank) of one path's samples, in milliseconds.
#[derive(Clone, Copy, PartialEq, Debug, Serialize)]
pub struct MsSummary {
    pub median: f64,
    pub p90: f64,
}

impl MsSummary {
    fn of(samples_ns: &mut [u64]) -> MsSummary {
        samples_ns.sort_unstable();
        let ms = |p| lull_model::stats::nearest_rank(samples_ns, p).unwrap_or(0) as f64 / 1e6;
        MsSummary {
            median: ms(50),
            p90: ms(90),
        }
    }
}

/// One run of the compositor benchmark.
#[derive(Clone, Copy, PartialEq, Debug, Serialize)]
pub struct ComposeBench {
    pub layers: u32,
    pub width: u32,
    pub height: u32,
    pub iterations: u32,
    /// `compose` of the layers and `Pixmap::draw` of the result into a window-sized buffer.
    pub compose_draw_ms: MsSummary,
    /// `Kds::handle` of `COMPOSE` then `DRAW` from a full-screen app: the same work plus keeping
    /// the surface in its slot and restacking the damaged screen.
    pub server_path_ms: MsSummary,
    /// `copy_from_slice` of the layers' bytes (`layers × width × height × 4`).
    pub memcpy_ms: MsSummary,
    /// `compose_draw_ms.median / memcpy_ms.median` (the goal: at most 3).
    pub ratio: f64,
    /// `server_path_ms.median / memcpy_ms.median`.
    pub server_path_ratio: f64,
}

/// Compositor bench settings.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ComposeBenchConfig {
    pub iterations: u32,
    pub warmup: u32,
}

impl Default for ComposeBenchConfig {
    fn default() -> Self {
        ComposeBenchConfig {
            iterations: DEFAULT_COMPOSE_ITERATIONS,
            warmup: DEFAULT_COMPOSE_WARMUP,
        }
    }
}

/// Why the compositor bench could not run.
#[derive(Clone, PartialEq, Debug, thiserror::Error)]
pub enum ComposeBenchError {
    #[error("compose: {0}")]
    Compose(#[from] lull_kds::ComposeError),
    #[error("draw: {0}")]
    Draw(#[from] lull_kds::DrawError),
    #[error("the display server refused the bench's {request}: {message}")]
    Server {
        request: &'static str,
        message: String,
    },
}

/// The layers: full-screen pixels, different in every layer so no copy can be skipped as equal.
fn bench_surface() -> lull_kds::Surface {
    let n = COMPOSE_WIDTH_PX * COMPOSE_HEIGHT_PX;
    lull_kds::Surface {
        width: COMPOSE_WIDTH_PX,
        height: COMPOSE_HEIGHT_PX,
        layers: (0..COMPOSE_LAYERS)
            .map(|z| lull_kds::Layer {
                z: i32::try_from(z).unwrap_or(i32::MAX),
                rect: lull_kds::Rect::new(0, 0, COMPOSE_WIDTH_PX, COMPOSE_HEIGHT_PX),
                // Knuth's multiplicative hash: cheap, and no two neighbouring pixels alike.
                fill: lull_kds::Fill::Pixels(
                    (0..n).map(|i| i.wrapping_mul(2_654_435_761) ^ z).collect(),
                ),
            })
            .collect(),
    }
}

fn server_refusal(
    request: &'static str,
    reply: Option<lull_kds::wire::Reply>,
) -> ComposeBenchError {
    let message = match reply {
        Some(lull_kds::wire::Reply::Error { message, .. }) => message,
        other => format!("unexpected reply {other:?}"),
    };
    ComposeBenchError::Server { request, message }
}

fn elapsed_ns(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_nanos())
        .unwrap_or(u64::MAX)
        .max(1)
}

/// Runs the compositor benchmark: each round times the three paths once, in a rotating order so
/// that none always runs with the caches the previous one left.
///
/// # Errors
/// [`ComposeBenchError`] if the compositor or the server refuses the work (a fault in them).
pub fn compose(config: &ComposeBenchConfig) -> Result<ComposeBench, ComposeBenchError> {
    use lull_kds::server::{Channel, Kds};
    use lull_kds::wire::{Reply, Request};

    let compose_req = Request::Compose {
        surface_id: 1,
        surface: bench_surface(),
    };
    let Request::Compose {
        surface: surface_ref,
        ..
    } = &compose_req
    else {
        unreachable!("built as a COMPOSE just above")
    };
    let draw_req = Request::Draw {
        surface_id: 1,
        x: 0,
        y: 0,
    };
    let mut window = lull_kds::Pixmap::new(COMPOSE_WIDTH_PX, COMPOSE_HEIGHT_PX)?;

    let mut kds = Kds::new(COMPOSE_WIDTH_PX, COMPOSE_HEIGHT_PX)?;
    let mut esm = Esm::new(EsmConfig::default()).expect("default config is valid");
    let app = esm.add_app();
    // 0 × 0 asks for the whole screen.
    kds.attach(&mut esm, app, std::process::id(), 0, 0, "bench")
        .map_err(|e| ComposeBenchError::Server {
            request: "ATTACH",
            message: e.message,
        })?;
    let any_thread = |_: u32, _: u32| true;

    let layer_len = (COMPOSE_WIDTH_PX * COMPOSE_HEIGHT_PX) as usize;
    let mut dst = vec![0u32; layer_len * COMPOSE_LAYERS as usize];

    let mut compose_draw = || -> Result<u64, ComposeBenchError> {
        let start = Instant::now();
        let flat = lull_kds::compose(black_box(surface_ref))?;
        window.draw(0, 0, &flat)?;
        drop(flat);
        let ns = elapsed_ns(start);
        black_box(window.pixels().as_ptr());
        Ok(ns)
    };
    let mut server_path = || -> Result<u64, ComposeBenchError> {
        let start = Instant::now();
        let o = kds.handle(
            &mut esm,
            Channel::Private(app),
            black_box(&compose_req),
            &any_thread,
        );
        if !matches!(o.reply, Some(Reply::Composed { .. })) {
            return Err(server_refusal("COMPOSE", o.reply));
        }
        let o = kds.handle(&mut esm, Channel::Private(app), &draw_req, &any_thread);
        let ns = elapsed_ns(start);
        if !matches!(o.reply, Some(Reply::Ok { .. })) {
            return Err(server_refusal("DRAW", o.reply));
        }
        black_box(kds.take_damage());
        Ok(ns)
    };
    let mut memcpy = || -> u64 {
        let start = Instant::now();
        for (layer, chunk) in surface_ref
            .layers
            .iter()
            .zip(dst.chunks_exact_mut(layer_len))
        {
            if let lull_kds::Fill::Pixels(p) = &layer.fill {
                chunk.copy_from_slice(black_box(p));
            }
        }
        let ns = elapsed_ns(start);
        black_box(dst.as_ptr());
        ns
    };

    let iterations = config.iterations.max(1);
    let mut samples: [Vec<u64>; 3] =
        std::array::from_fn(|_| Vec::with_capacity(iterations as usize));
    for round in 0..config.warmup + iterations {
        let mut times = [0u64; 3];
        for k in 0..3 {
            let path = (round as usize + k) % 3;
            times[path] = match path {
                0 => compose_draw()?,
                1 => server_path()?,
                _ => memcpy(),
            };
        }
        if round >= config.warmup {
            for (s, t) in samples.iter_mut().zip(times) {
                s.push(t);
            }
        }
    }
    let [mut cd, mut sp, mut mc] = samples;
    let (compose_draw_ms, server_path_ms, memcpy_ms) = (
        MsSummary::of(&mut cd),
        MsSummary::of(&mut sp),
        MsSummary::of(&mut mc),
    );
    let per_copy = |ms: f64| {
        if memcpy_ms.median > 0.0 {
            ms / memcpy_ms.median
        } else {
            f64::INFINITY
        }
    };
    Ok(ComposeBench {
        layers: COMPOSE_LAYERS,
        width: COMPOSE_WIDTH_PX,
        height: COMPOSE_HEIGHT_PX,
        iterations,
        compose_draw_ms,
        server_path_ms,
        memcpy_ms,
        ratio: per_copy(compose_draw_ms.median),
        server_path_ratio: per_copy(server_path_ms.median),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compose_bench_runs_every_path() {
        let r = compose(&ComposeBenchConfig {
            iterations: 1,
            warmup: 0,
        })
        .expect("the bench's requests are valid");
        assert_eq!(
            (r.layers, r.width, r.height, r.iterations),
            (4, 1920, 1080, 1)
        );
        for s in [r.compose_draw_ms, r.server_path_ms, r.memcpy_ms] {
            assert!(s.median > 0.0 && s.p90 >= s.median);
        }
        assert!(r.ratio > 0.0 && r.server_path_ratio > 0.0);
    }
}
