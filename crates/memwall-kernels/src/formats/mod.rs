//! GGUF-compatible block formats: byte layouts, reference quantization (f32 → blocks) and
//! dequantization (blocks → f32).
//!
//! Every block is a plain byte slice of exactly [`GgmlType::type_size`] bytes laid out as
//! ggml's `block_*` structs in `ggml-common.h` (little-endian, no padding), so a row
//! produced here can be written into a GGUF file and read by llama.cpp, and vice versa.
//! The per-format modules document each layout with its byte count.

pub mod float;
pub mod fp8;
pub mod group;
pub mod kquants;
pub mod legacy;
pub mod mxfp4;
pub mod ternary;

use memwall_spec::GgmlType;

use crate::KernelError;

/// Read a little-endian binary16 at `b[0..2]` as f32.
#[inline]
pub fn f16_at(b: &[u8]) -> f32 {
    half::f16::from_le_bytes([b[0], b[1]]).to_f32()
}

/// Write `v` as little-endian binary16 (round to nearest even) into `b[0..2]`.
#[inline]
pub fn put_f16(b: &mut [u8], v: f32) {
    b[..2].copy_from_slice(&half::f16::from_f32(v).to_le_bytes());
}

/// `v` rounded through binary16, as the stored scale will be read back.
#[inline]
pub fn through_f16(v: f32) -> f32 {
    half::f16::from_f32(v).to_f32()
}

/// The element of largest magnitude, with its sign (0 for an empty or all-zero slice).
#[inline]
pub fn signed_absmax(x: &[f32]) -> f32 {
    x.iter().fold(0f32, |m, &v| if v.abs() > m.abs() { v } else { m })
}

/// ggml's `nearest_int`: round half to even. Below 2^22 in magnitude (every quantizer's
/// range) by ggml's own trick: adding 1.5 × 2^23 leaves the rounded integer in the low
/// mantissa bits, with no call into libm (`roundevenf` is a function call on x86-64 builds
/// without SSE4.1, ~3 ns, which made quantizing a GEMV's activations cost more than the
/// GEMV on small matrices).
#[inline]
pub fn nearest_int(v: f32) -> i32 {
    if v.abs() < 4_194_303.0 {
        ((v + 12_582_912.0).to_bits() & 0x007f_ffff) as i32 - 0x0040_0000
    } else {
        v.round_ties_even() as i32
    }
}

/// `roundf`: round half away from zero, exactly, without a libm call for |v| < 2^31
/// (truncation is one instruction and `v − trunc(v)` is exact below 2^23).
#[inline]
pub fn round_away(v: f32) -> i32 {
    if v.abs() < 2_147_483_520.0 {
        let t = v as i32;
        let f = v - t as f32;
        t + (f >= 0.5) as i32 - (f <= -0.5) as i32
    } else {
        v.round() as i32
    }
}

/// One block format: how `BLOCK` weights are stored in `BYTES` bytes.
pub trait BlockFormat {
    /// The ggml type.
    const TYPE: GgmlType;
    /// Weights per block.
    const BLOCK: usize;
    /// Bytes per block.
    const BYTES: usize;
    /// Quantize one block of `BLOCK` floats into `BYTES` bytes (ggml's reference,
    /// round-to-nearest behaviour).
    fn quantize_block(x: &[f32], out: &mut [u8]);
    /// Dequantize one block into `BLOCK` floats.
    fn dequantize_block(b: &[u8], out: &mut [f32]);
}

fn check_len(t: GgmlType, n: usize) -> Result<(), KernelError> {
    let block = t.block_size() as usize;
    if !n.is_multiple_of(block) {
        return Err(KernelError::RowLength { format: t.name(), len: n, block });
    }
    Ok(())
}

fn quantize_with<F: BlockFormat>(x: &[f32]) -> Vec<u8> {
    let mut out = vec![0u8; x.len() / F::BLOCK * F::BYTES];
    for (xb, ob) in x.chunks_exact(F::BLOCK).zip(out.chunks_exact_mut(F::BYTES)) {
        F::quantize_block(xb, ob);
    }
    out
}

fn dequantize_with<F: BlockFormat>(b: &[u8], out: &mut [f32]) {
    for (bb, ob) in b.chunks_exact(F::BYTES).zip(out.chunks_exact_mut(F::BLOCK)) {
        F::dequantize_block(bb, ob);
    }
}

