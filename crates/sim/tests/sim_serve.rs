//! `sicore-sim --serve ADDR`: after the workload the scheduler and its REST
//! service stay up until the process is interrupted, then it exits cleanly.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

fn get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("the REST service is up");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn serve_keeps_the_rest_service_up_until_interrupted() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sicore-sim"))
        .args(["--nodes", "10", "--asks", "50", "--serve", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start sicore-sim");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("sicore-sim announces the REST service before exiting")
            .unwrap();
        if let Some(rest) = line.strip_prefix("REST service on http://") {
            break rest.split('/').next().unwrap().to_string();
        }
    };

    let clusters = get(&addr, "/ws/v1/clusters");
    assert!(clusters.starts_with("HTTP/1.1 200"), "{clusters}");
    assert!(
        clusters.contains("\"runningContainers\":\"50\""),
        "{clusters}"
    );
    let metrics = get(&addr, "/metrics");
    assert!(
        metrics.contains(
            "yunikorn_scheduler_container_allocation_attempt_total{state=\"allocated\"} 50"
        ),
        "{metrics}"
    );
    // Still serving: the process waits for the interrupt.
    assert!(child.try_wait().unwrap().is_none());

    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(
        exit.success(),
        "sicore-sim exits cleanly on Ctrl-C: {exit:?}"
    );
    assert!(TcpStream::connect(&addr).is_err(), "the port is closed");
}
