//! The workspace's C programs (`apps/`, a crate's `tests/c/`) built in its tests, all the same
//! way: as C11 with POSIX 2008, warnings as errors, against the headers of `include/`, linked
//! with a static library cargo built for the test.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What every C program is compiled with here: a warning fails the test, so a header change
/// that breaks a C user shows at once.
pub const STRICT_FLAGS: [&str; 5] = [
    "-std=c11",
    "-D_POSIX_C_SOURCE=200809L",
    "-Wall",
    "-Wextra",
    "-Werror",
];

/// The workspace's root directory (`include/`, `apps/`).
#[must_use]
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The artefact `name` (a static library) cargo built with the running test: beside the test
/// binary (`target/*/deps`), else one directory up.
#[must_use]
pub fn built_artefact(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    let found = [deps, deps.parent()?]
        .into_iter()
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    found
}

/// Whether this machine has a C compiler (`cc`).
#[must_use]
pub fn have_cc() -> bool {
    Command::new("cc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The static library `name` beside the test binary and a C compiler; `None`, after recording a
/// skip naming what is missing, when either is not here.
#[track_caller]
pub fn require(name: &str) -> Option<PathBuf> {
    let Some(lib) = built_artefact(name) else {
        crate::skip(format_args!("{name} not built beside the test binary"));
        return None;
    };
    if !have_cc() {
        crate::skip("no C compiler (cc)");
        return None;
    }
    Some(lib)
}

/// `cc` with [`STRICT_FLAGS`], `include/` on the header path, and `source`.
fn cc(source: &Path) -> Command {
    let mut cc = Command::new("cc");
    cc.args(STRICT_FLAGS)
        .arg("-I")
        .arg(workspace_root().join("include"))
        .arg(source);
    cc
}

/// Runs a compile, failing the test with the compiler's complaint.
fn run(mut cc: Command, source: &Path) {
    let out = cc.output().unwrap_or_else(|e| panic!("cannot run cc: {e}"));
    assert!(
        out.status.success(),
        "{} does not build: {}",
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds the program `source` linked with `lib` and `link_libs` into `bin`; `bin`.
///
/// # Panics
/// When it does not build, with the compiler's messages.
pub fn build(source: &Path, lib: &Path, link_libs: &[&str], bin: &Path) -> PathBuf {
    let mut cc = cc(source);
    cc.arg(lib).args(link_libs).arg("-o").arg(bin);
    run(cc, source);
    bin.to_owned()
}

/// Compiles `source` to the object file `object`, without linking.
///
/// # Panics
/// When it does not compile, with the compiler's messages.
pub fn compile(source: &Path, object: &Path) {
    let mut cc = cc(source);
    cc.arg("-c").arg("-o").arg(object);
    run(cc, source);
}
