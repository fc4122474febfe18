//! Wiring the service together, the way YuniKorn's `pkg/entrypoint` does:
//! [`Scheduler::new`] starts the core thread, the dispatcher, the reload
//! watchers, the REST service and the metrics, and hands the RM proxy the
//! channel to the core; [`Scheduler::close`] stops them in the order that
//! lets none wait on another that is already gone.
//!
//! This is the only module that knows every part; each part knows only the
//! layers below it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_channel::unbounded;
use parking_lot::Mutex;

use crate::error::{Error, Status};
use crate::metrics::Metrics;
use crate::options::Options;
use crate::proto::si::v1 as si;
use crate::rest::RestServer;
use crate::rmproxy::{dispatch, watcher, RmProxy};
use crate::scheduler::api::{ResourceManagerCallback, SchedulerApi};
use crate::scheduler::clock;
use crate::scheduler::config_txn::ConfigLock;
use crate::scheduler::core::{self, Command, Core, Registry};
use crate::scheduler::owner::mark_library_thread;
use crate::scheduler::port::RmPort;
use crate::scheduler::resource::{self, ResourceNames};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A running scheduler instance: a core thread, a dispatcher thread, and
/// the optional REST service; the [`SchedulerApi`] requests go through its
/// RM proxy (through the traits and the methods below).
///
/// Dropping it stops every thread (see [`Scheduler::close`]).
pub struct Scheduler {
    proxy: RmProxy,
    dispatcher_stopping: Arc<AtomicBool>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    metrics: Arc<Metrics>,
    rest: Mutex<Option<RestServer>>,
    rest_addr: Option<std::net::SocketAddr>,
}

impl Scheduler {
    /// Starts a scheduler with the given options.
    pub fn new(options: Options) -> Result<Self, Error> {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = unbounded::<Command>();
        let (out_tx, out_rx) = unbounded();
        let dispatcher_stopping = Arc::new(AtomicBool::new(false));
        let spawn_err =
            |e: std::io::Error| Error::new(Status::Internal, format!("cannot start a thread: {e}"));
        // One lock for every configuration change: registration,
        // UpdateConfiguration, SetPolicyConfig, the watchers and the REST
        // update (see `ConfigLock`).
        let config_lock = ConfigLock::default();
        let watchers = watcher::Watchers::new(
            id,
            tx.clone(),
            options.config_dir.clone(),
            config_lock.clone(),
        );
        let metrics = Arc::new(Metrics::new());
        // Bind before any thread starts, so a bad address fails `new` cleanly.
        let rest = if options.rest_address.is_empty() {
            None
        } else {
            Some(RestServer::start(
                &options.rest_address,
                &options.rest,
                id,
                tx.clone(),
                metrics.clone(),
                config_lock.clone(),
            )?)
        };
        let rest_addr = rest.as_ref().map(RestServer::local_addr);
        let registered = Registry::default();
        // One resource-name table per scheduler: the proxy decodes into it
        // on callers' threads, the core thread holds it as its home table.
        let names = ResourceNames::new();
        let core_names = names.clone();
        let core = Core::new(options, clock::system())
            .with_registry(registered.clone())
            .with_metrics(metrics.clone());
        let core_thread = std::thread::Builder::new()
            .name(format!("sicore-core-{id}"))
            // Defence in depth only: every walk of user-shaped data is
            // bounded or iterative (config::bounds); this is headroom.
            .stack_size(8 << 20)
            .spawn(move || {
                mark_library_thread(id);
                resource::set_home(core_names);
                core::run(core, rx, out_tx);
            })
            .map_err(spawn_err)?;
        let stopping = dispatcher_stopping.clone();
        let dispatcher = std::thread::Builder::new()
            .name(format!("sicore-dispatch-{id}"))
            .spawn(move || {
                mark_library_thread(id);
                dispatch::run(out_rx, stopping);
            })
            .map_err(spawn_err)?;
        Ok(Scheduler {
            proxy: RmProxy::new(id, tx, registered, watchers, names, config_lock),
            dispatcher_stopping,
            threads: Mutex::new(vec![core_thread, dispatcher]),
            metrics,
            rest: Mutex::new(rest),
            rest_addr,
        })
    }

    /// The Prometheus text exposition of the `yunikorn_*` metrics (spec
    /// 15.2). Never waits for the core thread, so it may be called from
    /// anywhere, callbacks included.
    pub fn metrics_text(&self) -> Result<String, Error> {
        if self.proxy.is_stopped() {
            return Err(Error::stopped());
        }
        self.metrics
            .encode()
            .map_err(|e| Error::new(Status::Internal, format!("cannot encode metrics: {e}")))
    }

    /// The address the REST service listens on (`None` when
    /// `rest_address` was empty).
    pub fn rest_address(&self) -> Option<std::net::SocketAddr> {
        self.rest_addr
    }

