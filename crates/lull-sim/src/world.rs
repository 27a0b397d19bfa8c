//! One simulated run: the SoC, the kernel and one framework model driven by a workload.
//!
//! The SoC part holds the cores (online/offline, busy, waking or in an idle state, OPP), the
//! idle governor, DVFS, the cluster switch and the power meter. The kernel part holds the threads,
//! per-core CFS run queues, ticks, timers, interrupts with their costs, context switches with the
//! cache-refill penalty, wakeup placement and new-idle load balancing. The framework part gives
//! each thread its behaviour (a small script of compute steps and effects) per model. See
//! `docs/simulator.md` for every mechanism and constant.

use std::collections::{BTreeMap, VecDeque};

use lull_audit::ring::RingCounters;
use lull_audit::{AuditEventKind, AuditLog, AuditRecord, Comm, LogHeader, LogSummary};
use lull_esm::{Delivery, Esm, EsmConfig, Push};
use lull_model::time::{NS_PER_MS, NS_PER_S, NS_PER_US};
use lull_model::weight::nice_to_weight;
use lull_model::{AppId, EventKind, HandlerId, ThreadCategory, WindowState};
use lull_sched::{cfs, guis};
use lull_workload::TimedEvent;

use crate::costs::*;
use crate::engine::Engine;
use crate::platform::{ClusterKind, FreqDomain, IrqController, Platform, TimerMode};
use crate::report::{LatencyStats, ModelResult};
use crate::spec::{is_discrete, Model, Spec, WorkloadSpec};

/// The menu governor's history length for its typical-interval detection (Linux
/// `drivers/cpuidle/governors/menu.c`, `INTERVALS` = 8).
const MENU_INTERVALS: usize = 8;
/// The menu governor's 'no prediction' value, when neither a timer nor a pattern bounds the sleep.
const NO_PREDICTION_NS: u64 = u64::MAX;
/// Audit records name simulated processes and threads from these bases, so they cannot be taken
/// for the ids of live tasks.
const AUDIT_TGID_BASE: u32 = 100;
const AUDIT_TID_BASE: u32 = 1000;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ev {
    Inject(u32),
    CoreDone { core: usize, gen: u64 },
    WakeDone { core: usize, gen: u64 },
    Poke(usize),
    Tick { core: usize, gen: u64 },
    Timer { tid: usize, gen: u64 },
    Vsync,
    Governor,
    Window(u32),
    End,
}

/// Kernel work queued on a core; its action runs when its cycles are done.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum KAction {
    None,
    Input(u32),
    TimerWake { tid: usize, gen: u64 },
    TickCheck,
    Vsync,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum CState {
    Offline,
    Idle(usize),
    Waking,
    Busy,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum TState {
    Running,
    Runnable,
    Sleeping,
    EvWait,
    Frozen,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    PullHub,
    PullApp,
    VsyncHub,
    VsyncApp,
    BlockHub,
    BlockApp,
    Compositor,
    EsmDispatcher,
    EsmApp,
    KdsEvent,
    KdsDrawing,
    KdsForeground,
    Decoder,
    /// A CPU-bound thread that never blocks (tests of the scheduler).
    #[cfg(test)]
    Hog,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Compute(u64),
    /// The handler of an event injected at this time starts now.
    HandlerStart(u64),
    Effect(Effect),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Effect {
    /// The hub has read this many events from the device queue into its own.
    HubTook(usize),
    /// Forward this many events from the hub's queue to the app's queue and wake the app.
    Forward(usize),
    PostFrame,
    FrameReady,
    WakeDrawing,
    RequestVsync,
}

enum Action {
    Compute(u64),
    Sleep(u64),
    /// Blocked in the buffer swap until this time: input does not wake it (uninterruptible).
    SwapWait(u64),
    Block,
    EvWait,
}

/// What a drawing thread does about the frame (`World::frame_due`).
enum FrameDue {
    No,
    Wait(Action),
    Draw,
}

#[derive(Debug)]
struct Thread {
    name: &'static str,
    proc_id: u32,
    nice: i8,
    /// Time run so far and switch-ins, for audit records.
    exec_ns: u64,
    switches: u32,
    weight: u32,
    cache_kib: u64,
    category: Option<ThreadCategory>,
    role: Role,
    state: TState,
    core: usize,
    vruntime: u64,
    remaining: u64,
    todo: VecDeque<Op>,
    phase: u8,
    timer_gen: u64,
    timer_at: Option<u64>,
    vsync_fired: bool,
    /// Injection times of events pushed to this thread and not yet handled.
    deliveries: VecDeque<u64>,
    /// The decoder's next video frame.
    frame: u64,
    /// Blocked where only its timer wakes it (the buffer swap).
    uninterruptible: bool,
}

/// A core state as residency is kept per run; named only for the report (`World::report`), so
/// the per-event accounting allocates nothing.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum StateKey {
    Offline,
    Waking,
    Busy { khz: u64 },
    Idle(usize),
    ClusterOff,
}

#[derive(Debug)]
struct Core {
    name: String,
    cluster: usize,
    state: CState,
    running: Option<usize>,
    rq: Vec<usize>,
    min_vr: u64,
    opp: usize,
    gen: u64,
    seg_start_ns: u64,
    planned_end_ns: u64,
    planned_cycles: u64,
    planned_kwork: bool,
    kwork: VecDeque<(u64, KAction)>,
    resched: bool,
    turn_start_ns: u64,
    last_ran: Option<(u32, u64)>,
    tick_gen: u64,
    tick_armed: bool,
    busy_window_ns: u64,
    idle_since_ns: u64,
    predicted_ns: u64,
    idle_hist: VecDeque<u64>,
    /// Time in each state.
    residency_ns: BTreeMap<StateKey, u64>,
}

#[derive(Debug)]
struct Meter {
    last_ns: u64,
    energy_uj: f64,
    next_sample_ns: u64,
    sample_sum_mw: f64,
    /// Sum of the samples' fixed part (rest of board + display).
    fixed_sum_mw: f64,
    samples: u64,
    max_mw: f64,
}

/// One run of one model.
#[derive(Debug)]
pub struct World<'s> {
    spec: &'s Spec,
    plat: &'s Platform,
    model: Model,
    eng: Engine<Ev>,
    cores: Vec<Core>,
    threads: Vec<Thread>,
    active_cluster: usize,
    main_cluster: usize,
    companion: Option<usize>,
    cluster_off: Vec<bool>,
    power_uw: f64,
    meter: Meter,
    events: Vec<TimedEvent>,
    device_q: VecDeque<(u64, bool)>,
    hub_q: VecDeque<(u64, bool)>,
    hub_moves: usize,
    app_q: VecDeque<u64>,
    frames_posted: u64,
    frame_ready: bool,
    dirty: bool,
    esm: Esm,
    app_id: AppId,
    esm_pushes: VecDeque<Push>,
    vsync_waiters: Vec<usize>,
    vsync_scheduled: bool,
    last_post_refresh: Option<u64>,
    latencies_ns: Vec<u64>,
    injected: u64,
    dropped: u64,
    cur_core: Option<usize>,
    /// The app's window state as the window manager last set it.
    window: WindowState,
    /// Scheduling events in the audit log format, when asked for.
    audit: Option<Vec<AuditRecord>>,
    audit_seq: Vec<u64>,
    idle_forced: bool,
    forced_ns: u64,
    last_input_ns: Option<u64>,
    last_gui_active_ns: Option<u64>,
    down_ms: u64,
    cluster_switches: u64,
    end_ns: u64,
    video_frames: u64,
    video_period_ns: u64,
    decode_cycles: u64,
    // thread ids by role
    hub: Option<usize>,
    app: Option<usize>,
    compositor: Option<usize>,
    dispatcher: Option<usize>,
    event_thread: Option<usize>,
    drawing: Option<usize>,
}

fn cycles_to_ns(cycles: u64, khz: u64) -> u64 {
    ((u128::from(cycles) * 1_000_000).div_ceil(u128::from(khz.max(1)))) as u64
}

fn ns_to_cycles(ns: u64, khz: u64) -> u64 {
    ((u128::from(ns) * u128::from(khz)) / 1_000_000) as u64
}

