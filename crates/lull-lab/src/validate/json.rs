//! A minimal rt-app JSON writer for the live runner, until `lull-workload` has its own.
//!
//! The task order must survive (rt-app numbers threads in file order), so the objects are written
//! by hand rather than through a map that sorts its keys. An event's key gets its position as a
//! suffix (`run0`, `sleep1`): rt-app tells the kind of an event by the key's prefix, and JSON
//! objects need unique keys.

use std::fmt::Write;

use lull_workload::rtapp::{Event, Phase, RtApp, TimerMode};

/// The `global` settings the runner imposes on a workload.
#[derive(Clone, Debug)]
pub(crate) struct Overrides<'a> {
    pub duration_s: u32,
    pub calibration_ns: u32,
    pub logdir: &'a str,
    pub log_basename: &'a str,
}

fn string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn cpus(out: &mut String, cpus: &Option<Vec<u32>>) {
    if let Some(cpus) = cpus {
        let list: Vec<String> = cpus.iter().map(u32::to_string).collect();
        let _ = write!(out, ", \"cpus\": [{}]", list.join(", "));
    }
}

fn events(out: &mut String, phase: &Phase) {
    for (i, e) in phase.events.iter().enumerate() {
        let _ = match e {
            Event::Run { us } => write!(out, ", \"run{i}\": {us}"),
            Event::Runtime { us } => write!(out, ", \"runtime{i}\": {us}"),
            Event::Sleep { us } => write!(out, ", \"sleep{i}\": {us}"),
            Event::Timer {
                reference,
                period_us,
                mode,
            } => {
                let mode = match mode {
                    TimerMode::Relative => "relative",
                    TimerMode::Absolute => "absolute",
                };
                write!(
                    out,
                    ", \"timer{i}\": {{\"ref\": {}, \"period\": {period_us}, \"mode\": \"{mode}\"}}",
                    string(reference)
                )
            }
        };
    }
}

/// `workload` as rt-app JSON with `o`'s global settings.
pub(crate) fn to_json(workload: &RtApp, o: &Overrides<'_>) -> String {
    let mut out = format!(
        "{{\"global\": {{\"duration\": {}, \"calibration\": {}, \"logdir\": {}, \
         \"log_basename\": {}, \"default_policy\": \"SCHED_OTHER\"}},\n \"tasks\": {{",
        o.duration_s,
        o.calibration_ns,
        string(o.logdir),
        string(o.log_basename)
    );
    for (n, t) in workload.tasks.iter().enumerate() {
        let loops = t.loops.map_or(-1, |l| l as i64);
        let _ = write!(
            out,
            "{}\n  {}: {{\"instance\": {}, \"loop\": {loops}, \"priority\": {}",
            if n == 0 { "" } else { "," },
            string(&t.name),
            t.instances,
            t.nice
        );
        if t.delay_us > 0 {
            let _ = write!(out, ", \"delay\": {}", t.delay_us);
        }
        cpus(&mut out, &t.cpus);
        out.push_str(", \"phases\": {");
        for (p, phase) in t.phases.iter().enumerate() {
            // Phase keys must be unique too; an unnamed phase gets its position.
            let name = if phase.name.is_empty() {
                format!("p{p}")
            } else {
                phase.name.clone()
            };
            let _ = write!(
                out,
                "{}{}: {{\"loop\": {}",
                if p == 0 { "" } else { ", " },
                string(&name),
                phase.loops
            );
            if let Some(nice) = phase.nice {
                let _ = write!(out, ", \"priority\": {nice}");
            }
            cpus(&mut out, &phase.cpus);
            events(&mut out, phase);
            out.push('}');
        }
        out.push_str("}}");
    }
    out.push_str("\n }\n}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_workload::rtapp::{Calibration, TaskSpec};

    #[test]
    fn tasks_keep_their_order_and_events_their_kinds() {
        let phase = |events| Phase {
            name: String::new(),
            loops: 1,
            nice: None,
            cpus: None,
            events,
        };
        let w = RtApp {
            duration_s: Some(3),
            calibration: Calibration::Cpu(0),
            tasks: vec![
                TaskSpec {
                    name: "zeta".into(),
                    instances: 2,
                    loops: None,
                    delay_us: 0,
                    nice: 5,
                    cpus: Some(vec![1]),
                    phases: vec![phase(vec![Event::Run { us: 100 }])],
                },
                TaskSpec {
                    name: "alpha \"q\"".into(),
                    instances: 1,
                    loops: Some(4),
                    delay_us: 7,
                    nice: 0,
                    cpus: None,
                    phases: vec![phase(vec![
                        Event::Runtime { us: 2000 },
                        Event::Sleep { us: 10 },
                        Event::Timer {
                            reference: "tick".into(),
                            period_us: 8000,
                            mode: TimerMode::Absolute,
                        },
                    ])],
                },
            ],
        };
        let text = to_json(
            &w,
            &Overrides {
                duration_s: 1,
                calibration_ns: 20,
                logdir: "/tmp/d",
                log_basename: "b",
            },
        );
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["global"]["duration"], 1);
        assert_eq!(v["global"]["calibration"], 20);
        assert_eq!(v["global"]["logdir"], "/tmp/d");
        assert!(text.find("\"zeta\"").unwrap() < text.find("alpha").unwrap());
        let z = &v["tasks"]["zeta"];
        assert_eq!(
            (z["instance"].clone(), z["loop"].clone()),
            (2.into(), (-1).into())
        );
        assert_eq!(z["priority"], 5);
        assert_eq!(z["cpus"], serde_json::json!([1]));
        assert_eq!(z["phases"]["p0"]["run0"], 100);
        let a = &v["tasks"]["alpha \"q\""];
        assert_eq!(a["loop"], 4);
        assert_eq!(a["delay"], 7);
        let p = &a["phases"]["p0"];
        assert_eq!(p["runtime0"], 2000);
        assert_eq!(p["sleep1"], 10);
        assert_eq!(p["timer2"]["ref"], "tick");
        assert_eq!(p["timer2"]["period"], 8000);
        assert_eq!(p["timer2"]["mode"], "absolute");
    }
}
