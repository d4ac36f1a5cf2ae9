//! Model architectures: dense, GQA/MQA/MHA, sliding window, MoE, MLA, SSM, linear attention
//! and hybrid stacks, described at the granularity of their weight tensors.
//!
//! [`ModelSpec::tensors`] enumerates every tensor with llama.cpp's GGUF name class and shape,
//! so weight bytes come out exact for any per-tensor quantization mix.

use serde::{Deserialize, Serialize};

use crate::error::{Result, SpecError, nonzero};

/// What a layer's token mixer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerKind {
    /// Full causal attention: the KV cache holds every token of the context.
    Full,
    /// Sliding-window attention: the KV cache holds at most `sliding_window` tokens.
    Sliding,
    /// Selective state-space (Mamba) layer: a fixed-size state, no KV cache.
    Ssm,
    /// Linear attention (gated delta rule / RetNet style): a fixed `heads × dk × dv` state.
    Linear,
    /// Gated short causal convolution (LFM2's `conv` layers): a state of the last
    /// `l_cache − 1` inputs, no KV cache.
    ShortConv,
}

impl LayerKind {
    /// Every kind.
    pub const ALL: [LayerKind; 5] =
        [LayerKind::Full, LayerKind::Sliding, LayerKind::Ssm, LayerKind::Linear, LayerKind::ShortConv];

    /// Its name, as serialized (`full`, `short_conv`).
    pub fn name(self) -> &'static str {
        match self {
            LayerKind::Full => "full",
            LayerKind::Sliding => "sliding",
            LayerKind::Ssm => "ssm",
            LayerKind::Linear => "linear",
            LayerKind::ShortConv => "short_conv",
        }
    }

    /// The kind named `name` ([`LayerKind::name`]).
    pub fn from_name(name: &str) -> Option<LayerKind> {
        LayerKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the layer keeps a per-token KV cache.
    pub fn has_kv(self) -> bool {
        matches!(self, LayerKind::Full | LayerKind::Sliding)
    }
}

/// Mixture-of-experts FFN.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoeSpec {
    /// Routed experts per MoE layer.
    pub n_experts: u32,
    /// Routed experts chosen per token.
    pub top_k: u32,
    /// Always-active shared experts.
    #[serde(default)]
    pub n_shared: u32,
    /// Intermediate size of one routed expert.
    pub expert_ffn: u64,
    /// Intermediate size of one shared expert (defaults to `expert_ffn`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_ffn: Option<u64>,
    /// The first N layers use the dense FFN instead (DeepSeek's `first_k_dense_replace`).
    #[serde(default)]
    pub leading_dense_layers: u32,
}

/// DeepSeek multi-head latent attention: the cache holds a compressed latent per token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MlaSpec {
    /// Rank of the compressed KV latent.
    pub kv_lora_rank: u64,
    /// Rank of the compressed query (0 = queries not compressed).
    #[serde(default)]
    pub q_lora_rank: u64,
    /// Per-head query/key dimension without rotary embedding.
    pub qk_nope_head_dim: u64,
    /// Per-head rotary dimension (shared across heads in the cache).
    pub qk_rope_head_dim: u64,
    /// Per-head value dimension.
    pub v_head_dim: u64,
}

/// Which state-space recurrence an SSM layer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SsmKind {
    /// Mamba-1 selective scan (per-channel state).
    Mamba1,
    /// Mamba-2 (SSD, per-head scalar decay, grouped B/C).
    Mamba2,
}

/// State-space layer shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsmSpec {
    /// Mamba-1 or Mamba-2.
    pub kind: SsmKind,
    /// State size per channel (N).
    pub d_state: u64,
    /// Causal convolution width.
    pub d_conv: u64,
    /// Inner width (expand × hidden).
    pub d_inner: u64,
    /// Rank of the Δ projection (Mamba-1; default ceil(hidden / 16)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dt_rank: Option<u64>,
    /// Groups sharing B and C (Mamba-2).
    #[serde(default = "one")]
    pub n_groups: u64,
    /// Heads (Mamba-2; d_inner / head_dim).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_heads: Option<u64>,
}

fn one() -> u64 {
    1
}

/// Entry `i` of an optional per-layer list.
fn at(v: &Option<Vec<u64>>, i: u32) -> Option<u64> {
    v.as_ref().and_then(|v| v.get(i as usize).copied())
}

/// Short-convolution layer shape (LFM2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShortConvSpec {
    /// Convolution width (`conv_L_cache`): the state holds the last `l_cache − 1` inputs.
    pub l_cache: u64,
}

/// Per-layer input embeddings (Gemma 3n's PLE): every layer gets its own `width`-wide
/// embedding of the token, looked up in one `vocab × (n_layers × width)` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerLayerEmbeddingSpec {
    /// Width per layer (`hidden_size_per_layer_input`).
    pub width: u64,
    /// Rows of the table (`vocab_size_per_layer_input`; defaults to `vocab`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vocab: Option<u64>,
    /// The table stays on flash and each token's rows are read from there (as Google's
    /// runtime does), so it takes no RAM; otherwise it is resident like any weight.
    #[serde(default)]
    pub on_flash: bool,
}

/// Linear-attention layer shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinearSpec {
    /// Heads.
    pub n_heads: u64,
    /// Key dimension per head.
    pub key_dim: u64,
    /// Value dimension per head.
    pub value_dim: u64,
}

fn yes() -> bool {
    true
}

