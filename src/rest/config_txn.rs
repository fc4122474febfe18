//! `PUT /ws/v1/config` as one transaction (spec 2.9).
//!
//! The HTTP task only reads and checks the body, then hands the update to
//! this module's thread and waits for the verdict. The thread takes the
//! scheduler's configuration lock and, under it: checks the base checksum
//! and dry-runs the text on the core, asks the RM's current callbacks,
//! applies, and (only if applying failed after the RM stored the text)
//! gives the RM back the text the core still holds. Registration,
//! `UpdateConfiguration`, `SetPolicyConfig` and the reload watcher take the
//! same lock, so nothing interleaves, and a client that goes away does not
//! cut the transaction short: the thread carries it to the end.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

use crate::error::{Error, Status};
use crate::proto::si::v1 as si;
use crate::scheduler::config_txn::{ApplyRefused, ConfigLock, ConfigTarget};
use crate::scheduler::core::{Command, Reply};
use crate::scheduler::owner::mark_library_thread;
use crate::scheduler::port::RmPort;

/// Why an update was not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The base checksum is not the one in force (409).
    Conflict(String),
    /// The text, the RM or the scheduler refused it (400).
    Invalid(String),
    /// The scheduler is stopping or failed (503).
    Unavailable(String),
}

/// One update: text without its checksum, and the base checksum the
/// client read.
struct Job {
    text: String,
    base: String,
    reply: tokio::sync::oneshot::Sender<Result<(), Refusal>>,
}

/// The thread that runs updates, one at a time.
pub struct ConfigWorker {
    jobs: Option<Sender<Job>>,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ConfigWorker {
    /// Starts the thread, marked as one of scheduler `scheduler_id`'s own
    /// (so the RM's callback it runs cannot wait on the scheduler).
    pub fn start(
        scheduler_id: u64,
        core: Sender<Command>,
        lock: ConfigLock,
    ) -> Result<Self, Error> {
        let (tx, rx) = unbounded::<Job>();
        let stopping = Arc::new(AtomicBool::new(false));
        let stop = stopping.clone();
        let thread = std::thread::Builder::new()
            .name(format!("sicore-config-{scheduler_id}"))
            .spawn(move || {
                mark_library_thread(scheduler_id);
                run(rx, &core, &lock, &stop);
            })
            .map_err(|e| Error::new(Status::Internal, format!("cannot start a thread: {e}")))?;
        Ok(ConfigWorker {
            jobs: Some(tx),
            stopping,
            thread: Some(thread),
        })
    }

    /// Queues an update; the receiver gets its verdict (or is dropped
    /// when the service stops before it ran).
    pub fn submit(
        &self,
        text: String,
        base: String,
    ) -> tokio::sync::oneshot::Receiver<Result<(), Refusal>> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job { text, base, reply });
        }
        answer
    }

    /// Lets the update in progress finish, drops those not started and
    /// joins the thread.
    pub fn stop(&mut self) {
        self.stopping.store(true, Ordering::Release);
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                log::error!("the REST configuration thread ended with a panic");
            }
        }
    }
}

impl Drop for ConfigWorker {
    fn drop(&mut self) {
        self.stop();
    }
}

fn run(rx: Receiver<Job>, core: &Sender<Command>, lock: &ConfigLock, stopping: &AtomicBool) {
    for job in rx {
        if stopping.load(Ordering::Acquire) {
            let _ = job.reply.send(Err(Refusal::Unavailable(
                "the scheduler is stopping".into(),
            )));
            continue;
        }
        let verdict = {
            let _config = lock.lock();
            transaction(core, &job.text, &job.base)
        };
        match &verdict {
            Ok(()) => log::info!("configuration updated through REST /ws/v1/config"),
            Err(r) => log::info!("REST configuration update not applied: {r:?}"),
        }
        // The client may be gone; the transaction is complete either way.
        let _ = job.reply.send(verdict);
    }
}

/// Sends the command `make` builds to the core and waits for its answer.
/// No timeout: every step must complete (the core answers unless it
/// stopped).
fn on_core<T: Send + 'static>(
    core: &Sender<Command>,
    make: impl FnOnce(Reply<T>) -> Command,
) -> Result<T, Refusal> {
    let (tx, rx) = bounded(1);
    let gone = || Refusal::Unavailable("the scheduler is stopping".into());
    core.send(make(tx.into())).map_err(|_| gone())?;
    rx.recv().map_err(|_| gone())
}

fn ask(cb: &dyn RmPort, configs: String) -> Result<(), String> {
    let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        cb.update_configuration(&si::UpdateConfigurationRequest { configs })
    }))
    .map_err(|_| "the RM's UpdateConfiguration callback panicked".to_string())?;
    if answer.success {
        Ok(())
    } else {
        Err(answer.reason)
    }
}

fn transaction(core: &Sender<Command>, text: &str, base: &str) -> Result<(), Refusal> {
    let target: ConfigTarget = on_core(core, |reply| Command::ConfigTarget {
        text: text.to_string(),
        reply,
    })?
    .map_err(|e| Refusal::Invalid(e.message))?;
    if base != target.checksum {
        return Err(Refusal::Conflict(format!(
            "the base configuration is changed: the body's checksum '{base}' is not the current '{}'",
            target.checksum
        )));
    }
    ask(&*target.callback, text.to_string()).map_err(|reason| {
        Refusal::Invalid(format!(
            "the resource manager rejected the configuration: {reason}"
        ))
    })?;
    let applied = on_core(core, |reply| Command::ApplyConfigText {
        rm_id: target.rm_id.clone(),
        text: text.to_string(),
        expected_checksum: Some(target.checksum.clone()),
        registration: target.callback.clone(),
        reply,
    })?;
    match applied {
        Ok(()) => Ok(()),
        // Cannot happen while registrations take the lock; if it did, the
        // new registration's configuration stays, untouched.
        Err(ApplyRefused::Replaced) => Err(Refusal::Conflict(format!(
            "RM {} registered again during the update; its new registration's configuration stays",
            target.rm_id
        ))),
        Err(ApplyRefused::Failed { error, in_force }) => {
            if let Some(text) = in_force {
                // The RM stored the new text: give it what is in force.
                if let Err(reason) = ask(&*target.callback, text) {
                    log::error!(
                        "REST config update: giving the RM back the configuration in force failed: {reason}"
                    );
                }
            }
            Err(Refusal::Invalid(error.message))
        }
    }
}
