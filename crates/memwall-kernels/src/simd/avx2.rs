//! AVX2 (+FMA, F16C) dot products of quantized rows with quantized activations.
//!
//! Integer products use `maddubs` (unsigned × signed bytes → i16 pairs) and `madd`
//! (i16 × i16 → i32): formats whose codes are unsigned with an offset (Q2_K, Q3_K, Q6_K, TQ)
//! dot the unsigned code and subtract `offset × Σ activations` from the block sums, as ggml's
//! kernels do. Every function here is `unsafe` only because it needs the CPU features that
//! [`available`] checks; the slices it reads are bounds-checked by its callers' shapes.
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use crate::acts::Q8Acts;

/// Whether this CPU has AVX2, FMA and F16C.
pub fn available() -> bool {
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") && is_x86_feature_detected!("f16c")
}

#[inline(always)]
unsafe fn f16(p: *const u8) -> f32 {
    unsafe {
        let h = u16::from_le_bytes([*p, *p.add(1)]);
        _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h as i32)))
    }
}

#[inline(always)]
unsafe fn hsum(v: __m256) -> f32 {
    unsafe {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_movehdup_ps(s));
        _mm_cvtss_f32(s)
    }
}

/// Shift 16-bit lanes right by a run-time count.
#[inline(always)]
unsafe fn shr16(v: __m256i, n: usize) -> __m256i {
    unsafe { _mm256_srl_epi16(v, _mm_cvtsi32_si128(n as i32)) }
}

#[inline(always)]
unsafe fn load(p: *const u8) -> __m256i {
    unsafe { _mm256_loadu_si256(p as *const __m256i) }
}

/// Σ over 32 signed × signed bytes, as 8 i32 partial sums.
#[inline(always)]
unsafe fn dot_ss<const VNNI: bool>(x: __m256i, y: __m256i) -> __m256i {
    unsafe {
        let ax = _mm256_sign_epi8(x, x);
        let sy = _mm256_sign_epi8(y, x);
        dot_us::<VNNI>(_mm256_setzero_si256(), ax, sy)
    }
}

/// `acc + Σ` over 32 unsigned × signed bytes, as 8 i32 partial sums (four products each):
/// one `vpdpbusd` with VNNI, `maddubs` then `madd` by ones without. The two agree: `maddubs`
/// cannot saturate on these codes (weights and activations within ±127 in magnitude, so a
/// pair is at most 2 × 127 × 127 = 32,258 < 32,767).
#[inline(always)]
unsafe fn dot_us<const VNNI: bool>(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
    unsafe {
        if VNNI {
            _mm256_dpbusd_epi32(acc, u, s)
        } else {
            _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)))
        }
    }
}

/// 32 unsigned × signed bytes → 16 i16 pair sums.
#[inline(always)]
unsafe fn dot_us16(u: __m256i, s: __m256i) -> __m256i {
    unsafe { _mm256_maddubs_epi16(u, s) }
}

/// How a 32-weight format's codes enter the integer dot product.
#[derive(Clone, Copy)]
enum Codes {
    /// Signed codes (sign trick before `maddubs`).
    Signed,
    /// Unsigned codes `u`; the weight is `u − offset`, settled with the activation sums.
    Unsigned { offset: f32 },
    /// Unsigned codes plus a per-block minimum (f16 at this byte offset of the block).
    WithMin { at: usize },
}

/// Σ over blocks of 32 weights of `scale(block) × Σ codes(block) · activations`, four blocks
/// per step into independent accumulators (the FMA latency chain would otherwise bind).
/// Offsets and minima use the activations' per-block `d × Σ codes` (`dsums`).
#[inline(always)]
unsafe fn blocks32<const VNNI: bool>(
    w: &[u8],
    a: &Q8Acts,
    bytes: usize,
    codes: impl Fn(*const u8) -> __m256i,
    kind: Codes,
) -> f32 {
    unsafe {
        let n = w.len() / bytes;
        let (wp, qa, da, ds) = (w.as_ptr(), a.qs.as_ptr() as *const u8, a.d.as_ptr(), a.dsums.as_ptr());
        // Closures would not inherit the target features; macros expand in place.
        macro_rules! h16 {
            ($i:expr, $off:expr) => {
                u16::from_le_bytes([*wp.add(bytes * ($i) + $off), *wp.add(bytes * ($i) + $off + 1)]) as u64
            };
        }
        // Four blocks' f16 scales converted with one `vcvtph2ps` (assembled in integer
        // registers, off the vector ports).
        macro_rules! four {
            ($i:expr, $off:expr) => {{
                let packed = h16!($i, $off)
                    | (h16!($i + 1, $off) << 16)
                    | (h16!($i + 2, $off) << 32)
                    | (h16!($i + 3, $off) << 48);
                _mm_cvtph_ps(_mm_cvtsi64_si128(packed as i64))
            }};
        }
        macro_rules! dot {
            ($i:expr) => {{
                let b = wp.add(bytes * ($i));
                prefetch_ahead(b, bytes);
                let y = load(qa.add(32 * ($i)));
                match kind {
                    Codes::Signed => dot_ss::<VNNI>(codes(b), y),
                    _ => dot_us::<VNNI>(_mm256_setzero_si256(), codes(b), y),
                }
            }};
        }
        macro_rules! lane {
            ($v:expr, $k:expr) => {
                _mm256_permutevar8x32_ps(_mm256_castps128_ps256($v), _mm256_set1_epi32($k))
            };
        }
        let (mut a0, mut a1, mut a2, mut a3) =
            (_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps());
        let mut side = _mm_setzero_ps();
        let mut i = 0;
        while i + 4 <= n {
            let dw = four!(i, 0);
            let sc = _mm_mul_ps(dw, _mm_loadu_ps(da.add(i)));
            a0 = _mm256_fmadd_ps(lane!(sc, 0), _mm256_cvtepi32_ps(dot!(i)), a0);
            a1 = _mm256_fmadd_ps(lane!(sc, 1), _mm256_cvtepi32_ps(dot!(i + 1)), a1);
            a2 = _mm256_fmadd_ps(lane!(sc, 2), _mm256_cvtepi32_ps(dot!(i + 2)), a2);
            a3 = _mm256_fmadd_ps(lane!(sc, 3), _mm256_cvtepi32_ps(dot!(i + 3)), a3);
            match kind {
                Codes::Signed => {}
                Codes::Unsigned { offset } => {
                    side = _mm_fmadd_ps(_mm_mul_ps(dw, _mm_set1_ps(-offset)), _mm_loadu_ps(ds.add(i)), side)
                }
                Codes::WithMin { at } => side = _mm_fmadd_ps(four!(i, at), _mm_loadu_ps(ds.add(i)), side),
            }
            i += 4;
        }
        let mut tail = 0f32;
        while i < n {
            let b = wp.add(bytes * i);
            let dw = f16(b);
            a0 = _mm256_fmadd_ps(_mm256_set1_ps(dw * *da.add(i)), _mm256_cvtepi32_ps(dot!(i)), a0);
            match kind {
                Codes::Signed => {}
                Codes::Unsigned { offset } => tail -= offset * dw * *ds.add(i),
                Codes::WithMin { at } => tail += f16(b.add(at)) * *ds.add(i),
            }
            i += 1;
        }
        let side = _mm_add_ps(side, _mm_movehl_ps(side, side));
        let side = _mm_cvtss_f32(_mm_add_ss(side, _mm_movehdup_ps(side)));
        hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3))) + side + tail
    }
}

