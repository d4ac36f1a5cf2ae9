//! Memory accounting: weight bytes per tensor (exact from block formats and shapes), KV cache
//! bytes under the per-layer rules, recurrent state, compute buffers and runtime overhead,
//! checked against what the device leaves the app.

use memwall_spec::bounds::{self, MAX_BYTES};
use memwall_spec::{
    LayerKind, ModelSpec, QuantFormat, Scenario, SpecError, Tensor, TensorClass, WeightQuant, Workload,
};

/// Tensors of one class whose rows forced llama.cpp's fallback from one format to another.
#[derive(Debug, Clone, PartialEq)]
pub struct Fallback {
    /// Tensor class.
    pub class: TensorClass,
    /// What the recipe asked for.
    pub requested: QuantFormat,
    /// What the tensors are stored as.
    pub stored: QuantFormat,
    /// Row length that does not fill whole blocks of `requested`.
    pub row_len: u64,
    /// How many tensors.
    pub tensors: u32,
}

impl std::fmt::Display for Fallback {
    /// `32 × ffn_down (rows of 1000): q4_K → f16`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} × {} (rows of {}): {} → {}",
            self.tensors,
            self.class.name(),
            self.row_len,
            self.requested,
            self.stored
        )
    }
}

/// Weight bytes of every tensor under a quantization mix.
#[derive(Debug, Clone)]
pub struct WeightBytes {
    /// `(tensor, format, bytes)` in GGUF order.
    pub tensors: Vec<(Tensor, QuantFormat, u64)>,
    /// Sum of all tensor bytes.
    pub total: u64,
    /// Bytes of tensors kept on flash instead of RAM (Gemma 3n's per-layer embeddings with
    /// `per_layer_embedding.on_flash`).
    pub on_flash: u64,
    /// Parameters.
    pub params: u64,
    /// The fallbacks taken, one entry per (class, requested, stored, row length).
    pub fallbacks: Vec<Fallback>,
    /// Tensors whose rows end mid-group of a generic group format (the last group is padded,
    /// and the padding is counted in `total`).
    pub padded_tensors: u32,
}

impl WeightBytes {
    /// Assign formats with the mix rules and count bytes.
    pub fn new(model: &ModelSpec, weights: &WeightQuant) -> Self {
        let assigned = weights.assign(model);
        let mut fallbacks: Vec<Fallback> = Vec::new();
        let mut padded_tensors = 0;
        for a in &assigned {
            let len = a.tensor.row_len;
            if let QuantFormat::Group(g) = a.format
                && !len.is_multiple_of(g.group as u64)
            {
                padded_tensors += 1;
            }
            if !a.fell_back() {
                continue;
            }
            let same = |f: &&mut Fallback| {
                f.class == a.tensor.class && f.requested == a.requested && f.stored == a.format && f.row_len == len
            };
            match fallbacks.iter_mut().find(same) {
                Some(f) => f.tensors += 1,
                None => fallbacks.push(Fallback {
                    class: a.tensor.class,
                    requested: a.requested,
                    stored: a.format,
                    row_len: len,
                    tensors: 1,
                }),
            }
        }
        let tensors: Vec<_> = assigned.iter().map(|a| (a.tensor, a.format, a.tensor.bytes_in(a.format))).collect();
        let total = tensors.iter().map(|x| x.2).sum();
        let params = tensors.iter().map(|x| x.0.elements()).sum();
        let on_flash = if model.per_layer_embedding.as_ref().is_some_and(|p| p.on_flash) {
            tensors.iter().filter(|x| x.0.class == TensorClass::PerLayerTokenEmbd).map(|x| x.2).sum()
        } else {
            0
        };
        WeightBytes { tensors, total, on_flash, params, fallbacks, padded_tensors }
    }

    /// Weight bytes held in RAM, `total − on_flash`.
    pub fn in_ram(&self) -> u64 {
        self.total - self.on_flash
    }

