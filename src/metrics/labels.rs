//! Label sets that grow with the deployment (docs/rest-and-metrics.md,
//! "Labels with several RMs or partitions"). With one RM and one partition
//! every series carries YuniKorn's labels only. With more, the per-queue
//! gauges gain `partition`, and every partition-scoped series gains `rm`
//! when partitions of more than one RM exist, so that no two series
//! collide.

use prometheus_client::encoding::{EncodeLabelSet, LabelSetEncoder};

/// Encodes the pairs whose value is present, in order.
fn encode_present(
    pairs: &[(&str, Option<&str>)],
    encoder: &mut LabelSetEncoder,
) -> Result<(), std::fmt::Error> {
    let present: Vec<(&str, &str)> = pairs
        .iter()
        .filter_map(|(k, v)| Some((*k, (*v)?)))
        .collect();
    present.encode(encoder)
}

/// Labels of a per-user usage gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct UserLabel {
    /// Partition name (plain, as configured).
    pub partition: String,
    /// The owning RM, when partitions of several RMs exist.
    pub rm: Option<String>,
    /// User name.
    pub user: String,
    /// Queue path of the level.
    pub queue: String,
    /// Resource type.
    pub resource: String,
}

impl EncodeLabelSet for UserLabel {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        encode_present(
            &[
                ("partition", Some(&self.partition)),
                ("rm", self.rm.as_deref()),
                ("user", Some(&self.user)),
                ("queue", Some(&self.queue)),
                ("resource", Some(&self.resource)),
            ],
            encoder,
        )
    }
}

/// Labels of a per-group usage gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub struct GroupLabel {
    /// Partition name (plain, as configured).
    pub partition: String,
    /// The owning RM, when partitions of several RMs exist.
    pub rm: Option<String>,
    /// Group name (`*` for the wildcard group).
    pub group: String,
    /// Queue path of the level.
    pub queue: String,
    /// Resource type.
    pub resource: String,
}

impl EncodeLabelSet for GroupLabel {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        encode_present(
            &[
                ("partition", Some(&self.partition)),
                ("rm", self.rm.as_deref()),
                ("group", Some(&self.group)),
                ("queue", Some(&self.queue)),
                ("resource", Some(&self.resource)),
            ],
            encoder,
        )
    }
}

/// Labels of a preemption outcome counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(super) struct PreemptionLabel {
    pub partition: String,
    pub rm: Option<String>,
    pub result: String,
}

impl EncodeLabelSet for PreemptionLabel {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        encode_present(
            &[
                ("partition", Some(&self.partition)),
                ("rm", self.rm.as_deref()),
                ("result", Some(&self.result)),
            ],
            encoder,
        )
    }
}

/// Labels of a per-partition counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(super) struct PartitionLabel {
    pub partition: String,
    pub rm: Option<String>,
}

impl EncodeLabelSet for PartitionLabel {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        encode_present(
            &[
                ("partition", Some(&self.partition)),
                ("rm", self.rm.as_deref()),
            ],
            encoder,
        )
    }
}

/// Which queue a per-queue gauge describes: its path, and its partition
/// and RM when the scheduler has more than one of them.
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, PartialOrd, Ord)]
pub struct QueueKey {
    /// Partition name, when there are several partitions.
    pub partition: Option<String>,
    /// The owning RM, when partitions of several RMs exist.
    pub rm: Option<String>,
    /// Queue path.
    pub path: String,
}

impl From<&str> for QueueKey {
    fn from(path: &str) -> Self {
        QueueKey {
            path: path.to_string(),
            ..QueueKey::default()
        }
    }
}

/// The labels of one per-queue gauge value.
pub(super) struct QueueLabel<'a> {
    pub key: &'a QueueKey,
    pub resource: &'a str,
}

impl EncodeLabelSet for QueueLabel<'_> {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        encode_present(
            &[
                ("partition", self.key.partition.as_deref()),
                ("rm", self.key.rm.as_deref()),
                ("resource", Some(self.resource)),
            ],
            encoder,
        )
    }
}
