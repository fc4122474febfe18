//! The outbound dispatcher: one library-owned thread that delivers
//! allocation, application and node responses to the RM's callbacks in the
//! order the core produced them.
//!
//! The core thread posts each RM's messages to that RM's order
//! ([`RmOrder`]) and wakes the dispatcher once per message; the dispatcher
//! delivers the oldest one of that RM, unless the core thread delivered it
//! first, before asking the RM something (then the wake-up finds nothing).
//! So one RM's messages keep the core's order whoever delivers them, and
//! one RM's callbacks never run at once (the order's call lock).
//!
//! Container-state reports (spec 8.12) take a separate lane: the core
//! repeats one per waiting ask every check interval, so with a slow
//! callback they would pile up without bound and hold back allocations
//! queued behind them. The dispatcher therefore drains its inbox into two
//! lanes before every delivery: everything else, in order, always first;
//! and the reports, coalesced to the newest one per ask and bounded by
//! [`MAX_PENDING_REPORTS`].

use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::{Receiver, TryRecvError};

use crate::proto::si::v1 as si;
use crate::scheduler::order::{Posted, RmOrder};

/// Most container-state reports (distinct asks) waiting for a slow RM. At
/// the bound, reports for further asks are dropped until the RM catches
/// up; the outstanding check repeats every report each interval, so a
/// still-waiting ask is reported again then.
pub const MAX_PENDING_REPORTS: usize = 100_000;

/// Which RM (by its order), application and ask a report is for.
type ReportKey = (usize, String, String);

type Report = (Arc<RmOrder>, si::UpdateContainerSchedulingStateRequest);

/// Pending container-state reports: at most one per ask (the newest),
/// delivered oldest ask first, at most [`MAX_PENDING_REPORTS`].
#[derive(Default)]
struct Reports {
    latest: HashMap<ReportKey, Report>,
    order: VecDeque<ReportKey>,
    dropped: u64,
}

impl Reports {
    fn push(&mut self, cb: Arc<RmOrder>, req: si::UpdateContainerSchedulingStateRequest) {
        let key = (
            Arc::as_ptr(&cb) as usize,
            req.applicartion_id.clone(),
            req.allocation_key.clone(),
        );
        if let Some(slot) = self.latest.get_mut(&key) {
            *slot = (cb, req);
        } else if self.latest.len() >= MAX_PENDING_REPORTS {
            self.dropped += 1;
            if self.dropped.is_power_of_two() {
                log::warn!(
                    "RM is slow to take container-state reports: {} dropped at the bound of {MAX_PENDING_REPORTS} pending",
                    self.dropped
                );
            }
        } else {
            self.order.push_back(key.clone());
            self.latest.insert(key, (cb, req));
        }
    }

    fn pop(&mut self) -> Option<Report> {
        let key = self.order.pop_front()?;
        self.latest.remove(&key)
    }
}

/// Delivers until the channel closes; once `stopping` is set, what is left
/// is dropped unsent (shutdown abandons pending work).
pub fn run(inbox: Receiver<Posted>, stopping: Arc<AtomicBool>) {
    let mut main: VecDeque<Arc<RmOrder>> = VecDeque::new();
    let mut reports = Reports::default();
    let mut closed = false;
    let take = |item: Posted, main: &mut VecDeque<Arc<RmOrder>>, reports: &mut Reports| match item {
        Posted::Report(order, req) => reports.push(order, req),
        Posted::Next(order) => main.push_back(order),
    };
    loop {
        loop {
            match inbox.try_recv() {
                Ok(item) => take(item, &mut main, &mut reports),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    closed = true;
                    break;
                }
            }
        }
        if stopping.load(Ordering::Acquire) {
            main.drain(..).for_each(|order| order.discard());
            reports = Reports::default();
            if closed {
                return;
            }
        }
        let delivered = if let Some(order) = main.pop_front() {
            Some(catch_unwind(AssertUnwindSafe(|| {
                order.deliver_next();
            })))
        } else {
            reports
                .pop()
                .map(|(order, req)| catch_unwind(AssertUnwindSafe(|| order.report(&req))))
        };
        match delivered {
            Some(result) => {
                if result.is_err() {
                    log::error!("an RM callback panicked; the message was dropped");
                }
            }
            None if closed => return,
            None => match inbox.recv() {
                Ok(item) => take(item, &mut main, &mut reports),
                Err(_) => closed = true,
            },
        }
    }
}
