//! Predicted decode tok/s against the published measurements of
//! datasets/device_decode_measurements.csv for the rows the presets cover.
//!
//! Nothing here is fitted to these rows: the device presets' bandwidth fractions come from
//! other sources. The test prints the table (run with `--nocapture`) and asserts that every
//! prediction is within a factor of 2.5 of the measurement.

mod common;

use memwall::lab::{load_device, load_model};
use memwall::sim::estimate;
use memwall::spec::{Backend, KvQuant, Scenario, WeightQuant, Workload};

struct Case {
    device: &'static str,
    model: &'static str,
    weights: &'static str,
    backend: Backend,
    /// RAM of the measured unit when its name states it ("Raspberry Pi 5 16GB"), GiB: the
    /// preset stands in for the SoC, and the run had that much memory (it matters once a
    /// model would not fit the preset's and pages from flash).
    ram_gib: Option<u64>,
}

/// `16` from "Raspberry Pi 5 16GB".
fn ram_in_name(name: &str) -> Option<u64> {
    name.split_whitespace().find_map(|w| w.strip_suffix("GB").and_then(|n| n.parse().ok()))
}

/// Map a measurement row to a preset scenario, or None when the presets do not cover it.
fn map(row: &[String], col: impl Fn(&str) -> usize) -> Option<Case> {
    let dev = format!("{} {}", row[col("device")], row[col("soc")]);
    let model = row[col("model")].to_lowercase();
    let quant = row[col("quant")].to_lowercase();
    let unit = row[col("compute_unit")].to_lowercase();
    let device = if dev.contains("OnePlus 12") {
        "snapdragon-8-gen3-16gb"
    } else if dev.contains("Jetson Orin Nano Super") {
        "jetson-orin-nano-super-8gb"
    } else if dev.contains("Raspberry Pi 5") && !dev.contains("Hailo") {
        "raspberry-pi-5-8gb"
    } else {
        return None;
    };
    let model = match model.as_str() {
        m if m.contains("llama 3.2 1b") => "llama-3.2-1b",
        m if m.contains("llama 3.2 3b") => "llama-3.2-3b",
        m if m.contains("llama 3.1 8b") || m.contains("llama 3 8b") => "llama-3.1-8b",
        m if m.contains("qwen2.5 7b") => "qwen2.5-7b",
        m if m.contains("gemma 2 9b") => "gemma-2-9b",
        m if m.contains("qwen3-30b-a3b") => "qwen3-30b-a3b",
        _ => return None,
    };
    let weights = if quant.contains("bf16") {
        "pure-bf16"
    } else if quant.contains("q4_k_m") {
        "Q4_K_M"
    } else if quant.contains("q3_k_s") {
        "Q3_K_S"
    } else if quant.contains("g256") {
        "int4-g256"
    } else if quant.contains("g128") {
        "int4-g128"
    } else if quant.contains("g32") || quant.contains("int4") {
        // ExecuTorch 8da4w and MLC q4f16_1 are 4-bit weights in groups of 32 with f16 scales.
        "int4-g32"
    } else {
        return None;
    };
    let backend = if unit.starts_with("gpu") { Backend::Gpu } else { Backend::Cpu };
    Some(Case { device, model, weights, backend, ram_gib: ram_in_name(&row[col("device")]) })
}

#[test]
fn predictions_against_published_decode_measurements() {
    let mut rows = common::dataset_csv("device_decode_measurements.csv");
    let header = rows.remove(0);
    let col = |n: &str| header.iter().position(|h| h == n).unwrap_or_else(|| panic!("no column {n}"));
    let mut errors = Vec::new();
    println!(
        "{:<28} {:<14} {:<10} {:<4} {:>9} {:>9} {:>8}  bound by",
        "device", "model", "weights", "unit", "measured", "predicted", "error"
    );
    for row in rows.iter().filter(|r| r.len() == header.len()) {
        let Some(case) = map(row, col) else { continue };
        let Ok(measured) = row[col("decode_tok_s")].parse::<f64>() else { continue };
        let mut device = load_device(case.device).unwrap();
        if let Some(gib) = case.ram_gib {
            device.memory.ram_bytes = device.memory.ram_bytes.max(gib << 30);
        }
        let s = Scenario {
            model: load_model(case.model).unwrap(),
            device,
            weights: WeightQuant::new(case.weights.parse().unwrap()),
            kv: KvQuant::default(),
            workload: Workload {
                prompt_tokens: 64,
                gen_tokens: 128,
                context_tokens: 2048,
                backend: case.backend,
                ..Workload::default()
            },
            cost: Default::default(),
            engine: Default::default(),
            assume_defaults: false,
            sim: Default::default(),
        };
        let e = estimate(&s).unwrap();
        let err = e.decode_tok_s / measured - 1.0;
        println!(
            "{:<28} {:<14} {:<10} {:<4} {:>9.2} {:>9.2} {:>+7.1}%  {}",
            case.device,
            case.model,
            case.weights,
            case.backend.name(),
            measured,
            e.decode_tok_s,
            100.0 * err,
            e.binding.name()
        );
        errors.push((e.decode_tok_s / measured).ln().abs());
        assert!(
            (1.0 / 2.5..2.5).contains(&(e.decode_tok_s / measured)),
            "{} {} {}",
            case.device,
            case.model,
            case.weights
        );
    }
    assert!(errors.len() >= 15, "only {} rows covered", errors.len());
    errors.sort_by(f64::total_cmp);
    let median = errors[errors.len() / 2].exp() - 1.0;
    println!("{} rows; median |error| {:.1}%", errors.len(), 100.0 * median);
}
