//! Malformed specs and experiments: each error names the offending field and value.

use memwall_lab::Experiment;

const BASE: &str = r#"
name = "bad"
[base]
model = "llama-3.1-8b"
device = "snapdragon-8-gen3-16gb"
weights = { mix = "Q4_K_M" }
"#;

/// Append `extra` to a valid experiment, or replace `from` with `to` in it.
fn with(extra: &str) -> String {
    format!("{BASE}{extra}")
}

fn replace(from: &str, to: &str) -> String {
    assert!(BASE.contains(from));
    BASE.replace(from, to)
}

fn model(extra: &str) -> String {
    format!(
        "name = \"bad\"\n[base]\ndevice = \"snapdragon-8-gen3-16gb\"\nweights = {{ mix = \"Q4_K_M\" }}\n\
         [base.model]\nname = \"m\"\nn_layers = 4\nhidden = 512\nn_heads = 8\nn_kv_heads = 2\nffn = 1024\n\
         vocab = 1000\n{extra}"
    )
}

fn device_field(field: &str, value: &str) -> String {
    with(&format!("[grid]\n\"device.{field}\" = [{value}]\n"))
}

#[test]
fn every_malformed_input_names_its_field_and_value() {
    let cases: Vec<(String, &[&str])> = vec![
        (replace("Q4_K_M", "Q4_K_X"), &["weights", "`Q4_K_X`"]),
        (replace("\"llama-3.1-8b\"", "\"llama-9\""), &["model", "`llama-9`"]),
        (replace("\"snapdragon-8-gen3-16gb\"", "\"nokia-3310\""), &["device", "`nokia-3310`"]),
        (with("[base.kv]\nk = \"q4_K\"\n"), &["kv.k", "q4_K"]),
        (with("[base.kv]\nv = \"int9-g32\"\n"), &["kv", "int9-g32"]),
        (with("[base.workload]\ncontext_tokens = 0\n"), &["workload.context_tokens", "0"]),
        (
            with("[base.workload]\ncontext_tokens = 1024\nprompt_tokens = 1000\ngen_tokens = 100\n"),
            &["workload.context_tokens", "1024"],
        ),
        (with("[base.workload]\nthreads = 64\n"), &["workload.threads", "64"]),
        (with("[base.workload]\nrouting_skew = nan\n"), &["workload.routing_skew", "NaN"]),
        (with("[base.workload]\nbackend = \"tpu\"\n"), &["backend", "tpu"]),
        (with("[base.workload]\ncontxt_tokens = 4096\n"), &["contxt_tokens"]),
        (model("n_kv_heads = 3\n").replace("n_kv_heads = 2\n", ""), &["model.n_kv_heads", "3"]),
        (model("layer_pattern = [\"sliding\"]\n"), &["model.sliding_window"]),
        (model("layer_pattern = [\"sliding\"]\nsliding_window = 0\n"), &["model.sliding_window", "0"]),
        (model("[base.model.moe]\nn_experts = 8\ntop_k = 9\nexpert_ffn = 512\n"), &["model.moe.top_k", "9"]),
        (model("layer_pattern = [\"ssm\"]\n"), &["model.ssm"]),
        (model("layer_pattern = [\"quantum\"]\n"), &["quantum"]),
        (model("hidden_size = 12\n"), &["hidden_size"]),
        (model("kv_share_group = 0\n"), &["model.kv_share_group", "0"]),
        (device_field("memory.achievable_fraction", "1.5"), &["device.memory.achievable_fraction", "1.5"]),
        (device_field("memory.data_rate_mtps", "-9600.0"), &["device.memory.data_rate_mtps", "-9600"]),
        (device_field("memory.os_reserved_bytes", "20000000000"), &["device.memory.os_reserved_bytes", "20000000000"]),
        (device_field("storage.read_gbps", "0.0"), &["device.storage.read_gbps", "0"]),
        (device_field("cooling", "\"liquid\""), &["cooling", "liquid"]),
        (with("engine = \"llama.cpp\"\n[grid]\n\"engine.cpu.power_scale\" = [3.0]\n"), &["power_scale", "3"]),
        (with("[grid]\n\"weights.mix\" = []\n"), &["grid.\"weights.mix\"", "[]"]),
        (with("[grid]\n\"weights.mix\" = \"Q4_0\"\n"), &["grid.\"weights.mix\"", "Q4_0"]),
        (with("[grid]\n\"weights.mix\" = [\"Q4_0\", \"Q9\"]\n"), &["weights.mix=Q9", "`Q9`"]),
        (with("[grid]\n\"weights.mix.deep\" = [1]\n"), &["grid.\"weights.mix.deep\"", "weights.mix"]),
        (
            with("[grid]\n\"weights.mix\" = [\"Q4_0\"]\n[labels]\n\"weights.mix\" = [\"a\", \"b\"]\n"),
            &["labels.\"weights.mix\"", "2 labels"],
        ),
        (with("[labels]\n\"kv.k\" = [\"a\"]\n"), &["labels.\"kv.k\"", "kv.k"]),
        (with("[weights.overrides]\n"), &["weights"]),
        (
            replace(
                "weights = { mix = \"Q4_K_M\" }",
                "[base.weights]\nmix = \"Q4_K_M\"\n[[base.weights.overrides]]\ntensors = [\"attn_qq\"]\nformat = \"q8_0\"\n",
            ),
            &["weights.overrides[0].tensors", "attn_qq"],
        ),
        (
            replace(
                "weights = { mix = \"Q4_K_M\" }",
                "[base.weights]\nmix = \"Q4_K_M\"\n[[base.weights.overrides]]\ntensors = [\"output\"]\nlayers = \"first:x\"\nformat = \"q8_0\"\n",
            ),
            &["weights.overrides[0].layers", "first:x"],
        ),
        (with("[base.cost]\noverlap = 1.5\n"), &["cost.overlap", "1.5"]),
        (with("[pareto]\nmax_ppl_increase_pct = -1.0\n"), &["pareto.max_ppl_increase_pct", "-1"]),
        (with("[base.cost]\nattention_kv_reads = 0.5\n"), &["cost.attention_kv_reads", "0.5"]),
        ("name = \"bad\"\n[base\nmodel = 1".to_string(), &["cannot parse"]),
        (BASE.replace("name = \"bad\"", "name = \"\""), &["name"]),
        ("name = \"bad\"\n".to_string(), &["base"]),
    ];
    assert!(cases.len() >= 20);
    for (text, needles) in cases {
        let err = match Experiment::parse(&text, "test.toml") {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(e) => e.to_string(),
        };
        for n in needles {
            assert!(err.contains(n), "error `{err}` does not mention `{n}` for:\n{text}");
        }
    }
}
