//! Leave-one-device-out cross-validation and the error summaries memwall publishes.
//!
//! Each device's rows are predicted by a fit on every *other* device's rows, so the error
//! reported is the error on a device the fit never saw, the case a researcher is in. Beside
//! it, the naive roofline (decode: `peak bandwidth ÷ bytes read per token`; prefill: `peak
//! arithmetic ÷ multiply-adds per token`) on the same rows. Prefill rows are cross-validated
//! in two stages ([`cross_validate_prefill`]): the decode figures of the fold that left the
//! same device out, then the prefill figures fitted on the other devices' prefill rows, so no
//! figure a prefill row is predicted with has seen its device.

use std::collections::{BTreeMap, BTreeSet};

use memwall_spec::{Backend, Scenario};

use crate::CalibError;
use crate::fit::{Fit, Knob, Observation, Param, Predictor, fit};

/// Cross-validated predictions.
#[derive(Debug, Clone, PartialEq)]
pub struct CrossValidated {
    /// Per observation, its prediction by the fit that left its device out.
    pub predicted: Vec<f64>,
    /// Per observation, the in-sample prediction of the fit on every row.
    pub in_sample: Vec<f64>,
    /// The fit on every row (what profiles store), each (engine, unit) that rows of fewer than
    /// [`MIN_ENGINE_DEVICES`] devices inform given the generic figures (`fit_or_generic`;
    /// `rms_log` and `iterations` are the fit's before that).
    pub full: Fit,
    /// Per device left out, the parameter values fitted without it (under the same rule).
    pub folds: BTreeMap<String, Vec<f64>>,
}

/// The observations of each device (indices into `obs`).
fn rows_by_device(obs: &[Observation]) -> BTreeMap<&str, Vec<usize>> {
    let mut devices: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, o) in obs.iter().enumerate() {
        devices.entry(o.device.as_str()).or_default().push(i);
    }
    devices
}

/// `params` fitted on the observations `train`, or their priors when there are none.
fn fit_or_prior(pred: &mut Predictor, params: &[Param], train: &[usize]) -> Result<Fit, CalibError> {
    if train.is_empty() {
        Ok(Fit { values: params.iter().map(|p| p.prior).collect(), rms_log: f64::NAN, iterations: 0 })
    } else {
        fit(pred, train)
    }
}

/// An engine's decode figures on a unit are fitted from the rows of at least this many
/// devices; with fewer, they are the generic engine's ([`generic_figures`]). One device's rows
/// pin an engine's figures on that device only, through contrasts between its rows that say
/// little of another device: fitted on one RK3588 row, llama.cpp's Vulkan profile predicted the
/// AMD laptops of a left-out family at 0.09 of their measured rate (91 % median error); the
/// generic figures give 17.3 %.
pub const MIN_ENGINE_DEVICES: usize = 2;

/// The (engine, unit) pairs whose rows among `train` come from [`MIN_ENGINE_DEVICES`] devices
/// or more: those whose decode figures are their own.
pub fn informed(obs: &[Observation], train: &[usize]) -> BTreeSet<(String, &'static str)> {
    with_devices(obs, train, MIN_ENGINE_DEVICES)
}

