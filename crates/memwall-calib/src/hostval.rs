//! Validation on this machine: the reference engine decodes a set of designs for real, and
//! memwall predicts each with the calibrated host profile through the estimator and the
//! simulator.

use std::time::Instant;

use memwall_decode::{Engine, EngineConfig};
use memwall_sim::des::{VecSink, simulate};
use memwall_spec::{DeviceSpec, EngineSpec, KvQuant, ModelSpec, QuantFormat, WeightQuant};

use crate::CalibError;
use crate::host::{check_memory, meminfo_bytes};
use crate::hostfit::{HostProfile, host_scenario};
use memwall_decode::weights::planned_bytes;

/// A design to run: a model (a preset name, or TOML of a model spec), formats, context and
/// threads.
#[derive(Debug, Clone, PartialEq)]
pub struct HostConfig {
    /// Short identifier.
    pub id: &'static str,
    /// What it covers.
    pub what: &'static str,
    /// Model preset name, or a model spec in TOML when it starts with `name =`.
    pub model: &'static str,
    /// Weight mix.
    pub weights: &'static str,
    /// KV format (K and V).
    pub kv: &'static str,
    /// Tokens already in the context.
    pub context: usize,
    /// Threads (0: every CPU).
    pub threads: usize,
}

const TINY_DENSE: &str =
    "name = \"dense-256\"\nn_layers = 4\nhidden = 256\nn_heads = 4\nn_kv_heads = 4\nffn = 768\nvocab = 2048\n";
const SMALL_GQA: &str =
    "name = \"gqa-1024\"\nn_layers = 8\nhidden = 1024\nn_heads = 16\nn_kv_heads = 4\nffn = 2816\nvocab = 8192\n";
const MQA_1B: &str = "name = \"mqa-1b\"\nn_layers = 16\nhidden = 2048\nn_heads = 32\nn_kv_heads = 1\nhead_dim = 64\nffn = 5632\nvocab = 32000\n";
const MOE: &str = "name = \"moe-2b-a0.6b\"\nn_layers = 12\nhidden = 1024\nn_heads = 16\nn_kv_heads = 4\nffn = 2816\nvocab = 32000\n[moe]\nn_experts = 32\ntop_k = 4\nn_shared = 1\nexpert_ffn = 768\n";
const SLIDING: &str = "name = \"sliding-1b\"\nn_layers = 18\nhidden = 1536\nn_heads = 12\nn_kv_heads = 2\nhead_dim = 128\nffn = 4096\nvocab = 32000\nlayer_pattern = [\"sliding\", \"sliding\", \"sliding\", \"sliding\", \"sliding\", \"full\"]\nsliding_window = 512\n";
const MAMBA: &str = "name = \"mamba-0.4b\"\nn_layers = 24\nhidden = 1024\nn_heads = 16\nn_kv_heads = 16\nffn = 0\nvocab = 32000\nlayer_pattern = [\"ssm\"]\n[ssm]\nkind = \"mamba1\"\nd_state = 16\nd_conv = 4\nd_inner = 2048\n";
const HYBRID: &str = "name = \"hybrid-0.5b\"\nn_layers = 16\nhidden = 1024\nn_heads = 16\nn_kv_heads = 4\nffn = 2816\nvocab = 32000\nlayer_pattern = [\"ssm\", \"ssm\", \"ssm\", \"full\"]\n[ssm]\nkind = \"mamba1\"\nd_state = 16\nd_conv = 4\nd_inner = 2048\n";
const TERNARY_2B: &str =
    "name = \"ternary-2b\"\nn_layers = 30\nhidden = 2560\nn_heads = 20\nn_kv_heads = 5\nffn = 6912\nvocab = 32000\n";