impl<'s> World<'s> {
    /// Builds the run of `model` on `spec`'s platform and workload.
    ///
    /// # Errors
    /// A message when the spec's workload cannot be built (a bad trace).
    pub fn new(spec: &'s Spec, model: Model) -> Result<World<'s>, crate::spec::SpecError> {
        let plat = &spec.platform;
        let events = spec.input_events()?;
        let end_ns = spec.duration_ns()?;
        let main_cluster = plat.main_cluster();
        let companion = if spec.cpu.companion {
            plat.companion_cluster()
        } else {
            None
        };
        let mut cores = Vec::new();
        for (ci, cl) in plat.clusters.iter().enumerate() {
            let n = if ci == main_cluster {
                spec.cpu.main_cores as usize
            } else if Some(ci) == companion {
                1
            } else {
                continue;
            };
            for k in 0..n {
                cores.push(Core {
                    name: format!("{}{}", cl.name, k),
                    cluster: ci,
                    // Cores start asleep in their deepest state: nothing has run on them and the
                    // idle governor has no timer in view.
                    state: if ci == main_cluster {
                        CState::Idle(cl.idle_states.len() - 1)
                    } else {
                        CState::Offline
                    },
                    running: None,
                    rq: Vec::new(),
                    min_vr: 0,
                    opp: cl.opps.len() - 1,
                    gen: 0,
                    seg_start_ns: 0,
                    planned_end_ns: 0,
                    planned_cycles: 0,
                    planned_kwork: false,
                    kwork: VecDeque::new(),
                    resched: false,
                    turn_start_ns: 0,
                    last_ran: None,
                    tick_gen: 0,
                    tick_armed: false,
                    busy_window_ns: 0,
                    idle_since_ns: 0,
                    predicted_ns: NO_PREDICTION_NS,
                    idle_hist: VecDeque::new(),
                    residency_ns: BTreeMap::new(),
                });
            }
        }
        let mut esm = Esm::new(EsmConfig::default()).expect("the default ESM config is valid");
        let app_id = esm.add_app();
        let (video_frames, video_period_ns, decode_cycles) = match spec.workload {
            WorkloadSpec::Video {
                duration_ms,
                fps_milli,
                decode_cycles_per_frame,
                ..
            } => {
                let period = 1_000_000_000_000 / fps_milli;
                (
                    (duration_ms * NS_PER_MS) / period,
                    period,
                    decode_cycles_per_frame,
                )
            }
            _ => (0, 0, 0),
        };
        let n_clusters = plat.clusters.len();
        let mut w = World {
            spec,
            plat,
            model,
            eng: Engine::new(spec.seed),
            cores,
            threads: Vec::new(),
            active_cluster: main_cluster,
            main_cluster,
            companion,
            cluster_off: vec![false; n_clusters],
            power_uw: 0.0,
            meter: Meter {
                last_ns: 0,
                energy_uj: 0.0,
                next_sample_ns: NS_PER_MS,
                sample_sum_mw: 0.0,
                fixed_sum_mw: 0.0,
                samples: 0,
                max_mw: 0.0,
            },
            events,
            device_q: VecDeque::new(),
            hub_q: VecDeque::new(),
            hub_moves: 0,
            app_q: VecDeque::new(),
            frames_posted: 0,
            frame_ready: false,
            dirty: false,
            esm,
            app_id,
            esm_pushes: VecDeque::new(),
            vsync_waiters: Vec::new(),
            vsync_scheduled: false,
            last_post_refresh: None,
            latencies_ns: Vec::new(),
            injected: 0,
            dropped: 0,
            cur_core: None,
            window: WindowState::FRONT,
            audit: None,
            audit_seq: Vec::new(),
            idle_forced: false,
            forced_ns: 0,
            last_input_ns: None,
            last_gui_active_ns: None,
            down_ms: 0,
            cluster_switches: 0,
            end_ns,
            video_frames,
            video_period_ns,
            decode_cycles,
            hub: None,
            app: None,
            compositor: None,
            dispatcher: None,
            event_thread: None,
            drawing: None,
        };
        w.build_threads();
        Ok(w)
    }

    fn add_thread(
        &mut self,
        name: &'static str,
        role: Role,
        proc_id: u32,
        nice: i8,
        cache_kib: u64,
        category: Option<ThreadCategory>,
    ) -> usize {
        self.threads.push(Thread {
            name,
            proc_id,
            nice,
            exec_ns: 0,
            switches: 0,
            weight: nice_to_weight(nice),
            cache_kib,
            category,
            role,
            state: TState::Sleeping,
            core: 0,
            vruntime: 0,
            remaining: 0,
            todo: VecDeque::new(),
            phase: 0,
            timer_gen: 0,
            timer_at: None,
            vsync_fired: false,
            deliveries: VecDeque::new(),
            frame: 0,
            uninterruptible: false,
        });
        self.threads.len() - 1
    }

    fn build_threads(&mut self) {
        // Process ids: 0 kernel, 1 system (hub, compositor), 2 the app.
        let app_kib = self.spec.app.cache_kib;
        let fw = FRAMEWORK_CACHE_KIB;
        let video = self.video_frames > 0;
        // Every kind the workloads inject; the apps arm no timers.
        let kinds: Vec<EventKind> = EventKind::ALL
            .into_iter()
            .filter(|&k| k != EventKind::Timer)
            .collect();
        match self.model {
            Model::Pull16ms | Model::VsyncBatched | Model::BlockingMiddleware => {
                let (hub, app) = match self.model {
                    Model::Pull16ms => (Role::PullHub, Role::PullApp),
                    Model::VsyncBatched => (Role::VsyncHub, Role::VsyncApp),
                    _ => (Role::BlockHub, Role::BlockApp),
                };
                self.hub = Some(self.add_thread("hub", hub, 1, SYSTEM_DISPLAY_NICE, fw, None));
                self.app = Some(self.add_thread("app", app, 2, APP_NICE, app_kib, None));
            }
            Model::Esm | Model::EsmKdsGuis => {
                self.dispatcher = Some(self.add_thread(
                    "esm-dispatcher",
                    Role::EsmDispatcher,
                    0,
                    KTHREAD_NICE,
                    KTHREAD_CACHE_KIB,
                    None,
                ));
                if self.model == Model::Esm {
                    self.app =
                        Some(self.add_thread("app", Role::EsmApp, 2, APP_NICE, app_kib, None));
                } else {
                    // KDS splits the app by category (the foreground thread only ever blocks).
                    let mut kds = |name, role, cat| {
                        self.add_thread(name, role, 2, APP_NICE, app_kib, Some(cat))
                    };
                    let event = kds("event", Role::KdsEvent, ThreadCategory::Event);
                    let drawing = kds("drawing", Role::KdsDrawing, ThreadCategory::Drawing);
                    kds(
                        "foreground",
                        Role::KdsForeground,
                        ThreadCategory::Foreground,
                    );
                    self.event_thread = Some(event);
                    self.drawing = Some(drawing);
                }
            }
        }
        if self.model != Model::EsmKdsGuis {
            self.compositor = Some(self.add_thread(
                "compositor",
                Role::Compositor,
                1,
                SYSTEM_DISPLAY_NICE,
                fw,
                None,
            ));
        }
        if video {
            let cat = (self.model == Model::EsmKdsGuis).then_some(ThreadCategory::Background);
            // A decoder's working set is its reference frames; the hot part that survives in L2
            // is bounded by L2 (refill is capped there).
            self.add_thread(
                "decoder",
                Role::Decoder,
                2,
                APP_NICE,
                self.plat.costs.l2_kib,
                cat,
            );
        }
        if matches!(self.model, Model::Esm | Model::EsmKdsGuis) {
            for (i, &k) in kinds.iter().enumerate() {
                self.esm
                    .register(self.app_id, k, Some(HandlerId(i as u32)))
                    .expect("the app was just added");
            }
        }
    }

    // ---------------------------------------------------------------- the run

    /// Records the run's scheduling events in the audit log format of `lull-audit` (seed 002's
    /// IPSA records), one ring per core.
    pub fn record_audit(&mut self) {
        self.audit = Some(Vec::new());
        self.audit_seq = vec![0; self.cores.len()];
    }

    fn audit_event(&mut self, c: usize, t: usize, kind: AuditEventKind) {
        let Some(records) = self.audit.as_mut() else {
            return;
        };
        let th = &self.threads[t];
        let seq = self.audit_seq[c];
        self.audit_seq[c] += 1;
        records.push(AuditRecord {
            seq,
            ts_ns: self.eng.now_ns(),
            exec_ns: th.exec_ns,
            tgid: AUDIT_TGID_BASE + th.proc_id,
            tid: AUDIT_TID_BASE + t as u32,
            switches: th.switches,
            comm: Comm::new(th.name),
            cpu: c as u16,
            ring: c as u16,
            rq_len: self.cores[c].rq.len().min(usize::from(u16::MAX)) as u16,
            prio: (120 + i16::from(th.nice)) as u8,
            kind,
            flags: 0,
        });
    }

    /// Runs to the end and reports, with the audit log if [`World::record_audit`] was called.
    pub fn run_with_audit(self) -> (ModelResult, Option<AuditLog>) {
        let records = self.audit.is_some();
        let result = self.run_inner();
        let log = records.then(|| {
            let recs = result.1.unwrap_or_default();
            let rings = result.2;
            let per_ring = rings.iter().copied().max().unwrap_or(0);
            AuditLog {
                header: LogHeader {
                    rings: rings.len() as u16,
                    ring_capacity: u32::try_from(per_ring.max(1)).unwrap_or(u32::MAX),
                    start_ns: 0,
                },
                records: recs,
                summary: LogSummary {
                    rings: rings
                        .iter()
                        .map(|&n| RingCounters {
                            overwritten: 0,
                            kernel_lost: 0,
                            next_seq: n,
                        })
                        .collect(),
                    counted: Vec::new(),
                    counted_overflow_events: 0,
                },
            }
        });
        (result.0, log)
    }

    /// Runs to the end and reports.
    pub fn run(self) -> ModelResult {
        self.run_inner().0
    }

    fn run_inner(mut self) -> (ModelResult, Option<Vec<AuditRecord>>, Vec<u64>) {
        for (i, e) in self.events.iter().enumerate() {
            self.eng.schedule_at(e.at_ns, Ev::Inject(i as u32));
        }
        for (i, w) in self.spec.window.iter().enumerate() {
            self.eng
                .schedule_at(w.at_ms * NS_PER_MS, Ev::Window(i as u32));
        }
        self.eng.schedule_at(self.end_ns, Ev::End);
        self.eng
            .schedule_at(self.plat.governor.sampling_ms * NS_PER_MS, Ev::Governor);
        // Every thread starts at time 0 as if just created: runnable.
        for t in 0..self.threads.len() {
            self.wake_gated(t, false);
        }
        if self.plat.timer.mode == TimerMode::Periodic {
            for c in 0..self.cores.len() {
                if self.cores[c].state != CState::Offline {
                    self.arm_tick(c);
                }
            }
        }
        self.power_uw = self.compute_power_uw();
        while let Some((now, ev)) = self.eng.pop() {
            self.account(now);
            if ev == Ev::End {
                break;
            }
            self.handle(ev);
            self.power_uw = self.compute_power_uw();
        }
        let records = self.audit.take();
        let seqs = std::mem::take(&mut self.audit_seq);
        (self.report(), records, seqs)
    }

    fn now(&self) -> u64 {
        self.eng.now_ns()
    }

    fn account(&mut self, now: u64) {
        let dt = now - self.meter.last_ns;
        if dt == 0 {
            return;
        }
        let p = self.power_uw;
        let fixed_mw = self.fixed_power_mw();
        // Power sampled at every 1 ms boundary, as the seed's monitor sampled the board.
        while self.meter.next_sample_ns <= now {
            let mw = p / 1000.0;
            self.meter.sample_sum_mw += mw;
            self.meter.fixed_sum_mw += fixed_mw;
            self.meter.samples += 1;
            if mw > self.meter.max_mw {
                self.meter.max_mw = mw;
            }
            self.meter.next_sample_ns += NS_PER_MS;
        }
        self.meter.energy_uj += p * dt as f64 / 1e9;
        if self.idle_forced {
            self.forced_ns += dt;
        }
        for c in &mut self.cores {
            let key = match c.state {
                CState::Offline => StateKey::Offline,
                CState::Waking => StateKey::Waking,
                CState::Busy => {
                    c.busy_window_ns += dt;
                    StateKey::Busy {
                        khz: self.plat.clusters[c.cluster].opps[c.opp].khz,
                    }
                }
                CState::Idle(_) if self.cluster_off[c.cluster] => StateKey::ClusterOff,
                CState::Idle(s) => StateKey::Idle(s),
            };
            *c.residency_ns.entry(key).or_insert(0) += dt;
        }
        self.meter.last_ns = now;
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Inject(i) => self.inject(i),
            Ev::CoreDone { core, gen } => {
                if self.cores[core].gen == gen && self.cores[core].state == CState::Busy {
                    self.run_core(core);
                }
            }
            Ev::WakeDone { core, gen } => {
                if self.cores[core].gen == gen && self.cores[core].state == CState::Waking {
                    self.cores[core].state = CState::Busy;
                    self.cores[core].seg_start_ns = self.now();
                    if !self.cores[core].tick_armed {
                        self.arm_tick(core);
                    }
                    self.run_core(core);
                }
            }
            Ev::Poke(core) => {
                if self.cores[core].state == CState::Busy {
                    self.run_core(core);
                } else if matches!(self.cores[core].state, CState::Idle(_))
                    && !self.cores[core].rq.is_empty()
                {
                    self.kick(core);
                }
            }
            Ev::Tick { core, gen } => self.tick(core, gen),
            Ev::Timer { tid, gen } => {
                if self.threads[tid].timer_gen == gen {
                    let c = self.timer_core(tid);
                    let cy = self.plat.costs.timer_expiry_cycles + self.plat.costs.wakeup_cycles;
                    self.irq(c, cy, KAction::TimerWake { tid, gen });
                }
            }
            Ev::Vsync => {
                self.vsync_scheduled = false;
                let c = self.irq_core();
                let cy = self.irq_cost() + self.plat.costs.wakeup_cycles;
                self.irq(c, cy, KAction::Vsync);
            }
            Ev::Governor => self.governor(),
            Ev::Window(i) => self.window_change(i),
            Ev::End => {}
        }
    }

