//! A per-layer KV cache in F16, Q8_0 or Q4_0 (blocks along `head_dim`), and decode attention
//! over it for MHA/GQA/MQA: each KV head's keys and values are read once for all the query
//! heads that share it; a sliding window keeps the last `window` tokens in a ring.

use memwall_spec::GgmlType;

use crate::KernelError;
use crate::attention::{Rows, State, attend};
use crate::formats::quantize;
use crate::simd::Isa;

/// One layer's cache.
#[derive(Debug, Clone)]
pub struct KvCache {
    n_kv_heads: usize,
    head_dim: usize,
    k_format: GgmlType,
    v_format: GgmlType,
    window: Option<usize>,
    row_k: usize,
    row_v: usize,
    k: Vec<u8>,
    v: Vec<u8>,
    /// Tokens appended so far.
    appended: usize,
}

fn kv_format(t: GgmlType) -> Result<GgmlType, KernelError> {
    match t {
        GgmlType::F16 | GgmlType::Q8_0 | GgmlType::Q4_0 => Ok(t),
        other => Err(KernelError::Unsupported { format: other.name() }),
    }
}

impl KvCache {
    /// An empty cache; `window` keeps only the last `window` tokens (sliding-window layers).
    pub fn new(
        n_kv_heads: usize,
        head_dim: usize,
        k_format: GgmlType,
        v_format: GgmlType,
        window: Option<usize>,
    ) -> Result<Self, KernelError> {
        let (k_format, v_format) = (kv_format(k_format)?, kv_format(v_format)?);
        for t in [k_format, v_format] {
            if !head_dim.is_multiple_of(t.block_size() as usize) {
                return Err(KernelError::RowLength { format: t.name(), len: head_dim, block: t.block_size() as usize });
            }
        }
        for (what, v) in [("n_kv_heads", n_kv_heads), ("head_dim", head_dim), ("window", window.unwrap_or(1))] {
            if v == 0 {
                return Err(KernelError::Invalid { what, value: 0.0, reason: "must be > 0" });
            }
        }
        let row = |t: GgmlType| head_dim / t.block_size() as usize * t.type_size() as usize;
        Ok(KvCache {
            n_kv_heads,
            head_dim,
            k_format,
            v_format,
            window,
            row_k: row(k_format),
            row_v: row(v_format),
            k: Vec::new(),
            v: Vec::new(),
            appended: 0,
        })
    }

    /// Tokens currently held (`min(appended, window)`).
    pub fn len(&self) -> usize {
        self.window.map_or(self.appended, |w| self.appended.min(w))
    }

    /// Whether nothing was appended.
    pub fn is_empty(&self) -> bool {
        self.appended == 0
    }

    /// The sliding window, in tokens (`None`: the cache keeps every token).
    pub fn window(&self) -> Option<usize> {
        self.window
    }

    /// Bytes one token adds to K and V (until a sliding window is full).
    pub fn token_bytes(&self) -> usize {
        self.n_kv_heads * (self.row_k + self.row_v)
    }

    /// Bytes held by K and V.
    pub fn bytes(&self) -> usize {
        self.k.len() + self.v.len()
    }

    /// Append one token's keys and values (`n_kv_heads × head_dim` each, head-major).
    pub fn append(&mut self, k: &[f32], v: &[f32]) -> Result<(), KernelError> {
        let n = self.n_kv_heads * self.head_dim;
        for (what, x) in [("k", k), ("v", v)] {
            if x.len() != n {
                return Err(KernelError::Shape { what, len: x.len(), expected: n });
            }
        }
        let (kq, vq) = (quantize(self.k_format, k)?, quantize(self.v_format, v)?);
        let slot = self.window.map(|w| self.appended % w);
        match slot {
            Some(s) if self.appended >= self.window.unwrap_or(usize::MAX) => {
                self.k[s * kq.len()..(s + 1) * kq.len()].copy_from_slice(&kq);
                self.v[s * vq.len()..(s + 1) * vq.len()].copy_from_slice(&vq);
            }
            _ => {
                self.k.extend_from_slice(&kq);
                self.v.extend_from_slice(&vq);
            }
        }
        self.appended += 1;
        Ok(())
    }

