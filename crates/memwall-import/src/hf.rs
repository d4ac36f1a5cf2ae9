//! A Hugging Face `config.json` as a [`ModelSpec`], for `model_type` llama, mistral, qwen2,
//! qwen2_moe, qwen3, qwen3_moe, mixtral, gemma, gemma2, gemma3 / gemma3_text, gemma3n, phi3,
//! mamba / falcon_mamba, deepseek_v2 / deepseek_v3, granitemoehybrid, lfm2, smollm3 and granite.
//! A multimodal config's `text_config` is read (its vision and audio parts are listed as
//! unmapped). Every field the mapping does not use is listed in [`Imported::unmapped`] with its
//! JSON path, except those known to change neither memory nor speed (ids, dtypes, rotary and
//! norm constants, initialisation), which are named in [`NO_EFFECT`].

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};

use memwall_spec::{LayerKind, MlaSpec, ModelSpec, MoeSpec, PerLayerEmbeddingSpec, ShortConvSpec, SsmKind, SsmSpec};
use serde_json::Value;

use crate::ImportError;
use crate::checked::{Bound, Fields};
use crate::gguf_model::Imported;

/// `model_type`s with a mapping.
pub const MODEL_TYPES: &[&str] = &[
    "llama",
    "mistral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "mixtral",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "gemma3n",
    "gemma3n_text",
    "phi3",
    "mamba",
    "falcon_mamba",
    "deepseek_v2",
    "deepseek_v3",
    "granitemoehybrid",
    "lfm2",
    "smollm3",
    "granite",
];

/// Fields that change neither memory nor speed.
pub const NO_EFFECT: &[&str] = &[
    "architectures",
    "model_type",
    "transformers_version",
    "torch_dtype",
    "dtype",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "unk_token_id",
    "hidden_act",
    "hidden_activation",
    "activation_function",
    "initializer_range",
    "rms_norm_eps",
    "layer_norm_eps",
    "layer_norm_epsilon",
    "norm_eps",
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "rope_local_base_freq",
    "partial_rotary_factor",
    "use_cache",
    "attention_dropout",
    "hidden_dropout",
    "embd_pdrop",
    "resid_pdrop",
    "mlp_bias",
    "pretraining_tp",
    "query_pre_attn_scalar",
    "attn_logit_softcapping",
    "final_logit_softcapping",
    "auto_map",
    "tokenizer_class",
    "original_max_position_embeddings",
    "rope_interleave",
    "router_aux_loss_coef",
    "output_router_logits",
    "norm_topk_prob",
    "router_jitter_noise",
    "scoring_func",
    "topk_method",
    "routed_scaling_factor",
    "n_group",
    "topk_group",
    "aux_loss_alpha",
    "seq_aux",
    "ep_size",
    "num_nextn_predict_layers",
    "max_window_layers",
    "use_mrope",
    "quantization_config",
    "no_rope_layers",
    "no_rope_layer_interval",
    "use_bias",
    "use_conv_bias",
    "residual_in_fp32",
    "rescale_prenorm_residual",
    "time_step_floor",
    "time_step_init_scheme",
    "time_step_max",
    "time_step_min",
    "time_step_scale",
    "mixer_rms_eps",
    "attention_multiplier",
    "embedding_multiplier",
    "logits_scaling",
    "residual_multiplier",
    "normalization_function",
    "position_embedding_type",
    "conv_bias",
    "block_norm_eps",
    "cache_implementation",
    "sliding_window_pattern",
    "tie_embedding",
    "use_pos_enc",
    "init_std",
    "dt_rank_init",
];

