//! `sicore-sim --gang`: a gang workload. Every application declares one task
//! group; its placeholders are scheduled first, then its real asks replace
//! them. The simulated RM confirms each replacement (a `PLACEHOLDER_REPLACED`
//! release back) from inside its callback, as a shim does once it has
//! stopped the placeholder pod, and counts the real allocations that follow.
//!
//! Reported: placeholders per second, and replacements per second from the
//! submission of the real asks until the RM holds every real allocation
//! (decision, release to the RM, confirmation and the new allocation, all
//! through the C ABI).

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;

use sicore_c_rm::{confirm_replacements, table, Installed, Rm};

use sicore_c_rm::take_string;

use crate::rm::{check, library_version, register_sim};

/// The gang workload's size.
pub struct GangArgs {
    /// Applications, one task group each.
    pub apps: usize,
    /// Members per task group.
    pub members: usize,
    /// Nodes.
    pub nodes: usize,
    /// Install a Predicates callback (accepts every node).
    pub predicates: bool,
    /// Give up when nothing arrives for this many seconds.
    pub stall_seconds: u64,
}

#[derive(Default)]
struct Counters {
    base: sicore_c_rm::Counters,
    sched: AtomicPtr<sicore_scheduler>,
    replaced: AtomicUsize,
    confirm_failures: AtomicUsize,
}

impl std::ops::Deref for Counters {
    type Target = sicore_c_rm::Counters;
    fn deref(&self) -> &Self::Target {
        &self.base
    }
}

impl Rm for Counters {
    fn update_allocation(&self, m: si::AllocationResponse) -> Result<(), String> {
        self.base.allocation(&m);
        // The placeholders to stop: confirm them at once.
        let s = self.sched.load(Ordering::SeqCst);
        if let Some((n, st)) = confirm_replacements(s, "sim", &m.released) {
            self.replaced.fetch_add(n, Ordering::SeqCst);
            if st != sicore_status::SICORE_OK {
                self.confirm_failures.fetch_add(1, Ordering::SeqCst);
            }
        }
        Ok(())
    }

    fn update_application(&self, m: si::ApplicationResponse) -> Result<(), String> {
        self.base.application(&m);
        Ok(())
    }

    fn update_node(&self, m: si::NodeResponse) -> Result<(), String> {
        self.base.node(&m);
        Ok(())
    }

    fn predicates(&self, _m: si::PredicatesArgs) -> Result<(), String> {
        self.base.predicate();
        Ok(())
    }
}

fn resource(memory: i64, vcore: i64) -> Option<si::Resource> {
    Some(si::Resource {
        resources: [("memory", memory), ("vcore", vcore)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), si::Quantity { value: v }))
            .collect(),
    })
}

type UpdateFn =
    extern "C" fn(*mut sicore_scheduler, *const u8, usize, *mut sicore_buffer) -> sicore_status;

/// Frees the scheduler however the run ends.
struct Handle(*mut sicore_scheduler);

impl Drop for Handle {
    fn drop(&mut self) {
        sicore_free(self.0);
    }
}

fn call(
    s: *mut sicore_scheduler,
    what: &str,
    f: UpdateFn,
    msg: &impl Message,
) -> Result<(), String> {
    let bytes = msg.encode_to_vec();
    let mut err = sicore_buffer::empty();
    check(what, f(s, bytes.as_ptr(), bytes.len(), &mut err), err)
}