    // ---------------------------------------------------------------- interrupts

    fn irq_cost(&self) -> u64 {
        let c = &self.plat.costs;
        match self.plat.interrupts.controller {
            IrqController::Vectored => c.irq_entry_exit_cycles,
            IrqController::Scanning => {
                c.irq_entry_exit_cycles
                    + u64::from(self.plat.interrupts.scanned_devices) * c.scan_per_device_cycles
            }
        }
    }

    /// The core device interrupts go to: the first online core of the active cluster (the GIC's
    /// default affinity is CPU 0; with guiS idle forcing the active cluster is the companion).
    fn irq_core(&self) -> usize {
        if let (guis::IrqTarget::Companion, Some(lp)) =
            (guis::irq_target(self.idle_forced), self.companion)
        {
            if let Some(c) = self.cores.iter().position(|c| c.cluster == lp) {
                return c;
            }
        }
        self.cores
            .iter()
            .position(|c| c.cluster == self.active_cluster && c.state != CState::Offline)
            .or_else(|| {
                self.cores
                    .iter()
                    .position(|c| c.cluster == self.active_cluster)
            })
            .unwrap_or(0)
    }

    fn timer_core(&self, tid: usize) -> usize {
        let c = self.threads[tid].core;
        if self.cores[c].cluster == self.active_cluster {
            c
        } else {
            self.irq_core()
        }
    }

    fn inject(&mut self, i: u32) {
        self.injected += 1;
        let mut cy = self.irq_cost() + self.spec.framework.input_driver_cycles;
        cy += match self.model {
            Model::Pull16ms => 0,
            Model::VsyncBatched | Model::BlockingMiddleware => self.plat.costs.wakeup_cycles,
            Model::Esm | Model::EsmKdsGuis => {
                self.spec.framework.esm_interpreter_cycles + self.plat.costs.wakeup_cycles
            }
        };
        let c = self.irq_core();
        self.irq(c, cy, KAction::Input(i));
    }

    fn irq(&mut self, c: usize, cycles: u64, act: KAction) {
        match self.cores[c].state {
            CState::Busy => {
                self.sync(c);
                self.cores[c].kwork.push_back((cycles, act));
                if self.cur_core != Some(c) {
                    self.run_core(c);
                }
            }
            CState::Waking => self.cores[c].kwork.push_back((cycles, act)),
            CState::Idle(_) => {
                self.cores[c].kwork.push_back((cycles, act));
                self.kick(c);
            }
            CState::Offline => {
                // Only reachable in the instant of a cluster switch; send it to the new cluster.
                let to = self.irq_core();
                if to != c && self.cores[to].state != CState::Offline {
                    self.irq(to, cycles, act);
                }
            }
        }
    }

    fn kaction(&mut self, c: usize, act: KAction) {
        match act {
            KAction::None => {}
            KAction::TickCheck => {
                if let Some(r) = self.cores[c].running {
                    let n = self.cores[c].rq.len() as u64 + 1;
                    if n > 1 {
                        let total: u64 = self.cores[c]
                            .rq
                            .iter()
                            .map(|&t| u64::from(self.threads[t].weight))
                            .sum::<u64>()
                            + u64::from(self.threads[r].weight);
                        let slice = cfs::time_slice_ns(self.threads[r].weight, total, n);
                        let ran = self.now().saturating_sub(self.cores[c].turn_start_ns);
                        if cfs::tick_preempt(ran, slice) {
                            self.cores[c].resched = true;
                        }
                    }
                }
            }
            KAction::TimerWake { tid, gen } => {
                if self.threads[tid].timer_gen == gen {
                    self.threads[tid].timer_at = None;
                    self.threads[tid].uninterruptible = false;
                    self.wake(tid);
                }
            }
            KAction::Vsync => {
                let waiters = std::mem::take(&mut self.vsync_waiters);
                for t in waiters {
                    self.threads[t].vsync_fired = true;
                    self.wake(t);
                }
            }
            KAction::Input(i) => self.deliver_input(i),
        }
    }

    fn deliver_input(&mut self, i: u32) {
        let ev = self.events[i as usize];
        let discrete = is_discrete(&ev.raw);
        match self.model {
            Model::Pull16ms => self.device_q.push_back((ev.at_ns, discrete)),
            Model::VsyncBatched | Model::BlockingMiddleware => {
                self.device_q.push_back((ev.at_ns, discrete));
                if let Some(h) = self.hub {
                    self.wake(h);
                }
            }
            Model::Esm | Model::EsmKdsGuis => {
                let listeners = self.esm.listeners(lull_esm::interpret(ev.raw).0);
                let mut pushes = Vec::new();
                let accepted = self.esm.inject(ev.raw, ev.at_ns, |p| pushes.push(p));
                if accepted.is_none() {
                    // Nobody listens: on the companion core this is the triage that lets the
                    // device rest.
                    self.dropped += 1;
                    return;
                }
                // User input some app takes restarts guiS's idle hold-off.
                if lull_esm::interpret(ev.raw).0.is_input() {
                    self.last_input_ns = Some(ev.at_ns);
                }
                // Companion-core triage: an event some app listens to wakes the main cluster.
                if self.idle_forced && guis::triage_wakes_main(listeners) {
                    self.idle_forced = false;
                    self.switch_cluster(self.main_cluster);
                }
                if !pushes.is_empty() {
                    self.esm_pushes.extend(pushes);
                    if let Some(d) = self.dispatcher {
                        self.wake(d);
                    }
                }
            }
        }
    }

    // ---------------------------------------------------------------- ticks and timers

    fn tick_period_ns(&self) -> u64 {
        NS_PER_S / u64::from(self.plat.timer.hz)
    }

    fn arm_tick(&mut self, c: usize) {
        let p = self.tick_period_ns();
        let next = (self.now() / p + 1) * p;
        let core = &mut self.cores[c];
        core.tick_gen += 1;
        core.tick_armed = true;
        let gen = core.tick_gen;
        self.eng.schedule_at(next, Ev::Tick { core: c, gen });
    }

    fn tick(&mut self, c: usize, gen: u64) {
        if self.cores[c].tick_gen != gen {
            return;
        }
        let periodic = self.plat.timer.mode == TimerMode::Periodic;
        match self.cores[c].state {
            CState::Offline => {
                self.cores[c].tick_armed = false;
                return;
            }
            CState::Idle(_) if !periodic => {
                self.cores[c].tick_armed = false;
                return;
            }
            _ => {}
        }
        self.arm_tick(c);
        let cy = self.plat.costs.tick_cycles;
        self.irq(c, cy, KAction::TickCheck);
    }

    fn arm_timer(&mut self, tid: usize, at: u64) {
        let t = &mut self.threads[tid];
        t.timer_gen += 1;
        t.timer_at = Some(at);
        let gen = t.timer_gen;
        self.eng.schedule_at(at, Ev::Timer { tid, gen });
    }

    // ---------------------------------------------------------------- core execution

    fn khz(&self, c: usize) -> u64 {
        let core = &self.cores[c];
        self.plat.clusters[core.cluster].opps[core.opp].khz
    }

    /// Accounts the progress of the current segment up to now.
    fn sync(&mut self, c: usize) {
        let now = self.now();
        if self.cores[c].state != CState::Busy {
            self.cores[c].seg_start_ns = now;
            return;
        }
        let elapsed = now.saturating_sub(self.cores[c].seg_start_ns);
        if elapsed == 0 {
            return;
        }
        let khz = self.khz(c);
        let core = &mut self.cores[c];
        let done = if now >= core.planned_end_ns {
            core.planned_cycles
        } else {
            ns_to_cycles(elapsed, khz).min(core.planned_cycles)
        };
        core.planned_cycles -= done;
        if core.planned_kwork {
            if let Some(front) = core.kwork.front_mut() {
                front.0 = front.0.saturating_sub(done);
            }
        } else if let Some(t) = core.running {
            let th = &mut self.threads[t];
            th.remaining = th.remaining.saturating_sub(done);
            th.exec_ns += elapsed;
            th.vruntime += cfs::vruntime_delta_ns(elapsed, th.weight);
            let cur = th.vruntime;
            let leftmost = core.rq.iter().map(|&q| self.threads[q].vruntime).min();
            core.min_vr = core.min_vr.max(leftmost.map_or(cur, |l| l.min(cur)));
        }
        core.seg_start_ns = now;
    }

    fn plan(&mut self, c: usize, cycles: u64, kwork: bool) {
        let khz = self.khz(c);
        let now = self.now();
        let core = &mut self.cores[c];
        core.gen += 1;
        core.planned_cycles = cycles;
        core.planned_kwork = kwork;
        core.planned_end_ns = now + cycles_to_ns(cycles, khz);
        core.seg_start_ns = now;
        let gen = core.gen;
        let end = core.planned_end_ns;
        self.eng.schedule_at(end, Ev::CoreDone { core: c, gen });
    }

    fn run_core(&mut self, c: usize) {
        if self.cores[c].state != CState::Busy {
            return;
        }
        let outer = self.cur_core.replace(c);
        self.sync(c);
        self.run_core_loop(c);
        self.cur_core = outer;
    }

