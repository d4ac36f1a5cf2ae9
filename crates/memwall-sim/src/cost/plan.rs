//! The per-scenario cost plan: what a design's tensors cost per token ([`TensorPlan`],
//! independent of the workload) and, with the workload, KV format and threads applied, the
//! constants of every step ([`CostPlan`]), which turn a step's work into its time and energy.
//! The analytic estimator sums its steps in closed form; the discrete-event simulator steps
//! through them in time.

use memwall_spec::{Backend, LayerKind, QuantFormat, Scenario};

use std::sync::Arc;

use super::formulas::{
    attended_sum, attended_tokens, attention_cycles, cpu_bandwidth_gbps, cycles_per_weight, energy_per_token_j,
    expected_distinct_experts, overlap_time, storage_time_s,
};
use super::step::{Conditions, StepTime, StepWork};
use super::token::{OpKind, TokenTable};
use crate::SimError;
use crate::footprint::{ComputeShape, Footprint, KvLayout, WeightBytes, recurrent_state_bytes};

/// Core cycles of work on the lead cluster's cores.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cycles {
    /// Arithmetic (multiply-add) cycles.
    pub arith: f64,
    /// Dequantization cycles.
    pub dequant: f64,
    /// The part of `dequant` in formats unpacked again for every token of a chunk (no
    /// matrix-matrix kernel on the CPU: [`memwall_spec::UnitCosts::gemm_formats`]); 0 off
    /// the CPU.
    pub unshared: f64,
}

/// Passes over one routed expert's weights that unpack them when `uses` token-expert pairs
/// (tokens × top-k) fall on `distinct` experts, a tile sharing one unpacking among `reuse`
/// of an expert's tokens: `max(uses / reuse, distinct)`. Each expert unpacks once per tile of
/// the tokens routed to it, not once per tile of the whole chunk: a 512-token chunk of a
/// 32-expert, top-4 MoE at reuse 4 makes `max(2048 / 4, 32) = 512` passes (128 per token
/// tile × 32 experts, 4096, would unpack each expert for tokens it never sees).
pub fn expert_dequant_units(uses: f64, distinct: f64, reuse: f64) -> f64 {
    (uses / reuse).max(distinct)
}

/// Dequantization cycles of `n` tokens (a prefill chunk, or the sequences of a batched decode
/// step) through weights whose unpacking for one token costs `dequant` cycles, `unshared` of
/// them in formats without a matrix-matrix kernel:
/// `max(n / reuse, 1) × (dequant − unshared) + n × unshared`. A tiled kernel unpacks a block
/// once for every `reuse` tokens (`prefill_dequant_reuse`); a dot product called per row and
/// token unpacks it for each. For `n = 1` both give `dequant`.
pub fn chunk_dequant_cycles(dequant: f64, unshared: f64, n: f64, reuse: f64) -> f64 {
    (n / reuse).max(1.0) * (dequant - unshared) + n * unshared
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
    /// Unpacking of the experts' formats a chunk shares ([`expert_dequant_units`] expert
    /// passes).
    dequant: f64,
    /// Unpacking of the other formats, for every token's experts.
    unshared: f64,
}

