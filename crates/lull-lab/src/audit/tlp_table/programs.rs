//! The real programs of the live table and the inputs they work on, generated into a scratch
//! directory with fixed content so every run does the same work.
//!
//! Each program is sized to run a few seconds on this 2-CPU machine when it is otherwise idle
//! (docs/controller.md has the measured figures), so the whole table takes about 35 s.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

/// The programs, in the order the table runs them (the idle system first, while the machine is
/// quietest).
pub const PROGRAM_NAMES: [&str; 8] = [
    "idle",
    "make",
    "xz",
    "gzip",
    "python",
    "hackbench",
    "rt-app",
    "tracking",
];

/// Bytes of the text `xz` and `gzip` compress: 16 MiB takes `xz -T0` ~4 s on two CPUs and
/// `gzip` ~1 s here.
pub const TEXT_BYTES: usize = 16 << 20;
/// xz's block size: with its default (3 × the 8 MiB dictionary of preset 6) a 16 MiB input is
/// one block and `-T0` would use one thread; 2 MiB blocks give every CPU work.
pub const XZ_BLOCK: &str = "2MiB";
/// Words per line of the generated text.
const WORDS_PER_LINE: usize = 12;
/// The vocabulary of the generated text: a repetitive but not trivial input, like prose.
const WORDS: [&str; 24] = [
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "thread",
    "core",
    "big",
    "little",
    "scheduler",
    "energy",
    "frame",
    "latency",
    "touch",
    "stylus",
    "display",
    "wakeup",
    "budget",
    "cluster",
    "migrate",
    "toggle",
    "idle",
    "busy",
];
/// Seed of the text's word choice (xorshift64): any fixed non-zero value.
const TEXT_SEED: u64 = 0x5EED_0004;

/// C files of the generated project (plus `main.c`): with [`C_FUNCTIONS`] functions each,
/// `make -j2` takes a few seconds at `-O2` here.
pub const C_FILES: usize = 32;
/// Functions per C file.
pub const C_FUNCTIONS: usize = 24;

/// The Python program: integer arithmetic in the interpreter loop, one thread; 16 million steps
/// take ~2 s here.
pub const PYTHON_SCRIPT: &str =
    "n = 0\nfor i in range(16_000_000):\n    n = (n * 31 + i * i) % 1_000_003\nprint(n)\n";

/// hackbench (rt-tests) in its default mode (processes talking over sockets): 4 groups of 20
/// senders and 20 receivers, 1000 messages each — ~2 s here, 160 tasks.
pub const HACKBENCH_ARGS: [&str; 4] = ["-g", "4", "-l", "1000"];

/// rt-app's fixed calibration, ns per loop: the loop time measured here (docs/validation.md,
/// 16–20 ns), so a `run` lasts about as long as it says and rt-app skips its 5 s calibration.
pub const RTAPP_CALIBRATION_NS: u32 = 20;

/// The live tracking app's experiment (seed 000's stylus tracking under Lull's delivery model).
pub const TRACKING_ARGS: [&str; 7] = [
    "live",
    "experiment",
    "--app",
    "tracking-10s",
    "--model",
    "esm-kds-guis",
    "--json",
];

/// The rt-app workload, a phone-like mix: a UI thread and a render thread every 16.7 ms frame
/// (60 Hz; 3 ms and 5 ms of work), and a background worker busy 40 ms in every 120 ms.
#[must_use]
pub fn rtapp_json(seconds: u64) -> String {
    format!(
        r#"{{
  "global": {{ "duration": {seconds}, "default_policy": "SCHED_OTHER", "calibration": {RTAPP_CALIBRATION_NS} }},
  "tasks": {{
    "ui": {{ "loop": -1, "run": 3000, "timer": {{ "ref": "frame", "period": 16667 }} }},
    "render": {{ "loop": -1, "run": 5000, "timer": {{ "ref": "frame2", "period": 16667 }} }},
    "worker": {{ "loop": -1, "run": 40000, "sleep": 80000 }}
  }}
}}
"#
    )
}

/// One program of the table, ready to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    pub name: &'static str,
    /// The command; empty for the idle system (nothing is started).
    pub argv: Vec<String>,
    /// Executables it needs besides `argv[0]` (the compiler under `make`).
    pub needs: Vec<String>,
    /// Length of the idle system's recording, s.
    pub idle_s: u64,
    /// Why it cannot run here even with every executable present.
    pub unavailable: Option<String>,
}

impl Program {
    /// The command as one line, for the table.
    #[must_use]
    pub fn command_line(&self) -> String {
        if self.argv.is_empty() {
            format!("(nothing started, {} s)", self.idle_s)
        } else {
            self.argv.join(" ")
        }
    }
}

