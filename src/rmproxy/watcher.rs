//! The configuration watcher of `UpdateConfiguration` (spec 2.8).
//!
//! An RM calls `UpdateConfiguration` when it learns that its configuration
//! changed, which is often before the file itself is rewritten (a
//! Kubernetes configmap reaches the mounted file up to a minute later).
//! When the synchronous reload finds the file unchanged, a watcher for that
//! RM re-reads it every second for two minutes and hands the first changed,
//! valid version to the core through its request channel.
//!
//! Files are read, checksummed and parsed on the watcher's own thread, so
//! the core never waits on the file system; the core only compares the
//! checksum with the one in force and applies. A version that cannot be
//! applied is reported once (a log record and a `QUEUE` event), the old
//! configuration stays and the watcher goes on. A watcher ends when a new
//! configuration is in force, when two minutes pass without one, when the
//! RM is gone or in-memory text took over its policy group, or when the
//! scheduler is closed (which joins it).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Sender};
use parking_lot::{Condvar, Mutex};

use crate::config;
use crate::error::{Error, Status};
use crate::scheduler::core::{Command, WatchVerdict};

/// Time between two reads of the file (the reference's tick).
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// How long a watcher waits for a change after the last
/// `UpdateConfiguration` that started or extended it.
pub const WATCH_DURATION: Duration = Duration::from_secs(120);

/// What the caller's thread and the watcher thread share.
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

struct State {
    /// Checksum in force when the watch was last started or extended.
    baseline: String,
    expires: Instant,
    stop: bool,
}

struct Watch {
    policy_group: String,
    shared: Arc<Shared>,
    thread: JoinHandle<()>,
}

/// The watchers of one scheduler, at most one per RM.
pub struct Watchers {
    scheduler_id: u64,
    tx: Sender<Command>,
    config_dir: String,
    watches: Mutex<Watches>,
}

#[derive(Default)]
struct Watches {
    by_rm: HashMap<String, Watch>,
    /// Set by [`Watchers::stop_all`]: no watcher starts afterwards.
    closed: bool,
}

impl Watchers {
    /// No watcher yet; `tx` is the core's request channel.
    pub fn new(scheduler_id: u64, tx: Sender<Command>, config_dir: String) -> Self {
        Watchers {
            scheduler_id,
            tx,
            config_dir,
            watches: Mutex::new(Watches::default()),
        }
    }

    /// Starts a watcher for `rm_id`, or pushes the expiry of its running
    /// one back to two minutes from now. `checksum` is the one in force.
    pub fn watch(&self, rm_id: &str, policy_group: &str, checksum: &str) -> Result<(), Error> {
        let mut watches = self.watches.lock();
        if watches.closed {
            return Err(Error::stopped());
        }
        if let Some(w) = watches.by_rm.get(rm_id) {
            if !w.thread.is_finished() && w.policy_group == policy_group {
                let mut st = w.shared.state.lock();
                if !st.stop {
                    st.expires = Instant::now() + WATCH_DURATION;
                    st.baseline = checksum.to_string();
                    log::debug!("configuration watcher of RM {rm_id} extended");
                    return Ok(());
                }
            }
        }
        // A finished watcher, or one for a group the RM no longer uses.
        if let Some(old) = watches.by_rm.remove(rm_id) {
            stop_and_join(old);
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                baseline: checksum.to_string(),
                expires: Instant::now() + WATCH_DURATION,
                stop: false,
            }),
            wake: Condvar::new(),
        });
        let job = Job {
            rm_id: rm_id.to_string(),
            policy_group: policy_group.to_string(),
            config_dir: self.config_dir.clone(),
            tx: self.tx.clone(),
            shared: shared.clone(),
        };
        let thread = std::thread::Builder::new()
            .name(format!("sicore-watch-{}", self.scheduler_id))
            .spawn(move || job.run())
            .map_err(|e| {
                Error::new(
                    Status::Internal,
                    format!("cannot start the configuration watcher: {e}"),
                )
            })?;
        log::info!(
            "configuration of RM {rm_id} unchanged; watching policy group '{policy_group}' for {}s",
            WATCH_DURATION.as_secs()
        );
        watches.by_rm.insert(
            rm_id.to_string(),
            Watch {
                policy_group: policy_group.to_string(),
                shared,
                thread,
            },
        );
        Ok(())
    }

    /// Number of watchers whose thread is still running.
    pub fn running(&self) -> usize {
        self.watches
            .lock()
            .by_rm
            .values()
            .filter(|w| !w.thread.is_finished())
            .count()
    }

    /// Tells every watcher to stop, without waiting.
    pub fn signal_stop(&self) {
        for w in self.watches.lock().by_rm.values() {
            w.shared.state.lock().stop = true;
            w.shared.wake.notify_all();
        }
    }

    /// Stops and joins every watcher.
    pub fn stop_all(&self) {
        let all: Vec<Watch> = {
            let mut watches = self.watches.lock();
            watches.closed = true;
            watches.by_rm.drain().map(|(_, w)| w).collect()
        };
        for w in all {
            stop_and_join(w);
        }
    }
}

