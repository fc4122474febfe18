//! The tags of an ask and of the allocations made for it (SI `tags`,
//! `allocationTags`): string pairs sorted by key, immutable once built,
//! in one buffer.
//!
//! The k8shim tags every pod's ask with about five (namespace, pod name,
//! the pod's labels, its creation time). As a `BTreeMap<String, String>`
//! those were eleven allocations, made on the RM's thread while decoding
//! and freed on the core thread when the allocation went (mimalloc's
//! cross-thread path, dearer than the allocation). Here they are two (the
//! shared record and its text), and no tags are none. A look-up tests a
//! mask of the keys' lengths, then scans the keys comparing lengths first
//! (a binary search past eight pairs); iteration is in key order, as the
//! map's.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use smallvec::SmallVec;

/// An ask's tags (see the module doc). Cloning shares them.
#[derive(Clone, Default)]
pub struct Tags(Option<Arc<Held>>);

struct Held {
    /// Bit `n % 64` is set when some key is `n` bytes long: the usual
    /// look-up, of a key that is not there (`requiredNode`, `foreign`),
    /// is one test.
    key_lens: u64,
    /// Where each key and its value end in `text`: pair `i` is
    /// `text[ends[i-1].1..ends[i].0]` and `text[ends[i].0..ends[i].1]`.
    ends: SmallVec<[(usize, usize); 6]>,
    text: Box<str>,
}

impl Tags {
    /// No tags.
    pub fn new() -> Self {
        Tags(None)
    }

    /// How many pairs there are.
    #[inline]
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |h| h.ends.len())
    }

    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The pairs in key order.
    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        match self.0.as_deref() {
            Some(h) => Iter {
                text: &h.text,
                ends: h.ends.iter(),
                start: 0,
            },
            None => Iter {
                text: "",
                ends: [].iter(),
                start: 0,
            },
        }
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&str> {
        let held = self.0.as_deref()?;
        if held.key_lens & key_len_bit(key.len()) == 0 {
            return None;
        }
        let ends = &held.ends[..];
        // A pod's few tags: comparing lengths first rejects most of them
        // at once (the usual look-up is of a key that is not there).
        if ends.len() <= 8 {
            let mut start = 0;
            for &(key_end, end) in ends {
                if key_end - start == key.len()
                    && held.text.as_bytes()[start..key_end] == *key.as_bytes()
                {
                    return Some(&held.text[key_end..end]);
                }
                start = end;
            }
            return None;
        }
        let (mut lo, mut hi) = (0, ends.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let start = if mid == 0 { 0 } else { ends[mid - 1].1 };
            let (key_end, end) = ends[mid];
            let k = &held.text[start..key_end];
            match k.cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(&held.text[key_end..end]),
            }
        }
        None
    }

    /// Whether `key` is there.
    #[inline]
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The pairs as a map (for the wire types, which hold one).
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

/// A key length's bit in [`Held::key_lens`].
#[inline]
fn key_len_bit(len: usize) -> u64 {
    1 << (len % 64)
}

/// The pairs of [`Tags`] in key order.
pub struct Iter<'a> {
    text: &'a str,
    ends: std::slice::Iter<'a, (usize, usize)>,
    /// Where the next key starts.
    start: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a str);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let &(key_end, end) = self.ends.next()?;
        let pair = (&self.text[self.start..key_end], &self.text[key_end..end]);
        self.start = end;
        Some(pair)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.ends.size_hint()
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// Collects pairs in the order sent; a later pair with a key already sent
/// replaces the earlier one, as a protobuf map field merges.
///
/// Pairs may come as bytes not yet checked to be UTF-8 (a decoder's
/// slices of a request): [`Self::build`] checks the text once, rather
/// than each of a pod's ten strings on its own.
#[derive(Default)]
pub struct TagsBuilder<'a> {
    pairs: SmallVec<[(&'a [u8], &'a [u8]); 8]>,
}

/// Some key or value pushed as bytes is not UTF-8.
#[derive(Debug, PartialEq, Eq)]
pub struct NotUtf8;

impl<'a> TagsBuilder<'a> {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a pair.
    pub fn push(&mut self, key: &'a str, value: &'a str) {
        self.pairs.push((key.as_bytes(), value.as_bytes()));
    }

    /// Adds a pair whose bytes [`Self::build`] checks.
    #[inline]
    pub fn push_bytes(&mut self, key: &'a [u8], value: &'a [u8]) {
        self.pairs.push((key, value));
    }

    /// The tags; `Err` when a pair pushed as bytes is not UTF-8.
    #[inline]
    pub fn build(self) -> Result<Tags, NotUtf8> {
        if self.pairs.is_empty() {
            return Ok(Tags(None));
        }
        self.build_held()
    }

    fn build_held(mut self) -> Result<Tags, NotUtf8> {
        // Stable: among equal keys the order sent stays, and the last wins.
        self.pairs.sort_by(|a, b| a.0.cmp(b.0));
        let pairs = &self.pairs;
        let kept = |i: usize| pairs.get(i + 1).is_none_or(|next| next.0 != pairs[i].0);
        let len = (0..pairs.len())
            .filter(|&i| kept(i))
            .map(|i| pairs[i].0.len() + pairs[i].1.len())
            .sum();
        let mut text = Vec::with_capacity(len);
        let mut ends: SmallVec<[(usize, usize); 6]> = SmallVec::new();
        let mut key_lens = 0;
        for (i, (k, v)) in pairs.iter().enumerate() {
            if kept(i) {
                key_lens |= key_len_bit(k.len());
                text.extend_from_slice(k);
                let key_end = text.len();
                text.extend_from_slice(v);
                ends.push((key_end, text.len()));
            } else if std::str::from_utf8(v).is_err() {
                // Replaced, but sent: a decoder refuses it all the same.
                return Err(NotUtf8);
            }
        }
        // Valid text cut only at character boundaries is valid pieces
        // (a piece ending in half a character could join the next one).
        let text = String::from_utf8(text).map_err(|_| NotUtf8)?;
        if !ends
            .iter()
            .all(|&(k, e)| text.is_char_boundary(k) && text.is_char_boundary(e))
        {
            return Err(NotUtf8);
        }
        Ok(Tags(Some(Arc::new(Held {
            key_lens,
            ends,
            text: text.into_boxed_str(),
        }))))
    }
}

