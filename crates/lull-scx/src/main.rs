//! `lull-scx`: loads Lull's sched_ext scheduler and runs it until SIGINT or SIGTERM.
//!
//! ```text
//! lull-scx [--c-ms N] [--ucsg [--cpus LITTLE[/BIG]]] [--stats-json PATH]
//! ```
//! `--cpus` gives UCSG's clusters as CPU lists, LITTLE first (`0/1`, `0-3/4-7`), or one cluster
//! (`0-1`); without it they come from the CPUs' `cpu_capacity` (one cluster when all are equal
//! or the kernel offers none).
//! `--ucsg` runs UCSG's sensitivity states and core allocation and holds each thread lulld
//! declared to the CPU UCSG gives it (off by default: docs/scx.md says why).
//! Prints `lull-scx: loaded` on stderr once the kernel runs it; at exit, its counts as JSON (to
//! PATH, or stdout). Exit status 0 after a clean unload, 1 when it could not load or the kernel
//! ended it (the message says why; the kernel's scheduler is back either way), 2 for bad usage.

use std::os::fd::AsFd;
use std::process::ExitCode;

use lull_scx::ucsg::CpuSets;
use lull_scx::{scheduler, ScxOptions};

const USAGE: &str = "usage: lull-scx [--c-ms N] [--ucsg [--cpus LITTLE[/BIG]]] [--stats-json PATH]";

fn usage(msg: &str) -> ExitCode {
    eprintln!("lull-scx: {msg}\n{USAGE}");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut opts = ScxOptions::default();
    let mut stats_path = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--c-ms" => match args.next().and_then(|v| v.parse::<u64>().ok()) {
                Some(ms) if (1..=1_000).contains(&ms) => opts.c_ns = ms * 1_000_000,
                _ => return usage("--c-ms takes a whole number of ms from 1 to 1000"),
            },
            "--cpus" => {
                let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
                match args.next().map(|v| CpuSets::parse(&v, cpus)) {
                    Some(Ok(sets)) => opts.cpu_sets = Some(sets),
                    Some(Err(e)) => return usage(&format!("--cpus: {e}")),
                    None => {
                        return usage("--cpus takes CPU lists, LITTLE/big (e.g. 0/1) or one (0-1)")
                    }
                }
            }
            "--ucsg" => opts.ucsg = true,
            "--stats-json" => match args.next() {
                Some(p) => stats_path = Some(p),
                None => return usage("--stats-json takes a path"),
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return usage(&format!("unknown argument {other:?}")),
        }
    }
    if opts.cpu_sets.is_some() && !opts.ucsg {
        return usage("--cpus gives UCSG's clusters: it needs --ucsg");
    }
    let stop = match scheduler::stop_on_signals() {
        Ok(fd) => fd,
        Err(e) => {
            eprintln!("lull-scx: cannot watch for signals: {e}");
            return ExitCode::FAILURE;
        }
    };
    match scheduler::run(&opts, stop.as_fd(), || eprintln!("lull-scx: loaded")) {
        Ok(stats) => {
            let json = serde_json::to_string(&stats).unwrap_or_default();
            match stats_path {
                Some(p) => {
                    if let Err(e) = std::fs::write(&p, json + "\n") {
                        eprintln!("lull-scx: {p}: {e}");
                    }
                }
                None => println!("{json}"),
            }
            eprintln!("lull-scx: unloaded; the kernel's scheduler is back");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("lull-scx: {e}");
            ExitCode::FAILURE
        }
    }
}
