//! The global application list, the private queues and the dispatcher.

use std::collections::VecDeque;

use lull_model::{AppEvent, AppId, EventKind, EventSeq, HandlerId, RawEvent};
use serde::Serialize;

use crate::counters::{AppCounters, EsmCounters};
use crate::interpreter::interpret;

/// Default bound on the number of events one private queue holds.
///
/// Source: Linux `drivers/input/evdev.c`, `EVDEV_MIN_BUFFER_SIZE` (64): the smallest per-client
/// buffer the kernel gives an input device's reader. A handler that falls 64 events behind a
/// stylus (about a third of a second of the seed's fastest trace) has stopped keeping up.
pub const DEFAULT_QUEUE_BOUND: usize = 64;

/// Largest queue bound an [`Esm`] accepts: 64 × the default. A private queue at the bound holds
/// this many deliveries, so with the display server's 64 apps (`lull_kds::server::MAX_APPS`) all
/// stuck the queues hold at most 262,144 deliveries (a few MB); `--queue-bound 1000000` with 60
/// stuck apps took `lulld` from 3 to 265 MB. An app this far behind has stopped reading anyway.
pub const MAX_QUEUE_BOUND: usize = 64 * DEFAULT_QUEUE_BOUND;

/// Most events all private queues hold together: 64 apps' worth at [`MAX_QUEUE_BOUND`], the
/// display server's app limit (`lull_kds::server::MAX_APPS`). ESM connections are not limited to
/// 64, so without this the queues' memory would grow with the number of stuck clients; at this
/// bound they hold at most 262,144 deliveries of 48 bytes (12.6 MB, twice that while a
/// `VecDeque` grows). An event for a busy app past it is dropped as at the app's own bound: an
/// overflow marker tells the app, and it is counted in `overflow_dropped`.
pub const MAX_QUEUED_EVENTS_TOTAL: usize = 64 * MAX_QUEUE_BOUND;

/// Tuning of an [`Esm`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct EsmConfig {
    /// Events one private queue may hold; see [`Delivery::Overflow`] for what happens beyond.
    pub queue_bound: usize,
}

impl Default for EsmConfig {
    fn default() -> Self {
        EsmConfig {
            queue_bound: DEFAULT_QUEUE_BOUND,
        }
    }
}

/// Errors of the ESM's operations. None of them changes any state.
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
pub enum EsmError {
    #[error("no application {0} is attached to the ESM (it left, or the id was never issued)")]
    UnknownApp(AppId),
    #[error("a private queue bound of 0 would drop every event sent to a busy app")]
    ZeroQueueBound,
    #[error("a private queue bound of {0} is over the most allowed, {MAX_QUEUE_BOUND}: each stuck app could hold that many events in the daemon's memory")]
    QueueBoundTooLarge(usize),
}

/// Whether an application is ready to be pushed an event.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AppState {
    /// The seed's `EV_WAIT`: blocked in `esm_wait`, the next event goes straight to it.
    EvWait,
    /// Handling an event or doing anything else; events go to its private queue.
    Running,
}

/// What the ESM hands to an application.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Delivery {
    /// Run `handler` on `event`.
    Event { handler: HandlerId, event: AppEvent },
    /// The overflow rule: when an event reaches an app whose private queue already holds its
    /// bound of events, that event is dropped and counted. The drops form a marker in the queue
    /// at the place the lost events would have taken, and consecutive drops share one marker;
    /// the app receives the marker in order, like evdev's `SYN_DROPPED`, and so knows exactly how
    /// many events (and which sequence numbers) it missed before the next event it does receive.
    /// Markers do not count against the bound, and there is at most one between two events.
    Overflow {
        dropped: u64,
        first: EventSeq,
        last: EventSeq,
    },
}

/// One delivery to one application. The ESM has already set the app to [`AppState::Running`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Push {
    pub app: AppId,
    pub delivery: Delivery,
}

/// What leaving cost an application.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct RemovedApp {
    /// Queued events it never took (counted in [`EsmCounters::discarded_on_exit`]).
    pub discarded_events: u64,
}

type Registrations = [Option<HandlerId>; EventKind::COUNT];

#[derive(Debug)]
struct AppRecord {
    state: AppState,
    queue: VecDeque<Delivery>,
    /// Events (not markers) in `queue`; the bound applies to this.
    queued_events: usize,
    /// The app's handlers as they stand in the application list.
    registered: Registrations,
    /// Input handlers set aside while the app is in the background, restored on foreground.
    suspended_input: Option<Registrations>,
    counters: AppCounters,
}

