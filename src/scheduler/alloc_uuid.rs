//! An allocation's UUID, held compactly: the ones the core mints (and any
//! an RM gives that is a canonical lowercase hyphenated UUID) as their 16
//! bytes, any other string an RM gives as that string, shared. Two UUIDs
//! are equal when their texts are, whichever form they came in, and the
//! text is what the RM, REST and the events see: the form is a function
//! of the text, so comparing forms compares texts.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

pub use super::uuid_text::TEXT_LEN;

/// An allocation's UUID (SI v1.x: its key).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct AllocUuid(Repr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    /// A canonical UUID: its bytes (the text's hex digits, in order).
    Bits([u8; 16]),
    /// Any other string, as given: never a canonical UUID's text.
    Str(Arc<str>),
}

/// An RM's string as the index looks it up: the 16 bytes of a canonical
/// UUID or the string itself, without copying it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum UuidRef<'a> {
    /// A canonical UUID's bytes.
    Bits([u8; 16]),
    /// Any other string.
    Str(&'a str),
}

impl<'a> UuidRef<'a> {
    /// What the index hashes: a canonical UUID's 16 bytes or the string's
    /// own. The two forms never name one UUID, so bytes alike in both only
    /// share a hash, which the comparison then tells apart.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            UuidRef::Bits(b) => b,
            UuidRef::Str(s) => s.as_bytes(),
        }
    }

    /// The form `s` is held in.
    pub fn of(s: &'a str) -> Self {
        match parse_canonical(s) {
            Some(b) => UuidRef::Bits(b),
            None => UuidRef::Str(s),
        }
    }
}

/// What the index looks a UUID up by: an RM's string or a held UUID.
pub trait AsUuidRef {
    /// The form it is held in.
    fn uuid_ref(&self) -> UuidRef<'_>;
}

impl AsUuidRef for str {
    fn uuid_ref(&self) -> UuidRef<'_> {
        UuidRef::of(self)
    }
}

impl AsUuidRef for String {
    fn uuid_ref(&self) -> UuidRef<'_> {
        UuidRef::of(self)
    }
}

impl AsUuidRef for Arc<str> {
    fn uuid_ref(&self) -> UuidRef<'_> {
        UuidRef::of(self)
    }
}

impl AsUuidRef for AllocUuid {
    fn uuid_ref(&self) -> UuidRef<'_> {
        self.as_ref()
    }
}

impl<T: AsUuidRef + ?Sized> AsUuidRef for &T {
    fn uuid_ref(&self) -> UuidRef<'_> {
        (**self).uuid_ref()
    }
}

/// The bytes of `s` if it is a canonical lowercase hyphenated UUID (the
/// only 36-character form the `uuid` crate reads; an uppercase text is
/// kept as given, so that it reads back as the RM sent it).
#[inline]
fn parse_canonical(s: &str) -> Option<[u8; 16]> {
    // Inline: most RMs' keys are not 36 bytes long, and return here.
    if s.len() != TEXT_LEN {
        return None;
    }
    parse_36(s)
}

/// [`parse_canonical`] of a text of the canonical length.
fn parse_36(s: &str) -> Option<[u8; 16]> {
    super::uuid_text::parse(s.as_bytes().try_into().ok()?)
}

/// Writes the canonical text of `bits` into `buf`.
fn write_canonical<'b>(bits: &[u8; 16], buf: &'b mut [u8; TEXT_LEN]) -> &'b str {
    std::str::from_utf8(super::uuid_text::write(bits, buf)).expect("hex digits and hyphens")
}

impl AllocUuid {
    /// A new random (version 4) UUID.
    pub fn new_v4() -> Self {
        AllocUuid(Repr::Bits(uuid::Uuid::new_v4().into_bytes()))
    }

    /// The UUID with these 16 bytes (one the core minted).
    pub(crate) fn from_bits(bits: [u8; 16]) -> Self {
        AllocUuid(Repr::Bits(bits))
    }