/// The 16 i16 scales of a super-block split into two vectors, each holding 8 scales in both
/// 128-bit lanes (groups 0..8 and 8..16), ready for [`pick_pair`].
#[inline(always)]
unsafe fn scale_lanes(scales16: __m256i) -> [__m256i; 2] {
    unsafe {
        let lo = _mm256_castsi256_si128(scales16);
        let hi = _mm256_extracti128_si256(scales16, 1);
        [_mm256_set_m128i(lo, lo), _mm256_set_m128i(hi, hi)]
    }
}

/// `[scale(2s) × 8 | scale(2s + 1) × 8]` from a lane vector of [`scale_lanes`].
#[inline(always)]
unsafe fn pick_pair(lanes: __m256i, s: usize) -> __m256i {
    unsafe {
        let (a, b) = ((4 * s) as i8, (4 * s + 2) as i8);
        let mask = _mm256_setr_epi8(
            a,
            a + 1,
            a,
            a + 1,
            a,
            a + 1,
            a,
            a + 1,
            a,
            a + 1,
            a,
            a + 1,
            a,
            a + 1,
            a,
            a + 1,
            b,
            b + 1,
            b,
            b + 1,
            b,
            b + 1,
            b,
            b + 1,
            b,
            b + 1,
            b,
            b + 1,
            b,
            b + 1,
            b,
            b + 1,
        );
        _mm256_shuffle_epi8(lanes, mask)
    }
}

/// Σ_g scale_g × bsum_g over a super-block's 16 groups, as 8 i32 lanes.
#[inline(always)]
unsafe fn scaled_bsums(scales16: __m256i, a: &Q8Acts, i: usize) -> __m256i {
    unsafe { _mm256_madd_epi16(scales16, _mm256_loadu_si256(a.bsums16.as_ptr().add(16 * i) as *const __m256i)) }
}

/// The 16 Q3_K scales (−32..31) of the 12-byte scale array at `s`, as i8 lanes (ggml's aux32
/// unpacking), formed in registers: a byte array stored and reloaded as one vector stalls
/// store forwarding, which cost [`q3_k`] a quarter of its speed on AVX2 and half on AVX-512.
#[inline(always)]
unsafe fn q3k_scales(s: *const u8) -> __m128i {
    unsafe {
        let w = |k: usize| u32::from_le_bytes([*s.add(4 * k), *s.add(4 * k + 1), *s.add(4 * k + 2), *s.add(4 * k + 3)]);
        let (a0, a1, tmp) = (w(0), w(1), w(2));
        let (k1, k2) = (0x0303_0303u32, 0x0f0f_0f0fu32);
        let aux = _mm_setr_epi32(
            ((a0 & k2) | ((tmp & k1) << 4)) as i32,
            ((a1 & k2) | (((tmp >> 2) & k1) << 4)) as i32,
            (((a0 >> 4) & k2) | (((tmp >> 4) & k1) << 4)) as i32,
            (((a1 >> 4) & k2) | (((tmp >> 6) & k1) << 4)) as i32,
        );
        _mm_sub_epi8(aux, _mm_set1_epi8(32))
    }
}

/// The 8 scales and 8 mins of the Q4_K/Q5_K 12-byte scale array at `s` (ggml's utmp
/// unpacking) as four little-endian words: bytes 0..8 scales, 8..16 mins. Kept in words, not
/// a byte array, so that the mins reach a vector register without a store and a reload (see
/// [`q3k_scales`]).
#[inline(always)]
unsafe fn k4_scales_mins(s: *const u8) -> [u32; 4] {
    unsafe {
        let w = |k: usize| u32::from_le_bytes([*s.add(4 * k), *s.add(4 * k + 1), *s.add(4 * k + 2), *s.add(4 * k + 3)]);
        let (u0, u1, u2) = (w(0), w(1), w(2));
        let (k1, k2, k3) = (0x3f3f_3f3fu32, 0x0f0f_0f0fu32, 0x0303_0303u32);
        [u0 & k1, (u2 & k2) | (((u0 >> 6) & k3) << 4), u1 & k1, ((u2 >> 4) & k2) | (((u1 >> 6) & k3) << 4)]
    }
}