/// The designs `memwall validate --host` runs: dense (MHA, GQA, MQA), MoE, sliding-window,
/// SSM and hybrid models; Q8_0, Q4_K, Q3_K, Q2_K, TQ2_0 and more; KV F16, Q8_0 and Q4_0;
/// contexts 256 to 8192; 1 and every thread; weights from well inside the caches to a
/// 3.8 GB 7B model (8 × a 480 MiB last-level cache).
pub const HOST_CONFIGS: &[HostConfig] = &[
    HostConfig {
        id: "mha-tiny",
        what: "MHA, weights in L2",
        model: TINY_DENSE,
        weights: "Q4_K_M",
        kv: "f16",
        context: 256,
        threads: 1,
    },
    HostConfig {
        id: "gqa-small",
        what: "GQA, ~30 MB",
        model: SMALL_GQA,
        weights: "Q8_0",
        kv: "q8_0",
        context: 1024,
        threads: 0,
    },
    HostConfig {
        id: "tinyllama-q4km",
        what: "TinyLlama GQA",
        model: "tinyllama-1.1b",
        weights: "Q4_K_M",
        kv: "f16",
        context: 512,
        threads: 0,
    },
    HostConfig {
        id: "tinyllama-q8",
        what: "TinyLlama, 1 thread",
        model: "tinyllama-1.1b",
        weights: "Q8_0",
        kv: "q8_0",
        context: 2048,
        threads: 1,
    },
    HostConfig {
        id: "tinyllama-q2k-8k",
        what: "long context, KV q4_0",
        model: "tinyllama-1.1b",
        weights: "Q2_K",
        kv: "q4_0",
        context: 8192,
        threads: 0,
    },
    HostConfig { id: "mqa-q3k", what: "MQA", model: MQA_1B, weights: "Q3_K_M", kv: "f16", context: 4096, threads: 0 },
    HostConfig {
        id: "moe-q4k",
        what: "MoE 32 experts top-4 + shared",
        model: MOE,
        weights: "Q4_K_M",
        kv: "f16",
        context: 1024,
        threads: 0,
    },
    HostConfig {
        id: "sliding-q4k",
        what: "sliding window 512, 5:1",
        model: SLIDING,
        weights: "Q4_K_M",
        kv: "f16",
        context: 8192,
        threads: 0,
    },
    HostConfig {
        id: "mamba-q8",
        what: "Mamba-1 SSM",
        model: MAMBA,
        weights: "Q8_0",
        kv: "f16",
        context: 256,
        threads: 0,
    },
    HostConfig {
        id: "hybrid-q4k",
        what: "SSM + attention 3:1, 1 thread",
        model: HYBRID,
        weights: "Q4_K_M",
        kv: "q8_0",
        context: 2048,
        threads: 1,
    },
    HostConfig {
        id: "ternary-tq2",
        what: "ternary TQ2_0",
        model: TERNARY_2B,
        weights: "TQ2_0",
        kv: "f16",
        context: 1024,
        threads: 0,
    },
    HostConfig {
        id: "qwen3-0.6b-8k",
        what: "head_dim 128, 1 thread, 8K",
        model: "qwen3-0.6b",
        weights: "Q8_0",
        kv: "f16",
        context: 8192,
        threads: 1,
    },
    HostConfig {
        id: "llama2-7b-q4_0",
        what: "3.8 GB: 8 × LLC",
        model: "llama-2-7b",
        weights: "Q4_0",
        kv: "f16",
        context: 256,
        threads: 0,
    },
    HostConfig {
        id: "phi2-q4_0",
        what: "MHA 32 heads of 80",
        model: "phi-2",
        weights: "Q4_0",
        kv: "f16",
        context: 1024,
        threads: 0,
    },
];

/// One validated design.
#[derive(Debug, Clone, PartialEq)]
pub struct HostRow {
    /// Config id.
    pub id: String,
    /// What it covers.
    pub what: String,
    /// Model name.
    pub model: String,
    /// Weight mix.
    pub weights: String,
    /// KV format.
    pub kv: String,
    /// Tokens of context filled before the two warm-up tokens and the timed runs.
    pub context: u64,
    /// Threads.
    pub threads: u32,
    /// Weight bytes.
    pub weight_bytes: u64,
    /// Measured decode tok/s: the median of the repeats.
    pub measured_tok_s: f64,
    /// Each repeat's measured tok/s, in the order they ran.
    pub measured_runs: Vec<f64>,
    /// The estimator's prediction: the median of its prediction for each repeat (each at the
    /// context that repeat decoded at).
    pub estimated_tok_s: f64,
    /// The simulator's prediction (effects off), as the estimator's.
    pub simulated_tok_s: f64,
    /// Which term binds in the estimate (`memory`, `compute`, ...).
    pub binding: String,
}

