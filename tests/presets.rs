//! Every shipped preset loads, validates, and carries its provenance.

use memwall::lab::presets::{DEVICES, MODELS};
use memwall::lab::{load_device, load_model};
use memwall::sim::{ideal_weight_bytes, kv_cache_bytes};
use memwall::spec::{GgmlType, QuantFormat};

fn numeric_paths(prefix: &str, v: &toml::Value, out: &mut Vec<String>) {
    match v {
        toml::Value::Table(t) => {
            for (k, x) in t {
                if k == "sources" {
                    continue;
                }
                let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                numeric_paths(&p, x, out);
            }
        }
        toml::Value::Array(a) => {
            for x in a {
                numeric_paths(prefix, x, out);
            }
        }
        toml::Value::Integer(_) | toml::Value::Float(_) => out.push(prefix.to_string()),
        _ => {}
    }
}

#[test]
fn there_are_enough_presets_and_all_validate() {
    assert!(MODELS.len() >= 15, "{} models", MODELS.len());
    assert!(DEVICES.len() >= 10, "{} devices", DEVICES.len());
    for (name, text) in MODELS {
        let m = load_model(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&m.name, name, "file name and `name` differ");
        assert!(!m.source.is_empty(), "{name} has no source");
        let _: toml::Table = toml::from_str(text).unwrap();
    }
    for (name, _) in DEVICES {
        let d = load_device(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&d.name, name);
    }
}

#[test]
fn every_device_number_has_a_source() {
    for (name, text) in DEVICES {
        let doc: toml::Value = toml::from_str(text).unwrap();
        let sources = doc.get("sources").and_then(|s| s.as_table()).cloned().unwrap_or_default();
        let mut paths = Vec::new();
        numeric_paths("", &doc, &mut paths);
        for p in paths {
            let covered = sources.keys().any(|k| p == *k || p.starts_with(&format!("{k}.")));
            assert!(covered, "{name}: `{p}` has no [sources] entry");
        }
    }
}

#[test]
fn the_seed_figures_come_out_exactly() {
    // 35e9 parameters at 16 bits = 70e9 B; at 4 bits = 17.5e9 B.
    assert_eq!(ideal_weight_bytes(35e9, 16.0), 70e9);
    assert_eq!(ideal_weight_bytes(35e9, 4.0), 17.5e9);
    assert_eq!(QuantFormat::Ggml(GgmlType::F16).padded_bytes(35_000_000_000), 70_000_000_000);
    // The seed's dense design: 48 layers × 8 KV heads × 128 × 4096 tokens × fp16 × (K, V).
    let dense = load_model("hypothetical-35b-dense").unwrap();
    let f16 = QuantFormat::Ggml(GgmlType::F16);
    assert_eq!(kv_cache_bytes(&dense, f16, f16, 4096, 512, 1), 805_306_368);
    assert_eq!(kv_cache_bytes(&dense, f16, f16, 32768, 512, 1), 6_442_450_944);
    let mut mha = dense.clone();
    mha.n_kv_heads = 48;
    assert_eq!(kv_cache_bytes(&mha, f16, f16, 4096, 512, 1), 6 * 805_306_368);
    // The seed designs are about 35e9 parameters; the MoE reads about 4e9 per token.
    let moe = load_model("hypothetical-35b-moe").unwrap().params();
    assert!((34e9..36e9).contains(&(dense.params().total as f64)));
    assert!((34e9..36e9).contains(&(moe.total as f64)));
    assert!((3.5e9..4.5e9).contains(&(moe.active_per_token as f64)));
}

#[test]
fn published_architectures_have_their_published_parameter_counts() {
    // Totals from the model cards: Llama-3.1-8B 8.03B, Llama-3.2-1B 1.24B, Llama-3.2-3B 3.21B,
    // Qwen2.5-7B 7.61B, Qwen2.5-1.5B 1.54B, Mixtral-8x7B 46.7B, Qwen3-30B-A3B 30.5B (3.3B active),
    // DeepSeek-V2-Lite 15.7B (2.4B active), Gemma-2-9B 9.24B.
    let cases = [
        ("llama-3.1-8b", 8.03e9, 0.005),
        ("llama-3.2-1b", 1.24e9, 0.01),
        ("llama-3.2-3b", 3.21e9, 0.01),
        ("qwen2.5-7b", 7.61e9, 0.005),
        ("qwen2.5-1.5b", 1.54e9, 0.01),
        ("mixtral-8x7b", 46.7e9, 0.005),
        ("qwen3-30b-a3b", 30.5e9, 0.005),
        ("deepseek-v2-lite", 15.7e9, 0.01),
        ("gemma-2-9b", 9.24e9, 0.01),
    ];
    for (name, published, tol) in cases {
        let p = load_model(name).unwrap().params().total as f64;
        assert!((p / published - 1.0).abs() < tol, "{name}: {p:.4e} vs {published:.4e}");
    }
}
