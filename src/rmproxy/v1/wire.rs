//! Direct decoding of an encoded SI v1.x `AllocationRequest` into the
//! core's [`AllocationUpdate`], on the RM's calling thread: the v1
//! counterpart of [`crate::rmproxy::wire`], whose building blocks it uses.
//!
//! Through prost a request of thousands of allocations becomes owned
//! messages first (strings, tag and resource maps, vectors grown as they
//! fill), which the conversion then copies again and drops. Here the
//! bytes are read twice instead:
//!
//! 1. a first pass ([`check`]) finds where every allocation goes (request,
//!    placed, foreign or dropped) and runs the shape checks of
//!    [`convert::check_allocation`], so nothing is interned for a refused
//!    request and every vector is made at its final size;
//! 2. the decode ([`Checked::decode`]) reads the fields of each allocation
//!    straight from the buffer and hands them to [`convert::Builder`], the
//!    conversion the prost path uses too: resource names interned once per
//!    request, consecutive equal strings shared.
//!
//! Releases are decoded by prost (they are few) and converted as on the
//! prost path. The protobuf rules are prost's, as in the v0.12 decoder. A
//! buffer prost refuses is refused with prost's own message, so the
//! caller sees the same error as through prost; the tests and the fuzz
//! target compare the two paths on random and corrupted requests.

use prost::encoding::{decode_key, decode_varint, WireType};
use prost::Message;

use super::super::wire::{
    decode_error, decode_tag_entry, depth, expect, merge_field, merge_string, not_utf8, peek_rm_id,
    read_len, short_entry, skip, AskResource, Names, Result,
};
use super::convert::{self, Builder, Fields, TAG_FOREIGN};
use crate::error::Error;
use crate::proto::si18::v1 as si18;
use crate::scheduler::request::AllocationUpdate;
use crate::scheduler::tags::{Tags, TagsBuilder};

/// The argument's name in errors, as the C ABI's entry point names it.
pub const WHAT: &str = "request (SI v1.x AllocationRequest)";

/// `bytes` refused as prost refuses them; `fallback` if prost takes them
/// (then the direct decoder refused what prost accepts, a bug the tests
/// look for).
fn refused(bytes: &[u8], fallback: &str) -> Error {
    let why = match si18::AllocationRequest::decode(bytes) {
        Err(e) => e.to_string(),
        Ok(_) => fallback.to_string(),
    };
    Error::decode(WHAT, why)
}

/// `error`, unless `bytes` are not a valid encoding: that error comes
/// first, as when the request is decoded before anything is checked.
pub fn unless_malformed(bytes: &[u8], error: Error) -> Error {
    match si18::AllocationRequest::decode(bytes) {
        Err(e) => Error::decode(WHAT, e),
        Ok(_) => error,
    }
}

/// The rmID of the request (the last one sent), found without decoding
/// the rest: the RM is checked before anything is taken in.
pub fn rm_id(bytes: &[u8]) -> std::result::Result<&str, Error> {
    peek_rm_id(bytes).ok_or_else(|| refused(bytes, "malformed message"))
}

/// A request that passed the first pass (see the module doc).
pub struct Checked<'a> {
    bytes: &'a [u8],
    asks: usize,
    placed: usize,
    foreign: usize,
}

/// How many allocations go where.
#[derive(Default)]
struct Counts {
    asks: usize,
    placed: usize,
    foreign: usize,
}

/// The first pass over a request from `rm_id` (see [`rm_id`]): the shape
/// checks of [`convert::check_allocation`], with the same errors in the
/// same order, and where each allocation goes. Reads only what it needs
/// and takes nothing in; a buffer it cannot read, or that fails a check
/// and is also not a valid encoding, gets prost's error.
pub fn check<'a>(bytes: &'a [u8], rm_id: &str) -> std::result::Result<Checked<'a>, Error> {
    let mut first = FirstErrors::default();
    let mut counts = Counts::default();
    if scan_request(bytes, rm_id, &mut first, &mut counts).is_none() {
        return Err(refused(bytes, "malformed message"));
    }
    if let Some(e) = first.allocation.or(first.release) {
        return Err(unless_malformed(bytes, e));
    }
    Ok(Checked {
        bytes,
        asks: counts.asks,
        placed: counts.placed,
        foreign: counts.foreign,
    })
}

