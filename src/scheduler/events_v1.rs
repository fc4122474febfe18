//! v0.12-shaped event records, as the core makes them, translated into
//! v1.8's structured records: the type and object stay, `groupID` becomes
//! `referenceID` (for a REQUEST the application, which the k8shim
//! publishes as a pod event; empty for a NODE record, as the v1.8 core's
//! node records have it), and the core's reason string picks the change
//! type and detail; a NODE ADD or capacity record carries the node's
//! capacity as its resource. An unknown reason is (NONE, DETAILS_NONE) with
//! the message kept. Structured records (USERGROUP, and the QUEUE records
//! of queue and application changes) carry their change, detail and
//! resource, mapped one to one (SI v1.9's `QUEUE_PREEMPTION` by number).
//!
//! Shared by the SI v1.x edge (`rmproxy::v1`, what `SendEvent` carries)
//! and the REST event history (`rest::events`), which shows the v1.x form.

use crate::proto::si::v1 as si;
use crate::proto::si18::v1 as si18;
use crate::scheduler::core::CONFIG_REJECTED_REASON;
use crate::scheduler::ugm::{APP_CANNOTRUN_QUOTA, APP_RUNNABLE_QUOTA};

use si18::event_record::{ChangeDetail as D, ChangeType as C, Type as T};

use crate::events::{Change, Detail, Record, TYPE_QUEUE, TYPE_USERGROUP};

/// The v1.8 change type of a structured record.
fn change(c: Change) -> C {
    match c {
        Change::Set => C::Set,
        Change::Add => C::Add,
        Change::Remove => C::Remove,
    }
}

/// SI v1.9's `QUEUE_PREEMPTION` change detail (the summary of a
/// quota-change preemption run). The vendored SI v1.x enum lacks it; the
/// wire carries the number, which a v1.8 decoder keeps as an unknown value.
pub const QUEUE_PREEMPTION: i32 = 407;

/// The SI v1.x change detail of a structured record.
fn detail(d: Detail) -> i32 {
    let d = match d {
        Detail::None => D::DetailsNone,
        Detail::QueueDynamic => D::QueueDynamic,
        Detail::QueueType => D::QueueType,
        Detail::QueueMax => D::QueueMax,
        Detail::QueueGuaranteed => D::QueueGuaranteed,
        Detail::QueueApp => D::QueueApp,
        Detail::UserLimit => D::UgUserLimit,
        Detail::GroupLimit => D::UgGroupLimit,
        Detail::AppLink => D::UgAppLink,
        Detail::UserResource => D::UgUserResource,
        Detail::GroupResource => D::UgGroupResource,
        Detail::QueuePreemption => return QUEUE_PREEMPTION,
        Detail::AppAlloc => D::AppAlloc,
        Detail::AllocCancel => D::AllocCancel,
        Detail::AllocPreempt => D::AllocPreempt,
        Detail::AllocNodeRemoved => D::AllocNoderemoved,
    };
    d as i32
}

/// The v1.8 form of a core resource.
fn resource(r: &si::Resource) -> si18::Resource {
    si18::Resource {
        resources: r
            .resources
            .iter()
            .map(|(k, q)| (k.clone(), si18::Quantity { value: q.value }))
            .collect(),
    }
}

/// One core record, translated: a structured one as it says, another as
/// [`record`] does.
pub fn translate(r: &Record) -> si18::EventRecord {
    let Some(s) = &r.structured else {
        let mut out = record(&r.base);
        out.resource = r.v1_resource.as_ref().map(resource);
        return out;
    };
    let kind = match r.base.r#type {
        TYPE_QUEUE => T::Queue,
        TYPE_USERGROUP => T::Usergroup,
        t if t == si::event_record::Type::App as i32 => T::App,
        t if t == si::event_record::Type::Request as i32 => T::Request,
        _ => T::UnknownEventrecordType,
    };
    si18::EventRecord {
        r#type: kind as i32,
        object_id: r.base.object_id.clone(),
        message: r.base.message.clone(),
        timestamp_nano: r.base.timestamp_nano,
        event_change_type: change(s.change) as i32,
        event_change_detail: detail(s.detail),
        reference_id: r.base.group_id.clone(),
        resource: s.resource.as_ref().map(resource),
    }
}

/// The change type and detail of a v0.12 record of type `kind` and `reason`.
pub fn change_of(kind: i32, reason: &str) -> (C, D) {
    let kind = si::event_record::Type::try_from(kind).unwrap_or_default();
    match (kind, reason) {
        (si::event_record::Type::Node, "NodeAdded") => (C::Add, D::DetailsNone),
        (si::event_record::Type::Node, "NodeRemoved") => (C::Remove, D::NodeDecomission),
        (si::event_record::Type::Node, "NodeSchedulable" | "NodeDraining") => {
            (C::Set, D::NodeSchedulable)
        }
        (si::event_record::Type::Node, "NodeUpdated") => (C::Set, D::NodeCapacity),
        (si::event_record::Type::App, state) => match state {
            "New" => (C::Add, D::AppNew),
            "Accepted" => (C::Set, D::AppAccepted),
            "Running" => (C::Set, D::AppRunning),
            "Rejected" => (C::Set, D::AppReject),
            "Completing" => (C::Set, D::AppCompleting),
            "Completed" => (C::Set, D::AppCompleted),
            "Failing" => (C::Set, D::AppFailing),
            "Failed" => (C::Set, D::AppFailed),
            "Expired" => (C::Set, D::AppExpired),
            "Resuming" => (C::Set, D::AppResuming),
            "PlaceholderTimeout" => (C::Remove, D::AllocTimeout),
            "PlaceholderReplaced" => (C::Remove, D::AllocReplaced),
            APP_CANNOTRUN_QUOTA => (C::None, D::AppCannotrunQuota),
            APP_RUNNABLE_QUOTA => (C::None, D::AppRunnableQuota),
            _ => (C::None, D::DetailsNone),
        },
        (si::event_record::Type::Queue, r) if r == CONFIG_REJECTED_REASON => {
            (C::None, D::QueueConfig)
        }
        _ => (C::None, D::DetailsNone),
    }
}