/// A model architecture, as in its published `config.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Preset name.
    pub name: String,
    /// Where the numbers come from.
    #[serde(default)]
    pub source: String,
    /// Transformer blocks.
    pub n_layers: u32,
    /// Model width (d_model).
    pub hidden: u64,
    /// Query heads.
    pub n_heads: u64,
    /// Key/value heads (1 = MQA, n_heads = MHA).
    pub n_kv_heads: u64,
    /// Per-head dimension (defaults to hidden / n_heads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_dim: Option<u64>,
    /// Intermediate size of the dense FFN (0 = no FFN, e.g. pure Mamba).
    pub ffn: u64,
    /// Gated FFN (SwiGLU/GeGLU: gate, up, down) or plain (up, down).
    #[serde(default = "yes")]
    pub ffn_gated: bool,
    /// Vocabulary size.
    pub vocab: u64,
    /// Output projection shares the token-embedding matrix.
    #[serde(default)]
    pub tied_embeddings: bool,
    /// Biases on the q/k/v projections.
    #[serde(default)]
    pub attn_bias: bool,
    /// Longest context the model was trained for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_context: Option<u64>,
    /// Layer kinds repeated cyclically over the stack.
    #[serde(default = "default_pattern")]
    pub layer_pattern: Vec<LayerKind>,
    /// Explicit per-layer kinds (overrides `layer_pattern`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer_kinds: Option<Vec<LayerKind>>,
    /// Window of sliding-window layers, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sliding_window: Option<u64>,
    /// Groups of this many consecutive attention layers share one KV cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_share_group: Option<u32>,
    /// Mixture of experts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub moe: Option<MoeSpec>,
    /// Multi-head latent attention.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mla: Option<MlaSpec>,
    /// State-space layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssm: Option<SsmSpec>,
    /// Linear-attention layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear: Option<LinearSpec>,
    /// Short-convolution layers (LFM2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_conv: Option<ShortConvSpec>,
    /// FFN width of each layer (overrides `ffn`; `n_layers` entries, 0 = no FFN there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ffn_per_layer: Option<Vec<u64>>,
    /// Query heads of each layer (overrides `n_heads`; `n_layers` entries; OpenELM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_heads_per_layer: Option<Vec<u64>>,
    /// KV heads of each layer (overrides `n_kv_heads`; `n_layers` entries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_kv_heads_per_layer: Option<Vec<u64>>,
    /// Head dimension of each layer (overrides `head_dim`; `n_layers` entries; Gemma 4's
    /// wider global layers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_dim_per_layer: Option<Vec<u64>>,
    /// The last this-many layers keep no KV cache of their own: each reads the cache of the
    /// last earlier layer of its kind (Gemma 3n's `num_kv_shared_layers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_shared_layers: Option<u32>,
    /// Per-layer input embeddings (Gemma 3n).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_layer_embedding: Option<PerLayerEmbeddingSpec>,
    /// Bits per weight the model was trained at (quantization-aware training: 1.58 for a
    /// ternary BitNet b1.58 model). Absent: trained in 16 bits, so that formats below about
    /// 2 bits per weight are post-training quantization, which such a model does not survive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trained_bits: Option<f64>,
    /// Per-field provenance.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub sources: std::collections::BTreeMap<String, String>,
    /// The model file (`.gguf` or `config.json`) this spec was read from, when it was: an
    /// experiment re-attaches the file's tensors ([`ModelSpec::stored`]) by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_file: Option<String>,
    /// The tensors of the file the model was read from, when it was (never from TOML).
    #[serde(skip)]
    pub stored: Option<std::sync::Arc<Vec<StoredTensor>>>,
}

fn default_pattern() -> Vec<LayerKind> {
    vec![LayerKind::Full]
}

/// The class of a weight tensor, named as in llama.cpp's GGUF files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(missing_docs)]
pub enum TensorClass {
    TokenEmbd,
    Output,
    OutputNorm,
    AttnNorm,
    AttnQ,
    AttnK,
    AttnV,
    AttnQBias,
    AttnKBias,
    AttnVBias,
    AttnOutput,
    AttnQA,
    AttnQANorm,
    AttnQB,
    AttnKvAMqa,
    AttnKvANorm,
    AttnKvB,
    FfnNorm,
    FfnGate,
    FfnUp,
    FfnDown,
    FfnGateInp,
    FfnGateExps,
    FfnUpExps,
    FfnDownExps,
    FfnGateShexp,
    FfnUpShexp,
    FfnDownShexp,
    SsmIn,
    SsmConv1d,
    SsmConv1dBias,
    SsmX,
    SsmDt,
    SsmDtBias,
    SsmA,
    SsmD,
    SsmNorm,
    SsmOut,
    LinearQ,
    LinearK,
    LinearV,
    LinearGate,
    LinearBeta,
    LinearOut,
    /// Per-layer input embeddings (Gemma 3n's PLE): one row of `layers × width` per token.
    PerLayerTokenEmbd,
    /// A tensor a file holds that memwall has no class for (query/key norms, post-norms,
    /// AltUp and LAuReL blocks, short convolutions, ...): read in full once per token.
    Other,
}

