//! Passes that find an ask held for the same reason as before, counted
//! without touching its reason.
//!
//! When nothing fits, every pass tries every waiting ask and mostly finds
//! what the last pass found. Rewriting each ask's boxed [`PendingReason`]
//! (a cache line or more, away from the ask) was the largest part of what
//! explaining costs in such a pass. Instead each distinct cause gets an id
//! ([`CauseIds`]), and the ask keeps, next to its order fields, the id its
//! reason holds and how many passes have found that cause again since
//! ([`ReasonStamp`]). The reason takes those passes in
//! ([`PendingReason::repeat`]) when it is next written or read.

use std::cell::Cell;

use super::{Cause, PendingReason, RECORD_INTERVAL_NS};
use crate::scheduler::FastMap;

/// Ids of causes, equal exactly when the causes are equal (every field,
/// counts included). Ids are never reused: forgetting a cause (the map is
/// bounded) only gives it a new id, which reads as a change once.
#[derive(Debug, Default)]
pub struct CauseIds {
    ids: FastMap<Cause, u64>,
    last: u64,
}

/// Causes remembered at most; past that the map starts again.
const MAX_CAUSES: usize = 16_384;

impl CauseIds {
    /// The id of `cause` (never 0).
    pub fn id_of(&mut self, cause: &Cause) -> u64 {
        if let Some(id) = self.ids.get(cause) {
            return *id;
        }
        if self.ids.len() >= MAX_CAUSES {
            self.ids.clear();
        }
        self.last += 1;
        self.ids.insert(cause.clone(), self.last);
        self.last
    }
}

/// What an ask keeps beside its reason: the id of the cause the reason
/// holds (0: none it may count against), the passes that found it again
/// since the reason was written, the last of them, and when a REQUEST
/// record is next due. Cells: the pass reads the partition shared and
/// counts a pass on the ask it is looking at.
#[derive(Debug, Clone, Default)]
pub struct ReasonStamp {
    id: Cell<u64>,
    repeats: Cell<u32>,
    last_ns: Cell<i64>,
    due_ns: Cell<i64>,
}

impl ReasonStamp {
    /// Counts a pass at `now_ns` that found cause `id` again, when the
    /// reason holds it and (with `records` on) no record is due yet.
    /// `false`: the reason must be written.
    #[inline]
    pub fn repeat(&self, id: u64, now_ns: i64, records: bool) -> bool {
        if self.id.get() != id || id == 0 || (records && now_ns >= self.due_ns.get()) {
            return false;
        }
        self.repeats.set(self.repeats.get().saturating_add(1));
        self.last_ns.set(now_ns);
        true
    }

    /// The reason was written: it holds cause `id` (0: do not count
    /// against it) and its last record was made at `recorded_ns`.
    pub fn written(&self, id: u64, recorded_ns: i64) {
        self.id.set(id);
        self.repeats.set(0);
        self.due_ns
            .set(recorded_ns.saturating_add(RECORD_INTERVAL_NS));
    }

    /// Moves the counted passes into `reason` before it is written.
    pub fn settle(&self, reason: &mut PendingReason) {
        let k = self.repeats.replace(0);
        if k > 0 {
            reason.repeat(k, self.last_ns.get());
        }
    }

    /// `reason` as it reads with the counted passes in.
    pub fn read<'a>(&self, reason: &'a PendingReason) -> std::borrow::Cow<'a, PendingReason> {
        match self.repeats.get() {
            0 => std::borrow::Cow::Borrowed(reason),
            k => {
                let mut r = reason.clone();
                r.repeat(k, self.last_ns.get());
                std::borrow::Cow::Owned(r)
            }
        }
    }
}
