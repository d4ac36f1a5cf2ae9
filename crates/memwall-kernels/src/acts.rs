//! Activations for the dot products: the kind each weight format dots against
//! ([`act_kind`]), activations prepared for it ([`Acts`]), and their quantization for integer
//! dot products ([`Q8Acts`]), as ggml does for a GEMV: the input vector is quantized once per
//! call to 8-bit blocks, Q8_0-style (32 weights, f16-rounded scale) for the 32-weight formats
//! and Q8_K-style (256 weights, f32 scale) for K-quants and ternary formats. Both keep the sum
//! of every 16 codes (`bsums`), which the formats with a minimum or an offset (Q4_1, Q5_1,
//! K-quants, TQ) need.

use memwall_spec::GgmlType;

use crate::KernelError;
use crate::formats::{nearest_int, round_away, through_f16};
use crate::simd::Isa;

/// What a weight format dots against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActKind {
    /// f32 activations (float weight formats).
    F32,
    /// Q8_0-style 32-blocks.
    Q8_0,
    /// Q8_K-style 256-blocks.
    Q8K,
}

/// The activation type of a weight format, as in ggml's `vec_dot_type`.
pub fn act_kind(t: GgmlType) -> Result<ActKind, KernelError> {
    use GgmlType as G;
    Ok(match t {
        G::F32 | G::F16 | G::BF16 => ActKind::F32,
        G::Q4_0 | G::Q4_1 | G::Q5_0 | G::Q5_1 | G::Q8_0 | G::IQ4_NL | G::MXFP4 => ActKind::Q8_0,
        G::Q2_K | G::Q3_K | G::Q4_K | G::Q5_K | G::Q6_K | G::TQ1_0 | G::TQ2_0 => ActKind::Q8K,
        other => return Err(KernelError::Unsupported { format: other.name() }),
    })
}

/// Activations prepared for a format.
#[derive(Debug, Clone, PartialEq)]
pub enum Acts {
    /// Float activations.
    F32(Vec<f32>),
    /// Quantized activations.
    Q8(Q8Acts),
}

impl Acts {
    /// Prepare `x` for weights of kind `k` (quantized kinds need whole blocks of finite values).
    pub fn new(k: ActKind, x: &[f32]) -> Result<Self, KernelError> {
        Self::new_on(Isa::best(), k, x)
    }

    /// [`Acts::new`] quantized on `isa` (bit-identical on every path).
    pub fn new_on(isa: Isa, k: ActKind, x: &[f32]) -> Result<Self, KernelError> {
        Ok(match k {
            ActKind::F32 => Acts::F32(x.to_vec()),
            ActKind::Q8_0 => Acts::Q8(Q8Acts::q8_0_on(isa, x)?),
            ActKind::Q8K => Acts::Q8(Q8Acts::q8_k_on(isa, x)?),
        })
    }

    /// The kind these activations dot against.
    pub fn kind(&self) -> ActKind {
        match self {
            Acts::F32(_) => ActKind::F32,
            Acts::Q8(q) if q.block == 32 => ActKind::Q8_0,
            Acts::Q8(_) => ActKind::Q8K,
        }
    }

