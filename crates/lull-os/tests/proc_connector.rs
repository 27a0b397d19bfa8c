//! The process events connector against the kernel's own view: a child forked here is seen
//! forking and exiting with the pid the kernel gave it. Needs root (`CAP_NET_ADMIN`); skipped
//! with a message otherwise.

use lull_os::proc_connector::{ConnectorError, ProcConnector, ProcEvent};
use lull_os::sys;

/// Blocks until the connector's socket has data (poll with no timeout: the kernel's events are
/// what the test waits for).
fn wait_readable(fd: std::os::fd::RawFd) {
    sys::poll_readable(&[fd], None, &mut [false]).unwrap();
}

#[test]
fn a_child_is_seen_forking_and_exiting() {
    let mut pc = match ProcConnector::open() {
        Ok(pc) => pc,
        Err(e @ ConnectorError::NotPermitted(_)) => {
            assert_ne!(sys::geteuid(), 0, "root was refused: {e}");
            lull_testkit::skip(&e);
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let me = std::process::id() as i32;
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id() as i32;
    child.wait().unwrap();
    let (mut forked, mut exited) = (None, false);
    while !exited {
        wait_readable(pc.raw());
        pc.drain(|ev| match ev {
            ProcEvent::Fork {
                child_pid,
                child_tgid,
                parent_tgid,
                ..
            } if child_pid == pid => forked = Some((child_tgid, parent_tgid)),
            ProcEvent::Exit { pid: p, tgid, .. } if p == pid => {
                assert_eq!(tgid, pid);
                exited = true;
            }
            _ => {}
        })
        .unwrap();
    }
    // A new process is its own thread group, and its parent is this test's process.
    assert_eq!(forked, Some((pid, me)));
    let c = pc.counters();
    assert!(c.forks >= 1 && c.exits >= 1 && c.malformed == 0, "{c:?}");
}

#[test]
fn a_new_thread_names_its_process() {
    let mut pc = match ProcConnector::open() {
        Ok(pc) => pc,
        Err(e) => {
            lull_testkit::skip(&e);
            return;
        }
    };
    let me = std::process::id() as i32;
    let tid = std::thread::spawn(sys::gettid).join().unwrap();
    let mut seen = None;
    while seen.is_none() {
        wait_readable(pc.raw());
        pc.drain(|ev| {
            if let ProcEvent::Fork {
                child_pid,
                child_tgid,
                ..
            } = ev
            {
                if child_pid == tid {
                    seen = Some(child_tgid);
                }
            }
        })
        .unwrap();
    }
    assert_eq!(seen, Some(me));
}
