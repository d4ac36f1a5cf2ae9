//! `memwall`: footprint, speed and limits of on-device LLM inference from the command line.
//!
//! Every error is printed with the field and value it concerns and exits with status 2;
//! output paths are checked before any work; SIGINT/SIGTERM remove the temporary files in
//! flight and exit with 130/143; a closed stdout or stderr ends printing quietly.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use memwall_io::{EngineProfile, Experiment, QualityTable, load_device, load_model};
use memwall_sim::{Estimate, WeightBytes, estimate};
use memwall_spec::units::{ByteSize, GB, Seconds, to_gb};
use memwall_spec::{
    Backend, ContextPolicy, FileType, KvQuant, Mix, QuantFormat, Scenario, SpecError, WeightQuant, Workload,
};

mod stdio;

// `println!`/`eprintln!` in this binary go through `stdio`, which does not panic when the
// reader of stdout or stderr has gone (`memwall presets | head -1`).
macro_rules! println {
    () => {
        $crate::stdio::out(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::stdio::out(format_args!($($arg)*))
    };
}
macro_rules! eprintln {
    ($($arg:tt)*) => {
        $crate::stdio::err(format_args!($($arg)*))
    };
}

mod calibrate;
mod compare;
mod decode;

/// A clap value parser for a type read from text ([`std::str::FromStr`]), whose errors name
/// `field`: the same parsing the experiment files and the Python bindings use.
pub(crate) fn flag<T: std::str::FromStr<Err = SpecError>>(
    field: &'static str,
) -> impl Fn(&str) -> std::result::Result<T, SpecError> + Clone + Send + Sync + 'static {
    move |text| text.parse::<T>().map_err(|e| e.within(field))
}
/// A clap value parser for a whole number (`u32`, `u64`, `usize`). The parser sees a leading
/// minus as a value (see [`parse_args`]), and this refuses it naming the flag, as it refuses
/// fractions and values beyond the type's range, instead of clap's "unexpected argument '-1'".
pub(crate) fn whole<T: TryFrom<u128>>(text: &str) -> std::result::Result<T, String> {
    let t = text.trim();
    if t.starts_with('-') && t[1..].parse::<f64>().is_ok() {
        return Err("must be a whole number >= 0".into());
    }
    let n: u128 = t.parse().map_err(|_| format!("expected a whole number >= 0, not `{t}`"))?;
    T::try_from(n).map_err(|_| format!("exceeds {}", max_of::<T>()))
}

/// The largest value of an unsigned integer type, for messages.
fn max_of<T: TryFrom<u128>>() -> u128 {
    // The largest power of two below 2^128 that T holds, minus one, by halving.
    let mut hi: u128 = u128::MAX;
    while T::try_from(hi).is_err() {
        hi >>= 1;
    }
    hi
}

/// Parse the command line with every subcommand accepting a leading minus as a value, so that
/// `--context -1` reaches the flag's parser (which refuses it by name) rather than being taken
/// for an unknown flag.
fn parse_args() -> std::result::Result<Cli, clap::Error> {
    let cmd = Cli::command().mut_subcommands(|c| c.allow_negative_numbers(true));
    Cli::from_arg_matches(&cmd.try_get_matches()?)
}

mod json;
mod quality;
mod solve;