/// The Debian package that provides an executable the table runs, for a skip's reason.
#[must_use]
pub fn package_of(exe: &str) -> &'static str {
    match exe {
        "make" => "make",
        "cc" | "gcc" => "gcc",
        "xz" => "xz-utils",
        "gzip" => "gzip",
        "python3" => "python3",
        "hackbench" => "rt-tests",
        "rt-app" => "rt-app",
        "lull-app" | "lull" => "this repository (cargo build -p lull-cli -p lull-apps)",
        _ => "?",
    }
}

/// `exe` itself when it names a path, else its first match on `PATH`.
#[must_use]
pub fn find_executable(exe: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if exe.contains('/') {
        let p = PathBuf::from(exe);
        return runnable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(exe))
        .find(|p| runnable(p))
}

/// The first executable `p` needs that is missing, with the package that has it.
#[must_use]
pub fn missing(p: &Program) -> Option<String> {
    if let Some(why) = &p.unavailable {
        return Some(why.clone());
    }
    p.argv
        .first()
        .into_iter()
        .chain(p.needs.iter())
        .find(|e| find_executable(e).is_none())
        .map(|e| {
            let short = Path::new(e)
                .file_name()
                .map_or(e.as_str(), |n| n.to_str().unwrap_or(e));
            format!("{e} not found (package {})", package_of(short))
        })
}

/// Deterministic text of exactly `bytes` bytes: lines of words from a fixed vocabulary.
#[must_use]
pub fn generated_text(bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes + 64);
    let mut x = TEXT_SEED;
    while out.len() < bytes {
        for w in 0..WORDS_PER_LINE {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if w > 0 {
                out.push(b' ');
            }
            out.extend_from_slice(WORDS[(x % WORDS.len() as u64) as usize].as_bytes());
        }
        out.push(b'\n');
    }
    out.truncate(bytes);
    out
}

/// One generated C file: `C_FUNCTIONS` functions of loops, branches and arithmetic that the
/// optimiser has real work on.
fn c_file(index: usize) -> String {
    let mut s = String::from("#include <stdint.h>\n\n");
    for f in 0..C_FUNCTIONS {
        let k = index * C_FUNCTIONS + f;
        let _ = write!(
            s,
            "uint64_t f{index}_{f}(const uint32_t *v, int n) {{\n\
             \x20   uint64_t acc = {k};\n\
             \x20   for (int i = 0; i < n; i++) {{\n\
             \x20       uint32_t x = v[i] ^ (uint32_t)(acc >> {shift});\n\
             \x20       switch (x % 5) {{\n\
             \x20       case 0: acc += (uint64_t)x * {m1}u; break;\n\
             \x20       case 1: acc ^= acc << {s1}; break;\n\
             \x20       case 2: acc -= x / {d1}u; break;\n\
             \x20       case 3: for (int j = 0; j < (int)(x & 7); j++) acc = acc * 33 + j; break;\n\
             \x20       default: acc = (acc >> 3) | ((uint64_t)x << 29);\n\
             \x20       }}\n\
             \x20   }}\n\
             \x20   return acc;\n\
             }}\n\n",
            shift = k % 31 + 1,
            m1 = 2 * k + 3,
            s1 = k % 13 + 1,
            d1 = k % 7 + 2,
        );
    }
    s
}

/// The generated C project's `Makefile`: one object per file, linked into one program.
const MAKEFILE: &str = "CFLAGS = -O2\n\
OBJS = $(patsubst %.c,%.o,$(wildcard *.c))\n\
prog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n\
%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n";

/// Writes the C project under `dir`.
fn write_c_project(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut main = String::from("#include <stdint.h>\n#include <stdio.h>\n");
    for i in 0..C_FILES {
        std::fs::write(dir.join(format!("unit{i:02}.c")), c_file(i))?;
        let _ = writeln!(main, "uint64_t f{i}_0(const uint32_t *v, int n);");
    }
    main.push_str("int main(void) {\n    uint32_t v[64];\n    for (int i = 0; i < 64; i++) v[i] = (uint32_t)i * 2654435761u;\n    uint64_t s = 0;\n");
    for i in 0..C_FILES {
        let _ = writeln!(main, "    s += f{i}_0(v, 64);");
    }
    main.push_str("    printf(\"%llu\\n\", (unsigned long long)s);\n    return 0;\n}\n");
    std::fs::write(dir.join("main.c"), main)?;
    std::fs::write(dir.join("Makefile"), MAKEFILE)
}

/// What the programs need to know about the run.
#[derive(Debug, Clone)]
pub struct Setup<'a> {
    /// Scratch directory for inputs and outputs (the programs run in it).
    pub dir: &'a Path,
    pub cpus: usize,
    /// Length of the idle recording and of the rt-app workload, s.
    pub seconds: u64,
    /// The `lull` executable the tracking app's experiment runs under.
    pub lull: Option<&'a Path>,
}

