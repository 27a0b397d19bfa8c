//! The two names every policy speaks in: a task and a CPU, both numbered by the substrate.

use std::fmt;

/// A schedulable task (a thread), numbered densely from 0 by the substrate that drives the policy
/// (the simulator's thread index, the live daemon's registration order).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub usize);

/// A logical CPU, numbered densely from 0 by the substrate.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CpuId(pub usize);

impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task{}", self.0)
    }
}

impl fmt::Debug for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cpu{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The short forms that policy traces and test failures print (`[task0, cpu3]`).
    #[test]
    fn ids_print_short() {
        assert_eq!(format!("{:?}", [TaskId(0), TaskId(12)]), "[task0, task12]");
        assert_eq!(format!("{:?}", Some(CpuId(3))), "Some(cpu3)");
    }
}