/// Σ_j min_j × (bsum_2j + bsum_2j+1) over a super-block, as 8 i32 lanes; `mins`: the words of
/// [`k4_scales_mins`] in one register (the mins in bytes 8..16).
#[inline(always)]
unsafe fn k4_min_sums(mins: __m128i, a: &Q8Acts, i: usize) -> __m256i {
    unsafe {
        let dup = _mm_shuffle_epi8(mins, _mm_setr_epi8(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15));
        scaled_bsums(_mm256_cvtepu8_epi16(dup), a, i)
    }
}

/// Σ over the 8 slices of 32 weights of a super-block of `maddubs(codes(h, s), q8) ×
/// [scale pair]`, where slice `(h, s)` covers weights `128h + 32s ..` and groups `8h + 2s`
/// and `8h + 2s + 1` (the 2-bit-plane layout of Q2_K and Q3_K).
#[inline(always)]
unsafe fn planes_dot(lanes: &[__m256i; 2], qa: *const u8, codes: impl Fn(usize, usize) -> __m256i) -> __m256i {
    unsafe {
        let mut sumi = _mm256_setzero_si256();
        for (h, lane) in lanes.iter().enumerate() {
            for s in 0..4 {
                let p = dot_us16(codes(h, s), load(qa.add(128 * h + 32 * s)));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, pick_pair(*lane, s)));
            }
        }
        sumi
    }
}

/// How far ahead of the block being read the kernels prefetch, bytes. At 1 KiB a one-thread
/// GEMV at DRAM size streamed at 0.6–0.75 of the read probe on a 2-core Xeon guest (the
/// prefetch landed about one DRAM latency ahead at ~10 GB/s, so the arithmetic of a block
/// waited on its own load); at 4 KiB it streams at 0.86–1.0 (memwall-bench-kernels).
pub const PREFETCH_AHEAD: usize = DISTANCE;

const DISTANCE: usize = 4096;

/// Prefetch the cache lines of the block [`PREFETCH_AHEAD`] bytes ahead into L1 (the
/// hardware prefetcher alone leaves bandwidth unused).
#[inline(always)]
unsafe fn prefetch_ahead(b: *const u8, bytes: usize) {
    unsafe { prefetch_ahead_to::<_MM_HINT_T0>(b, bytes) }
}

/// [`prefetch_ahead`] to the cache level `HINT` names. Float rows prefetch into L2
/// (`_MM_HINT_T1`): their f32 activation row (16 KiB at 4096 columns, four times a Q8 row's)
/// shares L1 with the weights, and pulling 4 KiB ahead into a 32 KiB L1 evicted it. On a Zen 4
/// guest an F16 GEMV at DRAM size streamed at 11–13 GB/s on one thread with L1 prefetches and
/// 20–21 GB/s with L2 ones (memwall-bench-kernels); the quantized rows, whose activations are
/// a quarter the size, streamed as fast or faster into L1 (Q4_0 21 against 16 GB/s).
#[inline(always)]
pub(super) unsafe fn prefetch_ahead_to<const HINT: i32>(b: *const u8, bytes: usize) {
    unsafe {
        let mut off = 0;
        while off < bytes {
            _mm_prefetch::<HINT>(b.wrapping_add(PREFETCH_AHEAD + off) as *const i8);
            off += 64;
        }
    }
}

/// Q8_0 weights · Q8_0 activations.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C ([`available`]); `w` holds `a.qs.len() / 32`
/// blocks of 34 bytes.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q8_0(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q8_0_body::<false>(w, a) }
}

/// The body of [`q8_0`]; `VNNI` takes `vpdpbusd` for its byte dots where it has any.
#[inline(always)]
pub(super) unsafe fn q8_0_body<const VNNI: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        blocks32::<VNNI>(
            w,
            a,
            34,
            #[inline(always)]
            |b| load(b.add(2)),
            Codes::Signed,
        )
    }
}

/// 16 bytes of nibbles as 32 bytes: low nibbles (weights 0..16) in the low lane, high
/// nibbles (weights 16..32) in the high lane.
#[inline(always)]
unsafe fn nibbles32(p: *const u8) -> __m256i {
    unsafe {
        let q = _mm256_broadcastsi128_si256(_mm_loadu_si128(p as *const __m128i));
        let shifted = _mm256_srlv_epi32(q, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
        _mm256_and_si256(shifted, _mm256_set1_epi8(0x0f))
    }
}

/// The 5th bits of a Q5 block (`qh`, bit j = weight j) as 0x10 in each byte.
#[inline(always)]
unsafe fn high_bits32(p: *const u8) -> __m256i {
    unsafe {
        let qh = u32::from_le_bytes([*p, *p.add(1), *p.add(2), *p.add(3)]) as i32;
        // Byte j takes byte j/8 of qh, then tests bit j%8.
        let spread = _mm256_shuffle_epi8(
            _mm256_set1_epi32(qh),
            _mm256_setr_epi8(
                0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3,
            ),
        );
        let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
        let set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
        _mm256_and_si256(set, _mm256_set1_epi8(0x10))
    }
}

/// Q4_0 weights · Q8_0 activations.
///
/// # Safety
/// As [`q8_0`], with 18-byte blocks.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q4_0(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q4_0_body::<false>(w, a) }
}

/// The body of [`q4_0`]; `VNNI` takes `vpdpbusd` for its byte dots where it has any.
#[inline(always)]
pub(super) unsafe fn q4_0_body<const VNNI: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        blocks32::<VNNI>(
            w,
            a,
            18,
            #[inline(always)]
            |b| nibbles32(b.add(2)),
            Codes::Unsigned { offset: 8.0 },
        )
    }
}

