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
    // A table of its own per input, as a scheduler's: the names it meets
    // are given back after it, so a long run never fills a table.
    let names = crate::scheduler::resource::ResourceNames::new();
    let (direct, prost) = names.charged_to_scheduler(|| {
        (
            wire::decode_allocation_update(bytes),
            si::AllocationRequest::decode(bytes).map(AllocationUpdate::from_proto),
        )
    });
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

/// Decodes `bytes` as an SI v1.8 `AllocationRequest` both ways, straight
/// from the wire (`rmproxy::v1::wire`) and through prost plus the checks
/// and conversion of `rmproxy::v1::convert`, and describes the first
/// disagreement: the same update, or the same error (status and message).
pub fn compare_v1_allocation_decoders(bytes: &[u8]) -> Result<(), String> {
    use crate::rmproxy::v1::wire as v1;
    let names = crate::scheduler::resource::ResourceNames::new();
    let (direct, prost) = names.charged_to_scheduler(|| {
        (
            v1::decode_allocation_request(bytes),
            v1::decode_allocation_request_prost(bytes),
        )
    });
    if direct == prost {
        return Ok(());
    }
    Err(format!(
        "the v1 decoders disagree:\n direct: {direct:?}\n  prost: {prost:?}"
    ))
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
        assert_eq!(compare_v1_allocation_decoders(&req.encode_to_vec()), Ok(()));
        assert_eq!(compare_v1_allocation_decoders(&[0x1a, 0x05, b'r']), Ok(()));
        // An allocation without a key: both refuse it with the same error.
        assert_eq!(compare_v1_allocation_decoders(&[0x22, 0x00]), Ok(()));
    }

    #[test]
    fn the_committed_seeds_agree() {
        let seeds = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds");
        for (dir, compare) in [
            (
                "wire_decoder",
                compare_allocation_decoders as fn(&[u8]) -> _,
            ),
            ("v1_wire_decoder", compare_v1_allocation_decoders),
        ] {
            let files = std::fs::read_dir(format!("{seeds}/{dir}")).expect("seeds");
            for f in files {
                let path = f.unwrap().path();
                let bytes = std::fs::read(&path).unwrap();
                assert_eq!(compare(&bytes), Ok(()), "{}", path.display());
            }
        }
    }
}
