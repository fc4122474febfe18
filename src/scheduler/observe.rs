//! What the core reports to the metrics it is handed.
//!
//! The metrics registry lives above the scheduler (`crate::metrics`) and
//! implements [`CoreMetrics`]; the core calls it once per flush and once
//! per partition pass, never per decision.

use std::collections::BTreeMap;
use std::time::Duration;

use super::outcome::OutMsg;
use super::partition::Partition;
use super::partition_key::PartitionKey;
use crate::events::EventStats;

/// How often the core refreshes the state gauges.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(1);
/// How often it records a history sample (`/ws/v1/history/*`; one a
/// minute, the reference's period).
pub const HISTORY_INTERVAL: Duration = Duration::from_secs(60);

/// The core's side of the metrics.
pub trait CoreMetrics: Send + Sync {
    /// Messages about to be handed to the dispatcher for one RM.
    fn count_messages(&self, _messages: &[OutMsg]) {}
    /// One partition's pass that made allocations took `took`.
    fn observe_scheduling(&self, _took: Duration) {}
    /// The periodic refresh of the state gauges over every partition; with
    /// `history_ns`, also a history sample stamped with that Unix time.
    fn refresh(
        &self,
        _partitions: &BTreeMap<PartitionKey, Partition>,
        _events: EventStats,
        _history_ns: Option<i64>,
    ) {
    }
}

/// Metrics nobody reads (a core built without any).
#[derive(Debug, Default)]
pub struct NoMetrics;

impl CoreMetrics for NoMetrics {}