#[derive(Parser)]
#[command(name = "memwall", version, about = "The memory wall of on-device LLM inference")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the model, device and engine presets.
    Presets {
        /// Only `models`, `devices` or `engines`.
        kind: Option<String>,
    },
    /// Memory footprint by component, and whether it fits the device with the margin.
    Footprint(ScenarioArgs),
    /// Decode tok/s, TTFT, energy per token and the binding term of one design point.
    Estimate(EstimateArgs),
    /// Two to eight designs side by side: components and metrics with their deltas from the
    /// first and the binding term of each.
    Compare(compare::CompareArgs),
    /// Answer a design question directly: the longest context, the least RAM or bandwidth,
    /// the best-quality format that fits, or what to change so that a design fits.
    Solve(solve::SolveArgs),
    /// Run an experiment (a base scenario and a grid) and write the results as Parquet.
    Run {
        /// The experiment TOML.
        #[arg(default_value = "experiments/phone-35b.toml")]
        experiment: PathBuf,
        /// Output Parquet file (default: `results/NAME.parquet`, NAME being the experiment's name).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the table of every design when the grid has at most this many points; a larger
        /// grid prints its counts and best designs (0: always the whole table).
        #[arg(long, default_value_t = 200, value_parser = whole::<usize>)]
        max_rows: usize,
        /// Refuse a grid of more points than this.
        #[arg(long, default_value_t = 50_000_000, value_parser = whole::<u64>)]
        max_points: u64,
        /// Figure of memory against decode tok/s, coloured by estimated quality, with the Pareto
        /// front drawn (`.svg` or `.png`; a sweep beyond 200 000 points is sampled evenly, the
        /// front always complete).
        #[arg(long)]
        plot: Option<PathBuf>,
        /// The figure's size in pixels.
        #[arg(long, default_value = "1000x700", value_parser = flag::<memwall_io::plot::Size>("--plot-size"))]
        plot_size: memwall_io::plot::Size,
    },
    /// Simulate a scenario through time (thermal throttling, memory pressure, policies) and
    /// print a summary per design point; optionally write the per-token trace as Parquet.
    Simulate {
        /// The scenario: an experiment TOML whose `[base.sim]` configures the simulation
        /// (a `[grid]` simulates every point).
        scenario: PathBuf,
        /// Simulated time per point (`90s`, `10m`, `1h`); the session's turns repeat until then.
        #[arg(long, allow_hyphen_values = true, value_parser = flag::<Seconds>("duration"))]
        duration: Option<Seconds>,
        /// Per-token trace output (Parquet).
        #[arg(long)]
        trace: Option<PathBuf>,
        /// Summary output, one row per design point (Parquet).
        #[arg(long)]
        summary: Option<PathBuf>,
        /// Figure of generation tok/s, die/skin temperature, the compute unit's power and clock over
        /// time, one line per point, with kills, policy actions and background events marked
        /// (`.svg` or `.png`).
        #[arg(long)]
        plot: Option<PathBuf>,
        /// The figure's size in pixels.
        #[arg(long, default_value = "1100x1000", value_parser = flag::<memwall_io::plot::Size>("--plot-size"))]
        plot_size: memwall_io::plot::Size,
        /// Refuse a run whose trace would exceed this size (`500MB`, `2GB`, `10GB`).
        #[arg(long, default_value = "2GB", allow_hyphen_values = true, value_parser = flag::<ByteSize>("--trace-limit"))]
        trace_limit: ByteSize,
    },
    /// Calibrate a device. Without `--from-llama-bench`: probe this machine with memwall's
    /// kernels and engine (read bandwidth by threads and working set, the GEMV of each weight
    /// format in cache and DRAM, attention per KV format and context, MoE routing, the
    /// engine's fixed costs), fit the cost model with confidence intervals, and write a device
    /// profile, an engine profile (`memwall@NAME`) and the raw measurements. With it: fit a
    /// device from llama-bench output of a model on the device (its bandwidth share, the
    /// engine's fixed cost per token and how attention grows with the context there).
    Calibrate {
        /// llama-bench output with generation tests (tg128, tg128 @ d4096, ...).
        #[arg(long)]
        from_llama_bench: Option<PathBuf>,
        /// With --from-llama-bench: the device measured, a preset name or TOML path.
        #[arg(long)]
        device: Option<String>,
        /// With --from-llama-bench: the model benchmarked, a preset name or TOML path.
        #[arg(long)]
        model: Option<String>,
        /// With --from-llama-bench: the engine that ran it.
        #[arg(long, default_value = "llama.cpp")]
        engine: String,
        /// Device profile to write (`datasets/hosts/NAME.toml`); the engine profile and the raw
        /// measurements go beside it (`NAME.engine.toml`, `NAME.measurements.csv`).
        #[arg(long)]
        out: PathBuf,
        /// Engine profile to write (default: OUT with `.engine.toml`).
        #[arg(long)]
        engine_out: Option<PathBuf>,
        /// Host probing: the short probe set (about 2 minutes).
        #[arg(long)]
        quick: bool,
        /// Host probing: the most threads probed (default: the CPUs available).
        #[arg(long, value_parser = whole::<usize>)]
        threads: Option<usize>,
    },
    /// Decode for real on this machine with memwall's reference engine: a model with seeded
    /// random weights in the chosen formats, timed per token and per operator.
    Decode(decode::DecodeArgs),
    /// Quality from measured error: the output error of each weight format on realistic
    /// synthetic weights, fitted to the published perplexity deltas of llama.cpp's mixes,
    /// and estimates (with 80 % intervals) for formats and quantizers without a published
    /// figure (group-wise int3/int4 by RTN, AWQ or GPTQ, per-channel int4/int8).
    Quality(quality::QualityArgs),
    /// Check predictions against published measurements, leave-one-device-out: every
    /// device's rows are predicted by a fit of the engine figures on the other devices.
    Validate {
        /// Validate decode tok/s across devices (the only kind so far).
        #[arg(long)]
        devices: bool,
        /// Validate on this machine: run the reference engine on 14 designs and predict each
        /// with this calibrated host profile (`memwall calibrate --out HOST.toml`; its
        /// `HOST.engine.toml` beside it).
        #[arg(long)]
        host: Option<PathBuf>,
        /// With --host: tokens timed per design.
        #[arg(long, default_value_t = 8, value_parser = whole::<usize>)]
        tokens: usize,
        /// With --host: only the designs whose id contains this.
        #[arg(long)]
        only: Option<String>,
        /// The validation table (default: the shipped datasets/validation_decode.csv).
        #[arg(long)]
        table: Option<PathBuf>,
        /// Write the per-row report as Parquet.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write the engine profiles with the figures fitted on every row (and the
        /// cross-validated error ratios) into this directory.
        #[arg(long)]
        write_engines: Option<PathBuf>,
    },
}

/// `memwall estimate`: a design and whether to show its operators.
#[derive(Args)]
struct EstimateArgs {
    #[command(flatten)]
    design: ScenarioArgs,
    /// Where a token's time goes: every operator of a decoded token at the mean context
    /// (each layer's projections, attention, FFN or experts, the LM head) with its bytes by
    /// source, multiply-adds, time and binding term.
    #[arg(long)]
    ops: bool,
}