    fn run_core_loop(&mut self, c: usize) {
        loop {
            if self.cores[c].state != CState::Busy {
                return;
            }
            if let Some(&(cy, act)) = self.cores[c].kwork.front() {
                if cy > 0 {
                    self.plan(c, cy, true);
                    return;
                }
                self.cores[c].kwork.pop_front();
                self.kaction(c, act);
                continue;
            }
            if self.cores[c].resched {
                self.cores[c].resched = false;
                if let Some(t) = self.cores[c].running {
                    if !self.cores[c].rq.is_empty() {
                        self.threads[t].state = TState::Runnable;
                        self.cores[c].rq.push(t);
                        self.cores[c].running = None;
                        self.audit_event(c, t, AuditEventKind::Preempt);
                    }
                }
            }
            if let Some(t) = self.cores[c].running {
                // (The event thread parks itself in EV_WAIT through `esm_wait` instead.)
                if self.threads[t].remaining == 0
                    && self.threads[t].todo.is_empty()
                    && self.threads[t].category != Some(ThreadCategory::Event)
                    && self.gated_off(t)
                {
                    // guiS at a scheduling point: the window changed under a running thread.
                    self.threads[t].state = TState::Frozen;
                    self.cores[c].running = None;
                    self.audit_event(c, t, AuditEventKind::Block);
                    continue;
                }
                if self.threads[t].category.is_some() {
                    self.last_gui_active_ns = Some(self.eng.now_ns());
                }
                if self.threads[t].remaining > 0 {
                    let r = self.threads[t].remaining;
                    self.plan(c, r, false);
                    return;
                }
                match self.step(t) {
                    Action::Compute(cy) => {
                        self.threads[t].remaining = cy.max(1);
                    }
                    Action::Sleep(until) => {
                        self.threads[t].state = TState::Sleeping;
                        self.cores[c].running = None;
                        self.arm_timer(t, until);
                        self.audit_event(c, t, AuditEventKind::Block);
                    }
                    Action::SwapWait(until) => {
                        self.threads[t].state = TState::Sleeping;
                        self.threads[t].uninterruptible = true;
                        self.cores[c].running = None;
                        self.arm_timer(t, until);
                        self.audit_event(c, t, AuditEventKind::Block);
                    }
                    Action::Block => {
                        self.threads[t].state = TState::Sleeping;
                        self.cores[c].running = None;
                        self.audit_event(c, t, AuditEventKind::Block);
                    }
                    Action::EvWait => {
                        self.threads[t].state = TState::EvWait;
                        self.cores[c].running = None;
                        self.audit_event(c, t, AuditEventKind::Block);
                    }
                }
                continue;
            }
            let next = self.pick_next(c);
            if let Some(t) = next {
                let refill = self.refill_cycles(c, t);
                let cost = self.plat.costs.context_switch_cycles + refill;
                let core = &mut self.cores[c];
                core.running = Some(t);
                core.turn_start_ns = self.eng.now_ns();
                core.last_ran = Some((self.threads[t].proc_id, self.threads[t].cache_kib));
                self.threads[t].state = TState::Running;
                self.threads[t].core = c;
                self.threads[t].switches += 1;
                core.kwork.push_back((cost, KAction::None));
                self.audit_event(c, t, AuditEventKind::SwitchIn);
                continue;
            }
            self.enter_idle(c);
            return;
        }
    }

    /// Cycles the incoming thread spends reloading what an unrelated predecessor evicted.
    fn refill_cycles(&self, c: usize, t: usize) -> u64 {
        let Some((prev_proc, prev_kib)) = self.cores[c].last_ran else {
            return 0;
        };
        let th = &self.threads[t];
        if prev_proc == th.proc_id {
            return 0;
        }
        let costs = &self.plat.costs;
        let kib = th.cache_kib.min(prev_kib).min(costs.l2_kib);
        let lines = kib * 1024 / costs.cache_line_bytes;
        let ns = lines * costs.dram_latency_ns / costs.refill_mlp;
        ns_to_cycles(ns, self.khz(c))
    }

    fn pick_next(&mut self, c: usize) -> Option<usize> {
        if self.cores[c].rq.is_empty() {
            // New-idle balance: pull a waiting thread from the busiest core of the cluster.
            let cl = self.cores[c].cluster;
            let busiest = (0..self.cores.len())
                .filter(|&o| {
                    o != c && self.cores[o].cluster == cl && self.cores[o].state != CState::Offline
                })
                .filter(|&o| !self.cores[o].rq.is_empty() && self.cores[o].running.is_some())
                .max_by_key(|&o| (self.cores[o].rq.len(), std::cmp::Reverse(o)));
            if let Some(o) = busiest {
                let (i, _) = self.cores[o]
                    .rq
                    .iter()
                    .enumerate()
                    .max_by_key(|(_, &t)| (self.threads[t].vruntime, t))
                    .expect("non-empty");
                let t = self.cores[o].rq.swap_remove(i);
                let from_min = self.cores[o].min_vr;
                let to_min = self.cores[c].min_vr;
                let th = &mut self.threads[t];
                th.vruntime = th.vruntime.saturating_sub(from_min) + to_min;
                th.core = c;
                self.cores[c].rq.push(t);
            }
        }
        let core = &mut self.cores[c];
        let (i, _) = core
            .rq
            .iter()
            .enumerate()
            .min_by_key(|(_, &t)| (self.threads[t].vruntime, t))?;
        Some(core.rq.swap_remove(i))
    }

    // ---------------------------------------------------------------- idle

    /// The menu governor's typical interval: the mean of the last intervals if they are steady
    /// (standard deviation small against the mean), discarding the largest outliers.
    fn typical_interval_ns(hist: &VecDeque<u64>) -> u64 {
        if hist.len() < MENU_INTERVALS {
            return NO_PREDICTION_NS;
        }
        let mut v: Vec<u64> = hist.iter().copied().collect();
        v.sort_unstable();
        while v.len() >= MENU_INTERVALS * 3 / 4 {
            let n = v.len() as f64;
            let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
            let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
            // menu.c: accept when avg > 6 × stddev or stddev <= 20 µs.
            if mean * mean > 36.0 * var || var <= 400.0 * 1e6 {
                return mean as u64;
            }
            v.pop();
        }
        NO_PREDICTION_NS
    }

    fn next_timer_on(&self, c: usize) -> u64 {
        let mut next = NO_PREDICTION_NS;
        for t in &self.threads {
            if let Some(at) = t.timer_at {
                if t.core == c
                    || (self.cores[t.core].cluster != self.active_cluster && c == self.irq_core())
                {
                    next = next.min(at);
                }
            }
        }
        if self.plat.timer.mode == TimerMode::Periodic {
            let p = self.tick_period_ns();
            next = next.min((self.now() / p + 1) * p);
        }
        if self.vsync_scheduled && c == self.irq_core() {
            next = next.min(self.next_vsync_ns());
        }
        next
    }

    fn enter_idle(&mut self, c: usize) {
        let now = self.now();
        let next_timer = self.next_timer_on(c);
        let typical = Self::typical_interval_ns(&self.cores[c].idle_hist);
        let predicted = next_timer.saturating_sub(now).min(typical);
        let cl = &self.plat.clusters[self.cores[c].cluster];
        let mut s = 0;
        for (i, st) in cl.idle_states.iter().enumerate() {
            if st.residency_us * NS_PER_US <= predicted {
                s = i;
            }
        }
        let core = &mut self.cores[c];
        core.state = CState::Idle(s);
        core.idle_since_ns = now;
        core.predicted_ns = predicted;
        core.gen += 1;
        if self.plat.timer.mode == TimerMode::Dynamic {
            core.tick_gen += 1;
            core.tick_armed = false;
        }
        // Coupled cluster power-down: every online core of the cluster in its deepest state,
        // each having predicted a sleep long enough for it.
        let ci = self.cores[c].cluster;
        if let Some(off) = &cl.cluster_off {
            let deepest = cl.idle_states.len() - 1;
            let all = self
                .cores
                .iter()
                .filter(|k| k.cluster == ci && k.state != CState::Offline)
                .all(|k| {
                    // Coupled idle (CPUIDLE_FLAG_COUPLED): each core votes for the cluster state
                    // when it enters idle, from its prediction then; the vote stands until the
                    // core wakes.
                    k.state == CState::Idle(deepest)
                        && k.predicted_ns >= off.residency_us * NS_PER_US
                });
            if all {
                self.cluster_off[ci] = true;
            }
        }
    }

    /// Brings an idle core up (interrupt or wakeup IPI), paying its exit latency.
    fn kick(&mut self, c: usize) {
        let CState::Idle(s) = self.cores[c].state else {
            return;
        };
        let now = self.now();
        let ci = self.cores[c].cluster;
        let cl = &self.plat.clusters[ci];
        let exit_us = if self.cluster_off[ci] {
            self.cluster_off[ci] = false;
            cl.cluster_off
                .as_ref()
                .map_or(cl.idle_states[s].exit_us, |o| o.exit_us)
        } else {
            cl.idle_states[s].exit_us
        };
        let core = &mut self.cores[c];
        let slept = now - core.idle_since_ns;
        if core.idle_hist.len() == MENU_INTERVALS {
            core.idle_hist.pop_front();
        }
        core.idle_hist.push_back(slept);
        core.state = CState::Waking;
        core.gen += 1;
        let gen = core.gen;
        self.eng
            .schedule_at(now + exit_us * NS_PER_US, Ev::WakeDone { core: c, gen });
    }

    // ---------------------------------------------------------------- threads

    fn is_idle_core(&self, c: usize) -> bool {
        let k = &self.cores[c];
        k.state != CState::Offline && k.running.is_none() && k.rq.is_empty() && k.kwork.is_empty()
    }

    fn select_core(&self, t: usize) -> usize {
        let prev = self.threads[t].core;
        let online: Vec<usize> = (0..self.cores.len())
            .filter(|&c| {
                self.cores[c].cluster == self.active_cluster
                    && self.cores[c].state != CState::Offline
            })
            .collect();
        if online.is_empty() {
            return (0..self.cores.len())
                .find(|&c| self.cores[c].cluster == self.active_cluster)
                .unwrap_or(0);
        }
        if online.contains(&prev) && self.is_idle_core(prev) {
            return prev;
        }
        if let Some(&c) = online.iter().find(|&&c| self.is_idle_core(c)) {
            return c;
        }
        let load = |c: usize| self.cores[c].rq.len() + usize::from(self.cores[c].running.is_some());
        online
            .iter()
            .copied()
            .min_by_key(|&c| (load(c), c != prev, c))
            .unwrap_or(prev)
    }

