//! Seeded random weights in the formats a weight mix assigns, tensor by tensor.
//!
//! Every tensor of [`ModelSpec::tensors`] is built in the format [`WeightQuant::assign`]
//! gives it, so the engine holds exactly the bytes memwall's footprint counts. Values are
//! Gaussian with standard deviation `1/sqrt(row length)` (so a product with an RMS-normalized
//! vector keeps unit scale); ternary formats (TQ1_0, TQ2_0) get values in `{−s, 0, s}` with
//! the same variance, as a ternary model's are. Matrices up to [`DISTINCT_ELEMS`] weights
//! have all rows distinct; larger ones are filled with rows drawn from a pool of
//! [`POOL_ROWS`] distinct quantized rows, so that a multi-gigabyte model builds at copy speed
//! while every byte still has to be read from memory when it is used.

use std::collections::HashMap;

use memwall_kernels::dot::Kernel;
use memwall_kernels::gemv::QMatrix;
use memwall_kernels::ssm::MambaParams;
use memwall_kernels::{dequantize, quantize};
use memwall_spec::{GgmlType, LayerKind, ModelSpec, QuantFormat, SsmKind, Tensor, TensorClass, WeightQuant};
use rand::RngExt;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal};

use crate::{EngineError, Result};

/// Matrices up to this many weights get all rows distinct.
pub const DISTINCT_ELEMS: u64 = 1 << 18;
/// Distinct rows drawn from for larger matrices.
pub const POOL_ROWS: usize = 512;

/// A weight matrix (or a stack of expert matrices) in one ggml format.
#[derive(Debug)]
pub struct Mat {
    /// Tensor class.
    pub class: TensorClass,
    /// Layer, `None` for global tensors.
    pub layer: Option<u32>,
    kernel: Kernel,
    rows: usize,
    cols: usize,
    experts: usize,
    row_bytes: usize,
    data: Vec<u8>,
}

impl Mat {
    /// The storage format.
    pub fn format(&self) -> GgmlType {
        self.kernel.format()
    }

    /// The dot-product kernel of the format.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// Rows (outputs) per expert.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Columns (inputs).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Experts stacked (1 for a dense matrix).
    pub fn experts(&self) -> usize {
        self.experts
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.data.len()
    }

    /// Expert `e`'s matrix (`e = 0` for a dense one).
    pub fn expert(&self, e: usize) -> QMatrix<'_> {
        let n = self.rows * self.row_bytes;
        QMatrix::new(self.format(), self.rows, self.cols, &self.data[e * n..(e + 1) * n])
            .expect("a Mat holds whole rows of its format")
    }

    /// Row `r` of expert `e`, dequantized.
    pub fn row_f32(&self, e: usize, r: usize) -> Vec<f32> {
        let at = (e * self.rows + r) * self.row_bytes;
        dequantize(self.format(), &self.data[at..at + self.row_bytes], self.cols)
            .expect("a Mat holds whole rows of its format")
    }
}

/// The weights of an attention mixer.
#[derive(Debug)]
pub struct AttnWeights {
    /// Query projection.
    pub q: Mat,
    /// Key projection.
    pub k: Mat,
    /// Value projection.
    pub v: Mat,
    /// Output projection.
    pub o: Mat,
    /// Biases of q, k and v (when the model has them).
    pub bias: Option<[Vec<f32>; 3]>,
}

/// The weights of a Mamba-1 mixer.
#[derive(Debug)]
pub struct MambaWeights {
    /// In-projection to `x` and `z` (`2 × d_inner` rows).
    pub in_proj: Mat,
    /// Convolution weights and bias, `A = −exp(A_log)` and the skip `D`.
    pub params: MambaParams,
    /// Projection of the convolved input to `Δ` (low rank), `B` and `C`.
    pub x_proj: Mat,
    /// `Δ` up-projection, `dt_rank → d_inner`.
    pub dt_proj: Mat,
    /// `Δ` bias, `d_inner`.
    pub dt_bias: Vec<f32>,
    /// Out-projection.
    pub out: Mat,
    /// Inner width.
    pub d_inner: usize,
    /// Rank of `Δ`.
    pub dt_rank: usize,
    /// State size.
    pub d_state: usize,
    /// Convolution width.
    pub d_conv: usize,
}

