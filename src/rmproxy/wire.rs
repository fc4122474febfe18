//! Direct decoding of an encoded `si.v1.AllocationRequest` into the core's
//! [`AllocationUpdate`], on the RM's calling thread.
//!
//! Asks are the bulk of what an RM sends, and decoding them through the
//! generated message types costs several heap allocations per ask (key,
//! application id, partition name, resource map and its names) that are
//! thrown away at once by the conversion. Reading the asks straight from
//! the wire keeps one allocation per ask (its key): resource names are
//! interned from the buffer and equal ids are shared. The releases go
//! through prost, and the rules are prost's: fields in any order, the last
//! scalar wins, repeated message fields merge, unknown fields are skipped,
//! strings must be UTF-8, and groups in unknown fields nest no deeper than
//! prost's recursion limit allows at that depth of the message. The tests
//! compare the two paths on random and corrupted messages.

use std::sync::Arc;

use prost::encoding::WireType;
use prost::encoding::{decode_key, decode_varint, skip_field, DecodeContext};
use prost::Message;
use smallvec::SmallVec;

use crate::proto::si::v1 as si;
use crate::scheduler::objects::application::{shared_str, TAG_REQUIRED_NODE};
use crate::scheduler::request::{priority_of, AllocationUpdate, AskRequest};
use crate::scheduler::resource::{intern, ResId, Resource};
use crate::scheduler::tags::TagsBuilder;

pub(crate) type Result<T> = std::result::Result<T, String>;

pub(crate) fn decode_error(e: prost::DecodeError) -> String {
    e.to_string()
}

/// Checks a known field's wire type, as prost does.
pub(crate) fn expect(actual: WireType, wanted: WireType, field: &str) -> Result<()> {
    if actual == wanted {
        Ok(())
    } else {
        Err(format!(
            "invalid wire type: {actual:?} (expected {wanted:?}) for {field}"
        ))
    }
}

/// The body of a length-delimited field; advances `buf` past it.
#[inline]
pub(crate) fn read_len<'a>(buf: &mut &'a [u8], field: &str) -> Result<&'a [u8]> {
    // A length under 128, one byte (nearly every string and message an RM
    // sends), read inline: the varint decoder's call and its error path
    // cost ~75 instructions a field.
    if let Some((&len, rest)) = buf.split_first() {
        if len < 0x80 && usize::from(len) <= rest.len() {
            let (body, rest) = rest.split_at(usize::from(len));
            *buf = rest;
            return Ok(body);
        }
    }
    read_len_varint(buf, field)
}

/// [`read_len`] of a length of two bytes or more, or past the end.
#[inline(never)]
fn read_len_varint<'a>(buf: &mut &'a [u8], field: &str) -> Result<&'a [u8]> {
    let len = decode_varint(buf).map_err(decode_error)?;
    if len > buf.len() as u64 {
        return Err(format!("buffer underflow in {field}"));
    }
    let (body, rest) = buf.split_at(len as usize);
    *buf = rest;
    Ok(body)
}

pub(crate) fn read_str<'a>(buf: &mut &'a [u8], field: &str) -> Result<&'a str> {
    std::str::from_utf8(read_len(buf, field)?).map_err(|_| not_utf8(field))
}

/// A string field's bytes are not UTF-8.
pub(crate) fn not_utf8(field: &str) -> String {
    format!("invalid string value: data is not UTF-8 encoded ({field})")
}

/// prost's recursion budget (`prost::RECURSION_LIMIT`, 100) left for the
/// fields of a message at each depth of an `AllocationRequest`: every
/// nested message, map entry and group takes one. SI v1.x's `Allocation`
/// sits where v0.12's `AllocationAsk` does, so the same budgets serve it.
pub(crate) mod depth {
    pub const REQUEST: u32 = 100;
    pub const ASK: u32 = REQUEST - 1;
    pub const RESOURCE: u32 = ASK - 1;
    pub const PRIORITY: u32 = ASK - 1;
    /// SI v1.x `Allocation.preemptionPolicy`.
    pub const PREEMPTION_POLICY: u32 = ASK - 1;
    /// SI v1.x `AllocationReleasesRequest` and its `AllocationRelease`s.
    pub const RELEASES: u32 = REQUEST - 1;
    pub const RELEASE: u32 = RELEASES - 1;
    pub const TAG_ENTRY: u32 = ASK - 1;
    pub const RESOURCE_ENTRY: u32 = RESOURCE - 1;
    pub const QUANTITY: u32 = RESOURCE_ENTRY - 1;
}

