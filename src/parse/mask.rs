//! A line's text with every digit made `0`, and a hash of it: the key a
//! line shape is looked up by ([`template`](super::template)). The spaces
//! that pad an uptime bracket are made `0` too ([`padding`]). It is made
//! for every line read through a shape, so in vector registers: 32 bytes
//! at a time where the processor has AVX2, 16 with SSE2 (every x86_64
//! has it); elsewhere the same bytes and the same hash are made a word at
//! a time. A test holds the three equal.
//!
//! Chunks go to two accumulators in turn, even ones to the first and odd
//! ones to the second: each step waits for a product of the step before
//! on its accumulator, and with one accumulator that chain (8 cycles a
//! chunk) was twice what the step's instructions need.

/// The bytes hashed at a time: a chunk of the line, as four little-endian
/// words, each pair of them stepped on its own (one vector lane each).
const CHUNK: usize = 32;
type Chunk = [u8; CHUNK];

const K: u64 = 0x9e37_79b9_7f4a_7c15;

/// The accumulators a hash starts from: the even chunks' and the odd
/// ones'.
const SEED: [[u64; 4]; 2] = [
    [K, K.rotate_left(32), K.rotate_left(16), K.rotate_left(48)],
    [
        K.rotate_left(8),
        K.rotate_left(40),
        K.rotate_left(24),
        K.rotate_left(56),
    ],
];

/// The spaces that pad an uptime bracket at the start of a plain line, or
/// of a JSON line's `timestamp`, before its first digit. A bracket keeps
/// its width as its seconds grow into them (`[     9.5s]`, `[    10.5s]`),
/// so they are masked as the digits they become: a log read from a proxy's
/// start would otherwise hold each of its shapes again at 10, 100 and
/// 1 000 seconds (12 629 shapes in the generated 1 GiB mixed log, not
/// 25 451). A proxy pads its seconds to six places (`{secs:>6}`): the
/// seven bytes after the bracket's `[` hold them, and the digit after.
pub fn padding(line: &[u8]) -> Option<(usize, usize)> {
    const JSON: &[u8] = br#"{"timestamp":"["#;
    let from = match line.first()? {
        b'[' => 1,
        b'{' if line.starts_with(JSON) => JSON.len(),
        _ => return None,
    };
    let word = u64::from_le_bytes(line.get(from..from + 8)?.try_into().ok()?);
    // The bytes that are spaces, from the first, as zero bits.
    let spaces = ((word ^ 0x2020_2020_2020_2020).trailing_zeros() / 8) as usize;
    let digit = (word >> (8 * spaces.min(7))) as u8;
    (spaces > 0 && spaces < 8 && digit.is_ascii_digit()).then_some((from, from + spaces))
}

/// Copies `line` into `out` with every ASCII digit, and the spaces that
/// pad its uptime, made `0`; returns a hash of the copy.
pub fn mask(line: &[u8], out: &mut Vec<u8>) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2.
            unsafe { vector::mask_avx2(line, out) }
        } else {
            // SAFETY: every x86_64 processor has SSE2.
            unsafe { vector::mask_sse2(line, out) }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        words::mask(line, out)
    }
}

