//! The direct v1 decoder against prost plus `check_allocation` and
//! `allocation_update`: random, merged, corrupted and hand-made requests.

use std::collections::BTreeMap;
use std::sync::Arc;

use prost::encoding::{encode_key, encode_varint, WireType};
use prost::Message;

use super::super::super::wire::test_bytes::{alike_resource_fields, corrupt, groups, len_field};
use super::*;
use crate::error::Status;
use crate::scheduler::objects::application::TAG_REQUIRED_NODE;
use crate::scheduler::request::TAG_ALLOW_PREEMPTION;
use crate::scheduler::resource::ResourceNames;

fn pick<'a>(rng: &mut fastrand::Rng, from: &[&'a str]) -> &'a str {
    from[rng.usize(0..from.len())]
}

fn random_allocation(rng: &mut fastrand::Rng, i: usize) -> si18::Allocation {
    let names = ["memory", "vcore", "nvidia.com/gpu", "", "pods"];
    let mut tags = BTreeMap::new();
    for _ in 0..rng.usize(0..3) {
        let (k, v) = match rng.u8(0..8) {
            0 => (TAG_FOREIGN, pick(rng, &["default", "static", ""])),
            1 => (TAG_REQUIRED_NODE, "node-7"),
            2 => (TAG_ALLOW_PREEMPTION, "false"),
            3 => ("creationTime", "1700000000"),
            4 => ("", ""),
            _ => ("kubernetes.io/meta/namespace", pick(rng, &["a", "b"])),
        };
        tags.insert(k.to_string(), v.to_string());
    }
    si18::Allocation {
        // Rarely empty or refused, so most requests pass the checks.
        allocation_key: if rng.u8(..) < 4 {
            String::new()
        } else {
            format!("pod-{i}-{}", rng.u16(..))
        },
        allocation_tags: tags,
        resource_per_alloc: (rng.u8(0..5) > 0).then(|| si18::Resource {
            resources: (0..rng.usize(0..4))
                .map(|_| {
                    let value = rng.i64(-5..1 << 40);
                    (pick(rng, &names).to_string(), si18::Quantity { value })
                })
                .collect(),
        }),
        priority: match rng.u8(0..3) {
            0 => 0,
            1 => rng.i32(-100..1000),
            _ => rng.i32(..),
        },
        node_id: pick(rng, &["", "", "node-1", "node-2"]).to_string(),
        application_id: if rng.u8(..) < 4 {
            String::new()
        } else {
            pick(rng, &["app-1", "app-1", "app-2"]).to_string()
        },
        partition_name: if rng.u8(..) < 3 {
            "[other]default".to_string()
        } else {
            pick(rng, &["", "default", "[rm]default", "gpu"]).to_string()
        },
        task_group_name: pick(rng, &["", "", "tg-a", "tg-b"]).to_string(),
        placeholder: rng.u8(0..4) == 0,
        originator: rng.bool(),
        preemption_policy: rng.bool().then(|| si18::PreemptionPolicy {
            allow_preempt_self: rng.bool(),
            allow_preempt_other: rng.bool(),
        }),
    }
}

fn random_request(rng: &mut fastrand::Rng) -> si18::AllocationRequest {
    let releases = (rng.u8(0..3) == 0).then(|| si18::AllocationReleasesRequest {
        allocations_to_release: (0..rng.usize(0..3))
            .map(|i| si18::AllocationRelease {
                partition_name: if rng.u8(..) < 8 {
                    "[other]x".to_string()
                } else {
                    pick(rng, &["", "default"]).to_string()
                },
                application_id: pick(rng, &["app-1", "app-1", ""]).to_string(),
                termination_type: rng.i32(0..5),
                message: pick(rng, &["", "gone"]).to_string(),
                allocation_key: if rng.u8(..) < 40 {
                    String::new()
                } else {
                    format!("pod-{i}")
                },
            })
            .collect(),
    });
    si18::AllocationRequest {
        releases,
        rm_id: pick(rng, &["rm", "rm", "rm", ""]).to_string(),
        allocations: (0..rng.usize(0..7))
            .map(|i| random_allocation(rng, i))
            .collect(),
    }
}

