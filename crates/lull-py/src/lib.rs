//! `lull._lull`: the Python package's native module. Bindings only: it parses Python's
//! arguments, calls the simulator, the audit-log reader and the results reader, and converts
//! their results; the `lull` package (python/lull) is the API people call. Simulations and log
//! decoding run with the interpreter released, so Python threads run them in parallel.

mod audit;
mod results;
mod spec;

use std::path::PathBuf;

use lull_os::input_file::{self, InputKind, ReadError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use audit::LeBytes as _;

pyo3::import_exception!(lull.errors, SpecError);
pyo3::import_exception!(lull.errors, LogError);
pyo3::import_exception!(lull.errors, ResultsError);
pyo3::import_exception!(lull.errors, InputError);

fn input_err(e: &ReadError) -> PyErr {
    InputError::new_err(e.to_string())
}

/// The bound and name of each kind of input file Python reads, by the name Python passes.
fn input_kind(kind: &str) -> PyResult<InputKind> {
    Ok(match kind {
        "spec" => input_file::SPEC,
        "rtapp" => input_file::RTAPP_JSON,
        "trace" => input_file::TRACE,
        "sweep" => InputKind {
            what: "sweep file",
            ..input_file::SPEC
        },
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "unknown input kind {other:?}"
            )))
        }
    })
}

/// Reads a text input file with the bounded reader every Lull front end uses (`lull_os::
/// input_file`): a regular UTF-8 file within its kind's bound, else `lull.errors.InputError`
/// naming the path.
#[pyfunction]
fn read_text(py: Python<'_>, path: PathBuf, kind: &str) -> PyResult<String> {
    let kind = input_kind(kind)?;
    py.detach(|| input_file::read_bounded_text(&path, kind))
        .map_err(|e| input_err(&e))
}

fn spec_err(p: spec::SpecProblem) -> PyErr {
    SpecError::new_err(p.0)
}

/// Runs a spec of any kind given as TOML text; its result as JSON text.
#[pyfunction]
#[pyo3(signature = (text, origin, seed=None, models=None))]
fn run_spec(
    py: Python<'_>,
    text: &str,
    origin: &str,
    seed: Option<u64>,
    models: Option<Vec<String>>,
) -> PyResult<String> {
    let v = py
        .detach(|| spec::run_text(text, origin, seed, models.as_deref()))
        .map_err(spec_err)?;
    Ok(v.to_string())
}

/// The TOML text of a spec given as JSON text (a dict dumped by `json.dumps`).
#[pyfunction]
fn spec_json_to_toml(json_text: &str, origin: &str) -> PyResult<String> {
    spec::json_to_toml_text(json_text, origin).map_err(spec_err)
}

/// Runs an rt-app workload (JSON text) on a modelled platform; the result as JSON text.
#[pyfunction]
#[pyo3(signature = (text, origin, platform, policy, seed, loop_ns=None))]
fn run_rtapp(
    py: Python<'_>,
    text: &str,
    origin: &str,
    platform: String,
    policy: Vec<(String, String)>,
    seed: u64,
    loop_ns: Option<f64>,
) -> PyResult<String> {
    let args = spec::RtAppArgs {
        platform,
        policy,
        seed,
        loop_ns,
    };
    let v = py
        .detach(|| spec::run_rtapp_text(text, origin, &args))
        .map_err(spec_err)?;
    Ok(v.to_string())
}

/// Writes each model's simulated scheduler audit log under `dir`; `[(model, path, records)]`.
#[pyfunction]
#[pyo3(signature = (text, origin, dir, seed=None, models=None))]
fn write_audit_logs(
    py: Python<'_>,
    text: &str,
    origin: &str,
    dir: PathBuf,
    seed: Option<u64>,
    models: Option<Vec<String>>,
) -> PyResult<Vec<(String, PathBuf, usize)>> {
    py.detach(|| spec::write_audit_logs(text, origin, &dir, seed, models.as_deref()))
        .map_err(spec_err)
}

/// Checks a framework-model spec (TOML text) without running it.
#[pyfunction]
#[pyo3(signature = (text, origin, models=None))]
fn check_spec(text: &str, origin: &str, models: Option<Vec<String>>) -> PyResult<()> {
    spec::check_framework(text, origin, models.as_deref()).map_err(spec_err)
}

