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
mod tests;
