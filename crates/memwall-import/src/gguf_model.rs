//! A GGUF header as a [`ModelSpec`]: `general.architecture` and its keys give the shape the
//! estimator and simulator reason about (layers, widths, heads, KV layout, sliding windows,
//! experts, SSM and short-convolution sizes), and every tensor of the file becomes a
//! [`StoredTensor`] with its real type and shape, so the model's weight bytes are the file's.
//!
//! Architectures mapped: llama, mistral, qwen2, qwen2moe, qwen3, qwen3moe, gemma, gemma2,
//! gemma3, gemma3n, phi3, mamba, mamba2, deepseek2, lfm2, granite, granitehybrid, and any other
//! transformer whose keys follow llama.cpp's `{arch}.…` names (the generic fallback, which says
//! so). Metadata the mapping does not use is listed in [`Imported::unmapped`].

use std::sync::Arc;

use memwall_spec::{
    LayerKind, MlaSpec, ModelSpec, MoeSpec, PerLayerEmbeddingSpec, ShortConvSpec, SsmKind, SsmSpec, StoredTensor,
    Tensor, TensorClass,
};

use crate::ImportError;
use crate::checked::{Bound, Fields};
use crate::gguf::{GgufHeader, Value};
use crate::gguf_shapes::{Claim, Claims, Width, cross_check};

/// Architectures with a mapping of their own (others get the generic transformer mapping).
pub const ARCHITECTURES: &[&str] = &[
    "llama",
    "mistral",
    "qwen2",
    "qwen2moe",
    "qwen3",
    "qwen3moe",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3n",
    "phi3",
    "mamba",
    "mamba2",
    "deepseek2",
    "lfm2",
    "granite",
    "granitehybrid",
];

/// A model read from a file.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The spec (with the file's tensors when read from GGUF).
    pub model: ModelSpec,
    /// Metadata keys (GGUF) or config fields (config.json) that were not used, with their
    /// values, so nothing is dropped silently.
    pub unmapped: Vec<(String, String)>,
    /// How the mapping decided what the file does not state.
    pub notes: Vec<String>,
    /// llama.cpp file type of a GGUF (`general.file_type`), by name.
    pub file_type: Option<String>,
    /// Σ tensor bytes of a GGUF file.
    pub tensor_bytes: Option<u64>,
    /// The weight mix a config.json's `quantization_config` states (FP8, MXFP4), for a
    /// design that names no other.
    pub weights: Option<memwall_spec::WeightQuant>,
}

/// Metadata prefixes that describe the file, the tokenizer or the numerics (rotary bases,
/// norm epsilons, logit caps), none of which changes memory or speed.
const NO_EFFECT: &[&str] = &["general.", "tokenizer.", "quantize.", "split."];
const NO_EFFECT_SUFFIXES: &[&str] = &[
    ".rope.freq_base",
    ".rope.freq_base_swa",
    ".rope.scaling.type",
    ".rope.scaling.factor",
    ".rope.scaling.original_context_length",
    ".rope.scaling.finetuned",
    ".rope.scaling.yarn_log_multiplier",
    ".rope.scaling.attn_factor",
    ".rope.dimension_sections",
    ".attention.layer_norm_rms_epsilon",
    ".attention.layer_norm_epsilon",
    ".attention.clamp_kqv",
    ".attn_logit_softcapping",
    ".final_logit_softcapping",
    ".attention.scale",
    ".embedding_scale",
    ".residual_scale",
    ".logit_scale",
    ".expert_weights_scale",
    ".expert_weights_norm",
    ".expert_gating_func",
    ".ssm.dt_b_c_rms",
    ".pooling_type",
    ".use_parallel_residual",
];

struct Keys<'a> {
    h: &'a GgufHeader,
    arch: String,
    used: std::cell::RefCell<std::collections::HashSet<String>>,
}

impl Fields for Keys<'_> {
    fn name(&self, k: &str) -> String {
        self.full(k)
    }

    fn refuse(&self, k: &str, what: String) -> ImportError {
        self.err(k, what)
    }
}