    /// Stops the scheduler: pending work is abandoned, both threads are
    /// joined, and every callback object is dropped, so no callback runs
    /// after this returns. Calling it again does nothing.
    pub fn close(&self) -> Result<(), Error> {
        if !self.proxy.begin_close()? {
            return Ok(());
        }
        // The REST service first: it may be waiting on the core.
        if let Some(mut rest) = self.rest.lock().take() {
            rest.stop();
        }
        self.dispatcher_stopping.store(true, Ordering::Release);
        self.proxy.signal_stop();
        for t in self.threads.lock().drain(..) {
            if t.join().is_err() {
                log::error!("a sicore thread ended with a panic");
            }
        }
        self.proxy.finish_close();
        Ok(())
    }
}

/// Beyond the SI traits: what the Rust API adds, and what the C ABI needs.
impl Scheduler {
    /// The whole scheduler state as JSON (fields: `docs/rest-and-metrics.md`,
    /// "State dump"). Synchronous.
    pub fn state_dump(&self) -> Result<String, Error> {
        self.proxy.state_dump()
    }

    /// Replaces the in-memory configuration text of `policy_group` and
    /// reloads every RM that uses it (the Rust form of
    /// `sicore_set_policy_config`). Synchronous and all or nothing.
    pub fn set_policy_config(&self, policy_group: &str, yaml: &str) -> Result<(), Error> {
        self.proxy.set_policy_config(policy_group, yaml)
    }

    /// Number of configuration watchers (spec 2.8) still running.
    pub fn config_watchers_running(&self) -> usize {
        self.proxy.config_watchers_running()
    }

    /// [`SchedulerApi::update_allocation`] for an encoded
    /// `si.v1.AllocationRequest` (the C ABI's form): decoded straight into
    /// core terms, with the same checks and effect.
    pub fn update_allocation_encoded(&self, bytes: &[u8]) -> Result<(), Error> {
        self.proxy.update_allocation_encoded(bytes)
    }

    /// Registers an SI v0.12 RM by its port (a C callback table).
    pub(crate) fn register_port(
        &self,
        request: si::RegisterResourceManagerRequest,
        port: Arc<dyn RmPort>,
    ) -> Result<si::RegisterResourceManagerResponse, Error> {
        self.proxy.register_port(request, port)
    }

    /// Registers an SI v1.x RM by its port (a C callback table).
    pub(crate) fn register_port_v1(
        &self,
        request: crate::proto::si18::v1::RegisterResourceManagerRequest,
        port: Arc<dyn RmPort>,
    ) -> Result<crate::proto::si18::v1::RegisterResourceManagerResponse, Error> {
        self.proxy.register_port_v1(request, port)
    }

    /// The v1 `sicore_v1_update_allocation` bytes, decoded straight into
    /// core terms.
    pub(crate) fn update_allocation_v1_encoded(&self, bytes: &[u8]) -> Result<(), Error> {
        self.proxy.update_allocation_v1_encoded(bytes)
    }

    /// A v1 `ApplicationRequest` decoded with the v0.12 types, which share
    /// its wire.
    pub(crate) fn update_application_same_wire(
        &self,
        request: si::ApplicationRequest,
    ) -> Result<(), Error> {
        self.proxy.update_application_same_wire(request)
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            log::error!("scheduler dropped on its own thread: {e}; threads left running");
        }
    }
}

impl SchedulerApi for Scheduler {
    fn register_resource_manager(
        &self,
        request: si::RegisterResourceManagerRequest,
        callback: Arc<dyn ResourceManagerCallback>,
    ) -> Result<si::RegisterResourceManagerResponse, Error> {
        self.proxy.register_resource_manager(request, callback)
    }

    fn update_allocation(&self, request: si::AllocationRequest) -> Result<(), Error> {
        self.proxy.update_allocation(request)
    }

    fn update_application(&self, request: si::ApplicationRequest) -> Result<(), Error> {
        self.proxy.update_application(request)
    }

    fn update_node(&self, request: si::NodeRequest) -> Result<(), Error> {
        self.proxy.update_node(request)
    }

    fn update_configuration(&self, cluster_id: &str) -> Result<(), Error> {
        self.proxy.update_configuration(cluster_id)
    }
}

impl crate::rmproxy::v1::api::SchedulerApiV1 for Scheduler {
    fn register_resource_manager_v1(
        &self,
        request: crate::proto::si18::v1::RegisterResourceManagerRequest,
        callback: Arc<dyn crate::rmproxy::v1::api::ResourceManagerCallbackV1>,
    ) -> Result<crate::proto::si18::v1::RegisterResourceManagerResponse, Error> {
        self.proxy.register_resource_manager_v1(request, callback)
    }

    fn update_allocation_v1(
        &self,
        request: crate::proto::si18::v1::AllocationRequest,
    ) -> Result<(), Error> {
        self.proxy.update_allocation_v1(request)
    }

    fn update_application_v1(
        &self,
        request: crate::proto::si18::v1::ApplicationRequest,
    ) -> Result<(), Error> {
        self.proxy.update_application_v1(request)
    }

    fn update_node_v1(&self, request: crate::proto::si18::v1::NodeRequest) -> Result<(), Error> {
        self.proxy.update_node_v1(request)
    }

    fn update_configuration_v1(
        &self,
        request: crate::proto::si18::v1::UpdateConfigurationRequest,
    ) -> Result<(), Error> {
        self.proxy.update_configuration_v1(request)
    }

    fn stop(&self) -> Result<(), Error> {
        self.close()
    }
}
