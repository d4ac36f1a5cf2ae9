//! 8-bit floats: the OCP FP8 encodings E4M3 (`float8_e4m3fn`) and E5M2 (`float8_e5m2`),
//! bit by bit, and scaled FP8 tensors as checkpoints store them (`fp8_e4m3`, `-pc`, `-b128`,
//! see [`memwall_spec::Fp8Quant`]).
//!
//! | encoding | bias | max finite | min normal | min subnormal | inf | NaN |
//! | --- | --- | --- | --- | --- | --- | --- |
//! | E4M3 | 7 | 448 (S.1111.110) | 2^−6 | 2^−9 | none | S.1111.111 |
//! | E5M2 | 15 | 57344 (S.11110.11) | 2^−14 | 2^−16 | S.11111.00 | S.11111.{01,10,11} |
//!
//! Source: OCP 8-bit Floating Point Specification (OFP8) rev. 1.0, Table 1,
//! <https://www.opencompute.org/documents/ocp-8-bit-floating-point-specification-ofp8-revision-1-0-2023-12-01-pdf-1>.
//!
//! Encoding rounds to nearest, ties to even, and saturates: a finite value beyond the
//! largest finite one becomes ±max (the OFP8 "saturating" conversion, which quantizers get by
//! clamping to ±max before the cast); NaN stays NaN; ±∞ becomes ±∞ in E5M2 and ±448 in
//! E4M3, which has no infinity.

use memwall_spec::{Fp8Kind, Fp8Quant, Fp8Scale, ScaleDtype};

use super::float::bf16_bits;
use super::through_f16;
use crate::KernelError;

/// (exponent bits, mantissa bits, bias) of an encoding.
fn layout(k: Fp8Kind) -> (u32, u32, i32) {
    match k {
        Fp8Kind::E4m3 => (4, 3, 7),
        Fp8Kind::E5m2 => (5, 2, 15),
    }
}

/// The value of FP8 byte `b` in encoding `k`: `(−1)^S × 2^(E − bias) × (1 + M / 2^m)` for a
/// normal number, `(−1)^S × 2^(1 − bias) × M / 2^m` for `E = 0`; E4M3's S.1111.111 and E5M2's
/// all-ones exponent with `M ≠ 0` are NaN, E5M2's S.11111.00 is ±∞.
pub fn fp8_to_f32(k: Fp8Kind, b: u8) -> f32 {
    let (eb, mb, bias) = layout(k);
    let sign = if b & 0x80 != 0 { -1.0f32 } else { 1.0 };
    let e = ((b >> mb) as u32 & ((1 << eb) - 1)) as i32;
    let m = (b as u32 & ((1 << mb) - 1)) as f32;
    let emax_code = (1 << eb) - 1;
    match k {
        Fp8Kind::E4m3 if e == emax_code && m == 7.0 => return f32::NAN,
        Fp8Kind::E5m2 if e == emax_code => return if m == 0.0 { sign * f32::INFINITY } else { f32::NAN },
        _ => {}
    }
    let frac = (1u32 << mb) as f32;
    if e == 0 { sign * 2f32.powi(1 - bias) * m / frac } else { sign * 2f32.powi(e - bias) * (1.0 + m / frac) }
}

/// The FP8 byte nearest to `v` in encoding `k` (ties to even; saturating, see the module).
pub fn f32_to_fp8(k: Fp8Kind, v: f32) -> u8 {
    let (_, mb, bias) = layout(k);
    let sign = if v.is_sign_negative() { 0x80u8 } else { 0 };
    if v.is_nan() {
        return sign | 0x7f;
    }
    let max = k.max_finite();
    let a = v.abs();
    if a == f32::INFINITY && k == Fp8Kind::E5m2 {
        return sign | 0x7c;
    }
    if a >= max {
        return sign | magnitude(max, mb, bias);
    }
    sign | magnitude(a, mb, bias)
}