/// A layer's token mixer.
#[derive(Debug)]
pub enum MixerWeights {
    /// Attention (full or sliding-window).
    Attention(AttnWeights),
    /// Mamba-1.
    Mamba(MambaWeights),
}

/// A gated (SwiGLU) or plain FFN.
#[derive(Debug)]
pub struct FfnWeights {
    /// Gate projection (gated FFNs).
    pub gate: Option<Mat>,
    /// Up projection.
    pub up: Mat,
    /// Down projection.
    pub down: Mat,
}

/// A layer's FFN.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per layer: the size does not matter
pub enum LayerFfn {
    /// No FFN (pure Mamba blocks).
    None,
    /// Dense FFN with its norm.
    Dense {
        /// Pre-FFN RMSNorm weight.
        norm: Vec<f32>,
        /// The FFN.
        ffn: FfnWeights,
    },
    /// Routed mixture of experts, with optional shared experts.
    Moe {
        /// Pre-FFN RMSNorm weight.
        norm: Vec<f32>,
        /// Router, `n_experts × hidden` (F32).
        router: Mat,
        /// Routed experts, stacked.
        experts: FfnWeights,
        /// Shared experts (one wide FFN).
        shared: Option<FfnWeights>,
        /// Experts per token.
        top_k: usize,
    },
}

/// One block.
#[derive(Debug)]
pub struct LayerWeights {
    /// What kind of mixer the layer has.
    pub kind: LayerKind,
    /// Pre-mixer RMSNorm weight.
    pub attn_norm: Vec<f32>,
    /// The mixer.
    pub mixer: MixerWeights,
    /// The FFN.
    pub ffn: LayerFfn,
}

/// All the weights of a model.
#[derive(Debug)]
pub struct Weights {
    /// Token embedding, `vocab × hidden`.
    pub tok_embd: Mat,
    /// Blocks.
    pub layers: Vec<LayerWeights>,
    /// Final RMSNorm weight.
    pub output_norm: Vec<f32>,
    /// lm_head (`None`: tied to the embedding).
    pub output: Option<Mat>,
    bytes: u64,
}

impl Weights {
    /// Bytes of every tensor in its assigned format (vectors in theirs, as the footprint
    /// counts them, though the engine keeps them in f32).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Every matrix, in layer order.
    pub fn matrices(&self) -> Vec<&Mat> {
        let mut out = vec![&self.tok_embd];
        for l in &self.layers {
            match &l.mixer {
                MixerWeights::Attention(a) => out.extend([&a.q, &a.k, &a.v, &a.o]),
                MixerWeights::Mamba(m) => out.extend([&m.in_proj, &m.x_proj, &m.dt_proj, &m.out]),
            }
            match &l.ffn {
                LayerFfn::None => {}
                LayerFfn::Dense { ffn: f, .. } => out.extend(ffn(f)),
                LayerFfn::Moe { router, experts, shared, .. } => {
                    out.push(router);
                    out.extend(ffn(experts));
                    if let Some(s) = shared {
                        out.extend(ffn(s));
                    }
                }
            }
        }
        out.extend(&self.output);
        out
    }

    /// The distinct formats of the matrices.
    pub fn formats(&self) -> Vec<GgmlType> {
        let mut f: Vec<GgmlType> = self.matrices().iter().map(|m| m.format()).collect();
        f.sort_by_key(|t| t.name());
        f.dedup();
        f
    }

    /// The lm_head matrix (the embedding when tied).
    pub fn lm_head(&self) -> &Mat {
        self.output.as_ref().unwrap_or(&self.tok_embd)
    }

