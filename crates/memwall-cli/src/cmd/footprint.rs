//! `memwall footprint`: memory by component and whether the design fits
//! ([`memwall_lab::report::footprint`], rendered).

use anyhow::Result;

use crate::{ScenarioArgs, gb, json, signed_gb};

/// `memwall footprint`.
pub(crate) fn footprint(a: &ScenarioArgs) -> Result<()> {
    let s = a.scenario()?;
    let f = memwall_lab::report::footprint(&s)?;
    let w = &f.weights;
    if a.json {
        json::print("footprint", f.json());
        return Ok(());
    }
    let (d, c) = (&f.design, &f.components);
    println!(
        "{} on {}: weights {}, KV {}/{}, {} context tokens",
        d.model, d.device, d.weights, d.kv_k, d.kv_v, d.kv_tokens
    );
    println!("{:<18} {:>12}", "component", "GB");
    for (name, v) in [
        ("weights", c.weight_bytes),
        ("kv cache", c.kv_bytes),
        ("recurrent state", c.state_bytes),
        ("compute buffers", c.compute_bytes),
        ("runtime", c.overhead_bytes),
        ("total", c.total_bytes),
    ] {
        println!("{name:<18} {:>12}", gb(v));
    }
    println!("{:<18} {:>12}", "RAM", gb(f.ram_bytes));
    println!("{:<18} {:>12}", "- OS keeps", gb(f.os_reserved_bytes));
    println!("{:<18} {:>12}", "= app limit", gb(f.app_limit_bytes));
    println!("{:<18} {:>12}", "- other apps", gb(f.other_apps_bytes));
    println!("{:<18} {:>12}", "= available", gb(f.available_bytes));
    println!("{:<18} {:>12}", "- margin", gb(d.margin_bytes));
    println!("{:<18} {:>12}", "= budget", signed_gb(f.budget_bytes));
    println!("{:<18} {:>12}", "headroom", signed_gb(f.headroom_bytes));
    println!("app limit: {}", f.app_limit_source);
    println!(
        "fits: {}  ({:.3} bits/weight over {:.3}e9 parameters)",
        if f.fits { "yes" } else { "NO" },
        f.bits_per_weight,
        f.params as f64 / 1e9
    );
    println!("weight bytes: {} in {} tensors", w.total, w.tensors.len());
    if f.on_flash_bytes > 0 {
        println!("  of which on flash, not in RAM: {} (per-layer embeddings)", f.on_flash_bytes);
    }
    if !f.fallbacks.is_empty() {
        println!("fallbacks (rows that do not fill whole blocks, stored as llama.cpp stores them):");
        for fb in &f.fallbacks {
            println!("  {fb}");
        }
    }
    if f.padded_tensors > 0 {
        println!("padding: {} tensors end mid-group; their last group is padded and counted", f.padded_tensors);
    }
    Ok(())
}
