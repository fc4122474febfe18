//! The scheduling core: partitions, queues, applications, asks, nodes and
//! the thread that owns them.
//!
//! Everything here runs on the core thread (see [`core::Core`]); nothing
//! here touches raw pointers or knows about the C ABI.

pub mod application;
pub mod core;
pub mod dump;
pub mod node;
pub mod outcome;
pub mod partition;
pub mod placement;
pub mod queue;
pub mod reload;
pub mod resource;
