//! Access control of the REST service (docs/rest-and-metrics.md): the Host
//! header must name the service (DNS rebinding), mutating requests need the
//! operator's bearer token when one is set, and a service bound beyond
//! loopback without a token serves reads and refuses every change.

use crate::common::{options_bytes, take_string, yaml_options, Harness};
use crate::restkit::*;
use sicore::ffi::*;
use sicore::proto::sicore::v1::RestOptions;

const YAML: &str = "partitions:
  - name: default
    queues:
      - name: root
        submitacl: '*'
        queues:
          - name: a
";

fn served(rest: RestOptions) -> (Harness, String, std::sync::Arc<ConfigRm>) {
    let mut o = yaml_options(YAML);
    o.rest_address = "127.0.0.1:0".into();
    o.rest = Some(rest);
    let h = Harness::new(o);
    let rm = ConfigRm::new();
    let (st, msg) = register(h.sched, "rm", "queues", &rm);
    assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
    let addr = rest_address(h.sched);
    (h, addr, rm)
}

/// A request with this exact Host header.
fn with_host(addr: &str, host: &str, path: &str) -> Reply {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(&request_text("GET", path, host, &[], b""))
        .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    parse_reply(&raw).unwrap()
}

#[test]
fn a_host_that_is_not_the_service_is_refused() {
    let (_h, addr, _rm) = served(RestOptions {
        allowed_hosts: vec!["scheduler.example".into()],
        ..Default::default()
    });
    let port = addr.rsplit_once(':').unwrap().1;
    for host in ["evil.example", &format!("evil.example:{port}"), "127.0.0.2"] {
        let r = with_host(&addr, host, "/ws/v1/queues");
        assert_eq!(r.status, 403, "Host {host}: {}", r.body);
        assert!(r.body.contains("allowed_hosts"), "{}", r.body);
    }
    for host in [
        addr.clone(),
        "127.0.0.1".to_string(),
        format!("localhost:{port}"),
        "scheduler.example".to_string(),
        format!("scheduler.example:{port}"),
    ] {
        let r = with_host(&addr, &host, "/ws/v1/queues");
        assert_eq!(r.status, 200, "Host {host}: {}", r.body);
    }
}

#[test]
fn mutating_requests_need_the_token_when_one_is_set() {
    // It sets the process's log level (back to what it read).
    let _log = crate::common::serial::log();
    let (h, addr, rm) = served(RestOptions {
        token: "s3cret-token".into(),
        ..Default::default()
    });
    let base = config_checksum(&addr);
    let text = format!("{YAML}          - name: b\nchecksum: {base}\n");
    for auth in [None, Some("Bearer wrong"), Some("Basic s3cret-token")] {
        let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", *a)).collect();
        let r = http(&addr, "PUT", "/ws/v1/config", &headers, text.as_bytes());
        assert_eq!(r.status, 401, "{auth:?}: {}", r.body);
        assert_eq!(r.header("WWW-Authenticate"), Some("Bearer"));
        let r = http(&addr, "PUT", "/ws/v1/loglevel/debug", &headers, b"");
        assert_eq!(r.status, 401, "{auth:?}: {}", r.body);
    }
    assert_eq!(rm.log(|l| l.entered), 0, "nothing reached the RM");
    assert_eq!(core_checksum(h.sched, "rm"), base);
    // Reads and validation need no token.
    assert_eq!(http(&addr, "GET", "/ws/v1/queues", &[], b"").status, 200);
    let v = http(&addr, "POST", "/ws/v1/validate-conf", &[], YAML.as_bytes());
    assert_eq!(v.status, 200);
    // With it, the update goes through.
    let ok = [("Authorization", "Bearer s3cret-token")];
    let r = http(&addr, "PUT", "/ws/v1/config", &ok, text.as_bytes());
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(rm.log(|l| l.accepted.len()), 1);
    let level = http(&addr, "GET", "/ws/v1/loglevel", &[], b"").body;
    let r = http(&addr, "PUT", &format!("/ws/v1/loglevel/{level}"), &ok, b"");
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn beyond_loopback_without_a_token_serves_reads_and_refuses_changes() {
    // ":port" is every address, as Go's net.Listen reads YuniKorn's ":9080".
    for address in ["0.0.0.0:0", "[::]:0", ":0"] {
        let mut o = yaml_options(YAML);
        o.rest_address = address.into();
        let h = Harness::new(o);
        let rm = ConfigRm::new();
        let (st, msg) = register(h.sched, "rm", "queues", &rm);
        assert_eq!(st, sicore_status::SICORE_OK, "{msg}");
        let port = rest_address(h.sched)
            .rsplit_once(':')
            .unwrap()
            .1
            .to_string();
        let addr = format!("127.0.0.1:{port}");
        // Any Host: a Kubernetes service name, a proxy passing the browser's.
        for host in [
            "yunikorn-service.yunikorn.svc:9080",
            "ui.example.com",
            "10.0.0.7",
        ] {
            let r = with_host(&addr, host, "/ws/v1/queues");
            assert_eq!(r.status, 200, "{address} Host {host}: {}", r.body);
        }
        let base = config_checksum(&addr);
        let text = format!("{YAML}          - name: b\nchecksum: {base}\n");
        for (path, body) in [
            ("/ws/v1/config", text.as_bytes()),
            ("/ws/v1/loglevel/debug", b""),
        ] {
            let r = http(&addr, "PUT", path, &[], body);
            assert_eq!(r.status, 403, "{address} PUT {path}: {}", r.body);
            assert!(r.body.contains("rest.token"), "{}", r.body);
        }
        assert_eq!(rm.log(|l| l.entered), 0, "nothing reached the RM");
        assert_eq!(core_checksum(h.sched, "rm"), base);
        let v = http(&addr, "POST", "/ws/v1/validate-conf", &[], YAML.as_bytes());
        assert_eq!(v.status, 200, "validation stays open: {}", v.body);
    }
    // Loopback needs none (every other test), and a bad token is refused.
    let mut o = yaml_options(YAML);
    o.rest_address = "127.0.0.1:0".into();
    o.rest = Some(RestOptions {
        token: "two words".into(),
        ..Default::default()
    });
    let bytes = options_bytes(&o);
    let mut sched = std::ptr::null_mut();
    let mut err = sicore_buffer::empty();
    let st = sicore_new(bytes.as_ptr(), bytes.len(), &mut sched, &mut err);
    assert_eq!(st, sicore_status::SICORE_INVALID_ARGUMENT);
    assert!(take_string(err).contains("rest.token"));
}
