//! Direct protobuf encoding of the hottest outbound messages.
//!
//! New allocations go out by the thousand; building an `si.v1.Allocation`
//! of owned strings and maps only to encode and drop it again costs more
//! than the scheduling decision. These functions write the same bytes
//! straight from the core's shared records. The tests check them against
//! prost's encoding of the equivalent messages.

use crate::scheduler::alloc_uuid::TEXT_LEN;
use prost::encoding::{encoded_len_varint, key_len, WireType};

use std::sync::Arc;

use crate::scheduler::outcome::NewAllocation;
use crate::scheduler::port::PredicateCheck;
use crate::scheduler::resource::{Named, Resource};

/// A varint, inline: prost's `encode_varint` is generic over its buffer and
/// an out-of-line call per field, and almost every value here is one byte.
#[inline]
fn encode_varint(mut v: u64, buf: &mut Vec<u8>) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

#[inline]
fn encode_key(tag: u32, wire_type: WireType, buf: &mut Vec<u8>) {
    encode_varint(u64::from(tag << 3 | wire_type as u32), buf);
}

fn string_len(tag: u32, s: &str) -> usize {
    bytes_len(tag, s.len())
}

/// A string field of `len` bytes (none when empty).
fn bytes_len(tag: u32, len: usize) -> usize {
    if len == 0 {
        0
    } else {
        key_len(tag) + encoded_len_varint(len as u64) + len
    }
}

fn put_string(tag: u32, s: &str, buf: &mut Vec<u8>) {
    put_bytes(tag, s.as_bytes(), buf);
}

fn put_bytes(tag: u32, s: &[u8], buf: &mut Vec<u8>) {
    if !s.is_empty() {
        put_len(tag, s.len(), buf);
        buf.extend_from_slice(s);
    }
}

/// `PredicatesArgs`, whose fields both editions share, from the core's
/// borrowed question: one per node tried, so no message is built for it.
pub fn predicates_args_into(q: &PredicateCheck<'_>, buf: &mut Vec<u8>) {
    put_string(1, q.allocation_key, buf);
    put_string(2, q.node_id, buf);
    if q.allocate {
        encode_key(3, WireType::Varint, buf);
        buf.push(1);
    }
}

#[inline]
fn put_len(tag: u32, len: usize, buf: &mut Vec<u8>) {
    // Nearly every field here has a one-byte key and a one-byte length
    // (tags 1-15, under 128 bytes): two bytes, without the varint loops.
    if tag < 16 && len < 0x80 {
        buf.extend_from_slice(&[(tag << 3 | 2) as u8, len as u8]);
        return;
    }
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(len as u64, buf);
}

/// `Quantity { value = 1 }`.
fn quantity_len(v: i64) -> usize {
    if v == 0 {
        0
    } else {
        key_len(1) + encoded_len_varint(v as u64)
    }
}

/// One `map<string, Quantity>` entry: `{ key = 1; value = 2 }`.
fn resource_entry_len(name: &str, v: i64) -> usize {
    let q = quantity_len(v);
    string_len(1, name) + key_len(2) + encoded_len_varint(q as u64) + q
}

/// `Resource { map<string, Quantity> resources = 1 }`.
fn resource_len(r: &Named) -> usize {
    r.iter()
        .map(|(name, v)| {
            let e = resource_entry_len(name, v);
            key_len(1) + encoded_len_varint(e as u64) + e
        })
        .sum()
}

fn put_resource(r: &Named, buf: &mut Vec<u8>) {
    for (name, v) in r.iter() {
        put_len(1, resource_entry_len(name, v), buf);
        put_string(1, name, buf);
        put_len(2, quantity_len(v), buf);
        if v != 0 {
            encode_key(1, WireType::Varint, buf);
            encode_varint(v as u64, buf);
        }
    }
}

fn tags_entry_len(k: &str, v: &str) -> usize {
    string_len(1, k) + string_len(2, v)
}

/// `Priority { oneof { int32 priorityValue = 1 } }`, always set.
fn priority_len(p: i32) -> usize {
    key_len(1) + encoded_len_varint(p as i64 as u64)
}