impl Keys<'_> {
    fn full(&self, k: &str) -> String {
        format!("{}.{k}", self.arch)
    }

    fn raw(&self, k: &str) -> Option<&Value> {
        let key = self.full(k);
        let v = self.h.get(&key);
        if v.is_some() {
            self.used.borrow_mut().insert(key);
        }
        v
    }

    fn err(&self, k: &str, what: String) -> ImportError {
        ImportError::Key { origin: self.h.origin.clone(), key: self.full(k), what }
    }

    /// An integer key, or `None` when absent.
    fn u64(&self, k: &str) -> Result<Option<u64>, ImportError> {
        match self.raw(k) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.err(k, format!("is {} {v:?}, expected a non-negative integer", v.type_name()))),
        }
    }

    fn required(&self, k: &str) -> Result<u64, ImportError> {
        self.u64(k)?.ok_or_else(|| self.err(k, "is missing (the architecture needs it)".into()))
    }

    /// An integer or a per-layer array of integers (`n` entries).
    fn per_layer(&self, k: &str, n: u32) -> Result<Option<Vec<u64>>, ImportError> {
        let Some(v) = self.raw(k) else { return Ok(None) };
        if let Some(x) = v.as_u64() {
            return Ok(Some(vec![x; n as usize]));
        }
        let arr = v
            .as_array()
            .ok_or_else(|| self.err(k, format!("is {}, expected an integer or an array", v.type_name())))?;
        if arr.len() != n as usize {
            return Err(self.err(k, format!("has {} entries for {n} layers", arr.len())));
        }
        arr.iter()
            .map(|x| x.as_u64().ok_or_else(|| self.err(k, format!("holds {x:?}, expected non-negative integers"))))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

/// The class, layer and shape memwall gives a tensor of the file.
fn classify(name: &str, dims: &[u64]) -> Tensor {
    let (layer, rest) = match name.strip_prefix("blk.") {
        Some(r) => match r.split_once('.') {
            Some((i, rest)) => (i.parse::<u32>().ok(), rest),
            None => (None, r),
        },
        None => (None, name),
    };
    let (stem, suffix) = match rest.rsplit_once('.') {
        Some((s, x)) if x == "weight" || x == "bias" => (s, x),
        _ => (rest, ""),
    };
    let class = match (stem, suffix) {
        ("token_embd", _) if layer.is_none() => TensorClass::TokenEmbd,
        ("per_layer_token_embd", _) => TensorClass::PerLayerTokenEmbd,
        ("output", "weight") if layer.is_none() => TensorClass::Output,
        ("output_norm", "weight") if layer.is_none() => TensorClass::OutputNorm,
        ("shortconv.conv", _) => TensorClass::SsmConv1d,
        (s, "bias") => TensorClass::parse(&format!("{s}_bias")).unwrap_or(TensorClass::Other),
        (s, _) => match TensorClass::parse(s) {
            // Global classes only outside blocks, block classes only inside.
            Some(TensorClass::TokenEmbd | TensorClass::Output | TensorClass::OutputNorm) | None => TensorClass::Other,
            Some(c) if layer.is_some() => c,
            Some(_) => TensorClass::Other,
        },
    };
    Tensor {
        class,
        layer,
        row_len: dims[0],
        rows: dims.get(1).copied().unwrap_or(1),
        experts: dims.iter().skip(2).product::<u64>().max(1),
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) if s.len() > 60 => format!("{:?}…", &s[..s.char_indices().nth(57).map_or(s.len(), |c| c.0)]),
        Value::String(s) => format!("{s:?}"),
        Value::Array { elem, len, values } => match values {
            Some(v) if v.len() <= 8 => format!("{:?}", v),
            _ => format!("array of {len} {}", crate::gguf::type_name(*elem)),
        },
        other => format!("{other:?}"),
    }
}