#[derive(Args)]
pub(crate) struct ScenarioArgs {
    /// Model preset name, or a path to a TOML spec, a GGUF file or a Hugging Face config.json.
    #[arg(long, required_unless_present_any = ["gguf", "hf"], conflicts_with_all = ["gguf", "hf"])]
    model: Option<String>,
    /// A GGUF file: its header gives the shapes and every tensor's type (weight bytes are the
    /// file's); the weights default to the types it stores.
    #[arg(long, conflicts_with = "hf")]
    gguf: Option<String>,
    /// A Hugging Face config.json.
    #[arg(long)]
    hf: Option<String>,
    /// Device preset name or TOML path.
    #[arg(long)]
    device: String,
    /// Weight mix: a llama.cpp file type (Q4_K_M, Q2_K, IQ4_XS, TQ1_0, ...), a format (q4_0,
    /// int4-g128, ...) or `stored` (a GGUF's own types) [default: stored for a GGUF file,
    /// Q4_K_M otherwise].
    #[arg(long, value_parser = flag::<Mix>("weights"))]
    weights: Option<Mix>,
    #[command(flatten)]
    kv: KvArgs,
    /// Context the KV cache is allocated for, tokens.
    #[arg(long, default_value_t = 4096, value_parser = whole::<u64>)]
    context: u64,
    /// Prompt tokens.
    #[arg(long, default_value_t = 512, value_parser = whole::<u64>)]
    prompt: u64,
    /// Generated tokens.
    #[arg(long, default_value_t = 128, value_parser = whole::<u64>)]
    gen_tokens: u64,
    /// Let the KV cache grow with the tokens seen instead of allocating the whole context.
    #[arg(long)]
    grow: bool,
    /// Sequences decoded together.
    #[arg(long, default_value_t = 1, value_parser = whole::<u32>)]
    batch: u32,
    /// CPU threads (default: the device's big cores).
    #[arg(long, value_parser = whole::<u32>)]
    threads: Option<u32>,
    /// Compute unit: cpu, gpu or npu.
    #[arg(long, default_value = "cpu", value_parser = flag::<Backend>("backend"))]
    backend: Backend,
    /// Inference engine: a profile name (llama.cpp, ollama, llama.cpp-cuda, llama.cpp-vulkan,
    /// llama.cpp-opencl, mlc-llm, executorch, litert-lm, mlx, mnn, generic, ...) or a TOML path.
    #[arg(long, default_value = "generic", value_parser = |s: &str| s.parse::<EngineProfile>())]
    engine: EngineProfile,
    /// Use the class default for a figure the device lacks for the unit (a GPU's bandwidth
    /// share), labelled as assumed in the output, instead of refusing.
    #[arg(long)]
    assume_defaults: bool,
    /// Safety margin kept free, GB.
    #[arg(long, default_value_t = 2.0)]
    margin_gb: f64,
    /// Print one JSON document (the versioned schema in README.md) instead of the table.
    #[arg(long)]
    json: bool,
}

impl ScenarioArgs {
    pub(crate) fn scenario(&self) -> Result<Scenario> {
        let kv = self.kv.formats();
        let backend = self.backend;
        if !(self.margin_gb.is_finite() && self.margin_gb >= 0.0) {
            anyhow::bail!("invalid `--margin-gb` = {}: must be a finite number >= 0", self.margin_gb);
        }
        let max_gb = memwall_spec::bounds::MAX_BYTES as f64 / GB as f64;
        if self.margin_gb > max_gb {
            anyhow::bail!(
                "invalid `--margin-gb` = {}: exceeds the plausible bound {max_gb:.0} GB (2^60 bytes)",
                self.margin_gb
            );
        }
        let workload = Workload {
            prompt_tokens: self.prompt,
            gen_tokens: self.gen_tokens,
            context_tokens: self.context,
            context_policy: if self.grow { ContextPolicy::Grow } else { ContextPolicy::Allocate },
            batch: self.batch,
            threads: self.threads,
            backend,
            margin_bytes: (self.margin_gb * GB as f64) as u64,
            ..Workload::default()
        };
        // `--gguf` and `--hf` always name a file, whatever it is called; `--model` a preset,
        // a spec TOML or a model file by its extension.
        let file = match (&self.gguf, &self.hf, &self.model) {
            (Some(p), _, _) => Some((p.as_str(), "--gguf", memwall_import::ModelFile::Gguf)),
            (None, Some(p), _) => Some((p.as_str(), "--hf", memwall_import::ModelFile::HfConfig)),
            (None, None, Some(name)) => memwall_import::ModelFile::of_name(name).map(|k| (name.as_str(), "--model", k)),
            (None, None, None) => None,
        };
        let model = match file {
            Some((path, flag, kind)) => {
                if !std::path::Path::new(path).exists() {
                    let preset = memwall_io::presets::model_text(path).is_some();
                    anyhow::bail!(
                        "`{flag}` {path}: no such file{}",
                        if preset {
                            format!(" (`{path}` is a model preset: name it with --model)")
                        } else {
                            String::new()
                        }
                    );
                }
                let imported = memwall_io::presets::import_model_as(path, kind)?;
                report_import(path, &imported);
                imported.model
            }
            None => load_model(self.model.as_deref().unwrap_or_default())?,
        };
        let weights =
            self.weights.unwrap_or(if model.stored.is_some() { Mix::Stored } else { Mix::File(FileType::Q4_K_M) });
        let s = Scenario {
            model,
            device: load_device(&self.device)?,
            engine: self.engine.0.clone(),
            assume_defaults: self.assume_defaults,
            weights: WeightQuant::new(weights),
            kv,
            workload,
            cost: Default::default(),
            sim: Default::default(),
        };
        s.validate()?;
        if let Some(w) = s.context_warning() {
            eprintln!("warning: {w}");
        }
        Ok(s)
    }
}

/// What a model file's mapping decided and could not use, on stderr (the table stays clean).
fn report_import(path: &str, i: &memwall_import::Imported) {
    let m = &i.model;
    let what = match (&i.file_type, i.tensor_bytes) {
        (Some(t), Some(b)) => {
            format!(", file type {t}, {} tensors, {b} bytes of tensor data", m.stored.as_ref().map_or(0, |s| s.len()))
        }
        (None, Some(b)) => format!(", {b} bytes of tensor data"),
        _ => String::new(),
    };
    eprintln!("imported {path}: {} layers, hidden {}{what}", m.n_layers, m.hidden);
    for n in &i.notes {
        eprintln!("  note: {n}");
    }
    if !i.unmapped.is_empty() {
        eprintln!("  not used by memwall's model ({}):", i.unmapped.len());
        for (k, v) in &i.unmapped {
            eprintln!("    {k} = {v}");
        }
    }
}

/// `--kv`, `--kv-k` and `--kv-v`.
#[derive(Args)]
struct KvArgs {
    /// KV-cache format for both K and V (f16, q8_0, q4_0, ...).
    #[arg(long, default_value = "f16", value_parser = flag::<QuantFormat>("kv"))]
    kv: QuantFormat,
    /// K-cache format (overrides --kv).
    #[arg(long, value_parser = flag::<QuantFormat>("kv_k"))]
    kv_k: Option<QuantFormat>,
    /// V-cache format (overrides --kv).
    #[arg(long, value_parser = flag::<QuantFormat>("kv_v"))]
    kv_v: Option<QuantFormat>,
}

