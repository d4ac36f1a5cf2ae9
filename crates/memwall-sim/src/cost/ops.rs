//! A decoded token as per-layer operations: the embedding lookup, each layer's attention
//! projections, attention over the KV it holds (or the SSM / linear-attention state update),
//! its FFN or MoE router, routed and shared experts, and the LM head, each with its weight
//! bytes, KV/state bytes and multiply-adds.
//!
//! The operations are the design's [`super::token::TokenTable`] at a given context, the
//! same table the estimator's [`CostPlan::decode_work`] sums (so they agree exactly, tested);
//! the simulator walks them layer by layer through its caches, and `memwall estimate --ops`
//! times each alone ([`op_times`]).

use serde::Serialize;

use super::formulas::attended_tokens;
use super::plan::{CostPlan, chunk_dequant_cycles, expert_dequant_units};
use super::step::{Conditions, StepTime, StepWork};
use super::token::OpKind;

/// One operation of a decode step (all sequences of the batch).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Op {
    /// Layer, `None` for the embedding and the head.
    pub layer: Option<u32>,
    /// What it does.
    pub kind: OpKind,
    /// Weight bytes read.
    pub weight_bytes: f64,
    /// KV-cache or recurrent-state bytes read and written.
    pub kv_bytes: f64,
    /// Multiply-adds.
    pub macs: f64,
    /// CPU arithmetic cycles of its weight multiply-adds (per core of the fastest cluster).
    pub arith_cycles: f64,
    /// CPU dequantization cycles of its weights.
    pub dequant_cycles: f64,
}

/// The operations of decoding one token per sequence with `ctx` tokens already cached.
///
/// Weights: every tensor's bytes (the embedding: one row, unless tied to the head); routed
/// experts: the expected distinct experts of the step (the estimator's formula) × one
/// expert's bytes in that layer. KV: per KV-owning layer, `attention_kv_reads ×
/// attended(ctx + 1) + 1` tokens × bytes per token (the cache read, repeated by engines that
/// re-read it per query head, and the new token's write); recurrent layers: state read + write. Multiply-adds: one per weight
/// element and sequence (experts: `top_k` per sequence), attention `attended × per-layer
/// MACs`, state updates `3 × state bytes / 8`.
pub fn decode_ops(plan: &CostPlan, ctx: u64) -> Vec<Op> {
    let t = &plan.table;
    let b = plan.batch as f64;
    let (distinct, top_k) = match plan.moe {
        Some(m) if m.layers > 0 => (plan.decode_distinct, m.top_k as f64),
        _ => (0.0, 0.0),
    };
    let mut ops: Vec<Op> = Vec::with_capacity(t.weights.len() + t.attention.len() + t.state.len() + 1);
    let blank = |layer, kind| Op {
        layer,
        kind,
        weight_bytes: 0.0,
        kv_bytes: 0.0,
        macs: 0.0,
        arith_cycles: 0.0,
        dequant_cycles: 0.0,
    };
    ops.push(blank(None, OpKind::Embedding));
    // As the estimator's decode step: `prefill_dequant_reuse` sequences (of an expert's
    // sequences, for routed experts) share one dequantization, except in formats without a
    // matrix kernel (none off the CPU).
    for w in &t.weights {
        let unshared = if plan.on_cpu { w.unshared_dequant_cycles } else { 0.0 };
        let (weight_bytes, macs, arith, dequant) = match w.kind {
            OpKind::Experts => (
                distinct * w.weight_bytes,
                b * top_k * w.macs,
                b * top_k * w.arith_cycles,
                expert_dequant_units(b * top_k, distinct, plan.prefill_reuse) * (w.dequant_cycles - unshared)
                    + b * top_k * unshared,
            ),
            _ => (
                w.weight_bytes,
                b * w.macs,
                b * w.arith_cycles,
                chunk_dequant_cycles(w.dequant_cycles, unshared, b, plan.prefill_reuse),
            ),
        };
        let at = match ops.iter().position(|o| o.layer == w.layer && o.kind == w.kind) {
            Some(i) => i,
            None => {
                ops.push(blank(w.layer, w.kind));
                ops.len() - 1
            }
        };
        let o = &mut ops[at];
        o.weight_bytes += weight_bytes;
        o.macs += macs;
        o.arith_cycles += arith;
        o.dequant_cycles += dequant;
        // Attention follows its layer's projections.
        if w.kind == OpKind::AttnProjections
            && let Some(a) = t.attention.iter().find(|a| Some(a.layer) == w.layer)
            && !ops.iter().any(|o| o.layer == w.layer && o.kind == OpKind::Attention)
        {
            let attended = attended_tokens(a.kind, ctx + 1, plan.window) as f64;
            let row = a.kv_row_bytes(plan.kv_formats.k, plan.kv_formats.v) as f64;
            let kv = if a.owns_kv { (plan.kv_reads * attended + 1.0) * row } else { 0.0 };
            ops.push(Op { kv_bytes: b * kv, macs: b * attended * a.macs, ..blank(Some(a.layer), OpKind::Attention) });
        }
    }
    for st in &t.state {
        ops.push(Op {
            kv_bytes: b * st.bytes,
            macs: b * 3.0 * st.bytes / 8.0,
            ..blank(Some(st.layer), OpKind::StateUpdate)
        });
    }
    ops.retain(|o| o.weight_bytes > 0.0 || o.kv_bytes > 0.0 || o.macs > 0.0);
    ops
}

