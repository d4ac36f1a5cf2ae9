//! `memwall estimate`: decode and prefill rates, TTFT, energy and the binding term of one design;
//! with `--ops`, where a token's time goes.

use anyhow::Result;
use clap::Args;
use memwall_sim::Estimate;
use memwall_spec::Scenario;

use crate::{ScenarioArgs, gb, json, print_table, signed_gb};

/// `memwall estimate`: a design and whether to show its operators.
#[derive(Args)]
pub(crate) struct EstimateArgs {
    #[command(flatten)]
    design: ScenarioArgs,
    /// Where a token's time goes: every operator of a decoded token at the mean context
    /// (each layer's projections, attention, FFN or experts, the LM head) with its bytes by
    /// source, multiply-adds, time and binding term.
    #[arg(long)]
    ops: bool,
    /// Decode rates of the reply started at each of these depths (tokens already in the KV
    /// cache, llama-bench's `tg@d`), comma-separated: `--depths 0,4096,16384,32768`.
    #[arg(long, value_delimiter = ',', value_parser = crate::args::whole::<u64>)]
    depths: Vec<u64>,
}

/// `memwall estimate` ([`memwall_lab::report::estimate()`]).
pub(crate) fn estimate(a: &EstimateArgs) -> Result<()> {
    let s = a.design.scenario()?;
    let r = memwall_lab::report::estimate(&s, a.ops, &a.depths)?;
    if a.design.json {
        json::print("estimate", r.json());
        return Ok(());
    }
    print_estimate(&s, &r.estimate, &r.quality);
    if !r.depths.is_empty() {
        print_depths(&s, &r.depths);
    }
    if let Some(ops) = &r.ops {
        print_ops(ops, &r.estimate);
    }
    Ok(())
}

/// The decode rate at each depth of `memwall estimate --depths`.
fn print_depths(s: &Scenario, depths: &[memwall_lab::report::AtDepth]) {
    println!("\ndecode of the {}-token reply started at each depth (llama-bench's tg@d)", s.workload.gen_tokens.max(1));
    let header: Vec<String> = ["depth", "decode tok/s", "80% range", "bound by", ""].map(String::from).to_vec();
    let lines: Vec<Vec<String>> = depths
        .iter()
        .map(|d| {
            vec![
                d.depth_tokens.to_string(),
                format!("{:.2}", d.decode_tok_s),
                d.decode_tok_s_interval.map_or("-".into(), |[lo, hi]| format!("{lo:.2} to {hi:.2}")),
                d.binding.to_string(),
                if d.fits_context { String::new() } else { "beyond the context allocated".into() },
            ]
        })
        .collect();
    print_table(&header, &lines);
}

/// The per-operator table of `memwall estimate --ops`.
fn print_ops(ops: &memwall_lab::report::Ops, e: &Estimate) {
    let ctx = ops.context_tokens;
    let ops = &ops.rows;
    println!(
        "\noperators of a decoded token at context {ctx} (each timed alone, without the {:.3} ms of per-operator and per-token overheads)",
        e.decode_terms.t_overhead * 1e3
    );
    let header: Vec<String> =
        ["layer", "operator", "weights MB", "KV/state MB", "MMAC", "time µs", "share", "bound by"]
            .map(String::from)
            .to_vec();
    let total: f64 = ops.iter().map(|(_, t)| t.total).sum();
    let lines: Vec<Vec<String>> = ops
        .iter()
        .map(|(o, t)| {
            vec![
                o.layer.map_or("-".into(), |l| l.to_string()),
                o.kind.name().to_string(),
                format!("{:.3}", o.weight_bytes / 1e6),
                format!("{:.3}", o.kv_bytes / 1e6),
                format!("{:.2}", o.macs / 1e6),
                format!("{:.1}", t.total * 1e6),
                format!("{:.1} %", 100.0 * t.total / total),
                t.binding().name().to_string(),
            ]
        })
        .collect();
    print_table(&header, &lines);
    // Time per operator kind, in the order the kinds first appear.
    let mut kinds: Vec<(&str, f64)> = Vec::new();
    for (o, t) in ops {
        match kinds.iter_mut().find(|(n, _)| *n == o.kind.name()) {
            Some(k) => k.1 += t.total,
            None => kinds.push((o.kind.name(), t.total)),
        }
    }
    let summary: Vec<String> = kinds.iter().map(|(n, t)| format!("{n} {:.1} %", 100.0 * t / total)).collect();
    println!("by operator: {}", summary.join(", "));
}