/// Q4_1 weights · Q8_0 activations (codes 0..15 plus the block minimum).
///
/// # Safety
/// As [`q8_0`], with 20-byte blocks.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q4_1(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q4_1_body::<false>(w, a) }
}

/// The body of [`q4_1`]; `VNNI` takes `vpdpbusd` for its byte dots where it has any.
#[inline(always)]
pub(super) unsafe fn q4_1_body<const VNNI: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        blocks32::<VNNI>(
            w,
            a,
            20,
            #[inline(always)]
            |b| nibbles32(b.add(4)),
            Codes::WithMin { at: 2 },
        )
    }
}

/// Q5_0 weights · Q8_0 activations.
///
/// # Safety
/// As [`q8_0`], with 22-byte blocks.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q5_0(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q5_0_body::<false>(w, a) }
}

/// The body of [`q5_0`]; `VNNI` takes `vpdpbusd` for its byte dots where it has any.
#[inline(always)]
pub(super) unsafe fn q5_0_body<const VNNI: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        blocks32::<VNNI>(
            w,
            a,
            22,
            #[inline(always)]
            |b| _mm256_or_si256(nibbles32(b.add(6)), high_bits32(b.add(2))),
            Codes::Unsigned { offset: 16.0 },
        )
    }
}

/// Q5_1 weights · Q8_0 activations.
///
/// # Safety
/// As [`q8_0`], with 24-byte blocks.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q5_1(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q5_1_body::<false>(w, a) }
}

/// The body of [`q5_1`]; `VNNI` takes `vpdpbusd` for its byte dots where it has any.
#[inline(always)]
pub(super) unsafe fn q5_1_body<const VNNI: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        blocks32::<VNNI>(
            w,
            a,
            24,
            #[inline(always)]
            |b| _mm256_or_si256(nibbles32(b.add(8)), high_bits32(b.add(4))),
            Codes::WithMin { at: 2 },
        )
    }
}

/// IQ4_NL weights · Q8_0 activations (the code book looked up with `pshufb`).
///
/// # Safety
/// As [`q8_0`], with 18-byte blocks.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn iq4_nl(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { iq4_nl_body::<false>(w, a) }
}

/// The body of [`iq4_nl`]; `VNNI` takes `vpdpbusd` for its byte dots where it has any.
#[inline(always)]
pub(super) unsafe fn iq4_nl_body<const VNNI: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        let v = crate::formats::legacy::IQ4_NL_VALUES;
        let table = _mm256_setr_epi8(
            v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15], v[0],
            v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15],
        );
        blocks32::<VNNI>(
            w,
            a,
            18,
            #[inline(always)]
            |b| _mm256_shuffle_epi8(table, nibbles32(b.add(2))),
            Codes::Signed,
        )
    }
}

/// MXFP4 weights · Q8_0 activations: the doubled E2M1 code book looked up with `pshufb`, as
/// IQ4_NL's, times the halved E8M0 scale (a power of two, formed without a conversion).
///
/// # Safety
/// As [`q8_0`], with 17-byte blocks.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn mxfp4(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { mxfp4_body::<false>(w, a) }
}

/// The body of [`mxfp4`]; `VNNI` takes `vpdpbusd` for its byte dots where it has any.
#[inline(always)]
pub(super) unsafe fn mxfp4_body<const VNNI: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        use crate::formats::mxfp4::{MXFP4_VALUES as v, e8m0_half};
        let table = _mm256_setr_epi8(
            v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15], v[0],
            v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], v[12], v[13], v[14], v[15],
        );
        let (wp, qa, da) = (w.as_ptr(), a.qs.as_ptr() as *const u8, a.d.as_ptr());
        // Two accumulators: the FMA latency chain would otherwise bind.
        let mut acc = [_mm256_setzero_ps(), _mm256_setzero_ps()];
        for i in 0..w.len() / 17 {
            let b = wp.add(17 * i);
            prefetch_ahead(b, 17);
            let p = dot_ss::<VNNI>(_mm256_shuffle_epi8(table, nibbles32(b.add(1))), load(qa.add(32 * i)));
            let d = _mm256_set1_ps(e8m0_half(*b) * *da.add(i));
            acc[i % 2] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(p), acc[i % 2]);
        }
        hsum(_mm256_add_ps(acc[0], acc[1]))
    }
}

