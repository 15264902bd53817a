//! A line's text with every digit made `0`, and a hash of it: the key a
//! line shape is looked up by ([`template`](super::template)). It is made
//! for every line read through a shape, so sixteen bytes at a time where
//! the machine has vector registers; elsewhere the same bytes and the same
//! hash are made a word at a time (a test holds the two equal).

/// Sixteen bytes: a chunk of the line, as two little-endian words.
type Chunk = [u8; 16];

const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// Copies `line` into `out` with every ASCII digit made `0`; returns a
/// hash of the copy.
pub fn mask(line: &[u8], out: &mut Vec<u8>) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: every x86_64 processor has SSE2.
        unsafe { sse2::mask(line, out) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        words::mask(line, out)
    }
}

/// Calls `each` with where each chunk of a line of `len` bytes starts:
/// every sixteen bytes, and the last one ends where the line does (it
/// overlaps the one before; masking a byte twice makes it the same).
/// False, calling it for none, for a line shorter than a chunk, which is
/// read as one chunk padded with zeros.
#[inline(always)]
fn chunks(len: usize, mut each: impl FnMut(usize)) -> bool {
    if len < 16 {
        return false;
    }
    let mut s = 0;
    while s + 16 <= len {
        each(s);
        s += 16;
    }
    if s < len {
        each(len - 16);
    }
    true
}

/// The hash of a text made of chunks that left the accumulator's two
/// words at `a`.
fn finish(a: [u64; 2], len: usize) -> u64 {
    let mut h = a[0] ^ a[1].rotate_left(29) ^ (len as u64).wrapping_mul(K);
    // Murmur3's finalizer: every bit of the words reaches every bit.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The accumulator a hash starts from.
const SEED: [u64; 2] = [K, K.rotate_left(32)];

/// The word at a time way, which the vector way must equal.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
mod words {
    use super::{chunks, finish, Chunk, SEED};

    fn mask_byte(b: u8) -> u8 {
        if b.is_ascii_digit() {
            b'0'
        } else {
            b
        }
    }

    /// One masked chunk into the accumulator: each word is keyed by the
    /// accumulator, its halves multiplied, and the other word added, so
    /// that no chunk is lost to a zero product and the order of chunks
    /// counts.
    fn step(a: &mut [u64; 2], m: &Chunk) {
        let m0 = u64::from_le_bytes(m[..8].try_into().expect("eight bytes"));
        let m1 = u64::from_le_bytes(m[8..].try_into().expect("eight bytes"));
        let prod = |d: u64| (d & 0xffff_ffff).wrapping_mul(d >> 32);
        let (p0, p1) = (prod(m0 ^ a[0]), prod(m1 ^ a[1]));
        a[0] = a[0].wrapping_add(m1).wrapping_add(p0);
        a[1] = a[1].wrapping_add(m0).wrapping_add(p1);
    }

    pub fn mask(line: &[u8], out: &mut Vec<u8>) -> u64 {
        out.clear();
        out.extend(line.iter().map(|b| mask_byte(*b)));
        let mut a = SEED;
        let whole = chunks(line.len(), |s| {
            step(&mut a, out[s..s + 16].try_into().expect("a chunk"));
        });
        if !whole {
            let mut c: Chunk = [0; 16];
            c[..out.len()].copy_from_slice(out);
            step(&mut a, &c);
        }
        finish(a, line.len())
    }

    #[cfg(all(test, target_arch = "x86_64"))]
    mod tests {
        use super::super::sse2;

        /// Both ways make the same bytes and the same hash, for every
        /// length around the chunk's and every kind of byte.
        #[test]
        fn the_vector_way_is_the_word_way() {
            let mut seed = 0x2545_f491_4f6c_dd1du64;
            let mut next = || {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed
            };
            for len in 0..100 {
                for _ in 0..20 {
                    // Digits, the bytes either side of them, and any byte.
                    let line: Vec<u8> = (0..len)
                        .map(|_| match next() % 3 {
                            0 => b'0' + (next() % 10) as u8,
                            1 => [b'/', b':', b' ', b'a'][(next() % 4) as usize],
                            _ => next() as u8,
                        })
                        .collect();
                    let (mut a, mut b) = (Vec::new(), vec![7; 3]);
                    // SAFETY: every x86_64 processor has SSE2.
                    let vector = unsafe { sse2::mask(&line, &mut b) };
                    assert_eq!(super::mask(&line, &mut a), vector);
                    assert_eq!(a, b, "{line:?}");
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use super::{chunks, finish, Chunk, SEED};
    use std::arch::x86_64::*;

    /// Chunk `v` masked, and the accumulator `a` stepped by it as
    /// [`words`](super::words) steps it.
    #[target_feature(enable = "sse2")]
    fn step(a: __m128i, v: __m128i) -> (__m128i, __m128i) {
        // A digit is a byte whose distance above `0` is at most 9.
        let t = _mm_sub_epi8(v, _mm_set1_epi8(b'0' as i8));
        let digit = _mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8(9)), t);
        let m = _mm_andnot_si128(_mm_and_si128(digit, _mm_set1_epi8(0x0f)), v);
        let d = _mm_xor_si128(m, a);
        let prod = _mm_mul_epu32(d, _mm_shuffle_epi32::<0b10_11_00_01>(d));
        let swapped = _mm_shuffle_epi32::<0b01_00_11_10>(m);
        (_mm_add_epi64(_mm_add_epi64(a, swapped), prod), m)
    }

    #[target_feature(enable = "sse2")]
    pub fn mask(line: &[u8], out: &mut Vec<u8>) -> u64 {
        let len = line.len();
        out.clear();
        out.reserve(len);
        let mut a = _mm_set_epi64x(SEED[1] as i64, SEED[0] as i64);
        let (src, dst) = (line.as_ptr(), out.as_mut_ptr());
        let whole = chunks(len, |s| {
            // SAFETY: `s + 16 <= len`, and `out` has room for `len`
            // bytes; unaligned loads and stores.
            unsafe {
                let (next, m) = step(a, _mm_loadu_si128(src.add(s).cast()));
                _mm_storeu_si128(dst.add(s).cast(), m);
                a = next;
            }
        });
        if whole {
            // SAFETY: the chunks cover every byte below `len`.
            unsafe { out.set_len(len) };
        } else {
            let mut c: Chunk = [0; 16];
            c[..len].copy_from_slice(line);
            // SAFETY: unaligned load and store of sixteen bytes.
            unsafe {
                let (next, m) = step(a, _mm_loadu_si128(c.as_ptr().cast()));
                _mm_storeu_si128(c.as_mut_ptr().cast(), m);
                a = next;
            }
            out.extend_from_slice(&c[..len]);
        }
        let lo = _mm_cvtsi128_si64(a) as u64;
        let hi = _mm_cvtsi128_si64(_mm_unpackhi_epi64(a, a)) as u64;
        finish([lo, hi], len)
    }
}
