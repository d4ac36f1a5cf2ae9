//! One description of a token: the table of a design's operators, built once from its
//! tensors. The estimator's per-token sums ([`super::plan::TensorPlan`]) and the simulator's
//! per-layer operations ([`super::ops::decode_ops`]) both come from it, so a cost added to an
//! operator (a calibrated term) is added in one place.
//!
//! Each weight operator has, per sequence and independent of the context, the weight bytes it
//! reads, its multiply-adds and its CPU arithmetic and dequantization cycles on the design's
//! fastest cluster; routed experts are costed per expert (the step multiplies by the experts
//! it touches). Attention and recurrent-state operators are listed with what their cost
//! depends on (the layer's kind, whether it owns its KV cache, its state bytes); the context
//! is applied when a step is costed.

use memwall_spec::{LayerKind, QuantFormat, Scenario, TensorClass};
use serde::Serialize;

use crate::footprint::WeightBytes;

/// What an operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    /// One row of the embedding table.
    Embedding,
    /// Q, K, V and output projections (with their norms and biases; MLA's low-rank ones).
    AttnProjections,
    /// Scores and weighted values over the KV held (KV read and the new token's write).
    Attention,
    /// SSM or linear-attention projections.
    RecurrentProjections,
    /// The recurrent state read, update and write.
    StateUpdate,
    /// Dense FFN (gate, up, down, norm).
    Ffn,
    /// MoE router logits.
    Router,
    /// The routed experts a step touches.
    Experts,
    /// Shared experts.
    SharedExperts,
    /// Final norm and output projection.
    LmHead,
}

impl OpKind {
    /// Its name, as serialized (`attn_projections`, `lm_head`).
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Embedding => "embedding",
            OpKind::AttnProjections => "attn_projections",
            OpKind::Attention => "attention",
            OpKind::RecurrentProjections => "recurrent_projections",
            OpKind::StateUpdate => "state_update",
            OpKind::Ffn => "ffn",
            OpKind::Router => "router",
            OpKind::Experts => "experts",
            OpKind::SharedExperts => "shared_experts",
            OpKind::LmHead => "lm_head",
        }
    }
}

/// The operator a tensor belongs to.
pub fn kind_of(class: TensorClass) -> OpKind {
    use TensorClass::*;
    match class {
        TokenEmbd | PerLayerTokenEmbd => OpKind::Embedding,
        Output | OutputNorm => OpKind::LmHead,
        FfnNorm | FfnGate | FfnUp | FfnDown => OpKind::Ffn,
        FfnGateInp => OpKind::Router,
        FfnGateExps | FfnUpExps | FfnDownExps => OpKind::Experts,
        FfnGateShexp | FfnUpShexp | FfnDownShexp => OpKind::SharedExperts,
        SsmIn | SsmConv1d | SsmConv1dBias | SsmX | SsmDt | SsmDtBias | SsmA | SsmD | SsmNorm | SsmOut | LinearQ
        | LinearK | LinearV | LinearGate | LinearBeta | LinearOut => OpKind::RecurrentProjections,
        _ => OpKind::AttnProjections,
    }
}

/// A weight operator's cost per sequence (routed experts: of one expert).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WeightOp {
    /// Layer, `None` for the embedding and the head.
    pub layer: Option<u32>,
    /// What it does.
    pub kind: OpKind,
    /// Weight bytes read.
    pub weight_bytes: f64,
    /// Multiply-adds (one per weight element the token multiplies).
    pub macs: f64,
    /// CPU arithmetic cycles on one core of the fastest cluster.
    pub arith_cycles: f64,
    /// CPU dequantization cycles on one core of the fastest cluster.
    pub dequant_cycles: f64,
    /// The part of `dequant_cycles` in formats the engine unpacks again for every token of a
    /// prefill chunk or batch ([`memwall_spec::UnitCosts::gemm_formats`]).
    pub unshared_dequant_cycles: f64,
}

/// An attention layer: what its cost depends on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AttentionOp {
    /// Layer.
    pub layer: u32,
    /// Full or sliding attention.
    pub kind: LayerKind,
    /// Whether the layer owns its KV cache (with cross-layer sharing, only the first of a
    /// group does; the others read it without holding it).
    pub owns_kv: bool,
    /// K and V elements this layer caches per token ([`memwall_spec::ModelSpec::kv_row_elems_at`]).
    pub kv_elems: (u64, u64),
    /// Multiply-adds per attended token and sequence ([`memwall_spec::ModelSpec::attention_macs_at`]).
    pub macs: f64,
}

impl AttentionOp {
    /// Bytes one cached token takes in this layer with K in `k` and V in `v` (quantized
    /// formats with their block scales).
    pub fn kv_row_bytes(&self, k: QuantFormat, v: QuantFormat) -> u64 {
        crate::footprint::kv_row_bytes(self.kv_elems, k, v)
    }
}

/// A recurrent layer's state update.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StateOp {
    /// Layer.
    pub layer: u32,
    /// State bytes read and written per sequence.
    pub bytes: f64,
}

