//! Decode attention over a KV cache's tokens, tiled so that K and V stream at memory
//! speed: a tile of [`TILE`] keys is dequantized to f32 once and dotted with every query head
//! of the group in lane-parallel f32; the tile's scores fold into an online softmax (running
//! maximum `m`, sum `l` and output `o` rescaled by `e^{m_old − m_new}` when the maximum
//! grows); the tile's values are dequantized once and accumulated into every head. One pass
//! over K and V, no per-token function call, no per-token scalar `exp`.
//!
//! One body, generic over its vector operations (`Ops`: four-key dots, four-row updates and
//! row dequantization), is compiled for AVX-512 (16-float registers), AVX2 + FMA (8-float)
//! and portable Rust, and chosen at run time. [`crate::kv::attend_f32`] on the dequantized
//! cache is its oracle on every path this CPU has (tests/kv.rs).

#![allow(unsafe_code)]

use std::ops::Range;

use memwall_spec::GgmlType;

use crate::simd::Isa;

/// Tokens per tile: 32 keys of 128 f32 are 16 KiB, resident in L1/L2 while every head of the
/// group reads them.
pub const TILE: usize = 32;

/// A cache's rows and how they are stored.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rows<'a> {
    /// Formats of the keys and the values (F16, Q8_0 or Q4_0).
    pub k_format: GgmlType,
    pub v_format: GgmlType,
    /// The keys and values, token-major (each token's KV heads side by side).
    pub k: &'a [u8],
    pub v: &'a [u8],
    /// Bytes of one KV head's key row and value row.
    pub row_k: usize,
    pub row_v: usize,
    /// KV heads per token, and elements per row.
    pub n_kv_heads: usize,
    pub head_dim: usize,
}

/// The running softmax state of a range of query heads: per head the largest score,
/// `Σ e^{s − m}` and `Σ e^{s − m} v` (`heads × head_dim`).
pub(crate) struct State<'a> {
    pub max: &'a mut [f32],
    pub sum: &'a mut [f32],
    pub out: &'a mut [f32],
}

/// Fold the cached tokens `tokens` (slots) into `state` for the query heads `heads` of
/// `n_heads`, whose queries `q` (`heads.len() × head_dim`) are already multiplied by
/// `1/sqrt(head_dim)`. Tiles of tokens are the outer loop and the KV heads the inner one,
/// so that memory is read in contiguous runs of whole tokens. The caller has checked every
/// extent against the cache.
///
/// `isa` picks the path; one this CPU lacks (and NEON, whose FMA is baseline) runs the portable
/// body.
pub(crate) fn attend(
    isa: Isa,
    rows: &Rows,
    n_heads: usize,
    heads: Range<usize>,
    q: &[f32],
    tokens: Range<usize>,
    state: State,
) {
    match isa {
        // SAFETY: the CPU has the features the function is compiled for (`supported`).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 if isa.supported() => unsafe { x86::avx512(rows, n_heads, heads, q, tokens, state) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 if isa.supported() => unsafe { x86::avx2(rows, n_heads, heads, q, tokens, state) },
        // SAFETY: the portable operations use no path-specific instruction.
        _ if cfg!(target_arch = "aarch64") => unsafe { body::<Portable<true>>(rows, n_heads, heads, q, tokens, state) },
        _ => unsafe { body::<Portable<false>>(rows, n_heads, heads, q, tokens, state) },
    }
}

/// The vector operations of the tile loop, one implementation per path. Every slice holds at
/// least `q.len()` (`o.len()`) elements.
///
/// # Safety
/// An implementation's methods may use its path's instructions: they are called only from
/// code compiled with that path's features, on a CPU that has them.
unsafe trait Ops {
    /// Whether `a·b + c` is one fused instruction on this path.
    const FUSED: bool;
    /// `q · k` for four keys.
    ///
    /// # Safety
    /// As the trait's.
    unsafe fn dot4(q: &[f32], keys: [&[f32]; 4]) -> [f32; 4];
    /// `o += Σ w_i v_i` over four value rows.
    ///
    /// # Safety
    /// As the trait's.
    unsafe fn axpy4(o: &mut [f32], w: [f32; 4], v: [&[f32]; 4]);
    /// One cached row in `format` (F16, Q8_0 or Q4_0) to f32, exactly as
    /// [`crate::formats::dequantize`] gives it (`b` holds exactly `out.len()` elements).
    ///
    /// # Safety
    /// As the trait's.
    #[inline(always)]
    unsafe fn dequantize_row(format: GgmlType, b: &[u8], out: &mut [f32]) {
        dequantize_row(format, b, out)
    }
}