    /// Decode attention for one query token: `q` is `n_heads × head_dim`; `out` receives
    /// `n_heads × head_dim`. Scores are `q·k / sqrt(head_dim)` with a numerically stable
    /// softmax over the tokens held.
    pub fn attend(&self, q: &[f32], n_heads: usize, out: &mut [f32]) -> Result<(), KernelError> {
        self.attend_heads(q, n_heads, 0..n_heads, out)
    }

    /// [`KvCache::attend`] for the query heads `heads` only (`out` is `heads.len() × head_dim`),
    /// so that threads can share one token's attention: each KV head's keys and values are
    /// read once for the heads of its group that fall in the range.
    pub fn attend_heads(
        &self,
        q: &[f32],
        n_heads: usize,
        heads: std::ops::Range<usize>,
        out: &mut [f32],
    ) -> Result<(), KernelError> {
        let hd = self.head_dim;
        if out.len() != heads.len() * hd {
            return Err(KernelError::Shape { what: "out", len: out.len(), expected: heads.len() * hd });
        }
        let span = self.attend_span(q, n_heads, heads, 0..self.len())?;
        span.normalized_into(hd, out);
        Ok(())
    }

    /// Attention of the query heads `heads` over the cached tokens `tokens` only (slots in
    /// the cache, in any order), unnormalized, so that threads can split a long context and
    /// [`merge_spans`] combine their parts exactly (the flash-decoding split).
    pub fn attend_span(
        &self,
        q: &[f32],
        n_heads: usize,
        heads: std::ops::Range<usize>,
        tokens: std::ops::Range<usize>,
    ) -> Result<Span, KernelError> {
        self.attend_span_on(Isa::best(), q, n_heads, heads, tokens)
    }

    /// [`KvCache::attend_span`] on a given instruction-set path (one this CPU lacks runs the
    /// portable code), so that every path can be checked against the reference.
    pub fn attend_span_on(
        &self,
        isa: Isa,
        q: &[f32],
        n_heads: usize,
        heads: std::ops::Range<usize>,
        tokens: std::ops::Range<usize>,
    ) -> Result<Span, KernelError> {
        let hd = self.head_dim;
        if n_heads == 0 || !n_heads.is_multiple_of(self.n_kv_heads) {
            return Err(KernelError::Shape {
                what: "n_heads (multiple of n_kv_heads)",
                len: n_heads,
                expected: self.n_kv_heads,
            });
        }
        if heads.start > heads.end || heads.end > n_heads {
            return Err(KernelError::Shape { what: "heads (end)", len: heads.end, expected: n_heads });
        }
        if tokens.start > tokens.end || tokens.end > self.len() {
            return Err(KernelError::Shape { what: "tokens (end)", len: tokens.end, expected: self.len() });
        }
        if q.len() != n_heads * hd {
            return Err(KernelError::Shape { what: "q", len: q.len(), expected: n_heads * hd });
        }
        let nh = heads.len();
        let mut span = Span { max: vec![f32::NEG_INFINITY; nh], sum: vec![0.0; nh], out: vec![0.0; nh * hd] };
        if tokens.is_empty() {
            return Ok(span);
        }
        let scale = 1.0 / (hd as f32).sqrt();
        let scaled: Vec<f32> = q[heads.start * hd..heads.end * hd].iter().map(|v| v * scale).collect();
        let rows = Rows {
            k_format: self.k_format,
            v_format: self.v_format,
            k: &self.k,
            v: &self.v,
            row_k: self.row_k,
            row_v: self.row_v,
            n_kv_heads: self.n_kv_heads,
            head_dim: hd,
        };
        let state = State { max: &mut span.max, sum: &mut span.sum, out: &mut span.out };
        attend(isa, &rows, n_heads, heads, &scaled, tokens, state);
        Ok(span)
    }
}

