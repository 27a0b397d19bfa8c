//! rt-app's per-thread log files: one line per period (one pass over a phase's events).

use std::fmt::Write as _;

/// One logged period, in rt-app's columns.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PeriodRecord {
    /// `idx`: the thread's index.
    pub index: u32,
    /// `perf`: loops of the busy function run.
    pub perf: u64,
    /// `run`: wall time spent in `run`/`runtime` events, µs.
    pub run_us: u64,
    /// `period`: wall time of the whole pass, µs.
    pub period_us: u64,
    /// `start`, `end`: absolute `CLOCK_MONOTONIC` times of the pass, µs.
    pub start_us: u64,
    pub end_us: u64,
    /// `rel_st`: start relative to the start of the use case, µs.
    pub rel_start_us: u64,
    /// `slack`: time left before the last timer's expiry when the thread reached it, µs
    /// (negative: an overrun).
    pub slack_us: i64,
    /// `c_duration`: configured `run`/`runtime` µs of the pass.
    pub c_duration_us: u64,
    /// `c_period`: configured timer periods of the pass, µs.
    pub c_period_us: u64,
    /// `wu_lat`: wake-up latency after the pass's timers, µs.
    pub wu_lat_us: u64,
}

/// The column header rt-app writes as the second line of every log.
pub const COLUMNS_HEADER: &str = "#idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat";
/// Columns of a data line.
pub const COLUMNS: usize = 11;
/// Column widths of a data line, rt-app's `log_timing()` format
/// `"%4d %8lu %8lu %8lu %15llu %15llu %15llu %10ld %10lu %10lu %10lu"`.
pub const COLUMN_WIDTHS: [usize; COLUMNS] = [4, 8, 8, 8, 15, 15, 15, 10, 10, 10, 10];

/// Why a log file was rejected.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum LogError {
    /// `line` is 1-based.
    #[error("line {line}: {reason}")]
    BadLine { line: usize, reason: Box<LineError> },
}

/// What is wrong with one line of a per-thread log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("expected {COLUMNS} columns, found {0}")]
    Columns(usize),
    /// `column` is 1-based.
    #[error("column {column}: {text:?} is not a non-negative integer")]
    NotCount { column: usize, text: String },
    #[error("column 1: {0:?} is not a thread index")]
    NotIndex(String),
    #[error("column 8: {0:?} is not an integer")]
    NotSlack(String),
}

/// The first header line rt-app writes for a `SCHED_OTHER` thread of this nice value.
#[must_use]
pub fn policy_line(nice: i8) -> String {
    format!("# Policy : SCHED_OTHER priority : {nice}")
}

/// Parses an rt-app log file: lines starting with `#` are headers, every other line is one
/// period of exactly [`COLUMNS`] integers (only `slack` may be negative). Blank lines are errors
/// (rt-app writes none).
///
/// # Errors
/// A [`LogError`] for the first malformed line.
pub fn parse_log(text: &str) -> Result<Vec<PeriodRecord>, LogError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') {
            continue;
        }
        out.push(parse_line(line).map_err(|reason| LogError::BadLine {
            line: i + 1,
            reason: Box::new(reason),
        })?);
    }
    Ok(out)
}

fn parse_line(line: &str) -> Result<PeriodRecord, LineError> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.len() != COLUMNS {
        return Err(LineError::Columns(fields.len()));
    }
    let u = |i: usize| -> Result<u64, LineError> {
        fields[i].parse::<u64>().map_err(|_| LineError::NotCount {
            column: i + 1,
            text: fields[i].to_owned(),
        })
    };
    let index = fields[0]
        .parse::<u32>()
        .map_err(|_| LineError::NotIndex(fields[0].to_owned()))?;
    let slack_us = fields[7]
        .parse::<i64>()
        .map_err(|_| LineError::NotSlack(fields[7].to_owned()))?;
    Ok(PeriodRecord {
        index,
        perf: u(1)?,
        run_us: u(2)?,
        period_us: u(3)?,
        start_us: u(4)?,
        end_us: u(5)?,
        rel_start_us: u(6)?,
        slack_us,
        c_duration_us: u(8)?,
        c_period_us: u(9)?,
        wu_lat_us: u(10)?,
    })
}

