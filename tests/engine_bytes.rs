//! The decode engine holds exactly the weight bytes memwall's footprint counts, tensor by
//! tensor, for every layer kind it runs and for uniform and K-quant mixes.

use std::collections::HashMap;

use memwall::decode::{Engine, EngineConfig};
use memwall::sim::footprint::WeightBytes;
use memwall::spec::{KvQuant, ModelSpec, WeightQuant};

#[test]
fn engine_weights_equal_the_footprint_tensor_by_tensor() {
    let base = "name = \"t\"\nn_layers = 4\nhidden = 256\nn_heads = 8\nn_kv_heads = 2\nffn = 688\nvocab = 1000\n";
    let extras = [
        "",
        "tied_embeddings = true\nattn_bias = true\n",
        "layer_pattern = [\"sliding\", \"full\"]\nsliding_window = 64\n",
        "[moe]\nn_experts = 8\ntop_k = 2\nn_shared = 1\nexpert_ffn = 256\nleading_dense_layers = 1\n",
        "layer_pattern = [\"ssm\", \"ssm\", \"full\"]\n[ssm]\nkind = \"mamba1\"\nd_state = 16\nd_conv = 4\nd_inner = 512\n",
    ];
    for extra in extras {
        let model: ModelSpec = toml::from_str(&format!("{base}{extra}")).unwrap();
        for mix in ["F16", "Q4_0", "Q4_K_M", "Q3_K_S", "TQ2_0"] {
            let weights = WeightQuant::new(mix.parse().unwrap());
            let want = WeightBytes::new(&model, &weights);
            let e = Engine::new(EngineConfig::new(model.clone(), weights, KvQuant::default())).unwrap();
            assert_eq!(e.weight_bytes(), want.total, "{extra} {mix}");
            let held: HashMap<_, _> =
                e.weights().matrices().iter().map(|m| ((m.class, m.layer), (m.format(), m.bytes() as u64))).collect();
            for (t, f, bytes) in &want.tensors {
                if let Some((format, b)) = held.get(&(t.class, t.layer)) {
                    assert_eq!((memwall::spec::QuantFormat::Ggml(*format), *b), (*f, *bytes), "{extra} {mix} {t:?}");
                }
            }
            // Every tensor but norms, biases and the SSM's small parameters is a matrix held.
            let vectors = want.tensors.iter().filter(|(t, ..)| !held.contains_key(&(t.class, t.layer))).count();
            assert!(
                want.tensors.iter().all(|(t, ..)| held.contains_key(&(t.class, t.layer))
                    || t.is_vector()
                    || matches!(t.class.name(), "ssm_conv1d" | "ssm_a")),
                "{extra} {mix}: {vectors} non-matrices"
            );
        }
    }
}
