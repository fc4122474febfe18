//! The SI v1.x edge: the v1 API ([`api`]), the translation of v1 requests
//! into the core's commands ([`convert`]), of the core's outcomes into v1
//! callbacks ([`edge`], [`events`]), and the `extraConfig` keys
//! ([`extra`]). The core itself stays edition-neutral; the edition is
//! bound to the rmID at registration (see [`RmProxy`]).

pub mod api;
pub mod convert;
pub mod edge;
pub use crate::scheduler::events_v1 as events;
pub mod extra;
pub mod wire;

use std::sync::Arc;

use super::{validate, RmProxy};
use crate::error::Error;
use crate::proto::si::v1 as si;
use crate::proto::si18::v1 as si18;
use crate::scheduler::config_txn::ApplyRefused;
use crate::scheduler::core::Command;
use crate::scheduler::edition::{ConfigOrigin, Edition};
use crate::scheduler::port::RmPort;
use api::ResourceManagerCallbackV1;

fn require(value: &str, what: &str) -> Result<(), Error> {
    if value.is_empty() {
        Err(Error::invalid(format!("{what} must not be empty")))
    } else {
        Ok(())
    }
}

/// Whether an RM registered with `version` is of SI v1.9 or later: any
/// version but 1.8.x and earlier. One that is not a version number (a
/// development build's "latest", or none) counts as the newest.
fn reads_v19(version: &str) -> bool {
    let v = version.trim().trim_start_matches(['v', 'V']);
    let mut parts = v.split(['.', '-', '+']).map(str::parse::<u64>);
    match (parts.next(), parts.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => major > 1 || (major == 1 && minor >= 9),
        _ => true,
    }
}

#[cfg(test)]
#[test]
fn versions_before_1_9_read_v18_records() {
    for v in ["1.8.0", "v1.8.0", "1.8.3-1", "1.7", "0.12.2", " V1.8.1 "] {
        assert!(!reads_v19(v), "{v}");
    }
    for v in ["1.9.0", "v1.9.0-0", "1.10.0", "2.0", "latest", "", "1"] {
        assert!(reads_v19(v), "{v}");
    }
}

impl RmProxy {
    /// [`api::SchedulerApiV1::register_resource_manager_v1`].
    pub fn register_resource_manager_v1(
        &self,
        request: si18::RegisterResourceManagerRequest,
        callback: Arc<dyn ResourceManagerCallbackV1>,
    ) -> Result<si18::RegisterResourceManagerResponse, Error> {
        self.register_port_v1(request, Arc::new(edge::EdgeV1::new(callback)))
    }

    /// [`Self::register_resource_manager_v1`] with the RM's port: the Rust
    /// edge's, or a C callback table, which is its own.
    pub fn register_port_v1(
        &self,
        request: si18::RegisterResourceManagerRequest,
        port: Arc<dyn RmPort>,
    ) -> Result<si18::RegisterResourceManagerResponse, Error> {
        self.refuse_sync("RegisterResourceManager")?;
        require(&request.rm_id, "RegisterResourceManagerRequest.rmID")?;
        require(
            &request.policy_group,
            "RegisterResourceManagerRequest.policyGroup",
        )?;
        let events = extra::apply(&request.rm_id, &request.extra_config);
        self.register_as(
            crate::scheduler::core::Registration {
                rm_id: request.rm_id,
                policy_group: request.policy_group,
                edition: Edition::V1,
                config: ConfigOrigin::Text(request.config),
                events,
                v19: reads_v19(&request.version),
                build_info: request.build_info.into_iter().collect(),
            },
            port,
        )?;
        Ok(si18::RegisterResourceManagerResponse {})
    }

    /// [`api::SchedulerApiV1::update_allocation_v1`].
    pub fn update_allocation_v1(&self, request: si18::AllocationRequest) -> Result<(), Error> {
        const WHAT: &str = "AllocationRequest";
        self.check_registered(&request.rm_id, WHAT, Edition::V1)?;
        convert::check_allocation(&request)?;
        let rm_id = request.rm_id.clone();
        let update = self
            .names
            .charged_to(&rm_id, || convert::allocation_update(request));
        self.send_update(&rm_id, WHAT, Edition::V1, Command::Allocation(update))
    }

