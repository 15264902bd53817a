//! Where each line of a buffer ends. A proxy's lines are a few hundred
//! bytes, so finding each `\n` with its own search pays a search's setup
//! per line (a twentieth of explain's instructions went to it): here 64
//! bytes at a time are compared at once, and each `\n` in them is read
//! off a bit mask.

/// Appends to `out` where each `\n` of `hay` is, plus `base`.
pub fn push_newlines(hay: &[u8], base: usize, out: &mut Vec<usize>) {
    #[cfg(target_arch = "x86_64")]
    let done = if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2.
        unsafe { vector::whole_chunks_avx2(hay, base, out) }
    } else {
        // SAFETY: every x86_64 processor has SSE2.
        unsafe { vector::whole_chunks_sse2(hay, base, out) }
    };
    #[cfg(not(target_arch = "x86_64"))]
    let done = 0;
    let rest = memchr::memchr_iter(b'\n', &hay[done..]);
    out.extend(rest.map(|p| base + done + p));
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
    use super::push_bits;
    use std::arch::x86_64::*;

    const CHUNK: usize = 64;

    /// The newlines of `hay`'s whole 64-byte chunks, as [`push_newlines`]
    /// (super::push_newlines); returns how many bytes that read.
    #[target_feature(enable = "avx2")]
    pub unsafe fn whole_chunks_avx2(hay: &[u8], base: usize, out: &mut Vec<usize>) -> usize {
        let nl = _mm256_set1_epi8(b'\n' as i8);
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
            push_bits(u64::from(lo) | (u64::from(hi) << 32), base + i, out);
            i += CHUNK;
        }
        i
    }

    /// [`whole_chunks_avx2`] with SSE2.
    #[target_feature(enable = "sse2")]
    pub unsafe fn whole_chunks_sse2(hay: &[u8], base: usize, out: &mut Vec<usize>) -> usize {
        let nl = _mm_set1_epi8(b'\n' as i8);
        let mut i = 0;
        while i + CHUNK <= hay.len() {
            let mut mask = 0u64;
            for q in 0..4 {
                // SAFETY: the 64 bytes from `i` are in `hay`.
                let v = unsafe { _mm_loadu_si128(hay.as_ptr().add(i + 16 * q).cast()) };
                let m = _mm_movemask_epi8(_mm_cmpeq_epi8(v, nl)) as u16;
                mask |= u64::from(m) << (16 * q);
            }
            push_bits(mask, base + i, out);
            i += CHUNK;
        }
        i
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
        /// chunks, and how dense the newlines are.
        #[test]
        fn finds_what_memchr_finds(
            hay in prop::collection::vec(
                prop_oneof![Just(b'\n'), Just(b'\r'), any::<u8>()], 0..400),
            skip in 0usize..64,
            base in 0usize..1000,
        ) {
            let hay = &hay[skip.min(hay.len())..];
            let mut out = vec![7];
            push_newlines(hay, base, &mut out);
            let mut want = vec![7];
            want.extend(by_memchr(hay, base));
            prop_assert_eq!(out, want);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sse2_and_avx2_find_the_same() {
        let hay: Vec<u8> = (0..1000u32)
            .map(|i| {
                if i % 7 == 0 || i % 61 == 3 {
                    b'\n'
                } else {
                    b'a'
                }
            })
            .collect();
        let mut sse2 = Vec::new();
        // SAFETY: every x86_64 processor has SSE2.
        let n = unsafe { vector::whole_chunks_sse2(&hay, 5, &mut sse2) };
        assert_eq!(n, 960);
        assert_eq!(sse2, by_memchr(&hay[..960], 5));
        if std::arch::is_x86_feature_detected!("avx2") {
            let mut avx2 = Vec::new();
            // SAFETY: the processor has AVX2.
            let m = unsafe { vector::whole_chunks_avx2(&hay, 5, &mut avx2) };
            assert_eq!((m, avx2), (n, sse2));
        }
    }
}
