//! What the tests of one binary share per process, and the locks that
//! keep a test which touches it from seeing another test's effects:
//!
//! - the library's logger and log level are per process: a test that
//!   installs a logger, sets the level or asserts it holds [`log`];
//! - configuration watcher threads are counted per process
//!   (`/proc/self/task`): every scheduler that may start one (one with a
//!   configuration directory, see [`Harness`](super::Harness)) holds
//!   [`watchers`] while it lives, and a test that counts them holds
//!   [`watchers_alone`], so that no other test's scheduler exists then.

use std::cell::Cell;
use std::sync::{Condvar, Mutex, MutexGuard};

/// A lock poisoned by a failed test is still good for the next one.
fn lock<T>(m: &'static Mutex<T>) -> MutexGuard<'static, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Held by a test that installs a logger, changes the process's log level
/// or asserts what it is.
pub fn log() -> MutexGuard<'static, ()> {
    static LOG: Mutex<()> = Mutex::new(());
    lock(&LOG)
}

struct Watching {
    /// Schedulers alive that may start a watcher.
    shared: usize,
    /// A test counts the watchers now.
    alone: bool,
    /// Tests waiting to count them: new schedulers wait behind them.
    waiting: usize,
}

static WATCHING: Mutex<Watching> = Mutex::new(Watching {
    shared: 0,
    alone: false,
    waiting: 0,
});
static CHANGED: Condvar = Condvar::new();

thread_local! {
    /// This thread holds [`watchers_alone`]: its own schedulers count.
    static ALONE: Cell<bool> = const { Cell::new(false) };
}

/// Held by a scheduler that may start a configuration watcher, from
/// before it is made until after it is freed. Unlike a `std` read guard it
/// may be dropped on another thread than the one that took it.
pub struct Watcher {
    counted: bool,
}

/// Waits while a test counts the watchers; on the thread of that test
/// itself it returns at once.
pub fn watchers() -> Watcher {
    if ALONE.with(Cell::get) {
        return Watcher { counted: false };
    }
    let mut w = lock(&WATCHING);
    while w.alone || w.waiting > 0 {
        w = CHANGED.wait(w).unwrap_or_else(|e| e.into_inner());
    }
    w.shared += 1;
    Watcher { counted: true }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        if self.counted {
            lock(&WATCHING).shared -= 1;
            CHANGED.notify_all();
        }
    }
}

/// Held by a test that counts the watcher threads: no scheduler of
/// another test that could start one exists meanwhile.
pub struct Alone(());

/// Waits until no other test's scheduler may start a watcher.
pub fn watchers_alone() -> Alone {
    let mut w = lock(&WATCHING);
    w.waiting += 1;
    while w.alone || w.shared > 0 {
        w = CHANGED.wait(w).unwrap_or_else(|e| e.into_inner());
    }
    w.waiting -= 1;
    w.alone = true;
    ALONE.with(|a| a.set(true));
    Alone(())
}

impl Drop for Alone {
    fn drop(&mut self) {
        ALONE.with(|a| a.set(false));
        lock(&WATCHING).alone = false;
        CHANGED.notify_all();
    }
}
