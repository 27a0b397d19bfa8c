//! Specs from Python: a TOML text or a dict (handed over as JSON), loaded by the simulator's one
//! reader ([`lull_sim::load`], by the spec's `kind`), and run through [`Experiment`], whatever
//! the kind. Every problem is a [`SpecProblem`] that becomes `lull.errors.SpecError`.

use lull_sim::platform::{Platform, SHIPPED};
use lull_sim::rtapp::{run_rtapp, RtAppRun};
use lull_sim::{Experiment as _, Kind, RunOpts};
use lull_workload::rtapp::{self, ThreadSummary};
use serde_json::{json, Map, Value};

/// Why a spec or workload was refused; the message names the spec and the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecProblem(pub String);

fn problem(origin: &str, e: impl std::fmt::Display) -> SpecProblem {
    SpecProblem(format!("{origin}: {e}"))
}

/// The TOML text of a spec given as JSON (a Python dict), so that it goes through the same
/// reader as a spec file. JSON `null` has no TOML form and is refused with its place.
pub fn json_to_toml_text(json_text: &str, origin: &str) -> Result<String, SpecProblem> {
    let v: Value = serde_json::from_str(json_text).map_err(|e| problem(origin, e))?;
    let Value::Object(map) = v else {
        return Err(problem(origin, "a spec must be a table (a dict)"));
    };
    let table = to_toml_table(&map, "").map_err(|e| problem(origin, e))?;
    toml::to_string(&table).map_err(|e| problem(origin, e))
}

/// A JSON value with no TOML form, by its place in the spec.
#[derive(Debug, thiserror::Error)]
enum NotToml {
    #[error("{0}: None has no place in a spec")]
    Null(String),
    #[error("{path}: {n} is larger than a spec integer may be")]
    TooLarge { path: String, n: serde_json::Number },
}

fn to_toml_table(map: &Map<String, Value>, at: &str) -> Result<toml::Table, NotToml> {
    let mut t = toml::Table::new();
    for (k, v) in map {
        let path = if at.is_empty() {
            k.clone()
        } else {
            format!("{at}.{k}")
        };
        t.insert(k.clone(), to_toml(v, &path)?);
    }
    Ok(t)
}

fn to_toml(v: &Value, path: &str) -> Result<toml::Value, NotToml> {
    Ok(match v {
        Value::Null => return Err(NotToml::Null(path.to_owned())),
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                toml::Value::Integer(i)
            } else if n.is_u64() {
                return Err(NotToml::TooLarge {
                    path: path.to_owned(),
                    n: n.clone(),
                });
            } else {
                toml::Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(a) => toml::Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, x)| to_toml(x, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(m) => toml::Value::Table(to_toml_table(m, path)?),
    })
}

/// Runs a spec of any kind (TOML text), optionally with another seed and only some of its
/// models; the result as the JSON `lull sim run --json` prints for it, plus `"kind"`.
pub fn run_text(
    text: &str,
    origin: &str,
    seed: Option<u64>,
    models: Option<&[String]>,
) -> Result<Value, SpecProblem> {
    let spec = lull_sim::load(origin, text).map_err(|e| SpecProblem(e.to_string()))?;
    let opts = RunOpts {
        seed,
        models: models.map(<[String]>::to_vec),
        ..RunOpts::default()
    };
    let report = spec.run(&opts).map_err(|e| problem(origin, e))?;
    let mut v = report.figures.to_json();
    v["kind"] = json!(spec.kind().name());
    Ok(v)
}

/// Checks a framework-model spec as a run of it would (sweeps check every point before any
/// runs; their figures are the framework models'); `models`, when given, must be some of the
/// spec's.
pub fn check_framework(
    text: &str,
    origin: &str,
    models: Option<&[String]>,
) -> Result<(), SpecProblem> {
    let spec = lull_sim::load(origin, text).map_err(|e| SpecProblem(e.to_string()))?;
    if spec.kind() != Kind::Framework {
        return Err(problem(
            origin,
            format!(
                "sweeps run framework specs (kind = \"framework\", experiments/marz/), not a {} spec",
                spec.kind()
            ),
        ));
    }
    if let Some(names) = models {
        let known = spec.model_names();
        let known: Vec<&str> = known.iter().map(String::as_str).collect();
        check_models(names, &known, origin)?;
    }
    Ok(())
}

/// Runs each model of a spec whose kind records scheduling events (framework, UCSG, toggling)
/// with the audit on and writes its log to `DIR/<experiment>-<model>.audit` (the names
/// `lull sim run --audit-dir` uses); each model's path and record count.
pub fn write_audit_logs(
    text: &str,
    origin: &str,
    dir: &std::path::Path,
    seed: Option<u64>,
    models: Option<&[String]>,
) -> Result<Vec<(String, std::path::PathBuf, usize)>, SpecProblem> {
    let spec = lull_sim::load(origin, text).map_err(|e| SpecProblem(e.to_string()))?;
    let opts = RunOpts {
        seed,
        models: models.map(<[String]>::to_vec),
        audit: true,
        ..RunOpts::default()
    };
    let report = spec.run(&opts).map_err(|e| problem(origin, e))?;
    let io = |p: &std::path::Path, e: std::io::Error| SpecProblem(format!("{}: {e}", p.display()));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let mut written = Vec::new();
    for (model, log) in &report.audit_logs {
        let bytes = lull_audit::log::encode(log).map_err(|e| problem(origin, e))?;
        let path = dir.join(format!("{}-{model}.audit", spec.header().experiment));
        lull_os::fileout::write_file_atomically(&path, &bytes)
            .map_err(|e| SpecProblem(e.to_string()))?;
        written.push((model.clone(), path, log.records.len()));
    }
    Ok(written)
}

