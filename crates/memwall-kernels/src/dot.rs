//! Dot products of one quantized weight row with the (quantized) activations — the inner
//! loop of a GEMV. [`scalar`] holds the reference of every format, always compiled and the
//! oracle of the SIMD paths; [`Kernel`] picks the fastest path this CPU supports at run time.
//! The activations they dot against are [`crate::acts`]'s; the paths, [`crate::simd::Isa`].

use memwall_spec::GgmlType;

use crate::KernelError;
use crate::acts::{ActKind, Acts, Q8Acts, act_kind};
use crate::formats::f16_at;
use crate::formats::kquants::{q3k_scale, q6k_level, scale_min_k4};
use crate::formats::legacy::IQ4_NL_VALUES;
use crate::formats::mxfp4::{MXFP4_VALUES, e8m0_half};
use crate::formats::ternary::tq1_trit;
use crate::simd::Isa;

/// Check that a row of `row_bytes` bytes in `format` can be dotted with `a`: the row holds
/// whole blocks, as many weights as `a` has activations, and `a` is of the format's kind.
/// Every dot product, scalar or SIMD, reads exactly the extents this checks.
pub fn check_row(format: GgmlType, row_bytes: usize, a: &Acts) -> Result<(), KernelError> {
    let kind = act_kind(format)?;
    if a.kind() != kind {
        return Err(KernelError::Activations { format: format.name(), expected: kind, got: a.kind() });
    }
    let bytes = format.type_size() as usize;
    if !row_bytes.is_multiple_of(bytes) {
        return Err(KernelError::ByteLength {
            format: format.name(),
            len: row_bytes,
            expected: row_bytes.next_multiple_of(bytes),
        });
    }
    let weights = row_bytes / bytes * format.block_size() as usize;
    if weights != a.len() {
        return Err(KernelError::Shape { what: "activations", len: a.len(), expected: weights });
    }
    Ok(())
}

/// Scalar reference dot products, one per format: `Σ w_i x_i` over a row of `n` weights.
pub mod scalar {
    use super::*;
    use crate::formats::float::BF16;
    use crate::formats::{BlockFormat, float::F16};

    /// Float formats against f32 activations.
    fn float(t: GgmlType, w: &[u8], x: &[f32]) -> f32 {
        let mut s = 0f32;
        match t {
            GgmlType::F32 => {
                for (c, &xi) in w.chunks_exact(4).zip(x) {
                    s += f32::from_le_bytes([c[0], c[1], c[2], c[3]]) * xi;
                }
            }
            GgmlType::F16 => {
                let mut v = [0f32];
                for (c, &xi) in w.chunks_exact(2).zip(x) {
                    F16::dequantize_block(c, &mut v);
                    s += v[0] * xi;
                }
            }
            _ => {
                let mut v = [0f32];
                for (c, &xi) in w.chunks_exact(2).zip(x) {
                    BF16::dequantize_block(c, &mut v);
                    s += v[0] * xi;
                }
            }
        }
        s
    }

    /// Integer sum of a 32-weight block's codes (as `q(j)`) against 32 activation codes.
    #[inline]
    fn isum(a: &[i8], q: impl Fn(usize) -> i32) -> i32 {
        (0..a.len()).map(|j| q(j) * a[j] as i32).sum()
    }

    #[inline]
    fn nib(qs: &[u8], j: usize) -> i32 {
        (if j < 16 { qs[j] & 0x0f } else { qs[j - 16] >> 4 }) as i32
    }

    #[inline]
    fn q5(b: &[u8], j: usize) -> i32 {
        let qh = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        nib(&b[4..], j) | ((((qh >> j) & 1) as i32) << 4)
    }

    /// 32-weight formats against Q8_0 activations.
    fn q8_0_family(t: GgmlType, w: &[u8], a: &Q8Acts) -> f32 {
        let bytes = t.type_size() as usize;
        let mut s = 0f32;
        for (i, b) in w.chunks_exact(bytes).enumerate() {
            let qa = &a.qs[32 * i..32 * i + 32];
            let da = a.d[i];
            let asum = (a.bsums[2 * i] + a.bsums[2 * i + 1]) as f32;
            s += match t {
                GgmlType::Q8_0 => f16_at(b) * da * isum(qa, |j| b[2 + j] as i8 as i32) as f32,
                GgmlType::Q4_0 => f16_at(b) * da * isum(qa, |j| nib(&b[2..], j) - 8) as f32,
                GgmlType::Q4_1 => f16_at(b) * da * isum(qa, |j| nib(&b[4..], j)) as f32 + f16_at(&b[2..]) * da * asum,
                GgmlType::Q5_0 => f16_at(b) * da * isum(qa, |j| q5(&b[2..], j) - 16) as f32,
                GgmlType::Q5_1 => f16_at(b) * da * isum(qa, |j| q5(&b[4..], j)) as f32 + f16_at(&b[2..]) * da * asum,
                GgmlType::MXFP4 => {
                    da * e8m0_half(b[0]) * isum(qa, |j| MXFP4_VALUES[nib(&b[1..], j) as usize] as i32) as f32
                }
                _ => f16_at(b) * da * isum(qa, |j| IQ4_NL_VALUES[nib(&b[2..], j) as usize] as i32) as f32,
            };
        }
        s
    }