impl KvArgs {
    /// The formats (`--kv-k` and `--kv-v` override `--kv`).
    fn formats(&self) -> KvQuant {
        KvQuant { k: self.kv_k.unwrap_or(self.kv), v: self.kv_v.unwrap_or(self.kv) }
    }
}

fn gb(bytes: u64) -> String {
    format!("{:.3}", to_gb(bytes))
}

fn signed_gb(bytes: i64) -> String {
    format!("{:+.3}", bytes as f64 / GB as f64)
}

fn presets(kind: Option<&str>) -> Result<()> {
    if !matches!(kind, None | Some("models") | Some("devices") | Some("engines")) {
        let kinds = ["models", "devices", "engines"];
        let kind = kind.unwrap_or_default();
        return Err(
            SpecError::unknown("kind", "preset kind", kind, kinds, "; expected models, devices or engines").into()
        );
    }
    if kind.is_none() || kind == Some("models") {
        println!(
            "{:<24} {:>8} {:>9} {:>7} {:>6}  {:<}",
            "model", "params", "active", "layers", "hidden", "layer kinds"
        );
        for (name, _) in memwall_io::presets::MODELS {
            let m = load_model(name)?;
            let p = m.params();
            let mut kinds: Vec<String> = Vec::new();
            for k in m.layer_kinds() {
                let k = format!("{k:?}").to_lowercase();
                if !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
            let extra = [m.moe.as_ref().map(|_| "moe"), m.mla.as_ref().map(|_| "mla")].into_iter().flatten();
            kinds.extend(extra.map(String::from));
            println!(
                "{:<24} {:>7.2}B {:>8.2}B {:>7} {:>6}  {}",
                name,
                p.total as f64 / 1e9,
                p.active_per_token as f64 / 1e9,
                m.n_layers,
                m.hidden,
                kinds.join("+")
            );
        }
    }
    if kind.is_none() {
        println!();
    }
    if kind.is_none() || kind == Some("devices") {
        println!("{:<28} {:>7} {:>9} {:>6} {:>8}  {:<}", "device", "RAM GB", "peak GB/s", "cores", "free GB", "memory");
        for (name, _) in memwall_io::presets::DEVICES {
            let d = load_device(name)?;
            println!(
                "{:<28} {:>7.1} {:>9.1} {:>6} {:>8.2}  {}",
                name,
                to_gb(d.memory.ram_bytes),
                d.memory.peak_gbps(),
                d.total_cores(),
                to_gb(d.memory.available_bytes()),
                d.memory.lpddr
            );
        }
    }
    if kind.is_none() {
        println!();
    }
    if kind.is_none() || kind == Some("engines") {
        println!("{:<20} {:<14} {:<36}  {:<}", "engine", "units", "also answers to", "description");
        let mut engines = vec![memwall_spec::EngineSpec::generic()];
        for (name, _) in memwall_io::presets::ENGINES {
            engines.push(memwall_io::load_engine(name)?);
        }
        for e in engines {
            let units: Vec<&str> = [("cpu", e.cpu.is_some()), ("gpu", e.gpu.is_some()), ("npu", e.npu.is_some())]
                .iter()
                .filter(|u| u.1)
                .map(|u| u.0)
                .collect();
            println!("{:<20} {:<14} {:<36}  {}", e.name, units.join(","), e.aliases.join(", "), e.description);
        }
    }
    Ok(())
}

fn footprint(a: &ScenarioArgs) -> Result<()> {
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

fn estimate_cmd(a: &EstimateArgs) -> Result<()> {
    let s = a.design.scenario()?;
    let e = estimate(&s)?;
    let ctx = memwall_sim::analytic::mean_decode_context(&s.workload);
    let ops = if a.ops { Some(memwall_sim::des::op_times(&memwall_sim::CostPlan::new(&s)?, ctx)) } else { None };
    if a.design.json {
        let q = QualityTable::default().lookup(&s.weights, &s.kv);
        let mut doc = serde_json::json!({
            "design": json::design(&s),
            "estimate": json::value(&e),
            "quality": json::quality(&q),
        });
        if let Some(ops) = &ops {
            doc["ops_context_tokens"] = ctx.into();
            doc["ops"] = memwall_io::columns::json_rows(memwall_io::columns::OP_COLUMNS, ops).into();
        }
        json::print("estimate", doc);
        return Ok(());
    }
    print_estimate(&s, &e);
    if let Some(ops) = ops {
        print_ops(ctx, &e, &ops);
    }
    Ok(())
}

/// The per-operator table of `memwall estimate --ops`, at context `ctx`.
fn print_ops(ctx: u64, e: &Estimate, ops: &[(memwall_sim::des::Op, memwall_sim::StepTime)]) {
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

fn print_estimate(s: &Scenario, e: &Estimate) {
    let q = QualityTable::default().lookup(&s.weights, &s.kv);
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
    if !e.assumed.is_empty() {
        println!("assumed       class defaults for {} (the device states none)", e.assumed);
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
    match e.decode_tok_s_interval {
        Some([lo, hi]) => println!(
            "  80% range   {lo:.2} to {hi:.2} tok/s  ({} on the {}: its error on devices it was not fitted on)",
            s.engine.name,
            s.workload.backend.name()
        ),
        None => println!(
            "  80% range   unknown: engine `{}` has no cross-validated error on the {} (name it with --engine)",
            s.engine.name,
            s.workload.backend.name()
        ),
    }
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
    let show = |d: Option<f64>| d.map_or("unknown".to_string(), |v| format!("{v:+.4}"));
    println!("quality       dPPL weights {} | KV {}  [{}]", show(q.ppl_delta_weights), show(q.ppl_delta_kv), q.source);
}

/// What `memwall run` prints of a sweep.
struct Digest(memwall_io::sweep::Digest);

impl Digest {
    fn print(&self, exp: &Experiment, out: &std::path::Path, margin_bytes: u64) {
        let d = &self.0;
        let axes: Vec<(usize, &memwall_io::Axis)> =
            exp.axes.iter().enumerate().filter(|(_, a)| a.values.len() > 1).collect();
        let whole = d.complete();
        if whole {
            let mut header: Vec<String> = axes.iter().map(|(_, a)| a.key.clone()).collect();
            header.extend(["total GB", "fits", "headroom GB", "decode tok/s", "bound by", "dPPL w"].map(String::from));
            let lines: Vec<Vec<String>> = d
                .rows
                .iter()
                .map(|r| {
                    let choice = exp.choice(r.point as usize);
                    let mut line: Vec<String> = axes.iter().map(|(i, a)| a.display(choice[*i])).collect();
                    line.extend([
                        gb(r.total_bytes),
                        if r.fits { "yes".into() } else { "no".into() },
                        signed_gb(r.headroom_bytes),
                        format!("{:.2}", r.decode_tok_s),
                        r.binding.clone(),
                        r.ppl_delta_weights.map_or("?".into(), |v| format!("{v:+.3}")),
                    ]);
                    line
                })
                .collect();
            print_table(&header, &lines);
        }
        println!("\n{} of {} designs fit with a {:.1} GB margin.", d.fitting, d.points, to_gb(margin_bytes));
        if d.beyond_max > 0 {
            println!(
                "{} designs have a context beyond the model's max_context (column context_beyond_max).",
                d.beyond_max
            );
        }
        let describe = |p: u64| exp.describe(&exp.choice(p as usize));
        if whole {
            if let Some(b) = d.best.first() {
                println!(
                    "fastest fitting design: {} ({:.2} tok/s, {} GB)",
                    describe(b.point),
                    b.decode_tok_s,
                    gb(b.total_bytes)
                );
            }
        } else {
            if !d.best.is_empty() {
                println!("fastest fitting designs:");
                for b in &d.best {
                    println!("  {:>10.2} tok/s  {:>8} GB  {}", b.decode_tok_s, gb(b.total_bytes), describe(b.point));
                }
            }
            println!("every design, with all inputs and metrics: {}", out.display());
        }
        let front = d.front.members();
        if front.is_empty() && d.fitting > 0 {
            println!("no Pareto front: the quality of every design that fits is unknown (column quality_source)");
        }
        if !front.is_empty() {
            println!(
                "\nPareto front: {} designs no other beats on memory, tok/s, dPPL and J/token at once (column `pareto`){}:",
                front.len(),
                if front.len() > Self::FRONT_SHOWN {
                    format!("; the {} smallest", Self::FRONT_SHOWN)
                } else {
                    String::new()
                }
            );
            for m in front.iter().take(Self::FRONT_SHOWN) {
                println!(
                    "  {:>8} GB  {:>8.2} tok/s  dPPL {:>+7.3}  {:>6.3} J/token  {}",
                    gb(m.total_bytes),
                    m.decode_tok_s,
                    m.ppl_delta,
                    m.j_per_token,
                    describe(m.point)
                );
            }
        }
        println!("results: {} ({} rows)", out.display(), d.points);
    }

    /// Front members printed at most.
    const FRONT_SHOWN: usize = 12;
}

/// Print a table with columns padded to their widest cell.
pub(crate) fn print_table(header: &[String], lines: &[Vec<String>]) {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| lines.iter().map(|l| l[c].chars().count()).chain([header[c].chars().count()]).max().unwrap_or(0))
        .collect();
    let fmt_line = |l: &[String]| {
        l.iter().zip(&widths).map(|(v, w)| format!("{v:<w$}")).collect::<Vec<_>>().join("  ").trim_end().to_string()
    };
    println!("{}", fmt_line(header));
    for l in lines {
        println!("{}", fmt_line(l));
    }
}

fn run(
    path: &std::path::Path,
    out: Option<PathBuf>,
    max_rows: usize,
    max_points: u64,
    plot: Option<(&std::path::Path, memwall_io::plot::Size)>,
) -> Result<()> {
    // Loading reads every file the experiment names (each registered as an input).
    let exp = Experiment::load(path)?;
    let out = match out {
        Some(out) => out,
        None => memwall_io::default_output(&exp.name, "parquet")?,
    };
    let mut outputs = vec![("--out", out.as_path())];
    if let Some((p, _)) = plot {
        memwall_io::plot::Format::of("--plot", p)?;
        outputs.push(("--plot", p));
    }
    memwall_io::check_outputs(&[], &outputs)?;
    let n = exp.len();
    if n as u64 > max_points {
        let sizes: Vec<String> = exp.axes.iter().map(|a| format!("{} ({})", a.key, a.values.len())).collect();
        anyhow::bail!(
            "the grid has {n} points ({}), more than `--max-points` = {max_points}; shrink the grid or raise \
             --max-points",
            sizes.join(" × ")
        );
    }
    eprintln!("{}: {} design points", exp.name, n);
    let sweep = memwall_io::Sweep::new(&exp)?;
    let mut meta = memwall_io::metadata(Some(&exp));
    meta.extend(sweep.resolved_metadata());
    let schema = memwall_io::TableBuilder::estimates(&exp, 0).schema();
    let mut stream = memwall_io::ParquetStream::create(&out, schema, &meta, memwall_io::stream::ROW_GROUP_ROWS)?;
    let bar = indicatif::ProgressBar::new(n as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} points  {elapsed_precise} (eta {eta})")
            .expect("valid template"),
    );
    let mut digest = memwall_io::sweep::Digest::new(max_rows);
    // The scatter's designs: every point up to PLOT_POINTS, an even sample beyond.
    const PLOT_POINTS: u64 = 200_000;
    let stride = (n as u64).div_ceil(PLOT_POINTS).max(1);
    let mut designs: Vec<(u64, memwall_io::plot::Design, i64)> = Vec::new();
    sweep
        .run(memwall_io::sweep::BATCH_POINTS, &|done| bar.set_position(done), &mut |batches| {
            for b in &batches {
                stream.write(b)?;
                digest.observe(b)?;
                if plot.is_some() {
                    designs.extend(memwall_io::plot::designs_of(b, stride)?);
                }
            }
            Ok(())
        })
        .map_err(|e| memwall_io::locate::at_line(e, &exp.text, &path.display().to_string(), &["base."]))?;
    stream.finish_adding(memwall_io::pareto::field(), memwall_io::pareto::READS, &|b| digest.front.column(b))?;
    bar.finish_and_clear();
    if let Some((p, size)) = plot {
        // The front complete, whatever the sample; the budget drawn when every design has
        // the same one.
        let front = digest.front.members();
        let on: std::collections::HashSet<u64> = front.iter().map(|m| m.point).collect();
        let budget = designs.first().map(|d| d.2).filter(|b| designs.iter().all(|d| d.2 == *b)).map(|b| b as f64 / 1e9);
        let mut all: Vec<memwall_io::plot::Design> =
            designs.iter().filter(|d| !on.contains(&d.0)).map(|d| d.1).collect();
        all.extend(front.iter().map(|m| memwall_io::plot::Design {
            total_bytes: m.total_bytes,
            decode_tok_s: m.decode_tok_s,
            ppl_delta: Some(m.ppl_delta),
            fits: true,
            pareto: true,
        }));
        let title = format!(
            "{}: memory vs decode rate, {} designs{}",
            exp.name,
            n,
            if stride > 1 { format!(" (1 in {stride} shown)") } else { String::new() }
        );
        memwall_io::plot::write_scatter(p, &title, &all, budget, size)?;
    }
    if digest.beyond_max > 0 {
        eprintln!(
            "warning: {} of {n} designs have a context beyond their model's max_context (results assume the model \
             works there, e.g. with RoPE scaling)",
            digest.beyond_max
        );
    }
    let margin = exp.point(0).map(|p| p.scenario.workload.margin_bytes).unwrap_or(0);
    Digest(digest).print(&exp, &out, margin);
    Ok(())
}

fn simulate(
    path: &std::path::Path,
    duration_s: Option<f64>,
    out: memwall_io::Outputs,
    summary: Option<&std::path::Path>,
) -> Result<()> {
    let exp = Experiment::load(path)?;
    let outputs = [("--trace", out.trace), ("--summary", summary), ("--plot", out.plot)];
    memwall_io::check_outputs(&[], &outputs.iter().filter_map(|&(flag, p)| Some((flag, p?))).collect::<Vec<_>>())?;
    let n = exp.len();
    eprintln!("{}: simulating {} design point{}", exp.name, n, if n == 1 { "" } else { "s" });
    // Progress in simulated seconds when the length is known, else per point.
    let horizon = duration_s.or_else(|| exp.point(0).ok().and_then(|p| p.scenario.sim.duration_s));
    let bar = indicatif::ProgressBar::new(n as u64 * 1000);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} point {msg}  {elapsed_precise} (eta {eta})")
            .expect("valid template"),
    );
    let results = memwall_io::simulate_experiment(&exp, duration_s, out, &mut |i, t| {
        let frac = horizon.map_or(0.0, |h| (t / h).min(1.0));
        bar.set_position(i as u64 * 1000 + (frac * 1000.0) as u64);
        bar.set_message(format!("{}/{n}, t = {t:.0} s", i + 1));
    })?;
    bar.finish_and_clear();

    let axes: Vec<&memwall_io::Axis> = exp.axes.iter().filter(|a| a.values.len() > 1).collect();
    let mut header: Vec<String> = axes.iter().map(|a| a.key.clone()).collect();
    header.extend(
        [
            "load s",
            "TTFT s",
            "burst tok/s",
            "sustained tok/s",
            "throttle at s",
            "-25% at s",
            "J/token",
            "peak GB",
            "max die °C",
            "max skin °C",
            "tokens",
            "killed at s",
            "actions",
        ]
        .map(String::from),
    );
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.1}"));
    let mut table = Vec::new();
    for r in &results {
        let mut line: Vec<String> = axes
            .iter()
            .map(|a| {
                let i = exp.axes.iter().position(|x| x.key == a.key).unwrap_or(0);
                a.display(r.point.choice[i])
            })
            .collect();
        let s = &r.summary;
        line.extend([
            format!("{:.1}", s.load_s),
            s.ttft_s.map_or("-".into(), |t| format!("{t:.2}")),
            format!("{:.2}", s.burst_tok_s),
            format!("{:.2}", s.sustained_tok_s),
            opt(s.throttle_onset_s),
            opt(s.time_to_minus_25pct_s),
            s.j_per_token.map_or("-".into(), |j| format!("{j:.3}")),
            gb(s.peak_resident_bytes),
            format!("{:.1}", s.max_die_c),
            format!("{:.1}", s.max_skin_c),
            s.decode_tokens.to_string(),
            opt(s.killed_at_s),
            s.actions.len().to_string(),
        ]);
        table.push(line);
    }
    print_table(&header, &table);
    for r in results.iter().filter(|r| r.summary.decode_tokens == 0) {
        let s = &r.summary;
        let why = if s.ttft_s.is_none() {
            format!(
                "the run ended at {:.3} s, before the first prefill finished (load {:.3} s)",
                s.duration_s, s.load_s
            )
        } else {
            format!("the run ended at {:.3} s, after the prefill and before the first decode step", s.duration_s)
        };
        let killed = s.killed_at_s.map_or(String::new(), |k| format!("; killed at {k:.3} s"));
        println!(
            "\npoint {} produced no token: {why}{killed}; TTFT, the rates and J/token are unknown (`-`, null in \
             --summary)",
            r.point.index
        );
    }
    for r in results.iter().filter(|r| !r.summary.actions.is_empty()) {
        println!("\npoint {} ({}):", r.point.index, exp.describe(&r.point.choice));
        for a in &r.summary.actions {
            println!("  {a}");
        }
    }
    if let Some(t) = out.trace {
        let rows: u64 = results.iter().map(|r| r.summary.rows).sum();
        println!("\ntrace: {} ({rows} rows)", t.display());
    }
    if let Some(p) = out.plot {
        println!("plot: {}", p.display());
    }
    if let Some(p) = summary {
        let meta = memwall_io::simulation_metadata(&exp, duration_s, results.iter().map(|r| &r.point.scenario));
        let mut table = memwall_io::TableBuilder::summaries(&exp, results.len());
        for r in &results {
            table.append(&exp, r.point.index as u64, &r.point.scenario, &r.point.choice, &r.summary);
        }
        memwall_io::write_parquet(p, &table.finish()?, &meta)?;
        println!("summary: {} ({} rows)", p.display(), results.len());
    }
    Ok(())
}

