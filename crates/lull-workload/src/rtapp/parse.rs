//! The strict reader of rt-app JSON (the subset in the module docs of [`super`]).
//!
//! The text is first read into an ordered JSON tree (rt-app numbers threads in file order, and a
//! map would lose that order), then walked key by key. Every key is either understood, accepted
//! as having no effect on scheduling, or an error naming it; nothing is skipped silently.

use std::collections::HashSet;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{Calibration, Event, Phase, RtApp, TaskSpec, TimerMode};

/// Largest file the reader accepts, bytes: far above any hand-written workload, small enough that
/// a corrupt or hostile file cannot exhaust memory.
pub const MAX_INPUT_BYTES: usize = 16 * 1024 * 1024;
/// Largest integer rt-app can hold: it reads every number with json-c's `json_object_get_int`,
/// a C `int`.
pub const RTAPP_INT_MAX: i128 = i32::MAX as i128;
/// CPU numbers must be below this: Lull's affinity masks are 64 bits wide.
pub const MAX_CPUS: u32 = 64;
/// The nice range of a `SCHED_OTHER` thread (`setpriority(2)`).
pub const NICE_MIN: i8 = -20;
/// See [`NICE_MIN`].
pub const NICE_MAX: i8 = 19;
/// The only scheduling policy Lull simulates.
pub const POLICY_OTHER: &str = "SCHED_OTHER";

/// Event keys rt-app recognises, matched by prefix in this order (rt-app's
/// `rt-app_parse_config.c`): `runtime` must be tried before `run`, and `run0`, `sleepA` are
/// events.
pub const RTAPP_EVENT_PREFIXES: [&str; 17] = [
    "lock", "unlock", "wait", "signal", "broad", "sync", "sleep", "runtime", "run", "timer",
    "suspend", "resume", "mem", "iorun", "yield", "barrier", "fork",
];
/// The events Lull simulates.
pub const SUPPORTED_EVENTS: [&str; 4] = ["run", "runtime", "sleep", "timer"];

/// rt-app `global` keys with an effect Lull does not simulate.
const UNSUPPORTED_GLOBAL_KEYS: [&str; 3] = ["cumulative_slack", "io_device", "mem_buffer_size"];
/// rt-app task and phase keys Lull does not simulate (deadline parameters, utilisation clamps,
/// cgroups, NUMA).
const UNSUPPORTED_TASK_KEYS: [&str; 9] = [
    "dl-runtime",
    "dl-period",
    "dl-deadline",
    "util_min",
    "util_max",
    "taskgroup",
    "nodes_membind",
    "period",
    "deadline",
];

/// Why an rt-app file was rejected. Every variant names where: the key, and the task and phase
/// when the key sits in one.
///
/// Paths read `top level`, `global`, `tasks`, `task "a"`, `task "a" phase "p1"`, or
/// `task "a" phase "p1" event "timer0"` (a timer's object).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum RtAppError {
    /// Not JSON at all (position as serde_json reports it, both 1-based).
    #[error("line {line} column {column}: not JSON: {msg}")]
    Json {
        line: usize,
        column: usize,
        msg: String,
    },
    /// Longer than [`MAX_INPUT_BYTES`].
    #[error("{bytes} bytes: larger than the {MAX_INPUT_BYTES}-byte limit")]
    TooLarge { bytes: usize },
    /// The file is JSON but not an object.
    #[error("top level: expected an object, found {found}")]
    TopLevelNotObject { found: &'static str },
    /// A key rt-app does not know here.
    #[error("{path}: key {key:?}: not an rt-app key here")]
    UnknownKey { path: String, key: String },
    /// A key rt-app knows whose effect Lull does not simulate.
    #[error("{path}: key {key:?}: not simulated by Lull")]
    UnsupportedKey { path: String, key: String },
    /// An rt-app event Lull does not simulate; `phase` is `None` for events at the task's top
    /// level.
    #[error("{}: key {key:?}: event not simulated by Lull (supported: run, runtime, sleep, timer)",
        place(.task, .phase.as_deref()))]
    UnsupportedEvent {
        task: String,
        phase: Option<String>,
        key: String,
    },
    /// A value of the wrong type or outside the subset.
    #[error("{path}: key {key:?}: {reason}")]
    BadValue {
        path: String,
        key: String,
        reason: String,
    },
    /// The same key twice in one object (rt-app's JSON library keeps only one of them).
    #[error("{path}: duplicate key {key:?}")]
    DuplicateKey { path: String, key: String },
    /// A required key is absent.
    #[error("{path}: missing key {key:?}")]
    Missing { path: String, key: String },
    /// A task or phase without events (rt-app refuses it too).
    #[error("{}: no events (rt-app needs at least one)", place(.task, .phase.as_deref()))]
    NoEvents { task: String, phase: Option<String> },
    /// A task with both `phases` and events of its own.
    #[error("task {task:?}: key {key:?}: an event next to \"phases\" (put it in a phase)")]
    PhasesAndEvents { task: String, key: String },
}

/// `task "a"` or `task "a" phase "p"`.
fn place(task: &str, phase: Option<&str>) -> String {
    match phase {
        Some(p) => format!("task {task:?} phase {p:?}"),
        None => format!("task {task:?}"),
    }
}

