//! The `memwall` binary as a user runs it: results, exit status 2 on bad input, and no
//! file left behind when it fails.

use std::path::Path;
use std::process::Command;

use parquet::file::reader::{FileReader, SerializedFileReader};

mod common;
use common::{memwall, text};

const SMALL: &str = r#"
name = "small"
seed = 7
[base]
model = "llama-3.2-1b"
device = "raspberry-pi-5-8gb"
weights = { mix = "Q4_K_M" }
[grid]
"weights.mix" = ["Q8_0", "Q4_K_M"]
"workload.context_tokens" = [2048, 8192]
"#;

#[test]
fn run_writes_parquet_with_metadata_and_prints_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.toml"), SMALL).unwrap();
    let o = memwall(&["run", "small.toml", "--out", "out/small.parquet"], dir.path());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("4 of 4 designs fit"), "{out}");
    let file = std::fs::File::open(dir.path().join("out/small.parquet")).unwrap();
    let reader = SerializedFileReader::new(file).unwrap();
    let meta = reader.metadata().file_metadata();
    assert_eq!(meta.num_rows(), 4);
    let kv = meta.key_value_metadata().unwrap();
    let get = |k: &str| kv.iter().find(|x| x.key == k).and_then(|x| x.value.clone()).unwrap();
    assert_eq!(get("seed"), "7");
    assert!(get("experiment_toml").contains("raspberry-pi-5-8gb"));
    assert_eq!(get("memwall_version"), env!("CARGO_PKG_VERSION"));
    let cols: Vec<String> = meta.schema_descr().columns().iter().map(|c| c.name().to_string()).collect();
    for c in ["model", "weights.mix", "workload.context_tokens", "decode_tok_s", "fits", "binding", "ppl_delta_weights"]
    {
        assert!(cols.iter().any(|x| x == c), "missing column {c}: {cols:?}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("out/small.parquet")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
    }
    // No temporary file is left next to the result.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("out")).unwrap().collect();
    assert_eq!(leftovers.len(), 1);
}

/// `[pareto]` asks for a front per context over chosen objectives: the file's column marks
/// one front per group, and the printout names each group.
#[test]
fn run_marks_a_front_per_group() {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "{SMALL}[pareto]\nby = [\"workload.context_tokens\"]\nobjectives = [\"min:total_bytes\", \"decode_tok_s\"]\n"
    );
    std::fs::write(dir.path().join("fronts.toml"), toml).unwrap();
    let o = memwall(&["run", "fronts.toml", "--out", "fronts.parquet"], dir.path());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("one per workload.context_tokens"), "{out}");
    assert!(out.contains("workload.context_tokens=2048: ") && out.contains("workload.context_tokens=8192: "), "{out}");
    let file = std::fs::File::open(dir.path().join("fronts.parquet")).unwrap();
    let batches: Vec<_> =
        ParquetRecordBatchReaderBuilder::try_new(file).unwrap().build().unwrap().map(|b| b.unwrap()).collect();
    use arrow::array::AsArray;
    let b = &batches[0];
    let pareto = b.column_by_name("pareto").unwrap().as_boolean();
    let ctx = b.column_by_name("workload.context_tokens").unwrap().as_primitive::<arrow::datatypes::UInt64Type>();
    // Q4_K_M is smaller and faster than Q8_0 at each context: it alone is on each front.
    let on: Vec<u64> = (0..b.num_rows()).filter(|&i| pareto.value(i)).map(|i| ctx.value(i)).collect();
    assert_eq!(on, vec![2048, 8192], "one design on the front of each context");
}