/// Q4_K (`five_bit = false`) or Q5_K weights · Q8_K activations: 8 sub-blocks of 32 with
/// 6-bit scales and mins; Q5_K adds a fifth bit per weight from its `qh` plane. The scales
/// are widened to i16 in one register and each sub-block's is spread by a byte shuffle, as
/// ggml's kernel does, rather than moved one at a time from a general register
/// (`vmovd` + `vpbroadcastw` per sub-block). On one Zen 4 thread at cache size both ran at
/// 18–19 GB/s (memwall-bench-kernels): the kernel is bound by its multiply-adds there.
#[inline(always)]
unsafe fn q45_k(w: &[u8], a: &Q8Acts, bytes: usize, five_bit: bool) -> f32 {
    unsafe {
        let m4 = _mm256_set1_epi8(0x0f);
        let m1 = _mm256_set1_epi8(0x01);
        let qs_at = if five_bit { 48 } else { 16 };
        // Shuffle patterns: pattern j repeats bytes (2j, 2j + 1), the i16 scale of sub-block j.
        let spread = |j: i16| _mm256_set1_epi16(((2 * j + 1) << 8) | (2 * j));
        let mut acc = _mm256_setzero_ps();
        let mut acc_min = _mm256_setzero_ps();
        for i in 0..w.len() / bytes {
            let b = w.as_ptr().add(bytes * i);
            prefetch_ahead(b, bytes);
            let sm = k4_scales_mins(b.add(4));
            let smv = _mm_setr_epi32(sm[0] as i32, sm[1] as i32, sm[2] as i32, sm[3] as i32);
            let scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(smv));
            let qa = a.qs.as_ptr().add(256 * i) as *const u8;
            let hv = if five_bit { load(b.add(16)) } else { _mm256_setzero_si256() };
            let mut sumi = [_mm256_setzero_si256(), _mm256_setzero_si256()];
            for c in 0..4 {
                let q = load(b.add(qs_at + 32 * c));
                let mut lo = _mm256_and_si256(q, m4);
                let mut hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                if five_bit {
                    lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(shr16(hv, 2 * c), m1), 4));
                    hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(shr16(hv, 2 * c + 1), m1), 4));
                }
                let j = 2 * c as i16;
                let p0 = _mm256_madd_epi16(dot_us16(lo, load(qa.add(64 * c))), _mm256_shuffle_epi8(scales, spread(j)));
                let p1 = _mm256_madd_epi16(
                    dot_us16(hi, load(qa.add(64 * c + 32))),
                    _mm256_shuffle_epi8(scales, spread(j + 1)),
                );
                sumi[c % 2] = _mm256_add_epi32(sumi[c % 2], _mm256_add_epi32(p0, p1));
            }
            let da = a.d[i];
            acc = _mm256_fmadd_ps(
                _mm256_set1_ps(f16(b) * da),
                _mm256_cvtepi32_ps(_mm256_add_epi32(sumi[0], sumi[1])),
                acc,
            );
            let msum = k4_min_sums(smv, a, i);
            acc_min = _mm256_fmadd_ps(_mm256_set1_ps(f16(b.add(2)) * da), _mm256_cvtepi32_ps(msum), acc_min);
        }
        hsum(_mm256_sub_ps(acc, acc_min))
    }
}

/// Q4_K weights · Q8_K activations.
///
/// # Safety
/// As [`q8_0`], with 144-byte blocks and Q8_K activations.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q4_k(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q4_k_body::<false>(w, a) }
}

/// The body of [`q4_k`]; `VNNI` takes `vpdpbusd` for its byte dots where it has any.
#[inline(always)]
pub(super) unsafe fn q4_k_body<const VNNI: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q45_k(w, a, 144, false) }
}

/// Q6_K weights · Q8_K activations.
///
/// # Safety
/// As [`q8_0`], with 210-byte blocks and Q8_K activations.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q6_k(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q6_k_body::<false>(w, a) }
}

/// The body of [`q6_k`]; `VNNI` takes `vpdpbusd` for its byte dots where it has any.
#[inline(always)]
pub(super) unsafe fn q6_k_body<const VNNI: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        let m4 = _mm256_set1_epi8(0x0f);
        let m2 = _mm256_set1_epi8(0x03);
        let mut acc = _mm256_setzero_ps();
        for i in 0..w.len() / 210 {
            let b = w.as_ptr().add(210 * i);
            prefetch_ahead(b, 210);
            let scales16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(b.add(192) as *const __m128i));
            let lanes = scale_lanes(scales16);
            let qa = a.qs.as_ptr().add(256 * i) as *const u8;
            // Codes are 0..63 for weights −32..31: subtract 32 × Σ scale × bsum.
            let mut sumi = _mm256_slli_epi32(scaled_bsums(scales16, a, i), 5);
            sumi = _mm256_sub_epi32(_mm256_setzero_si256(), sumi);
            for (h, lane) in lanes.iter().enumerate() {
                let q4a = load(b.add(64 * h));
                let q4b = load(b.add(64 * h + 32));
                let qh = load(b.add(128 + 32 * h));
                let lows = [
                    _mm256_and_si256(q4a, m4),
                    _mm256_and_si256(q4b, m4),
                    _mm256_and_si256(_mm256_srli_epi16(q4a, 4), m4),
                    _mm256_and_si256(_mm256_srli_epi16(q4b, 4), m4),
                ];
                for (s, low) in lows.into_iter().enumerate() {
                    let high = _mm256_and_si256(shr16(qh, 2 * s), m2);
                    let u = _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
                    let p = dot_us16(u, load(qa.add(128 * h + 32 * s)));
                    sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, pick_pair(*lane, s)));
                }
            }
            acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(b.add(208)) * a.d[i]), _mm256_cvtepi32_ps(sumi), acc);
        }
        hsum(acc)
    }
}

/// Q2_K weights · Q8_K activations.
///
/// # Safety
/// As [`q8_0`], with 84-byte blocks and Q8_K activations.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q2_k(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q2_k_body::<false>(w, a) }
}

/// The body of [`q2_k`]; `VNNI` takes `vpdpbusd` for its byte dots where it has any.
#[inline(always)]
pub(super) unsafe fn q2_k_body<const VNNI: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        let m2 = _mm256_set1_epi8(0x03);
        let m4 = _mm_set1_epi8(0x0f);
        let mut acc = _mm256_setzero_ps();
        let mut acc_min = _mm256_setzero_ps();
        for i in 0..w.len() / 84 {
            let b = w.as_ptr().add(84 * i);
            prefetch_ahead(b, 84);
            let packed = _mm_loadu_si128(b as *const __m128i);
            let scales16 = _mm256_cvtepu8_epi16(_mm_and_si128(packed, m4));
            let mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), m4));
            let lanes = scale_lanes(scales16);
            let qa = a.qs.as_ptr().add(256 * i) as *const u8;
            let qv = [load(b.add(16)), load(b.add(48))];
            let sumi = planes_dot(
                &lanes,
                qa,
                #[inline(always)]
                |h, s| _mm256_and_si256(shr16(qv[h], 2 * s), m2),
            );
            let da = a.d[i];
            acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(b.add(80)) * da), _mm256_cvtepi32_ps(sumi), acc);
            let msum = scaled_bsums(mins16, a, i);
            acc_min = _mm256_fmadd_ps(_mm256_set1_ps(f16(b.add(82)) * da), _mm256_cvtepi32_ps(msum), acc_min);
        }
        hsum(_mm256_sub_ps(acc, acc_min))
    }
}

