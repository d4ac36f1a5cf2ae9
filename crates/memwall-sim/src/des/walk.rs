//! The cache walk of a decoded token: the experts the router picks, then each layer's dense
//! weights, its KV cache and its experts (and the output head) through the on-chip LRU
//! levels, and the experts through the DRAM expert cache of weights kept on flash.

use memwall_spec::{CacheMode, LayerKind, Routing, Scenario};
use rand::SeedableRng;
use rand::rngs::SmallRng;

use super::cache::LruBytes;
use super::routing::Router;
use crate::cost::formulas::attended_tokens;
use crate::cost::ops::decode_ops;
use crate::cost::plan::CostPlan;
use crate::cost::token::OpKind;

/// An object the caches hold: what a token reads, in its own id space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ObjectId {
    /// A layer's weights, its routed experts excepted.
    LayerWeights(usize),
    /// The tensors outside the layers read per token (output head, norms).
    Global,
    /// A layer's KV cache.
    Kv(usize),
    /// One routed expert of one MoE layer (`moe_layer` counts MoE layers only).
    Expert {
        /// MoE layer index.
        moe_layer: usize,
        /// Expert index in the layer.
        expert: usize,
    },
}

impl ObjectId {
    /// Dense index of the object for an LRU: layer weights `0..n`, global `n`, KV
    /// `n+1..2n+1`, experts after, `n_experts` per MoE layer.
    fn index(self, n_layers: usize, n_experts: usize) -> usize {
        match self {
            ObjectId::LayerWeights(l) => l,
            ObjectId::Global => n_layers,
            ObjectId::Kv(l) => n_layers + 1 + l,
            ObjectId::Expert { moe_layer, expert } => 2 * n_layers + 1 + moe_layer * n_experts + expert,
        }
    }

    /// Objects of a model of `n_layers` layers and `moe_layers` MoE layers of `n_experts`.
    fn count(n_layers: usize, moe_layers: usize, n_experts: usize) -> usize {
        2 * n_layers + 1 + moe_layers * n_experts
    }
}

/// The bytes of each cache object of one plan.
#[derive(Debug, Clone)]
struct Objects {
    /// Per layer: dense weight bytes.
    layer_bytes: Vec<f64>,
    /// Bytes of tensors outside the layers read per token (output head, norms).
    global_bytes: f64,
    /// Per layer: `Some(kind)` when it holds a KV cache.
    kv_kind: Vec<Option<LayerKind>>,
    /// Per layer: KV bytes per cached token (all sequences), 0 where it holds no cache.
    kv_token_bytes: Vec<f64>,
    window: u64,
    /// MoE layer index per layer.
    moe_of_layer: Vec<Option<usize>>,
    /// Bytes of one expert in one MoE layer.
    expert_bytes: f64,
    n_experts: usize,
    /// MoE layers.
    moe_layers: usize,
}

impl Objects {
    fn new(s: &Scenario, plan: &CostPlan) -> Self {
        let n = s.model.n_layers as usize;
        // The token's per-layer operations: each layer's weights but its routed experts
        // (walked one by one) form one object; the embedding row and the head another.
        let mut layer_bytes = vec![0.0; n];
        let mut global_bytes = 0.0;
        for op in decode_ops(plan, 0) {
            match (op.layer, op.kind) {
                (_, OpKind::Experts) => {}
                (Some(l), _) if (l as usize) < n => layer_bytes[l as usize] += op.weight_bytes,
                _ => global_bytes += op.weight_bytes,
            }
        }
        // KV and MoE layers as the token table lists them: the attention layers that own a
        // cache, with their bytes per cached token, and the layers with routed experts, in
        // the order the router numbers them.
        let table = &plan.table;
        let (k, v) = (plan.kv_formats.k, plan.kv_formats.v);
        let mut kv_kind = vec![None; n];
        let mut kv_token_bytes = vec![0.0; n];
        for a in table.attention.iter().filter(|a| a.owns_kv && (a.layer as usize) < n) {
            kv_kind[a.layer as usize] = Some(a.kind);
            kv_token_bytes[a.layer as usize] = a.kv_row_bytes(k, v) as f64 * plan.batch as f64;
        }
        let mut moe_of_layer = vec![None; n];
        let experts = table.weights.iter().filter(|o| o.kind == OpKind::Experts);
        for (i, l) in experts.filter_map(|o| o.layer).enumerate() {
            if (l as usize) < n {
                moe_of_layer[l as usize] = Some(i);
            }
        }
        let (n_experts, expert_bytes) = match plan.moe() {
            Some(m) if m.layers > 0 => (m.n_experts as usize, plan.expert_bytes() / m.layers as f64),
            _ => (0, 0.0),
        };
        Objects {
            layer_bytes,
            global_bytes,
            kv_kind,
            kv_token_bytes,
            window: plan.window,
            moe_of_layer,
            expert_bytes,
            n_experts,
            moe_layers: plan.moe().map_or(0, |m| m.layers as usize),
        }
    }

