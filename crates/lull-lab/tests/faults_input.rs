//! The lab's input readers (audit logs, ftrace text, traces) go through the bounded reader: a
//! device or a directory is refused with the path named, not read until memory runs out.

use std::path::Path;

use lull_lab::audit::files::{load, InputError};
use lull_lab::live::{load_trace, LiveError};

#[test]
fn audit_inputs_refuse_dev_zero() {
    for ftrace in [false, true] {
        let e = load(Path::new("/dev/zero"), ftrace).unwrap_err();
        assert!(matches!(e, InputError::Read(_)), "{e}");
        assert!(
            e.to_string()
                .ends_with("/dev/zero: is a character device, not a regular file"),
            "{e}"
        );
    }
}

#[test]
fn a_trace_that_is_a_directory_is_refused() {
    let e = load_trace(Path::new("/tmp")).unwrap_err();
    assert!(matches!(e, LiveError::TraceFile(_)), "{e}");
    assert_eq!(
        e.to_string(),
        "trace /tmp: is a directory, not a regular file"
    );
}
