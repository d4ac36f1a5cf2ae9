//! MXFP4: the OCP Microscaling FP4 format as ggml stores it (`GGML_TYPE_MXFP4`, type 39).
//!
//! | type | bytes | layout |
//! | --- | --- | --- |
//! | `MXFP4` | 17 | `e: u8` (E8M0 shared exponent), `qs[16]`: weight `j` in the low nibble of `qs[j]`, weight `j+16` in the high nibble (as Q4_0); value `table[q] × 2^(e − 128)` |
//!
//! Each nibble is an E2M1 float (sign bit 3, two exponent bits, one mantissa bit:
//! ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}). ggml keeps the E2M1 values doubled as integers,
//! [`MXFP4_VALUES`] = ±{0, 1, 2, 3, 4, 6, 8, 12}, and halves the scale to compensate
//! ([`e8m0_half`] = `2^(e − 128)` instead of the OCP `2^(e − 127)`), so a dot product runs
//! in integers against Q8_0 activations. Sources: `block_mxfp4` and `kvalues_mxfp4` in
//! ggml-org/llama.cpp `ggml/src/ggml-common.h`, `ggml_e8m0_to_fp32_half` in
//! `ggml/src/ggml-impl.h`, `quantize_row_mxfp4_ref` and `dequantize_row_mxfp4` in
//! `ggml/src/ggml-quants.c`; OCP Microscaling Formats (MX) v1.0, §5.3.3 (E2M1) and §5.4.1
//! (E8M0), <https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf>.

use memwall_spec::GgmlType;

use super::BlockFormat;

/// Twice the E2M1 values, by 4-bit code (`kvalues_mxfp4`): codes 0–7 positive, 8–15 the
/// same magnitudes negative (code 8 is −0).
pub const MXFP4_VALUES: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// ggml's halved E8M0 scale, `2^(e − 128)` as an f32 (`ggml_e8m0_to_fp32_half`): exponent
/// byte `e` stands for `2^(e − 127)` and the half compensates the doubled [`MXFP4_VALUES`].
/// `e = 0` and `1` are the subnormals 2^−128 and 2^−127; `e = 255` (NaN in OCP) reads as
/// 2^127, as ggml does.
#[inline]
pub fn e8m0_half(e: u8) -> f32 {
    f32::from_bits(if e < 2 { 0x0020_0000 << e } else { (e as u32 - 1) << 23 })
}

/// ggml's shared exponent for a block whose largest magnitude is `amax`:
/// `floor(log2(amax)) − 2 + 127` (the largest E2M1 value, 6, has exponent 2), or 0 for an
/// all-zero block. Blocks below 2^−125 (where ggml's float-to-`uint8_t` cast is undefined)
/// get 0.
#[inline]
pub fn mxfp4_exponent(amax: f32) -> u8 {
    if amax > 0.0 { (amax.log2().floor() - 2.0 + 127.0) as u8 } else { 0 }
}

/// The code whose value `MXFP4_VALUES[i] × d` is nearest to `x`, the first on ties
/// (`best_index_mxfp4`: +0 before −0, and the smaller magnitude of two equidistant values).
#[inline]
pub fn mxfp4_code(x: f32, d: f32) -> u8 {
    let mut best = 0;
    let mut best_err = (MXFP4_VALUES[0] as f32 * d - x).abs();
    for (i, &k) in MXFP4_VALUES.iter().enumerate().skip(1) {
        let err = (k as f32 * d - x).abs();
        if err < best_err {
            best = i;
            best_err = err;
        }
    }
    best as u8
}

/// 32 E2M1 weights and an E8M0 exponent, 17 bytes.
pub struct MXFP4;

