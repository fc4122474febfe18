//! What readers outside the partition may see of its books: the snapshot
//! model, metrics, and the core's routing and reload. Every view is
//! read-only; a book changes only through the chapter that owns it
//! (docs/layers.md, "Who owns which of a partition's books").

use std::collections::VecDeque;

use super::gang::GangBook;
use super::preempt::PreemptionBook;
use super::{AllocTable, FinishedApp, Partition};
use crate::scheduler::edition::Edition;
use crate::scheduler::objects::application::Application;
use crate::scheduler::objects::keyed::KeyedSlab;
use crate::scheduler::objects::node::NodeTable;
use crate::scheduler::objects::queue::QueueTree;
use crate::scheduler::objects::reservation::Reservations;
use crate::scheduler::partition_key::PartitionKey;
use crate::scheduler::resource::Resource;
use crate::scheduler::ugm::Ugm;

impl Partition {
    /// The name the RM uses.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `[rmID]name`, for messages.
    pub fn internal_name(&self) -> &str {
        &self.internal_name
    }

    /// The key the core finds the partition by.
    pub fn key(&self) -> &PartitionKey {
        &self.key
    }

    /// The owning RM.
    pub fn rm_id(&self) -> &str {
        &self.rm_id
    }

    /// The interface edition of the owning RM.
    pub fn edition(&self) -> Edition {
        self.edition
    }

    /// Records the edition of the RM that registered the partition.
    pub(crate) fn set_edition(&mut self, edition: Edition) {
        self.edition = edition;
    }

    /// The queue tree with its usage and pending.
    pub fn queues(&self) -> &QueueTree {
        &self.queues
    }

    /// The nodes.
    pub fn nodes(&self) -> &NodeTable {
        &self.nodes
    }

    /// The sum of node capacities.
    pub fn total(&self) -> &Resource {
        &self.total
    }

    /// The active applications.
    pub fn apps(&self) -> &KeyedSlab<Application> {
        &self.apps
    }

    /// The live allocations.
    pub fn allocations(&self) -> &AllocTable {
        &self.allocations
    }

    /// Recently terminated applications, newest last.
    pub fn finished(&self) -> &VecDeque<FinishedApp> {
        &self.finished
    }

    /// Recently rejected applications, newest last.
    pub fn rejected(&self) -> &VecDeque<FinishedApp> {
        &self.rejected
    }

    /// Allocations made since the partition was created.
    pub fn allocation_count(&self) -> u64 {
        self.allocation_count
    }

    /// Asks with allocations still to make (what `max_asks_per_rm` counts).
    pub fn waiting_asks(&self) -> usize {
        self.waiting_asks
    }

    /// Nodes held for asks.
    pub fn reservations(&self) -> &Reservations {
        &self.reservations
    }

    /// The gang books.
    pub fn gang(&self) -> &GangBook {
        &self.gang
    }

    /// The preemption book.
    pub fn preempt(&self) -> &PreemptionBook {
        &self.preempt
    }

    /// How long terminated and rejected applications stay listed.
    pub fn terminated_timeout(&self) -> std::time::Duration {
        self.timeouts.terminated
    }

    /// User and group limits and trackers.
    pub fn ugm(&self) -> &Ugm {
        &self.ugm
    }
}
