//! C programs built against the client library's static archive, as the lab's C clients are
//! (`lull kds`'s figure 18, the fan-out bench's process clients): the header, the archive, the
//! link line, and one compile step with typed errors.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

/// The header a C client includes.
pub const LULL_H: &str = include_str!("../../../include/lull.h");
/// The static library carrying the C ABI (`crate-type = "staticlib"` of `lull-client`).
pub const STATIC_LIB: &str = "liblull.a";
/// What a C program linking the static library needs beyond libc: the Rust standard library's
/// system libraries on glibc (`rustc --print native-static-libs`; `cc` adds libgcc itself).
pub const C_LINK_LIBS: [&str; 3] = ["-lpthread", "-ldl", "-lm"];

/// Why a C client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum CBuildError {
    #[error("{STATIC_LIB} not found in {}: run `cargo build --release -p lull-client` (or `./lull`, which builds it) to put it beside target/release/lull", dir.display())]
    NoStaticLib { dir: PathBuf },
    #[error("C compiler {cc:?} not found: install gcc (scripts/debian-packages.txt), or set CC")]
    NoCompiler { cc: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("compiling {file} failed ({status}); is {} current (`cargo build -p lull-client`)?\n{stderr}", lib.display())]
    Compile {
        file: String,
        status: ExitStatus,
        lib: PathBuf,
        stderr: String,
    },
}

/// One C program: its file stem, its source text and the optimisation level it is built at.
#[derive(Clone, Copy, Debug)]
pub struct CProgram<'a> {
    pub stem: &'a str,
    pub source: &'a str,
    /// `-O1`, `-O2`, …
    pub opt: &'a str,
}

/// Writes `program` and [`LULL_H`] into `dir` and compiles it with `cc` against
/// `lib_dir`/[`STATIC_LIB`]; the executable's path.
///
/// # Errors
/// [`CBuildError`]: no archive, no compiler, a write that failed, or the compiler's complaint.
pub fn build(
    dir: &Path,
    lib_dir: &Path,
    cc: &str,
    program: CProgram<'_>,
) -> Result<PathBuf, CBuildError> {
    let lib = lib_dir.join(STATIC_LIB);
    if !lib.is_file() {
        return Err(CBuildError::NoStaticLib {
            dir: lib_dir.to_owned(),
        });
    }
    let file = format!("{}.c", program.stem);
    let write = |path: PathBuf, text: &str, what: &str| {
        std::fs::write(path, text).map_err(|source| CBuildError::Io {
            what: format!("writing {what}"),
            source,
        })
    };
    write(dir.join("lull.h"), LULL_H, "lull.h")?;
    let src = dir.join(&file);
    write(src.clone(), program.source, &file)?;
    let bin = dir.join(program.stem);
    let out = Command::new(cc)
        .args([
            "-std=c11",
            "-D_POSIX_C_SOURCE=200809L",
            program.opt,
            "-Wall",
        ])
        .arg("-I")
        .arg(dir)
        .arg(&src)
        .arg(&lib)
        .args(C_LINK_LIBS)
        .arg("-o")
        .arg(&bin)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                CBuildError::NoCompiler { cc: cc.to_owned() }
            } else {
                CBuildError::Io {
                    what: format!("running {cc}"),
                    source: e,
                }
            }
        })?;
    if !out.status.success() {
        return Err(CBuildError::Compile {
            file,
            status: out.status,
            lib,
            stderr: String::from_utf8_lossy(&out.stderr).trim_end().to_owned(),
        });
    }
    Ok(bin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_archive_is_named_before_anything_is_written() {
        let dir = lull_os::fileout::ScratchDir::new("lull-c-client-test").unwrap();
        let err = build(
            dir.path(),
            Path::new("/nonexistent"),
            "cc",
            CProgram {
                stem: "x",
                source: "int main(void) { return 0; }",
                opt: "-O1",
            },
        )
        .unwrap_err();
        assert!(matches!(err, CBuildError::NoStaticLib { .. }), "{err}");
        assert!(!dir.path().join("lull.h").exists());
    }
}