#[test]
fn bad_input_exits_2_names_the_field_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        (&SMALL.replace("\"Q4_K_M\"]", "\"Q4_K_Z\"]"), "`Q4_K_Z`"),
        (&SMALL.replace("context_tokens\" = [2048", "context_tokens\" = [0"), "workload.context_tokens"),
        (&SMALL.replace("raspberry-pi-5-8gb", "pi-6"), "`pi-6`"),
        (&SMALL.replace("seed = 7", "seed = -1"), "seed"),
        (&format!("{SMALL}[pareto]\nby = [\"workload.contxt_tokens\"]\n"), "pareto.by"),
        (&format!("{SMALL}[pareto]\nobjectives = [\"max:binding\"]\n"), "not of numbers"),
        (&format!("{SMALL}[pareto]\nobjectives = [\"fastest\"]\n"), "`fastest`"),
    ];
    for (toml, needle) in cases {
        std::fs::write(dir.path().join("bad.toml"), toml).unwrap();
        let o = memwall(&["run", "bad.toml", "--out", "bad.parquet"], dir.path());
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(needle), "stderr `{err}` lacks `{needle}`");
        assert!(!dir.path().join("bad.parquet").exists());
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("parquet"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn bad_flags_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let args: &[(&[&str], &str)] = &[
        (&["estimate", "--model", "llama-3.1-8b", "--device", "raspberry-pi-5-8gb", "--weights", "Q7"], "`Q7`"),
        (&["estimate", "--model", "llama-3.1-8b", "--device", "raspberry-pi-5-8gb", "--kv", "q4_K"], "q4_K"),
        (
            &["estimate", "--model", "llama-3.1-8b", "--device", "raspberry-pi-5-8gb", "--threads", "99"],
            "workload.threads",
        ),
        (&["footprint", "--model", "nope", "--device", "raspberry-pi-5-8gb"], "`nope`"),
        (&["footprint", "--model", "missing.toml", "--device", "raspberry-pi-5-8gb"], "missing.toml"),
        (
            &["estimate", "--model", "llama-3.1-8b", "--device", "raspberry-pi-5-8gb", "--backend", "npu"],
            "npu_int8_tops",
        ),
        (
            &["estimate", "--model", "llama-3.1-8b", "--device", "raspberry-pi-5-8gb", "--engine", "nope"],
            "engine profile",
        ),
        (
            &["estimate", "--model", "llama-3.1-8b", "--device", "raspberry-pi-5-8gb", "--engine", "mlc-llm"],
            "does not run on the cpu",
        ),
        (
            &[
                "estimate",
                "--model",
                "llama-3.1-8b",
                "--device",
                "apple-m2-max-32gb",
                "--backend",
                "gpu",
                "--engine",
                "mlx",
            ],
            "does not run q4_K weights",
        ),
        (&["run", "does-not-exist.toml"], "does-not-exist.toml"),
        (&["estimate", "--model", "llama-3.1-8b"], "--device"),
        // History beyond the context; depths beyond any integer and beyond the token bound.
        (
            &["estimate", "--model", "llama-3.2-1b", "--device", "raspberry-pi-5-8gb", "--history", "4000"],
            "history_tokens",
        ),
        (
            &[
                "estimate",
                "--model",
                "llama-3.2-1b",
                "--device",
                "raspberry-pi-5-8gb",
                "--depths",
                "0,99999999999999999999",
            ],
            "--depths",
        ),
        (&["estimate", "--model", "llama-3.2-1b", "--device", "raspberry-pi-5-8gb", "--depths", "-5"], "--depths"),
        (
            &[
                "estimate",
                "--model",
                "llama-3.2-1b",
                "--device",
                "raspberry-pi-5-8gb",
                "--depths",
                "1152921504606846977",
            ],
            "`depths`",
        ),
    ];
    for (a, needle) in args {
        let o = memwall(a, dir.path());
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{a:?}: {err}");
        assert!(err.contains(needle), "{a:?}: stderr `{err}` lacks `{needle}`");
    }
}

