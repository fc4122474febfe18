//! Scheduler options: the decoded form of `sicore.v1.SchedulerOptions`.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::Error;
use crate::events::EventTypes;
use crate::proto::sicore::v1::SchedulerOptions;

/// Longest sleep of an idle scheduling loop (YuniKorn v1.0's cadence).
pub const DEFAULT_SCHEDULING_INTERVAL: Duration = Duration::from_millis(100);
/// Period of event flushes (the reference's publisher period).
pub const DEFAULT_EVENT_FLUSH_INTERVAL: Duration = Duration::from_secs(2);
/// Age an ask must reach before it may reserve a node.
pub const DEFAULT_RESERVATION_DELAY: Duration = Duration::from_secs(2);
/// `Starting` -> `Running` without a second allocation.
pub const DEFAULT_APP_START_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// `Completing` -> `Completed` when nothing new arrives.
pub const DEFAULT_APP_COMPLETING_TIMEOUT: Duration = Duration::from_secs(30);
/// `Completed`/`Failed` -> `Expired`.
pub const DEFAULT_APP_TERMINATED_TIMEOUT: Duration = Duration::from_secs(3 * 24 * 3600);
/// Default placeholder timeout when the application sets none (spec 6.4).
pub const DEFAULT_PLACEHOLDER_TIMEOUT: Duration = Duration::from_secs(15 * 60);
/// Period of the outstanding-request check.
pub const DEFAULT_OUTSTANDING_CHECK_INTERVAL: Duration = Duration::from_secs(1);
/// Most waiting asks one RM may hold (`SchedulerOptions.max_asks_per_rm`):
/// the largest benchmark shape (500,000 asks) fits; beyond it one RM's
/// backlog would cost every scheduling pass more than the others can wait.
pub const DEFAULT_MAX_ASKS_PER_RM: u64 = 500_000;
/// Period of the queue cleaner (the reference's partition manager, spec 3.7).
pub const DEFAULT_QUEUE_CLEANER_INTERVAL: Duration = Duration::from_secs(10);

/// Options of one scheduler instance, with defaults applied.
#[derive(Debug, Clone)]
pub struct Options {
    /// Directory of `<policyGroup>.yaml` files; empty means the reference's search.
    pub config_dir: String,
    /// In-memory configuration text per policy group; wins over files.
    pub policy_configs: BTreeMap<String, String>,
    /// Longest sleep of an idle scheduling loop.
    pub scheduling_interval: Duration,
    /// Period of event flushes to `SendEvent`.
    pub event_flush_interval: Duration,
    /// Most verbose level the library logs at, set for the whole process
    /// when the scheduler starts (through the C ABI); `None` (the option
    /// left empty) leaves the level in force alone, so a new scheduler does
    /// not undo what another scheduler's RM (SI v1.x `log.level`) or the
    /// REST service set. A fresh process starts at info.
    pub log_level: Option<log::LevelFilter>,
    /// Age an ask must reach before it may reserve a node.
    pub reservation_delay: Duration,
    /// Reservations switched off.
    pub disable_reservation: bool,
    /// `Starting` -> `Running` timeout.
    pub app_start_timeout: Duration,
    /// `Completing` -> `Completed` timeout.
    pub app_completing_timeout: Duration,
    /// `Completed`/`Failed` -> `Expired` timeout.
    pub app_terminated_timeout: Duration,
    /// Event system switched off.
    pub disable_events: bool,
    /// Period of the outstanding-request check.
    pub outstanding_check_interval: Duration,
    /// Gang placeholder timeout for applications that set none.
    pub placeholder_timeout: Duration,
    /// Record types handed to `SendEvent`; default `REQUEST` and `NODE`.
    pub event_types: EventTypes,
    /// `host:port` of the REST service; empty: none.
    pub rest_address: String,
    /// Access control and limits of the REST service, checked when it
    /// starts (see `rest::settings`).
    pub rest: crate::proto::sicore::v1::RestOptions,
    /// Most waiting asks one RM may hold across its partitions.
    pub max_asks_per_rm: u64,
    /// Period of the queue cleaner (removes empty draining queues).
    pub queue_cleaner_interval: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options::from_proto(SchedulerOptions::default()).expect("defaults are valid")
    }
}