/// Defaults of transformers' config classes for fields a published config may omit:
/// `(model_types, field, value)`, from each `configuration_*.py` `__init__`.
const DEFAULTS: &[(&[&str], &str, u64)] = &[
    (&["gemma3", "gemma3_text"], "vocab_size", 262_208),
    (&["gemma3", "gemma3_text"], "hidden_size", 2304),
    (&["gemma3", "gemma3_text"], "intermediate_size", 9216),
    (&["gemma3", "gemma3_text"], "num_hidden_layers", 26),
    (&["gemma3", "gemma3_text"], "num_attention_heads", 8),
    (&["gemma3", "gemma3_text"], "num_key_value_heads", 4),
    (&["gemma3", "gemma3_text"], "head_dim", 256),
    (&["gemma3", "gemma3_text"], "max_position_embeddings", 131_072),
    (&["gemma3", "gemma3_text"], "sliding_window", 4096),
    (&["gemma2"], "vocab_size", 256_000),
    (&["gemma2"], "num_attention_heads", 8),
    (&["gemma2"], "num_key_value_heads", 4),
    (&["gemma2"], "head_dim", 256),
    (&["gemma2"], "sliding_window", 4096),
    (&["gemma2"], "max_position_embeddings", 8192),
];

struct Cfg<'a> {
    mt: String,
    notes: RefCell<Vec<String>>,
    root: &'a Value,
    /// The object the architecture lives in (`text_config` of a multimodal config).
    obj: &'a Value,
    prefix: String,
    used: RefCell<HashSet<String>>,
}

impl Fields for Cfg<'_> {
    fn name(&self, k: &str) -> String {
        self.path(k)
    }

    fn refuse(&self, k: &str, what: String) -> ImportError {
        self.err(k, what)
    }
}

