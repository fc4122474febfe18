//! Placement rules.
