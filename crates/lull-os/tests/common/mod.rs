//! What the guest test files share.

/// `KEY_A` (`linux/input-event-codes.h`).
pub const KEY_A: u16 = 30;

/// Refuses to run outside the lab guest: there, uinput, evdev, sched_ext, BTF and kprobes are
/// known to be present, and a failure means a bug; anywhere else the test would only test the
/// host's setup.
pub fn require_guest() {
    assert!(
        std::env::var_os("LULL_GUEST").is_some(),
        "this test runs only in the lab guest (LULL_GUEST is unset here): run it with \
         `lull lab vm --tests`, not `cargo test -- --ignored` on the host"
    );
}
