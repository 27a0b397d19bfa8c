//! The feed of lull-scx's facts as a plug-in of the daemon ([`crate::policy`]): it hands the host
//! the writer ([`crate::scx_feed::ScxFeed`], which the seam runs). Apart from [`crate::scx_feed`]
//! so that the plug-in interface can name the writer without the two modules importing each
//! other.

use std::path::Path;

use crate::policy::{FactSource, Installed, Knob, Policy};
use crate::scx_feed::ScxFeed;

/// The feed as a plug-in of the daemon ([`crate::policy`]): it needs the display server's facts
/// and writes lull-scx's facts map; it decides nothing, so it runs beside any seam policy.
#[derive(Debug)]
pub struct ScxFeedPolicy {
    feed: ScxFeed,
}

impl ScxFeedPolicy {
    /// A feed into the map pinned at `path` ([`lull_os::bpf::scx_facts::FACTS_PIN_PATH`]
    /// normally).
    #[must_use]
    pub fn new(path: &Path) -> ScxFeedPolicy {
        ScxFeedPolicy {
            feed: ScxFeed::new(path),
        }
    }
}

impl Policy for ScxFeedPolicy {
    fn name(&self) -> &'static str {
        "scx-feed"
    }

    fn needs(&self) -> Vec<FactSource> {
        vec![FactSource::DisplayServer]
    }

    fn writes(&self) -> Vec<Knob> {
        vec![Knob::ScxFacts]
    }

    fn install(self: Box<Self>) -> Installed {
        Installed {
            scx_feed: Some(self.feed),
            ..Installed::default()
        }
    }
}
