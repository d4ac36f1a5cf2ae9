//! The published config.json of each preset model (stored in `tests/fixtures/hf/` with their
//! sources) maps to the same architecture as the hand-written preset: the same layers, widths,
//! heads, KV layout, experts, latent attention and state sizes, hence the same parameters.

use std::path::PathBuf;

fn fixtures() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/hf");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    v
}

#[test]
fn configs_map_to_the_presets() {
    let files = fixtures();
    assert!(files.len() >= 15, "fixtures missing: {}", files.len());
    let mut compared = 0;
    for f in files {
        let name = f.file_stem().unwrap().to_str().unwrap().to_string();
        let Some(_) = memwall_lab::presets::model_text(&name) else { continue };
        let preset = memwall_lab::load_model(&name).unwrap();
        let text = std::fs::read_to_string(&f).unwrap();
        let imported = memwall_import::model_from_hf(&text, &name).unwrap_or_else(|e| panic!("{name}: {e}"));
        let m = &imported.model;
        let shape = |m: &memwall_spec::ModelSpec| {
            (m.n_layers, m.hidden, m.vocab, m.tied_embeddings, m.attn_bias, m.layer_kinds(), m.kv_cache_layers())
        };
        assert_eq!(shape(m), shape(&preset), "{name}: layers, width, vocab, tying, bias or layer kinds");
        if m.layer_kinds().iter().any(|k| k.has_kv()) {
            assert_eq!(
                (m.n_heads, m.n_kv_heads, m.head_dim()),
                (preset.n_heads, preset.n_kv_heads, preset.head_dim()),
                "{name}: heads"
            );
        }
        assert_eq!(m.moe, preset.moe, "{name}: experts");
        assert_eq!(m.mla, preset.mla, "{name}: latent attention");
        assert_eq!(
            m.ssm.as_ref().map(|s| (s.kind, s.d_state, s.d_conv, s.d_inner)),
            preset.ssm.as_ref().map(|s| (s.kind, s.d_state, s.d_conv, s.d_inner)),
            "{name}: SSM"
        );
        if m.layer_kinds().iter().any(|k| k.has_kv()) && m.layer_kinds().contains(&memwall_spec::LayerKind::Sliding) {
            assert_eq!(m.sliding_window, preset.sliding_window, "{name}: window");
        }
        assert_eq!(m.params().total, preset.params().total, "{name}: parameters");
        compared += 1;
    }
    assert!(compared >= 15, "only {compared} fixtures have a preset");
}

