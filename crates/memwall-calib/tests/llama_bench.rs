//! llama-bench output in its four formats, refused when malformed, and a device calibrated
//! from it recovering the figures that produced the measurements.

use memwall_calib::llama_bench::{BenchFormat, calibrate, parse};
use memwall_catalog::{load_device, load_engine, load_model};
use memwall_spec::{KvQuant, Scenario, WeightQuant, Workload};

const MARKDOWN: &str = "\
| model                          |       size |     params | backend    | ngl | threads |          test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | ------: | ------------: | -------------------: |
| llama 7B Q4_0                  |   3.56 GiB |     6.74 B | Metal      |  99 |       4 |         pp512 |        629.60 ± 0.34 |
| llama 7B Q4_0                  |   3.56 GiB |     6.74 B | Metal      |  99 |       4 |         tg128 |         88.54 ± 0.04 |
| llama 8B Q4_K - Medium         |   4.58 GiB |     8.03 B | Metal      |  99 |       4 | tg128 @ d4096 |         71.18 ± 0.10 |
";

const JSON: &str = r#"[
  {"model_type": "llama 7B Q8_0", "backends": "CPU", "n_threads": 4, "n_gpu_layers": 0, "n_prompt": 0, "n_gen": 128, "n_depth": 0, "avg_ts": 13.5},
  {"model_type": "llama 7B Q8_0", "backends": "CPU", "n_threads": 4, "n_gpu_layers": 0, "n_prompt": 512, "n_gen": 0, "n_depth": 0, "avg_ts": 60.1}
]"#;

const JSONL: &str = r#"{"model_type": "qwen2 7B Q8_0", "backends": "Metal", "n_gpu_layers": 99, "n_prompt": 0, "n_gen": 32, "n_depth": 4096, "avg_ts": 74.7}
{"model_type": "qwen2 7B Q8_0", "backends": "Metal", "n_gpu_layers": 99, "n_prompt": 0, "n_gen": 32, "n_depth": 0, "avg_ts": 79.7}
"#;

const CSV: &str = "build_commit,model_type,n_threads,n_gpu_layers,n_prompt,n_gen,avg_ns,avg_ts\n\
abc,\"llama 1B F16\",8,0,0,128,1000,22.5\n";

#[test]
fn every_format_reads_into_the_same_rows() {
    let md = parse(MARKDOWN, "md").unwrap();
    assert_eq!(md.len(), 3);
    assert!(!md[0].is_generation() && md[1].is_generation());
    assert_eq!((md[1].avg_ts, md[1].n_gen, md[1].n_depth, md[1].threads), (88.54, 128, 0, Some(4)));
    assert_eq!((md[2].n_depth, md[2].mix().unwrap().as_str()), (4096, "Q4_K_M"));
    assert_eq!(md[1].unit(), memwall_spec::Backend::Gpu);
    assert_eq!(md[1].mix().unwrap(), "Q4_0");
    let js = parse(JSON, "json").unwrap();
    assert_eq!(js.len(), 2);
    assert_eq!((js[0].unit(), js[0].mix().unwrap().as_str(), js[0].avg_ts), (memwall_spec::Backend::Cpu, "Q8_0", 13.5));
    let jl = parse(JSONL, "jsonl").unwrap();
    assert_eq!((jl[0].n_depth, jl[0].line, jl[1].line), (4096, 1, 2));
    let csv = parse(CSV, "csv").unwrap();
    assert_eq!((csv[0].mix().unwrap().as_str(), csv[0].avg_ts, csv[0].line), ("F16", 22.5, 2));
}