    /// Whether guiS holds this thread (ESM+KDS+guiS only).
    fn gated_off(&self, t: usize) -> bool {
        self.model == Model::EsmKdsGuis
            && self.threads[t]
                .category
                .is_some_and(|cat| !guis::may_run(cat, self.window, self.event_pending(t)))
    }

    /// The window manager changes the app's state (seed 000 figs. 26–28). With KDS the input
    /// handlers leave the ESM's application list in the background and come back in front, and
    /// guiS re-evaluates which threads may run.
    fn window_change(&mut self, i: u32) {
        let w = self.spec.window[i as usize];
        let before = self.window;
        self.window = WindowState {
            stacking: w.stacking,
            screen: w.screen,
            ..before
        };
        if self.model == Model::EsmKdsGuis {
            let res = if self.window.in_foreground() {
                self.esm.restore_input(self.app_id)
            } else {
                self.esm.suspend_input(self.app_id)
            };
            res.expect("the app is attached");
            // Runnable threads that may no longer run leave their queues; frozen ones that may
            // run again are thawed.
            for c in 0..self.cores.len() {
                let queued: Vec<usize> = self.cores[c].rq.clone();
                for t in queued {
                    // The event thread is gated by the ESM (EV_WAIT), not by the window.
                    if self.threads[t].category != Some(ThreadCategory::Event) && self.gated_off(t)
                    {
                        self.cores[c].rq.retain(|&q| q != t);
                        self.threads[t].state = TState::Frozen;
                        self.audit_event(c, t, AuditEventKind::Block);
                    }
                }
            }
            for t in 0..self.threads.len() {
                if self.threads[t].state == TState::Frozen && !self.gated_off(t) {
                    self.wake(t);
                }
            }
        }
    }

    fn event_pending(&self, t: usize) -> bool {
        !self.threads[t].deliveries.is_empty()
            || self.esm.queued_events(self.app_id).unwrap_or(0) > 0
            || !self.esm_pushes.is_empty()
    }

    /// Makes a thread runnable: guiS gate, core selection, CFS placement, preemption check.
    fn wake(&mut self, t: usize) {
        self.wake_gated(t, true);
    }

    /// As [`World::wake`]; `gate` false at thread creation, when every thread runs its
    /// initialisation (the event thread must reach `esm_wait` before guiS gates it).
    fn wake_gated(&mut self, t: usize, gate: bool) {
        match self.threads[t].state {
            TState::Running | TState::Runnable => return,
            TState::Sleeping | TState::EvWait | TState::Frozen => {}
        }
        if self.threads[t].uninterruptible {
            return;
        }
        if gate && self.model == Model::EsmKdsGuis {
            if let Some(cat) = self.threads[t].category {
                if !guis::may_run(cat, self.window, self.event_pending(t)) {
                    self.threads[t].state = TState::Frozen;
                    return;
                }
            }
        }
        if self.threads[t].timer_at.take().is_some() {
            self.threads[t].timer_gen += 1;
        }
        let c = self.select_core(t);
        let min_vr = self.cores[c].min_vr;
        let th = &mut self.threads[t];
        th.vruntime = cfs::place_on_wakeup(th.vruntime, min_vr);
        th.state = TState::Runnable;
        th.core = c;
        let (vr, weight) = (th.vruntime, th.weight);
        self.cores[c].rq.push(t);
        self.audit_event(c, t, AuditEventKind::Unblock);
        match self.cores[c].state {
            CState::Idle(_) => self.kick(c),
            CState::Busy => {
                let preempt = match self.cores[c].running {
                    Some(r) => cfs::wakeup_preempt(self.threads[r].vruntime, vr, weight),
                    None => false,
                };
                if preempt {
                    self.cores[c].resched = true;
                }
                if self.cur_core != Some(c) {
                    self.eng.schedule_in(0, Ev::Poke(c));
                }
            }
            CState::Waking | CState::Offline => {}
        }
    }

    fn step(&mut self, t: usize) -> Action {
        loop {
            if let Some(op) = self.threads[t].todo.pop_front() {
                match op {
                    Op::Compute(cy) => return Action::Compute(cy),
                    Op::HandlerStart(inj) => {
                        let now = self.now();
                        self.latencies_ns.push(now.saturating_sub(inj));
                    }
                    Op::Effect(e) => self.effect(t, e),
                }
                continue;
            }
            if let Some(a) = self.script(t) {
                return a;
            }
        }
    }

    fn effect(&mut self, t: usize, e: Effect) {
        match e {
            Effect::HubTook(n) => {
                for _ in 0..n {
                    if let Some(ev) = self.device_q.pop_front() {
                        if self.window.in_foreground() {
                            self.hub_q.push_back(ev);
                        } else {
                            // No window of this app has focus: the hub routes the event nowhere.
                            self.dropped += 1;
                        }
                    }
                }
            }
            Effect::Forward(n) => {
                for _ in 0..n {
                    if let Some((at, _)) = self.hub_q.pop_front() {
                        self.app_q.push_back(at);
                    }
                }
                if let Some(a) = self.app {
                    self.wake(a);
                }
            }
            Effect::PostFrame => {
                self.last_post_refresh = Some(self.refresh_index());
                self.frames_posted += 1;
                if let Some(c) = self.compositor {
                    self.wake(c);
                }
            }
            Effect::FrameReady => {
                self.frame_ready = true;
                match self.model {
                    // The pull app finds it at its next poll, the vsync app at its next vsync.
                    Model::Pull16ms | Model::VsyncBatched => {}
                    Model::BlockingMiddleware | Model::Esm => {
                        if let Some(a) = self.app {
                            self.wake(a);
                        }
                    }
                    Model::EsmKdsGuis => {
                        if let Some(d) = self.drawing {
                            self.wake(d);
                        }
                    }
                }
            }
            Effect::WakeDrawing => {
                self.dirty = true;
                if let Some(d) = self.drawing {
                    self.wake(d);
                }
            }
            Effect::RequestVsync => {
                if !self.vsync_waiters.contains(&t) {
                    self.vsync_waiters.push(t);
                }
                if !self.vsync_scheduled {
                    self.vsync_scheduled = true;
                    let at = self.next_vsync_ns();
                    self.eng.schedule_at(at, Ev::Vsync);
                }
            }
        }
    }

    fn refresh_index(&self) -> u64 {
        self.now() * u64::from(self.plat.display.refresh_hz) / NS_PER_S
    }

    /// Double buffering with swap interval 1 (the EGL default): a frame was already posted in
    /// this refresh period, so the drawing thread waits for the next vsync before drawing again.
    fn swap_wait(&self) -> Option<Action> {
        (self.last_post_refresh == Some(self.refresh_index()))
            .then(|| Action::SwapWait(self.next_vsync_ns()))
    }

    /// Whether a drawing thread owes a frame (input dirtied it or a video frame is ready), and
    /// if so whether it may draw now (which takes the owed frame) or must first wait for vsync.
    fn frame_due(&mut self) -> FrameDue {
        if !(self.dirty || self.frame_ready) {
            return FrameDue::No;
        }
        if let Some(wait) = self.swap_wait() {
            return FrameDue::Wait(wait);
        }
        self.dirty = false;
        self.frame_ready = false;
        FrameDue::Draw
    }

    fn next_vsync_ns(&self) -> u64 {
        let hz = u64::from(self.plat.display.refresh_hz);
        let k = self.now() * hz / NS_PER_S + 1;
        (k * NS_PER_S).div_ceil(hz)
    }

    /// A blocking baseline app takes everything its hub delivered: per event the handler start
    /// (for latency), receiving and handling; the frame is then dirty.
    fn take_app_queue(&mut self, handler_cycles: u64) -> Vec<Op> {
        let receive = self.spec.framework.app_receive_cycles;
        let ops = self
            .app_q
            .drain(..)
            .flat_map(|at| [Op::HandlerStart(at), Op::Compute(receive + handler_cycles)])
            .collect();
        self.dirty = true;
        ops
    }

    fn push_ops(&mut self, t: usize, ops: impl IntoIterator<Item = Op>) {
        self.threads[t].todo.extend(ops);
    }

