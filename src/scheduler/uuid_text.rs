//! The canonical text of a UUID (36 bytes: lowercase hex digits in groups
//! of 8-4-4-4-12, joined by hyphens), read with branch-free byte steps the
//! compiler vectorises and written eight digits at a time in a `u64`.
//!
//! The `uuid` crate reads and writes the same text a character at a time
//! through lookup tables: ~155 and ~125 instructions in the bench, where
//! these take ~80 and ~110.
//! Every pod a k8shim sends is keyed by its UID, read twice on the core
//! thread (the key's check and the allocation's record), and every
//! allocation the v0.12 edition mints is written once when reported.
//! `faster-hex` does the hex part as fast, but needs a newer Rust than
//! ours (docs/dependencies.md). The tests compare both directions with the
//! `uuid` crate, byte by byte over every value at every position.

/// The length of a canonical UUID's text.
pub const TEXT_LEN: usize = 36;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The 16 bytes of `s` if it is a canonical UUID's text: lowercase hex
/// digits, hyphens at 8, 13, 18 and 23 and nowhere else.
pub fn parse(s: &[u8; TEXT_LEN]) -> Option<[u8; 16]> {
    if s[8] != b'-' || s[13] != b'-' || s[18] != b'-' || s[23] != b'-' {
        return None;
    }
    let mut hex = [0u8; 32];
    hex[0..8].copy_from_slice(&s[0..8]);
    hex[8..12].copy_from_slice(&s[9..13]);
    hex[12..16].copy_from_slice(&s[14..18]);
    hex[16..20].copy_from_slice(&s[19..23]);
    hex[20..32].copy_from_slice(&s[24..36]);
    // Branch-free over all 32 digits, which the compiler turns into two
    // 16-byte vectors (~80 instructions in all, against ~170 for the same
    // check done in a u64 eight digits at a time).
    let mut bad = false;
    for c in &mut hex {
        let digit = c.wrapping_sub(b'0');
        let letter = c.wrapping_sub(b'a');
        bad |= digit >= 10 && letter >= 6;
        *c = if digit < 10 {
            digit
        } else {
            letter.wrapping_add(10)
        };
    }
    if bad {
        return None;
    }
    let mut out = [0u8; 16];
    for (byte, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        *byte = (pair[0] << 4) | pair[1];
    }
    Some(out)
}

/// Writes the canonical text of `bits` into `buf`, and returns it: ASCII,
/// so the bytes of a `str` (an encoder copies them as they are; making a
/// `str` checks them again, ~60 instructions).
pub fn write<'b>(bits: &[u8; 16], buf: &'b mut [u8; TEXT_LEN]) -> &'b [u8] {
    let digits = |at: usize| {
        let word = u32::from_be_bytes([bits[at], bits[at + 1], bits[at + 2], bits[at + 3]]);
        u32_to_hex(word).to_be_bytes()
    };
    let (a, b, c, d) = (digits(0), digits(4), digits(8), digits(12));
    buf[0..8].copy_from_slice(&a);
    buf[9..13].copy_from_slice(&b[..4]);
    buf[14..18].copy_from_slice(&b[4..]);
    buf[19..23].copy_from_slice(&c[..4]);
    buf[24..28].copy_from_slice(&c[4..]);
    buf[28..36].copy_from_slice(&d);
    for at in [8, 13, 18, 23] {
        buf[at] = b'-';
    }
    buf
}

/// The eight lowercase hex digits of `x`, the first in the top byte.
fn u32_to_hex(x: u32) -> u64 {
    // Spread the nibbles a byte each: halves, then 16-bit pairs, then bytes.
    let n = u64::from(x);
    let n = (n | (n << 16)) & 0x0000_FFFF_0000_FFFF;
    let n = (n | (n << 8)) & 0x00FF_00FF_00FF_00FF;
    let n = (n | (n << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    // n + 0x76 reaches 0x80 when n >= 10: those get 'a' - 10, the others '0'.
    let letter = ((n + 0x76 * ONES) & HIGH) >> 7;
    n + 0x30 * ONES + letter * (b'a' - b'0' - 10) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_crate(s: &[u8; TEXT_LEN]) -> Option<[u8; 16]> {
        let s = std::str::from_utf8(s).ok()?;
        // The crate reads uppercase digits too; the canonical text has none.
        if s.bytes().any(|c| c.is_ascii_uppercase()) {
            return None;
        }
        uuid::Uuid::try_parse(s).ok().map(uuid::Uuid::into_bytes)
    }

    fn text_of(bits: [u8; 16]) -> [u8; TEXT_LEN] {
        let mut buf = [0; TEXT_LEN];
        uuid::Uuid::from_bytes(bits)
            .hyphenated()
            .encode_lower(&mut buf);
        buf
    }

    #[test]
    fn every_byte_at_every_position_is_read_as_the_uuid_crate_reads_it() {
        let mut rng = fastrand::Rng::with_seed(33);
        for _ in 0..8 {
            let good = text_of(std::array::from_fn(|_| rng.u8(..)));
            assert_eq!(parse(&good), by_crate(&good));
            for at in 0..TEXT_LEN {
                for c in 0..=255u8 {
                    let mut s = good;
                    s[at] = c;
                    assert_eq!(parse(&s), by_crate(&s), "{:?}", String::from_utf8_lossy(&s));
                }
            }
        }
    }

    #[test]
    fn every_digit_value_in_every_place_is_written_as_the_uuid_crate_writes_it() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..64 {
            let base: [u8; 16] = std::array::from_fn(|_| rng.u8(..));
            for at in 0..16 {
                for b in 0..=255u8 {
                    let mut bits = base;
                    bits[at] = b;
                    let want = text_of(bits);
                    let mut buf = [0; TEXT_LEN];
                    assert_eq!(write(&bits, &mut buf), &want);
                    assert_eq!(parse(&want), Some(bits));
                }
            }
        }
    }

    #[test]
    fn random_texts_near_the_canonical_form_are_read_as_the_crate_reads_them() {
        // Bytes drawn from hex digits, their neighbours, hyphens and
        // high bytes, so that several defects meet in one text.
        let alphabet = b"0123456789abcdefABCDEF/:@`g-\x80\xff";
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..100_000 {
            let s: [u8; TEXT_LEN] = std::array::from_fn(|at| {
                if [8, 13, 18, 23].contains(&at) && rng.u8(..) < 240 {
                    b'-'
                } else if rng.u8(..) < 250 {
                    b"0123456789abcdef"[rng.usize(..16)]
                } else {
                    alphabet[rng.usize(..alphabet.len())]
                }
            });
            assert_eq!(parse(&s), by_crate(&s), "{:?}", String::from_utf8_lossy(&s));
        }
    }
}