/// The encoded length of one `si.v1.Allocation`; with `v1`, of the SI
/// v1.8 `Allocation` (no uuid or queue, `priority` a plain int32).
fn allocation_len(a: &NewAllocation, res_len: usize, v1: bool) -> usize {
    let tags: usize = a
        .tags
        .iter()
        .map(|(k, v)| {
            let e = tags_entry_len(k, v);
            key_len(2) + encoded_len_varint(e as u64) + e
        })
        .sum();
    let (uuid, priority, queue) = if v1 {
        let p = if a.priority == 0 {
            0
        } else {
            key_len(6) + encoded_len_varint(a.priority as i64 as u64)
        };
        (0, p, 0)
    } else {
        let pr = priority_len(a.priority);
        (
            bytes_len(3, a.uuid.len()),
            key_len(6) + encoded_len_varint(pr as u64) + pr,
            string_len(7, a.queue()),
        )
    };
    string_len(1, &a.key)
        + tags
        + uuid
        + key_len(5)
        + encoded_len_varint(res_len as u64)
        + res_len
        + priority
        + queue
        + string_len(8, &a.node)
        + string_len(9, a.app())
        + string_len(10, a.partition())
        + string_len(11, a.task_group())
        + if a.placeholder { key_len(12) + 1 } else { 0 }
        + if v1 { v1_preemption_len(a) } else { 0 }
}

/// SI v1.x `originator = 14` and `preemptionPolicy = 15` (always present,
/// as the reference's core echoes it), as [`put_allocation`] writes them.
fn v1_preemption_len(a: &NewAllocation) -> usize {
    let policy = usize::from(a.preempt_self) * 2 + usize::from(a.preempt_other) * 2;
    usize::from(a.originator) * (key_len(14) + 1) + key_len(15) + 1 + policy
}

/// An allocation's resource as [`put_allocation`] writes it.
enum ResourceBytes<'a> {
    /// Encoded from its names and quantities.
    Fresh(&'a Named<'a>),
    /// Copied from an earlier allocation's, at this range of the buffer.
    Copy(std::ops::Range<usize>),
}

/// Writes `a`; returns where its resource's bytes are in `buf`.
fn put_allocation(
    a: &NewAllocation,
    resource: ResourceBytes<'_>,
    res_len: usize,
    v1: bool,
    buf: &mut Vec<u8>,
) -> std::ops::Range<usize> {
    put_string(1, &a.key, buf);
    // Map entries in key order (Tags keeps them sorted), so the bytes are stable.
    for (k, v) in a.tags.iter() {
        put_len(2, tags_entry_len(k, v), buf);
        put_string(1, k, buf);
        put_string(2, v, buf);
    }
    if !v1 {
        put_bytes(3, a.uuid.as_bytes(&mut [0; TEXT_LEN]), buf);
    }
    put_len(5, res_len, buf);
    let start = buf.len();
    match resource {
        ResourceBytes::Fresh(named) => put_resource(named, buf),
        ResourceBytes::Copy(range) => buf.extend_from_within(range),
    }
    let written = start..buf.len();
    if !v1 {
        put_len(6, priority_len(a.priority), buf);
        encode_key(1, WireType::Varint, buf);
        encode_varint(a.priority as i64 as u64, buf);
        put_string(7, a.queue(), buf);
    } else if a.priority != 0 {
        encode_key(6, WireType::Varint, buf);
        encode_varint(a.priority as i64 as u64, buf);
    }
    put_string(8, &a.node, buf);
    put_string(9, a.app(), buf);
    put_string(10, a.partition(), buf);
    put_string(11, a.task_group(), buf);
    if a.placeholder {
        encode_key(12, WireType::Varint, buf);
        encode_varint(1, buf);
    }
    if v1 {
        if a.originator {
            encode_key(14, WireType::Varint, buf);
            encode_varint(1, buf);
        }
        let len = usize::from(a.preempt_self) * 2 + usize::from(a.preempt_other) * 2;
        put_len(15, len, buf);
        for (field, on) in [(1, a.preempt_self), (2, a.preempt_other)] {
            if on {
                encode_key(field, WireType::Varint, buf);
                encode_varint(1, buf);
            }
        }
    }
    written
}

/// `si.v1.AllocationResponse { repeated Allocation new = 1 }`.
pub fn allocation_response(new: &[Arc<NewAllocation>]) -> Vec<u8> {
    let mut buf = Vec::new();
    response_into(new, false, &mut buf);
    buf
}

