//! The four thread categories of KDS/guiS (seed 000, chapter 5, table 1).

use std::fmt;

/// What job a thread of a GUI application does; guiS decides from it when the thread may run.
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ThreadCategory {
    /// Runs the app's ESM event handlers; may run only while an event has been pushed to it.
    Event,
    /// Draws; may run only while the app's window can be seen.
    Drawing,
    /// Work that matters only while the app is in the foreground.
    Foreground,
    /// Work that always may run (music, downloads, video decoding).
    Background,
}

impl ThreadCategory {
    pub const ALL: [ThreadCategory; 4] = [
        ThreadCategory::Event,
        ThreadCategory::Drawing,
        ThreadCategory::Foreground,
        ThreadCategory::Background,
    ];

    /// The lower-case name used in specs, JSON and on the command line.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ThreadCategory::Event => "event",
            ThreadCategory::Drawing => "drawing",
            ThreadCategory::Foreground => "foreground",
            ThreadCategory::Background => "background",
        }
    }
}

impl fmt::Display for ThreadCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_are_named_as_in_specs() {
        let names: Vec<String> = ThreadCategory::ALL
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(names, ["event", "drawing", "foreground", "background"]);
    }
}
