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

/// Each workload's error is the one `variant` makes of the path and the key given with it.
#[track_caller]
fn assert_path_key_errors(
    variant: fn(String, String) -> RtAppError,
    cases: &[(String, &str, &str)],
) {
    for (json, path, key) in cases {
        assert_eq!(
            err(json),
            variant(path.to_string(), key.to_string()),
            "{json}"
        );
    }
}

#[test]
fn defaults() {
    let app = parse(&task(r#"{"run": 10, "sleep": 20}"#)).unwrap();
    assert_eq!(app.duration_s, None);
    assert_eq!(app.calibration, Calibration::Cpu(0));
    // Events at the top level and no `loop`: the endless task, with every default.
    assert_eq!(
        app.tasks,
        vec![TaskSpec::endless(
            "t",
            1,
            vec![Event::Run { us: 10 }, Event::Sleep { us: 20 }]
        )]
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
    let app = parse(r#"{"tasks": {"a": {"instance": 2, "run": 1}, "b": {"sleep": 1}}}"#).unwrap();
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
    assert_path_key_errors(
        |path, key| RtAppError::UnknownKey { path, key },
        &[
            (
                task(r#"{"run": 1, "colour": "red"}"#),
                r#"task "t""#,
                "colour",
            ),
            (
                task(r#"{"phases": {"p": {"run": 1, "instance": 2}}}"#),
                r#"task "t" phase "p""#,
                "instance",
            ),
            (
                task(r#"{"timer": {"ref": "r", "period": 1, "slack": 2}}"#),
                r#"task "t" event "timer""#,
                "slack",
            ),
            (
                r#"{"tasks": {"a": {"run": 1}}, "extra": 1}"#.to_owned(),
                "top level",
                "extra",
            ),
            (
                r#"{"global": {"verbose": 1}, "tasks": {"a": {"run": 1}}}"#.to_owned(),
                "global",
                "verbose",
            ),
        ],
    );
}

#[test]
fn duplicate_keys_anywhere() {
    assert_path_key_errors(
        |path, key| RtAppError::DuplicateKey { path, key },
        &[
            (
                r#"{"tasks": {"a": {"run": 1}, "a": {"run": 2}}}"#.to_owned(),
                "tasks",
                "a",
            ),
            (task(r#"{"run": 1, "run": 2}"#), r#"task "t""#, "run"),
            (
                task(r#"{"phases": {"p": {"run": 1}, "p": {"run": 2}}}"#),
                r#"task "t" phases"#,
                "p",
            ),
            (
                task(r#"{"phases": {"p": {"sleep": 1, "sleep": 2}}}"#),
                r#"task "t" phase "p""#,
                "sleep",
            ),
            (
                task(r#"{"timer": {"ref": "a", "ref": "b", "period": 1}}"#),
                r#"task "t" event "timer""#,
                "ref",
            ),
            (
                r#"{"global": {"duration": 1, "duration": 2}, "tasks": {"a": {"run": 1}}}"#
                    .to_owned(),
                "global",
                "duration",
            ),
            (
                r#"{"tasks": {"a": {"run": 1}}, "tasks": {"b": {"run": 1}}}"#.to_owned(),
                "top level",
                "tasks",
            ),
        ],
    );
}

#[test]
fn missing_keys() {
    assert_path_key_errors(
        |path, key| RtAppError::Missing { path, key },
        &[
            (r#"{"global": {}}"#.to_owned(), "top level", "tasks"),
            (
                task(r#"{"timer": {"period": 10}}"#),
                r#"task "t" event "timer""#,
                "ref",
            ),
            (
                task(r#"{"phases": {"p": {"timer1": {"ref": "r"}}}}"#),
                r#"task "t" phase "p" event "timer1""#,
                "period",
            ),
        ],
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
    const T: &str = r#"task "t""#;
    for (json, path, key) in [
        (task(r#"{"run": -1}"#), T, "run"),
        (task(r#"{"run": 1.5}"#), T, "run"),
        (task(r#"{"sleep": "10"}"#), T, "sleep"),
        (task(r#"{"run": 3000000000}"#), T, "run"),
        (task(r#"{"run": 1, "priority": 20}"#), T, "priority"),
        (task(r#"{"run": 1, "priority": -21}"#), T, "priority"),
        (task(r#"{"run": 1, "policy": "SCHED_FIFO"}"#), T, "policy"),
    ] {
        assert_eq!(bad_key(&json), (path.into(), key.into()), "{json}");
    }
    for cpus in ["[]", "[64]", "[1, 1]", "[-1]", "3", "[\"0\"]"] {
        assert_eq!(
            bad_key(&task(&format!(r#"{{"run": 1, "cpus": {cpus}}}"#))),
            (T.into(), "cpus".into()),
            "{cpus}"
        );
    }
    for (json, path, key) in [
        (task(r#"{"run": 1, "instance": -1}"#), T, "instance"),
        (task(r#"{"run": 1, "delay": -1}"#), T, "delay"),
        (
            task(r#"{"timer": {"ref": "r", "period": 0}}"#),
            r#"task "t" event "timer""#,
            "period",
        ),
        (
            task(r#"{"timer": {"ref": "r", "period": 1, "mode": "late"}}"#),
            r#"task "t" event "timer""#,
            "mode",
        ),
        (task(r#"{"timer": 5}"#), T, "timer"),
        (task(r#"{"phases": {}}"#), T, "phases"),
        (task(r#"{"phases": {"p": 1}}"#), r#"task "t" phases"#, "p"),
        (r#"{"tasks": {"t": []}}"#.to_owned(), "tasks", "t"),
        (r#"{"tasks": {}}"#.to_owned(), "top level", "tasks"),
        (r#"{"tasks": []}"#.to_owned(), "top level", "tasks"),
        (
            r#"{"resources": {"m": {}}, "tasks": {"a": {"run": 1}}}"#.to_owned(),
            "top level",
            "resources",
        ),
    ] {
        assert_eq!(bad_key(&json), (path.into(), key.into()), "{json}");
    }
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