/// The spec of the model in `h`, named `name`.
pub fn model_from_gguf(h: &GgufHeader, name: &str) -> Result<Imported, ImportError> {
    let arch = match h.get("general.architecture") {
        Some(Value::String(a)) => a.clone(),
        Some(v) => {
            return Err(ImportError::Key {
                origin: h.origin.clone(),
                key: "general.architecture".into(),
                what: format!("is {}, expected a string", v.type_name()),
            });
        }
        None => {
            return Err(ImportError::Key {
                origin: h.origin.clone(),
                key: "general.architecture".into(),
                what: "is missing".into(),
            });
        }
    };
    let k = Keys { h, arch: arch.clone(), used: Default::default() };
    let mut notes = Vec::new();
    if !ARCHITECTURES.contains(&arch.as_str()) {
        notes.push(format!("architecture `{arch}` has no mapping of its own: read as a generic transformer"));
    }
    let n_layers = k.layer_count("block_count", k.required("block_count")?)?;
    let hidden = k.required("embedding_length")?;

    // Tensors: class, layer, shape, type; the layer index must be in range.
    let mut stored = Vec::with_capacity(h.tensors.len());
    for t in &h.tensors {
        let tensor = classify(&t.name, &t.dims);
        if let Some(l) = tensor.layer
            && l >= n_layers
        {
            return Err(ImportError::Gguf {
                origin: h.origin.clone(),
                offset: t.at,
                what: format!("tensor `{}` is in block {l}, but {arch}.block_count = {n_layers}", t.name),
            });
        }
        stored.push(StoredTensor { name: t.name.clone(), tensor, ggml: t.ggml });
    }
    let in_layer =
        |l: u32, pred: &dyn Fn(&StoredTensor) -> bool| stored.iter().any(|t| t.tensor.layer == Some(l) && pred(t));
    let named = |stem: &'static str| move |t: &StoredTensor| t.name.contains(&format!(".{stem}."));
    let first = |class: TensorClass| stored.iter().find(|t| t.tensor.class == class);

    // Heads: scalars or per-layer arrays (zeros mark layers without attention, as LFM2 writes).
    let heads_key = k.per_layer("attention.head_count", n_layers)?;
    let kv_key = k.per_layer("attention.head_count_kv", n_layers)?;
    let heads = heads_key.clone().unwrap_or_else(|| vec![0; n_layers as usize]);
    let kv_heads = kv_key.clone().unwrap_or_else(|| heads.clone());
    let attn_layers: Vec<u32> = (0..n_layers)
        .filter(|&l| {
            in_layer(l, &|t| {
                matches!(t.tensor.class, TensorClass::AttnQ | TensorClass::AttnK | TensorClass::AttnKvAMqa)
                    || t.name.contains(".attn_qkv.")
            })
        })
        .collect();
    // One value when the attention layers agree, else per-layer lists (zeros elsewhere).
    let pick = |v: &[u64]| -> (u64, Option<Vec<u64>>) {
        let vals: Vec<u64> = attn_layers.iter().map(|&l| v[l as usize]).collect();
        let max = vals.iter().copied().max().unwrap_or(0);
        (max, vals.iter().any(|x| *x != max).then(|| v.to_vec()))
    };
    let (n_heads, n_heads_per_layer) = pick(&heads);
    let (n_kv_heads, n_kv_heads_per_layer) = pick(&kv_heads);
    let head_dim = k.u64("attention.key_length")?;
    if let (Some(kl), Some(vl)) = (k.u64("attention.key_length")?, k.u64("attention.value_length")?)
        && kl != vl
        && arch != "deepseek2"
    {
        notes.push(format!("key_length {kl} and value_length {vl} differ; the KV cache is counted with {kl} for both"));
    }

    // Vocabulary: the key, else the embedding's rows.
    let vocab = match k.u64("vocab_size")? {
        Some(v) => v,
        None => first(TensorClass::TokenEmbd).map(|t| t.tensor.rows).unwrap_or(0),
    };
    let tied = first(TensorClass::Output).is_none();
    let gated = stored.iter().any(|t| matches!(t.tensor.class, TensorClass::FfnGate | TensorClass::FfnGateExps))
        || arch == "phi3";
    let attn_bias = stored.iter().any(|t| t.tensor.class == TensorClass::AttnQBias);

    // FFN widths: the key (scalar or per layer), else the tensors.
    let ffn_key = k.per_layer("feed_forward_length", n_layers)?;
    let (ffn, ffn_per_layer) = match ffn_key.clone() {
        Some(v) if v.iter().all(|x| *x == v[0]) => (v[0], None),
        Some(v) => (v.iter().copied().max().unwrap_or(0), Some(v)),
        None => (first(TensorClass::FfnDown).map_or(0, |t| t.tensor.row_len), None),
    };

    // Layer kinds: from what each block holds, then full vs sliding from the pattern.
    let window = k.u64("attention.sliding_window")?.filter(|w| *w > 0);
    let swa_pattern = k.raw("attention.sliding_window_pattern");
    let sliding_at = |l: u32| -> bool {
        let Some(_) = window else { return false };
        match swa_pattern {
            Some(v) => match v.as_array() {
                Some(a) => matches!(a.get(l as usize), Some(Value::Bool(true))),
                None => v.as_u64().is_some_and(|p| p > 1 && !(u64::from(l) + 1).is_multiple_of(p)),
            },
            None => match arch.as_str() {
                "gemma2" => l.is_multiple_of(2),
                "gemma3" => !(l + 1).is_multiple_of(6),
                "cohere2" => !(l + 1).is_multiple_of(4),
                // llama.cpp keeps a full cache for the rest (phi3's window is not applied).
                _ => false,
            },
        }
    };
    let layer_kinds: Vec<LayerKind> = (0..n_layers)
        .map(|l| {
            if attn_layers.contains(&l) {
                if sliding_at(l) { LayerKind::Sliding } else { LayerKind::Full }
            } else if in_layer(l, &named("shortconv")) {
                LayerKind::ShortConv
            } else if in_layer(l, &|t| t.tensor.class == TensorClass::SsmIn) {
                LayerKind::Ssm
            } else {
                // A block with neither: counted as attention-free (its tensors still count).
                LayerKind::Ssm
            }
        })
        .collect();
    let has = |kind: LayerKind| layer_kinds.contains(&kind);
    if window.is_some() && !has(LayerKind::Sliding) && attn_layers.len() as u32 == n_layers {
        notes.push(format!(
            "{arch}.attention.sliding_window = {} but llama.cpp keeps a full cache for {arch}: every layer is full",
            window.unwrap_or(0)
        ));
    }

    // Experts.
    let moe = match k.u64("expert_count")?.filter(|e| *e > 0) {
        None => None,
        Some(e) => {
            let top_k = k.required("expert_used_count")?;
            let expert_ffn = match k.u64("expert_feed_forward_length")? {
                Some(f) => f,
                None => first(TensorClass::FfnUpExps).map_or(0, |t| t.tensor.rows),
            };
            let n_shared = match k.u64("expert_shared_count")? {
                Some(n) => k.narrow("expert_shared_count", n, &Bound::experts())?,
                None => u32::from(stored.iter().any(|t| t.tensor.class == TensorClass::FfnUpShexp)),
            };
            let shared_ffn = match k.u64("expert_shared_feed_forward_length")? {
                Some(f) => Some(f),
                None => first(TensorClass::FfnUpShexp).map(|t| t.tensor.rows / u64::from(n_shared.max(1))),
            };
            let leading = k.u64("leading_dense_block_count")?.unwrap_or(0);
            Some(MoeSpec {
                n_experts: k.narrow("expert_count", e, &Bound::experts())?,
                top_k: k.narrow("expert_used_count", top_k, &Bound::experts())?,
                n_shared,
                expert_ffn,
                shared_ffn,
                leading_dense_layers: k.narrow("leading_dense_block_count", leading, &Bound::of_layers(n_layers))?,
            })
        }
    };

    // Multi-head latent attention (DeepSeek-V2/V3).
    let mla = match first(TensorClass::AttnKvAMqa) {
        None => None,
        Some(_) => {
            let kv_lora_rank = k.required("attention.kv_lora_rank")?;
            let rope = k.required("rope.dimension_count")?;
            let key_len = k.u64("attention.key_length_mla")?.or(k.u64("attention.key_length")?).unwrap_or(0);
            let v_len = k.u64("attention.value_length_mla")?.or(k.u64("attention.value_length")?).unwrap_or(0);
            Some(MlaSpec {
                kv_lora_rank,
                q_lora_rank: k.u64("attention.q_lora_rank")?.unwrap_or(0),
                qk_nope_head_dim: key_len.saturating_sub(rope),
                qk_rope_head_dim: rope,
                v_head_dim: v_len,
            })
        }
    };
    // The rotary width matters only to MLA's cache (above).
    let _ = k.raw("rope.dimension_count");

    // State-space layers.
    let ssm = if has(LayerKind::Ssm) && stored.iter().any(|t| t.tensor.class == TensorClass::SsmIn) {
        let d_inner = k.required("ssm.inner_size")?;
        let groups = k.u64("ssm.group_count")?;
        let mamba2 = arch == "mamba2" || groups.is_some_and(|g| g > 0) && arch != "mamba";
        Some(SsmSpec {
            kind: if mamba2 { SsmKind::Mamba2 } else { SsmKind::Mamba1 },
            d_state: k.required("ssm.state_size")?,
            d_conv: k.required("ssm.conv_kernel")?,
            d_inner,
            dt_rank: if mamba2 { None } else { k.u64("ssm.time_step_rank")? },
            n_groups: groups.unwrap_or(1).max(1),
            n_heads: if mamba2 { k.u64("ssm.time_step_rank")? } else { None },
        })
    } else {
        None
    };
    let short_conv = if has(LayerKind::ShortConv) {
        Some(ShortConvSpec { l_cache: k.required("shortconv.l_cache")? })
    } else {
        None
    };

    // Gemma 3n: per-layer embeddings and the layers that read an earlier cache.
    let per_layer_embedding = match (k.u64("embedding_length_per_layer_input")?, first(TensorClass::PerLayerTokenEmbd))
    {
        (Some(width), Some(t)) => Some(PerLayerEmbeddingSpec { width, vocab: Some(t.tensor.rows), on_flash: false }),
        _ => None,
    };
    let kv_shared_layers = match k.u64("attention.shared_kv_layers")? {
        Some(n) if n > 0 => Some(k.narrow("attention.shared_kv_layers", n, &Bound::sharing_layers(n_layers))?),
        _ => None,
    };

    let max_context = k.u64("context_length")?;
    let file_type = h.get("general.file_type").and_then(Value::as_u64).map(|t| file_type_name(t).to_string());
    let mut sources = std::collections::BTreeMap::new();
    sources.insert("*".to_string(), format!("GGUF header of {} ({} tensors)", h.origin, h.tensors.len()));
    let model = ModelSpec {
        name: name.to_string(),
        source: h.origin.clone(),
        n_layers,
        hidden,
        n_heads,
        n_kv_heads,
        head_dim: head_dim.filter(|d| *d > 0),
        ffn,
        ffn_gated: gated,
        vocab,
        tied_embeddings: tied,
        attn_bias,
        max_context,
        layer_pattern: vec![LayerKind::Full],
        layer_kinds: Some(layer_kinds.clone()),
        sliding_window: window.filter(|_| has(LayerKind::Sliding)),
        kv_share_group: None,
        moe,
        mla,
        ssm,
        linear: None,
        short_conv,
        ffn_per_layer,
        n_heads_per_layer,
        n_kv_heads_per_layer,
        head_dim_per_layer: None,
        kv_shared_layers,
        per_layer_embedding,
        trained_bits: None,
        sources,
        from_file: None,
        stored: Some(Arc::new(stored)),
    };
    let heads = Heads { hidden, n_heads, heads: heads_key, kv_heads: kv_key };
    let claims = shape_claims(&k, heads, ffn_key, model.mla.as_ref())?;
    let checked = cross_check(&claims, &h.tensors, model.stored.as_deref().map_or(&[], |s| s.as_slice()));
    match checked {
        // A mapped architecture's layout is known: a contradiction is an error.
        Err(e) if ARCHITECTURES.contains(&arch.as_str()) => return Err(e),
        // Another's is assumed to be llama's: a contradiction may be a layout memwall does not
        // know, so it is said (with what disagrees) rather than refused.
        Err(e) => notes.push(format!(
            "WARNING: with llama's tensor layout assumed for `{arch}`, {e}; the KV cache and widths follow the \
             metadata and may be wrong"
        )),
        Ok(()) => {}
    }
    model.validate().map_err(|source| {
        let present = |suffix: &str| {
            let key = format!("{arch}.{suffix}");
            h.metadata.iter().any(|(k, _)| *k == key).then_some(key)
        };
        let key = crate::error::key_of(source.field(), true, &present);
        ImportError::Spec { origin: h.origin.clone(), source: Box::new(source), key }
    })?;

    let used = k.used.into_inner();
    let unmapped = h
        .metadata
        .iter()
        .filter(|(key, _)| !used.contains(key.as_str()))
        .filter(|(key, _)| !NO_EFFECT.iter().any(|p| key.starts_with(p)))
        .filter(|(key, _)| !NO_EFFECT_SUFFIXES.iter().any(|s| key.ends_with(s)))
        .map(|(key, v)| (key.clone(), value_text(v)))
        .collect();
    let others: usize =
        model.stored.as_ref().map_or(0, |s| s.iter().filter(|t| t.tensor.class == TensorClass::Other).count());
    if others > 0 {
        notes.push(format!(
            "{others} tensors have no class of memwall's (norms, fused or model-specific projections): their bytes \
             count, and they are read once per token"
        ));
    }
    Ok(Imported { model, unmapped, notes, file_type, tensor_bytes: Some(h.tensor_bytes()), weights: None })
}

