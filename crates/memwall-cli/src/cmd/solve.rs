//! `memwall solve`: design questions answered directly (`memwall_solve`).

use anyhow::Result;
use clap::Args;
use memwall_solve::{Answer, Question, answer};
use memwall_spec::Scenario;
use memwall_spec::units::to_gb;
use serde_json::json;

use crate::{ScenarioArgs, json};

/// `memwall solve WHAT --model … --device …`.
#[derive(Args)]
pub struct SolveArgs {
    /// The question: max-context (the longest context that fits, per KV format f16, q8_0,
    /// q4_0), min-ram (the least RAM with the margin), min-bandwidth (the least DRAM bandwidth
    /// for --target-tok-s, or that none suffices), cheapest-fit (the weight mix × KV format
    /// with the best estimated quality that fits, reaching --target-tok-s within
    /// --max-ppl-delta and --max-ppl-increase-pct), what-to-change (for a design that does not fit: the nearest fitting
    /// design along each axis).
    #[arg(value_parser = crate::flag::<Question>("question"))]
    what: Question,
    #[command(flatten)]
    design: ScenarioArgs,
    /// Target decode rate, tokens/s (min-bandwidth needs it; cheapest-fit takes it).
    #[arg(long)]
    target_tok_s: Option<f64>,
    /// Largest acceptable perplexity increase, weights and KV together (cheapest-fit).
    #[arg(long)]
    max_ppl_delta: Option<f64>,
    /// Largest acceptable perplexity increase in % of the model's unquantized perplexity,
    /// weights and KV together (cheapest-fit; +5 is acceptable, above +10 reconsider).
    #[arg(long)]
    max_ppl_increase_pct: Option<f64>,
}

fn gb(b: f64) -> String {
    format!("{:.3}", b / 1e9)
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("unknown".into(), |v| format!("{v:+.digits$}"))
}

