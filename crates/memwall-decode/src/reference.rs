//! An independent f64 forward pass over the engine's weights: every matrix dequantized to
//! f64, activations never quantized, keys and values kept exact. It is the oracle of
//! [`Engine::step`](crate::Engine::step): the engine's logits differ from it only by the
//! activation quantization of the GEMVs (Q8_0 or Q8_K blocks, as ggml), f32 arithmetic and
//! the KV-cache format, within [`logit_budget`].

use memwall_spec::{GgmlType, LayerKind, QuantFormat};

use crate::engine::{cache_layout, rope_angle};
use crate::weights::{FfnWeights, LayerFfn, Mat, MixerWeights, Weights};
use crate::{Engine, EngineConfig};

/// A matrix dequantized to f64, `experts × rows × cols`.
struct Dense {
    rows: usize,
    cols: usize,
    w: Vec<f64>,
}

impl Dense {
    fn of(m: &Mat) -> Dense {
        let mut w = Vec::with_capacity(m.experts() * m.rows() * m.cols());
        for e in 0..m.experts() {
            for r in 0..m.rows() {
                w.extend(m.row_f32(e, r).into_iter().map(f64::from));
            }
        }
        Dense { rows: m.rows(), cols: m.cols(), w }
    }

    /// `W_e x`.
    fn mv(&self, e: usize, x: &[f64]) -> Vec<f64> {
        let base = e * self.rows * self.cols;
        (0..self.rows)
            .map(|r| {
                let row = &self.w[base + r * self.cols..base + (r + 1) * self.cols];
                row.iter().zip(x).map(|(a, b)| a * b).sum()
            })
            .collect()
    }
}

struct RefFfn {
    gate: Option<Dense>,
    up: Dense,
    down: Dense,
}

impl RefFfn {
    fn of(f: &FfnWeights) -> RefFfn {
        RefFfn { gate: f.gate.as_ref().map(Dense::of), up: Dense::of(&f.up), down: Dense::of(&f.down) }
    }

    fn apply(&self, e: usize, x: &[f64]) -> Vec<f64> {
        let up = self.up.mv(e, x);
        let h: Vec<f64> = match &self.gate {
            Some(g) => g.mv(e, x).iter().zip(&up).map(|(g, u)| silu(*g) * u).collect(),
            None => up.iter().map(|u| silu(*u)).collect(),
        };
        self.down.mv(e, &h)
    }
}

/// The f64 forward pass, with exact caches and states.
pub struct Reference {
    cfg: EngineConfig,
    emb: Dense,
    lm: Option<Dense>,
    out_norm: Vec<f64>,
    layers: Vec<RefLayer>,
    /// Per cache: keys and values of every token, `tokens × n_kv × head_dim`.
    kv: Vec<(Vec<f64>, Vec<f64>)>,
    cache_of: Vec<Option<(usize, bool)>>,
    pos: usize,
}

#[allow(clippy::large_enum_variant)] // one per layer
enum RefMixer {
    Attn { q: Dense, k: Dense, v: Dense, o: Dense, bias: Option<[Vec<f64>; 3]> },
    Mamba(Box<RefMamba>),
}

struct RefMamba {
    in_proj: Dense,
    x_proj: Dense,
    dt_proj: Dense,
    out: Dense,
    conv_w: Vec<f64>,
    conv_b: Vec<f64>,
    dt_bias: Vec<f64>,
    a: Vec<f64>,
    d: Vec<f64>,
    dt_rank: usize,
    d_state: usize,
    d_conv: usize,
    /// Past inputs, newest last, `d_conv − 1` of them.
    window: Vec<Vec<f64>>,
    h: Vec<f64>,
}

enum RefFfnKind {
    None,
    Dense(Vec<f64>, RefFfn),
    Moe { norm: Vec<f64>, router: Dense, experts: RefFfn, shared: Option<RefFfn>, top_k: usize },
}

struct RefLayer {
    kind: LayerKind,
    attn_norm: Vec<f64>,
    mixer: RefMixer,
    ffn: RefFfnKind,
}

fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|x| f64::from(*x)).collect()
}

fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

