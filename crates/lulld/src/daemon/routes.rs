//! The daemon's side of the data plane's routing table ([`crate::routes`]): making each ring,
//! sending its ends to the producer (`Route`) and the app (`Ring`), and retiring the rings of a
//! connection that goes.

use std::collections::HashMap;
use std::os::fd::AsRawFd;

use lull_esm::protocol::DaemonMsg;
use lull_model::AppId;
use lull_os::event_loop::LoopCtl;
use lull_os::sys;

use super::{Closer, DaemonState};
use crate::routes::{ProducerRoutes, RingRoute, RouteRing, RING_CAPACITY};

impl DaemonState {
    /// Sends producer `p` a `Route` without descriptors, and says so in its cell.
    fn send_route(&mut self, p: AppId, app: AppId, kinds: u32, ctl: &mut LoopCtl<DaemonState>) {
        self.send(p, DaemonMsg::Route { app, kinds }, ctl);
        self.bump_routes(p);
    }

    /// Moves producer `p`'s route generation after a `Route` went out, so that it reads its
    /// socket before its next event (and only then).
    fn bump_routes(&self, p: AppId) {
        if let Some(c) = self.conns.get(&p) {
            c.cell.daemon_bump_routes();
        }
    }

    /// The connection `app` said `Produce { kinds }`: it stops being an app and gets a ring for
    /// every app registered for one of `kinds`, then `Registered`.
    pub(crate) fn add_producer(&mut self, app: AppId, kinds: u32, ctl: &mut LoopCtl<DaemonState>) {
        if self.routes.producers.contains_key(&app) || kinds == 0 {
            self.reject(app, ctl);
            return;
        }
        // It stops being an app: nothing is delivered to it through the ESM.
        let _ = self.esm.remove_app(app);
        self.watched.retain(|&a| a != app);
        let id = self.routes.next_producer;
        self.routes.next_producer += 1;
        self.routes.producers.insert(
            app,
            ProducerRoutes {
                id,
                kinds,
                rings: HashMap::new(),
            },
        );
        let apps: Vec<AppId> = self.esm.apps().collect();
        for a in apps {
            self.route(app, a, ctl);
        }
        self.send(app, DaemonMsg::Registered, ctl);
    }

    /// The kinds producer `p` should push to `app`: those it produces that the app registered,
    /// no input kind while the app's input is suspended (network and timer events still go, as
    /// the ESM delivers them to a suspended app).
    pub(crate) fn route_kinds(&self, p_kinds: u32, app: AppId) -> u32 {
        let Ok(suspended) = self.esm.input_suspended(app) else {
            return 0;
        };
        lull_model::EventKind::ALL
            .iter()
            .filter(|k| p_kinds & (1 << k.index()) != 0)
            .filter(|k| !(suspended && k.is_input()))
            .filter(|&&k| matches!(self.esm.handler(app, k), Ok(Some(_))))
            .fold(0, |m, k| m | (1 << k.index()))
    }

