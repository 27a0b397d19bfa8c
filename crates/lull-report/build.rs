//! Records the commit the binary is built from, so every results file names the code that made it.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn main() {
    // A build from an exported tree (no .git) can name its commit in the environment.
    let commit = match std::env::var("LULL_COMMIT")
        .ok()
        .or_else(|| git(&["rev-parse", "HEAD"]))
    {
        Some(head) => {
            // Uncommitted changes make the commit a lie; say so in the name.
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{head}-dirty")
            } else {
                head
            }
        }
        None => "unknown".to_owned(),
    };
    println!("cargo:rustc-env=LULL_COMMIT={commit}");
    // Rebuild when HEAD moves or the index changes (a commit, a checkout, a staged edit).
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
        if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
            println!("cargo:rerun-if-changed={common}/refs/heads");
        }
    }
    println!("cargo:rerun-if-env-changed=LULL_COMMIT");
}