impl TensorClass {
    /// Every class.
    pub const ALL: &'static [TensorClass] = &[
        TensorClass::TokenEmbd,
        TensorClass::Output,
        TensorClass::OutputNorm,
        TensorClass::AttnNorm,
        TensorClass::AttnQ,
        TensorClass::AttnK,
        TensorClass::AttnV,
        TensorClass::AttnQBias,
        TensorClass::AttnKBias,
        TensorClass::AttnVBias,
        TensorClass::AttnOutput,
        TensorClass::AttnQA,
        TensorClass::AttnQANorm,
        TensorClass::AttnQB,
        TensorClass::AttnKvAMqa,
        TensorClass::AttnKvANorm,
        TensorClass::AttnKvB,
        TensorClass::FfnNorm,
        TensorClass::FfnGate,
        TensorClass::FfnUp,
        TensorClass::FfnDown,
        TensorClass::FfnGateInp,
        TensorClass::FfnGateExps,
        TensorClass::FfnUpExps,
        TensorClass::FfnDownExps,
        TensorClass::FfnGateShexp,
        TensorClass::FfnUpShexp,
        TensorClass::FfnDownShexp,
        TensorClass::SsmIn,
        TensorClass::SsmConv1d,
        TensorClass::SsmConv1dBias,
        TensorClass::SsmX,
        TensorClass::SsmDt,
        TensorClass::SsmDtBias,
        TensorClass::SsmA,
        TensorClass::SsmD,
        TensorClass::SsmNorm,
        TensorClass::SsmOut,
        TensorClass::LinearQ,
        TensorClass::LinearK,
        TensorClass::LinearV,
        TensorClass::LinearGate,
        TensorClass::LinearBeta,
        TensorClass::LinearOut,
        TensorClass::PerLayerTokenEmbd,
        TensorClass::Other,
    ];

    /// The GGUF name stem (`"attn_v"`, `"ffn_down_exps"`, `"token_embd"`).
    pub fn name(self) -> &'static str {
        use TensorClass::*;
        match self {
            TokenEmbd => "token_embd",
            Output => "output",
            OutputNorm => "output_norm",
            AttnNorm => "attn_norm",
            AttnQ => "attn_q",
            AttnK => "attn_k",
            AttnV => "attn_v",
            AttnQBias => "attn_q_bias",
            AttnKBias => "attn_k_bias",
            AttnVBias => "attn_v_bias",
            AttnOutput => "attn_output",
            AttnQA => "attn_q_a",
            AttnQANorm => "attn_q_a_norm",
            AttnQB => "attn_q_b",
            AttnKvAMqa => "attn_kv_a_mqa",
            AttnKvANorm => "attn_kv_a_norm",
            AttnKvB => "attn_kv_b",
            FfnNorm => "ffn_norm",
            FfnGate => "ffn_gate",
            FfnUp => "ffn_up",
            FfnDown => "ffn_down",
            FfnGateInp => "ffn_gate_inp",
            FfnGateExps => "ffn_gate_exps",
            FfnUpExps => "ffn_up_exps",
            FfnDownExps => "ffn_down_exps",
            FfnGateShexp => "ffn_gate_shexp",
            FfnUpShexp => "ffn_up_shexp",
            FfnDownShexp => "ffn_down_shexp",
            SsmIn => "ssm_in",
            SsmConv1d => "ssm_conv1d",
            SsmConv1dBias => "ssm_conv1d_bias",
            SsmX => "ssm_x",
            SsmDt => "ssm_dt",
            SsmDtBias => "ssm_dt_bias",
            SsmA => "ssm_a",
            SsmD => "ssm_d",
            SsmNorm => "ssm_norm",
            SsmOut => "ssm_out",
            LinearQ => "linear_q",
            LinearK => "linear_k",
            LinearV => "linear_v",
            LinearGate => "linear_gate",
            LinearBeta => "linear_beta",
            LinearOut => "linear_out",
            PerLayerTokenEmbd => "per_layer_token_embd",
            Other => "other",
        }
    }

    /// Look a class up by its GGUF name stem.
    pub fn parse(name: &str) -> Option<TensorClass> {
        TensorClass::ALL.iter().copied().find(|c| c.name() == name)
    }

    /// Whether llama.cpp quantizes this tensor (2-D weight matrices, except the MoE router and
    /// the Mamba convolution and A matrix, which stay F32).
    pub fn quantizable(self) -> bool {
        use TensorClass::*;
        !matches!(
            self,
            OutputNorm
                | AttnNorm
                | AttnQBias
                | AttnKBias
                | AttnVBias
                | AttnQANorm
                | AttnKvANorm
                | FfnNorm
                | FfnGateInp
                | SsmConv1d
                | SsmConv1dBias
                | SsmDtBias
                | SsmA
                | SsmD
                | SsmNorm
        )
    }

    /// Whether this is a routed-expert tensor (read only for the experts a token selects).
    pub fn is_routed_expert(self) -> bool {
        matches!(self, TensorClass::FfnGateExps | TensorClass::FfnUpExps | TensorClass::FfnDownExps)
    }
}

/// One weight tensor of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tensor {
    /// Class (GGUF name stem).
    pub class: TensorClass,
    /// Block index, `None` for global tensors.
    pub layer: Option<u32>,
    /// Row length (`ne[0]`, the input dimension: blocks run along it).
    pub row_len: u64,
    /// Rows per expert (`ne[1]`).
    pub rows: u64,
    /// Experts stacked in the tensor (`ne[2]`; 1 for dense tensors).
    pub experts: u64,
}

impl Tensor {
    /// Elements, `row_len × rows × experts`.
    pub fn elements(&self) -> u64 {
        self.row_len * self.rows * self.experts
    }

    /// Bytes of this tensor stored in `f`: `experts × matrix_bytes(row_len, rows)`, that is
    /// `rows × experts × row_bytes(row_len)` where a row that ends mid-group of a generic
    /// group format pads its last group (ggml types fall back to another type before they get
    /// here, see [`crate::mix::fallback`]), and FP8 scales per tensor or per tile counted for
    /// each expert's matrix ([`crate::QuantFormat::matrix_bytes`]).
    pub fn bytes_in(&self, f: crate::QuantFormat) -> u64 {
        self.experts * f.matrix_bytes(self.row_len, self.rows)
    }

    /// Whether this is a 1-D tensor (norm weight or bias).
    pub fn is_vector(&self) -> bool {
        self.rows == 1 && self.experts == 1
    }
}

/// A tensor as a model file stores it (a GGUF import): the file's name, memwall's class and
/// shape for it, and its stored type. A model that carries these ([`ModelSpec::stored`])
/// enumerates exactly them, so its weight bytes are the file's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredTensor {
    /// Name in the file (`blk.3.attn_q.weight`).
    pub name: String,
    /// Class, layer and shape (`ne[0]`, `ne[1]`, and the product of the higher dimensions
    /// as `experts`).
    pub tensor: Tensor,
    /// Stored type.
    pub ggml: crate::GgmlType,
}

/// Parameter counts by tensor group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParamCounts {
    /// Token-embedding matrix.
    pub embedding: u64,
    /// Output projection (0 when tied).
    pub output: u64,
    /// Attention / SSM / linear-attention mixers, norms and biases included.
    pub mixer: u64,
    /// Dense FFNs and shared experts.
    pub ffn_dense: u64,
    /// Routed experts (all of them).
    pub ffn_experts: u64,
    /// Routers.
    pub router: u64,
    /// Total.
    pub total: u64,
    /// Read per decoded token: everything but the embedding matrix (one row) and the
    /// unselected routed experts.
    pub active_per_token: u64,
}

impl ModelSpec {
    /// Per-head dimension.
    pub fn head_dim(&self) -> u64 {
        self.head_dim.unwrap_or_else(|| self.hidden.checked_div(self.n_heads).unwrap_or(0))
    }

