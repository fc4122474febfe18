//! The RM proxy: the [`SchedulerApi`] implementation.
//!
//! Requests are validated on the caller's thread and queued, in call order,
//! to the core thread. Outcomes come back through the dispatcher thread
//! ([`dispatch`]), except `Predicates` and `ReSyncSchedulerCache`, which the
//! core calls synchronously from its own thread. The threads themselves are
//! started and stopped by [`crate::entrypoint`].

pub mod dispatch;
pub mod edge;
mod recent;
pub mod v1;
mod validate;
pub mod watcher;
pub mod wire;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::{bounded, Sender};
use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Status};
use crate::proto::si::v1 as si;
use crate::scheduler::api::{ResourceManagerCallback, SchedulerApi};
use crate::scheduler::config_txn::ConfigLock;
use crate::scheduler::core::{Command, Registration, Registry, ReloadOutcome, Reply};
use crate::scheduler::edition::{ConfigOrigin, Edition};
use crate::scheduler::owner::current_scheduler;
use crate::scheduler::port::RmPort;
use crate::scheduler::request::AllocationUpdate;
use crate::scheduler::resource;

/// The calling side of one scheduler: checks requests and queues them to
/// its core.
pub struct RmProxy {
    id: u64,
    tx: Sender<Command>,
    /// RMs the core holds; written only by the core thread, when it
    /// applies a registration, so it is never out of order with the core.
    registered: Registry,
    /// Registrations sent to the core and not yet answered, per rmID, and
    /// the lock under which updates are checked and queued (see
    /// [`RmProxy::send_update`]).
    in_flight: Mutex<HashMap<String, usize>>,
    registration_done: Condvar,
    stopped: AtomicBool,
    watchers: watcher::Watchers,
    /// This scheduler's resource-name table: requests are decoded into it
    /// on the caller's thread (the core thread holds it as its home table),
    /// and it gives its names back when the scheduler is dropped.
    names: Arc<resource::ResourceNames>,
    /// Serialises configuration changes (see [`ConfigLock`]).
    config_lock: ConfigLock,
    /// The ports of the RMs registered through the v1.8 edition, as the
    /// core holds them: a v1 `UpdateConfiguration` names
    /// the registration it is meant for. Written under `config_lock`.
    v1_registrations: Mutex<HashMap<String, Arc<dyn RmPort>>>,
}

/// The function family an RM of `edition` calls, for refusals.
fn family(edition: Edition) -> &'static str {
    match edition {
        Edition::V012 => "sicore_* (SchedulerApi)",
        Edition::V1 => "sicore_v1_* (SchedulerApiV1)",
    }
}

