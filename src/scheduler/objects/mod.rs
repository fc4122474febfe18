//! The objects a partition schedules: applications and their asks, nodes,
//! queues, allocations and reservations, and the keyed slab they live in.
//! Each keeps its own sums and order keys; the partition only asks.

pub mod allocs;
pub mod application;
pub mod ask;
mod chunked_slab;
pub mod keyed;
pub mod node;
pub mod pending;
pub mod queue;
pub mod reservation;
pub mod slot_index;
pub mod slot_order;
pub mod slot_uuid;