    /// Kind of every layer, `n_layers` long.
    pub fn layer_kinds(&self) -> Vec<LayerKind> {
        match &self.layer_kinds {
            Some(k) => k.clone(),
            None => {
                (0..self.n_layers as usize).map(|i| self.layer_pattern[i % self.layer_pattern.len().max(1)]).collect()
            }
        }
    }

    /// FFN width of layer `i` (`ffn_per_layer[i]`, else `ffn`).
    pub fn ffn_at(&self, i: u32) -> u64 {
        at(&self.ffn_per_layer, i).unwrap_or(self.ffn)
    }

    /// Query heads of layer `i` (`n_heads_per_layer[i]`, else `n_heads`).
    pub fn n_heads_at(&self, i: u32) -> u64 {
        at(&self.n_heads_per_layer, i).unwrap_or(self.n_heads)
    }

    /// KV heads of layer `i` (`n_kv_heads_per_layer[i]`, else `n_kv_heads`).
    pub fn n_kv_heads_at(&self, i: u32) -> u64 {
        at(&self.n_kv_heads_per_layer, i).unwrap_or(self.n_kv_heads)
    }

    /// Head dimension of layer `i` (`head_dim_per_layer[i]`, else [`ModelSpec::head_dim`]).
    pub fn head_dim_at(&self, i: u32) -> u64 {
        at(&self.head_dim_per_layer, i).unwrap_or_else(|| self.head_dim())
    }

    /// KV elements cached per token by layer `i`, for K and for V: `n_kv_heads_i × head_dim_i`
    /// each; MLA caches the latent and the shared rotary key,
    /// `kv_lora_rank + qk_rope_head_dim`, as K and nothing as V (llama.cpp's MLA cache: V is a
    /// view of the latent).
    pub fn kv_row_elems_at(&self, i: u32) -> (u64, u64) {
        match &self.mla {
            Some(m) => (m.kv_lora_rank + m.qk_rope_head_dim, 0),
            None => {
                let row = self.n_kv_heads_at(i) * self.head_dim_at(i);
                (row, row)
            }
        }
    }

    /// Attention multiply-adds of layer `i` per attended token and sequence: QKᵀ and AV over
    /// every query head, `n_heads_i × 2 × head_dim_i`; MLA (absorbed) `n_heads × (2 ×
    /// kv_lora_rank + qk_rope_head_dim)`.
    ///
    /// Example: 32 heads of 128: 8,192 per attended token.
    pub fn attention_macs_at(&self, i: u32) -> u64 {
        match &self.mla {
            Some(a) => self.n_heads * (2 * a.kv_lora_rank + a.qk_rope_head_dim),
            None => self.n_heads_at(i) * 2 * self.head_dim_at(i),
        }
    }

    /// Whether layer `i` uses routed experts.
    pub fn is_moe_layer(&self, i: u32) -> bool {
        self.moe.as_ref().is_some_and(|m| i >= m.leading_dense_layers)
    }

    /// Layers that keep a KV cache of their own (after cross-layer sharing: groups of
    /// `kv_share_group`, and the last `kv_shared_layers` reading an earlier layer's cache).
    pub fn kv_cache_layers(&self) -> Vec<(u32, LayerKind)> {
        let group = self.kv_share_group.unwrap_or(1).max(1) as usize;
        let first_shared = self.n_layers.saturating_sub(self.kv_shared_layers.unwrap_or(0));
        self.layer_kinds()
            .into_iter()
            .enumerate()
            .filter(|(_, k)| k.has_kv())
            .enumerate()
            .filter(|(ordinal, (i, _))| ordinal % group == 0 && (*i as u32) < first_shared)
            .map(|(_, (i, k))| (i as u32, k))
            .collect()
    }

    /// Bytes of the recurrent state of one SSM or linear-attention layer (f32).
    ///
    /// Mamba-1: `((d_conv − 1) × d_inner + d_inner × d_state) × 4`.
    /// Mamba-2: `((d_conv − 1) × (d_inner + 2 × n_groups × d_state) + d_inner × d_state) × 4`.
    /// Linear: `n_heads × key_dim × value_dim × 4`.
    /// Short convolution: `(l_cache − 1) × hidden × 4` (llama.cpp keeps it in f32).
    pub fn state_bytes(&self, kind: LayerKind) -> u64 {
        match kind {
            LayerKind::Ssm => self.ssm.as_ref().map_or(0, |s| {
                let conv_ch = match s.kind {
                    SsmKind::Mamba1 => s.d_inner,
                    SsmKind::Mamba2 => s.d_inner + 2 * s.n_groups * s.d_state,
                };
                ((s.d_conv.saturating_sub(1)) * conv_ch + s.d_inner * s.d_state) * 4
            }),
            LayerKind::Linear => self.linear.as_ref().map_or(0, |l| l.n_heads * l.key_dim * l.value_dim * 4),
            LayerKind::ShortConv => {
                self.short_conv.as_ref().map_or(0, |c| c.l_cache.saturating_sub(1) * self.hidden * 4)
            }
            _ => 0,
        }
    }