/// The (engine, unit) pairs whose rows among `train` come from `min` devices or more.
fn with_devices(obs: &[Observation], train: &[usize], min: usize) -> BTreeSet<(String, &'static str)> {
    let mut devices: BTreeMap<(String, &'static str), BTreeSet<&str>> = BTreeMap::new();
    for &i in train {
        let o = &obs[i];
        devices
            .entry((o.scenario.engine.name.clone(), o.scenario.workload.backend.name()))
            .or_default()
            .insert(&o.device);
    }
    devices.into_iter().filter(|(_, d)| d.len() >= min).map(|(k, _)| k).collect()
}

/// One figure of the generic engine: on `unit`, `knob` takes `value`, the median of the
/// figures fitted for `engines`.
#[derive(Debug, Clone, PartialEq)]
pub struct GenericFigure {
    /// Unit.
    pub unit: Backend,
    /// Figure.
    pub knob: Knob,
    /// Value, in the knob's units.
    pub value: f64,
    /// The engines whose fitted figures it is the median of.
    pub engines: Vec<String>,
}

/// The generic engine's figures, what an engine no published row informs takes: for each
/// unit and figure of `params`, the median (of logarithms: a geometric median, as the figures
/// are scales) of `values` over the engines in `informed`, each engine one vote. An engine's
/// figures are a typical engine's then, not those of the engine with the most rows: fitted on
/// every engine's rows pooled instead, the GPU figures without the Macs' rows followed llama.cpp
/// on Adreno (k-quants unpacked at 4.9 ALU operations a weight) and predicted Metal on a Mac
/// at 0.3 of its rate, leave-one-family-out Macs 57 %; the median gives 17 %. How far kernels
/// hide arithmetic behind memory (`Knob::Overlap`) is one engine's kernels' and has no generic
/// figure: the cost model's stays; nor has the time a token mixer's layer costs
/// (`Knob::MixerS`): an engine without rows is taken to run every layer itself. A figure no row can move ([`Param::held`]) has no vote; a
/// unit and figure without a vote has no generic figure (its prior stands).
pub fn generic_figures(
    params: &[Param],
    values: &[f64],
    informed: &BTreeSet<(String, &'static str)>,
) -> Vec<GenericFigure> {
    let own = |p: &Param| {
        !matches!(p.knob, Knob::Overlap | Knob::MixerS(_))
            && !p.held()
            && informed.contains(&(p.engine.clone(), p.unit.name()))
    };
    let mut figures: Vec<GenericFigure> = Vec::new();
    for p in params.iter().filter(|p| own(p)) {
        if figures.iter().any(|g| g.unit == p.unit && g.knob == p.knob) {
            continue;
        }
        let mut xs: Vec<(f64, &str)> = params
            .iter()
            .zip(values)
            .filter(|(q, _)| q.unit == p.unit && q.knob == p.knob && own(q))
            .map(|(q, v)| (v.ln(), q.engine.as_str()))
            .collect();
        xs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let n = xs.len();
        let mid = if n % 2 == 1 { xs[n / 2].0 } else { (xs[n / 2 - 1].0 + xs[n / 2].0) / 2.0 };
        let mut engines: Vec<String> = xs.iter().map(|(_, e)| e.to_string()).collect();
        engines.sort();
        figures.push(GenericFigure { unit: p.unit, knob: p.knob, value: mid.exp(), engines });
    }
    figures
}

/// `params` fitted on the observations `train`; each (engine, unit) not [`informed`] by them
/// takes the generic engine's figures ([`generic_figures`] of the engines they inform), its
/// profile's other fields (threads, formats, matrix kernels) kept, as a shipped profile that
/// no published row informs is filled ([`crate::published::fitted_engine_profiles`]); its
/// kernels' overlap stays at its prior. Where no engine of the unit is informed either, its
/// priors. Decode figures only: a prompt's efficiency keeps its prior below
/// [`MIN_PREFILL_DEVICES`] devices, as the shipped profiles do.
fn fit_or_generic(
    obs: &[Observation],
    pred: &mut Predictor,
    params: &[Param],
    train: &[usize],
) -> Result<Fit, CalibError> {
    let mut fitted = fit_or_prior(pred, params, train)?;
    let informed = informed(obs, train);
    let generic = generic_figures(params, &fitted.values, &informed);
    for (p, v) in params.iter().zip(fitted.values.iter_mut()) {
        if !informed.contains(&(p.engine.clone(), p.unit.name())) {
            *v = generic.iter().find(|g| g.unit == p.unit && g.knob == p.knob).map_or(p.prior, |g| g.value);
        }
    }
    Ok(fitted)
}

/// Fit `params` on all observations, and on all but each device in turn.
pub fn cross_validate(obs: &[Observation], params: &[Param]) -> Result<CrossValidated, CalibError> {
    let mut pred = Predictor::new(obs, params)?.across_devices();
    let all: Vec<usize> = (0..obs.len()).collect();
    let full = fit_or_generic(obs, &mut pred, params, &all)?;
    let in_sample = all.iter().map(|&i| pred.predict(i, &full.values)).collect::<Result<Vec<_>, _>>()?;
    let devices = rows_by_device(obs);
    let mut predicted = vec![f64::NAN; obs.len()];
    let mut folds = BTreeMap::new();
    for (device, rows) in &devices {
        let train: Vec<usize> = all.iter().copied().filter(|i| !rows.contains(i)).collect();
        let values = fit_or_generic(obs, &mut pred, params, &train)?.values;
        for &i in rows {
            predicted[i] = pred.predict(i, &values)?;
        }
        folds.insert(device.to_string(), values);
    }
    Ok(CrossValidated { predicted, in_sample, full, folds })
}

/// Predictions of `obs` with each group of `groups` held out in turn: `params` fitted on the
/// other groups' rows of `obs`, each held-out row predicted as `held[i]` states it (the same
/// row with its device rebuilt from the spec sheet and the figures of its family fitted
/// without the group, [`crate::published::sheet_device`]).
pub fn cross_validate_groups(
    obs: &[Observation],
    held: &[Observation],
    params: &[Param],
    groups: &BTreeMap<String, Vec<usize>>,
) -> Result<Vec<f64>, CalibError> {
    let mut pred = Predictor::new(obs, params)?.across_devices();
    let mut held_pred = Predictor::new(held, params)?;
    let all: Vec<usize> = (0..obs.len()).collect();
    let mut predicted = vec![f64::NAN; obs.len()];
    for rows in groups.values() {
        let train: Vec<usize> = all.iter().copied().filter(|i| !rows.contains(i)).collect();
        let values = fit_or_generic(obs, &mut pred, params, &train)?.values;
        for &i in rows {
            predicted[i] = held_pred.predict(i, &values)?;
        }
    }
    Ok(predicted)
}

/// Set `values` of `params` in the engines of `obs`' scenarios (each parameter on the
/// observations of its engine and unit, and the CPU figures of an engine that lends them,
/// [`Param::set_in`]).
pub fn apply(obs: &mut [Observation], params: &[Param], values: &[f64]) {
    for o in obs {
        for (p, &v) in params.iter().zip(values) {
            p.set_in(&mut o.scenario, v);
        }
    }
}

/// An engine's prefill figure on a unit is fitted from the prompt rates of at least this many
/// devices; with fewer it keeps its prior (the generic engine's figure). Two devices whose
/// prompt rates disagree tenfold (llama.cpp on phone CPUs, OpenCL builds on Adreno) give a
/// fit that transfers worse than the prior: leave-one-device-out on CPUs 34 % with a fit on
/// whatever rows there were, 19.8 % with the prior.
pub const MIN_PREFILL_DEVICES: usize = 3;

/// `values` with each parameter whose (engine, unit) has prefill rows of fewer than
/// [`MIN_PREFILL_DEVICES`] devices among `train` set back to its prior. Each prefill row
/// depends on its own (engine, unit)'s parameters, and where its unit hands weights to the CPU
/// on the CPU's of the engine that lends them (`EngineSpec::cpu_from`): the rows of a thin
/// (engine, unit) were fitted beside the lender's, which they moved a little, with a figure of
/// their own that this then sets back.
fn hold_thin_prefill(obs: &[Observation], params: &[Param], train: &[usize], mut values: Vec<f64>) -> Vec<f64> {
    let fitted = with_devices(obs, train, MIN_PREFILL_DEVICES);
    for (p, v) in params.iter().zip(values.iter_mut()) {
        if !fitted.contains(&(p.engine.clone(), p.unit.name())) {
            *v = p.prior;
        }
    }
    values
}

/// Leave-one-device-out predictions of prefill observations `obs`, in two stages: for each
/// device, the decode figures `decode_params` take the values of `decode`'s fold that left
/// that device out (its full fit where the device has no decode row), then `params` (the
/// prefill knobs) are fitted on the other devices' prefill rows, each (engine, unit) only
/// where those rows come from [`MIN_PREFILL_DEVICES`] devices or more (else its prior).
/// `full` and `in_sample` use the decode fit on every row and the prefill fit on every
/// prefill row, under the same rule.
pub fn cross_validate_prefill(
    obs: &[Observation],
    params: &[Param],
    decode_params: &[Param],
    decode: &CrossValidated,
) -> Result<CrossValidated, CalibError> {
    let with_decode = |values: &[f64]| {
        let mut o = obs.to_vec();
        apply(&mut o, decode_params, values);
        o
    };
    let all: Vec<usize> = (0..obs.len()).collect();
    let everyone = with_decode(&decode.full.values);
    let mut pred = Predictor::new(&everyone, params)?.across_devices();
    let mut full = fit(&mut pred, &all)?;
    full.values = hold_thin_prefill(obs, params, &all, full.values);
    let in_sample = all.iter().map(|&i| pred.predict(i, &full.values)).collect::<Result<Vec<_>, _>>()?;
    let devices = rows_by_device(obs);
    let mut predicted = vec![f64::NAN; obs.len()];
    let mut folds = BTreeMap::new();
    for (device, rows) in &devices {
        let fold = with_decode(decode.folds.get(*device).unwrap_or(&decode.full.values));
        let mut pred = Predictor::new(&fold, params)?.across_devices();
        let train: Vec<usize> = all.iter().copied().filter(|i| !rows.contains(i)).collect();
        let values = fit_or_prior(&mut pred, params, &train)?.values;
        let values = hold_thin_prefill(obs, params, &train, values);
        for &i in rows {
            predicted[i] = pred.predict(i, &values)?;
        }
        folds.insert(device.to_string(), values);
    }
    Ok(CrossValidated { predicted, in_sample, full, folds })
}

/// The naive roofline of a design: `peak DRAM bandwidth ÷ bytes read per decoded token`
/// (every weight read once, plus the KV cache held), tok/s.
pub fn naive_roofline_tok_s(s: &Scenario) -> Result<f64, memwall_sim::SimError> {
    let e = memwall_sim::estimate(s)?;
    let bytes = e.weight_bytes_per_token + e.kv_bytes_per_token;
    Ok(s.device.memory.peak_gbps() * 1e9 / bytes * s.workload.batch as f64)
}

/// The naive compute roofline of a prompt: `peak multiply-adds/s of the unit ÷ weight
/// multiply-adds per prompt token`, tok/s. The peak is the accelerator's (`TFLOP/s × 1e12 /
/// 2`), or on the CPU `Σ_cluster threads × GHz × 1e9 × int8 MACs/cycle` over the cores the
/// threads run on (the fastest format's rate); a token of a dense model multiplies every
/// active weight once. NaN where the unit states no throughput.
///
/// Example: 4 threads on 2.4 GHz cores of 128-bit, 2-pipe SIMD with dot products (32 int8
/// MACs/cycle) is 3.072e11 MAC/s; a 1.0e9-parameter model, 307.2 tok/s.
pub fn naive_prefill_roofline_tok_s(s: &Scenario) -> f64 {
    let a = &s.device.accelerators;
    let peak = match s.workload.backend {
        memwall_spec::Backend::Cpu => s
            .device
            .placement(s.threads())
            .iter()
            .map(|(cl, n)| *n as f64 * cl.max_ghz * 1e9 * cl.int8_macs_per_cycle())
            .sum(),
        memwall_spec::Backend::Gpu => s.device.gpu_fp16_tflops_at_clock().map_or(f64::NAN, |t| t * 1e12 / 2.0),
        memwall_spec::Backend::Npu => a.npu_int8_tops.map_or(f64::NAN, |t| t * 1e12 / 2.0),
    };
    peak / s.model.params().active_per_token as f64
}

/// Coverage of a leave-one-device-out 80 % interval of one group of rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Coverage {
    /// The group (`all`, a device class, an engine and unit), as [`summarize`] names it.
    pub group: String,
    /// Rows whose interval could be formed (five or more rows of other devices in the group).
    pub checked: usize,
    /// Share of those rows whose `measured ÷ predicted` lies inside the interval; NaN when
    /// none was checked.
    pub share: f64,
}

/// How often the 80 % interval memwall would print covers a row it never saw: for each row,
/// the 80 % interval ([`crate::published::ratio_interval`], over devices, widened for their
/// number) of `measured ÷ predicted` over the rows of the same group on *other* devices, and whether the row's own ratio lies
/// in it. An honest interval covers about 80 %. One [`Coverage`] per group of `key` (and
/// `all` first), in [`summarize`]'s order.
pub fn interval_coverage(predicted: &[f64], measured: &[f64], device: &[String], key: &[String]) -> Vec<Coverage> {
    let ratio = |i: usize| measured[i] / predicted[i];
    let one = |group: &str, rows: &[usize]| {
        let mut checked = 0;
        let mut inside = 0;
        for &i in rows {
            let others: Vec<(f64, &str)> =
                rows.iter().filter(|&&j| device[j] != device[i]).map(|&j| (ratio(j), device[j].as_str())).collect();
            if let Some([lo, hi]) = crate::published::ratio_interval(&others) {
                checked += 1;
                inside += usize::from((lo..=hi).contains(&ratio(i)));
            }
        }
        Coverage {
            group: group.to_string(),
            checked,
            share: if checked == 0 { f64::NAN } else { inside as f64 / checked as f64 },
        }
    };
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, k) in key.iter().enumerate() {
        groups.entry(k.as_str()).or_default().push(i);
    }
    let all: Vec<usize> = (0..predicted.len()).collect();
    let mut out = vec![one("all", &all)];
    out.extend(groups.iter().map(|(g, rows)| one(g, rows)));
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefill_roofline_is_peak_macs_over_weights_per_token() {
        // A Raspberry Pi 5: 4 Cortex-A76 at 2.4 GHz, two 128-bit pipes with dot products,
        // 32 int8 MACs/cycle: 4 × 2.4e9 × 32 = 3.072e11 MAC/s.
        let s = Scenario {
            model: memwall_catalog::load_model("llama-3.2-1b").unwrap(),
            device: memwall_catalog::load_device("raspberry-pi-5-8gb").unwrap(),
            weights: memwall_spec::WeightQuant::new("Q4_0".parse().unwrap()),
            kv: Default::default(),
            workload: memwall_spec::Workload { threads: Some(4), ..Default::default() },
            engine: memwall_catalog::load_engine("llama.cpp").unwrap(),
            assume_defaults: false,
            cost: Default::default(),
            sim: Default::default(),
        };
        let active = s.model.params().active_per_token as f64;
        let roof = naive_prefill_roofline_tok_s(&s);
        assert!((roof * active / 3.072e11 - 1.0).abs() < 1e-12, "{roof}");
        // Two threads: half.
        let mut two = s.clone();
        two.workload.threads = Some(2);
        assert!((naive_prefill_roofline_tok_s(&two) / roof - 0.5).abs() < 1e-12);
    }

    #[test]
    fn coverage_counts_rows_inside_the_interval_of_the_other_devices() {
        // Group g: six devices with ratios measured/predicted 1.0, 1.1, 0.9, 1.05, 0.95 and an
        // outlier 2.0. Each row's interval is the 10th-90th percentile of the other five.
        let measured = [1.0, 1.1, 0.9, 1.05, 0.95, 2.0];
        let predicted = [1.0; 6];
        let device: Vec<String> = (0..6).map(|i| format!("d{i}")).collect();
        let key = vec!["g".to_string(); 6];
        let c = interval_coverage(&predicted, &measured, &device, &key);
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].group.as_str(), c[0].checked), ("all", 6));
        // By hand (linear interpolation over the other five): row 1.0 → [0.92, 1.64] inside;
        // 1.1 → [0.92, 1.62] inside; 0.9 → [0.97, 1.64] outside; 1.05 → [0.92, 1.64] inside;
        // 0.95 → [0.94, 1.64] inside; 2.0 → [0.92, 1.08] outside. 4 of 6.
        assert!((c[1].share - 4.0 / 6.0).abs() < 1e-12, "{c:?}");
        // Fewer than five rows of other devices: nothing checked.
        let c = interval_coverage(&predicted[..3], &measured[..3], &device[..3], &key[..3]);
        assert_eq!((c[0].checked, c[0].share.is_nan()), (0, true));
    }
}
