//! Spec files named on the command line, read and loaded by `lull_reproduce::spec_file` (the
//! bounded reader every front end uses, then [`lull_sim::load`] by the spec's `kind`); the
//! command line prints the error.

use std::path::Path;

use lull_sim::Spec;

/// Reads the spec file at `path` and loads it by its `kind`.
///
/// # Errors
/// The file cannot be read, or the spec is refused (the message names the file and line).
pub fn read_spec(path: &Path) -> Result<Spec, String> {
    lull_reproduce::spec_file::read_spec(path).map_err(|e| e.to_string())
}
