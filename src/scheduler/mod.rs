//! The scheduling core: partitions, queues, applications, asks, nodes and
//! the thread that owns them.
//!
//! Everything here runs on the core thread (see [`core::Core`]); nothing
//! here touches raw pointers or knows about the C ABI.

pub mod alloc_uuid;
pub mod api;
pub mod clock;
pub mod config_txn;
pub mod core;
pub mod dump;
pub mod edition;
pub mod events_v1;
pub mod gang;
pub mod objects;
pub mod observe;
pub mod order;
pub mod outcome;
pub mod owner;
pub mod partition;
pub mod partition_key;
pub mod placement;
pub mod policies;
pub mod port;
pub mod request;
pub mod resource;
pub mod resync;
pub mod snapshot;
pub mod tags;
#[cfg(test)]
pub(crate) mod testkit;
pub mod ugm;
mod uuid_text;

/// Hash map with a fast, randomly seeded hasher for the hot paths (keys
/// are ids chosen by the RM, so the seed still matters).
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// Hash set counterpart of [`FastMap`].
pub type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