    fn n_layers(&self) -> usize {
        self.layer_bytes.len()
    }

    fn count(&self) -> usize {
        ObjectId::count(self.n_layers(), self.moe_layers, self.n_experts)
    }
}

/// One on-chip cache level.
#[derive(Debug, Clone)]
struct Level {
    lru: LruBytes,
    bandwidth_bps: f64,
}

/// What the walk of one decoded token found.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Replay {
    /// Bytes the on-chip caches served.
    pub cached_bytes: f64,
    /// Seconds those bytes took at the levels' bandwidths.
    pub cached_s: f64,
    /// Expert bytes read from flash (misses of the expert cache).
    pub expert_flash_bytes: f64,
    /// Distinct experts the step touched, summed over MoE layers (sampled routing only).
    pub distinct_experts: Option<f64>,
}

/// The caches a token walks through, and the router that picks its experts.
#[derive(Debug)]
pub(crate) struct CacheWalk {
    objects: Objects,
    levels: Vec<Level>,
    router: Option<Router>,
    expert_cache: Option<LruBytes>,
    rng: SmallRng,
    expert_ids: Vec<u32>,
    expert_offsets: Vec<usize>,
}

impl CacheWalk {
    /// The caches of scenario `s` under `plan`: the device's LRU levels (`sim.cache = lru`),
    /// a router (sampled routing), and the expert cache (`sim.storage.expert_cache_bytes`);
    /// the router draws from a generator seeded with `sim.seed`.
    pub fn new(s: &Scenario, plan: &CostPlan) -> Self {
        let cfg = &s.sim;
        let objects = Objects::new(s, plan);
        let mut rng = SmallRng::seed_from_u64(cfg.seed);
        let levels = if cfg.cache == CacheMode::Lru { cache_levels(s, objects.count()) } else { Vec::new() };
        let router = match (plan.moe(), cfg.routing) {
            (Some(m), Routing::Sampled { correlation }) if m.layers > 0 => Some(Router::new(
                m.n_experts,
                m.top_k,
                m.layers as usize,
                s.workload.batch,
                s.workload.routing_skew,
                correlation,
                &mut rng,
            )),
            _ => None,
        };
        let expert_cache =
            cfg.storage.expert_cache_bytes.map(|b| LruBytes::new(b as f64, objects.moe_layers * objects.n_experts));
        CacheWalk { objects, levels, router, expert_cache, rng, expert_ids: Vec::new(), expert_offsets: Vec::new() }
    }

    /// The model's weights changed (`s` under its new `plan`): new objects, and caches of the
    /// same sizes, empty. The router keeps its state.
    pub fn switch(&mut self, s: &Scenario, plan: &CostPlan) {
        self.objects = Objects::new(s, plan);
        if s.sim.cache == CacheMode::Lru {
            self.levels = cache_levels(s, self.objects.count());
        }
        if let Some(c) = &self.expert_cache {
            self.expert_cache = Some(LruBytes::new(c.capacity(), self.objects.moe_layers * self.objects.n_experts));
        }
    }

    /// Routed experts per MoE layer.
    pub fn n_experts(&self) -> usize {
        self.objects.n_experts
    }

    /// Bytes of one expert of one MoE layer.
    pub fn expert_bytes(&self) -> f64 {
        self.objects.expert_bytes
    }

    /// Whether on-chip caches are modelled.
    pub fn has_levels(&self) -> bool {
        !self.levels.is_empty()
    }

    /// The expert cache's capacity, when experts are kept on flash.
    pub fn expert_cache_bytes(&self) -> Option<f64> {
        self.expert_cache.as_ref().map(LruBytes::capacity)
    }

    /// Resize the expert cache to what memory leaves it.
    pub fn set_expert_cache_bytes(&mut self, bytes: f64) {
        if let Some(c) = &mut self.expert_cache {
            c.set_capacity(bytes);
        }
    }

    /// MoE layers the router routes (0 without one).
    pub fn routed_layers(&self) -> usize {
        self.router.as_ref().map_or(0, Router::layers)
    }