macro_rules! dispatch {
    ($t:expr, $f:ident, $($arg:expr),*) => {
        match $t {
            GgmlType::F32 => $f::<float::F32>($($arg),*),
            GgmlType::F16 => $f::<float::F16>($($arg),*),
            GgmlType::BF16 => $f::<float::BF16>($($arg),*),
            GgmlType::Q4_0 => $f::<legacy::Q4_0>($($arg),*),
            GgmlType::Q4_1 => $f::<legacy::Q4_1>($($arg),*),
            GgmlType::Q5_0 => $f::<legacy::Q5_0>($($arg),*),
            GgmlType::Q5_1 => $f::<legacy::Q5_1>($($arg),*),
            GgmlType::Q8_0 => $f::<legacy::Q8_0>($($arg),*),
            GgmlType::IQ4_NL => $f::<legacy::IQ4_NL>($($arg),*),
            GgmlType::Q2_K => $f::<kquants::Q2_K>($($arg),*),
            GgmlType::Q3_K => $f::<kquants::Q3_K>($($arg),*),
            GgmlType::Q4_K => $f::<kquants::Q4_K>($($arg),*),
            GgmlType::Q5_K => $f::<kquants::Q5_K>($($arg),*),
            GgmlType::Q6_K => $f::<kquants::Q6_K>($($arg),*),
            GgmlType::Q8_K => $f::<kquants::Q8_K>($($arg),*),
            GgmlType::TQ1_0 => $f::<ternary::TQ1_0>($($arg),*),
            GgmlType::TQ2_0 => $f::<ternary::TQ2_0>($($arg),*),
            GgmlType::MXFP4 => $f::<mxfp4::MXFP4>($($arg),*),
            other => return Err(KernelError::Unsupported { format: other.name() }),
        }
    };
}

/// The ggml types this crate quantizes and dequantizes.
pub const SUPPORTED: &[GgmlType] = &[
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::BF16,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::IQ4_NL,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::Q8_K,
    GgmlType::TQ1_0,
    GgmlType::TQ2_0,
    GgmlType::MXFP4,
];

/// Quantize a row of floats into ggml blocks of type `t`.
pub fn quantize(t: GgmlType, x: &[f32]) -> Result<Vec<u8>, KernelError> {
    check_len(t, x.len())?;
    if let Some(i) = x.iter().position(|v| !v.is_finite()) {
        return Err(KernelError::NonFinite { index: i, value: x[i] });
    }
    Ok(dispatch!(t, quantize_with, x))
}

/// Dequantize ggml blocks of type `t` holding `n` weights.
pub fn dequantize(t: GgmlType, bytes: &[u8], n: usize) -> Result<Vec<f32>, KernelError> {
    let mut out = vec![0f32; n];
    dequantize_into(t, bytes, &mut out)?;
    Ok(out)
}

/// Dequantize ggml blocks of type `t` into `out` (its length is the weight count).
pub fn dequantize_into(t: GgmlType, bytes: &[u8], out: &mut [f32]) -> Result<(), KernelError> {
    check_len(t, out.len())?;
    let expected = out.len() / t.block_size() as usize * t.type_size() as usize;
    if bytes.len() != expected {
        return Err(KernelError::ByteLength { format: t.name(), len: bytes.len(), expected });
    }
    dispatch!(t, dequantize_with, bytes, out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The libm-free roundings equal libm's on halves, their neighbours, signs, large values
    /// and a dense sweep of the quantizers' range.
    #[test]
    fn roundings_match_libm() {
        let mut vs: Vec<f32> = (-300_000..=300_000).map(|i| i as f32 / 1000.0).collect();
        for k in -130..=130 {
            let h = k as f32 + 0.5;
            vs.extend([h, h.next_up(), h.next_down(), k as f32, (k as f32).next_up(), (k as f32).next_down()]);
        }
        vs.extend([
            0.0,
            -0.0,
            0.49999997,
            -0.49999997,
            4_194_302.5,
            4_194_303.5,
            8_388_609.0,
            1e9,
            -1e9,
            3e9,
            f32::MAX,
        ]);
        for v in vs {
            assert_eq!(nearest_int(v), v.round_ties_even() as i32, "nearest_int({v})");
            assert_eq!(round_away(v), v.round() as i32, "round_away({v})");
        }
    }
}