    /// Average bits per weight over the whole model, `8 × bytes / params`.
    pub fn bits_per_weight(&self) -> f64 {
        8.0 * self.total as f64 / self.params as f64
    }

    /// Bytes of the tensors of one class.
    pub fn class_bytes(&self, class: TensorClass) -> u64 {
        self.tensors.iter().filter(|x| x.0.class == class).map(|x| x.2).sum()
    }
}

/// GGUF alignment of tensor data (`general.alignment`, 32 bytes by default).
pub const GGUF_ALIGNMENT: u64 = 32;

/// Estimated size of a GGUF file holding these weights, bytes.
///
/// `Σ align32(tensor bytes) + header`, where the header is 24 B fixed, ~96 B of tensor info
/// per tensor and ~56 B of tokenizer metadata per vocabulary entry (token text ~8 B + length
/// 8 B + score 4 B + type 4 B, plus BPE merges of about the same count at ~32 B). The header
/// is an estimate; the tensor data is exact.
pub fn gguf_file_bytes(model: &ModelSpec, w: &WeightBytes) -> u64 {
    let data: u64 = w.tensors.iter().map(|x| x.2.div_ceil(GGUF_ALIGNMENT) * GGUF_ALIGNMENT).sum();
    data + 24 + 96 * w.tensors.len() as u64 + 56 * model.vocab
}

/// Bytes one cached token takes in one layer: `row_bytes_K(k_elems) + row_bytes_V(v_elems)`,
/// quantized formats with their block scales; a layer that caches no V (MLA) stores K only.
///
/// Example: 8 KV heads × 128 in f16: 2,048 + 2,048 = 4,096 B.
pub fn kv_row_bytes((k_elems, v_elems): (u64, u64), k: QuantFormat, v: QuantFormat) -> u64 {
    k.padded_bytes(k_elems) + if v_elems > 0 { v.padded_bytes(v_elems) } else { 0 }
}

/// Cells llama.cpp allocates for a sliding-window layer: `min(context, pad256(window + ubatch))`.
pub fn swa_cells(context: u64, window: u64, ubatch: u64) -> u64 {
    let span = window.saturating_add(ubatch);
    if span >= context { context } else { context.min(span.div_ceil(256) * 256) }
}

/// The KV-cache layers of a model grouped by kind and row size, formed once per model: the
/// per-point and per-token KV formulas walk a few groups instead of every layer.
#[derive(Debug, Clone, PartialEq)]
pub struct KvLayout {
    /// (kind, K and V elements per cached token, layers), in order of first appearance.
    groups: Vec<(LayerKind, (u64, u64), u64)>,
    /// Sliding window, tokens (`u64::MAX` without one).
    window: u64,
}

impl KvLayout {
    /// The layers that hold a KV cache ([`ModelSpec::kv_cache_layers`]) of `model`.
    pub fn of(model: &ModelSpec) -> Self {
        Self::from_layers(
            model.kv_cache_layers().into_iter().map(|(l, kind)| (kind, model.kv_row_elems_at(l))),
            model.sliding_window.unwrap_or(u64::MAX),
        )
    }

    /// Layers given as (kind, (K elements, V elements)) with the model's `window`.
    pub fn from_layers(layers: impl IntoIterator<Item = (LayerKind, (u64, u64))>, window: u64) -> Self {
        let mut groups: Vec<(LayerKind, (u64, u64), u64)> = Vec::new();
        for (kind, elems) in layers {
            match groups.iter_mut().find(|g| g.0 == kind && g.1 == elems) {
                Some(g) => g.2 += 1,
                None => groups.push((kind, elems, 1)),
            }
        }
        KvLayout { groups, window }
    }

