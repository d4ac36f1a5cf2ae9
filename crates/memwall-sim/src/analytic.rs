//! The closed-form analytic estimator: per-token bytes by source and arithmetic, decode time
//! from an overlap of memory and compute time plus overheads, prefill, TTFT, tokens/s and
//! energy per token, with the term that binds.
//!
//! Every formula lives in a small function below whose doc comment gives it with units; the
//! discrete-event simulator calls the same functions.

use memwall_spec::{Backend, LayerKind, QuantFormat, Scenario};
use serde::Serialize;

use std::sync::Arc;

use crate::SimError;
use crate::footprint::{ComputeShape, Footprint, KvLayout, WeightBytes, recurrent_state_bytes};
use crate::token::{OpKind, TokenTable};

/// Expected number of distinct routed experts hit when `tokens` tokens each pick `top_k` of
/// `n_experts`.
///
/// Expert `i` (0-based popularity rank) has routing probability `p_i ∝ (i + 1)^−skew`; one
/// token selects it with probability `q_i = min(1, top_k × p_i)`, so
/// `E[distinct] = Σ_i 1 − (1 − q_i)^tokens`. With `skew = 0` this is the uniform
/// `E × (1 − (1 − k/E)^T)`.
pub fn expected_distinct_experts(n_experts: u32, top_k: u32, tokens: u64, skew: f64) -> f64 {
    if skew == 0.0 {
        // Every q_i = k/E: the sum is E identical terms.
        let e = n_experts as f64;
        return e * (1.0 - (1.0 - (top_k as f64 / e).min(1.0)).powf(tokens as f64));
    }
    let e = n_experts as usize;
    let weights: Vec<f64> = (0..e).map(|i| ((i + 1) as f64).powf(-skew)).collect();
    let norm: f64 = weights.iter().sum();
    weights.iter().map(|w| 1.0 - (1.0 - (top_k as f64 * w / norm).min(1.0)).powf(tokens as f64)).sum()
}

/// Time when memory and compute overlap partly:
/// `max(t_mem, t_cpu) + (1 − overlap) × min(t_mem, t_cpu)`, seconds.
pub fn overlap_time(t_mem: f64, t_cpu: f64, overlap: f64) -> f64 {
    t_mem.max(t_cpu) + (1.0 - overlap) * t_mem.min(t_cpu)
}

/// Tokens a layer attends over when the context holds `ctx` tokens: `ctx` for full
/// attention, `min(ctx, window)` for a sliding window, 0 for SSM/linear layers.
pub fn attended_tokens(kind: LayerKind, ctx: u64, window: u64) -> u64 {
    match kind {
        LayerKind::Full => ctx,
        LayerKind::Sliding => ctx.min(window),
        LayerKind::Ssm | LayerKind::Linear | LayerKind::ShortConv => 0,
    }
}

/// `Σ_{p = start+1}^{start+n} attended_tokens(kind, p, window)`: the tokens a chunk of `n`
/// queries at positions `start+1 … start+n` attend over together, in closed form (an
/// arithmetic series, capped at `window` for a sliding layer).
///
/// Example: full attention, start 0, n 4: 1 + 2 + 3 + 4 = 10; window 2: 1 + 2 + 2 + 2 = 7.
pub fn attended_sum(kind: LayerKind, start: u64, n: u64, window: u64) -> f64 {
    // Σ p over (a, b], exact in f64 for any realistic position (< 2^26).
    let series = |a: u64, b: u64| (b - a) as f64 * (a + b + 1) as f64 / 2.0;
    let end = start + n;
    match kind {
        LayerKind::Full => series(start, end),
        LayerKind::Sliding => {
            let ramp_end = end.min(window).max(start);
            series(start, ramp_end) + (end - ramp_end) as f64 * window as f64
        }
        LayerKind::Ssm | LayerKind::Linear | LayerKind::ShortConv => 0.0,
    }
}

/// Effective CPU read bandwidth, GB/s: `min(peak × fraction, threads_on_big_cores ×
/// per_core_gbps)` — a few cores cannot saturate LPDDR, and more cores than that add nothing.
pub fn cpu_bandwidth_gbps(peak_gbps: f64, fraction: f64, per_core_gbps: f64, threads: u32) -> f64 {
    (peak_gbps * fraction).min(threads as f64 * per_core_gbps)
}

/// CPU cycles per weight of a decode GEMV in format `f` on one core:
/// `1 / (macs_per_cycle × efficiency) + dequant_cycles × (128 / simd_bits) × (2 / pipes)`.
/// Quantized formats dot against int8 activations (`int8 MACs/cycle`), float formats use f32
/// FMAs; dequantization cost is given for a 128-bit, 2-pipe core and scales with SIMD width.
pub fn cycles_per_weight(
    quantized: bool,
    int8_macs: f64,
    f32_fmas: f64,
    efficiency: f64,
    dequant_cycles_128: f64,
    simd_bits: u32,
    pipes: u32,
) -> (f64, f64) {
    let arith = 1.0 / ((if quantized { int8_macs } else { f32_fmas }) * efficiency);
    let dequant = dequant_cycles_128 * (128.0 / simd_bits as f64) * (2.0 / pipes as f64);
    (arith, dequant)
}

/// Time to read `flash_bytes` from storage, seconds: `flash_bytes / (read_gbps × 1e9)`. Paged
/// weights are read serially with the step (a page fault stalls the thread that touches it).
pub fn storage_time_s(flash_bytes: f64, read_gbps: f64) -> f64 {
    if flash_bytes > 0.0 { flash_bytes / (read_gbps * 1e9) } else { 0.0 }
}

/// Energy per decoded token, joules:
/// `dram_bytes × 8 × pJ/bit × 1e−12 + (compute_w + static_w) × t_token`.
/// Compute power is the loaded power of every thread's core for the whole token (ggml's
/// threads spin between operators).
pub fn energy_per_token_j(dram_bytes: f64, pj_per_bit: f64, compute_w: f64, static_w: f64, t_token_s: f64) -> f64 {
    dram_bytes * 8.0 * pj_per_bit * 1e-12 + (compute_w + static_w) * t_token_s
}

/// Which term limits a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Binding {
    /// DRAM bandwidth.
    Memory,
    /// Cache bandwidth (the working set fits in the last-level cache).
    Cache,
    /// Multiply-add throughput.
    Compute,
    /// Dequantization throughput.
    Dequant,
    /// Fixed per-operator and per-token costs.
    Overhead,
    /// Weights paged in from storage (the design does not fit in memory).
    Storage,
}

impl Binding {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Binding::Memory => "memory",
            Binding::Cache => "cache",
            Binding::Compute => "compute",
            Binding::Dequant => "dequant",
            Binding::Overhead => "overhead",
            Binding::Storage => "storage",
        }
    }
}

