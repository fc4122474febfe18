//! Configuration changes after the fact, through the C ABI: the reload
//! watcher that `UpdateConfiguration` starts when the file has not changed
//! yet (spec 2.8), and `sicore_set_policy_config` for in-memory text.

use std::path::Path;
use std::time::Duration;

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;

/// For a test that counts the process's watcher threads: no other test's
/// scheduler that could start one exists until the guard drops (every
/// [`Harness`] with a configuration directory holds
/// [`serial::watchers`](crate::common::serial::watchers)), and the threads
/// of those just freed have left `/proc`.
fn counting_watchers() -> crate::common::serial::Alone {
    let alone = crate::common::serial::watchers_alone();
    wait_watchers(0);
    alone
}

/// root with the given leaf queues under it.
fn queues(names: &[&str]) -> String {
    let mut y = String::from(
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n",
    );
    if !names.is_empty() {
        y.push_str("        queues:\n");
        for n in names {
            y.push_str(&format!("          - name: {n}\n"));
        }
    }
    y
}

/// Replaces `<dir>/queues.yaml` in one step, as the kubelet swaps a
/// configmap's files.
fn replace_file(dir: &Path, yaml: &str) {
    let tmp = dir.join(".queues.yaml.new");
    std::fs::write(&tmp, yaml).unwrap();
    std::fs::rename(&tmp, dir.join("queues.yaml")).unwrap();
}

fn has_queue(h: &Harness, path: &str) -> bool {
    find_queue(&h.dump(), "default", path).is_some()
}

fn checksum(h: &Harness) -> String {
    h.dump()["rms"][0]["config_checksum"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Names of this process's threads that are configuration watchers.
fn watcher_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("sicore-watch"))
        .count()
}

#[test]
fn a_file_written_after_the_call_is_applied_by_the_watcher() {
    let dir = temp_config_dir("watch-late");
    let h = Harness::configured(dir_options(&dir, &queues(&["a"])), 0);
    // The RM is told of the change before the file has it.
    let (st, msg) = h.reload("rm");
    assert_eq!(st, SICORE_OK, "{msg}");
    std::thread::sleep(Duration::from_millis(1500));
    replace_file(&dir, &queues(&["a", "b"]));
    // No second call: the watcher's next tick applies it.
    h.wait_dump("root.b from the watcher", |d| {
        find_queue(d, "default", "root.b").is_some()
    });
    assert!(has_queue(&h, "root.a"));

    // The synchronous path is unchanged: a changed valid file applies
    // before the call returns, an invalid one is refused at once.
    replace_file(&dir, &queues(&["c"]));
    assert_eq!(h.reload("rm").0, SICORE_OK);
    assert!(has_queue(&h, "root.c"));
    let before = checksum(&h);
    replace_file(&dir, "partitions: [");
    let (st, msg) = h.reload("rm");
    assert_eq!(st, SICORE_REJECTED);
    assert!(
        msg.contains("configuration reload for RM rm failed"),
        "{msg}"
    );
    assert_eq!(checksum(&h), before);
}

