//! The page's requests answered natively: the same answers the WebAssembly module gives.

use super::*;

fn ask(request: Value) -> Value {
    match answer(&request.to_string(), &[]) {
        Ok(Answer::Json(j)) => serde_json::from_str(&j).unwrap(),
        other => panic!("{request}: {other:?}"),
    }
}

fn refused(request: Value) -> String {
    answer(&request.to_string(), &[]).expect_err(&request.to_string())
}

fn design() -> Value {
    json!({"op": "estimate", "model": "qwen3-4b", "device": "Pixel 8", "kv_k": "f16", "kv_v": "f16",
           "context": 4096, "prompt": 512, "gen_tokens": 128, "batch": 1, "backend": "cpu", "margin_gb": 0.5,
           "depths": [0, 1024, 3968]})
}

#[test]
fn every_choice_the_pickers_offer_is_accepted() {
    let p = ask(json!({"op": "presets"}));
    assert_eq!(p["schema"], "memwall.presets");
    assert!(p["models"].as_array().unwrap().len() > 10 && p["database"].as_array().unwrap().len() > 50);
    for t in p["file_types"].as_array().unwrap() {
        t.as_str().unwrap().parse::<Mix>().unwrap();
    }
    for k in p["kv_formats"].as_array().unwrap() {
        let mut d = design();
        d["kv_k"] = k.clone();
        d["kv_v"] = k.clone();
        assert_eq!(ask(d)["estimate"]["design"]["kv_k"], *k);
    }
    for e in p["engines"].as_array().unwrap() {
        e["name"].as_str().unwrap().parse::<EngineProfile>().unwrap();
    }
}

/// The page's answer is the command line's: the same report functions on the same scenario,
/// in the same documents.
#[test]
fn an_estimate_is_the_reports_of_its_scenario() {
    let a = ask(design());
    let mut fields = design();
    fields.as_object_mut().unwrap().remove("op");
    let req: DesignRequest = serde_json::from_value(fields).unwrap();
    let s = req.scenario().unwrap();
    assert_eq!(s.device.name, "tensor-g3-8gb");
    assert_eq!(s.workload.margin_bytes, 500_000_000);
    let r = memwall_lab::report::estimate(&s, false, &[0, 1024, 3968]).unwrap();
    let want = memwall_lab::report::document("estimate", r.json());
    assert_eq!(a["estimate"], serde_json::from_str::<Value>(&want.to_string()).unwrap());
    assert_eq!(a["footprint"]["schema"], "memwall.footprint");
    assert_eq!(a["footprint"]["components"]["total_bytes"], a["estimate"]["estimate"]["total_bytes"]);
    let depths = a["estimate"]["depths"].as_array().unwrap();
    assert!(depths[0]["decode_tok_s"].as_f64() > depths[2]["decode_tok_s"].as_f64(), "deeper is slower");
    let cmd: Vec<String> = serde_json::from_value(a["command"].clone()).unwrap();
    let flags = cmd.join(" ");
    assert!(flags.starts_with("estimate --model qwen3-4b --device Pixel 8 --kv-k f16"), "{flags}");
    assert!(flags.contains("--margin-gb 0.5") && flags.contains("--depths 0,1024,3968") && flags.ends_with("--json"));
}

#[test]
fn bad_choices_are_refused_naming_field_and_value() {
    let with = |k: &str, v: Value| {
        let mut d = design();
        d[k] = v;
        refused(d)
    };
    let e = with("weights", json!("Q9_K"));
    assert!(e.contains("`weights`") && e.contains("Q9_K"), "{e}");
    let e = with("kv_k", json!("q3_x"));
    assert!(e.contains("kv_k") && e.contains("q3_x"), "{e}");
    let e = with("margin_gb", json!(-1.0));
    assert!(e.contains("`margin_gb` = -1"), "{e}");
    let e = with("device", json!("pixl-8"));
    assert!(e.contains("pixl-8") && e.contains("Pixel 8"), "did you mean: {e}");
    let e = with("context", json!(100));
    assert!(e.contains("context"), "{e}");
    let e = with("backend", json!("tpu"));
    assert!(e.contains("backend") && e.contains("tpu"), "{e}");
    let e = with("imported", json!("x.gguf"));
    assert!(e.contains("`model`"), "a preset and a file at once: {e}");
    let e = refused(
        json!({"op": "estimate", "imported": "never.gguf", "device": "Pixel 8", "kv_k": "f16", "kv_v": "f16",
                          "context": 4096, "prompt": 512, "gen_tokens": 128, "batch": 1, "backend": "cpu", "margin_gb": 0}),
    );
    assert!(e.contains("`imported` = never.gguf"), "{e}");
    let e = refused(json!({"op": "estimate", "model": "qwen3-4b", "colour": 1}));
    assert!(e.starts_with("request:") && e.contains("colour"), "{e}");
    let e = with("context", json!(1e30));
    assert!(e.contains("`context`"), "a number beyond u64 names its field: {e}");
    let e = with("depths", json!([0, -5]));
    assert!(e.contains("depths"), "{e}");
    assert!(refused(json!({"op": "fly"})).contains("fly"));
}