/// The time terms of one step (a decoded token or a prefill chunk), seconds.
///
/// A step runs in two phases, one after the other (the graph's operators are serialized by
/// barriers or kernel boundaries): the weight matrix products, which stream the weights, and
/// attention, which streams the KV cache (and recurrent state). Within a phase memory and
/// arithmetic overlap; across phases they add: `total = overlap_time(t_mem_w, t_compute_w) +
/// overlap_time(t_mem_a, t_compute_a) + t_overhead + t_storage`. An attention phase bound
/// by arithmetic (f32 attention on small CPU cores) therefore slows decode as the context
/// grows even while the weights are memory-bound.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StepTime {
    /// Bytes moved / bandwidth (DRAM, or cache when the working set fits), both phases.
    pub t_mem: f64,
    /// Multiply-adds / throughput, both phases.
    pub t_arith: f64,
    /// Dequantization / throughput.
    pub t_dequant: f64,
    /// Per-operator and per-token overheads.
    pub t_overhead: f64,
    /// Weights read from storage ([`storage_time_s`]; 0 when the design fits).
    pub t_storage: f64,
    /// The attention phase alone: `overlap_time(t_mem_a, t_compute_a)`.
    pub t_attention: f64,
    /// Total time of the step.
    pub total: f64,
    /// Whether memory traffic was served from cache.
    pub from_cache: bool,
    /// Whether each phase's memory time is at least its arithmetic time (weights,
    /// attention): the regimes in which the step is linear in the context.
    pub memory_bound: (bool, bool),
}

impl StepTime {
    /// The largest term.
    pub fn binding(&self) -> Binding {
        let mem = if self.from_cache { Binding::Cache } else { Binding::Memory };
        [
            (self.t_mem, mem),
            (self.t_arith, Binding::Compute),
            (self.t_dequant, Binding::Dequant),
            (self.t_overhead, Binding::Overhead),
            (self.t_storage, Binding::Storage),
        ]
        .into_iter()
        .fold((f64::NEG_INFINITY, Binding::Memory), |acc, x| if x.0 > acc.0 { x } else { acc })
        .1
    }
}

/// Bytes and work of one step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct StepWork {
    /// Weight bytes read.
    pub weight_bytes: f64,
    /// KV-cache and recurrent-state bytes read and written.
    pub kv_bytes: f64,
    /// Activation bytes (assumed cache-resident, not paid at DRAM).
    pub activation_bytes: f64,
    /// Weight multiply-adds.
    pub weight_macs: f64,
    /// Attention / state-update multiply-adds.
    pub attn_macs: f64,
    /// CPU cycles of dequantization work (summed over weights, per core).
    pub dequant_cycles: f64,
    /// CPU cycles of arithmetic (summed over weights, per core).
    pub arith_cycles: f64,
    /// Graph operators executed.
    pub ops: f64,
}

/// Run-time conditions of a step in the simulator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Conditions {
    /// CPU (or accelerator) frequency as a fraction of its maximum.
    pub freq_scale: f64,
    /// DRAM bandwidth available to the model as a fraction of the nominal one (governor
    /// memory steps, other bus masters).
    pub bandwidth_scale: f64,
    /// Bytes served by on-chip caches and the seconds they took (the simulator's LRU model);
    /// `None`: the estimator's steady-state rule.
    pub cached: Option<(f64, f64)>,
}

impl Conditions {
    /// Full frequency, full bandwidth, steady-state caches.
    pub const NOMINAL: Conditions = Conditions { freq_scale: 1.0, bandwidth_scale: 1.0, cached: None };
}

/// Core cycles of work on the lead cluster's cores.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cycles {
    /// Arithmetic (multiply-add) cycles.
    pub arith: f64,
    /// Dequantization cycles.
    pub dequant: f64,
}

/// One routed expert, summed over the MoE layers.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ExpertCost {
    /// Weight bytes.
    pub bytes: f64,
    /// Weight elements.
    pub elems: f64,
    /// Core cycles.
    pub cycles: Cycles,
}

/// The routing shape of a mixture of experts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoeShape {
    /// Routed experts per MoE layer.
    pub n_experts: u32,
    /// Experts each token uses.
    pub top_k: u32,
    /// MoE layers.
    pub layers: u64,
}

/// Expert work of a step: the distinct experts' bytes, elements and dequantization, and the
/// arithmetic of every token's `top_k` experts.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct ExpertWork {
    bytes: f64,
    arith: f64,
    dequant: f64,
}

/// Per-scenario constants, computed once and shared by the analytic estimator and the
/// simulator.
#[derive(Debug, Clone)]
pub struct CostPlan {
    /// Weight bytes of the whole model.
    pub weights: Arc<WeightBytes>,
    /// Footprint against the device.
    pub footprint: Footprint,
    /// Parameters read per decoded token.
    pub active_params: u64,
    /// Weight bytes read per token outside routed experts.
    pub dense_bytes: f64,
    /// Weight elements read per token outside routed experts.
    pub dense_elems: f64,
    /// Cycles (on the fastest cluster's cores) outside experts.
    dense_cycles: Cycles,
    /// One routed expert summed over the MoE layers.
    pub(crate) expert: ExpertCost,
    /// The routing shape.
    pub(crate) moe: Option<MoeShape>,
    /// Expected distinct experts per layer for one decode step of `batch` tokens.
    pub(crate) decode_distinct: f64,
    /// KV bytes per cached token, summed over the full-attention KV layers and the sliding ones.
    kv_full_per_token: f64,
    kv_sliding_per_token: f64,
    pub(crate) window: u64,
    /// Attention multiply-adds per attended token (summed over full layers, sliding layers).
    attn_full_macs: f64,
    attn_sliding_macs: f64,
    /// Recurrent-state bytes read + written per token and their multiply-adds.
    pub(crate) state_bytes: f64,
    pub(crate) state_macs: f64,
    /// Activation bytes per token.
    act_bytes: f64,
    /// The K and V formats of the cache (per-layer KV bytes for the simulator's pipeline,
    /// [`crate::token::AttentionOp::kv_row_bytes`]).
    pub(crate) kv_formats: memwall_spec::KvQuant,
    /// CPU cycles of attention per multiply-add and per KV byte ([`attention_cycles`]).
    attn_cycles: [f64; 2],
    /// Times a decode step reads the KV it attends over (`cost.attention_kv_reads`).
    pub(crate) kv_reads: f64,
    ops_per_token: f64,
    /// Core cycles per second of all threads, in cycles of the fastest cluster:
    /// `Σ_cluster threads × Hz × cpw_lead / cpw_cluster` (cpw on a Q4_K reference).
    cycles_rate: f64,
    /// What DRAM delivers to the compute unit, GB/s, and (CPU) what one core can pull.
    dram_gbps: f64,
    per_core_gbps: Option<f64>,
    cache_bandwidth_bps: f64,
    cache_bytes: f64,
    accel_macs_per_s: Option<f64>,
    /// Accelerators: dequantization multiply-add equivalents per CPU dequantization cycle
    /// of the lead cluster (`dequant_ops_per_weight / 2 ÷ the cluster's Q4_0 cycles per
    /// weight`), so that `dequant_cycles × this` is the unit's dequantization work.
    accel_dequant_macs_per_cycle: f64,
    threads: u32,
    compute_w: f64,
    /// Scenario knobs.
    overlap: f64,
    per_op_s: f64,
    per_token_s: f64,
    pub(crate) prefill_reuse: f64,
    pub(crate) arith_eff_decode: f64,
    arith_eff_prefill: f64,
    skew: f64,
    pub(crate) batch: u32,
    pj_per_bit: f64,
    static_w: f64,
    /// Share of the weights paged from storage on every use ([`Footprint::paged_fraction`]).
    paged: f64,
    storage_gbps: f64,
    /// Device figures taken from class defaults (`assume_defaults`).
    assumed: Vec<&'static str>,
    /// The engine's cross-validated 80 % interval of measured ÷ predicted decode tok/s.
    error_ratio: Option<[f64; 2]>,
    /// The operators of a token ([`TokenTable`]).
    pub table: Arc<TokenTable>,
}

