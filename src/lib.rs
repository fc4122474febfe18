//! # sicore
//!
//! A scheduler core that speaks the YuniKorn scheduler interface (SI) v0.12
//! and embeds in any resource manager (RM) in-process.
//!
//! * Rust programs use [`api::SchedulerApi`] and [`api::ResourceManagerCallback`]
//!   directly through [`Scheduler`].
//! * C, C++, Go and Python programs use the C ABI in [`ffi`], described by the
//!   generated header `include/sicore.h`.
//!
//! Inside, one core thread owns all scheduling state (`scheduler`); the RM
//! proxy (`rmproxy`) decodes and validates requests on the caller's thread
//! and queues them to the core; a dispatcher delivers outcomes to the RM's
//! callbacks from a library-owned thread. `entrypoint` wires them together
//! with the REST service and the metrics.
//!
//! Imports point down: `ffi` → `entrypoint` → `rmproxy` → `scheduler` →
//! `config`, `events`, `security`; `rest` and `metrics` read what the
//! scheduler publishes (`scheduler::snapshot`, `scheduler::observe`).
//! `tests/it/layers.rs` holds the crate to it.

pub mod config;
pub(crate) mod entrypoint;
pub mod error;
pub mod events;
pub mod ffi;
#[doc(hidden)]
pub mod fuzzing;
pub(crate) mod loglevel;
pub(crate) mod metrics;
pub mod options;
pub mod proto;
pub mod rest;
pub(crate) mod rmproxy;
pub(crate) mod scheduler;
pub mod security;

pub use api::{ResourceManagerCallback, SchedulerApi};
pub use entrypoint::Scheduler;
pub use error::{Error, Status};
pub use options::Options;
pub use scheduler::api;

/// The SI v1.x edition's Rust API: [`v1::SchedulerApiV1`] (implemented by
/// [`Scheduler`]) and [`v1::ResourceManagerCallbackV1`], over the messages
/// of [`proto::si18::v1`].
pub mod v1 {
    pub use crate::rmproxy::v1::api::{ResourceManagerCallbackV1, SchedulerApiV1};
}

/// Hooks for the crate's integration tests; not part of the API.
#[doc(hidden)]
pub mod testing {
    /// Whether any scheduler alive in the process (or the table of threads
    /// no scheduler owns) holds resource-type `name`: a freed scheduler's
    /// names must be gone.
    pub use crate::scheduler::resource::process_holds_name;
}

/// The core thread allocates and frees on every decision, often memory
/// another thread allocated (requests decoded on the RM's thread, reports
/// encoded on the dispatcher); mimalloc's thread-sharded free lists make
/// that several times cheaper than the system allocator.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
