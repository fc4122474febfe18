//! What the REST configuration update (spec 2.9) needs of the core,
//! asked through two typed commands: [`Command::ConfigTarget`] (the RM it
//! targets, with the new text dry-run against its partitions) and
//! [`Command::ApplyConfigText`] (apply, if the callback table asked is
//! still that RM's registration). The update itself runs as one
//! transaction on a library thread (`rest::config_txn`), under the
//! scheduler's [`ConfigLock`].
//!
//! [`Command::ConfigTarget`]: super::core::Command::ConfigTarget
//! [`Command::ApplyConfigText`]: super::core::Command::ApplyConfigText

use std::sync::Arc;

use super::port::RmPort;
use crate::error::Error;

/// Held for the whole of every configuration change of one scheduler:
/// registration, `UpdateConfiguration`, `SetPolicyConfig`, the reload
/// watcher's apply and the REST update (from its check of the base
/// checksum through the RM's callback to the apply). So no change can
/// interleave with the REST update's steps.
pub type ConfigLock = Arc<parking_lot::Mutex<()>>;

/// The RM a REST configuration update goes to, as the core holds it.
/// Held by the transaction only while it runs (snapshots carry no
/// callbacks).
pub struct ConfigTarget {
    /// RM id.
    pub rm_id: String,
    /// Checksum of the configuration in force.
    pub checksum: String,
    /// Its text.
    pub text: String,
    /// The RM's callbacks (its current registration).
    pub callback: Arc<dyn RmPort>,
}

/// Why [`Command::ApplyConfigText`](super::core::Command::ApplyConfigText)
/// did not apply the text.
#[derive(Debug)]
pub enum ApplyRefused {
    /// The RM registered again (or went) since its callbacks were asked:
    /// the new registration's configuration stays, untouched.
    Replaced,
    /// Applying failed; `in_force` is the text the core still holds for
    /// the RM, read in the same step.
    Failed {
        /// Why.
        error: Error,
        /// The text in force (`None`: the RM is not held).
        in_force: Option<String>,
    },
}
