//! The gang case of the bench (`sicore-sim --gang` in bench form): every
//! application declares one task group; its placeholders are allocated
//! first, then its real members replace them. The RM decodes every
//! callback message and confirms each replacement from inside its callback
//! (a `PLACEHOLDER_REPLACED` release back). Timed from submitting the real
//! asks until the RM holds every real allocation.

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;
use sicore::proto::sicore::v1::SchedulerOptions;

#[derive(Default)]
struct GangRm {
    sched: AtomicPtr<sicore_scheduler>,
    nodes: AtomicUsize,
    apps: AtomicUsize,
    placeholders: AtomicUsize,
    real: AtomicUsize,
    waiter: std::sync::OnceLock<std::thread::Thread>,
}

fn rm<'a>(ud: *mut c_void) -> &'a GangRm {
    // SAFETY: user_data is the Arc<GangRm> leaked at registration, released by `release`.
    unsafe { &*(ud as *const GangRm) }
}

fn bytes<'a>(p: *const u8, len: usize) -> &'a [u8] {
    // SAFETY: the library passes a message valid for the duration of the call.
    unsafe { std::slice::from_raw_parts(p, len) }
}

fn wake(r: &GangRm) {
    if let Some(t) = r.waiter.get() {
        t.unpark();
    }
}

unsafe extern "C" fn on_alloc(
    ud: *mut c_void,
    p: *const u8,
    len: usize,
    _: *mut sicore_reply,
) -> i32 {
    let r = rm(ud);
    let m = si::AllocationResponse::decode(bytes(p, len)).expect("valid message");
    let placeholders = m.new.iter().filter(|a| a.placeholder).count();
    r.placeholders.fetch_add(placeholders, Ordering::Release);
    r.real
        .fetch_add(m.new.len() - placeholders, Ordering::Release);
    let confirm: Vec<si::AllocationRelease> = m
        .released
        .into_iter()
        .filter(|x| x.termination_type == si::TerminationType::PlaceholderReplaced as i32)
        .map(|x| si::AllocationRelease {
            message: String::new(),
            ..x
        })
        .collect();
    if !confirm.is_empty() {
        let req = si::AllocationRequest {
            rm_id: "rm".into(),
            releases: Some(si::AllocationReleasesRequest {
                allocations_to_release: confirm,
                ..Default::default()
            }),
            ..Default::default()
        }
        .encode_to_vec();
        let st = sicore_update_allocation(
            r.sched.load(Ordering::Acquire),
            req.as_ptr(),
            req.len(),
            std::ptr::null_mut(),
        );
        assert_eq!(st, sicore_status::SICORE_OK);
    }
    wake(r);
    0
}

unsafe extern "C" fn on_app(
    ud: *mut c_void,
    p: *const u8,
    len: usize,
    _: *mut sicore_reply,
) -> i32 {
    let m = si::ApplicationResponse::decode(bytes(p, len)).expect("valid message");
    rm(ud).apps.fetch_add(m.accepted.len(), Ordering::Release);
    wake(rm(ud));
    0
}

unsafe extern "C" fn on_node(
    ud: *mut c_void,
    p: *const u8,
    len: usize,
    _: *mut sicore_reply,
) -> i32 {
    let m = si::NodeResponse::decode(bytes(p, len)).expect("valid message");
    rm(ud).nodes.fetch_add(m.accepted.len(), Ordering::Release);
    wake(rm(ud));
    0
}

unsafe extern "C" fn on_resync(
    _: *mut c_void,
    p: *const u8,
    len: usize,
    _: *mut sicore_reply,
) -> i32 {
    let _ = si::ReSyncSchedulerCacheArgs::decode(bytes(p, len)).expect("valid message");
    0
}

unsafe extern "C" fn on_release(ud: *mut c_void) {
    // SAFETY: the Arc leaked at registration, released once.
    drop(Arc::from_raw(ud as *const GangRm));
}

fn wait(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::park_timeout(Duration::from_millis(50));
    }
}

fn res(memory: i64, vcore: i64) -> Option<si::Resource> {
    Some(si::Resource {
        resources: [("memory", memory), ("vcore", vcore)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), si::Quantity { value: v }))
            .collect(),
    })
}

fn call(
    s: *mut sicore_scheduler,
    f: extern "C" fn(*mut sicore_scheduler, *const u8, usize, *mut sicore_buffer) -> sicore_status,
    m: &impl Message,
) {
    let b = m.encode_to_vec();
    assert_eq!(
        f(s, b.as_ptr(), b.len(), std::ptr::null_mut()),
        sicore_status::SICORE_OK
    );
}

/// One run: `apps` applications of `members` members on `nodes` nodes.
/// Returns replacements per second and the seconds taken.
pub fn run(nodes: usize, apps: usize, members: usize) -> (f64, f64) {
    let opts = SchedulerOptions {
        disable_events: true,
        log_level: "warn".into(),
        ..Default::default()
    };
    let ob = opts.encode_to_vec();
    let mut s = std::ptr::null_mut();
    assert_eq!(
        sicore_new(ob.as_ptr(), ob.len(), &mut s, std::ptr::null_mut()),
        sicore_status::SICORE_OK
    );
    let state = Arc::new(GangRm::default());
    state.sched.store(s, Ordering::Release);
    let _ = state.waiter.set(std::thread::current());
    let cb = sicore_callbacks {
        struct_size: std::mem::size_of::<sicore_callbacks>(),
        user_data: Arc::into_raw(state.clone()) as *mut c_void,
        update_allocation: Some(on_alloc),
        update_application: Some(on_app),
        update_node: Some(on_node),
        predicates: None,
        resync_scheduler_cache: Some(on_resync),
        send_event: None,
        update_container_scheduling_state: None,
        update_configuration: None,
        release: Some(on_release),
    };
    let reg = si::RegisterResourceManagerRequest {
        rm_id: "rm".into(),
        version: "bench".into(),
        policy_group: "gang".into(),
    }
    .encode_to_vec();
    let st = sicore_register_resource_manager(
        s,
        reg.as_ptr(),
        reg.len(),
        &cb,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    assert_eq!(st, sicore_status::SICORE_OK);
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
    wait("nodes", || state.nodes.load(Ordering::Acquire) == nodes);
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
    wait("apps", || state.apps.load(Ordering::Acquire) == apps);
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
        state.placeholders.load(Ordering::Acquire) == total
    });
    let real = request(false);
    let start = Instant::now();
    assert_eq!(
        sicore_update_allocation(s, real.as_ptr(), real.len(), std::ptr::null_mut()),
        sicore_status::SICORE_OK
    );
    wait("real allocations", || {
        state.real.load(Ordering::Acquire) == total
    });
    let secs = start.elapsed().as_secs_f64();
    sicore_free(s);
    (total as f64 / secs, secs)
}
