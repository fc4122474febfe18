//! The resource-name tables (issue 16 defect 3, issue 24 item 2): a
//! refused request or configuration leaves no names behind, one RM cannot
//! exhaust its scheduler's table for the other RMs, and nothing done to one
//! scheduler (RMs, configurations, REST clients, schedulers come and gone)
//! takes names from another. The names' store is per process, shared with
//! the other tests of the binary: every name asserted here is one that no
//! other test uses.

use crate::common::*;
use prost::Message;
use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn junk_ask(rm_id: &str, prefix: &str, names: usize) -> Vec<u8> {
    let mut a = ask("app-1", "junk", 1, 1, 1);
    a.resource_ask = Some(si::Resource {
        resources: (0..names)
            .map(|i| (format!("{prefix}-{i}"), si::Quantity { value: 1 }))
            .collect(),
    });
    si::AllocationRequest {
        asks: vec![a],
        rm_id: rm_id.into(),
        ..Default::default()
    }
    .encode_to_vec()
}

fn gpu_node(id: &str, gpu: &str) -> si::NodeInfo {
    let mut n = node(id, 1000, 10);
    n.schedulable_resource
        .as_mut()
        .unwrap()
        .resources
        .insert(gpu.into(), si::Quantity { value: 4 });
    n
}

#[test]
fn junk_names_from_refused_or_hostile_callers_leave_room_for_others() {
    let h = Harness::standard(SchedulerOptions::default(), Behaviour::default(), 1);

    // An unregistered rmID with 4,200 new names: refused, nothing kept.
    let (st, msg) = h.raw(
        sicore_update_allocation,
        &junk_ask("nobody", "refused", 4200),
    );
    assert_eq!(st, SICORE_REJECTED, "{msg}");
    assert!(msg.contains("not registered"), "{msg}");

    // A registered RM asking with 4,200 new names: its ask is rejected
    // with a reason once it passes its own share of the table.
    let (st, msg) = h.raw(sicore_update_allocation, &junk_ask("rm", "hostile", 4200));
    assert_eq!(st, SICORE_OK, "{msg}");
    h.wait("junk ask rejected", |s| !s.rejected_asks.is_empty());
    let reason = h.seen(|s| s.rejected_asks[0].reason.clone());
    assert!(
        reason.contains("too many distinct resource types"),
        "{reason}"
    );

    // Another scheduler of the process can still use new resource types.
    let other = Harness::configured(SchedulerOptions::default(), 0);
    assert_eq!(
        other.nodes(vec![gpu_node("g1", "nvidia.com/gpu")]).0,
        SICORE_OK
    );
    other.wait("gpu node accepted", |s| s.nodes_accepted == ["g1"]);
    let d = other.dump();
    assert_eq!(d["partitions"][0]["total"]["nvidia.com/gpu"], 4);

    // The hostile RM has used up its own share: its next new type is
    // refused with the reason, and scheduling goes on.
    let (st, msg) = h.nodes(vec![gpu_node("g2", "amd.com/gpu")]);
    assert_eq!(st, SICORE_OK, "{msg}");
    h.wait("node verdict", |s| !s.nodes_rejected.is_empty());
    let reason = h.seen(|s| s.nodes_rejected[0].reason.clone());
    assert!(reason.contains("limit 256 per RM"), "{reason}");
    assert_eq!(h.asks(vec![ask("app-1", "fine", 10, 1, 1)]).0, SICORE_OK);
    h.wait("an allocation", |s| s.allocations.len() == 1);
}