impl HostRow {
    /// Estimator error, `predicted / measured − 1`.
    pub fn error(&self) -> f64 {
        self.estimated_tok_s / self.measured_tok_s - 1.0
    }

    /// Simulator error.
    pub fn sim_error(&self) -> f64 {
        self.simulated_tok_s / self.measured_tok_s - 1.0
    }

    /// Run-to-run noise of the measurement, [`relative_half_range`] of the repeats.
    pub fn noise(&self) -> f64 {
        relative_half_range(&self.measured_runs)
    }

    /// Slowest and fastest repeat, tok/s.
    pub fn measured_range(&self) -> (f64, f64) {
        let lo = self.measured_runs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = self.measured_runs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    }
}

/// Median of `v` ([`memwall_catalog::defaults::median`]); NaN when empty.
fn median(v: &[f64]) -> f64 {
    memwall_catalog::defaults::median(v.to_vec()).unwrap_or(f64::NAN)
}

/// Run-to-run noise of repeated measurements: `(max − min) / (2 × median)`, the relative
/// half-range; NaN for fewer than two (one run measures no noise). With the median as the
/// reported value, a prediction within this of it cannot be told from the measurement by
/// these repeats.
pub fn relative_half_range(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return f64::NAN;
    }
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (hi - lo) / (2.0 * median(v))
}

/// A design built on the engine, its context filled and warmed up, ready to be timed.
struct Prepared {
    config: HostConfig,
    model: ModelSpec,
    weights: WeightQuant,
    kv: KvQuant,
    threads: usize,
    engine: Engine,
    /// The token the next timed run starts from, and the context it starts at.
    next: u32,
    context: usize,
    /// (context at its start, tok/s) of each timed run.
    runs: Vec<(usize, f64)>,
}

/// Bytes a design holds while it waits for its turn: its weights and its KV cache after every
/// repeat.
fn held_bytes(cfg: &EngineConfig, c: &HostConfig, tokens: usize, repeats: usize) -> u64 {
    let weights = planned_bytes(&cfg.model, &cfg.weights);
    let cached = c.context.saturating_add(2).saturating_add(tokens.saturating_add(1).saturating_mul(repeats)) as u64;
    let kv = memwall_sim::footprint::kv_cache_bytes(&cfg.model, cfg.kv.k, cfg.kv.v, cached, 1, 1);
    weights.saturating_add(u64::try_from(kv).unwrap_or(u64::MAX))
}

/// The engine configuration of `c` on profile `p`: model, formats, threads.
fn engine_config(
    p: &HostProfile,
    c: &HostConfig,
    load: &dyn Fn(&str) -> Result<ModelSpec, String>,
) -> Result<(EngineConfig, ModelSpec, WeightQuant, KvQuant, usize), CalibError> {
    let probe = |e: String| CalibError::Probe(format!("{}: {e}", c.id));
    let model: ModelSpec = if c.model.starts_with("name =") {
        toml::from_str(c.model).map_err(|e| probe(e.to_string()))?
    } else {
        load(c.model).map_err(probe)?
    };
    let weights = WeightQuant::new(c.weights.parse().map_err(|e: memwall_spec::SpecError| probe(e.to_string()))?);
    let kvf: QuantFormat = c.kv.parse().map_err(|e: memwall_spec::SpecError| probe(e.to_string()))?;
    let kv = KvQuant { k: kvf, v: kvf };
    let threads = if c.threads == 0 { p.device.clusters[0].cores as usize } else { c.threads };
    let cfg = EngineConfig { threads, seed: 9, ..EngineConfig::new(model.clone(), weights.clone(), kv) };
    Ok((cfg, model, weights, kv, threads))
}

/// Build `c` on the engine, fill its context and decode two untimed tokens.
fn prepare(
    cfg: EngineConfig,
    c: &HostConfig,
    parts: (ModelSpec, WeightQuant, KvQuant, usize),
) -> Result<Prepared, CalibError> {
    let probe = |e: String| CalibError::Probe(format!("{}: {e}", c.id));
    check_memory(c.id, planned_bytes(&cfg.model, &cfg.weights))?;
    let mut engine = Engine::new(cfg).map_err(|e| probe(e.to_string()))?;
    engine.fill_context(c.context).map_err(|e| probe(e.to_string()))?;
    let warm = engine.generate(1, 2, 0.0).map_err(|e| probe(e.to_string()))?;
    let next = *warm.tokens.last().expect("two tokens");
    let (model, weights, kv, threads) = parts;
    Ok(Prepared {
        config: c.clone(),
        model,
        weights,
        kv,
        threads,
        engine,
        next,
        context: c.context + 2,
        runs: Vec::new(),
    })
}

