//! The questions asked of one design or a few (`memwall.footprint`, `ops`, `compare`,
//! `solve`) and of a table of them (`pareto`), each through the one function of
//! `memwall_lab::report` or `memwall_solve` the command line calls too.

use memwall_lab::LabError;
use pyo3::prelude::*;

use crate::arrow::{ArrowStream, one_batch};
use memwall_spec::SpecError;

use crate::errors::{Error, MemwallError, Result};
use crate::experiment::Experiment;

/// The footprint of the first point of `experiment` ([`memwall_lab::report::footprint`], the
/// report `memwall footprint --json` prints) as JSON text, and one row per weight tensor
/// (class, layer, shape, format, bytes).
#[pyfunction]
pub(crate) fn footprint(py: Python<'_>, experiment: PyRef<'_, Experiment>) -> Result<(String, ArrowStream)> {
    let exp = &experiment.exp;
    let computed = py.detach(|| -> memwall_lab::Result<_> {
        let f = memwall_lab::report::footprint(&exp.point(0)?.scenario)?;
        let batch = memwall_lab::columns::batch_of(memwall_lab::columns::TENSOR_COLUMNS, &f.weights.tensors)?;
        Ok((f, batch))
    });
    let (f, batch) = computed?;
    let text = serde_json::to_string(&f).map_err(|e| MemwallError::new_err(format!("serializing a footprint: {e}")))?;
    Ok((text, one_batch(batch)))
}

/// Where a token's time goes for the experiment's first point
/// ([`memwall_lab::report::ops`], the `memwall estimate --ops` table): every operator of a
/// decoded token at the mean context with its bytes, multiply-adds, time and binding term,
/// and that context.
#[pyfunction]
pub(crate) fn ops(py: Python<'_>, experiment: PyRef<'_, Experiment>) -> Result<(u64, ArrowStream)> {
    let exp = &experiment.exp;
    let computed = py.detach(|| -> memwall_lab::Result<_> {
        let o = memwall_lab::report::ops(&exp.point(0)?.scenario)?;
        Ok((o.context_tokens, o.table()?))
    });
    let (ctx, batch) = computed?;
    Ok((ctx, one_batch(batch)))
}

/// The first points of two to eight experiments side by side ([`memwall_lab::report::compare()`],
/// as `memwall compare`): one row per design with the sweep's input, estimate and quality
/// columns and `delta_<column>` for each numeric one, its difference from the first design.
#[pyfunction]
pub(crate) fn compare(py: Python<'_>, experiments: Vec<PyRef<'_, Experiment>>) -> Result<ArrowStream> {
    let exps: Vec<&memwall_lab::Experiment> = experiments.iter().map(|e| &e.exp).collect();
    let computed = py.detach(|| -> memwall_lab::Result<_> {
        let scenarios = exps
            .iter()
            .enumerate()
            .map(|(i, e)| {
                e.point(0).map(|p| p.scenario).map_err(|e| LabError::Design { index: i + 1, source: Box::new(e) })
            })
            .collect::<memwall_lab::Result<Vec<_>>>()?;
        memwall_lab::report::compare(scenarios)?.table()
    });
    Ok(one_batch(computed?))
}

/// A design question answered for the experiment's first point (`memwall_solve::answer`):
/// the answer as the JSON `memwall solve --json` carries under `answer`.
#[pyfunction]
#[pyo3(signature = (experiment, question, target_tok_s=None, max_ppl_delta=None, max_ppl_increase_pct=None))]
pub(crate) fn solve(
    py: Python<'_>,
    experiment: PyRef<'_, Experiment>,
    question: &str,
    target_tok_s: Option<f64>,
    max_ppl_delta: Option<f64>,
    max_ppl_increase_pct: Option<f64>,
) -> Result<String> {
    let exp = &experiment.exp;
    let q: memwall_solve::Question = question.parse().map_err(|e: SpecError| e.within("question"))?;
    let answered = py.detach(|| -> memwall_lab::Result<String> {
        let s = exp.point(0)?.scenario;
        let a = memwall_solve::answer(&s, q, target_tok_s, max_ppl_delta, max_ppl_increase_pct)?;
        Ok(serde_json::to_string(&a).expect("answers serialize"))
    });
    answered.map_err(Error::from)
}

/// `table` (anything with `__arrow_c_stream__`) with its `pareto` column set (appended, or
/// replaced) to the fronts of the rule `by` × `objectives` ([`memwall_lab::pareto`], the rule
/// `memwall run` applies from `[pareto]`), only designs within `max_ppl_increase_pct` being
/// eligible when it is given, and the fronts as JSON: per group its key, the objectives drawn
/// over, those left out as unknown, the designs not compared, the members.
#[pyfunction]
#[pyo3(signature = (table, by=Vec::new(), objectives=Vec::new(), max_ppl_increase_pct=None))]
pub(crate) fn pareto(
    py: Python<'_>,
    table: Bound<'_, PyAny>,
    by: Vec<String>,
    objectives: Vec<String>,
    max_ppl_increase_pct: Option<f64>,
) -> Result<(ArrowStream, String)> {
    let (schema, batches) = crate::arrow::import(py, &table)?;
    let r = py.detach(|| -> memwall_lab::Result<_> {
        let rule = memwall_lab::pareto::Rule::new(by, &objectives)?.with_max_ppl_increase_pct(max_ppl_increase_pct)?;
        let (schema, batches, groups) = memwall_lab::pareto::with_column(&schema, batches, &rule)?;
        Ok((schema, batches, memwall_lab::pareto::groups_json(&rule, &groups).to_string()))
    });
    let (schema, batches, json) = r?;
    Ok((ArrowStream::new(schema, batches), json))
}

/// The decode rate of the experiment's first point's reply started at each of `depths`
/// tokens already in the KV cache ([`memwall_lab::report::at_depths`], `memwall estimate
/// --depths`), as JSON.
#[pyfunction]
pub(crate) fn at_depths(py: Python<'_>, experiment: PyRef<'_, Experiment>, depths: Vec<u64>) -> Result<String> {
    let exp = &experiment.exp;
    let r =
        py.detach(|| -> memwall_lab::Result<_> { memwall_lab::report::at_depths(&exp.point(0)?.scenario, &depths) })?;
    serde_json::to_string(&r).map_err(|e| Error::from(MemwallError::new_err(format!("depths as JSON: {e}"))))
}
