//! `memwall solve`, `compare`, `estimate --ops` and `--json` as a user (or a script) runs them.

mod common;
use common::{memwall, text};

fn json(args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let o = memwall(args, dir.path());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {out}"))
}

const DESIGN: [&str; 6] = ["--model", "llama-3.1-8b", "--device", "snapdragon-8-gen3-16gb", "--context", "32768"];

fn with<'a>(head: &[&'a str], tail: &[&'a str]) -> Vec<&'a str> {
    head.iter().chain(DESIGN.iter()).chain(tail.iter()).copied().collect()
}

#[test]
fn every_question_answers_as_a_table_and_as_versioned_json() {
    let dir = tempfile::tempdir().unwrap();
    for (what, extra, expect) in [
        ("max-context", vec![], "max context"),
        ("min-ram", vec![], "min RAM"),
        ("min-bandwidth", vec!["--target-tok-s", "10"], "GB/s peak"),
        ("cheapest-fit", vec!["--target-tok-s", "5", "--max-ppl-delta", "0.5"], "candidates"),
        ("what-to-change", vec!["--weights", "Q8_0"], "axis"),
    ] {
        let args = with(&["solve", what], &extra);
        let o = memwall(&args, dir.path());
        let (out, err) = text(&o);
        assert!(o.status.success() && out.contains(expect), "{what}: {out}{err}");
        let mut j = args.clone();
        j.push("--json");
        let doc = json(&j);
        assert_eq!(doc["schema"], "memwall.solve");
        assert_eq!(doc["version"], 2);
        assert_eq!(doc["what"], what.replace('-', "_"));
        assert_eq!(doc["design"]["model"], "llama-3.1-8b");
    }
}

/// The JSON answers agree with each other and with the estimate: the longest F16 context
/// holds KV bytes of 131072 per token within the budget, and min-ram of the design at that
/// context fits the device's RAM.
#[test]
fn json_answers_are_consistent() {
    let doc = json(&with(&["solve", "max-context"], &["--json"]));
    let f16 = &doc["answer"][0];
    assert_eq!(f16["kv"], "f16/f16");
    let c = f16["max_context_tokens"].as_u64().unwrap();
    assert!(f16["total_bytes"].as_u64().unwrap() as i64 <= f16["budget_bytes"].as_i64().unwrap());
    let q4 = doc["answer"][2]["max_context_tokens"].as_u64().unwrap();
    assert!(q4 > 3 * c, "q4_0 holds about 3.6× the tokens of f16: {q4} vs {c}");
    let ctx = c.to_string();
    let ram = json(&[
        "solve",
        "min-ram",
        "--model",
        "llama-3.1-8b",
        "--device",
        "snapdragon-8-gen3-16gb",
        "--context",
        &ctx,
        "--json",
    ]);
    assert!(ram["answer"]["min_ram_bytes"].as_u64().unwrap() <= ram["answer"]["device_ram_bytes"].as_u64().unwrap());
    let est = json(&[
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--device",
        "snapdragon-8-gen3-16gb",
        "--context",
        &ctx,
        "--json",
    ]);
    assert_eq!(est["schema"], "memwall.estimate");
    assert_eq!(est["estimate"]["fits"], true);
    assert_eq!(est["estimate"]["total_bytes"], ram["answer"]["footprint_bytes"]);
    let fp = json(&["footprint", "--model", "llama-3.1-8b", "--device", "snapdragon-8-gen3-16gb", "--json"]);
    let tensors = fp["tensors"].as_array().unwrap();
    let sum: u64 = tensors.iter().map(|t| t["bytes"].as_u64().unwrap()).sum();
    assert_eq!(sum, fp["components"]["weight_bytes"].as_u64().unwrap());
}

#[test]
fn bad_questions_exit_2_and_name_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (with(&["solve", "min-bandwidth"], &[]), "--target-tok-s"),
        (with(&["solve", "min-bandwidth"], &["--target-tok-s", "NaN"]), "target_tok_s"),
        (with(&["solve", "cheapest-fit"], &["--max-ppl-delta=-1"]), "max_ppl_delta"),
        (with(&["solve", "max-width"], &[]), "max-width"),
    ] {
        refused(&args, dir.path(), needle);
    }
}

/// Run `args` in `dir`: exit status 2 and `needle` on stderr.
fn refused(args: &[&str], dir: &std::path::Path, needle: &str) {
    let o = memwall(args, dir);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
    assert!(err.contains(needle), "{args:?}: {err}");
}

/// `estimate --ops`: every operator of the token, whose bytes add up to the estimate's bytes
/// per token, in the table and in the JSON document.
#[test]
fn estimate_ops_lists_where_the_time_goes() {
    let design = ["--model", "qwen3-30b-a3b", "--device", "snapdragon-8-gen3-16gb", "--weights", "Q3_K_M", "--ops"];
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["estimate"];
    args.extend(design);
    let o = memwall(&args, dir.path());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("operators of a decoded token") && out.contains("experts") && out.contains("lm_head"),
        "{out}"
    );
    args.push("--json");
    let doc = json(&args);
    let ops = doc["ops"].as_array().unwrap();
    let n_layers = 48;
    assert_eq!(ops.iter().filter(|o| o["op"] == "experts").count(), n_layers);
    let sum = |k: &str| ops.iter().map(|o| o[k].as_f64().unwrap()).sum::<f64>();
    let e = &doc["estimate"];
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b;
    assert!(close(sum("weight_bytes"), e["weight_bytes_per_token"].as_f64().unwrap()));
    assert!(close(sum("kv_bytes"), e["kv_bytes_per_token"].as_f64().unwrap()));
    assert!(close(sum("macs"), e["macs_per_token"].as_f64().unwrap()));
    assert!(close(sum("t_mem_s"), e["decode_terms"]["t_mem"].as_f64().unwrap()));
    assert!(ops.iter().all(|o| o["binding"].is_string() && o["time_s"].as_f64().unwrap() > 0.0));
}