    /// The thread's behaviour: queue its next steps, or say how it waits.
    fn script(&mut self, t: usize) -> Option<Action> {
        let handler = self.spec.app.handler_cycles;
        let draw = self.spec.app.draw_cycles;
        let now = self.now();
        match self.threads[t].role {
            Role::PullHub => {
                if self.threads[t].phase == 0 {
                    self.threads[t].phase = 1;
                    let n = self.device_q.len();
                    self.push_ops(
                        t,
                        [
                            Op::Compute(
                                self.spec.framework.hub_poll_cycles
                                    + n as u64 * self.spec.framework.hub_read_cycles,
                            ),
                            Op::Effect(Effect::HubTook(n)),
                        ],
                    );
                    None
                } else {
                    self.threads[t].phase = 0;
                    Some(Action::Sleep(now + self.spec.framework.poll_interval_ns))
                }
            }
            Role::PullApp => match self.threads[t].phase {
                0 => {
                    self.threads[t].phase = 1;
                    let batch: Vec<u64> = self.hub_q.drain(..).map(|(at, _)| at).collect();
                    let mut ops = vec![Op::Compute(self.spec.framework.app_poll_cycles)];
                    for &at in &batch {
                        ops.push(Op::HandlerStart(at));
                        ops.push(Op::Compute(
                            self.spec.framework.app_receive_cycles + handler,
                        ));
                    }
                    if !batch.is_empty() {
                        self.dirty = true;
                    }
                    self.push_ops(t, ops);
                    None
                }
                1 => {
                    match self.frame_due() {
                        FrameDue::No => {}
                        FrameDue::Wait(wait) => return Some(wait),
                        FrameDue::Draw => {
                            self.push_ops(t, [Op::Compute(draw), Op::Effect(Effect::PostFrame)]);
                        }
                    }
                    self.threads[t].phase = 2;
                    None
                }
                _ => {
                    self.threads[t].phase = 0;
                    Some(Action::Sleep(now + self.spec.framework.poll_interval_ns))
                }
            },
            Role::BlockHub => {
                if self.device_q.is_empty() {
                    return Some(Action::Block);
                }
                let n = self.device_q.len();
                self.push_ops(
                    t,
                    [
                        Op::Compute(
                            n as u64
                                * (self.spec.framework.hub_read_cycles
                                    + self.spec.framework.forward_cycles),
                        ),
                        Op::Effect(Effect::HubTook(n)),
                        Op::Effect(Effect::Forward(n)),
                    ],
                );
                None
            }
            Role::VsyncHub => {
                if !self.device_q.is_empty() {
                    // Read everything; presses and releases go out at once, moves wait for the
                    // next frame.
                    let evs: Vec<(u64, bool)> = self.device_q.iter().copied().collect();
                    let n = evs.len();
                    let mut ops = vec![
                        Op::Compute(n as u64 * self.spec.framework.hub_read_cycles),
                        Op::Effect(Effect::HubTook(n)),
                    ];
                    let mut any_move = false;
                    for (_, discrete) in evs {
                        if discrete {
                            ops.push(Op::Compute(self.spec.framework.forward_cycles));
                            // Forwarding takes the oldest: flush batched moves before a press
                            // so order is kept.
                            let k = self.hub_moves + 1;
                            ops.push(Op::Effect(Effect::Forward(k)));
                            self.hub_moves = 0;
                        } else {
                            self.hub_moves += 1;
                            any_move = true;
                        }
                    }
                    if any_move && self.hub_moves > 0 {
                        ops.push(Op::Effect(Effect::RequestVsync));
                    }
                    self.push_ops(t, ops);
                    return None;
                }
                if std::mem::take(&mut self.threads[t].vsync_fired) && self.hub_moves > 0 {
                    let k = self.hub_moves;
                    self.hub_moves = 0;
                    self.push_ops(
                        t,
                        [
                            Op::Compute(k as u64 * self.spec.framework.forward_cycles),
                            Op::Effect(Effect::Forward(k)),
                        ],
                    );
                    return None;
                }
                Some(Action::Block)
            }
            Role::VsyncApp => {
                if !self.app_q.is_empty() {
                    let mut ops = self.take_app_queue(handler);
                    ops.push(Op::Effect(Effect::RequestVsync));
                    self.push_ops(t, ops);
                    return None;
                }
                if std::mem::take(&mut self.threads[t].vsync_fired) {
                    let playing = self.video_playing();
                    let mut ops = Vec::new();
                    if std::mem::take(&mut self.dirty) | std::mem::take(&mut self.frame_ready) {
                        ops.push(Op::Compute(draw));
                        ops.push(Op::Effect(Effect::PostFrame));
                    } else {
                        ops.push(Op::Compute(self.spec.framework.frame_tick_cycles));
                    }
                    if playing {
                        ops.push(Op::Effect(Effect::RequestVsync));
                    }
                    self.push_ops(t, ops);
                    return None;
                }
                if self.video_playing() && !self.vsync_waiters.contains(&t) {
                    // The app animates while the video plays: it asks for every frame.
                    self.push_ops(t, [Op::Effect(Effect::RequestVsync)]);
                    return None;
                }
                Some(Action::Block)
            }
            Role::BlockApp => {
                if !self.app_q.is_empty() {
                    let ops = self.take_app_queue(handler);
                    self.push_ops(t, ops);
                    return None;
                }
                match self.frame_due() {
                    FrameDue::No => Some(Action::Block),
                    FrameDue::Wait(wait) => Some(wait),
                    FrameDue::Draw => {
                        self.push_ops(t, [Op::Compute(draw), Op::Effect(Effect::PostFrame)]);
                        None
                    }
                }
            }
            Role::Compositor => {
                if self.frames_posted > 0 {
                    self.frames_posted -= 1;
                    self.push_ops(t, [Op::Compute(self.spec.framework.compose_cycles)]);
                    return None;
                }
                Some(Action::Block)
            }
            Role::EsmDispatcher => {
                let Some(p) = self.esm_pushes.pop_front() else {
                    return Some(Action::Block);
                };
                self.push_ops(t, [Op::Compute(self.spec.framework.esm_dispatch_cycles)]);
                self.hand_to_app(p);
                None
            }
            Role::EsmApp | Role::KdsEvent => {
                if let Some(at) = self.threads[t].deliveries.pop_front() {
                    let mut ops = vec![Op::HandlerStart(at), Op::Compute(handler)];
                    if self.threads[t].role == Role::KdsEvent {
                        ops.push(Op::Effect(Effect::WakeDrawing));
                    } else {
                        self.dirty = true;
                    }
                    self.push_ops(t, ops);
                    return None;
                }
                if self.threads[t].role == Role::EsmApp {
                    let queued = self.esm.queued_events(self.app_id).unwrap_or(0);
                    if queued == 0 {
                        match self.frame_due() {
                            FrameDue::No => {}
                            FrameDue::Wait(wait) => return Some(wait),
                            FrameDue::Draw => {
                                let ops = [Op::Compute(draw), Op::Effect(Effect::PostFrame)];
                                self.push_ops(t, ops);
                                return None;
                            }
                        }
                    }
                }
                match self.esm.wait(self.app_id).expect("the app is attached") {
                    Some(p) => {
                        self.take_push(t, p);
                        None
                    }
                    None => Some(Action::EvWait),
                }
            }
            Role::KdsDrawing => match self.frame_due() {
                FrameDue::No => Some(Action::Block),
                FrameDue::Wait(wait) => Some(wait),
                FrameDue::Draw => {
                    // KDS: the app's draw commands and the in-kernel composition, no extra hop.
                    self.last_post_refresh = Some(self.refresh_index());
                    self.push_ops(t, [Op::Compute(draw + self.spec.framework.compose_cycles)]);
                    None
                }
            },
            Role::KdsForeground => Some(Action::Block),
            #[cfg(test)]
            Role::Hog => {
                self.push_ops(t, [Op::Compute(1_000_000)]);
                None
            }
            Role::Decoder => {
                let frame = self.threads[t].frame;
                if frame >= self.video_frames {
                    return Some(Action::Block);
                }
                // Decode each frame in its own display slot, like a player pacing by timestamps.
                let due = frame * self.video_period_ns;
                if due > now {
                    return Some(Action::Sleep(due));
                }
                self.threads[t].frame += 1;
                self.push_ops(
                    t,
                    [
                        Op::Compute(self.decode_cycles),
                        Op::Effect(Effect::FrameReady),
                    ],
                );
                None
            }
        }
    }

    fn video_playing(&self) -> bool {
        self.video_frames > 0 && self.now() < self.video_frames * self.video_period_ns
    }

    /// The dispatcher hands a push to the app's event thread, waking it from `EV_WAIT`.
    fn hand_to_app(&mut self, p: Push) {
        let target = if self.model == Model::EsmKdsGuis {
            self.event_thread
        } else {
            self.app
        };
        let Some(t) = target else { return };
        self.take_push(t, p);
        self.wake(t);
    }

    fn take_push(&mut self, t: usize, p: Push) {
        match p.delivery {
            Delivery::Event { event, .. } => {
                self.threads[t].deliveries.push_back(event.injected_ns)
            }
            // Overflow drops are counted by the ESM itself (`overflow_dropped`), read at the end.
            Delivery::Overflow { .. } => {}
        }
    }

    // ---------------------------------------------------------------- SoC: DVFS, switching

    fn set_opp(&mut self, c: usize, opp: usize) {
        if self.cores[c].opp == opp {
            return;
        }
        self.sync(c);
        self.cores[c].opp = opp;
        if self.cores[c].state == CState::Busy {
            // Re-plan the current segment at the new speed.
            let (cy, kw) = (self.cores[c].planned_cycles, self.cores[c].planned_kwork);
            self.plan(c, cy, kw);
        }
    }

    fn governor(&mut self) {
        let window = self.plat.governor.sampling_ms * NS_PER_MS;
        let ci = self.active_cluster;
        let cl = &self.plat.clusters[ci];
        let top = cl.opps.len() - 1;
        let max_khz = cl.opps[top].khz;
        let up = u64::from(self.plat.governor.up_threshold_pct);
        let members: Vec<usize> = (0..self.cores.len())
            .filter(|&c| self.cores[c].cluster == ci && self.cores[c].state != CState::Offline)
            .collect();
        let choose = |load_pct: u64| -> usize {
            if load_pct > up {
                top
            } else {
                let want = max_khz * load_pct / 100;
                cl.opps.iter().position(|o| o.khz >= want).unwrap_or(top)
            }
        };
        let loads: Vec<u64> = members
            .iter()
            .map(|&c| (self.cores[c].busy_window_ns * 100 / window).min(100))
            .collect();
        let max_load = loads.iter().copied().max().unwrap_or(0);
        let sum_load: u64 = loads.iter().sum();
        match cl.freq_domain {
            FreqDomain::Cluster => {
                let opp = choose(max_load);
                for &c in &members {
                    self.set_opp(c, opp);
                }
            }
            FreqDomain::Core => {
                for (i, &c) in members.iter().enumerate() {
                    let opp = choose(loads[i]);
                    self.set_opp(c, opp);
                }
            }
        }
        for c in &mut self.cores {
            c.busy_window_ns = 0;
        }
        let opp_now = members.first().map_or(0, |&c| self.cores[c].opp);
        // Stock automatic cluster switching.
        if let Some(lp) = self.companion {
            if self.plat.cluster_switch.auto {
                if ci == self.main_cluster {
                    if opp_now == 0 && sum_load <= up {
                        self.down_ms += self.plat.governor.sampling_ms;
                    } else {
                        self.down_ms = 0;
                    }
                    if self.down_ms >= self.plat.cluster_switch.down_delay_ms {
                        self.down_ms = 0;
                        self.switch_cluster(lp);
                    }
                } else if max_load > up && opp_now == top {
                    // The companion saturates: back to the main cluster (this also ends forced
                    // idle, which assumed nothing needed the CPU).
                    self.idle_forced = false;
                    self.switch_cluster(self.main_cluster);
                }
            }
            // guiS idle forcing (ESM+KDS+guiS only).
            if self.model == Model::EsmKdsGuis
                && !self.idle_forced
                && self.active_cluster == self.main_cluster
            {
                let runnable = self
                    .threads
                    .iter()
                    .filter(|t| t.category.is_some())
                    .filter(|t| matches!(t.state, TState::Running | TState::Runnable))
                    .count() as u32;
                let pending = self.event_thread.is_some_and(|e| self.event_pending(e));
                let act = guis::AppActivity {
                    runnable_allowed: runnable,
                    event_pending: pending,
                    last_input_ns: self.last_input_ns,
                    last_active_ns: self.last_gui_active_ns,
                };
                if guis::force_idle(&[act], self.now(), guis::DEFAULT_IDLE_FORCE_HOLDOFF_NS) {
                    self.idle_forced = true;
                    self.switch_cluster(lp);
                }
            }
        }
        let next = self.now() + window;
        self.eng.schedule_at(next, Ev::Governor);
    }