    /// KV-cache bytes for `tokens` cached tokens and `batch` sequences:
    /// `Σ_kv layers cells(layer) × (row_bytes_K + row_bytes_V) × batch`, where a row holds one
    /// token of one layer (`n_kv_heads × head_dim` elements, or MLA's latent) and
    /// `cells = tokens` for full attention, `min(tokens, pad256(window + ubatch))` for sliding
    /// window ([`swa_cells`]). Quantized formats include their per-block scale bytes. Exact in
    /// `u128`, so no context can wrap it.
    pub fn bytes(&self, k: QuantFormat, v: QuantFormat, tokens: u64, ubatch: u64, batch: u32) -> u128 {
        let swa = swa_cells(tokens, self.window, ubatch) as u128;
        let per_group = |&(kind, elems, layers): &(LayerKind, (u64, u64), u64)| {
            kv_row_bytes(elems, k, v) as u128
                * layers as u128
                * if kind == LayerKind::Sliding { swa } else { tokens as u128 }
        };
        self.groups.iter().map(per_group).sum::<u128>() * batch as u128
    }

    /// Bytes one cached token takes summed over the layers of `kind`: `Σ row_bytes`.
    pub fn token_bytes(&self, kind: LayerKind, k: QuantFormat, v: QuantFormat) -> u64 {
        self.groups.iter().filter(|g| g.0 == kind).map(|&(_, elems, layers)| layers * kv_row_bytes(elems, k, v)).sum()
    }
}

/// KV-cache bytes of `model` for `tokens` cached tokens and `batch` sequences
/// ([`KvLayout::bytes`]).
///
/// Example: 48 layers × 8 KV heads × 128 × 4096 tokens × 2 B × 2 (K and V) = 805,306,368 B.
///
/// [`Footprint::of`] checks the result against [`MAX_BYTES`].
pub fn kv_cache_bytes(model: &ModelSpec, k: QuantFormat, v: QuantFormat, tokens: u64, ubatch: u64, batch: u32) -> u128 {
    KvLayout::of(model).bytes(k, v, tokens, ubatch, batch)
}

/// Recurrent state of the SSM and linear-attention layers, bytes: `Σ state_bytes × batch`
/// (exact in `u128`).
pub fn recurrent_state_bytes(model: &ModelSpec, batch: u32) -> u128 {
    model.layer_kinds().into_iter().map(|k| model.state_bytes(k) as u128).sum::<u128>() * batch as u128
}

/// What the compute buffer depends on in a model, formed once per model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ComputeShape {
    /// The widest FFN a token passes: the widest dense layer, or `top_k × expert_ffn +
    /// shared` when wider.
    ffn: u64,
    /// The most query heads of any layer.
    heads: u64,
    vocab: u64,
    hidden: u64,
}

impl ComputeShape {
    /// The shape of `model`.
    pub fn of(model: &ModelSpec) -> Self {
        let dense = (0..model.n_layers).map(|i| model.ffn_at(i)).max().unwrap_or(model.ffn);
        let ffn = match &model.moe {
            Some(m) => {
                let routed = m.top_k as u64 * m.expert_ffn;
                let shared = m.n_shared as u64 * m.shared_ffn.unwrap_or(m.expert_ffn);
                (routed + shared).max(dense)
            }
            None => dense,
        };
        let heads = (0..model.n_layers).map(|i| model.n_heads_at(i)).max().unwrap_or(model.n_heads);
        ComputeShape { ffn, heads, vocab: model.vocab, hidden: model.hidden }
    }

    /// Estimated compute buffer (activations and scratch) of llama.cpp's worst-case graph,
    /// bytes.
    ///
    /// `4 × u × (vocab + 4 × hidden + 2 × f) + attention scratch`, with `u = min(ubatch,
    /// context) × batch` tokens in flight, `f` the widest FFN a token passes (the widest dense
    /// layer, or `top_k × expert_ffn + shared`), and the attention scratch `4 × u × n_heads ×
    /// kv_tokens` without flash attention (the score matrix) or `4 × u × n_heads × 256` with
    /// it (one tile).
    ///
    /// Exact in `u128`.
    pub fn bytes(&self, w: &Workload) -> u128 {
        let u = w.ubatch.min(w.context_tokens) as u128 * w.batch as u128;
        let scores = if w.flash_attention { 256 } else { w.kv_tokens() };
        let row = self.vocab as u128 + 4 * self.hidden as u128 + 2 * self.ffn as u128;
        4 * u * row + 4 * u * self.heads as u128 * scores as u128
    }
}

