//! The UUIDs a partition mints for its allocations (SI v0.12), made so
//! that each names the slab slot its allocation is stored in.
//!
//! A lookup by such a UUID reads the slot it names and compares the UUID
//! held there: no hash index entry is made for it. Inserting into a hash
//! index of a million allocations touches a random cache line and page
//! each time, and was a third of the core thread's time at 100,000 nodes
//! and 1,000,000 asks (docs/performance-index.md, "UUIDs that name their
//! slot").
//!
//! Each UUID keeps the version-4 layout an RM expects: the version nibble
//! and the RFC 4122 variant bits are set, and no two share a visible
//! pattern. The low 62 bits are the slot and a per-slot generation, mixed
//! with a random key by a bijection. The high 64 bits are a hash of the
//! low ones under a second random key (the salt): a UUID whose high half
//! does not match was not minted here (a foreign one passes with odds of
//! 2^-60). The generation grows with each UUID minted for a slot, so a
//! slot that is reused gets a UUID never minted before (until 2^30 UUIDs
//! for one slot).

/// The bits below the variant.
const LOW62: u64 = (1 << 62) - 1;
/// Bits of the generation in the mixed value; the slot takes the rest.
const GEN_BITS: u32 = 30;
const GEN_MASK: u32 = (1 << GEN_BITS) - 1;
/// Odd multipliers (from splitmix64): multiplying by one is a bijection
/// modulo 2^62.
const K1: u64 = 0x9e37_79b9_7f4a_7c15;
const K2: u64 = 0xbf58_476d_1ce4_e5b9;
const K1_INV: u64 = inverse(K1);
const K2_INV: u64 = inverse(K2);

/// The inverse of odd `k` modulo 2^64 (Newton's method: each step doubles
/// the correct low bits, from the 3 that `k` itself gets right).
const fn inverse(k: u64) -> u64 {
    let mut inv = k;
    let mut i = 0;
    while i < 5 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(k.wrapping_mul(inv)));
        i += 1;
    }
    inv
}

/// A bijection of the 62-bit values.
fn scramble(mut x: u64) -> u64 {
    x = x.wrapping_mul(K1) & LOW62;
    x ^= x >> 31;
    x = x.wrapping_mul(K2) & LOW62;
    x ^ (x >> 31)
}

/// The high half of the UUID whose low half is `low`: splitmix64's
/// finalizer of `low` and `salt`, with the version-4 nibble.
fn high(low: u64, salt: u64) -> u64 {
    let mut x = low ^ salt;
    x = (x ^ (x >> 30)).wrapping_mul(K2);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    (x & !0xf000) | 0x4000
}

/// The inverse of [`scramble`]: a shift of at least half the width undoes
/// itself.
fn unscramble(mut y: u64) -> u64 {
    y ^= y >> 31;
    y = y.wrapping_mul(K2_INV) & LOW62;
    y ^= y >> 31;
    y.wrapping_mul(K1_INV) & LOW62
}

/// Mints UUIDs that name a slot, and reads the slot back from one.
#[derive(Debug)]
pub struct SlotUuids {
    /// The key of the high half's hash.
    salt: u64,
    /// Mixed into the slot and generation before scrambling.
    key: u64,
    /// Per slot, the generation of the last UUID minted for it.
    generations: Vec<u32>,
}

impl Default for SlotUuids {
    fn default() -> Self {
        let random = uuid::Uuid::new_v4().as_u128();
        SlotUuids {
            salt: (random >> 64) as u64,
            key: random as u64 & LOW62,
            generations: Vec::new(),
        }
    }
}

impl SlotUuids {
    /// A UUID for slot `slot` that none minted here before had.
    pub fn mint(&mut self, slot: u32) -> [u8; 16] {
        let i = slot as usize;
        if self.generations.len() <= i {
            self.generations.resize(i + 1, 0);
        }
        let generation = self.generations[i].wrapping_add(1) & GEN_MASK;
        self.generations[i] = generation;
        self.encode(slot, generation)
    }

