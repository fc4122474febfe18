//! The opt-in REST service (spec 15.1): the YuniKorn v0.12 `/ws/v1`
//! endpoints, `/metrics`, and the configuration update of spec 2.9.
//!
//! One library thread runs a current-thread tokio runtime with hyper's
//! HTTP/1 server: every connection is a task on that thread, so a slow or
//! idle client holds a socket, never a thread. Connections are capped in
//! all and per client address, with reserved slots beyond the caps for
//! the health check and the metrics; headers, bodies and connections each
//! have a time limit, and bodies are limited to [`MAX_BODY_BYTES`]
//! ([`settings`], `docs/rest-and-metrics.md`). The Host header must name this
//! service, and mutating requests need the operator's token unless the
//! service is bound to loopback. State is read from a
//! [`snapshot::Snapshot`] the core thread copies on request (waiting at
//! most [`CORE_TIMEOUT`]), then rendered without any lock on live state.
//! A configuration update runs as one transaction on its own library
//! thread ([`config_txn`]).

pub mod config_txn;
mod dispatch;
pub mod events;
pub(crate) mod handlers;
pub mod health;
mod parse_guard;
mod partition_address;
mod pending; // why asks wait
mod response;
pub(crate) mod router;
mod server;
pub mod settings;
pub mod usage;
mod v1;
mod v1_routes;
pub use crate::scheduler::snapshot;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::Response;
use parking_lot::Mutex;

use crate::error::{Error, Status};
use crate::metrics::Metrics;
use crate::proto::sicore::v1::RestOptions;
use crate::scheduler::config_txn::ConfigLock;
use crate::scheduler::core::Command;
use config_txn::ConfigWorker;
use server::serve;
use settings::Settings;
use snapshot::Snapshot;

pub use settings::{CONNECTION_TIMEOUT, HEADER_TIMEOUT, MAX_CONNECTIONS};

/// Largest request body (a configuration is a few kilobytes).
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Longest wait for the core thread's answer.
pub const CORE_TIMEOUT: Duration = Duration::from_secs(5);
/// A snapshot this young is served again instead of asking the core, so a
/// client polling in a tight loop costs the core at most a few copies a
/// second.
pub const SNAPSHOT_REUSE: Duration = Duration::from_millis(200);

pub(crate) type Resp = Response<Full<Bytes>>;

/// What the handlers share.
pub(crate) struct Context {
    scheduler_id: u64,
    core: Sender<Command>,
    metrics: Arc<Metrics>,
    settings: Settings,
    /// How long a snapshot or dump is served again ([`SNAPSHOT_REUSE`]).
    reuse: Duration,
    cache: Mutex<Option<(Instant, Arc<Snapshot>)>>,
    /// The dump as one shared buffer: every reader's response body is a
    /// reference to it, never a copy.
    dump_cache: Mutex<Option<(Instant, Bytes)>>,
    /// Held while a copy is requested from the core, so concurrent
    /// requests wait for that one copy instead of asking for their own.
    fetching: tokio::sync::Mutex<()>,
    /// One state dump is built at a time; concurrent readers share it.
    dumping: tokio::sync::Mutex<()>,
    /// Each RM's own dump part as last fetched, by rmID, and when.
    rm_dumps: Mutex<HashMap<String, (Instant, RmDumpPart)>>,
    slots: Mutex<Slots>,
    config: ConfigWorker,
}

/// An RM's own dump part: its JSON, its error, or none (no plugin).
type RmDumpPart = Option<Result<String, String>>;

/// Open connections: in the general pool, per client address, and on
/// reserved slots.
#[derive(Default)]
struct Slots {
    general: usize,
    per_peer: HashMap<IpAddr, usize>,
    reserved: usize,
}

/// Which pool a connection holds a slot of.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Slot {
    General(IpAddr),
    /// Beyond the limits: serves the health check and the metrics only.
    Reserved,
}

impl Context {
    /// A slot for a new connection from `peer`, or `None` (close it).
    fn take_slot(&self, peer: IpAddr) -> Option<Slot> {
        let mut s = self.slots.lock();
        let from_peer = s.per_peer.get(&peer).copied().unwrap_or(0);
        if s.general < self.settings.max_connections && from_peer < self.settings.max_per_peer {
            s.general += 1;
            *s.per_peer.entry(peer).or_default() += 1;
            Some(Slot::General(peer))
        } else if s.reserved < settings::RESERVED_CONNECTIONS {
            s.reserved += 1;
            Some(Slot::Reserved)
        } else {
            None
        }
    }