/// Each operation of decoding one token per sequence at context `ctx`, timed alone as the
/// estimator times a decode step ([`CostPlan::step_time_at`] at the decode efficiency)
/// without the per-operator and per-token overheads: where the token's time goes. Its bytes
/// come from where the whole token's come from (DRAM, unless the token's working set fits
/// the cache), so the operators' memory and arithmetic terms add up exactly to the step's;
/// within a phase the step overlaps memory and arithmetic over all its operators at once, so
/// their totals add up to the step's only where every operator is bound by the same term.
/// Where the unit hands some weights to the CPU ([`super::plan::HostPart`]), each operator
/// is timed as the step's blend of the two units, not on the unit that runs it.
pub fn op_times(plan: &CostPlan, ctx: u64) -> Vec<(Op, StepTime)> {
    let whole = plan.step_time(&plan.decode_work(ctx), plan.arith_eff_decode, true);
    let c = if whole.from_cache {
        Conditions::NOMINAL
    } else {
        Conditions { cached: Some((0.0, 0.0)), ..Conditions::NOMINAL }
    };
    decode_ops(plan, ctx)
        .into_iter()
        .map(|o| {
            let t = plan.step_time_at(&op_work(&o), plan.arith_eff_decode, false, &c);
            (o, t)
        })
        .collect()
}