/// Skips an unknown field of a message whose fields have `budget` left, as
/// prost's `skip_field` does: each group level takes one, and a group at
/// budget 0 is refused.
pub(crate) fn skip(wire_type: WireType, tag: u32, buf: &mut &[u8], budget: u32) -> Result<()> {
    if budget == 0 {
        return Err("recursion limit reached".into());
    }
    if wire_type != WireType::StartGroup {
        return skip_field(wire_type, tag, buf, DecodeContext::default()).map_err(decode_error);
    }
    loop {
        let (inner_tag, inner_wt) = decode_key(buf).map_err(decode_error)?;
        if inner_wt == WireType::EndGroup {
            if inner_tag != tag {
                return Err("unexpected end group tag".into());
            }
            return Ok(());
        }
        skip(inner_wt, inner_tag, buf, budget - 1)?;
    }
}

/// A length-delimited string field.
pub(crate) fn merge_string<'a>(wt: WireType, buf: &mut &'a [u8], field: &str) -> Result<&'a str> {
    expect(wt, WireType::LengthDelimited, field)?;
    read_str(buf, field)
}

/// `si.v1.Priority` (a oneof of a value and a class name), merged into
/// `slot` as prost merges it: the last member seen wins.
fn decode_priority(mut buf: &[u8], slot: &mut Option<si::Priority>) -> Result<()> {
    use si::priority::Priority as P;
    let p = slot.get_or_insert_with(Default::default);
    while !buf.is_empty() {
        let (tag, wt) = decode_key(&mut buf).map_err(decode_error)?;
        match tag {
            1 => {
                expect(wt, WireType::Varint, "Priority.priorityValue")?;
                let v = decode_varint(&mut buf).map_err(decode_error)? as i32;
                p.priority = Some(P::PriorityValue(v));
            }
            2 => {
                let v = merge_string(wt, &mut buf, "Priority.priorityClassName")?;
                p.priority = Some(P::PriorityClassName(v.to_string()));
            }
            _ => skip(wt, tag, &mut buf, depth::PRIORITY)?,
        }
    }
    Ok(())
}

/// The key and value of a map entry in the form every encoder writes for
/// short strings: key (1), then value (2), each with a one-byte length,
/// and nothing else. `None` for any other form (the general reader's).
#[inline]
pub(crate) fn short_entry(buf: &[u8]) -> Option<(&[u8], &[u8])> {
    let [0x0a, kl, rest @ ..] = buf else {
        return None;
    };
    let kl = usize::from(*kl);
    if kl >= 0x80 || rest.len() < kl + 2 || rest[kl] != 0x12 {
        return None;
    }
    let vl = usize::from(rest[kl + 1]);
    (vl < 0x80 && rest.len() == kl + 2 + vl).then(|| (&rest[..kl], &rest[kl + 2..]))
}

/// One entry of a `map<string, string>` (`fields`: its key's and its
/// value's names, for errors), merged into `tags`. The usual entry's
/// strings are checked to be UTF-8 when the tags are built.
pub(crate) fn decode_tag_entry<'a>(
    mut buf: &'a [u8],
    tags: &mut TagsBuilder<'a>,
    fields: (&str, &str),
) -> Result<()> {
    if let Some((key, value)) = short_entry(buf) {
        tags.push_bytes(key, value);
        return Ok(());
    }
    let (mut key, mut value) = ("", "");
    while !buf.is_empty() {
        let (tag, wt) = decode_key(&mut buf).map_err(decode_error)?;
        match tag {
            1 => key = merge_string(wt, &mut buf, fields.0)?,
            2 => value = merge_string(wt, &mut buf, fields.1)?,
            _ => skip(wt, tag, &mut buf, depth::TAG_ENTRY)?,
        }
    }
    tags.push(key, value);
    Ok(())
}

/// Equal application ids and partition names of consecutive asks share one
/// string; resource names seen in the request are interned once.
#[derive(Default)]
struct Shared<'a> {
    app: Option<Arc<str>>,
    partition: Option<Arc<str>>,
    names: Names<'a>,
}

