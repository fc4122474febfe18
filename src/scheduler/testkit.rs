//! A step-driven partition for unit tests: no threads, no sleeps, time
//! moved by hand.
//!
//! [`Harness`] builds a partition from YAML on a [`ManualClock`], applies
//! what an RM would send (nodes, applications, asks, releases), runs one
//! scheduling pass at a time and returns what would go out to the RM as a
//! [`Seen`]. Timers the partition arms are kept and fired, in time order,
//! when [`Harness::advance`] moves the clock past them, as the core's loop
//! does.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::clock::ManualClock;
use super::order::{deliver_posted, RmOrder};
use super::outcome::{AppTimer, NewAllocation, OutMsg, Outbound, Outcomes, RmKey};
use super::partition::{AppTimeouts, Partition};
use super::port::RmPort;
use super::request::AskRequest;
use super::resource::Resource;
use crate::proto::si::v1 as si;

/// The allocations one pass may make (the core's pass budget).
const BUDGET: usize = 2048;

/// A partition with one leaf, `root.a`, open to everyone.
pub const ONE_LEAF: &str = "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
";

/// A resource from `(type, quantity)` pairs.
pub fn res(pairs: &[(&str, i64)]) -> Resource {
    Resource::from_pairs(pairs.iter().copied()).expect("valid resource")
}

fn proto(pairs: &[(&str, i64)]) -> Option<si::Resource> {
    Some(res(pairs).to_proto())
}

/// An ask of `repeat` allocations of `memory` each.
pub fn ask(app: &str, key: &str, memory: i64, repeat: i32) -> AskRequest {
    AskRequest {
        key: Arc::from(key),
        app: Arc::from(app),
        partition: Arc::from("default"),
        resource: Ok(res(&[("memory", memory)])),
        max_allocations: repeat,
        priority: 0,
        tags: crate::scheduler::tags::Tags::from(BTreeMap::new()),
        required_node: None,
        task_group: Arc::from(""),
        placeholder: false,
        preempt_other: true,
        preempt_self: true,
        originator: false,
    }
}

/// An ask of task group `group` (a placeholder when `placeholder`).
pub fn group_ask(
    app: &str,
    key: &str,
    group: &str,
    memory: i64,
    repeat: i32,
    placeholder: bool,
) -> AskRequest {
    AskRequest {
        task_group: Arc::from(group),
        placeholder,
        preempt_other: true,
        ..ask(app, key, memory, repeat)
    }
}

/// What the RM would observe from one step.
#[derive(Debug, Default)]
pub struct Seen {
    /// New allocations, in order.
    pub allocated: Vec<Arc<NewAllocation>>,
    /// Allocation releases the core sent.
    pub released: Vec<si::AllocationRelease>,
    /// Ask releases the core sent.
    pub released_asks: Vec<si::AllocationAskRelease>,
    /// Application state changes: (application, state, message).
    pub states: Vec<(String, String, String)>,
    /// Allocation keys the RM's cache is told to forget.
    pub forgotten: Vec<String>,
    /// Event records (their SI v0.12 form).
    pub events: Vec<si::EventRecord>,
    /// The same records whole (with what only SI v1.x carries).
    pub records: Vec<crate::events::Record>,
}

impl Seen {
    fn absorb(&mut self, out: Outcomes) {
        for m in out.messages {
            match m {
                OutMsg::NewAllocations(v) | OutMsg::NewAllocationsResynced(v) => {
                    self.allocated.extend(v)
                }
                OutMsg::Allocation(r) => {
                    self.released.extend(r.released);
                    self.released_asks.extend(r.released_asks);
                    assert!(r.new.is_empty(), "new allocations go as records");
                }
                OutMsg::Application(r) => self.states.extend(
                    r.updated
                        .into_iter()
                        .map(|u| (u.application_id, u.state, u.message)),
                ),
                OutMsg::Node(_) | OutMsg::Assume(_) => {}
            }
        }
        self.forgotten
            .extend(out.forget.into_iter().map(|f| f.allocation_key));
        self.events
            .extend(out.events.iter().map(|r| r.base.clone()));
        self.records.extend(out.events);
    }