/// The weights an accelerator hands to the CPU ([`memwall_spec::UnitCosts::cpu_fallback`]):
/// the same design planned on the CPU, and the share of a step those weights are.
#[derive(Debug, Clone)]
pub struct HostPart {
    /// The design on the CPU, with the engine's CPU figures.
    pub plan: CostPlan,
    /// Share of a decoded token's weight bytes in matrices the unit does not multiply (their
    /// format, or their rows past its limit).
    pub bytes_share: f64,
    /// Share of a prompt token's weight multiply-adds in them.
    pub macs_share: f64,
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
    /// [`super::token::AttentionOp::kv_row_bytes`]).
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
    /// Accelerators: the unit's peak multiply-adds per second (a step's efficiency, decode's
    /// or prefill's, scales it).
    accel_macs_per_s: Option<f64>,
    /// Whether the design runs on the CPU (the engine's CPU matrix kernels apply).
    pub(crate) on_cpu: bool,
    /// Accelerators: dequantization multiply-add equivalents per CPU dequantization cycle
    /// of the lead cluster (`dequant_ops_per_weight / 2 ÷ the cluster's Q4_0 cycles per
    /// weight`), so that `dequant_cycles × this` is the unit's dequantization work.
    accel_dequant_macs_per_cycle: f64,
    threads: u32,
    compute_w: f64,
    /// Scenario knobs.
    overlap: f64,
    per_op_s: f64,
    pub(crate) per_token_s: f64,
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
    pub(crate) assumed: Vec<&'static str>,
    /// The engine's cross-validated 80 % interval of measured ÷ predicted decode tok/s.
    pub(crate) error_ratio: Option<[f64; 2]>,
    /// The same for prompt (prefill) tok/s.
    pub(crate) prefill_error_ratio: Option<[f64; 2]>,
    /// The operators of a token ([`TokenTable`]).
    pub table: Arc<TokenTable>,
    /// Seconds the layers' token mixers add to every step on the unit
    /// ([`memwall_spec::UnitCosts::mixer_time_s`]).
    pub(crate) mixer_s: f64,
    /// The weights the unit hands to the CPU, if any.
    pub host: Option<Arc<HostPart>>,
}

/// What a design's tensors cost per token, independent of the workload: per-tensor weight
/// bytes, multiply-adds and CPU cycles on the device's fastest cluster, and the layer counts
/// the KV cache and attention scale with. It depends on the model, the weight mix, the
/// device's fastest cluster, the cost model and the engine's CPU figures (its measured
/// unpacking cycles and the width of its quantized kernels) only, so one plan serves every point of a
/// sweep that varies context, KV format, batch, threads or workload over the same
/// (model, device, mix) ([`crate::Estimator`] keeps it).
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
    /// Layers of each token-mixer kind the model has.
    mixer_layers: Vec<(LayerKind, u32)>,
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
        let cpu = s.engine.unit(Backend::Cpu);
        // Per format, worked out once: a model has hundreds of tensors in a few formats.
        let per_format = std::cell::RefCell::new(Vec::<(QuantFormat, (f64, f64, bool))>::new());
        let table = TokenTable::new(s, &weights, &|f| {
            if let Some((_, v)) = per_format.borrow().iter().find(|(g, _)| *g == f) {
                return *v;
            }
            let (arith, dequant) = cluster_cycles_per_weight(f, lead, c, cpu, true, 1.0);
            let v = (arith, dequant, cpu.is_none_or(|u| u.shares_unpacking(f, lead.int8_dot)));
            per_format.borrow_mut().push((f, v));
            v
        });
        let dense = table.sum(|o| o.kind != OpKind::Experts);
        let experts = table.sum(|o| o.kind == OpKind::Experts);
        // The recurrent layers' state read + write, as the token table lists them.
        let state_rw_bytes = table.state.iter().fold(0.0, |sum, st| sum + st.bytes);
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
            dense_cycles: Cycles {
                arith: dense.arith_cycles,
                dequant: dense.dequant_cycles,
                unshared: dense.unshared_dequant_cycles,
            },
            expert: ExpertCost {
                bytes: experts.bytes,
                elems: experts.macs,
                cycles: Cycles {
                    arith: experts.arith_cycles,
                    dequant: experts.dequant_cycles,
                    unshared: experts.unshared_dequant_cycles,
                },
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
            mixer_layers: LayerKind::ALL
                .into_iter()
                .map(|k| (k, m.layer_kinds().iter().filter(|x| **x == k).count() as u32))
                .filter(|(_, n)| *n > 0)
                .collect(),
            weights: Arc::new(weights),
        }
    }
}