    /// Seeded random weights for `model` in the formats `mix` assigns. Refuses, naming the
    /// field, what the engine does not run.
    pub fn random(model: &ModelSpec, mix: &WeightQuant, seed: u64) -> Result<Weights> {
        model.validate()?;
        mix.validate()?;
        supported(model)?;
        let mut b = Builder { seed, pools: Default::default(), by_name: HashMap::new() };
        for (i, a) in mix.assign(model).into_iter().enumerate() {
            b.by_name.insert((a.tensor.class, a.tensor.layer), (i as u64, a.tensor, a.format));
        }
        use TensorClass::*;
        let mut layers = Vec::with_capacity(model.n_layers as usize);
        for (i, kind) in model.layer_kinds().into_iter().enumerate() {
            let l = Some(i as u32);
            let attn_norm = b.vector(AttnNorm, l, Init::One)?;
            let mixer = match kind {
                LayerKind::Full | LayerKind::Sliding => {
                    let bias = if model.attn_bias {
                        Some([
                            b.vector(AttnQBias, l, Init::Small)?,
                            b.vector(AttnKBias, l, Init::Small)?,
                            b.vector(AttnVBias, l, Init::Small)?,
                        ])
                    } else {
                        None
                    };
                    MixerWeights::Attention(AttnWeights {
                        q: b.mat(AttnQ, l)?,
                        k: b.mat(AttnK, l)?,
                        v: b.mat(AttnV, l)?,
                        o: b.mat(AttnOutput, l)?,
                        bias,
                    })
                }
                LayerKind::Ssm => {
                    let s = model.ssm.as_ref().expect("validated: SSM layers have an ssm section");
                    let d_conv = s.d_conv as usize;
                    MixerWeights::Mamba(MambaWeights {
                        in_proj: b.mat(SsmIn, l)?,
                        params: MambaParams {
                            conv_w: b.vector(SsmConv1d, l, Init::Gaussian(1.0 / (d_conv as f32).sqrt()))?,
                            conv_b: b.vector(SsmConv1dBias, l, Init::Small)?,
                            a: b.vector(SsmA, l, Init::MambaA(s.d_state as usize))?,
                            d: b.vector(SsmD, l, Init::One)?,
                        },
                        x_proj: b.mat(SsmX, l)?,
                        dt_proj: b.mat(SsmDt, l)?,
                        dt_bias: b.vector(SsmDtBias, l, Init::DtBias)?,
                        out: b.mat(SsmOut, l)?,
                        d_inner: s.d_inner as usize,
                        dt_rank: s.dt_rank.unwrap_or(model.hidden.div_ceil(16)) as usize,
                        d_state: s.d_state as usize,
                        d_conv,
                    })
                }
                LayerKind::Linear | LayerKind::ShortConv => unreachable!("refused by supported()"),
            };
            let ffn = if model.is_moe_layer(i as u32) {
                let m = model.moe.as_ref().expect("is_moe_layer implies moe");
                let gated = model.ffn_gated;
                LayerFfn::Moe {
                    norm: b.vector(FfnNorm, l, Init::One)?,
                    router: b.mat(FfnGateInp, l)?,
                    experts: FfnWeights {
                        gate: if gated { Some(b.mat(FfnGateExps, l)?) } else { None },
                        up: b.mat(FfnUpExps, l)?,
                        down: b.mat(FfnDownExps, l)?,
                    },
                    shared: if m.n_shared > 0 {
                        Some(FfnWeights {
                            gate: if gated { Some(b.mat(FfnGateShexp, l)?) } else { None },
                            up: b.mat(FfnUpShexp, l)?,
                            down: b.mat(FfnDownShexp, l)?,
                        })
                    } else {
                        None
                    },
                    top_k: m.top_k as usize,
                }
            } else if model.ffn > 0 {
                LayerFfn::Dense {
                    norm: b.vector(FfnNorm, l, Init::One)?,
                    ffn: FfnWeights {
                        gate: if model.ffn_gated { Some(b.mat(FfnGate, l)?) } else { None },
                        up: b.mat(FfnUp, l)?,
                        down: b.mat(FfnDown, l)?,
                    },
                }
            } else {
                LayerFfn::None
            };
            layers.push(LayerWeights { kind, attn_norm, mixer, ffn });
        }
        let w = Weights {
            tok_embd: b.mat(TokenEmbd, None)?,
            layers,
            output_norm: b.vector(OutputNorm, None, Init::One)?,
            output: if model.tied_embeddings { None } else { Some(b.mat(Output, None)?) },
            bytes: planned_bytes(model, mix),
        };
        Ok(w)
    }
}