fn rms_norm(x: &[f64], w: &[f64]) -> Vec<f64> {
    let ms = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
    let s = 1.0 / (ms + 1e-6).sqrt();
    x.iter().zip(w).map(|(v, g)| v * s * g).collect()
}

fn rope(x: &mut [f64], hd: usize, pos: usize, base: f64) {
    for h in x.chunks_exact_mut(hd) {
        for i in 0..hd / 2 {
            let (s, c) = rope_angle(pos, i, hd, base).sin_cos();
            let (a, b) = (h[2 * i], h[2 * i + 1]);
            h[2 * i] = a * c - b * s;
            h[2 * i + 1] = a * s + b * c;
        }
    }
}

impl Reference {
    /// The reference of a freshly built engine (before any step).
    pub fn new(engine: &Engine) -> Reference {
        let (cfg, w): (&EngineConfig, &Weights) = (engine.config(), engine.weights());
        let layers = w
            .layers
            .iter()
            .map(|l| RefLayer {
                kind: l.kind,
                attn_norm: f64s(&l.attn_norm),
                mixer: match &l.mixer {
                    MixerWeights::Attention(a) => RefMixer::Attn {
                        q: Dense::of(&a.q),
                        k: Dense::of(&a.k),
                        v: Dense::of(&a.v),
                        o: Dense::of(&a.o),
                        bias: a.bias.as_ref().map(|[x, y, z]| [f64s(x), f64s(y), f64s(z)]),
                    },
                    MixerWeights::Mamba(m) => RefMixer::Mamba(Box::new(RefMamba {
                        in_proj: Dense::of(&m.in_proj),
                        x_proj: Dense::of(&m.x_proj),
                        dt_proj: Dense::of(&m.dt_proj),
                        out: Dense::of(&m.out),
                        conv_w: f64s(&m.params.conv_w),
                        conv_b: f64s(&m.params.conv_b),
                        dt_bias: f64s(&m.dt_bias),
                        a: f64s(&m.params.a),
                        d: f64s(&m.params.d),
                        dt_rank: m.dt_rank,
                        d_state: m.d_state,
                        d_conv: m.d_conv,
                        window: vec![vec![0.0; m.d_inner]; m.d_conv - 1],
                        h: vec![0.0; m.d_inner * m.d_state],
                    })),
                },
                ffn: match &l.ffn {
                    LayerFfn::None => RefFfnKind::None,
                    LayerFfn::Dense { norm, ffn } => RefFfnKind::Dense(f64s(norm), RefFfn::of(ffn)),
                    LayerFfn::Moe { norm, router, experts, shared, top_k } => RefFfnKind::Moe {
                        norm: f64s(norm),
                        router: Dense::of(router),
                        experts: RefFfn::of(experts),
                        shared: shared.as_ref().map(RefFfn::of),
                        top_k: *top_k,
                    },
                },
            })
            .collect();
        let cache_of = cache_layout(&cfg.model);
        let n_caches = cache_of.iter().flatten().filter(|(_, owner)| *owner).count();
        Reference {
            cfg: cfg.clone(),
            emb: Dense::of(&w.tok_embd),
            lm: w.output.as_ref().map(Dense::of),
            out_norm: f64s(&w.output_norm),
            layers,
            kv: vec![(Vec::new(), Vec::new()); n_caches],
            cache_of,
            pos: 0,
        }
    }

    /// The logits after `token`.
    pub fn step(&mut self, token: u32) -> Vec<f64> {
        self.step_routed(token, None).0
    }

