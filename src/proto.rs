//! Generated protobuf types, laid out as their packages (`si::v1`,
//! `sicore::v1`) so that the generated cross-package paths resolve.
//!
//! Modules usually import them as `use crate::proto::si::v1 as si;`.

#![allow(missing_docs, clippy::all, clippy::pedantic)]

/// Package `si.v1`.
pub mod si {
    /// SI v0.12 wire messages.
    pub mod v1 {
        include!(concat!(env!("OUT_DIR"), "/si.v1.rs"));
    }
}

/// Package `sicore.v1`.
pub mod sicore {
    /// sicore's own messages: options and event batches.
    pub mod v1 {
        include!(concat!(env!("OUT_DIR"), "/sicore.v1.rs"));
    }
}
