//! Ternary formats (weights in {−1, 0, +1} × d), as ggml's TQ1_0 and TQ2_0.
//!
//! | type | bytes | layout |
//! | --- | --- | --- |
//! | `TQ1_0` | 54 | `qs[48]`: 5 trits per byte, `qh[4]`: 4 trits per byte, `d: f16`. A byte holds trits as a base-3 fixed-point fraction `⌈b × 256 / 243⌉`; trit `t` is `((b × 3^t mod 256) × 3) >> 8`. Weights 0..160 are trit `e / 32` of byte `e % 32`; 160..240 trit `(e−160) / 16` of byte `32 + (e−160) % 16`; 240..256 trit `(e−240) / 4` of `qh[(e−240) % 4]`. |
//! | `TQ2_0` | 66 | `qs[64]`: 2 bits per trit (`q + 1`), weight `128h + 32s + l` at bits `2s` of byte `32h + l`; `d: f16` |

use memwall_spec::GgmlType;

use super::{BlockFormat, f16_at, put_f16, round_away};

/// 1.6875 bits per weight.
#[allow(non_camel_case_types)]
pub struct TQ1_0;
/// 2.0625 bits per weight.
#[allow(non_camel_case_types)]
pub struct TQ2_0;

/// `d = max|x|` and trits `round(x / d) + 1` in {0, 1, 2}.
fn trits(x: &[f32]) -> (f32, [u8; 256]) {
    let d = x.iter().fold(0f32, |m, v| m.max(v.abs()));
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut q = [0u8; 256];
    for (qi, &v) in q.iter_mut().zip(x) {
        *qi = (round_away(v * id).clamp(-1, 1) + 1) as u8;
    }
    (d, q)
}

/// Base-3 fixed point: `Σ q_t × 3^(k−1−t)` scaled to a byte, `⌈v × 256 / 243⌉`.
/// The first trit takes weight 81, the fifth weight 1 (absent trits count as 0).
fn pack_trits(q: impl Iterator<Item = u8>) -> u8 {
    let v: u16 = q.enumerate().map(|(t, qt)| qt as u16 * 3u16.pow(4 - t as u32)).sum();
    (v * 256).div_ceil(243) as u8
}

/// Trit `t` of a packed byte, as −1, 0 or +1.
#[inline]
pub fn trit(b: u8, t: u32) -> i8 {
    let m = b.wrapping_mul(3u8.pow(t));
    ((m as u16 * 3) >> 8) as i8 - 1
}

/// Trit of weight `e` of a TQ1_0 block.
#[inline]
pub fn tq1_trit(b: &[u8], e: usize) -> i8 {
    if e < 160 {
        trit(b[e % 32], (e / 32) as u32)
    } else if e < 240 {
        trit(b[32 + (e - 160) % 16], ((e - 160) / 16) as u32)
    } else {
        trit(b[48 + (e - 240) % 4], ((e - 240) / 4) as u32)
    }
}

impl BlockFormat for TQ1_0 {
    const TYPE: GgmlType = GgmlType::TQ1_0;
    const BLOCK: usize = 256;
    const BYTES: usize = 54;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        let (d, q) = trits(x);
        for l in 0..32 {
            out[l] = pack_trits((0..5).map(|t| q[32 * t + l]));
        }
        for l in 0..16 {
            out[32 + l] = pack_trits((0..5).map(|t| q[160 + 16 * t + l]));
        }
        for l in 0..4 {
            out[48 + l] = pack_trits((0..4).map(|t| q[240 + 4 * t + l]));
        }
        put_f16(&mut out[52..], d);
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        let d = f16_at(&b[52..]);
        for (e, o) in out.iter_mut().enumerate().take(256) {
            *o = tq1_trit(b, e) as f32 * d;
        }
    }
}

impl BlockFormat for TQ2_0 {
    const TYPE: GgmlType = GgmlType::TQ2_0;
    const BLOCK: usize = 256;
    const BYTES: usize = 66;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        let (d, q) = trits(x);
        for h in 0..2 {
            for l in 0..32 {
                let b = 128 * h + l;
                out[32 * h + l] = q[b] | (q[b + 32] << 2) | (q[b + 64] << 4) | (q[b + 96] << 6);
            }
        }
        put_f16(&mut out[64..], d);
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        let d = f16_at(&b[64..]);
        for (e, o) in out.iter_mut().enumerate().take(256) {
            let (h, s, l) = (e / 128, (e % 128) / 32, e % 32);
            *o = (((b[32 * h + l] >> (2 * s)) & 3) as i8 - 1) as f32 * d;
        }
    }
}