    /// Every weight tensor, in GGUF order (token embedding, blocks, output norm, output); a
    /// model read from a file lists the file's tensors instead, in the file's order.
    pub fn tensors(&self) -> Vec<Tensor> {
        use TensorClass::*;
        if let Some(stored) = &self.stored {
            return stored.iter().map(|t| t.tensor).collect();
        }
        let h = self.hidden;
        let mut out = Vec::with_capacity(16 * self.n_layers as usize + 3);
        let t = |class, layer: Option<u32>, row_len, rows, experts| Tensor { class, layer, row_len, rows, experts };
        out.push(t(TokenEmbd, None, h, self.vocab, 1));
        let ple = self.per_layer_embedding.as_ref();
        let n = self.n_layers as u64;
        if let Some(p) = ple {
            out.push(t(PerLayerTokenEmbd, None, n * p.width, p.vocab.unwrap_or(self.vocab), 1));
            out.push(t(Other, None, h, n * p.width, 1)); // per_layer_model_proj
            out.push(t(Other, None, p.width, 1, 1)); // per_layer_proj_norm
        }
        let hd_at = |i: usize| self.head_dim_at(i as u32);
        for (i, kind) in self.layer_kinds().into_iter().enumerate() {
            let l = Some(i as u32);
            out.push(t(AttnNorm, l, h, 1, 1));
            match kind {
                LayerKind::Full | LayerKind::Sliding => match &self.mla {
                    Some(m) => {
                        let qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
                        if m.q_lora_rank > 0 {
                            out.push(t(AttnQA, l, h, m.q_lora_rank, 1));
                            out.push(t(AttnQANorm, l, m.q_lora_rank, 1, 1));
                            out.push(t(AttnQB, l, m.q_lora_rank, self.n_heads * qk, 1));
                        } else {
                            out.push(t(AttnQ, l, h, self.n_heads * qk, 1));
                        }
                        out.push(t(AttnKvAMqa, l, h, m.kv_lora_rank + m.qk_rope_head_dim, 1));
                        out.push(t(AttnKvANorm, l, m.kv_lora_rank, 1, 1));
                        out.push(t(AttnKvB, l, m.kv_lora_rank, self.n_heads * (m.qk_nope_head_dim + m.v_head_dim), 1));
                        out.push(t(AttnOutput, l, self.n_heads * m.v_head_dim, h, 1));
                    }
                    None => {
                        let (q, kv) = (self.n_heads_at(i as u32) * hd_at(i), self.n_kv_heads_at(i as u32) * hd_at(i));
                        out.push(t(AttnQ, l, h, q, 1));
                        out.push(t(AttnK, l, h, kv, 1));
                        out.push(t(AttnV, l, h, kv, 1));
                        if self.attn_bias {
                            out.push(t(AttnQBias, l, q, 1, 1));
                            out.push(t(AttnKBias, l, kv, 1, 1));
                            out.push(t(AttnVBias, l, kv, 1, 1));
                        }
                        out.push(t(AttnOutput, l, q, h, 1));
                    }
                },
                LayerKind::Ssm => {
                    if let Some(s) = &self.ssm {
                        match s.kind {
                            SsmKind::Mamba1 => {
                                let dt_rank = s.dt_rank.unwrap_or(h.div_ceil(16));
                                out.push(t(SsmIn, l, h, 2 * s.d_inner, 1));
                                out.push(t(SsmConv1d, l, s.d_conv, s.d_inner, 1));
                                out.push(t(SsmConv1dBias, l, s.d_inner, 1, 1));
                                out.push(t(SsmX, l, s.d_inner, dt_rank + 2 * s.d_state, 1));
                                out.push(t(SsmDt, l, dt_rank, s.d_inner, 1));
                                out.push(t(SsmDtBias, l, s.d_inner, 1, 1));
                                out.push(t(SsmA, l, s.d_state, s.d_inner, 1));
                                out.push(t(SsmD, l, s.d_inner, 1, 1));
                            }
                            SsmKind::Mamba2 => {
                                let nh = s.n_heads.unwrap_or(1);
                                let conv_ch = s.d_inner + 2 * s.n_groups * s.d_state;
                                out.push(t(SsmIn, l, h, 2 * s.d_inner + 2 * s.n_groups * s.d_state + nh, 1));
                                out.push(t(SsmConv1d, l, s.d_conv, conv_ch, 1));
                                out.push(t(SsmConv1dBias, l, conv_ch, 1, 1));
                                out.push(t(SsmDtBias, l, nh, 1, 1));
                                out.push(t(SsmA, l, nh, 1, 1));
                                out.push(t(SsmD, l, nh, 1, 1));
                                out.push(t(SsmNorm, l, s.d_inner, 1, 1));
                            }
                        }
                        out.push(t(SsmOut, l, s.d_inner, h, 1));
                    }
                }
                LayerKind::ShortConv => {
                    if let Some(c) = &self.short_conv {
                        out.push(t(Other, l, h, 3 * h, 1)); // shortconv.in_proj
                        out.push(t(SsmConv1d, l, c.l_cache, h, 1)); // shortconv.conv
                        out.push(t(Other, l, h, h, 1)); // shortconv.out_proj
                    }
                }
                LayerKind::Linear => {
                    if let Some(la) = &self.linear {
                        let (qk, v) = (la.n_heads * la.key_dim, la.n_heads * la.value_dim);
                        out.push(t(LinearQ, l, h, qk, 1));
                        out.push(t(LinearK, l, h, qk, 1));
                        out.push(t(LinearV, l, h, v, 1));
                        out.push(t(LinearGate, l, h, v, 1));
                        out.push(t(LinearBeta, l, h, la.n_heads, 1));
                        out.push(t(LinearOut, l, v, h, 1));
                    }
                }
            }
            // The FFN (dense or mixture of experts).
            let gated = self.ffn_gated;
            if self.is_moe_layer(i as u32) {
                let m = self.moe.as_ref().expect("is_moe_layer implies moe");
                let (e, f) = (m.n_experts as u64, m.expert_ffn);
                out.push(t(FfnNorm, l, h, 1, 1));
                out.push(t(FfnGateInp, l, h, e, 1));
                if gated {
                    out.push(t(FfnGateExps, l, h, f, e));
                }
                out.push(t(FfnUpExps, l, h, f, e));
                out.push(t(FfnDownExps, l, f, h, e));
                if m.n_shared > 0 {
                    let sf = m.n_shared as u64 * m.shared_ffn.unwrap_or(m.expert_ffn);
                    if gated {
                        out.push(t(FfnGateShexp, l, h, sf, 1));
                    }
                    out.push(t(FfnUpShexp, l, h, sf, 1));
                    out.push(t(FfnDownShexp, l, sf, h, 1));
                }
            } else if self.ffn_at(i as u32) > 0 {
                let f = self.ffn_at(i as u32);
                out.push(t(FfnNorm, l, h, 1, 1));
                if gated {
                    out.push(t(FfnGate, l, h, f, 1));
                }
                out.push(t(FfnUp, l, h, f, 1));
                out.push(t(FfnDown, l, f, h, 1));
            }
            if let Some(p) = ple {
                out.push(t(Other, l, h, p.width, 1)); // inp_gate
                out.push(t(Other, l, p.width, h, 1)); // proj
                out.push(t(Other, l, h, 1, 1)); // post_norm
            }
        }
        out.push(t(OutputNorm, None, h, 1, 1));
        if !self.tied_embeddings {
            out.push(t(Output, None, h, self.vocab, 1));
        }
        out
    }