/// Answer one question, as a table or (`--json`) a document.
pub fn solve(a: &SolveArgs) -> Result<()> {
    let s = a.design.scenario()?;
    if a.what == Question::MinBandwidth && a.target_tok_s.is_none() {
        anyhow::bail!("min-bandwidth needs `--target-tok-s`");
    }
    let ans = answer(&s, a.what, a.target_tok_s, a.max_ppl_delta, a.max_ppl_increase_pct)?;
    if a.design.json {
        let mut doc = json!({"what": a.what.name(), "design": memwall_lab::report::json(&memwall_lab::report::Design::of(&s)), "answer": ans});
        if let Answer::WhatToChange(c) = &ans {
            doc["fits"] = json!(c.is_empty());
        }
        json::print("solve", doc);
        return Ok(());
    }
    match ans {
        Answer::MaxContext(rows) => {
            header(&s, "the longest context that fits, KV allocated in full");
            println!("{:<10} {:>14} {:>10} {:>10}  binding", "kv", "max context", "total GB", "budget GB");
            for r in &rows {
                let ctx = match (r.max_context_tokens, r.unbounded) {
                    (_, true) => "unbounded".to_string(),
                    (Some(c), _) => c.to_string(),
                    (None, _) => "none".to_string(),
                };
                let beyond = match (r.max_context_tokens, r.trained_context) {
                    (Some(c), Some(t)) if c > t && !r.unbounded => format!("  (beyond the trained {t})"),
                    _ => String::new(),
                };
                println!(
                    "{:<10} {:>14} {:>10} {:>10}  {}{beyond}",
                    r.kv,
                    ctx,
                    r.total_bytes.map_or("-".into(), |b| gb(b as f64)),
                    gb(r.budget_bytes as f64),
                    r.binding
                );
            }
            if let Some(w) = rows.first().and_then(|r| r.window) {
                println!("(the model's sliding layers keep a window of {w} tokens)");
            }
        }
        Answer::MinRam(r) => {
            header(&s, "the least RAM it needs");
            let m = &s.device.memory;
            println!(
                "min RAM       {} GB, whose app limit holds footprint {} + other apps {} + margin {}",
                gb(r.min_ram_bytes as f64),
                gb(r.footprint_bytes as f64),
                gb(m.other_apps_bytes as f64),
                gb(s.workload.margin_bytes as f64)
            );
            println!("app limit     {}", s.device.app_limit().source);
            println!(
                "common size   {}   (this device: {:.0} GiB)",
                r.next_size_gib.map_or("beyond 512 GiB".into(), |g| format!("{g} GiB")),
                r.device_ram_bytes as f64 / (1u64 << 30) as f64
            );
        }
        Answer::MinBandwidth(r) => {
            header(&s, &format!("the DRAM bandwidth for {} tok/s", r.target_tok_s));
            println!("this device   {:.1} GB/s peak → {:.2} tok/s", r.device_peak_gbps, r.device_tok_s);
            match r.min_peak_gbps {
                Some(g) => println!(
                    "needs         {g:.1} GB/s peak ({:.2}× this device's), bound by {} there",
                    g / r.device_peak_gbps,
                    r.binding
                ),
                None => println!(
                    "needs         no bandwidth suffices: with unlimited DRAM bandwidth it decodes {:.2} tok/s, bound by {}",
                    r.ceiling_tok_s, r.binding
                ),
            }
        }
        Answer::CheapestFit(r) => {
            header(&s, "the best-quality weight mix × KV format that fits");
            let bound = |v: Option<f64>, unit: &str| v.map_or("any".into(), |v| format!("{v}{unit}"));
            println!(
                "constraints   fits with the margin, decode ≥ {}, dPPL ≤ {}, PPL increase ≤ {}",
                bound(r.target_tok_s, " tok/s"),
                bound(r.max_ppl_delta, ""),
                bound(r.max_ppl_increase_pct, " %")
            );
            if !r.found {
                println!("answer        none: most candidates miss `{}`", r.binding);
            }
            println!(
                "{:<10} {:<12} {:>9} {:>10} {:>9} {:>9} {:>9}  misses",
                "weights", "kv", "total GB", "headroom", "tok/s", "dPPL", "PPL %"
            );
            for c in r.candidates.iter().take(10) {
                println!(
                    "{:<10} {:<12} {:>9} {:>+10.3} {:>9.2} {:>9} {:>9}  {}",
                    c.weights,
                    c.kv,
                    gb(c.total_bytes as f64),
                    c.headroom_bytes as f64 / 1e9,
                    c.decode_tok_s,
                    opt(c.ppl_delta, 4),
                    opt(c.ppl_increase_pct, 2),
                    if c.meets { "-" } else { &c.misses }
                );
            }
            if r.candidates.iter().take(10).any(|c| c.ptq_unusable.is_some()) {
                println!(
                    "(ptq_unusable: a ternary or sub-2-bit format on a model not trained for it; post-training \
                     quantization there is not usable)"
                );
            }
            println!("({} candidates; the first 10 shown, best first; --json has them all)", r.candidates.len());
        }
        Answer::WhatToChange(changes) => {
            header(&s, "the nearest designs that fit");
            if changes.is_empty() {
                println!("it fits already: nothing to change");
                return Ok(());
            }
            println!(
                "{:<11} {:<44} {:>9} {:>9} {:>8} {:>9}  cost",
                "axis", "change", "total GB", "tok/s", "× tok/s", "+dPPL"
            );
            for c in &changes {
                println!(
                    "{:<11} {:<44} {:>9} {:>9.2} {:>8.2} {:>9}  {}",
                    c.axis,
                    c.change,
                    gb(c.total_bytes as f64),
                    c.decode_tok_s,
                    c.tok_s_ratio,
                    opt(c.ppl_cost, 4),
                    c.cost
                );
            }
        }
    }
    Ok(())
}

fn header(s: &Scenario, question: &str) {
    println!(
        "{} on {} ({} via {}), weights {}, KV {}/{}, context {}, margin {:.2} GB: {question}",
        s.model.name,
        s.device.name,
        s.workload.backend.name(),
        s.engine.name,
        s.weights.mix,
        s.kv.k,
        s.kv.v,
        s.workload.kv_tokens(),
        to_gb(s.workload.margin_bytes)
    );
}
