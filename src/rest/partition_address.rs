//! The partition a REST path segment names (docs/rest-and-metrics.md,
//! "Partition addresses"): the plain name, as YuniKorn's, or `[rmID]name`
//! for a partition of any RM, so that two RMs' partitions of one name can
//! each be reached.

use super::snapshot::{PartitionSnap, Snapshot};

/// The partition `segment` (percent-decoded) names, `None` when none does.
/// A plain name is the first partition of that name (with one RM, the
/// only one). `[rmID]name` must match exactly one partition: an RM id
/// holding `]` can make the form ambiguous, and then it names none.
pub(super) fn resolve<'a>(snap: &'a Snapshot, segment: &str) -> Option<&'a PartitionSnap> {
    // A configured name never starts with `[`, so the forms cannot clash.
    let Some(rest) = segment.strip_prefix('[') else {
        return snap.partitions.iter().find(|p| p.name == segment);
    };
    let mut hits = snap.partitions.iter().filter(|p| {
        rest.strip_prefix(p.rm_id.as_str())
            .and_then(|r| r.strip_prefix(']'))
            == Some(p.name.as_str())
    });
    let first = hits.next()?;
    hits.next().is_none().then_some(first)
}
