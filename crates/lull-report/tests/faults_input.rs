//! Fault injection at the results reader: `/dev/zero`, a FIFO and a
//! directory where a results file goes are refused with the path named, before any read, so
//! `lull report` and `lull.results.load` can neither hang nor fill memory on them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use lull_os::fileout::ScratchDir;
use lull_testkit::hang_guard::within;

use lull_report::{load_dir, load_file, ResultsError};

/// Hang guard per case: each refusal comes before any read; a minute means it blocked.
const GUARD: Duration = Duration::from_secs(60);

/// A scratch directory of this test's own with an empty `results/`, removed on drop.
fn scratch(case: &str) -> ScratchDir {
    let dir = ScratchDir::new(&format!("lull-report-faults-input-{case}")).unwrap();
    std::fs::create_dir(dir.path().join("results")).unwrap();
    dir
}

/// `f()` on a thread of its own, failing the test if it outlives [`GUARD`].
fn guarded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    within(GUARD, f).unwrap_or_else(|| panic!("the results reader still running after {GUARD:?}"))
}

/// The error reading the results under `dir` ends in (within [`GUARD`]).
fn refusal(dir: &ScratchDir) -> ResultsError {
    let d = dir.path().to_path_buf();
    guarded(move || load_dir(&d)).unwrap_err()
}

/// The refusal of a results directory whose `results/x.json` `make` made: that path and the
/// error.
fn refusal_of(case: &str, make: impl FnOnce(&Path)) -> (PathBuf, ResultsError) {
    let dir = scratch(case);
    let x = dir.path().join("results/x.json");
    make(&x);
    (x, refusal(&dir))
}

fn assert_refused(e: &ResultsError, path: &Path, found: &str) {
    assert_eq!(
        e.to_string(),
        format!(
            "results file {}: is {found}, not a regular file",
            path.display()
        )
    );
}

#[test]
fn dev_zero_is_refused_by_name() {
    let e = guarded(|| load_file(Path::new("/dev/zero"))).unwrap_err();
    assert_refused(&e, Path::new("/dev/zero"), "a character device");
}

#[test]
fn a_fifo_in_the_results_directory_is_refused_by_name() {
    let (x, e) = refusal_of("fifo", |x| {
        assert!(Command::new("mkfifo").arg(x).status().unwrap().success());
    });
    assert_refused(&e, &x, "a FIFO");
}

#[test]
fn a_directory_named_like_a_results_file_is_refused_by_name() {
    let (x, e) = refusal_of("dir", |x| std::fs::create_dir(x).unwrap());
    assert_refused(&e, &x, "a directory");
}

#[test]
fn a_results_file_over_its_limit_is_refused_before_it_is_read() {
    let (x, e) = refusal_of("large", |x| {
        let f = std::fs::File::create(x).unwrap();
        // Sparse: the size is what the reader checks, no disk is used.
        f.set_len(lull_os::input_file::RESULTS_JSON.max_bytes + 1)
            .unwrap();
    });
    assert!(
        e.to_string()
            .starts_with(&format!("results file {}: ", x.display()))
            && e.to_string().contains("more than"),
        "{e}"
    );
}