#[derive(Debug)]
struct Slot {
    generation: u32,
    record: Option<AppRecord>,
}

/// The Event Stream Model: the global application list, one private queue per application, and
/// the interpreter and dispatcher that feed them.
#[derive(Debug)]
pub struct Esm {
    queue_bound: usize,
    /// The seed's global application list: per event kind, the (app, handler) pairs registered.
    app_list: [Vec<(AppId, HandlerId)>; EventKind::COUNT],
    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    next_seq: u64,
    counters: EsmCounters,
}

impl Esm {
    /// An ESM with no applications.
    ///
    /// # Errors
    /// [`EsmError::ZeroQueueBound`] for a queue bound of zero.
    pub fn new(config: EsmConfig) -> Result<Esm, EsmError> {
        if config.queue_bound == 0 {
            return Err(EsmError::ZeroQueueBound);
        }
        if config.queue_bound > MAX_QUEUE_BOUND {
            return Err(EsmError::QueueBoundTooLarge(config.queue_bound));
        }
        Ok(Esm {
            queue_bound: config.queue_bound,
            app_list: Default::default(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            next_seq: 0,
            counters: EsmCounters::default(),
        })
    }

    /// The bound on each private queue.
    #[must_use]
    pub fn queue_bound(&self) -> usize {
        self.queue_bound
    }

    /// Attaches a new application. It starts [`AppState::Running`] — initialising, registering
    /// handlers — and receives nothing until it first calls [`Esm::wait`].
    pub fn add_app(&mut self) -> AppId {
        let record = AppRecord {
            state: AppState::Running,
            queue: VecDeque::new(),
            queued_events: 0,
            registered: [None; EventKind::COUNT],
            suspended_input: None,
            counters: AppCounters::default(),
        };
        if let Some(index) = self.free_slots.pop() {
            let slot = &mut self.slots[index as usize];
            slot.record = Some(record);
            AppId {
                index,
                generation: slot.generation,
            }
        } else {
            let index = u32::try_from(self.slots.len()).expect("fewer than 2^32 live apps");
            self.slots.push(Slot {
                generation: 0,
                record: Some(record),
            });
            AppId::first_in_slot(index)
        }
    }

    /// Detaches an application (it exited, crashed or disconnected): its registrations leave the
    /// application list and its queued events are discarded and counted.
    ///
    /// # Errors
    /// [`EsmError::UnknownApp`] if `app` is not attached.
    pub fn remove_app(&mut self, app: AppId) -> Result<RemovedApp, EsmError> {
        let slot = self
            .slots
            .get_mut(app.index as usize)
            .filter(|s| s.generation == app.generation && s.record.is_some())
            .ok_or(EsmError::UnknownApp(app))?;
        let record = slot.record.take().expect("checked above");
        slot.generation = slot.generation.wrapping_add(1);
        self.free_slots.push(app.index);
        for (kind, handler) in record.registered.iter().enumerate() {
            if handler.is_some() {
                self.app_list[kind].retain(|&(a, _)| a != app);
            }
        }
        let discarded = record.queued_events as u64;
        self.counters.discarded_on_exit += discarded;
        Ok(RemovedApp {
            discarded_events: discarded,
        })
    }

    /// The seed's `esm_register` (figure 7): `Some(handler)` links `kind` to `handler` for `app`,
    /// replacing an earlier handler; `None` removes the app from the kind's list. Events already
    /// queued keep the handler that was registered when they were injected.
    ///
    /// While the app's input is suspended (see [`Esm::suspend_input`]) a registration for an input
    /// kind is remembered and takes effect on [`Esm::restore_input`].
    ///
    /// # Errors
    /// [`EsmError::UnknownApp`] if `app` is not attached.
    pub fn register(
        &mut self,
        app: AppId,
        kind: EventKind,
        handler: Option<HandlerId>,
    ) -> Result<(), EsmError> {
        let record = record_mut(&mut self.slots, app)?;
        if kind.is_input() {
            if let Some(stash) = record.suspended_input.as_mut() {
                stash[kind.index()] = handler;
                return Ok(());
            }
        }
        set_registration(&mut self.app_list, record, app, kind, handler);
        Ok(())
    }

    /// The seed's `esm_wait` (figure 8): if the app's private queue holds anything, the oldest
    /// item is pushed at once and the app is running it; otherwise the app enters `EV_WAIT` and
    /// `None` is returned. Waiting while already in `EV_WAIT` changes nothing.
    ///
    /// # Errors
    /// [`EsmError::UnknownApp`] if `app` is not attached.
    pub fn wait(&mut self, app: AppId) -> Result<Option<Push>, EsmError> {
        let record = record_mut(&mut self.slots, app)?;
        match record.queue.pop_front() {
            None => {
                record.state = AppState::EvWait;
                Ok(None)
            }
            Some(delivery) => {
                record.state = AppState::Running;
                taken_from_queue(&mut self.counters, record, &delivery);
                Ok(Some(Push { app, delivery }))
            }
        }
    }

    /// Hands a running app up to `max` more items of its private queue, oldest first, appended
    /// to `out` (a batch: one wait covers them). The app stays [`AppState::Running`]. Returns how
    /// many were taken.
    ///
    /// # Errors
    /// [`EsmError::UnknownApp`] if `app` is not attached.
    pub fn take_queued(
        &mut self,
        app: AppId,
        max: usize,
        out: &mut Vec<Delivery>,
    ) -> Result<usize, EsmError> {
        let record = record_mut(&mut self.slots, app)?;
        let mut taken = 0;
        while taken < max {
            let Some(delivery) = record.queue.pop_front() else {
                break;
            };
            taken_from_queue(&mut self.counters, record, &delivery);
            out.push(delivery);
            taken += 1;
        }
        Ok(taken)
    }

    /// `esm_wait` for a batch: as [`Esm::wait`], but hands over up to `max` queued items at once
    /// (appended to `out`). With nothing queued the app enters `EV_WAIT` and 0 is returned.
    ///
    /// # Errors
    /// [`EsmError::UnknownApp`] if `app` is not attached.
    pub fn wait_batch(
        &mut self,
        app: AppId,
        max: usize,
        out: &mut Vec<Delivery>,
    ) -> Result<usize, EsmError> {
        let record = record_mut(&mut self.slots, app)?;
        if record.queue.is_empty() {
            record.state = AppState::EvWait;
            return Ok(0);
        }
        record.state = AppState::Running;
        self.take_queued(app, max, out)
    }

    /// Items (events and overflow markers) in `app`'s private queue.
    ///
    /// # Errors
    /// [`EsmError::UnknownApp`] if `app` is not attached.
    pub fn queued_items(&self, app: AppId) -> Result<usize, EsmError> {
        Ok(record(&self.slots, app)?.queue.len())
    }

    /// The interrupt path: the interpreter (figure 10) packages `raw`, stamped with `now_ns`, and
    /// the dispatcher (figure 11) pushes it to every registered app in `EV_WAIT` through `push`,
    /// or queues it for the busy ones. Returns the event's sequence number, or `None` when no app
    /// listens and the event was dropped (counted in [`EsmCounters::no_listener`]).
    #[inline]
    pub fn inject(
        &mut self,
        raw: RawEvent,
        now_ns: u64,
        mut push: impl FnMut(Push),
    ) -> Option<EventSeq> {
        self.counters.raw_injected += 1;
        let (kind, payload) = interpret(raw);
        let listeners = &self.app_list[kind.index()];
        if listeners.is_empty() {
            self.counters.no_listener += 1;
            return None;
        }
        let seq = EventSeq(self.next_seq);
        self.next_seq += 1;
        self.counters.accepted += 1;
        let event = AppEvent {
            seq,
            kind,
            payload,
            injected_ns: now_ns,
        };
        for &(app, handler) in listeners {
            let record = self.slots[app.index as usize]
                .record
                .as_mut()
                .expect("the application list names only attached apps");
            dispatch(
                &mut self.counters,
                self.queue_bound,
                record,
                handler,
                event,
                |d| push(Push { app, delivery: d }),
            );
        }
        Some(seq)
    }

    /// Sets aside every input handler of `app` (the display server sends the app to the
    /// background, figure 26). Network and timer handlers stay. Idempotent.
    ///
    /// # Errors
    /// [`EsmError::UnknownApp`] if `app` is not attached.
    pub fn suspend_input(&mut self, app: AppId) -> Result<(), EsmError> {
        let record = record_mut(&mut self.slots, app)?;
        if record.suspended_input.is_some() {
            return Ok(());
        }
        let mut stash = [None; EventKind::COUNT];
        for kind in EventKind::ALL.into_iter().filter(|k| k.is_input()) {
            stash[kind.index()] = record.registered[kind.index()];
            set_registration(&mut self.app_list, record, app, kind, None);
        }
        record.suspended_input = Some(stash);
        Ok(())
    }

    /// Puts back the input handlers set aside by [`Esm::suspend_input`], including registrations
    /// made meanwhile (figure 27). Idempotent.
    ///
    /// # Errors
    /// [`EsmError::UnknownApp`] if `app` is not attached.
    pub fn restore_input(&mut self, app: AppId) -> Result<(), EsmError> {
        let record = record_mut(&mut self.slots, app)?;
        let Some(stash) = record.suspended_input.take() else {
            return Ok(());
        };
        for kind in EventKind::ALL.into_iter().filter(|k| k.is_input()) {
            set_registration(&mut self.app_list, record, app, kind, stash[kind.index()]);
        }
        Ok(())
    }

    /// Whether `app`'s input handlers are set aside.
    ///
    /// # Errors
    /// [`EsmError::UnknownApp`] if `app` is not attached.
    pub fn input_suspended(&self, app: AppId) -> Result<bool, EsmError> {
        Ok(record(&self.slots, app)?.suspended_input.is_some())
    }

    /// The handler `app` has in the application list for `kind` (none while suspended).
    ///
    /// # Errors
    /// [`EsmError::UnknownApp`] if `app` is not attached.
    pub fn handler(&self, app: AppId, kind: EventKind) -> Result<Option<HandlerId>, EsmError> {
        Ok(record(&self.slots, app)?.registered[kind.index()])
    }

    /// How many apps are registered for `kind`.
    #[must_use]
    pub fn listeners(&self, kind: EventKind) -> usize {
        self.app_list[kind.index()].len()
    }

    /// Whether `app` is in `EV_WAIT` or running.
    ///
    /// # Errors
    /// [`EsmError::UnknownApp`] if `app` is not attached.
    pub fn state(&self, app: AppId) -> Result<AppState, EsmError> {
        Ok(record(&self.slots, app)?.state)
    }

    /// Events (not markers) waiting in `app`'s private queue.
    ///
    /// # Errors
    /// [`EsmError::UnknownApp`] if `app` is not attached.
    pub fn queued_events(&self, app: AppId) -> Result<usize, EsmError> {
        Ok(record(&self.slots, app)?.queued_events)
    }

    /// `app`'s counters.
    ///
    /// # Errors
    /// [`EsmError::UnknownApp`] if `app` is not attached.
    pub fn app_counters(&self, app: AppId) -> Result<AppCounters, EsmError> {
        Ok(record(&self.slots, app)?.counters)
    }

    /// Whole-ESM counters.
    #[must_use]
    pub fn counters(&self) -> EsmCounters {
        self.counters
    }

    /// The attached applications, in slot order.
    pub fn apps(&self) -> impl Iterator<Item = AppId> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.record.is_some())
            .map(|(i, s)| AppId {
                index: u32::try_from(i).expect("slot count fits u32"),
                generation: s.generation,
            })
    }

    /// Events now waiting in all private queues.
    #[must_use]
    pub fn total_queued_events(&self) -> u64 {
        self.slots
            .iter()
            .filter_map(|s| s.record.as_ref())
            .map(|r| r.queued_events as u64)
            .sum()
    }

    /// Checks the identities documented on [`EsmCounters`]; `Err` names the first that fails.
    /// Tests and reports use it to show that no event went missing.
    ///
    /// # Errors
    /// The broken identity, with the counters.
    pub fn check_accounting(&self) -> Result<(), AccountingError> {
        let c = self.counters;
        if c.raw_injected != c.accepted + c.no_listener {
            return Err(AccountingError::Injected(c));
        }
        if c.dispatched != c.pushed_direct + c.queued + c.overflow_dropped {
            return Err(AccountingError::Dispatched(c));
        }
        let in_queues = self.total_queued_events();
        if c.queued != c.pushed_from_queue + c.discarded_on_exit + in_queues {
            return Err(AccountingError::Queued {
                in_queues,
                counters: c,
            });
        }
        Ok(())
    }
}

