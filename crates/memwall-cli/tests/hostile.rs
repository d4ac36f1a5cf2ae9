//! Hostile input as a new user would try it: overflowing, absurd and out-of-range numbers in
//! flags and in model and device files. Each must exit 2 with an error that names the field,
//! the value and the bound, never print a result.

use std::path::Path;

mod common;
use common::memwall;

/// A preset's TOML text with the first line that sets `key` replaced by `line`.
fn edited(text: &str, key: &str, line: &str) -> String {
    let mut done = false;
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            if !done && l.split('=').next().is_some_and(|k| k.trim() == key) {
                done = true;
                line.to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    assert!(done, "no `{key}` line");
    out.join("\n")
}

/// Run `args`, expect exit 2, nothing on stdout, and every needle in the error.
fn refused(args: &[&str], dir: &Path, needles: &[&str]) {
    let o = memwall(args, dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?} exited {:?}: {err}", o.status);
    assert!(o.stdout.is_empty(), "{args:?} printed a result: {}", String::from_utf8_lossy(&o.stdout));
    for n in needles {
        assert!(err.contains(n), "{args:?}: `{n}` not in: {err}");
    }
}

const BASE: [&str; 4] = ["--model", "llama-3.2-1b", "--device", "raspberry-pi-5-8gb"];

fn with<'a>(cmd: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![cmd];
    v.extend(BASE);
    v.extend(extra);
    v
}

#[test]
fn token_counts_that_would_wrap_the_kv_cache_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in ["footprint", "estimate"] {
        for ctx in ["18446744073709551615", "140737488355328"] {
            let args = with(cmd, &["--context", ctx, "--prompt", "1", "--gen-tokens", "1"]);
            refused(&args, dir.path(), &["workload.context_tokens", ctx, "4294967296"]);
        }
        refused(&with(cmd, &["--prompt", "18446744073709551615"]), dir.path(), &["workload.prompt_tokens"]);
        refused(
            &with(cmd, &["--gen-tokens", "18446744073709551615", "--prompt", "1"]),
            dir.path(),
            &["workload.gen_tokens"],
        );
    }
}

#[test]
fn a_kv_cache_beyond_2_60_bytes_is_an_error_not_a_wrapped_number() {
    let dir = tempfile::tempdir().unwrap();
    // 2^32 tokens × 16 layers × 8 KV heads × 64 × 2 B × 2 × 65536 sequences = 2^65 B.
    let args =
        with("footprint", &["--context", "4294967296", "--prompt", "1", "--gen-tokens", "1", "--batch", "65536"]);
    refused(&args, dir.path(), &["workload.context_tokens", "KV cache", "2^60"]);
}

#[test]
fn absurd_flags_are_refused_naming_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    refused(&with("footprint", &["--margin-gb", "1e30"]), dir.path(), &["--margin-gb", "plausible bound"]);
    refused(&with("estimate", &["--batch", "1000000"]), dir.path(), &["workload.batch", "65536"]);
    refused(&with("estimate", &["--threads", "1000000"]), dir.path(), &["workload.threads"]);
}

#[test]
fn absurd_model_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let model = memwall_lab::presets::model_text("llama-3.2-1b").unwrap();
    let cases = [
        ("vocab", "vocab = 18446744073709551615", "model.vocab"),
        ("hidden", "hidden = 1099511627776", "model.hidden"),
        ("max_context", "max_context = 0", "model.max_context"),
        ("n_layers", "n_layers = 1000000", "model.n_layers"),
    ];
    for (key, line, field) in cases {
        std::fs::write(dir.path().join("m.toml"), edited(model, key, line)).unwrap();
        for cmd in ["footprint", "estimate"] {
            refused(&[cmd, "--model", "m.toml", "--device", "raspberry-pi-5-8gb"], dir.path(), &[field]);
        }
    }
}

