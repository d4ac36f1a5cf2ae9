//! A `config.json`'s `quantization_config` as the weight mix the checkpoint stores, for the
//! formats memwall sizes byte-exactly:
//!
//! - `quant_method: "fp8"` (DeepSeek-V3 and transformers' fine-grained FP8): every linear
//!   weight in FP8 (`fmt`: `e4m3`, `e5m2`), with one f32 `weight_scale_inv` per
//!   `weight_block_size` tile (`[128, 128]`: `fp8_e4m3-b128`) or, without a block size, one
//!   per tensor; the embeddings and the output head stay bf16 (DeepSeek-V3's
//!   README_WEIGHTS.md, "FP8 Weight Documentation",
//!   <https://github.com/deepseek-ai/DeepSeek-V3/blob/main/README_WEIGHTS.md>).
//! - `quant_method: "mxfp4"` (gpt-oss): the routed experts in MXFP4 (`*_blocks` of 16 bytes
//!   and `*_scales` of one E8M0 byte per 32 weights, ggml's 17-byte block), everything else
//!   bf16, as its `modules_to_not_convert` lists (`model.layers.*.self_attn`,
//!   `model.layers.*.mlp.router`, `model.embed_tokens`, `lm_head`; openai/gpt-oss-20b
//!   config.json).
//!
//! `modules_to_not_convert` (or `ignored_layers`) entries that name modules memwall models
//! become bf16 overrides; others are noted. Other methods are noted and left to `--weights`.

use memwall_spec::{
    Fp8Kind, Fp8Quant, Fp8Scale, GgmlType, LayerSelector, Mix, Override, QuantFormat, ScaleDtype, WeightQuant,
};
use serde_json::Value;

use crate::ImportError;

const KEY: &str = "quantization_config";

fn err(k: &str, what: impl Into<String>) -> ImportError {
    ImportError::Json { path: format!("{KEY}.{k}"), what: what.into() }
}

fn bf16() -> QuantFormat {
    QuantFormat::Ggml(GgmlType::BF16)
}

fn keep(tensors: &[&str], layers: LayerSelector, format: QuantFormat) -> Override {
    Override { tensors: tensors.iter().map(|t| t.to_string()).collect(), layers, format }
}

/// The weight mix `root`'s `quantization_config` states, if memwall maps its method; what
/// it decided goes to `notes`.
pub(crate) fn stated_weights(root: &Value, notes: &mut Vec<String>) -> Result<Option<WeightQuant>, ImportError> {
    let Some(q) = root.get(KEY).filter(|v| !v.is_null()) else { return Ok(None) };
    let Some(obj) = q.as_object() else {
        return Err(ImportError::Json { path: KEY.into(), what: format!("is {q}, expected an object") });
    };
    let method = match obj.get("quant_method") {
        Some(Value::String(s)) => s.to_ascii_lowercase(),
        Some(v) => return Err(err("quant_method", format!("is {v}, expected a string"))),
        None => return Err(err("quant_method", "is missing")),
    };
    let all = || LayerSelector("all".into());
    let (mix, mut list) = match method.as_str() {
        "fp8" => {
            let q = fp8_format(obj)?;
            if obj.get("scale_fmt").and_then(Value::as_str) == Some("ue8m0") {
                notes.push(format!("{KEY}.scale_fmt `ue8m0`: the scales are powers of two, still stored as f32"));
            }
            notes.push(format!("{KEY}: weights in {}, embeddings and output head in bf16", QuantFormat::Fp8(q)));
            (Mix::Pure(QuantFormat::Fp8(q)), vec![keep(&["token_embd", "output"], all(), bf16())])
        }
        "mxfp4" => {
            notes.push(format!("{KEY}: routed experts in mxfp4, every other weight in bf16"));
            let experts =
                keep(&["ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"], all(), QuantFormat::Ggml(GgmlType::MXFP4));
            (Mix::Pure(bf16()), vec![experts])
        }
        other => {
            notes.push(format!("{KEY}.quant_method `{other}` is not mapped: the weights follow --weights"));
            return Ok(None);
        }
    };
    for field in ["modules_to_not_convert", "ignored_layers"] {
        match obj.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) => {
                for (i, v) in a.iter().enumerate() {
                    let Some(name) = v.as_str() else {
                        return Err(err(&format!("{field}[{i}]"), format!("is {v}, expected a string")));
                    };
                    match module_classes(name) {
                        Some((classes, layers)) if !classes.is_empty() => list.push(keep(classes, layers, bf16())),
                        Some(_) => {}
                        None => notes.push(format!("{KEY}.{field}[{i}] `{name}` names no tensor memwall models")),
                    }
                }
            }
            Some(v) => return Err(err(field, format!("is {v}, expected a list of module names"))),
        }
    }
    Ok(Some(WeightQuant { mix, imatrix: false, overrides: list }))
}

