//! Sweep throughput and memory, Parquet writing included (a bench binary that prints its
//! figures; `cargo bench --bench sweep`):
//!
//! 1. points/s of a grid that varies workload, context, KV format and batch over fixed
//!    (model, weight mix) pairs (1.2 M points), and the same without writing;
//! 2. points/s of an arbitrary grid: 5 models × 5 weight formats × 4 KV formats × 10 contexts
//!    × 10 batch sizes (10,000 points, the grid LLM-Viewer was timed on), and the same grid
//!    with 100 contexts × 100 batch sizes (1 M points);
//! 3. peak resident memory of a 10 M-point sweep and of a one-hour simulated trace, each in a
//!    child process of its own (`VmHWM` from /proc/self/status). `--child sweep N [nowrite]`
//!    runs the sweep of 40,000 × N points alone (without writing Parquet with `nowrite`).
//!
//! `--quick` runs smaller grids (for a smoke test).

use std::time::Instant;

use memwall::lab::{Experiment, Outputs, ParquetStream, Sweep, TableBuilder, metadata, simulate_experiment};

/// A grid of fixed (model, mix) pairs: context × KV format × batch × prompt × generated.
fn workload_grid(contexts: usize) -> String {
    let ctx: Vec<String> = (0..contexts).map(|i| (32_768 + 256 * i).to_string()).collect();
    format!(
        r#"
name = "workload-grid"
[base]
model = "llama-3.1-8b"
device = "snapdragon-8-gen3-16gb"
weights = {{ mix = "Q4_K_M" }}
[grid]
"weights.mix" = ["Q4_K_M", "Q8_0"]
"kv.k+kv.v" = ["f16", "q8_0", "q4_0"]
"workload.batch" = [1, 2, 4, 8]
"workload.prompt_tokens" = [128, 512, 1024, 2048, 4096]
"workload.gen_tokens" = [64, 256, 1024, 4096, 16384]
"workload.context_tokens" = [{}]
"#,
        ctx.join(", ")
    )
}

/// The arbitrary grid: models × weight formats × KV formats × contexts × batch sizes.
fn arbitrary_grid(contexts: usize, batches: usize) -> String {
    let ctx: Vec<String> = (0..contexts).map(|i| (2048 + 512 * i).to_string()).collect();
    let b: Vec<String> = (1..=batches).map(|i| i.to_string()).collect();
    format!(
        r#"
name = "arbitrary-grid"
[base]
model = "llama-3.1-8b"
device = "apple-m2-max-32gb"
weights = {{ mix = "Q4_K_M" }}
[grid]
"model" = ["llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", "qwen2.5-7b", "qwen3-30b-a3b"]
"weights.mix" = ["F16", "Q8_0", "Q6_K", "Q4_K_M", "Q2_K"]
"kv.k+kv.v" = ["f16", "q8_0", "q4_0", "q4_1"]
"workload.context_tokens" = [{}]
"workload.batch" = [{}]
"#,
        ctx.join(", "),
        b.join(", ")
    )
}

/// Sweep `exp` into a Parquet file in a temporary directory, with the `pareto` column added
/// at the end when `front` (as `memwall run` writes it); returns (points, seconds).
fn sweep_to_parquet(exp: &Experiment, front: bool) -> (u64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sweep.parquet");
    let t = Instant::now();
    let sweep = Sweep::new(exp).unwrap();
    let mut meta = metadata(Some(exp));
    meta.extend(sweep.resolved_metadata());
    let schema = TableBuilder::estimates(exp, 0).schema();
    let mut out = ParquetStream::create(&path, schema, &meta, memwall::lab::files::parquet::ROW_GROUP_ROWS).unwrap();
    let mut digest = memwall::lab::sweep::Digest::new(10, exp.pareto.clone());
    let n = sweep
        .run(memwall::lab::sweep::BATCH_POINTS, &|_| {}, &mut |batches| {
            for b in &batches {
                out.write(b)?;
                if front {
                    digest.observe(b)?;
                }
            }
            Ok(())
        })
        .unwrap();
    if front {
        let pareto = memwall::lab::pareto::field();
        out.finish_adding(pareto, memwall::lab::pareto::READS, &|b| digest.fronts.column(b)).unwrap();
    } else {
        out.finish().unwrap();
    }
    (n, t.elapsed().as_secs_f64())
}

