//! AVX-512 paths (F, BW, VL, with VNNI): every format the AVX2 path has.
//!
//! - Formats whose byte dots sum with a weight of one (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL,
//!   MXFP4, TQ1_0, TQ2_0) run their AVX2 body with `vpdpbusd`: one instruction where AVX2
//!   needs `maddubs`, `madd` and an add. Each `vpdpbusd` starts from zero and is added to
//!   the running sum: chained through its accumulator, its 5-cycle latency bound the ternary
//!   kernels.
//! - The K-quants (Q2_K … Q6_K) run their AVX2 body compiled for AVX-512 (EVEX encoding,
//!   32 vector registers, `vpternlog`): their byte products are weighted by a per-16 or
//!   per-32 scale through `madd`, which `vpdpbusd` (weights of one) cannot take without a
//!   32-bit multiply, slower than the pair it would replace.
//! - Float rows (F32, F16, BF16) run 16 weights per instruction on 512-bit registers with a
//!   masked tail.
//!
//! Every kernel is property-tested against [`crate::dot::scalar`] (tests/simd.rs).
#![allow(unsafe_code)]

use std::arch::x86_64::*;

use super::avx2;
use crate::acts::Q8Acts;

/// Whether this CPU has AVX-512 F/BW/VL and VNNI, and the AVX2/FMA/F16C the paths also use.
pub fn available() -> bool {
    avx2::available()
        && is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512vnni")
}

macro_rules! from_avx2 {
    ($($name:ident => $body:ident),* $(,)?) => {$(
        #[doc = concat!("[`avx2::", stringify!($name), "`]'s body on the AVX-512 path.")]
        ///
        /// # Safety
        /// The CPU must have [`available`]'s features; the slices are as the AVX2 kernel's.
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
        pub unsafe fn $name(w: &[u8], a: &Q8Acts) -> f32 {
            unsafe { avx2::$body::<true>(w, a) }
        }
    )*};
}

from_avx2!(
    q8_0 => q8_0_body,
    q4_0 => q4_0_body,
    q4_1 => q4_1_body,
    q5_0 => q5_0_body,
    q5_1 => q5_1_body,
    iq4_nl => iq4_nl_body,
    mxfp4 => mxfp4_body,
    q2_k => q2_k_body,
    q3_k => q3_k_body,
    q4_k => q4_k_body,
    q5_k => q5_k_body,
    q6_k => q6_k_body,
    tq2_0 => tq2_0_body,
);

/// [`avx2::tq1_0`]'s body on the AVX-512 path, compiled without AVX-512BW: with it, LLVM
/// moves each byte compare of the trit extraction through a mask register and back, and the
/// kernel ran at 4.6 GB/s against the AVX2 build's 5.5; without, 6.3 (one thread, cache
/// size, 2-core Xeon guest).
///
/// # Safety
/// The CPU must have [`available`]'s features; the slices are as the AVX2 kernel's.
#[target_feature(enable = "avx512f,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn tq1_0(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { avx2::tq1_0_body::<true>(w, a) }
}

/// Float rows (`width`-byte weights) · f32 activations: 16 weights per step into four
/// accumulators, the tail of fewer than 16 through a masked load (no read past the row), the
/// row prefetched [`avx2::PREFETCH_AHEAD`] bytes ahead into L2 ([`avx2::prefetch_ahead_to`]).
#[inline(always)]
unsafe fn float_dot(
    n: usize,
    x: &[f32],
    w: *const u8,
    width: usize,
    load16: impl Fn(usize, __mmask16) -> __m512,
) -> f32 {
    unsafe {
        let xp = x.as_ptr();
        let all: __mmask16 = 0xffff;
        let mut acc = [_mm512_setzero_ps(); 4];
        let mut i = 0;
        while i + 64 <= n {
            avx2::prefetch_ahead_to::<_MM_HINT_T1>(w.wrapping_add(width * i), 64 * width);
            for (k, a) in acc.iter_mut().enumerate() {
                *a = _mm512_fmadd_ps(load16(i + 16 * k, all), _mm512_loadu_ps(xp.add(i + 16 * k)), *a);
            }
            i += 64;
        }
        while i + 16 <= n {
            acc[0] = _mm512_fmadd_ps(load16(i, all), _mm512_loadu_ps(xp.add(i)), acc[0]);
            i += 16;
        }
        if i < n {
            let m: __mmask16 = (1u16 << (n - i)) - 1;
            acc[1] = _mm512_fmadd_ps(load16(i, m), _mm512_maskz_loadu_ps(m, xp.add(i)), acc[1]);
        }
        _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])))
    }
}

/// F16 weights · f32 activations.
///
/// # Safety
/// The CPU must have [`available`]'s features; `w` holds `x.len()` binary16 values.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn f16_row(w: &[u8], x: &[f32]) -> f32 {
    unsafe {
        let p = w.as_ptr();
        float_dot(x.len(), x, p, 2, |i, m| _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p.add(2 * i) as *const i16)))
    }
}

/// BF16 weights · f32 activations (a bf16 is the top half of its f32).
///
/// # Safety
/// As [`f16_row`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn bf16_row(w: &[u8], x: &[f32]) -> f32 {
    unsafe {
        let p = w.as_ptr();
        float_dot(x.len(), x, p, 2, |i, m| {
            let h = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p.add(2 * i) as *const i16));
            _mm512_castsi512_ps(_mm512_slli_epi32(h, 16))
        })
    }
}

/// F32 weights · f32 activations.
///
/// # Safety
/// As [`f16_row`], with 4-byte weights.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")]
pub unsafe fn f32_row(w: &[u8], x: &[f32]) -> f32 {
    unsafe {
        let p = w.as_ptr();
        float_dot(x.len(), x, p, 4, |i, m| _mm512_maskz_loadu_ps(m, p.add(4 * i) as *const f32))
    }
}
