//! `lull doctor`: what this machine has and lacks, what each lack makes skip, and the remedy.

use std::process::ExitCode;

use clap::Args;
use lull_lab::doctor::{self, Check};

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Print one JSON document instead of the list.
    #[arg(long)]
    json: bool,
}

/// The lab guest's kernel, fetched once into the cache.
fn lab_guest_kernel() -> Check {
    let found = match lull_vm::Cache::locate() {
        Ok(cache) => {
            let kernels = cache.kernels();
            if kernels.is_empty() {
                Err((
                    format!("no kernel in {}", cache.root().display()),
                    "lull lab vm --fetch (about 120 MB downloaded, 18 MB kept)".to_owned(),
                ))
            } else {
                Ok(format!(
                    "{} in {}",
                    kernels.join(", "),
                    cache.root().display()
                ))
            }
        }
        Err(e) => Err((e.to_string(), "set LULL_CACHE_DIR or HOME".to_owned())),
    };
    Check::new(
        "lab-guest kernel",
        "lull lab vm and the lab guest's tests (./test.sh fetches it the first time)",
        found,
    )
}

pub fn run(args: &DoctorArgs) -> ExitCode {
    let mut checks = doctor::checks();
    checks.push(lab_guest_kernel());
    if args.json {
        println!("{}", crate::output::to_json(&checks));
        return ExitCode::SUCCESS;
    }
    for c in &checks {
        let mark = if c.ok { "ok     " } else { "MISSING" };
        println!("{mark} {:<17} {}", c.name, c.detail);
        if !c.ok {
            println!("        {:<17} without it: {}", "", c.needed_by);
            println!("        {:<17} remedy: {}", "", c.remedy);
        }
    }
    let missing = checks.iter().filter(|c| !c.ok).count();
    println!(
        "{} of {} present; what is missing makes the commands above refuse and their tests skip \
         (./test.sh counts the skips)",
        checks.len() - missing,
        checks.len()
    );
    ExitCode::SUCCESS
}