/// The resource names met in one request, each interned once, and the
/// last ask's resource with its encoded bytes (see [`AskResource`]).
#[derive(Default)]
pub(crate) struct Names<'a> {
    ids: SmallVec<[(&'a str, ResId); 4]>,
    last: Option<(&'a [u8], Resource)>,
}

/// The resource fields of one ask, as the field loop meets them. The asks
/// of one request mostly ask for the same resource (the replicas of one
/// workload), so an ask whose only resource field has the bytes of the
/// previous ask's takes that ask's result instead of decoding and
/// interning again (~1,100 instructions per ask). Bytes that decoded once
/// decode again to the same, so errors and their order do not change.
#[derive(Default)]
pub(crate) struct AskResource<'a> {
    pairs: SmallVec<[(&'a str, i64); 4]>,
    /// The first field's bytes, and whether they are the previous ask's
    /// (and so not decoded yet).
    first: Option<(&'a [u8], bool)>,
    fields: usize,
}

impl<'a> AskResource<'a> {
    /// One `si.v1.Resource` field of the ask (a repeated one merges).
    pub(crate) fn field(&mut self, body: &'a [u8], names: &Names<'a>) -> Result<()> {
        self.fields += 1;
        if self.fields == 1 {
            let same = names.last.as_ref().is_some_and(|(b, _)| *b == body);
            self.first = Some((body, same));
            if same {
                return Ok(());
            }
        } else if let Some((first, true)) = self.first {
            self.first = Some((first, false));
            decode_resource(first, &mut self.pairs)?;
        }
        decode_resource(body, &mut self.pairs)
    }

    /// The ask's resource, interned (`Err` names a type the table refused).
    pub(crate) fn finish(mut self, names: &mut Names<'a>) -> std::result::Result<Resource, String> {
        match (self.fields, self.first) {
            (1, Some((_, true))) => Ok(names.last.as_ref().expect("matched").1.clone()),
            (1, Some((body, false))) => {
                let r = names.resource(&mut self.pairs)?;
                names.last = Some((body, r.clone()));
                Ok(r)
            }
            _ => names.resource(&mut self.pairs),
        }
    }
}

impl<'a> Names<'a> {
    /// The resource `(name, quantity)` entries of one ask, interned.
    pub(crate) fn resource(
        &mut self,
        entries: &mut [(&'a str, i64)],
    ) -> std::result::Result<Resource, String> {
        let mut r = Resource::new();
        let mut unseen = false;
        for &(name, v) in entries.iter() {
            match self.id(name) {
                Some(id) => r.set(id, v),
                None => unseen = true,
            }
        }
        if unseen {
            // The new names in name order, as `Resource::from_pairs` takes
            // them from a decoded map: a full table refuses the same one.
            entries.sort_unstable_by_key(|e| e.0);
            for &(name, v) in entries.iter() {
                if self.id(name).is_none() {
                    let id = intern(name)?;
                    self.ids.push((name, id));
                    r.set(id, v);
                }
            }
        }
        Ok(r)
    }

    fn id(&self, name: &str) -> Option<ResId> {
        self.ids.iter().find(|(n, _)| *n == name).map(|(_, id)| *id)
    }
}

/// The string in `slot` when it equals `s`, else a new one left in `slot`:
/// consecutive messages of a request mostly name the same task group or
/// node.
pub(crate) fn share(slot: &mut Option<Arc<str>>, s: &str) -> Arc<str> {
    share_by(slot, s, |s| Arc::from(s))
}

/// [`share`] for an application id or a partition name, which earlier
/// requests from this thread have mostly sent already
/// ([`super::recent`]).
pub(crate) fn share_recent(slot: &mut Option<Arc<str>>, s: &str) -> Arc<str> {
    share_by(slot, s, super::recent::shared)
}

/// The string in `slot` when it equals `s`, else `make(s)`, left in `slot`.
#[inline]
fn share_by(slot: &mut Option<Arc<str>>, s: &str, make: fn(&str) -> Arc<str>) -> Arc<str> {
    match slot {
        Some(a) if &**a == s => a.clone(),
        _ => {
            let a = make(s);
            *slot = Some(a.clone());
            a
        }
    }
}

/// `si.v1.Quantity`: merges its value into `value`.
fn decode_quantity(mut buf: &[u8], value: &mut i64) -> Result<()> {
    while !buf.is_empty() {
        let (tag, wt) = decode_key(&mut buf).map_err(decode_error)?;
        match tag {
            1 => {
                expect(wt, WireType::Varint, "Quantity.value")?;
                *value = decode_varint(&mut buf).map_err(decode_error)? as i64;
            }
            _ => skip(wt, tag, &mut buf, depth::QUANTITY)?,
        }
    }
    Ok(())
}

/// One entry of `map<string, Quantity>`, merged into `entries` (a later
/// entry for the same name replaces an earlier one, as in a map).
fn decode_resource_entry<'a>(
    mut buf: &'a [u8],
    entries: &mut SmallVec<[(&'a str, i64); 4]>,
) -> Result<()> {
    let (mut name, mut value) = ("", 0i64);
    while !buf.is_empty() {
        let (tag, wt) = decode_key(&mut buf).map_err(decode_error)?;
        match tag {
            1 => {
                expect(wt, WireType::LengthDelimited, "Resource.resources key")?;
                name = read_str(&mut buf, "Resource.resources key")?;
            }
            2 => {
                expect(wt, WireType::LengthDelimited, "Resource.resources value")?;
                decode_quantity(read_len(&mut buf, "Resource.resources value")?, &mut value)?;
            }
            _ => skip(wt, tag, &mut buf, depth::RESOURCE_ENTRY)?,
        }
    }
    match entries.iter_mut().find(|(n, _)| *n == name) {
        Some(e) => e.1 = value,
        None => entries.push((name, value)),
    }
    Ok(())
}

/// `si.v1.Resource`, merged into `entries`.
pub(crate) fn decode_resource<'a>(
    mut buf: &'a [u8],
    entries: &mut SmallVec<[(&'a str, i64); 4]>,
) -> Result<()> {
    while !buf.is_empty() {
        let (tag, wt) = decode_key(&mut buf).map_err(decode_error)?;
        match tag {
            1 => {
                expect(wt, WireType::LengthDelimited, "Resource.resources")?;
                decode_resource_entry(read_len(&mut buf, "Resource.resources")?, entries)?;
            }
            _ => skip(wt, tag, &mut buf, depth::RESOURCE)?,
        }
    }
    Ok(())
}

/// `si.v1.AllocationAsk`, converted as [`AskRequest::from_proto`] does.
fn decode_ask<'a>(mut buf: &'a [u8], shared: &mut Shared<'a>) -> Result<AskRequest> {
    let (mut key, mut app, mut partition, mut task_group) = ("", "", "", "");
    let mut resource = AskResource::default();
    let mut max_allocations = 0i32;
    let mut priority: Option<si::Priority> = None;
    let mut tags = TagsBuilder::new();
    let mut placeholder = false;
    while !buf.is_empty() {
        let (tag, wt) = decode_key(&mut buf).map_err(decode_error)?;
        match tag {
            1 => {
                expect(wt, WireType::LengthDelimited, "AllocationAsk.allocationKey")?;
                key = read_str(&mut buf, "AllocationAsk.allocationKey")?;
            }
            2 => {
                expect(wt, WireType::LengthDelimited, "AllocationAsk.applicationID")?;
                app = read_str(&mut buf, "AllocationAsk.applicationID")?;
            }
            3 => {
                expect(wt, WireType::LengthDelimited, "AllocationAsk.partitionName")?;
                partition = read_str(&mut buf, "AllocationAsk.partitionName")?;
            }
            4 => {
                expect(wt, WireType::LengthDelimited, "AllocationAsk.resourceAsk")?;
                let body = read_len(&mut buf, "AllocationAsk.resourceAsk")?;
                resource.field(body, &shared.names)?;
            }
            5 => {
                expect(wt, WireType::Varint, "AllocationAsk.maxAllocations")?;
                max_allocations = decode_varint(&mut buf).map_err(decode_error)? as i32;
            }
            6 => {
                expect(wt, WireType::LengthDelimited, "AllocationAsk.priority")?;
                let body = read_len(&mut buf, "AllocationAsk.priority")?;
                decode_priority(body, &mut priority)?;
            }
            7 => {
                expect(
                    wt,
                    WireType::Varint,
                    "AllocationAsk.executionTimeoutMilliSeconds",
                )?;
                decode_varint(&mut buf).map_err(decode_error)?;
            }
            8 => {
                expect(wt, WireType::LengthDelimited, "AllocationAsk.tags")?;
                let body = read_len(&mut buf, "AllocationAsk.tags")?;
                decode_tag_entry(
                    body,
                    &mut tags,
                    ("AllocationAsk.tags key", "AllocationAsk.tags value"),
                )?;
            }
            9 => {
                expect(wt, WireType::LengthDelimited, "AllocationAsk.taskGroupName")?;
                task_group = read_str(&mut buf, "AllocationAsk.taskGroupName")?;
            }
            10 => {
                expect(wt, WireType::Varint, "AllocationAsk.placeholder")?;
                placeholder = decode_varint(&mut buf).map_err(decode_error)? != 0;
            }
            _ => skip(wt, tag, &mut buf, depth::ASK)?,
        }
    }
    let tags = tags.build().map_err(|_| not_utf8("AllocationAsk.tags"))?;
    Ok(AskRequest {
        key: Arc::from(key),
        app: share_recent(&mut shared.app, app),
        partition: share_recent(&mut shared.partition, partition),
        resource: resource.finish(&mut shared.names),
        max_allocations,
        priority: priority_of(priority.as_ref()),
        required_node: tags.get(TAG_REQUIRED_NODE).map(str::to_string),
        task_group: shared_str(task_group),
        placeholder,
        preempt_other: true,
        preempt_self: crate::scheduler::request::allow_preemption_tag(&tags),
        tags,
        originator: false,
    })
}

/// Merges the length-delimited field `AllocationRequest.<name>`, whose key
/// was read from `field_start` into `buf`, into `into` with prost, as the
/// field of an `M`: nested messages get prost's own recursion budget.
pub(crate) fn merge_field<M: Message + Default>(
    into: &mut Option<M>,
    wt: WireType,
    field_start: &[u8],
    buf: &mut &[u8],
    name: &str,
) -> Result<()> {
    let field = || format!("AllocationRequest.{name}");
    expect(wt, WireType::LengthDelimited, &field())?;
    read_len(buf, &field())?;
    let bytes = &field_start[..field_start.len() - buf.len()];
    into.get_or_insert_with(Default::default)
        .merge(bytes)
        .map_err(decode_error)
}

/// The rmID of an encoded `AllocationRequest` (the last one, as a decoder
/// merges), found by skipping over the other top-level fields without
/// decoding them; `None` when the top level is malformed (the full decode
/// then reports why). Lets the caller refuse an unregistered RM before
/// anything of the request, resource names in particular, is taken in.
pub fn peek_rm_id(mut buf: &[u8]) -> Option<&str> {
    let mut rm_id = "";
    while !buf.is_empty() {
        let (tag, wt) = decode_key(&mut buf).ok()?;
        if tag == 3 && wt == WireType::LengthDelimited {
            rm_id = read_str(&mut buf, "AllocationRequest.rmID").ok()?;
        } else {
            skip(wt, tag, &mut buf, depth::REQUEST).ok()?;
        }
    }
    Some(rm_id)
}

/// Decodes an encoded `si.v1.AllocationRequest` straight into an
/// [`AllocationUpdate`]: the same result as decoding it with prost and
/// converting it with [`AllocationUpdate::from_proto`], and an error for
/// every buffer prost refuses.
pub fn decode_allocation_update(mut buf: &[u8]) -> Result<AllocationUpdate> {
    // An encoded ask takes some 60 bytes or more: room for all of them at once.
    let mut asks = Vec::with_capacity(buf.len() / 64);
    // Releases are decoded by prost as the field of a request, so nested
    // messages get prost's own recursion budget.
    let mut with_releases: Option<si::AllocationRequest> = None;
    let mut rm_id = "";
    let mut shared = Shared::default();
    while !buf.is_empty() {
        let field_start = buf;
        let (tag, wt) = decode_key(&mut buf).map_err(decode_error)?;
        match tag {
            1 => {
                expect(wt, WireType::LengthDelimited, "AllocationRequest.asks")?;
                let body = read_len(&mut buf, "AllocationRequest.asks")?;
                asks.push(decode_ask(body, &mut shared)?);
            }
            2 => merge_field(&mut with_releases, wt, field_start, &mut buf, "releases")?,
            3 => {
                expect(wt, WireType::LengthDelimited, "AllocationRequest.rmID")?;
                rm_id = read_str(&mut buf, "AllocationRequest.rmID")?;
            }
            _ => skip(wt, tag, &mut buf, depth::REQUEST)?,
        }
    }
    Ok(AllocationUpdate {
        rm_id: rm_id.to_string(),
        asks,
        placed: Vec::new(),
        foreign: Vec::new(),
        releases: with_releases.and_then(|r| r.releases),
    })
}

/// Byte-level helpers for the decoders' tests (this one's and v1's).
#[cfg(test)]
pub(crate) mod test_bytes {
    use prost::encoding::{encode_key, encode_varint, WireType};

    use crate::scheduler::request::AllocationUpdate;

    /// The asks of two requests decoded in turn on one thread, for
    /// applications `app-1`, `app-2`, `app-1`, then `app-2`, all in one
    /// partition: each string is shared, within a request and across.
    pub fn assert_app_and_partition_shared(one: &AllocationUpdate, two: &AllocationUpdate) {
        use std::sync::Arc;
        assert!(Arc::ptr_eq(&one.asks[0].app, &one.asks[2].app));
        assert!(Arc::ptr_eq(&one.asks[1].app, &two.asks[0].app));
        assert!(Arc::ptr_eq(&one.asks[0].partition, &two.asks[0].partition));
        let apps: Vec<&str> = one.asks.iter().chain(&two.asks).map(|a| &*a.app).collect();
        assert_eq!(apps, ["app-1", "app-2", "app-1", "app-2"]);
    }

    /// `levels` nested empty groups of an unknown field.
    pub fn groups(levels: usize) -> Vec<u8> {
        let mut b = Vec::new();
        for _ in 0..levels {
            encode_key(77, WireType::StartGroup, &mut b);
        }
        for _ in 0..levels {
            encode_key(77, WireType::EndGroup, &mut b);
        }
        b
    }

    /// A length-delimited field.
    pub fn len_field(tag: u32, body: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        encode_key(tag, WireType::LengthDelimited, &mut b);
        encode_varint(body.len() as u64, &mut b);
        b.extend_from_slice(body);
        b
    }

    /// The resource fields of one ask, drawn from a few bodies: alike ones
    /// most often, sometimes none, two or three, a type met first here, an
    /// empty body, a type twice. Whatever the mix, the reuse of the
    /// previous ask's resource (`AskResource`) must decode as prost does.
    pub fn alike_resource_fields(rng: &mut fastrand::Rng) -> Vec<Vec<u8>> {
        let entry = |name: &[u8], q: u64| {
            let mut quantity = Vec::new();
            encode_key(1, WireType::Varint, &mut quantity);
            encode_varint(q, &mut quantity);
            len_field(1, &[len_field(1, name), len_field(2, &quantity)].concat())
        };
        let pool = [
            [entry(b"memory", 10), entry(b"vcore", 1)].concat(),
            [entry(b"memory", 10), entry(b"vcore", 1)].concat(),
            entry(b"memory", 20),
            [entry(b"nvidia.com/gpu", 1), entry(b"memory", 10)].concat(),
            Vec::new(),
            [entry(b"vcore", 1), entry(b"vcore", 2)].concat(),
        ];
        let fields = [1, 1, 1, 0, 2, 3][rng.usize(0..6)];
        (0..fields)
            .map(|_| pool[rng.usize(0..pool.len())].clone())
            .collect()
    }

    /// One random corruption of non-empty `bytes`, of the first `kinds` of:
    /// truncated, a byte changed, a byte inserted, a run of bytes that are
    /// never valid UTF-8 on their own.
    pub fn corrupt(rng: &mut fastrand::Rng, bytes: &mut Vec<u8>, kinds: u8) {
        let i = rng.usize(0..bytes.len());
        match rng.u8(0..kinds) {
            0 => bytes.truncate(i),
            1 => bytes[i] = rng.u8(..),
            2 => bytes.insert(i, rng.u8(..)),
            _ => {
                let end = (i + rng.usize(1..4)).min(bytes.len());
                for b in &mut bytes[i..end] {
                    *b = [0xff, 0x80, 0xc3][rng.usize(0..3)];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