/// Q3_K weights · Q8_K activations.
///
/// # Safety
/// As [`q8_0`], with 110-byte blocks and Q8_K activations.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q3_k(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q3_k_body::<false>(w, a) }
}

/// The body of [`q3_k`]; `VNNI` takes `vpdpbusd` for its byte dots where it has any.
#[inline(always)]
pub(super) unsafe fn q3_k_body<const VNNI: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        let m2 = _mm256_set1_epi8(0x03);
        let m4b = _mm256_set1_epi8(0x04);
        let mut acc = _mm256_setzero_ps();
        for i in 0..w.len() / 110 {
            let b = w.as_ptr().add(110 * i);
            prefetch_ahead(b, 110);
            let scales16 = _mm256_cvtepi8_epi16(q3k_scales(b.add(96)));
            let lanes = scale_lanes(scales16);
            let qa = a.qs.as_ptr().add(256 * i) as *const u8;
            let hv = load(b);
            // Codes u = low | high << 2 are 0..7 for weights −4..3: subtract 4 × Σ scale × bsum.
            let qv = [load(b.add(32)), load(b.add(64))];
            // Move mask bit k straight to bit 2 of each byte (one shift and one mask).
            let dots = planes_dot(
                &lanes,
                qa,
                #[inline(always)]
                |h, s| {
                    let low = _mm256_and_si256(shr16(qv[h], 2 * s), m2);
                    let k = 4 * h + s;
                    let moved =
                        if k >= 2 { shr16(hv, k - 2) } else { _mm256_sll_epi16(hv, _mm_cvtsi32_si128((2 - k) as i32)) };
                    _mm256_or_si256(low, _mm256_and_si256(moved, m4b))
                },
            );
            let sumi = _mm256_sub_epi32(dots, _mm256_slli_epi32(scaled_bsums(scales16, a, i), 2));
            acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(b.add(108)) * a.d[i]), _mm256_cvtepi32_ps(sumi), acc);
        }
        hsum(acc)
    }
}

/// TQ2_0 weights · Q8_K activations.
///
/// # Safety
/// As [`q8_0`], with 66-byte blocks and Q8_K activations.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn tq2_0(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { tq2_0_body::<false>(w, a) }
}

/// The body of [`tq2_0`]; `VNNI` takes `vpdpbusd` for its byte dots where it has any.
#[inline(always)]
pub(super) unsafe fn tq2_0_body<const VNNI: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        let m2 = _mm256_set1_epi8(0x03);
        let mut acc = _mm256_setzero_ps();
        let mut side = 0f32;
        for i in 0..w.len() / 66 {
            let b = w.as_ptr().add(66 * i);
            prefetch_ahead(b, 66);
            let qa = a.qs.as_ptr().add(256 * i) as *const u8;
            let mut sum = _mm256_setzero_si256();
            for h in 0..2 {
                let qv = load(b.add(32 * h));
                for s in 0..4 {
                    let u = _mm256_and_si256(shr16(qv, 2 * s), m2);
                    sum = _mm256_add_epi32(
                        sum,
                        dot_us::<VNNI>(_mm256_setzero_si256(), u, load(qa.add(128 * h + 32 * s))),
                    );
                }
            }
            // Codes are trit + 1: subtract d_w × (d_a Σ activations) once per block.
            let dw = f16(b.add(64));
            side -= dw * a.dsums[i];
            acc = _mm256_fmadd_ps(_mm256_set1_ps(dw * a.d[i]), _mm256_cvtepi32_ps(sum), acc);
        }
        hsum(acc) + side
    }
}

/// `3 × v` per byte, modulo 256 (two wrapping byte adds).
#[inline(always)]
unsafe fn times3(v: __m256i) -> __m256i {
    unsafe { _mm256_add_epi8(v, _mm256_add_epi8(v, v)) }
}

/// The top trit of each byte, `⌊3v / 256⌋ ∈ {0, 1, 2}`, i.e. `(v ≥ 86) + (v ≥ 171)`, for
/// bytes held sign-flipped (`f = v ^ 0x80`, so signed compares order them as unsigned).
/// Multiplying by 3 commutes with the flip modulo 256 (`3(v + 128) ≡ 3v + 128`), so a
/// block is flipped once and then only multiplied.
#[inline(always)]
unsafe fn top_trit_flipped(f: __m256i) -> __m256i {
    unsafe {
        let ge86 = _mm256_cmpgt_epi8(f, _mm256_set1_epi8((85u8 ^ 0x80) as i8));
        let ge171 = _mm256_cmpgt_epi8(f, _mm256_set1_epi8((170u8 ^ 0x80) as i8));
        _mm256_abs_epi8(_mm256_add_epi8(ge86, ge171))
    }
}

/// TQ1_0 weights · Q8_K activations.
///
/// # Safety
/// As [`q8_0`], with 54-byte blocks and Q8_K activations.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn tq1_0(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { tq1_0_body::<false>(w, a) }
}