/// Parses an rt-app workload.
///
/// # Errors
/// A [`RtAppError`] for the first problem found.
pub fn parse(text: &str) -> Result<RtApp, RtAppError> {
    if text.len() > MAX_INPUT_BYTES {
        return Err(RtAppError::TooLarge { bytes: text.len() });
    }
    let text = super::comments::blank(text).map_err(|e| RtAppError::Json {
        line: e.line,
        column: 1,
        msg: "a /* comment that never ends".into(),
    })?;
    let tree: Json = serde_json::from_str(&text).map_err(|e| json_error(&e))?;
    let Json::Object(top) = &tree else {
        return Err(RtAppError::TopLevelNotObject { found: tree.kind() });
    };
    let top_path = "top level";
    unique(top, top_path)?;
    let mut app = RtApp {
        duration_s: None,
        calibration: Calibration::Cpu(0),
        tasks: Vec::new(),
    };
    let mut tasks = None;
    for (key, value) in top {
        match key.as_str() {
            "tasks" => tasks = Some(value),
            "global" => parse_global(value, &mut app)?,
            // rt-app 1.0 creates resources from the events that name them; the section is
            // only kept for old files, and an empty one says nothing.
            "resources" => {
                let entries = object(value, top_path, key)?;
                if !entries.is_empty() {
                    return Err(bad(top_path, key, "only an empty object is accepted"));
                }
            }
            _ => return Err(unknown(top_path, key)),
        }
    }
    let tasks = tasks.ok_or_else(|| RtAppError::Missing {
        path: top_path.into(),
        key: "tasks".into(),
    })?;
    let entries = object(tasks, top_path, "tasks")?;
    if entries.is_empty() {
        return Err(bad(top_path, "tasks", "no tasks"));
    }
    unique(entries, "tasks")?;
    for (name, value) in entries {
        app.tasks.push(parse_task(name, value)?);
    }
    Ok(app)
}

fn parse_global(value: &Json, app: &mut RtApp) -> Result<(), RtAppError> {
    let path = "global";
    let entries = object(value, "top level", path)?;
    unique(entries, path)?;
    for (key, v) in entries {
        match key.as_str() {
            "duration" => {
                let s = int(v, path, key)?;
                app.duration_s = match s {
                    -1 => None,
                    1..=RTAPP_INT_MAX => Some(to_u32(s)),
                    _ => return Err(bad(path, key, "expected seconds > 0, or -1 for no limit")),
                };
            }
            "default_policy" => policy(v, path, key)?,
            "calibration" => app.calibration = calibration(v, path, key)?,
            // No effect on scheduling: the simulator writes no files and the live runner
            // sets these itself.
            "logdir" | "log_basename" => {
                string(v, path, key)?;
            }
            "log_size" => match v {
                Json::Str(_) => {}
                Json::Int(n) if *n >= 0 => {}
                _ => return Err(bad(path, key, "expected a string or a size in MB")),
            },
            "gnuplot" | "lock_pages" | "pi_enabled" => {
                if !matches!(v, Json::Bool(_)) {
                    return Err(bad(
                        path,
                        key,
                        &format!("expected a boolean, found {}", v.kind()),
                    ));
                }
            }
            "ftrace" => match v {
                Json::Bool(false) => {}
                Json::Str(s) if s == "none" => {}
                _ => {
                    return Err(bad(
                        path,
                        key,
                        "only false or \"none\" (no tracing) is accepted",
                    ))
                }
            },
            k if UNSUPPORTED_GLOBAL_KEYS.contains(&k) => return Err(unsupported(path, key)),
            _ => return Err(unknown(path, key)),
        }
    }
    Ok(())
}

fn calibration(v: &Json, path: &str, key: &str) -> Result<Calibration, RtAppError> {
    match v {
        Json::Str(s) => {
            let cpu = s
                .strip_prefix("CPU")
                .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|n| n.parse::<u32>().ok())
                .filter(|n| *n < MAX_CPUS);
            cpu.map(Calibration::Cpu).ok_or_else(|| {
                bad(
                    path,
                    key,
                    &format!("expected \"CPUn\" with n < {MAX_CPUS}, found {s:?}"),
                )
            })
        }
        Json::Int(n) if (1..=RTAPP_INT_MAX).contains(n) => Ok(Calibration::NsPerLoop(to_u32(*n))),
        _ => Err(bad(
            path,
            key,
            "expected \"CPUn\" or a positive number of ns per loop",
        )),
    }
}

/// Task keys other than events, in one object: what the walk collected.
struct Props<'a> {
    loops: Option<Option<u64>>,
    nice: Option<i8>,
    cpus: Option<Vec<u32>>,
    instances: Option<u32>,
    delay_us: Option<u64>,
    phases: Option<&'a Json>,
    events: Vec<Event>,
    first_event_key: Option<&'a str>,
}

/// Where an object sits: a task's top level, or one of its phases.
#[derive(Clone, Copy)]
enum Level<'a> {
    Task,
    Phase(&'a str),
}

fn parse_task(name: &str, value: &Json) -> Result<TaskSpec, RtAppError> {
    let path = place(name, None);
    let entries = object(value, "tasks", name)?;
    unique(entries, &path)?;
    let props = walk(entries, name, Level::Task)?;
    let phases = if let Some(phases_value) = props.phases {
        if let Some(key) = props.first_event_key {
            return Err(RtAppError::PhasesAndEvents {
                task: name.into(),
                key: key.into(),
            });
        }
        let list = object(phases_value, &path, "phases")?;
        if list.is_empty() {
            return Err(bad(&path, "phases", "no phases"));
        }
        unique(list, &format!("{path} phases"))?;
        let mut phases = Vec::with_capacity(list.len());
        for (phase_name, v) in list {
            phases.push(parse_phase(name, phase_name, v, &path)?);
        }
        phases
    } else {
        if props.events.is_empty() {
            return Err(RtAppError::NoEvents {
                task: name.into(),
                phase: None,
            });
        }
        vec![Phase {
            name: String::new(),
            loops: implicit_phase_loops(props.loops),
            nice: None,
            cpus: None,
            events: props.events,
        }]
    };
    let loops = if props.phases.is_some() {
        props.loops.unwrap_or(None)
    } else {
        None
    };
    Ok(TaskSpec {
        name: name.into(),
        instances: props.instances.unwrap_or(1),
        loops,
        delay_us: props.delay_us.unwrap_or(0),
        nice: props.nice.unwrap_or(0),
        cpus: props.cpus,
        phases,
    })
}

