//! Loading the BPF side, watching it, unloading it.
//!
//! Safe by construction: sched_ext itself gives every task back to the kernel's own scheduler
//! when the BPF side errs, when a runnable task waits longer than the watchdog's `timeout_ms`,
//! when the struct_ops link is closed (this process ends, however it ends), or on sysrq-S. What
//! this module adds is saying so: the kernel's exit reason is read back from the BPF side's
//! `uei` record and returned as [`LoadError::Exited`].

use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::OpenObject;
use lull_os::bpf::sched_ext::{self, SchedExtError, SchedExtState};
use lull_os::bpf::scx_facts::FACTS_PIN_PATH;
use lull_os::sys;
use lull_sched::ucsg::live::UcsgLiveError;
use serde::Serialize;

use crate::placement::{self, PlaceWriter, PLACE_PIN_PATH};
use crate::tables::Tables;
use crate::ucsg::{CpuSets, UcsgCounters, UcsgPlacer};

mod skel {
    #![allow(
        clippy::all,
        clippy::pedantic,
        missing_debug_implementations,
        unsafe_op_in_unsafe_fn
    )]
    include!(concat!(env!("OUT_DIR"), "/bpf_skel.rs"));
}
use skel::{BpfSkel, BpfSkelBuilder};

/// sched_ext's watchdog bound: a runnable task that waits this long ends the scheduler and the
/// kernel takes every task back. 5 s is a sixth of the kernel's ceiling (`SCX_WATCHDOG_MAX_TIMEOUT`,
/// 30 s) and what scx_simple-style schedulers use; short enough that a bug shows within a test.
pub const WATCHDOG_MS: u32 = 5_000;
/// How often the watcher looks at the BPF side's exit record, and at lulld's facts for UCSG,
/// while no signal comes (UCSG's own deadlines, 200 ms and 500 ms, may come sooner).
const WATCH_PERIOD_MS: u32 = 100;

/// How to load.
#[derive(Clone, Debug)]
pub struct ScxOptions {
    /// Seed 003's C, the work an interaction needs (the boost is sized for it).
    pub c_ns: u64,
    /// Where the facts map is pinned.
    pub facts_pin: PathBuf,
    /// UCSG's clusters (LITTLE, big); `None`: from the machine's `cpu_capacity`
    /// ([`placement::machine_sets`]).
    pub cpu_sets: Option<CpuSets>,
    /// Whether UCSG places threads (`--ucsg`). Off by default: holding the one interactive
    /// thread to the CPU UCSG's DPM leaves it took the boosted thread's run-queue wait from
    /// 0.014 × EEVDF's to about 1 × in the lab guest (docs/scx.md, Figures).
    pub ucsg: bool,
}

impl Default for ScxOptions {
    fn default() -> Self {
        ScxOptions {
            c_ns: lull_sched::boost::DEFAULT_C_NS,
            facts_pin: PathBuf::from(FACTS_PIN_PATH),
            cpu_sets: None,
            ucsg: false,
        }
    }
}

/// Why lull-scx could not load or stopped by itself.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("this kernel has no sched_ext: {0}")]
    NotSupported(String),
    #[error(
        "loading a sched_ext scheduler needs root (CAP_SYS_ADMIN and CAP_BPF); running as uid {0}"
    )]
    NotRoot(u32),
    #[error("another sched_ext scheduler ({0}) is loaded; unload it first")]
    AlreadyLoaded(String),
    #[error("sched_ext is {0:?}; wait for it to settle")]
    Busy(SchedExtState),
    #[error("{stage}: {message}")]
    Bpf {
        stage: &'static str,
        message: String,
    },
    #[error("the kernel ended lull-scx and went back to its own scheduler: {reason} ({message})")]
    Exited { reason: String, message: String },
    #[error("UCSG cannot run on these CPUs: {0}")]
    Ucsg(#[from] UcsgLiveError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl From<SchedExtError> for LoadError {
    fn from(e: SchedExtError) -> Self {
        match e {
            SchedExtError::NotSupported(m) => LoadError::NotSupported(m),
            other => LoadError::Bpf {
                stage: "sched_ext sysfs",
                message: other.to_string(),
            },
        }
    }
}

fn bpf(stage: &'static str) -> impl Fn(libbpf_rs::Error) -> LoadError {
    move |e| LoadError::Bpf {
        stage,
        message: e.to_string(),
    }
}

