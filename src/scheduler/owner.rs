//! Which scheduler owns the current thread.
//!
//! Every library thread (core, dispatcher, watcher, REST) is marked with
//! the id of the scheduler that started it. That is not error state: it
//! detects synchronous calls from inside a callback, which would wait on
//! the thread making them, and tells the core which scheduler a resource
//! name it converts is charged to.

use std::cell::Cell;

thread_local! {
    /// The owning scheduler's id (0: not a library thread).
    static OWNER: Cell<u64> = const { Cell::new(0) };
}

/// Marks the calling thread as one of scheduler `id`'s own threads, so
/// synchronous calls from callbacks it runs are refused.
pub fn mark_library_thread(id: u64) {
    OWNER.with(|o| o.set(id));
}

/// The id of the scheduler whose library thread this is (0: none).
pub fn current_scheduler() -> u64 {
    OWNER.with(|o| o.get())
}
