//! The SI v1.x family, split as the v0.12 one: the `sicore_v1_callbacks`
//! table ([`callbacks`]) and the `sicore_v1_*` entry points
//! ([`scheduler`]), over the same scheduler handle as the v0.12 family.
//! Bytes are v1.8 messages (`proto/si18/si.proto`); the edition is bound
//! to the rmID at registration.

mod callbacks;
mod scheduler;

pub use callbacks::*;
pub use scheduler::*;
