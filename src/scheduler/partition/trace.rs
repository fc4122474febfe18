//! The trace the REST event history keeps of what the partition did to
//! each application (docs/why-pending.md, "Trace"): the allocations it got
//! and lost, and for a preemption who took what from whom and why. The
//! records are SI v1.x `APP` records with the SI's own change details
//! (`APP_ALLOC`, `ALLOC_CANCEL`, `ALLOC_PREEMPT`, `ALLOC_NODEREMOVED`).
//!
//! They are made only while the RM's events are on (the history is
//! kept), and reach `SendEvent` only for an SI v1.x RM that asked for
//! `APP` records; for any other RM they are marked for the history alone,
//! so what it receives does not change. The records of every allocation
//! got and released (`APP_ALLOC`, `ALLOC_CANCEL`) cost about 4,700
//! instructions each (a fifth more per allocation, docs/why-pending.md),
//! so they are made only when `SchedulerOptions.event_types` lists `APP`;
//! the rare ones (preemption and its victims' release, a node's
//! removal) always are.

use super::*;
use crate::events::{self, Change, Detail, Record};
use crate::scheduler::objects::allocs::AllocSlot;

/// Why victims were taken back, for their records.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PreemptCause<'a> {
    /// The preemptor's queue is below its guaranteed resource.
    Guarantee,
    /// The preemptor must run on this node (a daemon set's pod).
    RequiredNode(&'a str),
    /// The victims' queue is above its changed max.
    Quota(&'a str),
}

impl std::fmt::Display for PreemptCause<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PreemptCause::Guarantee => f.write_str("guarantee"),
            PreemptCause::RequiredNode(n) => write!(f, "required node {n}"),
            PreemptCause::Quota(q) => write!(f, "quota change of {q}"),
        }
    }
}

/// One `APP` record of application `app` about allocation `key`.
fn app_record(
    app: &str,
    key: &str,
    change: Change,
    detail: Detail,
    resource: &Resource,
    message: String,
) -> Record {
    events::structured(
        si::event_record::Type::App as i32,
        app,
        key,
        change,
        detail,
        Some(resource.to_proto()),
        message,
    )
}

impl Partition {
    /// Whether trace records are made.
    #[inline]
    pub(crate) fn tracing(&self) -> bool {
        self.timeouts.events.trace()
    }

    /// Whether the records of every allocation got and released are made
    /// too (the options list `APP`).
    #[inline]
    pub(crate) fn tracing_allocations(&self) -> bool {
        let t = self.timeouts.events;
        t.trace() && t.allows(si::event_record::Type::App as i32)
    }

    /// Queues a trace record, for the history alone unless this RM takes
    /// SI v1.x `APP` records.
    fn trace(&self, mut r: Record, out: &mut Outcomes) {
        r.ring_only = !self
            .timeouts
            .events
            .structured(si::event_record::Type::App as i32);
        out.record(r);
    }

    /// `a` was allocated (`APP_ALLOC`).
    pub(crate) fn trace_allocated(&self, a: &NewAllocation, out: &mut Outcomes) {
        let what = if a.placeholder {
            "placeholder"
        } else {
            "allocation"
        };
        let r = app_record(
            a.app(),
            &a.key,
            Change::Add,
            Detail::AppAlloc,
            &a.resource,
            format!("{what} {} on node {}", a.key, a.node),
        );
        self.trace(r, out);
    }

    /// `a` went for `why` (`detail` says how: `ALLOC_CANCEL`,
    /// `ALLOC_NODEREMOVED`).
    pub(crate) fn trace_removed(
        &self,
        a: &NewAllocation,
        detail: Detail,
        why: &str,
        out: &mut Outcomes,
    ) {
        let r = app_record(
            a.app(),
            &a.key,
            Change::Remove,
            detail,
            &a.resource,
            format!("allocation {} on node {} removed: {why}", a.key, a.node),
        );
        self.trace(r, out);
    }

    /// Preemption victim `a` left by the RM's release of termination type
    /// `t`: `ALLOC_PREEMPT` when the RM confirms the preemption (YuniKorn
    /// v1.x records a confirmed release under the RM's termination type
    /// too), `ALLOC_CANCEL` when the RM stopped it another way first.
    /// Made whenever tracing, like the preemption records: it closes the
    /// story [`Partition::trace_preemption`] began, once per victim.
    pub(crate) fn trace_victim_gone(&self, a: &NewAllocation, t: i32, out: &mut Outcomes) {
        let (detail, why) = if t == si::TerminationType::PreemptedByScheduler as i32 {
            (Detail::AllocPreempt, "the RM confirmed its preemption")
        } else {
            (
                Detail::AllocCancel,
                "released by the RM before its preemption was confirmed",
            )
        };
        self.trace_removed(a, detail, why, out);
    }

    /// The victims at `victims` are being taken back for ask `key` of
    /// `app` (none for a quota run): each victim's record names the
    /// preemptor and the cause, and the preemptor's names every victim.
    /// Called before the victims go (their allocations are still held).
    pub(crate) fn trace_preemption(
        &self,
        preemptor: Option<(&str, &str)>,
        victims: &[AllocSlot],
        cause: PreemptCause<'_>,
        out: &mut Outcomes,
    ) {
        let by = match preemptor {
            Some((app, key)) => format!("ask {key} of application {app}"),
            None => "the quota-change preemption run".to_string(),
        };
        let mut names = Vec::with_capacity(victims.len());
        let mut total = Resource::new();
        for slot in victims {
            let a = self.allocations.at(*slot);
            names.push(format!("{}/{}", a.app(), a.key));
            total.add_assign(&a.resource);
            let r = app_record(
                a.app(),
                &a.key,
                Change::Remove,
                Detail::AllocPreempt,
                &a.resource,
                format!(
                    "allocation {} on node {} preempted by {by} ({cause})",
                    a.key, a.node
                ),
            );
            self.trace(r, out);
        }
        if let Some((app, key)) = preemptor {
            let r = app_record(
                app,
                key,
                Change::Set,
                Detail::None,
                &total,
                format!(
                    "ask {key} preempted {} allocation(s) ({cause}): {}",
                    names.len(),
                    names.join(", ")
                ),
            );
            self.trace(r, out);
        }
    }
}