#[test]
fn a_missing_unit_figure_is_refused_or_assumed_and_labelled() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["estimate", "--model", "llama-3.2-1b", "--device", "raspberry-pi-5-8gb", "--backend", "npu"];
    let o = memwall(&base, dir.path());
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("--assume-defaults"), "{}", text(&o).1);
    let mut args = base.to_vec();
    args.push("--assume-defaults");
    let o = memwall(&args, dir.path());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("assumed") && out.contains("accelerators.npu_bandwidth_fraction"), "{out}");
    assert!(out.contains("accelerators.npu_int8_tops"), "{out}");
    // An engine by alias, shown in the report.
    let o = memwall(
        &["estimate", "--model", "llama-3.2-1b", "--device", "raspberry-pi-5-8gb", "--engine", "ollama"],
        dir.path(),
    );
    assert!(text(&o).0.contains("via llama.cpp"), "{}", text(&o).0);
}

#[test]
fn estimate_and_footprint_report_the_basics() {
    let dir = tempfile::tempdir().unwrap();
    let o = memwall(&["estimate", "--model", "llama-3.1-8b", "--device", "snapdragon-8-gen3-16gb"], dir.path());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    for needle in ["tok/s", "TTFT", "J/token", "bound by memory", "dPPL weights +0.1754"] {
        assert!(out.contains(needle), "{out}");
    }
    let o = memwall(
        &["footprint", "--model", "hypothetical-35b-dense", "--device", "snapdragon-8-gen3-16gb", "--weights", "F16"],
        dir.path(),
    );
    let (out, _) = text(&o);
    assert!(o.status.success());
    assert!(out.contains("fits: NO"), "{out}");
    let o = memwall(&["presets"], dir.path());
    let (out, _) = text(&o);
    assert!(out.contains("qwen3-30b-a3b") && out.contains("raspberry-pi-5-8gb"));
    // The same presets as one JSON document, a row per line of the tables.
    let o = memwall(&["presets", "--json"], dir.path());
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["schema"], "memwall.presets");
    for (kind, header) in [("models", "model "), ("devices", "device "), ("engines", "engine ")] {
        let table = text(&memwall(&["presets", kind], dir.path())).0;
        let rows = table.lines().filter(|l| !l.trim().is_empty() && !l.starts_with(header)).count();
        assert_eq!(doc[kind].as_array().unwrap().len(), rows, "{kind}");
    }
    let moe = doc["models"].as_array().unwrap().iter().find(|m| m["name"] == "qwen3-30b-a3b").unwrap();
    assert_eq!(moe["experts"], serde_json::json!([128, 8]));
}

const SIM: &str = r#"
name = "chat"
seed = 3
[base]
model = "llama-3.2-1b"
device = "snapdragon-8-gen3-16gb"
weights = { mix = "Q4_K_M" }
[base.sim]
seed = 3
[base.sim.session]
turns = [{ prompt_tokens = 64, gen_tokens = 64, think_s = 2 }]
[[base.sim.background]]
type = "bandwidth"
at_s = 1
duration_s = 2
share = 0.4
[grid]
"sim.policies" = [[], [{ type = "cap_rate", tok_s = 5.0 }]]
"#;