fn check_models(names: &[String], known: &[&str], origin: &str) -> Result<(), SpecProblem> {
    if names.is_empty() {
        return Err(problem(origin, "models: no model to run"));
    }
    for n in names {
        if !known.contains(&n.as_str()) {
            return Err(problem(
                origin,
                format!(
                    "models: `{n}` is not one of this spec's models ({})",
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// What an rt-app run takes besides the workload.
#[derive(Debug, Clone)]
pub struct RtAppArgs {
    pub platform: String,
    pub policy: Vec<(String, String)>,
    pub seed: u64,
    pub loop_ns: Option<f64>,
}

/// Runs an rt-app workload (JSON text) on a modelled platform; the JSON of
/// `lull sim rtapp --json`.
pub fn run_rtapp_text(text: &str, origin: &str, args: &RtAppArgs) -> Result<Value, SpecProblem> {
    let w = rtapp::parse(text).map_err(|e| problem(origin, e))?;
    let platform = Platform::by_name(&args.platform).ok_or_else(|| {
        SpecProblem(format!(
            "unknown platform `{}` (known: {})",
            args.platform,
            SHIPPED.join(", ")
        ))
    })?;
    let mut run = RtAppRun::new(&platform);
    run.seed = args.seed;
    if let Some(l) = args.loop_ns {
        if !(l.is_finite() && l > 0.0) {
            return Err(SpecProblem(format!(
                "loop_ns must be a positive number of ns, not {l}"
            )));
        }
        run.loop_ns = Some(l);
    }
    for (slot, name) in &args.policy {
        run.policy
            .set(slot, name)
            .map_err(|e| SpecProblem(format!("policy {slot}={name}: {e:?}")))?;
    }
    let r = run_rtapp(&w, &run).map_err(|e| problem(origin, e))?;
    let tasks: Map<String, Value> = r
        .threads
        .iter()
        .map(|t| {
            let s = ThreadSummary::of(&t.records, t.cpu_ns);
            (t.name.clone(), json!(s))
        })
        .collect();
    Ok(json!({
        "duration_s": r.duration_ns as f64 / 1e9,
        "platform": args.platform,
        "label": "modelled",
        "tasks": tasks,
    }))
}

/// Dotted keys a sweep may override that a spec need not spell out: the `[policy]` slots and
/// the `[framework]` costs.
#[must_use]
pub fn optional_keys() -> Vec<String> {
    let mut keys: Vec<String> = lull_sim::POLICY_SLOTS
        .iter()
        .map(|s| format!("policy.{s}"))
        .collect();
    if let Value::Object(m) = json!(lull_sim::costs::FrameworkCosts::default()) {
        keys.extend(m.keys().map(|k| format!("framework.{k}")));
    }
    // The optional tables of the other kinds (their defaults are the models' constants).
    if let Value::Object(m) = json!(lull_sim::ucsg::AppWork::default()) {
        keys.extend(m.keys().map(|k| format!("apps.{k}")));
    }
    if let Value::Object(m) = json!(lull_sim::ucsg::UcsgTunables::default()) {
        keys.extend(m.keys().map(|k| format!("ucsg.{k}")));
    }
    keys.push("painting.paint_cycles".to_owned());
    keys.push("burn_threads".to_owned());
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of a few hundred modelled ms on one core of the x86-64 model.
    fn tiny() -> String {
        lull_sim::StylusSpec {
            experiment: "tiny",
            platform: "x86-64",
            models: &["esm", "pull-16ms"],
            main_cores: 1,
            handler_cycles: 1000,
            draw_cycles: 1000,
            cache_kib: 16,
            scale_to_ms: 200,
            ..lull_sim::StylusSpec::default()
        }
        .toml()
    }

    #[test]
    fn a_dict_spec_runs_like_its_toml() {
        let table: toml::Table = toml::from_str(&tiny()).unwrap();
        let json_text = serde_json::to_string(&table).unwrap();
        let text = json_to_toml_text(&json_text, "dict").unwrap();
        let a = run_text(&tiny(), "file", None, None).unwrap();
        let b = run_text(&text, "dict", None, None).unwrap();
        assert_eq!(a, b);
        assert_eq!(a["kind"], "framework");
    }

    #[test]
    fn null_and_unknown_models_are_refused_by_name() {
        let e = json_to_toml_text(r#"{"seed": null}"#, "dict").unwrap_err();
        assert!(e.0.contains("seed: None"), "{e:?}");
        let e = run_text(&tiny(), "f", None, Some(&["vsync-batched".to_owned()])).unwrap_err();
        assert!(e.0.contains("`vsync-batched`"), "{e:?}");
    }

    #[test]
    fn a_model_subset_runs_only_those() {
        let v = run_text(&tiny(), "f", Some(7), Some(&["esm".to_owned()])).unwrap();
        assert_eq!(v["seed"], 7);
        assert_eq!(v["models"].as_object().unwrap().len(), 1);
    }

    #[test]
    fn optional_keys_name_policy_slots_and_framework_costs() {
        let k = optional_keys();
        assert!(k.contains(&"policy.scheduler".to_owned()));
        assert!(k.contains(&"framework.poll_interval_ns".to_owned()));
    }
}