/// The hash of a text of `len` bytes whose chunks left the accumulators
/// at `even` and `odd`.
fn finish(even: [u64; 4], odd: [u64; 4], len: usize) -> u64 {
    let a: [u64; 4] = std::array::from_fn(|i| even[i] ^ odd[i].wrapping_mul(K));
    let mut h = a[0]
        ^ a[1].rotate_left(29)
        ^ a[2].rotate_left(13)
        ^ a[3].rotate_left(43)
        ^ (len as u64).wrapping_mul(K);
    // Murmur3's finalizer: every bit of the words reaches every bit.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The word at a time way, which the vector ways must equal.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
mod words {
    use super::{finish, padding, Chunk, CHUNK, SEED};

    /// Calls `each` with where each chunk of a line of `len` bytes starts:
    /// every 32 bytes, and the last one ends where the line does (it overlaps
    /// the one before; masking a byte twice makes it the same). False,
    /// calling it for none, for a line shorter than a chunk, which is read as
    /// one chunk padded with zeros.
    #[inline(always)]
    fn chunks(len: usize, mut each: impl FnMut(usize)) -> bool {
        if len < CHUNK {
            return false;
        }
        let mut s = 0;
        while s + CHUNK <= len {
            each(s);
            s += CHUNK;
        }
        if s < len {
            each(len - CHUNK);
        }
        true
    }

    fn mask_byte(b: u8) -> u8 {
        if b.is_ascii_digit() {
            b'0'
        } else {
            b
        }
    }

    /// One masked chunk into the accumulator: each word is keyed by its
    /// word of the accumulator, its halves multiplied, and the other word
    /// of its pair added, so that no chunk is lost to a zero product and
    /// the order of chunks counts.
    fn step(a: &mut [u64; 4], m: &Chunk) {
        let w = |i: usize| u64::from_le_bytes(m[8 * i..8 * i + 8].try_into().expect("a word"));
        let prod = |d: u64| (d & 0xffff_ffff).wrapping_mul(d >> 32);
        let m = [w(0), w(1), w(2), w(3)];
        let p = [0, 1, 2, 3].map(|i| prod(m[i] ^ a[i]));
        for i in 0..4 {
            a[i] = a[i].wrapping_add(m[i ^ 1]).wrapping_add(p[i]);
        }
    }

    pub fn mask(line: &[u8], out: &mut Vec<u8>) -> u64 {
        out.clear();
        out.extend(line.iter().map(|b| mask_byte(*b)));
        if let Some((from, to)) = padding(line) {
            out[from..to].fill(b'0');
        }
        let mut a = SEED;
        let mut k = 0;
        let whole = chunks(line.len(), |s| {
            step(
                &mut a[k % 2],
                out[s..s + CHUNK].try_into().expect("a chunk"),
            );
            k += 1;
        });
        if !whole {
            let mut c: Chunk = [0; CHUNK];
            c[..out.len()].copy_from_slice(out);
            step(&mut a[0], &c);
        }
        finish(a[0], a[1], line.len())
    }

    #[cfg(all(test, target_arch = "x86_64"))]
    mod tests {
        use super::super::vector;

        /// Every way makes the same bytes and the same hash, for every
        /// length around the chunk's and every kind of byte.
        #[test]
        fn the_vector_ways_are_the_word_way() {
            let mut seed = 0x2545_f491_4f6c_dd1du64;
            let mut next = || {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed
            };
            let avx2 = std::arch::is_x86_feature_detected!("avx2");
            for len in 0..150 {
                for _ in 0..20 {
                    // Digits, the bytes either side of them, and any byte.
                    let mut line: Vec<u8> = (0..len)
                        .map(|_| match next() % 3 {
                            0 => b'0' + (next() % 10) as u8,
                            1 => [b'/', b':', b' ', b'a', b'\\'][(next() % 5) as usize],
                            _ => next() as u8,
                        })
                        .collect();
                    // And half of them open with an uptime bracket whose
                    // padding ends anywhere in the first chunks.
                    let heads: [&[u8]; 2] = [b"[", br#"{"timestamp":"["#];
                    let head = heads[(next() % 2) as usize];
                    if next() % 2 == 0 && line.len() > head.len() + 1 {
                        line[..head.len()].copy_from_slice(head);
                        let spaces = (next() as usize % 10).min(line.len() - head.len() - 1);
                        line[head.len()..head.len() + spaces].fill(b' ');
                        line[head.len() + spaces] = b'0' + (next() % 10) as u8;
                    }
                    let mut want = Vec::new();
                    let hash = super::mask(&line, &mut want);
                    let mut got = vec![7; 3];
                    // SAFETY: every x86_64 processor has SSE2.
                    assert_eq!(unsafe { vector::mask_sse2(&line, &mut got) }, hash);
                    assert_eq!(got, want, "{line:?}");
                    if avx2 {
                        got.clear();
                        // SAFETY: the processor has AVX2.
                        assert_eq!(unsafe { vector::mask_avx2(&line, &mut got) }, hash);
                        assert_eq!(got, want, "{line:?}");
                    }
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod vector {
    use super::{finish, padding, Chunk, CHUNK, SEED};
    use std::arch::x86_64::*;

    /// Sixteen bytes `v` masked, and the accumulator's pair of words `a`
    /// stepped by them as [`words`](super::words) steps them.
    #[target_feature(enable = "sse2")]
    fn step_sse2(a: __m128i, v: __m128i) -> (__m128i, __m128i) {
        // A digit is a byte whose distance above `0` is at most 9.
        let t = _mm_sub_epi8(v, _mm_set1_epi8(b'0' as i8));
        let digit = _mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8(9)), t);
        let m = _mm_andnot_si128(_mm_and_si128(digit, _mm_set1_epi8(0x0f)), v);
        let d = _mm_xor_si128(m, a);
        let prod = _mm_mul_epu32(d, _mm_shuffle_epi32::<0b10_11_00_01>(d));
        let swapped = _mm_shuffle_epi32::<0b01_00_11_10>(m);
        (_mm_add_epi64(_mm_add_epi64(a, swapped), prod), m)
    }

    /// [`step_sse2`] on both halves of a chunk at once: AVX2's shuffles
    /// and products work within each half.
    #[target_feature(enable = "avx2")]
    fn step_avx2(a: __m256i, v: __m256i) -> (__m256i, __m256i) {
        let t = _mm256_sub_epi8(v, _mm256_set1_epi8(b'0' as i8));
        let digit = _mm256_cmpeq_epi8(_mm256_min_epu8(t, _mm256_set1_epi8(9)), t);
        let m = _mm256_andnot_si256(_mm256_and_si256(digit, _mm256_set1_epi8(0x0f)), v);
        let d = _mm256_xor_si256(m, a);
        let prod = _mm256_mul_epu32(d, _mm256_shuffle_epi32::<0b10_11_00_01>(d));
        let swapped = _mm256_shuffle_epi32::<0b01_00_11_10>(m);
        (_mm256_add_epi64(_mm256_add_epi64(a, swapped), prod), m)
    }

    /// Or-ed into lanes, these make the padding's spaces `0` (0x20 | 0x10):
    /// 32 bytes from `32 - lo` of the first and `32 - hi` of the second,
    /// and-ed, are 0x10 in lanes `lo..hi` and 0 elsewhere.
    static FROM: [u8; 64] = ramp(0, 0x10);
    static UNTIL: [u8; 64] = ramp(0xff, 0);

    const fn ramp(low: u8, high: u8) -> [u8; 64] {
        let mut t = [low; 64];
        let mut i = 32;
        while i < 64 {
            t[i] = high;
            i += 1;
        }
        t
    }

    /// The bits that make the padding of lanes `lo..hi` of 32 `0`, for the
    /// 16 of them from lane `half`.
    #[inline(always)]
    fn pad_bits(lo: usize, hi: usize, half: usize) -> (*const u8, *const u8) {
        (
            FROM[32 - lo + half..].as_ptr(),
            UNTIL[32 - hi + half..].as_ptr(),
        )
    }

    /// Runs `step` on each chunk of `line` (those [`words`](super::words)
    /// steps, in its order, with its accumulator: 0 for the even ones, 1
    /// for the odd), loaded from `src + at` and its masked bytes stored at
    /// `dst + at`, into `out`; with the lanes of the chunk that are
    /// padding ([`padding`]), which only the first chunk holds, and the
    /// last where it overlaps the first. The chunks between come in pairs,
    /// so that each call's accumulator is known where it is inlined.
    #[inline(always)]
    fn each_chunk(
        line: &[u8],
        out: &mut Vec<u8>,
        mut step: impl FnMut(usize, *const u8, *mut u8, Option<(usize, usize)>),
    ) {
        let len = line.len();
        out.clear();
        out.reserve(len);
        let pad = padding(line);
        let lanes = |s: usize| {
            let (from, to) = pad?;
            (s < to).then(|| (from.saturating_sub(s), to - s))
        };
        let (src, dst) = (line.as_ptr(), out.as_mut_ptr());
        if len >= CHUNK {
            // SAFETY: each chunk is within `len`, and `out` has room for
            // `len` bytes, which the chunks cover.
            unsafe {
                step(0, src, dst, lanes(0));
                let mut s = CHUNK;
                while s + 2 * CHUNK <= len {
                    step(1, src.add(s), dst.add(s), None);
                    step(0, src.add(s + CHUNK), dst.add(s + CHUNK), None);
                    s += 2 * CHUNK;
                }
                // The chunks so far are an odd count: the next is odd.
                let mut odd = 1;
                if s + CHUNK <= len {
                    step(1, src.add(s), dst.add(s), None);
                    (s, odd) = (s + CHUNK, 0);
                }
                if s < len {
                    let last = len - CHUNK;
                    step(odd, src.add(last), dst.add(last), lanes(last));
                }
                out.set_len(len);
            }
        } else {
            let mut c: Chunk = [0; CHUNK];
            c[..len].copy_from_slice(line);
            let p = c.as_mut_ptr();
            step(0, p, p, lanes(0));
            out.extend_from_slice(&c[..len]);
        }
    }

    /// # Safety
    /// The processor has SSE2 (every x86_64 does).
    #[target_feature(enable = "sse2")]
    pub unsafe fn mask_sse2(line: &[u8], out: &mut Vec<u8>) -> u64 {
        let pair = |s: [u64; 4], at: usize| _mm_set_epi64x(s[at + 1] as i64, s[at] as i64);
        // Each accumulator's low and high pairs of words.
        let mut acc = SEED.map(|s| (pair(s, 0), pair(s, 2)));
        // SAFETY: `each_chunk` passes 32 bytes to read and to write, and
        // padding lanes within 32.
        each_chunk(line, out, |k, src, dst, pad| unsafe {
            let (mut v, mut w) = (
                _mm_loadu_si128(src.cast()),
                _mm_loadu_si128(src.add(16).cast()),
            );
            if let Some((l, h)) = pad {
                let bits = |half| {
                    let (f, u) = pad_bits(l, h, half);
                    _mm_and_si128(_mm_loadu_si128(f.cast()), _mm_loadu_si128(u.cast()))
                };
                (v, w) = (_mm_or_si128(v, bits(0)), _mm_or_si128(w, bits(16)));
            }
            let (lo, hi) = acc[k];
            let (a, m) = step_sse2(lo, v);
            _mm_storeu_si128(dst.cast(), m);
            let (b, n) = step_sse2(hi, w);
            _mm_storeu_si128(dst.add(16).cast(), n);
            acc[k] = (a, b);
        });
        let word = |v: __m128i, high: bool| {
            let v = if high { _mm_unpackhi_epi64(v, v) } else { v };
            _mm_cvtsi128_si64(v) as u64
        };
        let [even, odd] = acc.map(|(lo, hi)| {
            [
                word(lo, false),
                word(lo, true),
                word(hi, false),
                word(hi, true),
            ]
        });
        finish(even, odd, line.len())
    }

    /// # Safety
    /// The processor has AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn mask_avx2(line: &[u8], out: &mut Vec<u8>) -> u64 {
        let mut acc = SEED.map(|s| {
            let s = s.map(|w| w as i64);
            _mm256_set_epi64x(s[3], s[2], s[1], s[0])
        });
        // SAFETY: `each_chunk` passes 32 bytes to read and to write, and
        // padding lanes within 32.
        each_chunk(line, out, |k, src, dst, pad| unsafe {
            let mut v = _mm256_loadu_si256(src.cast());
            if let Some((l, h)) = pad {
                let (f, u) = pad_bits(l, h, 0);
                let bits =
                    _mm256_and_si256(_mm256_loadu_si256(f.cast()), _mm256_loadu_si256(u.cast()));
                v = _mm256_or_si256(v, bits);
            }
            let (a, m) = step_avx2(acc[k], v);
            _mm256_storeu_si256(dst.cast(), m);
            acc[k] = a;
        });
        let [even, odd] = acc.map(|v| {
            let mut a = [0u64; 4];
            // SAFETY: an unaligned store of 32 bytes into `a`.
            unsafe { _mm256_storeu_si256(a.as_mut_ptr().cast(), v) };
            a
        });
        finish(even, odd, line.len())
    }
}