    /// The logits after `token`, and the experts the reference's own router chose per MoE
    /// layer. With `routes`, the MoE layers use those experts instead (their weights still
    /// from the reference's router): routing is discrete, and a near tie that 8-bit
    /// activations resolve the other way would otherwise hide the numerical error behind a
    /// different expert.
    pub fn step_routed(&mut self, token: u32, routes: Option<&[Vec<usize>]>) -> (Vec<f64>, Vec<Vec<usize>>) {
        let mut own_routes = Vec::new();
        let m = &self.cfg.model;
        let (nh, nkv, hd) = (m.n_heads as usize, m.n_kv_heads as usize, m.head_dim() as usize);
        let h = self.emb.cols;
        let t = token as usize;
        let mut x = self.emb.w[t * h..(t + 1) * h].to_vec();
        for (li, layer) in self.layers.iter_mut().enumerate() {
            let xn = rms_norm(&x, &layer.attn_norm);
            let mixed = match &mut layer.mixer {
                RefMixer::Attn { q, k, v, o, bias } => {
                    let (mut qv, mut kv, mut vv) = (q.mv(0, &xn), k.mv(0, &xn), v.mv(0, &xn));
                    if let Some([bq, bk, bv]) = bias {
                        for (x, b) in [(&mut qv, &*bq), (&mut kv, &*bk), (&mut vv, &*bv)] {
                            x.iter_mut().zip(b).for_each(|(a, b)| *a += b);
                        }
                    }
                    rope(&mut qv, hd, self.pos, self.cfg.rope_base);
                    rope(&mut kv, hd, self.pos, self.cfg.rope_base);
                    let (ci, owner) = self.cache_of[li].expect("attention layers have a cache");
                    if owner {
                        self.kv[ci].0.extend(&kv);
                        self.kv[ci].1.extend(&vv);
                    }
                    let (ks, vs) = &self.kv[ci];
                    let row = nkv * hd;
                    let tokens = ks.len() / row;
                    let first = match (layer.kind, m.sliding_window) {
                        (LayerKind::Sliding, Some(w)) => tokens.saturating_sub(w as usize),
                        _ => 0,
                    };
                    let mut att = vec![0.0; nh * hd];
                    for head in 0..nh {
                        let kvh = head / (nh / nkv);
                        let qh = &qv[head * hd..(head + 1) * hd];
                        let at = |t: usize| t * row + kvh * hd;
                        let s: Vec<f64> = (first..tokens)
                            .map(|t| {
                                qh.iter().zip(&ks[at(t)..at(t) + hd]).map(|(a, b)| a * b).sum::<f64>()
                                    / (hd as f64).sqrt()
                            })
                            .collect();
                        let max = s.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
                        let e: Vec<f64> = s.iter().map(|v| (v - max).exp()).collect();
                        let sum: f64 = e.iter().sum();
                        for (j, t) in (first..tokens).enumerate() {
                            for d in 0..hd {
                                att[head * hd + d] += e[j] / sum * vs[at(t) + d];
                            }
                        }
                    }
                    o.mv(0, &att)
                }
                RefMixer::Mamba(mb) => mb.step(&xn),
            };
            x.iter_mut().zip(&mixed).for_each(|(a, b)| *a += b);
            let y = match &layer.ffn {
                RefFfnKind::None => continue,
                RefFfnKind::Dense(norm, f) => f.apply(0, &rms_norm(&x, norm)),
                RefFfnKind::Moe { norm, router, experts, shared, top_k } => {
                    let xn = rms_norm(&x, norm);
                    let logits = router.mv(0, &xn);
                    let max = logits.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
                    let p: Vec<f64> = logits.iter().map(|l| (l - max).exp()).collect();
                    let mut order: Vec<usize> = (0..p.len()).collect();
                    order.sort_by(|&a, &b| p[b].total_cmp(&p[a]).then(a.cmp(&b)));
                    own_routes.push(order[..*top_k].to_vec());
                    let chosen = routes.and_then(|r| r.get(own_routes.len() - 1)).map_or(&order[..*top_k], |r| &r[..]);
                    let total: f64 = chosen.iter().map(|&e| p[e]).sum();
                    let mut y = vec![0.0; x.len()];
                    for &e in chosen {
                        let ye = experts.apply(e, &xn);
                        y.iter_mut().zip(&ye).for_each(|(a, b)| *a += p[e] / total * b);
                    }
                    if let Some(s) = shared {
                        y.iter_mut().zip(&s.apply(0, &xn)).for_each(|(a, b)| *a += b);
                    }
                    y
                }
            };
            x.iter_mut().zip(&y).for_each(|(a, b)| *a += b);
        }
        let xn = rms_norm(&x, &self.out_norm);
        self.pos += 1;
        (self.lm.as_ref().unwrap_or(&self.emb).mv(0, &xn), own_routes)
    }
}