/// Checks a spec of any kind (the simulator's reader); for the seed-verdict sweeps, whose
/// studies run UCSG, painting, interbench and toggling specs as well as framework ones.
#[pyfunction]
fn check_any_spec(text: &str, origin: &str) -> PyResult<()> {
    lull_sim::load(origin, text)
        .map(|_| ())
        .map_err(|e| spec_err(spec::SpecProblem(e.to_string())))
}

/// Dotted spec keys a sweep may override though a spec need not write them.
#[pyfunction]
fn optional_spec_keys() -> Vec<String> {
    spec::optional_keys()
}

/// Reads an audit log into columns: a dict of little-endian buffers (`numpy.frombuffer`) plus
/// the comm and kind categories, per-ring losses after the last record, and the header.
#[pyfunction]
fn read_audit<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let bytes = py
        .detach(|| input_file::read_bounded(&path, input_file::AUDIT_LOG))
        .map_err(|e| input_err(&e))?;
    let (log, c) = py
        .detach(|| audit::columns_of_bytes(&bytes))
        .map_err(|e| LogError::new_err(format!("{}: {e}", path.display())))?;
    drop(bytes);
    let d = PyDict::new(py);
    let buffers: [(&str, Vec<u8>); 14] = [
        ("seq", c.seq.le_bytes()),
        ("ts_ns", c.ts_ns.le_bytes()),
        ("exec_ns", c.exec_ns.le_bytes()),
        ("tgid", c.tgid.le_bytes()),
        ("tid", c.tid.le_bytes()),
        ("switches", c.switches.le_bytes()),
        ("comm_code", c.comm_code.le_bytes()),
        ("cpu", c.cpu.le_bytes()),
        ("ring", c.ring.le_bytes()),
        ("rq_len", c.rq_len.le_bytes()),
        ("prio", c.prio.le_bytes()),
        ("kind_code", c.kind_code.le_bytes()),
        ("flags", c.flags.le_bytes()),
        ("lost_before", c.lost_before.le_bytes()),
    ];
    let cols = PyDict::new(py);
    for (name, b) in &buffers {
        cols.set_item(*name, PyBytes::new(py, b))?;
    }
    d.set_item("columns", cols)?;
    d.set_item("comms", c.comms)?;
    let kinds: Vec<&str> = lull_audit::AuditEventKind::ALL
        .iter()
        .map(|k| k.name())
        .collect();
    d.set_item("kinds", kinds)?;
    d.set_item("lost_at_end", c.lost_at_end)?;
    d.set_item("rings", log.header.rings)?;
    d.set_item("ring_capacity", log.header.ring_capacity)?;
    d.set_item("start_ns", log.header.start_ns)?;
    let overwritten: Vec<u64> = log.summary.rings.iter().map(|r| r.overwritten).collect();
    let kernel_lost: Vec<u64> = log.summary.rings.iter().map(|r| r.kernel_lost).collect();
    d.set_item("overwritten", overwritten)?;
    d.set_item("kernel_lost", kernel_lost)?;
    Ok(d)
}

/// Every results file under `DIR/results/` as columns of one long table (a dict of lists).
#[pyfunction]
fn load_results<'py>(py: Python<'py>, dir: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let rows = py
        .detach(|| results::load_rows(&dir))
        .map_err(|e| ResultsError::new_err(e.to_string()))?;
    let d = PyDict::new(py);
    macro_rules! col {
        ($name:ident) => {
            d.set_item(
                stringify!($name),
                rows.iter().map(|r| r.$name.clone()).collect::<Vec<_>>(),
            )?;
        };
    }
    col!(section);
    col!(index);
    col!(title);
    col!(label);
    col!(path);
    col!(value);
    col!(text);
    col!(error);
    col!(hostname);
    col!(kernel);
    col!(commit);
    col!(date);
    col!(elapsed_s);
    Ok(d)
}

#[pymodule]
fn _lull(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_spec, m)?)?;
    m.add_function(wrap_pyfunction!(spec_json_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(run_rtapp, m)?)?;
    m.add_function(wrap_pyfunction!(optional_spec_keys, m)?)?;
    m.add_function(wrap_pyfunction!(check_any_spec, m)?)?;
    m.add_function(wrap_pyfunction!(check_spec, m)?)?;
    m.add_function(wrap_pyfunction!(write_audit_logs, m)?)?;
    m.add_function(wrap_pyfunction!(read_audit, m)?)?;
    m.add_function(wrap_pyfunction!(load_results, m)?)?;
    m.add_function(wrap_pyfunction!(read_text, m)?)?;
    Ok(())
}
