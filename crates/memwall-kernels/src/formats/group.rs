//! Generic group-wise integer formats (`intN-gG`), for "group 64 vs 128" studies.
//!
//! Layout of one group of `G` weights: the scale (`f16`, `bf16`, `f32` or `e8m0`), then the
//! minimum in the same dtype when asymmetric, then `N × G / 8` bytes of `N`-bit codes packed
//! least-significant-bit first. Symmetric: `q ∈ [−2^(N−1), 2^(N−1) − 1]` stored as
//! `q + 2^(N−1)`, `d = signed absmax / −2^(N−1)`, value `d × q`. Asymmetric:
//! `d = (max − min) / (2^N − 1)`, value `d × q + min`. E8M0 scales are the power of two at or
//! above the ideal scale.

use memwall_spec::{GroupQuant, QuantFormat, ScaleDtype};

use super::float::bf16_bits;
use super::{f16_at, put_f16};
use crate::KernelError;

fn put_scale(dtype: ScaleDtype, out: &mut [u8], v: f32) -> f32 {
    match dtype {
        ScaleDtype::F16 => {
            put_f16(out, v);
            f16_at(out)
        }
        ScaleDtype::Bf16 => {
            let b = bf16_bits(v);
            out[..2].copy_from_slice(&b.to_le_bytes());
            f32::from_bits((b as u32) << 16)
        }
        ScaleDtype::F32 => {
            out[..4].copy_from_slice(&v.to_le_bytes());
            v
        }
        ScaleDtype::E8m0 => {
            // Exponent byte e holds 2^(e − 127) (non-negative scales only); 0 stands for zero.
            let e = if v == 0.0 { 0 } else { (v.abs().log2().ceil() as i32 + 127).clamp(1, 254) };
            out[0] = e as u8;
            if e == 0 { 0.0 } else { 2f32.powi(e - 127) }
        }
    }
}

fn get_scale(dtype: ScaleDtype, b: &[u8]) -> f32 {
    match dtype {
        ScaleDtype::F16 => f16_at(b),
        ScaleDtype::Bf16 => f32::from_bits((u16::from_le_bytes([b[0], b[1]]) as u32) << 16),
        ScaleDtype::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        ScaleDtype::E8m0 => {
            if b[0] == 0 {
                0.0
            } else {
                2f32.powi(b[0] as i32 - 127)
            }
        }
    }
}

/// Write `n`-bit code `q` as element `i` of an LSB-first bit stream.
fn put_bits(buf: &mut [u8], i: usize, n: u32, q: u32) {
    let bit = i * n as usize;
    for k in 0..n as usize {
        if (q >> k) & 1 == 1 {
            buf[(bit + k) / 8] |= 1 << ((bit + k) % 8);
        }
    }
}

fn get_bits(buf: &[u8], i: usize, n: u32) -> u32 {
    let bit = i * n as usize;
    (0..n as usize).fold(0, |acc, k| acc | ((((buf[(bit + k) / 8] >> ((bit + k) % 8)) & 1) as u32) << k))
}

/// The stored parameters of one group: scale and minimum (0 when symmetric), as read back
/// from their dtype.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupParams {
    /// Scale.
    pub d: f32,
    /// Minimum (asymmetric formats).
    pub m: f32,
}

/// Scale and minimum for a group of weights, written into `out` (scale then min) and
/// returned as stored. Symmetric: as Q4_0, the signed extreme maps to −2^(N−1) (E8M0, which
/// holds no sign, takes |max| / (2^(N−1) − 1) rounded up to a power of two). Asymmetric:
/// `d = (max − min) / (2^N − 1)`.
pub fn group_params(g: GroupQuant, xs: &[f32], out: &mut [u8]) -> GroupParams {
    let levels = 1u32 << g.bits;
    if g.asym {
        let (min, max) = xs.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
        let sb = g.scale.bytes() as usize;
        let d = put_scale(g.scale, out, (max - min) / (levels - 1) as f32);
        let m = put_scale(g.scale, &mut out[sb..], min);
        GroupParams { d, m }
    } else {
        let half = (levels / 2) as f32;
        let max = super::signed_absmax(xs);
        let ideal = if g.scale == ScaleDtype::E8m0 { max.abs() / (half - 1.0) } else { max / -half };
        GroupParams { d: put_scale(g.scale, out, ideal), m: 0.0 }
    }
}

/// The code of `v` on a group's grid (round to nearest, clamped).
pub fn group_code(g: GroupQuant, p: GroupParams, v: f32) -> u32 {
    let levels = 1u32 << g.bits;
    let id = if p.d != 0.0 { 1.0 / p.d } else { 0.0 };
    if g.asym {
        ((v - p.m) * id).round().clamp(0.0, (levels - 1) as f32) as u32
    } else {
        let half = (levels / 2) as f32;
        ((v * id).round().clamp(-half, half - 1.0) + half) as u32
    }
}

/// The value a code stands for.
pub fn group_value(g: GroupQuant, p: GroupParams, code: u32) -> f32 {
    if g.asym { p.d * code as f32 + p.m } else { p.d * (code as i32 - (1i32 << (g.bits - 1))) as f32 }
}

/// Write code `q` of weight `i` of a group whose block starts at `out`.
pub fn put_code(g: GroupQuant, out: &mut [u8], i: usize, q: u32) {
    let sb = g.scale.bytes() as usize;
    let at = if g.asym { 2 * sb } else { sb };
    put_bits(&mut out[at..], i, g.bits as u32, q);
}

/// Quantize `x` (a multiple of the group size) into a generic group format.
pub fn quantize_group(g: GroupQuant, x: &[f32]) -> Result<Vec<u8>, KernelError> {
    let group = g.group as usize;
    if !x.len().is_multiple_of(group) {
        return Err(KernelError::RowLength { format: "intN", len: x.len(), block: group });
    }
    let gb = QuantFormat::Group(g).block_bytes() as usize;
    let mut out = vec![0u8; x.len() / group * gb];
    for (xs, ob) in x.chunks_exact(group).zip(out.chunks_exact_mut(gb)) {
        let p = group_params(g, xs, ob);
        for (i, &v) in xs.iter().enumerate() {
            put_code(g, ob, i, group_code(g, p, v));
        }
    }
    Ok(out)
}

/// Dequantize `n` weights of a generic group format.
pub fn dequantize_group(g: GroupQuant, bytes: &[u8], n: usize) -> Result<Vec<f32>, KernelError> {
    let group = g.group as usize;
    if !n.is_multiple_of(group) {
        return Err(KernelError::RowLength { format: "intN", len: n, block: group });
    }
    let gb = QuantFormat::Group(g).block_bytes() as usize;
    if bytes.len() != n / group * gb {
        return Err(KernelError::ByteLength { format: "intN", len: bytes.len(), expected: n / group * gb });
    }
    let sb = g.scale.bytes() as usize;
    let mut out = vec![0f32; n];
    for (ob, b) in out.chunks_exact_mut(group).zip(bytes.chunks_exact(gb)) {
        let d = get_scale(g.scale, b);
        let (m, codes) = if g.asym { (get_scale(g.scale, &b[sb..]), &b[2 * sb..]) } else { (0.0, &b[sb..]) };
        let p = GroupParams { d, m };
        for (i, o) in ob.iter_mut().enumerate() {
            *o = group_value(g, p, get_bits(codes, i, g.bits as u32));
        }
    }
    Ok(out)
}
