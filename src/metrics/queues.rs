//! The per-queue gauges: one metric name per queue path, as the
//! reference names them, written out at scrape time from the last sample.

use std::collections::{BTreeMap, HashMap, HashSet};

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;

use super::labels::{QueueKey, QueueLabel};
use super::{sanitize, StateSample};

/// The per-queue gauges (one metric name per leaf queue, as the reference
/// names them), written out at scrape time from the last sample. A
/// registered family could never be unregistered, so every dynamic queue
/// ever seen would stay in the registry for the life of the process.
#[derive(Debug, Default)]
pub(super) struct QueueGauges {
    sample: Mutex<QueueSample>,
}

#[derive(Debug, Default)]
struct QueueSample {
    used: Vec<(QueueKey, Vec<(String, i64)>)>,
    pending: Vec<(QueueKey, Vec<(String, i64)>)>,
    preempting: Vec<(QueueKey, Vec<(String, i64)>)>,
    /// The resource types each queue has shown as preempting: shown at 0,
    /// not dropped, once their victims are confirmed, while the queue lives.
    preempting_types: BTreeMap<QueueKey, Vec<String>>,
}

impl Collector for QueueGauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let sample = self.sample.lock();
        let kinds = [
            (&sample.used, "used_resource", "Allocated resources"),
            (&sample.pending, "pending_resource", "Pending resources"),
            (
                &sample.preempting,
                "preempting_resource",
                "Resources of the preemption victims in flight",
            ),
        ];
        for (queues, suffix, help) in kinds {
            // One block per metric name: queues of one path in several
            // partitions share it, told apart by their labels.
            let mut by_name: BTreeMap<String, Vec<_>> = Default::default();
            for (key, values) in queues {
                by_name
                    .entry(format!("{}_{suffix}", queue_metric_name(&key.path)))
                    .or_default()
                    .push((key, values));
            }
            for (name, entries) in by_name {
                let help = format!("{help} of queue {}", entries[0].0.path);
                let mut metric =
                    encoder.encode_descriptor(&name, &help, None, MetricType::Gauge)?;
                for (key, values) in entries {
                    for (resource, v) in values {
                        let label = QueueLabel { key, resource };
                        ConstGauge::new(*v).encode(metric.encode_family(&label)?)?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl QueueGauges {
    /// Takes the queues of the core's refresh sample.
    pub(super) fn update(&self, s: &StateSample) {
        // A queue that is gone (removed, or its partition) is simply not in
        // the next sample.
        let mut queues = self.sample.lock();
        queues.used.clone_from(&s.queue_usage);
        queues.pending.clone_from(&s.queue_pending);
        // Preempting: a queue seen preempting keeps its gauges, at 0 once
        // its victims are confirmed; a queue that is gone shows nothing.
        let now: HashMap<&QueueKey, &Vec<(String, i64)>> =
            s.queue_preempting.iter().map(|(p, v)| (p, v)).collect();
        let known: HashSet<&QueueKey> = s
            .queue_usage
            .iter()
            .map(|(p, _)| p)
            .chain(s.queue_parents.iter())
            .collect();
        queues
            .preempting_types
            .retain(|path, _| known.contains(path) || now.contains_key(path));
        for (path, usage) in &s.queue_preempting {
            let types = queues.preempting_types.entry(path.clone()).or_default();
            for (res, _) in usage {
                if !types.contains(res) {
                    types.push(res.clone());
                }
            }
        }
        let preempting = queues
            .preempting_types
            .iter()
            .map(|(path, types)| {
                let values = types
                    .iter()
                    .map(|t| {
                        let v = now
                            .get(path)
                            .and_then(|u| u.iter().find(|(r, _)| r == t))
                            .map_or(0, |(_, v)| *v);
                        (t.clone(), v)
                    })
                    .collect();
                (path.clone(), values)
            })
            .collect();
        queues.preempting = preempting;
    }
}

/// The reference's per-queue metric name part: the queue path with `.` and
/// `-` (and anything else Prometheus refuses) replaced by `_`.
fn queue_metric_name(path: &str) -> String {
    sanitize(path)
}