/// Sweep `exp` keeping no result (the estimator and the table alone); returns (points, seconds).
fn sweep_only(exp: &Experiment) -> (u64, f64) {
    let t = Instant::now();
    let n = Sweep::new(exp).unwrap().run(memwall::lab::sweep::BATCH_POINTS, &|_| {}, &mut |_| Ok(())).unwrap();
    (n, t.elapsed().as_secs_f64())
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Run in a child process: a sweep of `points` points, or a one-hour trace.
fn child(what: &str) {
    match what {
        "sweep" => {
            let contexts: usize = std::env::args().nth(3).and_then(|v| v.parse().ok()).unwrap_or(250);
            let exp = Experiment::parse(&arbitrary_grid(contexts, 400), "rss.toml").unwrap();
            let write = std::env::args().nth(4).is_none_or(|a| a != "nowrite");
            let (n, secs) = if write { sweep_to_parquet(&exp, false) } else { sweep_only(&exp) };
            println!("{n} {secs} {}", peak_rss_mib());
        }
        _ => {
            let text = r#"
name = "hour"
seed = 1
[base]
model = "llama-3.2-1b"
device = "snapdragon-8-elite-12gb"
weights = { mix = "Q4_K_M" }
[base.workload]
backend = "gpu"
context_tokens = 4096
[base.sim]
duration_s = 3600
[base.sim.session]
turns = [{ prompt_tokens = 256, gen_tokens = 1000, think_s = 1 }]
repeat = 0
"#;
            let exp = Experiment::parse(text, "hour.toml").unwrap();
            let dir = tempfile::tempdir().unwrap();
            let trace = dir.path().join("trace.parquet");
            let t = Instant::now();
            let out = Outputs { trace: Some(&trace), ..Outputs::default() };
            let r = simulate_experiment(&exp, None, out, &mut |_, _| {}).unwrap();
            let rows: u64 = r.iter().map(|x| x.summary.rows).sum();
            let bytes = std::fs::metadata(&trace).map_or(0, |m| m.len());
            println!("{rows} {} {} {bytes}", t.elapsed().as_secs_f64(), peak_rss_mib());
        }
    }
}

fn in_child(args: &[&str]) -> Vec<f64> {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe).arg("--child").args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|v| v.parse().ok()).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(args.get(i + 1).map_or("sweep", String::as_str));
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let threads = rayon::current_num_threads();
    println!("sweep bench on {threads} threads (Parquet written to a temporary file, metadata included)");

    let contexts = if quick { 20 } else { 2000 };
    let exp = Experiment::parse(&workload_grid(contexts), "workload.toml").unwrap();
    let (n, secs) = sweep_to_parquet(&exp, false);
    println!(
        "fixed (model, mix) pairs, workload × context × KV × batch: {n} points in {secs:.2} s = {:.0} points/s",
        n as f64 / secs
    );
    let (_, with_front) = sweep_to_parquet(&exp, true);
    println!(
        "  the same with the front digested and the `pareto` column added (memwall run): {:.0} points/s, {:.2}× the time",
        n as f64 / with_front,
        with_front / secs
    );

    let (n, secs) = sweep_only(&exp);
    println!("  the same without writing: {:.0} points/s", n as f64 / secs);

    let exp = Experiment::parse(&arbitrary_grid(10, 10), "arbitrary.toml").unwrap();
    let reps = if quick { 3 } else { 20 };
    let mut best = f64::INFINITY;
    let mut n = 0;
    for _ in 0..reps {
        let (m, secs) = sweep_to_parquet(&exp, false);
        n = m;
        best = best.min(secs);
    }
    println!(
        "arbitrary grid, 5 models × 5 mixes × 4 KV × 10 contexts × 10 batch: {n} points in {best:.4} s = {:.0} points/s (best of {reps})",
        n as f64 / best
    );
    let (c, b) = if quick { (20, 50) } else { (100, 100) };
    let exp = Experiment::parse(&arbitrary_grid(c, b), "arbitrary.toml").unwrap();
    let (n, secs) = sweep_to_parquet(&exp, false);
    println!(
        "arbitrary grid, 5 models × 5 mixes × 4 KV × {c} contexts × {b} batch: {n} points in {secs:.2} s = {:.0} points/s",
        n as f64 / secs
    );

    // 5 models × 5 mixes × 4 KV × 400 batch sizes × 250 contexts = 10 M points.
    let contexts = if quick { 5 } else { 250 };
    let v = in_child(&["sweep", &contexts.to_string()]);
    println!(
        "peak RSS of a {:.0}-point sweep to Parquet: {:.0} MiB ({:.1} s, {:.0} points/s)",
        v[0],
        v[2],
        v[1],
        v[0] / v[1]
    );
    let v = in_child(&["trace"]);
    println!(
        "peak RSS of a one-hour simulated trace ({:.0} rows, {:.1} MB on disk): {:.0} MiB ({:.2} s)",
        v[0],
        v[3] / 1e6,
        v[2],
        v[1]
    );
}
