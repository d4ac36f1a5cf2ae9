//! A config.json's `quantization_config` maps to the weight mix its checkpoint stores: FP8
//! (DeepSeek-V3's block-scaled E4M3) and MXFP4 (gpt-oss's experts), with the tensors their
//! published configs keep in bf16, sized byte for byte.

use memwall_import::model_from_hf;
use memwall_spec::{GgmlType, QuantFormat, TensorClass};
use serde_json::{Value, json};

/// A small Qwen3-MoE: 2 layers of width 256, 4 heads of 64 over 2 KV heads, 8 experts of
/// width 128 (2 per token), vocab 1000, untied.
fn moe(quant: Value) -> String {
    json!({"model_type": "qwen3_moe", "num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 64, "intermediate_size": 512, "vocab_size": 1000,
           "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 128,
           "tie_word_embeddings": false, "quantization_config": quant})
    .to_string()
}

fn bf16() -> QuantFormat {
    QuantFormat::Ggml(GgmlType::BF16)
}

#[test]
fn fp8_block_configs_store_linear_weights_in_fp8_with_tile_scales() {
    let cfg = moe(json!({"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                          "weight_block_size": [128, 128]}));
    let i = model_from_hf(&cfg, "x").unwrap();
    let w = i.weights.expect("an fp8 config states its weights");
    let fp8: QuantFormat = "fp8_e4m3-b128".parse().unwrap();
    let assigned = w.assign(&i.model);
    let format_of = |c: TensorClass| assigned.iter().find(|a| a.tensor.class == c).unwrap().format;
    assert_eq!(format_of(TensorClass::TokenEmbd), bf16());
    assert_eq!(format_of(TensorClass::Output), bf16());
    for c in [TensorClass::AttnQ, TensorClass::AttnOutput, TensorClass::FfnUpExps, TensorClass::FfnDownExps] {
        assert_eq!(format_of(c), fp8, "{c:?}");
    }
    // Routers and norms are never FP8.
    assert_ne!(format_of(TensorClass::FfnGateInp), fp8);
    // Bytes by hand: an expert's up projection is 128 rows of 256 (1 × 2 tiles of 128 × 128),
    // 32,768 B + 2 × 4 B of scales, 8 experts; the down projection 256 rows of 128 (2 × 1
    // tiles): the same.
    let up = assigned.iter().find(|a| a.tensor.class == TensorClass::FfnUpExps).unwrap();
    assert_eq!((up.tensor.row_len, up.tensor.rows, up.tensor.experts), (256, 128, 8));
    assert_eq!(up.tensor.bytes_in(up.format), 8 * (128 * 256 + 2 * 4));
    // Q (256 rows of 256 → 4 tiles): 65,536 + 16 B.
    let q = assigned.iter().find(|a| a.tensor.class == TensorClass::AttnQ).unwrap();
    assert_eq!(q.tensor.bytes_in(q.format), 65_536 + 16);
    assert!(i.notes.iter().any(|n| n.contains("fp8_e4m3-b128")), "{:?}", i.notes);
}

#[test]
fn fp8_without_a_block_size_has_one_scale_per_tensor_and_e5m2_is_read() {
    let i = model_from_hf(&moe(json!({"quant_method": "fp8", "fmt": "e5m2"})), "x").unwrap();
    let w = i.weights.unwrap();
    let assigned = w.assign(&i.model);
    let q = assigned.iter().find(|a| a.tensor.class == TensorClass::AttnQ).unwrap();
    assert_eq!(q.format.to_string(), "fp8_e5m2");
    // One byte per weight and one f32 scale for the tensor.
    assert_eq!(q.tensor.bytes_in(q.format), 256 * 256 + 4);
}

#[test]
fn mxfp4_configs_store_the_experts_in_mxfp4_and_the_rest_in_bf16() {
    // gpt-oss's quantization_config, as published.
    let cfg = moe(json!({"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                     "model.embed_tokens", "lm_head"],
                          "quant_method": "mxfp4"}));
    let i = model_from_hf(&cfg, "x").unwrap();
    let assigned = i.weights.unwrap().assign(&i.model);
    let mx = QuantFormat::Ggml(GgmlType::MXFP4);
    for a in &assigned {
        let c = a.tensor.class;
        let want = if c.is_routed_expert() {
            mx
        } else if c.quantizable() && !a.tensor.is_vector() {
            bf16()
        } else {
            QuantFormat::Ggml(GgmlType::F32)
        };
        assert_eq!(a.format, want, "{c:?}");
    }
    // An expert's up projection: 128 rows × 8 blocks of 32 × 17 B, 8 experts.
    let up = assigned.iter().find(|a| a.tensor.class == TensorClass::FfnUpExps).unwrap();
    assert_eq!(up.tensor.bytes_in(up.format), 8 * 128 * 8 * 17);
}

#[test]
fn modules_kept_in_bf16_become_overrides_and_unknown_ones_are_noted() {
    let cfg = moe(json!({"quant_method": "fp8", "weight_block_size": [128, 128],
                          "modules_to_not_convert": ["model.layers.1.self_attn.o_proj", "model.vision_tower"]}));
    let i = model_from_hf(&cfg, "x").unwrap();
    let assigned = i.weights.unwrap().assign(&i.model);
    let o = |layer: u32| {
        assigned
            .iter()
            .find(|a| a.tensor.class == TensorClass::AttnOutput && a.tensor.layer == Some(layer))
            .unwrap()
            .format
    };
    assert_eq!(o(1), bf16());
    assert_eq!(o(0).to_string(), "fp8_e4m3-b128");
    assert!(i.notes.iter().any(|n| n.contains("model.vision_tower")), "{:?}", i.notes);
}

#[test]
fn unmapped_methods_are_noted_and_bad_fields_are_refused_by_path() {
    let i = model_from_hf(&moe(json!({"quant_method": "gptq", "bits": 4})), "x").unwrap();
    assert!(i.weights.is_none());
    assert!(i.notes.iter().any(|n| n.contains("gptq")), "{:?}", i.notes);
    for (q, path, value) in [
        (json!({"quant_method": "fp8", "fmt": "e3m4"}), "quantization_config.fmt", "e3m4"),
        (
            json!({"quant_method": "fp8", "weight_block_size": [128, 64]}),
            "quantization_config.weight_block_size",
            "[128,64]",
        ),
        (json!({"quant_method": "fp8", "weight_block_size": [0, 0]}), "quantization_config.weight_block_size", "[0,0]"),
        (json!({"quant_method": 8}), "quantization_config.quant_method", "8"),
        (
            json!({"quant_method": "mxfp4", "modules_to_not_convert": "lm_head"}),
            "quantization_config.modules_to_not_convert",
            "lm_head",
        ),
    ] {
        let e = model_from_hf(&moe(q), "x").unwrap_err().to_string();
        assert!(e.contains(path) && e.contains(value), "expected {path} and {value}: {e}");
    }
}
