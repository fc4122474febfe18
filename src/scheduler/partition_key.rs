//! A partition's identity inside the core, and how a name an RM sends
//! resolves to it (spec 1.5).

/// A partition's identity inside the core: the owning RM and the plain
/// partition name, kept apart. The display form `[rmID]name` is ambiguous
/// (`]` may occur in both parts), so it is never used as a key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionKey {
    /// Owning RM.
    pub rm_id: String,
    /// Plain partition name, as configured.
    pub name: String,
}

impl std::fmt::Display for PartitionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}]{}", self.rm_id, self.name)
    }
}

/// Resolves a partition name from RM `rm_id` to its key (spec 1.5): empty
/// means `default`; a name starting with `[` is taken as already normalised
/// and must carry the caller's own `[rmID]` prefix, so a request can only
/// ever reach its own RM's partitions.
pub fn resolve_partition(rm_id: &str, name: &str) -> Result<PartitionKey, String> {
    let plain = plain_name(rm_id, name)?;
    Ok(PartitionKey {
        rm_id: rm_id.to_string(),
        name: if plain.is_empty() { "default" } else { plain }.to_string(),
    })
}

/// [`resolve_partition`]'s check alone, without building the key (the
/// request checks run it for every allocation).
pub fn check_partition_owner(rm_id: &str, name: &str) -> Result<(), String> {
    plain_name(rm_id, name).map(|_| ())
}

/// `name` without its `[rmID]` prefix, refused when the prefix is another RM's.
fn plain_name<'a>(rm_id: &str, name: &'a str) -> Result<&'a str, String> {
    match name.strip_prefix('[') {
        Some(rest) => rest
            .strip_prefix(rm_id)
            .and_then(|r| r.strip_prefix(']'))
            .ok_or_else(|| {
                format!("partition {name} does not belong to RM {rm_id}: a request may only name its own RM's partitions")
            }),
        None => Ok(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_to_the_callers_own_partitions() {
        let k = resolve_partition("rm", "").unwrap();
        assert_eq!((k.rm_id.as_str(), k.name.as_str()), ("rm", "default"));
        assert_eq!(resolve_partition("rm", "[rm]gpu").unwrap().name, "gpu");
        assert_eq!(
            resolve_partition("rm", "gpu").unwrap().to_string(),
            "[rm]gpu"
        );
        assert!(resolve_partition("rm", "[other]gpu").is_err());
    }
}
