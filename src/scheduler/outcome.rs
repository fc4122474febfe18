//! What the core tells a resource manager, collected in production order.

use std::time::Instant;

use crate::proto::si::v1 as si;

/// One message for the RM's `UpdateAllocation`, `UpdateApplication` or
/// `UpdateNode` callback.
#[derive(Debug, Clone, PartialEq)]
pub enum OutMsg {
    /// For `UpdateAllocation`.
    Allocation(si::AllocationResponse),
    /// For `UpdateApplication`.
    Application(si::ApplicationResponse),
    /// For `UpdateNode`.
    Node(si::NodeResponse),
}

/// A state timer of one application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppTimer {
    /// When it fires.
    pub at: Instant,
    /// Internal partition name.
    pub partition: String,
    /// Application id.
    pub app: std::sync::Arc<str>,
    /// The application's state epoch when the timer was set.
    pub epoch: u64,
    /// What the timer is for.
    pub kind: TimerKind,
}

/// The two kinds of application timer (spec 6.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerKind {
    /// The state timer of an active application (`Starting`, `Completing`).
    State,
    /// `Completed`/`Failed` -> `Expired` for the history entry that
    /// terminated at this time (ns since the epoch).
    Expire(i64),
}

/// Outcomes for one RM, in the order they were produced.
#[derive(Debug, Default)]
pub struct Outcomes {
    /// Messages for the dispatcher, in order.
    pub messages: Vec<OutMsg>,
    /// Allocations to announce through `ReSyncSchedulerCache` before the
    /// messages are delivered.
    pub assumed: Vec<si::AssumedAllocation>,
    /// Allocation keys to forget through `ReSyncSchedulerCache`.
    pub forget: Vec<si::ForgotAllocation>,
    /// Timers to arm.
    pub timers: Vec<AppTimer>,
    /// Event records for the event system (spec 13).
    pub events: Vec<si::EventRecord>,
}

impl Outcomes {
    /// Whether there is anything to deliver.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
            && self.assumed.is_empty()
            && self.forget.is_empty()
            && self.events.is_empty()
    }

    /// Appends to the last message if it is an allocation response (batching
    /// keeps the relative order of everything else), else starts a new one.
    pub fn allocation(&mut self) -> &mut si::AllocationResponse {
        if !matches!(self.messages.last(), Some(OutMsg::Allocation(_))) {
            self.messages.push(OutMsg::Allocation(Default::default()));
        }
        match self.messages.last_mut() {
            Some(OutMsg::Allocation(r)) => r,
            _ => unreachable!("just pushed"),
        }
    }

    /// Starts a separate allocation response (for echoes the reference sends
    /// one per release entry).
    pub fn new_allocation_message(&mut self, r: si::AllocationResponse) {
        self.messages.push(OutMsg::Allocation(r));
    }

    /// Queues an event record for the event system.
    pub fn event(&mut self, record: si::EventRecord) {
        self.events.push(record);
    }

    /// Reports an application state change.
    pub fn app_updated(&mut self, update: si::UpdatedApplication) {
        self.messages
            .push(OutMsg::Application(si::ApplicationResponse {
                updated: vec![update],
                ..Default::default()
            }));
    }
}
