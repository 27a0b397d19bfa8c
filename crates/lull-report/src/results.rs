//! The results file: one experiment's output with its provenance, versioned.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Provenance;

/// What every results file says it is, so a stray JSON file is not mistaken for one.
pub const FORMAT: &str = "lull-results";
/// Bumped whenever a reader of the previous version would misread a file of the new one.
pub const FORMAT_VERSION: u32 = 1;
/// Where under `DIR` the files go.
pub const RESULTS_SUBDIR: &str = "results";

/// Whether an experiment's figures were measured on the machine, modelled by the simulator, or
/// both (a comparison of the two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Label {
    Measured,
    Modelled,
    MeasuredAndModelled,
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Label::Measured => "measured",
            Label::Modelled => "modelled",
            Label::MeasuredAndModelled => "measured and modelled",
        })
    }
}

/// An experiment's JSON, or why it could not run on this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Data(Value),
    Error(String),
}

/// One experiment's results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultFile {
    pub format: String,
    pub version: u32,
    /// The section's key: the name `--only` takes and the file's stem.
    pub section: String,
    /// Its place in `lull reproduce`'s order (1-based), so readers keep that order.
    pub index: usize,
    pub title: String,
    pub label: Label,
    #[serde(flatten)]
    pub provenance: Provenance,
    /// Seconds the experiment took.
    pub elapsed_s: f64,
    #[serde(flatten)]
    pub outcome: Outcome,
}

impl ResultFile {
    pub fn new(
        section: &str,
        index: usize,
        title: &str,
        label: Label,
        provenance: Provenance,
        elapsed_s: f64,
        outcome: Outcome,
    ) -> Self {
        ResultFile {
            format: FORMAT.to_owned(),
            version: FORMAT_VERSION,
            section: section.to_owned(),
            index,
            title: title.to_owned(),
            label,
            provenance,
            elapsed_s,
            outcome,
        }
    }

    /// The experiment's JSON, if it ran.
    pub fn data(&self) -> Option<&Value> {
        match &self.outcome {
            Outcome::Data(v) => Some(v),
            Outcome::Error(_) => None,
        }
    }
}

/// Why results could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    #[error("{}: no such directory", .0.display())]
    MissingDir(PathBuf),
    #[error("{}: no results files (expected {}/*.json, written by `lull reproduce --out`)", .0.display(), RESULTS_SUBDIR)]
    Empty(PathBuf),
    #[error("{path}: {source}", path = .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a Lull results file: {why}", path = .path.display())]
    NotResults { path: PathBuf, why: String },
    #[error("{path}: results format version {found}, this build reads version {FORMAT_VERSION}", path = .path.display())]
    Version { path: PathBuf, found: u64 },
    #[error("{path}: section name {name:?} is not a plain name", path = .path.display())]
    BadSection { path: PathBuf, name: String },
    /// The bounded reader refused or failed: not a regular file, too large, unreadable.
    #[error(transparent)]
    Read(#[from] lull_os::input_file::ReadError),
}

/// `DIR/results`.
pub fn results_dir(dir: &Path) -> PathBuf {
    dir.join(RESULTS_SUBDIR)
}

/// Writes `file` to `DIR/results/<section>.json`, creating the directories, through a temporary
/// file and a rename so a reader never sees half a file. Returns the path written.
pub fn write(dir: &Path, file: &ResultFile) -> Result<PathBuf, ResultsError> {
    let sub = results_dir(dir);
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| ResultsError::Io { path, source }
    };
    if !plain_name(&file.section) {
        return Err(ResultsError::BadSection {
            path: sub,
            name: file.section.clone(),
        });
    }
    std::fs::create_dir_all(&sub).map_err(io(&sub))?;
    let path = sub.join(format!("{}.json", file.section));
    let text = serde_json::to_string_pretty(file).map_err(|e| ResultsError::NotResults {
        path: path.clone(),
        why: e.to_string(),
    })?;
    lull_os::fileout::write_file_atomically(&path, (text + "\n").as_bytes())
        .map_err(|e| io(&path)(e.into_io()))?;
    Ok(path)
}

