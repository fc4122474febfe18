//! The allocation records' shared part: one [`AllocCtx`] per application
//! and task group, so that a record holds one pointer where it held four
//! strings (docs/performance-large.md, "100,000 nodes x 1,000,000 asks").

use std::sync::Arc;

use super::Partition;
use crate::scheduler::objects::keyed::Slot;
use crate::scheduler::outcome::AllocCtx;

/// Contexts kept per application: its task groups (a gang has a few).
/// Past this the oldest goes; a record made then gets one of its own.
const CTX_PER_APP: usize = 8;

impl Partition {
    /// The context of a new allocation of application `app_slot` in task
    /// group `task_group`: the one kept for them while the application's
    /// id, queue path and the group are the same (a slot reused by another
    /// application, or a queue path that changed, makes a new one).
    pub(crate) fn ctx_of(&mut self, app_slot: Slot, task_group: &Arc<str>) -> Arc<AllocCtx> {
        let app = &self.apps[app_slot];
        let queue = &self.queues.get(app.queue).path;
        let slot = app_slot as usize;
        // The common case: the application's last context fits.
        if let Some(c) = self.ctxs.get(slot).and_then(|k| k.last()) {
            if Arc::ptr_eq(&c.app, &app.id)
                && Arc::ptr_eq(&c.queue, queue)
                && (Arc::ptr_eq(&c.task_group, task_group) || c.task_group == *task_group)
            {
                return c.clone();
            }
        }
        if self.ctxs.len() <= slot {
            self.ctxs.resize_with(slot + 1, Vec::new);
        }
        let kept = &mut self.ctxs[slot];
        // Pointers compare the application and queue: a kept context holds
        // its strings, so an equal address is the same string.
        kept.retain(|c| Arc::ptr_eq(&c.app, &app.id) && Arc::ptr_eq(&c.queue, queue));
        if let Some(i) = kept.iter().position(|c| c.task_group == *task_group) {
            let c = kept.remove(i);
            kept.push(c.clone());
            return c;
        }
        let ctx = Arc::new(AllocCtx {
            app: app.id.clone(),
            queue: queue.clone(),
            partition: self.name_shared.clone(),
            task_group: task_group.clone(),
        });
        if kept.len() >= CTX_PER_APP {
            kept.remove(0);
        }
        kept.push(ctx.clone());
        ctx
    }

    /// Drops the contexts kept for application `app_slot` (it is gone).
    pub(crate) fn forget_ctx(&mut self, app_slot: Slot) {
        if let Some(kept) = self.ctxs.get_mut(app_slot as usize) {
            *kept = Vec::new();
        }
    }
}