fn millis_or(value: u64, default: Duration) -> Duration {
    if value == 0 {
        default
    } else {
        Duration::from_millis(value)
    }
}

/// Parses a log level name as the contract spells them.
pub fn parse_log_level(level: &str) -> Result<log::LevelFilter, Error> {
    match level.to_ascii_lowercase().as_str() {
        "" | "info" => Ok(log::LevelFilter::Info),
        "error" => Ok(log::LevelFilter::Error),
        "warn" | "warning" => Ok(log::LevelFilter::Warn),
        "debug" => Ok(log::LevelFilter::Debug),
        "trace" => Ok(log::LevelFilter::Trace),
        "off" => Ok(log::LevelFilter::Off),
        other => Err(Error::invalid(format!(
            "SchedulerOptions.log_level: unknown level '{other}', expected error|warn|info|debug|trace"
        ))),
    }
}

/// The reference's switch: `DISABLE_RESERVATION` set to a true value.
fn reservation_disabled_by_env() -> bool {
    std::env::var("DISABLE_RESERVATION")
        .is_ok_and(|v| matches!(v.as_str(), "1" | "t" | "T" | "true" | "TRUE" | "True"))
}

impl Options {
    /// Applies defaults to a decoded `SchedulerOptions`.
    pub fn from_proto(p: SchedulerOptions) -> Result<Self, Error> {
        // A key no registration could name would be dead text.
        for group in p.policy_configs.keys() {
            crate::config::check_policy_group(group)
                .map_err(|e| Error::invalid(format!("SchedulerOptions.policy_configs: {e}")))?;
        }
        Ok(Options {
            config_dir: p.config_dir,
            policy_configs: p.policy_configs,
            scheduling_interval: millis_or(p.scheduling_interval_ms, DEFAULT_SCHEDULING_INTERVAL),
            event_flush_interval: millis_or(
                p.event_flush_interval_ms,
                DEFAULT_EVENT_FLUSH_INTERVAL,
            ),
            log_level: if p.log_level.is_empty() {
                None
            } else {
                Some(parse_log_level(&p.log_level)?)
            },
            reservation_delay: p
                .reservation_delay_ms
                .map_or(DEFAULT_RESERVATION_DELAY, Duration::from_millis),
            disable_reservation: p.disable_reservation || reservation_disabled_by_env(),
            app_start_timeout: p
                .app_start_timeout_ms
                .map_or(DEFAULT_APP_START_TIMEOUT, Duration::from_millis),
            app_completing_timeout: p
                .app_completing_timeout_ms
                .map_or(DEFAULT_APP_COMPLETING_TIMEOUT, Duration::from_millis),
            app_terminated_timeout: p
                .app_terminated_timeout_ms
                .map_or(DEFAULT_APP_TERMINATED_TIMEOUT, Duration::from_millis),
            disable_events: p.disable_events,
            outstanding_check_interval: millis_or(
                p.outstanding_check_interval_ms,
                DEFAULT_OUTSTANDING_CHECK_INTERVAL,
            ),
            placeholder_timeout: match p.placeholder_timeout_ms {
                None => DEFAULT_PLACEHOLDER_TIMEOUT,
                Some(0) => {
                    return Err(Error::invalid(
                        "SchedulerOptions.placeholder_timeout_ms: must be positive (unset means 15 minutes)",
                    ))
                }
                Some(ms) => Duration::from_millis(ms),
            },
            event_types: EventTypes::parse(&p.event_types).map_err(Error::invalid)?,
            rest_address: p.rest_address.trim().to_string(),
            rest: p.rest.unwrap_or_default(),
            max_asks_per_rm: match p.max_asks_per_rm {
                None => DEFAULT_MAX_ASKS_PER_RM,
                Some(0) => {
                    return Err(Error::invalid(
                        "SchedulerOptions.max_asks_per_rm: must be positive (unset means 500000)",
                    ))
                }
                Some(n) => n,
            },
            queue_cleaner_interval: match p.queue_cleaner_interval_ms {
                None => DEFAULT_QUEUE_CLEANER_INTERVAL,
                Some(0) => {
                    return Err(Error::invalid(
                        "SchedulerOptions.queue_cleaner_interval_ms: must be positive (unset means 10 seconds)",
                    ))
                }
                Some(ms) => Duration::from_millis(ms),
            },
        })
    }
}