#[test]
fn malformed_files_name_the_line_and_the_field() {
    let cases: Vec<(String, &str)> = vec![
        (MARKDOWN.replace("88.54 ± 0.04", "fast"), "line 4, t/s"),
        (MARKDOWN.replace("tg128 |         88", "tgX |         88"), "line 4, test"),
        (MARKDOWN.replace("|       4 |         tg128", "|         tg128"), "line 4, row"),
        (MARKDOWN.replace("|       4 |         tg128", "|      -4 |         tg128"), "line 4, threads"),
        (JSON.replace("\"avg_ts\": 13.5", "\"avg_ts\": -1"), "avg_ts"),
        (JSON.replace(", \"avg_ts\": 13.5", ""), "line 1, avg_ts"),
        (JSON[..JSON.len() - 3].to_string(), "json"),
        (JSONL.replace("74.7}", "74.7"), "line 1, jsonl"),
        ("a,b,c\n1,2,3\n".to_string(), "not llama-bench output"),
        ("[]".to_string(), "no result"),
    ];
    for (text, needle) in cases {
        let err = parse(&text, "bench.txt").unwrap_err().to_string();
        assert!(err.contains(needle) && err.contains("bench.txt"), "`{needle}` not in: {err}");
    }
    let bad_type = parse(&MARKDOWN.replace("llama 7B Q4_0", "mystery"), "md").unwrap();
    assert!(bad_type[1].mix().unwrap_err().to_string().contains("model_type"));
}

#[test]
fn the_model_s_parameters_and_size_are_read_in_every_format() {
    let md = parse(MARKDOWN, "md").unwrap();
    assert_eq!(md[1].model_n_params, Some(6_740_000_000));
    assert_eq!(md[1].model_size, Some((3.56 * 1024.0 * 1024.0 * 1024.0_f64).round() as u64));
    let small = MARKDOWN.replace("3.56 GiB", "636.18 MiB").replace("6.74 B", "494.03 M");
    let small = parse(&small, "md").unwrap();
    assert_eq!((small[0].model_n_params, small[0].model_size), (Some(494_030_000), Some(667_083_080)));
    assert_eq!(md[1].format, BenchFormat::Markdown);
    let js = JSON
        .replace("\"avg_ts\": 13.5", "\"avg_ts\": 13.5, \"model_n_params\": 6738415616, \"model_size\": 7161089024");
    let js = parse(&js, "json").unwrap();
    assert_eq!(
        (js[0].model_n_params, js[0].model_size, js[0].format),
        (Some(6738415616), Some(7161089024), BenchFormat::Json)
    );
    // Absent: not stated, not zero.
    assert_eq!((js[1].model_n_params, js[1].model_size), (None, None));
    let csv = parse(
        &CSV.replace("avg_ts\n", "avg_ts,model_n_params,model_size\n")
            .replace("22.5\n", "22.5,1100048384,2200099072\n"),
        "csv",
    )
    .unwrap();
    assert_eq!(
        (csv[0].model_n_params, csv[0].model_size, csv[0].format),
        (Some(1100048384), Some(2200099072), BenchFormat::Csv)
    );
    for (text, needle) in [
        (MARKDOWN.replace("6.74 B", "lots"), "line 3, params"),
        (MARKDOWN.replace("3.56 GiB", "3.56 GB"), "line 3, size"),
        (JSON.replace("\"avg_ts\": 13.5", "\"avg_ts\": 13.5, \"model_size\": -5"), "line 1, model_size"),
    ] {
        let err = parse(&text, "bench.txt").unwrap_err().to_string();
        assert!(err.contains(needle), "`{needle}` not in: {err}");
    }
}

#[test]
fn zero_negative_and_infinite_rates_are_refused_by_name_and_line() {
    for bad in ["0", "-1", "\"inf\"", "\"NaN\"", "1e999"] {
        let text = JSON.replace("\"avg_ts\": 60.1", &format!("\"avg_ts\": {bad}"));
        let err = parse(&text, "bench.json").unwrap_err().to_string();
        let want = if bad == "1e999" { "json" } else { "line 2, avg_ts" };
        assert!(err.contains(want), "{bad}: {err}");
    }
    let err = parse(&CSV.replace(",22.5", ",0"), "bench.csv").unwrap_err().to_string();
    assert!(err.contains("line 2, avg_ts") && err.contains("> 0"), "{err}");
    for bad in ["0.00 ± 0.00", "-3.00 ± 0.10", "inf ± 0.00"] {
        let err = parse(&MARKDOWN.replace("88.54 ± 0.04", bad), "bench.md").unwrap_err().to_string();
        assert!(err.contains("line 4, t/s") && err.contains("> 0"), "{bad}: {err}");
    }
}