/// What a design's tensors cost per token, independent of the workload: per-tensor weight
/// bytes, multiply-adds and CPU cycles on the device's fastest cluster, and the layer counts
/// the KV cache and attention scale with. It depends on the model, the weight mix, the
/// device's fastest cluster and the cost model only, so one plan serves every point of a
/// sweep that varies context, KV format, batch, threads or workload over the same
/// (model, device, mix) ([`Estimator`] keeps it).
#[derive(Debug, Clone)]
pub struct TensorPlan {
    /// Weight bytes of the whole model.
    pub weights: Arc<WeightBytes>,
    /// Parameters read per decoded token.
    pub active_params: u64,
    /// Weight bytes read per token outside routed experts.
    dense_bytes: f64,
    /// Weight elements read per token outside routed experts.
    dense_elems: f64,
    /// Cycles (on the fastest cluster's cores) outside experts.
    dense_cycles: Cycles,
    /// One routed expert summed over the MoE layers.
    expert: ExpertCost,
    /// MoE layers.
    n_moe_layers: u64,
    /// Recurrent-state bytes read + written per token, their multiply-adds, and the state
    /// held per sequence.
    state_rw_bytes: f64,
    state_macs: f64,
    state_held_bytes: u128,
    /// Activation bytes per token.
    act_bytes: f64,
    ops_per_token: f64,
    /// The distinct formats of the weight matrices (what an engine must support).
    formats: Vec<QuantFormat>,
    /// The operators of a token, which every sum above comes from.
    table: Arc<TokenTable>,
    /// The model's KV-cache layers, grouped (the footprint's KV cache).
    kv_layout: KvLayout,
    /// The attention layers that own a KV cache, grouped (KV bytes per cached token).
    attn_kv: KvLayout,
    /// Attention multiply-adds per attended token, summed over full and over sliding layers.
    attn_macs: [f64; 2],
    /// What the compute buffer depends on.
    compute_shape: ComputeShape,
}

impl TensorPlan {
    /// Walk the tensors of `s`'s model under its weight mix (the scenario must be valid).
    pub fn new(s: &Scenario) -> Self {
        let m = &s.model;
        let c = &s.cost;
        let weights = WeightBytes::new(m, &s.weights);
        let lead = s.device.fastest_cluster();
        let measured = s.engine.unit(Backend::Cpu).map(|u| &u.dequant_cycles);
        let table = TokenTable::new(s, &weights, &|f| cluster_cycles_per_weight(f, lead, c, measured, 1.0));
        let dense = table.sum(|o| o.kind != OpKind::Experts);
        let experts = table.sum(|o| o.kind == OpKind::Experts);
        let kinds = m.layer_kinds();
        let state_rw_bytes: f64 = kinds.iter().map(|k| 2.0 * m.state_bytes(*k) as f64).sum();
        // FFN width a token passes through, summed over layers.
        let ffn_widths: f64 = (0..m.n_layers)
            .map(|i| match &m.moe {
                Some(mo) => (mo.top_k as u64 * mo.expert_ffn) as f64,
                None => m.ffn_at(i) as f64,
            })
            .sum();
        let matrices = weights.tensors.iter().filter(|x| !x.0.is_vector()).count() as f64;
        let window = m.sliding_window.unwrap_or(u64::MAX);
        let attn = &table.attention;
        let macs_sum = |k: LayerKind| -> f64 { attn.iter().filter(|a| a.kind == k).map(|a| a.macs).sum() };
        let attn_macs = [macs_sum(LayerKind::Full), macs_sum(LayerKind::Sliding)];
        let attn_kv = KvLayout::from_layers(attn.iter().filter(|a| a.owns_kv).map(|a| (a.kind, a.kv_elems)), window);
        TensorPlan {
            kv_layout: KvLayout::of(m),
            attn_kv,
            attn_macs,
            compute_shape: ComputeShape::of(m),
            active_params: m.params().active_per_token,
            dense_bytes: dense.bytes,
            dense_elems: dense.macs,
            dense_cycles: Cycles { arith: dense.arith_cycles, dequant: dense.dequant_cycles },
            expert: ExpertCost {
                bytes: experts.bytes,
                elems: experts.macs,
                cycles: Cycles { arith: experts.arith_cycles, dequant: experts.dequant_cycles },
            },
            n_moe_layers: table.moe_layers(),
            table: Arc::new(table),
            state_rw_bytes,
            // A state update touches every state element a few times (decay, outer product, read-out).
            state_macs: 3.0 * state_rw_bytes / 8.0,
            state_held_bytes: recurrent_state_bytes(m, 1),
            act_bytes: 4.0 * (m.n_layers as f64 * 6.0 * m.hidden as f64 + 3.0 * ffn_widths),
            ops_per_token: 2.0 * matrices + 4.0 * m.n_layers as f64 + 4.0,
            formats: {
                let mut f: Vec<QuantFormat> =
                    weights.tensors.iter().filter(|x| !x.0.is_vector()).map(|x| x.1).collect();
                f.sort();
                f.dedup();
                f
            },
            weights: Arc::new(weights),
        }
    }
}

/// CPU cycles per weight of format `f` on one core of `cl`: [`cycles_per_weight`] with the
/// cluster's SIMD figures; the dequantization cost is the scenario's override (for a 128-bit,
/// 2-pipe core, scaled), else the cycles the engine measured for itself on the CPU
/// (`measured`, [`memwall_spec::UnitCosts::dequant_cycles`], taken as they are), else the
/// cost model's table (scaled).
fn cluster_cycles_per_weight(
    f: QuantFormat,
    cl: &memwall_spec::ClusterSpec,
    c: &memwall_spec::CostModel,
    measured: Option<&std::collections::BTreeMap<String, f64>>,
    eff: f64,
) -> (f64, f64) {
    let measured = c.dequant_override(f).is_none().then(|| measured.and_then(|m| m.get(&f.to_string()))).flatten();
    let (arith, dequant) = cycles_per_weight(
        f.is_quantized(),
        cl.int8_macs_per_cycle(),
        cl.f32_fmas_per_cycle(),
        eff,
        c.dequant_cycles(f),
        cl.simd_bits,
        cl.simd_pipes,
    );
    (arith, measured.copied().unwrap_or(dequant))
}