/// Appends the SI v1.x `AllocationResponse { repeated Allocation new = 1 }`
/// to `buf` (the same field numbers as v0.12's, less uuid and queue).
pub fn allocation_response_v1_into(new: &[Arc<NewAllocation>], buf: &mut Vec<u8>) {
    response_into(new, true, buf);
}

fn response_into(new: &[Arc<NewAllocation>], v1: bool, buf: &mut Vec<u8>) {
    // One pass, each record's lengths computed once. The room is guessed
    // from the first record (a batch's records are alike; the vector grows
    // if not). A resource equal to the one before (a pass places many pods
    // of one shape) is copied from the bytes written for that one: naming
    // and encoding it took ~350 instructions, and the name table's lock.
    let mut last: Option<(&Resource, usize, std::ops::Range<usize>)> = None;
    for (i, a) in new.iter().enumerate() {
        let named;
        let (bytes, r) = match last.take() {
            Some((res, r, range)) if *res == a.resource => (ResourceBytes::Copy(range), r),
            _ => {
                named = a.resource.named();
                (ResourceBytes::Fresh(&named), resource_len(&named))
            }
        };
        let l = allocation_len(a, r, v1);
        if i == 0 {
            buf.reserve((key_len(1) + encoded_len_varint(l as u64) + l) * new.len());
        }
        put_len(1, l, buf);
        let written = put_allocation(a, bytes, r, v1, buf);
        last = Some((&a.resource, r, written));
    }
}