impl<'a, K: AsRef<str> + ?Sized + 'a, V: AsRef<str> + ?Sized + 'a> FromIterator<(&'a K, &'a V)>
    for Tags
{
    fn from_iter<I: IntoIterator<Item = (&'a K, &'a V)>>(iter: I) -> Self {
        let mut b = TagsBuilder::new();
        for (k, v) in iter {
            b.push(k.as_ref(), v.as_ref());
        }
        b.build().expect("pushed as strings")
    }
}

impl From<&BTreeMap<String, String>> for Tags {
    fn from(map: &BTreeMap<String, String>) -> Self {
        map.iter().collect()
    }
}

impl From<BTreeMap<String, String>> for Tags {
    fn from(map: BTreeMap<String, String>) -> Self {
        Tags::from(&map)
    }
}

impl PartialEq for Tags {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Tags {}

impl fmt::Debug for Tags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl serde::Serialize for Tags {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_deduplicated_last_wins_like_a_map() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..2_000 {
            let keys: Vec<String> = (0..rng.usize(0..12))
                .map(|_| {
                    let n = rng.usize(0..4);
                    (0..n)
                        .map(|_| rng.choice(['a', 'b', 'é', '/']).unwrap())
                        .collect()
                })
                .collect();
            let values: Vec<String> = keys.iter().map(|_| rng.u16(..).to_string()).collect();
            let mut map = BTreeMap::new();
            let mut b = TagsBuilder::new();
            for (k, v) in keys.iter().zip(&values) {
                map.insert(k.clone(), v.clone());
                b.push(k, v);
            }
            let tags = b.build().unwrap();
            assert_eq!(tags.len(), map.len());
            assert_eq!(tags.is_empty(), map.is_empty());
            assert!(tags
                .iter()
                .eq(map.iter().map(|(k, v)| (k.as_str(), v.as_str()))));
            assert_eq!(tags.to_map(), map);
            for k in keys.iter().map(String::as_str).chain(["zz", "", "a/"]) {
                assert_eq!(tags.get(k), map.get(k).map(String::as_str), "{k:?}");
                assert_eq!(tags.contains_key(k), map.contains_key(k));
            }
            assert_eq!(Tags::from(&map), tags);
            assert_eq!(
                serde_json::to_value(&tags).unwrap(),
                serde_json::to_value(&map).unwrap()
            );
            assert_eq!(format!("{tags:?}"), format!("{map:?}"));
        }
    }

    #[test]
    fn no_tags_hold_nothing() {
        let t = TagsBuilder::new().build().unwrap();
        assert!(t.is_empty() && t.0.is_none());
        assert_eq!(t, Tags::new());
        assert_eq!(t.get(""), None);
        assert_eq!(t.iter().len(), 0);
    }

    #[test]
    fn bytes_are_checked_each_on_its_own() {
        let e = "é".as_bytes();
        let good: &[(&[u8], &[u8])] = &[(b"k", e), (e, b""), (b"a", b"b")];
        let mut b = TagsBuilder::new();
        for (k, v) in good {
            b.push_bytes(k, v);
        }
        let t = b.build().unwrap();
        assert_eq!(t.get("k"), Some("é"));
        assert_eq!(t.get("é"), Some(""));
        // Invalid alone, valid joined: the first half of "é" as a key, the
        // second half as its value.
        let mut b = TagsBuilder::new();
        b.push_bytes(&e[..1], &e[1..]);
        assert_eq!(b.build(), Err(NotUtf8));
        let mut b = TagsBuilder::new();
        b.push_bytes(b"k", &[0xff]);
        assert_eq!(b.build(), Err(NotUtf8));
        // The same pieces across two pairs.
        let mut b = TagsBuilder::new();
        b.push_bytes(b"a", &e[..1]);
        b.push_bytes(&e[1..], b"");
        assert_eq!(b.build(), Err(NotUtf8));
        // A bad value replaced by a later one with its key was still sent:
        // refused, as protobuf decoders refuse it.
        let mut b = TagsBuilder::new();
        b.push_bytes(b"k", &[0xff]);
        b.push_bytes(b"k", b"ok");
        assert_eq!(b.build(), Err(NotUtf8));
    }

    #[test]
    fn key_lengths_that_share_a_bit_are_told_apart() {
        let long = "x".repeat(65);
        let t: Tags = [(long.as_str(), "65"), ("ab", "2")].into_iter().collect();
        assert_eq!(t.get(&long), Some("65"));
        assert_eq!(t.get("y"), None); // 1 = 65 % 64
        assert_eq!(t.get("ab"), Some("2"));
        assert_eq!(t.get("abc"), None);
        assert_eq!(t.get(&"y".repeat(66)), None); // 66 % 64 = 2, as "ab"
    }

    #[test]
    fn an_empty_key_and_value_are_a_pair() {
        let mut b = TagsBuilder::new();
        b.push("", "");
        let t = b.build().unwrap();
        assert_eq!((t.len(), t.get("")), (1, Some("")));
        assert!(!t.is_empty());
    }
}
