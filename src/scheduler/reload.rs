//! Applying a reloaded configuration to the live partitions of one RM.
//!
//! Everything is checked before anything changes, so an invalid
//! configuration leaves the old one fully in force.

use super::core::Core;
use super::partition::{AppTimeouts, Partition};
use crate::config::LoadedConfig;
use crate::error::Error;

/// Applies `loaded` to the partitions of `rm_id`.
pub fn apply(core: &mut Core, rm_id: &str, loaded: LoadedConfig) -> Result<(), Error> {
    let (options, rms, partitions) = core.parts_mut();
    // lifecycle-work: all application timers, the terminated one included.
    let timeouts = AppTimeouts::from_options(options);
    let rm = rms.get_mut(rm_id).expect("checked by the caller");
    if rm.checksum == loaded.config.checksum && !rm.checksum.is_empty() {
        return Ok(());
    }
    // Dry run: every partition of the new config must build on its own.
    let mut fresh = Vec::new();
    for pc in &loaded.config.partitions {
        let p = Partition::new(rm_id, pc, timeouts).map_err(|e| {
            Error::rejected(format!("configuration reload: partition {}: {e}", pc.name))
        })?;
        fresh.push((pc, p));
    }
    let mut names = Vec::new();
    for (pc, p) in fresh {
        names.push(p.internal_name.clone());
        match partitions.get_mut(&p.internal_name) {
            Some(live) => live.reconfigure(pc).map_err(|e| {
                Error::rejected(format!("configuration reload: partition {}: {e}", pc.name))
            })?,
            None => {
                partitions.insert(p.internal_name.clone(), p);
            }
        }
    }
    for old in &rm.partitions {
        if !names.contains(old) {
            log::info!("partition {old} is not in the new configuration; removing it");
            partitions.remove(old);
        }
    }
    rm.partitions = names;
    rm.checksum = loaded.config.checksum;
    rm.config_source = loaded.source;
    Ok(())
}