impl RmProxy {
    /// The proxy of scheduler `id`, queueing to `tx`; `registered` is the
    /// set the core publishes, `watchers` the scheduler's reload watchers,
    /// `names` the scheduler's resource-name table, `config_lock` the lock
    /// every configuration change holds.
    pub(crate) fn new(
        id: u64,
        tx: Sender<Command>,
        registered: Registry,
        watchers: watcher::Watchers,
        names: Arc<resource::ResourceNames>,
        config_lock: ConfigLock,
    ) -> Self {
        RmProxy {
            id,
            tx,
            registered,
            in_flight: Mutex::new(HashMap::new()),
            registration_done: Condvar::new(),
            stopped: AtomicBool::new(false),
            watchers,
            names,
            config_lock,
            v1_registrations: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the scheduler has been stopped.
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// The first half of stopping: refuses from inside a callback, marks
    /// the proxy stopped (no request is queued after this) and reports
    /// whether this call is the one that stopped it.
    pub(crate) fn begin_close(&self) -> Result<bool, Error> {
        if current_scheduler() != 0 {
            return Err(Error::new(
                Status::WouldDeadlock,
                "a scheduler cannot be stopped or freed from inside a callback (of this or any other scheduler)",
            ));
        }
        Ok(!self.stopped.swap(true, Ordering::AcqRel))
    }

    /// Asks the watchers and the core to stop, without waiting.
    pub(crate) fn signal_stop(&self) {
        self.watchers.signal_stop();
        let _ = self.tx.send(Command::Shutdown);
    }

    /// The last half, once the core thread is gone: a watcher waiting on
    /// the core got its answer (none) when the core stopped; all of them
    /// end now, and no RM is registered any more.
    pub(crate) fn finish_close(&self) {
        self.watchers.stop_all();
        self.registered.write().clear();
        // The last references to v1 callback tables: their `release` runs now.
        self.v1_registrations.lock().clear();
        self.registration_done.notify_all();
    }

    /// Whether the calling thread is one of this scheduler's own threads,
    /// i.e. the call comes from inside one of its callbacks.
    fn on_own_thread(&self) -> bool {
        current_scheduler() == self.id
    }

    fn refuse_sync(&self, what: &str) -> Result<(), Error> {
        // Any library thread, not only this scheduler's: two schedulers
        // whose callbacks wait on each other would hang both.
        if current_scheduler() != 0 {
            return Err(Error::new(
                Status::WouldDeadlock,
                format!("{what} is synchronous and cannot be called from inside a callback (of this or any other scheduler)"),
            ));
        }
        if self.stopped.load(Ordering::Acquire) {
            return Err(Error::stopped());
        }
        Ok(())
    }

    /// [`SchedulerApi::update_allocation`] for an encoded request: decoded
    /// straight into core terms (see [`wire`]), the same checks, the same
    /// effect, without building the generated message first.
    pub fn update_allocation_encoded(&self, bytes: &[u8]) -> Result<(), Error> {
        const WHAT: &str = "request (si.v1.AllocationRequest)";
        // The RM is checked before anything is decoded: a refused request
        // must not leave resource names behind in the scheduler's table.
        let Some(rm_id) = wire::peek_rm_id(bytes) else {
            let e = <si::AllocationRequest as prost::Message>::decode(bytes)
                .err()
                .map_or_else(|| "malformed message".to_string(), |e| e.to_string());
            return Err(Error::decode(WHAT, e));
        };
        self.check_registered(rm_id, "AllocationRequest", Edition::V012)?;
        let update = self
            .names
            .charged_to(rm_id, || wire::decode_allocation_update(bytes))
            .map_err(|e| Error::decode(WHAT, e))?;
        validate::allocation_update(&update)?;
        let rm_id = update.rm_id.clone();
        self.send_update(
            &rm_id,
            "AllocationRequest",
            Edition::V012,
            Command::Allocation(update),
        )
    }

    fn send(&self, cmd: Command) -> Result<(), Error> {
        if self.stopped.load(Ordering::Acquire) {
            return Err(Error::stopped());
        }
        self.tx.send(cmd).map_err(|_| Error::stopped())
    }

    fn call<T: Send + 'static>(&self, make: impl FnOnce(Reply<T>) -> Command) -> Result<T, Error> {
        let (reply, answer) = bounded(1);
        self.send(make(reply.into()))?;
        answer.recv().map_err(|_| Error::stopped())
    }

    /// Queues an update of RM `rm_id` in the order the core sees
    /// registrations: a registration of the same rmID still in flight is
    /// waited for, then the RM is checked against what the core holds and
    /// the update queued, both under the lock that registrations are queued
    /// under. So an update that returns OK is never dropped by the core for
    /// an RM it no longer holds, and one that is refused names an RM the
    /// core does not hold. From a library thread (inside a callback) there
    /// is no waiting: the core may be the one that has to answer.
    fn send_update(
        &self,
        rm_id: &str,
        what: &str,
        edition: Edition,
        cmd: Command,
    ) -> Result<(), Error> {
        let mut in_flight = self.in_flight.lock();
        if !self.on_own_thread() {
            while in_flight.get(rm_id).is_some_and(|n| *n > 0) {
                self.registration_done.wait(&mut in_flight);
            }
        }
        self.check_registered(rm_id, what, edition)?;
        self.send(cmd)
    }

    /// Refuses a call for an RM that is not registered, or that registered
    /// through the other edition (the message names the one it used).
    fn check_registered(&self, rm_id: &str, what: &str, edition: Edition) -> Result<(), Error> {
        if self.stopped.load(Ordering::Acquire) {
            return Err(Error::stopped());
        }
        match self.registered.read().get(rm_id) {
            Some(e) if *e == edition => Ok(()),
            Some(e) => Err(Error::rejected(format!(
                "received {what} of {} for RmID=\"{rm_id}\", but that RM registered with {}: use the {} calls",
                edition.name(),
                e.name(),
                family(*e)
            ))),
            None => Err(Error::rejected(format!(
                "received {what}, but RmID=\"{rm_id}\" not registered"
            ))),
        }
    }

    /// Registers `r.rm_id` through `r.edition`: queued under the update lock
    /// and counted as in flight until the core answers; no lock but the
    /// configuration lock is held while waiting, since the core may run
    /// callbacks that call back into this scheduler meanwhile. The core
    /// itself records whether the RM is registered (spec 1.2: a failed
    /// registration leaves it unregistered). A registration replaces the
    /// RM's configuration: it waits for a configuration change in progress
    /// and holds the next off until it is answered.
    fn register_as(&self, r: Registration, callback: Arc<dyn RmPort>) -> Result<(), Error> {
        let (rm_id, edition) = (r.rm_id.clone(), r.edition);
        let _config = self.config_lock.lock();
        let (reply, answer) = bounded(1);
        {
            let mut in_flight = self.in_flight.lock();
            self.send(Command::Register {
                registration: r,
                callback: callback.clone(),
                reply: reply.into(),
            })?;
            *in_flight.entry(rm_id.clone()).or_default() += 1;
        }
        let result = answer.recv().map_err(|_| Error::stopped());
        {
            let mut in_flight = self.in_flight.lock();
            if let Some(n) = in_flight.get_mut(&rm_id) {
                *n -= 1;
                if *n == 0 {
                    in_flight.remove(&rm_id);
                }
            }
        }
        self.registration_done.notify_all();
        // The core dropped the old registration whatever the outcome.
        let mut v1 = self.v1_registrations.lock();
        v1.remove(&rm_id);
        result??;
        if edition == Edition::V1 {
            v1.insert(rm_id, callback);
        }
        Ok(())
    }

    /// The whole scheduler state as JSON (fields: `docs/rest-and-metrics.md`, "State dump").
    pub fn state_dump(&self) -> Result<String, Error> {
        self.refuse_sync("state dump")?;
        self.call(|reply| Command::Dump {
            settle: true,
            reply,
        })?
    }

    /// Replaces the in-memory configuration text of `policy_group` (the
    /// `policy_configs` of the options; empty `yaml` removes it, so the
    /// group's file applies again) and reloads every RM that uses the
    /// group. Synchronous and all or nothing: invalid text, or a reload
    /// that would fail for any of those RMs, is `Rejected` and changes
    /// nothing. A group no RM uses yet is checked and kept for later
    /// registrations.
    pub fn set_policy_config(&self, policy_group: &str, yaml: &str) -> Result<(), Error> {
        self.refuse_sync("SetPolicyConfig")?;
        if policy_group.is_empty() {
            return Err(Error::invalid("policy_group is empty"));
        }
        crate::config::check_policy_group(policy_group)
            .map_err(|e| Error::invalid(format!("policy_group: {e}")))?;
        let _config = self.config_lock.lock();
        self.call(|reply| Command::SetPolicyConfig {
            policy_group: policy_group.to_string(),
            yaml: yaml.to_string(),
            reply,
        })?
    }

    /// Number of configuration watchers (spec 2.8) still running.
    pub fn config_watchers_running(&self) -> usize {
        self.watchers.running()
    }
}

impl RmProxy {
    /// [`SchedulerApi::register_resource_manager`] with the RM's port: the
    /// Rust edge's, or a C callback table, which is its own.
    pub fn register_port(
        &self,
        request: si::RegisterResourceManagerRequest,
        callback: Arc<dyn RmPort>,
    ) -> Result<si::RegisterResourceManagerResponse, Error> {
        self.refuse_sync("RegisterResourceManager")?;
        validate::register(&request)?;
        // SI v0.12 has no build information; its version stands for it.
        let build_info = (!request.version.is_empty())
            .then(|| ("buildVersion".to_string(), request.version.clone()))
            .into_iter()
            .collect();
        self.register_as(
            Registration {
                rm_id: request.rm_id,
                policy_group: request.policy_group,
                edition: Edition::V012,
                config: ConfigOrigin::PolicyGroup,
                events: Default::default(),
                build_info,
                v19: true,
            },
            callback,
        )?;
        Ok(si::RegisterResourceManagerResponse {})
    }
}

impl SchedulerApi for RmProxy {
    fn register_resource_manager(
        &self,
        request: si::RegisterResourceManagerRequest,
        callback: Arc<dyn ResourceManagerCallback>,
    ) -> Result<si::RegisterResourceManagerResponse, Error> {
        self.register_port(request, Arc::new(edge::Edge::new(callback)))
    }

