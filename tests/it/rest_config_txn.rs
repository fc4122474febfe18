//! `PUT /ws/v1/config` is one transaction, serialised with every other
//! configuration change and carried to the end whatever the client does:
//! afterwards the RM (the text its `UpdateConfiguration` last accepted, or
//! the text it gave the scheduler itself) and the core agree. Each test
//! holds the RM's callback at a gate and acts while it runs.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use crate::common::{yaml_options, Harness};
use crate::restkit::*;
use sicore::config::checksum;
use sicore::ffi::sicore_status;

const YAML: &str = "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
";

/// How long a test lets a racing call run before it opens the gate. Only
/// the interleaving depends on it: with the fix the racing call waits for
/// the gate whatever this is.
const RACE: Duration = Duration::from_millis(300);

fn with_queue(name: &str, base: &str) -> String {
    format!("{YAML}          - name: {name}\nchecksum: {base}\n")
}

fn without_checksum(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("checksum:"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// A scheduler with REST on loopback and `rm` registered as `rm`.
fn setup(rm: &std::sync::Arc<ConfigRm>) -> (Harness, String) {
    let mut o = yaml_options(YAML);
    o.rest_address = "127.0.0.1:0".into();
    let h = Harness::new(o);
    let (st, msg) = register(h.sched, "rm", "queues", rm);
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
    let addr = rest_address(h.sched);
    (h, addr)
}

/// A PUT sent in full on its own thread; the answer (or the failure).
fn put_async(addr: &str, text: String) -> std::thread::JoinHandle<Result<Reply, String>> {
    let addr = addr.to_string();
    std::thread::spawn(move || try_http(&addr, "PUT", "/ws/v1/config", &[], text.as_bytes()))
}

#[test]
fn put_is_carried_to_the_end_when_the_client_disconnects_during_the_rm_callback() {
    let rm = ConfigRm::new();
    let (h, addr) = setup(&rm);
    let base = config_checksum(&addr);
    rm.close_gate();
    let text = with_queue("b", &base);
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(&request_text(
        "PUT",
        "/ws/v1/config",
        &addr,
        &[],
        text.as_bytes(),
    ))
    .unwrap();
    rm.wait("the RM's callback runs", |l| l.entered == 1);
    // The client goes away while the RM decides.
    drop(s);
    std::thread::sleep(RACE);
    rm.open_gate();
    rm.wait("the RM accepted", |l| l.accepted.len() == 1);
    let accepted = rm.log(|l| l.accepted[0].clone());
    assert_eq!(accepted, without_checksum(&text));
    // The core applies what the RM accepted, with no client left to wait.
    poll("the core to apply the accepted text", || {
        (core_checksum(h.sched, "rm") == checksum(&accepted)).then_some(())
    });
    // REST answers from a snapshot up to 200 ms old, and this PUT's own
    // request, which would have cleared it, is gone with its client.
    poll("REST to show the accepted queue b", || {
        get_queue_b(&addr).then_some(())
    });
}

fn get_queue_b(addr: &str) -> bool {
    http(addr, "GET", "/ws/v1/config", &[], b"")
        .body
        .contains("name: b")
}

#[test]
fn two_puts_on_one_base_one_wins_and_the_loser_never_reaches_the_rm() {
    let rm = ConfigRm::new();
    let (h, addr) = setup(&rm);
    let base = config_checksum(&addr);
    rm.close_gate();
    let first = put_async(&addr, with_queue("b", &base));
    rm.wait("the first PUT asks the RM", |l| l.entered == 1);
    let second = put_async(&addr, with_queue("c", &base));
    // Unserialised, the second PUT would ask the RM as well.
    rm.wait_for(RACE, |l| l.entered == 2);
    rm.open_gate();
    let first = first.join().unwrap().unwrap();
    let second = second.join().unwrap().unwrap();
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(second.status, 409, "{}", second.body);
    // The RM heard of the winner only: no stale "rollback" to the old text.
    let accepted = rm.log(|l| l.accepted.clone());
    assert_eq!(accepted, vec![without_checksum(&with_queue("b", &base))]);
    assert_eq!(core_checksum(h.sched, "rm"), checksum(&accepted[0]));
}

#[test]
fn put_racing_set_policy_config_is_serialised_with_it() {
    let rm = ConfigRm::new();
    let (h, addr) = setup(&rm);
    let base = config_checksum(&addr);
    rm.close_gate();
    let put = put_async(&addr, with_queue("b", &base));
    rm.wait("the PUT asks the RM", |l| l.entered == 1);
    // The RM sets its own text meanwhile.
    let own = format!("{YAML}          - name: own\n");
    let sched = h.sched as usize;
    let own_text = own.clone();
    let set = std::thread::spawn(move || {
        set_policy_config(
            sched as *mut sicore::ffi::sicore_scheduler,
            "queues",
            &own_text,
        )
    });
    let deadline = std::time::Instant::now() + RACE;
    while !set.is_finished() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    rm.open_gate();
    let put = put.join().unwrap().unwrap();
    let (st, msg) = set.join().unwrap();
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
    // The PUT ran first, whole; the RM's own text came after it.
    assert_eq!(put.status, 200, "{}", put.body);
    let accepted = rm.log(|l| l.accepted.clone());
    assert_eq!(
        accepted,
        vec![without_checksum(&with_queue("b", &base))],
        "the RM is never handed an old text back"
    );
    assert_eq!(core_checksum(h.sched, "rm"), checksum(&own));
}

#[test]
fn reregistration_during_a_put_waits_so_the_table_asked_is_the_current_one() {
    let old = ConfigRm::new();
    let (h, addr) = setup(&old);
    let base = config_checksum(&addr);
    old.close_gate();
    let put = put_async(&addr, with_queue("b", &base));
    old.wait("the PUT asks the RM", |l| l.entered == 1);
    let new = ConfigRm::new();
    let sched = h.sched as usize;
    let again = new.clone();
    let reg = std::thread::spawn(move || {
        register(
            sched as *mut sicore::ffi::sicore_scheduler,
            "rm",
            "queues",
            &again,
        )
    });
    let deadline = std::time::Instant::now() + RACE;
    while !reg.is_finished() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    old.open_gate();
    let put = put.join().unwrap().unwrap();
    let (st, msg) = reg.join().unwrap();
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
    // Whatever the PUT answered, the current registration and the core
    // agree: the new table heard nothing, so the core runs the text the
    // RM registered with.
    let heard = new.log(|l| l.accepted.clone());
    let rm_view = heard.last().cloned().unwrap_or_else(|| YAML.to_string());
    assert_eq!(
        core_checksum(h.sched, "rm"),
        checksum(&rm_view),
        "PUT: {put:?}"
    );
    if put.status == 200 {
        // It was applied to the registration it asked, before the new one.
        assert_eq!(old.log(|l| l.accepted.len()), 1);
    }
    // The replaced table is released once the registration is replaced.
    poll("the old table's release", || {
        (old.releases.load(std::sync::atomic::Ordering::SeqCst) == 1).then_some(())
    });
}

#[test]
fn replaced_registration_is_released_without_another_rest_request() {
    let old = ConfigRm::new();
    let (h, addr) = setup(&old);
    // A cached snapshot of the state, taken while `old` is registered.
    assert_eq!(http(&addr, "GET", "/ws/v1/queues", &[], b"").status, 200);
    assert_eq!(http(&addr, "GET", "/ws/v1/config", &[], b"").status, 200);
    let new = ConfigRm::new();
    let (st, msg) = register(h.sched, "rm", "queues", &new);
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
    // No REST request from here on.
    poll("the replaced table's release", || {
        (old.releases.load(std::sync::atomic::Ordering::SeqCst) == 1).then_some(())
    });
    assert_eq!(new.releases.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn flow_style_put_body_reaches_the_rm_without_its_checksum() {
    let rm = ConfigRm::new();
    let (h, addr) = setup(&rm);
    let base = config_checksum(&addr);
    let flow = format!(
        "{{partitions: [{{name: default, queues: [{{name: root, submitacl: '*', queues: [{{name: a}}, {{name: flow}}]}}]}}], checksum: {base}}}"
    );
    let r = http(&addr, "PUT", "/ws/v1/config", &[], flow.as_bytes());
    assert_eq!(r.status, 200, "{}", r.body);
    let accepted = rm.log(|l| l.accepted.clone());
    assert_eq!(accepted.len(), 1);
    assert!(!accepted[0].contains("checksum"), "{}", accepted[0]);
    assert!(!accepted[0].contains(&base), "{}", accepted[0]);
    assert!(accepted[0].contains("flow"), "{}", accepted[0]);
    assert_eq!(core_checksum(h.sched, "rm"), checksum(&accepted[0]));
    assert!(!http(&addr, "GET", "/ws/v1/config", &[], b"")
        .body
        .contains(&base));
}

#[test]
fn put_refused_by_the_rm_changes_nothing_and_is_not_rolled_back() {
    let rm = ConfigRm::new();
    let (h, addr) = setup(&rm);
    let base = config_checksum(&addr);
    *rm.refuse.lock().unwrap() = Some("configmap is read-only".into());
    let r = http(
        &addr,
        "PUT",
        "/ws/v1/config",
        &[],
        with_queue("b", &base).as_bytes(),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("configmap is read-only"), "{}", r.body);
    assert_eq!(rm.log(|l| (l.entered, l.accepted.len())), (1, 0));
    assert_eq!(core_checksum(h.sched, "rm"), base);
}