/// The FP8 format of an `fp8` config: `fmt` (default `e4m3`) and the square
/// `weight_block_size` (absent: one scale per tensor).
fn fp8_format(obj: &serde_json::Map<String, Value>) -> Result<Fp8Quant, ImportError> {
    let kind = match obj.get("fmt") {
        None | Some(Value::Null) => Fp8Kind::E4m3,
        Some(Value::String(s)) => match s.to_ascii_lowercase().as_str() {
            "e4m3" | "float8_e4m3fn" => Fp8Kind::E4m3,
            "e5m2" | "float8_e5m2" => Fp8Kind::E5m2,
            _ => return Err(err("fmt", format!("is \"{s}\", expected \"e4m3\" or \"e5m2\""))),
        },
        Some(v) => return Err(err("fmt", format!("is {v}, expected \"e4m3\" or \"e5m2\""))),
    };
    let scale = match obj.get("weight_block_size") {
        None | Some(Value::Null) => Fp8Scale::Tensor,
        Some(v) => {
            let dims: Option<Vec<u64>> = v.as_array().map(|a| a.iter().filter_map(Value::as_u64).collect());
            match dims.as_deref() {
                Some(&[a, b]) if a == b && (1..=65_536).contains(&a) => Fp8Scale::Block(a as u32),
                _ => {
                    return Err(err(
                        "weight_block_size",
                        format!("is {v}, expected a square tile [b, b] with b in 1..=65536"),
                    ));
                }
            }
        }
    };
    Ok(Fp8Quant { kind, scale, dtype: ScaleDtype::F32 })
}

/// The tensor classes and layers a transformers module name stands for: `lm_head`,
/// `model.embed_tokens`, and `model.layers.{*|N}.` followed by `self_attn`, `mlp`,
/// `mlp.experts`, a projection, or a router (`mlp.router`, `mlp.gate`,
/// `block_sparse_moe.gate`: no classes, memwall never quantizes routers). `None` for a name
/// it cannot map.
fn module_classes(name: &str) -> Option<(&'static [&'static str], LayerSelector)> {
    let all = || LayerSelector("all".into());
    let name = name.strip_prefix("model.language_model.").map_or(name, |n| n).trim_start_matches("model.");
    match name {
        "lm_head" => return Some((&["output"], all())),
        "embed_tokens" => return Some((&["token_embd"], all())),
        _ => {}
    }
    let rest = name.strip_prefix("layers.")?;
    let (layer, module) = rest.split_once('.')?;
    let layers = match layer {
        "*" => all(),
        n if n.parse::<u32>().is_ok() => LayerSelector(n.into()),
        _ => return None,
    };
    let classes: &'static [&'static str] = match module {
        "self_attn" => &["attn_*"],
        "self_attn.q_proj" => &["attn_q"],
        "self_attn.k_proj" => &["attn_k"],
        "self_attn.v_proj" => &["attn_v"],
        "self_attn.o_proj" => &["attn_output"],
        "mlp" => &["ffn_*"],
        "mlp.experts" => &["ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"],
        "mlp.gate_proj" => &["ffn_gate"],
        "mlp.up_proj" => &["ffn_up"],
        "mlp.down_proj" => &["ffn_down"],
        "mlp.router" | "mlp.gate" | "block_sparse_moe.gate" => &[],
        _ => return None,
    };
    Some((classes, layers))
}