/// Encode a finite magnitude `a ≤ max`: scale to units of the smallest step of its binade
/// and round to an integer, ties to even; a carry into the next binade is the next code.
fn magnitude(a: f32, mb: u32, bias: i32) -> u8 {
    if a == 0.0 {
        return 0;
    }
    // Exponent of the binade, read from the f32's exponent field (f32 subnormals lie far
    // below every FP8 value), or of the FP8 subnormal range.
    let e = (((a.to_bits() >> 23) & 0xff) as i32 - 127).max(1 - bias);
    // Steps of 2^(e − m) in this binade; the code is (biased exponent, step count).
    let ulp = 2f64.powi(e - mb as i32);
    let steps = ((a as f64) / ulp).round_ties_even() as u32;
    let (biased, mant) = if e == 1 - bias && steps < (1 << mb) {
        (0, steps)
    } else {
        // Normal: steps in [2^m, 2^(m+1)]; 2^(m+1) carries into the next binade.
        let biased = (e + bias) as u32;
        if steps >= 2 << mb { (biased + 1, 0) } else { (biased, steps - (1 << mb)) }
    };
    ((biased << mb) | mant) as u8
}

/// An FP8 tensor of `rows × row_len` weights: one code per weight, row-major, and the f32
/// scales by which the codes' values are multiplied (one, one per row, or one per
/// `b × b` tile in row-major tile order, as [`Fp8Quant::scale`] says).
#[derive(Debug, Clone, PartialEq)]
pub struct Fp8Tensor {
    /// FP8 codes, row-major.
    pub codes: Vec<u8>,
    /// Dequantization scales (`weight_scale` / `weight_scale_inv` of a checkpoint), as read
    /// back from their dtype.
    pub scales: Vec<f32>,
}

/// `v` as stored in a scale of dtype `d` and read back.
fn through_scale(d: ScaleDtype, v: f32) -> f32 {
    match d {
        ScaleDtype::F32 => v,
        ScaleDtype::F16 => through_f16(v),
        ScaleDtype::Bf16 => f32::from_bits((bf16_bits(v) as u32) << 16),
        // A power of two at or above v (so the largest weight stays in range).
        ScaleDtype::E8m0 => {
            if v == 0.0 {
                0.0
            } else {
                2f32.powi(v.log2().ceil() as i32)
            }
        }
    }
}

/// Index of the scale that covers weight (`r`, `c`).
fn scale_index(s: Fp8Scale, row_len: usize, r: usize, c: usize) -> usize {
    match s {
        Fp8Scale::Tensor => 0,
        Fp8Scale::Channel => r,
        Fp8Scale::Block(b) => {
            let b = b as usize;
            r / b * row_len.div_ceil(b) + c / b
        }
    }
}

fn scale_count(s: Fp8Scale, rows: usize, row_len: usize) -> usize {
    match s {
        Fp8Scale::Tensor => 1,
        Fp8Scale::Channel => rows,
        Fp8Scale::Block(b) => rows.div_ceil(b as usize) * row_len.div_ceil(b as usize),
    }
}

/// Quantize a `rows × row_len` matrix `x` to FP8: each scale is `amax / max_finite` of the
/// weights it covers (as stored in its dtype), and each weight is encoded as `x / scale`
/// (as DeepSeek-V3's and llm-compressor's FP8 weight quantizers do).
pub fn quantize_fp8(q: Fp8Quant, x: &[f32], row_len: usize) -> Result<Fp8Tensor, KernelError> {
    let rows = check_shape(x.len(), row_len)?;
    if let Some(i) = x.iter().position(|v| !v.is_finite()) {
        return Err(KernelError::NonFinite { index: i, value: x[i] });
    }
    let mut amax = vec![0f32; scale_count(q.scale, rows, row_len)];
    for (i, &v) in x.iter().enumerate() {
        let s = &mut amax[scale_index(q.scale, row_len, i / row_len, i % row_len)];
        *s = s.max(v.abs());
    }
    let max = q.kind.max_finite();
    let scales: Vec<f32> = amax.iter().map(|&a| through_scale(q.dtype, a / max)).collect();
    let codes = x
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let s = scales[scale_index(q.scale, row_len, i / row_len, i % row_len)];
            f32_to_fp8(q.kind, if s != 0.0 { v / s } else { 0.0 })
        })
        .collect();
    Ok(Fp8Tensor { codes, scales })
}

