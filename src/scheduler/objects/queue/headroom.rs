//! How much more a queue may allocate: its headroom under the maxes of
//! its chain (spec 3.3).

use smallvec::SmallVec;

use super::{QueueId, QueueTree};
use crate::scheduler::resource::Resource;

impl QueueTree {
    /// How much more the queue may allocate (spec 3.3); `None` = unlimited.
    pub fn headroom(&self, id: QueueId) -> Option<Resource> {
        // Root first, then down to `id`: a loop, so depth costs no stack
        // (and, for the usual depths, no allocation on every decision).
        let mut chain: SmallVec<[QueueId; 8]> = SmallVec::new();
        let mut cur = Some(id);
        while let Some(c) = cur {
            chain.push(c);
            cur = self.get(c).parent;
        }
        let mut above: Option<Option<Resource>> = None;
        for &c in chain.iter().rev() {
            let q = self.get(c);
            let own = q.max.as_ref().map(|m| m.sub(&q.allocated));
            above = Some(match (own, above) {
                // root, or no max and unlimited parent.
                (own, None) => own,
                (None, Some(ph)) => ph,
                (Some(own), Some(None)) => Some(own),
                (Some(mut own), Some(Some(ph))) => {
                    // Types the own max does not define come from the parent
                    // (decided on the max, not on `own`: the subtraction above
                    // adds every allocated type to `own`).
                    let max = q.max.as_ref().expect("own max is set");
                    for (t, v) in ph.iter() {
                        if max.lookup(t).is_none() {
                            own.set(t, v);
                        }
                    }
                    Some(own.min(&ph))
                }
            });
        }
        above.flatten()
    }

    /// Whether adding `res` keeps every queue from `id` to root within its max.
    pub fn fits_max_chain(&self, id: QueueId, res: &Resource) -> bool {
        let mut cur = Some(id);
        while let Some(c) = cur {
            let q = self.get(c);
            if let Some(max) = &q.max {
                if !q.allocated.add(res).fits_in_max_undef(max) {
                    return false;
                }
            }
            cur = q.parent;
        }
        true
    }

    /// [`Self::headroom`] written into `out`, whose heap buffers are
    /// reused; `false` when unlimited (`out` is then left as it was). The
    /// pass asks once per leaf it visits, and in the usual tree one queue
    /// of the chain has a max (root's, the cluster's size): a node of more
    /// than four resource types, as the k8shim reports them, would make
    /// that a new heap resource every time.
    pub fn headroom_into(&self, id: QueueId, out: &mut Resource) -> bool {
        let mut with_max = None;
        let mut cur = Some(id);
        while let Some(c) = cur {
            let q = self.get(c);
            if q.max.is_some() {
                if with_max.is_some() {
                    // Several maxes: they combine per type (above).
                    return match self.headroom(id) {
                        Some(h) => {
                            *out = h;
                            true
                        }
                        None => false,
                    };
                }
                with_max = Some(q);
            }
            cur = q.parent;
        }
        let Some(q) = with_max else {
            return false;
        };
        // `max - allocated`, as the walk above makes it for one max.
        out.clone_from(q.max.as_ref().expect("has a max"));
        out.sub_assign(&q.allocated);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::{QueueTree, ROOT};
    use crate::config::{QueueConfig, ResourcesConfig};
    use crate::scheduler::resource::Resource;

    fn queue(name: &str, max: &[(&str, i64)], queues: Vec<QueueConfig>) -> QueueConfig {
        QueueConfig {
            name: name.into(),
            parent: !queues.is_empty(),
            resources: ResourcesConfig {
                guaranteed: None,
                max: (!max.is_empty())
                    .then(|| max.iter().map(|(k, v)| (k.to_string(), *v)).collect()),
            },
            queues,
            ..Default::default()
        }
    }

    fn r(pairs: &[(&str, i64)]) -> Resource {
        Resource::from_pairs(pairs.iter().copied()).unwrap()
    }

    /// The in-place form gives what `headroom` gives, whichever queues of
    /// the chain have a max, into a buffer that held anything before.
    #[test]
    fn headroom_into_agrees_with_headroom() {
        let six = [
            ("memory", 1000),
            ("vcore", 100),
            ("pods", 110),
            ("ephemeral-storage", 5000),
            ("hugepages-1Gi", 0),
            ("hugepages-2Mi", 0),
        ];
        let trees = [
            // No max anywhere.
            queue(
                "root",
                &[],
                vec![queue("p", &[], vec![queue("leaf", &[], vec![])])],
            ),
            // Root's only (the cluster's size), of six types.
            queue(
                "root",
                &six,
                vec![queue("p", &[], vec![queue("leaf", &[], vec![])])],
            ),
            // A parent's only, and the leaf's only.
            queue(
                "root",
                &[],
                vec![queue(
                    "p",
                    &[("memory", 50)],
                    vec![queue("leaf", &[], vec![])],
                )],
            ),
            queue(
                "root",
                &[],
                vec![queue(
                    "p",
                    &[],
                    vec![queue("leaf", &[("vcore", 3)], vec![])],
                )],
            ),
            // Several, each naming other types.
            queue(
                "root",
                &six,
                vec![queue(
                    "p",
                    &[("memory", 50)],
                    vec![queue("leaf", &[("vcore", 3), ("gpu", 1)], vec![])],
                )],
            ),
        ];
        let used = r(&[("memory", 30), ("vcore", 2), ("pods", 1), ("gpu", 1)]);
        for (n, config) in trees.iter().enumerate() {
            let mut tree = QueueTree::from_config(config).unwrap();
            let leaf = tree.lookup("root.p.leaf").unwrap();
            for round in 0..3 {
                for buf in [Resource::new(), r(&six), r(&[("x", 1)])] {
                    let mut out = buf.clone();
                    let limited = tree.headroom_into(leaf, &mut out);
                    match tree.headroom(leaf) {
                        Some(h) => {
                            assert!(limited && out == h, "tree {n}, round {round}: {out} != {h}")
                        }
                        None => assert!(!limited && out == buf, "tree {n}, round {round}"),
                    }
                }
                tree.add_allocated(leaf, &used);
            }
            assert!(
                tree.headroom_into(ROOT, &mut Resource::new()) == tree.headroom(ROOT).is_some()
            );
        }
    }
}
