//! Fault injection at the results reader: `/dev/zero`, a FIFO and a
//! directory where a results file goes are refused with the path named, before any read, so
//! `lull report` and `lull.results.load` can neither hang nor fill memory on them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use lull_report::{load_dir, load_file, ResultsError};

/// Hang guard per case: each refusal comes before any read; a minute means it blocked.
const GUARD: Duration = Duration::from_secs(60);

/// A scratch directory of this test's own, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(case: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!(
            "lull-report-faults-input-{}-{case}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(p.join("results")).unwrap();
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `f()` on a thread of its own, failing the test if it outlives [`GUARD`].
fn guarded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(GUARD)
        .unwrap_or_else(|_| panic!("the results reader still running after {GUARD:?}"))
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
    let dir = Scratch::new("fifo");
    let x = dir.0.join("results/x.json");
    assert!(Command::new("mkfifo").arg(&x).status().unwrap().success());
    let d = dir.0.clone();
    let e = guarded(move || load_dir(&d)).unwrap_err();
    assert_refused(&e, &x, "a FIFO");
}

#[test]
fn a_directory_named_like_a_results_file_is_refused_by_name() {
    let dir = Scratch::new("dir");
    let x = dir.0.join("results/x.json");
    std::fs::create_dir(&x).unwrap();
    let d = dir.0.clone();
    let e = guarded(move || load_dir(&d)).unwrap_err();
    assert_refused(&e, &x, "a directory");
}

#[test]
fn a_results_file_over_its_limit_is_refused_before_it_is_read() {
    let dir = Scratch::new("large");
    let x = dir.0.join("results/x.json");
    let f = std::fs::File::create(&x).unwrap();
    // Sparse: the size is what the reader checks, no disk is used.
    f.set_len(lull_os::input_file::RESULTS_JSON.max_bytes + 1)
        .unwrap();
    let d = dir.0.clone();
    let e = guarded(move || load_dir(&d)).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("results file {}: ", x.display()))
            && e.to_string().contains("more than"),
        "{e}"
    );
}
