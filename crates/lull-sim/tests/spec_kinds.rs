//! Every spec is read by its `kind` through `lull_sim::load`; bad specs of every kind get a typed
//! error with the file, line and column of the key at fault; run options a kind has no use for
//! are refused.

use lull_sim::{
    load, Experiment as _, FrameworkSpec, Kind, Problem, RunOpts, Spec, SpecError, TextPos,
};
use lull_workload::rng::SplitMix64;

/// Every shipped spec: (path under the repository, text).
fn shipped() -> Vec<(String, String)> {
    let root = format!("{}/../../experiments", env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in ["marz", "ucsg", "toggling", "vtcfs"] {
        let mut names: Vec<_> = std::fs::read_dir(format!("{root}/{dir}"))
            .expect("spec directory")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        names.sort();
        for p in names {
            let text = std::fs::read_to_string(&p).expect("readable");
            out.push((
                format!(
                    "experiments/{dir}/{}",
                    p.file_name().unwrap().to_string_lossy()
                ),
                text,
            ));
        }
    }
    out
}

fn problem(text: &str) -> Problem {
    Spec::parse(text).expect_err("refused").problem
}

#[test]
fn every_shipped_spec_loads_as_the_kind_it_says() {
    let mut seen = std::collections::BTreeSet::new();
    for (path, text) in shipped() {
        let spec = load(&path, &text).unwrap_or_else(|e| panic!("{e}"));
        let said = text
            .lines()
            .find_map(|l| l.strip_prefix("kind = \""))
            .and_then(|l| l.strip_suffix('"'))
            .expect("a kind line");
        assert_eq!(spec.kind().name(), said, "{path}");
        assert!(!spec.model_names().is_empty(), "{path}");
        seen.insert(spec.kind());
    }
    assert_eq!(seen.len(), Kind::ALL.len(), "a shipped spec of every kind");
}

#[test]
fn a_spec_without_kind_is_refused_naming_the_kind_to_add() {
    for (path, text) in shipped() {
        let kind = Spec::parse(&text).expect("valid").kind();
        let old: String = text
            .lines()
            .filter(|l| !l.starts_with("kind = "))
            .map(|l| format!("{l}\n"))
            .collect();
        let e = load(&path, &old).expect_err("no kind");
        assert_eq!(
            e.problem,
            Problem::MissingKind {
                suggested: Some(kind)
            },
            "{path}"
        );
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!(
                "{path}:1:1: no `kind`: add `kind = \"{}\"`",
                kind.name()
            )),
            "{msg}"
        );
        assert!(
            msg.ends_with(
                "the kinds are framework, ucsg, painting, interbench, hackbench, toggling"
            ),
            "{msg}"
        );
    }
    assert_eq!(
        problem("experiment = \"x\"\n"),
        Problem::MissingKind { suggested: None }
    );
}

#[test]
fn an_unknown_or_mistyped_kind_is_refused_with_the_kinds_and_its_place() {
    let e = load("s.toml", "# a spec\nkind = \"radio\"\n").expect_err("unknown");
    assert_eq!(e.problem, Problem::UnknownKind("radio".into()));
    assert_eq!(e.at, Some(TextPos { line: 2, column: 8 }));
    assert_eq!(
        e.to_string(),
        "s.toml:2:8: unknown kind `radio` (the kinds are framework, ucsg, painting, interbench, hackbench, toggling)"
    );
    for bad in [
        "kind = 3\n",
        "kind = [\"ucsg\"]\n",
        "kind = { name = \"ucsg\" }\n",
    ] {
        assert!(
            matches!(problem(bad), Problem::Syntax(m) if m.starts_with("kind must be a string")),
            "{bad}"
        );
    }
    // The name is exact: no case folding, no aliases.
    assert_eq!(
        problem("kind = \"UCSG\"\n"),
        Problem::UnknownKind("UCSG".into())
    );
}

/// The shipped spec of `kind` (the first in path order).
fn shipped_of(kind: Kind) -> (String, String) {
    shipped()
        .into_iter()
        .find(|(_, t)| Spec::parse(t).map(|s| s.kind()) == Ok(kind))
        .expect("a shipped spec of the kind")
}

