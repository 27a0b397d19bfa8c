//! The writer of rt-app JSON: a workload as rt-app 1.0 runs it, with the `global` settings a
//! live run chooses itself.

use std::fmt::Write as _;

use super::parse::POLICY_OTHER;
use super::{Calibration, Event, Phase, RtApp, TaskSpec, TimerMode};

/// `global` settings that replace the workload's own in [`RtApp::to_json`].
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct GlobalOverrides {
    /// `global.logdir`: where rt-app writes its logs (omitted when `None`: rt-app's `./`).
    pub logdir: Option<String>,
    /// `global.log_basename`: the logs' prefix (omitted when `None`: rt-app's `rt-app`).
    pub log_basename: Option<String>,
    /// `global.calibration` instead of the workload's.
    pub calibration: Option<Calibration>,
    /// `global.duration` instead of the workload's: `Some(None)` writes -1 (no limit).
    pub duration_s: Option<Option<u32>>,
}

/// The indentation of one nesting level.
const INDENT: &str = "  ";

impl RtApp {
    /// The workload as rt-app 1.0 JSON, with `overrides` replacing its `global` settings.
    ///
    /// Every task is written with an explicit `phases` object (rt-app 1.0 reads the `loop` of a
    /// task without one as the phase's, so only this form states both counts). Event keys are
    /// numbered by position (`run0`, `sleep1`, `timer2`, …) because JSON keys must be unique in
    /// an object. [`super::parse`] reads the text back into an equal workload when the task
    /// names are distinct, each task's phase names are distinct, and every value is within the
    /// reader's bounds, as they are for any workload it produced.
    #[must_use]
    pub fn to_json(&self, overrides: &GlobalOverrides) -> String {
        let mut out = String::from("{\n");
        let duration_s = overrides.duration_s.unwrap_or(self.duration_s);
        let calibration = overrides.calibration.unwrap_or(self.calibration);
        out.push_str(INDENT);
        out.push_str("\"global\": {\n");
        let mut global = vec![
            kv(
                "duration",
                &duration_s.map_or_else(|| "-1".to_owned(), |s| s.to_string()),
            ),
            kv("calibration", &calibration_json(calibration)),
            kv("default_policy", &quote(POLICY_OTHER)),
        ];
        if let Some(dir) = &overrides.logdir {
            global.push(kv("logdir", &quote(dir)));
        }
        if let Some(base) = &overrides.log_basename {
            global.push(kv("log_basename", &quote(base)));
        }
        write_members(&mut out, 2, &global);
        out.push_str(INDENT);
        out.push_str("},\n");
        out.push_str(INDENT);
        out.push_str("\"tasks\": {\n");
        let tasks: Vec<String> = self.tasks.iter().map(task_json).collect();
        write_members(&mut out, 2, &tasks);
        out.push_str(INDENT);
        out.push_str("}\n}\n");
        out
    }
}

fn task_json(t: &TaskSpec) -> String {
    let mut members = vec![
        kv("instance", &t.instances.to_string()),
        kv("loop", &loops_json(t.loops)),
        kv("delay", &t.delay_us.to_string()),
        kv("policy", &quote(POLICY_OTHER)),
        kv("priority", &t.nice.to_string()),
    ];
    if let Some(cpus) = &t.cpus {
        members.push(kv("cpus", &cpus_json(cpus)));
    }
    let phases: Vec<String> = t.phases.iter().map(phase_json).collect();
    members.push(kv("phases", &object_json(&phases, 4)));
    kv(&t.name, &object_json(&members, 3))
}

fn phase_json(p: &Phase) -> String {
    let mut members = vec![kv("loop", &p.loops.to_string())];
    if let Some(nice) = p.nice {
        members.push(kv("priority", &nice.to_string()));
    }
    if let Some(cpus) = &p.cpus {
        members.push(kv("cpus", &cpus_json(cpus)));
    }
    for (i, e) in p.events.iter().enumerate() {
        let (key, value) = match e {
            Event::Run { us } => ("run", us.to_string()),
            Event::Runtime { us } => ("runtime", us.to_string()),
            Event::Sleep { us } => ("sleep", us.to_string()),
            Event::Timer {
                reference,
                period_us,
                mode,
            } => {
                let mode = match mode {
                    TimerMode::Relative => "relative",
                    TimerMode::Absolute => "absolute",
                };
                let v = format!(
                    "{{ \"ref\": {}, \"period\": {period_us}, \"mode\": {} }}",
                    quote(reference),
                    quote(mode)
                );
                ("timer", v)
            }
        };
        members.push(kv(&format!("{key}{i}"), &value));
    }
    kv(&p.name, &object_json(&members, 5))
}

fn loops_json(loops: Option<u64>) -> String {
    loops.map_or_else(|| "-1".to_owned(), |n| n.to_string())
}

fn calibration_json(c: Calibration) -> String {
    match c {
        Calibration::Cpu(n) => quote(&format!("CPU{n}")),
        Calibration::NsPerLoop(ns) => ns.to_string(),
    }
}

fn cpus_json(cpus: &[u32]) -> String {
    let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
    format!("[{}]", list.join(", "))
}

/// `{ members }` whose members sit at `depth` levels of indentation.
fn object_json(members: &[String], depth: usize) -> String {
    let mut out = String::from("{\n");
    write_members(&mut out, depth, members);
    out.push_str(&INDENT.repeat(depth - 1));
    out.push('}');
    out
}

fn write_members(out: &mut String, depth: usize, members: &[String]) {
    let pad = INDENT.repeat(depth);
    for (i, m) in members.iter().enumerate() {
        let comma = if i + 1 < members.len() { "," } else { "" };
        let _ = writeln!(out, "{pad}{m}{comma}");
    }
}

fn kv(key: &str, value: &str) -> String {
    format!("{}: {value}", quote(key))
}

/// A JSON string literal.
fn quote(s: &str) -> String {
    // Serialising a &str cannot fail; the fallback keeps the writer total anyway.
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}
