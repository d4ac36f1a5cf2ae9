//! Leave-one-device-out cross-validation and the error summaries memwall publishes.
//!
//! Each device's rows are predicted by a fit on every *other* device's rows, so the error
//! reported is the error on a device the fit never saw, the case a researcher is in. Beside
//! it, the naive roofline (`peak bandwidth ÷ bytes read per token`) on the same rows.

use std::collections::BTreeMap;

use memwall_spec::Scenario;

use crate::CalibError;
use crate::fit::{Fit, Observation, Param, Predictor, fit};

/// Cross-validated predictions.
#[derive(Debug, Clone, PartialEq)]
pub struct CrossValidated {
    /// Per observation, its prediction by the fit that left its device out.
    pub predicted: Vec<f64>,
    /// Per observation, the in-sample prediction of the fit on every row.
    pub in_sample: Vec<f64>,
    /// The fit on every row (what profiles store).
    pub full: Fit,
}

/// Fit `params` on all observations, and on all but each device in turn.
pub fn cross_validate(obs: &[Observation], params: &[Param]) -> Result<CrossValidated, CalibError> {
    let mut pred = Predictor::new(obs, params)?;
    let all: Vec<usize> = (0..obs.len()).collect();
    let full = fit(&mut pred, &all)?;
    let in_sample = all.iter().map(|&i| pred.predict(i, &full.values)).collect::<Result<Vec<_>, _>>()?;
    let mut devices: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, o) in obs.iter().enumerate() {
        devices.entry(o.device.as_str()).or_default().push(i);
    }
    let mut predicted = vec![f64::NAN; obs.len()];
    for rows in devices.values() {
        let train: Vec<usize> = all.iter().copied().filter(|i| !rows.contains(i)).collect();
        let values =
            if train.is_empty() { params.iter().map(|p| p.prior).collect() } else { fit(&mut pred, &train)?.values };
        for &i in rows {
            predicted[i] = pred.predict(i, &values)?;
        }
    }
    Ok(CrossValidated { predicted, in_sample, full })
}

/// The naive roofline of a design: `peak DRAM bandwidth ÷ bytes read per decoded token`
/// (every weight read once, plus the KV cache held), tok/s.
pub fn naive_roofline_tok_s(s: &Scenario) -> Result<f64, memwall_sim::SimError> {
    let e = memwall_sim::estimate(s)?;
    let bytes = e.weight_bytes_per_token + e.kv_bytes_per_token;
    Ok(s.device.memory.peak_gbps() * 1e9 / bytes * s.workload.batch as f64)
}

/// Error statistics of a set of predictions: `|predicted ÷ measured − 1|`.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// What the rows are (`all`, a device class, an engine).
    pub group: String,
    /// Rows.
    pub rows: usize,
    /// Median absolute relative error.
    pub median: f64,
    /// Largest absolute relative error.
    pub max: f64,
    /// Share of rows within 15 %.
    pub within_15pct: f64,
    /// Geometric mean of `predicted ÷ measured` (bias: < 1 too slow, > 1 too fast).
    pub bias: f64,
}

/// Summaries of `predicted` against `measured`, grouped by `key` (one summary per group and
/// one for `all`, first).
pub fn summarize(predicted: &[f64], measured: &[f64], key: &[String]) -> Vec<Summary> {
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, k) in key.iter().enumerate() {
        groups.entry(k.as_str()).or_default().push(i);
    }
    let one = |group: &str, rows: &[usize]| {
        let mut err: Vec<f64> = rows.iter().map(|&i| (predicted[i] / measured[i] - 1.0).abs()).collect();
        err.sort_by(f64::total_cmp);
        let n = err.len().max(1) as f64;
        let median = if err.is_empty() {
            f64::NAN
        } else if err.len() % 2 == 1 {
            err[err.len() / 2]
        } else {
            0.5 * (err[err.len() / 2 - 1] + err[err.len() / 2])
        };
        let log_bias: f64 = rows.iter().map(|&i| (predicted[i] / measured[i]).ln()).sum::<f64>() / n;
        Summary {
            group: group.to_string(),
            rows: rows.len(),
            median,
            max: err.last().copied().unwrap_or(f64::NAN),
            within_15pct: err.iter().filter(|e| **e <= 0.15).count() as f64 / n,
            bias: log_bias.exp(),
        }
    };
    let all: Vec<usize> = (0..predicted.len()).collect();
    let mut out = vec![one("all", &all)];
    out.extend(groups.iter().map(|(g, rows)| one(g, rows)));
    out
}