    /// `(allocation key, node)` of each new allocation, in order.
    pub fn placed(&self) -> Vec<(String, String)> {
        self.allocated
            .iter()
            .map(|a| (a.key.to_string(), a.node.to_string()))
            .collect()
    }

    /// The states application `app` went through, in order.
    pub fn states_of(&self, app: &str) -> Vec<&str> {
        self.states
            .iter()
            .filter(|(a, _, _)| a == app)
            .map(|(_, s, _)| s.as_str())
            .collect()
    }

    /// The released UUIDs with termination type `t`, in order.
    pub fn released_as(&self, t: si::TerminationType) -> Vec<&si::AllocationRelease> {
        self.released
            .iter()
            .filter(|r| r.termination_type == t as i32)
            .collect()
    }

    /// The UUIDs of the preemption victims released, in order.
    pub fn preempted(&self) -> Vec<String> {
        self.released_as(si::TerminationType::PreemptedByScheduler)
            .iter()
            .map(|r| r.uuid.clone())
            .collect()
    }

    /// The REQUEST records on preemption victims, in order.
    pub fn preemption_events(&self) -> Vec<&si::EventRecord> {
        self.events
            .iter()
            .filter(|e| e.reason == "Preempted")
            .collect()
    }

    /// Asserts that this step preempted exactly one allocation, `uuid`
    /// (key `key`) of `app`: its release says `release`, and one REQUEST
    /// record on it says `event` (spec 15).
    pub fn assert_one_victim(&self, uuid: &str, app: &str, key: &str, release: &str, event: &str) {
        assert_eq!(self.preempted(), [uuid]);
        let r = &self.released[0];
        assert_eq!(r.application_id, app);
        assert_eq!(r.message, release);
        let ev = self.preemption_events();
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].object_id, key);
        assert_eq!(ev[0].group_id, app);
        assert_eq!(ev[0].message, event);
    }
}

/// A partition driven step by step.
pub struct Harness {
    /// The partition under test.
    pub p: Partition,
    /// Its clock.
    pub clock: Arc<ManualClock>,
    /// Timers armed and not fired yet.
    timers: Vec<AppTimer>,
}

impl Harness {
    /// A partition from the first partition of `yaml`, with the default
    /// scheduler options.
    pub fn new(yaml: &str) -> Self {
        Self::with(yaml, |_| {})
    }

    /// As [`Harness::new`], with the application timers changed by `tweak`.
    pub fn with(yaml: &str, tweak: impl FnOnce(&mut AppTimeouts)) -> Self {
        let cfg = crate::config::parse(yaml).expect("valid configuration");
        let mut timeouts = AppTimeouts::from_options(&crate::options::Options::default());
        tweak(&mut timeouts);
        let clock = ManualClock::new();
        let p = Partition::new("rm", &cfg.partitions[0], timeouts, clock.clone())
            .expect("valid partition");
        Harness {
            p,
            clock,
            timers: Vec::new(),
        }
    }

    fn step(&mut self, f: impl FnOnce(&mut Partition, &mut Outcomes)) -> Seen {
        let mut out = Outcomes::default();
        f(&mut self.p, &mut out);
        self.timers.append(&mut out.timers);
        let mut seen = Seen::default();
        seen.absorb(out);
        seen
    }

    /// Registers node `id` with `memory` schedulable.
    pub fn node(&mut self, id: &str, memory: i64) -> Seen {
        let info = si::NodeInfo {
            node_id: id.into(),
            schedulable_resource: proto(&[("memory", memory)]),
            ..Default::default()
        };
        self.step(|p, out| p.add_node(&info, out).expect("node accepted"))
    }

    /// Submits application `id` to `queue` as user `alice`.
    pub fn app(&mut self, id: &str, queue: &str) -> Seen {
        self.app_with(si::AddApplicationRequest {
            application_id: id.into(),
            queue_name: queue.into(),
            partition_name: "default".into(),
            ugi: Some(si::UserGroupInformation {
                user: "alice".into(),
                groups: vec![],
            }),
            ..Default::default()
        })
    }