fn stop_and_join(w: Watch) {
    w.shared.state.lock().stop = true;
    w.shared.wake.notify_all();
    if w.thread.join().is_err() {
        log::error!("a configuration watcher ended with a panic");
    }
}

/// One watcher thread's work.
struct Job {
    rm_id: String,
    policy_group: String,
    config_dir: String,
    tx: Sender<Command>,
    shared: Arc<Shared>,
}

impl Job {
    fn run(self) {
        // Key of the last version reported as refused, so that a file that
        // stays broken is reported once, not every second.
        let mut refused: Option<String> = None;
        // In-memory text is not the watcher's business (the core refuses a
        // file while in-memory text wins): read by the file rules only.
        let no_memory = BTreeMap::new();
        loop {
            let baseline = {
                let mut st = self.shared.state.lock();
                let next = Instant::now() + POLL_INTERVAL;
                while !st.stop && Instant::now() < next {
                    self.shared.wake.wait_until(&mut st, next);
                }
                if st.stop {
                    return;
                }
                if Instant::now() >= st.expires {
                    log::info!(
                        "configuration watcher of RM {} ends: no change for {}s",
                        self.rm_id,
                        WATCH_DURATION.as_secs()
                    );
                    return;
                }
                st.baseline.clone()
            };
            let (text, source) =
                match config::read(&self.policy_group, &self.config_dir, &no_memory) {
                    Ok(found) => found,
                    Err(e) => {
                        let key = format!("read: {e}");
                        if refused.as_ref() != Some(&key) {
                            self.report(String::from("the configuration file"), e.to_string());
                            refused = Some(key);
                        }
                        continue;
                    }
                };
            let sum = config::checksum(&text);
            if sum == baseline || refused.as_ref() == Some(&sum) {
                continue;
            }
            let loaded = match config::from_text(text, source.clone()) {
                Ok(loaded) => loaded,
                Err(e) => {
                    self.report(source, e.to_string());
                    refused = Some(sum);
                    continue;
                }
            };
            let (reply, answer) = bounded(1);
            let sent = self.tx.send(Command::WatchApply {
                rm_id: self.rm_id.clone(),
                policy_group: self.policy_group.clone(),
                loaded: Box::new(loaded),
                reply: reply.into(),
            });
            // No answer: the core has stopped.
            let Ok(verdict) = sent
                .map_err(drop)
                .and_then(|()| answer.recv().map_err(drop))
            else {
                return;
            };
            match verdict {
                WatchVerdict::Applied | WatchVerdict::Current | WatchVerdict::Gone => return,
                // The core reported it; wait for the next version.
                WatchVerdict::Failed => refused = Some(sum),
            }
        }
    }

    /// Hands a refused version to the core, which logs it and reports it
    /// as an event.
    fn report(&self, source: String, reason: String) {
        let _ = self.tx.send(Command::WatchRejected {
            rm_id: self.rm_id.clone(),
            policy_group: self.policy_group.clone(),
            source,
            reason,
        });
    }
}