fn validate(
    table: Option<&std::path::Path>,
    out: Option<&std::path::Path>,
    engines_dir: Option<&std::path::Path>,
) -> Result<()> {
    use memwall_calib::summarize;
    let rows = match table {
        Some(p) => memwall_io::validation::read_table(p)?,
        None => {
            memwall_io::validation::parse_table(memwall_io::presets::VALIDATION_DECODE_CSV, "validation_decode.csv")?
        }
    };
    let inputs: Vec<&std::path::Path> = table.into_iter().collect();
    let outputs: Vec<(&str, &std::path::Path)> =
        [("--out", out)].into_iter().filter_map(|(f, p)| Some((f, p?))).collect();
    memwall_io::check_outputs(&inputs, &outputs)?;
    eprintln!("validating {} rows (fitting every engine, then once per device left out)...", rows.len());
    let v = memwall_io::validation::validate(&rows)?;
    let header: Vec<String> =
        ["row", "device", "engine/unit", "model", "weights", "measured", "predicted", "error", "roofline", "error"]
            .map(String::from)
            .to_vec();
    let lines: Vec<Vec<String>> = v
        .validated
        .iter()
        .map(|r| {
            vec![
                r.id.clone(),
                r.unit_device.clone(),
                format!("{}/{}", r.engine, r.backend),
                r.model.clone(),
                r.weights.clone(),
                format!("{:.2}", r.measured_tok_s),
                format!("{:.2}", r.predicted_tok_s),
                format!("{:+.0}%", 100.0 * (r.predicted_tok_s / r.measured_tok_s - 1.0)),
                format!("{:.2}", r.roofline_tok_s),
                format!("{:+.0}%", 100.0 * (r.roofline_tok_s / r.measured_tok_s - 1.0)),
            ]
        })
        .collect();
    print_table(&header, &lines);
    let measured: Vec<f64> = v.validated.iter().map(|r| r.measured_tok_s).collect();
    let predicted: Vec<f64> = v.validated.iter().map(|r| r.predicted_tok_s).collect();
    let in_sample: Vec<f64> = v.validated.iter().map(|r| r.in_sample_tok_s).collect();
    let roofline: Vec<f64> = v.validated.iter().map(|r| r.roofline_tok_s).collect();
    let devices = v.validated.iter().map(|r| r.unit_device.clone()).collect::<std::collections::BTreeSet<_>>().len();
    println!(
        "\nleave-one-device-out over {} rows of {devices} devices ({} rows set aside); error = |predicted / measured - 1|",
        v.validated.len(),
        v.excluded.len()
    );
    for (title, key) in [
        ("by device class", v.validated.iter().map(|r| r.class.clone()).collect::<Vec<_>>()),
        ("by engine and unit", v.validated.iter().map(|r| format!("{}/{}", r.engine, r.backend)).collect()),
    ] {
        let cv = summarize(&predicted, &measured, &key);
        let roof = summarize(&roofline, &measured, &key);
        let ins = summarize(&in_sample, &measured, &key);
        let header: Vec<String> = [
            title,
            "rows",
            "median",
            "max",
            "within 15%",
            "bias",
            "roofline median",
            "roofline max",
            "in-sample median",
        ]
        .map(String::from)
        .to_vec();
        let lines: Vec<Vec<String>> = cv
            .iter()
            .zip(&roof)
            .zip(&ins)
            .map(|((c, r), i)| {
                vec![
                    c.group.clone(),
                    c.rows.to_string(),
                    format!("{:.1}%", 100.0 * c.median),
                    format!("{:.0}%", 100.0 * c.max),
                    format!("{:.0}%", 100.0 * c.within_15pct),
                    format!("{:.2}", c.bias),
                    format!("{:.1}%", 100.0 * r.median),
                    format!("{:.0}%", 100.0 * r.max),
                    format!("{:.1}%", 100.0 * i.median),
                ]
            })
            .collect();
        println!();
        print_table(&header, &lines);
    }
    if !v.excluded.is_empty() {
        println!("\nset aside:");
        for (id, why) in &v.excluded {
            println!("  {id}: {why}");
        }
    }
    if let Some(p) = out {
        let batch = memwall_io::columns::batch_of(memwall_io::validation::REPORT_COLUMNS, &v.validated)?;
        memwall_io::write_parquet(p, &batch, &memwall_io::metadata(None))?;
        println!("report: {} ({} rows)", p.display(), v.validated.len());
    }
    if let Some(dir) = engines_dir {
        for (name, text) in memwall_io::validation::fitted_engine_profiles(&v)? {
            let path = dir.join(format!("{name}.toml"));
            memwall_io::atomic::write_text(&path, &text)?;
            println!("engine profile: {}", path.display());
        }
    }
    Ok(())
}