impl Cfg<'_> {
    fn path(&self, k: &str) -> String {
        format!("{}{k}", self.prefix)
    }

    fn err(&self, k: &str, what: impl Into<String>) -> ImportError {
        ImportError::Json { path: self.path(k), what: what.into() }
    }

    fn raw(&self, k: &str) -> Option<&Value> {
        let v = self.obj.get(k).filter(|v| !v.is_null());
        self.used.borrow_mut().insert(k.to_string());
        v
    }

    /// The library default of `k` for this model type, noted when used.
    fn default(&self, k: &str) -> Option<u64> {
        let d = DEFAULTS.iter().find(|(types, key, _)| *key == k && types.contains(&self.mt.as_str())).map(|d| d.2)?;
        self.notes.borrow_mut().push(format!("{} absent: {d}, transformers' default for {}", self.path(k), self.mt));
        Some(d)
    }

    fn u64(&self, k: &str) -> Result<Option<u64>, ImportError> {
        match self.raw(k) {
            None => Ok(self.default(k)),
            Some(v) => match (v.as_u64(), v.as_f64()) {
                (Some(x), _) => Ok(Some(x)),
                // 4096.0 is still a width; 4096.5, 1e300 or negatives are not.
                (None, Some(f)) => self.whole(k, f, &Bound::exact_float()).map(Some),
                (None, None) => Err(self.err(k, format!("is {v}, expected a non-negative integer"))),
            },
        }
    }

    fn required(&self, k: &str) -> Result<u64, ImportError> {
        self.u64(k)?.ok_or_else(|| self.err(k, "is missing (the architecture needs it)"))
    }

    fn bool(&self, k: &str) -> Result<Option<bool>, ImportError> {
        match self.raw(k) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.err(k, format!("is {v}, expected true or false"))),
        }
    }

    fn f64(&self, k: &str) -> Result<Option<f64>, ImportError> {
        match self.raw(k) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|f| f.is_finite())
                .map(Some)
                .ok_or_else(|| self.err(k, format!("is {v}, expected a number"))),
        }
    }

    /// An integer or a list of `n` integers.
    fn per_layer(&self, k: &str, n: u32) -> Result<Option<Vec<u64>>, ImportError> {
        match self.raw(k) {
            None => Ok(None),
            Some(Value::Array(a)) => {
                if a.len() != n as usize {
                    return Err(self.err(k, format!("has {} entries for {n} layers", a.len())));
                }
                a.iter()
                    .enumerate()
                    .map(|(i, v)| {
                        v.as_u64().ok_or_else(|| {
                            self.err(&format!("{k}[{i}]"), format!("is {v}, expected a non-negative integer"))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some)
            }
            Some(_) => self.u64(k).map(|v| v.map(|x| vec![x; n as usize])),
        }
    }

    fn strings(&self, k: &str) -> Result<Option<Vec<String>>, ImportError> {
        match self.raw(k) {
            None => Ok(None),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| self.err(&format!("{k}[{i}]"), format!("is {v}, expected a string")))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(v) => Err(self.err(k, format!("is {v}, expected a list of strings"))),
        }
    }
}

/// The spec of the model whose `config.json` is `text`, named `name`.
pub fn model_from_hf(text: &str, name: &str) -> Result<Imported, ImportError> {
    let root: Value = serde_json::from_str(text)
        .map_err(|e| ImportError::Json { path: "$".into(), what: format!("not JSON: {e}") })?;
    if !root.is_object() {
        return Err(ImportError::Json { path: "$".into(), what: "the config is not a JSON object".into() });
    }
    let top_type = root.get("model_type").and_then(Value::as_str).unwrap_or("").to_string();
    let (obj, prefix) = match root.get("text_config") {
        Some(t) if t.is_object() => (t, "text_config.".to_string()),
        _ => (&root, String::new()),
    };
    let model_type = obj.get("model_type").and_then(Value::as_str).map(str::to_string).unwrap_or(top_type.clone());
    let c = Cfg {
        mt: model_type.clone(),
        notes: RefCell::new(Vec::new()),
        root: &root,
        obj,
        prefix,
        used: RefCell::new(HashSet::new()),
    };
    if model_type.is_empty() {
        return Err(ImportError::Json { path: "model_type".into(), what: "is missing".into() });
    }
    let mut notes = Vec::new();
    if !MODEL_TYPES.contains(&model_type.as_str()) {
        notes.push(format!("model_type `{model_type}` has no mapping of its own: read as a llama-like transformer"));
    }
    let mt = model_type.as_str();
    let is = |names: &[&str]| names.contains(&mt);

    let n_layers = c.layer_count("num_hidden_layers", c.required("num_hidden_layers")?)?;
    let hidden = c.required("hidden_size")?;
    let vocab = c.required("vocab_size")?;
    let mamba = is(&["mamba", "falcon_mamba"]);
    let n_heads = if mamba { c.u64("num_attention_heads")?.unwrap_or(1) } else { c.required("num_attention_heads")? };
    let n_kv_heads = c.u64("num_key_value_heads")?.unwrap_or(n_heads);
    let head_dim = c.u64("head_dim")?;
    let max_context = c.u64("max_position_embeddings")?;
    // Gemma and SmolLM3 tie by default in transformers; the others do not.
    let tie_default = is(&["gemma", "gemma2", "gemma3", "gemma3_text", "gemma3n", "gemma3n_text", "smollm3", "lfm2"]);
    let tied = c.bool("tie_word_embeddings")?.unwrap_or(tie_default);
    if c.obj.get("tie_word_embeddings").is_none() {
        notes.push(format!("tie_word_embeddings absent: {tied}, transformers' default for {mt}"));
    }
    let attn_bias = match c.bool("attention_bias")? {
        Some(b) => b,
        None => is(&["qwen2", "qwen2_moe"]),
    };

    // FFN widths.
    let ffn_list = c.per_layer("intermediate_size", n_layers)?;
    let (mut ffn, mut ffn_per_layer) = match ffn_list {
        Some(v) if v.iter().all(|x| *x == v[0]) => (v[0], None),
        Some(v) => (v.iter().copied().max().unwrap_or(0), Some(v)),
        None => (0, None),
    };

    // Layer kinds.
    let window = c.u64("sliding_window")?.filter(|w| *w > 0);
    let use_window = c.bool("use_sliding_window")?;
    let types = c.strings("layer_types")?;
    if let Some(t) = &types
        && t.len() != n_layers as usize
    {
        return Err(c.err("layer_types", format!("has {} entries for {n_layers} layers", t.len())));
    }
    let mut kinds: Vec<LayerKind> = Vec::with_capacity(n_layers as usize);
    for l in 0..n_layers {
        let kind = if mamba {
            LayerKind::Ssm
        } else if let Some(t) = &types {
            match t[l as usize].as_str() {
                "sliding_attention" | "sliding" | "local" => LayerKind::Sliding,
                "full_attention" | "attention" | "global" | "full" => LayerKind::Full,
                "conv" => LayerKind::ShortConv,
                "mamba" => LayerKind::Ssm,
                other => return Err(c.err(&format!("layer_types[{l}]"), format!("unknown layer type `{other}`"))),
            }
        } else if is(&["lfm2"]) {
            // Set from full_attn_idxs below.
            LayerKind::Full
        } else {
            let sliding = match mt {
                "gemma2" => l % 2 == 0,
                "gemma3" | "gemma3_text" => {
                    let p = c.u64("sliding_window_pattern")?.unwrap_or(6);
                    p > 1 && !(u64::from(l) + 1).is_multiple_of(p)
                }
                // Qwen2/3 apply the window only with use_sliding_window (to the top layers past
                // max_window_layers; off in every published config).
                "qwen2" | "qwen2_moe" | "qwen3" | "qwen3_moe" => use_window == Some(true),
                // Mistral 7B attends over a 4096-token window in every layer.
                "mistral" | "mixtral" => window.is_some(),
                // Phi-3's window: runtimes (llama.cpp) keep a full cache.
                _ => false,
            };
            if sliding { LayerKind::Sliding } else { LayerKind::Full }
        };
        kinds.push(kind);
    }
    // LFM2 names its attention layers by index.
    if is(&["lfm2"]) && types.is_none() {
        let idx = match c.raw("full_attn_idxs") {
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_u64).collect::<Vec<_>>(),
            _ => {
                return Err(
                    c.err("full_attn_idxs", "is missing (LFM2 lists its attention layers there or in layer_types)")
                );
            }
        };
        for (l, k) in kinds.iter_mut().enumerate() {
            *k = if idx.contains(&(l as u64)) { LayerKind::Full } else { LayerKind::ShortConv };
        }
    }
    let has = |k: LayerKind| kinds.contains(&k);
    if window.is_some() && !has(LayerKind::Sliding) && !mamba {
        notes.push(format!(
            "sliding_window = {} is not applied: llama.cpp keeps a full cache for {mt}",
            window.unwrap_or(0)
        ));
    }

    // Mixture of experts.
    // The first of the names in use (all read, so none is listed as unmapped).
    let named = ["num_local_experts", "num_experts", "n_routed_experts"]
        .into_iter()
        .map(|k| Ok((k, c.u64(k)?)))
        .collect::<Result<Vec<_>, ImportError>>()?;
    let experts = named.into_iter().find_map(|(k, e)| e.map(|e| (k, e))).filter(|(_, e)| *e > 0);
    let moe = match experts {
        None => None,
        Some((experts_key, e)) => {
            let top_k = c.required("num_experts_per_tok")?;
            let expert_ffn = match c.u64("moe_intermediate_size")? {
                Some(f) => f,
                None => ffn,
            };
            let (n_shared, shared_ffn) = match (c.u64("n_shared_experts")?, c.u64("shared_expert_intermediate_size")?) {
                (Some(n), _) => (c.narrow("n_shared_experts", n, &Bound::experts())?, Some(expert_ffn)),
                (None, Some(f)) if f > 0 => (1, Some(f)),
                _ => (0, None),
            };
            let leading = c.u64("first_k_dense_replace")?.unwrap_or(0);
            if let Some(step) = c.u64("decoder_sparse_step")?
                && step > 1
            {
                notes.push(format!(
                    "decoder_sparse_step = {step}: memwall counts every layer from the first sparse one as MoE"
                ));
            }
            if let Some(Value::Array(a)) = c.raw("mlp_only_layers")
                && !a.is_empty()
            {
                notes.push(format!("mlp_only_layers = {a:?} are counted as MoE layers"));
            }
            let _ = c.raw("moe_layer_freq");
            Some(MoeSpec {
                n_experts: c.narrow(experts_key, e, &Bound::experts())?,
                top_k: c.narrow("num_experts_per_tok", top_k, &Bound::experts())?,
                n_shared,
                expert_ffn,
                shared_ffn,
                leading_dense_layers: c.narrow("first_k_dense_replace", leading, &Bound::of_layers(n_layers))?,
            })
        }
    };

    // MLA.
    let mla = match c.u64("kv_lora_rank")? {
        Some(r) if r > 0 => Some(MlaSpec {
            kv_lora_rank: r,
            q_lora_rank: c.u64("q_lora_rank")?.unwrap_or(0),
            qk_nope_head_dim: c.required("qk_nope_head_dim")?,
            qk_rope_head_dim: c.required("qk_rope_head_dim")?,
            v_head_dim: c.required("v_head_dim")?,
        }),
        _ => None,
    };
    let head_dim = match &mla {
        Some(m) => Some(c.sum(
            &[("qk_nope_head_dim", m.qk_nope_head_dim), ("qk_rope_head_dim", m.qk_rope_head_dim)],
            &Bound::dim(),
        )?),
        None => head_dim,
    };

    // State-space layers.
    let ssm = if mamba {
        let d_inner = match c.u64("intermediate_size")? {
            Some(d) => d,
            None => c.product(&[("expand", c.required("expand")?), ("hidden_size", hidden)], &Bound::dim())?,
        };
        ffn = 0;
        ffn_per_layer = None;
        Some(SsmSpec {
            kind: SsmKind::Mamba1,
            d_state: c.required("state_size")?,
            d_conv: c.required("conv_kernel")?,
            d_inner,
            dt_rank: c.u64("time_step_rank")?,
            n_groups: 1,
            n_heads: None,
        })
    } else if has(LayerKind::Ssm) {
        let d_state = c.required("mamba_d_state")?;
        let heads = c.required("mamba_n_heads")?;
        let d_head = c.u64("mamba_d_head")?;
        let expand = c.u64("mamba_expand")?;
        let d_inner = match (d_head, expand) {
            (Some(d), _) => c.product(&[("mamba_n_heads", heads), ("mamba_d_head", d)], &Bound::dim())?,
            (None, Some(e)) => c.product(&[("mamba_expand", e), ("hidden_size", hidden)], &Bound::dim())?,
            (None, None) => {
                return Err(c.err("mamba_d_head", "is missing (needed with mamba_n_heads for the inner width)"));
            }
        };
        Some(SsmSpec {
            kind: SsmKind::Mamba2,
            d_state,
            d_conv: c.required("mamba_d_conv")?,
            d_inner,
            dt_rank: None,
            n_groups: c.u64("mamba_n_groups")?.unwrap_or(1),
            n_heads: Some(heads),
        })
    } else {
        None
    };
    if is(&["granitemoehybrid"]) {
        if let Some(f) = c.u64("shared_intermediate_size")? {
            ffn = f;
        }
        let _ = c.raw("mamba_chunk_size");
        let _ = c.raw("mamba_conv_bias");
        let _ = c.raw("mamba_proj_bias");
    }

    // LFM2: short convolutions, and its FFN width adjusted as transformers does.
    let short_conv =
        if has(LayerKind::ShortConv) { Some(ShortConvSpec { l_cache: c.required("conv_L_cache")? }) } else { None };
    if is(&["lfm2"]) {
        ffn = lfm2_ffn(&c, ffn)?;
        let _ = c.raw("intermediate_size");
        let _ = c.raw("conv_dim");
        let _ = c.raw("conv_dim_out");
        let _ = c.raw("block_dim");
        let _ = c.raw("block_mlp_init_scale");
        let _ = c.raw("block_out_init_scale");
        let _ = c.raw("block_use_swiglu");
        let _ = c.raw("num_heads");
        let _ = c.raw("block_norm_eps");
    }

    // Gemma 3n: per-layer embeddings and KV sharing.
    let per_layer_embedding = match c.u64("hidden_size_per_layer_input")? {
        Some(w) if w > 0 => {
            Some(PerLayerEmbeddingSpec { width: w, vocab: c.u64("vocab_size_per_layer_input")?, on_flash: false })
        }
        _ => None,
    };
    let kv_shared_layers = match c.u64("num_kv_shared_layers")? {
        Some(n) if n > 0 => Some(c.narrow("num_kv_shared_layers", n, &Bound::sharing_layers(n_layers))?),
        _ => None,
    };

    let mut sources = BTreeMap::new();
    sources.insert("*".to_string(), format!("config.json ({mt})"));
    let model = ModelSpec {
        name: name.to_string(),
        source: format!("config.json ({mt})"),
        n_layers,
        hidden,
        n_heads,
        n_kv_heads,
        head_dim,
        ffn,
        ffn_gated: !mamba,
        vocab,
        tied_embeddings: tied,
        attn_bias,
        max_context,
        layer_pattern: vec![LayerKind::Full],
        layer_kinds: Some(kinds.clone()),
        sliding_window: window.filter(|_| has(LayerKind::Sliding)),
        kv_share_group: None,
        moe,
        mla,
        ssm,
        linear: None,
        short_conv,
        ffn_per_layer,
        n_heads_per_layer: None,
        n_kv_heads_per_layer: None,
        head_dim_per_layer: None,
        kv_shared_layers,
        per_layer_embedding,
        trained_bits: None,
        sources,
        from_file: None,
        stored: None,
    };
    model.validate().map_err(|source| {
        let present = |k: &str| c.obj.get(k).map(|_| format!("{}{k}", c.prefix));
        let key = crate::error::key_of(source.field(), false, &present);
        ImportError::Spec { origin: format!("config.json of {name}"), source: Box::new(source), key }
    })?;

    // Everything not used and not known to be without effect, with its path.
    let used = c.used.into_inner();
    let mut unmapped = Vec::new();
    if let Value::Object(map) = c.obj {
        for (k, v) in map {
            if used.contains(k) || NO_EFFECT.contains(&k.as_str()) || k.ends_with("_token_id") {
                continue;
            }
            unmapped.push((format!("{}{k}", c.prefix), short(v)));
        }
    }
    if !c.prefix.is_empty()
        && let Value::Object(map) = c.root
    {
        for (k, v) in map {
            if k != "text_config"
                && !NO_EFFECT.contains(&k.as_str())
                && !k.ends_with("_token_id")
                && !k.ends_with("_token_index")
            {
                unmapped.push((k.clone(), short(v)));
            }
        }
    }
    notes.extend(c.notes.into_inner());
    let weights = crate::hf_quant::stated_weights(&root, &mut notes)?;
    Ok(Imported { model, unmapped, notes, file_type: None, tensor_bytes: None, weights })
}

