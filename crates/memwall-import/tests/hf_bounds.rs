//! Every count and width a config.json gives is taken whole or refused: for each field, the
//! largest value it accepts imports, and the next one up (or one past 2^32, which a `u32`
//! would have wrapped to a small number) is refused with an error naming the field's JSON path
//! and the value.

use memwall_import::model_from_hf;
use memwall_spec::ModelSpec;
use memwall_spec::bounds::{MAX_DIM, MAX_EXPERTS, MAX_LAYERS};
use serde_json::{Value, json};

/// A small llama: 4 layers of width 64, 4 heads over 2 KV heads, FFN 128, vocab 100.
fn llama() -> Value {
    json!({"model_type": "llama", "num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
           "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100})
}

/// A small Qwen3-MoE: 8 experts of width 16, 2 chosen per token.
fn moe() -> Value {
    with(
        llama(),
        json!({"model_type": "qwen3_moe", "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 16}),
    )
}

/// `base` with the fields of `patch` set (a `null` removes one).
fn with(mut base: Value, patch: Value) -> Value {
    for (k, v) in patch.as_object().unwrap() {
        if v.is_null() {
            base.as_object_mut().unwrap().remove(k);
        } else {
            base[k] = v.clone();
        }
    }
    base
}

fn accepted(cfg: &Value) -> ModelSpec {
    model_from_hf(&cfg.to_string(), "x").unwrap_or_else(|e| panic!("{cfg}: {e}")).model
}

/// Refused naming `path` (as a JSON path) and `value`.
fn refused(cfg: &Value, path: &str, value: impl std::fmt::Display) {
    let e = match model_from_hf(&cfg.to_string(), "x") {
        Ok(i) => panic!("accepted {cfg}: {:?}", i.model),
        Err(e) => e.to_string(),
    };
    assert!(e.contains(&format!("`{path}`")) && e.contains(&value.to_string()), "expected `{path}` and {value}: {e}");
}

const PAST_U32: u64 = (1 << 32) + 8;

#[test]
fn layers_up_to_the_layer_bound() {
    let max = u64::from(MAX_LAYERS);
    assert_eq!(accepted(&with(llama(), json!({"num_hidden_layers": max}))).n_layers, MAX_LAYERS);
    refused(&with(llama(), json!({"num_hidden_layers": max + 1})), "num_hidden_layers", max + 1);
    refused(&with(llama(), json!({"num_hidden_layers": PAST_U32})), "num_hidden_layers", PAST_U32);
}

#[test]
fn routed_experts_under_each_name_up_to_the_expert_bound() {
    let max = u64::from(MAX_EXPERTS);
    for key in ["num_experts", "num_local_experts", "n_routed_experts"] {
        let cfg = |n: u64| with(moe(), json!({"num_experts": null, key: n}));
        assert_eq!(accepted(&cfg(max)).moe.unwrap().n_experts, MAX_EXPERTS, "{key}");
        refused(&cfg(max + 1), key, max + 1);
        refused(&cfg(PAST_U32), key, PAST_U32);
    }
}

#[test]
fn experts_per_token_of_a_text_config_up_to_the_expert_bound() {
    let max = u64::from(MAX_EXPERTS);
    let cfg = |k: u64| {
        json!({"model_type": "qwen3_moe",
               "text_config": with(moe(), json!({"num_experts": max, "num_experts_per_tok": k}))})
    };
    assert_eq!(accepted(&cfg(max)).moe.unwrap().top_k, MAX_EXPERTS);
    refused(&cfg(max + 1), "text_config.num_experts_per_tok", max + 1);
    refused(&cfg(PAST_U32), "text_config.num_experts_per_tok", PAST_U32);
}

#[test]
fn shared_experts_up_to_the_expert_bound() {
    // 2^16 shared experts of width 16: 2^20 shared FFN rows, the width bound.
    let max = u64::from(MAX_EXPERTS);
    let cfg = |n: u64| with(moe(), json!({"n_shared_experts": n}));
    assert_eq!(accepted(&cfg(max)).moe.unwrap().n_shared, MAX_EXPERTS);
    refused(&cfg(max + 1), "n_shared_experts", max + 1);
    refused(&cfg(PAST_U32), "n_shared_experts", PAST_U32);
}

#[test]
fn leading_dense_layers_up_to_the_layer_count() {
    let cfg = |n: u64| with(moe(), json!({"first_k_dense_replace": n}));
    assert_eq!(accepted(&cfg(4)).moe.unwrap().leading_dense_layers, 4);
    refused(&cfg(5), "first_k_dense_replace", 5);
    refused(&cfg(PAST_U32), "first_k_dense_replace", PAST_U32);
}

#[test]
fn kv_shared_layers_up_to_all_but_one_layer() {
    let cfg = |n: u64| with(llama(), json!({"model_type": "gemma3n_text", "num_kv_shared_layers": n}));
    assert_eq!(accepted(&cfg(3)).kv_shared_layers, Some(3));
    refused(&cfg(4), "num_kv_shared_layers", 4);
    refused(&cfg(PAST_U32), "num_kv_shared_layers", PAST_U32);
}

#[test]
fn mamba_inner_width_from_expand_up_to_the_width_bound() {
    let cfg = |e: u64| {
        json!({"model_type": "mamba", "num_hidden_layers": 2, "hidden_size": 64, "vocab_size": 100, "expand": e,
               "state_size": 16, "conv_kernel": 4})
    };
    assert_eq!(accepted(&cfg(MAX_DIM / 64)).ssm.unwrap().d_inner, MAX_DIM);
    refused(&cfg(MAX_DIM / 64 + 1), "expand", MAX_DIM + 64);
    // 2^58 × 64 wraps to 0 in 64 bits.
    let e = model_from_hf(&cfg(1 << 58).to_string(), "x").unwrap_err().to_string();
    assert!(e.contains("`expand`") && e.contains("`hidden_size`") && e.contains("overflows"), "{e}");
}

#[test]
fn granite_mamba_widths_from_heads_or_expand_up_to_the_width_bound() {
    let base = json!({"model_type": "granitemoehybrid", "num_hidden_layers": 2, "hidden_size": 64,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100, "intermediate_size": 128,
        "layer_types": ["mamba", "attention"], "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_n_heads": 8});
    let heads = |d: u64| with(base.clone(), json!({"mamba_d_head": d}));
    assert_eq!(accepted(&heads(MAX_DIM / 8)).ssm.unwrap().d_inner, MAX_DIM);
    refused(&heads(MAX_DIM / 8 + 1), "mamba_n_heads", MAX_DIM + 8);
    refused(&heads(u64::MAX), "mamba_n_heads", u64::MAX);
    let expand = |e: u64| with(base.clone(), json!({"mamba_expand": e}));
    assert_eq!(accepted(&expand(MAX_DIM / 64)).ssm.unwrap().d_inner, MAX_DIM);
    refused(&expand(MAX_DIM / 64 + 1), "mamba_expand", MAX_DIM + 64);
}

#[test]
fn lfm2_ffn_width_up_to_the_width_bound() {
    let cfg = |ff: u64, m: f64| {
        json!({"model_type": "lfm2", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
            "num_key_value_heads": 2, "vocab_size": 100, "block_ff_dim": ff, "block_auto_adjust_ff_dim": true,
            "block_ffn_dim_multiplier": m, "block_multiple_of": 256, "full_attn_idxs": [1], "conv_L_cache": 3})
    };
    // int(2 × 2^20 / 3) = 699050, × 1.5 = 1048575, rounded up to 2^20.
    assert_eq!(accepted(&cfg(MAX_DIM, 1.5)).ffn, MAX_DIM);
    refused(&cfg(MAX_DIM + 1, 1.0), "block_ff_dim", MAX_DIM + 1);
    // × 1.500003 gives 2^20 + 1; × 5.6e3 would have wrapped a 32-bit width.
    refused(&cfg(MAX_DIM, 1.500003), "block_ffn_dim_multiplier", MAX_DIM + 1);
    // 1048575 rounded up to a multiple of 1000.
    let e = model_from_hf(&with(cfg(MAX_DIM, 1.5), json!({"block_multiple_of": 1000})).to_string(), "x");
    let e = e.unwrap_err().to_string();
    assert!(e.contains("`block_ff_dim`") && e.contains("1049000") && e.contains("`block_multiple_of` = 1000"), "{e}");
    refused(&cfg(MAX_DIM, 5.6e3), "block_ffn_dim_multiplier", 3_914_680_000u64);
    refused(&cfg(MAX_DIM, 1e300), "block_ffn_dim_multiplier", "overflows");
    refused(&cfg(MAX_DIM, -1.0), "block_ffn_dim_multiplier", "non-negative");
}

#[test]
fn latent_attention_head_width_up_to_the_width_bound() {
    let cfg = |nope: u64| {
        with(
            llama(),
            json!({"model_type": "deepseek_v2", "num_attention_heads": 1, "num_key_value_heads": 1,
                   "kv_lora_rank": 32, "qk_nope_head_dim": nope, "qk_rope_head_dim": 64, "v_head_dim": 64}),
        )
    };
    assert_eq!(accepted(&cfg(MAX_DIM - 64)).head_dim, Some(MAX_DIM));
    refused(&cfg(MAX_DIM - 63), "qk_nope_head_dim", MAX_DIM + 1);
    let e = model_from_hf(&cfg(u64::MAX).to_string(), "x").unwrap_err().to_string();
    assert!(e.contains("`qk_nope_head_dim` + `qk_rope_head_dim`") && e.contains("overflows"), "{e}");
}

#[test]
fn integers_written_as_floats_up_to_two_to_the_53() {
    assert_eq!(accepted(&with(llama(), json!({"hidden_size": 64.0}))).hidden, 64);
    // 2^53 is exact (and then refused by the spec's width bound, named); 2^53 + 2 is not taken.
    let e = model_from_hf(&with(llama(), json!({"hidden_size": 9007199254740992.0})).to_string(), "x");
    assert!(e.unwrap_err().to_string().contains("`hidden` = 9007199254740992"));
    refused(&with(llama(), json!({"hidden_size": 9007199254740994.0})), "hidden_size", 9007199254740994u64);
    refused(&with(llama(), json!({"vocab_size": 1e300})), "vocab_size", "overflows");
}

#[test]
fn a_sliding_pattern_beyond_two_to_the_32_does_not_wrap() {
    // A pattern of 2^32 layers: every one of the 4 layers is sliding (32 bits would make it 0).
    let cfg = with(llama(), json!({"model_type": "gemma3_text", "sliding_window_pattern": 1u64 << 32}));
    let m = accepted(&cfg);
    assert!(m.layer_kinds().iter().all(|k| *k == memwall_spec::LayerKind::Sliding), "{:?}", m.layer_kinds());
}