/// Time `tokens` tokens of a prepared design, after one untimed token: the other designs ran
/// since this one's last run, so its pool's workers sleep and its weights left the caches.
fn time_run(d: &mut Prepared, tokens: usize) -> Result<(), CalibError> {
    let err = |e: memwall_decode::EngineError| CalibError::Probe(format!("{}: {e}", d.config.id));
    let wake = d.engine.generate(d.next, 1, 0.0).map_err(err)?;
    d.next = *wake.tokens.last().expect("one token");
    d.context += 1;
    let g = d.engine.generate(d.next, tokens, 0.0).map_err(err)?;
    d.runs.push((d.context, g.tok_s()));
    d.next = *g.tokens.last().expect("at least one token");
    d.context += tokens;
    Ok(())
}

/// Predict every run of a timed design with `p` and make its row.
fn finish(p: &HostProfile, d: &Prepared, tokens: usize) -> Result<HostRow, CalibError> {
    let c = &d.config;
    let (mut est, mut sim, mut binding) = (Vec::new(), Vec::new(), String::new());
    for &(context, _) in &d.runs {
        let s =
            host_scenario(p, d.model.clone(), d.weights.clone(), d.kv, context as u64, tokens as u64, d.threads as u32);
        let e = memwall_sim::estimate(&s).map_err(|e| CalibError::Scenario { id: c.id.into(), source: e })?;
        let r =
            simulate(&s, &mut VecSink::default()).map_err(|e| CalibError::Scenario { id: c.id.into(), source: e })?;
        est.push(e.decode_tok_s);
        sim.push(r.decode_tok_s.ok_or_else(|| {
            CalibError::Probe(format!(
                "{}: the simulation of {tokens} tokens decoded none in {:.3} s",
                c.id, r.duration_s
            ))
        })?);
        binding = e.binding.name().to_string();
    }
    let runs: Vec<f64> = d.runs.iter().map(|r| r.1).collect();
    Ok(HostRow {
        id: c.id.into(),
        what: c.what.into(),
        model: d.model.name.clone(),
        weights: c.weights.into(),
        kv: c.kv.into(),
        context: c.context as u64,
        threads: d.threads as u32,
        weight_bytes: d.engine.weight_bytes(),
        measured_tok_s: median(&runs),
        measured_runs: runs,
        estimated_tok_s: median(&est),
        simulated_tok_s: median(&sim),
        binding,
    })
}

/// Run `f` on every item, `repeats` rounds of one call each (the order a group of designs is
/// timed in), stopping at the first error.
fn interleave<T, E>(items: &mut [T], repeats: usize, mut f: impl FnMut(&mut T) -> Result<(), E>) -> Result<(), E> {
    for _ in 0..repeats {
        for item in items.iter_mut() {
            f(item)?;
        }
    }
    Ok(())
}

/// Run `c` on the engine once and predict it with `p`. `load` resolves preset model names.
pub fn run_config(
    p: &HostProfile,
    c: &HostConfig,
    load: &dyn Fn(&str) -> Result<ModelSpec, String>,
    tokens: usize,
) -> Result<HostRow, CalibError> {
    validate_host(p, std::slice::from_ref(c), load, tokens, 1, &mut |_, _| {}).map(|mut rows| rows.remove(0))
}

