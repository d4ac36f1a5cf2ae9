//! Validation on this machine: the reference engine decodes a set of designs for real, and
//! memwall predicts each with the calibrated host profile through the estimator and the
//! simulator.

use std::time::Instant;

use memwall_decode::{Engine, EngineConfig};
use memwall_sim::des::{VecSink, simulate};
use memwall_spec::{DeviceSpec, EngineSpec, KvQuant, ModelSpec, QuantFormat, WeightQuant};

use crate::CalibError;
use crate::host::check_memory;
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
    /// Context before the timed tokens.
    pub context: u64,
    /// Threads.
    pub threads: u32,
    /// Weight bytes.
    pub weight_bytes: u64,
    /// Measured decode tok/s.
    pub measured_tok_s: f64,
    /// The estimator's prediction.
    pub estimated_tok_s: f64,
    /// The simulator's prediction (effects off).
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
}

/// Run `c` on the engine and predict it with `p`. `load` resolves preset model names.
pub fn run_config(
    p: &HostProfile,
    c: &HostConfig,
    load: &dyn Fn(&str) -> Result<ModelSpec, String>,
    tokens: usize,
) -> Result<HostRow, CalibError> {
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
    check_memory(c.id, planned_bytes(&cfg.model, &cfg.weights))?;
    let mut e = Engine::new(cfg).map_err(|e| probe(e.to_string()))?;
    check_memory(c.id, e.kv_bytes_at(c.context.saturating_add(2).saturating_add(tokens) as u64))?;
    e.fill_context(c.context).map_err(|e| probe(e.to_string()))?;
    let warm = e.generate(1, 2, 0.0).map_err(|e| probe(e.to_string()))?;
    let first = *warm.tokens.last().expect("two tokens");
    let g = e.generate(first, tokens, 0.0).map_err(|e| probe(e.to_string()))?;
    // The timed tokens start after the context and the two warm-up tokens.
    let s = host_scenario(p, model.clone(), weights, kv, (c.context + 2) as u64, tokens as u64, threads as u32);
    let est = memwall_sim::estimate(&s).map_err(|e| CalibError::Scenario { id: c.id.into(), source: e })?;
    let sim = simulate(&s, &mut VecSink::default()).map_err(|e| CalibError::Scenario { id: c.id.into(), source: e })?;
    Ok(HostRow {
        id: c.id.into(),
        what: c.what.into(),
        model: model.name.clone(),
        weights: c.weights.into(),
        kv: c.kv.into(),
        context: c.context as u64,
        threads: threads as u32,
        weight_bytes: e.weight_bytes(),
        measured_tok_s: g.tok_s(),
        estimated_tok_s: est.decode_tok_s,
        simulated_tok_s: sim.decode_tok_s.ok_or_else(|| {
            probe(format!("the simulation of {tokens} tokens decoded none in {:.3} s", sim.duration_s))
        })?,
        binding: est.binding.name().to_string(),
    })
}

/// Run every config of `configs`, reporting each row through `progress`.
pub fn validate_host(
    p: &HostProfile,
    configs: &[HostConfig],
    load: &dyn Fn(&str) -> Result<ModelSpec, String>,
    tokens: usize,
    progress: &mut dyn FnMut(&HostRow, f64),
) -> Result<Vec<HostRow>, CalibError> {
    let start = Instant::now();
    let mut rows = Vec::new();
    for c in configs {
        let r = run_config(p, c, load, tokens)?;
        progress(&r, start.elapsed().as_secs_f64());
        rows.push(r);
    }
    Ok(rows)
}

/// A host profile from its device and engine files' contents (no measurements).
pub fn profile_of(device: DeviceSpec, engine: EngineSpec) -> HostProfile {
    HostProfile { info: crate::host::host_info(), device, engine, fitted: Vec::new(), measurements: Vec::new() }
}
