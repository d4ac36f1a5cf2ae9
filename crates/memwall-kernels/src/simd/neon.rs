//! AArch64 NEON dot products of quantized rows with quantized activations: each kernel in
//! baseline NEON (widening `smull` and pairwise accumulation, no optional extension) and,
//! for cores with the dot-product extension (Armv8.2 `dotprod`, every phone core since the
//! Cortex-A75/A55), with `sdot`: four byte products summed into each i32 lane in one
//! instruction where baseline NEON needs a multiply and two pairwise adds. Tested on x86-64
//! hosts under qemu-user (`scripts/test-aarch64`), whose CPU has the extension.
#![allow(unsafe_code)]

use std::arch::aarch64::*;

use crate::acts::Q8Acts;
use crate::formats::f16_at;
use crate::formats::kquants::scale_min_k4;

/// Whether this CPU has the dot-product extension (`sdot`).
pub fn dotprod_available() -> bool {
    std::arch::is_aarch64_feature_detected!("dotprod")
}

/// Σ of 16 signed byte products, accumulated into four i32 lanes: one `sdot` with `SDOT`
/// (written as assembly: its intrinsic is not stable in Rust), `smull` and pairwise adds
/// without. The two spread the products over the lanes differently (`sdot`: bytes 4i..4i+3
/// in lane i; pairwise: bytes 2i, 2i + 1, 8 + 2i, 9 + 2i) but agree on the sum over the lanes,
/// which is all every caller uses (a reduction, or one scale for all four lanes).
#[inline(always)]
unsafe fn dot16<const SDOT: bool>(acc: int32x4_t, x: int8x16_t, y: int8x16_t) -> int32x4_t {
    unsafe {
        if SDOT {
            let mut acc = acc;
            std::arch::asm!(
                ".arch_extension dotprod",
                "sdot {acc:v}.4s, {x:v}.16b, {y:v}.16b",
                acc = inout(vreg) acc,
                x = in(vreg) x,
                y = in(vreg) y,
                options(pure, nomem, nostack),
            );
            acc
        } else {
            let lo = vmull_s8(vget_low_s8(x), vget_low_s8(y));
            let hi = vmull_high_s8(x, y);
            vpadalq_s16(vpadalq_s16(acc, lo), hi)
        }
    }
}

/// Each kernel's `sdot` variant: `dotprod: kernel => body` makes `dotprod`, the kernel's body
/// with `SDOT`, compiled with the extension.
macro_rules! with_sdot {
    ($($dot:ident: $name:ident => $body:ident),* $(,)?) => {$(
        #[doc = concat!("[`", stringify!($name), "`] with `sdot`.")]
        ///
        /// # Safety
        #[doc = concat!("As [`", stringify!($name), "`], on a CPU with the dot-product extension ([`dotprod_available`]).")]
        #[target_feature(enable = "dotprod")]
        pub unsafe fn $dot(w: &[u8], a: &Q8Acts) -> f32 {
            unsafe { $body::<true>(w, a) }
        }
    )*};
}

with_sdot!(
    q8_0_dotprod: q8_0 => q8_0_body,
    q4_0_dotprod: q4_0 => q4_0_body,
    q4_k_dotprod: q4_k => q4_k_body,
    q6_k_dotprod: q6_k => q6_k_body,
);

#[inline(always)]
unsafe fn ld(p: *const u8) -> int8x16_t {
    unsafe { vld1q_s8(p as *const i8) }
}

/// Q8_0 weights · Q8_0 activations.
///
/// # Safety
/// `w` holds `a.qs.len() / 32` blocks of 34 bytes (NEON is always present on AArch64).
pub unsafe fn q8_0(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q8_0_body::<false>(w, a) }
}

#[inline(always)]
unsafe fn q8_0_body<const SDOT: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        let mut acc = vdupq_n_f32(0.0);
        for i in 0..w.len() / 34 {
            let b = w.as_ptr().add(34 * i);
            let qa = a.qs.as_ptr().add(32 * i) as *const u8;
            let s = dot16::<SDOT>(dot16::<SDOT>(vdupq_n_s32(0), ld(b.add(2)), ld(qa)), ld(b.add(18)), ld(qa.add(16)));
            acc = vmlaq_n_f32(acc, vcvtq_f32_s32(s), f16_at(std::slice::from_raw_parts(b, 2)) * a.d[i]);
        }
        vaddvq_f32(acc)
    }
}

/// Q4_0 weights · Q8_0 activations.
///
/// # Safety
/// As [`q8_0`], with 18-byte blocks.
pub unsafe fn q4_0(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q4_0_body::<false>(w, a) }
}

