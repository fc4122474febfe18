//! Configuration: loading it at registration is the cluster's; this is
//! everything that changes it afterwards — `UpdateConfiguration`,
//! `SetPolicyConfig`, the reload watcher and the REST service's text —
//! and applying a new version to the live partitions of one RM (spec 2.8).
//!
//! Everything is checked before anything changes, so an invalid
//! configuration leaves the old one fully in force. That includes the
//! resource-name table: the new names a configuration brings are held
//! provisionally while it is built and checked, and charged to its policy
//! group only once it is accepted (see [`resource::configuration`]).

use std::sync::Arc;

use super::{Core, ReloadOutcome, WatchVerdict, CONFIG_REJECTED_REASON};
use crate::config::{self, LoadedConfig, PartitionConfig};
use crate::error::Error;
use crate::proto::si::v1 as si;
use crate::scheduler::config_txn::{ApplyRefused, ConfigTarget};
use crate::scheduler::edition::Edition;
use crate::scheduler::partition::Partition;
use crate::scheduler::port::RmPort;
use crate::scheduler::resource;

/// Source label of configuration text set through the REST service.
const REST_SOURCE: &str = "REST /ws/v1/config";
/// Source label of configuration text an SI v1.x RM sent in UpdateConfiguration.
const V1_UPDATE_SOURCE: &str = "UpdateConfiguration request";

impl Core {
    pub(super) fn reload(&mut self, rm_id: &str) -> Result<ReloadOutcome, Error> {
        let Some(rm) = self.rms.get(rm_id) else {
            return Err(Error::rejected(format!(
                "failed to reload configuration, because RM {rm_id} is unknown to the scheduler"
            )));
        };
        let loaded = config::load_with(
            &rm.policy_group,
            &self.options.config_dir,
            &self.options.policy_configs,
            rm.edition.quantity_grammar(),
        )
        .map_err(|e| Error::rejected(format!("configuration reload for RM {rm_id} failed: {e}")))?;
        if loaded.config.checksum == rm.checksum {
            return Ok(ReloadOutcome::Unchanged {
                policy_group: rm.policy_group.clone(),
                checksum: rm.checksum.clone(),
                watch: loaded.source != config::SOURCE_IN_MEMORY,
            });
        }
        self.apply_config(rm_id, loaded)?;
        Ok(ReloadOutcome::Applied)
    }

    /// Replaces (or, with empty `yaml`, drops) the in-memory text of
    /// `policy_group` and reloads every RM that uses it. All or nothing:
    /// the text and every RM's reload are checked before anything changes.
    pub(super) fn set_policy_config(
        &mut self,
        policy_group: &str,
        yaml: String,
    ) -> Result<(), Error> {
        // One configuration transaction across the checks and the applies:
        // names the checks hold stay held until the applies settle them,
        // and a refusal gives them all back.
        resource::configuration(policy_group, || {
            self.set_policy_config_now(policy_group, yaml)
        })
    }

    fn set_policy_config_now(&mut self, policy_group: &str, yaml: String) -> Result<(), Error> {
        let failed = |e: String| {
            Error::rejected(format!(
                "configuration of policy group '{policy_group}' not changed: {e}"
            ))
        };
        let mut configs = self.options.policy_configs.clone();
        if yaml.is_empty() {
            if configs.remove(policy_group).is_none() {
                return Ok(());
            }
        } else {
            configs.insert(policy_group.to_string(), yaml);
        }
        let users: Vec<(String, Edition)> = self
            .rms
            .iter()
            .filter(|(_, rm)| rm.policy_group == policy_group)
            .map(|(id, rm)| (id.clone(), rm.edition))
            .collect();
        if users.is_empty() && !configs.contains_key(policy_group) {
            // Dropping the text of a group no RM uses: nothing to reload.
            self.options.policy_configs = configs;
            log::info!("in-memory configuration of policy group '{policy_group}' removed");
            return Ok(());
        }
        // Without an RM the text is still checked, so a later registration
        // cannot be the first to find it broken.
        // Each RM reads the text with its edition's quantities; without an
        // RM it is checked as v0.12 text, the form a policy-group file has.
        let load = |edition: Edition| {
            config::load_with(
                policy_group,
                &self.options.config_dir,
                &configs,
                edition.quantity_grammar(),
            )
            .map_err(|e| failed(e.to_string()))
        };
        let mut loads = Vec::with_capacity(users.len());
        if users.is_empty() {
            load(Edition::V012)?;
        }
        for (rm_id, edition) in &users {
            let loaded = load(*edition)?;
            self.check_config(rm_id, &loaded)
                .map_err(|e| failed(e.message))?;
            loads.push(loaded);
        }
        self.options.policy_configs = configs;
        log::info!(
            "configuration of policy group '{policy_group}' set ({} RM(s) reloaded)",
            users.len()
        );
        for ((rm_id, _), loaded) in users.iter().zip(loads) {
            self.apply_config(rm_id, loaded)
                .map_err(|e| failed(e.message))?;
        }
        Ok(())
    }