/// The loop count of the single phase of a task without `phases`, from the task's `loop`.
///
/// rt-app 1.0 (the version Lull runs live) reads that `loop` as the phase's and keeps the thread
/// looping forever: measured, `{"loop": 3, "run": 10, "sleep": 10}` with `duration` -1 runs until
/// killed. So the task's own loop count is always `None` and the phase repeats `loop` times per
/// pass over the phase list (1 when absent or -1), which logs the same periods.
fn implicit_phase_loops(task_loop: Option<Option<u64>>) -> u64 {
    task_loop.flatten().unwrap_or(1)
}

fn parse_phase(task: &str, name: &str, value: &Json, task_path: &str) -> Result<Phase, RtAppError> {
    let path = place(task, Some(name));
    let entries = object(value, &format!("{task_path} phases"), name)?;
    unique(entries, &path)?;
    let props = walk(entries, task, Level::Phase(name))?;
    if props.events.is_empty() {
        return Err(RtAppError::NoEvents {
            task: task.into(),
            phase: Some(name.into()),
        });
    }
    let loops = match props.loops {
        None => 1,
        Some(Some(n)) => n,
        Some(None) => return Err(bad(&path, "loop", "a phase's loop must be ≥ 1")),
    };
    Ok(Phase {
        name: name.into(),
        loops,
        nice: props.nice,
        cpus: props.cpus,
        events: props.events,
    })
}

/// Reads the keys of a task or phase object.
fn walk<'a>(
    entries: &'a [(String, Json)],
    task: &str,
    level: Level<'_>,
) -> Result<Props<'a>, RtAppError> {
    let phase = match level {
        Level::Task => None,
        Level::Phase(p) => Some(p),
    };
    let path = place(task, phase);
    let mut props = Props {
        loops: None,
        nice: None,
        cpus: None,
        instances: None,
        delay_us: None,
        phases: None,
        events: Vec::new(),
        first_event_key: None,
    };
    for (key, v) in entries {
        let k = key.as_str();
        match (k, level) {
            ("loop", _) => {
                let n = int(v, &path, k)?;
                props.loops = Some(match n {
                    -1 => None,
                    1..=RTAPP_INT_MAX => Some(to_u64(n)),
                    _ => return Err(bad(&path, k, "expected a count ≥ 1, or -1 for forever")),
                });
            }
            ("priority", _) => {
                let n = int_in(v, &path, k, i128::from(NICE_MIN), i128::from(NICE_MAX))?;
                props.nice = Some(i8::try_from(n).unwrap_or_default());
            }
            ("policy", _) => policy(v, &path, k)?,
            ("cpus", _) => props.cpus = Some(cpus(v, &path, k)?),
            ("instance", Level::Task) => {
                props.instances = Some(to_u32(int_in(v, &path, k, 0, RTAPP_INT_MAX)?));
            }
            ("delay", Level::Task) => {
                props.delay_us = Some(to_u64(int_in(v, &path, k, 0, RTAPP_INT_MAX)?));
            }
            ("phases", Level::Task) => props.phases = Some(v),
            _ => {
                if let Some(kind) = event_kind(k) {
                    props.first_event_key.get_or_insert(k);
                    props.events.push(event(kind, k, v, task, phase)?);
                } else if UNSUPPORTED_TASK_KEYS.contains(&k) {
                    return Err(unsupported(&path, k));
                } else {
                    return Err(unknown(&path, k));
                }
            }
        }
    }
    Ok(props)
}

/// The rt-app event a key names, by rt-app's prefix rule.
fn event_kind(key: &str) -> Option<&'static str> {
    RTAPP_EVENT_PREFIXES
        .iter()
        .copied()
        .find(|p| key.starts_with(p))
}

fn event(
    kind: &str,
    key: &str,
    v: &Json,
    task: &str,
    phase: Option<&str>,
) -> Result<Event, RtAppError> {
    let path = place(task, phase);
    let duration_us = || int_in(v, &path, key, 0, RTAPP_INT_MAX).map(to_u64);
    match kind {
        "run" => Ok(Event::Run { us: duration_us()? }),
        "runtime" => Ok(Event::Runtime { us: duration_us()? }),
        "sleep" => Ok(Event::Sleep { us: duration_us()? }),
        "timer" => timer(key, v, &path),
        _ => Err(RtAppError::UnsupportedEvent {
            task: task.into(),
            phase: phase.map(Into::into),
            key: key.into(),
        }),
    }
}

fn timer(key: &str, v: &Json, parent: &str) -> Result<Event, RtAppError> {
    let entries = object(v, parent, key)?;
    let path = format!("{parent} event {key:?}");
    unique(entries, &path)?;
    let mut reference = None;
    let mut period_us = None;
    let mut mode = TimerMode::Relative;
    for (k, v) in entries {
        match k.as_str() {
            "ref" => reference = Some(string(v, &path, k)?.to_owned()),
            "period" => period_us = Some(to_u64(int_in(v, &path, k, 1, RTAPP_INT_MAX)?)),
            "mode" => {
                mode = match string(v, &path, k)? {
                    "relative" => TimerMode::Relative,
                    "absolute" => TimerMode::Absolute,
                    _ => return Err(bad(&path, k, "expected \"relative\" or \"absolute\"")),
                };
            }
            _ => return Err(unknown(&path, k)),
        }
    }
    let missing = |k: &str| RtAppError::Missing {
        path: path.clone(),
        key: k.into(),
    };
    Ok(Event::Timer {
        reference: reference.ok_or_else(|| missing("ref"))?,
        period_us: period_us.ok_or_else(|| missing("period"))?,
        mode,
    })
}

fn policy(v: &Json, path: &str, key: &str) -> Result<(), RtAppError> {
    let s = string(v, path, key)?;
    if s == POLICY_OTHER {
        Ok(())
    } else {
        Err(bad(
            path,
            key,
            &format!("only {POLICY_OTHER} is simulated, found {s:?}"),
        ))
    }
}