/// Builds program `name`, writing its inputs under `setup.dir`.
///
/// # Errors
/// Writing an input file; an unknown name.
pub fn prepare(name: &str, setup: &Setup<'_>) -> io::Result<Program> {
    let own = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let text = setup.dir.join("input.txt");
    let write_text = || -> io::Result<()> {
        if std::fs::metadata(&text).map(|m| m.len()).ok() != Some(TEXT_BYTES as u64) {
            std::fs::write(&text, generated_text(TEXT_BYTES))?;
        }
        Ok(())
    };
    let text_s = text.display().to_string();
    let mut unavailable = None;
    let (name, argv, needs): (&'static str, Vec<String>, Vec<String>) = match name {
        "idle" => ("idle", Vec::new(), Vec::new()),
        "make" => {
            let proj = setup.dir.join("cproject");
            let _ = std::fs::remove_dir_all(&proj);
            write_c_project(&proj)?;
            (
                "make",
                vec![
                    "make".into(),
                    "-s".into(),
                    format!("-j{}", setup.cpus.max(1)),
                    "-C".into(),
                    proj.display().to_string(),
                ],
                own(&["cc"]),
            )
        }
        "xz" => {
            write_text()?;
            (
                "xz",
                vec![
                    "xz".into(),
                    "-T0".into(),
                    format!("--block-size={XZ_BLOCK}"),
                    "-c".into(),
                    text_s,
                ],
                Vec::new(),
            )
        }
        "gzip" => {
            write_text()?;
            (
                "gzip",
                own(&["gzip", "-c"]).into_iter().chain([text_s]).collect(),
                Vec::new(),
            )
        }
        "python" => {
            let path = setup.dir.join("cpu.py");
            std::fs::write(&path, PYTHON_SCRIPT)?;
            (
                "python",
                vec!["python3".into(), path.display().to_string()],
                Vec::new(),
            )
        }
        "hackbench" => (
            "hackbench",
            own(&["hackbench"])
                .into_iter()
                .chain(own(&HACKBENCH_ARGS))
                .collect(),
            Vec::new(),
        ),
        "rt-app" => {
            let path = setup.dir.join("workload.json");
            std::fs::write(&path, rtapp_json(setup.seconds))?;
            (
                "rt-app",
                vec!["rt-app".into(), path.display().to_string()],
                Vec::new(),
            )
        }
        "tracking" => {
            let lull = setup.lull.unwrap_or(Path::new("lull"));
            if setup.lull.is_none() {
                unavailable =
                    Some("the lull executable to run the experiment under is not known".to_owned());
            }
            (
                "tracking",
                std::iter::once(lull.display().to_string())
                    .chain(own(&TRACKING_ARGS))
                    .collect(),
                vec![lull.with_file_name("lull-app").display().to_string()],
            )
        }
        other => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "unknown program {other:?}: expected one of {}",
                    PROGRAM_NAMES.join(", ")
                ),
            ))
        }
    };
    Ok(Program {
        name,
        argv,
        needs,
        idle_s: setup.seconds,
        unavailable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_fixed_and_exactly_sized() {
        let a = generated_text(10_000);
        assert_eq!(a.len(), 10_000);
        assert_eq!(a, generated_text(10_000));
        assert!(a
            .iter()
            .all(|b| b.is_ascii_lowercase() || *b == b' ' || *b == b'\n'));
        // Not one repeated line: the words vary.
        let lines: std::collections::HashSet<&[u8]> = a.split(|b| *b == b'\n').collect();
        assert!(lines.len() > 50);
    }

    #[test]
    fn the_rtapp_workload_is_one_rt_app_reads() {
        let w = lull_workload::rtapp::parse(&rtapp_json(5)).expect("valid rt-app JSON");
        assert_eq!(w.duration_s, Some(5));
        assert_eq!(w.threads().len(), 3);
    }

    #[test]
    fn every_program_prepares_and_a_missing_one_says_which_package() {
        let scratch = lull_os::fileout::ScratchDir::new("lull-tlp-programs").expect("scratch");
        let dir = scratch.path();
        let setup = Setup {
            dir,
            cpus: 2,
            seconds: 3,
            lull: None,
        };
        for n in PROGRAM_NAMES {
            let p = prepare(n, &setup).expect("prepares");
            assert_eq!(p.name, n);
            assert_eq!(p.argv.is_empty(), n == "idle");
        }
        assert_eq!(
            std::fs::read_dir(dir.join("cproject"))
                .expect("project")
                .count(),
            C_FILES + 2
        );
        assert!(prepare("chrome", &setup).is_err());
        let gone = Program {
            name: "xz",
            argv: vec!["no-such-program-here".into()],
            needs: Vec::new(),
            idle_s: 0,
            unavailable: None,
        };
        assert!(missing(&gone)
            .expect("missing")
            .contains("no-such-program-here not found"));
        let tracking = prepare("tracking", &setup).expect("prepares");
        // Without a lull executable the tracking app is reported missing, not run.
        assert!(missing(&tracking).is_some());
    }
}
