//! The SI v1.x records of queue and user/group changes (limits.md 6.3, the
//! reference's queue records): the queue tree and the limits note what
//! changed while the RM takes such records, and the core turns the notes
//! into records after each step. Nothing is noted, built or allocated
//! when the types are off or the RM speaks SI v0.12.

use super::*;
use crate::events::{self, Change, Detail, EventTypes, Record, TYPE_QUEUE, TYPE_USERGROUP};
use crate::scheduler::objects::queue::QueueChange;
use crate::scheduler::ugm::{UgChange, Ugm};

/// Turns noting on for a new partition, and notes its configured queues
/// (each an ADD, as the reference sends for every queue it builds).
pub(super) fn start(queues: &mut QueueTree, ugm: &mut Ugm, types: EventTypes) {
    ugm.set_records(types.structured(TYPE_USERGROUP));
    queues.set_journal(types.structured(TYPE_QUEUE));
    if queues.journal_on() {
        let mut paths: Vec<Arc<str>> = queues.iter().map(|(_, q)| q.path.clone()).collect();
        paths.sort_unstable();
        for path in paths {
            queues.note(|| QueueChange::Added {
                path,
                managed: true,
            });
        }
    }
}

impl Partition {
    /// Sets the record types this partition makes (the RM's settings
    /// changed): noting starts or stops with them.
    pub fn set_event_types(&mut self, types: EventTypes) {
        self.timeouts.events = types;
        self.ugm.set_records(types.structured(TYPE_USERGROUP));
        self.queues.set_journal(types.structured(TYPE_QUEUE));
    }

    /// Whether changes wait to become records.
    #[inline]
    pub fn has_records(&self) -> bool {
        self.ugm.has_changes() || self.queues.has_journal()
    }

    /// The records of the changes noted since the last call, in order
    /// (queues first: a queue is created before its limits are set). The
    /// usage changes of one tracker and queue are summed first, growth and
    /// decrease apart: one ADD and one REMOVE at most per step, where a
    /// pass may bring an application's allocations to the trackers more
    /// than once (at its state changes, before the end of the pass).
    pub fn take_records(&mut self) -> Vec<Record> {
        let mut out = Vec::new();
        for c in self.queues.take_journal() {
            out.push(queue_record(c));
        }
        let mut merged: Vec<UgChange> = Vec::new();
        let mut usage: crate::scheduler::FastMap<UsageKey, (usize, usize)> = Default::default();
        for c in self.ugm.take_changes() {
            let UgChange::Usage {
                group,
                name,
                queue,
                delta,
            } = c
            else {
                merged.push(c);
                continue;
            };
            let (up, down) = split(&delta);
            let key = (group, name, queue);
            let slots = match usage.get(&key) {
                Some(&slots) => slots,
                None => {
                    let (group, name, queue) = key.clone();
                    let at = merged.len();
                    for _ in 0..2 {
                        merged.push(UgChange::Usage {
                            group,
                            name: name.clone(),
                            queue: queue.clone(),
                            delta: Resource::new(),
                        });
                    }
                    usage.insert(key, (at, at + 1));
                    (at, at + 1)
                }
            };
            for (slot, part) in [(slots.0, up), (slots.1, Resource::new().sub(&down))] {
                if let UgChange::Usage { delta, .. } = &mut merged[slot] {
                    delta.add_assign(&part);
                }
            }
        }
        for c in merged {
            ug_records(c, &mut out);
        }
        out
    }
}

/// A usage change's tracker (group or user, name) and queue.
type UsageKey = (bool, Arc<str>, Arc<str>);

fn queue_record(c: QueueChange) -> Record {
    let rec =
        |path: &str, reference: &str, change, detail, resource: Option<&Resource>, message| {
            events::structured(
                TYPE_QUEUE,
                path,
                reference,
                change,
                detail,
                resource.map(Resource::to_proto),
                message,
            )
        };
    let origin = |managed| {
        if managed {
            Detail::None
        } else {
            Detail::QueueDynamic
        }
    };
    match c {
        QueueChange::Added { path, managed } => {
            rec(&path, "", Change::Add, origin(managed), None, String::new())
        }
        QueueChange::Removed { path, managed } => rec(
            &path,
            "",
            Change::Remove,
            origin(managed),
            None,
            String::new(),
        ),
        QueueChange::Type { path, leaf } => rec(
            &path,
            "",
            Change::Set,
            Detail::QueueType,
            None,
            format!("leaf queue: {leaf}"),
        ),
        QueueChange::Max { path, max } => rec(
            &path,
            "",
            Change::Set,
            Detail::QueueMax,
            max.as_ref(),
            String::new(),
        ),
        QueueChange::Guaranteed { path, guaranteed } => rec(
            &path,
            "",
            Change::Set,
            Detail::QueueGuaranteed,
            guaranteed.as_ref(),
            String::new(),
        ),
        QueueChange::App { path, app, added } => rec(
            &path,
            &app,
            if added { Change::Add } else { Change::Remove },
            Detail::QueueApp,
            None,
            String::new(),
        ),
    }
}