    /// Moves all work between the main cluster and the companion core.
    fn switch_cluster(&mut self, to: usize) {
        if to == self.active_cluster {
            return;
        }
        let now = self.now();
        self.cluster_switches += 1;
        let from = self.active_cluster;
        let mut moved_threads = Vec::new();
        let mut moved_kwork = VecDeque::new();
        for c in 0..self.cores.len() {
            if self.cores[c].cluster != from {
                continue;
            }
            self.sync(c);
            if let Some(t) = self.cores[c].running {
                self.audit_event(c, t, AuditEventKind::Preempt);
            }
            let core = &mut self.cores[c];
            if let Some(t) = core.running.take() {
                moved_threads.push(t);
            }
            moved_threads.append(&mut core.rq);
            // Kernel work still owed moves too; a context switch in flight is simply redone.
            moved_kwork.extend(core.kwork.drain(..).filter(|(_, a)| *a != KAction::None));
            core.state = CState::Offline;
            core.gen += 1;
            core.tick_gen += 1;
            core.tick_armed = false;
            core.resched = false;
        }
        self.cluster_off[from] = false;
        self.active_cluster = to;
        // Only the spec's main cores and one companion core exist: bring the whole cluster up.
        let targets: Vec<usize> = (0..self.cores.len())
            .filter(|&c| self.cores[c].cluster == to)
            .collect();
        let lat = self.plat.cluster_switch.latency_us * NS_PER_US;
        for &c in &targets {
            let core = &mut self.cores[c];
            core.state = CState::Waking;
            core.gen += 1;
            core.last_ran = None;
            core.idle_since_ns = now;
            let gen = core.gen;
            self.eng
                .schedule_at(now + lat, Ev::WakeDone { core: c, gen });
        }
        let first = targets[0];
        self.cores[first].kwork.extend(moved_kwork);
        let min_vr = self.cores[first].min_vr;
        for t in moved_threads {
            let th = &mut self.threads[t];
            th.state = TState::Runnable;
            th.core = first;
            th.vruntime = th.vruntime.max(min_vr);
            self.cores[first].rq.push(t);
        }
        for th in &mut self.threads {
            if self.cores[th.core].cluster != to {
                th.core = first;
            }
        }
        // Ticks on the new cores start when they come up (WakeDone arms them).
    }

    // ---------------------------------------------------------------- power

    fn compute_power_uw(&self) -> f64 {
        let mut p = self.fixed_power_mw() * 1000.0;
        for (ci, cl) in self.plat.clusters.iter().enumerate() {
            if self.cluster_off[ci] {
                continue;
            }
            let mut powered = false;
            let mut max_opp = 0;
            for core in self.cores.iter().filter(|k| k.cluster == ci) {
                let opp = cl.opps[core.opp];
                match core.state {
                    CState::Offline => {}
                    CState::Busy => {
                        powered = true;
                        max_opp = max_opp.max(core.opp);
                        p += cl.dynamic_uw(opp) + cl.core_leak_uw(opp);
                    }
                    // Coming out of an idle state or a cluster switch: powered, not yet
                    // executing; the restore work's dynamic energy is not modelled.
                    CState::Waking => {
                        powered = true;
                        max_opp = max_opp.max(core.opp);
                        p += cl.core_leak_uw(opp);
                    }
                    CState::Idle(s) => {
                        powered = true;
                        max_opp = max_opp.max(core.opp);
                        if !cl.idle_states[s].core_gated {
                            p += cl.core_leak_uw(opp);
                        }
                    }
                }
            }
            if powered {
                p += cl.cluster_leak_uw(cl.opps[max_opp]);
            }
        }
        p
    }

    /// Events injected but neither handled nor dropped when the run ended (still in a device,
    /// hub, app or ESM queue, or pushed to a thread that had not started its handler).
    fn pending_events(&self) -> u64 {
        let in_threads: usize = self.threads.iter().map(|t| t.deliveries.len()).sum();
        let in_queues = self.device_q.len() + self.hub_q.len() + self.app_q.len() + in_threads;
        let in_pushes = self.esm_pushes.len();
        (in_queues + in_pushes) as u64 + self.esm.total_queued_events()
    }

    fn cpu_power_mw_mean(&self) -> f64 {
        if self.meter.samples == 0 {
            return 0.0;
        }
        (self.meter.sample_sum_mw - self.meter.fixed_sum_mw) / self.meter.samples as f64
    }

    /// Rest of board plus the display, on or off as the window manager left the screen.
    fn fixed_power_mw(&self) -> f64 {
        let d = &self.plat.display;
        let display = if self.window.screen == lull_model::Screen::On {
            d.on_mw
        } else {
            d.off_mw
        };
        (self.plat.board.rest_mw + display) as f64
    }

