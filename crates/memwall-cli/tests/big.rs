//! Huge grids and long runs: a grid beyond `--max-points` and a trace beyond
//! `--trace-limit` are refused before any work, with their size; a grid larger than
//! `--max-rows` prints its counts and best designs instead of every row.

use parquet::file::reader::{FileReader, SerializedFileReader};

mod common;
use common::{memwall, text};

/// 2 × 3 × 50 = 300 points.
const GRID: &str = r#"
name = "grid"
[base]
model = "llama-3.2-1b"
device = "snapdragon-8-gen3-16gb"
weights = { mix = "Q4_K_M" }
[grid]
"weights.mix" = ["Q8_0", "Q4_K_M"]
"kv.k+kv.v" = ["f16", "q8_0", "q4_0"]
"workload.batch" = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50]
"#;

#[test]
fn a_grid_beyond_max_points_is_refused_with_its_size() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("grid.toml"), GRID).unwrap();
    let o = memwall(&["run", "grid.toml", "--out", "g.parquet", "--max-points", "299"], dir.path());
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("300 points") && err.contains("--max-points") && err.contains("299"), "{err}");
    assert!(err.contains("workload.batch (50)"), "{err}");
    assert!(!dir.path().join("g.parquet").exists());
    // A grid whose size overflows 64 bits says so, and is refused by the default bound.
    let axis: Vec<String> = (1..=1000).map(|i| i.to_string()).collect();
    let huge = format!(
        "name = \"huge\"\n[base]\nmodel = \"llama-3.2-1b\"\ndevice = \"snapdragon-8-gen3-16gb\"\nweights = {{ mix = \"Q4_K_M\" }}\n[grid]\n{}",
        [
            "workload.batch",
            "workload.gen_tokens",
            "workload.prompt_tokens",
            "workload.ubatch",
            "workload.margin_bytes",
            "workload.routing_skew",
            "workload.threads",
            "workload.flash_attention",
            "kv.k",
            "workload.context_tokens",
        ]
        .iter()
        .map(|k| {
            let vals = match *k {
                "workload.threads" => "[1, 2, 3, 4]".to_string(),
                "workload.flash_attention" => "[true, false]".to_string(),
                "kv.k" => "[\"f16\", \"q8_0\", \"q4_0\"]".to_string(),
                "workload.routing_skew" => {
                    format!("[{}]", (1..=1000).map(|i| format!("{}", i as f64 / 20.0)).collect::<Vec<_>>().join(", "))
                }
                "workload.context_tokens" => "[100000, 200000]".to_string(),
                _ => format!("[{}]", axis.join(", ")),
            };
            format!("\"{k}\" = {vals}\n")
        })
        .collect::<String>()
    );
    std::fs::write(dir.path().join("huge.toml"), huge).unwrap();
    // Refused when read, whatever `--max-points` allows: no count or index can wrap.
    for max in ["50000000", "18446744073709551615"] {
        let o = memwall(&["run", "huge.toml", "--out", "h.parquet", "--max-points", max], dir.path());
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("more than 18446744073709551615 points") && err.contains("kv.k (3)"), "{err}");
        assert!(!dir.path().join("h.parquet").exists());
    }
}

#[test]
fn a_grid_beyond_max_rows_prints_counts_and_the_best_designs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("grid.toml"), GRID).unwrap();
    let o = memwall(&["run", "grid.toml", "--out", "g.parquet", "--max-rows", "20"], dir.path());
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(out.contains("of 300 designs fit"), "{out}");
    assert!(out.contains("fastest fitting designs:"), "{out}");
    assert!(out.lines().count() < 35, "bounded: counts, the 10 fastest, the 12 smallest of the front: {out}");
    assert!(out.contains("every design, with all inputs and metrics: g.parquet"), "{out}");
    let reader = SerializedFileReader::new(std::fs::File::open(dir.path().join("g.parquet")).unwrap()).unwrap();
    assert_eq!(reader.metadata().file_metadata().num_rows(), 300);
    // The whole table when the grid is small enough.
    let o = memwall(&["run", "grid.toml", "--out", "g2.parquet", "--max-rows", "300"], dir.path());
    let (out, _) = text(&o);
    assert!(out.lines().count() > 300, "{out}");
}

#[test]
fn a_trace_beyond_the_limit_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let sim = "name = \"long\"\n[base]\nmodel = \"llama-3.2-1b\"\ndevice = \"snapdragon-8-gen3-16gb\"\nweights = { mix = \"Q4_K_M\" }\n[base.sim]\nduration_s = 60\n[base.sim.session]\nturns = [{ prompt_tokens = 64, gen_tokens = 500 }]\nrepeat = 0\n";
    std::fs::write(dir.path().join("long.toml"), sim).unwrap();
    // A week of decoding at tens of tokens per second: tens of millions of rows.
    let o = memwall(&["simulate", "long.toml", "--duration", "168h", "--trace", "t.parquet"], dir.path());
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--trace-limit") && err.contains("2.0 GB limit"), "{err}");
    assert!(!dir.path().join("t.parquet").exists());
    // A lower limit refuses a shorter run; no trace, no limit.
    let o = memwall(
        &["simulate", "long.toml", "--duration", "60s", "--trace", "t.parquet", "--trace-limit", "10kB"],
        dir.path(),
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("0.0 GB limit"), "{err}");
    let o = memwall(
        &["simulate", "long.toml", "--duration", "60s", "--trace", "t.parquet", "--trace-limit", "10MB"],
        dir.path(),
    );
    assert!(o.status.success(), "{}", text(&o).1);
    for bad in ["lots", "-1GB", "0", "5PB"] {
        let flag = format!("--trace-limit={bad}");
        let o = memwall(&["simulate", "long.toml", "--duration", "60s", &flag], dir.path());
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains("--trace-limit"), "{bad}: {err}");
    }
}