    /// Parameter counts by group, and the parameters read per decoded token.
    pub fn params(&self) -> ParamCounts {
        use TensorClass::*;
        let mut c = ParamCounts::default();
        let moe = self.moe.as_ref();
        for t in self.tensors() {
            let n = t.elements();
            c.total += n;
            match t.class {
                PerLayerTokenEmbd => {
                    c.embedding += n;
                    c.active_per_token += t.row_len;
                }
                TokenEmbd => {
                    c.embedding += n;
                    // One row per token; the whole matrix again when it doubles as the output.
                    c.active_per_token += if self.tied_embeddings { n } else { t.row_len };
                }
                Output => {
                    c.output += n;
                    c.active_per_token += n;
                }
                FfnGateExps | FfnUpExps | FfnDownExps => {
                    c.ffn_experts += n;
                    let k = moe.map_or(1, |m| m.top_k as u64);
                    c.active_per_token += n / t.experts * k;
                }
                FfnGateInp => {
                    c.router += n;
                    c.active_per_token += n;
                }
                FfnGate | FfnUp | FfnDown | FfnGateShexp | FfnUpShexp | FfnDownShexp | FfnNorm => {
                    c.ffn_dense += n;
                    c.active_per_token += n;
                }
                _ => {
                    c.mixer += n;
                    c.active_per_token += n;
                }
            }
        }
        c
    }

    /// Check that the architecture is possible; errors name the field and value.
    pub fn validate(&self) -> Result<()> {
        nonzero("n_layers", self.n_layers as u64)?;
        nonzero("hidden", self.hidden)?;
        nonzero("vocab", self.vocab)?;
        if let Some(b) = self.trained_bits
            && !(b.is_finite() && (1.0..=16.0).contains(&b))
        {
            return Err(SpecError::invalid("trained_bits", b, "must be a number of bits per weight in [1, 16]"));
        }
        self.validate_bounds()?;
        let kinds = self.layer_kinds();
        if let Some(k) = &self.layer_kinds
            && k.len() != self.n_layers as usize
        {
            return Err(SpecError::invalid(
                "layer_kinds",
                format!("{} entries", k.len()),
                format!("must list exactly n_layers = {} layer kinds", self.n_layers),
            ));
        }
        if self.layer_kinds.is_none() && self.layer_pattern.is_empty() {
            return Err(SpecError::invalid("layer_pattern", "[]", "needs at least one layer kind"));
        }
        let has_attention = kinds.iter().any(|k| k.has_kv());
        if has_attention {
            nonzero("n_heads", self.n_heads)?;
            nonzero("n_kv_heads", self.n_kv_heads)?;
            if self.n_kv_heads > self.n_heads {
                return Err(SpecError::invalid(
                    "n_kv_heads",
                    self.n_kv_heads,
                    format!("cannot exceed n_heads = {}", self.n_heads),
                ));
            }
            if !self.n_heads.is_multiple_of(self.n_kv_heads) {
                return Err(SpecError::invalid(
                    "n_kv_heads",
                    self.n_kv_heads,
                    format!("n_heads = {} must be a multiple of n_kv_heads", self.n_heads),
                ));
            }
            if self.head_dim.is_none() && !self.hidden.is_multiple_of(self.n_heads) {
                return Err(SpecError::invalid(
                    "head_dim",
                    "none",
                    format!(
                        "hidden = {} is not a multiple of n_heads = {}: set head_dim explicitly",
                        self.hidden, self.n_heads
                    ),
                ));
            }
            if self.head_dim() == 0 {
                return Err(SpecError::invalid(
                    "head_dim",
                    self.head_dim(),
                    "must be > 0 (set it, or make hidden >= n_heads)",
                ));
            }
        }
        if kinds.contains(&LayerKind::Sliding) {
            match self.sliding_window {
                None => {
                    return Err(SpecError::invalid("sliding_window", "none", "required when a layer is \"sliding\""));
                }
                Some(0) => return Err(SpecError::invalid("sliding_window", 0, "a window of 0 tokens holds nothing")),
                Some(_) => {}
            }
        }
        if let Some(0) = self.kv_share_group {
            return Err(SpecError::invalid("kv_share_group", 0, "must be >= 1"));
        }
        if let Some(k) = self.kv_shared_layers {
            let first_shared = self.n_layers.saturating_sub(k);
            if k >= self.n_layers {
                return Err(SpecError::invalid(
                    "kv_shared_layers",
                    k,
                    format!("must be below n_layers = {} (some layer must own a cache)", self.n_layers),
                ));
            }
            // Every sharing layer needs an earlier owner of its kind.
            for (i, kind) in kinds.iter().enumerate().skip(first_shared as usize).filter(|(_, k)| k.has_kv()) {
                if !kinds[..first_shared as usize].contains(kind) {
                    return Err(SpecError::invalid(
                        "kv_shared_layers",
                        k,
                        format!("layer {i} ({kind:?}) would share a cache, but no earlier layer of its kind has one"),
                    ));
                }
            }
        }
        for (field, list) in [
            ("ffn_per_layer", &self.ffn_per_layer),
            ("n_heads_per_layer", &self.n_heads_per_layer),
            ("n_kv_heads_per_layer", &self.n_kv_heads_per_layer),
            ("head_dim_per_layer", &self.head_dim_per_layer),
        ] {
            if let Some(f) = list
                && f.len() != self.n_layers as usize
            {
                return Err(SpecError::invalid(
                    field,
                    format!("{} entries", f.len()),
                    format!("must list exactly n_layers = {} values", self.n_layers),
                ));
            }
        }
        for (i, _) in kinds.iter().enumerate().filter(|(_, k)| k.has_kv()) {
            let (l, per) = (i as u32, |f: &str| format!("{f}_per_layer[{i}]"));
            let (q, kv, hd) = (self.n_heads_at(l), self.n_kv_heads_at(l), self.head_dim_at(l));
            if self.n_heads_per_layer.is_some() && q == 0 {
                return Err(SpecError::invalid(per("n_heads"), 0, "an attention layer needs query heads"));
            }
            if self.n_kv_heads_per_layer.is_some() && (kv == 0 || kv > q || !q.is_multiple_of(kv)) {
                return Err(SpecError::invalid(
                    per("n_kv_heads"),
                    kv,
                    format!("must divide the layer's {q} query heads (and be > 0 in an attention layer)"),
                ));
            }
            if self.head_dim_per_layer.is_some() && hd == 0 {
                return Err(SpecError::invalid(per("head_dim"), 0, "an attention layer needs a head dimension"));
            }
        }
        if kinds.contains(&LayerKind::ShortConv) {
            let Some(c) = &self.short_conv else {
                return Err(SpecError::invalid(
                    "short_conv",
                    "none",
                    "a [short_conv] table is required when a layer is \"short_conv\"",
                ));
            };
            nonzero("short_conv.l_cache", c.l_cache)?;
        }
        if let Some(p) = &self.per_layer_embedding {
            nonzero("per_layer_embedding.width", p.width)?;
            if let Some(v) = p.vocab {
                nonzero("per_layer_embedding.vocab", v)?;
            }
        }
        if kinds.contains(&LayerKind::Ssm) {
            let Some(s) = &self.ssm else {
                return Err(SpecError::invalid("ssm", "none", "an [ssm] table is required when a layer is \"ssm\""));
            };
            nonzero("ssm.d_state", s.d_state)?;
            nonzero("ssm.d_conv", s.d_conv)?;
            nonzero("ssm.d_inner", s.d_inner)?;
            nonzero("ssm.n_groups", s.n_groups)?;
            if let Some(r) = s.dt_rank {
                nonzero("ssm.dt_rank", r)?;
            }
            if s.kind == SsmKind::Mamba2 {
                let nh = s.n_heads.unwrap_or(0);
                nonzero("ssm.n_heads", nh)?;
                if s.d_inner % nh != 0 {
                    return Err(SpecError::invalid(
                        "ssm.n_heads",
                        nh,
                        format!("d_inner = {} must be a multiple of n_heads", s.d_inner),
                    ));
                }
            }
        }
        if kinds.contains(&LayerKind::Linear) {
            let Some(l) = &self.linear else {
                return Err(SpecError::invalid(
                    "linear",
                    "none",
                    "a [linear] table is required when a layer is \"linear\"",
                ));
            };
            nonzero("linear.n_heads", l.n_heads)?;
            nonzero("linear.key_dim", l.key_dim)?;
            nonzero("linear.value_dim", l.value_dim)?;
        }
        if let Some(m) = &self.moe {
            nonzero("moe.n_experts", m.n_experts as u64)?;
            nonzero("moe.top_k", m.top_k as u64)?;
            nonzero("moe.expert_ffn", m.expert_ffn)?;
            if m.top_k > m.n_experts {
                return Err(SpecError::invalid(
                    "moe.top_k",
                    m.top_k,
                    format!("cannot exceed moe.n_experts = {}", m.n_experts),
                ));
            }
            if m.leading_dense_layers > self.n_layers {
                return Err(SpecError::invalid(
                    "moe.leading_dense_layers",
                    m.leading_dense_layers,
                    format!("cannot exceed n_layers = {}", self.n_layers),
                ));
            }
            if m.leading_dense_layers > 0 && self.ffn == 0 {
                return Err(SpecError::invalid("ffn", 0, "dense leading layers need a dense ffn size"));
            }
            if let Some(0) = m.shared_ffn {
                return Err(SpecError::invalid("moe.shared_ffn", 0, "must be > 0"));
            }
        }
        if let Some(m) = &self.mla {
            nonzero("mla.kv_lora_rank", m.kv_lora_rank)?;
            nonzero("mla.qk_nope_head_dim", m.qk_nope_head_dim)?;
            nonzero("mla.v_head_dim", m.v_head_dim)?;
        }
        self.validate_params()
    }