/// The attention keys as read: width, the largest query head count, and the per-layer counts
/// of the keys given.
struct Heads {
    hidden: u64,
    n_heads: u64,
    heads: Option<Vec<u64>>,
    kv_heads: Option<Vec<u64>>,
}

/// What the metadata says the tensors' shapes are ([`cross_check`]): head counts and widths,
/// FFN and expert widths, expert count, latent ranks and vocabulary, each with its key.
fn shape_claims(k: &Keys, a: Heads, ffn: Option<Vec<u64>>, mla: Option<&MlaSpec>) -> Result<Claims, ImportError> {
    let key_width = match k.u64("attention.key_length")?.filter(|w| *w > 0) {
        Some(w) => Some(Width { value: w, how: format!("`{}`", k.full("attention.key_length")) }),
        None => a.hidden.checked_div(a.n_heads).map(|w| Width {
            value: w,
            how: format!(
                "`{}` / `{}` = {} / {}",
                k.full("embedding_length"),
                k.full("attention.head_count"),
                a.hidden,
                a.n_heads
            ),
        }),
    };
    let value_width = match k.u64("attention.value_length")?.filter(|w| *w > 0) {
        Some(w) => Some(Width { value: w, how: format!("`{}`", k.full("attention.value_length")) }),
        None => key_width.clone(),
    };
    let heads = a.heads.map(|v| (k.full("attention.head_count"), v));
    // Without head_count_kv, the KV heads are the query heads (and that key is to blame).
    let kv_heads = match a.kv_heads {
        Some(v) => Some((k.full("attention.head_count_kv"), v)),
        None => heads.clone(),
    };
    let scalar = |key: &str| -> Result<Option<Claim>, ImportError> {
        Ok(k.u64(key)?.filter(|v| *v > 0).map(|v| Claim::new(k.full(key), v)))
    };
    let tokens = match k.h.get("tokenizer.ggml.tokens") {
        Some(Value::Array { len, .. }) => Some(Claim::new("tokenizer.ggml.tokens", *len)),
        _ => None,
    };
    Ok(Claims {
        origin: k.h.origin.clone(),
        heads,
        kv_heads,
        key_width,
        value_width,
        ffn: ffn.map(|v| (k.full("feed_forward_length"), v)),
        experts: scalar("expert_count")?,
        expert_ffn: scalar("expert_feed_forward_length")?,
        mla: mla.map(|m| {
            (
                Claim::new(k.full("attention.kv_lora_rank"), m.kv_lora_rank),
                Claim::new(k.full("rope.dimension_count"), m.qk_rope_head_dim),
            )
        }),
        vocab: scalar("vocab_size")?.or(tokens),
    })
}

/// llama.cpp's `llama_ftype` names (`general.file_type`).
fn file_type_name(t: u64) -> &'static str {
    match t {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        _ => "unknown",
    }
}
