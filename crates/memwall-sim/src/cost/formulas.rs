//! The small physics of the cost model, one formula per function, each doc comment giving
//! it with its units: expert hits under routing, overlap of memory and compute, attended
//! tokens, CPU bandwidth and cycles per weight, attention cycles, storage reads, energy and
//! battery drain. The cost plan ([`crate::cost::plan`]) and both estimators call them.

use memwall_spec::{LayerKind, QuantFormat};

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
/// `dram_bytes × 8 × pJ/bit × 1e−12 + (compute_w × activity + static_w) × t_token`, with
/// `activity` the share of its full-load power the unit draws over the token
/// ([`activity_share`]). Every thread's core counts for the whole token (ggml's threads spin
/// between operators).
pub fn energy_per_token_j(
    dram_bytes: f64,
    pj_per_bit: f64,
    compute_w: f64,
    activity: f64,
    static_w: f64,
    t_token_s: f64,
) -> f64 {
    dram_bytes * 8.0 * pj_per_bit * 1e-12 + (compute_w * activity + static_w) * t_token_s
}

/// Share of its full-load dynamic power a compute unit draws while it waits on memory: 0.6.
/// Measured on one unit: an M4 Max GPU draws "~58–60W" in llama.cpp prefill (bound by its
/// arithmetic) and "~37W" in decode (bound by memory), 0.63 of it
/// (ggml-org/llama.cpp#22745, Stats.app); with the decode's arithmetic busy a tenth of the
/// time, the share while waiting is `(0.63 − 0.1) / (1 − 0.1) ≈ 0.6`. No measurement of the
/// kind was found for a CPU core or an NPU, so every unit takes this share.
pub const MEMORY_WAIT_POWER_SHARE: f64 = 0.6;

/// Share of its full-load dynamic power a unit draws over a step whose arithmetic
/// (multiply-adds and unpacking) keeps it busy `busy` of the time (clamped to 0–1):
/// `a + (1 − a) × busy`, `a` = [`MEMORY_WAIT_POWER_SHARE`]. A unit that waits on memory
/// retires fewer instructions and switches less, but its clocks, caches and spinning threads
/// still draw (an energy roofline: Choi, Bedard, Fowler and Vuduc, IPDPS 2013).
pub fn activity_share(busy: f64) -> f64 {
    let busy = if busy.is_nan() { 1.0 } else { busy.clamp(0.0, 1.0) };
    MEMORY_WAIT_POWER_SHARE + (1.0 - MEMORY_WAIT_POWER_SHARE) * busy
}

/// CPU cycles of decode attention on one core with a KV cache in `kv`,
/// `[per multiply-add, per KV byte read]`: the engine's measured cycles for that format
/// ([`memwall_spec::UnitCosts::attention_cycles`]), else f32 arithmetic at a quarter of the
/// int8 MAC rate, `[4 × dense_cycles_per_mac, 0]`.
pub fn attention_cycles(u: &memwall_spec::UnitCosts, kv: QuantFormat, dense_cycles_per_mac: f64) -> [f64; 2] {
    u.attention_cycles.get(&kv.to_string()).copied().unwrap_or([4.0 * dense_cycles_per_mac, 0.0])
}

/// Share of a battery storing `battery_j` joules that `power_w` watts drain in an hour, %:
/// `100 × power_w × 3600 s / battery_j`.
pub fn battery_pct_per_hour(power_w: f64, battery_j: f64) -> f64 {
    100.0 * power_w * 3600.0 / battery_j
}
