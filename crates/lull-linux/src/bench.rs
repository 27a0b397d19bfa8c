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