/// CPU cycles of decode attention on one core with a KV cache in `kv`,
/// `[per multiply-add, per KV byte read]`: the engine's measured cycles for that format
/// ([`memwall_spec::UnitCosts::attention_cycles`]), else f32 arithmetic at a quarter of the
/// int8 MAC rate, `[4 × dense_cycles_per_mac, 0]`.
pub fn attention_cycles(u: &memwall_spec::UnitCosts, kv: QuantFormat, dense_cycles_per_mac: f64) -> [f64; 2] {
    u.attention_cycles.get(&kv.to_string()).copied().unwrap_or([4.0 * dense_cycles_per_mac, 0.0])
}

impl CostPlan {
    /// Precompute everything that does not depend on the context position.
    pub fn new(s: &Scenario) -> Result<Self, SimError> {
        s.validate()?;
        Self::with_tensors(s, &TensorPlan::new(s))
    }

    /// The plan of `s` from a [`TensorPlan`] of the same model, device, weight mix and cost
    /// model (`s` must be valid): only the terms that depend on the workload, the KV format
    /// and the thread count are computed.
    pub fn with_tensors(s: &Scenario, tp: &TensorPlan) -> Result<Self, SimError> {
        let m = &s.model;
        let d = &s.device;
        let c = &s.cost;
        let wl = &s.workload;
        let threads = s.threads();

        let window = m.sliding_window.unwrap_or(u64::MAX);
        // Per cached token: KV bytes of the layers that hold a cache, by kind.
        let kv_sum = |k: LayerKind| -> f64 { tp.attn_kv.token_bytes(k, s.kv.k, s.kv.v) as f64 };
        let footprint = Self::footprint_of(s, tp)?;

        let unit = crate::unit::resolve(s)?;
        let u = &unit.costs;
        if !u.formats.is_empty()
            && let Some(f) = tp.formats.iter().find(|f| !u.supports(**f))
        {
            return Err(SimError::Spec(memwall_spec::SpecError::invalid(
                "weights",
                f,
                format!(
                    "engine `{}` does not run {f} weights on the {} (it runs {})",
                    s.engine.name,
                    wl.backend.name(),
                    u.formats.join(", ")
                ),
            )));
        }
        // Threads run on the fastest cores first; cycles per weight differ per cluster, so
        // throughput is a weighted sum: weights/s = Σ_cluster n × Hz / cycles_per_weight.
        // We normalise to the first cluster's cycles and fold the ratio into `cycles_rate`.
        let placement = d.placement(threads);
        let (lead, _) = placement[0];
        // Relative speed of each cluster on a Q4_K-like reference mix.
        let reference = QuantFormat::Ggml(memwall_spec::GgmlType::Q4_K);
        let cpw = |cl| {
            let (a, q) = cluster_cycles_per_weight(reference, cl, c, None, u.compute_efficiency);
            a + q
        };
        let lead_cpw = cpw(lead);
        let cycles_rate: f64 = placement.iter().map(|(cl, n)| *n as f64 * cl.max_ghz * 1e9 * lead_cpw / cpw(cl)).sum();
        let cpu_w: f64 = placement.iter().map(|(cl, n)| *n as f64 * cl.power_w_per_core).sum();
        let q40 = cluster_cycles_per_weight(QuantFormat::Ggml(memwall_spec::GgmlType::Q4_0), lead, c, None, 1.0).1;
        let accel_dequant_macs_per_cycle = if q40 > 0.0 { u.dequant_ops_per_weight / 2.0 / q40 } else { 0.0 };
        // The unit's power at full clock as this engine draws it; a unit without a figure
        // (and no assumed default) adds none here, and the thermal simulator refuses it.
        let power_scale = u.power_scale.unwrap_or(1.0);
        let (accel_macs_per_s, compute_w) = match unit.peak_macs_per_s {
            Some(peak) => (Some(peak * u.compute_efficiency), unit.power_w.unwrap_or(0.0) * power_scale),
            None => (None, cpu_w * power_scale),
        };
        let mem = &d.memory;
        let llc = d.last_level_cache();
        Ok(CostPlan {
            footprint,
            active_params: tp.active_params,
            dense_bytes: tp.dense_bytes,
            dense_elems: tp.dense_elems,
            dense_cycles: tp.dense_cycles,
            expert: tp.expert,
            moe: m.moe.as_ref().map(|mo| MoeShape {
                n_experts: mo.n_experts,
                top_k: mo.top_k,
                layers: tp.n_moe_layers,
            }),
            decode_distinct: m
                .moe
                .as_ref()
                .map_or(0.0, |mo| expected_distinct_experts(mo.n_experts, mo.top_k, wl.batch as u64, wl.routing_skew)),
            kv_formats: s.kv,
            attn_cycles: attention_cycles(
                u,
                s.kv.k,
                if tp.dense_elems > 0.0 { tp.dense_cycles.arith / tp.dense_elems } else { 0.0 },
            ),
            kv_reads: u.attention_kv_reads,
            kv_full_per_token: kv_sum(LayerKind::Full),
            kv_sliding_per_token: kv_sum(LayerKind::Sliding),
            window,
            attn_full_macs: tp.attn_macs[0],
            attn_sliding_macs: tp.attn_macs[1],
            state_bytes: tp.state_rw_bytes,
            state_macs: tp.state_macs,
            act_bytes: tp.act_bytes,
            ops_per_token: tp.ops_per_token,
            cycles_rate,
            dram_gbps: unit.dram_gbps,
            per_core_gbps: unit.per_core_gbps,
            cache_bandwidth_bps: llc.map_or(0.0, |l| l.bandwidth_gbps * 1e9),
            cache_bytes: llc.map_or(0.0, |l| l.size_bytes as f64 * c.cache_usable_fraction),
            accel_macs_per_s,
            accel_dequant_macs_per_cycle,
            threads,
            compute_w,
            overlap: u.overlap.unwrap_or(c.overlap),
            per_op_s: u.per_op_s
                + if unit.backend == Backend::Cpu {
                    threads.saturating_sub(1) as f64 * u.per_thread_sync_s
                } else {
                    0.0
                },
            per_token_s: u.per_token_s,
            prefill_reuse: c.prefill_dequant_reuse,
            arith_eff_decode: u.compute_efficiency,
            arith_eff_prefill: u.prefill_efficiency,
            skew: wl.routing_skew,
            batch: wl.batch,
            pj_per_bit: mem.dram_pj_per_bit,
            static_w: d.power.static_w,
            paged: footprint.paged_fraction(),
            storage_gbps: d.storage.read_gbps,
            weights: tp.weights.clone(),
            error_ratio: unit.costs.error_ratio,
            table: tp.table.clone(),
            assumed: unit.assumed,
        })
    }