fn cpus(v: &Json, path: &str, key: &str) -> Result<Vec<u32>, RtAppError> {
    let Json::Array(items) = v else {
        return Err(bad(
            path,
            key,
            &format!("expected an array, found {}", v.kind()),
        ));
    };
    if items.is_empty() {
        return Err(bad(path, key, "no CPUs"));
    }
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let cpu = match item {
            Json::Int(n) if (0..i128::from(MAX_CPUS)).contains(n) => to_u32(*n),
            _ => {
                return Err(bad(
                    path,
                    key,
                    &format!("expected CPU numbers below {MAX_CPUS}"),
                ))
            }
        };
        if out.contains(&cpu) {
            return Err(bad(path, key, &format!("CPU {cpu} listed twice")));
        }
        out.push(cpu);
    }
    Ok(out)
}

fn object<'a>(v: &'a Json, path: &str, key: &str) -> Result<&'a [(String, Json)], RtAppError> {
    match v {
        Json::Object(entries) => Ok(entries),
        _ => Err(bad(
            path,
            key,
            &format!("expected an object, found {}", v.kind()),
        )),
    }
}

fn string<'a>(v: &'a Json, path: &str, key: &str) -> Result<&'a str, RtAppError> {
    match v {
        Json::Str(s) => Ok(s),
        _ => Err(bad(
            path,
            key,
            &format!("expected a string, found {}", v.kind()),
        )),
    }
}

fn int(v: &Json, path: &str, key: &str) -> Result<i128, RtAppError> {
    match v {
        Json::Int(n) => Ok(*n),
        _ => Err(bad(
            path,
            key,
            &format!("expected an integer, found {}", v.kind()),
        )),
    }
}

fn int_in(v: &Json, path: &str, key: &str, lo: i128, hi: i128) -> Result<i128, RtAppError> {
    let n = int(v, path, key)?;
    if (lo..=hi).contains(&n) {
        Ok(n)
    } else {
        Err(bad(path, key, &format!("{n} is outside {lo}..={hi}")))
    }
}

fn unique(entries: &[(String, Json)], path: &str) -> Result<(), RtAppError> {
    let mut seen = HashSet::with_capacity(entries.len());
    for (key, _) in entries {
        if !seen.insert(key.as_str()) {
            return Err(RtAppError::DuplicateKey {
                path: path.into(),
                key: key.clone(),
            });
        }
    }
    Ok(())
}

// Callers have range-checked against RTAPP_INT_MAX (or a smaller bound) and zero.
fn to_u32(n: i128) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn to_u64(n: i128) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

fn bad(path: &str, key: &str, reason: &str) -> RtAppError {
    RtAppError::BadValue {
        path: path.into(),
        key: key.into(),
        reason: reason.into(),
    }
}

fn unknown(path: &str, key: &str) -> RtAppError {
    RtAppError::UnknownKey {
        path: path.into(),
        key: key.into(),
    }
}

fn unsupported(path: &str, key: &str) -> RtAppError {
    RtAppError::UnsupportedKey {
        path: path.into(),
        key: key.into(),
    }
}

fn json_error(e: &serde_json::Error) -> RtAppError {
    let full = e.to_string();
    // serde_json appends the position, which the variant carries in fields.
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let msg = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
    RtAppError::Json {
        line: e.line(),
        column: e.column(),
        msg,
    }
}

