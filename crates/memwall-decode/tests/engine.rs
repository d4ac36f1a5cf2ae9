//! The engine's behaviour: determinism across threads, the synthetic context, timing, and
//! refusals that name the field.

use memwall_decode::{Engine, EngineConfig, EngineError, OpClass};
use memwall_spec::{GgmlType, KvQuant, ModelSpec, QuantFormat, WeightQuant};

fn model(extra: &str) -> ModelSpec {
    toml::from_str(&format!(
        "name = \"t\"\nn_layers = 2\nhidden = 256\nn_heads = 8\nn_kv_heads = 2\nhead_dim = 32\nffn = 512\nvocab = 300\n{extra}"
    ))
    .unwrap()
}

fn config(m: ModelSpec, mix: &str, kv: GgmlType, threads: usize) -> EngineConfig {
    let kv = KvQuant { k: QuantFormat::Ggml(kv), v: QuantFormat::Ggml(kv) };
    let mut c = EngineConfig::new(m, WeightQuant::new(mix.parse().unwrap()), kv);
    c.threads = threads;
    c.seed = 3;
    c
}

#[test]
fn threads_change_the_time_not_the_numbers() {
    let moe = "[moe]\nn_experts = 4\ntop_k = 2\nexpert_ffn = 256\n";
    for extra in ["", moe] {
        let run = |threads| {
            let mut e = Engine::new(config(model(extra), "Q4_K_M", GgmlType::Q8_0, threads)).unwrap();
            e.fill_context(50).unwrap();
            let g = e.generate(7, 5, 0.8).unwrap();
            (g.tokens, e.step(9).unwrap().to_vec())
        };
        assert_eq!(run(1), run(2), "{extra}");
    }
}

#[test]
fn the_synthetic_context_fills_every_cache_and_windows_cap_it() {
    let mut e = Engine::new(config(model(""), "Q8_0", GgmlType::Q8_0, 1)).unwrap();
    e.fill_context(100).unwrap();
    assert_eq!(e.position(), 100);
    // 2 layers × 100 tokens × (K + V) × 2 KV heads × 32 dims at 34 bytes per 32 (Q8_0).
    assert_eq!(e.kv_bytes(), 2 * 100 * 2 * 2 * 34);
    assert_eq!(e.kv_bytes_at(100), e.kv_bytes());
    assert_eq!(e.kv_bytes_at(u64::MAX), u64::MAX);
    let mut w = Engine::new(config(
        model("layer_pattern = [\"sliding\", \"full\"]\nsliding_window = 16\n"),
        "Q8_0",
        GgmlType::F16,
        1,
    ))
    .unwrap();
    w.fill_context(100).unwrap();
    w.step(1).unwrap();
    // Sliding layer keeps 16 tokens, the full one 101; F16: 2 bytes per element.
    assert_eq!(w.kv_bytes(), (16 + 101) * 2 * 64 * 2);
    assert_eq!(w.kv_bytes_at(101), w.kv_bytes());
    // The window caps the sliding cache however long the context.
    assert_eq!(w.kv_bytes_at(1_000_101) - w.kv_bytes_at(101), 1_000_000 * 2 * 64 * 2);
    // Shared caches: one cache for two layers.
    let mut s = Engine::new(config(model("kv_share_group = 2\n"), "Q8_0", GgmlType::F16, 1)).unwrap();
    s.fill_context(10).unwrap();
    assert_eq!(s.kv_bytes(), 10 * 2 * 64 * 2);
}

#[test]
fn generation_is_timed_per_token_and_per_operator() {
    let mut e = Engine::new(config(model(""), "Q4_0", GgmlType::F16, 1)).unwrap();
    let g = e.generate(1, 8, 0.0).unwrap();
    assert_eq!((g.tokens.len(), g.token_seconds.len()), (8, 8));
    assert!(g.tok_s() > 0.0 && g.tok_s().is_finite());
    // 2 layers × (q, k, v, o) per token; the operators' time is within the tokens' time.
    assert_eq!(g.timings.calls[OpClass::AttnProj as usize], 8 * 2 * 2);
    assert_eq!(g.timings.calls[OpClass::LmHead as usize], 8);
    let total: f64 = g.token_seconds.iter().sum();
    assert!(g.timings.total() <= total * 1.001 && g.timings.total() > 0.5 * total, "{g:?}");
    // Greedy decoding is deterministic.
    let mut again = Engine::new(config(model(""), "Q4_0", GgmlType::F16, 1)).unwrap();
    assert_eq!(again.generate(1, 8, 0.0).unwrap().tokens, g.tokens);
}

#[test]
fn what_the_engine_cannot_run_is_refused_naming_the_field() {
    let field = |r: Result<Engine, EngineError>| match r {
        Err(EngineError::Unsupported { field, .. }) => field,
        Err(e) => panic!("wrong error {e}"),
        Ok(_) => panic!("accepted"),
    };
    let mla = "[mla]\nkv_lora_rank = 64\nqk_nope_head_dim = 32\nqk_rope_head_dim = 32\nv_head_dim = 32\n";
    assert_eq!(field(Engine::new(config(model(mla), "Q8_0", GgmlType::F16, 1))), "model.mla");
    let lin = "layer_pattern = [\"linear\", \"full\"]\n[linear]\nn_heads = 2\nkey_dim = 32\nvalue_dim = 32\n";
    assert_eq!(field(Engine::new(config(model(lin), "Q8_0", GgmlType::F16, 1))), "model.layer_kinds[0]");
    let m2 =
        "layer_pattern = [\"ssm\"]\n[ssm]\nkind = \"mamba2\"\nd_state = 16\nd_conv = 4\nd_inner = 512\nn_heads = 8\n";
    assert_eq!(field(Engine::new(config(model(m2), "Q8_0", GgmlType::F16, 1))), "model.ssm.kind");
    assert!(field(Engine::new(config(model(""), "int4-g128", GgmlType::F16, 1))).starts_with("weights ("));
    assert_eq!(field(Engine::new(config(model(""), "Q8_0", GgmlType::Q4_K, 1))), "kv.k");
    let mut c = config(model(""), "Q8_0", GgmlType::F16, 1);
    c.threads = 0;
    assert!(matches!(Engine::new(c), Err(EngineError::Invalid { field: "threads", .. })));
    let mut e = Engine::new(config(model(""), "Q8_0", GgmlType::F16, 1)).unwrap();
    assert!(matches!(e.step(300), Err(EngineError::Invalid { field: "token", .. })));
}