#[test]
fn simulate_prints_summaries_and_writes_one_trace() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("chat.toml"), SIM).unwrap();
    let o = memwall(
        &[
            "simulate",
            "chat.toml",
            "--duration",
            "40s",
            "--trace",
            "out/chat.parquet",
            "--summary",
            "out/sum.parquet",
            "--plot",
            "out/chat.svg",
        ],
        dir.path(),
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    for col in ["burst tok/s", "sustained tok/s", "throttle at s", "J/token", "max die °C", "killed at s"] {
        assert!(out.contains(col), "summary lacks `{col}`:\n{out}");
    }
    assert!(out.contains("trace: out/chat.parquet"), "{out}");
    let file = std::fs::File::open(dir.path().join("out/chat.parquet")).unwrap();
    let reader = SerializedFileReader::new(file).unwrap();
    let meta = reader.metadata().file_metadata();
    assert!(meta.num_rows() > 100, "{} rows", meta.num_rows());
    let kv = meta.key_value_metadata().unwrap();
    let get = |k: &str| kv.iter().find(|x| x.key == k).and_then(|x| x.value.clone()).unwrap();
    assert_eq!(get("duration_s"), "40");
    assert!(get("experiment_toml").contains("cap_rate"));
    let cols: Vec<String> = meta.schema_descr().columns().iter().map(|c| c.name().to_string()).collect();
    for c in ["point", "time_s", "phase", "latency_s", "dram_bytes", "flash_bytes", "die_c", "skin_c", "energy_j"] {
        assert!(cols.iter().any(|x| x == c), "missing column {c}: {cols:?}");
    }
    // The summary: one row per policy, with its grid value and the summary fields.
    let reader = SerializedFileReader::new(std::fs::File::open(dir.path().join("out/sum.parquet")).unwrap()).unwrap();
    let meta = reader.metadata().file_metadata();
    assert_eq!(meta.num_rows(), 2);
    let cols: Vec<String> = meta.schema_descr().columns().iter().map(|c| c.name().to_string()).collect();
    for c in
        ["point", "sim.policies", "burst_tok_s", "sustained_tok_s", "throttle_onset_s", "j_per_token", "killed_at_s"]
    {
        assert!(cols.iter().any(|x| x == c), "missing summary column {c}: {cols:?}");
    }
    // The figure: one line per policy in each panel (rate, die, skin).
    let svg = std::fs::read_to_string(dir.path().join("out/chat.svg")).unwrap();
    assert!(svg.contains("sim.policies=") && svg.matches("<polyline").count() >= 6, "{svg}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("out")).unwrap().collect();
    assert_eq!(leftovers.len(), 3);
}

#[test]
fn simulate_rejects_impossible_scenarios_with_exit_2_and_no_trace() {
    let dir = tempfile::tempdir().unwrap();
    let thermal = "[base.sim.thermal.spec]\nambient_c = 25\nleakage_per_c = 0.01\nnodes = [{ name = \"die\", capacitance_j_per_k = 2, resistance_k_per_w = -3 }]\ngovernor = { freq_steps = [1.0], volt_steps = [1.0], trip_c = [], hysteresis_c = 2, skin_limit_c = 45, poll_s = 0.1 }\n";
    let cases: &[(String, &str)] = &[
        (SIM.replace("think_s = 2", "think_s = -2"), "sim.session.turns[0].think_s"),
        (SIM.replace("share = 0.4", "share = 1.4"), "sim.background[0].share"),
        (SIM.replace("at_s = 1\n", "at_s = -1\n"), "sim.background[0].at_s"),
        (SIM.replace("tok_s = 5.0", "tok_s = 0.0"), "tok_s"),
        (SIM.replace("type = \"cap_rate\", tok_s = 5.0", "type = \"switch_quant\", to = { mix = \"Q1_Z\" }"), "Q1_Z"),
        (SIM.replace("type = \"cap_rate\", tok_s = 5.0", "type = \"reboot\""), "reboot"),
        (
            SIM.replace("[base.sim]\n", "[base.sim]\nstorage = { expert_cache_bytes = 1000 }\n"),
            "sim.storage.expert_cache_bytes",
        ),
        (format!("{SIM}{}", thermal.replace("-3", "0")), "sim.thermal.spec.nodes[0].resistance_k_per_w"),
        (format!("{SIM}{}", thermal.replace("-3", "5").replace("0.01", "9.0")), "sim.thermal.spec.leakage_per_c"),
    ];
    for (toml, needle) in cases {
        std::fs::write(dir.path().join("bad.toml"), toml).unwrap();
        let o = memwall(&["simulate", "bad.toml", "--trace", "bad.parquet", "--plot", "bad.svg"], dir.path());
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{needle}: {err}");
        assert!(err.contains(needle), "stderr `{err}` lacks `{needle}`");
        assert!(!dir.path().join("bad.parquet").exists() && !dir.path().join("bad.svg").exists());
    }
    std::fs::write(dir.path().join("ok.toml"), SIM).unwrap();
    for (d, needle) in [("-5m", "duration"), ("soon", "duration")] {
        let flag = format!("--duration={d}");
        let o = memwall(&["simulate", "ok.toml", &flag, "--trace", "bad.parquet"], dir.path());
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(needle), "{err}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("parquet"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Names of the entries of `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    v.sort();
    v
}

#[test]
fn outputs_that_would_destroy_something_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.toml"), SMALL).unwrap();
    std::fs::write(dir.path().join("chat.toml"), SIM).unwrap();
    std::fs::create_dir(dir.path().join("folder")).unwrap();
    std::fs::hard_link(dir.path().join("small.toml"), dir.path().join("same.parquet")).unwrap();
    #[cfg(unix)]
    let _socket = {
        std::os::unix::fs::symlink("chat.toml", dir.path().join("chat-link.svg")).unwrap();
        std::os::unix::net::UnixListener::bind(dir.path().join("sock.parquet")).unwrap()
    };
    let before = entries(dir.path());
    let mut cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec!["run", "small.toml", "--out", "small.toml"], "--out", "is the input small.toml"),
        (vec!["run", "small.toml", "--out", "folder/../small.toml"], "--out", "is the input"),
        (vec!["run", "small.toml", "--out", "same.parquet"], "--out", "is the input"),
        (vec!["run", "small.toml", "--out", "folder"], "--out", "is a directory"),
        (vec!["simulate", "chat.toml", "--trace", "chat.toml"], "--trace", "is the input chat.toml"),
        (vec!["simulate", "chat.toml", "--summary", "folder"], "--summary", "is a directory"),
        (vec!["simulate", "chat.toml", "--trace", "t.parquet", "--summary", "t.parquet"], "--summary", "`--trace`"),
        (
            vec!["simulate", "chat.toml", "--trace", "new/t.parquet", "--plot", "./new/x/../t.parquet"],
            "--plot",
            "`--trace`",
        ),
    ];
    #[cfg(unix)]
    cases.extend([
        (vec!["simulate", "chat.toml", "--plot", "chat-link.svg"], "--plot", "is the input chat.toml"),
        (vec!["run", "small.toml", "--out", "sock.parquet"], "--out", "is a socket"),
    ]);
    for (args, flag, needle) in &cases {
        let o = memwall(args, dir.path());
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("`{flag}`")) && err.contains(needle),
            "{args:?}: stderr `{err}` lacks {flag}, {needle}"
        );
        assert!(out.is_empty(), "{args:?} did work before refusing: {out}");
        assert_eq!(entries(dir.path()), before, "{args:?} left a file");
    }
    assert_eq!(std::fs::read_to_string(dir.path().join("small.toml")).unwrap(), SMALL);
    assert_eq!(std::fs::read_to_string(dir.path().join("chat.toml")).unwrap(), SIM);
    assert!(entries(&dir.path().join("folder")).is_empty());
}

