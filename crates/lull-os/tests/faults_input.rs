//! The bounded reader under hostile paths: a FIFO with no writer is refused at once (not waited
//! on), a sparse file past the bound is refused before a byte is read, a FIFO given as an evdev
//! source is accepted (a pipe of records is a valid source).

use std::path::PathBuf;
use std::process::Command;

use lull_os::fileout::ScratchDir;
use lull_os::input_file::{open_event_source, read_bounded, InputKind, ReadError, TRACE};

fn scratch(case: &str) -> ScratchDir {
    ScratchDir::new(&format!("lull-os-faults-{case}")).unwrap()
}

fn mkfifo(dir: &ScratchDir) -> PathBuf {
    let p = dir.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&p).status().unwrap().success());
    p
}

#[test]
fn a_fifo_without_a_writer_is_refused_not_waited_on() {
    let dir = scratch("fifo");
    let fifo = mkfifo(&dir);
    let e = read_bounded(&fifo, TRACE).unwrap_err();
    assert!(
        matches!(
            e,
            ReadError::NotRegular {
                found: "a FIFO",
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(e.path(), fifo);
}

#[test]
fn a_sparse_file_past_the_bound_is_refused_by_its_size() {
    let dir = scratch("sparse");
    let p = dir.path().join("huge.trace");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(TRACE.max_bytes + 1).unwrap();
    let e = read_bounded(&p, TRACE).unwrap_err();
    assert!(
        matches!(e, ReadError::TooLarge { size_bytes, max_bytes, .. }
            if size_bytes == TRACE.max_bytes + 1 && max_bytes == TRACE.max_bytes),
        "{e}"
    );
    let small = InputKind {
        what: "spec",
        max_bytes: 0,
    };
    std::fs::write(&p, b"").unwrap();
    assert_eq!(read_bounded(&p, small).unwrap(), b"");
}

#[test]
fn a_fifo_is_a_valid_event_source() {
    let dir = scratch("evdev-fifo");
    let fifo = mkfifo(&dir);
    open_event_source(&fifo).unwrap();
}