/// Plain Rust (the baseline x86-64 without FMA, and AArch64 where FMA is baseline).
struct Portable<const FUSED: bool>;

// SAFETY: plain Rust; no path-specific instruction.
unsafe impl<const F: bool> Ops for Portable<F> {
    const FUSED: bool = F;

    #[inline(always)]
    unsafe fn dot4(q: &[f32], keys: [&[f32]; 4]) -> [f32; 4] {
        keys.map(|k| q.iter().zip(k).fold(0f32, |s, (a, b)| fma(F, *a, *b, s)))
    }

    #[inline(always)]
    unsafe fn axpy4(o: &mut [f32], w: [f32; 4], v: [&[f32]; 4]) {
        for (d, o) in o.iter_mut().enumerate() {
            let a = fma(F, w[0], v[0][d], *o);
            let b = fma(F, w[1], v[1][d], w[2] * v[2][d]);
            *o = fma(F, w[3], v[3][d], a + b);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::*;

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma,f16c")]
    pub(super) unsafe fn avx512(
        rows: &Rows,
        n_heads: usize,
        heads: Range<usize>,
        q: &[f32],
        tokens: Range<usize>,
        state: State,
    ) {
        // SAFETY: compiled with AVX-512's features; the caller checked the CPU has them.
        unsafe { body::<Avx512>(rows, n_heads, heads, q, tokens, state) }
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn avx2(
        rows: &Rows,
        n_heads: usize,
        heads: Range<usize>,
        q: &[f32],
        tokens: Range<usize>,
        state: State,
    ) {
        // SAFETY: as above, for AVX2.
        unsafe { body::<Avx2>(rows, n_heads, heads, q, tokens, state) }
    }

    /// The four-key dot and the four-row update on `$w`-lane registers: `$load`, `$fmadd`,
    /// `$mul`, `$add`, `$set1`, `$store` and `$sum` are that width's intrinsics. Elements past
    /// the last whole register go through the scalar tail.
    macro_rules! lanes {
        ($name:ident, $w:expr, $load:ident, $fmadd:ident, $mul:ident, $add:ident, $set1:ident, $store:ident, $zero:ident, $sum:path, $deq:path) => {
            pub(super) struct $name;

            // SAFETY: reached only through `body::<$name>` in the function of this module
            // compiled with the width's features, called on a CPU that has them.
            unsafe impl Ops for $name {
                const FUSED: bool = true;

                #[inline(always)]
                unsafe fn dequantize_row(format: GgmlType, b: &[u8], out: &mut [f32]) {
                    let bytes = out.len() / format.block_size() as usize * format.type_size() as usize;
                    assert!(b.len() == bytes && out.len().is_multiple_of(format.block_size() as usize));
                    // SAFETY: the caller runs on a CPU with this width's features; `b` holds
                    // exactly the blocks of `out.len()` elements, which the loops read.
                    unsafe { $deq(format, b, out) }
                }

                #[inline(always)]
                unsafe fn dot4(q: &[f32], keys: [&[f32]; 4]) -> [f32; 4] {
                    let n = q.len();
                    assert!(keys.iter().all(|k| k.len() >= n));
                    let whole = n / $w * $w;
                    // SAFETY: the caller runs on a CPU with this width's features; every load
                    // is within `whole ≤ n` elements of slices at least `n` long.
                    unsafe {
                        let (mut a0, mut a1, mut a2, mut a3) = ($zero(), $zero(), $zero(), $zero());
                        let qp = q.as_ptr();
                        let kp = keys.map(|k| k.as_ptr());
                        let mut c = 0;
                        while c < whole {
                            let qv = $load(qp.add(c));
                            a0 = $fmadd(qv, $load(kp[0].add(c)), a0);
                            a1 = $fmadd(qv, $load(kp[1].add(c)), a1);
                            a2 = $fmadd(qv, $load(kp[2].add(c)), a2);
                            a3 = $fmadd(qv, $load(kp[3].add(c)), a3);
                            c += $w;
                        }
                        let mut out = [$sum(a0), $sum(a1), $sum(a2), $sum(a3)];
                        for (o, k) in out.iter_mut().zip(keys) {
                            for d in whole..n {
                                *o = q[d].mul_add(k[d], *o);
                            }
                        }
                        out
                    }
                }

                #[inline(always)]
                unsafe fn axpy4(o: &mut [f32], w: [f32; 4], v: [&[f32]; 4]) {
                    let n = o.len();
                    assert!(v.iter().all(|r| r.len() >= n));
                    let whole = n / $w * $w;
                    // SAFETY: as in `dot4`; stores stay within `o`'s first `whole` elements.
                    unsafe {
                        let ws = w.map(|x| $set1(x));
                        let vp = v.map(|r| r.as_ptr());
                        let op = o.as_mut_ptr();
                        let mut c = 0;
                        while c < whole {
                            let a = $fmadd(ws[0], $load(vp[0].add(c)), $load(op.add(c)));
                            let b = $fmadd(ws[1], $load(vp[1].add(c)), $mul(ws[2], $load(vp[2].add(c))));
                            $store(op.add(c), $fmadd(ws[3], $load(vp[3].add(c)), $add(a, b)));
                            c += $w;
                        }
                    }
                    for d in whole..n {
                        let a = w[0].mul_add(v[0][d], o[d]);
                        let b = w[1].mul_add(v[1][d], w[2] * v[2][d]);
                        o[d] = w[3].mul_add(v[3][d], a + b);
                    }
                }
            }
        };
    }

    use std::arch::x86_64::*;

    #[inline(always)]
    unsafe fn sum256(v: __m256) -> f32 {
        unsafe {
            let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
            let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
            _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)))
        }
    }