/// The first failed check among the allocations, and among the releases
/// (reported only when every allocation passes, as in
/// [`convert::check_allocation`]).
#[derive(Default)]
struct FirstErrors {
    allocation: Option<Error>,
    allocations_seen: usize,
    release: Option<Error>,
    releases_seen: usize,
}

/// `None` when the buffer is malformed in a way this pass sees (prost
/// refuses it too); it may let other malformations through, which the
/// decode refuses.
fn scan_request(
    mut buf: &[u8],
    rm_id: &str,
    first: &mut FirstErrors,
    counts: &mut Counts,
) -> Option<()> {
    while !buf.is_empty() {
        let (tag, wt) = decode_key(&mut buf).ok()?;
        match tag {
            2 if wt == WireType::LengthDelimited => {
                scan_releases(read_len(&mut buf, "").ok()?, rm_id, first)?;
            }
            4 if wt == WireType::LengthDelimited => {
                scan_allocation(read_len(&mut buf, "").ok()?, rm_id, first, counts)?;
            }
            2 | 4 => return None,
            _ => skip(wt, tag, &mut buf, depth::REQUEST).ok()?,
        }
    }
    Some(())
}

/// The body of a length-delimited field, `None` for another wire type.
fn body<'a>(wt: WireType, buf: &mut &'a [u8]) -> Option<&'a [u8]> {
    if wt != WireType::LengthDelimited {
        return None;
    }
    read_len(buf, "").ok()
}

fn scan_allocation(
    mut buf: &[u8],
    rm_id: &str,
    first: &mut FirstErrors,
    counts: &mut Counts,
) -> Option<()> {
    let (mut has_key, mut has_app, mut has_node, mut has_task_group) = (false, false, false, false);
    let (mut foreign, mut placeholder) = (false, false);
    let mut partition: &[u8] = &[];
    while !buf.is_empty() {
        let (tag, wt) = decode_key(&mut buf).ok()?;
        match tag {
            1 => has_key = !body(wt, &mut buf)?.is_empty(),
            2 => foreign |= tag_key(body(wt, &mut buf)?)? == TAG_FOREIGN.as_bytes(),
            8 => has_node = !body(wt, &mut buf)?.is_empty(),
            9 => has_app = !body(wt, &mut buf)?.is_empty(),
            10 => partition = body(wt, &mut buf)?,
            11 => has_task_group = !body(wt, &mut buf)?.is_empty(),
            12 if wt == WireType::Varint => placeholder = decode_varint(&mut buf).ok()? != 0,
            12 => return None,
            _ => skip(wt, tag, &mut buf, depth::ASK).ok()?,
        }
    }
    let i = first.allocations_seen;
    first.allocations_seen += 1;
    if first.allocation.is_none() {
        let partition = std::str::from_utf8(partition).ok()?;
        let shape = (has_key, has_app, foreign);
        first.allocation = convert::check_one_allocation(rm_id, i, shape, partition).err();
    }
    // As `Builder::push` sorts them.
    if foreign {
        counts.foreign += 1;
    } else if placeholder && !has_task_group {
    } else if has_node {
        counts.placed += 1;
    } else {
        counts.asks += 1;
    }
    Some(())
}

