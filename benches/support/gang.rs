//! The gang case of the bench (`sicore-sim --gang` in bench form): every
//! application declares one task group; its placeholders are allocated
//! first, then its real members replace them. The RM decodes every
//! callback message and confirms each replacement from inside its callback
//! (a `PLACEHOLDER_REPLACED` release back). Timed from submitting the real
//! asks until the RM holds every real allocation.

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;
use sicore_c_rm::{
    confirm_replacements, get, new_scheduler, register, table, wait_until, Counters, Installed, Rm,
    UpdateFn,
};

#[derive(Default)]
struct GangRm {
    sched: AtomicPtr<sicore_scheduler>,
    counters: Counters,
}

impl Rm for GangRm {
    fn update_allocation(&self, m: si::AllocationResponse) -> Result<(), String> {
        self.counters.allocation(&m);
        let s = self.sched.load(Ordering::Acquire);
        if let Some((_, st)) = confirm_replacements(s, "rm", &m.released) {
            assert_eq!(st, sicore_status::SICORE_OK);
        }
        Ok(())
    }
    fn update_application(&self, m: si::ApplicationResponse) -> Result<(), String> {
        self.counters.application(&m);
        Ok(())
    }
    fn update_node(&self, m: si::NodeResponse) -> Result<(), String> {
        self.counters.node(&m);
        Ok(())
    }
}

fn wait(what: &str, done: impl Fn() -> bool) {
    wait_until(what, Duration::from_secs(600), done).unwrap_or_else(|e| panic!("{e}"));
}

fn res(memory: i64, vcore: i64) -> Option<si::Resource> {
    sicore_c_rm::res(&[("memory", memory), ("vcore", vcore)])
}

fn call(s: *mut sicore_scheduler, f: UpdateFn, m: &impl Message) {
    let (st, msg) = sicore_c_rm::call(s, f, m);
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
}

/// One run: `apps` applications of `members` members on `nodes` nodes.
/// Returns replacements per second and the seconds taken.
pub fn run(nodes: usize, apps: usize, members: usize) -> (f64, f64) {
    let opts = SchedulerOptions {
        disable_events: true,
        log_level: "warn".into(),
        ..Default::default()
    };
    let s = new_scheduler(&opts).unwrap_or_else(|e| panic!("{e}"));
    let state = Arc::new(GangRm::default());
    state.sched.store(s, Ordering::Release);
    state.counters.set_waiter(std::thread::current());
    let cb = table(
        &state,
        Installed {
            resync_scheduler_cache: true,
            ..Default::default()
        },
    );
    let (st, msg) = register(s, "rm", "gang", "bench", &cb);
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
    let list = (0..nodes)
        .map(|i| si::NodeInfo {
            node_id: format!("node-{i:06}"),
            action: si::node_info::ActionFromRm::Create as i32,
            schedulable_resource: res(64_000, 64),
            ..Default::default()
        })
        .collect();
    call(
        s,
        sicore_update_node,
        &si::NodeRequest {
            nodes: list,
            rm_id: "rm".into(),
        },
    );
    wait("nodes", || get(&state.counters.nodes_accepted) == nodes);
    let m = members as i64;
    let new = (0..apps)
        .map(|i| si::AddApplicationRequest {
            application_id: format!("gang-{i}"),
            queue_name: format!("root.gang-{}", i % 4),
            partition_name: "default".into(),
            ugi: Some(si::UserGroupInformation {
                user: "bench".into(),
                groups: vec![],
            }),
            placeholder_ask: res(1000 * m, m),
            ..Default::default()
        })
        .collect();
    call(
        s,
        sicore_update_application,
        &si::ApplicationRequest {
            new,
            rm_id: "rm".into(),
            ..Default::default()
        },
    );
    wait("apps", || get(&state.counters.apps_accepted) == apps);
    let request = |placeholder: bool| -> Vec<u8> {
        si::AllocationRequest {
            asks: (0..apps)
                .map(|i| si::AllocationAsk {
                    allocation_key: format!(
                        "gang-{i}-{}",
                        if placeholder { "ph" } else { "member" }
                    ),
                    application_id: format!("gang-{i}"),
                    partition_name: "default".into(),
                    resource_ask: res(1000, 1),
                    max_allocations: members as i32,
                    task_group_name: "members".into(),
                    placeholder,
                    ..Default::default()
                })
                .collect(),
            rm_id: "rm".into(),
            ..Default::default()
        }
        .encode_to_vec()
    };
    let total = apps * members;
    let placeholders = request(true);
    assert_eq!(
        sicore_update_allocation(
            s,
            placeholders.as_ptr(),
            placeholders.len(),
            std::ptr::null_mut()
        ),
        sicore_status::SICORE_OK
    );
    wait("placeholders", || {
        get(&state.counters.placeholders) == total
    });
    let real = request(false);
    let start = Instant::now();
    assert_eq!(
        sicore_update_allocation(s, real.as_ptr(), real.len(), std::ptr::null_mut()),
        sicore_status::SICORE_OK
    );
    wait("real allocations", || get(&state.counters.real) == total);
    let secs = start.elapsed().as_secs_f64();
    sicore_free(s);
    (total as f64 / secs, secs)
}