/// Dequantize an FP8 tensor of rows of `row_len` weights: `value(code) × scale`.
pub fn dequantize_fp8(q: Fp8Quant, t: &Fp8Tensor, row_len: usize) -> Result<Vec<f32>, KernelError> {
    let rows = check_shape(t.codes.len(), row_len)?;
    let expected = scale_count(q.scale, rows, row_len);
    if t.scales.len() != expected {
        return Err(KernelError::Shape { what: "fp8 scales", len: t.scales.len(), expected });
    }
    Ok(t.codes
        .iter()
        .enumerate()
        .map(|(i, &c)| fp8_to_f32(q.kind, c) * t.scales[scale_index(q.scale, row_len, i / row_len, i % row_len)])
        .collect())
}

fn check_shape(len: usize, row_len: usize) -> Result<usize, KernelError> {
    if row_len == 0 || !len.is_multiple_of(row_len) {
        return Err(KernelError::RowLength { format: "fp8", len, block: row_len });
    }
    Ok(len / row_len)
}

#[cfg(test)]
mod tests {
    use super::*;

    const E4: Fp8Kind = Fp8Kind::E4m3;
    const E5: Fp8Kind = Fp8Kind::E5m2;

    #[test]
    fn e4m3_specific_values() {
        // 448 = 2^(15−7) × 1.75: S.1111.110.
        assert_eq!(f32_to_fp8(E4, 448.0), 0x7e);
        assert_eq!(fp8_to_f32(E4, 0x7e), 448.0);
        assert_eq!(fp8_to_f32(E4, 0xfe), -448.0);
        // 1.0: exponent 7 = bias, mantissa 0.
        assert_eq!(f32_to_fp8(E4, 1.0), 0x38);
        // Smallest subnormal 2^−9 = 2^(1−7) × 1/8; smallest normal 2^−6.
        assert_eq!(fp8_to_f32(E4, 0x01), 2f32.powi(-9));
        assert_eq!(f32_to_fp8(E4, 2f32.powi(-9)), 0x01);
        assert_eq!(fp8_to_f32(E4, 0x08), 2f32.powi(-6));
        assert_eq!(fp8_to_f32(E4, 0x07), 7.0 * 2f32.powi(-9));
        // NaN is S.1111.111 only; no infinity: ∞ and overflow saturate to 448.
        assert!(fp8_to_f32(E4, 0x7f).is_nan() && fp8_to_f32(E4, 0xff).is_nan());
        assert_eq!(f32_to_fp8(E4, f32::NAN) & 0x7f, 0x7f);
        assert_eq!(f32_to_fp8(E4, 1e6), 0x7e);
        assert_eq!(f32_to_fp8(E4, f32::NEG_INFINITY), 0xfe);
        // 0x78 = S.1111.000 is a number (256), not infinity.
        assert_eq!(fp8_to_f32(E4, 0x78), 256.0);
    }

    #[test]
    fn e5m2_specific_values() {
        // 57344 = 2^(30−15) × 1.75: S.11110.11.
        assert_eq!(f32_to_fp8(E5, 57344.0), 0x7b);
        assert_eq!(fp8_to_f32(E5, 0x7b), 57344.0);
        assert_eq!(f32_to_fp8(E5, 1.0), 0x3c);
        // Smallest subnormal 2^−16, smallest normal 2^−14.
        assert_eq!(fp8_to_f32(E5, 0x01), 2f32.powi(-16));
        assert_eq!(fp8_to_f32(E5, 0x04), 2f32.powi(-14));
        assert_eq!(fp8_to_f32(E5, 0x7c), f32::INFINITY);
        assert_eq!(fp8_to_f32(E5, 0xfc), f32::NEG_INFINITY);
        assert!(fp8_to_f32(E5, 0x7d).is_nan() && fp8_to_f32(E5, 0x7f).is_nan());
        assert_eq!(f32_to_fp8(E5, f32::INFINITY), 0x7c);
        assert_eq!(f32_to_fp8(E5, 1e9), 0x7b);
    }

