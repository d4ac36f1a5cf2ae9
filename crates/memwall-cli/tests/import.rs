//! Models given as files: `--gguf`, `--hf`, `--model file`, and experiments naming a GGUF.

mod common;
use common::{memwall, text};

/// The shared 2-layer llama GGUF written as `tiny.gguf` in `dir`; its tensor data bytes.
fn tiny_gguf(dir: &std::path::Path) -> u64 {
    let (bytes, data) = common::tiny_gguf(&|_| {});
    std::fs::write(dir.join("tiny.gguf"), bytes).unwrap();
    data
}

#[test]
fn footprint_of_a_gguf_counts_the_files_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = tiny_gguf(dir.path());
    let o = memwall(&["footprint", "--gguf", "tiny.gguf", "--device", "raspberry-pi-5-16gb"], dir.path());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains(&format!("weight bytes: {bytes} in 20 tensors")), "{out}");
    assert!(out.contains("weights stored"), "{out}");
    assert!(err.contains("imported tiny.gguf: 2 layers") && err.contains("file type Q4_K_M"), "{err}");
    // `--model file.gguf` is the same; `--weights` swaps the file's types for a mix's.
    let o = memwall(&["footprint", "--model", "tiny.gguf", "--device", "raspberry-pi-5-16gb"], dir.path());
    assert!(text(&o).0.contains(&format!("weight bytes: {bytes} ")));
    let o = memwall(
        &["footprint", "--gguf", "tiny.gguf", "--device", "raspberry-pi-5-16gb", "--weights", "F16"],
        dir.path(),
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(!out.contains(&format!("weight bytes: {bytes} ")), "{out}");
    let o = memwall(
        &["estimate", "--gguf", "tiny.gguf", "--device", "raspberry-pi-5-16gb", "--context", "1024"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", text(&o).1);
}

#[test]
fn broken_model_files_exit_2_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    tiny_gguf(dir.path());
    let whole = std::fs::read(dir.path().join("tiny.gguf")).unwrap();
    std::fs::write(dir.path().join("cut.gguf"), &whole[..200]).unwrap();
    let fifo = std::process::Command::new("mkfifo").arg(dir.path().join("fifo.gguf")).status().unwrap();
    assert!(fifo.success());
    std::fs::write(dir.path().join("bad.json"), "{\"model_type\": \"llama\", \"num_hidden_layers\": -1}").unwrap();
    for (flag, file, needle) in [
        ("--gguf", "cut.gguf", "cut.gguf, byte"),
        ("--gguf", "missing.gguf", "missing.gguf"),
        ("--hf", "bad.json", "num_hidden_layers"),
        ("--model", "x.gguf", "x.gguf"),
        ("--gguf", "fifo.gguf", "not a regular file"),
    ] {
        let o = memwall(&["footprint", flag, file, "--device", "raspberry-pi-5-16gb"], dir.path());
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{file}: {err}");
        assert!(err.contains(needle), "{file}: {err}");
    }
    // `stored` names a GGUF's own types: refused for a preset.
    let o = memwall(
        &["footprint", "--model", "llama-3.2-1b", "--device", "raspberry-pi-5-16gb", "--weights", "stored"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("weights.mix"), "{}", text(&o).1);
}

#[test]
fn hf_configs_estimate_like_their_presets() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/hf/qwen3-0.6b.json");
    let cfg = cfg.to_str().unwrap();
    let run = |model: &[&str]| {
        let o = memwall(
            &[&["estimate"][..], model, &["--device", "raspberry-pi-5-16gb", "--weights", "Q8_0"]].concat(),
            dir.path(),
        );
        let (out, err) = text(&o);
        assert!(o.status.success(), "{err}");
        out.lines().find(|l| l.starts_with("decode")).unwrap().to_string()
    };
    assert_eq!(run(&["--hf", cfg]), run(&["--model", "qwen3-0.6b"]));
}

#[test]
fn an_experiment_over_a_gguf_uses_its_types_unless_it_sweeps_the_mix() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = tiny_gguf(dir.path());
    let exp = |grid: &str| {
        format!(
            "name = \"g\"\n[base]\nmodel = \"tiny.gguf\"\ndevice = \"raspberry-pi-5-16gb\"\n[base.weights]\nmix = \"Q4_0\"\n\
             [base.workload]\ncontext_tokens = 2048\n[grid]\n{grid}\n"
        )
    };
    std::fs::write(dir.path().join("a.toml"), exp("\"kv.k+kv.v\" = [\"f16\", \"q8_0\"]")).unwrap();
    std::fs::write(dir.path().join("b.toml"), exp("\"weights.mix\" = [\"Q4_0\", \"Q8_0\"]")).unwrap();
    // (weights.mix, weight_bytes) of every row of a results file.
    let rows = |file: &str| -> Vec<(String, u64)> {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let r = SerializedFileReader::new(std::fs::File::open(dir.path().join(file)).unwrap()).unwrap();
        r.get_row_iter(None)
            .unwrap()
            .map(|row| {
                let row = row.unwrap();
                let get = |name: &str| row.get_column_iter().find(|(n, _)| *n == name).unwrap().1.to_string();
                (get("weights.mix").trim_matches('"').to_string(), get("weight_bytes").parse().unwrap())
            })
            .collect()
    };
    let o = memwall(&["run", "a.toml", "--out", "a.parquet"], dir.path());
    assert!(o.status.success(), "{}", text(&o).1);
    assert_eq!(rows("a.parquet"), vec![("stored".to_string(), bytes); 2], "the file's own types");
    let o = memwall(&["run", "b.toml", "--out", "b.parquet"], dir.path());
    assert!(o.status.success(), "{}", text(&o).1);
    let b = rows("b.parquet");
    assert_eq!((b[0].0.as_str(), b[1].0.as_str()), ("Q4_0", "Q8_0"), "a swept mix");
    assert!(b[0].1 != bytes && b[1].1 > b[0].1, "{b:?}");
}