#[test]
fn absurd_device_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let device = memwall_lab::presets::device_text("raspberry-pi-5-8gb").unwrap();
    let cases = [
        ("max_ghz", "max_ghz = 1e30", &["clusters[0].max_ghz", "plausible bound 10"][..]),
        ("kind", "kind = \"spaceship\"", &["spaceship", "phone"][..]),
        ("ram_bytes", "ram_bytes = 18446744073709551615", &["memory.ram_bytes", "2^60"][..]),
        // The preset states no reserve (its class's published limit applies): one is added.
        (
            "ram_bytes",
            "ram_bytes = 8589934592\nos_reserved_bytes = 18446744073709551615",
            &["memory.os_reserved_bytes"][..],
        ),
        // Other apps that leave nothing of the app limit (0.88 of 8 GiB on a Linux board).
        (
            "ram_bytes",
            "ram_bytes = 8589934592\nother_apps_bytes = 8000000000",
            &["memory.other_apps_bytes", "8000000000"][..],
        ),
        ("data_rate_mtps", "data_rate_mtps = 1e12", &["memory.data_rate_mtps"][..]),
    ];
    for (key, line, needles) in cases {
        std::fs::write(dir.path().join("d.toml"), edited(device, key, line)).unwrap();
        refused(&["estimate", "--model", "llama-3.2-1b", "--device", "d.toml"], dir.path(), needles);
    }
}

#[test]
fn a_context_beyond_max_context_is_allowed_but_warned() {
    let dir = tempfile::tempdir().unwrap();
    // llama-3.2-1b is trained for 131072 tokens.
    let o = memwall(&with("footprint", &["--context", "200000"]), dir.path());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("warning: context of 200000 tokens exceeds llama-3.2-1b's max_context = 131072"), "{err}");
    let o = memwall(&with("footprint", &["--context", "131072"]), dir.path());
    assert!(o.status.success() && o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_group_that_does_not_divide_a_row_pads_instead_of_falling_back_to_f16() {
    let dir = tempfile::tempdir().unwrap();
    let o = memwall(&with("footprint", &["--weights", "int4-g48"]), dir.path());
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    // 4 bits + one f16 scale per 48 weights = 4.33 bpw, plus F32 norms; never 16.
    let bpw: f64 = out.split("fits: yes  (").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!((4.33..4.4).contains(&bpw), "{out}");
    assert!(out.contains("padding: "), "{out}");
    let o = memwall(&with("footprint", &["--weights", "int8-pc"]), dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The message parts of an error line (split at `: `), none of which may repeat.
fn repeated_part(err: &str) -> Option<String> {
    let parts: Vec<&str> = err.trim().trim_start_matches("error: ").split(": ").filter(|p| p.len() > 8).collect();
    parts.iter().enumerate().find(|(i, p)| parts[i + 1..].contains(p)).map(|(_, p)| p.to_string())
}

#[test]
fn errors_say_each_thing_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("e.toml"),
        "name = \"e\"\n[base]\nmodel = \"llama-3.2-1b\"\ndevice = \"raspberry-pi-5-8gb\"\nweights = { mix = \"Q4_K_M\" }\n\
         [base.sim]\nduration_s = 60\n[[base.sim.background]]\ntype = \"alloc\"\nat_s = 1\nbytes = 0\n",
    )
    .unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", "missing.toml"],
        vec!["simulate", "e.toml"],
        vec!["run", "e.toml"],
        vec!["estimate", "--model", "missing.toml", "--device", "raspberry-pi-5-8gb"],
        with("estimate", &["--kv", "q4_K"]),
        with("estimate", &["--weights", "Q9"]),
    ];
    for args in cases {
        let o = memwall(&args, dir.path());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(repeated_part(&err), None, "{args:?} repeats itself: {err}");
        assert!(!err.contains("for ``"), "{err}");
    }
}

#[test]
fn a_head_dimension_that_is_not_whole_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let model = memwall_lab::presets::model_text("llama-3.2-1b").unwrap();
    // hidden 2048 over 24 heads is 85.3: without an explicit head_dim it used to truncate to 85.
    let text = edited(&edited(model, "n_heads", "n_heads = 24"), "head_dim", "");
    std::fs::write(dir.path().join("m.toml"), text).unwrap();
    refused(
        &["footprint", "--model", "m.toml", "--device", "raspberry-pi-5-8gb"],
        dir.path(),
        &["model.head_dim", "n_heads = 24"],
    );
}

#[test]
fn a_folder_named_like_a_preset_does_not_shadow_it_but_a_file_is_refused_as_ambiguous() {
    let dir = tempfile::tempdir().unwrap();
    // A downloaded model's folder often carries the model's name.
    std::fs::create_dir(dir.path().join("llama-3.2-1b")).unwrap();
    let o = memwall(&with("footprint", &[]), dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(dir.path().join(BASE[3]), "not a device").unwrap();
    refused(&with("footprint", &[]), dir.path(), &["both a device preset and a file", "./raspberry-pi-5-8gb"]);
}