#[inline(always)]
unsafe fn q4_0_body<const SDOT: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        let m4 = vdupq_n_u8(0x0f);
        let eight = vdupq_n_s8(8);
        let mut acc = vdupq_n_f32(0.0);
        for i in 0..w.len() / 18 {
            let b = w.as_ptr().add(18 * i);
            let q = vld1q_u8(b.add(2));
            let lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, m4)), eight);
            let hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), eight);
            let qa = a.qs.as_ptr().add(32 * i) as *const u8;
            let s = dot16::<SDOT>(dot16::<SDOT>(vdupq_n_s32(0), lo, ld(qa)), hi, ld(qa.add(16)));
            acc = vmlaq_n_f32(acc, vcvtq_f32_s32(s), f16_at(std::slice::from_raw_parts(b, 2)) * a.d[i]);
        }
        vaddvq_f32(acc)
    }
}

/// Q4_K weights · Q8_K activations.
///
/// # Safety
/// As [`q8_0`], with 144-byte blocks and Q8_K activations.
pub unsafe fn q4_k(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q4_k_body::<false>(w, a) }
}

#[inline(always)]
unsafe fn q4_k_body<const SDOT: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        let m4 = vdupq_n_u8(0x0f);
        let mut total = 0f32;
        for i in 0..w.len() / 144 {
            let b = w.as_ptr().add(144 * i);
            let blk = std::slice::from_raw_parts(b, 144);
            let qa = a.qs.as_ptr().add(256 * i) as *const u8;
            let (mut sumi, mut msum) = (0i32, 0i32);
            for c in 0..4 {
                let (s0, m0) = scale_min_k4(2 * c, &blk[4..16]);
                let (s1, m1) = scale_min_k4(2 * c + 1, &blk[4..16]);
                msum += m0 as i32 * (a.bsums[16 * i + 4 * c] + a.bsums[16 * i + 4 * c + 1])
                    + m1 as i32 * (a.bsums[16 * i + 4 * c + 2] + a.bsums[16 * i + 4 * c + 3]);
                let (mut d0, mut d1) = (vdupq_n_s32(0), vdupq_n_s32(0));
                for half in 0..2 {
                    let q = vld1q_u8(b.add(16 + 32 * c + 16 * half));
                    let lo = vreinterpretq_s8_u8(vandq_u8(q, m4));
                    let hi = vreinterpretq_s8_u8(vshrq_n_u8(q, 4));
                    d0 = dot16::<SDOT>(d0, lo, ld(qa.add(64 * c + 16 * half)));
                    d1 = dot16::<SDOT>(d1, hi, ld(qa.add(64 * c + 32 + 16 * half)));
                }
                sumi += s0 as i32 * vaddvq_s32(d0) + s1 as i32 * vaddvq_s32(d1);
            }
            let da = a.d[i];
            total += f16_at(&blk[0..2]) * da * sumi as f32 - f16_at(&blk[2..4]) * da * msum as f32;
        }
        total
    }
}

/// Q6_K weights · Q8_K activations.
///
/// # Safety
/// As [`q8_0`], with 210-byte blocks and Q8_K activations.
pub unsafe fn q6_k(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe { q6_k_body::<false>(w, a) }
}

#[inline(always)]
unsafe fn q6_k_body<const SDOT: bool>(w: &[u8], a: &Q8Acts) -> f32 {
    unsafe {
        let m4 = vdupq_n_u8(0x0f);
        let m3 = vdupq_n_u8(0x03);
        let m32 = vdupq_n_s8(32);
        let mut total = 0f32;
        for i in 0..w.len() / 210 {
            let b = w.as_ptr().add(210 * i);
            let blk = std::slice::from_raw_parts(b, 210);
            let qa = a.qs.as_ptr().add(256 * i) as *const u8;
            let mut sumi = 0i32;
            for h in 0..2 {
                for half in 0..2 {
                    // 16 columns `l` of this half: ql bytes at 64h + l and 64h + 32 + l,
                    // qh bytes at 32h + l; each gives 4 weights (s = 0..3).
                    let off = 16 * half;
                    let qla = vld1q_u8(b.add(64 * h + off));
                    let qlb = vld1q_u8(b.add(64 * h + 32 + off));
                    let qh = vld1q_u8(b.add(128 + 32 * h + off));
                    let lows = [vandq_u8(qla, m4), vandq_u8(qlb, m4), vshrq_n_u8(qla, 4), vshrq_n_u8(qlb, 4)];
                    let highs = [
                        vandq_u8(qh, m3),
                        vandq_u8(vshrq_n_u8(qh, 2), m3),
                        vandq_u8(vshrq_n_u8(qh, 4), m3),
                        vshrq_n_u8(qh, 6),
                    ];
                    for s in 0..4 {
                        let q = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lows[s], vshlq_n_u8(highs[s], 4))), m32);
                        let e = 128 * h + 32 * s + off;
                        let d = vaddvq_s32(dot16::<SDOT>(vdupq_n_s32(0), q, ld(qa.add(e))));
                        sumi += blk[192 + e / 16] as i8 as i32 * d;
                    }
                }
            }
            total += f16_at(&blk[208..210]) * a.d[i] * sumi as f32;
        }
        total
    }
}