    /// binary16 at `p` as f32 (one `vcvtph2ps`).
    #[inline(always)]
    unsafe fn half(p: *const u8) -> f32 {
        unsafe { _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(u16::from_le_bytes([*p, *p.add(1)]) as i32))) }
    }

    /// [`Ops::dequantize_row`] on 16-float registers.
    #[inline(always)]
    unsafe fn dequantize512(format: GgmlType, b: &[u8], out: &mut [f32]) {
        unsafe {
            let (bp, op) = (b.as_ptr(), out.as_mut_ptr());
            let n = out.len();
            match format {
                GgmlType::F16 => {
                    let whole = n / 16 * 16;
                    for c in (0..whole).step_by(16) {
                        _mm512_storeu_ps(
                            op.add(c),
                            _mm512_cvtph_ps(_mm256_loadu_si256(bp.add(2 * c) as *const __m256i)),
                        );
                    }
                    for c in whole..n {
                        *op.add(c) = half(bp.add(2 * c));
                    }
                }
                GgmlType::Q8_0 => {
                    for i in 0..n / 32 {
                        let (blk, o) = (bp.add(34 * i), op.add(32 * i));
                        let d = _mm512_set1_ps(half(blk));
                        for h in 0..2 {
                            let q = _mm512_cvtepi8_epi32(_mm_loadu_si128(blk.add(2 + 16 * h) as *const __m128i));
                            _mm512_storeu_ps(o.add(16 * h), _mm512_mul_ps(_mm512_cvtepi32_ps(q), d));
                        }
                    }
                }
                _ => {
                    for i in 0..n / 32 {
                        let (blk, o) = (bp.add(18 * i), op.add(32 * i));
                        let d = _mm512_set1_ps(half(blk));
                        let x = _mm_loadu_si128(blk.add(2) as *const __m128i);
                        let m = _mm_set1_epi8(0x0f);
                        let eight = _mm_set1_epi8(8);
                        let lo = _mm_sub_epi8(_mm_and_si128(x, m), eight);
                        let hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), m), eight);
                        _mm512_storeu_ps(o, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(lo)), d));
                        _mm512_storeu_ps(o.add(16), _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(hi)), d));
                    }
                }
            }
        }
    }

    /// [`Ops::dequantize_row`] on 8-float registers.
    #[inline(always)]
    unsafe fn dequantize256(format: GgmlType, b: &[u8], out: &mut [f32]) {
        unsafe {
            let (bp, op) = (b.as_ptr(), out.as_mut_ptr());
            let n = out.len();
            match format {
                GgmlType::F16 => {
                    let whole = n / 8 * 8;
                    for c in (0..whole).step_by(8) {
                        _mm256_storeu_ps(op.add(c), _mm256_cvtph_ps(_mm_loadu_si128(bp.add(2 * c) as *const __m128i)));
                    }
                    for c in whole..n {
                        *op.add(c) = half(bp.add(2 * c));
                    }
                }
                GgmlType::Q8_0 => {
                    for i in 0..n / 32 {
                        let (blk, o) = (bp.add(34 * i), op.add(32 * i));
                        let d = _mm256_set1_ps(half(blk));
                        for e in 0..4 {
                            let q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(blk.add(2 + 8 * e) as *const __m128i));
                            _mm256_storeu_ps(o.add(8 * e), _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
                        }
                    }
                }
                _ => {
                    for i in 0..n / 32 {
                        let (blk, o) = (bp.add(18 * i), op.add(32 * i));
                        let d = _mm256_set1_ps(half(blk));
                        let x = _mm_loadu_si128(blk.add(2) as *const __m128i);
                        let m = _mm_set1_epi8(0x0f);
                        let eight = _mm_set1_epi8(8);
                        let lo = _mm_sub_epi8(_mm_and_si128(x, m), eight);
                        let hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), m), eight);
                        for (k, v) in [lo, hi].into_iter().enumerate() {
                            let a = _mm256_cvtepi8_epi32(v);
                            let b = _mm256_cvtepi8_epi32(_mm_srli_si128(v, 8));
                            _mm256_storeu_ps(o.add(16 * k), _mm256_mul_ps(_mm256_cvtepi32_ps(a), d));
                            _mm256_storeu_ps(o.add(16 * k + 8), _mm256_mul_ps(_mm256_cvtepi32_ps(b), d));
                        }
                    }
                }
            }
        }
    }

    lanes!(
        Avx512,
        16,
        _mm512_loadu_ps,
        _mm512_fmadd_ps,
        _mm512_mul_ps,
        _mm512_add_ps,
        _mm512_set1_ps,
        _mm512_storeu_ps,
        _mm512_setzero_ps,
        _mm512_reduce_add_ps,
        dequantize512
    );
    lanes!(
        Avx2,
        8,
        _mm256_loadu_ps,
        _mm256_fmadd_ps,
        _mm256_mul_ps,
        _mm256_add_ps,
        _mm256_set1_ps,
        _mm256_storeu_ps,
        _mm256_setzero_ps,
        sum256,
        dequantize256
    );
}