fn ffn(f: &FfnWeights) -> Vec<&Mat> {
    f.gate.iter().chain([&f.up, &f.down]).collect()
}

/// Bytes the weights of `model` take in the formats `mix` assigns, before building them
/// (what a caller checks against the memory it has).
pub fn planned_bytes(model: &ModelSpec, mix: &WeightQuant) -> u64 {
    mix.assign(model).iter().map(|a| a.tensor.bytes_in(a.format)).fold(0, u64::saturating_add)
}

/// Refuse, naming the field, what the engine does not run.
fn supported(model: &ModelSpec) -> Result<()> {
    let unsupported = |field: String, value: String, reason: &str| {
        Err(EngineError::Unsupported { field, value, reason: reason.to_string() })
    };
    if model.mla.is_some() {
        return unsupported("model.mla".into(), "set".into(), "multi-head latent attention is not in the engine");
    }
    if let Some(s) = &model.ssm
        && s.kind != SsmKind::Mamba1
        && model.layer_kinds().contains(&LayerKind::Ssm)
    {
        return unsupported("model.ssm.kind".into(), format!("{:?}", s.kind), "the engine runs Mamba-1 layers only");
    }
    if let Some(i) = model.layer_kinds().iter().position(|k| *k == LayerKind::Linear) {
        return unsupported(
            format!("model.layer_kinds[{i}]"),
            "linear".into(),
            "linear-attention layers are not in the engine",
        );
    }
    if let Some(i) = model.layer_kinds().iter().position(|k| *k == LayerKind::ShortConv) {
        return unsupported(
            format!("model.layer_kinds[{i}]"),
            "short_conv".into(),
            "short-convolution layers are not in the engine",
        );
    }
    let extras = [
        ("model.ffn_per_layer", model.ffn_per_layer.is_some()),
        ("model.n_heads_per_layer", model.n_heads_per_layer.is_some()),
        ("model.n_kv_heads_per_layer", model.n_kv_heads_per_layer.is_some()),
        ("model.head_dim_per_layer", model.head_dim_per_layer.is_some()),
        ("model.kv_shared_layers", model.kv_shared_layers.is_some_and(|k| k > 0)),
        ("model.per_layer_embedding", model.per_layer_embedding.is_some()),
        ("model (read from a file)", model.stored.is_some()),
    ];
    if let Some((field, _)) = extras.iter().find(|(_, set)| *set) {
        return unsupported(
            field.to_string(),
            "set".into(),
            "the engine runs uniform layer stacks built from the spec",
        );
    }
    Ok(())
}

#[derive(Clone, Copy)]
enum Init {
    One,
    Small,
    Gaussian(f32),
    /// `Δ` bias such that `softplus(bias)` is log-uniform in [0.001, 0.1] (Mamba's init).
    DtBias,
    /// `A = −(n + 1)` for state index `n` (Mamba's S4D-real init, `A_log = ln(n + 1)`).
    MambaA(usize),
}

struct Builder {
    seed: u64,
    /// Distinct quantized rows per (format, row length), shared by the large matrices.
    pools: std::cell::RefCell<RandomRows>,
    by_name: HashMap<(TensorClass, Option<u32>), (u64, Tensor, QuantFormat)>,
}

impl Builder {
    fn find(&self, class: TensorClass, layer: Option<u32>) -> (u64, Tensor, QuantFormat) {
        *self.by_name.get(&(class, layer)).expect("the builder asks for tensors ModelSpec::tensors lists")
    }