fn calibrate_from_llama_bench(
    file: &std::path::Path,
    device: &str,
    model: &str,
    engine: &str,
    out: &std::path::Path,
    engine_out: Option<&std::path::Path>,
) -> Result<()> {
    let engine_out =
        engine_out.map_or_else(|| memwall_io::beside(out, ".engine.toml", "device"), std::path::Path::to_path_buf);
    // Every input is read (and registered) before the outputs are checked against them.
    let text = memwall_io::read_text(file)?;
    let (model, device, engine) = (load_model(model)?, load_device(device)?, memwall_io::load_engine(engine)?);
    memwall_io::check_outputs(&[], &[("--out", out), ("--engine-out", &engine_out)])?;
    let rows = memwall_io::llama_bench::parse(&text, &file.display().to_string())?;
    let c = memwall_io::llama_bench::calibrate(&rows, &model, &device, &engine)?;
    let header: Vec<String> = ["line", "depth", "threads", "measured tok/s", "before", "error", "calibrated", "error"]
        .map(String::from)
        .to_vec();
    let pct = |p: f64, m: f64| format!("{:+.1}%", 100.0 * (p / m - 1.0));
    let lines: Vec<Vec<String>> = c
        .residuals
        .iter()
        .map(|r| {
            vec![
                r.line.to_string(),
                r.depth.to_string(),
                r.threads.map_or("-".into(), |t| t.to_string()),
                format!("{:.2}", r.measured_tok_s),
                format!("{:.2}", r.before_tok_s),
                pct(r.before_tok_s, r.measured_tok_s),
                format!("{:.2}", r.calibrated_tok_s),
                pct(r.calibrated_tok_s, r.measured_tok_s),
            ]
        })
        .collect();
    print_table(&header, &lines);
    let device_toml = toml::to_string(&c.device).context("serializing the calibrated device")?;
    let engine_toml = toml::to_string(&c.engine).context("serializing the calibrated engine")?;
    memwall_io::atomic::write_text(out, &device_toml)?;
    memwall_io::atomic::write_text(&engine_out, &engine_toml)?;
    println!("\ndevice: {} ({})\nengine: {} ({})", out.display(), c.device.name, engine_out.display(), c.engine.name);
    println!(
        "use them together: memwall estimate --device {} --engine {} --model ...",
        out.display(),
        engine_out.display()
    );
    Ok(())
}