type Outcome = std::result::Result<AllocationUpdate, Error>;

/// Both paths in a new table, as a scheduler's: the first to meet a name
/// interns it, the other finds it.
fn both(bytes: &[u8]) -> (Outcome, Outcome) {
    both_in(&ResourceNames::new(), bytes)
}

fn both_in(names: &Arc<ResourceNames>, bytes: &[u8]) -> (Outcome, Outcome) {
    names.charged_to_scheduler(|| {
        (
            decode_allocation_request(bytes),
            decode_allocation_request_prost(bytes),
        )
    })
}

#[test]
fn agrees_with_prost_on_random_requests() {
    let mut rng = fastrand::Rng::with_seed(21);
    let (mut ok, mut refused, mut placed, mut foreign) = (0, 0, 0, 0);
    for _ in 0..4000 {
        let bytes = random_request(&mut rng).encode_to_vec();
        let (direct, prost) = both(&bytes);
        assert_eq!(direct, prost, "bytes {bytes:?}");
        match direct {
            Ok(u) => {
                ok += 1;
                placed += u.placed.len();
                foreign += u.foreign.len();
            }
            Err(_) => refused += 1,
        }
    }
    // The generator reaches every outcome.
    assert!(ok > 1000 && refused > 500, "{ok} ok, {refused} refused");
    assert!(
        placed > 500 && foreign > 500,
        "{placed} placed, {foreign} foreign"
    );
}

#[test]
fn concatenated_requests_merge_as_in_prost() {
    let mut rng = fastrand::Rng::with_seed(22);
    for _ in 0..1000 {
        let mut bytes = random_request(&mut rng).encode_to_vec();
        bytes.extend(random_request(&mut rng).encode_to_vec());
        let (direct, prost) = both(&bytes);
        assert_eq!(direct, prost, "bytes {bytes:?}");
    }
}

fn varint_field(tag: u32, v: u64) -> Vec<u8> {
    let mut b = Vec::new();
    encode_key(tag, WireType::Varint, &mut b);
    encode_varint(v, &mut b);
    b
}

/// One unknown field of each wire type (a group with a field inside).
fn unknown_fields(tag: u32) -> Vec<u8> {
    let mut b = varint_field(tag, 300);
    encode_key(tag, WireType::SixtyFourBit, &mut b);
    b.extend_from_slice(&[1; 8]);
    encode_key(tag, WireType::ThirtyTwoBit, &mut b);
    b.extend_from_slice(&[2; 4]);
    b.extend(len_field(tag, b"xyz"));
    encode_key(tag, WireType::StartGroup, &mut b);
    b.extend(varint_field(1, 5));
    encode_key(tag, WireType::EndGroup, &mut b);
    b
}

fn request(allocations: &[Vec<u8>]) -> Vec<u8> {
    let mut b = len_field(3, b"rm");
    for a in allocations {
        b.extend(len_field(4, a));
    }
    b
}

fn decoded(bytes: &[u8]) -> AllocationUpdate {
    let (direct, prost) = both(bytes);
    assert_eq!(direct, prost);
    direct.expect("a valid request")
}

#[test]
fn application_and_partition_strings_are_shared_across_requests_and_alternating_pods() {
    let pod = |key: &str, app: &str| {
        [
            len_field(1, key.as_bytes()),
            len_field(9, app.as_bytes()),
            len_field(10, b"default"),
        ]
        .concat()
    };
    // Two applications in turn, in one request and in the next.
    let one = decoded(&request(&[
        pod("a", "app-1"),
        pod("b", "app-2"),
        pod("c", "app-1"),
    ]));
    let two = decoded(&request(&[pod("d", "app-2")]));
    super::super::super::wire::test_bytes::assert_app_and_partition_shared(&one, &two);
}