/// CPU cycles per weight of format `f` on one core of `cl`: [`cycles_per_weight`] with the
/// cluster's SIMD figures; the dequantization cost is the scenario's override (for a 128-bit,
/// 2-pipe core, scaled), else, where `measured`, the cycles the engine measured for itself
/// on the CPU ([`memwall_spec::UnitCosts::dequant_cycles`] of `cpu`, the engine's CPU
/// figures, taken as they are), else the cost model's table (scaled). A quantized format
/// runs at the engine's [`memwall_spec::UnitCosts::quantized_simd_bits`] where the core is
/// wider.
fn cluster_cycles_per_weight(
    f: QuantFormat,
    cl: &memwall_spec::ClusterSpec,
    c: &memwall_spec::CostModel,
    cpu: Option<&memwall_spec::UnitCosts>,
    measured: bool,
    eff: f64,
) -> (f64, f64) {
    let measured = (measured && c.dequant_override(f).is_none())
        .then(|| cpu.and_then(|u| u.dequant_cycles.get(&f.to_string())))
        .flatten();
    let bits = cl.width_at_most(cpu.and_then(|u| u.quantized_simd_bits).filter(|_| f.is_quantized()));
    let (arith, dequant) = cycles_per_weight(
        f.is_quantized(),
        cl.int8_macs_per_cycle_at(bits),
        cl.f32_fmas_per_cycle(),
        eff,
        c.dequant_cycles(f),
        bits,
        cl.simd_pipes,
    );
    (arith, measured.copied().unwrap_or(dequant))
}

impl CostPlan {
    /// Arithmetic cycles per weight multiply-add of the dense weights at the core's full
    /// width: what the attention's fallback cost is scaled from
    /// ([`attention_cycles`]: float arithmetic, which no cap on the engine's quantized
    /// kernels narrows). Where the engine's `quantized_simd_bits` narrows the lead core, the
    /// weights' multiply-adds are re-costed at full width, routed experts at `top_k` included.
    fn full_width_cycles_per_mac(s: &Scenario, tp: &TensorPlan, lead: &memwall_spec::ClusterSpec) -> f64 {
        let cap = s.engine.unit(Backend::Cpu).and_then(|u| u.quantized_simd_bits);
        if lead.width_at_most(cap) == lead.simd_bits {
            return if tp.dense_elems > 0.0 { tp.dense_cycles.arith / tp.dense_elems } else { 0.0 };
        }
        let (mut cycles, mut macs) = (0.0, 0.0);
        for &(f, _, _, m) in &tp.table.per_format {
            cycles += m * cluster_cycles_per_weight(f, lead, &s.cost, None, false, 1.0).0;
            macs += m;
        }
        if macs > 0.0 { cycles / macs } else { 0.0 }
    }

    /// Precompute everything that does not depend on the context position.
    pub fn new(s: &Scenario) -> Result<Self, SimError> {
        s.validate()?;
        Self::with_tensors(s, &TensorPlan::new(s))
    }

    /// The plan of `s` from a [`TensorPlan`] of the same model, device, weight mix and cost
    /// model (`s` must be valid): only the terms that depend on the workload, the KV format
    /// and the thread count are computed.
    pub fn with_tensors(s: &Scenario, tp: &TensorPlan) -> Result<Self, SimError> {
        Self::with_tensors_on(s, tp, s.workload.backend)
    }

