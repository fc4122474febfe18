//! Applications, their asks and their state machine (spec 6 and 7).

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// Tag that pins an ask to one node.
pub use super::allocs::TAG_REQUIRED_NODE;
pub use super::ask::{Ask, AskOrderKey};
use super::queue::{AppKey, Queue, QueueId, QueueTree, MIN_PRIORITY};
use crate::scheduler::gang::AppGang;
use crate::scheduler::policies::AppSortPolicy;
use crate::scheduler::resource::{Resource, ShareKey};
use crate::security::UserGroup;

/// Application tag that skips the `Starting` wait.
pub const TAG_STATEAWARE_DISABLE: &str = "application.stateaware.disable";

/// Application states, with the exact strings the RM sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AppState {
    /// Added, no asks yet.
    New,
    /// Has asks, nothing allocated.
    Accepted,
    /// First allocation made.
    Starting,
    /// Running.
    Running,
    /// Never entered: rejections happen before the app exists.
    Rejected,
    /// Idle; completes when the completing timer fires.
    Completing,
    /// Done; has left the partition.
    Completed,
    /// Failing.
    Failing,
    /// Failed; has left the partition.
    Failed,
    /// Completed or failed long ago.
    Expired,
    /// Gang placeholders timed out (soft style).
    Resuming,
}

impl AppState {
    /// The state's wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            AppState::New => "New",
            AppState::Accepted => "Accepted",
            AppState::Starting => "Starting",
            AppState::Running => "Running",
            AppState::Rejected => "Rejected",
            AppState::Completing => "Completing",
            AppState::Completed => "Completed",
            AppState::Failing => "Failing",
            AppState::Failed => "Failed",
            AppState::Expired => "Expired",
            AppState::Resuming => "Resuming",
        }
    }
}

/// Events that drive the state machine; their names are the default
/// messages reported with a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppEvent {
    /// Progress: an ask arrived or an allocation was made.
    Run,
    /// The application went idle.
    Complete,
    /// The application failed.
    Fail,
    /// Termination history timeout.
    Expire,
    /// Soft gang timeout.
    Resume,
}

impl AppEvent {
    /// The event's name.
    pub fn as_str(self) -> &'static str {
        match self {
            AppEvent::Run => "runApplication",
            AppEvent::Complete => "completeApplication",
            AppEvent::Fail => "failApplication",
            AppEvent::Expire => "expireApplication",
            AppEvent::Resume => "resumeApplication",
        }
    }
}

/// The target state of an event, or `None` if the transition is invalid.
/// `Some(same)` for `Run` in `Running` is a silent no-op.
pub fn transition(from: AppState, event: AppEvent) -> Option<AppState> {
    use AppEvent as E;
    use AppState as S;
    match (event, from) {
        (E::Run, S::New | S::Resuming) => Some(S::Accepted),
        (E::Run, S::Accepted) => Some(S::Starting),
        (E::Run, S::Starting | S::Completing | S::Running) => Some(S::Running),
        (E::Complete, S::Accepted | S::Starting | S::Running) => Some(S::Completing),
        (E::Complete, S::Completing) => Some(S::Completed),
        (E::Fail, S::New | S::Accepted | S::Starting | S::Running) => Some(S::Failing),
        (E::Fail, S::Failing) => Some(S::Failed),
        (E::Resume, S::New | S::Accepted) => Some(S::Resuming),
        (E::Expire, S::Completed | S::Failed) => Some(S::Expired),
        _ => None,
    }
}

/// The shared empty string for the task group of asks that have none
/// (most asks), so that adding such an ask allocates nothing for it.
pub fn shared_str(s: &str) -> Arc<str> {
    use std::sync::OnceLock;
    static EMPTY: OnceLock<Arc<str>> = OnceLock::new();
    if s.is_empty() {
        EMPTY.get_or_init(|| Arc::from("")).clone()
    } else {
        Arc::from(s)
    }
}

/// Most state changes an application remembers: states cycle only through
/// Running and Completing, so a real application stays far below it.
pub const MAX_STATE_LOG: usize = 64;