    /// [`Self::update_allocation_v1`] for an encoded request (the C ABI's
    /// `sicore_v1_update_allocation`): decoded straight into core terms
    /// (see [`wire`]), with the same checks, errors and effect, without
    /// building the messages first.
    pub fn update_allocation_v1_encoded(&self, bytes: &[u8]) -> Result<(), Error> {
        const WHAT: &str = "AllocationRequest";
        let rm_id = wire::rm_id(bytes)?;
        // The RM first: a refused request leaves no resource names behind.
        self.check_registered(rm_id, WHAT, Edition::V1)
            .map_err(|e| wire::unless_malformed(bytes, e))?;
        let checked = wire::check(bytes, rm_id)?;
        let update = self.names.charged_to(rm_id, || checked.decode())?;
        self.send_update(rm_id, WHAT, Edition::V1, Command::Allocation(update))
    }

    /// [`api::SchedulerApiV1::update_application_v1`].
    pub fn update_application_v1(&self, request: si18::ApplicationRequest) -> Result<(), Error> {
        self.update_application_same_wire(convert::application_request(request))
    }

    /// A v1 `ApplicationRequest` decoded with the v0.12 types, which share
    /// its wire (the C ABI decodes the bytes once, that way).
    pub fn update_application_same_wire(
        &self,
        request: si::ApplicationRequest,
    ) -> Result<(), Error> {
        const WHAT: &str = "ApplicationRequest";
        self.check_registered(&request.rm_id, WHAT, Edition::V1)?;
        validate::application(&request)?;
        let rm_id = request.rm_id.clone();
        self.send_update(&rm_id, WHAT, Edition::V1, Command::Application(request))
    }

    /// [`api::SchedulerApiV1::update_node_v1`].
    pub fn update_node_v1(&self, request: si18::NodeRequest) -> Result<(), Error> {
        const WHAT: &str = "NodeRequest";
        self.check_registered(&request.rm_id, WHAT, Edition::V1)?;
        let request = convert::node_request(request);
        validate::node(&request)?;
        let rm_id = request.rm_id.clone();
        self.send_update(&rm_id, WHAT, Edition::V1, Command::Node(request))
    }

    /// [`api::SchedulerApiV1::update_configuration_v1`].
    pub fn update_configuration_v1(
        &self,
        request: si18::UpdateConfigurationRequest,
    ) -> Result<(), Error> {
        self.refuse_sync("UpdateConfiguration")?;
        require(&request.rm_id, "UpdateConfigurationRequest.rmID")?;
        let rm_id = request.rm_id;
        self.check_registered(&rm_id, "UpdateConfigurationRequest", Edition::V1)?;
        let events = extra::apply(&rm_id, &request.extra_config);
        let text = if request.config.trim().is_empty() {
            crate::config::DEFAULT_CONFIG_V1.to_string()
        } else {
            request.config
        };
        let _config = self.config_lock.lock();
        // The registration the text is meant for: a re-registration racing
        // with this call keeps its own configuration.
        let registration = self
            .v1_registrations
            .lock()
            .get(&rm_id)
            .cloned()
            .ok_or_else(|| {
                Error::rejected(format!(
                    "received UpdateConfigurationRequest, but RmID=\"{rm_id}\" not registered"
                ))
            })?;
        // The extraConfig first, whatever becomes of the text (as the
        // reference): in order before the text on the core's inbox, and
        // under the configuration lock, so no re-registration comes between.
        self.send(Command::RmEvents {
            rm_id: rm_id.clone(),
            events,
        })?;
        let applied = self.call(|reply| Command::ApplyConfigText {
            rm_id: rm_id.clone(),
            text,
            expected_checksum: None,
            registration,
            reply,
        })?;
        applied.map_err(|refused| match refused {
            ApplyRefused::Replaced => Error::rejected(format!(
                "RM {rm_id} registered again during UpdateConfiguration; its new registration's configuration stays"
            )),
            ApplyRefused::Failed { error, .. } => Error::new(
                error.status,
                format!("UpdateConfiguration of RM {rm_id} failed, the old configuration stays: {}", error.message),
            ),
        })
    }
}

#[cfg(test)]
mod preempt_required_tests;
#[cfg(test)]
mod preempt_tests;