    /// Number of activations.
    pub fn len(&self) -> usize {
        match self {
            Acts::F32(x) => x.len(),
            Acts::Q8(q) => q.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The activations as the dot products see them (quantized ones dequantized).
    pub fn dequantized(&self) -> Vec<f32> {
        match self {
            Acts::F32(x) => x.clone(),
            Acts::Q8(q) => q.dequantized(),
        }
    }
}

/// Quantized activations. The fields are private: the SIMD kernels read them by raw
/// pointer and rely on the invariants the constructors establish (`qs.len() = block ×
/// d.len()`, one `bsums` entry per 16 codes, one `dsums` entry per block).
#[derive(Debug, Clone, PartialEq)]
pub struct Q8Acts {
    /// Weights per block (32 or 256).
    pub(crate) block: usize,
    /// int8 codes.
    pub(crate) qs: Vec<i8>,
    /// Scale per block.
    pub(crate) d: Vec<f32>,
    /// Sum of each 16 consecutive codes.
    pub(crate) bsums: Vec<i32>,
    /// Per block, `d × Σ codes` (for the offsets and minima of the weight formats).
    pub(crate) dsums: Vec<f32>,
    /// `bsums` as i16 (|Σ of 16 codes| ≤ 2032), for SIMD multiply-adds with scales.
    pub(crate) bsums16: Vec<i16>,
}

impl Q8Acts {
    /// Q8_0-style: `d = f16(max|x| / 127)`, `q = round(x / d)` (ggml's `quantize_row_q8_0`).
    /// `x` must hold whole blocks of 32 finite values. The scalar reference;
    /// [`Q8Acts::q8_0_on`] gives the same codes and scales on a SIMD path.
    pub fn q8_0(x: &[f32]) -> Result<Self, KernelError> {
        Self::q8_0_on(Isa::Scalar, x)
    }

    /// [`Q8Acts::q8_0`] computed on `isa`, bit-identical (a path without its own quantizer,
    /// or one this CPU lacks, uses the scalar one).
    pub fn q8_0_on(isa: Isa, x: &[f32]) -> Result<Self, KernelError> {
        check_input(x, 32, "q8_0")?;
        let mut qs = vec![0i8; x.len()];
        let mut d = vec![0f32; x.len() / 32];
        match isa {
            // SAFETY: the CPU has the path's features (checked by `supported`), and `qs` and
            // `d` were sized from `x`'s whole blocks above.
            #[cfg(target_arch = "x86_64")]
            #[allow(unsafe_code)]
            Isa::Avx2 | Isa::Avx512 if isa.supported() => unsafe {
                crate::simd::avx2::quantize_q8_0(x, &mut qs, &mut d)
            },
            _ => {
                for ((xb, qb), db) in x.chunks_exact(32).zip(qs.chunks_exact_mut(32)).zip(&mut d) {
                    let amax = xb.iter().fold(0f32, |m, v| m.max(v.abs()));
                    let s = amax / 127.0;
                    let id = if s != 0.0 { 1.0 / s } else { 0.0 };
                    for (q, &v) in qb.iter_mut().zip(xb) {
                        *q = round_away(v * id).clamp(-128, 127) as i8;
                    }
                    *db = through_f16(s);
                }
            }
        }
        Ok(Self::with_sums(32, qs, d))
    }

    /// Q8_K-style: `d = max / −127` with the signed extreme, `q = nearest(x / d)`
    /// (ggml's `quantize_row_q8_K`). `x` must hold whole blocks of 256 finite values. The
    /// scalar reference; [`Q8Acts::q8_k_on`] gives the same codes and scales on a SIMD path.
    pub fn q8_k(x: &[f32]) -> Result<Self, KernelError> {
        Self::q8_k_on(Isa::Scalar, x)
    }

    /// [`Q8Acts::q8_k`] computed on `isa`, bit-identical.
    pub fn q8_k_on(isa: Isa, x: &[f32]) -> Result<Self, KernelError> {
        check_input(x, 256, "q8_K")?;
        let mut qs = vec![0i8; x.len()];
        let mut d = vec![0f32; x.len() / 256];
        match isa {
            // SAFETY: as in `q8_0_on`.
            #[cfg(target_arch = "x86_64")]
            #[allow(unsafe_code)]
            Isa::Avx2 | Isa::Avx512 if isa.supported() => unsafe {
                crate::simd::avx2::quantize_q8_k(x, &mut qs, &mut d)
            },
            _ => {
                for ((xb, qb), db) in x.chunks_exact(256).zip(qs.chunks_exact_mut(256)).zip(&mut d) {
                    let (mut max, mut amax) = (0f32, 0f32);
                    for &v in xb {
                        if v.abs() > amax {
                            amax = v.abs();
                            max = v;
                        }
                    }
                    if amax == 0.0 {
                        continue;
                    }
                    let iscale = -127.0 / max;
                    for (q, &v) in qb.iter_mut().zip(xb) {
                        *q = nearest_int(iscale * v).min(127) as i8;
                    }
                    *db = 1.0 / iscale;
                }
            }
        }
        Ok(Self::with_sums(256, qs, d))
    }

    /// The sums the dot kernels read beside the codes.
    fn with_sums(block: usize, qs: Vec<i8>, d: Vec<f32>) -> Self {
        let bsums = sums16(&qs);
        let dsums =
            d.iter().zip(bsums.chunks_exact(block / 16)).map(|(d, s)| d * s.iter().sum::<i32>() as f32).collect();
        let bsums16 = bsums.iter().map(|&v| v as i16).collect();
        Q8Acts { block, qs, d, bsums, dsums, bsums16 }
    }

    /// Weights per block (32 or 256).
    pub fn block(&self) -> usize {
        self.block
    }

    /// Number of activations.
    pub fn len(&self) -> usize {
        self.qs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.qs.is_empty()
    }

    /// The int8 codes.
    pub fn codes(&self) -> &[i8] {
        &self.qs
    }

    /// The scale of each block.
    pub fn scales(&self) -> &[f32] {
        &self.d
    }

    /// The activations as the dot products see them: `code × scale` of its block.
    pub fn dequantized(&self) -> Vec<f32> {
        self.qs.iter().enumerate().map(|(i, &v)| v as f32 * self.d[i / self.block]).collect()
    }
}

/// Whole blocks of finite values: a partial block would be dropped and a NaN would poison a
/// block's scale.
fn check_input(x: &[f32], block: usize, format: &'static str) -> Result<(), KernelError> {
    if !x.len().is_multiple_of(block) {
        return Err(KernelError::RowLength { format, len: x.len(), block });
    }
    // A branch-free pass first, in operations baseline SSE2 vectorizes: adding one to the
    // exponent field carries into the sign bit exactly when the exponent is all ones (an
    // infinity or a NaN). The index only when something is wrong.
    if x.iter().fold(0u32, |acc, v| acc | ((v.to_bits() & 0x7f80_0000) + 0x0080_0000)) & 0x8000_0000 == 0 {
        return Ok(());
    }
    let index = x.iter().position(|v| !v.is_finite()).unwrap_or(0);
    Err(KernelError::NonFinite { index, value: x[index] })
}

fn sums16(qs: &[i8]) -> Vec<i32> {
    qs.chunks_exact(16).map(|c| c.iter().map(|&q| q as i32).sum()).collect()
}