/// The BPF side's counts over a run.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct RunStats {
    /// Wake-ups boosted (seed 003): the thread had a new input.
    pub boosted: u64,
    /// Enqueues at UCSG's high weight (front app within the hold of an input).
    pub high: u64,
    /// Wake-ups sent straight to an idle CPU.
    pub direct: u64,
    /// Enqueues into the shared vtime queue.
    pub shared: u64,
    /// CPUs preempted for a boosted thread.
    pub kicks: u64,
    /// Decisions that found the thread in lulld's facts.
    pub facts_seen: u64,
    /// Of those, decisions for a thread of an app behind (UCSG's low weight).
    pub behind: u64,
    /// Enqueues into the queue of the CPU UCSG placed the thread on.
    pub placed: u64,
    /// Wake-ups of a placed thread sent straight to its CPU, which was idle.
    pub placed_direct: u64,
    /// UCSG's own counts (user space).
    pub ucsg: UcsgCounters,
    /// UCSG's clusters, LITTLE/big or one (`0,1`).
    pub cpu_sets: String,
    /// Writes of the placement map the kernel refused.
    pub place_failed: u64,
}

/// The checks before loading: sched_ext present, root, nothing loaded.
///
/// # Errors
/// `NotSupported`, `NotRoot`, `AlreadyLoaded`, `Busy`.
pub fn preflight() -> Result<(), LoadError> {
    let state = sched_ext::state()?;
    let uid = sys::geteuid();
    if uid != 0 {
        return Err(LoadError::NotRoot(uid));
    }
    match state {
        SchedExtState::Disabled => Ok(()),
        SchedExtState::Enabled => Err(LoadError::AlreadyLoaded(
            sched_ext::root_ops()?.unwrap_or_else(|| "unnamed".into()),
        )),
        other => Err(LoadError::Busy(other)),
    }
}

fn c_text(raw: &[u8]) -> String {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..end]).into_owned()
}

fn exit_of(skel: &BpfSkel<'_>) -> Option<LoadError> {
    let data = skel.maps.data_data.as_ref()?;
    if data.uei.kind == 0 {
        return None;
    }
    let bytes = |s: &[i8]| s.iter().map(|&c| c.to_ne_bytes()[0]).collect::<Vec<u8>>();
    Some(LoadError::Exited {
        reason: c_text(&bytes(&data.uei.reason)),
        message: c_text(&bytes(&data.uei.msg)),
    })
}

fn stats_of(skel: &BpfSkel<'_>) -> RunStats {
    skel.maps
        .bss_data
        .as_ref()
        .map_or_else(RunStats::default, |b| RunStats {
            boosted: b.nr_boosted,
            high: b.nr_high,
            direct: b.nr_direct,
            shared: b.nr_shared,
            kicks: b.nr_kicks,
            facts_seen: b.nr_facts_seen,
            behind: b.nr_behind,
            placed: b.nr_placed,
            placed_direct: b.nr_placed_direct,
            ..RunStats::default()
        })
}

/// Loads lull-scx, calls `on_loaded` once sched_ext reports it enabled, and runs it until a
/// signal arrives on `stop` (a signalfd: [`sys::termination_signalfd`]); then unloads it and
/// returns its counts. The kernel's scheduler is back when this returns, whatever it returns.
///
/// # Errors
/// [`preflight`]'s; `Bpf` for what libbpf or the kernel refused at open, load or attach;
/// `Exited` when the kernel ended the scheduler before the signal.
pub fn run(
    opts: &ScxOptions,
    stop: BorrowedFd<'_>,
    on_loaded: impl FnOnce(),
) -> Result<RunStats, LoadError> {
    preflight()?;
    let tables = Tables::new(opts.c_ns);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let sets = opts
        .cpu_sets
        .clone()
        .unwrap_or_else(|| placement::machine_sets(cpus));
    let placer = UcsgPlacer::new(&sets, sys::monotonic_ns())?;
    let mut object = MaybeUninit::<OpenObject>::uninit();
    let mut open = BpfSkelBuilder::default()
        .open(&mut object)
        .map_err(bpf("opening the BPF object"))?;
    {
        let ro = open
            .maps
            .rodata_data
            .as_deref_mut()
            .ok_or_else(|| LoadError::Bpf {
                stage: "opening the BPF object",
                message: "no read-only data section".into(),
            })?;
        ro.class_weight = tables.class_weight;
        ro.high_weight = tables.high_weight;
        ro.high_hold_ns = tables.high_hold_ns;
        ro.boost_weight = tables.boost_weight;
        ro.period_ns = tables.period_ns;
        ro.min_slice_ns = tables.min_slice_ns;
        ro.sleeper_credit_ns = tables.sleeper_credit_ns;
        ro.max_lead_ns = tables.max_lead_ns;
    }
    open.struct_ops.lull_ops_mut().timeout_ms = WATCHDOG_MS;
    // A stale pin (a lull-scx killed before it could unpin) would be reused with stale
    // records: start from an empty map.
    let _ = std::fs::remove_file(&opts.facts_pin);
    let _ = std::fs::remove_file(PLACE_PIN_PATH);
    open.maps
        .lull_facts
        .set_pin_path(&opts.facts_pin)
        .map_err(bpf("naming the facts map's pin"))?;
    open.maps
        .lull_place
        .set_pin_path(PLACE_PIN_PATH)
        .map_err(bpf("naming the placement map's pin"))?;
    let mut skel = open
        .load()
        .map_err(bpf("loading the BPF programs (the verifier)"))?;
    let mut ucsg = Ucsg {
        on: opts.ucsg,
        placer,
        writer: PlaceWriter::default(),
    };
    let result = attach_and_watch(&mut skel, &mut ucsg, stop, on_loaded).map(|mut stats| {
        stats.ucsg = ucsg.placer.counters();
        stats.cpu_sets = sets.to_string();
        stats.place_failed = ucsg.writer.failed;
        stats
    });
    let _ = skel.maps.lull_facts.unpin(&opts.facts_pin);
    let _ = skel.maps.lull_place.unpin(PLACE_PIN_PATH);
    result
}