/// The work of one operation as a step of its own: its bytes, its multiply-adds (weight
/// operators' as weight work, attention's and state updates' as attention work) and its
/// cycles, with no per-operator or per-token overhead.
pub fn op_work(o: &Op) -> StepWork {
    let weights = o.weight_bytes > 0.0 && o.kv_bytes == 0.0;
    StepWork {
        weight_bytes: o.weight_bytes,
        kv_bytes: o.kv_bytes,
        activation_bytes: 0.0,
        weight_macs: if weights { o.macs } else { 0.0 },
        attn_macs: if weights { 0.0 } else { o.macs },
        dequant_cycles: o.dequant_cycles,
        arith_cycles: o.arith_cycles,
        ops: 0.0,
        host_dequant_cycles: o.dequant_cycles,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memwall_spec::{KvQuant, Scenario, WeightQuant};

    /// The phone of the estimator's physics tests.
    const DEVICE: &str = include_str!("../../tests/data/test-phone.toml");

    const DENSE: &str = "name = \"dense\"\nn_layers = 4\nhidden = 512\nn_heads = 8\nn_kv_heads = 2\nhead_dim = 64\nffn = 1536\nvocab = 4096\nsliding_window = 64\nlayer_pattern = [\"sliding\", \"full\"]\n";
    const MOE: &str = "name = \"moe\"\nn_layers = 3\nhidden = 512\nn_heads = 8\nn_kv_heads = 2\nhead_dim = 64\nffn = 1536\nvocab = 4096\ntied_embeddings = true\n[moe]\nn_experts = 16\ntop_k = 2\nn_shared = 1\nexpert_ffn = 256\nshared_ffn = 256\n";
    const HYBRID: &str = "name = \"hybrid\"\nn_layers = 4\nhidden = 512\nn_heads = 8\nn_kv_heads = 2\nhead_dim = 64\nffn = 1536\nvocab = 4096\nlayer_pattern = [\"ssm\", \"ssm\", \"full\"]\n[ssm]\nkind = \"mamba2\"\nd_inner = 1024\nd_state = 64\nd_conv = 4\nn_groups = 1\nn_heads = 16\n";

    fn scenario(model: &str, batch: u32) -> Scenario {
        let mut s = Scenario {
            model: toml::from_str(model).unwrap(),
            device: toml::from_str(DEVICE).unwrap(),
            weights: WeightQuant::new("Q4_K_M".parse().unwrap()),
            kv: KvQuant::default(),
            workload: toml::from_str("prompt_tokens = 100\ngen_tokens = 20\ncontext_tokens = 4096").unwrap(),
            cost: Default::default(),
            engine: Default::default(),
            assume_defaults: false,
            sim: Default::default(),
        };
        s.workload.batch = batch;
        s
    }

    #[test]
    fn operations_sum_to_the_estimators_token() {
        for (model, batch, kv_reads) in
            [(DENSE, 1, 1.0), (DENSE, 3, 1.0), (DENSE, 3, 4.0), (MOE, 1, 1.0), (MOE, 4, 2.5), (HYBRID, 1, 4.0)]
        {
            let mut s = scenario(model, batch);
            s.cost.attention_kv_reads = Some(kv_reads);
            s.validate().unwrap();
            let plan = CostPlan::new(&s).unwrap();
            for ctx in [0, 10, 63, 64, 500] {
                let ops = decode_ops(&plan, ctx);
                let w = plan.decode_work(ctx);
                let sum = |f: fn(&Op) -> f64| ops.iter().map(f).sum::<f64>();
                let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
                assert!(close(sum(|o| o.weight_bytes), w.weight_bytes), "{model} weights");
                assert!(close(sum(|o| o.kv_bytes), w.kv_bytes), "{model} kv {} vs {}", sum(|o| o.kv_bytes), w.kv_bytes);
                assert!(close(sum(|o| o.macs), w.weight_macs + w.attn_macs), "{model} macs");
                assert!(close(sum(|o| o.arith_cycles), w.arith_cycles), "{model} arithmetic cycles");
                assert!(close(sum(|o| o.dequant_cycles), w.dequant_cycles), "{model} dequantization cycles");
                let works: Vec<StepWork> = ops.iter().map(op_work).collect();
                assert!(close(works.iter().map(|x| x.weight_macs + x.attn_macs).sum(), w.weight_macs + w.attn_macs));
            }
        }
    }

    /// By hand: the operators' memory, arithmetic and dequantization terms add up to the
    /// token's (each term is linear in its operator's bytes, multiply-adds or cycles), and an
    /// operator bound by memory takes its bytes over the same bandwidth as the whole token.
    #[test]
    fn operator_times_add_up_to_the_token() {
        for (model, batch) in [(DENSE, 1), (MOE, 4), (HYBRID, 1)] {
            let s = scenario(model, batch);
            let plan = CostPlan::new(&s).unwrap();
            let whole = plan.step_time(&plan.decode_work(300), plan.arith_eff_decode, true);
            let times = op_times(&plan, 300);
            let sum = |f: fn(&StepTime) -> f64| times.iter().map(|(_, t)| f(t)).sum::<f64>();
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1e-12);
            assert!(close(sum(|t| t.t_mem), whole.t_mem), "{model}: {} vs {}", sum(|t| t.t_mem), whole.t_mem);
            assert!(close(sum(|t| t.t_arith), whole.t_arith), "{model} arithmetic");
            assert!(close(sum(|t| t.t_dequant), whole.t_dequant), "{model} dequantization");
            let bytes: f64 = times.iter().map(|(o, _)| o.weight_bytes + o.kv_bytes).sum();
            for (o, t) in &times {
                assert!(close(t.t_mem, whole.t_mem * (o.weight_bytes + o.kv_bytes) / bytes), "{model} {:?}", o.kind);
            }
        }
    }

    #[test]
    fn each_layer_has_its_operations() {
        let s = scenario(HYBRID, 1);
        let plan = CostPlan::new(&s).unwrap();
        let ops = decode_ops(&plan, 100);
        let kinds = |l: u32| ops.iter().filter(|o| o.layer == Some(l)).map(|o| o.kind).collect::<Vec<_>>();
        // Layers 0 and 1 are SSM, 2 attention, 3 SSM again.
        assert!(kinds(0).contains(&OpKind::StateUpdate) && kinds(0).contains(&OpKind::RecurrentProjections));
        assert!(kinds(2).contains(&OpKind::Attention) && kinds(2).contains(&OpKind::AttnProjections));
        assert!(!kinds(2).contains(&OpKind::StateUpdate));
        assert!(ops.iter().any(|o| o.kind == OpKind::Embedding && o.layer.is_none()));
        assert!(ops.iter().any(|o| o.kind == OpKind::LmHead));
        // Attention at context 100 over the one attention layer reads 101 tokens + writes 1.
        let att = ops.iter().find(|o| o.kind == OpKind::Attention).unwrap();
        let row = crate::footprint::kv_row_bytes(s.model.kv_row_elems_at(2), s.kv.k, s.kv.v);
        assert_eq!(att.kv_bytes, 102.0 * row as f64);
        let s = scenario(MOE, 1);
        let plan = CostPlan::new(&s).unwrap();
        let ops = decode_ops(&plan, 0);
        for l in 0..3 {
            let e = ops.iter().find(|o| o.layer == Some(l) && o.kind == OpKind::Experts).unwrap();
            let r = ops.iter().find(|o| o.layer == Some(l) && o.kind == OpKind::Router).unwrap();
            assert!(e.weight_bytes > 0.0 && r.weight_bytes > 0.0);
        }
    }
}
