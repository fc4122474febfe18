//! Routing the library's `log` records to a host-supplied function.

use std::ffi::c_void;
use std::sync::OnceLock;

use parking_lot::RwLock;

/// Log levels passed to the host's logger.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum sicore_log_level {
    /// Logging off (only as `max_level`).
    SICORE_LOG_OFF = 0,
    /// Errors.
    SICORE_LOG_ERROR = 1,
    /// Warnings.
    SICORE_LOG_WARN = 2,
    /// Information.
    SICORE_LOG_INFO = 3,
    /// Debugging detail.
    SICORE_LOG_DEBUG = 4,
    /// Tracing detail.
    SICORE_LOG_TRACE = 5,
}

/// The host's log function: level 1..5 (error..trace), the record's target
/// (module path) and message, both UTF-8 and borrowed for the call.
pub type sicore_log_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        level: i32,
        target: *const u8,
        target_len: usize,
        message: *const u8,
        message_len: usize,
    ),
>;

struct HostLogger {
    func: unsafe extern "C" fn(*mut c_void, i32, *const u8, usize, *const u8, usize),
    user_data: usize,
    max_level: log::LevelFilter,
}

static HOST: RwLock<Option<HostLogger>> = RwLock::new(None);

fn level_from_index(i: usize) -> log::LevelFilter {
    log::LevelFilter::iter()
        .nth(i)
        .unwrap_or(log::LevelFilter::Info)
}

/// Sets the level chosen by `SchedulerOptions.log_level`, if it names
/// one (the level is process-wide: an empty option leaves the level in
/// force); a later change (the REST service's, an SI v1.x RM's
/// `log.level`) reaches the bridge through the same hook.
pub(crate) fn set_library_level(level: Option<log::LevelFilter>) {
    crate::loglevel::on_change(refresh_max_level);
    if let Some(level) = level {
        crate::loglevel::set(level);
    }
}

fn refresh_max_level() {
    let host = HOST
        .read()
        .as_ref()
        .map_or(log::LevelFilter::Off, |h| h.max_level);
    let lib = crate::loglevel::get();
    if installed() {
        log::set_max_level(host.min(lib));
    }
}

struct Forwarder;

impl log::Log for Forwarder {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        HOST.read()
            .as_ref()
            .is_some_and(|h| metadata.level() <= h.max_level)
            && metadata.level() <= crate::loglevel::get()
    }

    fn log(&self, record: &log::Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        // Copied out so that no lock is held while the host's function
        // runs: it may log, or call sicore_set_logger, itself.
        let Some((func, user_data)) = HOST.read().as_ref().map(|h| (h.func, h.user_data)) else {
            return;
        };
        let message = record.args().to_string();
        let target = record.target();
        // SAFETY: a function registered by the host through
        // sicore_set_logger, with its own user_data; the strings are
        // borrowed for the duration of the call.
        unsafe {
            func(
                user_data as *mut c_void,
                record.level() as i32,
                target.as_ptr(),
                target.len(),
                message.as_ptr(),
                message.len(),
            )
        };
    }

    fn flush(&self) {}
}

fn installed() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| log::set_logger(&Forwarder).is_ok())
}

/// Sends the library's log records at `max_level` (1..5 = error..trace) or
/// more severe to `log`, from whichever thread logs, so `log` must be
/// thread-safe, and may itself call `sicore_set_logger`. NULL `log`
/// switches forwarding off; a record already being delivered on another
/// thread may still reach the previous function, so keep its `user_data`
/// valid until such calls are over. The process-wide
/// logger is claimed on first use; if the host process already installed a
/// Rust `log` logger, records go there instead and this has no effect.
#[no_mangle]
pub extern "C" fn sicore_set_logger(log: sicore_log_fn, user_data: *mut c_void, max_level: i32) {
    super::void_boundary("sicore_set_logger", || {
        let max_level = level_from_index(max_level.clamp(0, 5) as usize);
        *HOST.write() = log.map(|func| HostLogger {
            func,
            user_data: user_data as usize,
            max_level,
        });
        crate::loglevel::on_change(refresh_max_level);
        refresh_max_level();
    });
}