#[test]
fn an_invalid_intermediate_file_is_reported_and_the_next_valid_one_applies() {
    let dir = temp_config_dir("watch-invalid");
    let mut o = dir_options(&dir, &queues(&["a"]));
    o.event_flush_interval_ms = 50;
    o.event_types = vec!["QUEUE".into(), "NODE".into()];
    let h = Harness::configured(o, 0);
    let before = checksum(&h);
    assert_eq!(h.reload("rm").0, SICORE_OK);
    // A queue name the validator refuses.
    replace_file(&dir, &queues(&["a", "no/slash"]));
    h.wait("the refused version is reported", |s| {
        s.events.iter().any(|e| e.reason == "ConfigurationRejected")
    });
    h.seen(|s| {
        let e = s
            .events
            .iter()
            .find(|e| e.reason == "ConfigurationRejected")
            .unwrap();
        assert_eq!(e.r#type, si::event_record::Type::Queue as i32);
        assert_eq!(e.object_id, "root");
        assert_eq!(e.group_id, "queues");
        assert!(e.message.contains("queues.yaml"), "{}", e.message);
        assert!(e.message.contains("no/slash"), "{}", e.message);
    });
    // The old configuration stays in force; the watcher goes on.
    assert_eq!(checksum(&h), before);
    assert!(has_queue(&h, "root.a"));
    replace_file(&dir, &queues(&["a", "b"]));
    h.wait_dump("root.b after the invalid version", |d| {
        find_queue(d, "default", "root.b").is_some()
    });
    assert_ne!(checksum(&h), before);
    // A broken version is reported once, not on every tick.
    let reports = h.seen(|s| {
        s.events
            .iter()
            .filter(|e| e.reason == "ConfigurationRejected")
            .count()
    });
    assert_eq!(reports, 1);
}

#[test]
fn a_version_the_live_partition_cannot_take_is_refused_and_the_watcher_goes_on() {
    let dir = temp_config_dir("watch-apply-fails");
    let mut o = dir_options(&dir, &queues(&["a"]));
    o.event_flush_interval_ms = 50;
    o.event_types = vec!["queue".into()];
    let h = Harness::configured(o, 1);
    h.submit(app("app-1", "root.a")).unwrap();
    assert_eq!(h.reload("rm").0, SICORE_OK);
    // Valid on its own, but turns the leaf holding app-1 into a parent.
    let nested = "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n        queues:\n          - name: a\n            queues:\n              - name: x\n";
    replace_file(&dir, nested);
    h.wait("the refused reload is reported", |s| {
        s.events.iter().any(|e| e.reason == "ConfigurationRejected")
    });
    assert!(find_queue(&h.dump(), "default", "root.a.x").is_none());
    replace_file(&dir, &queues(&["a", "b"]));
    h.wait_dump("root.b", |d| find_queue(d, "default", "root.b").is_some());
}

#[test]
fn in_memory_configuration_is_not_watched() {
    let _g = counting_watchers();
    let h = Harness::configured(yaml_options(&queues(&["a"])), 0);
    assert_eq!(h.reload("rm").0, SICORE_OK);
    // Only sicore_set_policy_config changes in-memory text: nothing to poll.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(watcher_threads(), 0);
}

/// Waits until `watcher_threads()` is `n`. A new thread names itself
/// once it runs, and a joined one leaves `/proc` a moment after the join.
fn wait_watchers(n: usize) {
    let deadline = std::time::Instant::now() + WAIT;
    while watcher_threads() != n {
        assert!(
            std::time::Instant::now() < deadline,
            "{} watcher threads, expected {n}",
            watcher_threads()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_watcher_stops_at_free() {
    let _g = counting_watchers();
    let dir = temp_config_dir("watch-free");
    let h = Harness::configured(dir_options(&dir, &queues(&["a"])), 0);
    assert_eq!(watcher_threads(), 0);
    assert_eq!(h.reload("rm").0, SICORE_OK);
    wait_watchers(1);
    // Another call extends the running watcher instead of adding one.
    assert_eq!(h.reload("rm").0, SICORE_OK);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(watcher_threads(), 1);
    // sicore_free stops and joins it; left alone it would poll for two
    // minutes.
    drop(h);
    wait_watchers(0);
}

// ------------------------------------------------ sicore_set_policy_config

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

#[test]
fn set_policy_config_replaces_the_in_memory_text_and_reloads() {
    let h = Harness::configured(yaml_options(&queues(&["a"])), 0);
    let before = checksum(&h);
    let (st, msg) = set_config(&h, "queues", &queues(&["a", "b"]));
    assert_eq!(st, SICORE_OK, "{msg}");
    // Applied before the call returns.
    assert!(has_queue(&h, "root.b"));
    assert_ne!(checksum(&h), before);
    assert_eq!(h.dump()["rms"][0]["config_source"], "in-memory");
    // UpdateConfiguration now reads the new text: nothing changes.
    let after = checksum(&h);
    assert_eq!(h.reload("rm").0, SICORE_OK);
    assert_eq!(checksum(&h), after);
}

#[test]
fn invalid_policy_config_is_rejected_and_the_old_one_stays() {
    let h = Harness::configured(yaml_options(&queues(&["a"])), 1);
    let before = checksum(&h);
    let (st, msg) = set_config(&h, "queues", &queues(&["a", "bad name"]));
    assert_eq!(st, SICORE_REJECTED);
    assert!(msg.contains("policy group 'queues'"), "{msg}");
    assert!(msg.contains("bad name"), "{msg}");
    assert_eq!(checksum(&h), before);
    // A text that parses but cannot apply to the live partition.
    h.submit(app("app-1", "root.a")).unwrap();
    let nested = "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n          - name: a\n            queues: [{name: x}]\n";
    let (st, msg) = set_config(&h, "queues", nested);
    assert_eq!(st, SICORE_REJECTED, "{msg}");
    assert!(
        msg.contains("configuration reload for RM rm failed"),
        "{msg}"
    );
    assert_eq!(checksum(&h), before);
    // The stored text is still the old one: a reload changes nothing.
    assert_eq!(h.reload("rm").0, SICORE_OK);
    assert_eq!(checksum(&h), before);
    // Bad arguments.
    assert_eq!(set_config(&h, "", &queues(&[])).0, SICORE_INVALID_ARGUMENT);
    let mut err = sicore_buffer::empty();
    let st = sicore_set_policy_config(
        h.sched,
        b"queues".as_ptr(),
        6,
        b"\xff".as_ptr(),
        1,
        &mut err,
    );
    assert_eq!(st, SICORE_INVALID_ARGUMENT);
    assert!(take_string(err).contains("yaml is not valid UTF-8"));
    assert_eq!(checksum(&h), before);
}

#[test]
fn a_group_no_rm_uses_is_checked_and_kept_for_later_registrations() {
    let h = Harness::configured(yaml_options(&queues(&["a"])), 0);
    let before = checksum(&h);
    let (st, msg) = set_config(&h, "other", "partitions: [");
    assert_eq!(st, SICORE_REJECTED);
    assert!(msg.contains("policy group 'other'"), "{msg}");
    let (st, msg) = set_config(&h, "other", &queues(&["z"]));
    assert_eq!(st, SICORE_OK, "{msg}");
    // The registered RM uses another group: untouched.
    assert_eq!(checksum(&h), before);
    assert!(!has_queue(&h, "root.z"));
    // An RM registering with that group gets the new text.
    let (st, msg) = h.register("rm2", "other");
    assert_eq!(st, SICORE_OK, "{msg}");
    let d = h.dump();
    let rm2 = d["rms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rm_id"] == "rm2")
        .unwrap();
    assert_eq!(rm2["config_source"], "in-memory");
    assert!(d["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["rm_id"] == "rm2" && p["root"]["children"][0]["name"] == "z"));
}

#[test]
fn empty_text_hands_the_group_back_to_its_file() {
    let dir = temp_config_dir("set-empty");
    let mut o = dir_options(&dir, &queues(&["from_file"]));
    o.policy_configs
        .insert("queues".into(), queues(&["from_memory"]));
    let h = Harness::configured(o, 0);
    assert!(has_queue(&h, "root.from_memory"));
    // A broken file: dropping the text would break the RM, so it is refused.
    replace_file(&dir, "partitions: [");
    assert_eq!(set_config(&h, "queues", "").0, SICORE_REJECTED);
    assert_eq!(h.dump()["rms"][0]["config_source"], "in-memory");
    replace_file(&dir, &queues(&["from_file"]));
    let (st, msg) = set_config(&h, "queues", "");
    assert_eq!(st, SICORE_OK, "{msg}");
    assert!(has_queue(&h, "root.from_file"));
    let source = h.dump()["rms"][0]["config_source"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(source.ends_with("queues.yaml"), "{source}");
}

/// What the re-entrant callback below saw.
struct Reentrant {
    sched: std::sync::atomic::AtomicPtr<sicore_scheduler>,
    status: std::sync::Mutex<Option<sicore_status>>,
}

unsafe extern "C" fn set_config_from_callback(
    ud: *mut std::ffi::c_void,
    _p: *const u8,
    _len: usize,
    _e: *mut sicore_reply,
) -> i32 {
    // SAFETY: user_data is the Reentrant the test keeps alive until free.
    let r = unsafe { &*(ud as *const Reentrant) };
    let yaml = queues(&["from_callback"]);
    let st = sicore_set_policy_config(
        r.sched.load(std::sync::atomic::Ordering::SeqCst),
        b"queues".as_ptr(),
        6,
        yaml.as_ptr(),
        yaml.len(),
        std::ptr::null_mut(),
    );
    *r.status.lock().unwrap() = Some(st);
    0
}

#[test]
fn set_policy_config_from_a_callback_would_deadlock() {
    let h = Harness::new(yaml_options(&queues(&["a"])));
    let r = Box::new(Reentrant {
        sched: std::sync::atomic::AtomicPtr::new(h.sched),
        status: std::sync::Mutex::new(None),
    });
    let cbs = sicore_callbacks {
        struct_size: std::mem::size_of::<sicore_callbacks>(),
        user_data: &*r as *const Reentrant as *mut std::ffi::c_void,
        update_allocation: None,
        update_application: None,
        update_node: Some(set_config_from_callback),
        predicates: None,
        resync_scheduler_cache: None,
        send_event: None,
        update_container_scheduling_state: None,
        update_configuration: None,
        release: None,
    };
    let req = prost::Message::encode_to_vec(&si::RegisterResourceManagerRequest {
        rm_id: "rm".into(),
        version: "test".into(),
        policy_group: "queues".into(),
    });
    let mut err = sicore_buffer::empty();
    let st = sicore_register_resource_manager(
        h.sched,
        req.as_ptr(),
        req.len(),
        &cbs,
        std::ptr::null_mut(),
        &mut err,
    );
    assert_eq!(st, SICORE_OK, "{}", take_string(err));
    assert_eq!(h.nodes(vec![node("n", 10, 1)]).0, SICORE_OK);
    let deadline = std::time::Instant::now() + WAIT;
    while r.status.lock().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "no node callback");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(*r.status.lock().unwrap(), Some(SICORE_WOULD_DEADLOCK));
    assert!(!has_queue(&h, "root.from_callback"));
    drop(h); // no callback runs after free: `r` may go
}

/// The same through the Rust API, which can count its watchers exactly.
#[test]
fn one_watcher_per_rm_only_for_files_and_none_after_close() {
    use sicore::{Options, ResourceManagerCallback, Scheduler, SchedulerApi, Status};
    struct Quiet;
    impl ResourceManagerCallback for Quiet {}
    let dir = temp_config_dir("watch-count");
    std::fs::write(dir.join("files.yaml"), queues(&["a"])).unwrap();
    let mut options = Options {
        config_dir: dir.display().to_string(),
        ..Options::default()
    };
    options
        .policy_configs
        .insert("memory".into(), queues(&["m"]));
    let sched = Scheduler::new(options).unwrap();
    let register = |rm: &str, group: &str| {
        sched
            .register_resource_manager(
                si::RegisterResourceManagerRequest {
                    rm_id: rm.into(),
                    version: "test".into(),
                    policy_group: group.into(),
                },
                std::sync::Arc::new(Quiet),
            )
            .unwrap();
    };
    register("file-rm", "files");
    register("memory-rm", "memory");
    sched.update_configuration("memory-rm").unwrap();
    assert_eq!(sched.config_watchers_running(), 0);
    sched.update_configuration("file-rm").unwrap();
    sched.update_configuration("file-rm").unwrap();
    assert_eq!(sched.config_watchers_running(), 1);
    // A changed file applied synchronously starts no second watcher.
    std::fs::write(dir.join("files.yaml"), queues(&["a", "b"])).unwrap();
    sched.update_configuration("file-rm").unwrap();
    assert!(sched.config_watchers_running() <= 1);
    sched.close().unwrap();
    assert_eq!(sched.config_watchers_running(), 0);
    let e = sched.update_configuration("file-rm").unwrap_err();
    assert_eq!(e.status, Status::Stopped);
}
