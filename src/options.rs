//! Options.
