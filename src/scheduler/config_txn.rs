//! What the REST configuration update (spec 2.9) needs of the core: the
//! RM it targets, a dry run of the new text, and whether the callback
//! table it asked is still that RM's registration. The update itself runs
//! as one transaction on a library thread (`rest::config_txn`), under the
//! scheduler's [`ConfigLock`].

use std::sync::Arc;

use super::core::Core;
use crate::api::ResourceManagerCallback;
use crate::config;
use crate::error::Error;

/// Held for the whole of every configuration change of one scheduler:
/// registration, `UpdateConfiguration`, `SetPolicyConfig`, the reload
/// watcher's apply and the REST update (from its check of the base
/// checksum through the RM's callback to the apply). So no change can
/// interleave with the REST update's steps.
pub type ConfigLock = Arc<parking_lot::Mutex<()>>;

/// The RM a REST configuration update goes to, as the core holds it.
pub struct ConfigTarget {
    /// RM id.
    pub rm_id: String,
    /// Checksum of the configuration in force.
    pub checksum: String,
    /// Its text.
    pub text: String,
    /// The RM's callbacks (its current registration).
    pub callback: Arc<dyn ResourceManagerCallback>,
}

/// Whether two callback handles are one registration's (the data pointer
/// alone: vtable pointers of one type may differ between codegen units).
pub fn same_registration(
    a: &Arc<dyn ResourceManagerCallback>,
    b: &Arc<dyn ResourceManagerCallback>,
) -> bool {
    std::ptr::eq(Arc::as_ptr(a).cast::<()>(), Arc::as_ptr(b).cast::<()>())
}

impl Core {
    /// The RM whose configuration `/ws/v1/config` shows and updates: the
    /// owner of the first partition.
    pub(crate) fn config_target(&self) -> Result<ConfigTarget, Error> {
        let (_, rms, partitions) = self.parts();
        let rm_id = partitions
            .keys()
            .next()
            .map(|k| k.rm_id.clone())
            .ok_or_else(|| {
                Error::rejected("no active partitions: no resource manager is registered")
            })?;
        let rm = rms
            .get(&rm_id)
            .ok_or_else(|| Error::rejected(format!("RM {rm_id} is not registered")))?;
        Ok(ConfigTarget {
            checksum: rm.checksum.clone(),
            text: rm.config_text.clone(),
            callback: rm.callback.clone(),
            rm_id,
        })
    }

    /// Whether `text` would apply to the partitions of `rm_id`; changes
    /// nothing.
    pub(crate) fn check_config_text(&self, rm_id: &str, text: &str) -> Result<(), Error> {
        let config = config::parse(text).map_err(|e| Error::rejected(e.to_string()))?;
        let loaded = config::LoadedConfig {
            config,
            text: text.to_string(),
            source: "REST /ws/v1/config".to_string(),
        };
        super::reload::check(self, rm_id, &loaded)
    }

    /// The configuration text in force for `rm_id`.
    pub(crate) fn config_text_of(&self, rm_id: &str) -> Option<String> {
        self.parts().1.get(rm_id).map(|rm| rm.config_text.clone())
    }

    /// Whether `callback` is the current registration of `rm_id`.
    pub(crate) fn is_registration(
        &self,
        rm_id: &str,
        callback: &Arc<dyn ResourceManagerCallback>,
    ) -> bool {
        self.parts()
            .1
            .get(rm_id)
            .is_some_and(|rm| same_registration(&rm.callback, callback))
    }
}
