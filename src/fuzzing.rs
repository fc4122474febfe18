//! Entry points for the `cargo fuzz` targets in `fuzz/` (not part of the
//! supported API, hidden from the docs). Keeping the comparisons here means
//! the ordinary build and clippy check them, so a change inside the crate
//! cannot silently break a target that only nightly builds.

use prost::Message;

use crate::proto::si::v1 as si;
use crate::rmproxy::wire;
use crate::scheduler::request::AllocationUpdate;

/// Decodes `bytes` as an `si.v1.AllocationRequest` both ways, straight from
/// the wire and through prost plus `AllocationUpdate::from_proto`, and
/// describes the first disagreement: the two must accept the same buffers
/// and produce the same update.
pub fn compare_allocation_decoders(bytes: &[u8]) -> Result<(), String> {
    let direct = wire::decode_allocation_update(bytes);
    let prost = si::AllocationRequest::decode(bytes).map(AllocationUpdate::from_proto);
    match (direct, prost) {
        (Ok(d), Ok(p)) if d == p => Ok(()),
        (Ok(d), Ok(p)) => Err(format!(
            "the decoders disagree:\n direct: {d:?}\n  prost: {p:?}"
        )),
        (Err(_), Err(_)) => Ok(()),
        (Ok(d), Err(e)) => Err(format!(
            "the direct decoder accepted what prost refuses ({e}): {d:?}"
        )),
        (Err(e), Ok(p)) => Err(format!(
            "the direct decoder refused what prost accepts ({e}): {p:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_and_disagreement_are_told_apart() {
        let req = si::AllocationRequest {
            rm_id: "rm".into(),
            ..Default::default()
        };
        assert_eq!(compare_allocation_decoders(&req.encode_to_vec()), Ok(()));
        // Both refuse a truncated length prefix.
        assert_eq!(compare_allocation_decoders(&[0x1a, 0x05, b'r']), Ok(()));
    }
}
