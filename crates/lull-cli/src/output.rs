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

/// A report as the pretty JSON `--json` prints (the report types serialise without fail: plain
/// structs, string-keyed maps).
pub fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string_pretty(value).expect("report types serialise")
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

/// A table cell of a figure that may be absent (no sample, no seed figure): the figure with
/// `digits` decimals, or `-`.
pub fn figure(x: Option<f64>, digits: usize) -> String {
    x.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
}

#[cfg(test)]
mod tests {
    use super::{figure, spelled};

    #[test]
    fn an_absent_figure_is_a_dash() {
        assert_eq!(figure(Some(2.345), 2), "2.35");
        assert_eq!(figure(Some(7.0), 0), "7");
        assert_eq!(figure(None, 1), "-");
    }

    #[test]
    fn values_are_spelled_as_in_specs() {
        assert_eq!(spelled(&lull_model::Stacking::Foreground), "foreground");
        assert_eq!(spelled(&lull_lab::ucsg_live::Background::ZipFtp), "zip+ftp");
        assert_eq!(spelled(&3u32), "3");
    }
}
