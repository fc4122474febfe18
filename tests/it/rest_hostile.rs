//! Hostile clients against the REST service, on loopback, bounded in count
//! (64 slow bodies, a few idle connections, 4 writers) and time (a few
//! seconds, with short timeouts set through the options):
//!
//! 1. slow-body clients that reconnect as soon as they are cut off, plus
//!    connections that never send a request: the health check and the
//!    metrics stay reachable throughout;
//! 2. concurrent PUTs of the configuration on shared bases, some of whose
//!    clients go away mid-request or mid-body: afterwards the text the RM
//!    last accepted is the text the core runs.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{yaml_options, Harness};
use crate::restkit::*;
use sicore::config::checksum;
use sicore::ffi::sicore_status;
use sicore::proto::sicore::v1::RestOptions;

const YAML: &str = "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
";

const SLOW_BODIES: usize = 64;
const IDLE: usize = 4;
const WRITERS: usize = 4;
const PUTS_PER_WRITER: usize = 8;

/// Connects and sends a PUT's headers, then its body one byte every 100
/// ms, until cut off or `stop`; reconnects after a short pause.
fn slow_body(addr: String, stop: Arc<AtomicBool>, cut_off: Arc<AtomicUsize>) {
    while !stop.load(Ordering::Relaxed) {
        if let Ok(mut s) = TcpStream::connect(&addr) {
            let head = format!(
                "PUT /ws/v1/config HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 4096\r\n\r\n"
            );
            if s.write_all(head.as_bytes()).is_ok() {
                while !stop.load(Ordering::Relaxed) && s.write_all(b"p").is_ok() {
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
            cut_off.fetch_add(1, Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Holds connections that never send a byte, reconnecting when closed.
fn idle(addr: String, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Relaxed) {
        if let Ok(mut s) = TcpStream::connect(&addr) {
            s.set_read_timeout(Some(Duration::from_millis(200)))
                .unwrap();
            let mut buf = [0u8; 64];
            while !stop.load(Ordering::Relaxed) {
                match s.read(&mut buf) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                    Err(_) => break,
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One GET that must be answered 200, allowing a few attempts a short
/// pause apart (a reserved slot may be taken for a moment).
fn reachable(addr: &str, path: &str) -> Result<(), String> {
    let mut last = String::new();
    for _ in 0..20 {
        match try_http(addr, "GET", path, &[], b"") {
            Ok(r) if r.status == 200 => return Ok(()),
            Ok(r) => last = format!("{}: {}", r.status, r.body),
            Err(e) => last = e,
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("{path} unreachable: {last}"))
}

/// Probes health and metrics every 100 ms until `stop`; the failures.
fn prober(addr: String, stop: Arc<AtomicBool>) -> (usize, Vec<String>) {
    let mut probes = 0;
    let mut failures = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        for path in ["/ws/v1/scheduler/healthcheck", "/ws/v1/metrics"] {
            probes += 1;
            if let Err(e) = reachable(&addr, path) {
                failures.push(e);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    (probes, failures)
}

/// The checksum in force, read through REST (retried while the service
/// answers 503 for a peer over its limit).
fn base(addr: &str) -> Option<String> {
    for _ in 0..50 {
        if let Ok(r) = try_http(addr, "GET", "/ws/v1/config", &[], b"") {
            if r.status == 200 {
                return r
                    .body
                    .lines()
                    .find_map(|l| l.strip_prefix("checksum: "))
                    .map(str::to_string);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// PUTs new texts on whatever base it last read; every third client goes
/// away after sending the request, every third after half the body.
fn writer(addr: String, w: usize) -> Vec<u16> {
    let mut statuses = Vec::new();
    for i in 0..PUTS_PER_WRITER {
        let Some(sum) = base(&addr) else { continue };
        let text = format!("{YAML}          - name: w{w}i{i}\nchecksum: {sum}\n");
        let req = request_text("PUT", "/ws/v1/config", &addr, &[], text.as_bytes());
        let Ok(mut s) = TcpStream::connect(&addr) else {
            continue;
        };
        match i % 3 {
            // Sent whole, then the client is gone: the update runs anyway.
            1 => {
                let _ = s.write_all(&req);
            }
            // Half the body, then gone: no update starts.
            2 => {
                let _ = s.write_all(&req[..req.len() - text.len() / 2]);
            }
            _ => {
                s.set_read_timeout(Some(PATIENCE)).unwrap();
                let _ = s.write_all(&req);
                let mut raw = Vec::new();
                let _ = s.read_to_end(&mut raw);
                if let Ok(r) = parse_reply(&raw) {
                    statuses.push(r.status);
                }
            }
        }
    }
    statuses
}

#[test]
fn hostile_clients_neither_lock_out_health_nor_split_the_configuration() {
    let mut o = yaml_options(YAML);
    o.rest_address = "127.0.0.1:0".into();
    o.rest = Some(RestOptions {
        header_timeout_ms: 500,
        body_timeout_ms: 500,
        connection_timeout_ms: 5_000,
        max_connections_per_peer: 16,
        ..Default::default()
    });
    let h = Harness::new(o);
    let rm = ConfigRm::new();
    *rm.delay.lock().unwrap() = Some(Duration::from_millis(5));
    let (st, msg) = register(h.sched, "rm", "queues", &rm);
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
    let addr = rest_address(h.sched);
    let started = Instant::now();

    // 1. Slow bodies and idle connections, with health and metrics probed.
    let stop = Arc::new(AtomicBool::new(false));
    let cut_off = Arc::new(AtomicUsize::new(0));
    let mut attackers = Vec::new();
    for _ in 0..SLOW_BODIES {
        let (a, s, c) = (addr.clone(), stop.clone(), cut_off.clone());
        attackers.push(std::thread::spawn(move || slow_body(a, s, c)));
    }
    for _ in 0..IDLE {
        let (a, s) = (addr.clone(), stop.clone());
        attackers.push(std::thread::spawn(move || idle(a, s)));
    }
    std::thread::sleep(Duration::from_millis(300));
    let probing = Arc::new(AtomicBool::new(false));
    let probe = {
        let (a, s) = (addr.clone(), probing.clone());
        std::thread::spawn(move || prober(a, s))
    };
    std::thread::sleep(Duration::from_millis(2_000));
    stop.store(true, Ordering::Relaxed);
    for t in attackers.drain(..) {
        t.join().unwrap();
    }
    // Slow bodies are cut off by the body timeout and reconnect.
    assert!(
        cut_off.load(Ordering::Relaxed) > SLOW_BODIES,
        "slow bodies were cut off and came back: {}",
        cut_off.load(Ordering::Relaxed)
    );

    // 2. Concurrent PUTs with disconnects, a few slow bodies still on.
    let stop = Arc::new(AtomicBool::new(false));
    for _ in 0..4 {
        let (a, s, c) = (addr.clone(), stop.clone(), cut_off.clone());
        attackers.push(std::thread::spawn(move || slow_body(a, s, c)));
    }
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let a = addr.clone();
            std::thread::spawn(move || writer(a, w))
        })
        .collect();
    let statuses: Vec<u16> = writers
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    stop.store(true, Ordering::Relaxed);
    for t in attackers {
        t.join().unwrap();
    }
    probing.store(true, Ordering::Relaxed);
    let (probes, failures) = probe.join().unwrap();
    assert!(probes >= 10, "probes made: {probes}");
    assert!(
        failures.is_empty(),
        "{} of {probes} probes failed: {failures:?}",
        failures.len()
    );
    for s in &statuses {
        assert!([200, 400, 408, 409, 503].contains(s), "status {s}");
    }
    assert!(
        statuses.contains(&200),
        "some PUT went through: {statuses:?}"
    );

    // A last update on the base in force: a 409 means an update whose
    // client left was still on its way, so read the base again. Once this
    // one is applied, any update still on its way has an older base and
    // is refused before it reaches the RM.
    let mut answers = Vec::new();
    for n in 0..20 {
        let sum = base(&addr).expect("the config");
        let last = format!("{YAML}          - name: last{n}\nchecksum: {sum}\n");
        let r = http(&addr, "PUT", "/ws/v1/config", &[], last.as_bytes());
        answers.push(r.status);
        if r.status == 200 {
            break;
        }
        assert_eq!(r.status, 409, "{}", r.body);
    }
    assert_eq!(answers.last(), Some(&200), "{answers:?}");
    let accepted = rm.log(|l| l.accepted.clone());
    let rm_last = accepted.last().expect("the RM accepted updates");
    assert!(rm_last.contains("name: last"), "{rm_last}");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        rm.log(|l| l.accepted.len()),
        accepted.len(),
        "nothing after it"
    );
    assert_eq!(
        core_checksum(h.sched, "rm"),
        checksum(rm_last),
        "the RM's last accepted text is the core's"
    );
    reachable(&addr, "/ws/v1/scheduler/healthcheck").unwrap();
    // Bounded: the whole run is a few seconds of attack (logged, not asserted).
    eprintln!(
        "hostile run: {:?}, {} PUT answers, {} RM updates, {probes} probes",
        started.elapsed(),
        statuses.len(),
        accepted.len()
    );
}

#[test]
fn a_body_that_does_not_arrive_in_time_gets_408_and_changes_nothing() {
    let mut o = yaml_options(YAML);
    o.rest_address = "127.0.0.1:0".into();
    o.rest = Some(RestOptions {
        body_timeout_ms: 300,
        ..Default::default()
    });
    let h = Harness::new(o);
    let rm = ConfigRm::new();
    let (st, msg) = register(h.sched, "rm", "queues", &rm);
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
    let addr = rest_address(h.sched);
    let before = core_checksum(h.sched, "rm");
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(
        s,
        "PUT /ws/v1/config HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 1000\r\n\r\npartitions:"
    )
    .unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let r = parse_reply(&raw).expect("an answer before the connection's own limit");
    assert_eq!(r.status, 408, "{}", r.body);
    assert!(r.json()["message"].as_str().unwrap().contains("300 ms"));
    assert_eq!(rm.log(|l| l.entered), 0);
    assert_eq!(core_checksum(h.sched, "rm"), before);
}
