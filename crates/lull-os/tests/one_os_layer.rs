//! Lull has one OS layer: no crate but `lull-os` calls `libc` or depends on it, or makes a
//! descriptor out of a bare number. A scan of the workspace's sources, so that a new direct call
//! fails here rather than in review.

use std::path::{Path, PathBuf};

/// Files outside `lull-os` that still call `libc`, each with why. Shrinks to empty; never grows.
const ALLOWED: &[(&str, &str)] = &[];

/// Crates whose Cargo.toml may list `libc`: the OS layer alone.
const LIBC_DEPENDENTS: &[&str] = &["lull-os"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The Rust files of every crate but `lull-os`, relative to the workspace, with their text.
fn sources_outside_the_os_layer() -> Vec<(String, String)> {
    let root = workspace();
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        if krate.file_name() == "lull-os" {
            continue;
        }
        for sub in ["src", "tests", "benches", "examples"] {
            rust_files(&krate.path().join(sub), &mut files);
        }
    }
    assert!(
        files.len() > 100,
        "the scan found too few files: {}",
        files.len()
    );
    files
        .iter()
        .map(|f| {
            let rel = f
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (rel, std::fs::read_to_string(f).unwrap())
        })
        .collect()
}

/// The lines of `files` (comments aside) on which `hit` holds, as `path:line: text`.
fn lines_where(files: &[(String, String)], hit: impl Fn(&str) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    for (rel, text) in files {
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if !code.starts_with("//") && hit(code) {
                out.push(format!("{rel}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    out
}

#[test]
fn no_crate_but_the_os_layer_calls_libc() {
    let root = workspace();
    let files: Vec<_> = sources_outside_the_os_layer()
        .into_iter()
        .filter(|(rel, _)| !ALLOWED.iter().any(|(p, _)| *p == *rel))
        .collect();
    let offenders = lines_where(&files, |code| {
        code.contains("libc::") || code.starts_with("use libc")
    });
    assert!(
        offenders.is_empty(),
        "libc outside lull-os (add a safe wrapper to lull-os instead):\n{}",
        offenders.join("\n")
    );
    for (p, _) in ALLOWED {
        let text = std::fs::read_to_string(root.join(p)).unwrap_or_default();
        assert!(
            text.contains("libc::"),
            "{p} no longer calls libc: take it off ALLOWED"
        );
    }
}

/// A descriptor made from a bare number is `unsafe` (`from_raw_fd`, `borrow_raw`): only the OS
/// layer does it, behind safe wrappers (`sys::adopt_inherited_socket` for a descriptor a parent
/// passed; the wrappers that take a `RawFd` for a borrow).
#[test]
fn no_crate_but_the_os_layer_makes_a_descriptor_from_a_number() {
    let offenders = lines_where(&sources_outside_the_os_layer(), |code| {
        code.contains("from_raw_fd(") || code.contains("borrow_raw(")
    });
    assert!(
        offenders.is_empty(),
        "a descriptor made from a number outside lull-os (use lull_os::sys instead):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn no_crate_but_the_os_layer_depends_on_libc() {
    let root = workspace();
    for krate in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        let name = krate.file_name().to_string_lossy().into_owned();
        let Ok(manifest) = std::fs::read_to_string(krate.path().join("Cargo.toml")) else {
            continue;
        };
        let lists_libc = manifest
            .lines()
            .any(|l| l.trim_start().starts_with("libc ") || l.trim_start().starts_with("libc="));
        assert!(
            !lists_libc || LIBC_DEPENDENTS.contains(&name.as_str()),
            "{name} depends on libc; only lull-os may"
        );
    }
}