    /// Walk one decode step of `batch` sequences at context `ctx` (tokens held before it).
    pub fn replay(&mut self, ctx: u64, batch: u32) -> Replay {
        let o = &self.objects;
        let n = o.n_layers();
        // Draw experts (identities matter for the caches; counts for batches) into a flat
        // buffer: MoE layer m's experts are `ids[offsets[m]..offsets[m + 1]]`.
        let need_ids = !self.levels.is_empty() || self.expert_cache.is_some() || batch > 1;
        let (ids, offsets) = (&mut self.expert_ids, &mut self.expert_offsets);
        ids.clear();
        offsets.clear();
        if let Some(r) = &mut self.router
            && need_ids
        {
            offsets.push(0);
            r.step(&mut self.rng, |_, e| {
                ids.extend_from_slice(e);
                offsets.push(ids.len());
            });
        }
        let distinct_experts = (!offsets.is_empty()).then_some(ids.len() as f64);
        let mut expert_flash_bytes = 0.0;
        if let Some(c) = &mut self.expert_cache {
            for m in 0..offsets.len().saturating_sub(1) {
                for &e in &ids[offsets[m]..offsets[m + 1]] {
                    // The expert cache's own id space: experts only.
                    let slot = m * o.n_experts + e as usize;
                    expert_flash_bytes += o.expert_bytes - c.access(slot, o.expert_bytes);
                }
            }
        }
        if self.levels.is_empty() {
            return Replay { expert_flash_bytes, distinct_experts, ..Replay::default() };
        }
        let mut served = vec![0.0; self.levels.len()];
        let n_experts = o.n_experts;
        let mut touch = |levels: &mut [Level], id: ObjectId, bytes: f64| {
            let id = id.index(n, n_experts);
            let mut prev = 0.0;
            for (i, lv) in levels.iter_mut().enumerate() {
                let h = lv.lru.access(id, bytes);
                if h > prev {
                    served[i] += h - prev;
                    prev = h;
                }
            }
        };
        let ctx = ctx + 1;
        for l in 0..n {
            touch(&mut self.levels, ObjectId::LayerWeights(l), o.layer_bytes[l]);
            if let Some(kind) = o.kv_kind[l] {
                let kv = attended_tokens(kind, ctx, o.window) as f64 * o.kv_token_bytes[l];
                touch(&mut self.levels, ObjectId::Kv(l), kv);
            }
            if let Some(m) = o.moe_of_layer[l]
                && m + 1 < offsets.len()
            {
                for &e in &ids[offsets[m]..offsets[m + 1]] {
                    touch(&mut self.levels, ObjectId::Expert { moe_layer: m, expert: e as usize }, o.expert_bytes);
                }
            }
        }
        touch(&mut self.levels, ObjectId::Global, o.global_bytes);
        let cached_bytes: f64 = served.iter().sum();
        let cached_s: f64 = served.iter().zip(&self.levels).map(|(b, lv)| b / lv.bandwidth_bps).sum();
        Replay { cached_bytes, cached_s, expert_flash_bytes, distinct_experts }
    }
}

/// On-chip cache levels the threads use: per level, the caches of the clusters in use plus
/// the shared ones; usable capacity `size × cache_usable_fraction`, bandwidths summed.
fn cache_levels(s: &Scenario, objects: usize) -> Vec<Level> {
    let clusters: Vec<&str> = s.device.placement(s.threads()).iter().map(|(c, _)| c.name.as_str()).collect();
    let all: Vec<&str> = s.device.clusters.iter().map(|c| c.name.as_str()).collect();
    let mut levels: Vec<u32> = s.device.caches.iter().map(|c| c.level).collect();
    levels.sort_unstable();
    levels.dedup();
    levels
        .into_iter()
        .filter_map(|lv| {
            let used: Vec<_> = s
                .device
                .caches
                .iter()
                .filter(|c| {
                    c.level == lv && (clusters.contains(&c.shared_by.as_str()) || !all.contains(&c.shared_by.as_str()))
                })
                .collect();
            if used.is_empty() {
                return None;
            }
            let bytes: f64 = used.iter().map(|c| c.size_bytes as f64).sum::<f64>() * s.cost.cache_usable_fraction;
            let bw: f64 = used.iter().map(|c| c.bandwidth_gbps * 1e9).sum();
            Some(Level { lru: LruBytes::new(bytes, objects), bandwidth_bps: bw })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::ObjectId;

    #[test]
    fn object_ids_are_dense_and_distinct() {
        let (n, moe, e) = (3, 2, 4);
        let mut seen = Vec::new();
        for l in 0..n {
            seen.push(ObjectId::LayerWeights(l).index(n, e));
            seen.push(ObjectId::Kv(l).index(n, e));
        }
        seen.push(ObjectId::Global.index(n, e));
        for m in 0..moe {
            for x in 0..e {
                seen.push(ObjectId::Expert { moe_layer: m, expert: x }.index(n, e));
            }
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..ObjectId::count(n, moe, e)).collect::<Vec<_>>());
        assert_eq!(ObjectId::Global.index(n, e), 3);
        assert_eq!(ObjectId::Expert { moe_layer: 1, expert: 2 }.index(n, e), 2 * 3 + 1 + 4 + 2);
    }
}