    pub(super) fn watch_apply(
        &mut self,
        rm_id: &str,
        policy_group: &str,
        loaded: LoadedConfig,
    ) -> WatchVerdict {
        let Some(rm) = self.rms.get(rm_id) else {
            return WatchVerdict::Gone;
        };
        if rm.policy_group != policy_group || self.options.policy_configs.contains_key(policy_group)
        {
            return WatchVerdict::Gone;
        }
        if rm.checksum == loaded.config.checksum {
            return WatchVerdict::Current;
        }
        let source = loaded.source.clone();
        match self.apply_config(rm_id, loaded) {
            Ok(()) => {
                log::info!("configuration of RM {rm_id} reloaded from {source} by the watcher");
                WatchVerdict::Applied
            }
            Err(e) => {
                self.watch_rejected(rm_id, policy_group, &source, &e.message);
                WatchVerdict::Failed
            }
        }
    }

    /// Logs a version the watcher could not apply and reports it to the RM
    /// as a `QUEUE` record on its root queue.
    pub(super) fn watch_rejected(
        &mut self,
        rm_id: &str,
        policy_group: &str,
        source: &str,
        reason: &str,
    ) {
        if !self.rms.contains_key(rm_id) {
            return;
        }
        log::warn!(
            "configuration of RM {rm_id} (policy group '{policy_group}') from {source} not applied, the configuration in force stays: {reason}"
        );
        let record = crate::events::record(
            si::event_record::Type::Queue,
            config::ROOT_QUEUE,
            policy_group,
            CONFIG_REJECTED_REASON,
            format!("{source}: {reason}"),
        );
        self.add_events(rm_id, vec![record.into()]);
    }

    /// The RM whose configuration `/ws/v1/config` shows and updates (the
    /// owner of the first partition), after checking that `text` would
    /// apply to its partitions; changes nothing.
    pub(super) fn config_target(&self, text: &str) -> Result<ConfigTarget, Error> {
        let rm_id = self
            .partitions
            .keys()
            .next()
            .map(|k| k.rm_id.clone())
            .ok_or_else(|| {
                Error::rejected("no active partitions: no resource manager is registered")
            })?;
        let rm = self
            .rms
            .get(&rm_id)
            .ok_or_else(|| Error::rejected(format!("RM {rm_id} is not registered")))?;
        // A v1.8 RM has no callback to persist an edit: its configuration
        // is what it sends in UpdateConfiguration.
        if rm.edition == Edition::V1 {
            return Err(Error::rejected(format!(
                "the configuration of RM {rm_id} cannot be changed through REST: it registered with {}, \
                 whose RM owns its configuration and sends it in UpdateConfiguration",
                Edition::V1.name()
            )));
        }
        let config = config::parse_with(text, rm.edition.quantity_grammar())
            .map_err(|e| Error::rejected(e.to_string()))?;
        let loaded = LoadedConfig {
            config,
            text: text.to_string(),
            source: REST_SOURCE.to_string(),
        };
        self.check_config(&rm_id, &loaded)?;
        Ok(ConfigTarget {
            checksum: rm.checksum.clone(),
            text: rm.config_text.clone(),
            callback: rm.callback.clone() as Arc<dyn RmPort>,
            rm_id,
        })
    }

    /// The configuration text in force for `rm_id`.
    pub(super) fn config_text_of(&self, rm_id: &str) -> Option<String> {
        self.rms.get(rm_id).map(|rm| rm.config_text.clone())
    }

    /// The REST update's apply: `text` goes to the partitions of `rm_id`
    /// only while `registration` is still its registration (a new one
    /// keeps its own configuration). On failure the answer carries the
    /// text still in force, read in this same step.
    pub(super) fn apply_config_txn(
        &mut self,
        rm_id: &str,
        text: String,
        expected_checksum: Option<&str>,
        registration: &Arc<dyn RmPort>,
    ) -> Result<(), ApplyRefused> {
        let current = self
            .rms
            .get(rm_id)
            .is_some_and(|rm| rm.callback.is_registration(registration));
        if !current {
            return Err(ApplyRefused::Replaced);
        }
        self.apply_config_text(rm_id, text, expected_checksum)
            .map_err(|error| ApplyRefused::Failed {
                in_force: self.config_text_of(rm_id),
                error,
            })
    }

    /// Applies configuration text that arrived through the REST service
    /// (spec 2.9) to the partitions of `rm_id`, as a reload would.
    pub(super) fn apply_config_text(
        &mut self,
        rm_id: &str,
        text: String,
        expected_checksum: Option<&str>,
    ) -> Result<(), Error> {
        let Some(rm) = self.rms.get(rm_id) else {
            return Err(Error::rejected(format!(
                "RM {rm_id} has no active partitions, make sure it is registered"
            )));
        };
        if expected_checksum.is_some_and(|c| c != rm.checksum) {
            return Err(Error::rejected(
                "the base configuration is changed: it was reloaded during the update",
            ));
        }
        let source = match rm.edition {
            Edition::V012 => REST_SOURCE,
            Edition::V1 => V1_UPDATE_SOURCE,
        };
        let config = config::parse_with(&text, rm.edition.quantity_grammar())
            .map_err(|e| Error::rejected(e.to_string()))?;
        // SI v1.x: an unchanged checksum is a no-op (not even the label).
        if rm.edition == Edition::V1 && config.checksum == rm.checksum {
            return Ok(());
        }
        self.apply_config(
            rm_id,
            LoadedConfig {
                config,
                text,
                source: source.to_string(),
            },
        )
    }

