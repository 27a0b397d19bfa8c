//! The C ABI of `include/lull_ctl.h`, from a C program compiled against the header and linked
//! with the static library, run (as root) on a child process.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use lull_ctl::capi::{
    LullCtlThread, LULL_CTL_ERR_KERNEL_THREAD, LULL_CTL_ERR_NO_PROCESS, LULL_CTL_ERR_NO_THREAD,
    LULL_CTL_ERR_SHORT_BUFFER,
};
use lull_os::sys;
use lull_testkit::c_build;

const STATIC_LIB: &str = "liblull_ctl.a";

#[test]
fn a_c_program_registers_samples_and_sets_a_mask() {
    if sys::geteuid() != 0 {
        lull_testkit::skip("needs root (setting another process's mask)");
        return;
    }
    let Some(lib) = c_build::require(STATIC_LIB) else {
        return;
    };
    let scratch = lull_os::fileout::ScratchDir::new("lull-ctl-c").unwrap();
    let bin = c_build::build(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/sample.c"),
        &lib,
        &["-lpthread", "-ldl", "-lm"],
        &scratch.path().join("sample"),
    );
    // A one-thread process that waits on its standard input.
    let mut cat = Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = cat.id() as i32;
    // The C program reads cat's state: wait until cat is blocked in its read (a cat just
    // spawned may still be starting, state R).
    lull_testkit::wait_until("cat asleep in its read", || {
        lull_os::procfs::sample_thread(pid, pid).is_ok_and(|s| s.state == 'S')
    });
    let before = sys::sched_getaffinity(pid).unwrap();
    let run = Command::new(&bin).arg(pid.to_string()).output().unwrap();
    let _ = std::fs::remove_file(&bin);
    let after = sys::sched_getaffinity(pid).unwrap();
    cat.stdin.as_mut().unwrap().write_all(b"").unwrap();
    drop(cat.stdin.take());
    cat.wait().unwrap();
    assert!(run.status.success(), "{run:?}");
    let text = String::from_utf8_lossy(&run.stdout);
    let want = [
        format!("sizeof={}", std::mem::size_of::<LullCtlThread>()),
        format!("bad_pid={LULL_CTL_ERR_NO_PROCESS}"),
        format!("kthread={LULL_CTL_ERR_KERNEL_THREAD}"),
        "register=0".to_owned(),
        format!("short={LULL_CTL_ERR_SHORT_BUFFER} n=1"),
        "sample=0 n=1".to_owned(),
        format!("thread pid={pid} tid={pid} state=S"),
        "comm=cat".to_owned(),
        "set_mask=0".to_owned(),
        format!("no_thread={LULL_CTL_ERR_NO_THREAD}"),
        "strerror=a kernel thread cannot be registered".to_owned(),
    ];
    for w in want {
        assert!(text.contains(&w), "{w} not in:\n{text}");
    }
    // Closing the handle put the mask back.
    assert_eq!(after, before);
}