/// The positive parts of a delta, and the negated negative parts.
fn split(delta: &Resource) -> (Resource, Resource) {
    let mut up = Resource::new();
    let mut down = Resource::new();
    for (ty, v) in delta.iter() {
        if v > 0 {
            up.set(ty, v);
        } else if v < 0 {
            down.set(ty, v.saturating_neg());
        }
    }
    (up, down)
}

fn ug_records(c: UgChange, out: &mut Vec<Record>) {
    let rec = |name: &str, reference: &str, change, detail, resource: Option<&Resource>| {
        events::structured(
            TYPE_USERGROUP,
            name,
            reference,
            change,
            detail,
            resource.map(Resource::to_proto),
            String::new(),
        )
    };
    match c {
        UgChange::Usage {
            group,
            name,
            queue,
            delta,
        } => {
            let detail = if group {
                Detail::GroupResource
            } else {
                Detail::UserResource
            };
            let (up, down) = split(&delta);
            if !up.is_zero() {
                out.push(rec(&name, &queue, Change::Add, detail, Some(&up)));
            }
            if !down.is_zero() {
                out.push(rec(&name, &queue, Change::Remove, detail, Some(&down)));
            }
        }
        UgChange::Link { set, group, app } => out.push(rec(
            &group,
            &app,
            if set { Change::Set } else { Change::Remove },
            Detail::AppLink,
            None,
        )),
        UgChange::Limit {
            set,
            group,
            name,
            queue,
        } => out.push(rec(
            &name,
            &queue,
            if set { Change::Set } else { Change::Remove },
            if group {
                Detail::GroupLimit
            } else {
                Detail::UserLimit
            },
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::testkit::{ask, res, Harness};

    fn config(limits: &str) -> String {
        format!(
            "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
{limits}"
        )
    }

    const WILDCARD: &str = "            limits:
              - {limit: all, users: ['*'], maxresources: {memory: 1000}}
";
    const WILDCARD_CHANGED: &str = "            limits:
              - {limit: all, users: ['*'], maxresources: {memory: 2000}}
              - {limit: dev, groups: [dev], maxresources: {memory: 5000}}
";

    fn harness(limits: &str, types: &[&str], v1: bool) -> Harness {
        let names: Vec<String> = types.iter().map(|t| t.to_string()).collect();
        let types = EventTypes::parse(&names).unwrap().for_edition(v1);
        Harness::with(&config(limits), |t| t.events = types)
    }

    fn app_of(h: &mut Harness, id: &str, user: &str) {
        h.app_with(si::AddApplicationRequest {
            application_id: id.into(),
            queue_name: "root.a".into(),
            partition_name: "default".into(),
            ugi: Some(si::UserGroupInformation {
                user: user.into(),
                groups: vec!["dev".into()],
            }),
            ..Default::default()
        });
    }

    /// (type, object, reference, change, detail) of each record.
    fn shapes(records: &[Record]) -> Vec<(i32, String, String, Change, Detail)> {
        records
            .iter()
            .map(|r| {
                let s = r.structured.as_ref().expect("structured");
                (
                    r.base.r#type,
                    r.base.object_id.clone(),
                    r.base.group_id.clone(),
                    s.change,
                    s.detail,
                )
            })
            .collect()
    }

    fn ug(
        object: &str,
        reference: &str,
        change: Change,
        detail: Detail,
    ) -> (i32, String, String, Change, Detail) {
        (
            TYPE_USERGROUP,
            object.into(),
            reference.into(),
            change,
            detail,
        )
    }

    #[test]
    fn a_wildcard_cap_is_told_for_every_user_it_covers_and_only_when_it_changes() {
        let mut h = harness(WILDCARD, &["USERGROUP"], true);
        // The wildcard covers no tracked user yet: no cap record at start.
        assert!(h.p.take_records().is_empty());
        app_of(&mut h, "app-1", "alice");
        app_of(&mut h, "app-2", "bob");
        h.p.take_records();
        let changed = crate::config::parse(&config(WILDCARD_CHANGED)).unwrap();
        h.p.reconfigure(&changed.partitions[0]).unwrap();
        let mut got = shapes(&h.p.take_records());
        got.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
        assert_eq!(
            got,
            [
                ug("alice", "root.a", Change::Set, Detail::UserLimit),
                ug("bob", "root.a", Change::Set, Detail::UserLimit),
                ug("dev", "app-1", Change::Set, Detail::AppLink),
                ug("dev", "app-2", Change::Set, Detail::AppLink),
                ug("dev", "root.a", Change::Set, Detail::GroupLimit),
            ]
        );
        // The same configuration again: nothing changed, nothing told.
        h.p.reconfigure(&changed.partitions[0]).unwrap();
        assert!(h.p.take_records().is_empty());
        // The wildcard and the group cap go: cleared for each, links gone.
        let none = crate::config::parse(&config("")).unwrap();
        h.p.reconfigure(&none.partitions[0]).unwrap();
        let got = shapes(&h.p.take_records());
        for want in [
            ug("alice", "root.a", Change::Remove, Detail::UserLimit),
            ug("bob", "root.a", Change::Remove, Detail::UserLimit),
            ug("dev", "root.a", Change::Remove, Detail::GroupLimit),
            ug("dev", "app-1", Change::Remove, Detail::AppLink),
            ug("dev", "app-2", Change::Remove, Detail::AppLink),
        ] {
            assert!(got.contains(&want), "{want:?} in {got:?}");
        }
        assert_eq!(got.len(), 5, "{got:?}");
    }

    #[test]
    fn one_usage_record_per_tracker_carries_the_passs_allocations() {
        let mut h = harness(WILDCARD_CHANGED, &["USERGROUP"], true);
        h.node("n1", 10_000);
        app_of(&mut h, "app-1", "alice");
        h.p.take_records();
        h.ask(ask("app-1", "k", 100, 4));
        assert_eq!(h.schedule().allocated.len(), 4);
        let records = h.p.take_records();
        assert_eq!(
            shapes(&records),
            [
                ug("alice", "root.a", Change::Add, Detail::UserResource),
                ug("dev", "root.a", Change::Add, Detail::GroupResource),
            ]
        );
        for r in &records {
            let got = r.structured.as_ref().unwrap().resource.clone().unwrap();
            assert_eq!(got, res(&[("memory", 400)]).to_proto());
        }
    }

    #[test]
    fn nothing_is_noted_for_a_v012_rm_or_with_the_types_off() {
        for (types, v1) in [
            (&["REQUEST", "APP", "NODE", "QUEUE", "USERGROUP"][..], false),
            (&["REQUEST", "NODE"][..], true),
        ] {
            let mut h = harness(WILDCARD_CHANGED, types, v1);
            h.node("n1", 10_000);
            app_of(&mut h, "app-1", "alice");
            h.ask(ask("app-1", "k", 100, 4));
            h.schedule();
            let none = crate::config::parse(&config("")).unwrap();
            h.p.reconfigure(&none.partitions[0]).unwrap();
            assert!(!h.p.has_records(), "{types:?} v1={v1}");
            assert!(h.p.take_records().is_empty());
        }
    }

    #[test]
    fn a_mixed_delta_splits_into_growth_and_decrease() {
        let (up, down) = split(&res(&[("memory", 5), ("vcore", -2)]));
        assert_eq!((up, down), (res(&[("memory", 5)]), res(&[("vcore", 2)])));
        let mut out = Vec::new();
        ug_records(
            UgChange::Usage {
                group: false,
                name: Arc::from("alice"),
                queue: Arc::from("root.a"),
                delta: res(&[("memory", 5), ("vcore", -2)]),
            },
            &mut out,
        );
        assert_eq!(
            shapes(&out),
            [
                ug("alice", "root.a", Change::Add, Detail::UserResource),
                ug("alice", "root.a", Change::Remove, Detail::UserResource),
            ]
        );
    }

    #[test]
    fn queue_records_of_a_reload_say_what_changed() {
        let mut h = harness("", &["QUEUE"], true);
        let added: Vec<String> =
            h.p.take_records()
                .iter()
                .map(|r| r.base.object_id.clone())
                .collect();
        assert_eq!(added, ["root", "root.a"]);
        let cfg = crate::config::parse(
            "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            parent: true
            resources: {max: {memory: 100}, guaranteed: {memory: 10}}
",
        )
        .unwrap();
        h.p.reconfigure(&cfg.partitions[0]).unwrap();
        let records = h.p.take_records();
        let got: Vec<(String, Detail, String)> = records
            .iter()
            .map(|r| {
                (
                    r.base.object_id.clone(),
                    r.structured.as_ref().unwrap().detail,
                    r.base.message.clone(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "root.a".into(),
                    Detail::QueueType,
                    "leaf queue: false".into()
                ),
                ("root.a".into(), Detail::QueueMax, String::new()),
                ("root.a".into(), Detail::QueueGuaranteed, String::new()),
            ]
        );
        let max = records[1].structured.as_ref().unwrap().resource.clone();
        assert_eq!(max, Some(res(&[("memory", 100)]).to_proto()));
    }
}
