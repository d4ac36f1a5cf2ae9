//! One design's estimate (`memwall estimate`) and where a token's time goes (`memwall estimate
//! --ops`, `memwall.ops`).

use arrow::record_batch::RecordBatch;
use memwall_sim::cost::ops::Op;
use memwall_sim::{Estimate, StepTime};
use memwall_spec::Scenario;
use serde::Serialize;

use super::Design;
use crate::columns::{OP_COLUMNS, batch_of, json_rows};
use crate::error::Result;
use memwall_catalog::quality_table::{ModelRef, Quality, QualityTable};

/// Every operator of a decoded token at one context, each timed alone.
#[derive(Debug, Clone)]
pub struct Ops {
    /// The context the token is decoded at (the estimate's mean decode context), tokens.
    pub context_tokens: u64,
    /// The operators in order, with their time (the rows of [`OP_COLUMNS`]).
    pub rows: Vec<(Op, StepTime)>,
}

impl Ops {
    /// The rows as a record batch.
    pub fn table(&self) -> Result<RecordBatch> {
        batch_of(OP_COLUMNS, &self.rows)
    }

    /// The rows as JSON objects.
    pub fn json(&self) -> Vec<serde_json::Value> {
        json_rows(OP_COLUMNS, &self.rows)
    }
}

/// The operators of a decoded token of `s` at the estimate's mean decode context.
pub fn ops(s: &Scenario) -> Result<Ops> {
    let plan = memwall_sim::CostPlan::new(s)?;
    let context_tokens = memwall_sim::analytic::mean_decode_context(s);
    Ok(Ops { context_tokens, rows: memwall_sim::cost::ops::op_times(&plan, context_tokens) })
}

/// The decode rate of a design's reply started at one depth (llama-bench's `tg N @ d`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AtDepth {
    /// Tokens already in the KV cache when the reply starts.
    pub depth_tokens: u64,
    /// Decode tokens/s over the reply's `gen_tokens` tokens.
    pub decode_tok_s: f64,
    /// Its 80 % range, when the engine has a cross-validated error.
    pub decode_tok_s_interval: Option<[f64; 2]>,
    /// What binds decode at the reply's middle token.
    pub binding: &'static str,
    /// Whether the KV cache holds depth + reply (`context_tokens` at least that).
    pub fits_context: bool,
}

/// The decode rate of `s`'s reply (`gen_tokens`) started at each of `depths` tokens already in
/// the KV cache (the prompt set to the depth and no history besides; the context allocated as
/// `s` says).
pub fn at_depths(s: &Scenario, depths: &[u64]) -> Result<Vec<AtDepth>> {
    depths
        .iter()
        .map(|&d| {
            let mut at = s.clone();
            at.workload.prompt_tokens = d;
            at.workload.history_tokens = Some(0);
            let e = memwall_sim::estimate(&at)
                .map_err(|e| crate::LabError::Spec(memwall_spec::SpecError::invalid("depths", d, e.to_string())))?;
            Ok(AtDepth {
                depth_tokens: d,
                decode_tok_s: e.decode_tok_s,
                decode_tok_s_interval: e.decode_tok_s_interval,
                binding: e.binding.name(),
                fits_context: d + at.workload.gen_tokens <= at.workload.context_tokens,
            })
        })
        .collect()
}

/// One design's estimate with its quality cost (`memwall estimate`).
#[derive(Debug, Clone, Serialize)]
pub struct EstimateReport {
    /// The design.
    pub design: Design,
    /// Footprint, rates, energy and the binding term.
    pub estimate: Estimate,
    /// The quality cost of its formats.
    pub quality: Quality,
    /// Where a decoded token's time goes, when asked for.
    #[serde(skip)]
    pub ops: Option<Ops>,
    /// The decode rate at each depth asked for (empty: none asked).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub depths: Vec<AtDepth>,
}

impl EstimateReport {
    /// The fields of the `memwall.estimate` document (`--json`, the web page): the report,
    /// and with operators `ops_context_tokens` and `ops`.
    pub fn json(&self) -> serde_json::Value {
        let mut doc = super::json(self);
        if let Some(ops) = &self.ops {
            doc["ops_context_tokens"] = ops.context_tokens.into();
            doc["ops"] = ops.json().into();
        }
        doc
    }
}

/// The estimate of `s`, with its operators when `with_ops`, and its decode rate at each of
/// `depths` ([`at_depths`]).
pub fn estimate(s: &Scenario, with_ops: bool, depths: &[u64]) -> Result<EstimateReport> {
    let e = memwall_sim::estimate(s)?;
    let q = QualityTable::shared().lookup_model(&ModelRef::of(&s.model), &s.weights, &s.kv);
    let ops = if with_ops { Some(ops(s)?) } else { None };
    let depths = at_depths(s, depths)?;
    Ok(EstimateReport { design: Design::of(s), estimate: e, quality: q, ops, depths })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A depth is the tokens in the cache when the reply starts, whatever history the design
    /// carries: the rate at depth 0 is the reply's rate on an empty cache.
    #[test]
    fn a_depth_is_the_whole_cache_whatever_the_history() {
        let mut s = crate::report::test_design("llama-3.2-1b", "Q4_K_M");
        s.workload.context_tokens = 32768;
        let empty = at_depths(&s, &[0, 8192]).unwrap();
        s.workload.history_tokens = Some(16000);
        let with_history = at_depths(&s, &[0, 8192]).unwrap();
        assert_eq!(empty, with_history);
        assert!(empty[0].decode_tok_s > empty[1].decode_tok_s, "deeper is slower");
    }
}