/// The part of one query's attention over a span of cached tokens: per head the largest
/// score `m`, `Σ exp(s − m)` and `Σ exp(s − m) v` (unnormalized).
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// Largest score per head.
    pub max: Vec<f32>,
    /// Softmax denominator per head, relative to `max`.
    pub sum: Vec<f32>,
    /// Unnormalized output, `heads × head_dim`.
    pub out: Vec<f32>,
}

impl Span {
    /// `out / sum` per head into `dst` (zeros for a head that saw no token).
    pub fn normalized_into(&self, head_dim: usize, dst: &mut [f32]) {
        for (h, d) in dst.chunks_exact_mut(head_dim).enumerate() {
            let s = self.sum[h];
            for (o, v) in d.iter_mut().zip(&self.out[h * head_dim..(h + 1) * head_dim]) {
                *o = if s > 0.0 { v / s } else { 0.0 };
            }
        }
    }
}

/// Combine spans of the same heads over disjoint token ranges into the normalized output:
/// `M = max mᵢ`, `out = Σ e^{mᵢ−M} outᵢ / Σ e^{mᵢ−M} sumᵢ`.
pub fn merge_spans(spans: &[Span], head_dim: usize, dst: &mut [f32]) {
    let heads = dst.len() / head_dim.max(1);
    for h in 0..heads {
        let m = spans.iter().map(|s| s.max[h]).fold(f32::NEG_INFINITY, f32::max);
        let d = &mut dst[h * head_dim..(h + 1) * head_dim];
        d.fill(0.0);
        let mut sum = 0f32;
        for s in spans {
            if s.sum[h] == 0.0 {
                continue;
            }
            let w = (s.max[h] - m).exp();
            sum += w * s.sum[h];
            for (o, v) in d.iter_mut().zip(&s.out[h * head_dim..(h + 1) * head_dim]) {
                *o += w * v;
            }
        }
        if sum > 0.0 {
            d.iter_mut().for_each(|o| *o /= sum);
        }
    }
}

/// Reference attention in f32 over plain K/V rows (`tokens × n_kv_heads × head_dim`).
pub fn attend_f32(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    n_heads: usize,
    n_kv_heads: usize,
    head_dim: usize,
) -> Result<Vec<f32>, KernelError> {
    let row = n_kv_heads * head_dim;
    if row == 0 || n_heads == 0 || !n_heads.is_multiple_of(n_kv_heads) {
        return Err(KernelError::Shape {
            what: "n_heads (multiple of n_kv_heads)",
            len: n_heads,
            expected: n_kv_heads,
        });
    }
    if q.len() != n_heads * head_dim {
        return Err(KernelError::Shape { what: "q", len: q.len(), expected: n_heads * head_dim });
    }
    if !k.len().is_multiple_of(row) || v.len() != k.len() {
        return Err(KernelError::Shape {
            what: "k, v (whole rows of n_kv_heads × head_dim)",
            len: v.len(),
            expected: k.len(),
        });
    }
    let tokens = k.len() / row;
    let group = n_heads / n_kv_heads;
    let scale = 1.0 / (head_dim as f32).sqrt();
    let mut out = vec![0f32; n_heads * head_dim];
    for h in 0..n_heads {
        let kvh = h / group;
        let qh = &q[h * head_dim..(h + 1) * head_dim];
        let at = |t: usize| (t * n_kv_heads + kvh) * head_dim;
        let s: Vec<f32> = (0..tokens)
            .map(|t| qh.iter().zip(&k[at(t)..at(t) + head_dim]).map(|(a, b)| a * b).sum::<f32>() * scale)
            .collect();
        let max = s.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
        let e: Vec<f32> = s.iter().map(|x| (x - max).exp()).collect();
        let sum: f32 = e.iter().sum();
        for t in 0..tokens {
            for d in 0..head_dim {
                out[h * head_dim + d] += e[t] / sum * v[at(t) + d];
            }
        }
    }
    Ok(out)
}