/// Waits until `count` reaches `want`, failing when it stops moving.
fn wait_count(what: &str, count: &AtomicUsize, want: usize, stall: Duration) -> Result<(), String> {
    let (mut last, mut moved) = (count.load(Ordering::SeqCst), Instant::now());
    loop {
        let n = count.load(Ordering::SeqCst);
        if n >= want {
            return Ok(());
        }
        if n != last {
            (last, moved) = (n, Instant::now());
        } else if moved.elapsed() > stall {
            return Err(format!("{what}: stalled at {n} of {want}"));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Runs the gang workload and prints its report.
pub fn run(args: GangArgs) -> Result<(), String> {
    if args.apps == 0 || args.members == 0 || args.nodes == 0 {
        return Err("--gang needs at least one application, member and node".into());
    }
    let stall = Duration::from_secs(args.stall_seconds);
    let mut sched = std::ptr::null_mut();
    let mut err = sicore_buffer::empty();
    check(
        "sicore_new",
        sicore_new(std::ptr::null(), 0, &mut sched, &mut err),
        err,
    )?;
    let handle = Handle(sched);
    let c = Arc::new(Counters::default());
    c.sched.store(sched, Ordering::SeqCst);
    let table = table(
        &c,
        Installed {
            predicates: args.predicates,
            ..Default::default()
        },
    );
    register_sim(handle.0, &table)?;

    // Nodes with room for several members each.
    let nodes: Vec<si::NodeInfo> = (0..args.nodes)
        .map(|i| {
            let node_id = format!("node-{i:05}");
            si::NodeInfo {
                attributes: crate::shapes::node_attributes(i, &node_id),
                node_id,
                action: si::node_info::ActionFromRm::Create as i32,
                schedulable_resource: resource(64_000, 64),
                ..Default::default()
            }
        })
        .collect();
    call(
        handle.0,
        "UpdateNode",
        sicore_update_node,
        &si::NodeRequest {
            nodes,
            rm_id: "sim".into(),
        },
    )?;
    wait_count("nodes", &c.nodes_accepted, args.nodes, stall)?;

    // Applications, each declaring its gang: members x (1000 memory, 1 vcore).
    let members = args.members as i64;
    let apps: Vec<si::AddApplicationRequest> = (0..args.apps)
        .map(|i| si::AddApplicationRequest {
            application_id: format!("gang-{i}"),
            queue_name: format!("root.gang-{}", i % 4),
            partition_name: "default".into(),
            ugi: Some(si::UserGroupInformation {
                user: "sim".into(),
                groups: vec![],
            }),
            placeholder_ask: resource(1000 * members, members),
            gang_scheduling_style: "Soft".into(),
            ..Default::default()
        })
        .collect();
    for chunk in apps.chunks(1000) {
        call(
            handle.0,
            "UpdateApplication",
            sicore_update_application,
            &si::ApplicationRequest {
                new: chunk.to_vec(),
                rm_id: "sim".into(),
                ..Default::default()
            },
        )?;
    }
    wait_count("applications", &c.apps_accepted, args.apps, stall)
        .map_err(|e| format!("{e} ({} rejected)", c.apps_rejected.load(Ordering::SeqCst)))?;

    let gang_asks = |placeholder: bool| -> Vec<si::AllocationAsk> {
        (0..args.apps)
            .map(|i| {
                let key = format!("gang-{i}-{}", if placeholder { "ph" } else { "member" });
                si::AllocationAsk {
                    tags: crate::shapes::pod_tags("sim", &key),
                    allocation_key: key,
                    application_id: format!("gang-{i}"),
                    partition_name: "default".into(),
                    resource_ask: resource(1000, 1),
                    max_allocations: args.members as i32,
                    task_group_name: "members".into(),
                    placeholder,
                    ..Default::default()
                }
            })
            .collect()
    };
    let submit = |asks: Vec<si::AllocationAsk>| -> Result<(), String> {
        for chunk in asks.chunks(1000) {
            call(
                handle.0,
                "UpdateAllocation",
                sicore_update_allocation,
                &si::AllocationRequest {
                    asks: chunk.to_vec(),
                    rm_id: "sim".into(),
                    ..Default::default()
                },
            )?;
        }
        Ok(())
    };
    let total = args.apps * args.members;

    // Placeholders first.
    let placeholders = gang_asks(true);
    let t0 = Instant::now();
    submit(placeholders)?;
    wait_count("placeholders", &c.placeholders, total, stall)?;
    let placeholder_time = t0.elapsed();

    // Then the real members replace them.
    let real = gang_asks(false);
    let t1 = Instant::now();
    submit(real)?;
    wait_count("replacement decisions", &c.replaced, total, stall)?;
    let decided = t1.elapsed();
    wait_count("real allocations", &c.real, total, stall)?;
    let replaced = t1.elapsed();

    let mut json = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    check(
        "state dump",
        sicore_state_dump(handle.0, &mut json, &mut err),
        err,
    )?;
    let dump: serde_json::Value =
        serde_json::from_str(&take_string(json)).map_err(|e| e.to_string())?;
    let p = &dump["partitions"][0];
    let apps_list = p["applications"].as_array().cloned().unwrap_or_default();
    let left_placeholders: u64 = apps_list
        .iter()
        .flat_map(|a| a["task_groups"].as_array().cloned().unwrap_or_default())
        .map(|g| g["placeholders"].as_u64().unwrap_or(0))
        .sum();
    let running = apps_list.iter().filter(|a| a["state"] == "Running").count();

    println!("sicore-sim gang report");
    println!("  library              sicore {}", library_version());
    println!("  nodes                {}", args.nodes);
    println!(
        "  applications         {} (one task group of {} members each)",
        args.apps, args.members
    );
    println!(
        "  placeholders         {} in {:.3} s ({:.0}/s)",
        c.placeholders.load(Ordering::SeqCst),
        placeholder_time.as_secs_f64(),
        total as f64 / placeholder_time.as_secs_f64()
    );
    println!(
        "  replacements         {} decided in {:.3} s, confirmed and allocated in {:.3} s",
        c.replaced.load(Ordering::SeqCst),
        decided.as_secs_f64(),
        replaced.as_secs_f64()
    );
    println!(
        "  throughput           {:.0} replacements/s (real asks submitted to every real allocation held)",
        total as f64 / replaced.as_secs_f64()
    );
    println!("  real allocations     {}", c.real.load(Ordering::SeqCst));
    println!("  placeholders left    {left_placeholders}");
    println!("  applications Running {running}");
    println!(
        "  root allocated       memory {} vcore {}",
        p["root"]["allocated"]["memory"], p["root"]["allocated"]["vcore"]
    );
    if args.predicates {
        println!(
            "  predicate calls      {}",
            c.predicate_calls.load(Ordering::Relaxed)
        );
    }
    let failures =
        c.confirm_failures.load(Ordering::SeqCst) + c.asks_rejected.load(Ordering::SeqCst);
    if failures > 0 {
        return Err(format!("{failures} confirmations or asks failed"));
    }
    Ok(())
}