/// Appends `si.v1.ReSyncSchedulerCacheArgs { repeated AssumedAllocation
/// assumedAllocations = 1 }` with `AssumedAllocation { allocationKey = 1;
/// nodeID = 2 }` to `buf`.
pub fn assumed_allocations_into(new: &[Arc<NewAllocation>], buf: &mut Vec<u8>) {
    buf.reserve(new.len() * 48);
    for a in new {
        put_len(1, string_len(1, &a.key) + string_len(2, &a.node), buf);
        put_string(1, &a.key, buf);
        put_string(2, &a.node, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::si::v1 as si;
    use crate::scheduler::resource::Resource;
    use prost::Message;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn sample(i: i32, tags: &[(&str, &str)], placeholder: bool) -> Arc<NewAllocation> {
        Arc::new(NewAllocation {
            key: Arc::from(format!("ask-{i}").as_str()),
            uuid: "6f1c9a52-2a0b-4a39-9d7e-0c1f3b8b7a11".into(),
            node: Arc::from("node-00017"),
            ctx: crate::scheduler::outcome::AllocCtx::new(
                "app-1",
                "root.a",
                "default",
                if placeholder { "tg" } else { "" },
            ),
            resource: Resource::from_pairs([
                ("memory", 10 * i as i64),
                ("vcore", 1),
                ("gpu", 0),
                ("neg", -3),
            ])
            .unwrap(),
            priority: i - 2,
            tags: crate::scheduler::tags::Tags::from(
                tags.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>(),
            ),
            placeholder,
            preempt_self: true,
            preempt_other: true,
            originator: false,
        })
    }

    #[test]
    fn allocation_response_decodes_to_the_same_message() {
        let (long, mid) = ("x".repeat(300), "m".repeat(100));
        let v = vec![
            sample(0, &[], false),
            sample(1, &[("k", "v"), ("", "empty-key"), ("z", "")], true),
            sample(
                300,
                &[("yunikorn.apache.org/requiredNode", "node-00017")],
                false,
            ),
            // Two-byte lengths: a long value, and an entry of two short
            // strings that is long together.
            sample(5, &[("long", &long), (&mid, &mid)], false),
        ];
        let got = si::AllocationResponse::decode(allocation_response(&v).as_slice()).unwrap();
        let want = si::AllocationResponse {
            new: v.iter().map(|a| a.to_proto()).collect(),
            ..Default::default()
        };
        assert_eq!(got, want);
    }

    #[test]
    fn v1_allocation_response_decodes_to_the_adapters_message() {
        let (long, mid) = ("x".repeat(300), "m".repeat(100));
        use crate::proto::si18::v1 as si18;
        let mut v = vec![
            sample(0, &[], false),
            sample(1, &[("k", "v"), ("", "empty-key"), ("z", "")], true),
            sample(-300, &[("a", "b")], false),
            sample(5, &[("long", &long), (&mid, &mid)], false),
        ];
        // Priority 0 is left out of the v1 encoding; 2 - 2 = 0.
        v.push(sample(2, &[], false));
        // The preemption fields in every combination the echo can carry.
        for (i, (s, o, orig)) in [
            (false, false, true),
            (true, false, false),
            (false, true, true),
        ]
        .into_iter()
        .enumerate()
        {
            v.push(Arc::new(NewAllocation {
                preempt_self: s,
                preempt_other: o,
                originator: orig,
                ..(*sample(4 + i as i32, &[], false)).clone()
            }));
        }
        let mut buf = vec![];
        allocation_response_v1_into(&v, &mut buf);
        let got = si18::AllocationResponse::decode(buf.as_slice()).unwrap();
        let want = si18::AllocationResponse {
            new: v
                .iter()
                .map(|a| crate::rmproxy::v1::convert::new_allocation(a))
                .collect(),
            ..Default::default()
        };
        assert_eq!(got, want);
    }

    #[test]
    fn alike_resources_in_a_row_or_apart_encode_as_each_alone() {
        use crate::proto::si18::v1 as si18;
        // Runs of equal resources, a return to an earlier one, one with a
        // type more, and an empty one: each copied or encoded afresh.
        let shaped = |i: i32, pairs: &[(&str, i64)]| {
            Arc::new(NewAllocation {
                resource: Resource::from_pairs(pairs.iter().copied()).unwrap(),
                ..(*sample(i, &[("k", "v")], false)).clone()
            })
        };
        let small: &[(&str, i64)] = &[("memory", 10), ("vcore", 1)];
        let wide: &[(&str, i64)] = &[("memory", 10), ("pods", 1), ("vcore", 1)];
        let v: Vec<_> = [small, small, small, wide, small, &[], &[], small]
            .iter()
            .enumerate()
            .map(|(i, p)| shaped(i as i32, p))
            .collect();
        let got = si::AllocationResponse::decode(allocation_response(&v).as_slice()).unwrap();
        let want: Vec<_> = v.iter().map(|a| a.to_proto()).collect();
        assert_eq!(got.new, want);
        let mut buf = vec![];
        allocation_response_v1_into(&v, &mut buf);
        let got = si18::AllocationResponse::decode(buf.as_slice()).unwrap();
        let want: Vec<_> = v
            .iter()
            .map(|a| crate::rmproxy::v1::convert::new_allocation(a))
            .collect();
        assert_eq!(got.new, want);
        // And byte for byte as when each is encoded alone.
        let alone: Vec<u8> = v
            .iter()
            .flat_map(|a| allocation_response(std::slice::from_ref(a)))
            .collect();
        assert_eq!(allocation_response(&v), alone);
    }

    #[test]
    fn assumed_allocations_decode_to_the_same_message() {
        let v = vec![sample(1, &[], false), sample(2, &[], false)];
        let mut buf = Vec::new();
        assumed_allocations_into(&v, &mut buf);
        let got = si::ReSyncSchedulerCacheArgs::decode(buf.as_slice()).unwrap();
        assert_eq!(got.assumed_allocations.len(), 2);
        assert_eq!(got.assumed_allocations[1].allocation_key, "ask-2");
        assert_eq!(got.assumed_allocations[1].node_id, "node-00017");
        assert!(got.forget_allocations.is_empty());
    }

    #[test]
    fn predicates_args_are_the_bytes_prost_writes_in_both_editions() {
        use crate::proto::si18::v1 as si18;
        let long = "n".repeat(300); // a two-byte length
        for (key, node, allocate) in [
            ("alloc-1-7", "node-00017", true),
            ("", "", false),
            ("ключ", &*long, false),
            ("k", "", true),
        ] {
            let mut buf = Vec::new();
            predicates_args_into(
                &PredicateCheck {
                    allocation_key: key,
                    node_id: node,
                    allocate,
                },
                &mut buf,
            );
            let v0 = si::PredicatesArgs {
                allocation_key: key.into(),
                node_id: node.into(),
                allocate,
            };
            let v1 = si18::PredicatesArgs {
                allocation_key: key.into(),
                node_id: node.into(),
                allocate,
            };
            assert_eq!(buf, v0.encode_to_vec(), "{key:?} {allocate}");
            assert_eq!(buf, v1.encode_to_vec(), "{key:?} {allocate}");
        }
    }
}