    /// The footprint of `s` with the tensors of `tp`: the only part of a plan that depends on
    /// the workload's token counts (the KV cache and compute buffer hold the context).
    fn footprint_of(s: &Scenario, tp: &TensorPlan) -> Result<Footprint, memwall_spec::SpecError> {
        let wl = &s.workload;
        Footprint::from_parts(
            s,
            tp.weights.in_ram(),
            tp.kv_layout.bytes(s.kv.k, s.kv.v, wl.kv_tokens(), wl.ubatch, wl.batch),
            tp.state_held_bytes * wl.batch as u128,
            tp.compute_shape.bytes(wl),
        )
    }

    /// This plan for a scenario that differs from the one it was made for only in the
    /// workload's token counts (prompt, generated, context): the footprint is redone, every
    /// other term is the same.
    fn with_tokens_of(&self, s: &Scenario, tp: &TensorPlan) -> Result<Self, SimError> {
        let footprint = Self::footprint_of(s, tp)?;
        Ok(CostPlan { paged: footprint.paged_fraction(), footprint, ..self.clone() })
    }

    /// Threads in use.
    pub fn threads(&self) -> u32 {
        self.threads
    }

    /// Expert bytes, elements and cycles read for `tokens` tokens processed together.
    fn expert_work(&self, tokens: u64) -> ExpertWork {
        match self.moe {
            Some(MoeShape { n_experts, top_k, layers }) if layers > 0 => {
                let distinct = if tokens == self.batch as u64 {
                    self.decode_distinct
                } else {
                    expected_distinct_experts(n_experts, top_k, tokens, self.skew)
                };
                let x = &self.expert;
                // Bytes and dequantization scale with the distinct experts; arithmetic with
                // the experts each token uses.
                ExpertWork {
                    bytes: distinct * x.bytes,
                    arith: tokens as f64 * top_k as f64 * x.cycles.arith,
                    dequant: distinct * x.cycles.dequant,
                }
            }
            _ => ExpertWork::default(),
        }
    }

    /// KV bytes (read once) and attention multiply-adds for one query at context `ctx`
    /// (tokens held including the new one).
    fn attention(&self, ctx: u64) -> (f64, f64) {
        let full = attended_tokens(LayerKind::Full, ctx, self.window) as f64;
        let sliding = attended_tokens(LayerKind::Sliding, ctx, self.window) as f64;
        (
            full * self.kv_full_per_token + sliding * self.kv_sliding_per_token,
            full * self.attn_full_macs + sliding * self.attn_sliding_macs,
        )
    }

    /// Work of decoding one token per sequence when `ctx` tokens are already cached.
    ///
    /// KV bytes per sequence: `attention_kv_reads × Σ_layers attended(ctx + 1) × KV bytes
    /// per token` (the read of the cache, repeated by engines that re-read it per query
    /// head) `+ Σ_layers KV bytes per token` (the new token's write) `+ state bytes` (read
    /// and write of recurrent state).
    pub fn decode_work(&self, ctx: u64) -> StepWork {
        let b = self.batch as f64;
        let ex = self.expert_work(self.batch as u64);
        let (kv_read, attn_macs) = self.attention(ctx + 1);
        let kv_write = self.kv_full_per_token + self.kv_sliding_per_token;
        StepWork {
            weight_bytes: self.dense_bytes + ex.bytes,
            kv_bytes: b * (self.kv_reads * kv_read + kv_write + self.state_bytes),
            activation_bytes: b * self.act_bytes,
            weight_macs: b * self.dense_elems + self.expert_weight_macs(self.batch as u64),
            attn_macs: b * (attn_macs + self.state_macs),
            arith_cycles: b * self.dense_cycles.arith + ex.arith,
            // As in prefill, `prefill_dequant_reuse` sequences share one dequantization.
            dequant_cycles: (b / self.prefill_reuse).max(1.0) * (self.dense_cycles.dequant + ex.dequant),
            ops: self.ops_per_token,
        }
    }

    fn expert_weight_macs(&self, tokens: u64) -> f64 {
        match self.moe {
            Some(MoeShape { top_k, layers, .. }) if layers > 0 => tokens as f64 * top_k as f64 * self.expert.elems,
            _ => 0.0,
        }
    }

    /// Time of a step's work under nominal conditions (the estimator's case).
    ///
    /// `t_mem = bytes / bandwidth` (cache bandwidth when weights + KV fit the usable
    /// last-level cache, which LRU then keeps between tokens; DRAM otherwise, where a
    /// cyclic sweep larger than the cache gets no reuse). CPU: `t_arith = arith_cycles /
    /// (efficiency × cycle rate)`, `t_dequant = dequant_cycles / (efficiency × cycle rate)`; accelerators:
    /// `t_arith = MACs / MAC rate`. `total = overlap_time(t_mem, t_arith + t_dequant) +
    /// ops × per-op cost + per-token cost`.
    pub fn step_time(&self, w: &StepWork, efficiency: f64, per_token: bool) -> StepTime {
        self.step_time_at(w, efficiency, per_token, &Conditions::NOMINAL)
    }