/// An application in a partition.
#[derive(Debug, Clone)]
pub struct Application {
    /// Id, unique among the partition's active applications.
    pub id: Arc<str>,
    /// Its leaf queue.
    pub queue: QueueId,
    /// Submitting user and groups.
    pub user: UserGroup,
    /// Tags (keys as sent).
    pub tags: BTreeMap<String, String>,
    /// Current state.
    pub state: AppState,
    /// Submission order (fifo key).
    pub seq: u64,
    /// Submission time.
    pub submitted: Instant,
    /// Submission time, Unix ns (what REST clients read).
    pub submitted_ns: i64,
    /// Every state entered with its Unix ns time, oldest first (at most
    /// [`MAX_STATE_LOG`]; the `New` entry is always kept).
    pub state_log: Vec<(AppState, i64)>,
    /// Asks by slot and by key: whole, or a compact stand-in once fully
    /// allocated (ask.rs).
    pub asks: super::keyed::KeyedSlab<super::ask::AskEntry>,
    /// Asks with repeats left, in scheduling order.
    pub ask_order: super::slot_order::SlotOrder<AskOrderKey>,
    /// Outstanding demand.
    pub pending: Resource,
    /// Sum of the application's real (non-placeholder) allocations: the
    /// usage for completion and fair order (placeholders: `gang`). Changed
    /// only by [`Application::allocate`] and [`Application::release`],
    /// which keep `fair_key` with it.
    allocated: Resource,
    /// Per type the highest `allocated` seen (REST's `maxUsedResource`).
    pub max_used: Resource,
    /// Slots of its allocations (in the partition's table).
    pub allocations: super::allocs::AllocList,
    /// Bumped on each state change so stale timers do nothing.
    pub state_epoch: u64,
    /// Gang placeholder total (stored for later use).
    pub placeholder_ask: Option<Resource>,
    /// Its key in the leaf's order (see `Queue::app_order`).
    order_key: AppKey,
    /// The highest priority of its pending asks ([`MIN_PRIORITY`] with
    /// none): the first key of `ask_order`, as last pushed to the queues.
    priority: i32,
    /// Whether its queues count it in `active_apps` (see
    /// `Partition::sync_active`).
    pub counted_active: bool,
    /// In the partition's watch of applications that may be held
    /// (partition/held.rs): `Some(whether it has real gang members)`.
    /// Kept here so that adding an ask looks nothing up.
    pub held_watch: Option<bool>,
    /// Whether it has ever held an allocation.
    pub started: bool,
    /// Gang scheduling state (spec 9).
    pub gang: AppGang,
    /// Its link in the partition's user/group limits (`ugm`), so that a
    /// check indexes instead of hashing; `None` when not linked.
    pub(crate) ugm_link: Option<u32>,
}

impl Application {
    /// Records entering `state` at `unix_ns` (bounded: past the cap the
    /// oldest entry after `New` makes room).
    pub fn log_state(&mut self, state: AppState, unix_ns: i64) {
        if self.state_log.len() >= MAX_STATE_LOG {
            self.state_log.remove(1);
        }
        self.state_log.push((state, unix_ns));
    }

