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
        let Some(_) = memwall_io::presets::model_text(&name) else { continue };
        let preset = memwall_io::load_model(&name).unwrap();
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