/// Registers a node with `nvidia.com/gpu` in a fresh scheduler and checks
/// it is accepted with its GPUs: the probe that another scheduler's names
/// are still there for it.
fn gpu_node_accepted_elsewhere() {
    let other = Harness::configured(SchedulerOptions::default(), 0);
    let (st, msg) = other.nodes(vec![gpu_node("g1", "nvidia.com/gpu")]);
    assert_eq!(st, SICORE_OK, "{msg}");
    other.wait("gpu node verdict", |s| {
        !s.nodes_accepted.is_empty() || !s.nodes_rejected.is_empty()
    });
    let rejected = other.seen(|s| s.nodes_rejected.clone());
    assert!(rejected.is_empty(), "{rejected:?}");
    let d = other.dump();
    assert_eq!(d["partitions"][0]["total"]["nvidia.com/gpu"], 4);
}

/// `max: {prefix-0: 1, ...}` of `names` entries.
fn names_map(prefix: &str, names: usize) -> String {
    let entries: Vec<String> = (0..names).map(|i| format!("{prefix}-{i}: 1")).collect();
    format!("{{memory: 4000, {}}}", entries.join(", "))
}

fn queues_yaml(max: &str) -> String {
    format!(
        "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
            resources:
              max: {max}
"
    )
}

/// One HTTP/1.1 request on a fresh connection: `(status, body)`.
fn http(addr: &str, method: &str, path: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the REST service");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).expect("UTF-8 answer");
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete answer");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_string())
}

fn rest_address(h: &Harness) -> String {
    let mut out = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    assert_eq!(
        sicore_rest_address(h.sched, &mut out, &mut err),
        SICORE_OK,
        "{}",
        take_string(err)
    );
    take_string(out)
}

fn set_config(h: &Harness, group: &str, yaml: &str) -> (sicore_status, String) {
    let mut err = sicore_buffer::empty();
    let st = sicore_set_policy_config(
        h.sched,
        group.as_ptr(),
        group.len(),
        yaml.as_ptr(),
        yaml.len(),
        &mut err,
    );
    (st, take_string(err))
}

