//! The decode loop: one token through every block, timed per operator class.

use std::sync::Mutex;
use std::time::Instant;

use memwall_kernels::gemv::{GemvJob, gemv_batch_pool, gemv_pool};
use memwall_kernels::kv::{KvCache, Span, merge_spans};
use memwall_kernels::moe::route;
use memwall_kernels::pool::SpinPool;
use memwall_kernels::ssm::MambaState;
use memwall_spec::{GgmlType, KvQuant, LayerKind, ModelSpec, QuantFormat, WeightQuant};
use rand::RngExt;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal};

use crate::weights::{AttnWeights, FfnWeights, LayerFfn, MambaWeights, Mat, MixerWeights, Weights};
use crate::{EngineError, Result};

/// What to build.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The architecture.
    pub model: ModelSpec,
    /// Weight formats.
    pub weights: WeightQuant,
    /// KV-cache formats (F16, Q8_0 or Q4_0; head_dim a multiple of 32 for the quantized ones).
    pub kv: KvQuant,
    /// Threads of the GEMVs and of attention.
    pub threads: usize,
    /// Seed of the weights, the synthetic context and sampling.
    pub seed: u64,
    /// RoPE base frequency.
    pub rope_base: f64,
}

impl EngineConfig {
    /// A configuration with one thread, seed 0 and RoPE base 10,000.
    pub fn new(model: ModelSpec, weights: WeightQuant, kv: KvQuant) -> Self {
        EngineConfig { model, weights, kv, threads: 1, seed: 0, rope_base: 10_000.0 }
    }
}

/// The classes of operator the engine times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpClass {
    /// Embedding lookup, norms, residual adds, RoPE, activation functions.
    Elementwise,
    /// q/k/v and output projections of attention layers.
    AttnProj,
    /// Attention over the KV cache (and appending to it).
    Attention,
    /// Projections of SSM layers.
    SsmProj,
    /// The SSM's convolution and selective scan.
    SsmScan,
    /// Dense FFN and shared-expert GEMVs.
    Ffn,
    /// MoE router and routing.
    Router,
    /// Routed experts' GEMVs.
    Experts,
    /// The output projection.
    LmHead,
    /// Sampling.
    Sample,
}

impl OpClass {
    /// Every class, in table order.
    pub const ALL: [OpClass; 10] = [
        OpClass::Elementwise,
        OpClass::AttnProj,
        OpClass::Attention,
        OpClass::SsmProj,
        OpClass::SsmScan,
        OpClass::Ffn,
        OpClass::Router,
        OpClass::Experts,
        OpClass::LmHead,
        OpClass::Sample,
    ];

    /// Name in tables and Parquet columns.
    pub fn name(self) -> &'static str {
        match self {
            OpClass::Elementwise => "elementwise",
            OpClass::AttnProj => "attn_proj",
            OpClass::Attention => "attention",
            OpClass::SsmProj => "ssm_proj",
            OpClass::SsmScan => "ssm_scan",
            OpClass::Ffn => "ffn",
            OpClass::Router => "router",
            OpClass::Experts => "experts",
            OpClass::LmHead => "lm_head",
            OpClass::Sample => "sample",
        }
    }
}

/// Seconds and calls per operator class.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timings {
    /// Seconds per class, indexed like [`OpClass::ALL`].
    pub seconds: [f64; 10],
    /// Calls (GEMVs, attention calls, ...) per class.
    pub calls: [u64; 10],
}

impl Timings {
    /// Seconds spent in `c`.
    pub fn of(&self, c: OpClass) -> f64 {
        self.seconds[c as usize]
    }

    /// Total seconds.
    pub fn total(&self) -> f64 {
        self.seconds.iter().sum()
    }
}

/// Tokens generated and their timing.
#[derive(Debug, Clone)]
pub struct Generation {
    /// The tokens, in order.
    pub tokens: Vec<u32>,
    /// Wall seconds of each token (forward pass and sampling).
    pub token_seconds: Vec<f64>,
    /// Per-operator time over the generation.
    pub timings: Timings,
}

impl Generation {
    /// Decode tok/s: tokens over their summed time.
    pub fn tok_s(&self) -> f64 {
        self.token_seconds.len() as f64 / self.token_seconds.iter().sum::<f64>()
    }

