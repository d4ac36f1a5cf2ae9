//! ggml's 32-weight formats.
//!
//! | type | bytes | layout |
//! | --- | --- | --- |
//! | `Q4_0` | 18 | `d: f16`, `qs[16]`: weight `j` in the low nibble of `qs[j]`, weight `j+16` in the high nibble; value `d × (q − 8)` |
//! | `Q4_1` | 20 | `d: f16`, `m: f16`, `qs[16]` as Q4_0; value `d × q + m` |
//! | `Q5_0` | 22 | `d: f16`, `qh: u32` (bit `j` = 5th bit of weight `j`), `qs[16]`; value `d × (q − 16)` |
//! | `Q5_1` | 24 | `d`, `m`, `qh`, `qs[16]`; value `d × q + m` |
//! | `Q8_0` | 34 | `d: f16`, `qs[32]: i8`; value `d × q` |
//! | `IQ4_NL` | 18 | `d: f16`, `qs[16]` as Q4_0 indexing the non-linear table [`IQ4_NL_VALUES`]; value `d × table[q]` |

use memwall_spec::GgmlType;

use super::{BlockFormat, f16_at, put_f16, round_away, signed_absmax};

/// The IQ4_NL/IQ4_XS code book (`kvalues_iq4nl`).
pub const IQ4_NL_VALUES: [i8; 16] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

fn min_max(x: &[f32]) -> (f32, f32) {
    x.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

fn pack_nibbles(q: &[u8; 32], qs: &mut [u8]) {
    for j in 0..16 {
        qs[j] = (q[j] & 0x0f) | ((q[j + 16] & 0x0f) << 4);
    }
}

fn nibble(qs: &[u8], j: usize) -> u8 {
    if j < 16 { qs[j] & 0x0f } else { qs[j - 16] >> 4 }
}

/// 4-bit symmetric, 32 weights, 18 bytes.
pub struct Q4_0;
/// 4-bit with minimum, 20 bytes.
pub struct Q4_1;
/// 5-bit symmetric, 22 bytes.
pub struct Q5_0;
/// 5-bit with minimum, 24 bytes.
pub struct Q5_1;
/// 8-bit symmetric, 34 bytes.
pub struct Q8_0;
/// 4-bit non-linear, 18 bytes.
#[allow(non_camel_case_types)]
pub struct IQ4_NL;

impl BlockFormat for Q4_0 {
    const TYPE: GgmlType = GgmlType::Q4_0;
    const BLOCK: usize = 32;
    const BYTES: usize = 18;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        let d = signed_absmax(x) / -8.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut q = [0u8; 32];
        for (qi, &v) in q.iter_mut().zip(x) {
            *qi = ((v * id + 8.5) as i8).clamp(0, 15) as u8;
        }
        put_f16(out, d);
        pack_nibbles(&q, &mut out[2..18]);
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        let d = f16_at(b);
        for (j, o) in out.iter_mut().enumerate().take(32) {
            *o = (nibble(&b[2..], j) as i32 - 8) as f32 * d;
        }
    }
}

impl BlockFormat for Q4_1 {
    const TYPE: GgmlType = GgmlType::Q4_1;
    const BLOCK: usize = 32;
    const BYTES: usize = 20;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        let (min, max) = min_max(x);
        let d = (max - min) / 15.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut q = [0u8; 32];
        for (qi, &v) in q.iter_mut().zip(x) {
            *qi = (((v - min) * id + 0.5) as i8).clamp(0, 15) as u8;
        }
        put_f16(out, d);
        put_f16(&mut out[2..], min);
        pack_nibbles(&q, &mut out[4..20]);
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        let (d, m) = (f16_at(b), f16_at(&b[2..]));
        for (j, o) in out.iter_mut().enumerate().take(32) {
            *o = nibble(&b[4..], j) as f32 * d + m;
        }
    }
}

fn put_q5(q: &[u8; 32], out: &mut [u8]) {
    let mut qh = 0u32;
    for (j, &v) in q.iter().enumerate() {
        qh |= (((v & 0x10) >> 4) as u32) << j;
    }
    out[..4].copy_from_slice(&qh.to_le_bytes());
    pack_nibbles(q, &mut out[4..20]);
}

fn q5_at(b: &[u8], j: usize) -> u8 {
    let qh = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    nibble(&b[4..], j) | ((((qh >> j) & 1) as u8) << 4)
}