#[test]
fn a_dropped_config_json_is_a_model_for_later_designs() {
    let text = include_bytes!("../../../tests/fixtures/hf/qwen3-0.6b.json");
    let req = json!({"op": "import", "kind": "hf", "name": "qwen3-0.6b.json", "file_len": text.len()});
    let a = match answer(&req.to_string(), text).unwrap() {
        Answer::Json(j) => serde_json::from_str::<Value>(&j).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(a["model"], "qwen3-0.6b");
    assert_eq!(a["layers"], 28);
    assert!(a["model_toml"].as_str().unwrap().contains("n_layers = 28"));
    let mut d = design();
    d.as_object_mut().unwrap().remove("model");
    d["imported"] = json!("qwen3-0.6b.json");
    let e = ask(d);
    assert_eq!(e["estimate"]["design"]["model"], "qwen3-0.6b");
    // The same shapes as the preset of that model (the config.json it was written from).
    let preset = ask(
        json!({"op": "estimate", "model": "qwen3-0.6b", "device": "Pixel 8", "kv_k": "f16", "kv_v": "f16",
                            "context": 4096, "prompt": 512, "gen_tokens": 128, "batch": 1, "backend": "cpu", "margin_gb": 0.5}),
    );
    assert_eq!(e["estimate"]["estimate"]["params"], preset["estimate"]["estimate"]["params"]);
}

#[test]
fn a_bad_model_file_is_refused_naming_it() {
    let gguf = json!({"op": "import", "kind": "gguf", "name": "cut.gguf", "file_len": 1_000_000});
    let e = answer(&gguf.to_string(), b"GGUF\x03\x00\x00\x00\x05").unwrap_err();
    assert!(e.contains("cut.gguf"), "{e}");
    let e = answer(&gguf.to_string(), b"PK\x03\x04 not a gguf").unwrap_err();
    assert!(e.contains("not a GGUF file"), "{e}");
    let hf = json!({"op": "import", "kind": "hf", "name": "x.json", "file_len": 3});
    assert!(answer(&hf.to_string(), b"{\"num_hidden_layers\": -4}").is_err());
    assert!(answer(&hf.to_string(), &[0xff, 0xfe]).unwrap_err().contains("UTF-8"));
    let other = json!({"op": "import", "kind": "onnx", "name": "m.onnx", "file_len": 3});
    assert!(answer(&other.to_string(), b"abc").unwrap_err().contains("`kind` = onnx"));
}

const SWEEP: &str = r#"
name = "page-sweep"
seed = 0
[base]
model = "qwen3-4b"
device = "Pixel 8"
weights = { mix = "Q4_K_M" }
kv = { k = "f16", v = "f16" }
[base.workload]
prompt_tokens = 512
gen_tokens = 128
context_tokens = 4096
[grid]
"weights.mix" = ["Q8_0", "Q4_K_M", "Q2_K"]
"kv.k+kv.v" = ["f16", "q8_0"]
"#;

#[test]
fn a_sweep_answers_its_rows_with_the_front_or_the_parquet_file() {
    let a = ask(json!({"op": "sweep", "experiment": SWEEP}));
    let t = &a["table"]["data"];
    assert_eq!(t["point"].as_array().unwrap().len(), 6);
    let front = t["pareto"].as_array().unwrap().iter().filter(|v| v.as_bool().unwrap()).count();
    assert!((1..6).contains(&front), "{front} of 6 on the front");
    assert_eq!(a["fronts"]["groups"][0]["members"].as_array().unwrap().len(), front);
    // The rows are the sweep's own.
    let exp = Experiment::parse(SWEEP, "x").unwrap();
    let direct = memwall_lab::Sweep::new(&exp).unwrap().table().unwrap();
    let rows: Vec<usize> = (0..6).collect();
    assert_eq!(memwall_lab::columns::batch_json(&direct, &rows)["data"]["decode_tok_s"], t["decode_tok_s"]);
    let Answer::Bytes(p) =
        answer(&json!({"op": "sweep", "experiment": SWEEP, "parquet": true}).to_string(), &[]).unwrap()
    else {
        panic!("bytes")
    };
    assert!(p.starts_with(b"PAR1") && p.ends_with(b"PAR1") && p.len() > 1000);
    let e = answer(&json!({"op": "sweep", "experiment": "name = 3"}).to_string(), &[]).unwrap_err();
    assert!(e.contains("name"), "{e}");
}

#[test]
fn a_simulation_answers_its_summary_and_a_thinned_trace() {
    let text = format!(
        "{SWEEP}\n[base.sim]\nduration_s = 60\n[base.sim.session]\nturns = [{{ prompt_tokens = 64, gen_tokens = 64, think_s = 2 }}]\nrepeat = 0\n"
    )
    .replace("[grid]\n\"weights.mix\" = [\"Q8_0\", \"Q4_K_M\", \"Q2_K\"]\n\"kv.k+kv.v\" = [\"f16\", \"q8_0\"]\n", "");
    let a = ask(json!({"op": "simulate", "experiment": text, "max_trace_rows": 50}));
    assert_eq!(a["summary"]["data"]["point"].as_array().unwrap().len(), 1);
    let drawn = a["trace"]["data"]["time_s"].as_array().unwrap().len();
    let all = a["trace_rows"].as_u64().unwrap() as usize;
    let events =
        a["trace"]["data"]["events"].as_array().unwrap().iter().filter(|e| !e.as_str().unwrap().is_empty()).count();
    assert!(all > 50 && drawn <= 51 + events + 1, "{drawn} of {all} rows drawn, {events} with events");
    let times: Vec<f64> =
        a["trace"]["data"]["time_s"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]) && *times.last().unwrap() > 50.0);
    let e = refused(json!({"op": "simulate", "experiment": text, "duration_s": -5.0, "max_trace_rows": 50}));
    assert!(e.contains("duration_s"), "{e}");
}