#[test]
fn calibration_recovers_the_bandwidth_and_fixed_cost_that_made_the_rows() {
    // "Measurements": the Raspberry Pi 5 preset with its CPU reaching 0.42 of peak through
    // an engine with a 4 ms token cost and re-reading the KV twice, at several depths.
    let model = load_model("llama-3.2-1b").unwrap();
    let mut truth = load_device("raspberry-pi-5-8gb").unwrap();
    truth.memory.achievable_fraction = Some(0.42);
    let mut engine = load_engine("llama.cpp").unwrap();
    let cpu = engine.cpu.as_mut().unwrap();
    cpu.bandwidth_share = 1.0;
    cpu.per_token_s = 4e-3;
    cpu.attention_kv_reads = 2.0;
    let mut md = String::from("| model | backend | threads | test | t/s |\n| --- | --- | --: | --: | --: |\n");
    for depth in [0u64, 2048, 8192, 16384] {
        let s = Scenario {
            model: model.clone(),
            device: truth.clone(),
            weights: WeightQuant::new("Q4_0".parse().unwrap()),
            kv: KvQuant::default(),
            workload: Workload {
                prompt_tokens: depth,
                gen_tokens: 128,
                context_tokens: (depth + 128).next_multiple_of(512),
                threads: Some(4),
                history_tokens: Some(0),
                ..Workload::default()
            },
            engine: engine.clone(),
            assume_defaults: true,
            cost: Default::default(),
            sim: Default::default(),
        };
        let tok_s = memwall_sim::estimate(&s).unwrap().decode_tok_s;
        let test = if depth == 0 { "tg128".to_string() } else { format!("tg128 @ d{depth}") };
        md.push_str(&format!("| llama 1B Q4_0 | CPU | 4 | {test} | {tok_s:.3} ± 0.01 |\n"));
    }
    let rows = parse(&md, "synthetic").unwrap();
    let start = load_device("raspberry-pi-5-8gb").unwrap();
    let c = calibrate(&rows, &model, &start, &load_engine("llama.cpp").unwrap()).unwrap();
    let f = c.device.memory.achievable_fraction.unwrap();
    assert!((f / 0.42 - 1.0).abs() < 0.05, "fraction {f}");
    for r in &c.residuals {
        let (line, m, after) = (r.line, r.measured_tok_s, r.calibrated_tok_s);
        assert!((after / m - 1.0).abs() < 0.03, "line {line}: {after} vs {m}");
    }
    let cu = c.engine.cpu.as_ref().unwrap();
    assert!(cu.attention_kv_reads > 1.4, "KV reads {}", cu.attention_kv_reads);
    assert_eq!(cu.bandwidth_share, 1.0);
    assert!(c.device.name.ends_with("-calibrated") && c.engine.name.contains('@'));
    assert!(c.device.sources["memory.achievable_fraction"].contains("4 generation tests"));
    // A file mixing units is refused.
    let mixed = format!("{md}| llama 1B Q4_0 | Metal | 4 | tg128 | 50.0 ± 0.1 |\n");
    let err = calibrate(&parse(&mixed, "m").unwrap(), &model, &start, &load_engine("llama.cpp").unwrap()).unwrap_err();
    assert!(err.to_string().contains("mixes units"), "{err}");
}

/// A llama-bench table (`size`/`params` columns as llama-bench prints them) of rows in
/// `body`, starting at line 3.
fn table(body: &str) -> String {
    format!(
        "| model | size | params | backend | threads | test | t/s |\n| --- | --: | --: | --- | --: | --: | --: |\n{body}"
    )
}

