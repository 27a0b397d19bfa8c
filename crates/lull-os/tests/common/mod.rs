//! What the guest test files share.

/// `KEY_A` (`linux/input-event-codes.h`).
pub const KEY_A: u16 = 30;

pub use lull_testkit::require_guest;
