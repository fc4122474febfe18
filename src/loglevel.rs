//! The library's own log level (`SchedulerOptions.log_level`, or the REST
//! service's `PUT /ws/v1/loglevel`): a process-wide filter the host logger
//! bridge (`ffi`) applies on top of the host's own level. It lives apart
//! from both users so that neither imports the other.

use std::sync::atomic::{AtomicUsize, Ordering};

/// The level as a `LevelFilter` index.
static LEVEL: AtomicUsize = AtomicUsize::new(log::LevelFilter::Info as usize);
/// Called after every change (the bridge recomputes `log::max_level`).
static ON_CHANGE: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

fn from_index(i: usize) -> log::LevelFilter {
    log::LevelFilter::iter()
        .nth(i)
        .unwrap_or(log::LevelFilter::Info)
}

/// The level in force.
pub fn get() -> log::LevelFilter {
    from_index(LEVEL.load(Ordering::Relaxed))
}

/// Sets the level and lets the logger bridge, if one registered, apply it.
pub fn set(level: log::LevelFilter) {
    LEVEL.store(level as usize, Ordering::Relaxed);
    if let Some(f) = ON_CHANGE.get() {
        f();
    }
}

/// Registers the function run after every change (once per process; a
/// second registration is ignored).
pub fn on_change(f: fn()) {
    let _ = ON_CHANGE.set(f);
}