    /// Time of a step's work under the simulator's run-time conditions: compute time and
    /// overheads scale with `1 / freq_scale`; the DRAM bandwidth is
    /// `min(dram × bandwidth_scale, per-core × threads × freq_scale)` (a slower core pulls
    /// proportionally less); bytes the cache model served take their measured time and only
    /// the rest goes to DRAM. Nominal conditions give [`CostPlan::step_time`] exactly.
    pub fn step_time_at(&self, w: &StepWork, efficiency: f64, per_token: bool, c: &Conditions) -> StepTime {
        let bytes = w.weight_bytes + w.kv_bytes;
        let (t_mem, from_cache) = match c.cached {
            None => {
                let from_cache = self.cache_bandwidth_bps > 0.0 && bytes <= self.cache_bytes;
                let bw = if from_cache { self.cache_bandwidth_bps } else { self.dram_bandwidth_at(c) };
                (bytes / bw, from_cache)
            }
            Some((cached_bytes, cached_s)) => {
                let rest = (bytes - cached_bytes).max(0.0);
                (cached_s + if rest > 0.0 { rest / self.dram_bandwidth_at(c) } else { 0.0 }, rest == 0.0)
            }
        };
        // Memory time of each phase, in proportion to its bytes.
        let weight_share = if bytes > 0.0 { w.weight_bytes / bytes } else { 1.0 };
        let (mem_w, mem_a) = (t_mem * weight_share, t_mem * (1.0 - weight_share));
        let ((arith_w, dequant_w), arith_a) = match self.accel_macs_per_s {
            Some(rate) => {
                let rate = rate * c.freq_scale;
                let dequant = w.dequant_cycles * self.accel_dequant_macs_per_cycle;
                ((w.weight_macs / rate, dequant / rate), w.attn_macs / rate)
            }
            None => {
                // Attention arithmetic runs in f16/f32 at the f32 FMA rate ≈ ¼ of int8 MACs.
                let attn_cycles = w.attn_macs * self.attn_cycles[0] + w.kv_bytes * self.attn_cycles[1];
                let rate = self.cycles_rate * c.freq_scale;
                // The engine's efficiency is its share of the unit's peak for the whole kernel:
                // it scales the unpacking as well as the multiply-adds.
                let eff_rate = efficiency * rate;
                ((w.arith_cycles / eff_rate, w.dequant_cycles / eff_rate), attn_cycles / eff_rate)
            }
        };
        let t_weights = overlap_time(mem_w, arith_w + dequant_w, self.overlap);
        let t_attention = overlap_time(mem_a, arith_a, self.overlap);
        let t_overhead = (w.ops * self.per_op_s + if per_token { self.per_token_s } else { 0.0 }) / c.freq_scale;
        StepTime {
            t_mem,
            t_arith: arith_w + arith_a,
            t_dequant: dequant_w,
            t_overhead,
            t_storage: 0.0,
            t_attention,
            total: t_weights + t_attention + t_overhead,
            from_cache,
            memory_bound: (mem_w >= arith_w + dequant_w, mem_a >= arith_a),
        }
    }

    /// Weight bytes a step reads from storage: the paged share of its weight bytes
    /// (`paged_fraction × weight_bytes`, 0 when the design fits).
    pub fn flash_bytes(&self, w: &StepWork) -> f64 {
        self.paged * w.weight_bytes
    }

    /// `t` with the step's storage reads added ([`storage_time_s`] of [`CostPlan::flash_bytes`]),
    /// spread over `batch` sequences (a prefill chunk's time is per sequence).
    fn with_storage(&self, mut t: StepTime, w: &StepWork, batch: f64) -> StepTime {
        t.t_storage = storage_time_s(self.flash_bytes(w), self.storage_gbps) / batch;
        t.total += t.t_storage;
        t
    }

    /// DRAM bandwidth under `c`, bytes/s: [`cpu_bandwidth_gbps`] with the DRAM share scaled
    /// by `bandwidth_scale` and the per-core bound by `freq_scale`; accelerators take the
    /// DRAM share alone.
    fn dram_bandwidth_at(&self, c: &Conditions) -> f64 {
        let gbps = match self.per_core_gbps {
            Some(core) => cpu_bandwidth_gbps(self.dram_gbps, c.bandwidth_scale, core * c.freq_scale, self.threads),
            None => self.dram_gbps * c.bandwidth_scale,
        };
        gbps * 1e9
    }

    /// Power of the compute units in use at full frequency, W.
    pub fn compute_w(&self) -> f64 {
        self.compute_w
    }

    /// Static power, W.
    pub fn static_w(&self) -> f64 {
        self.static_w
    }

    /// DRAM energy, pJ per bit moved.
    pub fn dram_pj_per_bit(&self) -> f64 {
        self.pj_per_bit
    }

    /// Routed experts per MoE layer, top-k and the number of MoE layers.
    pub fn moe(&self) -> Option<MoeShape> {
        self.moe
    }

    /// Bytes of one routed expert summed over the MoE layers.
    pub fn expert_bytes(&self) -> f64 {
        self.expert.bytes
    }

    /// Expected distinct experts per MoE layer for one decode step.
    pub fn decode_distinct_experts(&self) -> f64 {
        self.decode_distinct
    }

    /// DRAM bytes of a step (0 when served from cache, except KV writes which are small).
    pub fn dram_bytes(&self, w: &StepWork, t: &StepTime) -> f64 {
        if t.from_cache { 0.0 } else { w.weight_bytes + w.kv_bytes }
    }

    /// Decode one token (per sequence) at context `ctx`, paged weights read from storage.
    pub fn decode_step(&self, ctx: u64) -> (StepWork, StepTime) {
        let w = self.decode_work(ctx);
        let t = self.with_storage(self.step_time(&w, self.arith_eff_decode, true), &w, 1.0);
        (w, t)
    }