fn calibrate_text(text: &str, model: &str) -> Result<memwall_calib::llama_bench::Calibrated, String> {
    let rows = parse(text, "bench").map_err(|e| e.to_string())?;
    calibrate(
        &rows,
        &load_model(model).unwrap(),
        &load_device("raspberry-pi-5-8gb").unwrap(),
        &load_engine("llama.cpp").unwrap(),
    )
    .map_err(|e| e.to_string())
}

fn refusal(text: &str, model: &str) -> String {
    match calibrate_text(text, model) {
        Ok(c) => panic!("calibrated: {:?}", c.residuals),
        Err(e) => e,
    }
}

#[test]
fn real_looking_rows_of_the_named_model_still_calibrate() {
    // Llama-3.2-1B and TinyLlama on a Raspberry Pi 5 at the rates such boards reach, with
    // the parameters and sizes llama-bench prints for these files.
    let llama = table(
        "| llama 1B Q4_K - Medium | 762.81 MiB | 1.24 B | CPU | 4 | tg128 | 11.50 ± 0.05 |
| llama 1B Q4_K - Medium | 762.81 MiB | 1.24 B | CPU | 4 | tg128 @ d2048 | 10.20 ± 0.05 |
| llama 1B Q4_K - Medium | 762.81 MiB | 1.24 B | CPU | 4 | tg128 @ d4096 | 9.30 ± 0.05 |
| llama 1B Q8_0 | 1.22 GiB | 1.24 B | CPU | 4 | tg128 | 7.60 ± 0.05 |
",
    );
    let c = calibrate_text(&llama, "llama-3.2-1b").unwrap();
    assert_eq!(c.residuals.len(), 4);
    assert!(c.residuals.iter().all(|r| (r.calibrated_tok_s / r.measured_tok_s - 1.0).abs() < 0.1));
    let tiny = table(
        "| llama 1B Q4_0 | 606.53 MiB | 1.10 B | CPU | 4 | tg128 | 14.10 ± 0.05 |
| llama 1B Q4_0 | 606.53 MiB | 1.10 B | CPU | 4 | tg128 @ d2048 | 12.20 ± 0.05 |
| llama 1B Q4_K - Medium | 636.18 MiB | 1.10 B | CPU | 4 | tg128 | 13.00 ± 0.05 |
",
    );
    let c = calibrate_text(&tiny, "tinyllama-1.1b").unwrap();
    let f = c.device.memory.achievable_fraction.unwrap();
    assert!(f > 0.3 && f < 1.0, "fraction {f}");
    // A tied model's file that stores its output matrix apart is still the model (a
    // Qwen3-1.7B F16 file: 2.03 B parameters, 3.78 GiB).
    let qwen = table("| qwen3 1.7B F16 | 3.78 GiB | 2.03 B | CPU | 4 | tg128 | 3.90 ± 0.01 |\n");
    calibrate_text(&qwen, "qwen3-1.7b").unwrap();
}