/// The operators of a design's token.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenTable {
    /// Weight operators, one per (layer, kind), in tensor order.
    pub weights: Vec<WeightOp>,
    /// Attention layers.
    pub attention: Vec<AttentionOp>,
    /// Recurrent state updates.
    pub state: Vec<StateOp>,
    /// Per format and row count of the weight matrices, what a token reads and multiplies in
    /// them: `(format, rows, bytes, multiply-adds)`, routed experts at `top_k` experts a token
    /// (the share of a step a unit hands to the CPU, [`super::plan::HostPart`]). `rows` is what
    /// a unit's row limit ([`memwall_spec::UnitCosts::max_rows`]) judges: a matrix product's
    /// output rows, and 0 for an embedding lookup and routed experts, which ggml runs as other
    /// operators (`get_rows`, `mul_mat_id`) that the limit does not cover.
    pub per_format: Vec<(QuantFormat, u64, f64, f64)>,
}

/// Sums of weight operators.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct WeightSums {
    /// Weight bytes.
    pub bytes: f64,
    /// Multiply-adds.
    pub macs: f64,
    /// Arithmetic cycles.
    pub arith_cycles: f64,
    /// Dequantization cycles.
    pub dequant_cycles: f64,
    /// The part of them unpacked again for every token of a chunk.
    pub unshared_dequant_cycles: f64,
}

impl TokenTable {
    /// The table of `s`'s model under `weights` (the scenario must be valid). `cycles(f)` gives
    /// the (arithmetic, dequantization) cycles per weight of format `f` on one core of the
    /// fastest cluster, and whether a chunk's tokens share one unpacking of it.
    pub fn new(s: &Scenario, weights: &WeightBytes, cycles: &dyn Fn(QuantFormat) -> (f64, f64, bool)) -> Self {
        let m = &s.model;
        let mut ops: Vec<WeightOp> = Vec::with_capacity(6 * m.n_layers as usize + 2);
        let mut per_format: Vec<(QuantFormat, u64, f64, f64)> = Vec::new();
        let top_k = m.moe.as_ref().map_or(1.0, |mo| mo.top_k as f64);
        for (t, f, bytes) in &weights.tensors {
            let kind = kind_of(t.class);
            let bytes = *bytes as f64;
            let el = t.elements() as f64;
            let (wb, macs) = match kind {
                OpKind::Experts => (bytes / t.experts as f64, el / t.experts as f64),
                // One row of an untied (or per-layer) embedding is looked up per token.
                OpKind::Embedding if !m.tied_embeddings || t.class != TensorClass::TokenEmbd => {
                    (bytes / t.rows as f64, 0.0)
                }
                _ if t.is_vector() => (bytes, 0.0),
                _ => (bytes, el),
            };
            // A tied embedding is read whole as the LM head.
            let kind = if t.class == TensorClass::TokenEmbd && m.tied_embeddings { OpKind::LmHead } else { kind };
            if !t.is_vector() {
                let uses = if kind == OpKind::Experts { top_k } else { 1.0 };
                let rows = if matches!(kind, OpKind::Experts | OpKind::Embedding) { 0 } else { t.rows };
                match per_format.iter_mut().find(|x| x.0 == *f && x.1 == rows) {
                    Some(x) => (x.2, x.3) = (x.2 + uses * wb, x.3 + uses * macs),
                    None => per_format.push((*f, rows, uses * wb, uses * macs)),
                }
            }
            let (a, q, shared) = if macs > 0.0 { cycles(*f) } else { (0.0, 0.0, true) };
            let op = WeightOp {
                layer: t.layer,
                kind,
                weight_bytes: wb,
                macs,
                arith_cycles: macs * a,
                dequant_cycles: macs * q,
                unshared_dequant_cycles: if shared { 0.0 } else { macs * q },
            };
            match ops.iter_mut().rev().find(|o| o.layer == t.layer && o.kind == kind) {
                Some(o) => {
                    o.weight_bytes += op.weight_bytes;
                    o.macs += op.macs;
                    o.arith_cycles += op.arith_cycles;
                    o.dequant_cycles += op.dequant_cycles;
                    o.unshared_dequant_cycles += op.unshared_dequant_cycles;
                }
                None => ops.push(op),
            }
        }
        let kinds = m.layer_kinds();
        let owners = m.kv_cache_layers();
        let attention = kinds
            .iter()
            .enumerate()
            .filter(|(_, k)| matches!(k, LayerKind::Full | LayerKind::Sliding))
            .map(|(l, k)| AttentionOp {
                layer: l as u32,
                kind: *k,
                owns_kv: owners.iter().any(|(o, _)| *o == l as u32),
                kv_elems: m.kv_row_elems_at(l as u32),
                macs: m.attention_macs_at(l as u32) as f64,
            })
            .collect();
        let state = kinds
            .iter()
            .enumerate()
            .map(|(l, k)| StateOp { layer: l as u32, bytes: 2.0 * m.state_bytes(*k) as f64 })
            .filter(|s| s.bytes > 0.0)
            .collect();
        TokenTable { weights: ops, attention, state, per_format }
    }

    /// Sums over the weight operators that `keep` selects.
    pub fn sum(&self, keep: impl Fn(&WeightOp) -> bool) -> WeightSums {
        self.weights.iter().filter(|o| keep(o)).fold(WeightSums::default(), |s, o| WeightSums {
            bytes: s.bytes + o.weight_bytes,
            macs: s.macs + o.macs,
            arith_cycles: s.arith_cycles + o.arith_cycles,
            dequant_cycles: s.dequant_cycles + o.dequant_cycles,
            unshared_dequant_cycles: s.unshared_dequant_cycles + o.unshared_dequant_cycles,
        })
    }

    /// Layers with routed experts.
    pub fn moe_layers(&self) -> u64 {
        self.weights.iter().filter(|o| o.kind == OpKind::Experts).count() as u64
    }
}
