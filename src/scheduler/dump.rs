//! The state dump: a JSON document for operators and tests, in the spirit
//! of YuniKorn's `/ws/v1/fullstatedump`. It is the published
//! [`Snapshot`](super::snapshot::Snapshot) serialised as it stands, so it
//! and the REST service render one model; the field names are stable and
//! documented in the README ("State dump").

use super::snapshot::Snapshot;

/// Renders a snapshot as the state dump's JSON.
pub fn render(snapshot: &Snapshot) -> String {
    serde_json::to_string_pretty(snapshot).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