    /// The UUID an RM gave as `s`: its bytes when canonical, else a copy
    /// of the string.
    pub fn from_rm(s: &str) -> Self {
        match parse_canonical(s) {
            Some(b) => AllocUuid(Repr::Bits(b)),
            None => AllocUuid(Repr::Str(Arc::from(s))),
        }
    }

    /// The UUID an RM gave as the shared string `s` (SI v1.x: the
    /// allocation key): its bytes when canonical, else `s` itself, shared
    /// and not copied.
    pub fn from_shared(s: &Arc<str>) -> Self {
        match parse_canonical(s) {
            Some(b) => AllocUuid(Repr::Bits(b)),
            None => AllocUuid(Repr::Str(s.clone())),
        }
    }

    /// The form the index looks it up in.
    pub fn as_ref(&self) -> UuidRef<'_> {
        match &self.0 {
            Repr::Bits(b) => UuidRef::Bits(*b),
            Repr::Str(s) => UuidRef::Str(s),
        }
    }

    /// The shared string, when it is held as one.
    pub fn shared(&self) -> Option<&Arc<str>> {
        match &self.0 {
            Repr::Bits(_) => None,
            Repr::Str(s) => Some(s),
        }
    }

    /// The text, written into `buf` when it is not held as text.
    pub fn as_str<'b>(&'b self, buf: &'b mut [u8; TEXT_LEN]) -> &'b str {
        match &self.0 {
            Repr::Bits(b) => write_canonical(b, buf),
            Repr::Str(s) => s,
        }
    }

    /// The text's bytes (UTF-8), written into `buf` when it is not held
    /// as text: what an encoder copies, without checking it again.
    pub fn as_bytes<'b>(&'b self, buf: &'b mut [u8; TEXT_LEN]) -> &'b [u8] {
        match &self.0 {
            Repr::Bits(b) => super::uuid_text::write(b, buf),
            Repr::Str(s) => s.as_bytes(),
        }
    }

    /// The text's length in bytes.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Bits(_) => TEXT_LEN,
            Repr::Str(s) => s.len(),
        }
    }

    /// Whether the text is empty (an RM's empty string; never minted).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl From<&str> for AllocUuid {
    fn from(s: &str) -> Self {
        AllocUuid::from_rm(s)
    }
}

impl From<String> for AllocUuid {
    fn from(s: String) -> Self {
        AllocUuid::from_rm(&s)
    }
}

impl fmt::Display for AllocUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str(&mut [0; TEXT_LEN]))
    }
}

impl fmt::Debug for AllocUuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(&mut [0; TEXT_LEN]), f)
    }
}

impl PartialEq<str> for AllocUuid {
    fn eq(&self, other: &str) -> bool {
        self.as_ref() == UuidRef::of(other)
    }
}

impl PartialEq<&str> for AllocUuid {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

/// By text, as the strings they stand for sort (REST lists, released
/// allocations): canonical texts sort as their bytes do.
impl Ord for AllocUuid {
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.0, &other.0) {
            (Repr::Bits(a), Repr::Bits(b)) => a.cmp(b),
            (Repr::Str(a), Repr::Str(b)) => a.cmp(b),
            _ => {
                let (mut x, mut y) = ([0; TEXT_LEN], [0; TEXT_LEN]);
                self.as_str(&mut x).cmp(other.as_str(&mut y))
            }
        }
    }
}

