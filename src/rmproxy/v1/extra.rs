//! The `extraConfig` keys of a v1.8 registration or configuration update
//! that sicore has a knob for; every other key is ignored (logged at debug
//! level), as the v1.8 core ignores keys it does not know. The list is in
//! `docs/si-v1.md`.

use std::collections::BTreeMap;

/// The key of the library log level.
pub const LOG_LEVEL: &str = "log.level";

/// A log level as the v1.8 configuration spells it: zap's names or
/// numbers (-1 debug, 0 info, 1 warn, 2 and above error), or the names
/// `SchedulerOptions.log_level` takes.
pub fn parse_level(v: &str) -> Option<log::LevelFilter> {
    let v = v.trim();
    match v.to_ascii_lowercase().as_str() {
        "-1" => Some(log::LevelFilter::Debug),
        "0" => Some(log::LevelFilter::Info),
        "1" => Some(log::LevelFilter::Warn),
        "2" | "3" | "4" | "5" | "dpanic" | "panic" | "fatal" => Some(log::LevelFilter::Error),
        _ => crate::options::parse_log_level(v).ok(),
    }
}

/// Applies the keys sicore reads. A value it cannot read is logged and
/// ignored (the rest of the update goes on).
pub fn apply(extra: &BTreeMap<String, String>) {
    for (key, value) in extra {
        match key.as_str() {
            LOG_LEVEL => match parse_level(value) {
                Some(level) => crate::loglevel::set(level),
                None => log::warn!("extraConfig {LOG_LEVEL}: unknown level '{value}', ignored"),
            },
            _ => log::debug!("extraConfig key '{key}' is not read by sicore"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zap_levels_and_names_parse() {
        assert_eq!(parse_level("-1"), Some(log::LevelFilter::Debug));
        assert_eq!(parse_level("WARN"), Some(log::LevelFilter::Warn));
        assert_eq!(parse_level("fatal"), Some(log::LevelFilter::Error));
        assert_eq!(parse_level("loud"), None);
    }
}