    /// `(Σ seconds, Σ joules)` of the `g` decode steps at contexts `p, p + 1, …, p + g − 1`,
    /// in `O(log g)` step evaluations instead of `g`.
    ///
    /// A step's time and energy are linear in the context while three things stay fixed: whether
    /// sliding layers have filled their window, whether the working set fits the cache, and
    /// whether memory or compute is the longer term of each phase (each flips at most once
    /// as the context grows, the last ones at most once within a stretch where the first two
    /// hold). On each such
    /// stretch `[a, b]` the sum is exact for a linear function: `(b − a + 1) × (f(a) + f(b)) / 2`;
    /// stretches are found by bisection on that state.
    pub fn decode_sums(&self, p: u64, g: u64) -> (f64, f64) {
        let f = |ctx: u64| {
            let (w, t) = self.decode_step(ctx);
            (t.total, self.step_energy(&w, &t))
        };
        if g <= 16 {
            return (0..g).map(|j| f(p + j)).fold((0.0, 0.0), |(t, e), (dt, de)| (t + dt, e + de));
        }
        let state = |ctx: u64| {
            let (_, t) = self.decode_step(ctx);
            (ctx + 1 > self.window, t.from_cache, t.memory_bound)
        };
        let (mut sum_t, mut sum_e) = (0.0, 0.0);
        let last = p + g - 1;
        let mut a = p;
        loop {
            let k = state(a);
            // The largest b in [a, last] whose state equals a's (the equal states form a prefix).
            let (mut lo, mut hi) = (a, last);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if state(mid) == k { lo = mid } else { hi = mid - 1 }
            }
            let b = lo;
            let ((ta, ea), (tb, eb)) = (f(a), f(b));
            let n = (b - a + 1) as f64;
            sum_t += n * (ta + tb) / 2.0;
            sum_e += n * (ea + eb) / 2.0;
            if b == last {
                return (sum_t, sum_e);
            }
            a = b + 1;
        }
    }

    /// Decode one token (per sequence) at context `ctx` under run-time conditions.
    pub fn decode_step_at(&self, w: &StepWork, c: &Conditions) -> StepTime {
        self.step_time_at(w, self.arith_eff_decode, true, c)
    }

    /// Time of one prefill chunk's work for one sequence under run-time conditions (the
    /// estimator's [`CostPlan::prefill`] multiplies it by the batch).
    pub fn prefill_step_at(&self, w: &StepWork, c: &Conditions) -> StepTime {
        self.step_time_at(w, self.arith_eff_prefill, false, c)
    }

    /// Work of a prefill chunk of `n` tokens starting at position `start`.
    ///
    /// Weights are read once per chunk (routed experts: the distinct ones the chunk hits);
    /// the KV cache up to the chunk's end is read once, whatever `attention_kv_reads` says
    /// (the chunk's queries share that read; the knob only repeats decode's); arithmetic
    /// scales with tokens; dequantization is shared by `prefill_dequant_reuse` tokens.
    pub fn prefill_work(&self, start: u64, n: u64) -> StepWork {
        let ex = self.expert_work(n);
        let (kv_read, _) = self.attention(start + n);
        // Σ over the chunk's queries of attended tokens: sum of an arithmetic sequence,
        // capped by the window for sliding layers.
        let attn = attended_sum(LayerKind::Full, start, n, self.window) * self.attn_full_macs
            + attended_sum(LayerKind::Sliding, start, n, self.window) * self.attn_sliding_macs;
        let reuse = (n as f64 / self.prefill_reuse).max(1.0);
        StepWork {
            weight_bytes: self.dense_bytes + ex.bytes,
            kv_bytes: kv_read + n as f64 * (self.kv_full_per_token + self.kv_sliding_per_token + self.state_bytes),
            activation_bytes: n as f64 * self.act_bytes,
            weight_macs: n as f64 * self.dense_elems + self.expert_weight_macs(n),
            attn_macs: attn + n as f64 * self.state_macs,
            arith_cycles: n as f64 * self.dense_cycles.arith + ex.arith,
            dequant_cycles: reuse * (self.dense_cycles.dequant + ex.dequant),
            ops: self.ops_per_token,
        }
    }

    /// Prefill `prompt` tokens of every sequence in chunks of `ubatch`; returns (seconds,
    /// joules, the last chunk's time).
    pub fn prefill(&self, prompt: u64, ubatch: u64) -> (f64, f64, Option<StepTime>) {
        let (mut t, mut joules) = (0.0, 0.0);
        let mut last = None;
        let mut start = 0;
        while start < prompt {
            let n = ubatch.min(prompt - start);
            let w = self.prefill_work(start, n);
            let b = self.batch as f64;
            let st = self.with_storage(self.step_time(&w, self.arith_eff_prefill, false), &w, b);
            t += st.total * b;
            joules += self.step_energy(&w, &st) * b;
            last = Some(st);
            start += n;
        }
        (t, joules, last)
    }

    /// Energy of a step, joules.
    pub fn step_energy(&self, w: &StepWork, t: &StepTime) -> f64 {
        energy_per_token_j(self.dram_bytes(w, t), self.pj_per_bit, self.compute_w, self.static_w, t.total)
    }
}

/// The analytic estimate of one scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Estimate {
    /// Total parameters.
    pub params: u64,
    /// Parameters whose weights a decoded token reads.
    pub active_params: u64,
    /// Weight bytes.
    pub weight_bytes: u64,
    /// Average bits per weight.
    pub weight_bpw: f64,
    /// KV cache bytes.
    pub kv_bytes: u64,
    /// Recurrent state bytes.
    pub state_bytes: u64,
    /// Compute-buffer bytes.
    pub compute_bytes: u64,
    /// Runtime overhead bytes.
    pub overhead_bytes: u64,
    /// Total footprint bytes.
    pub total_bytes: u64,
    /// Budget: RAM − OS − other apps − margin.
    pub budget_bytes: i64,
    /// Fits within the budget.
    pub fits: bool,
    /// Budget − total (negative: shortfall).
    pub headroom_bytes: i64,
    /// Threads.
    pub threads: u32,
    /// Decode tokens/s (all sequences), averaged over the generated tokens.
    pub decode_tok_s: f64,
    /// The 80 % interval of the decode rate: `decode_tok_s × the 10th and 90th percentiles of
    /// measured ÷ predicted` over the engine's rows on this unit, each predicted by a fit
    /// that never saw its device (`memwall validate --devices`); `None` for an engine
    /// without a cross-validated error (the generic one).
    pub decode_tok_s_interval: Option<[f64; 2]>,
    /// Mean seconds per decode step.
    pub decode_s_per_token: f64,
    /// Prefill tokens/s.
    pub prefill_tok_s: f64,
    /// Prefill seconds.
    pub prefill_s: f64,
    /// Time to first token: prefill + sampling, seconds.
    pub ttft_s: f64,
    /// Joules per decoded token.
    pub energy_j_per_token: f64,
    /// Joules of one reply: its prompt's prefill and its generated tokens, per sequence.
    pub reply_energy_j: f64,
    /// Battery charge one reply draws, mAh ([`memwall_spec::BatterySpec::mah_for`] of
    /// `reply_energy_j`); None without a battery in the device.
    pub battery_mah_per_reply: Option<f64>,
    /// Share of the battery an hour of chat takes, %: replies back to back (no reading
    /// time between them, so an upper bound), at their mean power
    /// ([`battery_pct_per_hour`]); None without a battery.
    pub battery_pct_per_hour: Option<f64>,
    /// DRAM bytes per decoded token (at the mean context).
    pub dram_bytes_per_token: f64,
    /// Weight bytes per decoded token.
    pub weight_bytes_per_token: f64,
    /// KV/state bytes per decoded token.
    pub kv_bytes_per_token: f64,
    /// Weight bytes per decoded token read from storage, because the design does not fit
    /// and the memory-mapped weights beyond the budget stay on flash (0 when it fits).
    pub flash_bytes_per_token: f64,
    /// Weight bytes that stay resident in DRAM.
    pub resident_weight_bytes: u64,
    /// Multiply-adds per decoded token.
    pub macs_per_token: f64,
    /// Decode time terms at the mean context.
    pub decode_terms: StepTime,
    /// What limits decode.
    pub binding: Binding,
    /// What limits prefill.
    pub prefill_binding: Option<Binding>,
    /// The context exceeds the model's trained `max_context` ([`Scenario::context_beyond_max`]).
    pub context_beyond_max: bool,
    /// Device figures taken from class defaults under `assume_defaults`, comma-separated
    /// (empty: none).
    pub assumed: String,
}

/// Share of a battery storing `battery_j` joules that `power_w` watts drain in an hour, %:
/// `100 × power_w × 3600 s / battery_j`.
pub fn battery_pct_per_hour(power_w: f64, battery_j: f64) -> f64 {
    100.0 * power_w * 3600.0 / battery_j
}

/// The context at which the estimate reports a decode step's terms and bytes: the middle of
/// the reply, `prompt + ⌊gen / 2⌋` tokens already cached (`gen` at least 1).
pub fn mean_decode_context(wl: &memwall_spec::Workload) -> u64 {
    wl.prompt_tokens + wl.gen_tokens.max(1) / 2
}

/// Estimate one scenario in closed form.
pub fn estimate(s: &Scenario) -> Result<Estimate, SimError> {
    let plan = CostPlan::new(s)?;
    Ok(estimate_with(&plan, s))
}