/// Reads one results file, checking its format and version before its fields. It is read
/// through the bounded reader ([`lull_os::input_file::RESULTS_JSON`]): a FIFO, a device or a
/// directory is refused by name rather than read without end.
pub fn load_file(path: &Path) -> Result<ResultFile, ResultsError> {
    let text = lull_os::input_file::read_bounded_text(path, lull_os::input_file::RESULTS_JSON)?;
    let not = |why: String| ResultsError::NotResults {
        path: path.to_owned(),
        why,
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| not(e.to_string()))?;
    if value.get("format").and_then(Value::as_str) != Some(FORMAT) {
        return Err(not(format!("no \"format\": \"{FORMAT}\"")));
    }
    match value.get("version").and_then(Value::as_u64) {
        Some(v) if v == u64::from(FORMAT_VERSION) => {}
        Some(found) => {
            return Err(ResultsError::Version {
                path: path.to_owned(),
                found,
            })
        }
        None => return Err(not("no numeric \"version\"".to_owned())),
    }
    let file: ResultFile = serde_json::from_value(value).map_err(|e| not(e.to_string()))?;
    if !plain_name(&file.section) {
        return Err(ResultsError::BadSection {
            path: path.to_owned(),
            name: file.section,
        });
    }
    Ok(file)
}

/// Every results file under `DIR/results/`, in `lull reproduce`'s order. Any file that is not a
/// results file of this version is an error: a report must not quietly leave one out.
pub fn load_dir(dir: &Path) -> Result<Vec<ResultFile>, ResultsError> {
    if !dir.is_dir() {
        return Err(ResultsError::MissingDir(dir.to_owned()));
    }
    let sub = results_dir(dir);
    if !sub.is_dir() {
        return Err(ResultsError::Empty(dir.to_owned()));
    }
    let entries = std::fs::read_dir(&sub).map_err(|source| ResultsError::Io {
        path: sub.clone(),
        source,
    })?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|source| ResultsError::Io {
                path: sub.clone(),
                source,
            })?
            .path();
        let is_json = path.extension().is_some_and(|e| e == "json");
        let hidden = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if is_json && !hidden {
            files.push(load_file(&path)?);
        }
    }
    if files.is_empty() {
        return Err(ResultsError::Empty(dir.to_owned()));
    }
    files.sort_by(|a, b| (a.index, &a.section).cmp(&(b.index, &b.section)));
    Ok(files)
}

/// A section name is a file stem: letters, digits, `_` and `-` only.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A fresh private directory, removed on drop (even when the test fails).
    fn tempdir(tag: &str) -> lull_os::fileout::ScratchDir {
        lull_os::fileout::ScratchDir::new(&format!("lull-report-{tag}")).unwrap()
    }

    #[test]
    fn round_trip_in_order() {
        let scratch = tempdir("rt");
        let dir = scratch.path().to_path_buf();
        let b = ResultFile::new(
            "b",
            2,
            "B",
            Label::Modelled,
            Provenance::fixture(),
            1.5,
            Outcome::Error("no root".into()),
        );
        let a = ResultFile::new(
            "a",
            1,
            "A",
            Label::Measured,
            Provenance::fixture(),
            0.5,
            Outcome::Data(json!({"x": [1, 2]})),
        );
        write(&dir, &b).unwrap();
        write(&dir, &a).unwrap();
        let back = load_dir(&dir).unwrap();
        assert_eq!(back, vec![a, b]);
        assert_eq!(back[0].data(), Some(&json!({"x": [1, 2]})));
        assert_eq!(back[1].data(), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_inputs_are_typed() {
        let scratch = tempdir("bad");
        let dir = scratch.path().to_path_buf();
        assert!(matches!(
            load_dir(&dir.join("nope")),
            Err(ResultsError::MissingDir(_))
        ));
        assert!(matches!(load_dir(&dir), Err(ResultsError::Empty(_))));
        let sub = results_dir(&dir);
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(
            sub.join("x.json"),
            "{\"format\": \"lull-results\", \"version\": 99}",
        )
        .unwrap();
        assert!(matches!(
            load_dir(&dir),
            Err(ResultsError::Version { found: 99, .. })
        ));
        std::fs::write(sub.join("x.json"), "[1, 2").unwrap();
        assert!(matches!(
            load_dir(&dir),
            Err(ResultsError::NotResults { .. })
        ));
        std::fs::write(sub.join("x.json"), "{\"version\": 1}").unwrap();
        assert!(matches!(
            load_dir(&dir),
            Err(ResultsError::NotResults { .. })
        ));
        let mut file = ResultFile::new(
            "../escape",
            1,
            "t",
            Label::Measured,
            Provenance::fixture(),
            0.0,
            Outcome::Data(json!(null)),
        );
        assert!(matches!(
            write(&dir, &file),
            Err(ResultsError::BadSection { .. })
        ));
        file.section = "ok".into();
        std::fs::remove_file(sub.join("x.json")).unwrap();
        write(&dir, &file).unwrap();
        assert_eq!(load_dir(&dir).unwrap().len(), 1);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