/// Prefetch every cache line of `b` into L1 (a hint; nothing on targets without one here).
#[inline(always)]
fn prefetch(b: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..b.len()).step_by(64) {
        // SAFETY: a prefetch of an address inside `b` (SSE, baseline on x86-64) neither faults
        // nor changes memory.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(b.as_ptr().add(off) as *const i8)
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = b;
}

/// `a·b + c`, fused where the path has FMA (`fused`, a constant after inlining), two roundings where it does not (the
/// baseline x86-64 would otherwise call `fmaf` per element).
#[inline(always)]
fn fma(fused: bool, a: f32, b: f32, c: f32) -> f32 {
    if fused { a.mul_add(b, c) } else { a * b + c }
}

/// # Safety
/// As [`Ops`]: called from code compiled with `O`'s features, on a CPU that has them.
#[inline(always)]
unsafe fn body<O: Ops>(
    rows: &Rows,
    n_heads: usize,
    heads: Range<usize>,
    q: &[f32],
    tokens: Range<usize>,
    state: State,
) {
    let hd = rows.head_dim;
    let group = n_heads / rows.n_kv_heads;
    let (token_k, token_v) = (rows.n_kv_heads * rows.row_k, rows.n_kv_heads * rows.row_v);
    let mut kt = vec![0f32; TILE * hd];
    let mut vt = vec![0f32; TILE * hd];
    let mut p = vec![0f32; group * TILE];
    let kv_heads = heads.start / group..heads.end.div_ceil(group);
    let mut start = tokens.start;
    while start < tokens.end {
        let n = TILE.min(tokens.end - start);
        // Ask for the next tile's rows of these KV heads now: a tile's rows sit a token's
        // bytes apart (5 KiB for 32 heads of 80 in F16), a stride the hardware prefetchers
        // follow late, and the tile being computed hides the fetch.
        for t in start + n..(start + 2 * n).min(tokens.end) {
            prefetch(&rows.k[t * token_k + kv_heads.start * rows.row_k..t * token_k + kv_heads.end * rows.row_k]);
            prefetch(&rows.v[t * token_v + kv_heads.start * rows.row_v..t * token_v + kv_heads.end * rows.row_v]);
        }
        for kvh in kv_heads.clone() {
            // This KV head's query heads within the range, as indices into the state.
            let hs = (kvh * group).max(heads.start) - heads.start..((kvh + 1) * group).min(heads.end) - heads.start;
            for (j, t) in (start..start + n).enumerate() {
                let kb = &rows.k[t * token_k + kvh * rows.row_k..][..rows.row_k];
                // SAFETY: this function's own contract.
                unsafe { O::dequantize_row(rows.k_format, kb, &mut kt[j * hd..(j + 1) * hd]) };
            }
            for (g, h) in hs.clone().enumerate() {
                let qh = &q[h * hd..(h + 1) * hd];
                let s = &mut p[g * TILE..g * TILE + n];
                let mut j = 0;
                while j + 4 <= n {
                    let key = |i: usize| &kt[(j + i) * hd..(j + i + 1) * hd];
                    // SAFETY: as above.
                    s[j..j + 4].copy_from_slice(&unsafe { O::dot4(qh, [key(0), key(1), key(2), key(3)]) });
                    j += 4;
                }
                for (j, s) in s.iter_mut().enumerate().skip(j) {
                    // SAFETY: as above.
                    *s = unsafe { O::dot4(qh, [&kt[j * hd..(j + 1) * hd]; 4]) }[0];
                }
                let tile_max = s.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
                let m = state.max[h].max(tile_max);
                if m == f32::NEG_INFINITY {
                    s.fill(0.0);
                    continue;
                }
                if m > state.max[h] {
                    let c = (state.max[h] - m).exp();
                    state.sum[h] *= c;
                    state.out[h * hd..(h + 1) * hd].iter_mut().for_each(|o| *o *= c);
                    state.max[h] = m;
                }
                for s in s.iter_mut() {
                    *s = exp_nonpositive(O::FUSED, *s - m);
                }
                state.sum[h] += s.iter().sum::<f32>();
            }
            for (j, t) in (start..start + n).enumerate() {
                let vb = &rows.v[t * token_v + kvh * rows.row_v..][..rows.row_v];
                // SAFETY: as above.
                unsafe { O::dequantize_row(rows.v_format, vb, &mut vt[j * hd..(j + 1) * hd]) };
            }
            for (g, h) in hs.enumerate() {
                let o = &mut state.out[h * hd..(h + 1) * hd];
                let w = &p[g * TILE..g * TILE + n];
                // Four values per pass over the output: a quarter of its loads and stores.
                let mut j = 0;
                while j + 4 <= n {
                    let v = |i: usize| &vt[(j + i) * hd..(j + i + 1) * hd];
                    // SAFETY: as above.
                    unsafe { O::axpy4(o, [w[j], w[j + 1], w[j + 2], w[j + 3]], [v(0), v(1), v(2), v(3)]) };
                    j += 4;
                }
                for j in j..n {
                    let v = &vt[j * hd..(j + 1) * hd];
                    // SAFETY: as above.
                    unsafe { O::axpy4(o, [w[j], 0.0, 0.0, 0.0], [v; 4]) };
                }
            }
        }
        start += n;
    }
}