    /// Every dimension within its plausibility bound ([`crate::bounds`]), so that no tensor
    /// shape below can overflow.
    fn validate_bounds(&self) -> Result<()> {
        use crate::bounds::{self, MAX_EXPERTS, MAX_LAYERS, MAX_VOCAB, at_most};
        at_most("n_layers", self.n_layers, MAX_LAYERS, "layers")?;
        at_most("vocab", self.vocab, MAX_VOCAB, "2^24 vocabulary entries")?;
        if let Some(v) = self.per_layer_embedding.as_ref().and_then(|p| p.vocab) {
            at_most("per_layer_embedding.vocab", v, MAX_VOCAB, "2^24 vocabulary entries")?;
        }
        let mut dims: Vec<(&str, u64)> = vec![
            ("hidden", self.hidden),
            ("n_heads", self.n_heads),
            ("n_kv_heads", self.n_kv_heads),
            ("head_dim", self.head_dim.unwrap_or(0)),
            ("ffn", self.ffn),
            ("ffn_per_layer (largest)", self.ffn_per_layer.iter().flatten().copied().max().unwrap_or(0)),
            ("n_heads_per_layer (largest)", self.n_heads_per_layer.iter().flatten().copied().max().unwrap_or(0)),
            ("n_kv_heads_per_layer (largest)", self.n_kv_heads_per_layer.iter().flatten().copied().max().unwrap_or(0)),
            ("head_dim_per_layer (largest)", self.head_dim_per_layer.iter().flatten().copied().max().unwrap_or(0)),
            (
                "n_heads × head_dim of a layer (largest)",
                (0..self.n_layers).map(|i| self.n_heads_at(i).saturating_mul(self.head_dim_at(i))).max().unwrap_or(0),
            ),
            ("short_conv.l_cache", self.short_conv.as_ref().map_or(0, |c| c.l_cache)),
            ("per_layer_embedding.width", self.per_layer_embedding.as_ref().map_or(0, |p| p.width)),
            (
                "n_layers × per_layer_embedding.width",
                self.per_layer_embedding.as_ref().map_or(0, |p| p.width.saturating_mul(self.n_layers as u64)),
            ),
            // The widest projection: all query heads together.
            ("n_heads × head_dim", self.n_heads.saturating_mul(self.head_dim())),
        ];
        if let Some(w) = self.sliding_window {
            bounds::tokens("sliding_window", w)?;
        }
        if let Some(c) = self.max_context {
            nonzero("max_context", c)?;
            bounds::tokens("max_context", c)?;
        }
        if let Some(m) = &self.moe {
            at_most("moe.n_experts", m.n_experts, MAX_EXPERTS, "routed experts per layer")?;
            dims.push(("moe.expert_ffn", m.expert_ffn));
            dims.push(("moe.shared_ffn", m.shared_ffn.unwrap_or(0)));
            dims.push((
                "moe.n_shared × shared_ffn",
                (m.n_shared as u64).saturating_mul(m.shared_ffn.unwrap_or(m.expert_ffn)),
            ));
        }
        if let Some(m) = &self.mla {
            dims.extend([
                ("mla.kv_lora_rank", m.kv_lora_rank),
                ("mla.q_lora_rank", m.q_lora_rank),
                ("mla.qk_nope_head_dim", m.qk_nope_head_dim),
                ("mla.qk_rope_head_dim", m.qk_rope_head_dim),
                ("mla.v_head_dim", m.v_head_dim),
                (
                    "n_heads × (mla.qk_nope_head_dim + mla.v_head_dim)",
                    self.n_heads.saturating_mul(m.qk_nope_head_dim.saturating_add(m.v_head_dim)),
                ),
            ]);
        }
        if let Some(s) = &self.ssm {
            dims.extend([
                ("ssm.d_state", s.d_state),
                ("ssm.d_conv", s.d_conv),
                ("ssm.d_inner", s.d_inner),
                ("ssm.dt_rank", s.dt_rank.unwrap_or(0)),
                ("ssm.n_groups", s.n_groups),
                ("ssm.n_heads", s.n_heads.unwrap_or(0)),
                ("ssm.n_groups × d_state", s.n_groups.saturating_mul(s.d_state)),
            ]);
        }
        if let Some(l) = &self.linear {
            dims.extend([
                ("linear.n_heads", l.n_heads),
                ("linear.key_dim", l.key_dim),
                ("linear.value_dim", l.value_dim),
                ("linear.n_heads × key_dim", l.n_heads.saturating_mul(l.key_dim)),
                ("linear.n_heads × value_dim", l.n_heads.saturating_mul(l.value_dim)),
            ]);
        }
        dims.into_iter().try_for_each(|(field, v)| bounds::dim(field, v))
    }

