//! What the core is asked to do, and what it answers.

use std::sync::Arc;

use crossbeam_channel::Sender;

use super::super::config_txn::{ApplyRefused, ConfigTarget};
use super::super::port::RmPort;
use super::super::request::AllocationUpdate;
use super::super::snapshot::Snapshot;
use crate::config;
use crate::error::Error;
use crate::proto::si::v1 as si;

/// Where the answer to a synchronous command goes: a channel of the
/// caller's choosing (a blocking one for the RM proxy, an async one for
/// the REST service). Called at most once; dropping it unanswered tells
/// the caller the core failed to answer.
pub struct Reply<T>(Box<dyn FnOnce(T) + Send>);

impl<T> Reply<T> {
    /// A reply that hands the answer to `f`.
    pub fn new(f: impl FnOnce(T) + Send + 'static) -> Self {
        Reply(Box::new(f))
    }

    /// Answers.
    pub fn send(self, answer: T) {
        (self.0)(answer)
    }
}

impl<T: Send + 'static> From<Sender<T>> for Reply<T> {
    fn from(tx: Sender<T>) -> Self {
        Reply::new(move |v| {
            let _ = tx.send(v);
        })
    }
}

/// What a registration hands the core, whichever edition it came
/// through.
pub struct Registration {
    /// RM id.
    pub rm_id: String,
    /// Policy group naming the configuration.
    pub policy_group: String,
    /// The interface edition the RM registered through.
    pub edition: crate::scheduler::edition::Edition,
    /// Where its configuration comes from.
    pub config: crate::scheduler::edition::ConfigOrigin,
    /// Its own event settings (SI v1.x `extraConfig`; none for v0.12).
    pub events: crate::events::RmEventSettings,
    /// What it says of its build (SI v1 `buildInfo`; v0.12: its version),
    /// for REST's `rmBuildInformation`.
    pub build_info: std::collections::BTreeMap<String, String>,
    /// Whether it registered as SI v1.9 or later (its `version`), and gets
    /// the records v1.9 added; v1.8.x RMs do not.
    pub v19: bool,
}

/// A request for the core.
pub enum Command {
    /// RegisterResourceManager, already checked for shape.
    Register {
        /// What the RM registers as.
        registration: Registration,
        /// The RM's callbacks.
        callback: Arc<dyn RmPort>,
        /// Where the outcome goes.
        reply: Reply<Result<(), Error>>,
    },
    /// New event settings of a registered RM (the `extraConfig` of an SI
    /// v1.8 `UpdateConfiguration`, applied before its configuration text).
    /// An unknown RM is ignored.
    RmEvents {
        /// RM id.
        rm_id: String,
        /// The settings; a setting left unset returns to its default.
        events: crate::events::RmEventSettings,
    },
    /// UpdateAllocation, converted on the caller's thread.
    Allocation(AllocationUpdate),
    /// UpdateApplication.
    Application(si::ApplicationRequest),
    /// UpdateNode.
    Node(si::NodeRequest),
    /// UpdateConfiguration(clusterID).
    Reload {
        /// RM id.
        rm_id: String,
        /// Where the outcome goes.
        reply: Reply<Result<ReloadOutcome, Error>>,
    },
    /// Replace (non-empty `yaml`) or drop (empty) the in-memory
    /// configuration of a policy group and reload every RM using it.
    SetPolicyConfig {
        /// Policy group.
        policy_group: String,
        /// queues.yaml text; empty removes the in-memory text.
        yaml: String,
        /// Where the outcome goes.
        reply: Reply<Result<(), Error>>,
    },
    /// The first step of a REST configuration update (spec 2.9): the RM
    /// whose configuration `/ws/v1/config` shows and updates (the owner of
    /// the first partition), with `text` dry-run against its partitions.
    /// Changes nothing.
    ConfigTarget {
        /// queues.yaml text (without its `checksum` key).
        text: String,
        /// The RM, or why the text cannot go to it.
        reply: Reply<Result<ConfigTarget, Error>>,
    },
    /// The last step: configuration text that arrived through the REST
    /// service, applied to the partitions of `rm_id` as a reload would,
    /// if `registration` is still the RM's registration and
    /// `expected_checksum` still in force.
    ApplyConfigText {
        /// RM id.
        rm_id: String,
        /// queues.yaml text.
        text: String,
        /// Refuse unless this checksum is still in force.
        expected_checksum: Option<String>,
        /// The callbacks the RM was asked through.
        registration: Arc<dyn RmPort>,
        /// Where the outcome goes.
        reply: Reply<Result<(), ApplyRefused>>,
    },
    /// The reload watcher found a changed, valid file (read and parsed on
    /// the watcher's thread).
    WatchApply {
        /// RM id the watcher serves.
        rm_id: String,
        /// Policy group it reads.
        policy_group: String,
        /// The new configuration.
        loaded: Box<config::LoadedConfig>,
        /// What became of it.
        reply: Reply<WatchVerdict>,
    },
    /// The reload watcher found a version it cannot apply: logged and
    /// reported as an event.
    WatchRejected {
        /// RM id the watcher serves.
        rm_id: String,
        /// Policy group it reads.
        policy_group: String,
        /// Where the text came from.
        source: String,
        /// Why it was refused.
        reason: String,
    },
    /// State dump as JSON.
    Dump {
        /// Run the scheduling pass the earlier requests trigger first, so
        /// a dump right after a request shows its outcome.
        settle: bool,
        /// Where the dump goes.
        reply: Reply<Result<String, Error>>,
    },
    /// The state dump without the RMs' own parts, and the RMs to ask for
    /// theirs: an observer (the REST service) calls those callbacks on its
    /// own threads, so a slow one never holds the core thread.
    DumpParts {
        /// Where the core's dump and the RMs with a dump plugin go.
        reply: Reply<(String, Vec<RmDumpSource>)>,
    },
    /// A copy of the state for an observer (the REST service), in order
    /// with the requests before it.
    Snapshot(Reply<Snapshot>),
    /// Stop the thread.
    Shutdown,
}

/// What a synchronous `UpdateConfiguration` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReloadOutcome {
    /// A changed configuration is now in force.
    Applied,
    /// The source has the checksum in force: nothing changed.
    Unchanged {
        /// The RM's policy group.
        policy_group: String,
        /// The checksum in force.
        checksum: String,
        /// Whether the source is a file (or the search for one) that may
        /// still change: in-memory text only changes through
        /// `SetPolicyConfig`, so it is never watched.
        watch: bool,
    },
}

/// The core's answer to [`Command::WatchApply`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchVerdict {
    /// The watcher's version is now in force.
    Applied,
    /// That version was already in force (applied by another call).
    Current,
    /// The RM is gone, uses another policy group, or in-memory text now
    /// wins over the file: nothing left to watch.
    Gone,
    /// The version was refused (reported); the old one stays.
    Failed,
}

/// Event reason of a configuration the reload watcher refused.
pub const CONFIG_REJECTED_REASON: &str = "ConfigurationRejected";

/// An RM whose own state dump (the SI v1 `StateDumpPlugin`) belongs in the
/// full state dump: its id, and its callbacks (calls through them keep the
/// RM's one-callback-at-a-time order).
pub type RmDumpSource = (String, std::sync::Arc<dyn RmPort>);
