//! One workload's timelines side by side: a live run under a tracefs text trace of
//! `sched_switch`/`sched_wakeup`, and the simulator's own scheduling events of the same workload
//! on the same profile (`lull validate kernel --timeline DIR`, docs/validation.md). Both become
//! a [`lull_audit::timeline::Timeline`], so the two are read by the same code.

use std::path::Path;

use lull_audit::timeline::Timeline;
use lull_os::tracefs::TextTrace;
use lull_sim::rtapp::{run_rtapp, RTAPP_AUDIT_TID_BASE};
use lull_workload::rtapp::RtApp;

use super::compare::{sim_run, workload_name, SimProfile, ValidateError};
use super::live::{run_live, LiveOptions, LiveRun};

/// The events of the live side: every switch and every wake-up with its target CPU.
const TIMELINE_EVENTS: [&str; 2] = ["sched/sched_switch", "sched/sched_wakeup"];
/// Kernel buffer per CPU: `short-sleepers` (8 threads waking 1,000 times a second, the densest
/// shipped workload) makes about 50,000 events per CPU in its 6 s, under 100 bytes each in the
/// ring: 32 MiB leaves room for a busier workload and is refused only by a very small machine.
const TIMELINE_BUFFER_KB: u32 = 32 * 1024;

/// A workload's live and simulated timelines.
#[derive(Clone, PartialEq, Debug)]
pub struct TimelinePair {
    pub workload: String,
    pub cpus: usize,
    pub live: Timeline,
    pub sim: Timeline,
    /// The live run the trace recorded (its logs and CPU counters).
    pub live_run: LiveRun,
}

/// Runs `w` once live under a tracefs trace and once in the simulator on `profile`, recording
/// both timelines. Root and tracefs are needed.
///
/// # Errors
/// The trace cannot be set up or lost events, or either run failed.
pub fn record(
    path: &Path,
    w: &RtApp,
    profile: &SimProfile,
    live_opts: &LiveOptions,
    seed: u64,
) -> Result<TimelinePair, ValidateError> {
    let name = workload_name(path);
    let machine = |e: String| ValidateError::Machine(format!("{name}: timeline: {e}"));
    let trace = TextTrace::create(&TIMELINE_EVENTS, TIMELINE_BUFFER_KB)
        .map_err(|e| machine(e.to_string()))?;
    trace
        .set_tracing(true)
        .map_err(|e| machine(e.to_string()))?;
    let run = run_live(w, live_opts);
    trace
        .set_tracing(false)
        .map_err(|e| machine(e.to_string()))?;
    let run = run.map_err(|source| ValidateError::Live {
        workload: name.clone(),
        source,
    })?;
    if trace.lost() > 0 {
        return Err(machine(format!(
            "the trace lost {} events (buffer {TIMELINE_BUFFER_KB} KiB per CPU)",
            trace.lost()
        )));
    }
    let text = trace.text().map_err(|e| machine(e.to_string()))?;
    let (log, _) = lull_audit::ftrace_text::read(&text, &[]).map_err(|e| machine(e.to_string()))?;
    let live_threads: Vec<(u32, String)> = run
        .threads
        .iter()
        .map(|t| (t.tid as u32, t.thread.name.clone()))
        .collect();
    let live = Timeline::of(&log, &live_threads);

    let mut sim = sim_run(profile, seed);
    sim.audit = true;
    let r = run_rtapp(w, &sim).map_err(|e| ValidateError::Sim {
        workload: name.clone(),
        reason: e.to_string(),
    })?;
    let sim_threads: Vec<(u32, String)> = r
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| (RTAPP_AUDIT_TID_BASE + i as u32, t.name.clone()))
        .collect();
    let log = r.audit.ok_or_else(|| ValidateError::Sim {
        workload: name.clone(),
        reason: "the run recorded no events".into(),
    })?;
    Ok(TimelinePair {
        workload: name,
        cpus: profile.platform.clusters[profile.platform.main_cluster()].cores as usize,
        live,
        sim: Timeline::of(&log, &sim_threads),
        live_run: run,
    })
}