#[test]
fn a_config_json_quantization_config_sets_the_weights_and_fp8_kv_halves_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/hf/qwen3-0.6b.json");
    let mut cfg: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    cfg["quantization_config"] =
        serde_json::json!({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]});
    std::fs::write(dir.path().join("config.json"), cfg.to_string()).unwrap();
    let footprint = |extra: &[&str]| {
        let args = [&["footprint", "--hf", "config.json", "--device", "raspberry-pi-5-16gb"][..], extra].concat();
        let o = memwall(&args, dir.path());
        let (out, err) = text(&o);
        assert!(o.status.success(), "{err}");
        let field = |prefix: &str| -> String {
            out.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}: {out}")).to_string()
        };
        let weight_bytes: u64 = field("weight bytes: ").split_whitespace().nth(2).unwrap().parse().unwrap();
        (weight_bytes, field("kv cache"), out.lines().next().unwrap().to_string(), err)
    };
    let (stated, kv_f16, head, err) = footprint(&[]);
    assert!(head.contains("fp8_e4m3-b128"), "{head}");
    assert!(err.contains("quantization_config: weights in fp8_e4m3-b128"), "{err}");
    // Embeddings and head stay bf16: more than every weight in FP8, less than all in bf16.
    let (all_fp8, ..) = footprint(&["--weights", "fp8_e4m3-b128"]);
    let (all_bf16, ..) = footprint(&["--weights", "BF16"]);
    assert!(all_fp8 < stated && stated < all_bf16, "{all_fp8} < {stated} < {all_bf16}");
    // An FP8 KV cache: half the f16 cache's bytes.
    let (_, kv_fp8, head, _) = footprint(&["--kv", "fp8_e4m3"]);
    assert!(head.contains("KV fp8_e4m3/fp8_e4m3"), "{head}");
    let gb = |l: &str| l.split_whitespace().last().unwrap().parse::<f64>().unwrap();
    assert!((gb(&kv_fp8) * 2.0 - gb(&kv_f16)).abs() <= 2e-3 * gb(&kv_f16) + 1e-3, "{kv_fp8} vs {kv_f16}");
}
