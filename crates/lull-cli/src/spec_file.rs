//! Spec files named on the command line: read with the bounded reader every front end uses and
//! loaded by their `kind` ([`lull_sim::load`]).

use std::path::Path;

use lull_sim::{Spec, SpecError};

/// Reads the spec file at `path` (with the bounded reader every front end uses) and loads it
/// by its `kind`.
///
/// # Errors
/// The file cannot be read, or the spec is refused (the message names the file and line).
pub fn read_spec(path: &Path) -> Result<Spec, String> {
    let text = lull_os::input_file::read_bounded_text(path, lull_os::input_file::SPEC)
        .map_err(|e| e.to_string())?;
    lull_sim::load(&path.display().to_string(), &text).map_err(|e| e.to_string())
}

/// As [`read_spec`], for a spec that must be of one kind (a `lull reproduce` section's).
///
/// # Errors
/// As [`read_spec`], or a spec of another kind.
pub fn read_spec_of<T: TryFrom<Spec, Error = SpecError>>(path: &Path) -> Result<T, String> {
    T::try_from(read_spec(path)?).map_err(|e| e.in_file(path.display()).to_string())
}
