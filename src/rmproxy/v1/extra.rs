//! The `extraConfig` keys of a v1.8 registration or configuration update
//! that sicore has a knob for; every other key is ignored (logged), as the
//! v1.8 core ignores keys it does not know. The list is in `docs/si-v1.md`.
//!
//! Each map is the RM's whole set, as the v1.8 core's config map is: a key
//! left out of an update returns to its default. A value that cannot be
//! read is logged with its key and treated as left out (the reference
//! logs and uses the default too); the call goes on.
//!
//! Scope: the `event.*` keys are the RM's own (they set its event store
//! only, so two RMs in one scheduler each keep their own); `log.level` is
//! process-wide, as the library log level is, and each change is logged
//! with the rmID that made it. Whatever names a level last wins; a
//! scheduler made later leaves it unless its own `SchedulerOptions.log_level`
//! names one (`Options::log_level`).

use std::collections::BTreeMap;

use crate::events::ring::{MAX_RING_CAPACITY, MAX_STREAMS_LIMIT};
use crate::events::{RmEventSettings, MAX_STORE_CAPACITY};

/// The key of the library log level.
pub const LOG_LEVEL: &str = "log.level";
/// The key that turns the RM's event records on or off.
pub const EVENT_TRACKING: &str = "event.trackingEnabled";
/// The key of the RM's event store bound (distinct objects per flush).
pub const EVENT_REQUEST_CAPACITY: &str = "event.requestCapacity";

/// The key of the REST event history's size (records).
pub const EVENT_RING_CAPACITY: &str = "event.ringBufferCapacity";
/// The key of the most REST event streams at once.
pub const EVENT_MAX_STREAMS: &str = "event.maxStreams";
/// The key of the most REST event streams of one client address.
pub const EVENT_MAX_STREAMS_PER_HOST: &str = "event.maxStreamsPerHost";
/// The key of the most records one `/ws/v1/events/batch` answer carries.
pub const EVENT_REST_RESPONSE_SIZE: &str = "event.RESTResponseSize";

/// Keys the v1.8 core reads that have no sicore counterpart, with why.
const NOT_READ: [(&str, &str); 1] = [(
    "health.checkInterval",
    "sicore runs the health checks on each REST request, with no periodic checker",
)];

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

/// A boolean as Go's `strconv.ParseBool` reads it (the reference's parser).
pub fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// A store capacity: a decimal count from 1 to [`MAX_STORE_CAPACITY`].
pub fn parse_capacity(v: &str) -> Result<usize, String> {
    parse_count(v, MAX_STORE_CAPACITY)
}

/// A decimal count from 1 to `max`.
pub fn parse_count(v: &str, max: usize) -> Result<usize, String> {
    let n: u64 = v
        .parse()
        .map_err(|_| "not a non-negative decimal count".to_string())?;
    if n == 0 {
        return Err("must be positive".to_string());
    }
    usize::try_from(n)
        .ok()
        .filter(|n| *n <= max)
        .ok_or_else(|| format!("above the most sicore allows ({max})"))
}

/// Applies the process-wide keys of RM `rm_id`'s `extraConfig` and returns
/// its own event settings, for the core to apply.
pub fn apply(rm_id: &str, extra: &BTreeMap<String, String>) -> RmEventSettings {
    let mut events = RmEventSettings::default();
    for (key, value) in extra {
        match key.as_str() {
            LOG_LEVEL => match parse_level(value) {
                Some(level) => {
                    if level != crate::loglevel::get() {
                        // Process-wide: say which RM changed it.
                        log::info!(
                            "extraConfig {LOG_LEVEL} of RM {rm_id}: library log level now {level} (process-wide)"
                        );
                    }
                    crate::loglevel::set(level);
                }
                None => log::warn!(
                    "extraConfig {LOG_LEVEL} of RM {rm_id}: unknown level '{value}', ignored"
                ),
            },
            EVENT_TRACKING => match parse_bool(value) {
                Some(on) => events.tracking = Some(on),
                None => log::warn!(
                    "extraConfig {EVENT_TRACKING} of RM {rm_id}: '{value}' is not a boolean, ignored (the default applies)"
                ),
            },
            EVENT_REQUEST_CAPACITY => match parse_capacity(value) {
                Ok(n) => events.request_capacity = Some(n),
                Err(why) => log::warn!(
                    "extraConfig {EVENT_REQUEST_CAPACITY} of RM {rm_id}: '{value}' {why}, ignored (the default applies)"
                ),
            },
            EVENT_RING_CAPACITY | EVENT_REST_RESPONSE_SIZE | EVENT_MAX_STREAMS
            | EVENT_MAX_STREAMS_PER_HOST => {
                let (max, slot) = match key.as_str() {
                    EVENT_RING_CAPACITY => (MAX_RING_CAPACITY, &mut events.ring.capacity),
                    EVENT_REST_RESPONSE_SIZE => {
                        (MAX_RING_CAPACITY, &mut events.ring.rest_response_size)
                    }
                    EVENT_MAX_STREAMS => (MAX_STREAMS_LIMIT, &mut events.ring.max_streams),
                    _ => (MAX_STREAMS_LIMIT, &mut events.ring.max_streams_per_host),
                };
                match parse_count(value, max) {
                    Ok(n) => *slot = Some(n),
                    Err(why) => log::warn!(
                        "extraConfig {key} of RM {rm_id}: '{value}' {why}, ignored (the default applies)"
                    ),
                }
            }
            _ => match NOT_READ.iter().find(|(k, _)| k == key) {
                Some((_, why)) => {
                    log::info!("extraConfig {key} of RM {rm_id} is not read: {why}")
                }
                None => log::debug!("extraConfig key '{key}' of RM {rm_id} is not read by sicore"),
            },
        }
    }
    events
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

    #[test]
    fn event_values_parse_as_the_reference_reads_them() {
        assert_eq!(parse_bool("t"), Some(true));
        assert_eq!(parse_bool("False"), Some(false));
        assert_eq!(parse_bool("yes"), None);
        assert_eq!(parse_bool(" true"), None);
        assert_eq!(parse_capacity("5000"), Ok(5000));
        for bad in [
            "-1",
            "abc",
            "1.5",
            "",
            "0",
            "100001",
            "99999999999999999999999",
        ] {
            assert!(parse_capacity(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_readable_event_keys_are_taken() {
        let extra = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        let got = apply(
            "rm1",
            &extra(&[
                (EVENT_TRACKING, "false"),
                (EVENT_REQUEST_CAPACITY, "10"),
                (EVENT_RING_CAPACITY, "7"),
                (EVENT_MAX_STREAMS, "3"),
                (EVENT_MAX_STREAMS_PER_HOST, "2"),
                (EVENT_REST_RESPONSE_SIZE, "5"),
            ]),
        );
        assert_eq!(
            got,
            RmEventSettings {
                tracking: Some(false),
                request_capacity: Some(10),
                ring: crate::events::ring::RingSettings {
                    capacity: Some(7),
                    max_streams: Some(3),
                    max_streams_per_host: Some(2),
                    rest_response_size: Some(5),
                },
            }
        );
        let bad = apply(
            "rm1",
            &extra(&[
                (EVENT_TRACKING, "off"),
                (EVENT_REQUEST_CAPACITY, "-3"),
                (EVENT_RING_CAPACITY, "0"),
                (EVENT_MAX_STREAMS, "10001"),
                (EVENT_MAX_STREAMS_PER_HOST, "x"),
                (EVENT_REST_RESPONSE_SIZE, "1000001"),
            ]),
        );
        assert_eq!(bad, RmEventSettings::default());
    }
}