    /// Submits a gang application: `memory` of placeholders in total.
    pub fn gang_app(&mut self, id: &str, queue: &str, memory: i64, style: &str) -> Seen {
        self.app_with(si::AddApplicationRequest {
            application_id: id.into(),
            queue_name: queue.into(),
            partition_name: "default".into(),
            ugi: Some(si::UserGroupInformation {
                user: "alice".into(),
                groups: vec![],
            }),
            placeholder_ask: proto(&[("memory", memory)]),
            gang_scheduling_style: style.into(),
            ..Default::default()
        })
    }

    /// Submits an application as sent.
    pub fn app_with(&mut self, req: si::AddApplicationRequest) -> Seen {
        self.step(|p, _| p.add_application(&req).expect("application accepted"))
    }

    /// Adds an ask; it must be accepted.
    pub fn ask(&mut self, a: AskRequest) -> Seen {
        self.step(|p, out| p.add_ask(&a, out).expect("ask accepted"))
    }

    /// Runs one scheduling pass without a callback.
    pub fn schedule(&mut self) -> Seen {
        self.step(|p, out| {
            p.schedule(None, BUDGET, out);
        })
    }

    /// Runs one scheduling pass with `cb` as the RM's callbacks (its
    /// `Predicates` go through the pass's ReSync barrier), then delivers
    /// what the pass made to it as the core and the dispatcher would:
    /// through the RM's order, on this thread.
    pub fn schedule_with<T: RmPort + 'static>(&mut self, cb: &Arc<T>) -> Seen {
        let order = RmOrder::new(RmKey(0), cb.clone(), None);
        self.step(|p, out| {
            p.schedule(Some(&order), BUDGET, out);
            let key = order.key();
            for m in out.messages.get(out.delivered..).unwrap_or_default() {
                deliver_posted(order.post(Outbound::Message(key, m.clone())));
            }
            if !out.forget.is_empty() {
                let args = si::ReSyncSchedulerCacheArgs {
                    assumed_allocations: Vec::new(),
                    forget_allocations: out.forget.clone(),
                };
                deliver_posted(order.post(Outbound::Resync(key, args)));
            }
        })
    }

    /// The RM releases allocation `uuid` of `app` (all of them when empty)
    /// with termination type `t`.
    pub fn release(&mut self, app: &str, uuid: &str, t: si::TerminationType) -> Seen {
        let rel = si::AllocationRelease {
            partition_name: "default".into(),
            application_id: app.into(),
            uuid: uuid.into(),
            termination_type: t as i32,
            message: "released by the test RM".into(),
        };
        self.step(|p, out| p.release_allocations(&rel, out))
    }

    /// The RM takes back ask `key` of `app` (all its asks when empty).
    pub fn release_ask(&mut self, app: &str, key: &str) -> Seen {
        let rel = si::AllocationAskRelease {
            partition_name: "default".into(),
            application_id: app.into(),
            allocationkey: key.into(),
            termination_type: si::TerminationType::StoppedByRm as i32,
            message: "released by the test RM".into(),
        };
        self.step(|p, out| p.release_asks(&rel, out))
    }

    /// Moves the clock by `d` and fires the timers that are due, earliest
    /// first (a timer armed while firing fires too if it is due).
    pub fn advance(&mut self, d: Duration) -> Seen {
        use super::clock::Clock;
        self.clock.advance(d);
        let mut seen = Seen::default();
        loop {
            let now = self.clock.now();
            let due = self
                .timers
                .iter()
                .enumerate()
                .filter(|(_, t)| t.at <= now)
                .min_by_key(|(_, t)| t.at)
                .map(|(i, _)| i);
            let Some(i) = due else {
                break;
            };
            let t = self.timers.swap_remove(i);
            let mut out = Outcomes::default();
            self.p.on_timer(&t, &mut out);
            self.timers.append(&mut out.timers);
            seen.absorb(out);
        }
        seen
    }

    /// The allocation UUIDs application `app` holds, sorted.
    pub fn uuids_of(&self, app: &str) -> Vec<Arc<str>> {
        let a = &self.p.apps()[app];
        let mut v: Vec<Arc<str>> = self
            .p
            .allocations()
            .uuids(&a.allocations)
            .map(|u| Arc::from(u.to_string()))
            .collect();
        v.sort();
        v
    }
}
