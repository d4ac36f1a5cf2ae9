//! ggml's K-quants: 256-weight super-blocks with quantized sub-block scales.
//!
//! | type | bytes | layout (in order) |
//! | --- | --- | --- |
//! | `Q2_K` | 84 | `scales[16]` (low nibble scale, high nibble min of each 16), `qs[64]` (2-bit), `d: f16`, `dmin: f16` |
//! | `Q3_K` | 110 | `hmask[32]` (3rd bit), `qs[64]` (low 2 bits), `scales[12]` (16 × 6-bit), `d: f16` |
//! | `Q4_K` | 144 | `d: f16`, `dmin: f16`, `scales[12]` (8 × 6-bit scale + 8 × 6-bit min), `qs[128]` (4-bit) |
//! | `Q5_K` | 176 | `d`, `dmin`, `scales[12]`, `qh[32]` (5th bit), `qs[128]` |
//! | `Q6_K` | 210 | `ql[128]` (low 4 bits), `qh[64]` (high 2 bits), `scales[16]: i8`, `d: f16` |
//! | `Q8_K` | 292 | `d: f32`, `qs[256]: i8`, `bsums[16]: i16` (sums of each 16) — activations |
//!
//! Bit placement: for 2-bit planes, weight `e = 128h + 32s + l` sits at bits `2s` of byte
//! `32h + l`; for 4-bit planes, weight `e = 64c + 32n + l` sits in nibble `n` of byte `32c + l`;
//! for 1-bit planes (`hmask`, `qh`), weight `e` is bit `e / 32` of byte `e % 32`. The
//! quantizers follow ggml's reference (`quantize_row_q*_K_ref`): per-sub-block scale (and min)
//! search, then 4-, 6- or 8-bit quantization of the scales against a super-block scale.

use memwall_spec::GgmlType;

use super::{BlockFormat, f16_at, nearest_int, put_f16, signed_absmax, through_f16};

/// Weights per super-block.
pub const QK_K: usize = 256;

