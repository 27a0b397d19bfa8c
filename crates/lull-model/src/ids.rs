//! Identifiers.

use std::fmt;

/// An application known to the ESM.
///
/// `index` names a slot that may be reused after the app leaves; `generation` tells the holders of
/// a stale id apart from the slot's new owner, so a late message from a departed app can never act
/// on its successor.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct AppId {
    pub index: u32,
    pub generation: u32,
}

impl AppId {
    /// The id of the first app to hold slot `index`: a slot's generation counts from 0.
    #[must_use]
    pub const fn first_in_slot(index: u32) -> AppId {
        AppId {
            index,
            generation: 0,
        }
    }
}

impl fmt::Debug for AppId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "app{}.{}", self.index, self.generation)
    }
}

impl fmt::Display for AppId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// An event handler as the ESM sees it: an opaque number chosen by the application.
///
/// The seed's `esm_register(event, handler)` passes a function pointer into the kernel. Lull's ESM
/// lives outside the application, so the application names its handlers with numbers and keeps the
/// number → function map itself (the client library does this). `None` in a registration plays
/// the seed's NULL handler.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, serde::Serialize, serde::Deserialize,
)]
pub struct HandlerId(pub u32);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_app_id_reads_as_index_and_generation() {
        let a = AppId {
            index: 3,
            generation: 12,
        };
        assert_eq!(a.to_string(), "app3.12");
        assert_eq!(format!("{a:?}"), "app3.12");
    }
}