/// The body of [`tq1_0`]; `VNNI` takes `vpdpbusd` for its byte dots where it has any.
#[inline(always)]
pub(super) unsafe fn tq1_0_body<const VNNI: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        let mut acc = _mm256_setzero_ps();
        let mut side = 0f32;
        for i in 0..w.len() / 54 {
            let b = w.as_ptr().add(54 * i);
            prefetch_ahead(b, 54);
            let qa = a.qs.as_ptr().add(256 * i) as *const u8;
            let mut sum = _mm256_setzero_si256();
            // Weights 0..160: trit t of the 32 bytes qs[0..32], multiplying by 3 each step.
            let flip = _mm256_set1_epi8(-128);
            let mut v = _mm256_xor_si256(load(b), flip);
            for t in 0..5 {
                sum = _mm256_add_epi32(
                    sum,
                    dot_us::<VNNI>(_mm256_setzero_si256(), top_trit_flipped(v), load(qa.add(32 * t))),
                );
                v = times3(v);
            }
            // Weights 160..240 (qs[32..48], 5 trits) and 240..256 (qh, 4 trits): one vector
            // [qs[32..48] | qh × 4] raised to 3^0..3^4, lanes picked per 32-bit group.
            let q1 = _mm_loadu_si128(b.add(32) as *const __m128i);
            let qh = u32::from_le_bytes([*b.add(48), *b.add(49), *b.add(50), *b.add(51)]) as i32;
            let p0 = _mm256_xor_si256(_mm256_set_m128i(_mm_set1_epi32(qh), q1), flip);
            let p1 = times3(p0);
            let p2 = times3(p1);
            let p3 = times3(p2);
            let p4 = times3(p3);
            let pair01 = _mm256_permute2x128_si256(p0, p1, 0x20);
            let pair23 = _mm256_permute2x128_si256(p2, p3, 0x20);
            let tail = _mm256_blend_epi32(
                _mm256_blend_epi32(_mm256_blend_epi32(_mm256_blend_epi32(p4, p0, 0x10), p1, 0x20), p2, 0x40),
                p3,
                0x80,
            );
            for (k, v) in [pair01, pair23, tail].into_iter().enumerate() {
                sum = _mm256_add_epi32(
                    sum,
                    dot_us::<VNNI>(_mm256_setzero_si256(), top_trit_flipped(v), load(qa.add(160 + 32 * k))),
                );
            }
            let dw = f16(b.add(52));
            side -= dw * a.dsums[i];
            acc = _mm256_fmadd_ps(_mm256_set1_ps(dw * a.d[i]), _mm256_cvtepi32_ps(sum), acc);
        }
        hsum(acc) + side
    }
}

/// Q5_K weights · Q8_K activations.
///
/// # Safety
/// As [`q8_0`], with 176-byte blocks and Q8_K activations.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn q5_k(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q5_k_body::<false>(w, a) }
}

/// The body of [`q5_k`]; `VNNI` takes `vpdpbusd` for its byte dots where it has any.
#[inline(always)]
pub(super) unsafe fn q5_k_body<const VNNI: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q45_k(w, a, 176, true) }
}

/// Float rows (F32, F16 or BF16, 8 weights per step) · f32 activations, four accumulators;
/// the row `w` of `width`-byte weights is prefetched [`PREFETCH_AHEAD`] bytes ahead into L2
/// ([`prefetch_ahead_to`]).
#[inline(always)]
unsafe fn float_dot(n: usize, x: &[f32], w: *const u8, width: usize, load8: impl Fn(usize) -> __m256) -> f32 {
    unsafe {
        let xp = x.as_ptr();
        let (mut a0, mut a1, mut a2, mut a3) =
            (_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps());
        let mut i = 0;
        while i + 32 <= n {
            prefetch_ahead_to::<_MM_HINT_T1>(w.wrapping_add(width * i), 32 * width);
            a0 = _mm256_fmadd_ps(load8(i), _mm256_loadu_ps(xp.add(i)), a0);
            a1 = _mm256_fmadd_ps(load8(i + 8), _mm256_loadu_ps(xp.add(i + 8)), a1);
            a2 = _mm256_fmadd_ps(load8(i + 16), _mm256_loadu_ps(xp.add(i + 16)), a2);
            a3 = _mm256_fmadd_ps(load8(i + 24), _mm256_loadu_ps(xp.add(i + 24)), a3);
            i += 32;
        }
        while i + 8 <= n {
            a0 = _mm256_fmadd_ps(load8(i), _mm256_loadu_ps(xp.add(i)), a0);
            i += 8;
        }
        let mut s = hsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
        // Tail of fewer than 8 weights.
        let mut tail = [0f32; 8];
        if i < n {
            _mm256_storeu_ps(tail.as_mut_ptr(), load8(n - 8));
            for j in i..n {
                s += tail[j + 8 - n] * x[j];
            }
        }
        s
    }
}

/// F16 weights · f32 activations.
///
/// # Safety
/// The CPU must support AVX2, FMA and F16C; `w` holds `x.len()` binary16 values and
/// `x.len() >= 8` when it is not a multiple of 8.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn f16_row(w: &[u8], x: &[f32]) -> f32 {
    unsafe {
        let p = w.as_ptr();
        float_dot(x.len(), x, p, 2, |i| _mm256_cvtph_ps(_mm_loadu_si128(p.add(2 * i) as *const __m128i)))
    }
}

/// BF16 weights · f32 activations.
///
/// # Safety
/// As [`f16_row`].
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn bf16_row(w: &[u8], x: &[f32]) -> f32 {
    unsafe {
        let p = w.as_ptr();
        float_dot(x.len(), x, p, 2, |i| {
            let h = _mm256_cvtepu16_epi32(_mm_loadu_si128(p.add(2 * i) as *const __m128i));
            _mm256_castsi256_ps(_mm256_slli_epi32(h, 16))
        })
    }
}

