//! The tasks of one program's process tree, followed through the process events connector
//! ([`lull_os::proc_connector`]): the program's own TLP counts these tasks only.
//!
//! The kernel names a new process's parent as the thread that forked it, and a new thread's as
//! the parent *process* of its thread group (see the connector's module docs), so a thread is
//! recognised by the process it joins (`child_tgid`) and a process by the process that forked
//! it (`parent_tgid`).

use std::collections::HashSet;

use lull_os::proc_connector::ProcEvent;

/// Every task (thread id) of a process tree since its root was started.
#[derive(Debug, Clone, Default)]
pub struct ProcessTree {
    tids: HashSet<u32>,
    tgids: HashSet<u32>,
}

impl ProcessTree {
    /// The tree of the process `root` (its main thread's id is its process id).
    #[must_use]
    pub fn new(root: u32) -> Self {
        ProcessTree {
            tids: HashSet::from([root]),
            tgids: HashSet::from([root]),
        }
    }

    /// Adds the task a fork event creates when it belongs to the tree; other events change
    /// nothing (a task's id stays in the set after it exits: its records still count).
    pub fn on_event(&mut self, ev: ProcEvent) {
        let ProcEvent::Fork {
            parent_tgid,
            child_pid,
            child_tgid,
            ..
        } = ev
        else {
            return;
        };
        let (Ok(parent_tgid), Ok(child_pid), Ok(child_tgid)) = (
            u32::try_from(parent_tgid),
            u32::try_from(child_pid),
            u32::try_from(child_tgid),
        ) else {
            return;
        };
        let new_process = child_pid == child_tgid;
        let joins_tree = self.tgids.contains(&child_tgid);
        let forked_by_tree = new_process && self.tgids.contains(&parent_tgid);
        if joins_tree || forked_by_tree {
            self.tids.insert(child_pid);
            self.tgids.insert(child_tgid);
        }
    }

    /// The thread ids, for [`lull_audit::tlp::TaskFilter::tids`].
    #[must_use]
    pub fn tids(&self) -> &HashSet<u32> {
        &self.tids
    }

    /// Processes in the tree (the root included).
    #[must_use]
    pub fn processes(&self) -> usize {
        self.tgids.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fork(parent_pid: i32, parent_tgid: i32, child_pid: i32, child_tgid: i32) -> ProcEvent {
        ProcEvent::Fork {
            parent_pid,
            parent_tgid,
            child_pid,
            child_tgid,
        }
    }

    #[test]
    fn follows_threads_children_and_grandchildren_but_not_strangers() {
        // 10 is the root; the harness (5) started it.
        let mut t = ProcessTree::new(10);
        // A thread of the root: the kernel names the root's parent process as its parent.
        t.on_event(fork(5, 5, 11, 10));
        // The root forks a child process 20, which starts a thread 21 and forks 30.
        t.on_event(fork(10, 10, 20, 20));
        t.on_event(fork(10, 10, 21, 20));
        t.on_event(fork(20, 20, 30, 30));
        // A thread of the root (11) forks a process: its parent is that thread.
        t.on_event(fork(11, 10, 40, 40));
        // Unrelated: another process forks, another starts a thread, the harness forks.
        t.on_event(fork(99, 99, 100, 100));
        t.on_event(fork(98, 99, 101, 99));
        t.on_event(fork(5, 5, 102, 102));
        t.on_event(ProcEvent::Exit {
            pid: 11,
            tgid: 10,
            exit_code: 0,
        });
        let mut tids: Vec<u32> = t.tids().iter().copied().collect();
        tids.sort_unstable();
        assert_eq!(tids, [10, 11, 20, 21, 30, 40]);
        assert_eq!(t.processes(), 4);
    }

    #[test]
    fn negative_ids_are_ignored() {
        let mut t = ProcessTree::new(10);
        t.on_event(fork(10, 10, -1, -1));
        assert_eq!(t.tids().len(), 1);
    }
}