impl RefMamba {
    fn step(&mut self, xn: &[f64]) -> Vec<f64> {
        let di = self.d.len();
        let xz = self.in_proj.mv(0, xn);
        let (x, z) = xz.split_at(di);
        let u: Vec<f64> = (0..di)
            .map(|ch| {
                let w = &self.conv_w[ch * self.d_conv..(ch + 1) * self.d_conv];
                let past: f64 = self.window.iter().zip(w).map(|(p, wk)| wk * p[ch]).sum();
                silu(self.conv_b[ch] + past + w[self.d_conv - 1] * x[ch])
            })
            .collect();
        if !self.window.is_empty() {
            self.window.remove(0);
            self.window.push(x.to_vec());
        }
        let dbc = self.x_proj.mv(0, &u);
        let dt = self.dt_proj.mv(0, &dbc[..self.dt_rank]);
        let (b, c) = dbc[self.dt_rank..].split_at(self.d_state);
        let ds = self.d_state;
        let y: Vec<f64> = (0..di)
            .map(|ch| {
                let raw = dt[ch] + self.dt_bias[ch];
                let delta = if raw > 20.0 { raw } else { raw.exp().ln_1p() };
                let mut out = 0.0;
                for n in 0..ds {
                    let hn = &mut self.h[ch * ds + n];
                    *hn = (delta * self.a[ch * ds + n]).exp() * *hn + delta * b[n] * u[ch];
                    out += c[n] * *hn;
                }
                (out + self.d[ch] * u[ch]) * silu(z[ch])
            })
            .collect();
        self.out.mv(0, &y)
    }
}

/// The relative RMSE of the engine's logits against this reference that the tests allow,
/// `‖engine − reference‖ / ‖reference‖` over the vocabulary, after a few tokens of decode, for
/// a model whose matrices are stored in `weights` (the largest term applies), a KV cache of
/// `kv`, with or without SSM layers:
///
/// | source | budget |
/// | --- | --- |
/// | float weights (F32/F16/BF16): f32 arithmetic only | 2e-4 |
/// | weights dotted against Q8_0 activations (Q4_0…Q8_0, IQ4_NL, MXFP4) | 0.05 |
/// | weights dotted against Q8_K activations (K-quants, ternary) | 0.06 |
/// | SSM layers in the stack | × 2 of the above |
/// | KV F16 | + 2e-3 |
/// | KV Q8_0 | + 0.03 |
/// | KV Q4_0 | + 0.3 |
///
/// Measured on 3-layer models (hidden 256, 7 shapes × 8 weight mixes × 3 KV formats; see
/// tests/reference.rs): float weights 2.6–5.7e-4, Q8_0-activation formats 1.7–3.5 %,
/// K-quants and TQ2_0 2.5–3.9 % (7.8 % with Mamba layers, whose `exp(Δ A)` amplifies the
/// error of Δ), KV Q4_0 13–22 %. 8-bit activations cost ~0.5 % per GEMV (`1/(127·√3)`
/// relative per element, averaged over a row), compounding over the layers.
pub fn logit_budget(weights: &[GgmlType], kv: [QuantFormat; 2], ssm: bool) -> f64 {
    let w = weights
        .iter()
        .map(|t| match t {
            GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => 2e-4,
            GgmlType::Q4_0
            | GgmlType::Q4_1
            | GgmlType::Q5_0
            | GgmlType::Q5_1
            | GgmlType::Q8_0
            | GgmlType::IQ4_NL
            | GgmlType::MXFP4 => 0.05,
            _ => 0.06,
        })
        .fold(0.0, f64::max);
    let kv = kv
        .iter()
        .map(|f| match f {
            QuantFormat::Ggml(GgmlType::F16) => 2e-3,
            QuantFormat::Ggml(GgmlType::Q8_0) => 0.03,
            _ => 0.3,
        })
        .fold(0.0, f64::max);
    w * if ssm { 2.0 } else { 1.0 } + kv
}
