//! The strict reader of rt-app JSON (the subset in the module docs of [`super`]).

use super::RtApp;

/// Why an rt-app file was rejected.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum RtAppError {
    #[error("not JSON: {0}")]
    Json(String),
}

/// Parses an rt-app workload.
///
/// # Errors
/// A [`RtAppError`] for the first problem found.
pub fn parse(_text: &str) -> Result<RtApp, RtAppError> {
    Err(RtAppError::Json("reader not written yet".into()))
}
