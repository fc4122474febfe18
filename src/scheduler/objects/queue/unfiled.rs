//! Demand taken in now, re-filed once: a request's asks for one queue add
//! to its pending totals one by one, and the chain is re-filed in its
//! parents' orders when the request is in.
//!
//! The totals are exact at once, so quota and overflow checks read the
//! truth; only a queue's place among its siblings (and the pending part of
//! its filed key) waits. A stale queue's filed key still matches its place,
//! so anything that re-files it early (a priority change, a replaced ask's
//! demand leaving) finds it and brings it up to date; the settle then finds
//! nothing to move. Only a scheduling pass reads the orders, and none runs
//! between taking an ask in and the settle.

use super::{QueueId, QueueTree, Usage};
use crate::scheduler::resource::Resource;

impl QueueTree {
    /// Adds pending demand from the leaf up, like
    /// [`add_pending`](Self::add_pending), and leaves re-filing the chain
    /// to [`settle_unfiled`](Self::settle_unfiled).
    pub fn add_pending_unfiled(&mut self, id: QueueId, res: &Resource) {
        let mut cur = Some(id);
        while let Some(c) = cur {
            let q = self.get_mut(c);
            q.pending.add_assign(res);
            cur = q.parent;
        }
        // A request's asks mostly come in runs for one application.
        if self.unfiled.last() != Some(&id) {
            self.unfiled.push(id);
        }
    }

    /// Re-files every chain whose demand grew since the last settle.
    pub fn settle_unfiled(&mut self) {
        let mut unfiled = std::mem::take(&mut self.unfiled);
        unfiled.sort_unstable();
        unfiled.dedup();
        for &leaf in &unfiled {
            // Nothing to change, only to re-file: what add_pending does.
            self.update_chain(leaf, Usage::Unchanged, |_| {});
        }
        unfiled.clear();
        // The buffer is kept for the next request.
        self.unfiled = unfiled;
    }

    /// Whether every queue is filed where its key says.
    pub fn is_settled(&self) -> bool {
        self.unfiled.is_empty()
    }
}
