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

/// A command's failure: the error on standard error after the command's name, and its exit
/// status, 2 for a usage error (a bad argument) and 1 for any other.
pub fn failed(cmd: &str, e: &dyn std::fmt::Display, usage: bool) -> ExitCode {
    eprintln!("{cmd}: {e}");
    if usage {
        ExitCode::from(2)
    } else {
        ExitCode::FAILURE
    }
}

/// Prints a command's report: its pretty JSON with `--json`, else its text (`text` gives it
/// whole, its last newline included).
pub fn print_report<T: serde::Serialize>(
    report: &T,
    json: bool,
    text: impl FnOnce(&T) -> String,
) -> ExitCode {
    if json {
        println!("{}", to_json(report));
    } else {
        print!("{}", text(report));
    }
    ExitCode::SUCCESS
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
    x.map_or_else(|| "-".to_owned(), |v| fixed(v, digits))
}

/// The first line of a modelled experiment's table, its newline included: `EXPERIMENT —
/// DESCRIPTION (modelled on PLATFORM, DETAILS)`, the details being the seed and the run's size.
pub fn modelled_title(h: &lull_sim::ResultHeader, details: &str) -> String {
    format!(
        "{} — {} (modelled on {}, {details})\n",
        h.experiment, h.description, h.platform
    )
}

/// A modelled experiment's table: its [`modelled_title`], then the [`table`] of `rows` under
/// `cols`.
pub fn modelled_table<R, S>(
    h: &lull_sim::ResultHeader,
    details: &str,
    cols: &[Col],
    rows: impl IntoIterator<Item = R>,
) -> String
where
    R: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut t = modelled_title(h, details);
    t.push_str(&table(cols, rows));
    t
}

/// A table cell of a figure with `digits` decimals.
pub fn fixed(x: f64, digits: usize) -> String {
    format!("{x:.digits$}")
}

/// One column of a text table.
#[derive(Clone, Copy, Debug)]
pub enum Col {
    /// Heading and width; heading and cells padded on the right.
    Left(&'static str, usize),
    /// Heading and width; heading and cells padded on the left.
    Right(&'static str, usize),
    /// A `|` between two groups of columns, in the heading and in every row.
    Bar,
}

/// A text table's heading line (no newline): each column's heading at its width, one space
/// between columns.
pub fn head(cols: &[Col]) -> String {
    let heads = cols.iter().map(|c| match *c {
        Col::Left(h, _) | Col::Right(h, _) => h,
        Col::Bar => "|",
    });
    line(cols, heads)
}

/// A text table's row (no newline): the cells in column order, one for each column but a
/// `Col::Bar`, each at its column's width; a longer cell is not cut.
pub fn row<S: AsRef<str>>(cols: &[Col], cells: impl IntoIterator<Item = S>) -> String {
    let mut cells = cells.into_iter();
    let laid: Vec<String> = cols
        .iter()
        .map(|c| match *c {
            Col::Bar => "|".to_owned(),
            _ => {
                let cell = cells.next();
                debug_assert!(cell.is_some(), "a cell for every column");
                cell.map(|c| c.as_ref().to_owned()).unwrap_or_default()
            }
        })
        .collect();
    debug_assert!(cells.next().is_none(), "a column for every cell");
    line(cols, laid.iter())
}

fn line<S: AsRef<str>>(cols: &[Col], cells: impl IntoIterator<Item = S>) -> String {
    let mut out = String::new();
    for (i, (col, cell)) in cols.iter().zip(cells).enumerate() {
        if i > 0 {
            out.push(' ');
        }
        let cell = cell.as_ref();
        match *col {
            Col::Left(_, w) => out.push_str(&format!("{cell:<w$}")),
            Col::Right(_, w) => out.push_str(&format!("{cell:>w$}")),
            Col::Bar => out.push_str(cell),
        }
    }
    out
}

/// A whole text table: the heading line, then a line for each row's cells (each line ending in a
/// newline).
pub fn table<R, S>(cols: &[Col], rows: impl IntoIterator<Item = R>) -> String
where
    R: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut t = head(cols);
    t.push('\n');
    for r in rows {
        t.push_str(&row(cols, r));
        t.push('\n');
    }
    t
}

#[cfg(test)]
mod tests {
    use super::{figure, head, row, spelled, table, Col};

    #[test]
    fn an_absent_figure_is_a_dash() {
        assert_eq!(figure(Some(2.345), 2), "2.35");
        assert_eq!(figure(Some(7.0), 0), "7");
        assert_eq!(figure(None, 1), "-");
    }

    #[test]
    fn a_table_lays_cells_out_at_their_columns_widths() {
        const COLS: [Col; 4] = [
            Col::Left("model", 6),
            Col::Right("mW", 5),
            Col::Bar,
            Col::Right("fps", 4),
        ];
        assert_eq!(head(&COLS), "model     mW |  fps");
        assert_eq!(
            head(&COLS),
            format!("{:<6} {:>5} | {:>4}", "model", "mW", "fps")
        );
        assert_eq!(row(&COLS, ["a", "1.5", "60"]), "a        1.5 |   60");
        // A cell wider than its column is kept whole.
        assert_eq!(
            row(&COLS, ["toolong", "123456", "7"]),
            "toolong 123456 |    7"
        );
        assert_eq!(
            table(&COLS, [["a", "1", "2"], ["b", "3", "4"]]),
            "model     mW |  fps\na          1 |    2\nb          3 |    4\n"
        );
    }

    #[test]
    fn values_are_spelled_as_in_specs() {
        assert_eq!(spelled(&lull_model::Stacking::Foreground), "foreground");
        assert_eq!(spelled(&lull_lab::ucsg_live::Background::ZipFtp), "zip+ftp");
        assert_eq!(spelled(&3u32), "3");
    }
}
