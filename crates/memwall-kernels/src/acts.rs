//! Activation quantization for integer dot products, as ggml does for a GEMV: the input
//! vector is quantized once per call to 8-bit blocks, Q8_0-style (32 weights, f16-rounded
//! scale) for the 32-weight formats and Q8_K-style (256 weights, f32 scale) for K-quants and
//! ternary formats. Both keep the sum of every 16 codes (`bsums`), which the formats with a
//! minimum or an offset (Q4_1, Q5_1, K-quants, TQ) need.

use crate::KernelError;
use crate::formats::{nearest_int, through_f16};

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
    /// `x` must hold whole blocks of 32 finite values.
    pub fn q8_0(x: &[f32]) -> Result<Self, KernelError> {
        check_input(x, 32, "q8_0")?;
        let mut qs = vec![0i8; x.len()];
        let mut d = Vec::with_capacity(x.len() / 32);
        for (xb, qb) in x.chunks_exact(32).zip(qs.chunks_exact_mut(32)) {
            let amax = xb.iter().fold(0f32, |m, v| m.max(v.abs()));
            let s = amax / 127.0;
            let id = if s != 0.0 { 1.0 / s } else { 0.0 };
            for (q, &v) in qb.iter_mut().zip(xb) {
                *q = (v * id).round() as i8;
            }
            d.push(through_f16(s));
        }
        let bsums = sums16(&qs);
        let dsums = d.iter().zip(bsums.chunks_exact(2)).map(|(d, s)| d * (s[0] + s[1]) as f32).collect();
        let bsums16 = bsums.iter().map(|&v| v as i16).collect();
        Ok(Q8Acts { block: 32, qs, d, bsums, dsums, bsums16 })
    }

    /// Q8_K-style: `d = max / −127` with the signed extreme, `q = nearest(x / d)`
    /// (ggml's `quantize_row_q8_K`). `x` must hold whole blocks of 256 finite values.
    pub fn q8_k(x: &[f32]) -> Result<Self, KernelError> {
        check_input(x, 256, "q8_K")?;
        let mut qs = vec![0i8; x.len()];
        let mut d = Vec::with_capacity(x.len() / 256);
        for (xb, qb) in x.chunks_exact(256).zip(qs.chunks_exact_mut(256)) {
            let (mut max, mut amax) = (0f32, 0f32);
            for &v in xb {
                if v.abs() > amax {
                    amax = v.abs();
                    max = v;
                }
            }
            if amax == 0.0 {
                d.push(0.0);
                continue;
            }
            let iscale = -127.0 / max;
            for (q, &v) in qb.iter_mut().zip(xb) {
                *q = nearest_int(iscale * v).min(127) as i8;
            }
            d.push(1.0 / iscale);
        }
        let bsums = sums16(&qs);
        let dsums = d.iter().zip(bsums.chunks_exact(16)).map(|(d, s)| d * s.iter().sum::<i32>() as f32).collect();
        let bsums16 = bsums.iter().map(|&v| v as i16).collect();
        Ok(Q8Acts { block: 256, qs, d, bsums, dsums, bsums16 })
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
    match x.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(KernelError::NonFinite { index, value: x[index] }),
        None => Ok(()),
    }
}

fn sums16(qs: &[i8]) -> Vec<i32> {
    qs.chunks_exact(16).map(|c| c.iter().map(|&q| q as i32).sum()).collect()
}
