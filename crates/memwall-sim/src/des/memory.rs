//! The model's memory against the device and the background apps: what is resident, what
//! is paged from flash, how much is free, and the DRAM bandwidth other bus masters leave.

use memwall_spec::{ModelSpec, Scenario};

use crate::cost::plan::CostPlan;
use crate::footprint::{KvLayout, resident_weight_bytes, weights_memory_mapped};

/// Background apps' claims on memory and bandwidth, and the model's KV layout.
#[derive(Debug, Clone)]
pub(crate) struct Memory {
    /// Bytes background apps hold.
    pub bg_alloc: u64,
    /// Share of DRAM bandwidth background bus masters take.
    pub bg_share: f64,
    /// The model's KV-cache layers (a run changes weights, never the model).
    kv: KvLayout,
}

/// Where the model's memory stands.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Residency {
    /// Weight bytes held in DRAM.
    pub weights: u64,
    /// Bytes the model holds in DRAM.
    pub resident: u64,
    /// Fraction of the dense weights paged from flash on every use.
    pub paged: f64,
    /// Free memory, bytes.
    pub free: i64,
    /// Memory left for the model after its anonymous bytes.
    pub room: i64,
    /// DRAM the expert cache may use, bytes.
    pub expert_cap: f64,
}

impl Memory {
    /// No background apps yet, for `model`.
    pub fn new(model: &ModelSpec) -> Self {
        Memory { bg_alloc: 0, bg_share: 0.0, kv: KvLayout::of(model) }
    }

    /// The DRAM share the background bus masters leave the model: `max(1 − share, 0.05)`.
    pub fn bandwidth_share(&self) -> f64 {
        (1.0 - self.bg_share).max(0.05)
    }

    /// The memory picture of scenario `s` (plan `plan`, `n_experts` routed experts per MoE
    /// layer) with a KV cache of `kv_tokens`. Anonymous memory is the KV cache, recurrent
    /// state, compute buffers, runtime overhead, and the weights unless they are
    /// memory-mapped; mapped weights are page cache, which the kernel evicts under pressure
    /// (keeping `lmk_free_bytes` free) before the low-memory killer acts on anonymous memory.
    pub fn residency(&self, s: &Scenario, plan: &CostPlan, n_experts: usize, kv_tokens: u64) -> Residency {
        let wl = &s.workload;
        let fp = &plan.footprint;
        // At most the validated footprint's KV cache (kv_tokens <= capacity), so within 2^60.
        let kv = u64::try_from(self.kv.bytes(s.kv.k, s.kv.v, kv_tokens, wl.ubatch, wl.batch)).unwrap_or(u64::MAX);
        let mut anon = kv + fp.state + fp.compute + fp.overhead;
        // Weights wanted in DRAM: all of them, or the dense part plus the expert cache.
        let experts = plan.expert_bytes() * n_experts as f64;
        let (dense, cache) = match s.sim.storage.expert_cache_bytes {
            Some(c) => (fp.weights.saturating_sub(experts as u64), (c as f64).min(experts) as u64),
            None => (fp.weights, 0),
        };
        let mut file = dense + cache;
        let mapped = weights_memory_mapped(s);
        if !mapped {
            anon += file;
            file = 0;
        }
        let avail = s.device.available_bytes() as i64 - self.bg_alloc as i64;
        let room = avail - anon as i64;
        let resident_file =
            if s.sim.memory.pressure { resident_weight_bytes(file, room, s.sim.memory.lmk_free_bytes) } else { file };
        let (dense_resident, expert_cap) = if mapped {
            // The dense weights are touched every token; the page cache keeps them first.
            let d = resident_file.min(dense);
            (d, (resident_file - d) as f64)
        } else {
            (dense, cache as f64)
        };
        Residency {
            weights: if mapped { resident_file } else { dense + cache },
            resident: anon + resident_file,
            paged: if dense > 0 { 1.0 - dense_resident as f64 / dense as f64 } else { 0.0 },
            free: room - resident_file as i64,
            room,
            expert_cap,
        }
    }
}