/// A log file in rt-app's layout: `policy_line` (see [`policy_line`]; `# ` is put in front when
/// it does not start with `#`, and line breaks become spaces), [`COLUMNS_HEADER`], then one
/// line per record in [`COLUMN_WIDTHS`]. [`parse_log`] reads it back into `records`.
#[must_use]
pub fn write_log(records: &[PeriodRecord], policy_line: &str) -> String {
    let mut out = String::new();
    if !policy_line.starts_with('#') {
        out.push_str("# ");
    }
    out.push_str(&policy_line.replace(['\n', '\r'], " "));
    out.push('\n');
    out.push_str(COLUMNS_HEADER);
    out.push('\n');
    for r in records {
        let w = COLUMN_WIDTHS;
        let _ = writeln!(
            out,
            "{:>w0$} {:>w1$} {:>w2$} {:>w3$} {:>w4$} {:>w5$} {:>w6$} {:>w7$} {:>w8$} {:>w9$} {:>w10$}",
            r.index,
            r.perf,
            r.run_us,
            r.period_us,
            r.start_us,
            r.end_us,
            r.rel_start_us,
            r.slack_us,
            r.c_duration_us,
            r.c_period_us,
            r.wu_lat_us,
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3],
            w4 = w[4],
            w5 = w[5],
            w6 = w[6],
            w7 = w[7],
            w8 = w[8],
            w9 = w[9],
            w10 = w[10],
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A log written by rt-app 1.0 on this project's test machine.
    const REAL: &str = "# Policy : SCHED_OTHER priority : 0
#idx     perf      run   period           start             end          rel_st      slack c_duration   c_period     wu_lat
   0   105263     2290     4062      6555856098      6555860160            4515       1659       2000       8000         86
   0      100       14      100      6882244991      6882245092             161        -13         10        100          0
";

    fn record() -> PeriodRecord {
        PeriodRecord {
            index: 0,
            perf: 105_263,
            run_us: 2290,
            period_us: 4062,
            start_us: 6_555_856_098,
            end_us: 6_555_860_160,
            rel_start_us: 4515,
            slack_us: 1659,
            c_duration_us: 2000,
            c_period_us: 8000,
            wu_lat_us: 86,
        }
    }

    #[test]
    fn reads_a_real_log_and_writes_it_back_byte_for_byte() {
        let records = parse_log(REAL).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0], record());
        assert_eq!(records[1].slack_us, -13);
        assert_eq!(records[1].wu_lat_us, 0);
        assert_eq!(write_log(&records, &policy_line(0)), REAL);
    }

    #[test]
    fn rejects_malformed_lines_by_number() {
        let bad = |text: &str| parse_log(text).unwrap_err();
        let LogError::BadLine { line, reason } = bad("# h\n1 2 3\n");
        assert_eq!(line, 2);
        assert!(reason.to_string().contains("11 columns"), "{reason}");
        let row = "0 1 2 3 4 5 6 -7 8 9 10";
        assert!(parse_log(row).is_ok());
        assert_eq!(
            bad(&format!("{row}\n\n")),
            LogError::BadLine {
                line: 2,
                reason: Box::new(LineError::Columns(0))
            }
        );
        let LogError::BadLine { line, reason } = bad("0 1 2 3 4 5 6 -7 8 -9 10");
        assert_eq!(line, 1);
        assert!(reason.to_string().contains("column 10"), "{reason}");
        let LogError::BadLine { reason, .. } = bad("-1 1 2 3 4 5 6 7 8 9 10");
        assert!(reason.to_string().contains("column 1"), "{reason}");
        let LogError::BadLine { reason, .. } = bad("0 1 2 3 4 5 6 7.5 8 9 10");
        assert!(reason.to_string().contains("column 8"), "{reason}");
        let LogError::BadLine { reason, .. } = bad("0 1 2 3 4 5 6 7 8 9 10 11");
        assert!(reason.to_string().contains("found 12"), "{reason}");
    }

    #[test]
    fn writer_prefixes_a_bare_policy_line() {
        let text = write_log(&[], "Policy : SCHED_OTHER\npriority : 1");
        assert_eq!(
            text,
            format!("# Policy : SCHED_OTHER priority : 1\n{COLUMNS_HEADER}\n")
        );
        assert_eq!(parse_log(&text).unwrap(), vec![]);
    }

    fn any_record() -> impl Strategy<Value = PeriodRecord> {
        (
            any::<u32>(),
            (any::<u64>(), any::<u64>(), any::<u64>()),
            (any::<u64>(), any::<u64>(), any::<u64>()),
            any::<i64>(),
            (any::<u64>(), any::<u64>(), any::<u64>()),
        )
            .prop_map(
                |(
                    index,
                    (perf, run_us, period_us),
                    (start_us, end_us, rel_start_us),
                    slack_us,
                    (c_duration_us, c_period_us, wu_lat_us),
                )| PeriodRecord {
                    index,
                    perf,
                    run_us,
                    period_us,
                    start_us,
                    end_us,
                    rel_start_us,
                    slack_us,
                    c_duration_us,
                    c_period_us,
                    wu_lat_us,
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        #[test]
        fn round_trips(records in proptest::collection::vec(any_record(), 0..20), nice in -20i8..=19) {
            prop_assert_eq!(parse_log(&write_log(&records, &policy_line(nice))).unwrap(), records);
        }

        #[test]
        fn reader_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = parse_log(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn reader_never_panics_on_mutated_logs(
            at in any::<proptest::sample::Index>(),
            byte in any::<u8>(),
            cut in any::<proptest::sample::Index>(),
        ) {
            let mut bytes = REAL.as_bytes().to_vec();
            let i = at.index(bytes.len());
            bytes[i] = byte;
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let _ = parse_log(&text);
            let cut = cut.index(text.len() + 1);
            let _ = parse_log(text.get(..cut).unwrap_or(&text));
        }
    }
}
