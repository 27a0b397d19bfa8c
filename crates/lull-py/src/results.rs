//! Results files (`lull reproduce --out DIR`) as one long table: one row per leaf figure of each
//! experiment's JSON, with the experiment's provenance on every row.

use std::path::Path;

use lull_report::{load_dir, Outcome, ResultFile, ResultsError};
use serde_json::Value;

/// One leaf of an experiment's JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub section: String,
    pub index: usize,
    pub title: String,
    pub label: String,
    /// JSON-pointer-like path of the leaf inside the experiment's data (`/`-separated; a key's
    /// own `/` and `~` escaped as `~1` and `~0`), empty for an experiment that failed.
    pub path: String,
    /// Numbers and booleans (1/0); `None` for text, null, and a failed experiment.
    pub value: Option<f64>,
    /// Text leaves.
    pub text: Option<String>,
    /// Why the experiment could not run on the machine, for a failed one.
    pub error: Option<String>,
    pub hostname: String,
    pub kernel: String,
    pub commit: String,
    pub date: String,
    pub elapsed_s: f64,
}

/// Every leaf of every results file under `DIR/results/`, in `lull reproduce`'s order.
///
/// # Errors
/// The reader's [`ResultsError`]: a missing directory, no results, a file of another version.
pub fn load_rows(dir: &Path) -> Result<Vec<Row>, ResultsError> {
    let mut rows = Vec::new();
    for f in load_dir(dir)? {
        rows_of(&f, &mut rows);
    }
    Ok(rows)
}

fn rows_of(f: &ResultFile, rows: &mut Vec<Row>) {
    let base = Row {
        section: f.section.clone(),
        index: f.index,
        title: f.title.clone(),
        label: f.label.to_string(),
        path: String::new(),
        value: None,
        text: None,
        error: None,
        hostname: f.provenance.machine.hostname.clone(),
        kernel: f.provenance.kernel.clone(),
        commit: f.provenance.commit.clone(),
        date: f.provenance.date.clone(),
        elapsed_s: f.elapsed_s,
    };
    match &f.outcome {
        Outcome::Error(e) => rows.push(Row {
            error: Some(e.clone()),
            ..base
        }),
        Outcome::Data(v) => leaves(v, String::new(), &base, rows),
    }
}

fn leaves(v: &Value, path: String, base: &Row, rows: &mut Vec<Row>) {
    let leaf = |value: Option<f64>, text: Option<String>| Row {
        path: path.clone(),
        value,
        text,
        ..base.clone()
    };
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let key = k.replace('~', "~0").replace('/', "~1");
                leaves(x, format!("{path}/{key}"), base, rows);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                leaves(x, format!("{path}/{i}"), base, rows);
            }
        }
        Value::Number(n) => rows.push(leaf(n.as_f64(), None)),
        Value::Bool(b) => rows.push(leaf(Some(f64::from(u8::from(*b))), None)),
        Value::String(s) => rows.push(leaf(None, Some(s.clone()))),
        Value::Null => rows.push(leaf(None, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lull_report::{write, Label, Provenance};
    use serde_json::json;

    #[test]
    fn every_leaf_is_a_row_with_its_provenance() {
        // A results directory not yet made, inside a private one removed on drop.
        let scratch = lull_os::fileout::ScratchDir::new("lull-py-rows").unwrap();
        let d = scratch.path().join("results");
        let data = json!({"a": {"b/c": 1.5, "t": "x"}, "l": [true, null]});
        let f = ResultFile::new(
            "marz",
            1,
            "Marz",
            Label::Modelled,
            Provenance::here(),
            0.5,
            Outcome::Data(data),
        );
        write(&d, &f).unwrap();
        let g = ResultFile::new(
            "live",
            2,
            "Live",
            Label::Measured,
            Provenance::here(),
            0.1,
            Outcome::Error("needs root".into()),
        );
        write(&d, &g).unwrap();
        let rows = load_rows(&d).unwrap();
        let paths: Vec<&str> = rows.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(paths, ["/a/b~1c", "/a/t", "/l/0", "/l/1", ""]);
        assert_eq!(rows[0].value, Some(1.5));
        assert_eq!(rows[1].text.as_deref(), Some("x"));
        assert_eq!(rows[2].value, Some(1.0));
        assert_eq!(rows[4].error.as_deref(), Some("needs root"));
        assert_eq!(rows[4].label, "measured");
    }

    #[test]
    fn a_missing_directory_is_the_readers_error() {
        let e = load_rows(Path::new("/nonexistent/lull")).unwrap_err();
        assert!(matches!(e, ResultsError::MissingDir(_)));
    }
}
