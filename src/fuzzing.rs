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

/// Decodes `bytes` as an SI v1.x `AllocationRequest` both ways, straight
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

/// Wraps the text after the first byte of `bytes` in nested flow
/// collections (`[` or `{` chosen by the bits of the text, as deep as the
/// first byte says: up to 199 levels, or thousands) and parses it as a
/// configuration in both quantity grammars. Past the nesting bound the text
/// must be refused naming the bound; within it, any outcome but a panic.
pub fn check_nested_config(bytes: &[u8]) -> Result<(), String> {
    use crate::config::{bounds, parse_with, QuantityGrammar};
    let Some((&head, rest)) = bytes.split_first() else {
        return Ok(());
    };
    let Ok(tail) = std::str::from_utf8(rest) else {
        return Ok(());
    };
    let depth = match head {
        0..=199 => usize::from(head),
        _ => usize::from(head - 199) * 600,
    };
    let mut text = String::with_capacity(depth + tail.len() + 12);
    text.push_str("partitions: ");
    for i in 0..depth {
        let bit = rest.get(i / 8).map_or(0, |b| (b >> (i % 8)) & 1);
        text.push(if bit == 0 { '[' } else { '{' });
    }
    text.push_str(tail);
    for grammar in [QuantityGrammar::Integer, QuantityGrammar::Units] {
        let outcome = parse_with(&text, grammar);
        if depth > bounds::MAX_FLOW_NESTING {
            match outcome {
                Err(e) if e.to_string().contains("flow collections") => {}
                other => {
                    return Err(format!(
                        "{depth} levels of flow nesting not refused by the bound: {other:?}"
                    ))
                }
            }
        } else if let Err(e) = outcome {
            if e.to_string().is_empty() {
                return Err("an error without a message".into());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod nesting_tests {
    #[test]
    fn nested_config_checks_both_sides_of_the_bound() {
        for head in [0u8, 5, 127, 128, 129, 199, 200, 255] {
            let mut input = vec![head];
            input.extend_from_slice(b"\xaa\x55]}");
            super::check_nested_config(&input).unwrap();
        }
    }
}
