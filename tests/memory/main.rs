//! The memory tests: they count the process's live heap bytes with a
//! global allocator of their own (`live_bytes`), so they run in a binary
//! of their own, one at a time (a test running beside them would move the
//! count). With the default features the library installs mimalloc and
//! they are ignored; `scripts/sanitizers.sh` runs them.

// The RM of the integration tests; these two use a part of it.
#[allow(dead_code)]
#[path = "../it/common/mod.rs"]
mod common;
mod live_bytes;
mod queue_churn;
mod soak;

use std::sync::{Mutex, MutexGuard};

#[cfg(not(feature = "mimalloc"))]
#[global_allocator]
static COUNTING: live_bytes::Counting = live_bytes::Counting;

/// Held by each test for its whole run: the count is the process's.
fn alone() -> MutexGuard<'static, ()> {
    static ALONE: Mutex<()> = Mutex::new(());
    ALONE.lock().unwrap_or_else(|e| e.into_inner())
}
