//! The v0.12 request decoder against prost: random, merged and hand-made
//! requests.

use super::test_bytes::{alike_resource_fields, groups, len_field};
use super::*;
use std::collections::BTreeMap;

fn random_request(rng: &mut fastrand::Rng) -> si::AllocationRequest {
    let names = ["memory", "vcore", "nvidia.com/gpu", "", "ephemeral-storage"];
    let asks = (0..rng.usize(0..6))
        .map(|i| si::AllocationAsk {
            allocation_key: if rng.u8(..) < 20 {
                String::new()
            } else {
                format!("ask-{i}-{}", rng.u32(..))
            },
            application_id: format!("app-{}", rng.u8(0..3)),
            partition_name: ["default", "", "gpu"][rng.usize(0..3)].to_string(),
            resource_ask: rng.bool().then(|| si::Resource {
                resources: (0..rng.usize(0..4))
                    .map(|_| {
                        (
                            names[rng.usize(0..names.len())].to_string(),
                            si::Quantity {
                                value: rng.i64(-5..1 << 40),
                            },
                        )
                    })
                    .collect(),
            }),
            max_allocations: rng.i32(-2..5),
            priority: match rng.u8(0..4) {
                0 => None,
                1 => Some(si::Priority { priority: None }),
                2 => Some(si::Priority {
                    priority: Some(si::priority::Priority::PriorityValue(rng.i32(..))),
                }),
                _ => Some(si::Priority {
                    priority: Some(si::priority::Priority::PriorityClassName("high".into())),
                }),
            },
            execution_timeout_milli_seconds: rng.i64(..),
            tags: match rng.u8(0..4) {
                0 => BTreeMap::new(),
                1 => [(TAG_REQUIRED_NODE.to_string(), "node-7".to_string())].into(),
                2 => [(
                    crate::scheduler::request::TAG_ALLOW_PREEMPTION_LABEL.to_string(),
                    "False".to_string(),
                )]
                .into(),
                _ => [
                    ("a".to_string(), "b".to_string()),
                    ("".to_string(), "".to_string()),
                ]
                .into(),
            },
            task_group_name: if rng.bool() {
                String::new()
            } else {
                "tg".into()
            },
            placeholder: rng.bool(),
        })
        .collect();
    let releases = rng.bool().then(|| si::AllocationReleasesRequest {
        allocations_to_release: vec![si::AllocationRelease {
            partition_name: "default".into(),
            application_id: "app-1".into(),
            uuid: "u".into(),
            termination_type: 1,
            message: "m".into(),
        }],
        allocation_asks_to_release: vec![],
    });
    si::AllocationRequest {
        asks,
        releases,
        rm_id: if rng.bool() {
            "rm".into()
        } else {
            String::new()
        },
    }
}

fn through_prost(bytes: &[u8]) -> Option<AllocationUpdate> {
    si::AllocationRequest::decode(bytes)
        .ok()
        .map(AllocationUpdate::from_proto)
}

#[test]
fn the_allow_preemption_tag_opts_a_v012_ask_out() {
    use crate::scheduler::request::{TAG_ALLOW_PREEMPTION, TAG_ALLOW_PREEMPTION_LABEL};
    for (tags, opted_in) in [
        (vec![], true),
        (vec![(TAG_ALLOW_PREEMPTION, "false")], false),
        (vec![(TAG_ALLOW_PREEMPTION_LABEL, "FALSE")], false),
        (vec![(TAG_ALLOW_PREEMPTION, "true")], true),
        (vec![(TAG_ALLOW_PREEMPTION, "no")], true),
        (vec![("other", "false")], true),
    ] {
        let ask = si::AllocationAsk {
            allocation_key: "k".into(),
            application_id: "app".into(),
            max_allocations: 1,
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        };
        let bytes = si::AllocationRequest {
            asks: vec![ask],
            rm_id: "rm".into(),
            ..Default::default()
        }
        .encode_to_vec();
        let u = decode_allocation_update(&bytes).expect("valid message");
        assert_eq!(u.asks[0].preempt_self, opted_in, "{tags:?}");
        assert!(u.asks[0].preempt_other && !u.asks[0].originator);
    }
}

#[test]
fn application_and_partition_strings_are_shared_across_requests_and_alternating_asks() {
    let ask = |key: &str, app: &str| si::AllocationAsk {
        allocation_key: key.into(),
        application_id: app.into(),
        partition_name: "default".into(),
        max_allocations: 1,
        ..Default::default()
    };
    let request = |asks| {
        si::AllocationRequest {
            asks,
            rm_id: "rm".into(),
            ..Default::default()
        }
        .encode_to_vec()
    };
    // Two applications in turn, as one request and as the next one.
    let one = request(vec![
        ask("a", "app-1"),
        ask("b", "app-2"),
        ask("c", "app-1"),
    ]);
    let two = request(vec![ask("d", "app-2")]);
    let u1 = decode_allocation_update(&one).expect("valid message");
    let u2 = decode_allocation_update(&two).expect("valid message");
    super::test_bytes::assert_app_and_partition_shared(&u1, &u2);
}

