//! The core's only source of time.
//!
//! Every timer, age and timestamp in the scheduler reads a [`Clock`] handed
//! to it at construction instead of `Instant::now`/`SystemTime::now`, so
//! tests can drive timeouts and delays step by step with a [`ManualClock`]
//! and no sleeps. The running service uses [`SystemClock`].

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

/// A source of monotonic and wall-clock time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Monotonic time, for timers and ages.
    fn now(&self) -> Instant;
    /// Wall-clock time in nanoseconds since the Unix epoch, for the
    /// timestamps an RM or operator reads (events, dump, REST).
    fn unix_nanos(&self) -> i64;
}

/// A clock shared by everything one core owns.
pub type SharedClock = Arc<dyn Clock>;

/// The real clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn unix_nanos(&self) -> i64 {
        system_unix_nanos()
    }
}

/// Wall-clock nanoseconds since the Unix epoch, saturating (a clock before
/// 1970 reads 0, one past year 2262 reads `i64::MAX`).
pub fn system_unix_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The real clock, shared.
pub fn system() -> SharedClock {
    Arc::new(SystemClock)
}

/// A clock that moves only when told to: for tests that step the core.
#[cfg_attr(not(test), allow(dead_code))]
#[derive(Debug)]
pub struct ManualClock {
    base: Instant,
    base_unix_nanos: i64,
    offset: Mutex<Duration>,
}

#[cfg_attr(not(test), allow(dead_code))]
impl ManualClock {
    /// A clock standing at the moment of its creation.
    pub fn new() -> Arc<Self> {
        Arc::new(ManualClock {
            base: Instant::now(),
            base_unix_nanos: system_unix_nanos(),
            offset: Mutex::new(Duration::ZERO),
        })
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        let mut offset = self.offset.lock();
        *offset = offset.saturating_add(d);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.base + *self.offset.lock()
    }

    fn unix_nanos(&self) -> i64 {
        let offset = i64::try_from(self.offset.lock().as_nanos()).unwrap_or(i64::MAX);
        self.base_unix_nanos.saturating_add(offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced() {
        let clock = ManualClock::new();
        let (t0, w0) = (clock.now(), clock.unix_nanos());
        assert_eq!(clock.now(), t0);
        clock.advance(Duration::from_secs(30));
        assert_eq!(clock.now() - t0, Duration::from_secs(30));
        assert_eq!(clock.unix_nanos() - w0, 30_000_000_000);
    }
}