/// The key of one map entry (the last one sent; empty when absent).
fn tag_key(mut buf: &[u8]) -> Option<&[u8]> {
    if let Some((key, _)) = short_entry(buf) {
        return Some(key);
    }
    let mut key: &[u8] = &[];
    while !buf.is_empty() {
        let (tag, wt) = decode_key(&mut buf).ok()?;
        match tag {
            1 => key = body(wt, &mut buf)?,
            2 => {
                body(wt, &mut buf)?;
            }
            _ => skip(wt, tag, &mut buf, depth::TAG_ENTRY).ok()?,
        }
    }
    Some(key)
}

/// One `AllocationReleasesRequest` (sent more than once, its lists add up).
fn scan_releases(mut buf: &[u8], rm_id: &str, first: &mut FirstErrors) -> Option<()> {
    while !buf.is_empty() {
        let (tag, wt) = decode_key(&mut buf).ok()?;
        match tag {
            1 => scan_release(body(wt, &mut buf)?, rm_id, first)?,
            _ => skip(wt, tag, &mut buf, depth::RELEASES).ok()?,
        }
    }
    Some(())
}

fn scan_release(mut buf: &[u8], rm_id: &str, first: &mut FirstErrors) -> Option<()> {
    let (mut has_key, mut has_app) = (false, false);
    let mut partition: &[u8] = &[];
    while !buf.is_empty() {
        let (tag, wt) = decode_key(&mut buf).ok()?;
        match tag {
            1 => partition = body(wt, &mut buf)?,
            2 => has_app = !body(wt, &mut buf)?.is_empty(),
            6 => has_key = !body(wt, &mut buf)?.is_empty(),
            _ => skip(wt, tag, &mut buf, depth::RELEASE).ok()?,
        }
    }
    let i = first.releases_seen;
    first.releases_seen += 1;
    if first.release.is_none() {
        let partition = std::str::from_utf8(partition).ok()?;
        first.release = convert::check_one_release(rm_id, i, has_key || has_app, partition).err();
    }
    Some(())
}

impl Checked<'_> {
    /// The update: what [`convert::allocation_update`] makes of the
    /// request decoded by prost. Run it where resource names are charged
    /// to the RM.
    pub fn decode(&self) -> std::result::Result<AllocationUpdate, Error> {
        decode_checked(self).map_err(|e| refused(self.bytes, &e))
    }
}

fn decode_checked(c: &Checked<'_>) -> Result<AllocationUpdate> {
    let mut buf = c.bytes;
    let mut b = Builder::with_capacity(String::new(), c.asks, c.placed, c.foreign);
    let mut names = Names::default();
    // Releases are merged by prost as the field of a request, so nested
    // messages get prost's own recursion budget.
    let mut with_releases: Option<si18::AllocationRequest> = None;
    let mut rm_id = "";
    while !buf.is_empty() {
        let field_start = buf;
        let (tag, wt) = decode_key(&mut buf).map_err(decode_error)?;
        match tag {
            2 => merge_field(&mut with_releases, wt, field_start, &mut buf, "releases")?,
            3 => rm_id = merge_string(wt, &mut buf, "AllocationRequest.rmID")?,
            4 => {
                expect(
                    wt,
                    WireType::LengthDelimited,
                    "AllocationRequest.allocations",
                )?;
                let body = read_len(&mut buf, "AllocationRequest.allocations")?;
                decode_allocation(body, &mut names, &mut b)?;
            }
            _ => skip(wt, tag, &mut buf, depth::REQUEST)?,
        }
    }
    let mut update = b.finish(with_releases.and_then(|r| r.releases));
    update.rm_id = rm_id.to_string();
    Ok(update)
}