#[test]
fn rows_of_another_model_are_refused_naming_the_line_and_the_field() {
    // Llama-2-70B's rows (68.98 B, 36.20 GiB) offered for a 1B design on a Raspberry Pi.
    let llama_1b = "| llama 1B Q4_0 | 727.75 MiB | 1.24 B | CPU | 4 | tg128 | 12.00 ± 0.05 |\n";
    let big = "| llama 70B Q4_0 | 36.20 GiB | 68.98 B | CPU | 4 | tg128 | 0.35 ± 0.01 |\n";
    let err = refusal(&table(&format!("{llama_1b}{big}")), "llama-3.2-1b");
    assert!(err.contains("line 4: params") && err.contains("68.98 B") && err.contains("1.24 B"), "{err}");
    assert!(err.contains("±10 %"), "{err}");
    // The size alone tells too (a 1B's parameter count with a 70B's bytes).
    let err =
        refusal(&table("| llama 1B Q4_0 | 36.20 GiB | 1.24 B | CPU | 4 | tg128 | 0.35 ± 0.01 |\n"), "llama-3.2-1b");
    assert!(err.contains("line 3: size") && err.contains("36.20 GiB") && err.contains("±15 %"), "{err}");
    // JSON names its own fields.
    let json = r#"[{"model_type": "llama 70B Q4_0", "model_n_params": 68976648192, "model_size": 38872342528,
        "n_threads": 4, "n_prompt": 0, "n_gen": 128, "n_depth": 0, "avg_ts": 0.35}]"#;
    let err = refusal(json, "llama-3.2-1b");
    assert!(err.contains("line 1: model_n_params") && err.contains("68.98 B"), "{err}");
    let err = refusal(&json.replace("68976648192", "1235814400"), "llama-3.2-1b");
    assert!(err.contains("line 1: model_size") && err.contains("36.20 GiB"), "{err}");
    // Without either figure, the size label is held to a factor of 2.
    let bare = "| model | backend | threads | test | t/s |\n| --- | --- | --: | --: | --: |\n\
                | llama 70B Q4_0 | CPU | 4 | tg128 | 0.35 ± 0.01 |\n";
    let err = refusal(bare, "llama-3.2-1b");
    assert!(err.contains("line 3: model_type") && err.contains("70B") && err.contains("factor 2"), "{err}");
}

#[test]
fn impossible_rates_are_refused_by_name_and_line() {
    let good = table("| llama 1B Q4_0 | 727.75 MiB | 1.24 B | CPU | 4 | tg128 | 12.00 ± 0.05 |\n");
    let rows = parse(&good, "bench").unwrap();
    // Rows built by hand reach calibrate without parse's checks.
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let mut r = rows.clone();
        r[0].avg_ts = bad;
        let err = calibrate(
            &r,
            &load_model("llama-3.2-1b").unwrap(),
            &load_device("raspberry-pi-5-8gb").unwrap(),
            &load_engine("llama.cpp").unwrap(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("line 3: t/s") && err.contains("> 0"), "{bad}: {err}");
    }
}

#[test]
fn a_rate_the_device_s_bandwidth_cannot_feed_is_refused() {
    // 1e6 tok/s of a 1B model would need hundreds of TB/s; a Pi 5 has 17 GB/s.
    let text = table("| llama 1B Q4_K - Medium | 762.81 MiB | 1.24 B | CPU | 4 | tg128 | 1000000.00 ± 0.05 |\n");
    let err = refusal(&text, "llama-3.2-1b");
    for needle in ["line 3: t/s", "1000000 tok/s", "17.1 GB/s", "762.81 MiB", "L3"] {
        assert!(err.contains(needle), "`{needle}` not in: {err}");
    }
    let json = r#"{"model_type": "llama 1B Q4_0", "n_threads": 4, "n_prompt": 0, "n_gen": 128, "avg_ts": 1e6}"#;
    assert!(refusal(json, "llama-3.2-1b").contains("line 1: avg_ts"));
}

#[test]
fn a_fit_pushed_to_a_bound_or_left_far_off_is_refused() {
    // 1e-6 tok/s: slower than any plausible figure allows; the bandwidth share ends at 0.02.
    let text = table("| llama 1B Q4_K - Medium | 762.81 MiB | 1.24 B | CPU | 4 | tg128 | 0.000001 ± 0.00 |\n");
    let err = refusal(&text, "llama-3.2-1b");
    for needle in ["memory.achievable_fraction", "lower bound", "0.02", "line 3", "rms log residual"] {
        assert!(err.contains(needle), "`{needle}` not in: {err}");
    }
    // Rows that disagree with each other by a factor of 4 at one design: no figure fits both.
    let text = table(
        "| llama 1B Q4_K - Medium | 762.81 MiB | 1.24 B | CPU | 4 | tg128 | 12.00 ± 0.05 |
| llama 1B Q4_K - Medium | 762.81 MiB | 1.24 B | CPU | 4 | tg128 | 3.00 ± 0.05 |
",
    );
    let err = refusal(&text, "llama-3.2-1b");
    assert!(err.contains("rms log residual") && err.contains("0.405"), "{err}");
}