    /// The UUID of generation `generation` of slot `slot`.
    fn encode(&self, slot: u32, generation: u32) -> [u8; 16] {
        let mixed = ((u64::from(slot) << GEN_BITS) | u64::from(generation)) ^ self.key;
        let low = (0b10 << 62) | scramble(mixed);
        ((u128::from(high(low, self.salt)) << 64) | u128::from(low)).to_be_bytes()
    }

    /// The slot `bits` names, when it was minted here (whether that slot
    /// holds it still is the caller's to check).
    pub fn slot_of(&self, bits: &[u8; 16]) -> Option<u32> {
        let v = u128::from_be_bytes(*bits);
        let low = v as u64;
        if low >> 62 != 0b10 || (v >> 64) as u64 != high(low, self.salt) {
            return None;
        }
        let mixed = unscramble(low & LOW62) ^ self.key;
        Some((mixed >> GEN_BITS) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn scrambling_is_undone_over_the_whole_range() {
        assert_eq!(K1.wrapping_mul(K1_INV), 1);
        assert_eq!(K2.wrapping_mul(K2_INV), 1);
        let mut rng = fastrand::Rng::with_seed(7);
        let edges = [0, 1, LOW62, LOW62 - 1, 1 << 61, (1 << 31) - 1, 1 << 31];
        for x in edges
            .into_iter()
            .chain((0..100_000).map(|_| rng.u64(..) & LOW62))
        {
            let y = scramble(x);
            assert!(y <= LOW62, "{x:#x} -> {y:#x}");
            assert_eq!(unscramble(y), x, "{x:#x}");
        }
    }

    #[test]
    fn a_minted_uuid_is_version_4_and_names_its_slot() {
        let mut t = SlotUuids::default();
        let mut seen = HashSet::new();
        for slot in [0, 1, 2, 1_000_000] {
            for _ in 0..3 {
                let bits = t.mint(slot);
                let u = uuid::Uuid::from_bytes(bits);
                assert_eq!(u.get_version_num(), 4, "{u}");
                assert_eq!(u.get_variant(), uuid::Variant::RFC4122, "{u}");
                assert_eq!(t.slot_of(&bits), Some(slot), "{u}");
                // A slot minted for again gets a UUID of its own.
                assert!(seen.insert(bits), "{u} minted twice");
            }
        }
    }

    #[test]
    fn every_slot_and_generation_reads_back() {
        let t = SlotUuids::default();
        for slot in [0, 1, 1 << 31, u32::MAX - 1, u32::MAX] {
            for generation in [0, 1, GEN_MASK - 1, GEN_MASK] {
                assert_eq!(t.slot_of(&t.encode(slot, generation)), Some(slot));
            }
        }
        // The generation wraps within its bits.
        let mut t = SlotUuids {
            generations: vec![GEN_MASK],
            ..SlotUuids::default()
        };
        assert_eq!(t.mint(0), t.encode(0, 0));
    }

    #[test]
    fn consecutive_uuids_share_no_pattern() {
        let mut t = SlotUuids::default();
        let minted: Vec<u128> = (0..64).map(|s| u128::from_be_bytes(t.mint(s))).collect();
        // A counter, or a prefix kept, would leave neighbours differing
        // in a few bits of either half.
        for half in [64, 0] {
            let bits: Vec<u64> = minted.iter().map(|v| (v >> half) as u64).collect();
            let close = bits
                .windows(2)
                .filter(|w| (w[0] ^ w[1]).count_ones() < 16)
                .count();
            assert!(
                close < 4,
                "{close} of 63 neighbours differ in under 16 bits"
            );
        }
    }

    #[test]
    fn another_tables_or_a_random_uuid_names_no_slot() {
        let (mut a, b) = (SlotUuids::default(), SlotUuids::default());
        let bits = a.mint(5);
        assert_eq!(b.slot_of(&bits), None);
        for _ in 0..1000 {
            assert_eq!(a.slot_of(uuid::Uuid::new_v4().as_bytes()), None);
        }
        // Any bit changed in either half makes it foreign.
        for bit in [0, 60, 64, 100, 127] {
            let v = u128::from_be_bytes(bits) ^ (1 << bit);
            assert_eq!(a.slot_of(&v.to_be_bytes()), None, "bit {bit}");
        }
    }
}
