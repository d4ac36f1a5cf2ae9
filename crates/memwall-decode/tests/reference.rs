//! The engine's logits against the f64 reference, per weight format and KV format, on small
//! models of every layer kind the engine runs.

use memwall_decode::reference::{Reference, logit_budget};
use memwall_decode::{Engine, EngineConfig};
use memwall_spec::{GgmlType, KvQuant, ModelSpec, QuantFormat, WeightQuant};

fn model(extra: &str) -> ModelSpec {
    let base = r#"
name = "tiny"
n_layers = 3
hidden = 256
n_heads = 8
n_kv_heads = 2
head_dim = 32
ffn = 512
vocab = 512
"#;
    toml::from_str(&format!("{base}{extra}")).unwrap()
}

fn shapes() -> Vec<(&'static str, ModelSpec)> {
    vec![
        ("gqa", model("")),
        ("mqa tied", model("tied_embeddings = true\n").with(|m| m.n_kv_heads = 1)),
        ("mha bias", model("attn_bias = true\n").with(|m| m.n_kv_heads = 8)),
        ("sliding", model("layer_pattern = [\"sliding\", \"sliding\", \"full\"]\nsliding_window = 3\n")),
        ("shared kv", model("kv_share_group = 2\n")),
        ("moe", model("[moe]\nn_experts = 8\ntop_k = 2\nn_shared = 1\nexpert_ffn = 256\nleading_dense_layers = 1\n")),
        (
            "mamba hybrid",
            model(
                "layer_pattern = [\"ssm\", \"full\", \"ssm\"]\n[ssm]\nkind = \"mamba1\"\nd_state = 16\nd_conv = 4\nd_inner = 512\ndt_rank = 16\n",
            ),
        ),
    ]
}

trait With: Sized {
    fn with(self, f: impl FnOnce(&mut Self)) -> Self;
}
impl With for ModelSpec {
    fn with(mut self, f: impl FnOnce(&mut Self)) -> Self {
        f(&mut self);
        self
    }
}

fn rel(a: &[f32], b: &[f64]) -> f64 {
    let e: f64 = a.iter().zip(b).map(|(x, y)| (f64::from(*x) - y).powi(2)).sum();
    (e / b.iter().map(|y| y * y).sum::<f64>()).sqrt()
}

/// Decode 6 tokens on the engine and the reference; the worst relative logit error.
fn worst_error(m: &ModelSpec, mix: &str, kv: GgmlType) -> (f64, f64) {
    let kvq = KvQuant { k: QuantFormat::Ggml(kv), v: QuantFormat::Ggml(kv) };
    let mut cfg = EngineConfig::new(m.clone(), WeightQuant::new(mix.parse().unwrap()), kvq);
    cfg.seed = 11;
    cfg.threads = 2;
    let mut e = Engine::new(cfg).unwrap();
    let mut r = Reference::new(&e);
    let formats: Vec<GgmlType> = e.weights().formats();
    let mut worst = 0f64;
    let ssm = m.layer_kinds().contains(&memwall_spec::LayerKind::Ssm);
    for tok in [1u32, 77, 300, 5, 511, 42] {
        let got = e.step(tok).unwrap().to_vec();
        let (want, _) = r.step_routed(tok, Some(e.routes()));
        worst = worst.max(rel(&got, &want));
    }
    (worst, logit_budget(&formats, [kvq.k, kvq.v], ssm))
}

#[test]
fn logits_match_the_f64_reference_within_the_budget_of_each_format() {
    let (mut report, mut failed) = (Vec::new(), Vec::new());
    for (name, m) in shapes() {
        for mix in ["F32", "F16", "Q8_0", "Q4_0", "mxfp4", "Q4_K_M", "Q3_K_M", "Q2_K", "TQ2_0"] {
            let (err, budget) = worst_error(&m, mix, GgmlType::F16);
            report.push(format!("{name:>13} {mix:>7} kv f16: {err:.2e} (budget {budget:.1e})"));
            if err >= budget {
                failed.push(format!("{name} {mix}: logit error {err:.3e} over budget {budget:.1e}"));
            }
        }
        for kv in [GgmlType::Q8_0, GgmlType::Q4_0] {
            let (err, budget) = worst_error(&m, "Q8_0", kv);
            report.push(format!("{name:>13}    Q8_0 kv {kv}: {err:.2e} (budget {budget:.1e})"));
            if err >= budget {
                failed.push(format!("{name} kv {kv}: logit error {err:.3e} over budget {budget:.1e}"));
            }
        }
    }
    println!("{}", report.join("\n"));
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