/// `e^x` for `x ≤ 0` (a score minus the running maximum), branch-free so that a tile's
/// exponentials vectorize: `x = n ln 2 + r` with `n` rounded to nearest (the 1.5 × 2²³
/// addition) and `|r| ≤ ln 2 / 2`, `e^r` by its degree-7 Taylor polynomial (relative error
/// below 2 × 10⁻⁸ before rounding), times `2ⁿ` built in the exponent bits. Below −87 (where
/// `2ⁿ` would leave the normal range) it returns `e^{−87} ≈ 1.6 × 10⁻³⁸`, which no softmax
/// sum can notice.
#[inline(always)]
pub(crate) fn exp_nonpositive(fused: bool, x: f32) -> f32 {
    const SHIFT: f32 = 12_582_912.0; // 1.5 × 2^23
    const LN2_HI: f32 = 0.693_145_75; // ln 2 to 16 significant bits, exact in n × LN2_HI
    const LN2_LO: f32 = 1.428_606_8e-6; // ln 2 − LN2_HI
    let x = x.clamp(-87.0, 0.0);
    let shifted = fma(fused, x, std::f32::consts::LOG2_E, SHIFT);
    let n = shifted - SHIFT;
    let bits = shifted.to_bits().wrapping_sub(SHIFT.to_bits()); // n as a two's-complement integer
    let r = fma(fused, -n, LN2_LO, fma(fused, -n, LN2_HI, x));
    let mut e = 1.0 / 5040.0;
    for c in [1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
        e = fma(fused, e, r, c);
    }
    e * f32::from_bits(bits.wrapping_add(127) << 23)
}