    /// K-quants and ternary formats against Q8_K activations.
    fn q8_k_family(t: GgmlType, w: &[u8], a: &Q8Acts) -> f32 {
        let bytes = t.type_size() as usize;
        let mut s = 0f32;
        for (i, b) in w.chunks_exact(bytes).enumerate() {
            let qa = &a.qs[256 * i..256 * i + 256];
            let bs = &a.bsums[16 * i..16 * i + 16];
            let da = a.d[i];
            let sub = |g: usize, len: usize, q: &dyn Fn(usize) -> i32| -> i32 {
                (g * len..g * len + len).map(|e| q(e) * qa[e] as i32).sum()
            };
            s += match t {
                GgmlType::Q2_K => {
                    let (sc, qs) = (&b[..16], &b[16..80]);
                    let (d, dmin) = (f16_at(&b[80..]), f16_at(&b[82..]));
                    let two = |e: usize| ((qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3) as i32;
                    let (mut isum, mut msum) = (0i32, 0i32);
                    for g in 0..16 {
                        isum += (sc[g] & 0x0f) as i32 * sub(g, 16, &two);
                        msum += (sc[g] >> 4) as i32 * bs[g];
                    }
                    da * (d * isum as f32 - dmin * msum as f32)
                }
                GgmlType::Q3_K => {
                    let (hmask, qs, sc) = (&b[..32], &b[32..96], &b[96..108]);
                    let d = f16_at(&b[108..]);
                    let q = |e: usize| {
                        let low = ((qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3) as i32;
                        low - if (hmask[e % 32] >> (e / 32)) & 1 == 1 { 0 } else { 4 }
                    };
                    let isum: i32 = (0..16).map(|g| q3k_scale(sc, g) * sub(g, 16, &q)).sum();
                    da * d * isum as f32
                }
                GgmlType::Q4_K | GgmlType::Q5_K => {
                    let (d, dmin, sc) = (f16_at(b), f16_at(&b[2..]), &b[4..16]);
                    let q = |e: usize| {
                        let (c, n, l) = (e / 64, (e % 64) / 32, e % 32);
                        if t == GgmlType::Q4_K {
                            ((b[16 + 32 * c + l] >> (4 * n)) & 0x0f) as i32
                        } else {
                            let low = ((b[48 + 32 * c + l] >> (4 * n)) & 0x0f) as i32;
                            low | ((((b[16 + e % 32] >> (e / 32)) & 1) as i32) << 4)
                        }
                    };
                    let (mut isum, mut msum) = (0i32, 0i32);
                    for g in 0..8 {
                        let (s8, m8) = scale_min_k4(g, sc);
                        isum += s8 as i32 * sub(g, 32, &q);
                        msum += m8 as i32 * (bs[2 * g] + bs[2 * g + 1]);
                    }
                    da * (d * isum as f32 - dmin * msum as f32)
                }
                GgmlType::Q6_K => {
                    let (ql, qh, sc) = (&b[..128], &b[128..192], &b[192..208]);
                    let d = f16_at(&b[208..]);
                    let q = |e: usize| q6k_level(ql, qh, e);
                    let isum: i32 = (0..16).map(|g| sc[g] as i8 as i32 * sub(g, 16, &q)).sum();
                    da * d * isum as f32
                }
                GgmlType::TQ2_0 => {
                    let q = |e: usize| ((b[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3) as i32 - 1;
                    da * f16_at(&b[64..]) * sub(0, 256, &q) as f32
                }
                _ => {
                    let q = |e: usize| tq1_trit(b, e) as i32;
                    da * f16_at(&b[52..]) * sub(0, 256, &q) as f32
                }
            };
        }
        s
    }

    /// Reference dot of a row of format `t` with prepared activations (checked as
    /// [`check_row`] says).
    pub fn dot(t: GgmlType, w: &[u8], a: &Acts) -> Result<f32, KernelError> {
        super::check_row(t, w.len(), a)?;
        Ok(checked(t, w, a))
    }

    /// [`dot`] on a row already checked against `a`.
    pub(crate) fn checked(t: GgmlType, w: &[u8], a: &Acts) -> f32 {
        match a {
            Acts::F32(x) => float(t, w, x),
            Acts::Q8(q) if q.block == 32 => q8_0_family(t, w, q),
            Acts::Q8(q) => q8_k_family(t, w, q),
        }
    }
}

/// A SIMD dot product resolved for one format and path.
#[derive(Debug, Clone, Copy)]
enum Simd {
    /// No SIMD kernel: the scalar reference serves.
    None,
    /// Against quantized activations (x86-64 and AArch64).
    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(dead_code))]
    Q8(unsafe fn(&[u8], &Q8Acts) -> f32),
    /// Against f32 activations (rows of at least 8 weights; x86-64 only so far).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    Float(unsafe fn(&[u8], &[f32]) -> f32),
}

impl Simd {
    /// The kernel `isa` has for `format` and the path it really runs on — the one table of
    /// which formats have SIMD paths. A format without an AVX-512 kernel runs its AVX2 one
    /// and says so.
    fn resolve(format: GgmlType, isa: Isa) -> (Simd, Isa) {
        match (Self::table(format, isa), isa) {
            (Simd::None, Isa::Avx512) => (Self::table(format, Isa::Avx2), Isa::Avx2),
            (Simd::None, Isa::NeonDot) => (Self::table(format, Isa::Neon), Isa::Neon),
            (s, isa) => (s, isa),
        }
    }

    #[cfg_attr(not(any(target_arch = "x86_64", target_arch = "aarch64")), allow(unused_variables, unused_imports))]
    fn table(format: GgmlType, isa: Isa) -> Simd {
        use GgmlType as G;
        match isa {
            Isa::Scalar => Simd::None,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                use crate::simd::avx2;
                match format {
                    G::Q8_0 => Simd::Q8(avx2::q8_0),
                    G::Q4_0 => Simd::Q8(avx2::q4_0),
                    G::Q4_1 => Simd::Q8(avx2::q4_1),
                    G::Q5_0 => Simd::Q8(avx2::q5_0),
                    G::Q5_1 => Simd::Q8(avx2::q5_1),
                    G::IQ4_NL => Simd::Q8(avx2::iq4_nl),
                    G::MXFP4 => Simd::Q8(avx2::mxfp4),
                    G::Q2_K => Simd::Q8(avx2::q2_k),
                    G::Q3_K => Simd::Q8(avx2::q3_k),
                    G::Q4_K => Simd::Q8(avx2::q4_k),
                    G::Q5_K => Simd::Q8(avx2::q5_k),
                    G::Q6_K => Simd::Q8(avx2::q6_k),
                    G::TQ1_0 => Simd::Q8(avx2::tq1_0),
                    G::TQ2_0 => Simd::Q8(avx2::tq2_0),
                    G::F32 => Simd::Float(avx2::f32_row),
                    G::F16 => Simd::Float(avx2::f16_row),
                    G::BF16 => Simd::Float(avx2::bf16_row),
                    _ => Simd::None,
                }
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => {
                use crate::simd::avx512 as v;
                match format {
                    G::Q8_0 => Simd::Q8(v::q8_0),
                    G::Q4_0 => Simd::Q8(v::q4_0),
                    G::Q4_1 => Simd::Q8(v::q4_1),
                    G::Q5_0 => Simd::Q8(v::q5_0),
                    G::Q5_1 => Simd::Q8(v::q5_1),
                    G::IQ4_NL => Simd::Q8(v::iq4_nl),
                    G::MXFP4 => Simd::Q8(v::mxfp4),
                    G::Q2_K => Simd::Q8(v::q2_k),
                    G::Q3_K => Simd::Q8(v::q3_k),
                    G::Q4_K => Simd::Q8(v::q4_k),
                    G::Q5_K => Simd::Q8(v::q5_k),
                    G::Q6_K => Simd::Q8(v::q6_k),
                    G::TQ1_0 => Simd::Q8(v::tq1_0),
                    G::TQ2_0 => Simd::Q8(v::tq2_0),
                    G::F32 => Simd::Float(v::f32_row),
                    G::F16 => Simd::Float(v::f16_row),
                    G::BF16 => Simd::Float(v::bf16_row),
                    _ => Simd::None,
                }
            }
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => {
                use crate::simd::neon;
                match format {
                    G::Q8_0 => Simd::Q8(neon::q8_0),
                    G::Q4_0 => Simd::Q8(neon::q4_0),
                    G::Q4_K => Simd::Q8(neon::q4_k),
                    G::Q6_K => Simd::Q8(neon::q6_k),
                    _ => Simd::None,
                }
            }
            #[cfg(target_arch = "aarch64")]
            Isa::NeonDot => {
                use crate::simd::neon;
                match format {
                    G::Q8_0 => Simd::Q8(neon::q8_0_dotprod),
                    G::Q4_0 => Simd::Q8(neon::q4_0_dotprod),
                    G::Q4_K => Simd::Q8(neon::q4_k_dotprod),
                    G::Q6_K => Simd::Q8(neon::q6_k_dotprod),
                    _ => Simd::None,
                }
            }
            #[allow(unreachable_patterns)]
            _ => Simd::None,
        }
    }
}

/// The dot product of one weight format on one instruction-set path. A `Kernel` with a SIMD
/// path can only be built on a CPU that supports it.
#[derive(Debug, Clone, Copy)]
pub struct Kernel {
    format: GgmlType,
    isa: Isa,
    kind: ActKind,
    simd: Simd,
}

impl Kernel {
    /// The fastest kernel for `format` on this CPU.
    pub fn new(format: GgmlType) -> Result<Self, KernelError> {
        Self::with_isa(format, Isa::best())
    }

    /// A kernel on a given path (errors when the CPU lacks it).
    pub fn with_isa(format: GgmlType, isa: Isa) -> Result<Self, KernelError> {
        let kind = act_kind(format)?;
        if !isa.supported() {
            return Err(KernelError::Unsupported { format: isa.name() });
        }
        let (simd, isa) = Simd::resolve(format, isa);
        Ok(Kernel { format, isa, kind, simd })
    }

    /// The weight format.
    pub fn format(&self) -> GgmlType {
        self.format
    }

    /// The path actually used for this format (formats without a SIMD kernel use scalar).
    pub fn isa(&self) -> Isa {
        if matches!(self.simd, Simd::None) { Isa::Scalar } else { self.isa }
    }

    /// Quantize (or copy) activations for this format.
    pub fn prepare(&self, x: &[f32]) -> Result<Acts, KernelError> {
        Acts::new_on(self.isa, self.kind, x)
    }

    /// Dot one row of this format with prepared activations; the row must hold as many
    /// weights as `a` has activations, and `a` must be of this format's kind.
    pub fn dot(&self, w: &[u8], a: &Acts) -> Result<f32, KernelError> {
        check_row(self.format, w.len(), a)?;
        Ok(self.dot_checked(w, a))
    }

    /// `out[i] = row i · a` for the consecutive rows of `row_bytes` bytes that fill `data`:
    /// the lengths are checked once, then the rows are dotted without further checks.
    pub fn dot_rows(&self, data: &[u8], row_bytes: usize, a: &Acts, out: &mut [f32]) -> Result<(), KernelError> {
        check_row(self.format, row_bytes, a)?;
        let rows = data.len().checked_div(row_bytes).unwrap_or(0);
        if data.len() != rows * row_bytes || rows != out.len() {
            let expected = out.len().saturating_mul(row_bytes);
            return Err(KernelError::ByteLength { format: self.format.name(), len: data.len(), expected });
        }
        self.rows_checked(data, row_bytes, a, out);
        Ok(())
    }

    /// [`Kernel::dot_rows`] on rows whose length [`check_row`] accepted with `a`, `data`
    /// holding `out.len()` of them.
    pub(crate) fn rows_checked(&self, data: &[u8], row_bytes: usize, a: &Acts, out: &mut [f32]) {
        if row_bytes == 0 {
            out.fill(0.0);
            return;
        }
        for (w, y) in data.chunks_exact(row_bytes).zip(out.iter_mut()) {
            *y = self.dot_checked(w, a);
        }
    }

    /// The dot of a row that [`check_row`] accepted with `a`.
    #[allow(unsafe_code)]
    pub(crate) fn dot_checked(&self, w: &[u8], a: &Acts) -> f32 {
        debug_assert!(check_row(self.format, w.len(), a).is_ok());
        // SAFETY: `with_isa` resolves a SIMD kernel only on a CPU that has its features
        // (checked by `Isa::supported`); every caller has passed `w` and `a` through
        // `check_row`, so the row holds whole blocks of exactly `a.len()` weights and `a` is
        // of the kind the kernel reads (Q8Acts' private fields keep their own invariants);
        // float kernels are reached only with at least 8 weights.
        match (self.simd, a) {
            (Simd::Q8(f), Acts::Q8(q)) => unsafe { f(w, q) },
            (Simd::Float(f), Acts::F32(x)) if x.len() >= 8 => unsafe { f(w, x) },
            _ => scalar::checked(self.format, w, a),
        }
    }
}
