//! Loading a spec: its `kind` picks one of the six spec types, its header (`experiment`,
//! `description`, `platform`, `seed`) is read and checked once for all of them, and the rest of
//! the file goes to the kind's own reader.
//!
//! The file is read as TOML with every key's place kept, `kind` and the header keys are taken
//! out, and the rest is handed to the kind's tables, so every error keeps the line and column of
//! the key at fault. (serde's internally tagged enums buffer the document first and lose both:
//! `seed = -1` would be refused without a line and without naming `seed`.)

use serde::de::DeserializeOwned;
use serde::Deserialize;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::hackbench::HackbenchSpec;
pub use crate::header::{Header, Kind};
use crate::interbench::InterbenchSpec;
use crate::platform::Platform;
use crate::spec::FrameworkSpec;
use crate::spec_error::{invalid, Problem, SpecError, TextPos};
use crate::toggling::TogglingSpec;
use crate::ucsg::UcsgSpec;
use crate::vtcfs::PaintingSpec;

/// The header keys, taken out of the document before the kind's own tables are read.
const HEADER_KEYS: [&str; 5] = [
    "experiment",
    "description",
    "platform",
    "seed",
    "platform_overrides",
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeader {
    experiment: String,
    description: String,
    platform: String,
    seed: u64,
    /// Changes to the named platform's figures (`Platform::by_name_with`).
    #[serde(default)]
    platform_overrides: toml::Table,
}

/// A spec of any kind.
#[derive(Clone, PartialEq, Debug)]
pub enum Spec {
    Framework(FrameworkSpec),
    Ucsg(UcsgSpec),
    Painting(PaintingSpec),
    Interbench(InterbenchSpec),
    Hackbench(HackbenchSpec),
    Toggling(TogglingSpec),
}

/// Reads and checks a spec of any kind from its TOML text; `origin` (the file's path, or a name
/// such as `"spec dict"`) is named in every error.
///
/// # Errors
/// A [`SpecError`] with the origin, the line and column of the key at fault where known, and
/// the problem; a spec without `kind` or with an unknown one is refused with the list of kinds.
pub fn load(origin: &str, text: &str) -> Result<Spec, SpecError> {
    Spec::parse(text).map_err(|e| e.in_file(origin))
}

impl Spec {
    /// Reads and checks a spec of any kind (as [`load`], without naming a file).
    ///
    /// # Errors
    /// As [`load`].
    pub fn parse(text: &str) -> Result<Spec, SpecError> {
        parse_located(text).map_err(|(problem, at)| {
            let at = at.or_else(|| problem.field().and_then(|f| locate(text, f)));
            SpecError {
                origin: None,
                at: at.map(|offset| TextPos::of_offset(text, offset)),
                problem,
            }
        })
    }

    /// The kind the spec says it is.
    #[must_use]
    pub fn kind(&self) -> Kind {
        match self {
            Spec::Framework(_) => Kind::Framework,
            Spec::Ucsg(_) => Kind::Ucsg,
            Spec::Painting(_) => Kind::Painting,
            Spec::Interbench(_) => Kind::Interbench,
            Spec::Hackbench(_) => Kind::Hackbench,
            Spec::Toggling(_) => Kind::Toggling,
        }
    }
}

/// A problem and the byte offset it is at, when the reader knows it.
type Located = (Problem, Option<usize>);

fn parse_located(text: &str) -> Result<Spec, Located> {
    let mut doc = DeTable::parse(text).map_err(|e| toml_problem(&e))?;
    let doc_span = doc.span();
    let table = doc.get_mut();
    let Some(kind_value) = table.remove("kind") else {
        let suggested = Kind::ALL
            .into_iter()
            .find(|k| table.contains_key(k.marker_key()));
        return Err((Problem::MissingKind { suggested }, Some(0)));
    };
    let kind_at = kind_value.span().start;
    let kind = match kind_value.get_ref().as_str() {
        Some(name) => Kind::from_name(name)
            .ok_or_else(|| (Problem::UnknownKind(name.to_owned()), Some(kind_at)))?,
        None => {
            return Err((
                Problem::Syntax(format!(
                    "kind must be a string, one of {}, not {}",
                    Kind::names(),
                    kind_value.get_ref().type_str()
                )),
                Some(kind_at),
            ))
        }
    };
    let mut header = DeTable::new();
    for key in HEADER_KEYS {
        if let Some((k, v)) = table.remove_entry(key) {
            header.insert(k, v);
        }
    }
    let raw: RawHeader = from_table(header, doc_span.clone())?;
    let header = check_header(raw).map_err(unplaced)?;
    let body = Spanned::new(doc_span, doc.into_inner());
    let spec = match kind {
        Kind::Framework => FrameworkSpec::from_parts(header, body_of(body)?).map(Spec::Framework),
        Kind::Ucsg => UcsgSpec::from_parts(header, body_of(body)?).map(Spec::Ucsg),
        Kind::Painting => PaintingSpec::from_parts(header, body_of(body)?).map(Spec::Painting),
        Kind::Interbench => {
            InterbenchSpec::from_parts(header, body_of(body)?).map(Spec::Interbench)
        }
        Kind::Hackbench => HackbenchSpec::from_parts(header, body_of(body)?).map(Spec::Hackbench),
        Kind::Toggling => TogglingSpec::from_parts(header, body_of(body)?).map(Spec::Toggling),
    };
    spec.map_err(unplaced)
}

/// A problem found after the tables were read: its place is its field's.
fn unplaced(p: Problem) -> Located {
    (p, None)
}

fn check_header(raw: RawHeader) -> Result<Header, Problem> {
    if raw.experiment.trim().is_empty() {
        return Err(invalid("experiment", "empty name"));
    }
    let platform = Platform::by_name_with(&raw.platform, &raw.platform_overrides)
        .ok_or(Problem::UnknownPlatform(raw.platform))??;
    Ok(Header {
        experiment: raw.experiment,
        description: raw.description,
        platform,
        seed: raw.seed,
    })
}

fn body_of<T: DeserializeOwned>(doc: Spanned<DeTable<'_>>) -> Result<T, Located> {
    let span = doc.span();
    from_table(doc.into_inner(), span)
}

fn from_table<T: DeserializeOwned>(
    table: DeTable<'_>,
    span: std::ops::Range<usize>,
) -> Result<T, Located> {
    T::deserialize(toml::de::Deserializer::from(Spanned::new(span, table)))
        .map_err(|e| toml_problem(&e))
}

/// The reader's message (with the key path it gives, on one line) and its place.
fn toml_problem(e: &toml::de::Error) -> Located {
    let message = e
        .to_string()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    (Problem::Syntax(message), e.span().map(|s| s.start))
}

/// The byte offset of the dotted key `field` (as far as the document has it), for a problem
/// found after the tables were read.
fn locate(text: &str, field: &str) -> Option<usize> {
    let doc = DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let mut found = None;
    for part in field.split('.') {
        let (k, v) = table.get_key_value(part)?;
        found = Some(k.span().start);
        match v.get_ref() {
            DeValue::Table(t) => table = t,
            _ => break,
        }
    }
    found
}

/// Each kind's checked spec out of a [`Spec`], or [`Problem::WrongKind`].
macro_rules! kind_of {
    ($ty:ty, $variant:ident) => {
        impl TryFrom<Spec> for $ty {
            type Error = SpecError;
            fn try_from(s: Spec) -> Result<$ty, SpecError> {
                match s {
                    Spec::$variant(x) => Ok(x),
                    other => Err(SpecError::new(Problem::WrongKind {
                        expected: Kind::$variant,
                        found: other.kind(),
                    })),
                }
            }
        }

        impl $ty {
            /// Reads and checks a spec that must be of this kind.
            ///
            /// # Errors
            /// As [`load`], or [`Problem::WrongKind`].
            pub fn parse(text: &str) -> Result<$ty, SpecError> {
                Spec::parse(text)?.try_into()
            }
        }
    };
}

kind_of!(FrameworkSpec, Framework);
kind_of!(UcsgSpec, Ucsg);
kind_of!(PaintingSpec, Painting);
kind_of!(InterbenchSpec, Interbench);
kind_of!(HackbenchSpec, Hackbench);
kind_of!(TogglingSpec, Toggling);