/// UCSG's user-space half while lull-scx runs.
struct Ucsg {
    on: bool,
    placer: UcsgPlacer,
    writer: PlaceWriter,
}

impl Ucsg {
    /// Tells UCSG the facts as they are now and writes its placement.
    fn step(&mut self, skel: &BpfSkel<'_>) {
        if !self.on {
            return;
        }
        let facts = placement::read_facts(&skel.maps.lull_facts);
        self.placer.observe(sys::monotonic_ns(), &facts);
        self.writer.sync(&skel.maps.lull_place, &self.placer);
    }

    /// How long the watcher may sleep: until UCSG's next deadline, at most a watch period.
    fn timeout_ms(&self) -> u32 {
        let left_ns = self
            .placer
            .next_deadline_ns()
            .saturating_sub(sys::monotonic_ns());
        let ms = left_ns.div_ceil(1_000_000);
        u32::try_from(ms).map_or(WATCH_PERIOD_MS, |m| m.clamp(1, WATCH_PERIOD_MS))
    }
}

fn attach_and_watch(
    skel: &mut BpfSkel<'_>,
    ucsg: &mut Ucsg,
    stop: BorrowedFd<'_>,
    on_loaded: impl FnOnce(),
) -> Result<RunStats, LoadError> {
    // The headers' probe of the BPF prologue (migration disabled or not) must run as the
    // scheduler registers; a kernel without fentry leaves the conservative default.
    let _probe = skel.progs.scx_lib_init_probe.attach().ok();
    let link = skel
        .maps
        .lull_ops
        .attach_struct_ops()
        .map_err(bpf("registering the scheduler (struct_ops attach)"))?;
    if let Some(e) = exit_of(skel) {
        return Err(e);
    }
    match sched_ext::state()? {
        SchedExtState::Enabled => {}
        state => {
            return Err(exit_of(skel).unwrap_or(LoadError::Exited {
                reason: format!("sched_ext is {state:?} right after registering"),
                message: "see the kernel log".into(),
            }))
        }
    }
    on_loaded();
    let fds = [stop.as_raw_fd()];
    let mut ready = [false];
    loop {
        if let Some(e) = exit_of(skel) {
            return Err(e);
        }
        ucsg.step(skel);
        sys::poll_readable(&fds, Some(ucsg.timeout_ms()), &mut ready)?;
        if ready[0] {
            if let Some(sig) = sys::read_signal(stop)? {
                if !sig.self_inflicted() {
                    break;
                }
            }
        }
    }
    drop(link);
    Ok(stats_of(skel))
}

/// The stop descriptor for [`run`], for a caller without one.
///
/// # Errors
/// The kernel's error.
pub fn stop_on_signals() -> std::io::Result<std::os::fd::OwnedFd> {
    sys::termination_signalfd()
}

/// Whether a file is where [`ScxOptions::facts_pin`] says the map is.
#[must_use]
pub fn facts_pinned(opts: &ScxOptions) -> bool {
    Path::new(&opts.facts_pin).exists()
}