#[test]
fn alike_resources_decode_as_through_prost() {
    let mut rng = fastrand::Rng::with_seed(23);
    for _ in 0..2000 {
        let allocations: Vec<Vec<u8>> = (0..rng.usize(1..8))
            .map(|i| {
                let mut a = [
                    len_field(1, format!("pod-{i}").as_bytes()),
                    len_field(9, b"app"),
                ]
                .concat();
                for body in alike_resource_fields(&mut rng) {
                    a.extend(len_field(5, &body));
                }
                a
            })
            .collect();
        let bytes = request(&allocations);
        let (direct, prost) = both(&bytes);
        assert_eq!(direct, prost, "bytes {bytes:?}");
    }
}

#[test]
fn fields_merge_as_in_prost() {
    let entry = |k: &[u8], q: i64| {
        let quantity = varint_field(1, q as u64);
        len_field(1, &[len_field(1, k), len_field(2, &quantity)].concat())
    };
    let tag = |k: &[u8], v: &[u8]| len_field(2, &[len_field(1, k), len_field(2, v)].concat());
    let alloc = [
        len_field(1, b"first"),
        len_field(1, b"pod"),
        len_field(9, b"app"),
        // A resource sent twice merges its map; a later value wins.
        len_field(5, &[entry(b"memory", 1), entry(b"vcore", 2)].concat()),
        len_field(5, &entry(b"memory", 3)),
        varint_field(6, 7),
        varint_field(6, u64::MAX), // an int32 sent as 10 bytes: -1
        tag(b"a", b"1"),
        tag(b"a", b"2"),
        // Map entries without a key or a value.
        len_field(2, &len_field(2, b"no key")),
        len_field(2, &len_field(1, b"no value")),
        varint_field(12, 1),
        varint_field(12, 0),
        varint_field(14, 2),
        // A policy sent twice: the second changes only what it carries.
        len_field(15, &varint_field(1, 1)),
        len_field(15, &varint_field(2, 1)),
        unknown_fields(3),
        unknown_fields(13),
        unknown_fields(99),
    ]
    .concat();
    let mut bytes = request(&[alloc]);
    bytes.extend(unknown_fields(1));
    // The table stays for the names to be read back.
    let names = ResourceNames::new();
    let (direct, prost) = both_in(&names, &bytes);
    assert_eq!(direct, prost);
    let u = direct.unwrap();
    let a = &u.asks[0];
    assert_eq!(&*a.key, "pod");
    assert_eq!(a.priority, -1);
    let resource = a.resource.as_ref().unwrap().to_named();
    assert_eq!(resource, [("memory".into(), 3), ("vcore".into(), 2)].into());
    let tags: Vec<_> = a.tags.iter().collect();
    assert_eq!(tags, [("", "no key"), ("a", "2"), ("no value", "")]);
    assert!(!a.placeholder && a.originator && a.preempt_self && a.preempt_other);
}

#[test]
fn tags_are_utf8_checked_as_prost_checks_them() {
    let tag = |k: &[u8], v: &[u8]| len_field(2, &[len_field(1, k), len_field(2, v)].concat());
    let alloc = |tags: &[Vec<u8>]| {
        [len_field(1, b"pod"), len_field(9, b"app")]
            .into_iter()
            .chain(tags.iter().cloned())
            .collect::<Vec<_>>()
            .concat()
    };
    let e = "é".as_bytes();
    let long = vec![b'x'; 200];
    let refused: [&[Vec<u8>]; 5] = [
        &[tag(b"k", &[0xff])],
        &[tag(&[0xff], b"v")],
        // Half a character as the key, the other half as its value.
        &[tag(&e[..1], &e[1..])],
        // A bad value replaced by a later one with its key.
        &[tag(b"k", &[0xc3]), tag(b"k", b"ok")],
        // A long value (a two-byte length: the general reader).
        &[tag(b"k", &[long.as_slice(), &[0xff]].concat())],
    ];
    for tags in refused {
        let (direct, prost) = both(&request(&[alloc(tags)]));
        assert_eq!(direct, prost, "{tags:?}");
        assert_eq!(direct.unwrap_err().status, Status::DecodeError, "{tags:?}");
    }
    let taken = [
        tag("é".as_bytes(), "ü€😀".as_bytes()),
        tag(&long, &long),
        tag(b"", b""),
        tag(b"k", b"1"),
        tag(b"k", b"2"),
    ];
    let (direct, prost) = both(&request(&[alloc(&taken)]));
    assert_eq!(direct, prost);
    let u = direct.unwrap();
    let tags: Vec<_> = u.asks[0].tags.iter().collect();
    let long = std::str::from_utf8(&long).unwrap();
    assert_eq!(tags, [("", ""), ("k", "2"), (long, long), ("é", "ü€😀")]);
}

