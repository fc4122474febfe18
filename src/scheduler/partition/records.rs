//! The SI v1.8 records of queue and user/group changes (limits.md 6.3, the
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
    /// (queues first: a queue is created before its limits are set).
    pub fn take_records(&mut self) -> Vec<Record> {
        let mut out = Vec::new();
        for c in self.queues.take_journal() {
            out.push(queue_record(c));
        }
        for c in self.ugm.take_changes() {
            ug_records(c, &mut out);
        }
        out
    }
}

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
