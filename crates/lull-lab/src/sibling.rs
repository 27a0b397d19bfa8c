//! This build's own programs (`lull-app`, `lull-work`, `lull-scx`): found beside the running
//! executable (`target/release/lull` → `target/release/lull-app`) or, for a test binary, one
//! directory up (`target/debug/deps/…` → `target/debug/lull-app`).

use std::path::{Path, PathBuf};

/// Where this build's program `name` would be: beside the running executable first, then one
/// directory up.
///
/// # Errors
/// When the running executable cannot be found.
pub fn candidates(name: &str) -> std::io::Result<[PathBuf; 2]> {
    let exe = std::env::current_exe()?;
    let beside = exe.with_file_name(name);
    let up = exe
        .parent()
        .and_then(Path::parent)
        .map_or_else(|| beside.clone(), |d| d.join(name));
    Ok([beside, up])
}

/// The first of [`candidates`] that is a file; when neither is, the first with why it is not.
///
/// # Errors
/// `(path, why)`: the place a user would look (beside the executable) and why nothing usable
/// is there.
pub fn program(name: &str) -> Result<PathBuf, (PathBuf, String)> {
    let [beside, up] = candidates(name).map_err(|e| (PathBuf::from(name), e.to_string()))?;
    if let Some(found) = [&beside, &up].into_iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let why = match std::fs::metadata(&beside) {
        Ok(_) => "not a file".to_owned(),
        Err(e) => e.to_string(),
    };
    Err((beside, why))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_program_names_where_it_was_looked_for() {
        let (path, why) = program("lull-no-such-program").unwrap_err();
        assert_eq!(path.file_name().unwrap(), "lull-no-such-program");
        assert_eq!(
            path.parent(),
            std::env::current_exe().unwrap().parent(),
            "the user is told the place beside the executable"
        );
        assert!(why.contains("No such file"), "{why}");
    }

    #[test]
    fn a_test_binary_looks_one_directory_up() {
        let [beside, up] = candidates("x").unwrap();
        assert_eq!(
            beside.parent().unwrap().parent().unwrap(),
            up.parent().unwrap()
        );
    }
}