/// One record, translated.
pub fn record(r: &si::EventRecord) -> si18::EventRecord {
    let (change, detail) = change_of(r.r#type, &r.reason);
    let kind = match si::event_record::Type::try_from(r.r#type).unwrap_or_default() {
        si::event_record::Type::Request => T::Request,
        si::event_record::Type::App => T::App,
        si::event_record::Type::Node => T::Node,
        si::event_record::Type::Queue => T::Queue,
        _ => T::UnknownEventrecordType,
    };
    // The v1.8 core's NODE records of a node itself (added, removed,
    // schedulable, capacity) have an empty referenceID; the v0.12 groupID
    // of sicore's is the partition.
    let reference_id = if kind == T::Node {
        String::new()
    } else {
        r.group_id.clone()
    };
    si18::EventRecord {
        r#type: kind as i32,
        object_id: r.object_id.clone(),
        message: r.message.clone(),
        timestamp_nano: r.timestamp_nano,
        event_change_type: change as i32,
        event_change_detail: detail as i32,
        reference_id,
        resource: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v0(kind: si::event_record::Type, reason: &str) -> si::EventRecord {
        crate::events::record(kind, "obj", "group", reason, "msg".into())
    }

    #[test]
    fn records_keep_object_and_reference_and_map_reasons() {
        let r = record(&v0(si::event_record::Type::Request, "PredicateRefused"));
        assert_eq!(r.r#type, T::Request as i32);
        assert_eq!(
            (r.object_id.as_str(), r.reference_id.as_str()),
            ("obj", "group")
        );
        assert_eq!(r.event_change_type, C::None as i32);
        assert_eq!(r.message, "msg");
        let add = record(&v0(si::event_record::Type::Node, "NodeAdded"));
        assert_eq!(
            (add.event_change_type, add.event_change_detail),
            (C::Add as i32, D::DetailsNone as i32)
        );
        let gone = record(&v0(si::event_record::Type::Node, "NodeRemoved"));
        assert_eq!(
            (gone.event_change_type, gone.event_change_detail),
            (C::Remove as i32, D::NodeDecomission as i32)
        );
        let run = record(&v0(si::event_record::Type::App, "Running"));
        assert_eq!(run.event_change_detail, D::AppRunning as i32);
        let odd = record(&v0(si::event_record::Type::App, "SomethingNew"));
        assert_eq!(
            (odd.event_change_type, odd.event_change_detail),
            (C::None as i32, D::DetailsNone as i32)
        );
        // A record the core made the v0.12 way translates as before.
        let same = translate(&v0(si::event_record::Type::Node, "NodeAdded").into());
        assert_eq!(same, add);
    }

    #[test]
    fn node_records_have_no_reference_and_carry_the_capacity() {
        // As the v1.8 core's: referenceID empty, the ADD's resource the
        // node's capacity; the v0.12 form keeps the partition.
        let mut cap = si::Resource::default();
        cap.resources
            .insert("memory".into(), si::Quantity { value: 64 });
        let v0 = crate::events::record(
            si::event_record::Type::Node,
            "node-1",
            "default",
            "NodeAdded",
            "msg".into(),
        );
        let r = crate::events::Record::from(v0.clone()).with_v1_resource(cap);
        assert_eq!(r.base, v0, "the v0.12 record is unchanged");
        let t = translate(&r);
        assert_eq!(
            (t.object_id.as_str(), t.reference_id.as_str()),
            ("node-1", "")
        );
        assert_eq!(
            (t.event_change_type, t.event_change_detail),
            (C::Add as i32, D::DetailsNone as i32)
        );
        assert_eq!(t.resource.unwrap().resources["memory"].value, 64);
        let gone = translate(&v0_node("NodeRemoved").into());
        assert_eq!(gone.reference_id, "");
        assert!(gone.resource.is_none());
    }

    fn v0_node(reason: &str) -> si::EventRecord {
        crate::events::record(
            si::event_record::Type::Node,
            "node-1",
            "default",
            reason,
            String::new(),
        )
    }

    #[test]
    fn structured_records_keep_their_change_detail_and_resource() {
        let mut res = si::Resource::default();
        res.resources
            .insert("memory".into(), si::Quantity { value: 5 });
        let r = translate(&crate::events::structured(
            TYPE_USERGROUP,
            "alice",
            "root.a",
            Change::Remove,
            Detail::GroupResource,
            Some(res),
            String::new(),
        ));
        assert_eq!(r.r#type, T::Usergroup as i32);
        assert_eq!(
            (r.object_id.as_str(), r.reference_id.as_str()),
            ("alice", "root.a")
        );
        assert_eq!(
            (r.event_change_type, r.event_change_detail),
            (C::Remove as i32, D::UgGroupResource as i32)
        );
        assert_eq!(r.resource.unwrap().resources["memory"].value, 5);
        let q = translate(&crate::events::structured(
            TYPE_QUEUE,
            "root.x",
            "",
            Change::Add,
            Detail::QueueDynamic,
            None,
            String::new(),
        ));
        assert_eq!(q.r#type, T::Queue as i32);
        assert_eq!(q.event_change_detail, D::QueueDynamic as i32);
        assert!(q.resource.is_none());
    }
}
