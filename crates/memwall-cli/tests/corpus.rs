//! The hostile corpus: inputs a new user (or a hostile one) hands memwall, each built in the
//! test. Every case must exit 2 within its time limit (a FIFO must never block a read), print
//! nothing on stdout, say in its error what it refuses (the field, the value, the file or the
//! flag), and leave the folder it ran in exactly as it found it: no input overwritten, no
//! output half-written, no temporary file left.
//!
//! The cases are grouped by class, one test per class so a failure names its class; each
//! test runs every case of its class and reports all that fail at once.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use memwall_import::gguf::Value;

mod common;
use common::Meta;

/// How a case's file is made.
#[derive(Clone)]
enum Make {
    Text(String),
    Bytes(Vec<u8>),
    Fifo,
    Dir,
    /// A hard link to another file of the case.
    Hard(&'static str),
    /// A symbolic link to another file of the case.
    Sym(&'static str),
    /// A file of this many zero bytes, sparse (no disk written).
    Sparse(u64),
}

/// One hostile invocation.
struct Case {
    id: String,
    files: Vec<(String, Make)>,
    args: Vec<String>,
    needles: Vec<String>,
}

fn case(id: impl Into<String>, files: &[(&str, Make)], args: &[&str], needles: &[&str]) -> Case {
    Case {
        id: id.into(),
        files: files.iter().map(|(n, m)| (n.to_string(), m.clone())).collect(),
        args: args.iter().map(|a| a.to_string()).collect(),
        needles: needles.iter().map(|n| n.to_string()).collect(),
    }
}

fn text(t: &str) -> Make {
    Make::Text(t.to_string())
}

/// What is on disk under `dir`: each entry's kind, and a regular file's size and content hash
/// (FIFOs are never opened).
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let t = m.file_type();
            let what = if t.is_symlink() {
                format!("link -> {}", std::fs::read_link(&p).unwrap().display())
            } else if t.is_dir() {
                stack.push(p.clone());
                "dir".to_string()
            } else if t.is_file() {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                std::fs::read(&p).unwrap().hash(&mut h);
                format!("file {} bytes, hash {:x}", m.len(), h.finish())
            } else {
                "special".to_string()
            };
            out.insert(rel, what);
        }
    }
    out
}

/// Longest a case may run (a debug build calibrating from a table takes a few seconds).
const LIMIT: Duration = Duration::from_secs(60);

