//! What the REST integration tests share: a raw HTTP/1.1 client that
//! reports failures instead of panicking (hostile clients see many), and
//! an RM over the C ABI whose `UpdateConfiguration` callback records what
//! it accepted, in call order, and can be held at a gate so that a test
//! can act while the callback runs.

use std::ffi::c_void;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use prost::Message;
use sicore::ffi::*;
use sicore::proto::si::v1 as si;

/// Longest wait for anything a test waits for (generous: the same tests
/// run under ASan, many times slower).
pub const PATIENCE: Duration = Duration::from_secs(30);

/// An answer.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// Parses a complete HTTP/1.1 answer.
pub fn parse_reply(raw: &[u8]) -> Result<Reply, String> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("incomplete answer: {text:?}"))?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status line: {head:?}"))?;
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Ok(Reply {
        status,
        headers,
        body: body.to_string(),
    })
}

/// The request text: `Host` is `host` (the service's address unless a
/// test says otherwise), `Connection: close`, the body's length.
pub fn request_text(
    method: &str,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let mut out = req.into_bytes();
    out.extend_from_slice(body);
    out
}

/// One request on a fresh connection; `Err` when the connection is
/// refused, reset or closed without a complete answer.
pub fn try_http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Reply, String> {
    let mut s = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(PATIENCE))
        .map_err(|e| e.to_string())?;
    s.write_all(&request_text(method, path, addr, headers, body))
        .map_err(|e| format!("write: {e}"))?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(|e| format!("read: {e}"))?;
    parse_reply(&raw)
}

/// A GET whose body is kept as bytes (a compressed answer): status,
/// headers, body.
pub fn http_raw(
    addr: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(&request_text("GET", path, addr, headers, b""))
        .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete answer");
    let head = parse_reply(&raw[..split + 4]).expect("a status line");
    (head.status, head.headers, raw[split + 4..].to_vec())
}

/// [`try_http`] that must succeed.
pub fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    try_http(addr, method, path, headers, body).unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// The body's checksum line of `GET /ws/v1/config`.
pub fn config_checksum(addr: &str) -> String {
    let r = http(addr, "GET", "/ws/v1/config", &[], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
        .lines()
        .find_map(|l| l.strip_prefix("checksum: "))
        .expect("the config carries its checksum")
        .to_string()
}

/// Polls `f` until it returns `Some`, for at most [`PATIENCE`].
pub fn poll<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Scrapes with `fetch` until every one of `wanted` is found in the same
/// text by `found(text, wanted)`, for at most [`PATIENCE`]; the text. The
/// gauges of one refresh are not written at one instant (the core refreshes
/// them once a second, and counters move with the decisions), so one series
/// showing its value says nothing of another: a test waits for every series
/// it checks. On timeout it panics naming the missing ones.
pub fn scrape_until(
    wanted: &[&str],
    mut fetch: impl FnMut() -> String,
    found: impl Fn(&str, &str) -> bool,
) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let text = fetch();
        let missing: Vec<&str> = wanted
            .iter()
            .copied()
            .filter(|w| !found(&text, w))
            .collect();
        if missing.is_empty() {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "missing after {PATIENCE:?}: {missing:?} in\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What a [`ConfigRm`] has done.
#[derive(Default, Debug)]
pub struct ConfigLog {
    /// `UpdateConfiguration` calls begun.
    pub entered: usize,
    /// Texts accepted, in call order (a refused one is not listed).
    pub accepted: Vec<String>,
    /// Texts refused.
    pub refused: Vec<String>,
}

/// An RM with only the `UpdateConfiguration` callback (and `release`).
pub struct ConfigRm {
    log: Mutex<ConfigLog>,
    changed: Condvar,
    gate: Mutex<bool>,
    gate_opened: Condvar,
    /// Refuse every text with this reason.
    pub refuse: Mutex<Option<String>>,
    /// `release` calls.
    pub releases: AtomicUsize,
    /// Sleep this long in each call (widens race windows).
    pub delay: Mutex<Option<Duration>>,
}

impl ConfigRm {
    pub fn new() -> Arc<Self> {
        Arc::new(ConfigRm {
            log: Mutex::new(ConfigLog::default()),
            changed: Condvar::new(),
            gate: Mutex::new(true),
            gate_opened: Condvar::new(),
            refuse: Mutex::new(None),
            releases: AtomicUsize::new(0),
            delay: Mutex::new(None),
        })
    }

    /// Calls wait at the gate from now on.
    pub fn close_gate(&self) {
        *self.gate.lock().unwrap() = false;
    }

    pub fn open_gate(&self) {
        *self.gate.lock().unwrap() = true;
        self.gate_opened.notify_all();
    }

    pub fn log<T>(&self, f: impl FnOnce(&ConfigLog) -> T) -> T {
        f(&self.log.lock().unwrap())
    }

    /// Waits until `cond` holds on the log (at most [`PATIENCE`]).
    pub fn wait(&self, what: &str, cond: impl Fn(&ConfigLog) -> bool) {
        let deadline = Instant::now() + PATIENCE;
        let mut log = self.log.lock().unwrap();
        while !cond(&log) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "timed out waiting for {what}: {log:?}");
            log = self.changed.wait_timeout(log, left).unwrap().0;
        }
    }

    /// Like [`ConfigRm::wait`], but gives up after `limit` and says
    /// whether `cond` came to hold.
    pub fn wait_for(&self, limit: Duration, cond: impl Fn(&ConfigLog) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        let mut log = self.log.lock().unwrap();
        while !cond(&log) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            log = self.changed.wait_timeout(log, left).unwrap().0;
        }
        true
    }

    fn on_update(&self, text: String) -> si::UpdateConfigurationResponse {
        {
            self.log.lock().unwrap().entered += 1;
            self.changed.notify_all();
        }
        let mut open = self.gate.lock().unwrap();
        while !*open {
            open = self.gate_opened.wait(open).unwrap();
        }
        drop(open);
        if let Some(d) = *self.delay.lock().unwrap() {
            std::thread::sleep(d);
        }
        let refuse = self.refuse.lock().unwrap().clone();
        let mut log = self.log.lock().unwrap();
        let answer = match refuse {
            Some(reason) => {
                log.refused.push(text);
                si::UpdateConfigurationResponse {
                    success: false,
                    reason,
                    ..Default::default()
                }
            }
            None => {
                log.accepted.push(text);
                si::UpdateConfigurationResponse {
                    success: true,
                    ..Default::default()
                }
            }
        };
        drop(log);
        self.changed.notify_all();
        answer
    }
}

