//! The state dump: a JSON document for operators and tests, in the spirit
//! of YuniKorn's `/ws/v1/fullstatedump`. It is the published
//! [`Snapshot`](super::snapshot::Snapshot) serialised as it stands, so it
//! and the REST service render one model; the field names are stable and
//! documented in `docs/rest-and-metrics.md` ("State dump").

use super::snapshot::Snapshot;

/// Renders a snapshot as the state dump's JSON.
pub fn render(snapshot: &Snapshot) -> String {
    serde_json::to_string_pretty(snapshot).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// `json` (a rendered dump) with the RMs' own dumps (SI v1
/// `StateDumpPlugin`) under `resourceManagerDumps`, by rmID: the JSON an
/// RM gave, as it gave it, or an error object.
pub fn with_rm_dumps(json: String, parts: Vec<(String, Result<String, String>)>) -> String {
    let mut rms = String::new();
    for (id, dump) in parts {
        let value = match dump {
            Ok(text) => match serde_json::from_str::<serde::de::IgnoredAny>(&text) {
                Ok(_) => text,
                Err(e) => serde_json::json!({ "error": format!("not JSON: {e}") }).to_string(),
            },
            Err(e) => serde_json::json!({ "error": e }).to_string(),
        };
        if !rms.is_empty() {
            rms.push_str(", ");
        }
        rms.push_str(&serde_json::Value::from(id.as_str()).to_string());
        rms.push_str(": ");
        rms.push_str(value.trim());
    }
    let body = json.trim_end();
    if rms.is_empty() || !body.ends_with('}') {
        return json;
    }
    let open = body.len() - 1;
    let empty = body[..open].trim_end().ends_with('{');
    let head = body[..open].trim_end();
    format!(
        "{head}{}\n  \"resourceManagerDumps\": {{{rms}}}\n}}",
        if empty { "" } else { "," }
    )
}
