//! Embeds every preset TOML and table of `datasets/` so the binary works from any directory.

use std::fmt::Write;
use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
    let mut out = String::new();
    for (kind, konst) in [("models", "MODELS"), ("devices", "DEVICES"), ("engines", "ENGINES")] {
        let dir = root.join(kind);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        writeln!(out, "/// Embedded {kind} presets: (name, TOML text).").unwrap();
        writeln!(out, "pub static {konst}: &[(&str, &str)] = &[").unwrap();
        for f in files {
            println!("cargo:rerun-if-changed={}", f.display());
            let name = f.file_stem().unwrap().to_string_lossy();
            writeln!(out, "    ({name:?}, include_str!({:?})),", f.canonicalize().unwrap().display().to_string())
                .unwrap();
        }
        writeln!(out, "];").unwrap();
    }
    for (file, konst, what) in [
        ("validation_decode.csv", "VALIDATION_DECODE_CSV", "The validation table"),
        ("energy_measurements.csv", "ENERGY_MEASUREMENTS_CSV", "Published power and energy per token of LLM runs"),
        ("sustained_validation.csv", "SUSTAINED_VALIDATION_CSV", "Published sustained LLM runs, mapped to presets"),
        ("quant_quality.csv", "QUANT_QUALITY_CSV", "The quantization-quality table"),
        ("quality_estimated.csv", "QUALITY_ESTIMATED_CSV", "Perplexity deltas estimated from measured error"),
        ("quality_by_model.csv", "QUALITY_BY_MODEL_CSV", "Published perplexity deltas per model, format and KV type"),
        ("format_errors.csv", "FORMAT_ERRORS_CSV", "Output error of each ggml type on the synthetic layer"),
        ("model_benchmarks.csv", "MODEL_BENCHMARKS_CSV", "Published benchmark scores of the preset models"),
    ] {
        let path = root.join(file);
        println!("cargo:rerun-if-changed={}", path.display());
        writeln!(out, "/// {what} (datasets/{file}).").unwrap();
        let at = path.canonicalize().unwrap().display().to_string();
        writeln!(out, "pub static {konst}: &str = include_str!({at:?});").unwrap();
    }
    // The device database: chip files and name files, each (file name, text).
    let db = root.join("device_db");
    println!("cargo:rerun-if-changed={}", db.display());
    for (konst, names) in [("DEVICE_DB_CHIPS", false), ("DEVICE_DB_NAMES", true)] {
        let mut files: Vec<_> = std::fs::read_dir(&db)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", db.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "csv"))
            .filter(|p| p.file_stem().is_some_and(|s| s.to_string_lossy().ends_with("_names") == names))
            .collect();
        files.sort();
        writeln!(
            out,
            "/// The device database's {} files (datasets/device_db/): (file, text).",
            if names { "name" } else { "chip" }
        )
        .unwrap();
        writeln!(out, "pub static {konst}: &[(&str, &str)] = &[").unwrap();
        for f in files {
            println!("cargo:rerun-if-changed={}", f.display());
            let name = f.file_name().unwrap().to_string_lossy();
            writeln!(out, "    ({name:?}, include_str!({:?})),", f.canonicalize().unwrap().display().to_string())
                .unwrap();
        }
        writeln!(out, "];").unwrap();
    }
    std::fs::write(Path::new(&std::env::var("OUT_DIR").unwrap()).join("presets.rs"), out).unwrap();
}
