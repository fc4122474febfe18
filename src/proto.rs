//! Generated protobuf types, laid out as their packages (`si::v1`,
//! `sicore::v1`) so that the generated cross-package paths resolve.
//!
//! Modules usually import them as `use crate::proto::si::v1 as si;`. The SI
//! v1.8 edition's messages, whose package is also `si.v1`, live apart in
//! [`si18`] (`use crate::proto::si18::v1 as si18;`).

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

/// The SI v1.x edition, generated in a pass of its own (same package
/// name as v0.12, different messages). Laid out as its packages, so the
/// generated cross-package paths stay inside it; [`si18::v1`] names the
/// messages.
pub mod si18 {
    /// Package `si.v1` of SI v1.x.
    pub mod si {
        /// SI v1.x wire messages.
        pub mod v1 {
            include!(concat!(env!("OUT_DIR"), "/si18/si.v1.rs"));
        }
    }

    /// Package `sicore.si18`.
    pub mod sicore {
        /// sicore's wrapper of the v1.8 edition: event batches.
        pub mod si18 {
            include!(concat!(env!("OUT_DIR"), "/si18/sicore.si18.rs"));
        }
    }

    pub use self::si::v1;
}
