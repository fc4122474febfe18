//! What the bench's RM requests: the request shape, the limits, the SI
//! edition, the resource types and the asks' identity it is run with
//! (`--shape`, `--limits`, `--edition`, `--resources`, `--asks`), and the
//! encoded allocation requests.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use prost::Message;
use sicore::proto::si::v1 as si;
use sicore::proto::si18::v1 as si18;

use super::CONFIG;

/// `--resources k8s`: nodes of the six types the k8shim reports for a
/// Kubernetes node (cpu as vcore, memory, pods, ephemeral storage and two
/// huge-page sizes, these zero), and asks of a pod's three (vcore, memory,
/// pods). The default is the reference benchmark's two types.
pub static K8S_RESOURCES: AtomicBool = AtomicBool::new(false);

/// A node's resource with room for `k` asks.
pub fn node_resource(k: i64) -> Vec<(&'static str, i64)> {
    let mut r = vec![("memory", 10 * k), ("vcore", k)];
    if K8S_RESOURCES.load(Ordering::Relaxed) {
        r.extend([
            ("pods", 110 + k),
            ("ephemeral-storage", 100 << 30),
            ("hugepages-1Gi", 0),
            ("hugepages-2Mi", 0),
        ]);
    }
    r
}

/// An ask's resource (a constant: the requests are built within the
/// measured work, as the RM's).
pub fn ask_resource() -> &'static [(&'static str, i64)] {
    if K8S_RESOURCES.load(Ordering::Relaxed) {
        &[("memory", 10), ("vcore", 1), ("pods", 1)]
    } else {
        &[("memory", 10), ("vcore", 1)]
    }
}

/// `--asks k8s`: single asks as the k8shim sends a pod: keyed by a pod
/// UID, with the tags it makes from the pod (namespace, name, two labels
/// of a Deployment's pod; SI v1.x also its creation time). The default is
/// the reference benchmark's short keys without tags.
pub static K8S_ASKS: AtomicBool = AtomicBool::new(false);

/// The key of single ask `i`: a pod UID with `--asks k8s`.
fn ask_key(i: usize) -> String {
    if K8S_ASKS.load(Ordering::Relaxed) {
        format!("6f1c2a9e-{:04x}-4c1d-9a7b-{:012x}", i >> 16 & 0xffff, i)
    } else {
        format!("ask-{i}")
    }
}

/// The tags of single ask `i` (none unless `--asks k8s`).
fn ask_tags(i: usize, edition: Edition) -> BTreeMap<String, String> {
    if !K8S_ASKS.load(Ordering::Relaxed) {
        return BTreeMap::new();
    }
    let mut tags = BTreeMap::from([
        (
            "kubernetes.io/meta/namespace".to_string(),
            "bench".to_string(),
        ),
        (
            "kubernetes.io/meta/podName".to_string(),
            format!("bench-web-7d9f8c6b5-{i:05}"),
        ),
        (
            "kubernetes.io/label/app".to_string(),
            "bench-web".to_string(),
        ),
        (
            "kubernetes.io/label/pod-template-hash".to_string(),
            "7d9f8c6b5".to_string(),
        ),
    ]);
    if edition == Edition::V1 {
        tags.insert("creationTime".to_string(), "1764979200".to_string());
    }
    tags
}

fn res() -> Option<si::Resource> {
    sicore_c_rm::res(ask_resource())
}

/// How the asks are requested.
#[derive(Clone, Copy, PartialEq)]
pub enum Shape {
    /// One ask per allocation (`maxAllocations` 1), in requests of 5,000.
    Asks,
    /// The reference's shape: one ask per application whose
    /// `maxAllocations` covers half of the allocations, one request each.
    Apps,
}

/// User/group limits in the bench's configuration (`--limits`).
#[derive(Clone, Copy, PartialEq)]
pub enum Limits {
    /// None configured.
    None,
    /// Caps that never bind.
    Loose,
    /// 1,000 users with one application each, in 10 groups, under caps.
    Users,
    /// The same 1,000 users and applications without any limit (the
    /// baseline of `Users`).
    UsersUncapped,
}

impl Limits {
    pub fn parse(v: Option<&str>) -> Limits {
        match v {
            None | Some("none") => Limits::None,
            Some("loose") => Limits::Loose,
            Some("users") => Limits::Users,
            Some("users-uncapped") => Limits::UsersUncapped,
            Some(other) => {
                panic!("--limits takes none, loose, users or users-uncapped, not {other:?}")
            }
        }
    }

    /// The applications (and so users) the run has.
    pub fn apps(self) -> usize {
        match self {
            Limits::Users | Limits::UsersUncapped => 1000,
            _ => 2,
        }
    }