#[test]
fn allocations_go_where_the_prost_path_puts_them() {
    let alloc = |key: &str, node: &str, extra: Vec<u8>| {
        [
            len_field(1, key.as_bytes()),
            len_field(9, b"app"),
            len_field(8, node.as_bytes()),
            extra,
        ]
        .concat()
    };
    let foreign = |kind: &str| {
        len_field(
            2,
            &[len_field(1, b"foreign"), len_field(2, kind.as_bytes())].concat(),
        )
    };
    let bytes = request(&[
        alloc("ask", "", vec![]),
        alloc("placed", "node-1", vec![]),
        alloc("static", "node-1", foreign("static")),
        alloc("default", "node-2", foreign("default")),
        // A placeholder without a task group is dropped; with one it stays.
        alloc("ph", "", varint_field(12, 1)),
        alloc(
            "ph-tg",
            "",
            [varint_field(12, 1), len_field(11, b"tg")].concat(),
        ),
    ]);
    let u = decoded(&bytes);
    let keys = |v: Vec<&str>| v.join(",");
    assert_eq!(keys(u.asks.iter().map(|a| &*a.key).collect()), "ask,ph-tg");
    assert_eq!(&*u.placed[0].node, "node-1");
    assert_eq!(u.foreign.len(), 2);
    assert!(!u.foreign[0].preemptable && u.foreign[1].preemptable);
    // Each vector was made at its final size.
    assert_eq!(
        (u.asks.capacity(), u.placed.capacity(), u.foreign.capacity()),
        (2, 1, 2)
    );
}

#[test]
fn the_golden_request_decodes_as_through_prost() {
    let bytes = include_bytes!("../../../../tests/golden/v1/allocations.bin");
    let u = decoded(bytes);
    assert_eq!(u.rm_id, "golden-rm");
    assert!(!u.asks.is_empty() && !u.placed.is_empty() && !u.foreign.is_empty());
    assert!(u.releases.is_some());
}

#[test]
fn checks_fail_in_prosts_order_and_a_malformed_request_fails_first() {
    let good = [len_field(1, b"k"), len_field(9, b"app")].concat();
    let no_key = len_field(9, b"app");
    let other = [good.clone(), len_field(10, b"[x]default")].concat();
    let release = |fields: Vec<u8>| len_field(2, &len_field(1, &fields));
    let empty_release = release(len_field(5, b"msg"));
    // The first allocation that fails, before any release.
    let mut bytes = empty_release.clone();
    bytes.extend(request(&[good.clone(), other.clone(), no_key.clone()]));
    let (direct, prost) = both(&bytes);
    assert_eq!(direct, prost);
    let e = direct.unwrap_err();
    assert_eq!(e.status, Status::Rejected);
    assert!(
        e.message.contains("allocations[1].partitionName"),
        "{}",
        e.message
    );
    // Releases are counted across the occurrences of the field.
    let mut bytes = request(std::slice::from_ref(&good));
    bytes.extend(release(len_field(2, b"app")));
    bytes.extend(empty_release.clone());
    let (direct, prost) = both(&bytes);
    assert_eq!(direct, prost);
    assert!(direct
        .unwrap_err()
        .message
        .contains("allocationsToRelease[1]"));
    // A malformed allocation after a failed check: the decode error wins.
    let mut bytes = request(&[no_key, good]);
    bytes.extend(len_field(4, &[0x0a, 0x05, b'x']));
    let (direct, prost) = both(&bytes);
    assert_eq!(direct, prost);
    assert_eq!(direct.unwrap_err().status, Status::DecodeError);
}