/// Estimated compute buffer of `model` under `w`, bytes ([`ComputeShape::bytes`]).
pub fn compute_buffer_bytes(model: &ModelSpec, w: &Workload) -> u128 {
    ComputeShape::of(model).bytes(w)
}

/// A footprint component as `u64` bytes, or an error naming the workload field that drove it
/// past [`MAX_BYTES`].
fn component(bytes: u128, what: &str, field: &str, value: u64) -> Result<u64, SpecError> {
    u64::try_from(bytes).ok().filter(|b| *b <= MAX_BYTES).ok_or_else(|| {
        SpecError::invalid(field, value, format!("the {what} would take {bytes} bytes, above the plausible bound 2^60"))
    })
}

/// Bytes of memory-mapped weights the page cache keeps resident:
/// `clamp(room − keep_free, 0, weights)`, where `room` is what the device leaves the app
/// (RAM − OS − other apps) minus its anonymous memory (KV cache, state, buffers, runtime) and
/// `keep_free` the free memory the kernel keeps before it evicts page cache (the low-memory
/// killer's threshold, `sim.memory.lmk_free_bytes`, 300 MB by default). The rest stays on
/// flash and is read from storage on every use. The safety margin is a planning verdict
/// (`fits`), not physics: a design between the margin and the kernel's floor still runs from
/// DRAM.
///
/// Example: 20 GB of weights, 11.2 GB of room, 0.3 GB kept free: 10.9 GB resident, 45.5 %
/// paged.
pub fn resident_weight_bytes(weights: u64, room: i64, keep_free: u64) -> u64 {
    (room - keep_free as i64).clamp(0, weights as i64) as u64
}

/// Whether the weights are a memory-mapped file whose pages the kernel may evict and read
/// back from flash: `sim.memory.mmap_weights` (llama.cpp's default) on the CPU backend. GPU and
/// NPU runtimes hold weights in device allocations, which cannot page per token: a design
/// beyond memory there does not run (the simulator's low-memory killer ends it).
pub fn weights_memory_mapped(s: &Scenario) -> bool {
    s.sim.memory.mmap_weights && s.workload.backend == memwall_spec::Backend::Cpu
}

/// Memory footprint of a scenario against the device budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Footprint {
    /// Weights, bytes.
    pub weights: u64,
    /// KV cache, bytes.
    pub kv: u64,
    /// SSM / linear-attention state, bytes.
    pub state: u64,
    /// Compute buffers, bytes.
    pub compute: u64,
    /// Runtime overhead, bytes.
    pub overhead: u64,
    /// Sum of the above.
    pub total: u64,
    /// What the device leaves the model: its app limit less other apps and the margin, bytes.
    pub budget: i64,
    /// The margin kept free, bytes.
    pub margin: u64,
    /// `total <= budget`.
    pub fits: bool,
    /// `budget − total`: spare bytes when it fits, the shortfall (negative) when not.
    pub headroom: i64,
    /// Weight bytes that stay resident when the weights are memory-mapped
    /// ([`resident_weight_bytes`] with the kernel's free-memory floor): all of them when the
    /// design fits.
    pub resident_weights: u64,
}

impl Footprint {
    /// Share of the weights read from storage on every use, `1 − resident / weights`.
    pub fn paged_fraction(&self) -> f64 {
        if self.weights == 0 { 0.0 } else { 1.0 - self.resident_weights as f64 / self.weights as f64 }
    }

    /// Account every component of a scenario.
    pub fn of(s: &Scenario) -> Result<Self, SpecError> {
        let w = WeightBytes::new(&s.model, &s.weights);
        Self::with_weights(s, w.in_ram())
    }

