//! `lull validate kernel --timeline DIR`: each workload's live tracefs timeline beside the
//! simulator's own (docs/validation.md). Parsing and printing only; the runs live in
//! `lull_lab::validate::timeline`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use lull_audit::timeline::{ThreadProfile, Timeline};
use lull_lab::validate::compare::{workload_name, SimProfile};
use lull_lab::validate::timeline::{record, TimelinePair};
use lull_lab::validate::{probe, LiveOptions};
use serde_json::{json, Value};

use crate::output::figure;

fn timeline_json(t: &Timeline, cpus: usize) -> Value {
    json!({
        "threads": t.threads,
        "span_us": t.span_ns as f64 / 1e3,
        "profiles": t.profiles(cpus).iter().map(profile_json).collect::<Vec<_>>(),
        // [thread, cpu, start µs, end µs, preempted]
        "stretches": t.stretches.iter().map(|s| json!([
            s.thread, s.cpu, s.start_ns as f64 / 1e3, s.end_ns as f64 / 1e3, s.preempted
        ])).collect::<Vec<_>>(),
        // [thread, cpu, at µs]
        "wakes": t.wakes.iter().map(|w| json!([w.thread, w.cpu, w.at_ns as f64 / 1e3]))
            .collect::<Vec<_>>(),
    })
}

fn profile_json(p: &ThreadProfile) -> Value {
    json!({
        "name": p.name,
        "share_per_cpu": p.share_per_cpu,
        "stretches": p.stretches,
        "preempted": p.preempted,
        "migrations": p.migrations,
        "stretch_p50_us": p.stretch_p50_us,
        "stretch_p90_us": p.stretch_p90_us,
        "stay_p50_ms": p.stay_p50_ms,
        "wakes_per_cpu": p.wakes_per_cpu,
    })
}

/// The pair as JSON (`DIR/<workload>.timeline.json`).
#[must_use]
pub fn to_json(p: &TimelinePair, profile: &SimProfile) -> Value {
    json!({
        "workload": p.workload,
        "cpus": p.cpus,
        "profile": profile.notes,
        "live": timeline_json(&p.live, p.cpus),
        "sim": timeline_json(&p.sim, p.cpus),
    })
}

/// Each thread's profile, live beside simulated.
#[must_use]
pub fn table(p: &TimelinePair) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{}: live (tracefs) / sim, per thread: % of the span on each CPU, migrations, stretches \
         (preempted), stretch p50/p90 µs, stay on one CPU p50 ms, wake-ups per CPU",
        p.workload
    );
    let live = p.live.profiles(p.cpus);
    let sim = p.sim.profiles(p.cpus);
    for l in &live {
        for (side, q) in [
            ("live", Some(l)),
            ("sim", sim.iter().find(|s| s.name == l.name)),
        ] {
            let Some(q) = q else { continue };
            let per_cpu: Vec<String> = q
                .share_per_cpu
                .iter()
                .map(|s| format!("{:5.1}", s * 100.0))
                .collect();
            let _ = writeln!(
                t,
                "{:<12} {:<4} cpu% [{}] migr {:>5} stretches {:>6} ({:>6}) p50 {:>8} p90 {:>8} stay {:>8} wakes {:?}",
                q.name,
                side,
                per_cpu.join(" "),
                q.migrations,
                q.stretches,
                q.preempted,
                figure(q.stretch_p50_us, 1),
                figure(q.stretch_p90_us, 1),
                figure(q.stay_p50_ms, 1),
                q.wakes_per_cpu,
            );
        }
    }
    t
}

/// Records every workload of `paths`, writes each pair to `dir` and returns the tables.
///
/// # Errors
/// A workload unreadable, the machine or a run failing, the file not written.
pub fn run(paths: &[PathBuf], dir: &Path, seed: u64) -> Result<String, String> {
    let machine = probe();
    let rt_app = machine.rt_app.clone().map_err(|e| e.to_string())?;
    let profile = SimProfile::of(&machine).map_err(|e| e.to_string())?;
    let opts = LiveOptions {
        rt_app: Some(rt_app),
        ..LiveOptions::default()
    };
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut out = format!("simulator profile: {}\n", profile.notes.join("; "));
    for path in paths {
        let text = lull_os::input_file::read_bounded_text(path, lull_os::input_file::RTAPP_JSON)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let w =
            lull_workload::rtapp::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let pair = record(path, &w, &profile, &opts, seed).map_err(|e| e.to_string())?;
        let file = dir.join(format!("{}.timeline.json", workload_name(path)));
        let json = serde_json::to_string(&to_json(&pair, &profile)).expect("serialises");
        lull_os::fileout::write_file_atomically(&file, json.as_bytes())
            .map_err(|e| format!("{}: {e}", file.display()))?;
        out.push_str(&table(&pair));
        let _ = writeln!(out, "(both timelines: {})", file.display());
    }
    Ok(out)
}