/// Run one case; `Err` says what it got wrong.
fn run(c: &Case) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (name, make) in &c.files {
        let p = d.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        match make {
            Make::Text(t) => std::fs::write(&p, t).unwrap(),
            Make::Bytes(b) => std::fs::write(&p, b).unwrap(),
            Make::Dir => std::fs::create_dir(&p).unwrap(),
            Make::Fifo => assert!(Command::new("mkfifo").arg(&p).status().unwrap().success()),
            Make::Hard(to) => std::fs::hard_link(d.join(to), &p).unwrap(),
            Make::Sym(to) => std::os::unix::fs::symlink(to, &p).unwrap(),
            Make::Sparse(len) => std::fs::File::create(&p).unwrap().set_len(*len).unwrap(),
        }
    }
    let before = snapshot(d);
    // MEMWALL_CORPUS_BIN runs the corpus against another build (an older one, to see what it
    // missed); by default, this build's binary.
    let bin = std::env::var_os("MEMWALL_CORPUS_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_memwall").into());
    let mut child = Command::new(bin)
        .args(&c.args)
        .current_dir(d)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > LIMIT {
            child.kill().unwrap();
            child.wait().unwrap();
            return Err(format!("hung: still running after {} s", LIMIT.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let o = child.wait_with_output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let mut wrong = Vec::new();
    if o.status.code() != Some(2) {
        wrong.push(format!("exit {:?}", o.status.code()));
    }
    if !out.is_empty() {
        wrong.push(format!("printed a result: {}", out.lines().next().unwrap_or_default()));
    }
    for n in &c.needles {
        if !err.contains(n.as_str()) {
            wrong.push(format!("`{n}` not in the error"));
        }
    }
    let after = snapshot(d);
    if after != before {
        let changed: Vec<&String> = after
            .keys()
            .chain(before.keys())
            .filter(|k| after.get(*k) != before.get(*k))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        wrong.push(format!("changed on disk: {changed:?}"));
    }
    if wrong.is_empty() { Ok(()) } else { Err(format!("{}\n    stderr: {}", wrong.join("; "), err.trim())) }
}

/// Run every case of a class; fail listing each case that went wrong.
fn run_all(cases: Vec<Case>) {
    assert!(!cases.is_empty());
    let failed: Vec<String> =
        cases.iter().filter_map(|c| run(c).err().map(|e| format!("{} ({:?}): {e}", c.id, c.args))).collect();
    assert!(failed.is_empty(), "{} of {} cases failed:\n{}", failed.len(), cases.len(), failed.join("\n"));
}

const PI: &str = "raspberry-pi-5-8gb";
const BIG: &str = "4294967304"; // 2^32 + 8: wraps to 8 in 32 bits

fn fixture(name: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/hf").join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A fixture's config.json with `key` set to the JSON `value`.
fn config_with(name: &str, key: &str, value: &str) -> Make {
    let mut v = fixture(name);
    v[key] = serde_json::from_str(value).unwrap();
    Make::Text(v.to_string())
}

/// A GGUF file of a 2-layer llama (hidden 256, 4 heads, 2 KV heads, FFN 512, vocabulary 1000),
/// its metadata edited by `edit`.
/// The shared tiny llama GGUF (`common::tiny_gguf`), its metadata edited by `edit`.
fn gguf(edit: &dyn Fn(&mut Meta)) -> Make {
    Make::Bytes(common::tiny_gguf(edit).0)
}

/// The tiny llama GGUF under an architecture name memwall has no mapping for (read as a
/// generic transformer from the same key names), its metadata edited by `edit`.
fn generic(edit: &dyn Fn(&mut Meta)) -> Make {
    gguf(&|m| {
        for (k, v) in m.iter_mut() {
            if *k == "general.architecture" {
                *v = Value::String("llamalike".into());
            } else if let Some(rest) = k.strip_prefix("llama.") {
                *k = Box::leak(format!("llamalike.{rest}").into_boxed_str());
            }
        }
        edit(m)
    })
}

fn set(meta: &mut [(&'static str, Value)], key: &str, v: Value) {
    meta.iter_mut().find(|(k, _)| *k == key).unwrap().1 = v;
}

fn good_gguf() -> Make {
    gguf(&|_| {})
}

/// An experiment of llama-3.2-1b on the Pi with `extra` lines appended to `[base]` (before
/// any `[grid]` in `tail`).
fn experiment(base: &str, tail: &str) -> Make {
    Make::Text(format!(
        "name = \"probe\"\n[base]\nmodel = \"llama-3.2-1b\"\ndevice = \"{PI}\"\nweights = {{ mix = \"Q4_K_M\" }}\n{base}\n{tail}"
    ))
}

fn preset(kind: &str, name: &str) -> Make {
    let t = match kind {
        "model" => memwall_lab::presets::model_text(name),
        "device" => memwall_lab::presets::device_text(name),
        _ => memwall_lab::presets::engine_text(name),
    };
    text(t.unwrap())
}

/// llama-bench JSON rows of `model_type` with `params`, `size` bytes and rates `ts` (tg128 at
/// depths 0, 2048, 4096).
fn bench(model_type: &str, params: u64, size: u64, ts: &[&str]) -> Make {
    let rows: Vec<String> = ts
        .iter()
        .zip([0, 2048, 4096])
        .map(|(t, depth)| {
            format!(
                "{{\"model_type\": \"{model_type}\", \"model_n_params\": {params}, \"model_size\": {size}, \"backends\": \"CPU\", \
                 \"n_threads\": 4, \"n_gpu_layers\": 0, \"n_prompt\": 0, \"n_gen\": 128, \"n_depth\": {depth}, \"avg_ts\": {t}}}"
            )
        })
        .collect();
    Make::Text(format!("[\n{}\n]\n", rows.join(",\n")))
}

/// Rows a Llama-3.2-1B Q4_K_M could have made on a Pi 5 (llama-bench's own figures for it).
fn good_bench() -> Make {
    bench("llama 1B Q4_K - Medium", 1_235_814_400, 807_690_240, &["11.5", "10.9", "10.4"])
}

fn calibrate<'a>(bench_file: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["calibrate", "--from-llama-bench", bench_file, "--device", PI, "--model", "llama-3.2-1b"];
    v.extend(extra);
    v
}

/// Class 1: integers beyond 2^32 and impossible numbers in a config.json.
fn hf_numbers() -> Vec<Case> {
    // (fixture, key, value, what the error must name besides the value)
    let fields = [
        ("mixtral-8x7b", "num_local_experts", BIG, "num_local_experts"),
        ("mixtral-8x7b", "num_experts_per_tok", BIG, "num_experts_per_tok"),
        ("qwen3-30b-a3b", "num_experts", BIG, "num_experts"),
        ("qwen3-30b-a3b", "num_experts_per_tok", BIG, "num_experts_per_tok"),
        ("qwen3-30b-a3b", "num_hidden_layers", BIG, "num_hidden_layers"),
        ("deepseek-v2-lite", "n_routed_experts", BIG, "n_routed_experts"),
        ("deepseek-v2-lite", "n_shared_experts", BIG, "n_shared_experts"),
        ("deepseek-v2-lite", "first_k_dense_replace", BIG, "first_k_dense_replace"),
        ("falcon-mamba-7b", "intermediate_size", "1099511627776", "read from `intermediate_size`"),
        ("lfm2-1.2b", "block_ff_dim", "1099511627776", "block_ff_dim"),
        // Mapped whole, then refused by the spec's bound on the field it became, naming the key.
        ("qwen3-0.6b", "hidden_size", "1099511627776", "read from `hidden_size`"),
        ("qwen3-0.6b", "num_attention_heads", "-1", "num_attention_heads"),
        ("qwen3-0.6b", "vocab_size", "1.5", "vocab_size"),
        ("qwen3-0.6b", "num_key_value_heads", "0", "read from `num_key_value_heads`"),
    ];
    let mut out = Vec::new();
    for (model, key, value, field) in fields {
        for cmd in ["footprint", "estimate"] {
            out.push(case(
                format!("hf {model} {key}={value} ({cmd})"),
                &[("config.json", config_with(model, key, value))],
                &[cmd, "--hf", "config.json", "--device", PI],
                &[field, value],
            ));
        }
    }
    out
}

/// Class 2: GGUF files whose metadata contradicts their tensors, or overflows, or is cut.
fn gguf_lies() -> Vec<Case> {
    let lies: Vec<(&str, Make, &str)> = vec![
        ("head_count", gguf(&|m| set(m, "llama.attention.head_count", Value::U32(8))), "head_count"),
        ("head_count_kv", gguf(&|m| set(m, "llama.attention.head_count_kv", Value::U32(8))), "head_count_kv"),
        ("ffn", gguf(&|m| set(m, "llama.feed_forward_length", Value::U32(1024))), "feed_forward_length"),
        ("hidden", gguf(&|m| set(m, "llama.embedding_length", Value::U32(512))), "embedding_length"),
        ("vocab", gguf(&|m| set(m, "llama.vocab_size", Value::U32(32000))), "vocab_size"),
        ("block_count", gguf(&|m| set(m, "llama.block_count", Value::U64(4_294_967_304))), "block_count"),
        (
            "head_count_kv 2^32+2",
            gguf(&|m| set(m, "llama.attention.head_count_kv", Value::U64(4_294_967_298))),
            "head_count_kv",
        ),
        ("context 2^64-1", gguf(&|m| set(m, "llama.context_length", Value::U64(u64::MAX))), "context_length"),
        (
            "generic head_count_kv 2^32+2",
            generic(&|m| set(m, "llamalike.attention.head_count_kv", Value::U64(4_294_967_298))),
            "head_count_kv",
        ),
        (
            "generic hidden 2^40",
            generic(&|m| set(m, "llamalike.embedding_length", Value::U64(1 << 40))),
            "embedding_length",
        ),
        ("generic ffn -", generic(&|m| set(m, "llamalike.feed_forward_length", Value::I32(-1))), "feed_forward_length"),
        (
            "experts",
            gguf(&|m| {
                m.push(("llama.expert_count", Value::U64(4_294_967_304)));
                m.push(("llama.expert_used_count", Value::U32(2)));
            }),
            "expert_count",
        ),
        ("empty", Make::Bytes(Vec::new()), "truncated"),
        ("magic", Make::Bytes(b"GGUX\x03\0\0\0".to_vec()), "not a GGUF file"),
        ("version 1", Make::Bytes(b"GGUF\x01\0\0\0".to_vec()), "version 1"),
    ];
    let mut out = Vec::new();
    for (what, file, needle) in lies {
        out.push(case(
            format!("gguf {what} (--gguf)"),
            &[("m.gguf", file.clone())],
            &["footprint", "--gguf", "m.gguf", "--device", PI],
            &[needle],
        ));
        out.push(case(
            format!("gguf {what} (--model)"),
            &[("m.gguf", file)],
            &["estimate", "--model", "m.gguf", "--device", PI],
            &[needle],
        ));
    }
    let Make::Bytes(whole) = good_gguf() else { unreachable!() };
    out.push(case(
        "gguf cut at 300 bytes",
        &[("m.gguf", Make::Bytes(whole[..300].to_vec()))],
        &["footprint", "--gguf", "m.gguf", "--device", PI],
        &["m.gguf"],
    ));
    out
}

/// Class 3: `--gguf`/`--hf` always name files; a bare name that is both preset and file.
fn names_and_files() -> Vec<Case> {
    let junk = || text("not a spec");
    vec![
        case(
            "--gguf preset",
            &[],
            &["footprint", "--gguf", "llama-3.2-1b", "--device", PI],
            &["--gguf", "no such file", "model preset"],
        ),
        case(
            "--hf preset",
            &[],
            &["estimate", "--hf", "qwen3-0.6b", "--device", PI],
            &["--hf", "no such file", "--model"],
        ),
        case(
            "--gguf a folder",
            &[("m.gguf", Make::Dir)],
            &["footprint", "--gguf", "m.gguf", "--device", PI],
            &["m.gguf", "a directory, not a regular file"],
        ),
        case(
            "--hf empty folder",
            &[("cfg", Make::Dir)],
            &["footprint", "--hf", "cfg", "--device", PI],
            &["config.json"],
        ),
        case(
            "model both",
            &[("llama-3.2-1b", junk())],
            &["estimate", "--model", "llama-3.2-1b", "--device", PI],
            &["both a model preset and a file", "./llama-3.2-1b"],
        ),
        case(
            "device both",
            &[(PI, junk())],
            &["estimate", "--model", "llama-3.2-1b", "--device", PI],
            &["both a device preset and a file"],
        ),
        case(
            "engine both",
            &[("llama.cpp", junk())],
            &["estimate", "--model", "llama-3.2-1b", "--device", PI, "--engine", "llama.cpp"],
            &["both an engine profile and a file"],
        ),
        case(
            "experiment model both",
            &[("e.toml", experiment("", "")), ("llama-3.2-1b", junk())],
            &["run", "e.toml", "--out", "o.parquet"],
            &["both a model preset and a file"],
        ),
        case(
            "experiment device both",
            &[("e.toml", experiment("", "")), (PI, junk())],
            &["simulate", "e.toml"],
            &["both a device preset and a file"],
        ),
        case(
            "power mode unknown",
            &[],
            &["estimate", "--model", "llama-3.2-1b", "--device", "jetson-orin-nano-super-8gb@9W"],
            &["device.power_mode", "9W", "15W, 25W, MAXN_SUPER"],
        ),
        case(
            "power mode without a device",
            &[],
            &["estimate", "--model", "llama-3.2-1b", "--device", "@25W"],
            &["@25W"],
        ),
        case(
            "power mode twice",
            &[],
            &["estimate", "--model", "llama-3.2-1b", "--device", "jetson-orin-nano-super-8gb@25W@15W"],
            &["device.power_mode", "15W", "lists no [[power_modes]]"],
        ),
        case(
            "power mode of a device without modes",
            &[],
            &["estimate", "--model", "llama-3.2-1b", "--device", "raspberry-pi-5-8gb@25W"],
            &["device.power_mode", "lists no [[power_modes]]"],
        ),
        case(
            "power mode with more cores than the device",
            &[(
                "d.toml",
                Make::Text(format!(
                    "{}\n[[power_modes]]\nname = \"x\"\ncpu_cores_online = 99\n",
                    memwall_lab::presets::device_text(PI).unwrap()
                )),
            )],
            &["estimate", "--model", "llama-3.2-1b", "--device", "d.toml@x"],
            &["power_modes[0].cpu_cores_online", "99"],
        ),
        case(
            "calibrate model both",
            &[("b.json", good_bench()), ("llama-3.2-1b", junk())],
            &calibrate("b.json", &["--out", "pi.toml"]),
            &["both a model preset and a file"],
        ),
    ]
}

/// Class 4: calibration from rows that cannot describe the model on the device.
fn calibration() -> Vec<Case> {
    let old = || text("old = true\n");
    let rows: Vec<(&str, Make, &[&str])> = vec![
        ("70B rows", bench("llama 70B Q4_K - Medium", 70_553_706_496, 42_520_395_776, &["0.9", "0.85", "0.8"]), &["line 1", "model_n_params"]),
        ("70B label", Make::Text("| model | backend | threads | test | t/s |\n| --- | --- | --: | --: | --: |\n| llama 70B Q4_0 | CPU | 4 | tg128 | 1.10 ± 0.01 |\n".into()), &["line 3", "model_type"]),
        ("rate 0", bench("llama 1B Q4_K - Medium", 1_235_814_400, 807_690_240, &["0", "10.9", "10.4"]), &["avg_ts", "0"]),
        ("rate -1", bench("llama 1B Q4_K - Medium", 1_235_814_400, 807_690_240, &["-1", "10.9", "10.4"]), &["avg_ts", "-1"]),
        ("rate 1e999", bench("llama 1B Q4_K - Medium", 1_235_814_400, 807_690_240, &["1e999", "10.9", "10.4"]), &["line 2", "out of range"]),
        ("rate 1e6", bench("llama 1B Q4_K - Medium", 1_235_814_400, 807_690_240, &["1e6", "1e6", "1e6"]), &["line 1", "avg_ts", "peak"]),
        ("rate 1e-6", bench("llama 1B Q4_K - Medium", 1_235_814_400, 807_690_240, &["1e-6", "1e-6", "1e-6"]), &["bound"]),
        ("rows a factor 20 apart", bench("llama 1B Q4_K - Medium", 1_235_814_400, 807_690_240, &["11.5", "0.6", "11"]), &["calibration"]),
        ("size of another mix", bench("llama 1B Q4_K - Medium", 1_235_814_400, 2_471_628_800, &["11.5", "10.9", "10.4"]), &["model_size"]),
        // A prompt-only file calibrates the prefill efficiency; a combined test (pp512+tg128) alone pins nothing.
        ("neither a generation nor a prompt test", Make::Text("[{\"model_type\": \"llama 1B Q4_K - Medium\", \"n_prompt\": 512, \"n_gen\": 128, \"avg_ts\": 60.1}]".into()), &["tgN", "ppN"]),
        ("mixed units", Make::Text("| model | backend | ngl | test | t/s |\n| --- | --- | --: | --: | --: |\n| llama 1B Q4_K - Medium | CPU | 0 | tg128 | 11.5 ± 0.1 |\n| llama 1B Q4_K - Medium | Metal | 99 | tg128 | 40.1 ± 0.1 |\n".into()), &["line 4", "mixes units"]),
        ("not llama-bench", text("a,b,c\n1,2,3\n"), &["not llama-bench output"]),
    ];
    let energy = |from: &str, to: &str| {
        let t = memwall_lab::presets::ENERGY_MEASUREMENTS_CSV;
        assert!(t.contains(from), "{from}");
        text(&t.replacen(from, to, 1))
    };
    let tables: Vec<(&str, Make, &[&str])> = vec![
        (
            "an unknown boundary",
            energy(",battery_above_idle,run_with_load,", ",solar,run_with_load,"),
            &["line 2", "boundary", "solar"],
        ),
        (
            "an unknown window",
            energy(",battery_above_idle,run_with_load,", ",battery_above_idle,forever,"),
            &["line 2", "window", "forever"],
        ),
        ("negative watts", energy(",8.35,0.44,", ",-8.35,0.44,"), &["line 2", "measured_w", "-8.35"]),
        ("NaN joules", energy(",8.35,0.44,", ",8.35,NaN,"), &["line 2", "measured_j_per_token", "NaN"]),
        ("watts its energy cannot give", energy(",8.35,0.44,", ",30,0.44,"), &["line 2", "measured_w", "30"]),
        ("no window column", energy(",boundary,window,", ",boundary,windows,"), &["line 1", "window"]),
    ];
    let energy_cases = tables.into_iter().map(|(what, file, needles)| {
        case(
            format!("validate --energy {what}"),
            &[("e.csv", file)],
            &["validate", "--energy", "--table", "e.csv"],
            needles,
        )
    });
    rows.into_iter()
        .map(|(what, file, needles)| {
            case(
                format!("calibrate {what}"),
                &[("b.json", file), ("pi.toml", old())],
                &calibrate("b.json", &["--out", "pi.toml"]),
                needles,
            )
        })
        .chain(energy_cases)
        .chain(sustained_cases())
        .collect()
}

/// Bad sustained tables: each refused naming its line, column and value.
fn sustained_cases() -> Vec<Case> {
    let sustained = |from: &str, to: &str| {
        let t = memwall_lab::presets::SUSTAINED_VALIDATION_CSV;
        assert!(t.contains(from), "{from}");
        text(&t.replacen(from, to, 1))
    };
    let tables: Vec<(&str, Make, &[&str])> = vec![
        ("no iterations", sustained(",0,3,10,", ",0,0,10,"), &["line 4", "iterations", "0"]),
        ("NaN gap", sustained(",0,3,10,", ",0,3,NaN,"), &["line 4", "gap_s", "NaN"]),
        ("an unknown cooling", sustained(",heatsink,,,", ",liquid,,,"), &["cooling", "liquid"]),
        (
            "iterations beyond the run",
            sustained(",2-3,1.0017,", ",2-9,1.0017,"),
            &["line 4", "retained_iterations", "2-9"],
        ),
        (
            "a retained fraction without its iterations",
            sustained(",2-3,1.0017,", ",,1.0017,"),
            &["line 4", "retained_iterations"],
        ),
        ("an inverted die range", sustained(",80-85,", ",85-80,"), &["measured_max_die_c", "85-80"]),
        ("no iterations column", sustained(",iterations,", ",iteration,"), &["line 1", "iterations"]),
        (
            "iterations that would run for ever",
            sustained(",0,3,10,", ",0,4000000000,0,"),
            &["line 4", "iterations", "4000000000"],
        ),
        ("a day of idle time and more", sustained(",0,3,10,", ",0,1000,86400,"), &["line 4", "gap_s", "86400"]),
        ("a start in the sun's core", sustained(",0,3,10,", ",0,3,10,1e9"), &["line 4", "start_c", "1e9"]),
    ];
    tables
        .into_iter()
        .map(|(what, file, needles)| {
            case(
                format!("validate --sustained {what}"),
                &[("s.csv", file)],
                &["validate", "--sustained", "--table", "s.csv"],
                needles,
            )
        })
        .collect()
}

/// Class 5: an output that is an input, however it is spelled or reached.
fn outputs_that_are_inputs() -> Vec<Case> {
    let exp = || experiment("", "");
    let with_files = || {
        experiment(
            "engine = \"eng.toml\"",
            "[grid]\n\"model\" = [\"llama-3.2-1b\", \"m.gguf\", \"models/m.toml\"]\n\"device\" = [\"dev\"]\n",
        )
    };
    let files = |extra: &[(&'static str, Make)]| {
        let mut v: Vec<(&str, Make)> = vec![
            ("e.toml", with_files()),
            ("eng.toml", preset("engine", "llama.cpp")),
            ("m.gguf", good_gguf()),
            ("models/m.toml", preset("model", "qwen3-0.6b")),
            ("dev", preset("device", PI)),
        ];
        v.extend(extra.iter().cloned());
        v
    };
    let host = || {
        vec![
            ("h.toml", text(include_str!("../../../datasets/hosts/zen-2c.toml"))),
            ("h.engine.toml", text(include_str!("../../../datasets/hosts/zen-2c.engine.toml"))),
        ]
    };
    let table = || text(memwall_lab::presets::VALIDATION_DECODE_CSV);
    let hf = || Make::Text(fixture("llama-3.2-1b").to_string());
    let mut out = vec![
        case(
            "run --out the experiment",
            &[("e.toml", exp())],
            &["run", "e.toml", "--out", "e.toml"],
            &["--out", "is the input"],
        ),
        case(
            "run --plot the experiment",
            &[("e.toml", exp()), ("p.svg", Make::Sym("e.toml"))],
            &["run", "e.toml", "--out", "o.parquet", "--plot", "p.svg"],
            &["--plot", "is the input"],
        ),
        case(
            "run --out a hard link",
            &[("e.toml", exp()), ("h.parquet", Make::Hard("e.toml"))],
            &["run", "e.toml", "--out", "h.parquet"],
            &["is the input"],
        ),
        case(
            "run --out a symlink",
            &[("e.toml", exp()), ("s.parquet", Make::Sym("e.toml"))],
            &["run", "e.toml", "--out", "s.parquet"],
            &["is the input"],
        ),
        case(
            "run --out respelled",
            &[("e.toml", exp()), ("sub", Make::Dir)],
            &["run", "e.toml", "--out", "sub/../e.toml"],
            &["is the input"],
        ),
        case(
            "run --out both outputs",
            &[("e.toml", exp())],
            &["run", "e.toml", "--out", "o.svg", "--plot", "./o.svg"],
            &["same file"],
        ),
    ];
    for (flag, target) in [
        ("--out", "eng.toml"),
        ("--out", "m.gguf"),
        ("--out", "models/m.toml"),
        ("--out", "dev"),
        ("--plot", "dev.svg"),
    ] {
        let mut args = vec!["run", "e.toml"];
        if flag == "--plot" {
            args.extend(["--out", "o.parquet"]);
        }
        args.extend([flag, target]);
        out.push(case(
            format!("run {flag} {target} named by the experiment"),
            // dev.svg: a hard link to the device file the grid names.
            &files(&[("dev.svg", Make::Hard("dev"))]),
            &args,
            &["is the input", flag],
        ));
    }
    for (flag, target) in
        [("--trace", "eng.toml"), ("--summary", "m.gguf"), ("--plot", "dev.svg"), ("--trace", "e.toml")]
    {
        out.push(case(
            format!("simulate {flag} {target}"),
            &files(&[("dev.svg", Make::Hard("dev"))]),
            &["simulate", "e.toml", flag, target],
            &["is the input", flag],
        ));
    }
    out.extend([
        case(
            "calibrate --out the table",
            &[("b.json", good_bench())],
            &calibrate("b.json", &["--out", "b.json"]),
            &["--out", "is the input"],
        ),
        case(
            "calibrate --out the device without extension",
            &[("b.json", good_bench()), ("dev", preset("device", PI))],
            &[
                "calibrate",
                "--from-llama-bench",
                "b.json",
                "--device",
                "./dev",
                "--model",
                "llama-3.2-1b",
                "--out",
                "dev",
            ],
            &["--out", "is the input"],
        ),
        case(
            "calibrate --out the config.json",
            &[("b.json", good_bench()), ("config.json", hf())],
            &[
                "calibrate",
                "--from-llama-bench",
                "b.json",
                "--device",
                PI,
                "--model",
                "config.json",
                "--out",
                "config.json",
            ],
            &["--out", "is the input"],
        ),
        case(
            "calibrate --engine-out the engine",
            &[("b.json", good_bench()), ("eng.toml", preset("engine", "llama.cpp"))],
            &calibrate("b.json", &["--engine", "eng.toml", "--out", "pi.toml", "--engine-out", "eng.toml"]),
            &["--engine-out", "is the input"],
        ),
        case(
            "calibrate two outputs one file",
            &[("b.json", good_bench())],
            &calibrate("b.json", &["--out", "x.toml", "--engine-out", "x.toml"]),
            &["same file"],
        ),
        case(
            "validate --out the table",
            &[("t.csv", table())],
            &["validate", "--devices", "--table", "t.csv", "--out", "t.csv"],
            &["--out", "is the input"],
        ),
        case(
            "validate --energy --out the table",
            &[("e.csv", text(memwall_lab::presets::ENERGY_MEASUREMENTS_CSV))],
            &["validate", "--energy", "--table", "e.csv", "--out", "e.csv"],
            &["--out", "is the input"],
        ),
        case(
            "validate --host --out the host",
            &host(),
            &["validate", "--host", "h.toml", "--out", "h.toml"],
            &["is the input"],
        ),
        case(
            "validate --host --out its engine",
            &host(),
            &["validate", "--host", "h.toml", "--out", "h.engine.toml"],
            &["is the input"],
        ),
        case("calibrate host --out a folder", &[("d", Make::Dir)], &["calibrate", "--out", "d"], &["a directory"]),
    ]);
    out
}

/// Class 6: inputs that are not regular files are refused at once, never waited on.
fn not_files() -> Vec<Case> {
    let fifo = |name: &'static str| vec![(name, Make::Fifo)];
    let mut out = vec![
        case("fifo model", &fifo("m.toml"), &["footprint", "--model", "m.toml", "--device", PI], &["m.toml", "FIFO"]),
        case(
            "fifo device",
            &fifo("d.toml"),
            &["estimate", "--model", "llama-3.2-1b", "--device", "d.toml"],
            &["d.toml", "FIFO"],
        ),
        case(
            "fifo bare device",
            &fifo("mydevice"),
            &["estimate", "--model", "llama-3.2-1b", "--device", "mydevice"],
            &["mydevice", "FIFO"],
        ),
        case(
            "fifo engine",
            &fifo("e.toml"),
            &["estimate", "--model", "llama-3.2-1b", "--device", PI, "--engine", "e.toml"],
            &["e.toml", "FIFO"],
        ),
        case("fifo experiment (run)", &fifo("x.toml"), &["run", "x.toml", "--out", "o.parquet"], &["x.toml", "FIFO"]),
        case("fifo experiment (simulate)", &fifo("x.toml"), &["simulate", "x.toml"], &["x.toml", "FIFO"]),
        case("fifo gguf", &fifo("m.gguf"), &["footprint", "--gguf", "m.gguf", "--device", PI], &["m.gguf", "FIFO"]),
        case(
            "fifo config.json",
            &fifo("config.json"),
            &["footprint", "--hf", "config.json", "--device", PI],
            &["config.json", "FIFO"],
        ),
        case("fifo llama-bench", &fifo("b.json"), &calibrate("b.json", &["--out", "pi.toml"]), &["b.json", "FIFO"]),
        case(
            "fifo design",
            &fifo("d1.toml"),
            &["compare", "--design", "d1.toml", "--design", "model=llama-3.2-3b"],
            &["d1.toml", "FIFO"],
        ),
        case("fifo table", &fifo("t.csv"), &["validate", "--devices", "--table", "t.csv"], &["t.csv", "FIFO"]),
        case("fifo energy table", &fifo("e.csv"), &["validate", "--energy", "--table", "e.csv"], &["e.csv", "FIFO"]),
        case("fifo host", &fifo("h.toml"), &["validate", "--host", "h.toml", "--tokens", "1"], &["h.toml", "FIFO"]),
        case(
            "directory device",
            &[("d.toml", Make::Dir)],
            &["estimate", "--model", "llama-3.2-1b", "--device", "d.toml"],
            &["d.toml", "a directory"],
        ),
        case("directory experiment", &[("x.toml", Make::Dir)], &["run", "x.toml"], &["x.toml", "a directory"]),
        case(
            "char device model",
            &[],
            &["footprint", "--model", "/dev/zero", "--device", PI],
            &["/dev/zero", "character device"],
        ),
        case(
            "char device gguf",
            &[],
            &["footprint", "--gguf", "/dev/zero", "--device", PI],
            &["/dev/zero", "character device"],
        ),
    ];
    out.push(case(
        "a 65 MiB device file",
        &[("d.toml", Make::Sparse(65 << 20))],
        &["estimate", "--model", "llama-3.2-1b", "--device", "d.toml"],
        &["d.toml", "67108864"],
    ));
    out.push(case(
        "binary as a device",
        &[("d.toml", Make::Bytes(vec![0xff, 0xfe, 0x00, 0x80]))],
        &["estimate", "--model", "llama-3.2-1b", "--device", "d.toml"],
        &["d.toml", "UTF-8"],
    ));
    // Named inside an experiment: in the base and in a grid.
    out.push(case(
        "fifo device in an experiment",
        &[("e.toml", text("name = \"f\"\n[base]\nmodel = \"llama-3.2-1b\"\ndevice = \"d.toml\"\nweights = { mix = \"Q4_K_M\" }\n")), ("d.toml", Make::Fifo)],
        &["run", "e.toml", "--out", "o.parquet"],
        &["d.toml", "FIFO"],
    ));
    out.push(case(
        "fifo gguf in a grid",
        &[("e.toml", experiment("", "[grid]\n\"model\" = [\"llama-3.2-1b\", \"m.gguf\"]\n")), ("m.gguf", Make::Fifo)],
        &["simulate", "e.toml"],
        &["m.gguf", "FIFO"],
    ));
    out.push(case(
        "fifo engine in a grid",
        &[("e.toml", experiment("", "[grid]\n\"engine\" = [\"llama.cpp\", \"x.toml\"]\n")), ("x.toml", Make::Fifo)],
        &["run", "e.toml", "--out", "o.parquet"],
        &["x.toml", "FIFO"],
    ));
    out
}

/// Class 7: grids and designs that set one field twice, and grids too large to count.
fn double_settings() -> Vec<Case> {
    let huge = {
        let axis = (0..1000).map(|i| (i + 1).to_string()).collect::<Vec<_>>().join(", ");
        let keys = [
            "workload.gen_tokens",
            "workload.prompt_tokens",
            "workload.ubatch",
            "workload.margin_bytes",
            "workload.batch",
            "workload.context_tokens",
            "workload.threads",
        ];
        keys.iter().map(|k| format!("\"{k}\" = [{axis}]\n")).collect::<String>()
    };
    vec![
        case(
            "kv.k on two axes",
            &[("e.toml", experiment("", "[grid]\n\"kv.k+kv.v\" = [\"f16\", \"q8_0\"]\n\"kv.k\" = [\"q4_0\"]\n"))],
            &["run", "e.toml", "--out", "o.parquet"],
            &["kv.k", "kv.k+kv.v", "both set it"],
        ),
        case(
            "kv.k twice in one axis",
            &[("e.toml", experiment("", "[grid]\n\"kv.k+kv.k\" = [\"f16\"]\n"))],
            &["run", "e.toml", "--out", "o.parquet"],
            &["names it twice"],
        ),
        case(
            "context on two axes",
            &[(
                "e.toml",
                experiment(
                    "",
                    "[grid]\n\"workload.context_tokens\" = [2048]\n\"workload.context_tokens+workload.prompt_tokens\" = [1024]\n",
                ),
            )],
            &["simulate", "e.toml"],
            &["workload.context_tokens", "both set it"],
        ),
        case(
            "compare model twice",
            &[],
            &[
                "compare",
                "--design",
                &format!("model=llama-3.2-1b,model=llama-3.2-3b,device={PI}"),
                "--design",
                "model=qwen3-0.6b",
            ],
            &["`model` is given twice", "model=llama-3.2-1b", "model=llama-3.2-3b"],
        ),
        case(
            "compare context twice",
            &[],
            &[
                "compare",
                "--design",
                &format!("model=llama-3.2-1b,device={PI},context=1024,context=2048"),
                "--design",
                "context=4096",
            ],
            &["`context` is given twice"],
        ),
        case(
            "design file key twice",
            &[("d.toml", text("model = \"llama-3.2-1b\"\nmodel = \"qwen3-0.6b\"\n"))],
            &["compare", "--design", "d.toml", "--design", "model=llama-3.2-3b"],
            &["d.toml"],
        ),
        case(
            "grid beyond 2^64",
            &[("e.toml", experiment("", &format!("[grid]\n{huge}")))],
            &["run", "e.toml", "--out", "o.parquet", "--max-points", "18446744073709551615"],
            &["more than 18446744073709551615 points"],
        ),
        case(
            "grid beyond --max-points",
            &[("e.toml", experiment("", "[grid]\n\"workload.batch\" = [1, 2, 3]\n"))],
            &["run", "e.toml", "--out", "o.parquet", "--max-points", "2"],
            &["3 points", "--max-points"],
        ),
    ]
}

/// Class 8: negative and out-of-range numbers in flags, refused by the flag's name.
fn flag_numbers() -> Vec<Case> {
    let mut out = Vec::new();
    for cmd in ["footprint", "estimate", "solve"] {
        for (flag, value) in [
            ("--context", "-1"),
            ("--prompt", "-5"),
            ("--gen-tokens", "-1"),
            ("--batch", "-2"),
            ("--threads", "-4"),
            ("--batch", "1.5"),
            ("--context", "18446744073709551616"),
            ("--margin-gb", "-1"),
            ("--margin-gb", "NaN"),
        ] {
            let mut args = vec![cmd];
            if cmd == "solve" {
                args.push("min-ram");
            }
            args.extend(["--model", "llama-3.2-1b", "--device", PI, flag, value]);
            out.push(case(
                format!("{cmd} {flag} {value}"),
                &[],
                &args,
                &[flag.trim_start_matches("--").split('-').next().unwrap(), value],
            ));
        }
    }
    let e = || vec![("e.toml", experiment("", ""))];
    out.extend([
        case("run --max-rows -1", &e(), &["run", "e.toml", "--max-rows", "-1"], &["--max-rows", "-1"]),
        case("run --max-points -1", &e(), &["run", "e.toml", "--max-points", "-1"], &["--max-points", "-1"]),
        case(
            "decode --tokens -3",
            &[],
            &["decode", "--model", "tinyllama-1.1b", "--tokens", "-3"],
            &["--tokens", "-3"],
        ),
        case(
            "decode --context -1",
            &[],
            &["decode", "--model", "tinyllama-1.1b", "--context", "-1"],
            &["--context", "-1"],
        ),
        case("decode --warmup -1", &[], &["decode", "--model", "tinyllama-1.1b", "--warmup", "-1"], &["--warmup"]),
        case("decode --seed -1", &[], &["decode", "--model", "tinyllama-1.1b", "--seed", "-1"], &["--seed"]),
        case("decode --threads -1", &[], &["decode", "--model", "tinyllama-1.1b", "--threads", "-1"], &["--threads"]),
        case("quality --seed -1", &[], &["quality", "--seed", "-1"], &["--seed"]),
        case("calibrate --threads -1", &[], &["calibrate", "--out", "h.toml", "--threads", "-1"], &["--threads"]),
        case("validate --tokens -1", &[], &["validate", "--host", "h.toml", "--tokens", "-1"], &["--tokens"]),
        case("validate --repeats -1", &[], &["validate", "--host", "h.toml", "--repeats", "-1"], &["--repeats"]),
        case(
            "solve --target-tok-s -5",
            &[],
            &["solve", "min-bandwidth", "--model", "llama-3.2-1b", "--device", PI, "--target-tok-s", "-5"],
            &["target_tok_s", "-5"],
        ),
        case(
            "solve --max-ppl-delta -1",
            &[],
            &["solve", "cheapest-fit", "--model", "llama-3.2-1b", "--device", PI, "--max-ppl-delta", "-1"],
            &["max_ppl_delta", "-1"],
        ),
        case("simulate --duration -5s", &e(), &["simulate", "e.toml", "--duration", "-5s"], &["duration", "-5s"]),
        case(
            "compare context=-1",
            &[],
            &["compare", "--design", &format!("model=llama-3.2-1b,device={PI}"), "--design", "context=-1"],
            &["design 2", "--context", "-1"],
        ),
    ]);
    out
}

/// Class 9: unknown names, each answered with the closest valid ones.
fn unknown_names() -> Vec<Case> {
    let model_typo =
        text(&memwall_lab::presets::model_text("llama-3.2-1b").unwrap().replacen("n_layers", "n_layer", 1));
    let device_typo =
        text(&memwall_lab::presets::device_text(PI).unwrap().replacen("kind = \"sbc\"", "kind = \"sbcc\"", 1));
    let dym = "did you mean";
    vec![
        case("model typo", &[], &["estimate", "--model", "lama-3.2-1b", "--device", PI], &[dym, "`llama-3.2-1b`"]),
        case(
            "device typo",
            &[],
            &["estimate", "--model", "llama-3.2-1b", "--device", "raspbery-pi-5-8gb"],
            &[dym, "`raspberry-pi-5-8gb`"],
        ),
        case(
            "engine typo",
            &[],
            &["estimate", "--model", "llama-3.2-1b", "--device", PI, "--engine", "lama.cpp"],
            &[dym, "`llama.cpp`"],
        ),
        case(
            "weights typo",
            &[],
            &["estimate", "--model", "llama-3.2-1b", "--device", PI, "--weights", "Q4_KM"],
            &[dym, "`Q4_K_M`"],
        ),
        case(
            "kv typo",
            &[],
            &["estimate", "--model", "llama-3.2-1b", "--device", PI, "--kv", "q8_O"],
            &[dym, "`q8_0`"],
        ),
        case("preset kind typo", &[], &["presets", "modles"], &[dym, "`models`"]),
        case(
            "solve question typo",
            &[],
            &["solve", "max-contxt", "--model", "llama-3.2-1b", "--device", PI],
            &[dym, "max"],
        ),
        case(
            "compare key typo",
            &[],
            &["compare", "--design", &format!("model=llama-3.2-1b,device={PI}"), "--design", "contxt=2048"],
            &["design 2", dym, "`context`"],
        ),
        case(
            "backend typo",
            &[],
            &["estimate", "--model", "llama-3.2-1b", "--device", PI, "--backend", "gpuu"],
            &[dym, "`gpu`"],
        ),
        case(
            "model field typo",
            &[("m.toml", model_typo)],
            &["footprint", "--model", "m.toml", "--device", PI],
            &["n_layer", dym, "`n_layers`"],
        ),
        case(
            "device kind typo",
            &[("d.toml", device_typo)],
            &["footprint", "--model", "llama-3.2-1b", "--device", "d.toml"],
            &["sbcc", dym, "`sbc`"],
        ),
        case(
            "experiment section typo",
            &[("e.toml", experiment("[base.workloads]\nbatch = 2", ""))],
            &["run", "e.toml", "--out", "o.parquet"],
            &["workloads", dym, "`workload`"],
        ),
        case(
            "experiment field typo",
            &[("e.toml", experiment("[base.workload]\ncontxt_tokens = 2048", ""))],
            &["run", "e.toml", "--out", "o.parquet"],
            &["contxt_tokens", dym, "`context_tokens`"],
        ),
        case(
            "grid model typo",
            &[("e.toml", experiment("", "[grid]\n\"model\" = [\"qwen3-0.6\"]\n"))],
            &["run", "e.toml", "--out", "o.parquet"],
            &[dym, "`qwen3-0.6b`"],
        ),
        case(
            "labels typo",
            &[(
                "e.toml",
                experiment("", "[grid]\n\"workload.batch\" = [1, 2]\n[labels]\n\"workload.bach\" = [\"a\", \"b\"]\n"),
            )],
            &["run", "e.toml", "--out", "o.parquet"],
            &[dym, "`workload.batch`"],
        ),
        case(
            "mix typo in a grid",
            &[("e.toml", experiment("", "[grid]\n\"weights.mix\" = [\"Q4_K_M\", \"Q5_KM\"]\n"))],
            &["run", "e.toml", "--out", "o.parquet"],
            &[dym, "`Q5_K_M`"],
        ),
        case(
            "compare model typo",
            &[],
            &["compare", "--design", &format!("model=llama-3.2-1b,device={PI}"), "--design", "model=qwen3-4"],
            &["design 2", dym, "`qwen3-4b`"],
        ),
    ]
}

/// Class 10: impossible numbers inside spec files and experiments.
fn spec_numbers() -> Vec<Case> {
    let model = memwall_lab::presets::model_text("llama-3.2-1b").unwrap();
    let device = memwall_lab::presets::device_text(PI).unwrap();
    let m = |from: &str, to: &str| text(&model.replacen(from, to, 1));
    let d = |from: &str, to: &str| text(&device.replacen(from, to, 1));
    vec![
        case(
            "model hidden -1",
            &[("m.toml", m("hidden = 2048", "hidden = -1"))],
            &["footprint", "--model", "m.toml", "--device", PI],
            &["hidden"],
        ),
        case(
            "model hidden 2^40",
            &[("m.toml", m("hidden = 2048", "hidden = 1099511627776"))],
            &["estimate", "--model", "m.toml", "--device", PI],
            &["model.hidden"],
        ),
        case(
            "model n_heads 0",
            &[("m.toml", m("n_heads = 32", "n_heads = 0"))],
            &["footprint", "--model", "m.toml", "--device", PI],
            &["n_heads"],
        ),
        case(
            "device ram negative",
            &[("d.toml", d("ram_bytes = 8589934592", "ram_bytes = -8"))],
            &["footprint", "--model", "llama-3.2-1b", "--device", "d.toml"],
            &["ram_bytes"],
        ),
        case(
            "experiment batch 0",
            &[("e.toml", experiment("[base.workload]\nbatch = 0", ""))],
            &["run", "e.toml", "--out", "o.parquet"],
            &["batch"],
        ),
        case(
            "experiment seed negative",
            &[(
                "e.toml",
                Make::Text(format!(
                    "name = \"s\"\nseed = -1\n[base]\nmodel = \"llama-3.2-1b\"\ndevice = \"{PI}\"\nweights = {{ mix = \"Q4_K_M\" }}\n"
                )),
            )],
            &["run", "e.toml", "--out", "o.parquet"],
            &["seed"],
        ),
        case(
            "experiment name escapes results",
            &[(
                "e.toml",
                Make::Text(format!(
                    "name = \"../x\"\n[base]\nmodel = \"llama-3.2-1b\"\ndevice = \"{PI}\"\nweights = {{ mix = \"Q4_K_M\" }}\n"
                )),
            )],
            &["run", "e.toml"],
            &["name", "../x"],
        ),
        case(
            "empty grid axis",
            &[("e.toml", experiment("", "[grid]\n\"workload.batch\" = []\n"))],
            &["run", "e.toml", "--out", "o.parquet"],
            &["workload.batch", "at least one value"],
        ),
    ]
}

#[test]
fn the_corpus_holds_at_least_150_cases() {
    let n = [
        hf_numbers().len(),
        gguf_lies().len(),
        names_and_files().len(),
        calibration().len(),
        outputs_that_are_inputs().len(),
        not_files().len(),
        double_settings().len(),
        flag_numbers().len(),
        unknown_names().len(),
        spec_numbers().len(),
    ]
    .iter()
    .sum::<usize>();
    assert!(n >= 150, "{n} cases");
    eprintln!("{n} hostile cases");
}

#[test]
fn config_json_numbers_beyond_their_bounds_are_refused() {
    run_all(hf_numbers());
}

#[test]
fn gguf_metadata_that_contradicts_its_tensors_is_refused() {
    run_all(gguf_lies());
}

#[test]
fn model_files_are_always_files_and_ambiguous_names_are_refused() {
    run_all(names_and_files());
}

#[test]
fn calibration_refuses_rows_that_cannot_be_the_model_on_the_device() {
    run_all(calibration());
}

#[test]
fn no_output_may_be_an_input() {
    run_all(outputs_that_are_inputs());
}

#[test]
fn inputs_that_are_not_regular_files_are_refused_at_once() {
    run_all(not_files());
}

#[test]
fn a_field_set_twice_and_uncountable_grids_are_refused() {
    run_all(double_settings());
}

#[test]
fn numeric_flags_refuse_negative_and_out_of_range_values_by_name() {
    run_all(flag_numbers());
}

#[test]
fn unknown_names_suggest_the_closest_valid_ones() {
    run_all(unknown_names());
}

#[test]
fn impossible_numbers_in_spec_files_are_refused() {
    run_all(spec_numbers());
}