/// The `80% range` line under a rate: `interval` at `decimals`, or why there is none (`what`:
/// the error the engine lacks; `unknown_tail`: what else leaves it unknown).
fn print_range(s: &Scenario, interval: Option<[f64; 2]>, decimals: usize, what: &str, unknown_tail: &str) {
    let (engine, unit) = (&s.engine.name, s.workload.backend.name());
    match interval {
        Some([lo, hi]) => println!(
            "  80% range   {lo:.decimals$} to {hi:.decimals$} tok/s  ({engine} on the {unit}: its {what} on devices it \
             was not fitted on)"
        ),
        None => println!(
            "  80% range   unknown: engine `{engine}` has no cross-validated {what} on the {unit}{unknown_tail}"
        ),
    }
}

fn print_estimate(s: &Scenario, e: &Estimate, q: &memwall_lab::Quality) {
    println!(
        "{} on {} ({} threads, {} via {}), weights {}, KV {}/{}",
        s.model.name,
        s.device.name,
        e.threads,
        s.workload.backend.name(),
        s.engine.name,
        s.weights.mix,
        s.kv.k,
        s.kv.v
    );
    if let Ok(d) = memwall_lab::defaults::default_engine(&s.device, s.workload.backend)
        && d.engine.name == s.engine.name
    {
        println!("engine        {}: {} (--engine to choose another)", s.engine.name, d.why);
    }
    if s.workload.threads.is_none() && s.workload.backend == memwall_spec::Backend::Cpu {
        let (n, why) = s.engine.threads.threads(&s.device);
        println!("threads       {n}: {why} (--threads to choose)");
    }
    if !e.assumed.is_empty() {
        println!(
            "assumed       {} (the device states none: class or family defaults, or what its kind's sheets publish; the 80% range is the one for such devices)",
            e.assumed
        );
    }
    if e.cpu_share > 0.0 {
        let u = s.engine.unit(s.workload.backend);
        let formats = u.map(|u| u.formats.join(", ")).unwrap_or_default();
        let limits = u
            .map(|u| u.max_rows.iter().map(|(f, n)| format!("{f} up to {n} rows")).collect::<Vec<_>>().join(", "))
            .unwrap_or_default();
        let limits = if limits.is_empty() { String::new() } else { format!(" ({limits})") };
        println!(
            "on the CPU    {:.0} % of a token's weight bytes: {} multiplies {formats}{limits} on the {}, and hands the \
             other matrices to the CPU (column cpu_share)",
            100.0 * e.cpu_share,
            s.engine.name,
            s.workload.backend.name()
        );
    }
    let b = s.workload.batch;
    if b == 1 {
        println!(
            "decode        {:>10.2} tok/s  ({:.2} ms/token, bound by {})",
            e.decode_tok_s,
            e.decode_s_per_token * 1e3,
            e.binding.name()
        );
    } else {
        // A step decodes one token of each of the `b` sequences.
        println!(
            "decode        {:>10.2} tok/s  over {b} sequences ({:.3} tok/s each; {:.2} ms per step of {b} tokens, bound by {})",
            e.decode_tok_s,
            e.decode_tok_s / b as f64,
            e.decode_s_per_token * 1e3,
            e.binding.name()
        );
    }
    let w = &s.workload;
    let h = s.history_tokens();
    let start = h + w.prompt_tokens;
    let history = match (w.history_tokens, h) {
        (_, 0) => String::new(),
        (None, h) => format!("{h} tokens of history that fill the context (--history 0: a fresh conversation) and "),
        (Some(h), _) => format!("{h} tokens of history and "),
    };
    println!(
        "  at depth    {} to {} tokens in the KV cache (the {} generated after {history}a {}-token prompt; mean {}), of {} allocated",
        start,
        start + w.gen_tokens.max(1) - 1,
        w.gen_tokens.max(1),
        w.prompt_tokens,
        e.decode_depth_tokens,
        w.kv_tokens()
    );
    print_range(s, e.decode_tok_s_interval, 2, "error", " (name it with --engine)");
    let step = if b == 1 { "" } else { " per step" };
    let storage = if e.decode_terms.t_storage > 0.0 {
        format!(" | storage {:.2} ms", e.decode_terms.t_storage * 1e3)
    } else {
        String::new()
    };
    println!(
        "  terms{step:<6} mem {:.2} ms | arith {:.2} ms | dequant {:.2} ms | overhead {:.2} ms{storage}",
        e.decode_terms.t_mem * 1e3,
        e.decode_terms.t_arith * 1e3,
        e.decode_terms.t_dequant * 1e3,
        e.decode_terms.t_overhead * 1e3
    );
    println!(
        "  per token   {:.3} GB weights, {:.3} GB KV/state, {:.2} GMAC{}",
        e.weight_bytes_per_token / 1e9,
        e.kv_bytes_per_token / 1e9,
        e.macs_per_token / 1e9,
        if b == 1 { String::new() } else { format!(" (weights shared by the {b} tokens of a step)") }
    );
    if e.flash_bytes_per_token > 0.0 {
        println!(
            "  from flash  {:.3} GB per token: only {} GB of the weights stay resident; the rest is paged from storage",
            e.flash_bytes_per_token / 1e9,
            gb(e.resident_weight_bytes)
        );
    }
    println!(
        "prefill       {:>10.1} tok/s  ({} tokens in {:.2} s, bound by {})",
        e.prefill_tok_s,
        s.workload.prompt_tokens,
        e.prefill_s,
        e.prefill_binding.map_or("-", |b| b.name())
    );
    if e.prefill_tok_s > 0.0 {
        print_range(
            s,
            e.prefill_tok_s_interval,
            1,
            "prompt-rate error",
            ", or the unit's peak arithmetic is a class default",
        );
    }
    println!("TTFT          {:>10.3} s", e.ttft_s);
    println!(
        "energy        {:>10.3} J/token, {:.1} J per reply (prompt and reply)",
        e.energy_j_per_token, e.reply_energy_j
    );
    if let (Some(mah), Some(pct), Some(bat)) = (e.battery_mah_per_reply, e.battery_pct_per_hour, s.device.battery) {
        println!(
            "battery       {mah:>10.2} mAh per reply, {pct:.1} % of the {:.0} mAh battery per hour of replies back to back",
            bat.capacity_mah
        );
    }
    println!(
        "footprint     {:>10} GB of {} GB budget: {}",
        gb(e.total_bytes),
        signed_gb(e.budget_bytes),
        if e.fits { "fits" } else { "DOES NOT FIT" }
    );
    let limit = s.device.app_limit();
    println!(
        "  budget      app limit {} (RAM {} − OS {}) − other apps {} − margin {} GB",
        gb(limit.bytes),
        gb(s.device.memory.ram_bytes),
        gb(s.device.reserve_bytes()),
        gb(s.device.memory.other_apps_bytes),
        gb(s.workload.margin_bytes)
    );
    println!("  app limit   {}", limit.source);
    let show = |d: Option<f64>| d.map_or("unknown".to_string(), |v| format!("{v:+.4}"));
    println!("quality       dPPL weights {} | KV {}  [{}]", show(q.ppl_delta_weights), show(q.ppl_delta_kv), q.source);
    let pct = |p: Option<memwall_lab::PctFigure>| {
        p.map_or("unknown".to_string(), |p| format!("{:+.2} % (80% [{:+.2}, {:+.2}])", p.pct, p.lo, p.hi))
    };
    println!(
        "  increase    weights {} ({}) | KV {} ({}): {}",
        pct(q.weights_pct),
        q.weights_provenance.name(),
        pct(q.kv_pct),
        q.kv_provenance.name(),
        q.verdict()
    );
    if q.weights_architecture == memwall_lab::ArchEvidence::Unknown {
        println!(
            "  architecture the weights figure is another architecture's: how this {} design takes quantization is not \
             published",
            memwall_lab::Architecture::of(&s.model).name()
        );
    }
    if let Some(m) = &q.model_mmlu {
        println!("  model       {}", m.describe());
    }
    if let Some(why) = &q.ptq_unusable {
        println!("  WARNING     {why}");
    }
}
