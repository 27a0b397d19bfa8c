//! The runners of [`crate::SECTIONS`]: each runs one experiment and returns its typed results.

pub mod bench;
pub mod live;
pub mod modelled;
pub mod validation;

use std::path::{Path, PathBuf};

use crate::SectionError;

/// The files under `dir` whose name ends in `.ext` and starts with `prefix`, in name order.
///
/// # Errors
/// The directory cannot be listed, or holds no such file.
pub(crate) fn files_in(
    dir: &str,
    prefix: &str,
    ext: &str,
    what: &'static str,
) -> Result<Vec<PathBuf>, SectionError> {
    let dir = Path::new(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| SectionError::Dir {
            dir: dir.to_path_buf(),
            source,
        })?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == ext)
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    v.sort();
    if v.is_empty() {
        return Err(SectionError::NoFiles {
            dir: dir.to_path_buf(),
            what,
        });
    }
    Ok(v)
}
