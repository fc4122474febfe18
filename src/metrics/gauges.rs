//! The core thread's once-a-second gauge refresh: counts over the live
//! partitions, handed to [`Metrics::refresh`] as plain numbers.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{
    usage_bucket, GroupLabel, HistorySample, Metrics, PreemptionSample, QueueKey, StateSample,
    UserLabel,
};
use crate::events::EventStats;
use crate::scheduler::objects::application::AppState;
use crate::scheduler::observe::CoreMetrics;
use crate::scheduler::outcome::OutMsg;
use crate::scheduler::partition::Partition;
use crate::scheduler::partition_key::PartitionKey;
use crate::scheduler::resource::{name_of, ResId, Resource};

fn pairs(r: &Resource) -> Vec<(String, i64)> {
    r.iter()
        .map(|(id, v)| (name_of(id).to_string(), v))
        .collect()
}

/// Computes the state gauges (and, with `history_ns`, a history sample
/// stamped with that Unix time, read from the core's clock) from the
/// partitions. O(nodes + applications + queues).
pub fn refresh<K>(
    metrics: &Metrics,
    partitions: &BTreeMap<K, Partition>,
    events: EventStats,
    history_ns: Option<i64>,
) {
    let mut sample = StateSample {
        events,
        ..Default::default()
    };
    // By id while counting (no name lookups per node), by name at the end.
    let mut usage: BTreeMap<ResId, [i64; 10]> = BTreeMap::new();
    // Labels beyond YuniKorn's only where series would collide
    // (docs/rest-and-metrics.md): `rm` once two RMs hold partitions,
    // `partition` on the queue gauges once there are two partitions.
    let mut rms = partitions.values().map(|p| p.rm_id());
    let first_rm = rms.next();
    let many_rms = rms.any(|r| Some(r) != first_rm);
    let many_partitions = partitions.len() > 1;
    for p in partitions.values() {
        let rm = many_rms.then(|| p.rm_id().to_string());
        let key = |path: &str| QueueKey {
            partition: many_partitions.then(|| p.name().to_string()),
            rm: rm.clone(),
            path: path.to_string(),
        };
        sample.nodes += p.nodes().len() as i64;
        sample.applications += p.apps().len() as u64;
        sample.containers += p.allocations().len() as u64;
        sample.running_apps += p
            .apps()
            .values()
            .filter(|a| a.state == AppState::Running)
            .count() as i64;
        sample.completed_apps += p
            .finished()
            .iter()
            .filter(|f| f.state == AppState::Completed)
            .count() as i64;
        for n in p.nodes().values() {
            for (id, cap) in n.capacity().iter() {
                if cap > 0 {
                    usage.entry(id).or_default()[usage_bucket(n.allocated().get(id), cap)] += 1;
                }
            }
        }
        if p.ugm().enabled() {
            tracker_gauges(p, rm.as_ref(), &mut sample);
        }
        let book = &p.preempt();
        let c = &book.counters;
        sample.preemption.push(PreemptionSample {
            partition: p.name().to_string(),
            rm: rm.clone(),
            instance: book.instance,
            results: [
                c.successes,
                c.guarantee_check_failed,
                c.no_candidate_node,
                c.rm_refused,
                c.short_of_resources,
            ],
            victims: c.victims,
            attempts_exhausted: c.attempts_exhausted,
        });
        for (id, q) in p.queues().iter() {
            if let Some(r) = book.preempting.get(&id).filter(|r| !r.is_zero()) {
                sample.queue_preempting.push((key(&q.path), pairs(r)));
            }
            if !q.leaf {
                sample.queue_parents.push(key(&q.path));
            }
            if q.leaf {
                sample.queue_usage.push((key(&q.path), pairs(&q.allocated)));
                sample.queue_pending.push((key(&q.path), pairs(&q.pending)));
            }
        }
    }
    sample.node_usage = usage
        .into_iter()
        .map(|(id, v)| (name_of(id).to_string(), v))
        .collect();
    sample.node_usage.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    metrics.refresh(&sample);
    if let Some(timestamp_ns) = history_ns {
        metrics.record_history(HistorySample {
            timestamp_ns,
            applications: sample.applications,
            containers: sample.containers,
        });
    }
}

/// The per-user and per-group usage gauges of a partition under limits:
/// one per tracker, level and resource type.
fn tracker_gauges(p: &Partition, rm: Option<&String>, sample: &mut StateSample) {
    for t in p.ugm().users.iter() {
        // A level lives while an application on its (live) queue is linked.
        for level in t.levels().filter(|l| !l.usage.is_zero()) {
            let queue = p.queues().get(level.queue).path.to_string();
            for (id, v) in level.usage.iter().filter(|(_, v)| *v != 0) {
                sample.user_usage.push((
                    UserLabel {
                        partition: p.name().to_string(),
                        rm: rm.cloned(),
                        user: t.name.to_string(),
                        queue: queue.clone(),
                        resource: name_of(id).to_string(),
                    },
                    v,
                ));
            }
        }
    }
    for t in p.ugm().groups.iter() {
        // A level lives while an application on its (live) queue is linked.
        for level in t.levels().filter(|l| !l.usage.is_zero()) {
            let queue = p.queues().get(level.queue).path.to_string();
            for (id, v) in level.usage.iter().filter(|(_, v)| *v != 0) {
                sample.group_usage.push((
                    GroupLabel {
                        partition: p.name().to_string(),
                        rm: rm.cloned(),
                        group: t.name.to_string(),
                        queue: queue.clone(),
                        resource: name_of(id).to_string(),
                    },
                    v,
                ));
            }
        }
    }
}

impl CoreMetrics for Metrics {
    fn count_messages(&self, messages: &[OutMsg]) {
        Metrics::count_messages(self, messages)
    }

    fn observe_scheduling(&self, took: Duration) {
        Metrics::observe_scheduling(self, took)
    }

    fn refresh(
        &self,
        partitions: &BTreeMap<PartitionKey, Partition>,
        events: EventStats,
        history_ns: Option<i64>,
    ) {
        refresh(self, partitions, events, history_ns)
    }
}