#[cfg(unix)]
#[test]
fn a_symlinked_output_is_written_through_to_its_target() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.toml"), SMALL).unwrap();
    std::fs::create_dir(dir.path().join("store")).unwrap();
    std::os::unix::fs::symlink("store/small.parquet", dir.path().join("latest.parquet")).unwrap();
    for _ in 0..2 {
        // The first run creates the link's missing target, the second replaces it.
        let o = memwall(&["run", "small.toml", "--out", "latest.parquet"], dir.path());
        assert!(o.status.success(), "{}", text(&o).1);
        let link = std::fs::symlink_metadata(dir.path().join("latest.parquet")).unwrap();
        assert!(link.file_type().is_symlink(), "the link stays a link");
        let reader = SerializedFileReader::new(std::fs::File::open(dir.path().join("store/small.parquet")).unwrap());
        assert_eq!(reader.unwrap().metadata().file_metadata().num_rows(), 4);
        assert_eq!(entries(&dir.path().join("store")), ["small.parquet"]);
    }
}

#[test]
fn an_experiment_name_cannot_lead_the_default_output_out_of_results() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("a/b");
    std::fs::create_dir_all(&work).unwrap();
    for name in ["../../x", "/tmp/x", "sub/x", ".."] {
        std::fs::write(work.join("esc.toml"), SMALL.replace("name = \"small\"", &format!("name = {name:?}"))).unwrap();
        let o = memwall(&["run", "esc.toml"], &work);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains("`name`") && err.contains(&format!("{name:?}")), "{name}: {err}");
        assert_eq!(entries(&work), ["esc.toml"]);
        assert_eq!(entries(dir.path()), ["a"]);
    }
    // An explicit output is the user's choice: the same experiment runs with `--out`.
    let o = memwall(&["run", "esc.toml", "--out", "../x.parquet"], &work);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(dir.path().join("a/x.parquet").exists());
    // And a plain name goes to results/NAME.parquet.
    std::fs::write(work.join("ok.toml"), SMALL).unwrap();
    assert!(memwall(&["run", "ok.toml"], &work).status.success());
    assert!(work.join("results/small.parquet").exists());
}