/// An accounting identity of [`EsmCounters`] that does not hold, with the counters that break it.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum AccountingError {
    #[error("raw_injected {} != accepted + no_listener {:?}", .0.raw_injected, .0)]
    Injected(EsmCounters),
    #[error("dispatched != pushed_direct + queued + overflow_dropped: {0:?}")]
    Dispatched(EsmCounters),
    #[error(
        "queued != pushed_from_queue + discarded_on_exit + in_queues ({in_queues}): {counters:?}"
    )]
    Queued {
        in_queues: u64,
        counters: EsmCounters,
    },
}

/// Reports keep the identity that broke as its message.
impl serde::Serialize for AccountingError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Counts one item leaving `record`'s private queue for the app.
#[inline]
fn taken_from_queue(counters: &mut EsmCounters, record: &mut AppRecord, delivery: &Delivery) {
    match delivery {
        Delivery::Event { .. } => {
            record.queued_events -= 1;
            record.counters.pushed_from_queue += 1;
            counters.pushed_from_queue += 1;
        }
        Delivery::Overflow { .. } => {
            record.counters.overflow_markers += 1;
            counters.overflow_markers += 1;
        }
    }
}

/// The dispatcher for one (event, app) pair (figure 11), with the overflow rule.
#[inline]
fn dispatch(
    counters: &mut EsmCounters,
    queue_bound: usize,
    record: &mut AppRecord,
    handler: HandlerId,
    event: AppEvent,
    push: impl FnOnce(Delivery),
) {
    let delivery = Delivery::Event { handler, event };
    counters.dispatched += 1;
    record.counters.dispatched += 1;
    if record.state == AppState::EvWait {
        debug_assert!(
            record.queue.is_empty(),
            "an app in EV_WAIT has nothing queued"
        );
        record.state = AppState::Running;
        counters.pushed_direct += 1;
        record.counters.pushed_direct += 1;
        push(delivery);
        return;
    }
    // Events in all queues, from the identity `check_accounting` holds.
    let in_queues = counters.queued - counters.pushed_from_queue - counters.discarded_on_exit;
    if record.queued_events < queue_bound && in_queues < MAX_QUEUED_EVENTS_TOTAL as u64 {
        record.queue.push_back(delivery);
        record.queued_events += 1;
        counters.queued += 1;
        record.counters.queued += 1;
        return;
    }
    counters.overflow_dropped += 1;
    record.counters.overflow_dropped += 1;
    match record.queue.back_mut() {
        Some(Delivery::Overflow { dropped, last, .. }) => {
            *dropped += 1;
            *last = event.seq;
        }
        _ => record.queue.push_back(Delivery::Overflow {
            dropped: 1,
            first: event.seq,
            last: event.seq,
        }),
    }
}