#[test]
fn a_length_is_read_whatever_its_varints_size_and_refused_past_the_end() {
    for len in [0usize, 1, 5, 126, 127, 128, 129, 300, 16_384] {
        for have in [len.saturating_sub(1), len, len + 3] {
            let mut bytes = Vec::new();
            prost::encoding::encode_varint(len as u64, &mut bytes);
            bytes.extend(std::iter::repeat_n(7u8, have));
            let mut buf = &bytes[..];
            match read_len(&mut buf, "f") {
                Ok(body) => {
                    assert!(have >= len, "{len} of {have}");
                    assert_eq!(body.len(), len);
                    assert_eq!(buf.len(), have - len);
                }
                Err(e) => {
                    assert!(have < len, "{len} of {have}: {e}");
                    assert_eq!(e, "buffer underflow in f");
                }
            }
        }
    }
    // No length at all, and one cut short.
    assert!(read_len(&mut &[][..], "f").is_err());
    assert!(read_len(&mut &[0x80][..], "f").is_err());
}

#[test]
fn agrees_with_prost_on_random_requests() {
    let mut rng = fastrand::Rng::with_seed(11);
    for _ in 0..3000 {
        let bytes = random_request(&mut rng).encode_to_vec();
        let direct = decode_allocation_update(&bytes).expect("valid message");
        assert_eq!(Some(direct), through_prost(&bytes));
    }
}

#[test]
fn alike_resources_decode_as_through_prost() {
    let mut rng = fastrand::Rng::with_seed(13);
    for _ in 0..2000 {
        let mut bytes = Vec::new();
        for i in 0..rng.usize(1..8) {
            let mut ask = [
                len_field(1, format!("pod-{i}").as_bytes()),
                len_field(2, b"app"),
            ]
            .concat();
            for body in alike_resource_fields(&mut rng) {
                ask.extend(len_field(4, &body));
            }
            bytes.extend(len_field(1, &ask));
        }
        let direct = decode_allocation_update(&bytes).ok();
        assert_eq!(direct, through_prost(&bytes), "bytes {bytes:?}");
    }
}

#[test]
fn concatenated_messages_merge_as_in_prost() {
    let mut rng = fastrand::Rng::with_seed(12);
    for _ in 0..500 {
        let mut bytes = random_request(&mut rng).encode_to_vec();
        bytes.extend(random_request(&mut rng).encode_to_vec());
        assert_eq!(decode_allocation_update(&bytes).ok(), through_prost(&bytes));
    }
    // A resourceAsk sent twice merges its map; a later value wins.
    let part = |name: &str, v: i64| si::AllocationAsk {
        resource_ask: Some(si::Resource {
            resources: [(name.to_string(), si::Quantity { value: v })].into(),
        }),
        ..Default::default()
    };
    let mut ask = part("memory", 1).encode_to_vec();
    ask.extend(part("vcore", 2).encode_to_vec());
    ask.extend(part("memory", 3).encode_to_vec());
    let req = [&[0x0a, ask.len() as u8][..], &ask].concat();
    let got = decode_allocation_update(&req).unwrap();
    assert_eq!(
        got.asks[0].resource,
        Ok(Resource::from_pairs([("memory", 3), ("vcore", 2)]).unwrap())
    );
    assert_eq!(Some(got), through_prost(&req));
}

#[test]
fn refuses_what_prost_refuses() {
    let mut rng = fastrand::Rng::with_seed(13);
    let mut refused = 0;
    for _ in 0..5000 {
        let mut bytes = random_request(&mut rng).encode_to_vec();
        if bytes.is_empty() {
            continue;
        }
        test_bytes::corrupt(&mut rng, &mut bytes, 3);
        let direct = decode_allocation_update(&bytes);
        refused += direct.is_err() as usize;
        assert_eq!(direct.ok(), through_prost(&bytes), "bytes {bytes:?}");
    }
    assert!(
        refused > 500,
        "the corruptions must exercise the error paths"
    );
}

#[test]
fn nested_groups_meet_prosts_recursion_limit_at_every_depth() {
    let with = |mut m: Vec<u8>, g: &[u8]| {
        m.extend_from_slice(g);
        m
    };
    for levels in 90..=102 {
        let g = groups(levels);
        let quantity = with(si::Quantity { value: 3 }.encode_to_vec(), &g);
        let entry = with(
            [len_field(1, b"memory"), len_field(2, &quantity)].concat(),
            &[],
        );
        let entry_g = with(entry.clone(), &g);
        let resource = |e: &[u8]| len_field(4, &len_field(1, e));
        let priority = len_field(6, &with(vec![8, 5], &g));
        let tag = len_field(
            8,
            &with([len_field(1, b"k"), len_field(2, b"v")].concat(), &g),
        );
        let ask_with = |f: Vec<u8>| len_field(1, &with(len_field(1, b"key"), &f));
        let release = si::AllocationRelease {
            uuid: "u".into(),
            ..Default::default()
        }
        .encode_to_vec();
        let releases = [
            len_field(2, &with(vec![], &g)),
            len_field(2, &len_field(1, &with(release, &g))),
        ];
        let mut cases = vec![
            ask_with(resource(&entry)),
            ask_with(resource(&entry_g)),
            ask_with(priority),
            ask_with(tag),
        ];
        cases.extend(releases);
        for (i, bytes) in cases.iter().enumerate() {
            assert_eq!(
                decode_allocation_update(bytes).ok(),
                through_prost(bytes),
                "case {i}, {levels} levels"
            );
        }
    }
}
