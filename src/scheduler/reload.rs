//! Applying a reloaded configuration to the live partitions of one RM
//! (spec 2.8): synchronously inside `UpdateConfiguration` and
//! `SetPolicyConfig`, and for the reload watcher (`rmproxy::watcher`).
//!
//! Everything is checked before anything changes, so an invalid
//! configuration leaves the old one fully in force. That includes the
//! resource-name table: the new names a configuration brings are held
//! provisionally while it is built and checked, and charged to its policy
//! group only once it is accepted (see [`resource::configuration`]).

use super::core::Core;
use super::partition::{AppTimeouts, Partition};
use crate::config::{LoadedConfig, PartitionConfig};
use crate::error::Error;
use crate::scheduler::resource;

/// The policy group whose share the configuration of `rm_id` is charged to.
fn policy_group(core: &Core, rm_id: &str) -> String {
    let (_, rms, _) = core.parts();
    rms.get(rm_id)
        .map(|rm| rm.policy_group.clone())
        .unwrap_or_default()
}

/// The dry run of [`apply`]: every partition of the new configuration is
/// built on its own (the creation checks of 2.7) and checked against its
/// live counterpart. Returns the fresh partitions.
fn dry_run<'a>(
    core: &Core,
    rm_id: &str,
    loaded: &'a LoadedConfig,
) -> Result<Vec<(&'a PartitionConfig, Partition)>, Error> {
    let (options, _, partitions) = core.parts();
    let timeouts = AppTimeouts::from_options(options);
    let failed = |name: &str, e: String| {
        Error::rejected(format!(
            "configuration reload for RM {rm_id} failed: partition {name}: {e}"
        ))
    };
    let mut fresh = Vec::new();
    for pc in &loaded.config.partitions {
        let p = Partition::new(rm_id, pc, timeouts).map_err(|e| failed(&pc.name, e))?;
        if let Some(live) = partitions.get(&p.key) {
            live.check_reconfigure(pc)
                .map_err(|e| failed(&pc.name, e))?;
        }
        fresh.push((pc, p));
    }
    Ok(fresh)
}

/// Whether `loaded` would apply to the partitions of `rm_id`, changing
/// nothing (for a change that must hold for several RMs at once).
pub fn check(core: &Core, rm_id: &str, loaded: &LoadedConfig) -> Result<(), Error> {
    resource::configuration(&policy_group(core, rm_id), || {
        dry_run(core, rm_id, loaded).map(|_| ())
    })
}

/// Applies `loaded` to the partitions of `rm_id`.
///
/// Order: the dry run of [`check`]; only then are live partitions updated,
/// new ones created and partitions that are no longer configured removed.
/// Removed partitions fail their applications with `PartitionRemoved` and
/// drop their nodes.
pub fn apply(core: &mut Core, rm_id: &str, loaded: LoadedConfig) -> Result<(), Error> {
    let group = policy_group(core, rm_id);
    resource::configuration(&group, || apply_checked(core, rm_id, loaded))
}

fn apply_checked(core: &mut Core, rm_id: &str, loaded: LoadedConfig) -> Result<(), Error> {
    if let Some(rm) = core.parts_mut().1.get_mut(rm_id) {
        if rm.checksum == loaded.config.checksum && !rm.checksum.is_empty() {
            // Same text, maybe from another source (a file now given in
            // memory): only the label changes.
            rm.config_source = loaded.source;
            return Ok(());
        }
    }
    let fresh = dry_run(core, rm_id, &loaded)?;
    // Accepted: from here on live state may use its names.
    resource::keep_configuration_names();
    let removed = {
        let (_, rms, partitions) = core.parts_mut();
        let rm = rms.get_mut(rm_id).expect("checked by the caller");
        let failed = |name: &str, e: String| {
            Error::rejected(format!(
                "configuration reload for RM {rm_id} failed: partition {name}: {e}"
            ))
        };
        let mut names = Vec::new();
        for (pc, p) in fresh {
            names.push(p.key.clone());
            match partitions.get_mut(&p.key) {
                // Cannot fail after the checks above; an error here would be
                // a bug, reported rather than hidden.
                Some(live) => live.reconfigure(pc).map_err(|e| failed(&pc.name, e))?,
                None => {
                    log::info!(
                        "partition {} added by configuration reload",
                        p.internal_name
                    );
                    partitions.insert(p.key.clone(), p);
                }
            }
        }
        let mut removed = Vec::new();
        for old in &rm.partitions {
            if !names.contains(old) {
                log::info!("partition {old} is not in the new configuration; removing it");
                removed.extend(partitions.remove(old));
            }
        }
        rm.partitions = names;
        rm.checksum = loaded.config.checksum;
        rm.config_text = loaded.text;
        rm.config_source = loaded.source;
        removed
    };
    for mut p in removed {
        p.fail_all_applications(core.outcomes_for(rm_id));
    }
    Ok(())
}