    fn rng(&self, index: u64) -> StdRng {
        StdRng::seed_from_u64(self.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03))
    }

    fn vector(&self, class: TensorClass, layer: Option<u32>, init: Init) -> Result<Vec<f32>> {
        let (i, t, _) = self.find(class, layer);
        let n = t.elements() as usize;
        let mut rng = self.rng(i);
        Ok(match init {
            Init::One => vec![1.0; n],
            Init::Small => gaussian(n, 0.02, &mut rng),
            Init::Gaussian(s) => gaussian(n, s, &mut rng),
            Init::DtBias => (0..n)
                .map(|_| {
                    let dt = (0.001f32.ln() + rng.random::<f32>() * (0.1f32.ln() - 0.001f32.ln())).exp();
                    dt + (-(-dt).exp_m1()).ln() // inverse softplus: dt + ln(1 − e^{−dt})
                })
                .collect(),
            Init::MambaA(d_state) => (0..n).map(|j| -((j % d_state) as f32 + 1.0)).collect(),
        })
    }

    fn mat(&self, class: TensorClass, layer: Option<u32>) -> Result<Mat> {
        let (i, t, f) = self.find(class, layer);
        let name = match layer {
            Some(l) => format!("blk.{l}.{}", class.name()),
            None => class.name().to_string(),
        };
        let refuse =
            |reason: String| EngineError::Unsupported { field: format!("weights ({name})"), value: f.name(), reason };
        let QuantFormat::Ggml(g) = f else {
            return Err(refuse(
                "the engine runs ggml formats only (group-wise and per-channel formats have no kernel)".into(),
            ));
        };
        let kernel = Kernel::new(g).map_err(|e| refuse(e.to_string()))?;
        let (rows, cols, experts) = (t.rows as usize, t.row_len as usize, t.experts as usize);
        let mut rng = self.rng(i);
        let data =
            self.pools.borrow_mut().matrix(g, rows * experts, cols, &mut rng).map_err(|e| refuse(e.to_string()))?;
        let row_bytes = data.len() / (rows * experts).max(1);
        Ok(Mat { class, layer, kernel, rows, cols, experts, row_bytes, data })
    }
}

/// Random quantized matrices: all rows distinct up to [`DISTINCT_ELEMS`] weights; larger
/// ones drawn from [`POOL_ROWS`] distinct rows kept per (format, row length), so that many
/// matrices of one shape (a model, a bandwidth probe) build at copy speed.
#[derive(Debug, Default)]
pub struct RandomRows {
    pools: HashMap<(GgmlType, usize), Vec<u8>>,
}

impl RandomRows {
    /// `rows` random rows of `cols` weights quantized to `format` (row-major bytes).
    pub fn matrix(
        &mut self,
        format: GgmlType,
        rows: usize,
        cols: usize,
        rng: &mut StdRng,
    ) -> std::result::Result<Vec<u8>, memwall_kernels::KernelError> {
        if (rows as u64) * (cols as u64) <= DISTINCT_ELEMS {
            return distinct_rows(format, rows, cols, rng);
        }
        let pool = match self.pools.entry((format, cols)) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => v.insert(distinct_rows(format, POOL_ROWS, cols, rng)?),
        };
        let row_bytes = pool.len() / POOL_ROWS;
        let mut data = Vec::with_capacity(rows * row_bytes);
        for _ in 0..rows {
            let r = rng.random_range(0..POOL_ROWS);
            data.extend_from_slice(&pool[r * row_bytes..(r + 1) * row_bytes]);
        }
        Ok(data)
    }
}

/// `rows` distinct random rows of `cols` weights in `format`.
fn distinct_rows(
    format: GgmlType,
    rows: usize,
    cols: usize,
    rng: &mut StdRng,
) -> std::result::Result<Vec<u8>, memwall_kernels::KernelError> {
    let ternary = matches!(format, GgmlType::TQ1_0 | GgmlType::TQ2_0);
    let mut out = Vec::new();
    for _ in 0..rows {
        out.extend_from_slice(&quantize(format, &random_row(cols, ternary, rng))?);
    }
    Ok(out)
}

fn gaussian(n: usize, sd: f32, rng: &mut StdRng) -> Vec<f32> {
    let d = Normal::new(0.0f32, sd).expect("finite positive sd");
    (0..n).map(|_| d.sample(rng)).collect()
}

/// One row of `cols` weights with variance `1/cols`: Gaussian, or ternary (`±s` with
/// probability 1/3 each, 0 otherwise, `s = sqrt(1.5/cols)`).
fn random_row(cols: usize, ternary: bool, rng: &mut StdRng) -> Vec<f32> {
    if ternary {
        let s = (1.5 / cols as f32).sqrt();
        (0..cols).map(|_| [-s, 0.0, s][rng.random_range(0..3usize)]).collect()
    } else {
        gaussian(cols, 1.0 / (cols as f32).sqrt(), rng)
    }
}