/// binary16 bits → f32, exact and branch-free (vectorizes): the magnitude shifted into f32
/// position and multiplied by 2¹¹² rebiases normals and normalizes subnormals; an all-ones
/// exponent keeps infinities and NaNs, quieted as `vcvtph2ps` and the `half` crate quiet them.
#[inline(always)]
pub(crate) fn half_to_f32(h: u16) -> f32 {
    let h = h as u32;
    let mag = (h & 0x7fff) << 13;
    let finite = f32::from_bits(mag) * f32::from_bits(0x7780_0000); // × 2^112
    let quiet = if h & 0x03ff != 0 { 0x0040_0000 } else { 0 };
    let v = if h & 0x7c00 == 0x7c00 { f32::from_bits(mag | 0x7f80_0000 | quiet) } else { finite };
    f32::from_bits(v.to_bits() | ((h & 0x8000) << 16))
}

/// The portable [`Ops::dequantize_row`].
#[inline(always)]
fn dequantize_row(format: GgmlType, b: &[u8], out: &mut [f32]) {
    match format {
        GgmlType::F16 => {
            let b = &b[..2 * out.len()];
            for (o, c) in out.iter_mut().zip(b.chunks_exact(2)) {
                *o = half_to_f32(u16::from_le_bytes([c[0], c[1]]));
            }
        }
        GgmlType::Q8_0 => {
            for (blk, o) in b.chunks_exact(34).zip(out.chunks_exact_mut(32)) {
                let d = half_to_f32(u16::from_le_bytes([blk[0], blk[1]]));
                let (qs, o): (&[u8; 32], &mut [f32; 32]) = (blk[2..].try_into().unwrap(), o.try_into().unwrap());
                for j in 0..32 {
                    o[j] = qs[j] as i8 as f32 * d;
                }
            }
        }
        _ => {
            for (blk, o) in b.chunks_exact(18).zip(out.chunks_exact_mut(32)) {
                let d = half_to_f32(u16::from_le_bytes([blk[0], blk[1]]));
                let (qs, o): (&[u8; 16], &mut [f32; 32]) = (blk[2..].try_into().unwrap(), o.try_into().unwrap());
                for j in 0..16 {
                    o[j] = ((qs[j] & 0x0f) as i32 - 8) as f32 * d;
                    o[j + 16] = ((qs[j] >> 4) as i32 - 8) as f32 * d;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every binary16 value converts exactly as the `half` crate converts it (NaNs stay NaN
    /// with their payload).
    #[test]
    fn half_conversion_is_exact_for_all_65536_values() {
        for h in 0..=u16::MAX {
            let want = half::f16::from_bits(h).to_f32();
            let got = half_to_f32(h);
            assert_eq!(got.to_bits(), want.to_bits(), "{h:#06x}: {got} vs {want}");
        }
    }

    /// The branch-free exponential stays within 3 × 10⁻⁷ of libm's relative to the value over
    /// [−87, 0], on both the fused and the unfused path; below −87 it is negligible.
    #[test]
    fn exponential_matches_libm() {
        for i in 0..=870_000 {
            let x = -(i as f32) / 10_000.0;
            let want = (x as f64).exp();
            for got in [exp_nonpositive(true, x), exp_nonpositive(false, x)] {
                let e = ((got as f64 - want) / want).abs();
                assert!(e < 3e-7, "exp({x}) = {got}, want {want}: relative error {e}");
            }
        }
        assert!(exp_nonpositive(true, -1000.0) < 2e-38);
        assert_eq!(exp_nonpositive(true, 0.0), 1.0);
    }

    /// Row dequantization equals the format's own.
    #[test]
    fn rows_dequantize_as_the_formats_do() {
        let x: Vec<f32> = (0..96).map(|i| ((i * 37) % 29) as f32 / 7.0 - 2.0).collect();
        for t in [GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0] {
            let b = crate::quantize(t, &x).unwrap();
            let want = crate::dequantize(t, &b, x.len()).unwrap();
            let mut got = vec![0f32; x.len()];
            dequantize_row(t, &b, &mut got);
            assert_eq!(got, want, "{t}");
        }
    }
}
