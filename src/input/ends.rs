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

/// Asks the processor for the cache line at `p`, to be read soon.
#[inline(always)]
pub fn prefetch(p: *const u8) {
    // SAFETY: a prefetch does not fault, wherever it points.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
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

#[cfg(target_arch = "x86_64")]
mod vector {
    use super::Found;
    use std::arch::x86_64::*;

    const CHUNK: usize = 64;

    /// Chunks read between two checks that `out` has room: the line ends
    /// are written without a check each, and the loop makes no call, so
    /// that nothing it holds in vector registers is saved around one.
    const ROUND: usize = 16;

    /// Bytes ahead of the chunk being read whose cache line is asked for:
    /// this pass is the first to read a block, from memory, and the
    /// processor's own prefetching stops at each 4 KiB page. Explain of the
    /// 1 GiB gateway JSON log took 0.92 times the time asking 4 KiB ahead
    /// (1 KiB: 0.96, 2 KiB: 0.93, 8 KiB: 0.92), of the mixed one 0.91;
    /// summarize and parse 0.97.
    const AHEAD: usize = 4096;

    /// The newlines of `hay`'s whole chunks, each read by `read` (which
    /// returns them as a bit mask, and keeps whether it saw a CR or an
    /// escape byte itself), as [`push_newlines`](super::push_newlines);
    /// returns how many bytes that read.
    #[inline(always)]
    fn whole_chunks(
        hay: &[u8],
        base: usize,
        out: &mut Vec<usize>,
        mut read: impl FnMut(*const u8) -> u64,
    ) -> usize {
        let mut i = 0;
        while i + CHUNK <= hay.len() {
            let n = ((hay.len() - i) / CHUNK).min(ROUND);
            out.reserve(n * CHUNK);
            let (dst, mut len) = (out.as_mut_ptr(), out.len());
            for _ in 0..n {
                super::prefetch(hay.as_ptr().wrapping_add(i + AHEAD));
                // SAFETY: the chunk from `i` is in `hay`.
                let mut bits = read(unsafe { hay.as_ptr().add(i) });
                while bits != 0 {
                    // SAFETY: `n` chunks of at most 64 line ends each
                    // were made room for.
                    unsafe {
                        dst.add(len)
                            .write(base + i + bits.trailing_zeros() as usize)
                    };
                    len += 1;
                    bits &= bits - 1;
                }
                i += CHUNK;
            }
            // SAFETY: the line ends up to `len` were written.
            unsafe { out.set_len(len) };
        }
        i
    }

    /// [`whole_chunks`] 32 bytes at a time. Whether a CR or an escape byte
    /// was seen is or-ed into a vector of each, read once at the end (read
    /// off each chunk, it cost a fourteenth of the scan).
    #[target_feature(enable = "avx2")]
    pub unsafe fn whole_chunks_avx2(
        hay: &[u8],
        base: usize,
        out: &mut Vec<usize>,
    ) -> (usize, Found) {
        let (mut cr, mut esc) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        // SAFETY (each call): the 64 bytes from `p` are in `hay`.
        let done = whole_chunks(hay, base, out, |p| unsafe {
            let (a, b) = (
                _mm256_loadu_si256(p.cast()),
                _mm256_loadu_si256(p.add(32).cast()),
            );
            let either = |byte: u8| {
                let v = _mm256_set1_epi8(byte as i8);
                _mm256_or_si256(_mm256_cmpeq_epi8(a, v), _mm256_cmpeq_epi8(b, v))
            };
            cr = _mm256_or_si256(cr, either(b'\r'));
            esc = _mm256_or_si256(esc, either(0x1b));
            let nl = _mm256_set1_epi8(b'\n' as i8);
            let lo = _mm256_movemask_epi8(_mm256_cmpeq_epi8(a, nl)) as u32;
            let hi = _mm256_movemask_epi8(_mm256_cmpeq_epi8(b, nl)) as u32;
            u64::from(lo) | (u64::from(hi) << 32)
        });
        let seen = |v: __m256i| _mm256_movemask_epi8(v) != 0;
        let found = Found {
            cr: seen(cr),
            esc: seen(esc),
        };
        (done, found)
    }

    /// [`whole_chunks`] 16 bytes at a time, as [`whole_chunks_avx2`].
    #[target_feature(enable = "sse2")]
    pub unsafe fn whole_chunks_sse2(
        hay: &[u8],
        base: usize,
        out: &mut Vec<usize>,
    ) -> (usize, Found) {
        let (mut cr, mut esc) = (_mm_setzero_si128(), _mm_setzero_si128());
        let done = whole_chunks(hay, base, out, |p| {
            let mut newlines = 0;
            for q in 0..4 {
                // SAFETY: the 64 bytes from `p` are in `hay`.
                let v = unsafe { _mm_loadu_si128(p.add(16 * q).cast()) };
                let is = |byte: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(byte as i8));
                newlines |= u64::from(_mm_movemask_epi8(is(b'\n')) as u16) << (16 * q);
                cr = _mm_or_si128(cr, is(b'\r'));
                esc = _mm_or_si128(esc, is(0x1b));
            }
            newlines
        });
        let seen = |v: __m128i| _mm_movemask_epi8(v) != 0;
        let found = Found {
            cr: seen(cr),
            esc: seen(esc),
        };
        (done, found)
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
        /// Every newline, in order, whatever the length (over several
        /// rounds of chunks), the offset in the chunks, and how dense the
        /// newlines are; and whether a CR or an escape byte is anywhere
        /// in it, in a chunk or after the last.
        #[test]
        fn finds_what_memchr_finds(
            hay in prop::collection::vec(
                prop_oneof![Just(b'\n'), 0x20u8..0x7f, 0x80u8..=0xff], 0..1500),
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

    /// A newline in every byte, over rounds of chunks: as many line ends
    /// as room was made for.
    #[test]
    fn a_buffer_of_newlines_only() {
        let hay = vec![b'\n'; 64 * 40 + 5];
        let mut out = Vec::new();
        push_newlines(&hay, 3, &mut out);
        assert_eq!(out, (3..hay.len() + 3).collect::<Vec<_>>());
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sse2_and_avx2_find_the_same() {
        let hay: Vec<u8> = (0..3000u32)
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
        assert_eq!((n, found), (2944, esc));
        assert_eq!(sse2, by_memchr(&hay[..2944], 5));
        if std::arch::is_x86_feature_detected!("avx2") {
            let mut avx2 = Vec::new();
            // SAFETY: the processor has AVX2.
            let m = unsafe { vector::whole_chunks_avx2(&hay, 5, &mut avx2) };
            assert_eq!((m, avx2), ((n, found), sse2));
        }
    }
}