    /// The median token time, seconds.
    pub fn median_token_seconds(&self) -> f64 {
        let mut t = self.token_seconds.clone();
        t.sort_by(f64::total_cmp);
        if t.is_empty() { f64::NAN } else { t[t.len() / 2] }
    }
}

/// The RoPE angle of pair `i` (dimensions `2i`, `2i + 1`) at position `pos`:
/// `θ = pos × base^(−2i / head_dim)`, radians.
pub fn rope_angle(pos: usize, i: usize, head_dim: usize, base: f64) -> f64 {
    pos as f64 * base.powf(-2.0 * i as f64 / head_dim as f64)
}

/// Per layer, the KV cache it reads (caches numbered in layer order) and whether it owns it
/// (appends to it): the first attention layer of each `kv_share_group` owns the group's cache,
/// as [`ModelSpec::kv_cache_layers`] counts them.
pub fn cache_layout(m: &ModelSpec) -> Vec<Option<(usize, bool)>> {
    let owners = m.kv_cache_layers();
    let mut current = None;
    let mut out = vec![None; m.n_layers as usize];
    for (i, kind) in m.layer_kinds().into_iter().enumerate() {
        if !kind.has_kv() {
            continue;
        }
        let owner = owners.iter().any(|(l, _)| *l as usize == i);
        if owner {
            current = Some(current.map_or(0, |c| c + 1));
        }
        out[i] = current.map(|c| (c, owner));
    }
    out
}

/// A model ready to decode, with its caches and states.
pub struct Engine {
    cfg: EngineConfig,
    w: Weights,
    caches: Vec<KvCache>,
    /// Per layer: the cache it reads, and whether it appends to it (owner of a shared group).
    cache_of: Vec<Option<(usize, bool)>>,
    states: Vec<Option<MambaState>>,
    pool: SpinPool,
    pos: usize,
    rng: StdRng,
    logits: Vec<f32>,
    routes: Vec<Vec<usize>>,
    timings: Timings,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("model", &self.cfg.model.name)
            .field("threads", &self.cfg.threads)
            .field("position", &self.pos)
            .field("weight_bytes", &self.w.bytes())
            .finish()
    }
}

fn kv_type(field: &'static str, f: QuantFormat) -> Result<GgmlType> {
    match f {
        QuantFormat::Ggml(t @ (GgmlType::F16 | GgmlType::Q8_0 | GgmlType::Q4_0)) => Ok(t),
        other => Err(EngineError::Unsupported {
            field: field.to_string(),
            value: other.name(),
            reason: "the engine's KV cache is f16, q8_0 or q4_0".into(),
        }),
    }
}

