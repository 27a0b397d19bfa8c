//! Lull has one OS layer: no crate but `lull-os` calls `libc` or depends on it. A scan of the
//! workspace's sources, so that a new direct call fails here rather than in review.

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

#[test]
fn no_crate_but_the_os_layer_calls_libc() {
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
    let mut offenders = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if ALLOWED.iter().any(|(p, _)| *p == rel) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if code.contains("libc::") || code.starts_with("use libc") {
                offenders.push(format!("{rel}:{}: {}", i + 1, line.trim()));
            }
        }
    }
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