    /// Account with precomputed weight bytes. Every component is formed exactly and must stay
    /// within [`MAX_BYTES`] (2^60); otherwise the error names the field that drove it there.
    pub fn with_weights(s: &Scenario, weights: u64) -> Result<Self, SpecError> {
        let wl = &s.workload;
        let kv = kv_cache_bytes(&s.model, s.kv.k, s.kv.v, wl.kv_tokens(), wl.ubatch, wl.batch);
        let compute = compute_buffer_bytes(&s.model, wl);
        Self::from_parts(s, weights, kv, recurrent_state_bytes(&s.model, wl.batch), compute)
    }

    /// Account with precomputed weight, KV-cache, recurrent-state and compute-buffer bytes
    /// (exact, as [`kv_cache_bytes`], [`recurrent_state_bytes`] and [`compute_buffer_bytes`]
    /// give them).
    pub fn from_parts(s: &Scenario, weights: u64, kv: u128, state: u128, compute: u128) -> Result<Self, SpecError> {
        let wl = &s.workload;
        let kv = component(kv, "KV cache", "workload.context_tokens", wl.kv_tokens())?;
        let state = component(state, "recurrent state", "workload.batch", wl.batch as u64)?;
        let compute = component(compute, "compute buffer", "workload.ubatch", wl.ubatch)?;
        let overhead = s.cost.runtime_overhead_bytes;
        bounds::bytes("cost.runtime_overhead_bytes", overhead)?;
        // Five components of at most 2^60 bytes each: the sum and the budget fit i64.
        let total = weights + kv + state + compute + overhead;
        let available = s.device.available_bytes() as i64;
        let budget = available - wl.margin_bytes as i64;
        let headroom = budget - total as i64;
        let anonymous = (kv + state + compute + overhead) as i64;
        Ok(Footprint {
            resident_weights: if weights_memory_mapped(s) {
                resident_weight_bytes(weights, available - anonymous, s.sim.memory.lmk_free_bytes)
            } else {
                weights
            },
            weights,
            kv,
            state,
            compute,
            overhead,
            total,
            budget,
            margin: wl.margin_bytes,
            fits: headroom >= 0,
            headroom,
        })
    }
}

