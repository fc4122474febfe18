//! Which edition of the scheduler interface an RM registered with.
//!
//! One core serves RMs of both editions side by side; the edition is bound
//! to the rmID at registration and travels with each of its partitions, so
//! the few rules that differ (identity, application states, node actions,
//! confirmations) are decided where the model applies them, and the wire
//! translation stays in the edge (`rmproxy`, `ffi`).

/// An edition of the scheduler interface (SI).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Edition {
    /// SI v0.12: asks with repeat counts, core-minted UUIDs, ReSync.
    #[default]
    V012,
    /// SI v1.x: the allocation key is the identity, config travels in the
    /// calls, `new` replaces ReSync as the "RM knows" barrier.
    V1,
}

impl Edition {
    /// How this edition's RMs write resource quantities in `queues.yaml`:
    /// v0.12 plain integers, v1.x with units and `vcore` in cores.
    pub fn quantity_grammar(self) -> crate::config::QuantityGrammar {
        match self {
            Edition::V012 => crate::config::QuantityGrammar::Integer,
            Edition::V1 => crate::config::QuantityGrammar::Units,
        }
    }

    /// The name used in messages ("SI v0.12", "SI v1.x").
    pub fn name(self) -> &'static str {
        match self {
            Edition::V012 => "SI v0.12",
            Edition::V1 => "SI v1.x",
        }
    }
}

/// Where a registering RM's configuration comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigOrigin {
    /// v0.12: `<policyGroup>.yaml` found by the loader's rules (in-memory
    /// policy configs, the config directory, the default paths).
    PolicyGroup,
    /// v1.8: the text the RM sent; an empty text means the built-in v1
    /// default configuration.
    Text(String),
}