    /// The dry run of [`Core::apply_config`]: every partition of the new
    /// configuration is built on its own (the creation checks of 2.7) and
    /// checked against its live counterpart. Returns the fresh partitions.
    fn dry_run<'a>(
        &self,
        rm_id: &str,
        loaded: &'a LoadedConfig,
    ) -> Result<Vec<(&'a PartitionConfig, Partition)>, Error> {
        let timeouts = self.timeouts_for(rm_id);
        let failed = |name: &str, e: String| {
            Error::rejected(format!(
                "configuration reload for RM {rm_id} failed: partition {name}: {e}"
            ))
        };
        let mut fresh = Vec::new();
        for pc in &loaded.config.partitions {
            // A trial: what goes live warns about bad properties then.
            let p = crate::scheduler::objects::queue::quietly(|| {
                Partition::new(rm_id, pc, timeouts, self.clock.clone())
            })
            .map_err(|e| failed(&pc.name, e))?;
            if let Some(live) = self.partitions.get(p.key()) {
                live.check_reconfigure(pc)
                    .map_err(|e| failed(&pc.name, e))?;
            }
            fresh.push((pc, p));
        }
        Ok(fresh)
    }

    /// Whether `loaded` would apply to the partitions of `rm_id`, changing
    /// nothing (for a change that must hold for several RMs at once).
    fn check_config(&self, rm_id: &str, loaded: &LoadedConfig) -> Result<(), Error> {
        resource::configuration(&self.policy_group_of(rm_id), || {
            self.dry_run(rm_id, loaded).map(|_| ())
        })
    }

    /// The policy group whose share the configuration of `rm_id` is
    /// charged to.
    fn policy_group_of(&self, rm_id: &str) -> String {
        self.rms
            .get(rm_id)
            .map(|rm| rm.policy_group.clone())
            .unwrap_or_default()
    }

    /// Applies `loaded` to the partitions of `rm_id`.
    ///
    /// Order: the dry run of [`Core::check_config`]; only then are live
    /// partitions updated, new ones created and partitions that are no
    /// longer configured removed. Removed partitions fail their
    /// applications with `PartitionRemoved` and drop their nodes.
    fn apply_config(&mut self, rm_id: &str, loaded: LoadedConfig) -> Result<(), Error> {
        let group = self.policy_group_of(rm_id);
        resource::configuration(&group, || self.apply_config_checked(rm_id, loaded))
    }

    fn apply_config_checked(&mut self, rm_id: &str, loaded: LoadedConfig) -> Result<(), Error> {
        if let Some(rm) = self.rms.get_mut(rm_id) {
            if rm.checksum == loaded.config.checksum && !rm.checksum.is_empty() {
                // Same text, maybe from another source (a file now given in
                // memory): only the label changes.
                rm.config_source = loaded.source;
                return Ok(());
            }
        }
        let fresh = self.dry_run(rm_id, &loaded)?;
        // Accepted: from here on live state may use its names.
        resource::keep_configuration_names();
        let rm = self.rms.get_mut(rm_id).expect("checked by the caller");
        let failed = |name: &str, e: String| {
            Error::rejected(format!(
                "configuration reload for RM {rm_id} failed: partition {name}: {e}"
            ))
        };
        let mut names = Vec::new();
        let edition = rm.edition;
        for (pc, mut p) in fresh {
            names.push(p.key().clone());
            match self.partitions.get_mut(p.key()) {
                // Cannot fail after the checks above; an error here would be
                // a bug, reported rather than hidden.
                Some(live) => live.reconfigure(pc).map_err(|e| failed(&pc.name, e))?,
                None => {
                    log::info!(
                        "partition {} added by configuration reload",
                        p.internal_name()
                    );
                    p.set_edition(edition);
                    // Built quietly by the dry run: warn once, now.
                    p.queues().warn_properties();
                    self.partitions.insert(p.key().clone(), p);
                }
            }
        }
        let mut removed = Vec::new();
        for old in &rm.partitions {
            if !names.contains(old) {
                log::info!("partition {old} is not in the new configuration; removing it");
                removed.extend(self.partitions.remove(old));
            }
        }
        rm.partitions = names;
        rm.checksum = loaded.config.checksum;
        rm.config_text = loaded.text;
        rm.config_source = loaded.source;
        for mut p in removed {
            p.fail_all_applications(self.outcomes_for(rm_id));
        }
        Ok(())
    }
}