/// `compare`: designs inline and from a file, later ones inheriting the first's keys; the
/// deltas in the JSON are the differences of the estimates; bad designs exit 2 naming the
/// design and what is wrong.
#[test]
fn compare_puts_designs_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("q3.toml"), "weights = \"Q3_K_M\"\nkv = \"q8_0\"\n").unwrap();
    let first = "model=llama-3.1-8b,device=snapdragon-8-gen3-16gb,context=32768";
    let args = ["compare", "--design", first, "--design", "q3.toml", "--design", "device=apple-a18-pro-8gb"];
    let o = memwall(&args, dir.path());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("2: kv=q8_0 weights=Q3_K_M") && out.contains("decode bound by") && out.contains("NO"),
        "{out}"
    );
    let mut j: Vec<&str> = args.to_vec();
    j.push("--json");
    let o = memwall(&j, dir.path());
    let doc: serde_json::Value = serde_json::from_str(&text(&o).0).unwrap();
    assert_eq!(doc["schema"], "memwall.compare");
    let d = doc["designs"].as_array().unwrap();
    assert_eq!(d.len(), 3);
    assert_eq!(d[1]["design"]["weights"], "Q3_K_M");
    assert_eq!(d[2]["design"]["weights"], "Q4_K_M", "inherited from the first design");
    let tok = |i: usize| d[i]["estimate"]["decode_tok_s"].as_f64().unwrap();
    assert!((d[1]["delta_vs_first"]["decode_tok_s"].as_f64().unwrap() - (tok(1) - tok(0))).abs() < 1e-9);
    assert_eq!(d[0]["delta_vs_first"]["total_bytes"], 0);
    for (bad, needle) in [
        (vec!["compare", "--design", first], "two to eight"),
        (vec!["compare", "--design", first, "--design", "weights=Q9_Z"], "design 2"),
        (vec!["compare", "--design", first, "--design", "colour=blue"], "design 2"),
        (vec!["compare", "--design", first, "--design", "context"], "key=value"),
        (vec!["compare", "--design", first, "--design", "missing.toml"], "design 2"),
    ] {
        refused(&bad, dir.path(), needle);
    }
}

/// `run --plot` draws the sweep as a PNG; an unknown figure format or size is refused before
/// any work, with nothing written.
#[test]
fn run_plots_the_sweep_and_refuses_unknown_formats_first() {
    let dir = tempfile::tempdir().unwrap();
    let exp = "name = \"fig\"\n[base]\nmodel = \"llama-3.1-8b\"\ndevice = \"snapdragon-8-gen3-16gb\"\n[grid]\n\"weights.mix\" = [\"Q8_0\", \"Q4_K_M\", \"Q3_K_M\"]\n\"kv.k+kv.v\" = [\"f16\", \"q8_0\"]\n";
    std::fs::write(dir.path().join("fig.toml"), exp).unwrap();
    let o = memwall(
        &["run", "fig.toml", "--out", "fig.parquet", "--plot", "fig.png", "--plot-size", "800x600"],
        dir.path(),
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("Pareto front"), "{out}");
    let png = std::fs::read(dir.path().join("fig.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    // Width and height from the IHDR chunk.
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    assert_eq!((be(&png[16..20]), be(&png[20..24])), (800, 600));
    for (args, needle) in [
        (vec!["run", "fig.toml", "--out", "a.parquet", "--plot", "fig.jpg"], ".jpg"),
        (
            vec!["run", "fig.toml", "--out", "a.parquet", "--plot", "f.png", "--plot-size", "10x10"],
            "`--plot-size` = 10x10",
        ),
    ] {
        refused(&args, dir.path(), needle);
        assert!(!dir.path().join("a.parquet").exists(), "nothing written");
    }
}

/// `estimate --depths`: the reply's decode rate at each depth, in the JSON and the table;
/// deeper is slower for a model whose attention reads grow; the same design with the prompt
/// at a depth (a fresh conversation: `--history 0`) decodes at the rate that depth lists;
/// without a conversation, the reply decodes at the end of the context.
#[test]
fn estimate_decodes_at_the_depths_asked() {
    let doc = json(&with(&["estimate", "--json", "--depths", "0,8192,32640"], &[]));
    let d = doc["depths"].as_array().unwrap();
    let rate = |i: usize| d[i]["decode_tok_s"].as_f64().unwrap();
    assert_eq!(d.len(), 3);
    assert_eq!(d[1]["depth_tokens"], 8192);
    assert!(rate(0) > rate(1) && rate(1) > rate(2), "{d:?}");
    let at = json(&with(&["estimate", "--json", "--prompt", "8192", "--history", "0"], &[]));
    assert!((at["estimate"]["decode_tok_s"].as_f64().unwrap() - rate(1)).abs() < 1e-9 * rate(1));
    assert_eq!(at["estimate"]["decode_depth_tokens"], 8192 + 64);
    let plain = json(&with(&["estimate", "--json"], &[]));
    assert!(plain.get("depths").is_none(), "absent unless asked");
    // 32768 − 128 generated + 128 / 2: the middle of a reply that ends the context.
    assert_eq!(plain["estimate"]["decode_depth_tokens"], 32768 - 128 + 64);
}
