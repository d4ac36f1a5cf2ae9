//! Predicted GGUF file sizes of Llama-3(.1)-8B against the sizes llama.cpp publishes
//! (datasets/quant_quality.csv, `size` column): every type within 1 %.

mod common;

use memwall::lab::load_model;
use memwall::sim::{WeightBytes, gguf_file_bytes};
use memwall::spec::{FileType, Mix, WeightQuant};

/// (file type, published GiB, source row) from the Llama-3-8B and Llama-3.1-8B rows.
fn published() -> Vec<(FileType, f64, String)> {
    let mut r = common::dataset_csv("quant_quality.csv");
    let header = r.remove(0);
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let (model, qt, size, metric) = (col("model"), col("quant_type"), col("size"), col("metric"));
    let mut out = Vec::new();
    for row in r {
        let m = &row[model];
        let sized = row[metric].starts_with("wikitext-2 PPL delta vs F16") || row[metric].starts_with("effective bpw");
        if !(m == "Llama-3-8B" || m == "Llama-3.1-8B") || !sized {
            continue;
        }
        let Some(ft) = FileType::parse(&row[qt]) else { continue };
        let gib: f64 = row[size].trim_end_matches(" GiB").trim_end_matches('G').parse().unwrap();
        out.push((ft, gib, format!("{m} {}", row[qt])));
    }
    out
}

#[test]
fn predicted_gguf_sizes_are_within_one_percent_of_published() {
    let model = load_model("llama-3.1-8b").unwrap();
    let rows = published();
    assert!(rows.len() >= 25, "expected the Llama-3 size rows, got {}", rows.len());
    let mut worst = 0.0f64;
    let mut failures = Vec::new();
    println!("{:<24} {:>10} {:>10} {:>8}", "type", "published", "predicted", "error");
    for (ft, gib, label) in rows {
        // Erratum: llama.cpp's QUANT_OPTIONS lists Llama-3-8B Q2_K_S with Q2_K's size (2.96G);
        // its own Llama-3.1-8B table gives 2.78 GiB for Q2_K_S, which is checked below.
        if label == "Llama-3-8B Q2_K_S" {
            assert_eq!(gib, 2.96, "the erratum row changed; drop this exception");
            continue;
        }
        // IQ1/IQ2/IQ3_XXS files cannot be made without an importance matrix.
        let needs_imatrix = matches!(
            ft,
            FileType::IQ1_S
                | FileType::IQ1_M
                | FileType::IQ2_XXS
                | FileType::IQ2_XS
                | FileType::IQ2_S
                | FileType::IQ2_M
                | FileType::IQ3_XXS
        );
        let mut wq = WeightQuant::new(Mix::File(ft));
        wq.imatrix = needs_imatrix;
        let predicted = gguf_file_bytes(&model, &WeightBytes::new(&model, &wq)) as f64 / (1u64 << 30) as f64;
        let err = predicted / gib - 1.0;
        println!("{label:<24} {gib:>10.2} {predicted:>10.3} {:>+7.2}%", 100.0 * err);
        worst = worst.max(err.abs());
        // Published sizes carry two decimals (±0.005 GiB) on top of the 1 % target.
        if err.abs() >= 0.01 + 0.005 / gib {
            failures.push(format!("{label}: published {gib} GiB, predicted {predicted:.3} GiB"));
        }
    }
    println!("worst error {:.2}%", 100.0 * worst);
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Predicted file sizes of the on-device presets against the exact sizes of published GGUF
/// files (`datasets/gguf_sizes.csv`, llama.cpp's own recipe: the Qwen, ggml-org and bartowski
/// conversions; unsloth's files use a recipe of their own and are listed but not compared).
#[test]
fn predicted_gguf_sizes_of_the_on_device_presets() {
    let mut r = common::dataset_csv("gguf_sizes.csv");
    let header = r.remove(0);
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let (model, ft, bytes, repo) = (col("model"), col("file_type"), col("bytes"), col("repo"));
    let mut compared = 0;
    let mut failures = Vec::new();
    println!("{:<16} {:<7} {:>14} {:>14} {:>8}  repo", "model", "type", "published", "predicted", "error");
    for row in &r {
        let Ok(published) = row[bytes].parse::<u64>() else { continue };
        if row[repo].starts_with("unsloth/") {
            continue;
        }
        if memwall::lab::presets::model_text(&row[model]).is_none() {
            continue;
        }
        let mut m = load_model(&row[model]).unwrap();
        // Qwen3-1.7B's checkpoint stores lm_head separately although its config ties it, and
        // llama.cpp's converter writes it as output.weight: both published Q4_K_M files are
        // 172 MB above the tied prediction (an extra Q4_K token_embd), and within 0.3 % of the
        // untied one. Its Q8_0 file (Qwen's own, converted otherwise) is tied.
        if row[model] == "qwen3-1.7b" && row[ft] == "Q4_K_M" {
            m.tied_embeddings = false;
        }
        let Some(t) = FileType::parse(&row[ft]) else { continue };
        let predicted = gguf_file_bytes(&m, &WeightBytes::new(&m, &WeightQuant::new(Mix::File(t))));
        let err = predicted as f64 / published as f64 - 1.0;
        println!(
            "{:<16} {:<7} {published:>14} {predicted:>14} {:>+7.2}%  {}",
            row[model],
            row[ft],
            100.0 * err,
            row[repo]
        );
        compared += 1;
        if err.abs() > 0.02 {
            failures.push(format!("{} {}: {:+.2}%", row[model], row[ft], 100.0 * err));
        }
    }
    assert!(compared >= 15, "only {compared} rows compared");
    assert!(failures.is_empty(), "{failures:#?}");
}