fn rm<'a>(ud: *mut c_void) -> &'a ConfigRm {
    // SAFETY: user_data is the Arc<ConfigRm> leaked at registration, kept
    // alive until `release` runs.
    unsafe { &*(ud as *const ConfigRm) }
}

unsafe extern "C" fn on_update_configuration(
    ud: *mut c_void,
    p: *const u8,
    len: usize,
    reply: *mut sicore_reply,
) {
    // SAFETY: the library passes a message valid for the duration of the call.
    let bytes = unsafe { std::slice::from_raw_parts(p, len) };
    let m = si::UpdateConfigurationRequest::decode(bytes).expect("a valid message");
    let answer = rm(ud).on_update(m.configs).encode_to_vec();
    sicore_reply_set(reply, answer.as_ptr(), answer.len());
}

unsafe extern "C" fn on_release(ud: *mut c_void) {
    // SAFETY: the Arc leaked at registration; released exactly once.
    let r = unsafe { Arc::from_raw(ud as *const ConfigRm) };
    r.releases.fetch_add(1, Ordering::SeqCst);
}

/// Registers `rm` as RM `rm_id` (policy group `group`) of `sched`.
pub fn register(
    sched: *mut sicore_scheduler,
    rm_id: &str,
    group: &str,
    rm: &Arc<ConfigRm>,
) -> (sicore_status, String) {
    let req = si::RegisterResourceManagerRequest {
        rm_id: rm_id.into(),
        version: "test".into(),
        policy_group: group.into(),
    }
    .encode_to_vec();
    let table = sicore_callbacks {
        struct_size: std::mem::size_of::<sicore_callbacks>(),
        user_data: Arc::into_raw(rm.clone()) as *mut c_void,
        update_allocation: None,
        update_application: None,
        update_node: None,
        predicates: None,
        resync_scheduler_cache: None,
        send_event: None,
        update_container_scheduling_state: None,
        update_configuration: Some(on_update_configuration),
        release: Some(on_release),
    };
    let mut resp = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    let st = sicore_register_resource_manager(
        sched,
        req.as_ptr(),
        req.len(),
        &table,
        &mut resp,
        &mut err,
    );
    let msg = take(err);
    take(resp);
    (st, msg)
}

fn take(buf: sicore_buffer) -> String {
    if buf.data.is_null() {
        return String::new();
    }
    // SAFETY: a buffer the library returned, read before it is freed.
    let s = String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(buf.data, buf.len) })
        .into_owned();
    sicore_buffer_free(buf);
    s
}

/// `sicore_set_policy_config`.
pub fn set_policy_config(
    sched: *mut sicore_scheduler,
    group: &str,
    yaml: &str,
) -> (sicore_status, String) {
    let mut err = sicore_buffer::empty();
    let st = sicore_set_policy_config(
        sched,
        group.as_ptr(),
        group.len(),
        yaml.as_ptr(),
        yaml.len(),
        &mut err,
    );
    (st, take(err))
}

/// The checksum of the configuration the core holds for RM `rm_id`.
pub fn core_checksum(sched: *mut sicore_scheduler, rm_id: &str) -> String {
    let mut json = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    let st = sicore_state_dump(sched, &mut json, &mut err);
    assert_eq!(st, sicore_status::SICORE_OK, "state dump: {}", take(err));
    let dump: serde_json::Value = serde_json::from_str(&take(json)).expect("JSON");
    dump["rms"]
        .as_array()
        .and_then(|rms| rms.iter().find(|r| r["rm_id"] == rm_id))
        .and_then(|r| r["config_checksum"].as_str())
        .unwrap_or_else(|| panic!("RM {rm_id} in the dump: {dump:#}"))
        .to_string()
}

/// The address the REST service listens on.
pub fn rest_address(sched: *mut sicore_scheduler) -> String {
    let mut out = sicore_buffer::empty();
    let mut err = sicore_buffer::empty();
    assert_eq!(
        sicore_rest_address(sched, &mut out, &mut err),
        sicore_status::SICORE_OK
    );
    take(out)
}

/// The JSON a `GET path` answers, asserting a 200.
pub fn get_json(addr: &str, path: &str) -> serde_json::Value {
    let r = http(addr, "GET", path, &[], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

/// The entry of the queue at `path` in a REST queue tree.
pub fn queue_entry<'a>(q: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    if q["queuename"] == path {
        return Some(q);
    }
    q["children"]
        .as_array()?
        .iter()
        .find_map(|c| queue_entry(c, path))
}