    pub fn config(self) -> String {
        let (root, a) = match self {
            Limits::None | Limits::UsersUncapped => return CONFIG.to_string(),
            Limits::Loose => (
                "          - {users: ['*'], maxresources: {memory: 1000000000000}}\n",
                "              - {users: [bench], maxresources: {memory: 1000000000000}}\n",
            ),
            Limits::Users => (
                "          - {groups: [g0, g1, g2, g3, g4], maxresources: {memory: 1000000000000}, maxapplications: 1000}\n          - {groups: ['*'], maxresources: {memory: 1000000000000}, maxapplications: 1000}\n          - {users: ['*'], maxresources: {memory: 1000000000}, maxapplications: 10}\n",
                "              - {users: ['*'], maxresources: {memory: 100000000}, maxapplications: 5}\n",
            ),
        };
        CONFIG
            .replace(
                "        submitacl: '*'\n",
                &format!("        submitacl: '*'\n        limits:\n{root}"),
            )
            .replacen(
                "          - name: a\n",
                &format!("          - name: a\n            limits:\n{a}"),
                1,
            )
    }
}

/// `asks` asks of one allocation each, alternating between the two
/// applications, encoded in requests of 5,000.
pub fn single_asks(asks: usize) -> Vec<Vec<u8>> {
    single_asks_over(asks, 2)
}

/// `asks` asks of one allocation each, round robin over `apps`
/// applications, encoded in requests of 5,000.
pub fn single_asks_over(asks: usize, apps: usize) -> Vec<Vec<u8>> {
    (0..asks)
        .step_by(5_000)
        .map(|first| {
            si::AllocationRequest {
                asks: (first..asks.min(first + 5_000))
                    .map(|i| si::AllocationAsk {
                        allocation_key: ask_key(i),
                        application_id: format!("app-{}", i % apps),
                        partition_name: "default".into(),
                        resource_ask: res(),
                        max_allocations: 1,
                        tags: ask_tags(i, Edition::V012),
                        ..Default::default()
                    })
                    .collect(),
                rm_id: "rm".into(),
                ..Default::default()
            }
            .encode_to_vec()
        })
        .collect()
}

/// YuniKorn's own request shape: one request per application, each with a
/// single ask (the same key in both) repeated `maxAllocations` times, half
/// of the allocations for `app-0`, the rest for `app-1`.
pub fn app_asks(allocations: usize) -> Vec<Vec<u8>> {
    let first = allocations / 2;
    [(0, first), (1, allocations - first)]
        .into_iter()
        .map(|(app, n)| {
            si::AllocationRequest {
                asks: vec![si::AllocationAsk {
                    allocation_key: "alloc-1".into(),
                    application_id: format!("app-{app}"),
                    partition_name: "default".into(),
                    resource_ask: res(),
                    max_allocations: i32::try_from(n).expect("maxAllocations fits an int32"),
                    ..Default::default()
                }],
                rm_id: "rm".into(),
                ..Default::default()
            }
            .encode_to_vec()
        })
        .collect()
}

/// The SI edition the RM registers through (`--edition v0.12|v1`).
#[derive(Clone, Copy, PartialEq)]
pub enum Edition {
    /// `sicore_register_resource_manager` and the v0.12 messages.
    V012,
    /// `sicore_v1_register_resource_manager` and the v1.8 messages: the
    /// same nodes, applications and requests (a v1 request is one
    /// allocation: there is no `maxAllocations`).
    V1,
}

impl Edition {
    pub fn parse(v: Option<&str>) -> Edition {
        match v {
            None | Some("v0.12") => Edition::V012,
            Some("v1") => Edition::V1,
            Some(other) => panic!("--edition takes v0.12 or v1, not {other:?}"),
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Edition::V012 => "SI v0.12",
            Edition::V1 => "SI v1.x",
        }
    }
}

/// The v1 form of [`single_asks_over`]: the same requests, encoded as SI
/// v1.8 `AllocationRequest`s.
pub fn single_asks_v1(asks: usize, apps: usize) -> Vec<Vec<u8>> {
    (0..asks)
        .step_by(5_000)
        .map(|first| {
            si18::AllocationRequest {
                allocations: (first..asks.min(first + 5_000))
                    .map(|i| si18::Allocation {
                        allocation_key: ask_key(i),
                        application_id: format!("app-{}", i % apps),
                        partition_name: "default".into(),
                        resource_per_alloc: sicore_c_rm::v1::res(ask_resource()),
                        allocation_tags: ask_tags(i, Edition::V1),
                        ..Default::default()
                    })
                    .collect(),
                rm_id: "rm".into(),
                ..Default::default()
            }
            .encode_to_vec()
        })
        .collect()
}