    fn give_slot(&self, slot: Slot) {
        let mut s = self.slots.lock();
        match slot {
            Slot::General(peer) => {
                s.general -= 1;
                if let Some(n) = s.per_peer.get_mut(&peer) {
                    *n -= 1;
                    if *n == 0 {
                        s.per_peer.remove(&peer);
                    }
                }
            }
            Slot::Reserved => s.reserved -= 1,
        }
    }
}

/// The addresses `address` names: `host:port`, or `:port` for every
/// address (IPv6 and IPv4 where the host has IPv6, IPv4 alone otherwise),
/// as Go's `net.Listen` reads it and so as the YuniKorn core's `:9080`.
fn resolve(address: &str) -> Result<Vec<SocketAddr>, Error> {
    let bad = |e: &dyn std::fmt::Display| {
        Error::invalid(format!(
            "SchedulerOptions.rest_address: '{address}' is not host:port or :port: {e}"
        ))
    };
    if let Some(port) = address.strip_prefix(':') {
        let port: u16 = port.parse().map_err(|e| bad(&e))?;
        return Ok(vec![
            SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port)),
            SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, port)),
        ]);
    }
    let addrs: Vec<SocketAddr> = address.to_socket_addrs().map_err(|e| bad(&e))?.collect();
    if addrs.is_empty() {
        return Err(bad(&"it names no address"));
    }
    Ok(addrs)
}

/// A running REST service. [`RestServer::stop`] (or drop) ends it and
/// joins its thread.
pub struct RestServer {
    addr: SocketAddr,
    shutdown: Arc<tokio::sync::Notify>,
    thread: Option<JoinHandle<()>>,
}

impl RestServer {
    /// Binds `address` (`host:port`; port 0 picks a free one) and starts
    /// serving. `scheduler_id` marks the service's threads as the
    /// scheduler's own (synchronous calls from the RM's callback are
    /// refused as from any callback).
    /// `options` are checked here (binding beyond loopback needs a
    /// token); `config_lock` is the scheduler's lock of configuration
    /// changes, held by the configuration update.
    pub fn start(
        address: &str,
        options: &RestOptions,
        scheduler_id: u64,
        core: Sender<Command>,
        metrics: Arc<Metrics>,
        config_lock: ConfigLock,
    ) -> Result<Self, Error> {
        let addrs = resolve(address)?;
        // Checked before binding, so a refused address is never opened.
        for a in &addrs {
            Settings::new(options, address, *a)?;
        }
        let listener = TcpListener::bind(&addrs[..]).map_err(|e| {
            Error::rejected(format!(
                "SchedulerOptions.rest_address: cannot listen on '{address}': {e}"
            ))
        })?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::new(Status::Internal, format!("REST listener address: {e}")))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::new(Status::Internal, format!("REST listener: {e}")))?;
        let settings = Settings::new(options, address, addr)?;
        let config = ConfigWorker::start(scheduler_id, core.clone(), config_lock)?;
        let ctx = Arc::new(Context {
            scheduler_id,
            core,
            metrics,
            settings,
            reuse: SNAPSHOT_REUSE,
            cache: Mutex::new(None),
            dump_cache: Mutex::new(None),
            fetching: tokio::sync::Mutex::new(()),
            dumping: tokio::sync::Mutex::new(()),
            rm_dumps: Mutex::new(HashMap::new()),
            slots: Mutex::new(Slots::default()),
            config,
        });
        let shutdown = Arc::new(tokio::sync::Notify::new());
        let stop = shutdown.clone();
        let thread = std::thread::Builder::new()
            .name(format!("sicore-rest-{scheduler_id}"))
            .spawn(move || serve(listener, ctx, stop))
            .map_err(|e| Error::new(Status::Internal, format!("cannot start a thread: {e}")))?;
        log::info!("REST service listening on http://{addr}");
        Ok(RestServer {
            addr,
            shutdown,
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, drops open connections and joins the thread.
    pub fn stop(&mut self) {
        if let Some(t) = self.thread.take() {
            self.shutdown.notify_one();
            if t.join().is_err() {
                log::error!("the REST service thread ended with a panic");
            }
        }
    }
}

impl Drop for RestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests;
