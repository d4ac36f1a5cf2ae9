//! `memwall decode`: the reference engine on this machine.

use anyhow::{Context, Result};
use clap::Args;
use memwall_calib::host::check_memory;
use memwall_decode::weights::planned_bytes;
use memwall_decode::{Engine, EngineConfig, OpClass};
use memwall_lab::load_model;
use memwall_spec::WeightQuant;
use memwall_spec::units::to_gb;

use crate::print_table;

#[derive(Args)]
pub struct DecodeArgs {
    /// Model preset name or TOML path.
    #[arg(long)]
    model: String,
    /// Weight mix: a llama.cpp file type (Q4_K_M, Q2_K, TQ2_0, ...) or a ggml format.
    #[arg(long, default_value = "Q4_K_M", value_parser = crate::flag::<memwall_spec::Mix>("weights"))]
    weights: memwall_spec::Mix,
    #[command(flatten)]
    kv: crate::KvArgs,
    /// Threads (default: the CPUs available).
    #[arg(long, value_parser = crate::whole::<usize>)]
    threads: Option<usize>,
    /// Tokens to generate and time.
    #[arg(long, default_value_t = 32, value_parser = crate::whole::<usize>)]
    tokens: usize,
    /// Tokens of synthetic context in the KV cache before decoding.
    #[arg(long, default_value_t = 0, value_parser = crate::whole::<usize>)]
    context: usize,
    /// Untimed tokens first (caches and page tables warm).
    #[arg(long, default_value_t = 2, value_parser = crate::whole::<usize>)]
    warmup: usize,
    /// Seed of the weights, the context and sampling.
    #[arg(long, default_value_t = 0, value_parser = crate::whole::<u64>)]
    seed: u64,
    /// Sampling temperature (0: greedy).
    #[arg(long, default_value_t = 0.0)]
    temperature: f32,
}

pub fn decode(a: &DecodeArgs) -> Result<()> {
    let model = load_model(&a.model)?;
    let weights = WeightQuant::new(a.weights);
    let kv = a.kv.formats();
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if a.tokens == 0 {
        anyhow::bail!("invalid `--tokens` = 0: decode at least one token");
    }
    if !(a.temperature.is_finite() && a.temperature >= 0.0) {
        anyhow::bail!("invalid `--temperature` = {}: must be a finite number >= 0", a.temperature);
    }
    let cfg = EngineConfig { seed: a.seed, threads, ..EngineConfig::new(model, weights, kv) };
    eprintln!("building {} with random {} weights...", cfg.model.name, a.weights);
    check_memory("--model with --weights", planned_bytes(&cfg.model, &cfg.weights))?;
    let mut e = Engine::new(cfg).context("building the engine")?;
    let held = a.context.saturating_add(a.warmup).saturating_add(a.tokens);
    check_memory("--context, --warmup and --tokens (KV cache)", e.kv_bytes_at(held as u64))?;
    if a.context > 0 {
        eprintln!("filling {} tokens of synthetic context...", a.context);
        e.fill_context(a.context)?;
    }
    let first = 1 % e.config().model.vocab as u32;
    let warm = e.generate(first, a.warmup, a.temperature)?;
    e.reset_timings();
    let g = e.generate(warm.tokens.last().copied().unwrap_or(first), a.tokens, a.temperature)?;
    let m = &e.config().model;
    println!(
        "{}: {} layers, hidden {}, {} weights {:.3} GB, KV {}/{} {:.3} GB at {} tokens; {} thread(s), {} kernels",
        m.name,
        m.n_layers,
        m.hidden,
        a.weights,
        to_gb(e.weight_bytes()),
        e.config().kv.k.name(),
        e.config().kv.v.name(),
        to_gb(e.kv_bytes()),
        e.position(),
        threads,
        memwall_kernels::simd::Isa::best().name(),
    );
    let tokens = g.token_seconds.len() as f64;
    println!(
        "decode: {:.2} tok/s ({:.2} ms/token mean, {:.2} median, {} tokens); weights read at {:.1} GB/s",
        g.tok_s(),
        1e3 / g.tok_s(),
        1e3 * g.median_token_seconds(),
        g.tokens.len(),
        to_gb(e.weight_bytes()) * g.tok_s(),
    );
    let total = g.timings.total();
    let lines: Vec<Vec<String>> = OpClass::ALL
        .iter()
        .filter(|c| g.timings.of(**c) > 0.0)
        .map(|c| {
            let s = g.timings.of(*c);
            vec![
                c.name().to_string(),
                format!("{:.3}", 1e3 * s / tokens),
                format!("{:.1}", g.timings.calls[*c as usize] as f64 / tokens),
                format!("{:.1}%", 100.0 * s / total),
            ]
        })
        .collect();
    print_table(&["operator", "ms/token", "calls/token", "share"].map(String::from), &lines);
    Ok(())
}