    /// [`CostPlan::with_tensors`] with the design run on `backend` in place of the workload's.
    fn with_tensors_on(s: &Scenario, tp: &TensorPlan, backend: Backend) -> Result<Self, SimError> {
        let m = &s.model;
        let d = &s.device;
        let c = &s.cost;
        let wl = &s.workload;
        let threads = s.threads();
        let on_cpu = backend == Backend::Cpu;

        let window = m.sliding_window.unwrap_or(u64::MAX);
        // Per cached token: KV bytes of the layers that hold a cache, by kind.
        let kv_sum = |k: LayerKind| -> f64 { tp.attn_kv.token_bytes(k, s.kv.k, s.kv.v) as f64 };
        let footprint = Self::footprint_of(s, tp)?;

        let unit = super::unit::resolve_on(s, backend)?;
        let u = &unit.costs;
        let hands_off = u.cpu_fallback && !on_cpu;
        if !u.formats.is_empty()
            && !hands_off
            && let Some(f) = tp.formats.iter().find(|f| !u.supports(**f))
        {
            return Err(SimError::Spec(memwall_spec::SpecError::invalid(
                "weights",
                f,
                format!(
                    "engine `{}` does not run {f} weights on the {} (it runs {})",
                    s.engine.name,
                    backend.name(),
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
            let (a, q) = cluster_cycles_per_weight(reference, cl, c, Some(u), false, u.compute_efficiency);
            a + q
        };
        let lead_cpw = cpw(lead);
        let cycles_rate: f64 = placement.iter().map(|(cl, n)| *n as f64 * cl.max_ghz * 1e9 * lead_cpw / cpw(cl)).sum();
        let cpu_w: f64 = placement.iter().map(|(cl, n)| *n as f64 * cl.power_w_per_core).sum();
        // Unpacking cycles per Q4_0 weight as the token table counts them (the engine's CPU
        // figures included), so that a step's unpacking cycles turn into the unit's
        // operations in the ratio the table has.
        let q40 = cluster_cycles_per_weight(
            QuantFormat::Ggml(memwall_spec::GgmlType::Q4_0),
            lead,
            c,
            s.engine.unit(Backend::Cpu),
            true,
            1.0,
        )
        .1;
        let accel_dequant_macs_per_cycle = if q40 > 0.0 { u.dequant_ops_per_weight / 2.0 / q40 } else { 0.0 };
        // The unit's power at full clock as this engine draws it; a unit without a figure
        // (and no assumed default) adds none here, and the thermal simulator refuses it.
        let power_scale = u.power_scale.unwrap_or(1.0);
        let (accel_macs_per_s, compute_w) = match unit.peak_macs_per_s {
            Some(peak) => (Some(peak), unit.power_w.unwrap_or(0.0) * power_scale),
            None => (None, cpu_w * power_scale),
        };
        let mem = &d.memory;
        let llc = d.last_level_cache();
        let host = match hands_off && tp.table.per_format.iter().any(|r| u.falls_back(r.0, r.1)) {
            true => Some(Arc::new(Self::host_part(s, tp, u)?)),
            false => None,
        };
        // Power of a step that runs its CPU share on the CPU: the two units' full-load power
        // in the same proportion as the step's time (the share of decode bytes).
        let compute_w =
            host.as_ref().map_or(compute_w, |h| (1.0 - h.bytes_share) * compute_w + h.bytes_share * h.plan.compute_w);
        Ok(CostPlan {
            footprint,
            active_params: tp.active_params,
            dense_bytes: tp.dense_bytes,
            dense_elems: tp.dense_elems,
            // Off the CPU the unit's own kernels unpack (`dequant_ops_per_weight`); the CPU
            // engine's matrix kernels say nothing about them.
            dense_cycles: Cycles { unshared: if on_cpu { tp.dense_cycles.unshared } else { 0.0 }, ..tp.dense_cycles },
            expert: ExpertCost {
                cycles: Cycles { unshared: if on_cpu { tp.expert.cycles.unshared } else { 0.0 }, ..tp.expert.cycles },
                ..tp.expert
            },
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
            attn_cycles: attention_cycles(u, s.kv.k, Self::full_width_cycles_per_mac(s, tp, lead)),
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
            on_cpu,
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
            error_ratio: unit.error_ratio(),
            prefill_error_ratio: unit.prefill_error_ratio(),
            table: tp.table.clone(),
            mixer_s: u.mixer_time_s(&tp.mixer_layers),
            host,
            assumed: unit.assumed,
        })
    }

    /// The part of `s` its unit hands to the CPU ([`HostPart`]): `s` planned with the CPU as
    /// its unit, and the shares [`memwall_spec::UnitCosts::cpu_share`] of what a token reads
    /// and multiplies ([`TokenTable::per_format`]).
    fn host_part(s: &Scenario, tp: &TensorPlan, u: &memwall_spec::UnitCosts) -> Result<HostPart, SimError> {
        if s.engine.cpu.is_none() {
            let unit = s.workload.backend.name();
            return Err(SimError::Spec(memwall_spec::SpecError::invalid(
                format!("engine.{unit}.cpu_fallback"),
                true,
                format!(
                    "engine `{}` hands weights it does not multiply on the {unit} to the CPU, but has no [cpu] table \
                     (add one, or `cpu_from` naming the engine whose CPU figures it runs with)",
                    s.engine.name
                ),
            )));
        }
        Ok(HostPart {
            plan: Self::with_tensors_on(s, tp, Backend::Cpu)?,
            bytes_share: u.cpu_share(tp.table.per_format.iter().map(|r| (r.0, r.1, r.2))),
            macs_share: u.cpu_share(tp.table.per_format.iter().map(|r| (r.0, r.1, r.3))),
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
    pub(crate) fn with_tokens_of(&self, s: &Scenario, tp: &TensorPlan) -> Result<Self, SimError> {
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
                // Bytes scale with the distinct experts; arithmetic and per-token unpacking with
                // the experts each token uses; shared unpacking with the tiles of each expert's
                // tokens.
                let uses = tokens as f64 * top_k as f64;
                ExpertWork {
                    bytes: distinct * x.bytes,
                    arith: uses * x.cycles.arith,
                    dequant: expert_dequant_units(uses, distinct, self.prefill_reuse)
                        * (x.cycles.dequant - x.cycles.unshared),
                    unshared: uses * x.cycles.unshared,
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
            dequant_cycles: self.chunk_dequant(b, &ex),
            ops: self.ops_per_token,
            host_dequant_cycles: self.host.as_ref().map_or(0.0, |h| h.plan.decode_work(ctx).dequant_cycles),
        }
    }

    /// Unpacking cycles of `n` tokens or sequences processed together, `ex` their experts'
    /// work: [`chunk_dequant_cycles`] of the dense weights, plus the experts' shared unpacking
    /// ([`expert_dequant_units`] passes) and their per-token unpacking.
    fn chunk_dequant(&self, n: f64, ex: &ExpertWork) -> f64 {
        let d = &self.dense_cycles;
        chunk_dequant_cycles(d.dequant, d.unshared, n, self.prefill_reuse) + ex.dequant + ex.unshared
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
    /// `t_arith = MACs / (efficiency × peak MAC rate)`. `work = overlap_time(t_mem, t_arith +
    /// t_dequant)` per phase (weights, attention). On a CPU every operator ends at a barrier
    /// the threads wait at, so `total = work + ops × per-op cost + per-token cost`; an
    /// accelerator's queue runs one kernel while the host launches the next, so its launches
    /// cost time only where they outlast the work: `total = max(work, ops × per-op cost) +
    /// per-token cost` (launch-bound where a step's many small kernels outlast their work).
    pub fn step_time(&self, w: &StepWork, efficiency: f64, per_token: bool) -> StepTime {
        self.step_time_at(w, efficiency, per_token, &Conditions::NOMINAL)
    }

    /// Time of a step's work under the simulator's run-time conditions: compute time and
    /// overheads scale with `1 / freq_scale`; the DRAM bandwidth is
    /// `min(dram × bandwidth_scale, per-core × threads × freq_scale)` (a slower core pulls
    /// proportionally less); bytes the cache model served take their measured time and only
    /// the rest goes to DRAM. Nominal conditions give [`CostPlan::step_time`] exactly.
    ///
    /// Where the unit hands weights to the CPU ([`HostPart`]), the step is the blend
    /// ([`StepTime::blend`]) of the whole step on the unit and on the CPU, by the share of its
    /// weight bytes (decode, and an operator timed alone: `ops == 0`) or multiply-adds (a
    /// prompt) the CPU takes; the fixed costs per token and per operator blend too (one graph
    /// run over two units; a hand-off between them is in the fitted figures, not a term of its
    /// own). A whole step (`ops > 0`) then pays the unit's token-mixer time
    /// ([`memwall_spec::UnitCosts::mixer_time_s`], scaled by `1 / freq_scale`).
    pub fn step_time_at(&self, w: &StepWork, efficiency: f64, per_token: bool, c: &Conditions) -> StepTime {
        let mut t = self.unit_step_time(w, efficiency, per_token, c);
        if let Some(h) = &self.host {
            let decode = per_token || w.ops == 0.0;
            let (share, eff) = match decode {
                true => (h.bytes_share, h.plan.arith_eff_decode),
                false => (h.macs_share, h.plan.arith_eff_prefill),
            };
            let cpu_work = StepWork { dequant_cycles: w.host_dequant_cycles, ..*w };
            t = t.blend(&h.plan.unit_step_time(&cpu_work, eff, per_token, c), share);
        }
        if w.ops > 0.0 {
            let mixers = self.mixer_s / c.freq_scale;
            t.t_overhead += mixers;
            t.total += mixers;
        }
        t
    }

    /// [`CostPlan::step_time_at`] with the whole step on the plan's unit.
    fn unit_step_time(&self, w: &StepWork, efficiency: f64, per_token: bool, c: &Conditions) -> StepTime {
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
            Some(peak) => {
                // Decode steps reach `compute_efficiency` of the peak, prefill chunks
                // `prefill_efficiency` (a matrix-matrix product), as on the CPU.
                let rate = peak * efficiency * c.freq_scale;
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
        let launches = w.ops * self.per_op_s / c.freq_scale;
        let per_token_s = if per_token { self.per_token_s / c.freq_scale } else { 0.0 };
        let work = t_weights + t_attention;
        let total = match self.accel_macs_per_s {
            Some(_) => work.max(launches) + per_token_s,
            None => work + launches + per_token_s,
        };
        StepTime {
            t_mem,
            t_arith: arith_w + arith_a,
            t_dequant: dequant_w,
            t_overhead: launches + per_token_s,
            t_storage: 0.0,
            t_attention,
            total,
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
        // A step handed partly to the CPU is linear where both parts are: the state holds
        // each part's regime.
        let regime = |p: &CostPlan, ctx: u64| {
            let t = p.unit_step_time(&p.decode_work(ctx), p.arith_eff_decode, true, &Conditions::NOMINAL);
            (t.from_cache, t.memory_bound)
        };
        let state =
            |ctx: u64| (ctx + 1 > self.window, regime(self, ctx), self.host.as_ref().map(|h| regime(&h.plan, ctx)));
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
    /// scales with tokens; dequantization is shared by `prefill_dequant_reuse` tokens, except
    /// for formats without a matrix-matrix kernel, unpacked for every token
    /// ([`chunk_dequant_cycles`]).
    pub fn prefill_work(&self, start: u64, n: u64) -> StepWork {
        let ex = self.expert_work(n);
        let (kv_read, _) = self.attention(start + n);
        // Σ over the chunk's queries of attended tokens: sum of an arithmetic sequence,
        // capped by the window for sliding layers.
        let attn = attended_sum(LayerKind::Full, start, n, self.window) * self.attn_full_macs
            + attended_sum(LayerKind::Sliding, start, n, self.window) * self.attn_sliding_macs;
        StepWork {
            weight_bytes: self.dense_bytes + ex.bytes,
            kv_bytes: kv_read + n as f64 * (self.kv_full_per_token + self.kv_sliding_per_token + self.state_bytes),
            activation_bytes: n as f64 * self.act_bytes,
            weight_macs: n as f64 * self.dense_elems + self.expert_weight_macs(n),
            attn_macs: attn + n as f64 * self.state_macs,
            arith_cycles: n as f64 * self.dense_cycles.arith + ex.arith,
            dequant_cycles: self.chunk_dequant(n as f64, &ex),
            ops: self.ops_per_token,
            host_dequant_cycles: self.host.as_ref().map_or(0.0, |h| h.plan.prefill_work(start, n).dequant_cycles),
        }
    }

    /// Prefill `prompt` tokens of every sequence in chunks of `ubatch`, after `history` tokens
    /// already in the KV cache (the chunks attend to them); returns (seconds, joules, the last
    /// chunk's time).
    pub fn prefill(&self, history: u64, prompt: u64, ubatch: u64) -> (f64, f64, Option<StepTime>) {
        let (mut t, mut joules) = (0.0, 0.0);
        let mut last = None;
        let mut start = history;
        let end = history + prompt;
        while start < end {
            let n = ubatch.min(end - start);
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
        energy_per_token_j(self.dram_bytes(w, t), self.pj_per_bit, self.compute_w, t.activity(), self.static_w, t.total)
    }
}
