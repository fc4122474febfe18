//! The objects a partition schedules: applications and their asks, nodes,
//! queues, allocations and reservations. Each keeps its own sums and order
//! keys; the partition only asks.

pub mod allocs;
pub mod application;
pub mod node;
pub mod queue;
pub mod reservation;