/// A JSON value with objects kept in file order, duplicates included (the walk rejects them
/// with the path it knows). serde_json bounds the nesting at 128 levels.
#[derive(Clone, PartialEq, Debug)]
enum Json {
    Null,
    Bool(bool),
    /// Any integer serde_json reads (`i64` or `u64`).
    Int(i128),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Int(_) => "an integer",
            Json::Float(_) => "a fractional number",
            Json::Str(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Int(i128::from(n)))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Int(i128::from(n)))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Json, E> {
        Ok(Json::Float(n))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::Str(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::Str(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            entries.push((key, value));
        }
        Ok(Json::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rtapp::{GlobalOverrides, ThreadName};
    use proptest::prelude::*;

    fn err(text: &str) -> RtAppError {
        parse(text).unwrap_err()
    }

    /// A workload with one task `t` whose body is `body`.
    fn task(body: &str) -> String {
        format!(r#"{{"tasks": {{"t": {body}}}}}"#)
    }

    #[test]
    fn defaults() {
        let app = parse(&task(r#"{"run": 10, "sleep": 20}"#)).unwrap();
        assert_eq!(app.duration_s, None);
        assert_eq!(app.calibration, Calibration::Cpu(0));
        assert_eq!(
            app.tasks,
            vec![TaskSpec {
                name: "t".into(),
                instances: 1,
                loops: None,
                delay_us: 0,
                nice: 0,
                cpus: None,
                phases: vec![Phase {
                    name: String::new(),
                    loops: 1,
                    nice: None,
                    cpus: None,
                    events: vec![Event::Run { us: 10 }, Event::Sleep { us: 20 }],
                }],
            }]
        );
        let app = parse(&task(r#"{"phases": {"p": {"runtime": 5}}}"#)).unwrap();
        assert_eq!(app.tasks[0].loops, None);
        assert_eq!(app.tasks[0].phases[0].loops, 1);
        assert_eq!(app.tasks[0].phases[0].name, "p");
    }

    #[test]
    fn loops_with_and_without_phases() {
        // Without phases the task's loop is the phase's and the thread runs forever (rt-app 1.0).
        let t = &parse(&task(r#"{"loop": 3, "run": 1}"#)).unwrap().tasks[0];
        assert_eq!((t.loops, t.phases[0].loops), (None, 3));
        let t = &parse(&task(r#"{"loop": -1, "run": 1}"#)).unwrap().tasks[0];
        assert_eq!((t.loops, t.phases[0].loops), (None, 1));
        let t = &parse(&task(
            r#"{"loop": 2, "phases": {"a": {"loop": 4, "run": 1}, "b": {"sleep": 1}}}"#,
        ))
        .unwrap()
        .tasks[0];
        assert_eq!(t.loops, Some(2));
        assert_eq!((t.phases[0].loops, t.phases[1].loops), (4, 1));
        assert!(matches!(
            err(&task(r#"{"loop": 0, "run": 1}"#)),
            RtAppError::BadValue { key, .. } if key == "loop"
        ));
        assert_eq!(
            err(&task(r#"{"phases": {"a": {"loop": -1, "run": 1}}}"#)),
            RtAppError::BadValue {
                path: r#"task "t" phase "a""#.into(),
                key: "loop".into(),
                reason: "a phase's loop must be ≥ 1".into()
            }
        );
    }

    #[test]
    fn every_supported_key() {
        let app = parse(
            r#"{
              "resources": {},
              "global": {"duration": 5, "calibration": 250, "default_policy": "SCHED_OTHER",
                         "logdir": "/tmp", "log_basename": "x", "log_size": "file",
                         "gnuplot": false, "lock_pages": true, "ftrace": "none",
                         "pi_enabled": false},
              "tasks": {
                "w": {"instance": 3, "loop": 7, "delay": 100, "priority": -5,
                      "policy": "SCHED_OTHER", "cpus": [2, 0],
                      "phases": {
                        "p": {"loop": 2, "priority": 19, "cpus": [1], "policy": "SCHED_OTHER",
                              "run0": 1, "runtime1": 2, "sleep2": 3,
                              "timer3": {"ref": "unique", "period": 1000, "mode": "absolute"},
                              "timer4": {"ref": "shared", "period": 5}}}}}}"#,
        )
        .unwrap();
        assert_eq!(app.duration_s, Some(5));
        assert_eq!(app.calibration, Calibration::NsPerLoop(250));
        let t = &app.tasks[0];
        assert_eq!(
            (t.instances, t.loops, t.delay_us, t.nice),
            (3, Some(7), 100, -5)
        );
        assert_eq!(t.cpus, Some(vec![2, 0]));
        let p = &t.phases[0];
        assert_eq!(
            (p.loops, p.nice, p.cpus.clone()),
            (2, Some(19), Some(vec![1]))
        );
        assert_eq!(
            p.events,
            vec![
                Event::Run { us: 1 },
                Event::Runtime { us: 2 },
                Event::Sleep { us: 3 },
                Event::Timer {
                    reference: "unique".into(),
                    period_us: 1000,
                    mode: TimerMode::Absolute
                },
                Event::Timer {
                    reference: "shared".into(),
                    period_us: 5,
                    mode: TimerMode::Relative
                },
            ]
        );
        let app = parse(
            r#"{"global": {"calibration": "CPU3", "duration": -1, "ftrace": false},
                            "tasks": {"a": {"run": 1}}}"#,
        )
        .unwrap();
        assert_eq!(app.calibration, Calibration::Cpu(3));
        assert_eq!(app.duration_s, None);
    }

    #[test]
    fn event_keys_match_by_prefix_runtime_before_run() {
        let t = &parse(&task(
            r#"{"run0": 1, "runtime1": 2, "runtime": 3, "run": 4, "sleepA": 5, "runX": 6,
                "timerZ": {"ref": "r", "period": 9}}"#,
        ))
        .unwrap()
        .tasks[0];
        assert_eq!(
            t.phases[0].events,
            vec![
                Event::Run { us: 1 },
                Event::Runtime { us: 2 },
                Event::Runtime { us: 3 },
                Event::Run { us: 4 },
                Event::Sleep { us: 5 },
                Event::Run { us: 6 },
                Event::Timer {
                    reference: "r".into(),
                    period_us: 9,
                    mode: TimerMode::Relative
                },
            ]
        );
    }

    #[test]
    fn threads_are_numbered_over_tasks_in_file_order() {
        // "b" sorts before "z" and "a": file order must win.
        let app = parse(
            r#"{"tasks": {"z": {"run": 1}, "a": {"instance": 2, "run": 1},
                          "none": {"instance": 0, "run": 1}, "b": {"run": 1}}}"#,
        )
        .unwrap();
        let names: Vec<String> = app.threads().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["z-0", "a-1", "a-2", "b-3"]);
        let app =
            parse(r#"{"tasks": {"a": {"instance": 2, "run": 1}, "b": {"sleep": 1}}}"#).unwrap();
        assert_eq!(
            app.threads(),
            vec![
                ThreadName {
                    name: "a-0".into(),
                    task: 0,
                    index: 0
                },
                ThreadName {
                    name: "a-1".into(),
                    task: 0,
                    index: 1
                },
                ThreadName {
                    name: "b-2".into(),
                    task: 1,
                    index: 2
                },
            ]
        );
    }

    #[test]
    fn error_messages_name_key_task_and_phase() {
        let e = err(r#"{"tasks": {"hog": {"phases": {"p1": {"run": 1, "lock": "m"}}}}}"#);
        assert_eq!(
            e,
            RtAppError::UnsupportedEvent {
                task: "hog".into(),
                phase: Some("p1".into()),
                key: "lock".into()
            }
        );
        assert_eq!(
            e.to_string(),
            r#"task "hog" phase "p1": key "lock": event not simulated by Lull (supported: run, runtime, sleep, timer)"#
        );
        let e = err(r#"{"tasks": {"hog": {"run": 1, "barrier0": "b"}}}"#);
        assert_eq!(
            e.to_string(),
            r#"task "hog": key "barrier0": event not simulated by Lull (supported: run, runtime, sleep, timer)"#
        );
    }

    #[test]
    fn every_unsimulated_event_is_refused() {
        for key in [
            "lock",
            "unlock",
            "wait",
            "signal",
            "broad",
            "sync",
            "suspend",
            "resume",
            "mem",
            "iorun",
            "yield",
            "barrier",
            "fork",
            "membind_nodes",
        ] {
            assert_eq!(
                err(&task(&format!(r#"{{"run": 1, "{key}": "x"}}"#))),
                RtAppError::UnsupportedEvent {
                    task: "t".into(),
                    phase: None,
                    key: key.into()
                },
                "{key}"
            );
        }
    }

    #[test]
    fn unsupported_and_unknown_keys() {
        for key in [
            "util_min",
            "util_max",
            "taskgroup",
            "dl-runtime",
            "nodes_membind",
        ] {
            assert_eq!(
                err(&task(&format!(r#"{{"run": 1, "{key}": 1}}"#))),
                RtAppError::UnsupportedKey {
                    path: r#"task "t""#.into(),
                    key: key.into()
                }
            );
        }
        for key in ["cumulative_slack", "io_device", "mem_buffer_size"] {
            assert_eq!(
                err(&format!(
                    r#"{{"global": {{"{key}": 1}}, "tasks": {{"a": {{"run": 1}}}}}}"#
                )),
                RtAppError::UnsupportedKey {
                    path: "global".into(),
                    key: key.into()
                }
            );
        }
        assert_eq!(
            err(&task(r#"{"run": 1, "colour": "red"}"#)),
            RtAppError::UnknownKey {
                path: r#"task "t""#.into(),
                key: "colour".into()
            }
        );
        assert_eq!(
            err(&task(r#"{"phases": {"p": {"run": 1, "instance": 2}}}"#)),
            RtAppError::UnknownKey {
                path: r#"task "t" phase "p""#.into(),
                key: "instance".into()
            }
        );
        assert_eq!(
            err(&task(r#"{"timer": {"ref": "r", "period": 1, "slack": 2}}"#)),
            RtAppError::UnknownKey {
                path: r#"task "t" event "timer""#.into(),
                key: "slack".into()
            }
        );
        assert_eq!(
            err(r#"{"tasks": {"a": {"run": 1}}, "extra": 1}"#),
            RtAppError::UnknownKey {
                path: "top level".into(),
                key: "extra".into()
            }
        );
        assert_eq!(
            err(r#"{"global": {"verbose": 1}, "tasks": {"a": {"run": 1}}}"#),
            RtAppError::UnknownKey {
                path: "global".into(),
                key: "verbose".into()
            }
        );
    }

    #[test]
    fn duplicate_keys_anywhere() {
        assert_eq!(
            err(r#"{"tasks": {"a": {"run": 1}, "a": {"run": 2}}}"#),
            RtAppError::DuplicateKey {
                path: "tasks".into(),
                key: "a".into()
            }
        );
        assert_eq!(
            err(&task(r#"{"run": 1, "run": 2}"#)),
            RtAppError::DuplicateKey {
                path: r#"task "t""#.into(),
                key: "run".into()
            }
        );
        assert_eq!(
            err(&task(r#"{"phases": {"p": {"run": 1}, "p": {"run": 2}}}"#)),
            RtAppError::DuplicateKey {
                path: r#"task "t" phases"#.into(),
                key: "p".into()
            }
        );
        assert_eq!(
            err(&task(r#"{"phases": {"p": {"sleep": 1, "sleep": 2}}}"#)),
            RtAppError::DuplicateKey {
                path: r#"task "t" phase "p""#.into(),
                key: "sleep".into()
            }
        );
        assert_eq!(
            err(&task(r#"{"timer": {"ref": "a", "ref": "b", "period": 1}}"#)),
            RtAppError::DuplicateKey {
                path: r#"task "t" event "timer""#.into(),
                key: "ref".into()
            }
        );
        assert!(matches!(
            err(r#"{"global": {"duration": 1, "duration": 2}, "tasks": {"a": {"run": 1}}}"#),
            RtAppError::DuplicateKey { path, key } if path == "global" && key == "duration"
        ));
        assert!(matches!(
            err(r#"{"tasks": {"a": {"run": 1}}, "tasks": {"b": {"run": 1}}}"#),
            RtAppError::DuplicateKey { path, key } if path == "top level" && key == "tasks"
        ));
    }

    #[test]
    fn missing_keys() {
        assert_eq!(
            err(r#"{"global": {}}"#),
            RtAppError::Missing {
                path: "top level".into(),
                key: "tasks".into()
            }
        );
        assert_eq!(
            err(&task(r#"{"timer": {"period": 10}}"#)),
            RtAppError::Missing {
                path: r#"task "t" event "timer""#.into(),
                key: "ref".into()
            }
        );
        assert_eq!(
            err(&task(r#"{"phases": {"p": {"timer1": {"ref": "r"}}}}"#)),
            RtAppError::Missing {
                path: r#"task "t" phase "p" event "timer1""#.into(),
                key: "period".into()
            }
        );
    }

    #[test]
    fn no_events_and_mixed_forms() {
        assert_eq!(
            err(&task(r#"{"loop": 2}"#)),
            RtAppError::NoEvents {
                task: "t".into(),
                phase: None
            }
        );
        let e = err(&task(r#"{"phases": {"idle": {"loop": 2}}}"#));
        assert_eq!(
            e,
            RtAppError::NoEvents {
                task: "t".into(),
                phase: Some("idle".into())
            }
        );
        assert!(e
            .to_string()
            .starts_with(r#"task "t" phase "idle": no events"#));
        assert_eq!(
            err(&task(r#"{"run": 1, "phases": {"p": {"run": 1}}}"#)),
            RtAppError::PhasesAndEvents {
                task: "t".into(),
                key: "run".into()
            }
        );
    }

    #[test]
    fn bad_values() {
        let bad_key = |text: &str| match err(text) {
            RtAppError::BadValue { path, key, .. } => (path, key),
            other => panic!("{other:?}"),
        };
        let t = r#"task "t""#.to_owned();
        assert_eq!(bad_key(&task(r#"{"run": -1}"#)), (t.clone(), "run".into()));
        assert_eq!(bad_key(&task(r#"{"run": 1.5}"#)), (t.clone(), "run".into()));
        assert_eq!(
            bad_key(&task(r#"{"sleep": "10"}"#)),
            (t.clone(), "sleep".into())
        );
        assert_eq!(
            bad_key(&task(r#"{"run": 3000000000}"#)),
            (t.clone(), "run".into())
        );
        assert_eq!(
            bad_key(&task(r#"{"run": 1, "priority": 20}"#)),
            (t.clone(), "priority".into())
        );
        assert_eq!(
            bad_key(&task(r#"{"run": 1, "priority": -21}"#)),
            (t.clone(), "priority".into())
        );
        assert_eq!(
            bad_key(&task(r#"{"run": 1, "policy": "SCHED_FIFO"}"#)),
            (t.clone(), "policy".into())
        );
        for cpus in ["[]", "[64]", "[1, 1]", "[-1]", "3", "[\"0\"]"] {
            assert_eq!(
                bad_key(&task(&format!(r#"{{"run": 1, "cpus": {cpus}}}"#))),
                (t.clone(), "cpus".into()),
                "{cpus}"
            );
        }
        assert_eq!(
            bad_key(&task(r#"{"run": 1, "instance": -1}"#)),
            (t.clone(), "instance".into())
        );
        assert_eq!(
            bad_key(&task(r#"{"run": 1, "delay": -1}"#)),
            (t.clone(), "delay".into())
        );
        assert_eq!(
            bad_key(&task(r#"{"timer": {"ref": "r", "period": 0}}"#)),
            (r#"task "t" event "timer""#.into(), "period".into())
        );
        assert_eq!(
            bad_key(&task(
                r#"{"timer": {"ref": "r", "period": 1, "mode": "late"}}"#
            )),
            (r#"task "t" event "timer""#.into(), "mode".into())
        );
        assert_eq!(
            bad_key(&task(r#"{"timer": 5}"#)),
            (t.clone(), "timer".into())
        );
        assert_eq!(
            bad_key(&task(r#"{"phases": {}}"#)),
            (t.clone(), "phases".into())
        );
        assert_eq!(
            bad_key(&task(r#"{"phases": {"p": 1}}"#)),
            (r#"task "t" phases"#.into(), "p".into())
        );
        assert_eq!(
            bad_key(r#"{"tasks": {"t": []}}"#),
            ("tasks".into(), "t".into())
        );
        assert_eq!(
            bad_key(r#"{"tasks": {}}"#),
            ("top level".into(), "tasks".into())
        );
        assert_eq!(
            bad_key(r#"{"tasks": []}"#),
            ("top level".into(), "tasks".into())
        );
        assert_eq!(
            bad_key(r#"{"resources": {"m": {}}, "tasks": {"a": {"run": 1}}}"#),
            ("top level".into(), "resources".into())
        );
        let global = |g: &str| {
            bad_key(&format!(
                r#"{{"global": {g}, "tasks": {{"a": {{"run": 1}}}}}}"#
            ))
        };
        let g = |k: &str| ("global".to_owned(), k.to_owned());
        assert_eq!(global(r#"{"duration": 0}"#), g("duration"));
        assert_eq!(global(r#"{"duration": -2}"#), g("duration"));
        assert_eq!(global(r#"{"calibration": "CPU"}"#), g("calibration"));
        assert_eq!(global(r#"{"calibration": "CPU64"}"#), g("calibration"));
        assert_eq!(global(r#"{"calibration": "cpu0"}"#), g("calibration"));
        assert_eq!(global(r#"{"calibration": "CPU+1"}"#), g("calibration"));
        assert_eq!(global(r#"{"calibration": 0}"#), g("calibration"));
        assert_eq!(
            global(r#"{"default_policy": "SCHED_RR"}"#),
            g("default_policy")
        );
        assert_eq!(global(r#"{"ftrace": true}"#), g("ftrace"));
        assert_eq!(global(r#"{"ftrace": "main"}"#), g("ftrace"));
        assert_eq!(global(r#"{"gnuplot": 1}"#), g("gnuplot"));
        assert_eq!(global(r#"{"logdir": 1}"#), g("logdir"));
        assert_eq!(global(r#"{"log_size": -1}"#), g("log_size"));
        assert_eq!(
            bad_key(r#"{"global": 1, "tasks": {"a": {"run": 1}}}"#),
            ("top level".into(), "global".into())
        );
    }

    #[test]
    fn not_json_and_not_an_object() {
        assert_eq!(
            err("{\n  \"tasks\": {,}\n}"),
            RtAppError::Json {
                line: 2,
                column: 13,
                msg: "key must be a string".into()
            }
        );
        assert!(matches!(err(""), RtAppError::Json { .. }));
        assert!(matches!(err(r#"{"tasks": {}} x"#), RtAppError::Json { .. }));
        assert_eq!(
            err("[1]"),
            RtAppError::TopLevelNotObject { found: "an array" }
        );
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(matches!(err(&deep), RtAppError::Json { .. }));
        let big = " ".repeat(MAX_INPUT_BYTES + 1);
        assert_eq!(
            err(&big),
            RtAppError::TooLarge {
                bytes: MAX_INPUT_BYTES + 1
            }
        );
    }

    #[test]
    fn writer_overrides_global_settings() {
        let app = parse(
            r#"{"global": {"duration": 9, "calibration": "CPU2"},
                            "tasks": {"a \"quoted\"": {"loop": 4, "run": 1, "sleep": 2}}}"#,
        )
        .unwrap();
        let text = app.to_json(&GlobalOverrides::default());
        assert_eq!(parse(&text).unwrap(), app);
        let overrides = GlobalOverrides {
            logdir: Some("/tmp/run 1".into()),
            log_basename: Some("lull".into()),
            calibration: Some(Calibration::NsPerLoop(42)),
            duration_s: Some(None),
        };
        let text = app.to_json(&overrides);
        assert!(text.contains(r#""logdir": "/tmp/run 1""#), "{text}");
        assert!(text.contains(r#""log_basename": "lull""#), "{text}");
        assert!(text.contains(r#""run0": 1"#), "{text}");
        assert!(text.contains(r#""sleep1": 2"#), "{text}");
        let back = parse(&text).unwrap();
        assert_eq!(back.calibration, Calibration::NsPerLoop(42));
        assert_eq!(back.duration_s, None);
        assert_eq!(back.tasks, app.tasks);
    }

    /// A workload with a bit of everything, valid for the reader.
    const SAMPLE: &str = r#"{
  "global": {"duration": 2, "calibration": "CPU0", "logdir": "./"},
  "tasks": {
    "hog": {"instance": 2, "priority": 5, "run": 1000, "sleep": 500},
    "tick": {"loop": 3, "cpus": [0, 1], "phases": {
      "p1": {"loop": 2, "runtime0": 100, "timer1": {"ref": "unique", "period": 1000}},
      "p2": {"priority": -3, "run": 7, "sleep": 9}}}
  }
}"#;

    fn name() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9_\\- \"\\\\é]{0,8}"
    }

    fn event_strategy() -> impl Strategy<Value = Event> {
        let us = 0..=RTAPP_INT_MAX as u64;
        prop_oneof![
            us.clone().prop_map(|us| Event::Run { us }),
            us.clone().prop_map(|us| Event::Runtime { us }),
            us.prop_map(|us| Event::Sleep { us }),
            (name(), 1..=RTAPP_INT_MAX as u64, any::<bool>()).prop_map(
                |(reference, period_us, abs)| {
                    Event::Timer {
                        reference,
                        period_us,
                        mode: if abs {
                            TimerMode::Absolute
                        } else {
                            TimerMode::Relative
                        },
                    }
                }
            ),
        ]
    }

    fn cpus_strategy() -> impl Strategy<Value = Option<Vec<u32>>> {
        proptest::option::of(
            proptest::collection::btree_set(0..MAX_CPUS, 1..5)
                .prop_map(|s| s.into_iter().rev().collect::<Vec<_>>()),
        )
    }

    fn phase_strategy() -> impl Strategy<Value = Phase> {
        (
            1..=RTAPP_INT_MAX as u64,
            proptest::option::of(NICE_MIN..=NICE_MAX),
            cpus_strategy(),
            proptest::collection::vec(event_strategy(), 1..6),
        )
            .prop_map(|(loops, nice, cpus, events)| Phase {
                name: String::new(),
                loops,
                nice,
                cpus,
                events,
            })
    }

    fn task_strategy() -> impl Strategy<Value = TaskSpec> {
        (
            0..=5u32,
            proptest::option::of(1..=RTAPP_INT_MAX as u64),
            0..=RTAPP_INT_MAX as u64,
            NICE_MIN..=NICE_MAX,
            cpus_strategy(),
            proptest::collection::btree_map(name(), phase_strategy(), 1..4),
        )
            .prop_map(
                |(instances, loops, delay_us, nice, cpus, phases)| TaskSpec {
                    name: String::new(),
                    instances,
                    loops,
                    delay_us,
                    nice,
                    cpus,
                    phases: phases
                        .into_iter()
                        .map(|(name, p)| Phase { name, ..p })
                        .collect(),
                },
            )
    }

    fn app_strategy() -> impl Strategy<Value = RtApp> {
        (
            proptest::option::of(1..=RTAPP_INT_MAX as u32),
            prop_oneof![
                (0..MAX_CPUS).prop_map(Calibration::Cpu),
                (1..=RTAPP_INT_MAX as u32).prop_map(Calibration::NsPerLoop),
            ],
            proptest::collection::btree_map(name(), task_strategy(), 1..4),
            any::<u64>(),
        )
            .prop_map(|(duration_s, calibration, tasks, shuffle)| {
                let mut tasks: Vec<TaskSpec> = tasks
                    .into_iter()
                    .map(|(name, t)| TaskSpec { name, ..t })
                    .collect();
                // Not sorted by name: file order must survive.
                let n = tasks.len();
                tasks.rotate_left((shuffle % n as u64) as usize);
                RtApp {
                    duration_s,
                    calibration,
                    tasks,
                }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

        #[test]
        fn writer_round_trips(app in app_strategy()) {
            let text = app.to_json(&GlobalOverrides::default());
            prop_assert_eq!(parse(&text), Ok(app));
        }

        #[test]
        fn reader_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = parse(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn reader_never_panics_on_json_shaped_text(
            text in "[{}\\[\\]\":,0-9a-z \\-.]{0,200}"
        ) {
            let _ = parse(&text);
        }

        #[test]
        fn reader_never_panics_on_mutated_workloads(
            flips in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 0..4),
            cut in any::<proptest::sample::Index>(),
            insert_at in any::<proptest::sample::Index>(),
            key in "[a-z_]{1,10}",
            value in "(-?[0-9]{1,12}|\"[a-zA-Z0-9]{0,6}\"|\\{\\}|\\[[0-9, ]{0,6}\\]|true|null|-1)",
        ) {
            let mut bytes = SAMPLE.as_bytes().to_vec();
            for (at, byte) in &flips {
                let i = at.index(bytes.len());
                bytes[i] = *byte;
            }
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let _ = parse(&text);
            let _ = parse(text.get(..cut.index(text.len() + 1)).unwrap_or(&text));
            // A key inserted after any opening brace of the valid sample.
            let braces: Vec<usize> = SAMPLE.match_indices('{').map(|(i, _)| i + 1).collect();
            let at = braces[insert_at.index(braces.len())];
            let inserted = format!("{}\"{key}\": {value}, {}", &SAMPLE[..at], &SAMPLE[at..]);
            let _ = parse(&inserted);
        }
    }

    #[test]
    fn sample_is_valid() {
        let app = parse(SAMPLE).unwrap();
        assert_eq!(app.tasks.len(), 2);
        assert_eq!(app.tasks[1].phases.len(), 2);
        assert_eq!(
            parse(&app.to_json(&GlobalOverrides::default())).unwrap(),
            app
        );
    }
}