/// LFM2's FFN width as transformers computes it: `block_ff_dim` (else `intermediate_size`,
/// `ffn`), and with `block_auto_adjust_ff_dim` int(2 × ff / 3), times
/// `block_ffn_dim_multiplier`, rounded up to a multiple of `block_multiple_of`.
fn lfm2_ffn(c: &Cfg, ffn: u64) -> Result<u64, ImportError> {
    let (key, base) = match c.u64("block_ff_dim")? {
        Some(b) => ("block_ff_dim", b),
        None => ("intermediate_size", ffn),
    };
    if !c.bool("block_auto_adjust_ff_dim")?.unwrap_or(false) {
        return Ok(base);
    }
    let mut f = c.narrow::<u64>(key, base, &Bound::dim())? * 2 / 3;
    if let Some(m) = c.f64("block_ffn_dim_multiplier")? {
        // Python's int() truncates; f ≤ 2^20 is exact as a float.
        f = c.whole("block_ffn_dim_multiplier", (m * f as f64).trunc(), &Bound::dim())?;
    }
    let multiple = c.u64("block_multiple_of")?.unwrap_or(256).max(1);
    let shown = format!("{f} rounded up to a multiple of `{}` = {multiple}", c.path("block_multiple_of"));
    c.within(key, &shown, f.checked_next_multiple_of(multiple), &Bound::dim())
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 80 { format!("{}…", &s[..s.char_indices().nth(77).map_or(s.len(), |c| c.0)]) } else { s }
}