impl BlockFormat for MXFP4 {
    const TYPE: GgmlType = GgmlType::MXFP4;
    const BLOCK: usize = 32;
    const BYTES: usize = 17;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        let amax = x[..32].iter().fold(0f32, |m, &v| if m < v.abs() { v.abs() } else { m });
        let e = mxfp4_exponent(amax);
        let d = e8m0_half(e);
        out[0] = e;
        for j in 0..16 {
            out[1 + j] = mxfp4_code(x[j], d) | (mxfp4_code(x[j + 16], d) << 4);
        }
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        let d = e8m0_half(b[0]);
        for j in 0..16 {
            out[j] = MXFP4_VALUES[(b[1 + j] & 0x0f) as usize] as f32 * d;
            out[j + 16] = MXFP4_VALUES[(b[1 + j] >> 4) as usize] as f32 * d;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halved_scale_is_two_to_the_e_minus_128() {
        assert_eq!(e8m0_half(128), 1.0);
        assert_eq!(e8m0_half(127), 0.5);
        assert_eq!(e8m0_half(130), 4.0);
        // The subnormals: 2^-128 and 2^-127.
        assert_eq!(e8m0_half(0), 2f32.powi(-128));
        assert_eq!(e8m0_half(1), 2f32.powi(-127));
        assert_eq!(e8m0_half(2), 2f32.powi(-126));
        assert_eq!(e8m0_half(255), 2f32.powi(127));
    }

    #[test]
    fn exponent_puts_the_block_maximum_in_the_top_binade() {
        // amax 6 → floor(log2 6) = 2 → e = 127, d = 0.5: 6 = 12 × 0.5 exactly.
        assert_eq!(mxfp4_exponent(6.0), 127);
        assert_eq!(mxfp4_exponent(4.0), 127);
        assert_eq!(mxfp4_exponent(3.99), 126);
        assert_eq!(mxfp4_exponent(1.0), 125);
        assert_eq!(mxfp4_exponent(0.0), 0);
        assert_eq!(mxfp4_exponent(1e-40), 0);
    }

    /// A block worked by hand: amax 6 gives e = 127 (0x7f) and d = 0.5, so a weight `w` is
    /// stored as the code of `2w` in the doubled table.
    #[test]
    fn hand_checked_block() {
        let mut x = [0f32; 32];
        x[0] = 6.0; // 12 × 0.5 → code 7
        x[1] = 0.5; // 1 → code 1
        x[2] = -3.0; // −6 → code 13
        x[3] = 1.25; // 2.5: ties 2 (code 2) and 3 (code 3); the first wins → 1.0
        x[4] = 5.0; // 10: ties 8 (code 6) and 12 (code 7) → 4.0
        x[5] = -0.0; // code 0 (+0 comes before −0)
        x[16] = -6.0; // −12 → code 15, the high nibble of byte 1
        x[17] = 0.2; // 0.4 → nearest 0 (code 0) → 0
        x[31] = 2.4; // 4.8: 4 (code 4) → 2.0
        let mut b = [0u8; 17];
        MXFP4::quantize_block(&x, &mut b);
        assert_eq!(b[0], 0x7f);
        assert_eq!(b[1], 0x07 | 0xf0);
        assert_eq!(b[2], 0x01);
        assert_eq!(b[3], 0x0d);
        assert_eq!(b[4], 0x02);
        assert_eq!(b[5], 0x06);
        assert_eq!(b[6], 0x00);
        assert_eq!(b[16], 0x40);
        let mut y = [0f32; 32];
        MXFP4::dequantize_block(&b, &mut y);
        assert_eq!(&y[..6], &[6.0, 0.5, -3.0, 1.0, 4.0, 0.0]);
        assert_eq!((y[16], y[17], y[31]), (-6.0, 0.0, 2.0));
    }

    #[test]
    fn every_code_decodes_to_its_e2m1_value() {
        let e2m1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
        for q in 0u8..16 {
            // e = 128: the OCP scale is 2, so the value is 2 × E2M1.
            let mut b = [128u8; 17];
            b[1..].fill(q | (q << 4));
            let mut y = [0f32; 32];
            MXFP4::dequantize_block(&b, &mut y);
            let want = if q < 8 { 2.0 * e2m1[q as usize] } else { -2.0 * e2m1[q as usize - 8] };
            assert!(y.iter().all(|&v| v == want), "code {q}: {} != {want}", y[0]);
        }
    }

    /// Values already on the grid survive a round trip exactly.
    #[test]
    fn grid_values_round_trip_exactly() {
        let grid = [0.0f32, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];
        let x: Vec<f32> = (0..32).map(|i| grid[i % 8] * if i % 3 == 0 { -0.25 } else { 0.25 }).collect();
        let mut b = [0u8; 17];
        MXFP4::quantize_block(&x, &mut b);
        let mut y = [0f32; 32];
        MXFP4::dequantize_block(&b, &mut y);
        assert_eq!(x, y);
    }
}
