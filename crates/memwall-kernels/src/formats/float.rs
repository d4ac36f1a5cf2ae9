//! Unquantized formats: F32 (4 B), F16 (2 B, IEEE binary16) and BF16 (2 B, the top half of
//! an f32, rounded to nearest even as ggml's `ggml_compute_fp32_to_bf16`).

use memwall_spec::GgmlType;

use super::BlockFormat;

/// IEEE binary32, one weight per "block".
pub struct F32;
/// IEEE binary16.
pub struct F16;
/// bfloat16.
pub struct BF16;

impl BlockFormat for F32 {
    const TYPE: GgmlType = GgmlType::F32;
    const BLOCK: usize = 1;
    const BYTES: usize = 4;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        out[..4].copy_from_slice(&x[0].to_le_bytes());
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        out[0] = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
}

impl BlockFormat for F16 {
    const TYPE: GgmlType = GgmlType::F16;
    const BLOCK: usize = 1;
    const BYTES: usize = 2;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        super::put_f16(out, x[0]);
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        out[0] = super::f16_at(b);
    }
}

/// f32 → bf16 bits: quiet NaNs, otherwise round to nearest even.
pub fn bf16_bits(v: f32) -> u16 {
    let u = v.to_bits();
    if (u & 0x7fff_ffff) > 0x7f80_0000 {
        return ((u >> 16) | 64) as u16;
    }
    ((u as u64 + (0x7fff + ((u >> 16) & 1)) as u64) >> 16) as u16
}

impl BlockFormat for BF16 {
    const TYPE: GgmlType = GgmlType::BF16;
    const BLOCK: usize = 1;
    const BYTES: usize = 2;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        out[..2].copy_from_slice(&bf16_bits(x[0]).to_le_bytes());
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        out[0] = f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16);
    }
}
