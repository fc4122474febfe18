//! Loading: where the text of a policy group comes from (in-memory text,
//! the configuration directory, the default paths, the embedded default)
//! and parsing it into a [`LoadedConfig`].

use std::collections::BTreeMap;
use std::path::Path;

use super::{
    parse_with, ConfigError, QuantityGrammar, SchedulerConfig, DEFAULT_CONFIG, DEFAULT_CONFIG_DIR,
};

/// A configuration as loaded for a policy group.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedConfig {
    /// The parsed configuration.
    pub config: SchedulerConfig,
    /// The raw text it came from.
    pub text: String,
    /// `"in-memory"`, the file path, or `"embedded default"`.
    pub source: String,
}

/// Source label for text passed in memory.
pub const SOURCE_IN_MEMORY: &str = "in-memory";
/// Source label for [`DEFAULT_CONFIG`].
pub const SOURCE_EMBEDDED_DEFAULT: &str = "embedded default";

/// Checks that `policy_group` is a plain name: non-empty, with no `/`,
/// `\\` or NUL, and neither `.` nor `..`. The group names a file
/// `<policy_group>.yaml` inside the configuration directory, so anything
/// that could walk out of that directory is refused; the reason names the
/// group.
pub fn check_policy_group(policy_group: &str) -> Result<(), String> {
    let bad = |why: &str| {
        Err(format!(
            "policy group {policy_group:?} is not a plain name: {why} \
             (it names the file <name>.yaml inside the configuration directory)"
        ))
    };
    if policy_group.is_empty() {
        bad("it is empty")
    } else if policy_group == "." || policy_group == ".." {
        bad("it is \".\" or \"..\"")
    } else if policy_group.contains(['/', '\\']) {
        bad("it contains a path separator")
    } else if policy_group.contains('\0') {
        bad("it contains a NUL character")
    } else {
        Ok(())
    }
}

/// Finds, reads and parses the configuration of `policy_group`.
///
/// Order: `policy_configs[policy_group]` (in-memory text); else, if
/// `config_dir` is non-empty, `<config_dir>/<policy_group>.yaml`, where a
/// missing or unreadable file is an error naming the path (an explicit
/// directory never falls back); else `/etc/yunikorn/<policy_group>.yaml` if it
/// exists, else `./<policy_group>.yaml` if it exists, else [`DEFAULT_CONFIG`].
pub fn load(
    policy_group: &str,
    config_dir: &str,
    policy_configs: &BTreeMap<String, String>,
) -> Result<LoadedConfig, ConfigError> {
    load_with(
        policy_group,
        config_dir,
        policy_configs,
        QuantityGrammar::Integer,
    )
}

/// [`load`] with the quantities written in `grammar`.
pub fn load_with(
    policy_group: &str,
    config_dir: &str,
    policy_configs: &BTreeMap<String, String>,
    grammar: QuantityGrammar,
) -> Result<LoadedConfig, ConfigError> {
    let (text, source) = read(policy_group, config_dir, policy_configs)?;
    from_text_with(text, source, grammar)
}

/// Finds and reads the text of `policy_group` by the rules of [`load`],
/// without parsing it: `(text, source)`. The reload watcher compares the
/// checksum of the text before it pays for a parse.
pub fn read(
    policy_group: &str,
    config_dir: &str,
    policy_configs: &BTreeMap<String, String>,
) -> Result<(String, String), ConfigError> {
    // Registration and SetPolicyConfig refuse such names first; this keeps
    // a reload and the watcher inside the directory whatever reaches them.
    check_policy_group(policy_group).map_err(ConfigError::new)?;
    if let Some(text) = policy_configs.get(policy_group) {
        return Ok((text.clone(), SOURCE_IN_MEMORY.to_string()));
    }
    let file_name = format!("{policy_group}.yaml");
    if !config_dir.is_empty() {
        let path = Path::new(config_dir).join(&file_name);
        return read_file(&path);
    }
    for candidate in [
        Path::new(DEFAULT_CONFIG_DIR).join(&file_name),
        file_name.into(),
    ] {
        if candidate.exists() {
            return read_file(&candidate);
        }
    }
    Ok((
        DEFAULT_CONFIG.to_string(),
        SOURCE_EMBEDDED_DEFAULT.to_string(),
    ))
}

fn read_file(path: &Path) -> Result<(String, String), ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ConfigError::new(format!(
            "failed to read configuration file {}: {e}",
            path.display()
        ))
    })?;
    Ok((text, path.display().to_string()))
}

/// Parses `text` that came from `source` into a [`LoadedConfig`].
pub fn from_text(text: String, source: String) -> Result<LoadedConfig, ConfigError> {
    from_text_with(text, source, QuantityGrammar::Integer)
}

/// [`from_text`] with the quantities written in `grammar`.
pub fn from_text_with(
    text: String,
    source: String,
    grammar: QuantityGrammar,
) -> Result<LoadedConfig, ConfigError> {
    let config = parse_with(&text, grammar)?;
    Ok(LoadedConfig {
        config,
        text,
        source,
    })
}
