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

/// A value as it is spelled in specs, flags and JSON (its serialised name: `zip+ftp`, not
/// `ZipFtp`), for user output that must not show Rust's `Debug` text.
pub fn spelled<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(e) => format!("<{e}>"),
    }
}

#[cfg(test)]
mod tests {
    use super::spelled;

    #[test]
    fn values_are_spelled_as_in_specs() {
        assert_eq!(spelled(&lull_model::Stacking::Foreground), "foreground");
        assert_eq!(spelled(&lull_lab::ucsg_live::Background::ZipFtp), "zip+ftp");
        assert_eq!(spelled(&3u32), "3");
    }
}
