//! The data plane's routing table: which producer (a connection that said `Produce`) writes
//! into which app's ring, for which kinds. The daemon creates every ring, sends the producer its
//! end in `Route` and the app its end in `Ring`, keeps its own copy of each memfd to read the
//! ring's counters, and keeps the last counts of the rings it retired. Nothing here runs per
//! event: a route changes when an app registers, unregisters or goes, or a producer comes or goes.

use std::collections::HashMap;
use std::os::fd::OwnedFd;

use lull_model::AppId;

/// The routes of every producer, and the accounting of the rings already retired.
#[derive(Default)]
pub(crate) struct Routes {
    /// Connections that said `Produce`: each writes its events straight into the rings of the
    /// apps it is routed to (the data plane); the daemon only keeps the routes.
    pub(crate) producers: HashMap<AppId, ProducerRoutes>,
    /// Rings retired (their app or producer gone), read one last time from their memfd.
    pub(crate) retired: Vec<RingRoute>,
    pub(crate) next_producer: u32,
}

impl Routes {
    /// Whether the connection `app` said `Produce`.
    pub(crate) fn is_producer(&self, app: AppId) -> bool {
        self.producers.contains_key(&app)
    }

    /// The connections that said `Produce`.
    pub(crate) fn producer_ids(&self) -> Vec<AppId> {
        self.producers.keys().copied().collect()
    }
}

/// One producer's routes: per app, the ring the daemon made and the kinds routed to it.
pub(crate) struct ProducerRoutes {
    pub(crate) id: u32,
    pub(crate) kinds: u32,
    pub(crate) rings: HashMap<AppId, RouteRing>,
}

pub(crate) struct RouteRing {
    /// The daemon's own copy of the ring's memfd, to read its counters.
    pub(crate) memfd: OwnedFd,
    pub(crate) kinds: u32,
}

/// Records a ring holds (one per app and producer): 16,384 × 64 bytes = 1 MiB, sized by
/// measurement (`lull bench fanout`'s `ring_high_water`, docs/live.md): at 100,000
/// events/s per app (the fan-out target of docs/live.md) it covers 164 ms of an app not running. On this 2-core machine loaded by
/// builds (load average 9-17), the apps of a 20-client fan-out at that rate fell 1,426 to
/// 12,345 records behind in six 5 s runs, and once one app was not run for longer (its drops
/// counted and marked); the 1,024 of the first rings covered 10 ms. The kernel backs a page only
/// once it is written, so a slow source costs what it uses.
pub const RING_CAPACITY: u64 = 16_384;

/// One ring's accounting, read from its memfd: `produced = delivered + dropped` holds from the
/// producer's side; `consumed` is what the app says it read (events and markers).
#[derive(Clone, Copy, PartialEq, Eq, Debug, serde::Serialize)]
pub struct RingRoute {
    pub producer: u32,
    pub app: AppId,
    pub ring: lull_os::event_ring::RingObservation,
}