    /// The parameter count, summed exactly in `u128`, within [`crate::bounds::MAX_PARAMS`].
    fn validate_params(&self) -> Result<()> {
        let total: u128 = self.tensors().iter().map(|t| t.elements() as u128).sum();
        if total > crate::bounds::MAX_PARAMS {
            return Err(SpecError::invalid(
                "n_layers",
                self.n_layers,
                format!("the model would hold {total} parameters, above the plausible bound 2^50"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trained_bits_defaults_to_none_and_is_checked() {
        let m = llama3_8b();
        assert_eq!(m.trained_bits, None);
        let qat = ModelSpec { trained_bits: Some(1.58), ..m.clone() };
        qat.validate().unwrap();
        let bad = ModelSpec { trained_bits: Some(0.5), ..m };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("trained_bits") && e.contains("0.5"), "{e}");
    }

    pub(crate) fn llama3_8b() -> ModelSpec {
        toml::from_str(
            r#"
            name = "llama-3-8b"
            n_layers = 32
            hidden = 4096
            n_heads = 32
            n_kv_heads = 8
            head_dim = 128
            ffn = 14336
            vocab = 128256
            "#,
        )
        .unwrap()
    }

    #[test]
    fn llama3_8b_has_8_030_261_248_parameters() {
        // 2 × 128256 × 4096 embeddings + 32 × (2 × 4096² + 2 × 1024 × 4096 + 3 × 4096 × 14336
        // + 2 × 4096 norms) + 4096 output norm.
        let p = llama3_8b().params();
        assert_eq!(p.total, 8_030_261_248);
        assert_eq!(p.embedding, 525_336_576);
        assert_eq!(p.active_per_token, p.total - p.embedding + 4096);
    }

    #[test]
    fn moe_active_parameters_count_top_k_experts() {
        let mut m = llama3_8b();
        m.moe = Some(MoeSpec {
            n_experts: 8,
            top_k: 2,
            n_shared: 0,
            expert_ffn: 14336,
            shared_ffn: None,
            leading_dense_layers: 0,
        });
        let p = m.params();
        let expert = 3 * 4096 * 14336u64;
        assert_eq!(p.ffn_experts, 32 * 8 * expert);
        assert_eq!(p.router, 32 * 8 * 4096);
        let dense = llama3_8b().params();
        assert_eq!(p.active_per_token, dense.active_per_token + 32 * expert + p.router);
    }

    #[test]
    fn kv_sharing_halves_the_kv_layers() {
        let mut m = llama3_8b();
        assert_eq!(m.kv_cache_layers().len(), 32);
        m.kv_share_group = Some(2);
        assert_eq!(m.kv_cache_layers().len(), 16);
    }

    #[test]
    fn impossible_models_name_the_field() {
        type Mutation = fn(&mut ModelSpec);
        let cases: Vec<(Mutation, &str)> = vec![
            (|m| m.n_kv_heads = 7, "n_kv_heads"),
            (|m| m.n_layers = 0, "n_layers"),
            (|m| m.layer_pattern = vec![LayerKind::Sliding], "sliding_window"),
            (
                |m| {
                    m.layer_pattern = vec![LayerKind::Sliding];
                    m.sliding_window = Some(0)
                },
                "sliding_window",
            ),
            (|m| m.layer_pattern = vec![LayerKind::Ssm], "ssm"),
            (|m| m.layer_kinds = Some(vec![LayerKind::Full; 3]), "layer_kinds"),
        ];
        for (mutate, field) in cases {
            let mut m = llama3_8b();
            mutate(&mut m);
            let e = m.validate().unwrap_err().to_string();
            assert!(e.contains(&format!("`{field}`")), "{e}");
        }
    }
}
