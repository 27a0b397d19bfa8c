//! The one error of every spec kind: where in the text ([`SpecError`]) and what ([`Problem`]).
//! Specs are a boundary, so every refusal names the file, the line and column of the key at
//! fault when the reader knows it, and the problem.

use std::fmt;

use lull_workload::TraceError;

use crate::header::Kind;
use crate::platform::PlatformError;
use crate::policy::{ModelListError, PolicyError};

/// A place in a spec's text, both 1-based.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TextPos {
    pub line: usize,
    pub column: usize,
}

impl TextPos {
    /// The line and column of byte `offset` of `text` (columns count characters).
    #[must_use]
    pub fn of_offset(text: &str, offset: usize) -> TextPos {
        let mut end = offset.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let before = &text[..end];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        TextPos {
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

/// Why a spec was refused: the file (when the caller named one), the place in its text (when
/// the reader knows it) and the problem.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct SpecError {
    /// The file or other source the text came from (`"spec dict"` for a Python dict).
    pub origin: Option<String>,
    /// The key or value at fault.
    pub at: Option<TextPos>,
    pub problem: Problem,
}

impl SpecError {
    /// An error with no place yet (the loader adds the place and the file).
    #[must_use]
    pub fn new(problem: Problem) -> SpecError {
        SpecError {
            origin: None,
            at: None,
            problem,
        }
    }

    /// The same error, read from `origin` (a path or a name).
    #[must_use]
    pub fn in_file(mut self, origin: impl fmt::Display) -> SpecError {
        self.origin = Some(origin.to_string());
        self
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.origin, self.at) {
            (Some(o), Some(p)) => write!(f, "{o}:{}:{}: {}", p.line, p.column, self.problem),
            (Some(o), None) => write!(f, "{o}: {}", self.problem),
            (None, Some(p)) => write!(f, "line {}, column {}: {}", p.line, p.column, self.problem),
            (None, None) => write!(f, "{}", self.problem),
        }
    }
}

impl std::error::Error for SpecError {}

impl From<Problem> for SpecError {
    fn from(p: Problem) -> SpecError {
        SpecError::new(p)
    }
}

/// What is wrong with a spec.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum Problem {
    /// Not TOML, or not the tables of its kind: a missing or unknown field, a value of the wrong
    /// type (the reader's message).
    #[error("{0}")]
    Syntax(String),
    /// No `kind` key; `suggested` is the kind whose own table or key the spec has.
    #[error("no `kind`: {hint}the kinds are {kinds}", hint = suggestion(*.suggested), kinds = Kind::names())]
    MissingKind { suggested: Option<Kind> },
    #[error("unknown kind `{0}` (the kinds are {kinds})", kinds = Kind::names())]
    UnknownKind(String),
    /// A spec of another kind where one kind was expected.
    #[error("a {found} spec where a {expected} spec was expected")]
    WrongKind { expected: Kind, found: Kind },
    #[error("unknown model `{name}` (known: {known})")]
    UnknownModel { name: String, known: String },
    #[error("unknown platform `{0}` (known: {known})", known = crate::platform::SHIPPED.join(", "))]
    UnknownPlatform(String),
    #[error("unknown trace `{0}` (known: stylus-spiral)")]
    UnknownTrace(String),
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    #[error("trace: {0}")]
    Trace(#[from] TraceError),
    #[error(transparent)]
    Platform(#[from] PlatformError),
    #[error("policy: {0}")]
    Policy(#[from] lull_sched::UnknownPolicy),
    #[error(transparent)]
    Models(#[from] ModelListError),
    /// A run option the spec's kind has no use for.
    #[error("{option} does not apply to a {kind} spec")]
    NotApplicable { option: &'static str, kind: Kind },
}

fn suggestion(k: Option<Kind>) -> String {
    k.map_or_else(String::new, |k| {
        format!(
            "add `kind = \"{}\"` as the first key (the spec has `{}`, which only {} specs have); ",
            k.name(),
            k.marker_key(),
            k.name()
        )
    })
}

impl Problem {
    /// The dotted key of the spec the problem is about, to find its line.
    #[must_use]
    pub fn field(&self) -> Option<&str> {
        match self {
            Problem::Invalid { field, .. } => Some(field),
            Problem::UnknownModel { .. } | Problem::Models(_) => Some("models"),
            Problem::UnknownPlatform(_) | Problem::Platform(_) => Some("platform"),
            Problem::UnknownTrace(_) => Some("workload.trace"),
            Problem::Policy(_) => Some("policy"),
            Problem::UnknownKind(_) | Problem::WrongKind { .. } => Some("kind"),
            Problem::Syntax(_)
            | Problem::MissingKind { .. }
            | Problem::Trace(_)
            | Problem::NotApplicable { .. } => None,
        }
    }
}

impl From<PolicyError> for Problem {
    fn from(e: PolicyError) -> Problem {
        match e {
            PolicyError::Unknown(u) => Problem::Policy(u),
            PolicyError::Invalid { field, reason } => Problem::Invalid { field, reason },
        }
    }
}

/// A [`Problem::Invalid`] about `field`.
pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Problem {
    Problem::Invalid {
        field,
        reason: reason.into(),
    }
}
