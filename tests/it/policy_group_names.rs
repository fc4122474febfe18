//! A policy group names the file `<group>.yaml` inside the configuration
//! directory, so it must be a plain name (issue 24, defect 9): a group
//! that is a path (`../outside/x`, `/abs/path/x`) is refused at
//! registration, by `sicore_set_policy_config` and in the options, and
//! nothing of the outside file is loaded.

use crate::common::*;
use sicore::ffi::sicore_status::*;
use sicore::ffi::*;
use sicore::proto::sicore::v1::SchedulerOptions;

const OUTSIDE: &str = "
partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: outside
";

/// `<root>/conf/queues.yaml` (the configuration directory) and
/// `<root>/outside/x.yaml`, a valid file beside it.
fn layout() -> (std::path::PathBuf, SchedulerOptions) {
    let root = temp_config_dir("policy-group");
    let conf = root.join("conf");
    let outside = root.join("outside");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("x.yaml"), OUTSIDE).unwrap();
    let options = dir_options(&conf, &queues(&["a"]));
    (root, options)
}

fn queues(names: &[&str]) -> String {
    let mut y = String::from(
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: '*'\n        queues:\n",
    );
    for n in names {
        y.push_str(&format!("          - name: {n}\n"));
    }
    y
}

#[test]
fn registration_refuses_a_policy_group_that_is_not_a_plain_name() {
    let (root, options) = layout();
    let h = Harness::new(options);
    let absolute = root.join("outside").join("x").display().to_string();
    for group in [
        "../outside/x",
        absolute.as_str(),
        "sub/queues",
        "..\\outside\\x",
        ".",
        "..",
        "que\0ues",
    ] {
        let (st, msg) = h.register("rm", group);
        assert_eq!(st, SICORE_INVALID_ARGUMENT, "{group:?}: {msg}");
        assert!(
            msg.contains("policyGroup") && msg.contains("not a plain name"),
            "{group:?}: {msg}"
        );
        assert!(
            msg.contains(&format!("{group:?}")),
            "names the group: {msg}"
        );
    }
    // Nothing registered, nothing of the outside file loaded.
    let d = h.dump();
    assert_eq!(d["rms"].as_array().map_or(0, Vec::len), 0, "{d}");
    assert!(!d.to_string().contains("outside"), "{d}");
    // A plain name still registers, from the directory.
    let (st, msg) = h.register("rm", "queues");
    assert_eq!(st, SICORE_OK, "{msg}");
    assert!(has_queue(&h, "root.a"));
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn set_policy_config_refuses_a_policy_group_that_is_not_a_plain_name() {
    let (root, options) = layout();
    let h = Harness::new(options);
    assert_eq!(h.register("rm", "queues").0, SICORE_OK);
    let yaml = queues(&["b"]);
    for group in ["../outside/x", "/etc/yunikorn/queues", "a/b", "..", "x\0"] {
        let mut err = sicore_buffer::empty();
        let st = sicore_set_policy_config(
            h.sched,
            group.as_ptr(),
            group.len(),
            yaml.as_ptr(),
            yaml.len(),
            &mut err,
        );
        let msg = take_string(err);
        assert_eq!(st, SICORE_INVALID_ARGUMENT, "{group:?}: {msg}");
        assert!(msg.contains("not a plain name"), "{group:?}: {msg}");
    }
    // The RM's configuration is untouched.
    assert!(has_queue(&h, "root.a"));
    assert!(!has_queue(&h, "root.b"));
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn options_refuse_in_memory_text_for_a_group_that_is_not_a_plain_name() {
    let mut o = SchedulerOptions::default();
    o.policy_configs.insert("../queues".into(), queues(&["a"]));
    let bytes = options_bytes(&o);
    let mut sched = std::ptr::null_mut();
    let mut err = sicore_buffer::empty();
    let st = sicore_new(bytes.as_ptr(), bytes.len(), &mut sched, &mut err);
    let msg = take_string(err);
    assert_eq!(st, SICORE_INVALID_ARGUMENT, "{msg}");
    assert!(
        msg.contains("policy_configs") && msg.contains("not a plain name"),
        "{msg}"
    );
    assert!(sched.is_null());
}

fn has_queue(h: &Harness, path: &str) -> bool {
    find_queue(&h.dump(), "default", path).is_some()
}