/// One `si.v1.Allocation` (SI v1.x), added to `b`.
fn decode_allocation<'a>(mut buf: &'a [u8], names: &mut Names<'a>, b: &mut Builder) -> Result<()> {
    let mut f = Fields {
        key: "",
        app: "",
        partition: "",
        node: "",
        task_group: "",
        tags: Tags::new(),
        priority: 0,
        placeholder: false,
        originator: false,
        preempt_self: false,
        preempt_other: false,
    };
    let mut resource = AskResource::default();
    let mut tags = TagsBuilder::new();
    while !buf.is_empty() {
        let (tag, wt) = decode_key(&mut buf).map_err(decode_error)?;
        match tag {
            1 => f.key = merge_string(wt, &mut buf, "Allocation.allocationKey")?,
            2 => {
                expect(wt, WireType::LengthDelimited, "Allocation.allocationTags")?;
                let entry = read_len(&mut buf, "Allocation.allocationTags")?;
                decode_tag_entry(
                    entry,
                    &mut tags,
                    (
                        "Allocation.allocationTags key",
                        "Allocation.allocationTags value",
                    ),
                )?;
            }
            5 => {
                expect(wt, WireType::LengthDelimited, "Allocation.resourcePerAlloc")?;
                let body = read_len(&mut buf, "Allocation.resourcePerAlloc")?;
                resource.field(body, names)?;
            }
            6 => f.priority = varint(wt, &mut buf, "Allocation.priority")? as i32,
            8 => f.node = merge_string(wt, &mut buf, "Allocation.nodeID")?,
            9 => f.app = merge_string(wt, &mut buf, "Allocation.applicationID")?,
            10 => f.partition = merge_string(wt, &mut buf, "Allocation.partitionName")?,
            11 => f.task_group = merge_string(wt, &mut buf, "Allocation.taskGroupName")?,
            12 => f.placeholder = varint(wt, &mut buf, "Allocation.placeholder")? != 0,
            14 => f.originator = varint(wt, &mut buf, "Allocation.originator")? != 0,
            15 => {
                expect(wt, WireType::LengthDelimited, "Allocation.preemptionPolicy")?;
                let body = read_len(&mut buf, "Allocation.preemptionPolicy")?;
                decode_preemption_policy(body, &mut f)?;
            }
            _ => skip(wt, tag, &mut buf, depth::ASK)?,
        }
    }
    f.tags = tags
        .build()
        .map_err(|_| not_utf8("Allocation.allocationTags"))?;
    b.push(f, || resource.finish(names));
    Ok(())
}

/// A varint field's value.
fn varint(wt: WireType, buf: &mut &[u8], field: &str) -> Result<u64> {
    expect(wt, WireType::Varint, field)?;
    decode_varint(buf).map_err(decode_error)
}

/// `si.v1.PreemptionPolicy`, merged into `f` (a second occurrence changes
/// only the fields it carries).
fn decode_preemption_policy(mut buf: &[u8], f: &mut Fields<'_>) -> Result<()> {
    while !buf.is_empty() {
        let (tag, wt) = decode_key(&mut buf).map_err(decode_error)?;
        match tag {
            1 | 2 => {
                expect(wt, WireType::Varint, "PreemptionPolicy")?;
                let v = decode_varint(&mut buf).map_err(decode_error)? != 0;
                if tag == 1 {
                    f.preempt_self = v;
                } else {
                    f.preempt_other = v;
                }
            }
            _ => skip(wt, tag, &mut buf, depth::PREEMPTION_POLICY)?,
        }
    }
    Ok(())
}

/// Everything [`crate::rmproxy::RmProxy`] does with an encoded request
/// but the registration check: the first pass, then the decode. For the
/// tests and the fuzz target.
pub fn decode_allocation_request(bytes: &[u8]) -> std::result::Result<AllocationUpdate, Error> {
    let rm_id = rm_id(bytes)?;
    check(bytes, rm_id)?.decode()
}

/// The same through prost: decoded, checked and converted.
pub fn decode_allocation_request_prost(
    bytes: &[u8],
) -> std::result::Result<AllocationUpdate, Error> {
    let r = si18::AllocationRequest::decode(bytes).map_err(|e| Error::decode(WHAT, e))?;
    convert::check_allocation(&r)?;
    Ok(convert::allocation_update(r))
}

#[cfg(test)]
mod tests;