impl PartialOrd for AllocUuid {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl serde::Serialize for AllocUuid {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str(&mut [0; TEXT_LEN]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    const CANON: &str = "6f1c9a52-2a0b-4a39-9d7e-0c1f3b8b7a11";

    #[test]
    fn a_canonical_uuid_is_held_as_its_bytes_and_reads_back_as_given() {
        let u = AllocUuid::from_rm(CANON);
        assert!(matches!(u.0, Repr::Bits(_)));
        assert_eq!(u.to_string(), CANON);
        assert_eq!(u.len(), 36);
        assert_eq!(format!("{u:?}"), format!("{CANON:?}"));
        assert_eq!(u, *CANON);
        // The shared form of the same text is the same UUID.
        assert_eq!(AllocUuid::from_shared(&Arc::from(CANON)), u);
    }

    #[test]
    fn minted_uuids_are_canonical_version_4_and_round_trip() {
        let mut seen = HashSet::new();
        for _ in 0..100 {
            let u = AllocUuid::new_v4();
            let text = u.to_string();
            assert_eq!(text.len(), 36);
            assert_eq!(&text[14..15], "4", "{text}");
            assert!(text
                .bytes()
                .all(|c| c == b'-' || c.is_ascii_digit() || (b'a'..=b'f').contains(&c)));
            assert_eq!(AllocUuid::from_rm(&text), u);
            assert_eq!(UuidRef::of(&text), u.as_ref());
            assert!(seen.insert(u));
        }
    }

    #[test]
    fn any_other_string_is_kept_as_given() {
        let upper = CANON.to_uppercase();
        for s in [
            "ask-1",
            "",
            upper.as_str(),
            "6f1c9a52-2a0b-4a39-9d7e-0c1f3b8b7a1", // one digit short
            "6f1c9a52-2a0b-4a39-9d7e-0c1f3b8b7a111", // one too many
            "6f1c9a52_2a0b_4a39_9d7e_0c1f3b8b7a11", // not hyphens
            "6f1c9a52-2a0b-4a39-9d7e-0c1f3b8b7a1g", // not hex
            "6f1c9a522a0b4a399d7e0c1f3b8b7a11",    // no hyphens
        ] {
            let u = AllocUuid::from_rm(s);
            assert!(matches!(u.0, Repr::Str(_)), "{s}");
            assert_eq!(u.to_string(), s);
            assert_eq!(u.len(), s.len());
            assert_eq!(u, *s);
            assert_ne!(u, *CANON);
            assert_eq!(UuidRef::of(s), UuidRef::Str(s));
        }
        // A different case is a different UUID, as it was as a string.
        assert_ne!(AllocUuid::from_rm(&upper), AllocUuid::from_rm(CANON));
    }

    #[test]
    fn a_shared_key_is_shared_not_copied() {
        let key: Arc<str> = Arc::from("ask-7");
        let u = AllocUuid::from_shared(&key);
        match &u.0 {
            Repr::Str(s) => assert!(Arc::ptr_eq(s, &key)),
            Repr::Bits(_) => panic!("not a UUID"),
        }
    }

    #[test]
    fn a_hostile_long_string_is_kept_whole_and_costs_nothing_to_classify() {
        let long = "f".repeat(1 << 20);
        let u = AllocUuid::from_rm(&long);
        assert_eq!(u.len(), 1 << 20);
        assert_eq!(u.to_string(), long);
        assert_eq!(u, *long.as_str());
        // Hyphens where a UUID has them, at a length that is not one.
        let almost = format!("{CANON}{}", "-".repeat(1000));
        assert_eq!(AllocUuid::from_rm(&almost).to_string(), almost);
        // Multi-byte characters: never canonical, never split.
        let wide = "é".repeat(18);
        assert_eq!(wide.len(), 36);
        assert_eq!(AllocUuid::from_rm(&wide).to_string(), wide);
    }

    #[test]
    fn order_is_the_texts_order_across_forms() {
        let texts = [
            "00000000-0000-4000-8000-000000000000",
            CANON,
            "6f1c9a52-2a0b-4a39-9d7e-0c1f3b8b7a11x",
            "ffffffff-ffff-4fff-bfff-ffffffffffff",
            "ask-1",
            "ASK",
            "zz",
        ];
        let mut by_uuid: Vec<AllocUuid> = texts.iter().map(|s| AllocUuid::from_rm(s)).collect();
        by_uuid.sort();
        let mut by_text: Vec<&str> = texts.to_vec();
        by_text.sort();
        let got: Vec<String> = by_uuid.iter().map(|u| u.to_string()).collect();
        assert_eq!(got, by_text);
    }

    #[test]
    fn the_compact_form_is_24_bytes() {
        // 16 bytes and a tag, or a shared string: what the allocation
        // record's budget counts on (outcome.rs).
        assert_eq!(std::mem::size_of::<AllocUuid>(), 24);
    }
}
