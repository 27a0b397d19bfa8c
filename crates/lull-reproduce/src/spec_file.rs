//! Spec files: read with the bounded reader every front end uses and loaded by their `kind`
//! ([`lull_sim::load`]).

use std::path::Path;

use lull_sim::{Spec, SpecError};

/// A spec file that could not be read or was refused.
#[derive(Debug, thiserror::Error)]
pub enum SpecFileError {
    /// The file could not be read (the message names it).
    #[error(transparent)]
    Read(#[from] lull_os::input_file::ReadError),
    /// The spec was refused (the message names the file, line and column).
    #[error(transparent)]
    Spec(#[from] SpecError),
}

/// Reads the spec file at `path` and loads it by its `kind`.
///
/// # Errors
/// The file cannot be read, or the spec is refused.
pub fn read_spec(path: &Path) -> Result<Spec, SpecFileError> {
    let text = lull_os::input_file::read_bounded_text(path, lull_os::input_file::SPEC)?;
    Ok(lull_sim::load(&path.display().to_string(), &text)?)
}

/// As [`read_spec`], for a spec that must be of one kind (a `lull reproduce` section's).
///
/// # Errors
/// As [`read_spec`], or a spec of another kind.
pub fn read_spec_of<T: TryFrom<Spec, Error = SpecError>>(path: &Path) -> Result<T, SpecFileError> {
    T::try_from(read_spec(path)?).map_err(|e| SpecFileError::Spec(e.in_file(path.display())))
}