    #[test]
    fn rounding_is_to_nearest_ties_to_even() {
        // E4M3 steps of 1/8 in [1, 2): 1.0625 lies halfway between 1 (mantissa 0, even) and
        // 1.125 (mantissa 1): to 1. 1.1875 between 1.125 (odd) and 1.25 (even): to 1.25.
        assert_eq!(f32_to_fp8(E4, 1.0625), 0x38);
        assert_eq!(f32_to_fp8(E4, 1.1875), 0x3a);
        assert_eq!(f32_to_fp8(E4, 1.07), 0x39);
        // Carry into the next binade: 1.9375 is halfway between 1.875 (odd) and 2 (even).
        assert_eq!(f32_to_fp8(E4, 1.9375), 0x40);
        // Half the smallest subnormal ties to 0 (even); a little more rounds up.
        assert_eq!(f32_to_fp8(E4, 2f32.powi(-10)), 0x00);
        assert_eq!(f32_to_fp8(E4, 1.5 * 2f32.powi(-10)), 0x01);
        // Subnormal to normal: 7.5 × 2^−9 ties between 7 × 2^−9 (odd) and 2^−6 (even).
        assert_eq!(f32_to_fp8(E4, 7.5 * 2f32.powi(-9)), 0x08);
        // E5M2 steps of 1/4 in [1, 2): 1.125 ties to 1.0, 1.375 to 1.5.
        assert_eq!(f32_to_fp8(E5, 1.125), 0x3c);
        assert_eq!(f32_to_fp8(E5, 1.375), 0x3e);
        // Near the top: 464 is halfway between 448 and (unrepresentable) 480: saturates.
        assert_eq!(f32_to_fp8(E4, 464.0), 0x7e);
        assert_eq!(f32_to_fp8(E4, -0.0), 0x80);
    }

    #[test]
    fn every_finite_code_round_trips() {
        for k in [E4, E5] {
            for b in 0u8..=255 {
                let v = fp8_to_f32(k, b);
                if v.is_finite() {
                    assert_eq!(f32_to_fp8(k, v), b, "{k:?} {b:#04x} = {v}");
                }
            }
        }
    }

    #[test]
    fn scaled_tensors_round_trip_within_fp8_precision() {
        let row_len = 200;
        let x: Vec<f32> = (0..3 * row_len).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
        for name in ["fp8_e4m3", "fp8_e5m2-pc", "fp8_e4m3-b128", "fp8_e4m3-pc-bf16"] {
            let Ok(memwall_spec::QuantFormat::Fp8(q)) = name.parse() else { unreachable!() };
            let t = quantize_fp8(q, &x, row_len).unwrap();
            assert_eq!(t.codes.len(), x.len());
            // Scales: 1, one per row, or 1 × 2 tiles of 128 × 128.
            let want = match q.scale {
                Fp8Scale::Tensor => 1,
                Fp8Scale::Channel => 3,
                Fp8Scale::Block(_) => 2,
            };
            assert_eq!(t.scales.len(), want, "{name}");
            let y = dequantize_fp8(q, &t, row_len).unwrap();
            // Relative error of one weight: half a step, 2^−4 (E4M3) or 2^−3 (E5M2) of the
            // weight; below the smallest normal the step is absolute.
            let rel = if q.kind == E4 { 1.0 / 16.0 } else { 1.0 / 8.0 };
            for (a, b) in x.iter().zip(&y) {
                assert!((a - b).abs() <= rel * a.abs() + 1e-3, "{name}: {a} → {b}");
            }
            // The largest weight is stored exactly (scale = amax / max, code = max).
            let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
            let i = x.iter().position(|v| v.abs() == amax).unwrap();
            assert!((y[i].abs() - amax).abs() <= amax * 4e-3, "{name}: {} vs {amax}", y[i]);
        }
        let q = Fp8Quant { kind: E4, scale: Fp8Scale::Tensor, dtype: ScaleDtype::F32 };
        assert!(matches!(quantize_fp8(q, &x, 7), Err(KernelError::RowLength { .. })));
        let mut t = quantize_fp8(q, &x, row_len).unwrap();
        t.scales.push(1.0);
        assert!(matches!(dequantize_fp8(q, &t, row_len), Err(KernelError::Shape { expected: 1, .. })));
    }
}
