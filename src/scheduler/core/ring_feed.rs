//! Feeding the REST event history (`events::ring`): every record the core
//! stores for an RM whose events are on also enters the history, with the
//! partition and queue it concerns, found in the core's state when the
//! record is stored (the SI record has no field for either, so the RM's
//! `SendEvent` records are unchanged).

use super::Core;
use crate::events::ring::RingSettings;
use crate::events::{Detail, Record, TYPE_QUEUE, TYPE_USERGROUP};
use crate::proto::si::v1::event_record::Type;
use crate::scheduler::partition::Partition;
use crate::scheduler::partition_key::PartitionKey;

/// The queue path of application `app` of `p`, active or recently ended.
fn app_queue(p: &Partition, app: &str) -> Option<String> {
    if let Some(a) = p.apps().get(app) {
        return p.queues().path_of(a.queue).map(|q| q.to_string());
    }
    p.finished()
        .iter()
        .rev()
        .find(|f| &*f.id == app)
        .map(|f| f.queue.clone())
}

/// The queue `r` concerns in `p`: `Some("")` for a record of `p` that
/// concerns no queue (a node), `None` when `r`'s object is not in `p`.
fn queue_in(p: &Partition, r: &Record) -> Option<String> {
    let b = &r.base;
    match b.r#type {
        t if t == Type::Request as i32 => app_queue(p, &b.group_id),
        t if t == Type::App as i32 => app_queue(p, &b.object_id),
        t if t == Type::Node as i32 => p.nodes().get(&b.object_id).map(|_| String::new()),
        TYPE_QUEUE => p.queues().lookup(&b.object_id).map(|_| b.object_id.clone()),
        TYPE_USERGROUP => match r.structured.as_ref().map(|s| s.detail) {
            // The reference is the application linked.
            Some(Detail::AppLink) => app_queue(p, &b.group_id),
            // The reference is the queue of the usage or limit.
            _ => p.queues().lookup(&b.group_id).map(|_| b.group_id.clone()),
        },
        _ => None,
    }
}

impl Core {
    /// The partition and queue `r` of RM `rm_id` concerns; `hint` is the
    /// partition that made it, when known. Empty when not found (the
    /// object went in the same step); an RM with one partition always
    /// names it.
    fn locate(&self, rm_id: &str, r: &Record, hint: Option<&PartitionKey>) -> (String, String) {
        let keys: Vec<&PartitionKey> = match hint {
            Some(k) => vec![k],
            None => self
                .rms
                .get(rm_id)
                .map(|rm| rm.partitions.iter().collect())
                .unwrap_or_default(),
        };
        for k in &keys {
            if let Some(p) = self.partitions.get(*k) {
                if let Some(q) = queue_in(p, r) {
                    return (p.name().to_string(), q);
                }
            }
        }
        match keys.as_slice() {
            [only] => (only.name.clone(), String::new()),
            _ => (String::new(), String::new()),
        }
    }

    /// Puts the records of RM `rm_id` into the history (those the
    /// history's rate limit admits), in order; returns those that may go
    /// to the RM (all but the ones made for the history alone, which move
    /// into it without a copy).
    pub(super) fn feed_ring(
        &mut self,
        rm_id: &str,
        mut records: Vec<Record>,
        hint: Option<&PartitionKey>,
    ) -> Vec<Record> {
        if records.is_empty() || !self.ring.enabled() {
            records.retain(|r| !r.ring_only);
            return records;
        }
        let now = self.clock.now();
        let mut entries = Vec::with_capacity(records.len());
        let mut for_rm = Vec::with_capacity(records.len());
        for r in records {
            let admitted = self.ring_feed.admit(&r, now);
            match (admitted, r.ring_only) {
                (true, true) => {
                    let (partition, queue) = self.locate(rm_id, &r, hint);
                    entries.push((r, partition, queue));
                }
                (true, false) => {
                    let (partition, queue) = self.locate(rm_id, &r, hint);
                    entries.push((r.clone(), partition, queue));
                    for_rm.push(r);
                }
                (false, true) => {}
                (false, false) => for_rm.push(r),
            }
        }
        self.ring.push_all(entries);
        for_rm
    }

    /// Applies the history's settings of the latest registration or
    /// update (scheduler-wide, as the reference's are).
    pub(super) fn configure_ring(&mut self, settings: RingSettings) {
        self.ring.configure(settings);
        self.sync_ring();
    }

    /// The history is kept while some RM's events are on; with no RM, as
    /// the scheduler's options say.
    pub(super) fn sync_ring(&mut self) {
        let on = if self.rms.is_empty() {
            !self.options.disable_events
        } else {
            !self.events.is_empty()
        };
        self.ring.set_enabled(on);
    }
}