impl BlockFormat for Q5_0 {
    const TYPE: GgmlType = GgmlType::Q5_0;
    const BLOCK: usize = 32;
    const BYTES: usize = 22;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        let d = signed_absmax(x) / -16.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut q = [0u8; 32];
        for (qi, &v) in q.iter_mut().zip(x) {
            *qi = ((v * id + 16.5) as i8).clamp(0, 31) as u8;
        }
        put_f16(out, d);
        put_q5(&q, &mut out[2..]);
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        let d = f16_at(b);
        for (j, o) in out.iter_mut().enumerate().take(32) {
            *o = (q5_at(&b[2..], j) as i32 - 16) as f32 * d;
        }
    }
}

impl BlockFormat for Q5_1 {
    const TYPE: GgmlType = GgmlType::Q5_1;
    const BLOCK: usize = 32;
    const BYTES: usize = 24;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        let (min, max) = min_max(x);
        let d = (max - min) / 31.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut q = [0u8; 32];
        for (qi, &v) in q.iter_mut().zip(x) {
            *qi = (((v - min) * id + 0.5) as i8).clamp(0, 31) as u8;
        }
        put_f16(out, d);
        put_f16(&mut out[2..], min);
        put_q5(&q, &mut out[4..]);
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        let (d, m) = (f16_at(b), f16_at(&b[2..]));
        for (j, o) in out.iter_mut().enumerate().take(32) {
            *o = q5_at(&b[4..], j) as f32 * d + m;
        }
    }
}

impl BlockFormat for Q8_0 {
    const TYPE: GgmlType = GgmlType::Q8_0;
    const BLOCK: usize = 32;
    const BYTES: usize = 34;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        put_f16(out, d);
        for (o, &v) in out[2..34].iter_mut().zip(x) {
            *o = round_away(v * id).clamp(-128, 127) as i8 as u8;
        }
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        let d = f16_at(b);
        for (o, &q) in out.iter_mut().zip(&b[2..34]) {
            *o = q as i8 as f32 * d;
        }
    }
}

/// Index of the code-book entry nearest to `v` (in units of the scale).
fn best_index(v: f32) -> u8 {
    let mut best = 0;
    for (i, &k) in IQ4_NL_VALUES.iter().enumerate() {
        if (k as f32 - v).abs() < (IQ4_NL_VALUES[best] as f32 - v).abs() {
            best = i;
        }
    }
    best as u8
}

impl BlockFormat for IQ4_NL {
    const TYPE: GgmlType = GgmlType::IQ4_NL;
    const BLOCK: usize = 32;
    const BYTES: usize = 18;
    /// Scale search as ggml's `quantize_row_iq4_nl_impl` without an importance matrix:
    /// start from `d = max / −127` (the table's extreme), try ±7 nearby scales, and keep the
    /// least-squares refit of the best assignment.
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        let max = signed_absmax(x);
        let mut q = [0u8; 32];
        if max == 0.0 {
            put_f16(out, 0.0);
            pack_nibbles(&[8u8; 32], &mut out[2..18]);
            return;
        }
        let mut best_d = max / IQ4_NL_VALUES[0] as f32;
        let mut best_err = f32::INFINITY;
        for step in -7..=7 {
            let id = (step as f32 * 0.1 + IQ4_NL_VALUES[0] as f32) / max;
            let (mut sumqx, mut sumq2) = (0f32, 0f32);
            let mut cand = [0u8; 32];
            for (c, &v) in cand.iter_mut().zip(x) {
                *c = best_index(id * v);
                let k = IQ4_NL_VALUES[*c as usize] as f32;
                sumqx += k * v;
                sumq2 += k * k;
            }
            if sumq2 == 0.0 {
                continue;
            }
            let d = sumqx / sumq2;
            let err: f32 = cand.iter().zip(x).map(|(&c, &v)| (v - d * IQ4_NL_VALUES[c as usize] as f32).powi(2)).sum();
            if err < best_err {
                best_err = err;
                best_d = d;
                q = cand;
            }
        }
        put_f16(out, best_d);
        pack_nibbles(&q, &mut out[2..18]);
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        let d = f16_at(b);
        for (j, o) in out.iter_mut().enumerate().take(32) {
            *o = IQ4_NL_VALUES[nibble(&b[2..], j) as usize] as f32 * d;
        }
    }
}