fn checksum(h: &Harness) -> String {
    h.dump()["rms"][0]["config_checksum"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_refused_rest_config_with_4100_names_leaves_every_table_as_it_was() {
    let mut o = yaml_options(&queues_yaml("{memory: 4000}"));
    o.rest_address = "127.0.0.1:0".into();
    let h = Harness::configured(o, 0);
    let addr = rest_address(&h);
    let base = checksum(&h);

    let put = |max: &str, sum: &str| {
        let text = format!("{}checksum: {sum}\n", queues_yaml(max));
        http(&addr, "PUT", "/ws/v1/config", text.as_bytes())
    };
    let (status, body) = put(&names_map("rest-junk", 4100), &base);
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("too many distinct resource types") && body.contains("per policy group"),
        "{body}"
    );
    assert_eq!(checksum(&h), base, "the old configuration stays");

    // Another scheduler of the process still gets its GPU type.
    gpu_node_accepted_elsewhere();

    // The refused PUT charged nothing: the policy group's whole share is
    // still there for the next one (less memory and vcore, which the first
    // configuration brought: its queue limit and default node weights).
    let (status, body) = put(&names_map("rest-fine", 254), &base);
    assert_eq!(status, 200, "{body}");
    let d = h.dump();
    let a = find_queue(&d, "default", "root.a").unwrap();
    assert_eq!(a["max"]["rest-fine-253"], 1, "{a}");
}

#[test]
fn sixteen_rms_filling_their_shares_take_nothing_from_another_scheduler() {
    let h = Harness::new(SchedulerOptions::default());
    let per_rm = 256;
    for r in 0..16 {
        let rm = format!("rm-{r}");
        let (st, msg) = h.register(&rm, "queues");
        assert_eq!(st, SICORE_OK, "{msg}");
        let (st, msg) = h.raw(
            sicore_update_allocation,
            &junk_ask(&rm, &format!("rm{r}-junk"), per_rm),
        );
        assert_eq!(st, SICORE_OK, "{msg}");
    }
    gpu_node_accepted_elsewhere();

    // This scheduler's own table is full now: a 17th RM's new type is
    // refused with the scheduler's limit, not silently taken elsewhere.
    let (st, msg) = h.register("rm-16", "queues");
    assert_eq!(st, SICORE_OK, "{msg}");
    let apps = si::ApplicationRequest {
        new: vec![app("app-1", "root.a")],
        rm_id: "rm-16".into(),
        ..Default::default()
    };
    let (st, msg) = h.raw(sicore_update_application, &apps.encode_to_vec());
    assert_eq!(st, SICORE_OK, "{msg}");
    h.wait("app accepted", |s| {
        s.apps_accepted.iter().any(|a| a == "app-1")
    });
    let (st, msg) = h.raw(sicore_update_allocation, &junk_ask("rm-16", "late", 1));
    assert_eq!(st, SICORE_OK, "{msg}");
    let full = |r: &si::RejectedAllocationAsk| r.reason.contains("limit 4096");
    h.wait("late ask rejected", |s| s.rejected_asks.iter().any(full));
    let reason = h.seen(|s| {
        s.rejected_asks
            .iter()
            .find(|r| full(r))
            .unwrap()
            .reason
            .clone()
    });
    assert!(
        reason.contains("too many distinct resource types in this scheduler (limit 4096)"),
        "{reason}"
    );
}

#[test]
fn short_lived_schedulers_give_their_names_back() {
    for i in 0..17 {
        let h = Harness::configured(SchedulerOptions::default(), 0);
        let prefix = format!("brief{i}-junk");
        let (st, msg) = h.raw(sicore_update_allocation, &junk_ask("rm", &prefix, 256));
        assert_eq!(st, SICORE_OK, "{msg}");
        assert!(sicore::testing::process_holds_name(&format!(
            "{prefix}-255"
        )));
    }
    for i in 0..17 {
        for n in [0, 255] {
            let name = format!("brief{i}-junk-{n}");
            assert!(
                !sicore::testing::process_holds_name(&name),
                "{name} outlived its scheduler"
            );
        }
    }
    gpu_node_accepted_elsewhere();
}

#[test]
fn a_configuration_with_too_many_names_is_refused_and_charges_nothing() {
    let h = Harness::configured(yaml_options(&queues_yaml("{memory: 4000}")), 0);
    let base = checksum(&h);

    let (st, msg) = set_config(&h, "queues", &queues_yaml(&names_map("cfg-junk", 300)));
    assert_eq!(st, SICORE_REJECTED, "{msg}");
    assert!(
        msg.contains(
            "configuration of policy group 'queues' introduces too many distinct resource types (limit 256 per policy group"
        ),
        "{msg}"
    );
    assert_eq!(checksum(&h), base, "nothing changed");

    // Nothing was charged: 256 new names fill the share exactly (memory
    // and vcore, the default node weights, are the scheduler's own and so
    // not new to the group's configurations), and the RM's own share is
    // untouched.
    let (st, msg) = set_config(&h, "queues", &queues_yaml(&names_map("cfg-fine", 256)));
    assert_eq!(st, SICORE_OK, "{msg}");
    let a = find_queue(&h.dump(), "default", "root.a").unwrap();
    assert_eq!(a["max"]["cfg-fine-255"], 1, "{a}");
    let (st, msg) = h.nodes(vec![gpu_node("g1", "nvidia.com/gpu")]);
    assert_eq!(st, SICORE_OK, "{msg}");
    h.wait("gpu node accepted", |s| s.nodes_accepted == ["g1"]);

    // The share is used up: one more new name is refused, names already
    // held are not new.
    let mut more = names_map("cfg-fine", 256);
    more.insert_str(1, "cfg-one-more: 1, ");
    let (st, msg) = set_config(&h, "queues", &queues_yaml(&more));
    assert_eq!(st, SICORE_REJECTED, "{msg}");
    assert!(msg.contains("refusing new type 'cfg-one-more'"), "{msg}");
    let (st, msg) = set_config(&h, "queues", &queues_yaml(&names_map("cfg-fine", 100)));
    assert_eq!(st, SICORE_OK, "{msg}");
}