    fn report(mut self) -> ModelResult {
        let now = self.now();
        self.account(now);
        let dur = now.max(1);
        let mut lat = std::mem::take(&mut self.latencies_ns);
        lat.sort_unstable();
        let stats = LatencyStats::of_sorted_ns(&lat);
        let mut residency = BTreeMap::new();
        let mut freq: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
        for c in &self.cores {
            let cluster = &self.plat.clusters[c.cluster];
            let mut by_name: BTreeMap<String, u64> = BTreeMap::new();
            for (&key, &ns) in &c.residency_ns {
                let name = match key {
                    StateKey::Offline => "offline".to_owned(),
                    StateKey::Waking => "waking".to_owned(),
                    StateKey::Busy { khz } => format!("busy@{khz}kHz"),
                    StateKey::Idle(s) => cluster.idle_states[s].name.clone(),
                    StateKey::ClusterOff => cluster
                        .cluster_off
                        .as_ref()
                        .map_or_else(|| "cluster-off".to_owned(), |o| o.name.clone()),
                };
                *by_name.entry(name).or_insert(0) += ns;
            }
            let mut m = BTreeMap::new();
            for (k, &v) in &by_name {
                m.insert(k.clone(), v as f64 / 1e6);
                if let Some(khz) = k.strip_prefix("busy@") {
                    let cl = cluster.name.clone();
                    *freq
                        .entry(cl)
                        .or_default()
                        .entry(khz.to_owned())
                        .or_insert(0.0) += v as f64 / 1e6;
                }
            }
            residency.insert(c.name.clone(), m);
        }
        let thread_cpu_ms = self
            .threads
            .iter()
            .map(|t| (t.name.to_owned(), t.exec_ns as f64 / 1e6))
            .collect();
        ModelResult {
            power_mw_mean: if self.meter.samples > 0 {
                self.meter.sample_sum_mw / self.meter.samples as f64
            } else {
                0.0
            },
            power_mw_max_1ms: self.meter.max_mw,
            cpu_power_mw_mean: self.cpu_power_mw_mean(),
            energy_mj: self.meter.energy_uj / 1000.0,
            duration_ms: dur as f64 / 1e6,
            latency_ms: stats,
            events_injected: self.injected,
            events_handled: lat.len() as u64,
            events_dropped: self.dropped + self.esm.counters().overflow_dropped,
            events_pending_at_end: self.pending_events(),
            sim_events: self.eng.processed(),
            cluster_switches: self.cluster_switches,
            idle_forced_ms: self.forced_ns as f64 / 1e6,
            thread_cpu_ms,
            residency_ms: residency,
            busy_freq_residency_ms: freq,
            platform_kind: self
                .plat
                .clusters
                .iter()
                .map(|c| {
                    if c.kind == ClusterKind::Main {
                        "main"
                    } else {
                        "companion"
                    }
                })
                .collect::<Vec<_>>()
                .join("+"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Spec;

    const SPEC: &str = r#"
experiment = "unit"
description = "unit"
platform = "jetson-tk1"
seed = 3
models = ["esm"]
tail_ms = 200
[cpu]
main_cores = 4
companion = true
[app]
handler_cycles = 150000
draw_cycles = 400000
cache_kib = 256
[workload]
kind = "trace"
trace = "stylus-spiral"
scale_to_ms = 5000
"#;

    fn spec() -> Spec {
        Spec::parse(SPEC).expect("valid")
    }

    fn run(spec: &Spec, m: Model) -> ModelResult {
        World::new(spec, m).expect("builds").run()
    }

    #[test]
    fn periodic_ticks_cost_power_that_dynamic_ticks_save() {
        let dynamic = spec();
        let mut periodic = spec();
        periodic.platform.timer.mode = TimerMode::Periodic;
        periodic.platform.timer.hz = 1000;
        let d = run(&dynamic, Model::Esm);
        let p = run(&periodic, Model::Esm);
        assert!(
            p.power_mw_mean > d.power_mw_mean,
            "{} vs {}",
            p.power_mw_mean,
            d.power_mw_mean
        );
        assert!(p.sim_events > d.sim_events);
    }

    #[test]
    fn a_scanning_interrupt_controller_adds_latency() {
        let vectored = spec();
        let mut scanning = spec();
        scanning.platform.interrupts.controller = IrqController::Scanning;
        // 2000 status reads × 400 cycles = 0.8 Mcycles per interrupt, ≥ 0.34 ms at the top OPP:
        // far above the run-to-run effects of shifted idle decisions.
        scanning.platform.interrupts.scanned_devices = 2000;
        let v = run(&vectored, Model::Esm);
        let s = run(&scanning, Model::Esm);
        let (vm, sm) = (
            v.latency_ms.mean.unwrap_or(0.0),
            s.latency_ms.mean.unwrap_or(0.0),
        );
        assert!(sm > vm + 0.3, "{sm} vs {vm}");
    }

    #[test]
    fn deeper_idle_states_lower_power_and_slower_exits_raise_latency() {
        let base = spec();
        let mut shallow = spec();
        // Only WFI: the cores never power-gate.
        for c in &mut shallow.platform.clusters {
            c.idle_states.truncate(1);
            c.cluster_off = None;
        }
        let b = run(&base, Model::Esm);
        let s = run(&shallow, Model::Esm);
        assert!(s.power_mw_mean > b.power_mw_mean);
        assert!(s.latency_ms.mean < b.latency_ms.mean);
    }

    #[test]
    fn the_pull_model_polls_even_with_no_input() {
        let mut idle = spec();
        idle.workload = WorkloadSpec::Video {
            duration_ms: 2000,
            fps_milli: 1,
            width: 1,
            height: 1,
            decode_cycles_per_frame: 1,
        };
        let pull = run(&idle, Model::Pull16ms);
        let esm = run(&idle, Model::Esm);
        // Two 16 ms loops for 2 s wake the SoC ~250 times; ESM does not wake at all.
        assert!(
            pull.sim_events > 5 * esm.sim_events,
            "{} vs {}",
            pull.sim_events,
            esm.sim_events
        );
        assert!(pull.power_mw_mean > esm.power_mw_mean);
    }

    #[test]
    fn guis_forces_idle_onto_the_companion_and_wakes_main_for_a_listened_event() {
        let mut s = spec();
        s.workload = WorkloadSpec::Messaging {
            duration_ms: 8000,
            read_pause_ms: 5000,
            chars_min: 2,
            chars_max: 2,
            key_interval_ms: 120,
            key_hold_ms: 60,
            reply_delay_ms: 50,
        };
        let r = run(&s, Model::EsmKdsGuis);
        assert!(r.idle_forced_ms > 3000.0, "{}", r.idle_forced_ms);
        assert!(r.cluster_switches >= 2);
        assert_eq!(r.events_handled, r.events_injected);
        let lp = r.residency_ms.get("lp0").expect("companion core reported");
        assert!(lp.keys().any(|k| k != "offline"));
    }

    #[test]
    fn cache_refill_is_charged_only_between_unrelated_tasks() {
        let s = spec();
        let mut w = World::new(&s, Model::Esm).expect("builds");
        let app = w.app.expect("esm has an app thread");
        let disp = w.dispatcher.expect("esm has a dispatcher");
        w.cores[0].last_ran = Some((w.threads[app].proc_id, w.threads[app].cache_kib));
        assert_eq!(w.refill_cycles(0, app), 0);
        assert!(w.refill_cycles(0, disp) > 0);
        // Bounded by the smaller hot set: 8 KiB kernel thread = 128 lines × 100 ns / 4.
        let ns = 8 * 1024 / 64 * 100 / 4;
        assert_eq!(w.refill_cycles(0, disp), ns_to_cycles(ns, w.khz(0)));
    }

    fn idle_spec(main_cores: u32) -> Spec {
        let mut s = spec();
        s.cpu.main_cores = main_cores;
        s.cpu.companion = false;
        // One frame per 1000 s: no frame falls in the run, so there is no decoder and no input.
        s.workload = WorkloadSpec::Video {
            duration_ms: 1000,
            fps_milli: 1,
            width: 1,
            height: 1,
            decode_cycles_per_frame: 1,
        };
        s.tail_ms = 0;
        s
    }

    #[test]
    fn cfs_shares_one_core_by_weight() {
        let s = idle_spec(1);
        let mut w = World::new(&s, Model::Esm).expect("builds");
        w.add_thread("hog-0", Role::Hog, 9, 0, 64, None);
        w.add_thread("hog-5", Role::Hog, 9, 5, 64, None);
        let r = w.run();
        let a = r.thread_cpu_ms["hog-0"];
        let b = r.thread_cpu_ms["hog-5"];
        // W(0) / W(5) = 1024 / 335 = 3.06; slices are enforced at 4 ms ticks, so allow 10 %.
        let ratio = a / b;
        assert!((ratio - 1024.0 / 335.0).abs() < 0.3, "{a} / {b} = {ratio}");
        // Together they keep the core busy: nothing else runs.
        assert!(a + b > 990.0, "{}", a + b);
    }

    #[test]
    fn load_balancing_spreads_hogs_over_cores() {
        let s = idle_spec(2);
        let mut w = World::new(&s, Model::Esm).expect("builds");
        for name in ["hog-a", "hog-b", "hog-c", "hog-d"] {
            w.add_thread(name, Role::Hog, 9, 0, 64, None);
        }
        let r = w.run();
        let total: f64 = ["hog-a", "hog-b", "hog-c", "hog-d"]
            .iter()
            .map(|n| r.thread_cpu_ms[*n])
            .sum();
        // Two cores for 1 s, minus switch overheads.
        assert!(total > 1950.0, "{total}");
        for n in ["hog-a", "hog-b", "hog-c", "hog-d"] {
            let ms = r.thread_cpu_ms[n];
            assert!((ms - 500.0).abs() < 100.0, "{n}: {ms}");
        }
    }

    #[test]
    fn per_core_frequency_domains_let_an_idle_core_stay_slow() {
        let mut s = idle_spec(2);
        for c in &mut s.platform.clusters {
            c.freq_domain = FreqDomain::Core;
        }
        let mut w = World::new(&s, Model::Esm).expect("builds");
        w.add_thread("hog", Role::Hog, 9, 0, 64, None);
        let r = w.run();
        let g = &r.busy_freq_residency_ms["g"];
        // The hog's core runs at the top OPP almost all the time.
        assert!(g.get("2320500kHz").copied().unwrap_or(0.0) > 900.0, "{g:?}");
        let mut shared = idle_spec(2);
        for c in &mut shared.platform.clusters {
            c.freq_domain = FreqDomain::Cluster;
        }
        let mut w2 = World::new(&shared, Model::Esm).expect("builds");
        w2.add_thread("hog", Role::Hog, 9, 0, 64, None);
        w2.add_thread("tiny", Role::PullHub, 9, 0, 64, None);
        let r2 = w2.run();
        // With one clock the light thread's core runs at the hog's frequency too.
        let busy_top = r2
            .residency_ms
            .values()
            .filter(|st| st.contains_key("busy@2320500kHz"))
            .count();
        assert_eq!(busy_top, 2, "{:?}", r2.residency_ms);
    }

    #[test]
    fn background_deregisters_input_with_kds_and_the_hub_routes_it_nowhere() {
        use crate::spec::WindowChange;
        use lull_model::{Screen, Stacking};
        let mut s = spec();
        s.workload = WorkloadSpec::Messaging {
            duration_ms: 12_000,
            read_pause_ms: 1_000,
            chars_min: 10,
            chars_max: 10,
            key_interval_ms: 120,
            key_hold_ms: 60,
            reply_delay_ms: 50,
        };
        let front = run(&s, Model::EsmKdsGuis);
        assert_eq!(front.events_dropped, 0);
        s.window = vec![
            WindowChange {
                at_ms: 3_000,
                stacking: Stacking::Background,
                screen: Screen::On,
            },
            WindowChange {
                at_ms: 8_000,
                stacking: Stacking::Foreground,
                screen: Screen::On,
            },
        ];
        let input_in_back = s
            .input_events()
            .expect("builds")
            .iter()
            .filter(|e| (3_000_000_000..8_000_000_000).contains(&e.at_ns))
            .filter(|e| !matches!(e.raw, lull_model::RawEvent::Net { .. }))
            .count() as u64;
        assert!(input_in_back > 20);
        for m in [
            Model::EsmKdsGuis,
            Model::Pull16ms,
            Model::BlockingMiddleware,
        ] {
            let r = run(&s, m);
            // Key presses in the background are dropped (KDS deregistered the handlers; the
            // baselines' hub has no focused window); network replies still arrive.
            // (The pull hub reads up to 16 ms late, so events at the edges may land either side.)
            assert!(
                r.events_dropped.abs_diff(input_in_back) <= 4,
                "{}: {} vs {input_in_back}",
                m.name(),
                r.events_dropped
            );
            assert_eq!(
                r.events_handled + r.events_dropped + r.events_pending_at_end,
                r.events_injected,
                "{}",
                m.name()
            );
        }
        // ESM without KDS has nobody to deregister the handlers: the app keeps receiving input.
        assert_eq!(run(&s, Model::Esm).events_dropped, 0);
        // guiS froze the drawing thread while the app was in the background.
        let back = run(&s, Model::EsmKdsGuis);
        assert!(back.thread_cpu_ms["drawing"] < front.thread_cpu_ms["drawing"]);
    }

    #[test]
    fn turning_the_screen_off_saves_display_power_and_stops_drawing_under_guis() {
        use crate::spec::WindowChange;
        use lull_model::{Screen, Stacking};
        let lit = spec();
        let mut dark = spec();
        dark.window = vec![WindowChange {
            at_ms: 0,
            stacking: Stacking::Foreground,
            screen: Screen::Off,
        }];
        let a = run(&lit, Model::EsmKdsGuis);
        let b = run(&dark, Model::EsmKdsGuis);
        let display = lit.platform.display.on_mw as f64;
        assert!(a.power_mw_mean - b.power_mw_mean > display * 0.95);
        // The app is in front: its events are handled, but nothing is drawn (table 1).
        assert_eq!(b.events_handled, b.events_injected);
        assert_eq!(b.thread_cpu_ms["drawing"], 0.0);
        assert!(a.thread_cpu_ms["drawing"] > 0.0);
    }

    #[test]
    fn the_companion_discards_events_nobody_listens_to_without_waking_the_main_cluster() {
        use crate::spec::WindowChange;
        use lull_model::{Screen, Stacking};
        let mut s = spec();
        // In the background from the start: KDS has deregistered the input handlers.
        s.window = vec![WindowChange {
            at_ms: 0,
            stacking: Stacking::Background,
            screen: Screen::On,
        }];
        let r = run(&s, Model::EsmKdsGuis);
        assert_eq!(r.events_handled, 0);
        assert_eq!(r.events_dropped, r.events_injected);
        // One switch to the companion once guiS forced idle, and none back: every touch was
        // triaged and discarded there.
        assert_eq!(r.cluster_switches, 1);
        assert!(
            r.idle_forced_ms > r.duration_ms - 600.0,
            "{} of {}",
            r.idle_forced_ms,
            r.duration_ms
        );
        let g0 = &r.residency_ms["g0"];
        assert!(g0.get("offline").copied().unwrap_or(0.0) > r.duration_ms - 600.0);
    }

    #[test]
    fn costlier_polling_costs_the_pull_model_power_and_nothing_else() {
        let base = spec();
        let mut heavy = spec();
        heavy.framework.hub_poll_cycles *= 10;
        heavy.framework.app_poll_cycles *= 10;
        let (p0, p1) = (run(&base, Model::Pull16ms), run(&heavy, Model::Pull16ms));
        assert!(
            p1.cpu_power_mw_mean > p0.cpu_power_mw_mean + 5.0,
            "{} vs {}",
            p1.cpu_power_mw_mean,
            p0.cpu_power_mw_mean
        );
        // The push models have no polling loop: identical results.
        let (e0, e1) = (run(&base, Model::Esm), run(&heavy, Model::Esm));
        assert_eq!(e0, e1);
    }

    #[test]
    fn time_conversions_round_up_to_whole_cycles() {
        assert_eq!(cycles_to_ns(1, 1_000_000), 1);
        assert_eq!(cycles_to_ns(3, 2_000_000), 2);
        assert_eq!(ns_to_cycles(1_000, 2_000_000), 2_000);
    }
}
