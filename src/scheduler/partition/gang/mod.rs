//! The partition's gang chapter (spec 9): the books of placeholders and
//! swaps in flight (`book.rs`), replacement and its confirmation
//! (`swap.rs`), and the placeholder timeout with node removal during a swap
//! (`timeout.rs`). The application side is `scheduler::gang`.

mod book;
mod swap;
mod timeout;
pub use book::GangBook;
pub(crate) use timeout::NodeSwapAction;

#[cfg(test)]
mod step_tests;
