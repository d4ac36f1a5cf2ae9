//! Two to eight designs side by side (`memwall compare`, `memwall.compare`).

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array};
use arrow::datatypes::{Field, Schema};
use arrow::record_batch::RecordBatch;
use memwall_spec::{Scenario, SpecError};
use serde::Serialize;

use super::estimate::{EstimateReport, estimate};
use crate::columns::{ESTIMATE_COLUMNS, INPUT_COLUMNS, Number, QUALITY_COLUMNS, batch_of, number};
use crate::error::{LabError, Result};
use memwall_catalog::quality_table::Quality;

/// One design of a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Compared {
    /// Its estimate and quality cost.
    #[serde(flatten)]
    pub report: EstimateReport,
    /// Each numeric metric (every estimate and quality column) less the first design's, in
    /// column order; null where either is unknown.
    pub delta_vs_first: serde_json::Map<String, serde_json::Value>,
    #[serde(skip)]
    scenario: Scenario,
}

/// A comparison: the designs in the order given.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The designs.
    pub designs: Vec<Compared>,
}

/// The smallest and largest number of designs a comparison takes.
pub const DESIGNS: std::ops::RangeInclusive<usize> = 2..=8;

/// Compare `scenarios` (two to eight): each one's estimate, and its metrics less the first's.
pub fn compare(scenarios: Vec<Scenario>) -> Result<Comparison> {
    let n = scenarios.len();
    if !DESIGNS.contains(&n) {
        return Err(SpecError::invalid("designs", n, "compare two to eight designs").into());
    }
    let mut designs: Vec<Compared> = Vec::with_capacity(n);
    for (i, s) in scenarios.into_iter().enumerate() {
        let report = estimate(&s, false, &[]).map_err(|e| LabError::Design { index: i + 1, source: Box::new(e) })?;
        designs.push(Compared { report, delta_vs_first: Default::default(), scenario: s });
    }
    let deltas: Vec<serde_json::Map<String, serde_json::Value>> = designs
        .iter()
        .map(|d| {
            let first = &designs[0];
            let mut m = serde_json::Map::new();
            for c in ESTIMATE_COLUMNS {
                if let (Some(a), Some(b)) = (number(c, &d.report.estimate), number(c, &first.report.estimate)) {
                    m.insert(c.name.into(), difference(a, b));
                }
            }
            for c in QUALITY_COLUMNS {
                if let (Some(a), Some(b)) = (number(c, &d.report.quality), number(c, &first.report.quality)) {
                    m.insert(c.name.into(), difference(a, b));
                }
            }
            m
        })
        .collect();
    for (d, delta) in designs.iter_mut().zip(deltas) {
        d.delta_vs_first = delta;
    }
    Ok(Comparison { designs })
}

/// `a − b` as JSON: an integer where both are integers, null where either is unknown.
fn difference(a: Option<Number>, b: Option<Number>) -> serde_json::Value {
    use serde_json::Value;
    match (a, b) {
        (Some(Number::Int(a)), Some(Number::Int(b))) => {
            Value::from(i64::try_from(a - b).unwrap_or(if a > b { i64::MAX } else { i64::MIN }))
        }
        (Some(a), Some(b)) => serde_json::Number::from_f64(a.as_f64() - b.as_f64()).map_or(Value::Null, Value::Number),
        _ => Value::Null,
    }
}

impl Comparison {
    /// One row per design: the input columns of a sweep, the estimate and quality columns, and
    /// `delta_<column>` (a float) for every numeric one.
    pub fn table(&self) -> Result<RecordBatch> {
        let scenarios: Vec<Scenario> = self.designs.iter().map(|d| d.scenario.clone()).collect();
        let estimates: Vec<memwall_sim::Estimate> = self.designs.iter().map(|d| d.report.estimate.clone()).collect();
        let qualities: Vec<Quality> = self.designs.iter().map(|d| d.report.quality.clone()).collect();
        let parts = [
            batch_of(INPUT_COLUMNS, &scenarios)?,
            batch_of(ESTIMATE_COLUMNS, &estimates)?,
            batch_of(QUALITY_COLUMNS, &qualities)?,
        ];
        let mut fields: Vec<Field> = Vec::new();
        let mut arrays: Vec<ArrayRef> = Vec::new();
        for b in &parts {
            fields.extend(b.schema().fields().iter().map(|f| f.as_ref().clone()));
            arrays.extend(b.columns().iter().cloned());
        }
        let names: Vec<&String> = self.designs[0].delta_vs_first.keys().collect();
        for name in names {
            let values: Float64Array =
                self.designs.iter().map(|d| d.delta_vs_first.get(name.as_str()).and_then(|v| v.as_f64())).collect();
            fields.push(Field::new(format!("delta_{name}"), arrow::datatypes::DataType::Float64, true));
            arrays.push(Arc::new(values));
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
            .map_err(|e| LabError::Write { path: "<comparison>".into(), message: e.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::report::test_design as design;

    #[test]
    fn deltas_are_differences_from_the_first_design() {
        let c = compare(vec![design("llama-3.2-1b", "Q4_K_M"), design("llama-3.2-1b", "Q8_0")]).unwrap();
        let (a, b) = (&c.designs[0], &c.designs[1]);
        assert!(a.delta_vs_first.values().all(|v| v.as_f64() == Some(0.0) || v.is_null()));
        let total = b.report.estimate.total_bytes as i64 - a.report.estimate.total_bytes as i64;
        assert_eq!(b.delta_vs_first["total_bytes"], serde_json::Value::from(total));
        assert!(total > 0, "Q8_0 weighs more than Q4_K_M");
        let rate = b.report.estimate.decode_tok_s - a.report.estimate.decode_tok_s;
        assert_eq!(b.delta_vs_first["decode_tok_s"].as_f64(), Some(rate));
        assert!(!b.delta_vs_first.contains_key("binding"), "text columns have no delta");
        let t = c.table().unwrap();
        assert_eq!(t.num_rows(), 2);
        let col = t.column_by_name("delta_total_bytes").unwrap();
        let col = col.as_any().downcast_ref::<arrow::array::Float64Array>().unwrap();
        assert_eq!(col.value(1), total as f64);
        assert!(t.column_by_name("weights.mix").is_some());
    }

    #[test]
    fn one_or_nine_designs_are_refused_naming_the_count() {
        let e = compare(vec![design("llama-3.2-1b", "Q4_K_M")]).unwrap_err().to_string();
        assert!(e.contains("`designs` = 1") && e.contains("two to eight"), "{e}");
        let nine = (0..9).map(|_| design("llama-3.2-1b", "Q4_K_M")).collect();
        assert!(compare(nine).unwrap_err().to_string().contains("`designs` = 9"));
    }
}