    /// A new application in state `New`, with nothing asked or allocated,
    /// filed in a fair leaf under the default key (the first allocation
    /// re-files it).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: Arc<str>,
        queue: QueueId,
        user: UserGroup,
        tags: BTreeMap<String, String>,
        seq: u64,
        submitted: Instant,
        placeholder_ask: Option<Resource>,
        gang: AppGang,
    ) -> Self {
        Application {
            id,
            queue,
            user,
            tags,
            state: AppState::New,
            seq,
            submitted,
            submitted_ns: 0,
            state_log: Vec::new(),
            asks: Default::default(),
            ask_order: Default::default(),
            pending: Resource::new(),
            allocated: Resource::new(),
            max_used: Resource::new(),
            allocations: Default::default(),
            state_epoch: 0,
            placeholder_ask,
            order_key: AppKey {
                seq,
                ..Default::default()
            },
            priority: MIN_PRIORITY,
            counted_active: false,
            held_watch: None,
            started: false,
            gang,
            ugm_link: None,
        }
    }

    /// Sum of the real allocations.
    pub fn allocated(&self) -> &Resource {
        &self.allocated
    }

    /// Its key in its leaf's order.
    pub fn leaf_key(&self) -> &AppKey {
        &self.order_key
    }

    /// The highest priority among its pending asks; [`MIN_PRIORITY`]
    /// without any (spec `policy/priority.md` 2).
    pub fn priority(&self) -> i32 {
        self.priority
    }

    /// A real allocation of `res` joined the application: its usage grows
    /// and it moves in `leaf`'s fair order (its own leaf).
    pub fn allocate(&mut self, res: &Resource, leaf: &mut Queue) {
        self.allocated.add_assign(res);
        self.max_used.raise_to(&self.allocated);
        if leaf.sort_policy == AppSortPolicy::Fair {
            self.refile(leaf);
        }
    }

    /// A real allocation of `res` left the application (usage clamped at
    /// zero per type).
    pub fn release(&mut self, res: &Resource, leaf: &mut Queue) {
        self.allocated.sub_clamped_assign(res);
        if leaf.sort_policy == AppSortPolicy::Fair {
            self.refile(leaf);
        }
    }

    /// The application's key in `leaf` as things stand.
    pub(crate) fn key_in(&self, leaf: &Queue) -> AppKey {
        let fair = leaf.sort_policy == AppSortPolicy::Fair;
        let by_priority = leaf.priority.sort;
        AppKey {
            first: Reverse(if by_priority { self.priority } else { 0 }),
            share: if fair {
                ShareKey::of(&self.allocated, leaf.guaranteed.as_ref())
            } else {
                ShareKey::default()
            },
            submitted: (!fair && !by_priority).then_some(self.submitted),
            then: Reverse(if by_priority { 0 } else { self.priority }),
            seq: self.seq,
        }
    }

    /// Files the application in `leaf`'s order, which was cleared (a
    /// reload may have changed the policy, the guarantee or the priority
    /// sorting), or which it is joining.
    pub fn file_in(&mut self, leaf: &mut Queue) {
        self.order_key = self.key_in(leaf);
        if let Some(slot) = leaf.apps.get(&self.seq).copied() {
            leaf.app_order.insert(self.order_key.clone(), slot);
        }
    }

    /// Takes the application out of its leaf and its priority out of the
    /// queues' (it is leaving).
    pub fn leave(&self, queues: &mut QueueTree) {
        let leaf = queues.get_mut(self.queue);
        leaf.apps.remove(&self.seq);
        leaf.app_order.remove(&self.order_key);
        queues.priority_changed(self.queue, self.priority, MIN_PRIORITY);
    }

    /// Re-files the application in `leaf`'s order after its usage or its
    /// priority changed.
    fn refile(&mut self, leaf: &mut Queue) {
        let key = self.key_in(leaf);
        if key == self.order_key {
            return;
        }
        let old = std::mem::replace(&mut self.order_key, key);
        if let Some(slot) = leaf.app_order.remove(&old) {
            leaf.app_order.insert(self.order_key.clone(), slot);
        }
    }

    /// Brings the application's priority in line with its pending asks
    /// after `ask_order` changed: the maximum is the order's first key, so
    /// no scan. A change re-files it in its leaf and goes up the queues.
    pub fn sync_priority(&mut self, queues: &mut QueueTree) {
        let now = self.ask_order.first().map_or(MIN_PRIORITY, |(k, _)| k.0 .0);
        if now == self.priority {
            return;
        }
        let old = std::mem::replace(&mut self.priority, now);
        self.refile(queues.get_mut(self.queue));
        queues.priority_changed(self.queue, old, now);
    }

    /// Whether the application has demand the scheduler can act on.
    pub fn has_pending(&self) -> bool {
        !self.ask_order.is_empty()
    }

    /// Whether the stateaware wait is disabled by tag (any non-empty value).
    pub fn stateaware_disabled(&self) -> bool {
        self.tags
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case(TAG_STATEAWARE_DISABLE) && !v.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typical_life() {
        let mut s = AppState::New;
        for (e, want) in [
            (AppEvent::Run, AppState::Accepted),
            (AppEvent::Run, AppState::Starting),
            (AppEvent::Run, AppState::Running),
            (AppEvent::Complete, AppState::Completing),
            (AppEvent::Run, AppState::Running),
            (AppEvent::Complete, AppState::Completing),
            (AppEvent::Complete, AppState::Completed),
            (AppEvent::Expire, AppState::Expired),
        ] {
            s = transition(s, e).unwrap();
            assert_eq!(s, want);
        }
        assert_eq!(transition(AppState::New, AppEvent::Complete), None);
        assert_eq!(transition(AppState::Completed, AppEvent::Run), None);
    }

    #[test]
    fn the_whole_table() {
        use AppEvent as E;
        use AppState as S;
        let all = [
            S::New,
            S::Accepted,
            S::Starting,
            S::Running,
            S::Rejected,
            S::Completing,
            S::Completed,
            S::Failing,
            S::Failed,
            S::Expired,
            S::Resuming,
        ];
        let valid = [
            (E::Run, S::New, S::Accepted),
            (E::Run, S::Resuming, S::Accepted),
            (E::Run, S::Accepted, S::Starting),
            (E::Run, S::Starting, S::Running),
            (E::Run, S::Completing, S::Running),
            (E::Run, S::Running, S::Running),
            (E::Complete, S::Accepted, S::Completing),
            (E::Complete, S::Starting, S::Completing),
            (E::Complete, S::Running, S::Completing),
            (E::Complete, S::Completing, S::Completed),
            (E::Fail, S::New, S::Failing),
            (E::Fail, S::Accepted, S::Failing),
            (E::Fail, S::Starting, S::Failing),
            (E::Fail, S::Running, S::Failing),
            (E::Fail, S::Failing, S::Failed),
            (E::Resume, S::New, S::Resuming),
            (E::Resume, S::Accepted, S::Resuming),
            (E::Expire, S::Completed, S::Expired),
            (E::Expire, S::Failed, S::Expired),
        ];
        for e in [E::Run, E::Complete, E::Fail, E::Expire, E::Resume] {
            for s in all {
                let want = valid
                    .iter()
                    .find(|(ve, vs, _)| *ve == e && *vs == s)
                    .map(|v| v.2);
                assert_eq!(transition(s, e), want, "{} in {}", e.as_str(), s.as_str());
            }
        }
        // Rejected is never entered (rejections happen before the app exists).
        assert!(valid.iter().all(|v| v.2 != S::Rejected));
    }
}