fn set_registration(
    app_list: &mut [Vec<(AppId, HandlerId)>; EventKind::COUNT],
    record: &mut AppRecord,
    app: AppId,
    kind: EventKind,
    handler: Option<HandlerId>,
) {
    let row = &mut app_list[kind.index()];
    match (record.registered[kind.index()], handler) {
        (None, None) => {}
        (None, Some(h)) => row.push((app, h)),
        (Some(_), Some(h)) => {
            if let Some(entry) = row.iter_mut().find(|(a, _)| *a == app) {
                entry.1 = h;
            }
        }
        (Some(_), None) => row.retain(|&(a, _)| a != app),
    }
    record.registered[kind.index()] = handler;
}

fn record(slots: &[Slot], app: AppId) -> Result<&AppRecord, EsmError> {
    slots
        .get(app.index as usize)
        .filter(|s| s.generation == app.generation)
        .and_then(|s| s.record.as_ref())
        .ok_or(EsmError::UnknownApp(app))
}

fn record_mut(slots: &mut [Slot], app: AppId) -> Result<&mut AppRecord, EsmError> {
    slots
        .get_mut(app.index as usize)
        .filter(|s| s.generation == app.generation)
        .and_then(|s| s.record.as_mut())
        .ok_or(EsmError::UnknownApp(app))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_model::{Payload, TouchPhase};

    const TAP: RawEvent = RawEvent::Touch {
        phase: TouchPhase::Down,
        x: 1,
        y: 2,
    };
    const H: HandlerId = HandlerId(7);

    fn esm(bound: usize) -> Esm {
        Esm::new(EsmConfig { queue_bound: bound }).unwrap()
    }

    /// An ESM with queues of `bound` and one app registered for taps (handler `H`).
    fn esm_with_tapper(bound: usize) -> (Esm, AppId) {
        let mut e = esm(bound);
        let app = e.add_app();
        e.register(app, EventKind::TouchPress, Some(H)).unwrap();
        (e, app)
    }

    fn inject(esm: &mut Esm, raw: RawEvent, now_ns: u64) -> Vec<Push> {
        let mut out = Vec::new();
        esm.inject(raw, now_ns, |p| out.push(p));
        out
    }

    #[test]
    fn unheard_event_is_dropped_and_counted() {
        let mut e = esm(4);
        let app = e.add_app();
        e.register(app, EventKind::Key, Some(H)).unwrap();
        assert!(inject(&mut e, TAP, 5).is_empty());
        assert_eq!(e.counters().no_listener, 1);
        assert_eq!(e.queued_events(app).unwrap(), 0);
        e.check_accounting().unwrap();
    }

    #[test]
    fn waiting_app_is_pushed_at_once_with_stamp() {
        let (mut e, app) = esm_with_tapper(4);
        assert_eq!(e.wait(app).unwrap(), None);
        assert_eq!(e.state(app).unwrap(), AppState::EvWait);
        let pushes = inject(&mut e, TAP, 42);
        assert_eq!(pushes.len(), 1);
        let Delivery::Event { handler, event } = pushes[0].delivery else {
            panic!()
        };
        assert_eq!(handler, H);
        assert_eq!(event.injected_ns, 42);
        assert_eq!(event.payload, Payload::Point { x: 1, y: 2 });
        assert_eq!(e.state(app).unwrap(), AppState::Running);
    }

    #[test]
    fn busy_app_gets_queue_in_fifo_order() {
        let (mut e, app) = esm_with_tapper(4);
        for t in 0..3 {
            assert!(inject(&mut e, TAP, t).is_empty());
        }
        for t in 0..3 {
            let p = e.wait(app).unwrap().unwrap();
            let Delivery::Event { event, .. } = p.delivery else {
                panic!()
            };
            assert_eq!(event.injected_ns, t);
        }
        assert_eq!(e.wait(app).unwrap(), None);
        e.check_accounting().unwrap();
    }

    #[test]
    fn overflow_drops_are_marked_in_place() {
        let (mut e, app) = esm_with_tapper(2);
        for t in 0..5 {
            inject(&mut e, TAP, t);
        }
        assert_eq!(e.queued_events(app).unwrap(), 2);
        let kinds: Vec<_> = std::iter::from_fn(|| e.wait(app).unwrap())
            .map(|p| p.delivery)
            .collect();
        assert_eq!(kinds.len(), 3);
        assert!(matches!(
            kinds[2],
            Delivery::Overflow {
                dropped: 3,
                first: EventSeq(2),
                last: EventSeq(4)
            }
        ));
        assert_eq!(e.counters().overflow_dropped, 3);
        assert_eq!(e.app_counters(app).unwrap().overflow_markers, 1);
        e.check_accounting().unwrap();
    }

    #[test]
    fn null_handler_unregisters() {
        let mut e = esm(4);
        let app = e.add_app();
        e.register(app, EventKind::Key, Some(H)).unwrap();
        e.register(app, EventKind::Key, None).unwrap();
        assert_eq!(e.listeners(EventKind::Key), 0);
        assert_eq!(e.handler(app, EventKind::Key).unwrap(), None);
    }

    #[test]
    fn removed_app_leaves_nothing_and_its_id_goes_stale() {
        let (mut e, app) = esm_with_tapper(4);
        inject(&mut e, TAP, 0);
        assert_eq!(e.remove_app(app).unwrap().discarded_events, 1);
        assert_eq!(e.listeners(EventKind::TouchPress), 0);
        let next = e.add_app();
        assert_eq!(next.index, app.index);
        assert_eq!(e.wait(app), Err(EsmError::UnknownApp(app)));
        assert_eq!(e.remove_app(app), Err(EsmError::UnknownApp(app)));
        assert_eq!(e.state(next).unwrap(), AppState::Running);
        e.check_accounting().unwrap();
    }

    #[test]
    fn suspend_and_restore_input_keeps_other_kinds_and_late_registrations() {
        let (mut e, app) = esm_with_tapper(4);
        e.register(app, EventKind::Timer, Some(HandlerId(1)))
            .unwrap();
        e.suspend_input(app).unwrap();
        e.suspend_input(app).unwrap();
        assert_eq!(e.listeners(EventKind::TouchPress), 0);
        assert_eq!(e.listeners(EventKind::Timer), 1);
        e.register(app, EventKind::Key, Some(HandlerId(2))).unwrap();
        assert_eq!(e.listeners(EventKind::Key), 0);
        e.restore_input(app).unwrap();
        assert_eq!(e.handler(app, EventKind::TouchPress).unwrap(), Some(H));
        assert_eq!(e.handler(app, EventKind::Key).unwrap(), Some(HandlerId(2)));
        assert!(!e.input_suspended(app).unwrap());
    }

    #[test]
    fn a_batch_wait_hands_over_the_queue_in_order_with_markers() {
        let mut e = esm(2);
        let a = e.add_app();
        e.register(a, EventKind::Key, Some(HandlerId(1))).unwrap();
        let key = |c| RawEvent::Key {
            code: c,
            pressed: true,
        };
        // Running (never waited): the first two queue, the next three overflow into one marker.
        for c in 0..5 {
            assert!(inject(&mut e, key(c), 10).is_empty());
        }
        assert_eq!(e.queued_items(a), Ok(3));
        let mut out = Vec::new();
        assert_eq!(e.wait_batch(a, 2, &mut out), Ok(2));
        assert_eq!(e.state(a), Ok(AppState::Running));
        assert_eq!(e.take_queued(a, 8, &mut out), Ok(1));
        let seqs: Vec<_> = out
            .iter()
            .map(|d| match d {
                Delivery::Event { event, .. } => (event.seq.0, 0),
                Delivery::Overflow { dropped, first, .. } => (first.0, *dropped),
            })
            .collect();
        assert_eq!(seqs, [(0, 0), (1, 0), (2, 3)]);
        out.clear();
        assert_eq!(e.wait_batch(a, 8, &mut out), Ok(0));
        assert_eq!(e.state(a), Ok(AppState::EvWait));
        e.check_accounting().unwrap();
        let c = e.counters();
        assert_eq!(
            (c.pushed_from_queue, c.overflow_markers, c.overflow_dropped),
            (2, 1, 3)
        );
    }

    #[test]
    fn zero_and_too_large_bounds_are_refused() {
        assert_eq!(
            Esm::new(EsmConfig {
                queue_bound: MAX_QUEUE_BOUND + 1
            })
            .unwrap_err(),
            EsmError::QueueBoundTooLarge(MAX_QUEUE_BOUND + 1)
        );
        assert!(Esm::new(EsmConfig {
            queue_bound: MAX_QUEUE_BOUND
        })
        .is_ok());
        assert_eq!(
            Esm::new(EsmConfig { queue_bound: 0 }).unwrap_err(),
            EsmError::ZeroQueueBound
        );
    }

    #[test]
    fn the_queues_together_hold_at_most_the_total_bound() {
        // The measured figure the constant's comment gives: a delivery is 48 bytes.
        assert_eq!(std::mem::size_of::<Delivery>(), 48);
        let mut e = esm(MAX_QUEUE_BOUND);
        let apps_to_fill = MAX_QUEUED_EVENTS_TOTAL / MAX_QUEUE_BOUND;
        let apps: Vec<AppId> = (0..=apps_to_fill).map(|_| e.add_app()).collect();
        for &a in &apps {
            e.register(a, EventKind::Key, Some(HandlerId(1))).unwrap();
        }
        let key = RawEvent::Key {
            code: 1,
            pressed: true,
        };
        // No app ever waits: every event queues until the total is reached, even though the
        // last app's own queue is empty.
        for _ in 0..MAX_QUEUE_BOUND + 3 {
            assert!(inject(&mut e, key, 10).is_empty());
        }
        assert_eq!(e.total_queued_events(), MAX_QUEUED_EVENTS_TOTAL as u64);
        // The documented memory bound: 64 apps' worth at 64 × the default bound.
        assert_eq!(e.total_queued_events(), 64 * 64 * 64);
        let last = *apps.last().unwrap();
        assert!(e.queued_events(last).unwrap() < MAX_QUEUE_BOUND);
        e.check_accounting().unwrap();
        // Every event past the total is counted and marked for its app.
        let c = e.counters();
        assert_eq!(
            c.overflow_dropped,
            c.dispatched - MAX_QUEUED_EVENTS_TOTAL as u64
        );
        // A queue that empties makes room for others again.
        let before = e.queued_events(last).unwrap();
        let freed = e.remove_app(apps[0]).unwrap().discarded_events;
        assert!(inject(&mut e, key, 10).is_empty());
        assert_eq!(e.queued_events(last).unwrap(), before + 1);
        assert_eq!(
            e.total_queued_events(),
            MAX_QUEUED_EVENTS_TOTAL as u64 - freed + apps_to_fill as u64
        );
        e.check_accounting().unwrap();
    }

    #[test]
    fn the_largest_bound_is_64_times_the_default() {
        assert!(Esm::new(EsmConfig {
            queue_bound: 64 * DEFAULT_QUEUE_BOUND
        })
        .is_ok());
        assert_eq!(esm(5).queue_bound(), 5);
        assert_eq!(esm(64 * DEFAULT_QUEUE_BOUND).queue_bound(), 4096);
    }

    /// Every counter, whole-ESM and per app, against a hand count of one scenario: two apps,
    /// one waiting (pushed at once), one busy with a bound of 2 (queued, then dropped and
    /// marked), then the busy one drains its queue and the other leaves with events queued.
    #[test]
    fn every_counter_counts_exactly_what_it_names() {
        let mut e = esm(2);
        let (a, b) = (e.add_app(), e.add_app());
        for app in [a, b] {
            e.register(app, EventKind::TouchPress, Some(H)).unwrap();
        }
        assert_eq!(e.apps().collect::<Vec<_>>(), [a, b]);
        assert_eq!(e.wait(a).unwrap(), None);
        // a: pushed at once, then 2 queued, 2 dropped; b: 2 queued, 3 dropped.
        for t in 0..5 {
            inject(&mut e, TAP, t);
        }
        // b takes its two events and its marker.
        for _ in 0..3 {
            e.wait(b).unwrap().unwrap();
        }
        assert_eq!(e.wait(b).unwrap(), None);
        let removed = e.remove_app(a).unwrap();
        assert_eq!(removed.discarded_events, 2);
        assert_eq!(e.apps().collect::<Vec<_>>(), [b]);
        assert_eq!(
            e.app_counters(b).unwrap(),
            AppCounters {
                dispatched: 5,
                pushed_direct: 0,
                queued: 2,
                overflow_dropped: 3,
                pushed_from_queue: 2,
                overflow_markers: 1,
            }
        );
        assert_eq!(
            e.counters(),
            EsmCounters {
                raw_injected: 5,
                accepted: 5,
                no_listener: 0,
                dispatched: 10,
                pushed_direct: 1,
                queued: 4,
                overflow_dropped: 5,
                pushed_from_queue: 2,
                discarded_on_exit: 2,
                overflow_markers: 1,
            }
        );
        e.check_accounting().unwrap();
    }

    /// An app's own counters, after a push at once.
    #[test]
    fn a_direct_push_is_counted_for_its_app() {
        let (mut e, a) = esm_with_tapper(2);
        for t in 0..2 {
            assert_eq!(e.wait(a).unwrap(), None);
            inject(&mut e, TAP, t);
        }
        let c = e.app_counters(a).unwrap();
        assert_eq!((c.dispatched, c.pushed_direct, c.queued), (2, 2, 0));
    }

    /// The total bound counts events still queued, not those already taken: an app that takes
    /// each event as it comes never meets it, however many pass.
    #[test]
    fn events_taken_from_a_queue_leave_room_under_the_total() {
        let (mut e, a) = esm_with_tapper(1);
        for t in 0..MAX_QUEUED_EVENTS_TOTAL as u64 + 2 {
            assert!(inject(&mut e, TAP, t).is_empty());
            assert!(e.wait(a).unwrap().is_some());
        }
        assert_eq!(e.counters().overflow_dropped, 0);
        e.check_accounting().unwrap();
    }

    #[test]
    fn suspended_input_is_reported() {
        let mut e = esm(2);
        let a = e.add_app();
        assert!(!e.input_suspended(a).unwrap());
        e.suspend_input(a).unwrap();
        assert!(e.input_suspended(a).unwrap());
        e.restore_input(a).unwrap();
        assert!(!e.input_suspended(a).unwrap());
    }

    /// The checker finds each identity broken (counters edited behind the ESM's back).
    #[test]
    fn the_accounting_check_catches_each_broken_identity() {
        let (mut e, _) = esm_with_tapper(2);
        inject(&mut e, TAP, 0);
        e.check_accounting().unwrap();
        let good = e.counters;
        for (field, broken) in [
            (
                "raw_injected",
                EsmCounters {
                    raw_injected: good.raw_injected + 1,
                    ..good
                },
            ),
            (
                "dispatched",
                EsmCounters {
                    dispatched: good.dispatched + 1,
                    ..good
                },
            ),
            (
                "queued",
                EsmCounters {
                    pushed_from_queue: good.pushed_from_queue + 1,
                    ..good
                },
            ),
        ] {
            e.counters = broken;
            let err = e.check_accounting().unwrap_err();
            assert!(err.to_string().starts_with(field), "{field}: {err}");
        }
    }
}
