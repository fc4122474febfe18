//! The scheduling core.
pub mod placement;