/// Idealized weight bytes of `params` parameters at `bits` bits each, with no scale
/// overhead: `params × bits / 8`. (35e9 parameters at 16 bits = 70e9 B; at 4 bits = 17.5e9 B.)
pub fn ideal_weight_bytes(params: f64, bits: f64) -> f64 {
    params * bits / 8.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use memwall_spec::GgmlType;

    fn dense(layers: u32, hidden: u64, kv_heads: u64) -> ModelSpec {
        toml::from_str(&format!(
            "name = \"t\"\nn_layers = {layers}\nhidden = {hidden}\nn_heads = 48\nn_kv_heads = {kv_heads}\n\
             head_dim = 128\nffn = 16384\nvocab = 32000\nsliding_window = 1024"
        ))
        .unwrap()
    }

    const F16: QuantFormat = QuantFormat::Ggml(GgmlType::F16);

    #[test]
    fn seed_kv_figures_are_exact() {
        let m = dense(48, 6144, 8);
        assert_eq!(kv_cache_bytes(&m, F16, F16, 4096, 512, 1), 805_306_368);
        let mha = dense(48, 6144, 48);
        assert_eq!(kv_cache_bytes(&mha, F16, F16, 4096, 512, 1), 6 * 805_306_368);
        assert_eq!(kv_cache_bytes(&m, F16, F16, 32768, 512, 1), 6_442_450_944);
    }

    #[test]
    fn q8_0_kv_counts_scale_bytes() {
        // 1024 elements per row = 32 blocks × 34 B = 1088 B per token-layer, for K and V.
        let m = dense(1, 6144, 8);
        let q8 = QuantFormat::Ggml(GgmlType::Q8_0);
        assert_eq!(kv_cache_bytes(&m, q8, q8, 10, 512, 1), 10 * 2 * 1088);
        // K in q8_0 and V in f16: 1088 + 2048 per token.
        assert_eq!(kv_cache_bytes(&m, q8, F16, 10, 512, 1), 10 * (1088 + 2048));
    }

    #[test]
    fn fp8_kv_takes_one_byte_per_element_plus_row_scales() {
        // 1024 elements per row: 1024 B in fp8_e4m3 (its per-layer scale lies outside the
        // rows), 1024 + 4 B with one f32 scale per token and layer.
        let m = dense(1, 6144, 8);
        let e4m3: QuantFormat = "fp8_e4m3".parse().unwrap();
        assert_eq!(kv_cache_bytes(&m, e4m3, e4m3, 10, 512, 1), 10 * 2 * 1024);
        assert_eq!(2 * kv_cache_bytes(&m, e4m3, e4m3, 4096, 512, 2), kv_cache_bytes(&m, F16, F16, 4096, 512, 2));
        let pc: QuantFormat = "fp8_e5m2-pc".parse().unwrap();
        assert_eq!(kv_cache_bytes(&m, pc, e4m3, 10, 512, 1), 10 * (1028 + 1024));
    }

    #[test]
    fn sliding_window_caps_kv_growth() {
        let mut m = dense(4, 6144, 8);
        m.layer_pattern = vec![LayerKind::Sliding];
        let at_8k = kv_cache_bytes(&m, F16, F16, 8192, 512, 1);
        let at_32k = kv_cache_bytes(&m, F16, F16, 32768, 512, 1);
        assert_eq!(at_8k, at_32k);
        // window 1024 + ubatch 512 = 1536 cells (already a multiple of 256).
        assert_eq!(at_8k, 4 * 1536 * 2 * 2048);
    }

    #[test]
    fn state_of_a_mamba1_layer() {
        let m: ModelSpec = toml::from_str(
            "name = \"m\"\nn_layers = 2\nhidden = 1024\nn_heads = 1\nn_kv_heads = 1\nffn = 0\nvocab = 100\n\
             layer_pattern = [\"ssm\"]\n[ssm]\nkind = \"mamba1\"\nd_state = 16\nd_conv = 4\nd_inner = 2048",
        )
        .unwrap();
        // ((4 − 1) × 2048 + 2048 × 16) × 4 B = 155,648 B per layer.
        assert_eq!(recurrent_state_bytes(&m, 1), 2 * 155_648);
        assert_eq!(kv_cache_bytes(&m, F16, F16, 4096, 512, 1), 0);
    }

    #[test]
    fn kv_shared_layers_hold_no_cache_of_their_own() {
        // Gemma 3n style: 6 layers, pattern sliding ×2 then full; the last 3 layers read the
        // caches of layers 1 (sliding) and 2 (full). Owners: 0, 1 (sliding) and 2 (full).
        let mut m = dense(6, 6144, 8);
        m.layer_pattern = vec![LayerKind::Sliding, LayerKind::Sliding, LayerKind::Full];
        m.kv_shared_layers = Some(3);
        m.validate().unwrap();
        let owners: Vec<u32> = m.kv_cache_layers().iter().map(|l| l.0).collect();
        assert_eq!(owners, vec![0, 1, 2]);
        // 2 sliding layers × 1536 cells + 1 full × 4096, 2048 B per K or V row (8 × 128 f16).
        assert_eq!(kv_cache_bytes(&m, F16, F16, 4096, 512, 1), (2 * 1536 + 4096) * 2 * 2048);
        // A sharing layer needs an earlier owner of its kind.
        m.layer_kinds = Some(vec![
            LayerKind::Sliding,
            LayerKind::Sliding,
            LayerKind::Sliding,
            LayerKind::Full,
            LayerKind::Full,
            LayerKind::Full,
        ]);
        let e = m.validate().unwrap_err().to_string();
        assert!(e.contains("kv_shared_layers") && e.contains("layer 3"), "{e}");
    }

    #[test]
    fn per_layer_ffn_widths_and_short_conv_layers() {
        let m: ModelSpec = toml::from_str(
            "name = \"lfm\"\nn_layers = 3\nhidden = 1024\nn_heads = 8\nn_kv_heads = 2\nffn = 0\nvocab = 1000\n\
             tied_embeddings = true\nffn_per_layer = [4096, 0, 2048]\n\
             layer_kinds = [\"short_conv\", \"full\", \"short_conv\"]\n[short_conv]\nl_cache = 3",
        )
        .unwrap();
        m.validate().unwrap();
        // State: (3 − 1) × 1024 × 4 B per conv layer.
        assert_eq!(recurrent_state_bytes(&m, 1), 2 * 8192);
        // One attention layer: 2 KV heads × 128 × 2 B × 2 (K, V) per token.
        assert_eq!(kv_cache_bytes(&m, F16, F16, 100, 512, 1), 100 * 2 * 512);
        // Parameters by hand: embedding 1000 × 1024; per conv layer norm 1024 + in_proj
        // 1024 × 3072 + conv 3 × 1024 + out_proj 1024²; attention layer norm + q 1024² + k, v
        // 1024 × 256 each + o 1024²; FFNs 3 × 1024 × 4096 (+ norm) and 3 × 1024 × 2048 (+ norm);
        // output norm 1024.
        let conv = 1024 + 1024 * 3072 + 3 * 1024 + 1024 * 1024;
        let attn = 1024 + 2 * 1024 * 1024 + 2 * 1024 * 256;
        let ffn = (1024 + 3 * 1024 * 4096) + (1024 + 3 * 1024 * 2048);
        assert_eq!(m.params().total, 1000 * 1024 + 2 * conv + attn + ffn + 1024);
    }

    #[test]
    fn per_layer_heads_kv_heads_and_head_dims() {
        let m: ModelSpec = toml::from_str(
            "name = \"pl\"\nn_layers = 2\nhidden = 512\nn_heads = 4\nn_kv_heads = 1\nffn = 0\nvocab = 100\n\
             tied_embeddings = true\nn_heads_per_layer = [4, 8]\nn_kv_heads_per_layer = [1, 2]\n\
             head_dim_per_layer = [64, 128]",
        )
        .unwrap();
        m.validate().unwrap();
        // Per token: layer 0 1 × 64 × 2 B for K and for V = 256 B; layer 1 2 × 128 × 2 × 2 = 1024 B.
        assert_eq!(kv_cache_bytes(&m, F16, F16, 10, 512, 1), 10 * (256 + 1024));
        assert_eq!((m.attention_macs_at(0), m.attention_macs_at(1)), (4 * 2 * 64, 8 * 2 * 128));
        // Projections: q, k, v, o of each layer by hand, plus norms and the embedding.
        let l0 = 512 * 256 + 2 * 512 * 64 + 256 * 512;
        let l1 = 512 * 1024 + 2 * 512 * 256 + 1024 * 512;
        assert_eq!(m.params().total, 100 * 512 + l0 + l1 + 2 * 512 + 512);
        // A layer whose KV heads do not divide its query heads is refused, naming the layer.
        let mut bad = m.clone();
        bad.n_kv_heads_per_layer = Some(vec![1, 3]);
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("n_kv_heads_per_layer[1]"), "{e}");
    }

    #[test]
    fn per_layer_embeddings_on_flash_take_no_ram() {
        let text = "name = \"ple\"\nn_layers = 2\nhidden = 512\nn_heads = 4\nn_kv_heads = 1\nffn = 1024\n\
                    vocab = 1000\ntied_embeddings = true\n[per_layer_embedding]\nwidth = 64\nvocab = 800\n";
        let mut m: ModelSpec = toml::from_str(text).unwrap();
        m.validate().unwrap();
        let f16 = WeightQuant::new(memwall_spec::Mix::Pure(F16));
        let w = WeightBytes::new(&m, &f16);
        // The table: 800 rows × (2 layers × 64) f16 = 204,800 B; held in RAM by default.
        assert_eq!(w.class_bytes(TensorClass::PerLayerTokenEmbd), 800 * 128 * 2);
        assert_eq!(w.on_flash, 0);
        m.per_layer_embedding.as_mut().unwrap().on_flash = true;
        let w2 = WeightBytes::new(&m, &f16);
        assert_eq!(w2.total, w.total);
        assert_eq!(w2.in_ram(), w.total - 800 * 128 * 2);
    }

    #[test]
    fn group_formats_pad_instead_of_falling_back_and_fallbacks_are_reported() {
        // int4-g48 on a 4096-wide model: rows of 4096 (85 full groups + 16 weights) and of
        // 16384 (341 groups + 16) pad their last group; nothing becomes F16.
        let m = dense(1, 4096, 8);
        let w = WeightBytes::new(&m, &WeightQuant::new("int4-g48".parse().unwrap()));
        let q = w.tensors.iter().find(|x| x.0.class == TensorClass::AttnQ).unwrap();
        assert_eq!(q.1.to_string(), "int4-g48");
        // 6144 rows × 86 groups × 26 B.
        assert_eq!(q.2, 6144 * 86 * 26);
        assert!(w.fallbacks.is_empty());
        assert!(w.padded_tensors >= 5, "{}", w.padded_tensors);
        // Q4_K on a 1000-wide FFN: ffn_down falls back to F16 and says so.
        let mut m = dense(1, 4096, 8);
        m.ffn = 1000;
        let w = WeightBytes::new(&m, &WeightQuant::new("pure-q4_K".parse().unwrap()));
        assert_eq!(w.fallbacks.len(), 1);
        let f = &w.fallbacks[0];
        assert_eq!(
            (f.class, f.requested.to_string(), f.stored.to_string(), f.row_len, f.tensors),
            (TensorClass::FfnDown, "q4_K".into(), "f16".into(), 1000, 1)
        );
    }

    #[test]
    fn the_page_cache_keeps_what_is_left_above_the_floor() {
        // 20 GB of weights, 11.2 GB of room, 0.3 GB kept free: 10.9 GB resident.
        assert_eq!(resident_weight_bytes(20_000_000_000, 11_200_000_000, 300_000_000), 10_900_000_000);
        // Room to spare: everything resident; no room: nothing.
        assert_eq!(resident_weight_bytes(5, 100, 10), 5);
        assert_eq!(resident_weight_bytes(5, -100, 10), 0);
    }

    #[test]
    fn per_channel_weights_hold_one_scale_per_row() {
        let m = dense(1, 4096, 8);
        let w = WeightBytes::new(&m, &WeightQuant::new("int8-pc".parse().unwrap()));
        let q = w.tensors.iter().find(|x| x.0.class == TensorClass::AttnQ).unwrap();
        // 6144 rows of 4096 int8 weights + one f16 scale each.
        assert_eq!(q.2, 6144 * (4096 + 2));
    }

    #[test]
    fn ffn_rows_that_do_not_fill_k_blocks_fall_back() {
        // A 1000-wide FFN: ffn_down rows of 1000 elements cannot hold Q4_K (256) nor Q5_0 (32):
        // llama.cpp stores them as F16.
        let mut m = dense(1, 4096, 8);
        m.ffn = 1000;
        let w = WeightBytes::new(&m, &WeightQuant::new("pure-q4_K".parse().unwrap()));
        let down = w.tensors.iter().find(|x| x.0.class == TensorClass::FfnDown).unwrap();
        assert_eq!(down.1, F16);
        assert_eq!(down.2, 4096 * 1000 * 2);
    }
}
