//! The two halves of a live experiment. `collect` runs on this machine — brings the stack up,
//! measures, stops everything — and keeps what it measured, unanalysed, in an artefact that
//! serialises (`experiment::RunArtefact`, `live::LiveArtefact`, `ucsg_live::UcsgArtefact`);
//! `analyse` is pure, reads only the artefact and is tested on saved ones (`testdata/`).

use lulld::seam::SeamReport;

/// One run as collected: the artefact the analysis reads, and the daemon's own reports — a
/// policy's status `S` (guiS's, UCSG's) and the seam's counts — which the report carries as
/// they are, outside the artefact.
#[derive(Debug)]
pub struct Collected<A, S> {
    pub artefact: A,
    pub status: Option<S>,
    pub seam: Option<SeamReport>,
}

/// A saved artefact under `src/` (`testdata/`), for the analyses' tests.
///
/// # Panics
/// The file is missing or is not such an artefact: the test fails, naming it.
#[cfg(test)]
pub(crate) fn saved<A: serde::de::DeserializeOwned>(path_in_src: &str) -> A {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(path_in_src);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