/// The estimator's prefill rate of `n` prompt tokens of Llama-3.2-1B in Q4_0 on `device`
/// with `engine`, 4 threads.
fn prefill_rate(device: &memwall_spec::DeviceSpec, engine: &memwall_spec::EngineSpec, n: u64) -> f64 {
    let s = Scenario {
        model: load_model("llama-3.2-1b").unwrap(),
        device: device.clone(),
        weights: WeightQuant::new("Q4_0".parse().unwrap()),
        kv: KvQuant::default(),
        workload: Workload {
            prompt_tokens: n,
            gen_tokens: 1,
            context_tokens: (n + 1).next_multiple_of(512),
            history_tokens: Some(0),
            threads: Some(4),
            ..Workload::default()
        },
        engine: engine.clone(),
        assume_defaults: true,
        cost: Default::default(),
        sim: Default::default(),
    };
    memwall_sim::estimate(&s).unwrap().prefill_tok_s
}

#[test]
fn prompt_tests_calibrate_the_prefill_efficiency_beside_the_decode_figures() {
    // A hand-made llama-bench table of Llama-3.2-1B Q4_0 on a Raspberry Pi 5 (4 threads):
    // two generation tests at the rates such boards reach, and two prompt tests at 40 and
    // 37 tok/s.
    let text = table(
        "| llama 1B Q4_0 | 727.75 MiB | 1.24 B | CPU | 4 | tg128 | 12.00 ± 0.05 |
| llama 1B Q4_0 | 727.75 MiB | 1.24 B | CPU | 4 | tg128 @ d2048 | 10.80 ± 0.05 |
| llama 1B Q4_0 | 727.75 MiB | 1.24 B | CPU | 4 | pp512 | 40.00 ± 0.30 |
| llama 1B Q4_0 | 727.75 MiB | 1.24 B | CPU | 4 | pp256 | 37.00 ± 0.30 |
",
    );
    let c = calibrate_text(&text, "llama-3.2-1b").unwrap();
    assert!(c.not_fitted.is_empty(), "{:?}", c.not_fitted);
    let pp: Vec<_> = c.residuals.iter().filter(|r| r.phase == memwall_calib::Phase::Prefill).collect();
    assert_eq!(pp.iter().map(|r| (r.line, r.prompt)).collect::<Vec<_>>(), [(5, 512), (6, 256)]);
    // By hand: a Pi 5 prompt is bound by arithmetic (4 × 2.4 GHz × 32 int8 MACs/cycle is
    // 3.1e11 MAC/s, against 17 GB/s that reads the 0.7 GB of weights once per 512-token
    // chunk), so its time is inversely proportional to the efficiency, and the fitted figure
    // is the profile's 0.5 × measured ÷ predicted, in the geometric mean of the two rows
    // (the fit is least squares in logs).
    let ratio = |r: &memwall_calib::llama_bench::Residual| r.measured_tok_s / r.before_tok_s;
    let profile = load_engine("llama.cpp").unwrap().cpu.unwrap().prefill_efficiency;
    let by_hand = profile * (ratio(pp[0]) * ratio(pp[1])).sqrt();
    let fitted = c.engine.cpu.as_ref().unwrap().prefill_efficiency;
    assert!((fitted / by_hand - 1.0).abs() < 0.05, "fitted {fitted}, by hand {by_hand}");
    // 40 tok/s of a model of 1.24e9 weights is 5.0e10 MAC/s, a sixth of the peak; the
    // efficiency also scales the unpacking of the weights, and the tied q6_K head (0.26e9
    // weights, a fifth) has no matrix kernel in llama.cpp, so each prompt token unpacks it
    // again (0.064 cycles a weight beside the 1/32 of its multiply-add): the figure ends
    // between a sixth and a third, below the profile's (fitted on phone, laptop and board
    // CPUs).
    assert!(fitted > 0.17 && fitted < 0.33 && fitted < profile, "{fitted} vs {profile}");
    for r in &pp {
        assert!((r.calibrated_tok_s / r.measured_tok_s - 1.0).abs() < 0.1, "{r:?}");
        assert!(r.before_tok_s > r.measured_tok_s * 1.1, "the profile predicted them too fast: {r:?}");
    }
    // The calibrated profiles predict the rows: the engine, on the calibrated device.
    let predicted = prefill_rate(&c.device, &c.engine, 512);
    assert!((predicted / 40.0 - 1.0).abs() < 0.1, "{predicted}");
    assert!(c.engine.sources["cpu.prefill_efficiency"].contains("2 prompt tests"));
    assert!(c.device.sources["memory.achievable_fraction"].contains("2 generation tests"));
}