#[cfg(unix)]
#[test]
fn sigint_and_sigterm_remove_the_temporary_trace_and_exit_128_plus_the_signal() {
    use std::time::{Duration, Instant};
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/sustained-phone.toml");
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let scenario = scenario.to_str().unwrap();
        // Ten simulated hours per point: far longer than the test waits.
        let args =
            ["simulate", scenario, "--duration", "10h", "--trace", "out/t.parquet", "--summary", "out/s.parquet"];
        let mut child = Command::new(env!("CARGO_BIN_EXE_memwall"))
            .args(args)
            .current_dir(dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        let in_flight = || out.exists() && entries(&out).iter().any(|n| n.starts_with(".memwall-"));
        while !in_flight() {
            assert!(child.try_wait().unwrap().is_none(), "memwall ended before writing its trace");
            assert!(start.elapsed() < Duration::from_secs(120), "no temporary trace after 2 minutes");
            std::thread::sleep(Duration::from_millis(10));
        }
        let pid = child.id().to_string();
        assert!(Command::new("kill").args([signal, &pid]).status().unwrap().success());
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                panic!("memwall still running 60 s after {signal}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let o = child.wait_with_output().unwrap();
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(code), "{signal}: {err}");
        assert!(err.contains("interrupted") && !err.contains("panicked"), "{err}");
        assert!(entries(&out).is_empty(), "{signal} left {:?}", entries(&out));
    }
}

#[test]
fn a_closed_stdout_or_stderr_ends_printing_quietly() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("small.toml"), SMALL).unwrap();
    // A pipe whose reader is gone: the first line written to it fails with a broken pipe.
    let closed = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        std::process::Stdio::from(writer)
    };
    let run = |args: &[&str], stdout_closed: bool, stderr_closed: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_memwall"));
        c.args(args).current_dir(dir.path());
        if stdout_closed {
            c.stdout(closed());
        }
        if stderr_closed {
            c.stderr(closed());
        }
        c.output().unwrap()
    };
    let o = run(&["presets"], true, false);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "{err}");
    // The report is lost, the results are not.
    let o = run(&["run", "small.toml", "--out", "small.parquet"], true, false);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(dir.path().join("small.parquet").exists());
    // stderr closed: progress and errors are dropped, the status stays.
    assert_eq!(run(&["run", "small.toml", "--out", "again.parquet"], true, true).status.code(), Some(0));
    assert!(dir.path().join("again.parquet").exists());
    assert_eq!(run(&["run", "does-not-exist.toml"], false, true).status.code(), Some(2));
    assert_eq!(run(&["presets"], true, true).status.code(), Some(0));
}

#[cfg(target_os = "linux")]
#[test]
fn a_stdout_that_cannot_be_written_is_an_error() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else { return };
    let o = Command::new(env!("CARGO_BIN_EXE_memwall")).arg("presets").stdout(full).output().unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("writing to stdout") && !err.contains("panicked"), "{err}");
}