/// F32 weights · f32 activations.
///
/// # Safety
/// As [`f16_row`], with 4-byte weights.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn f32_row(w: &[u8], x: &[f32]) -> f32 {
    unsafe {
        let p = w.as_ptr();
        float_dot(x.len(), x, p, 4, |i| _mm256_loadu_ps(p.add(4 * i) as *const f32))
    }
}

/// Read `buf` as fast as this core can: 256-bit loads into four accumulators with the same
/// software prefetch as the GEMV kernels ([`PREFETCH_AHEAD`]), so the bench's bandwidth reference streams
/// the way the kernels do. Returns a checksum so the reads cannot be elided.
///
/// # Safety
/// The CPU must support AVX2 ([`available`]).
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn stream_read(buf: &[u8]) -> u64 {
    unsafe {
        let p = buf.as_ptr();
        let n = buf.len() / 128 * 128;
        let mut acc = [_mm256_setzero_si256(); 4];
        let mut i = 0;
        while i < n {
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(i + PREFETCH_AHEAD) as *const i8);
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(i + PREFETCH_AHEAD + 64) as *const i8);
            for (k, a) in acc.iter_mut().enumerate() {
                *a = _mm256_add_epi64(*a, load(p.add(i + 32 * k)));
            }
            i += 128;
        }
        let s = _mm256_add_epi64(_mm256_add_epi64(acc[0], acc[1]), _mm256_add_epi64(acc[2], acc[3]));
        let mut lanes = [0u64; 4];
        _mm256_storeu_si256(lanes.as_mut_ptr() as *mut __m256i, s);
        lanes.iter().fold(0u64, |a, &b| a.wrapping_add(b)) + buf[n..].iter().map(|&b| b as u64).sum::<u64>()
    }
}

/// Largest lane of `v`.
#[inline(always)]
unsafe fn hmax(v: __m256) -> f32 {
    unsafe {
        let m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let m = _mm_max_ps(m, _mm_movehl_ps(m, m));
        let m = _mm_max_ss(m, _mm_movehdup_ps(m));
        _mm_cvtss_f32(m)
    }
}

/// Four vectors of 8 i32 (each within i8 after saturation) as 32 consecutive i8.
#[inline(always)]
unsafe fn pack_i8(q: [__m256i; 4]) -> __m256i {
    unsafe {
        // packs interleave the 128-bit lanes; the permute puts the 4-byte groups back in order.
        let c = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        _mm256_permutevar8x32_epi32(c, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
    }
}

/// [`Q8Acts::q8_0`]'s codes and scales, 8 lanes at a time: `q = roundf(x × id)` as
/// `trunc(x × id + copysign(0.49999997, x × id))`, which equals `roundf` on every float of
/// magnitude ≤ 300 (checked exhaustively; the codes are ≤ 127), then saturated to i8.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C; `x.len() = qs.len() = 32 × d.len()`.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn quantize_q8_0(x: &[f32], qs: &mut [i8], d: &mut [f32]) {
    debug_assert!(x.len() == qs.len() && x.len() == 32 * d.len());
    unsafe {
        let sign = _mm256_set1_ps(-0.0);
        let half = _mm256_set1_ps(0.499_999_97);
        for (b, db) in d.iter_mut().enumerate() {
            let p = x.as_ptr().add(32 * b);
            let v = [0, 8, 16, 24].map(|o| _mm256_loadu_ps(p.add(o)));
            let abs = v.map(|v| _mm256_andnot_ps(sign, v));
            let amax = hmax(_mm256_max_ps(_mm256_max_ps(abs[0], abs[1]), _mm256_max_ps(abs[2], abs[3])));
            let s = amax / 127.0;
            let id = _mm256_set1_ps(if s != 0.0 { 1.0 / s } else { 0.0 });
            let q = v.map(|v| {
                let y = _mm256_mul_ps(v, id);
                _mm256_cvttps_epi32(_mm256_add_ps(y, _mm256_or_ps(half, _mm256_and_ps(y, sign))))
            });
            _mm256_storeu_si256(qs.as_mut_ptr().add(32 * b) as *mut __m256i, pack_i8(q));
            *db = crate::formats::through_f16(s);
        }
    }
}

/// [`Q8Acts::q8_k`]'s codes and scales: the signed extreme is the first value of largest
/// magnitude, `q = nearest(x × iscale)` by the default round-to-nearest-even conversion,
/// capped at 127.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C; `x.len() = qs.len() = 256 × d.len()`.
#[target_feature(enable = "avx2,fma,f16c")]
pub unsafe fn quantize_q8_k(x: &[f32], qs: &mut [i8], d: &mut [f32]) {
    debug_assert!(x.len() == qs.len() && x.len() == 256 * d.len());
    unsafe {
        let sign = _mm256_set1_ps(-0.0);
        let cap = _mm256_set1_epi32(127);
        for (b, db) in d.iter_mut().enumerate() {
            let xb = &x[256 * b..256 * (b + 1)];
            let mut m = _mm256_setzero_ps();
            for o in (0..256).step_by(8) {
                m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(xb.as_ptr().add(o))));
            }
            let amax = hmax(m);
            if amax == 0.0 {
                *db = 0.0;
                continue;
            }
            let max = xb.iter().copied().find(|v| v.abs() == amax).unwrap_or(amax);
            let iscale = -127.0 / max;
            let is = _mm256_set1_ps(iscale);
            for o in (0..256).step_by(32) {
                let q = [0, 8, 16, 24].map(|k| {
                    let y = _mm256_mul_ps(_mm256_loadu_ps(xb.as_ptr().add(o + k)), is);
                    _mm256_min_epi32(_mm256_cvtps_epi32(y), cap)
                });
                _mm256_storeu_si256(qs.as_mut_ptr().add(256 * b + o) as *mut __m256i, pack_i8(q));
            }
            *db = 1.0 / iscale;
        }
    }
}