#[test]
fn a_file_with_one_kind_of_test_calibrates_what_it_can_and_says_what_it_could_not() {
    let start = load_device("raspberry-pi-5-8gb").unwrap();
    // Prompt tests only: the decode figures stay the profiles', the prefill efficiency moves.
    let pp_only = table(
        "| llama 1B Q4_0 | 727.75 MiB | 1.24 B | CPU | 4 | pp512 | 40.00 ± 0.30 |
| llama 1B Q4_0 | 727.75 MiB | 1.24 B | CPU | 4 | pp512 @ d1024 | 35.00 ± 0.30 |
",
    );
    let c = calibrate_text(&pp_only, "llama-3.2-1b").unwrap();
    assert_eq!(c.not_fitted.len(), 1, "{:?}", c.not_fitted);
    assert!(
        c.not_fitted[0].contains("memory.achievable_fraction") && c.not_fitted[0].contains("no generation test"),
        "{:?}",
        c.not_fitted
    );
    assert_eq!(c.device.memory.achievable_fraction, start.memory.achievable_fraction);
    assert_eq!(c.residuals.iter().map(|r| r.depth).collect::<Vec<_>>(), [0, 1024]);
    let profile = load_engine("llama.cpp").unwrap();
    let (cu, pu) = (c.engine.cpu.as_ref().unwrap(), profile.cpu.as_ref().unwrap());
    assert_eq!((cu.per_token_s, cu.bandwidth_share), (pu.per_token_s, pu.bandwidth_share));
    assert!(cu.prefill_efficiency < 0.9 * pu.prefill_efficiency, "{}", cu.prefill_efficiency);
    // Generation tests only: as before, and the prefill efficiency is named as not fitted.
    let tg_only = table("| llama 1B Q4_0 | 727.75 MiB | 1.24 B | CPU | 4 | tg128 | 12.00 ± 0.05 |\n");
    let c = calibrate_text(&tg_only, "llama-3.2-1b").unwrap();
    assert_eq!(c.not_fitted.len(), 1);
    assert!(c.not_fitted[0].starts_with("cpu.prefill_efficiency: the file has no prompt test"), "{:?}", c.not_fitted);
    assert_eq!(c.engine.cpu.as_ref().unwrap().prefill_efficiency, pu.prefill_efficiency);
    // Neither kind: refused.
    let pg = table("| llama 1B Q4_0 | 727.75 MiB | 1.24 B | CPU | 4 | pg512,128 | 12.00 ± 0.05 |\n");
    assert!(refusal(&pg, "llama-3.2-1b").contains("no tg or pp test"));
}

#[test]
fn a_prompt_rate_above_the_unit_s_peak_arithmetic_is_refused() {
    // 4 threads of a Pi 5 multiply at most 4 × 2.4e9 × 32 = 3.07e11 int8 MACs/s: about 250
    // tokens/s of a model of 1.24e9 weights. 5000 tok/s is other hardware.
    let text = table("| llama 1B Q4_0 | 727.75 MiB | 1.24 B | CPU | 4 | pp512 | 5000.00 ± 0.30 |\n");
    let err = refusal(&text, "llama-3.2-1b");
    for needle in ["line 3: t/s", "5000 tok/s", "peak arithmetic", "4 threads"] {
        assert!(err.contains(needle), "`{needle}` not in: {err}");
    }
}