#[test]
fn a_refused_request_interns_nothing() {
    let resource = len_field(5, &len_field(1, &len_field(1, b"example.com/refused")));
    let ok = [len_field(1, b"k"), len_field(9, b"app"), resource].concat();
    let bytes = request(&[ok.clone(), len_field(9, b"app")]);
    let names = ResourceNames::new();
    let e = names.charged_to_scheduler(|| decode_allocation_request(&bytes));
    assert_eq!(e.unwrap_err().status, Status::InvalidArgument);
    assert_eq!(names.len(), 0, "nothing interned for a refused request");
    let bytes = request(&[ok]);
    assert!(names
        .charged_to_scheduler(|| decode_allocation_request(&bytes))
        .is_ok());
    assert_eq!(names.len(), 1);
}

#[test]
fn refuses_what_prost_refuses() {
    let mut rng = fastrand::Rng::with_seed(23);
    let mut refused = 0;
    for _ in 0..6000 {
        let mut bytes = random_request(&mut rng).encode_to_vec();
        if bytes.is_empty() {
            continue;
        }
        corrupt(&mut rng, &mut bytes, 4);
        let (direct, prost) = both(&bytes);
        refused += (prost.as_ref().err().map(|e| e.status) == Some(Status::DecodeError)) as usize;
        assert_eq!(direct, prost, "bytes {bytes:?}");
    }
    assert!(
        refused > 1500,
        "the corruptions must exercise the decode errors: {refused}"
    );
}

#[test]
fn nested_groups_meet_prosts_recursion_limit_at_every_depth() {
    let with = |m: &[u8], g: &[u8]| [m, g].concat();
    for levels in 94..=101 {
        let g = groups(levels);
        let quantity = with(&varint_field(1, 3), &g);
        let entry = [len_field(1, b"memory"), len_field(2, &quantity)].concat();
        let resource = |e: &[u8]| len_field(5, &len_field(1, e));
        let alloc = |f: Vec<u8>| {
            let a = [len_field(1, b"key"), len_field(9, b"app"), f].concat();
            len_field(4, &a)
        };
        let tag = [len_field(1, b"k"), len_field(2, b"v")].concat();
        let release = [len_field(2, b"app"), len_field(6, b"k")].concat();
        let cases = [
            with(&[], &g),
            alloc(g.clone()),
            alloc(resource(&entry)),
            alloc(resource(&with(&entry, &g))),
            alloc(len_field(5, &g)),
            alloc(len_field(2, &with(&tag, &g))),
            alloc(len_field(15, &with(&varint_field(1, 1), &g))),
            len_field(2, &g),
            len_field(2, &len_field(1, &with(&release, &g))),
        ];
        for (i, case) in cases.iter().enumerate() {
            let bytes = [len_field(3, b"rm"), case.clone()].concat();
            let (direct, prost) = both(&bytes);
            assert_eq!(direct, prost, "case {i}, {levels} levels");
        }
    }
}

#[test]
fn a_full_share_refuses_the_same_name_either_way() {
    use crate::scheduler::resource::{intern, MAX_RESOURCE_TYPES_PER_RM};
    // Two names, sent out of name order, where the RM's share has room
    // for one more: both paths take "aa" and refuse "zz".
    let entry = |k: &[u8]| {
        len_field(
            1,
            &[len_field(1, k), len_field(2, &varint_field(1, 1))].concat(),
        )
    };
    let alloc = [
        len_field(1, b"k"),
        len_field(9, b"app"),
        len_field(5, &[entry(b"zz"), entry(b"aa")].concat()),
    ]
    .concat();
    let bytes = request(&[alloc]);
    let nearly_full = || {
        let names = ResourceNames::new();
        names.charged_to("rm", || {
            for i in 0..MAX_RESOURCE_TYPES_PER_RM - 1 {
                intern(&format!("n{i}")).unwrap();
            }
        });
        names
    };
    let (a, b) = (nearly_full(), nearly_full());
    let direct = a
        .charged_to("rm", || decode_allocation_request(&bytes))
        .unwrap();
    let prost = b
        .charged_to("rm", || decode_allocation_request_prost(&bytes))
        .unwrap();
    assert_eq!(direct.asks[0].resource, prost.asks[0].resource);
    let e = direct.asks[0].resource.clone().unwrap_err();
    assert!(e.contains("zz"), "{e}");
}