impl Engine {
    /// Build the model with seeded random weights, empty caches and zero states.
    pub fn new(cfg: EngineConfig) -> Result<Engine> {
        if cfg.threads == 0 || cfg.threads > 1024 {
            return Err(EngineError::Invalid {
                field: "threads",
                value: cfg.threads.to_string(),
                reason: "must be 1 to 1024",
            });
        }
        if !(cfg.rope_base.is_finite() && cfg.rope_base > 1.0) {
            return Err(EngineError::Invalid {
                field: "rope_base",
                value: cfg.rope_base.to_string(),
                reason: "must be a finite number > 1",
            });
        }
        let (kt, vt) = (kv_type("kv.k", cfg.kv.k)?, kv_type("kv.v", cfg.kv.v)?);
        let w = Weights::random(&cfg.model, &cfg.weights, cfg.seed)?;
        let m = &cfg.model;
        let (n_kv, hd) = (m.n_kv_heads as usize, m.head_dim() as usize);
        let window = m.sliding_window.map(|w| w as usize);
        let cache_of = cache_layout(m);
        let mut caches = Vec::new();
        for (i, kind) in m.layer_kinds().into_iter().enumerate() {
            if let Some((_, true)) = cache_of[i] {
                let win = if kind == LayerKind::Sliding { window } else { None };
                let c = KvCache::new(n_kv, hd, kt, vt, win).map_err(|e| EngineError::Unsupported {
                    field: "kv".into(),
                    value: format!("k {kt}, v {vt} with head_dim {hd}"),
                    reason: e.to_string(),
                })?;
                caches.push(c);
            }
        }
        let states = w
            .layers
            .iter()
            .map(|l| match &l.mixer {
                MixerWeights::Mamba(mw) => Some(MambaState::new(mw.d_inner, mw.d_state, mw.d_conv)),
                MixerWeights::Attention(_) => None,
            })
            .collect();
        Ok(Engine {
            pool: SpinPool::new(cfg.threads),
            rng: StdRng::seed_from_u64(cfg.seed ^ 0x005A_4D50_4C45),
            logits: vec![0.0; m.vocab as usize],
            routes: Vec::new(),
            w,
            caches,
            cache_of,
            states,
            pos: 0,
            timings: Timings::default(),
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// The weights.
    pub fn weights(&self) -> &Weights {
        &self.w
    }

    /// Bytes of the weights, in their formats.
    pub fn weight_bytes(&self) -> u64 {
        self.w.bytes()
    }

    /// Bytes the KV caches hold after `tokens` tokens: each cache's bytes per token times the
    /// tokens it keeps (all of them, or its sliding window), saturating.
    pub fn kv_bytes_at(&self, tokens: u64) -> u64 {
        self.caches
            .iter()
            .map(|c| (c.token_bytes() as u64).saturating_mul(c.window().map_or(tokens, |w| tokens.min(w as u64))))
            .fold(0, u64::saturating_add)
    }

    /// Bytes held by the KV caches.
    pub fn kv_bytes(&self) -> u64 {
        self.caches.iter().map(|c| c.bytes() as u64).sum()
    }

    /// Tokens seen (the position of the next token).
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The experts the last step chose in each MoE layer, in layer order.
    pub fn routes(&self) -> &[Vec<usize>] {
        &self.routes
    }

    /// Per-operator time since the last [`Engine::reset_timings`].
    pub fn timings(&self) -> &Timings {
        &self.timings
    }

    /// Zero the per-operator timings.
    pub fn reset_timings(&mut self) {
        self.timings = Timings::default();
    }

    /// Fill every KV cache with `tokens` tokens of synthetic keys and values (N(0, 1), as the
    /// keys and values of RMS-normalized activations through unit-variance projections are),
    /// so that decode can be timed at a long context without a prefill. A sliding-window
    /// cache receives only the tokens it keeps. Recurrent states are left as they are.
    pub fn fill_context(&mut self, tokens: usize) -> Result<()> {
        let m = &self.cfg.model;
        let row = (m.n_kv_heads * m.head_dim()) as usize;
        let normal = Normal::new(0.0f32, 1.0).expect("unit normal");
        let mut k = vec![0f32; row];
        let mut v = vec![0f32; row];
        for c in self.caches.iter_mut() {
            for _ in 0..c.window().map_or(tokens, |w| tokens.min(w)) {
                k.iter_mut().chain(v.iter_mut()).for_each(|x| *x = normal.sample(&mut self.rng));
                c.append(&k, &v)?;
            }
        }
        self.pos += tokens;
        Ok(())
    }

    /// One decode step: the logits of the token after `token`.
    pub fn step(&mut self, token: u32) -> Result<&[f32]> {
        let Engine { cfg, w, caches, cache_of, states, pool, pos, logits, routes, timings, .. } = self;
        if u64::from(token) >= cfg.model.vocab {
            return Err(EngineError::Invalid {
                field: "token",
                value: token.to_string(),
                reason: "must be below the model's vocab",
            });
        }
        let mut cx = Ctx { pool, timings };
        routes.clear();
        let t = Instant::now();
        let mut x = w.tok_embd.row_f32(0, token as usize);
        cx.add_time(OpClass::Elementwise, t);
        let mut xn = vec![0f32; x.len()];
        for (li, layer) in w.layers.iter().enumerate() {
            let t = Instant::now();
            rms_norm(&x, &layer.attn_norm, &mut xn);
            cx.add_time(OpClass::Elementwise, t);
            let mixed = match &layer.mixer {
                MixerWeights::Attention(a) => {
                    let (ci, owner) = cache_of[li].expect("attention layers have a cache");
                    cx.attention(cfg, a, &mut caches[ci], owner, *pos, &xn)?
                }
                MixerWeights::Mamba(mw) => {
                    cx.mamba(mw, states[li].as_mut().expect("Mamba layers have a state"), &xn)?
                }
            };
            add(&mut x, &mixed);
            let y = match &layer.ffn {
                LayerFfn::None => continue,
                LayerFfn::Dense { norm, ffn } => {
                    rms_norm(&x, norm, &mut xn);
                    cx.ffn(ffn, 0, &xn, OpClass::Ffn)?
                }
                LayerFfn::Moe { norm, router, experts, shared, top_k } => {
                    rms_norm(&x, norm, &mut xn);
                    let t = Instant::now();
                    let mut scores = vec![0f32; router.rows()];
                    cx.gemv(router, 0, &xn, &mut scores)?;
                    let r = route(&scores, *top_k)?;
                    routes.push(r.experts.clone());
                    cx.tick(OpClass::Router, t);
                    let mut y = vec![0f32; x.len()];
                    for (ye, &wt) in cx.experts(experts, &r.experts, &xn)?.iter().zip(&r.weights) {
                        y.iter_mut().zip(ye).for_each(|(a, b)| *a += wt * b);
                    }
                    if let Some(s) = shared {
                        add(&mut y, &cx.ffn(s, 0, &xn, OpClass::Ffn)?);
                    }
                    y
                }
            };
            add(&mut x, &y);
        }
        let t = Instant::now();
        rms_norm(&x, &w.output_norm, &mut xn);
        cx.add_time(OpClass::Elementwise, t);
        let t = Instant::now();
        cx.gemv(w.lm_head(), 0, &xn, logits)?;
        cx.tick(OpClass::LmHead, t);
        *pos += 1;
        Ok(&self.logits)
    }

    /// The next token from the last logits: the largest at temperature 0, else a seeded draw
    /// from `softmax(logits / temperature)`.
    pub fn sample(&mut self, temperature: f32) -> u32 {
        let t = Instant::now();
        let l = &self.logits;
        let argmax = || l.iter().enumerate().fold(0, |b, (i, v)| if *v > l[b] { i } else { b }) as u32;
        let tok = if temperature <= 0.0 || !temperature.is_finite() {
            argmax()
        } else {
            let max = l.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
            let p: Vec<f64> = l.iter().map(|v| f64::from((v - max) / temperature).exp()).collect();
            let mut u = self.rng.random::<f64>() * p.iter().sum::<f64>();
            let mut pick = p.len() - 1;
            for (i, pi) in p.iter().enumerate() {
                if u < *pi {
                    pick = i;
                    break;
                }
                u -= pi;
            }
            pick as u32
        };
        self.tick(OpClass::Sample, t);
        tok
    }

    /// Generate `n` tokens after `first`, timing each.
    pub fn generate(&mut self, first: u32, n: usize, temperature: f32) -> Result<Generation> {
        let before = self.timings.clone();
        let mut tokens = Vec::with_capacity(n.min(1 << 16));
        let mut token_seconds = Vec::with_capacity(n.min(1 << 16));
        let mut tok = first;
        for _ in 0..n {
            let t = Instant::now();
            self.step(tok)?;
            tok = self.sample(temperature);
            token_seconds.push(t.elapsed().as_secs_f64());
            tokens.push(tok);
        }
        let mut timings = self.timings.clone();
        for i in 0..timings.seconds.len() {
            timings.seconds[i] -= before.seconds[i];
            timings.calls[i] -= before.calls[i];
        }
        Ok(Generation { tokens, token_seconds, timings })
    }

    fn tick(&mut self, c: OpClass, since: Instant) {
        Ctx { pool: &self.pool, timings: &mut self.timings }.tick(c, since);
    }
}

/// What an operator needs of the engine: the thread pool and the clock.
struct Ctx<'a> {
    pool: &'a SpinPool,
    timings: &'a mut Timings,
}

impl Ctx<'_> {
    /// Count one call of `c` and the time since `since`.
    fn tick(&mut self, c: OpClass, since: Instant) {
        self.timings.seconds[c as usize] += since.elapsed().as_secs_f64();
        self.timings.calls[c as usize] += 1;
    }

    /// Add the time since `since` to `c` without counting a call.
    fn add_time(&mut self, c: OpClass, since: Instant) {
        self.timings.seconds[c as usize] += since.elapsed().as_secs_f64();
    }

    fn gemv(&self, m: &Mat, e: usize, x: &[f32], y: &mut [f32]) -> Result<()> {
        Ok(gemv_pool(m.kernel(), &m.expert(e), x, y, self.pool, 0)?)
    }

    /// `down(silu(gate x) × up x)` (or `down(silu(up x))` ungated) of expert `e`.
    fn ffn(&mut self, f: &FfnWeights, e: usize, x: &[f32], class: OpClass) -> Result<Vec<f32>> {
        let t = Instant::now();
        let mut up = vec![0f32; f.up.rows()];
        self.gemv(&f.up, e, x, &mut up)?;
        if let Some(g) = &f.gate {
            let mut gate = vec![0f32; g.rows()];
            self.gemv(g, e, x, &mut gate)?;
            up.iter_mut().zip(&gate).for_each(|(u, g)| *u *= silu(*g));
        } else {
            up.iter_mut().for_each(|u| *u = silu(*u));
        }
        let mut y = vec![0f32; f.down.rows()];
        self.gemv(&f.down, e, &up, &mut y)?;
        self.tick(class, t);
        Ok(y)
    }

    /// The chosen experts' FFNs, each tensor's GEMVs for all of them in one pool pass
    /// (gate, up, then down), as ggml's `mul_mat_id` runs them.
    fn experts(&mut self, f: &FfnWeights, chosen: &[usize], x: &[f32]) -> Result<Vec<Vec<f32>>> {
        let t = Instant::now();
        let batch = |m: &Mat, xs: &[&[f32]], pool: &SpinPool| -> Result<Vec<Vec<f32>>> {
            let mut ys = vec![vec![0f32; m.rows()]; chosen.len()];
            let jobs = chosen
                .iter()
                .zip(xs)
                .zip(ys.iter_mut())
                .map(|((&e, x), y)| GemvJob { kernel: m.kernel(), m: m.expert(e), x, y })
                .collect();
            gemv_batch_pool(jobs, pool)?;
            Ok(ys)
        };
        let same: Vec<&[f32]> = vec![x; chosen.len()];
        let mut up = batch(&f.up, &same, self.pool)?;
        match &f.gate {
            Some(g) => {
                let gate = batch(g, &same, self.pool)?;
                for (u, g) in up.iter_mut().zip(&gate) {
                    u.iter_mut().zip(g).for_each(|(u, g)| *u *= silu(*g));
                }
            }
            None => up.iter_mut().for_each(|u| u.iter_mut().for_each(|v| *v = silu(*v))),
        }
        let hs: Vec<&[f32]> = up.iter().map(Vec::as_slice).collect();
        let ys = batch(&f.down, &hs, self.pool)?;
        self.tick(OpClass::Experts, t);
        Ok(ys)
    }

    /// q, k, v; RoPE; append to the cache (its owner) and attend; the output projection.
    fn attention(
        &mut self,
        cfg: &EngineConfig,
        a: &AttnWeights,
        cache: &mut KvCache,
        owner: bool,
        pos: usize,
        xn: &[f32],
    ) -> Result<Vec<f32>> {
        let m = &cfg.model;
        let (nh, nkv, hd) = (m.n_heads as usize, m.n_kv_heads as usize, m.head_dim() as usize);
        let t = Instant::now();
        let mut q = vec![0f32; nh * hd];
        let mut k = vec![0f32; nkv * hd];
        let mut v = vec![0f32; nkv * hd];
        self.gemv(&a.q, 0, xn, &mut q)?;
        self.gemv(&a.k, 0, xn, &mut k)?;
        self.gemv(&a.v, 0, xn, &mut v)?;
        self.tick(OpClass::AttnProj, t);
        let t = Instant::now();
        if let Some([bq, bk, bv]) = &a.bias {
            add(&mut q, bq);
            add(&mut k, bk);
            add(&mut v, bv);
        }
        rope(&mut q, hd, pos, cfg.rope_base);
        rope(&mut k, hd, pos, cfg.rope_base);
        self.add_time(OpClass::Elementwise, t);
        let t = Instant::now();
        if owner {
            cache.append(&k, &v)?;
        }
        let cache = &*cache;
        let mut att = vec![0f32; nh * hd];
        let threads = self.pool.threads();
        let failed = Mutex::new(None);
        let fail = |e| *failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
        if nkv >= threads || threads == 1 {
            // Split the query heads over the threads along KV groups: each KV head is read once.
            let chunk = (nh / nkv) * nkv.div_ceil(threads);
            let parts: Vec<Mutex<&mut [f32]>> = att.chunks_mut(chunk * hd).map(Mutex::new).collect();
            self.pool.run(parts.len(), &|i| {
                let mut out = parts[i].lock().unwrap_or_else(|e| e.into_inner());
                if let Err(e) = cache.attend_heads(&q, nh, i * chunk..((i + 1) * chunk).min(nh), &mut out) {
                    fail(e);
                }
            });
        } else {
            // Fewer KV heads than threads (MQA): split the cached tokens and merge the parts.
            let n = cache.len();
            let per = n.div_ceil(threads).max(1);
            let spans: Vec<Mutex<Option<Span>>> = (0..threads).map(|_| Mutex::new(None)).collect();
            self.pool.run(
                threads,
                &|i| match cache.attend_span(&q, nh, 0..nh, (i * per).min(n)..((i + 1) * per).min(n)) {
                    Ok(s) => *spans[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(s),
                    Err(e) => fail(e),
                },
            );
            let spans: Vec<Span> =
                spans.into_iter().filter_map(|s| s.into_inner().unwrap_or_else(|e| e.into_inner())).collect();
            merge_spans(&spans, hd, &mut att);
        }
        if let Some(e) = failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(e.into());
        }
        self.tick(OpClass::Attention, t);
        let t = Instant::now();
        let mut o = vec![0f32; a.o.rows()];
        self.gemv(&a.o, 0, &att, &mut o)?;
        self.tick(OpClass::AttnProj, t);
        Ok(o)
    }

    /// Mamba-1: in-projection to x and z; convolution; Δ, B, C from the convolved input;
    /// the selective scan; the out-projection.
    fn mamba(&mut self, mw: &MambaWeights, state: &mut MambaState, xn: &[f32]) -> Result<Vec<f32>> {
        let di = mw.d_inner;
        let t = Instant::now();
        let mut xz = vec![0f32; 2 * di];
        self.gemv(&mw.in_proj, 0, xn, &mut xz)?;
        self.tick(OpClass::SsmProj, t);
        let t = Instant::now();
        let (x, z) = xz.split_at(di);
        let mut u = vec![0f32; di];
        state.convolve(&mw.params, x, &mut u)?;
        self.tick(OpClass::SsmScan, t);
        let t = Instant::now();
        let mut dbc = vec![0f32; mw.x_proj.rows()];
        self.gemv(&mw.x_proj, 0, &u, &mut dbc)?;
        let mut dt = vec![0f32; di];
        self.gemv(&mw.dt_proj, 0, &dbc[..mw.dt_rank], &mut dt)?;
        add(&mut dt, &mw.dt_bias);
        self.tick(OpClass::SsmProj, t);
        let t = Instant::now();
        let (b, c) = dbc[mw.dt_rank..].split_at(mw.d_state);
        let mut y = vec![0f32; di];
        state.scan_pool(&mw.params, &u, z, &dt, b, c, &mut y, self.pool)?;
        self.tick(OpClass::SsmScan, t);
        let t = Instant::now();
        let mut out = vec![0f32; mw.out.rows()];
        self.gemv(&mw.out, 0, &y, &mut out)?;
        self.tick(OpClass::SsmProj, t);
        Ok(out)
    }
}

/// `out = x / sqrt(mean(x²) + 1e-6) × w`.
pub fn rms_norm(x: &[f32], w: &[f32], out: &mut [f32]) {
    let ms = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let s = 1.0 / (ms + 1e-6).sqrt();
    for ((o, v), g) in out.iter_mut().zip(x).zip(w) {
        *o = v * s * g;
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
}

fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// Rotate each head's pairs `(2i, 2i + 1)` by [`rope_angle`].
fn rope(x: &mut [f32], head_dim: usize, pos: usize, base: f64) {
    for i in 0..head_dim / 2 {
        let (s, c) = rope_angle(pos, i, head_dim, base).sin_cos();
        let (s, c) = (s as f32, c as f32);
        for h in x.chunks_exact_mut(head_dim) {
            let (a, b) = (h[2 * i], h[2 * i + 1]);
            h[2 * i] = a * c - b * s;
            h[2 * i + 1] = a * s + b * c;
        }
    }
}