/// ggml's `make_qkx2_quants`: scale and (non-positive) min for `x` with `nmax + 1` levels,
/// refined over `nstep` candidate scales by weighted least squares. Returns `(scale, −min)`.
#[allow(clippy::too_many_arguments)]
fn make_qkx2_quants(
    nmax: i32,
    x: &[f32],
    weights: &[f32],
    l: &mut [u8],
    rmin: f32,
    rdelta: f32,
    nstep: i32,
    use_mad: bool,
) -> (f32, f32) {
    let n = x.len();
    let (mut min, mut max) = (x[0], x[0]);
    let (mut sum_w, mut sum_x) = (0f32, 0f32);
    for i in 0..n {
        min = min.min(x[i]);
        max = max.max(x[i]);
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    if min > 0.0 {
        min = 0.0;
    }
    if max == min {
        l.iter_mut().for_each(|v| *v = 0);
        return (0.0, -min);
    }
    let err = |d: f32| if use_mad { d.abs() } else { d * d };
    let mut iscale = nmax as f32 / (max - min);
    let mut scale = 1.0 / iscale;
    let mut best_error = 0f32;
    for i in 0..n {
        let q = nearest_int(iscale * (x[i] - min)).clamp(0, nmax);
        l[i] = q as u8;
        best_error += weights[i] * err(scale * q as f32 + min - x[i]);
    }
    let mut laux = [0u8; 32];
    for is in 0..=nstep {
        iscale = (rmin + rdelta * is as f32 + nmax as f32) / (max - min);
        let (mut sum_l, mut sum_l2, mut sum_xl) = (0f32, 0f32, 0f32);
        for i in 0..n {
            let q = nearest_int(iscale * (x[i] - min)).clamp(0, nmax);
            laux[i] = q as u8;
            let (w, qf) = (weights[i], q as f32);
            sum_l += w * qf;
            sum_l2 += w * qf * qf;
            sum_xl += w * qf * x[i];
        }
        let det = sum_w * sum_l2 - sum_l * sum_l;
        if det > 0.0 {
            let mut this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
            let mut this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
            if this_min > 0.0 {
                this_min = 0.0;
                this_scale = sum_xl / sum_l2;
            }
            let cur: f32 = (0..n).map(|i| weights[i] * err(this_scale * laux[i] as f32 + this_min - x[i])).sum();
            if cur < best_error {
                l[..n].copy_from_slice(&laux[..n]);
                best_error = cur;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    (scale, -min)
}

/// ggml's `make_qx_quants` with `rmse_type = 1`: symmetric scale for levels
/// `−nmax..nmax−1`, searching 18 nearby scales for the best `x²`-weighted fit. `l` receives
/// `q + nmax`.
fn make_qx_quants(nmax: i32, x: &[f32], l: &mut [u8]) -> f32 {
    let max = signed_absmax(x);
    let amax = max.abs();
    if amax < 1e-15 {
        l.iter_mut().for_each(|v| *v = 0);
        return 0.0;
    }
    let fit = |iscale: f32| {
        let (mut sumlx, mut suml2) = (0f32, 0f32);
        for &v in x {
            let q = nearest_int(iscale * v).clamp(-nmax, nmax - 1) as f32;
            let w = v * v;
            sumlx += w * v * q;
            suml2 += w * q * q;
        }
        (sumlx, suml2)
    };
    let assign = |iscale: f32, l: &mut [u8]| {
        for (li, &v) in l.iter_mut().zip(x) {
            *li = (nearest_int(iscale * v).clamp(-nmax, nmax - 1) + nmax) as u8;
        }
    };
    let iscale = -(nmax as f32) / max;
    assign(iscale, l);
    let (sumlx, suml2) = fit(iscale);
    let mut scale = if suml2 > 0.0 { sumlx / suml2 } else { 0.0 };
    let mut best = scale * sumlx;
    for is in -9..=9 {
        if is == 0 {
            continue;
        }
        let iscale = -(nmax as f32 + 0.1 * is as f32) / max;
        let (sumlx, suml2) = fit(iscale);
        if suml2 > 0.0 && sumlx * sumlx > best * suml2 {
            assign(iscale, l);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    scale
}

/// ggml's `make_q3_quants` with RMSE refinement: symmetric scale for levels −nmax..nmax−1
/// with up to five passes of coordinate descent. `l` receives `q + nmax`.
fn make_q3_quants(nmax: i32, x: &[f32], l: &mut [u8]) -> f32 {
    let max = signed_absmax(x);
    let amax = max.abs();
    if amax < 1e-15 {
        l.iter_mut().for_each(|v| *v = 0);
        return 0.0;
    }
    let iscale = -(nmax as f32) / max;
    let mut q = [0i32; 16];
    let (mut sumlx, mut suml2) = (0f32, 0f32);
    for (i, &v) in x.iter().enumerate() {
        q[i] = nearest_int(iscale * v).clamp(-nmax, nmax - 1);
        let w = v * v;
        sumlx += w * v * q[i] as f32;
        suml2 += w * (q[i] * q[i]) as f32;
    }
    for _ in 0..5 {
        let mut changed = false;
        for (i, &v) in x.iter().enumerate() {
            let w = v * v;
            let mut slx = sumlx - w * v * q[i] as f32;
            if slx > 0.0 {
                let mut sl2 = suml2 - w * (q[i] * q[i]) as f32;
                let new_l = nearest_int(v * sl2 / slx).clamp(-nmax, nmax - 1);
                if new_l != q[i] {
                    slx += w * v * new_l as f32;
                    sl2 += w * (new_l * new_l) as f32;
                    if sl2 > 0.0 && slx * slx * suml2 > sumlx * sumlx * sl2 {
                        q[i] = new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    for (li, &qi) in l.iter_mut().zip(&q) {
        *li = (qi + nmax) as u8;
    }
    if suml2 > 0.0 { sumlx / suml2 } else { 0.0 }
}

/// Pack 2-bit values `l[0..256]`: weight `128h + 32s + i` into bits `2s` of byte `32h + i`.
fn pack_2bit(l: &[u8], qs: &mut [u8]) {
    for h in 0..2 {
        for i in 0..32 {
            let b = 128 * h + i;
            qs[32 * h + i] = l[b] | (l[b + 32] << 2) | (l[b + 64] << 4) | (l[b + 96] << 6);
        }
    }
}

#[inline]
fn two_bits(qs: &[u8], e: usize) -> u8 {
    let (h, s, i) = (e / 128, (e % 128) / 32, e % 32);
    (qs[32 * h + i] >> (2 * s)) & 3
}

/// Pack 4-bit values: weight `64c + 32n + i` into nibble `n` of byte `32c + i`.
fn pack_4bit(l: &[u8], qs: &mut [u8]) {
    for c in 0..4 {
        for i in 0..32 {
            qs[32 * c + i] = (l[64 * c + i] & 0x0f) | ((l[64 * c + 32 + i] & 0x0f) << 4);
        }
    }
}

#[inline]
fn four_bits(qs: &[u8], e: usize) -> u8 {
    let (c, n, i) = (e / 64, (e % 64) / 32, e % 32);
    (qs[32 * c + i] >> (4 * n)) & 0x0f
}

#[inline]
fn one_bit(plane: &[u8], e: usize) -> u8 {
    (plane[e % 32] >> (e / 32)) & 1
}

/// Scale and min `j` (0..8) of a Q4_K/Q5_K 12-byte scale array (`get_scale_min_k4`).
#[inline]
pub fn scale_min_k4(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        ((s[j + 4] & 0x0f) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4))
    }
}

/// Pack 8 six-bit scales and mins into 12 bytes (inverse of [`scale_min_k4`]).
fn pack_scale_min_k4(ls: &[u8; 8], lm: &[u8; 8], s: &mut [u8]) {
    s[..12].iter_mut().for_each(|v| *v = 0);
    for j in 0..8 {
        if j < 4 {
            s[j] = ls[j];
            s[j + 4] = lm[j];
        } else {
            s[j + 4] = (ls[j] & 0x0f) | ((lm[j] & 0x0f) << 4);
            s[j - 4] |= (ls[j] >> 4) << 6;
            s[j] |= (lm[j] >> 4) << 6;
        }
    }
}

/// Q3_K scale `j` (0..16), biased by −32.
#[inline]
pub fn q3k_scale(s: &[u8], j: usize) -> i32 {
    let low = if j < 8 { s[j] & 0x0f } else { s[j - 8] >> 4 };
    let high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    (low | (high << 4)) as i32 - 32
}

/// 2.625 bits per weight.
#[allow(non_camel_case_types)]
pub struct Q2_K;
/// 3.4375 bits per weight.
#[allow(non_camel_case_types)]
pub struct Q3_K;
/// 4.5 bits per weight.
#[allow(non_camel_case_types)]
pub struct Q4_K;
/// 5.5 bits per weight.
#[allow(non_camel_case_types)]
pub struct Q5_K;
/// 6.5625 bits per weight.
#[allow(non_camel_case_types)]
pub struct Q6_K;
/// 8-bit activations with block sums.
#[allow(non_camel_case_types)]
pub struct Q8_K;

impl BlockFormat for Q2_K {
    const TYPE: GgmlType = GgmlType::Q2_K;
    const BLOCK: usize = QK_K;
    const BYTES: usize = 84;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        let mut l = [0u8; QK_K];
        let (mut scales, mut mins) = ([0f32; 16], [0f32; 16]);
        for j in 0..16 {
            let xs = &x[16 * j..16 * j + 16];
            let w: Vec<f32> = xs.iter().map(|v| v.abs()).collect();
            (scales[j], mins[j]) = make_qkx2_quants(3, xs, &w, &mut l[16 * j..16 * j + 16], -0.5, 0.1, 15, true);
        }
        let max_scale = scales.iter().fold(0f32, |a, &b| a.max(b));
        let max_min = mins.iter().fold(0f32, |a, &b| a.max(b));
        let (sc, rest) = out.split_at_mut(16);
        if max_scale > 0.0 {
            let iscale = 15.0 / max_scale;
            for j in 0..16 {
                sc[j] = nearest_int(iscale * scales[j]).clamp(0, 15) as u8;
            }
            put_f16(&mut rest[64..], max_scale / 15.0);
        } else {
            sc.iter_mut().for_each(|v| *v = 0);
            put_f16(&mut rest[64..], 0.0);
        }
        if max_min > 0.0 {
            let iscale = 15.0 / max_min;
            for j in 0..16 {
                sc[j] |= (nearest_int(iscale * mins[j]).clamp(0, 15) as u8) << 4;
            }
            put_f16(&mut rest[66..], max_min / 15.0);
        } else {
            put_f16(&mut rest[66..], 0.0);
        }
        let (d, dmin) = (f16_at(&rest[64..]), f16_at(&rest[66..]));
        for j in 0..16 {
            let dj = d * (sc[j] & 0x0f) as f32;
            if dj == 0.0 {
                continue;
            }
            let dm = dmin * (sc[j] >> 4) as f32;
            for i in 0..16 {
                l[16 * j + i] = nearest_int((x[16 * j + i] + dm) / dj).clamp(0, 3) as u8;
            }
        }
        pack_2bit(&l, &mut rest[..64]);
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        let (sc, qs) = (&b[..16], &b[16..80]);
        let (d, dmin) = (f16_at(&b[80..]), f16_at(&b[82..]));
        for (e, o) in out.iter_mut().enumerate().take(QK_K) {
            let s = sc[e / 16];
            *o = d * (s & 0x0f) as f32 * two_bits(qs, e) as f32 - dmin * (s >> 4) as f32;
        }
    }
}

impl BlockFormat for Q3_K {
    const TYPE: GgmlType = GgmlType::Q3_K;
    const BLOCK: usize = QK_K;
    const BYTES: usize = 110;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        let mut l = [0u8; QK_K];
        let mut scales = [0f32; 16];
        for j in 0..16 {
            scales[j] = make_q3_quants(4, &x[16 * j..16 * j + 16], &mut l[16 * j..16 * j + 16]);
        }
        let max_scale = signed_absmax(&scales);
        out.iter_mut().for_each(|v| *v = 0);
        let (hmask, rest) = out.split_at_mut(32);
        let (qs, rest) = rest.split_at_mut(64);
        let (sc, dd) = rest.split_at_mut(12);
        if max_scale != 0.0 {
            let iscale = -32.0 / max_scale;
            for (j, &s) in scales.iter().enumerate() {
                let v = (nearest_int(iscale * s).clamp(-32, 31) + 32) as u8;
                if j < 8 {
                    sc[j] = v & 0x0f;
                } else {
                    sc[j - 8] |= (v & 0x0f) << 4;
                }
                sc[8 + j % 4] |= (v >> 4) << (2 * (j / 4));
            }
            put_f16(dd, 1.0 / iscale);
        }
        let d = f16_at(dd);
        for j in 0..16 {
            let dj = d * q3k_scale(sc, j) as f32;
            if dj == 0.0 {
                continue;
            }
            for i in 0..16 {
                l[16 * j + i] = (nearest_int(x[16 * j + i] / dj).clamp(-4, 3) + 4) as u8;
            }
        }
        for (e, v) in l.iter_mut().enumerate() {
            if *v > 3 {
                hmask[e % 32] |= 1 << (e / 32);
                *v -= 4;
            }
        }
        pack_2bit(&l, qs);
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        let (hmask, qs, sc) = (&b[..32], &b[32..96], &b[96..108]);
        let d = f16_at(&b[108..]);
        for (e, o) in out.iter_mut().enumerate().take(QK_K) {
            let q = two_bits(qs, e) as i32 - if one_bit(hmask, e) == 1 { 0 } else { 4 };
            *o = d * q3k_scale(sc, e / 16) as f32 * q as f32;
        }
    }
}

/// Quantize a 256-block with 8 sub-blocks of 32 sharing 6-bit scales and mins
/// (`Q4_K` with `nmax = 15`, `Q5_K` with `nmax = 31`); returns the levels, d, dmin, scales.
fn quantize_k_asym(x: &[f32], nmax: i32, rmin: f32, nstep: i32, l: &mut [u8; QK_K]) -> (f32, f32, [u8; 12]) {
    let (mut scales, mut mins) = ([0f32; 8], [0f32; 8]);
    for j in 0..8 {
        let xs = &x[32 * j..32 * j + 32];
        let av = (xs.iter().map(|v| v * v).sum::<f32>() / 32.0).sqrt();
        let w: Vec<f32> = xs.iter().map(|v| av + v.abs()).collect();
        (scales[j], mins[j]) = make_qkx2_quants(nmax, xs, &w, &mut l[32 * j..32 * j + 32], rmin, 0.1, nstep, false);
    }
    let max_scale = scales.iter().fold(0f32, |a, &b| a.max(b));
    let max_min = mins.iter().fold(0f32, |a, &b| a.max(b));
    let inv_scale = if max_scale > 0.0 { 63.0 / max_scale } else { 0.0 };
    let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
    let (mut ls, mut lm) = ([0u8; 8], [0u8; 8]);
    for j in 0..8 {
        ls[j] = nearest_int(inv_scale * scales[j]).clamp(0, 63) as u8;
        lm[j] = nearest_int(inv_min * mins[j]).clamp(0, 63) as u8;
    }
    let mut s = [0u8; 12];
    pack_scale_min_k4(&ls, &lm, &mut s);
    let (d, dmin) = (through_f16(max_scale / 63.0), through_f16(max_min / 63.0));
    for j in 0..8 {
        let (sc, m) = scale_min_k4(j, &s);
        let dj = d * sc as f32;
        if dj == 0.0 {
            continue;
        }
        let dm = dmin * m as f32;
        for i in 0..32 {
            l[32 * j + i] = nearest_int((x[32 * j + i] + dm) / dj).clamp(0, nmax) as u8;
        }
    }
    (d, dmin, s)
}

impl BlockFormat for Q4_K {
    const TYPE: GgmlType = GgmlType::Q4_K;
    const BLOCK: usize = QK_K;
    const BYTES: usize = 144;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        let mut l = [0u8; QK_K];
        let (d, dmin, s) = quantize_k_asym(x, 15, -1.0, 20, &mut l);
        put_f16(out, d);
        put_f16(&mut out[2..], dmin);
        out[4..16].copy_from_slice(&s);
        pack_4bit(&l, &mut out[16..144]);
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        let (d, dmin) = (f16_at(b), f16_at(&b[2..]));
        let (s, qs) = (&b[4..16], &b[16..144]);
        for (e, o) in out.iter_mut().enumerate().take(QK_K) {
            let (sc, m) = scale_min_k4(e / 32, s);
            *o = d * sc as f32 * four_bits(qs, e) as f32 - dmin * m as f32;
        }
    }
}

impl BlockFormat for Q5_K {
    const TYPE: GgmlType = GgmlType::Q5_K;
    const BLOCK: usize = QK_K;
    const BYTES: usize = 176;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        let mut l = [0u8; QK_K];
        let (d, dmin, s) = quantize_k_asym(x, 31, -0.5, 15, &mut l);
        put_f16(out, d);
        put_f16(&mut out[2..], dmin);
        out[4..16].copy_from_slice(&s);
        let (qh, qs) = out[16..176].split_at_mut(32);
        qh.iter_mut().for_each(|v| *v = 0);
        for (e, v) in l.iter_mut().enumerate() {
            if *v > 15 {
                qh[e % 32] |= 1 << (e / 32);
                *v -= 16;
            }
        }
        pack_4bit(&l, qs);
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        let (d, dmin) = (f16_at(b), f16_at(&b[2..]));
        let (s, qh, qs) = (&b[4..16], &b[16..48], &b[48..176]);
        for (e, o) in out.iter_mut().enumerate().take(QK_K) {
            let (sc, m) = scale_min_k4(e / 32, s);
            let q = four_bits(qs, e) | (one_bit(qh, e) << 4);
            *o = d * sc as f32 * q as f32 - dmin * m as f32;
        }
    }
}

/// Q6_K 6-bit level of weight `e` (0..64) from `ql` and `qh`.
#[inline]
pub fn q6k_level(ql: &[u8], qh: &[u8], e: usize) -> i32 {
    let (h, r) = (e / 128, e % 128);
    let low = (ql[64 * h + r % 64] >> (4 * (r / 64))) & 0x0f;
    let high = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
    (low | (high << 4)) as i32 - 32
}

impl BlockFormat for Q6_K {
    const TYPE: GgmlType = GgmlType::Q6_K;
    const BLOCK: usize = QK_K;
    const BYTES: usize = 210;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        let mut l = [0u8; QK_K];
        let mut scales = [0f32; 16];
        for j in 0..16 {
            scales[j] = make_qx_quants(32, &x[16 * j..16 * j + 16], &mut l[16 * j..16 * j + 16]);
        }
        let max_scale = signed_absmax(&scales);
        let amax = max_scale.abs();
        out.iter_mut().for_each(|v| *v = 0);
        if amax == 0.0 {
            return;
        }
        let iscale = -128.0 / max_scale;
        put_f16(&mut out[208..], 1.0 / iscale);
        let d = f16_at(&out[208..]);
        for (j, &s) in scales.iter().enumerate() {
            out[192 + j] = nearest_int(iscale * s).min(127) as i8 as u8;
        }
        for j in 0..16 {
            let dj = d * out[192 + j] as i8 as f32;
            if dj == 0.0 {
                continue;
            }
            for i in 0..16 {
                l[16 * j + i] = (nearest_int(x[16 * j + i] / dj).clamp(-32, 31) + 32) as u8;
            }
        }
        let (ql, qh) = out[..192].split_at_mut(128);
        for h in 0..2 {
            for i in 0..32 {
                let b = 128 * h + i;
                ql[64 * h + i] = (l[b] & 0x0f) | ((l[b + 64] & 0x0f) << 4);
                ql[64 * h + i + 32] = (l[b + 32] & 0x0f) | ((l[b + 96] & 0x0f) << 4);
                qh[32 * h + i] =
                    (l[b] >> 4) | ((l[b + 32] >> 4) << 2) | ((l[b + 64] >> 4) << 4) | ((l[b + 96] >> 4) << 6);
            }
        }
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        let (ql, qh, sc) = (&b[..128], &b[128..192], &b[192..208]);
        let d = f16_at(&b[208..]);
        for (e, o) in out.iter_mut().enumerate().take(QK_K) {
            *o = d * sc[e / 16] as i8 as f32 * q6k_level(ql, qh, e) as f32;
        }
    }
}

impl BlockFormat for Q8_K {
    const TYPE: GgmlType = GgmlType::Q8_K;
    const BLOCK: usize = QK_K;
    const BYTES: usize = 292;
    fn quantize_block(x: &[f32], out: &mut [u8]) {
        let max = signed_absmax(x);
        let amax = max.abs();
        out.iter_mut().for_each(|v| *v = 0);
        if amax == 0.0 {
            return;
        }
        let iscale = -127.0 / max;
        out[..4].copy_from_slice(&(1.0 / iscale).to_le_bytes());
        for (j, &v) in x.iter().enumerate() {
            out[4 + j] = nearest_int(iscale * v).min(127) as i8 as u8;
        }
        for g in 0..16 {
            let s: i16 = out[4 + 16 * g..4 + 16 * g + 16].iter().map(|&q| q as i8 as i16).sum();
            out[260 + 2 * g..262 + 2 * g].copy_from_slice(&s.to_le_bytes());
        }
    }
    fn dequantize_block(b: &[u8], out: &mut [f32]) {
        let d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        for (o, &q) in out.iter_mut().zip(&b[4..260]) {
            *o = d * q as i8 as f32;
        }
    }
}