    /// Brings producer `p`'s route to `app` up to date: a new ring (to both ends) when the app
    /// gains its first routed kind, a `Route` when the kinds change.
    pub(crate) fn route(&mut self, p: AppId, app: AppId, ctl: &mut LoopCtl<DaemonState>) {
        let Some(pr) = self.routes.producers.get(&p) else {
            return;
        };
        let kinds = self.route_kinds(pr.kinds, app);
        let (id, known) = (pr.id, pr.rings.get(&app).map(|r| r.kinds));
        match known {
            Some(k) if k == kinds => {}
            Some(_) if kinds == 0 => {
                // Nothing routed any more: the ring is retired on both sides (a later
                // registration makes a new one).
                if let Some(r) = self
                    .routes
                    .producers
                    .get_mut(&p)
                    .and_then(|pr| pr.rings.remove(&app))
                {
                    if let Ok(ring) = lull_os::event_ring::RingConsumer::observe(&r.memfd) {
                        self.routes.retired.push(RingRoute {
                            producer: id,
                            app,
                            ring,
                        });
                    }
                }
                self.send_route(p, app, kinds, ctl);
            }
            Some(_) => {
                if let Some(r) = self
                    .routes
                    .producers
                    .get_mut(&p)
                    .and_then(|pr| pr.rings.get_mut(&app))
                {
                    r.kinds = kinds;
                }
                self.send_route(p, app, kinds, ctl);
            }
            None if kinds == 0 => {}
            None => {
                let Ok((ring, fds)) = lull_os::event_ring::RingProducer::create(RING_CAPACITY)
                else {
                    self.counters.cell_failures += 1;
                    return;
                };
                drop(ring);
                let Ok(memfd) = fds.memfd.try_clone() else {
                    self.counters.cell_failures += 1;
                    return;
                };
                let raw = [fds.memfd.as_raw_fd(), fds.eventfd.as_raw_fd()];
                // The producer's end first: the app's copy is the one it may scribble on.
                let Some(pfd) = self.conns.get(&p).map(|c| c.fd.as_raw_fd()) else {
                    return;
                };
                DaemonMsg::Route { app, kinds }.encode(&mut self.buf);
                if sys::send_with_fds(pfd, &self.buf, &raw).is_err() {
                    self.counters.not_reading_dropped += 1;
                    self.disconnect(p, Some(ctl), Closer::Other);
                    return;
                }
                self.bump_routes(p);
                if let Some(pr) = self.routes.producers.get_mut(&p) {
                    pr.rings.insert(app, RouteRing { memfd, kinds });
                }
                let Some(afd) = self.conns.get(&app).map(|c| c.fd.as_raw_fd()) else {
                    return;
                };
                DaemonMsg::Ring { producer: id }.encode(&mut self.buf);
                if sys::send_with_fds(afd, &self.buf, &raw).is_err() {
                    self.counters.not_reading_dropped += 1;
                    self.disconnect(app, Some(ctl), Closer::Other);
                }
            }
        }
    }

    /// Brings every producer's route to `app` up to date with the ESM: after the display server
    /// registered a handler for it or suspended or restored its input (the routing's one entry
    /// for components that change the ESM behind the ESM socket's back).
    pub(crate) fn reroute(&mut self, app: AppId, ctl: &mut LoopCtl<DaemonState>) {
        if self.routes.producers.is_empty() || self.routes.producers.contains_key(&app) {
            return;
        }
        for p in self.routes.producer_ids() {
            self.route(p, app, ctl);
        }
    }

    /// Every ring's accounting: the live ones read now, and the retired ones.
    #[must_use]
    pub fn rings(&self) -> Vec<RingRoute> {
        let mut out = self.routes.retired.clone();
        for pr in self.routes.producers.values() {
            for (&app, r) in &pr.rings {
                if let Ok(ring) = lull_os::event_ring::RingConsumer::observe(&r.memfd) {
                    out.push(RingRoute {
                        producer: pr.id,
                        app,
                        ring,
                    });
                }
            }
        }
        out
    }

    /// Drops the routes that `app` (an app or a producer) was part of, keeping their last counts.
    pub(crate) fn routes_gone(&mut self, app: AppId, ctl: Option<&mut LoopCtl<DaemonState>>) {
        let retire = |id: u32, a: AppId, r: RouteRing, out: &mut Vec<RingRoute>| {
            if let Ok(ring) = lull_os::event_ring::RingConsumer::observe(&r.memfd) {
                out.push(RingRoute {
                    producer: id,
                    app: a,
                    ring,
                });
            }
        };
        if let Some(pr) = self.routes.producers.remove(&app) {
            for (a, r) in pr.rings {
                retire(pr.id, a, r, &mut self.routes.retired);
            }
        }
        let mut tell = Vec::new();
        for (&p, pr) in &mut self.routes.producers {
            if let Some(r) = pr.rings.remove(&app) {
                retire(pr.id, app, r, &mut self.routes.retired);
                tell.push(p);
            }
        }
        if let Some(ctl) = ctl {
            for p in tell {
                self.send_route(p, app, 0, ctl);
            }
        }
    }
}