/// An error and its causes on one line, each cause shown once: a message that already
/// contains its cause's text (as `path: os error` does) is not followed by it again.
fn report(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let m = cause.to_string();
        if out.contains(&m) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&m);
    }
    out
}

/// The signal that interrupted the process, 0 if none.
static SIGNAL: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// On SIGINT or SIGTERM, remove every temporary output in flight, let nothing be published,
/// and exit with 128 + the signal (130, 143). A thread waits for the signals, so this holds
/// wherever the work is (a sweep, a long simulation, a Parquet write).
#[cfg(unix)]
fn exit_on_signals() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("warning: cannot handle SIGINT/SIGTERM ({e}); an interrupt may leave .memwall-* temporary files");
            return;
        }
    };
    std::thread::spawn(move || {
        if let Some(sig) = signals.forever().next() {
            SIGNAL.store(sig, std::sync::atomic::Ordering::SeqCst);
            let removed = memwall_io::abandon_outputs();
            let name = if sig == SIGINT { "SIGINT" } else { "SIGTERM" };
            eprintln!("\ninterrupted by {name}: {removed} temporary file(s) removed, nothing written");
            std::process::exit(128 + sig);
        }
    });
}

fn main() -> ExitCode {
    #[cfg(unix)]
    exit_on_signals();
    // Every file this process reads is an input no output may replace.
    let _inputs = memwall_io::inputs::scope();
    let cli = match parse_args() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let result = match &cli.command {
        Command::Presets { kind } => presets(kind.as_deref()),
        Command::Footprint(a) => footprint(a),
        Command::Estimate(a) => estimate_cmd(a),
        Command::Solve(a) => solve::solve(a),
        Command::Compare(a) => compare::compare(a),
        Command::Decode(a) => decode::decode(a),
        Command::Quality(a) => quality::quality(a),
        Command::Run { experiment, out, max_rows, max_points, plot, plot_size } => {
            run(experiment, out.clone(), *max_rows, *max_points, plot.as_deref().map(|p| (p, *plot_size)))
        }
        Command::Calibrate { from_llama_bench, device, model, engine, out, engine_out, quick, threads } => {
            match (from_llama_bench, device, model) {
                (Some(file), Some(device), Some(model)) => {
                    calibrate_from_llama_bench(file, device, model, engine, out, engine_out.as_deref())
                }
                (Some(_), _, _) => Err(anyhow::anyhow!("`--from-llama-bench` needs `--device` and `--model`")),
                (None, Some(_), _) | (None, _, Some(_)) => Err(anyhow::anyhow!(
                    "`--device` and `--model` go with `--from-llama-bench`; without it memwall probes this machine"
                )),
                (None, None, None) => calibrate::host(out, engine_out.as_deref(), *quick, *threads),
            }
        }
        Command::Validate { devices, host, tokens, only, table, out, write_engines } => {
            if let Some(h) = host {
                calibrate::validate_host(h, *tokens, only.as_deref(), out.as_deref())
            } else if *devices {
                validate(table.as_deref(), out.as_deref(), write_engines.as_deref())
            } else {
                Err(anyhow::anyhow!(
                    "say what to validate: `memwall validate --devices` or `memwall validate --host HOST.toml`"
                ))
            }
        }
        Command::Simulate { scenario, duration, trace, summary, plot, plot_size, trace_limit } => simulate(
            scenario,
            duration.map(|d| d.0),
            memwall_io::Outputs {
                trace: trace.as_deref(),
                plot: plot.as_deref(),
                plot_size: *plot_size,
                trace_limit_bytes: trace_limit.0,
            },
            summary.as_deref(),
        ),
    };
    for p in memwall_io::atomic::take_stale_removed() {
        eprintln!("note: removed {}, a temporary file left by a memwall process that no longer runs", p.display());
    }
    let result = result.and_then(|()| stdio::finish().context("writing to stdout"));
    let signal = SIGNAL.load(std::sync::atomic::Ordering::SeqCst);
    if signal != 0 {
        // The signal thread is exiting with this status; return the same.
        return ExitCode::from((128 + signal) as u8);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", report(&e));
            ExitCode::from(2)
        }
    }
}
