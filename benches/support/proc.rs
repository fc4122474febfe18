//! What the bench reads of its own process from /proc: CPU time per
//! thread and in all, and the peak resident memory.

/// CPU time (ms) per thread name, from /proc, as (user, system): shows
/// which thread bounds a run, and how much of it the kernel spent for it
/// (mostly clearing fresh pages: docs/performance-large.md, "Huge pages").
pub fn thread_cpu_ms() -> std::collections::BTreeMap<String, (f64, f64)> {
    let mut out = std::collections::BTreeMap::new();
    let tick = 100.0; // USER_HZ on Linux
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for t in dir.flatten() {
            let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
            let name = stat
                .split('(')
                .nth(1)
                .and_then(|r| r.split(')').next())
                .unwrap_or("?")
                .to_string();
            let rest: Vec<&str> = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .collect();
            if rest.len() > 13 {
                let ms = |v: &str| v.parse::<f64>().unwrap_or(0.0) * 1000.0 / tick;
                let e = out.entry(name).or_insert((0.0, 0.0));
                e.0 += ms(rest[11]);
                e.1 += ms(rest[12]);
            }
        }
    }
    out
}

/// CPU time of the whole process, every thread (the scheduler's and the
/// RM's), from the per-thread schedstat (nanoseconds).
pub fn process_cpu_ns() -> u64 {
    let mut total = 0u64;
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for t in dir.flatten() {
            let stat = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
            total += stat
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    total
}

/// The peak resident memory (MiB): VmHWM.
pub fn peak_rss_mib() -> f64 {
    status_kb("VmHWM:") / 1024.0
}

/// The current resident memory (MiB), from /proc/self/status.
pub fn rss_mib() -> f64 {
    status_kb("VmRSS:") / 1024.0
}

fn status_kb(field: &str) -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
        })
        .unwrap_or(0.0)
}
