//! Applying a reloaded configuration to the live partitions of one RM
//! (spec 2.8), synchronously inside `UpdateConfiguration`.
//!
//! Everything is checked before anything changes, so an invalid
//! configuration leaves the old one fully in force.

use super::core::Core;
use super::partition::{AppTimeouts, Partition};
use crate::config::LoadedConfig;
use crate::error::Error;

/// Applies `loaded` to the partitions of `rm_id`.
///
/// Order: every partition of the new configuration is built on its own (the
/// creation checks of 2.7) and checked against its live counterpart; only
/// then are live partitions updated, new ones created and partitions that
/// are no longer configured removed. Removed partitions fail their
/// applications with `PartitionRemoved` and drop their nodes.
pub fn apply(core: &mut Core, rm_id: &str, loaded: LoadedConfig) -> Result<(), Error> {
    let removed = {
        let (options, rms, partitions) = core.parts_mut();
        let timeouts = AppTimeouts::from_options(options);
        let rm = rms.get_mut(rm_id).expect("checked by the caller");
        if rm.checksum == loaded.config.checksum && !rm.checksum.is_empty() {
            return Ok(());
        }
        let failed = |name: &str, e: String| {
            Error::rejected(format!(
                "configuration reload for RM {rm_id} failed: partition {name}: {e}"
            ))
        };
        // Dry run: every partition of the new config must build on its own
        // and fit the live partition it replaces.
        let mut fresh = Vec::new();
        for pc in &loaded.config.partitions {
            let p = Partition::new(rm_id, pc, timeouts).map_err(|e| failed(&pc.name, e))?;
            if let Some(live) = partitions.get(&p.internal_name) {
                live.check_reconfigure(pc)
                    .map_err(|e| failed(&pc.name, e))?;
            }
            fresh.push((pc, p));
        }
        let mut names = Vec::new();
        for (pc, p) in fresh {
            names.push(p.internal_name.clone());
            match partitions.get_mut(&p.internal_name) {
                // Cannot fail after the checks above; an error here would be
                // a bug, reported rather than hidden.
                Some(live) => live.reconfigure(pc).map_err(|e| failed(&pc.name, e))?,
                None => {
                    log::info!(
                        "partition {} added by configuration reload",
                        p.internal_name
                    );
                    partitions.insert(p.internal_name.clone(), p);
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