    fn update_allocation(&self, request: si::AllocationRequest) -> Result<(), Error> {
        self.check_registered(&request.rm_id, "AllocationRequest", Edition::V012)?;
        validate::allocation(&request)?;
        let rm_id = request.rm_id.clone();
        let update = self
            .names
            .charged_to(&rm_id, || AllocationUpdate::from_proto(request));
        self.send_update(
            &rm_id,
            "AllocationRequest",
            Edition::V012,
            Command::Allocation(update),
        )
    }

    fn update_application(&self, request: si::ApplicationRequest) -> Result<(), Error> {
        self.check_registered(&request.rm_id, "ApplicationRequest", Edition::V012)?;
        validate::application(&request)?;
        let rm_id = request.rm_id.clone();
        self.send_update(
            &rm_id,
            "ApplicationRequest",
            Edition::V012,
            Command::Application(request),
        )
    }

    fn update_node(&self, request: si::NodeRequest) -> Result<(), Error> {
        self.check_registered(&request.rm_id, "NodeRequest", Edition::V012)?;
        validate::node(&request)?;
        let rm_id = request.rm_id.clone();
        self.send_update(&rm_id, "NodeRequest", Edition::V012, Command::Node(request))
    }

    fn update_configuration(&self, cluster_id: &str) -> Result<(), Error> {
        self.refuse_sync("UpdateConfiguration")?;
        match self.registered.read().get(cluster_id) {
            None => {
                return Err(Error::rejected(format!(
                    "failed to reload configuration, because RM {cluster_id} is unknown to the scheduler"
                )))
            }
            Some(Edition::V1) => {
                return Err(Error::rejected(format!(
                    "received UpdateConfiguration of SI v0.12 for RmID=\"{cluster_id}\", but that RM registered with SI v1.x: use the {} calls",
                    family(Edition::V1)
                )))
            }
            Some(Edition::V012) => {}
        }
        // The lock is let go before a watcher starts: starting one may join
        // an old one that waits for the lock.
        let outcome = {
            let _config = self.config_lock.lock();
            self.call(|reply| Command::Reload {
                rm_id: cluster_id.to_string(),
                reply,
            })??
        };
        // The RM may have called before the file was rewritten: watch it.
        if let ReloadOutcome::Unchanged {
            policy_group,
            checksum,
            watch: true,
        } = outcome
        {
            self.watchers.watch(cluster_id, &policy_group, &checksum)?;
        }
        Ok(())
    }
}
