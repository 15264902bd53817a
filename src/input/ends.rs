//! Where each line of a buffer ends. A proxy's lines are a few hundred
//! bytes, so finding each `\n` with its own search pays a search's setup
//! per line (a twentieth of explain's instructions went to it): here 64
//! bytes at a time are compared at once, and each `\n` in them is read
//! off a bit mask. The same pass tells whether the buffer holds a CR or an
//! escape byte, which would otherwise each take a search of every byte.

/// What else than line ends a buffer holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Found {
    /// A `\r`.
    pub cr: bool,
    /// An escape byte (`0x1b`: a colour code).
    pub esc: bool,
}

/// Appends to `out` where each `\n` of `hay` is, plus `base`.
pub fn push_newlines(hay: &[u8], base: usize, out: &mut Vec<usize>) -> Found {
    #[cfg(target_arch = "x86_64")]
    let (done, found) = if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2.
        unsafe { vector::whole_chunks_avx2(hay, base, out) }
    } else {
        // SAFETY: every x86_64 processor has SSE2.
        unsafe { vector::whole_chunks_sse2(hay, base, out) }
    };
    #[cfg(not(target_arch = "x86_64"))]
    let (done, found) = (0, Found::default());
    let rest = &hay[done..];
    out.extend(memchr::memchr_iter(b'\n', rest).map(|p| base + done + p));
    Found {
        cr: found.cr || memchr::memchr(b'\r', rest).is_some(),
        esc: found.esc || memchr::memchr(0x1b, rest).is_some(),
    }
}

/// Appends the positions of the bits set in `mask`, each plus `at`.
#[inline(always)]
fn push_bits(mut mask: u64, at: usize, out: &mut Vec<usize>) {
    while mask != 0 {
        out.push(at + mask.trailing_zeros() as usize);
        mask &= mask - 1;
    }
}

#[cfg(target_arch = "x86_64")]
mod vector {
    use super::{push_bits, Found};
    use std::arch::x86_64::*;

    const CHUNK: usize = 64;

    /// The newlines of `hay`'s whole 64-byte chunks, as [`push_newlines`]
    /// (super::push_newlines); returns how many bytes that read, and what
    /// else they hold.
    #[target_feature(enable = "avx2")]
    pub unsafe fn whole_chunks_avx2(
        hay: &[u8],
        base: usize,
        out: &mut Vec<usize>,
    ) -> (usize, Found) {
        let nl = _mm256_set1_epi8(b'\n' as i8);
        let (cr, esc) = (_mm256_set1_epi8(b'\r' as i8), _mm256_set1_epi8(0x1b));
        // Kept in general registers, and the chunk read before its line
        // ends are pushed: a vector register would be saved around every
        // push.
        let (mut crs, mut escs) = (0u32, 0u32);
        let mut i = 0;
        while i + CHUNK <= hay.len() {
            // SAFETY: the 64 bytes from `i` are in `hay`.
            let (a, b) = unsafe {
                let p = hay.as_ptr().add(i);
                (
                    _mm256_loadu_si256(p.cast()),
                    _mm256_loadu_si256(p.add(32).cast()),
                )
            };
            let lo = _mm256_movemask_epi8(_mm256_cmpeq_epi8(a, nl)) as u32;
            let hi = _mm256_movemask_epi8(_mm256_cmpeq_epi8(b, nl)) as u32;
            let either = |v| _mm256_or_si256(_mm256_cmpeq_epi8(a, v), _mm256_cmpeq_epi8(b, v));
            crs |= _mm256_movemask_epi8(either(cr)) as u32;
            escs |= _mm256_movemask_epi8(either(esc)) as u32;
            push_bits(u64::from(lo) | (u64::from(hi) << 32), base + i, out);
            i += CHUNK;
        }
        let found = Found {
            cr: crs != 0,
            esc: escs != 0,
        };
        (i, found)
    }

    /// [`whole_chunks_avx2`] with SSE2.
    #[target_feature(enable = "sse2")]
    pub unsafe fn whole_chunks_sse2(
        hay: &[u8],
        base: usize,
        out: &mut Vec<usize>,
    ) -> (usize, Found) {
        let nl = _mm_set1_epi8(b'\n' as i8);
        let (cr, esc) = (_mm_set1_epi8(b'\r' as i8), _mm_set1_epi8(0x1b));
        let (mut crs, mut escs) = (0u32, 0u32);
        let mut i = 0;
        while i + CHUNK <= hay.len() {
            let mut mask = 0u64;
            for q in 0..4 {
                // SAFETY: the 64 bytes from `i` are in `hay`.
                let v = unsafe { _mm_loadu_si128(hay.as_ptr().add(i + 16 * q).cast()) };
                let m = _mm_movemask_epi8(_mm_cmpeq_epi8(v, nl)) as u16;
                mask |= u64::from(m) << (16 * q);
                crs |= _mm_movemask_epi8(_mm_cmpeq_epi8(v, cr)) as u32;
                escs |= _mm_movemask_epi8(_mm_cmpeq_epi8(v, esc)) as u32;
            }
            push_bits(mask, base + i, out);
            i += CHUNK;
        }
        let found = Found {
            cr: crs != 0,
            esc: escs != 0,
        };
        (i, found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn by_memchr(hay: &[u8], base: usize) -> Vec<usize> {
        memchr::memchr_iter(b'\n', hay).map(|p| base + p).collect()
    }

    proptest! {
        /// Every newline, in order, whatever the length, the offset in the
        /// chunks, and how dense the newlines are; and whether a CR or an
        /// escape byte is anywhere in it, in a chunk or after the last.
        #[test]
        fn finds_what_memchr_finds(
            hay in prop::collection::vec(
                prop_oneof![Just(b'\n'), 0x20u8..0x7f, 0x80u8..=0xff], 0..400),
            cr in prop::option::of(any::<prop::sample::Index>()),
            esc in prop::option::of(any::<prop::sample::Index>()),
            skip in 0usize..64,
            base in 0usize..1000,
        ) {
            let mut hay = hay;
            for (at, byte) in [(cr, b'\r'), (esc, 0x1b)] {
                if let Some(at) = at.filter(|_| !hay.is_empty()) {
                    let i = at.index(hay.len());
                    hay[i] = byte;
                }
            }
            let hay = &hay[skip.min(hay.len())..];
            let mut out = vec![7];
            let found = push_newlines(hay, base, &mut out);
            let mut want = vec![7];
            want.extend(by_memchr(hay, base));
            prop_assert_eq!(out, want);
            prop_assert_eq!(found, Found {
                cr: hay.contains(&b'\r'),
                esc: hay.contains(&0x1b),
            });
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sse2_and_avx2_find_the_same() {
        let hay: Vec<u8> = (0..1000u32)
            .map(|i| {
                if i % 7 == 0 || i % 61 == 3 {
                    b'\n'
                } else if i == 500 {
                    0x1b
                } else {
                    b'a'
                }
            })
            .collect();
        let mut sse2 = Vec::new();
        // SAFETY: every x86_64 processor has SSE2.
        let (n, found) = unsafe { vector::whole_chunks_sse2(&hay, 5, &mut sse2) };
        let esc = Found {
            cr: false,
            esc: true,
        };
        assert_eq!((n, found), (960, esc));
        assert_eq!(sse2, by_memchr(&hay[..960], 5));
        if std::arch::is_x86_feature_detected!("avx2") {
            let mut avx2 = Vec::new();
            // SAFETY: the processor has AVX2.
            let m = unsafe { vector::whole_chunks_avx2(&hay, 5, &mut avx2) };
            assert_eq!((m, avx2), ((n, found), sse2));
        }
    }
}