#[test]
fn bad_configs_name_the_json_path() {
    let base = r#"{"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                   "intermediate_size": 128, "vocab_size": 100}"#;
    assert!(memwall_import::model_from_hf(base, "ok").is_ok());
    let bad =
        |from: &str, to: &str| memwall_import::model_from_hf(&base.replace(from, to), "x").unwrap_err().to_string();
    let e = bad(r#""hidden_size": 64"#, r#""hidden_size": -64"#);
    assert!(e.contains("`hidden_size`") && e.contains("-64"), "{e}");
    let e = bad(r#""num_hidden_layers": 2"#, r#""num_hidden_layers": 2.5"#);
    assert!(e.contains("`num_hidden_layers`"), "{e}");
    let e = bad(r#""num_attention_heads": 4"#, r#""num_attention_heads": "four""#);
    assert!(e.contains("`num_attention_heads`"), "{e}");
    let e = bad(r#""num_hidden_layers": 2"#, r#""num_hidden_layers": 0"#);
    assert!(e.contains("num_hidden_layers"), "{e}");
    let e = bad(r#""intermediate_size": 128"#, r#""intermediate_size": [128, 128, 128]"#);
    assert!(e.contains("`intermediate_size`") && e.contains("3 entries"), "{e}");
    let e = bad(r#""vocab_size": 100"#, r#""vocab_size": 1e300"#);
    assert!(e.contains("vocab"), "{e}");
    let e = memwall_import::model_from_hf("{\"model_type\": ", "x").unwrap_err().to_string();
    assert!(e.contains("not JSON"), "{e}");
    let e = bad(r#""vocab_size": 100"#, r#""vocab_size": 100, "layer_types": ["full_attention", "weird"]"#);
    assert!(e.contains("layer_types[1]") && e.contains("weird"), "{e}");
    // Fields it does not use are listed with their path, never dropped.
    let i = memwall_import::model_from_hf(
        &base.replace("\"vocab_size\": 100", "\"vocab_size\": 100, \"new_thing\": 3"),
        "x",
    )
    .unwrap();
    assert_eq!(i.unmapped, vec![("new_thing".to_string(), "3".to_string())]);
}

/// Model types without a stored published config: small configs in their published shape,
/// checked by hand.
#[test]
fn gemma3n_granite_hybrid_and_lfm2_configs_map_by_hand() {
    // Gemma 3n: a multimodal config whose text_config carries per-layer inputs and shared KV.
    let g = r#"{"model_type": "gemma3n", "vision_config": {"hidden_size": 2048}, "text_config": {
        "model_type": "gemma3n_text", "num_hidden_layers": 10, "hidden_size": 256, "intermediate_size": [512, 512, 512, 512, 512, 1024, 1024, 1024, 1024, 1024],
        "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 64, "vocab_size": 1000, "vocab_size_per_layer_input": 800,
        "hidden_size_per_layer_input": 32, "num_kv_shared_layers": 4, "sliding_window": 128,
        "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention",
                        "sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
        "altup_num_inputs": 4, "laurel_rank": 16}}"#;
    let i = memwall_import::model_from_hf(g, "g3n").unwrap();
    let m = &i.model;
    assert_eq!(m.ffn_per_layer.as_deref(), Some(&[512, 512, 512, 512, 512, 1024, 1024, 1024, 1024, 1024][..]));
    assert_eq!(m.kv_cache_layers().iter().map(|l| l.0).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 5]);
    let ple = m.per_layer_embedding.as_ref().unwrap();
    assert_eq!((ple.width, ple.vocab), (32, Some(800)));
    assert!(m.tied_embeddings);
    // AltUp and LAuReL have no place in the schema: listed, with their paths; the vision tower too.
    let keys: Vec<&str> = i.unmapped.iter().map(|(k, _)| k.as_str()).collect();
    assert!(keys.contains(&"text_config.altup_num_inputs") && keys.contains(&"text_config.laurel_rank"), "{keys:?}");
    assert!(keys.contains(&"vision_config"), "{keys:?}");

    // Granite 4.0 hybrid: Mamba-2 and attention layers by layer_types.
    let gr = r#"{"model_type": "granitemoehybrid", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 1000, "intermediate_size": 512, "shared_intermediate_size": 768,
        "num_local_experts": 0, "layer_types": ["mamba", "mamba", "attention", "mamba"], "mamba_d_state": 64,
        "mamba_d_conv": 4, "mamba_n_heads": 8, "mamba_d_head": 64, "mamba_n_groups": 1, "tie_word_embeddings": true}"#;
    let m = memwall_import::model_from_hf(gr, "granite").unwrap().model;
    assert_eq!(m.layer_kinds().iter().filter(|k| k.has_kv()).count(), 1);
    let ssm = m.ssm.as_ref().unwrap();
    assert_eq!((ssm.kind, ssm.d_inner, ssm.d_state, ssm.n_heads), (memwall_spec::SsmKind::Mamba2, 512, 64, Some(8)));
    assert_eq!((m.ffn, m.moe.is_none()), (768, true));

    // LFM2 without layer_types: attention layers by index, and the FFN width adjusted.
    let l = r#"{"model_type": "lfm2", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 1000, "block_ff_dim": 1536, "block_auto_adjust_ff_dim": true,
        "block_ffn_dim_multiplier": 1.0, "block_multiple_of": 256, "full_attn_idxs": [1, 3], "conv_L_cache": 3}"#;
    let m = memwall_import::model_from_hf(l, "lfm").unwrap().model;
    use memwall_spec::LayerKind::{Full, ShortConv};
    assert_eq!(m.layer_kinds(), vec![ShortConv, Full, ShortConv, Full]);
    // int(2 × 1536 / 3) = 1024, already a multiple of 256.
    assert_eq!((m.ffn, m.short_conv.as_ref().unwrap().l_cache), (1024, 3));
}