/// `text` with the first line that sets `key` setting it to `value` instead.
fn set_key(text: &str, key: &str, value: &str) -> String {
    let at = line_of(text, &format!("{key} = "));
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            if i + 1 == at {
                format!("{key} = {value}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

/// The line (1-based) of the first line of `text` that starts with `prefix`.
fn line_of(text: &str, prefix: &str) -> usize {
    text.lines()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("`{prefix}` is not in the spec"))
        + 1
}

/// `bad` is refused as a syntax error saying `says`, placed at the line that starts with `at`.
fn assert_syntax_error_at(path: &str, bad: &str, says: &str, at: &str) {
    let e = load(path, bad).expect_err(says);
    assert!(
        matches!(&e.problem, Problem::Syntax(m) if m.contains(says)),
        "{e}"
    );
    assert_eq!(e.at.map(|p| p.line), Some(line_of(bad, at)), "{e}");
}

#[test]
fn wrong_types_unknown_keys_and_absurd_values_name_their_line_in_every_kind() {
    for kind in Kind::ALL {
        let (path, text) = shipped_of(kind);
        // A header value of the wrong type.
        let bad = text.replacen("seed = 1\n", "seed = -1\n", 1);
        assert_syntax_error_at(&path, &bad, "integer `-1`", "seed = ");
        // An unknown key after the header.
        let bad = text.replacen("seed = 1\n", "seed = 1\ncolour = \"red\"\n", 1);
        assert_syntax_error_at(&path, &bad, "unknown field `colour`", "colour");
        // A missing header key.
        let bad = text.replacen("description = ", "# description = ", 1);
        assert!(
            matches!(problem(&bad), Problem::Syntax(m) if m.contains("missing field `description`"))
        );
        // An empty name and an unknown platform, at their lines.
        let name_line = line_of(&text, "experiment = ");
        let bad = set_key(&text, "experiment", "\" \"");
        let e = load(&path, &bad).expect_err("empty name");
        assert!(
            matches!(
                e.problem,
                Problem::Invalid {
                    field: "experiment",
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(e.at.map(|p| p.line), Some(name_line));
        let platform_line = line_of(&text, "platform = ");
        let bad = set_key(&text, "platform", "\"pixel-9\"");
        let e = load(&path, &bad).expect_err("unknown platform");
        assert_eq!(e.problem, Problem::UnknownPlatform("pixel-9".into()));
        assert_eq!(e.at.map(|p| p.line), Some(platform_line), "{e}");
        // A model of no kind, or a nameless one, at the `models` key.
        let bad = if matches!(kind, Kind::Interbench | Kind::Hackbench) {
            set_key(&text, "name", "\"\"")
        } else {
            set_key(&text, "models", "[\"nonesuch\"]")
        };
        let e = load(&path, &bad).expect_err("bad model");
        assert!(
            matches!(e.problem, Problem::UnknownModel { .. } | Problem::Models(_)),
            "{kind}: {e}"
        );
        assert!(e.at.is_some(), "{kind}: {e}");
    }
}

#[test]
fn absurd_values_are_refused_with_their_field() {
    let cases: [(Kind, &str, &str, &str); 6] = [
        (Kind::Framework, "scale_to_ms", "0", "workload.scale_to_ms"),
        (Kind::Ucsg, "start_ms", "99999999999", "scenario.start_ms"),
        (Kind::Painting, "hogs", "100000", "painting.hogs"),
        (Kind::Interbench, "repeats", "1000000", "repeats"),
        (Kind::Hackbench, "loops", "0", "loops"),
        (Kind::Toggling, "threads", "4096", "threads"),
    ];
    for (kind, key, value, field) in cases {
        let (path, text) = shipped_of(kind);
        let bad = set_key(&text, key, value);
        let e = load(&path, &bad).expect_err("absurd");
        assert_eq!(
            e.at.map(|p| p.line),
            Some(line_of(&bad, &format!("{key} = "))),
            "{e}"
        );
        assert!(
            matches!(e.problem, Problem::Invalid { field: f, .. } if f == field),
            "{kind}: {e}"
        );
        assert!(e.to_string().starts_with(&format!("{path}:")), "{e}");
    }
}

#[test]
fn one_kind_where_another_is_expected_is_a_typed_error() {
    let (_, text) = shipped_of(Kind::Toggling);
    assert_eq!(
        FrameworkSpec::parse(&text).map(|_| ()),
        Err(SpecError::new(Problem::WrongKind {
            expected: Kind::Framework,
            found: Kind::Toggling
        }))
    );
}

#[test]
fn options_a_kind_has_no_use_for_are_refused() {
    let policy = RunOpts {
        policy: vec![("scheduler".into(), "eevdf".into())],
        ..RunOpts::default()
    };
    let seed_size = RunOpts {
        seed_size: true,
        ..RunOpts::default()
    };
    let audit = RunOpts {
        audit: true,
        ..RunOpts::default()
    };
    for kind in Kind::ALL {
        let (_, text) = shipped_of(kind);
        let spec = Spec::parse(&text).expect("valid");
        for (opts, allowed) in [
            (&policy, kind == Kind::Framework),
            (
                &seed_size,
                matches!(kind, Kind::Interbench | Kind::Hackbench),
            ),
            (
                &audit,
                matches!(kind, Kind::Framework | Kind::Ucsg | Kind::Toggling),
            ),
        ] {
            if allowed {
                continue;
            }
            let e = spec.run(opts).expect_err("refused before running");
            assert!(
                matches!(
                    &e,
                    lull_sim::RunError::Spec(SpecError { problem: Problem::NotApplicable { kind: k, .. }, .. }) if *k == kind
                ),
                "{kind}: {e}"
            );
        }
        let e = spec
            .run(&RunOpts {
                models: Some(vec!["nonesuch".into()]),
                ..RunOpts::default()
            })
            .expect_err("not one of its models");
        assert!(
            e.to_string()
                .contains("`nonesuch` is not one of this spec's models"),
            "{e}"
        );
    }
}

/// Deterministic mutations of every shipped spec (a line dropped, doubled, or its value
/// replaced by another type) are loaded or refused, never a panic, and a refusal says where.
#[test]
fn mutated_specs_are_loaded_or_refused_never_a_panic() {
    let values = [
        "-1",
        "\"\"",
        "1e300",
        "[]",
        "{}",
        "true",
        "18446744073709551616",
        "\"x\"",
    ];
    let mut rng = SplitMix64::new(2026);
    let mut refused = 0;
    for (path, text) in shipped() {
        let lines: Vec<&str> = text.lines().collect();
        for _ in 0..40 {
            let i = (rng.next_u64() % lines.len() as u64) as usize;
            let mut out = lines.clone();
            let replaced;
            match rng.next_u64() % 3 {
                0 => {
                    out.remove(i);
                }
                1 => out.insert(i, lines[i]),
                _ => {
                    let Some((key, _)) = lines[i].split_once(" = ") else {
                        continue;
                    };
                    let v = values[(rng.next_u64() % values.len() as u64) as usize];
                    replaced = format!("{key} = {v}");
                    out[i] = &replaced;
                }
            }
            let mutated = out.join("\n");
            if let Err(e) = load(&path, &mutated) {
                refused += 1;
                let msg = e.to_string();
                assert!(msg.starts_with(path.as_str()), "{msg}");
                assert!(msg.len() > path.len() + 2, "{msg}");
            }
        }
    }
    assert!(refused > 100, "{refused}");
}

/// The interactive boost acts on the task a framework hands an input event. A kind without a
/// framework (hackbench here; interbench, rt-app and toggling run the same way) that asks for
/// one is refused by name, not run as if it had not asked.
#[test]
fn a_boost_without_a_framework_is_refused() {
    let base = std::fs::read_to_string(format!(
        "{}/../../experiments/vtcfs/hackbench-x86-64.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("readable");
    let plain = r#"policy = { scheduler = "eevdf" }"#;
    assert!(base.contains(plain));
    for (slot, field) in [
        ("boost_c_ms = 3", "boost_c_ms"),
        ("boost_slice_us = 500", "boost_slice_us"),
    ] {
        let text = base
            .replace(
                plain,
                &format!(r#"policy = {{ scheduler = "eevdf", {slot} }}"#),
            )
            .replace("pairs = [100, 200, 400]", "pairs = [100]")
            .replace(
                "transports = [\"pipe\", \"socket\"]",
                "transports = [\"pipe\"]",
            );
        let spec = load("boosted.toml", &text).expect("it parses");
        let e = spec
            .run(&RunOpts::default())
            .expect_err("refused")
            .to_string();
        assert!(e.contains(field) && e.contains("no framework"), "{e}");
    }
}
