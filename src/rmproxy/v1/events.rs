//! v0.12-shaped event records, as the core makes them, translated into
//! v1.8's structured records: the type and object stay, `groupID` becomes
//! `referenceID` (for a REQUEST the application, which the k8shim
//! publishes as a pod event), and the core's reason string picks the
//! change type and detail. An unknown reason is (NONE, DETAILS_NONE) with
//! the message kept.

use crate::proto::si::v1 as si;
use crate::proto::si18::v1 as si18;
use crate::scheduler::core::CONFIG_REJECTED_REASON;
use crate::scheduler::ugm::{APP_CANNOTRUN_QUOTA, APP_RUNNABLE_QUOTA};

use si18::event_record::{ChangeDetail as D, ChangeType as C, Type as T};

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
    si18::EventRecord {
        r#type: kind as i32,
        object_id: r.object_id.clone(),
        message: r.message.clone(),
        timestamp_nano: r.timestamp_nano,
        event_change_type: change as i32,
        event_change_detail: detail as i32,
        reference_id: r.group_id.clone(),
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
    }
}
