//! Writing a command's results to standard output.

use std::io::Write as _;
use std::process::ExitCode;

/// Writes `text` to standard output; a closed pipe (`| head`) is not an error.
pub fn emit(text: &str, cmd: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{cmd}: writing the results: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One experiment's printed table and JSON: what every `lull reproduce` section returns.
pub struct Section {
    pub table: String,
    pub json: serde_json::Value,
}