/// Run every config of `configs` `repeats` times, interleaved, reporting each row through
/// `progress`: the designs are built in groups that fit in memory together (each design
/// alone when memory is short), and each group is timed in `repeats` rounds of one run of
/// every design, so that a drift of the machine (another load, a clock, the page cache) falls
/// on every design alike instead of on whichever ran during it. A row's measurement is the
/// median of its runs, with their spread ([`HostRow::noise`]); its predictions are the
/// medians of a prediction per run.
pub fn validate_host(
    p: &HostProfile,
    configs: &[HostConfig],
    load: &dyn Fn(&str) -> Result<ModelSpec, String>,
    tokens: usize,
    repeats: usize,
    progress: &mut dyn FnMut(&HostRow, f64),
) -> Result<Vec<HostRow>, CalibError> {
    if repeats == 0 {
        return Err(CalibError::Probe("`repeats` = 0: time every design at least once".into()));
    }
    let start = Instant::now();
    let budget = meminfo_bytes("MemAvailable:").map_or(u64::MAX, |a| a / 10 * 9);
    let mut rows = Vec::new();
    let mut pending = configs.iter().peekable();
    while pending.peek().is_some() {
        // A group: designs while their held bytes fit together (always at least one).
        let mut group: Vec<Prepared> = Vec::new();
        let mut held = 0u64;
        while let Some(c) = pending.peek() {
            let (cfg, model, weights, kv, threads) = engine_config(p, c, load)?;
            let bytes = held_bytes(&cfg, c, tokens, repeats);
            if !group.is_empty() && held.saturating_add(bytes) > budget {
                break;
            }
            // Alone, its weights and the cache it grows to must fit (the first of a group is
            // never refused by the group's budget).
            check_memory(c.id, bytes)?;
            held = held.saturating_add(bytes);
            group.push(prepare(cfg, c, (model, weights, kv, threads))?);
            pending.next();
        }
        interleave(&mut group, repeats, |d| time_run(d, tokens))?;
        for d in &group {
            let r = finish(p, d, tokens)?;
            progress(&r, start.elapsed().as_secs_f64());
            rows.push(r);
        }
    }
    Ok(rows)
}

/// A host profile from its device and engine files' contents (no measurements).
pub fn profile_of(device: DeviceSpec, engine: EngineSpec) -> HostProfile {
    HostProfile { info: crate::host::host_info(), device, engine, fitted: Vec::new(), measurements: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Noise by hand: {10, 12, 11} → median 11, (12 − 10) / (2 × 11) = 1/11; one run measures
    /// no spread; no run has no median.
    #[test]
    fn median_and_relative_half_range_by_hand() {
        assert!(median(&[]).is_nan());
        assert!((relative_half_range(&[10.0, 12.0, 11.0]) - 1.0 / 11.0).abs() < 1e-15);
        assert!(relative_half_range(&[7.0]).is_nan());
    }

    /// Two designs, three rounds: every design gets three runs, in rounds (the second design's
    /// first run before the first design's second), and its row holds the median and the
    /// spread of its runs.
    #[test]
    fn designs_are_timed_in_interleaved_rounds() {
        let dense = HostConfig {
            id: "a",
            what: "tiny MHA",
            model: TINY_DENSE,
            weights: "Q8_0",
            kv: "f16",
            context: 16,
            threads: 1,
        };
        let other = HostConfig { id: "b", context: 40, ..dense.clone() };
        let p = profile_of(
            toml::from_str(include_str!("../../../datasets/hosts/xeon-2c.toml")).unwrap(),
            toml::from_str(include_str!("../../../datasets/hosts/xeon-2c.engine.toml")).unwrap(),
        );
        let none = |n: &str| Err(format!("no preset {n}"));
        let mut order = Vec::new();
        let rows = validate_host(&p, &[dense, other], &none, 4, 3, &mut |r, _| order.push(r.id.clone())).unwrap();
        assert_eq!(order, ["a", "b"]);
        for r in &rows {
            assert_eq!(r.measured_runs.len(), 3, "{}", r.id);
            assert_eq!(r.measured_tok_s, median(&r.measured_runs));
            let (lo, hi) = r.measured_range();
            assert!(lo <= r.measured_tok_s && r.measured_tok_s <= hi);
            assert!(r.noise() >= 0.0 && r.estimated_tok_s > 0.0 && r.simulated_tok_s > 0.0);
        }
        // The loop that times a group: one call per item per round, stopping at an error.
        let mut seen = Vec::new();
        interleave(&mut [0, 1, 2], 2, |x| {
            seen.push(*x);
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(seen, [0, 1, 2, 0, 1, 2]);
        let mut calls = 0;
        let stop = interleave(&mut [0, 1, 2], 3, |x| {
            calls += 1;
            if *x == 1 { Err(*x) } else { Ok(()) }
        });
        assert_eq!((stop, calls), (Err(1), 2));
    }
}