/// An estimator for many design points: it keeps the [`TensorPlan`] (and the validation) of
/// the last (model, device, weight mix, cost model) it saw, so points that share them (a
/// sweep over context, KV format, batch, threads or workload) pay only for the terms that
/// change. Results are identical to [`estimate`]'s. One per thread.
#[derive(Debug, Default)]
pub struct Estimator {
    last: Option<Shared>,
    /// Plans by the caller's key ([`Estimator::estimate_keyed`]).
    keyed: std::collections::HashMap<u64, TensorPlan>,
    /// The cost plan of the last keyed point, with its key, KV formats and workload (token
    /// counts aside): a point that differs only in token counts reuses it.
    last_plan: Option<(u64, memwall_spec::KvQuant, memwall_spec::Workload, CostPlan)>,
}

/// The workload with its token counts (prompt, generated, context) set to 0.
fn without_tokens(w: &memwall_spec::Workload) -> memwall_spec::Workload {
    memwall_spec::Workload { prompt_tokens: 0, gen_tokens: 0, context_tokens: 0, ..w.clone() }
}

#[derive(Debug)]
struct Shared {
    model: memwall_spec::ModelSpec,
    device: memwall_spec::DeviceSpec,
    weights: memwall_spec::WeightQuant,
    cost: memwall_spec::CostModel,
    engine: memwall_spec::EngineSpec,
    plan: TensorPlan,
}

impl Estimator {
    /// Plans an estimator keeps by key before it starts over.
    pub const MAX_KEYED_PLANS: usize = 1024;

    /// A new estimator with nothing cached.
    pub fn new() -> Self {
        Self::default()
    }

    /// Estimate `s` (validated as [`estimate`] validates it).
    pub fn estimate(&mut self, s: &Scenario) -> Result<Estimate, SimError> {
        let same = self.last.as_ref().is_some_and(|c| {
            c.weights == s.weights
                && c.cost == s.cost
                && c.model == s.model
                && c.device == s.device
                && c.engine == s.engine
        });
        if same {
            s.validate_point()?;
        } else {
            s.validate()?;
            self.last = Some(Shared {
                model: s.model.clone(),
                device: s.device.clone(),
                weights: s.weights.clone(),
                cost: s.cost.clone(),
                engine: s.engine.clone(),
                plan: TensorPlan::new(s),
            });
        }
        let tp = &self.last.as_ref().expect("cached above").plan;
        Ok(estimate_with(&CostPlan::with_tensors(s, tp)?, s))
    }

    /// Estimate `s` with the plan kept under `key`, for a caller that knows which points
    /// share a model, device, weight mix, cost model and engine (a sweep numbering the
    /// combinations of the axes that set them) and so need not compare them: **every
    /// scenario given one key must have the same model, device, weights, cost model, engine,
    /// `assume_defaults` and `sim` settings**; consecutive points that differ only in the
    /// workload's token counts share the rest of their cost plan too. The first point of a
    /// key is validated whole, the others as [`Scenario::validate_point`] does. Results are
    /// identical to [`estimate`]'s.
    pub fn estimate_keyed(&mut self, key: u64, s: &Scenario) -> Result<Estimate, SimError> {
        let tp = match self.keyed.get(&key) {
            Some(tp) => {
                s.validate_point()?;
                tp
            }
            None => {
                s.validate()?;
                if self.keyed.len() >= Self::MAX_KEYED_PLANS {
                    self.keyed.clear();
                }
                self.last_plan = None;
                self.keyed.entry(key).or_insert_with(|| TensorPlan::new(s))
            }
        };
        let bare = without_tokens(&s.workload);
        let plan = match &self.last_plan {
            Some((k, kv, w, plan)) if *k == key && *kv == s.kv && *w == bare => plan.with_tokens_of(s, tp)?,
            _ => CostPlan::with_tensors(s, tp)?,
        };
        let e = estimate_with(&plan, s);
        self.last_plan = Some((key, s.kv, bare, plan));
        Ok(e)
    }
}

/// Estimate with a precomputed plan.
pub fn estimate_with(plan: &CostPlan, s: &Scenario) -> Estimate {
    let wl = &s.workload;
    let p = wl.prompt_tokens;
    let g = wl.gen_tokens.max(1);
    // Decode: Σ over generated tokens of the step time at their context (piecewise-linear
    // closed form, exact to rounding).
    let (decode_s, energy) = plan.decode_sums(p, g);
    let mid = mean_decode_context(wl);
    let (w_mid, t_mid) = plan.decode_step(mid);
    let (prefill_s, prefill_j, prefill_last) = plan.prefill(p, wl.ubatch);
    let b = wl.batch as f64;
    let battery = s.device.battery.map(|bat| {
        let reply_j = (prefill_j + energy) / b;
        (bat.mah_for(reply_j), battery_pct_per_hour((prefill_j + energy) / (prefill_s + decode_s), bat.energy_j()))
    });
    let fp = &plan.footprint;
    Estimate {
        params: plan.weights.params,
        active_params: plan.active_params,
        weight_bytes: fp.weights,
        weight_bpw: plan.weights.bits_per_weight(),
        kv_bytes: fp.kv,
        state_bytes: fp.state,
        compute_bytes: fp.compute,
        overhead_bytes: fp.overhead,
        total_bytes: fp.total,
        budget_bytes: fp.budget,
        fits: fp.fits,
        headroom_bytes: fp.headroom,
        threads: plan.threads(),
        decode_tok_s: b * g as f64 / decode_s,
        decode_tok_s_interval: plan
            .error_ratio
            .map(|[lo, hi]| [lo * b * g as f64 / decode_s, hi * b * g as f64 / decode_s]),
        decode_s_per_token: decode_s / g as f64,
        prefill_tok_s: if prefill_s > 0.0 { b * p as f64 / prefill_s } else { 0.0 },
        prefill_s,
        ttft_s: if p > 0 { prefill_s + plan.per_token_s } else { plan.decode_step(0).1.total },
        energy_j_per_token: energy / (g as f64 * b),
        reply_energy_j: (prefill_j + energy) / b,
        battery_mah_per_reply: battery.map(|x| x.0),
        battery_pct_per_hour: battery.map(|x| x.1),
        dram_bytes_per_token: plan.dram_bytes(&w_mid, &t_mid) / b,
        weight_bytes_per_token: w_mid.weight_bytes / b,
        kv_bytes_per_token: w_mid.kv_bytes / b,
        flash_bytes_per_token: plan.flash_bytes(&w_mid) / b,
        resident_weight_bytes: fp.resident_weights,
        macs_per_token: (w_mid.weight_macs + w_mid.attn_macs) / b,
        decode_terms: t_mid,
        binding: t_mid.binding(),
        prefill_binding: prefill_last.map(|t| t.binding()),
        context_beyond_max: s.context_beyond_max(),
        assumed: plan.assumed.join(", "),
    }
}
