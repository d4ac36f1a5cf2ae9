//! `memwall footprint`: memory by component and whether the design fits.

use anyhow::Result;
use memwall_sim::{WeightBytes, estimate};

use crate::{ScenarioArgs, gb, json, signed_gb};

/// `memwall footprint`.
pub(crate) fn footprint(a: &ScenarioArgs) -> Result<()> {
    let s = a.scenario()?;
    let e = estimate(&s)?;
    let w = WeightBytes::new(&s.model, &s.weights);
    if a.json {
        json::print(
            "footprint",
            serde_json::json!({
                "design": json::design(&s),
                "components": {
                    "weights_bytes": e.weight_bytes,
                    "kv_bytes": e.kv_bytes,
                    "state_bytes": e.state_bytes,
                    "compute_bytes": e.compute_bytes,
                    "overhead_bytes": e.overhead_bytes,
                    "total_bytes": e.total_bytes,
                },
                "available_bytes": s.device.memory.available_bytes(),
                "budget_bytes": e.budget_bytes,
                "headroom_bytes": e.headroom_bytes,
                "fits": e.fits,
                "bits_per_weight": w.bits_per_weight(),
                "params": w.params,
                "weights_on_flash_bytes": w.on_flash,
                "fallbacks": w.fallbacks.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
                "tensors": memwall_io::columns::json_rows(memwall_io::columns::TENSOR_COLUMNS, &w.tensors),
            }),
        );
        return Ok(());
    }
    println!(
        "{} on {}: weights {}, KV {}/{}, {} context tokens",
        s.model.name,
        s.device.name,
        s.weights.mix,
        s.kv.k,
        s.kv.v,
        s.workload.kv_tokens()
    );
    println!("{:<18} {:>12}", "component", "GB");
    for (name, v) in [
        ("weights", e.weight_bytes),
        ("kv cache", e.kv_bytes),
        ("recurrent state", e.state_bytes),
        ("compute buffers", e.compute_bytes),
        ("runtime", e.overhead_bytes),
        ("total", e.total_bytes),
    ] {
        println!("{name:<18} {:>12}", gb(v));
    }
    println!("{:<18} {:>12}", "available", gb(s.device.memory.available_bytes()));
    println!("{:<18} {:>12}", "margin", gb(s.workload.margin_bytes));
    println!("{:<18} {:>12}", "budget", signed_gb(e.budget_bytes));
    println!("{:<18} {:>12}", "headroom", signed_gb(e.headroom_bytes));
    println!(
        "fits: {}  ({:.3} bits/weight over {:.3}e9 parameters)",
        if e.fits { "yes" } else { "NO" },
        w.bits_per_weight(),
        w.params as f64 / 1e9
    );
    println!("weight bytes: {} in {} tensors", w.total, w.tensors.len());
    if w.on_flash > 0 {
        println!("  of which on flash, not in RAM: {} (per-layer embeddings)", w.on_flash);
    }
    if !w.fallbacks.is_empty() {
        println!("fallbacks (rows that do not fill whole blocks, stored as llama.cpp stores them):");
        for f in &w.fallbacks {
            println!("  {f}");
        }
    }
    if w.padded_tensors > 0 {
        println!("padding: {} tensors end mid-group; their last group is padded and counted", w.padded_tensors);
    }
    Ok(())
}
