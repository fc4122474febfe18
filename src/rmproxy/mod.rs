//! RM proxy.
