//! Sweep results as Arrow record batches (one column per input parameter and per metric)
//! and their Parquet export with key-value metadata, written atomically.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray, UInt32Array, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use memwall_sim::Estimate;
use memwall_spec::Scenario;
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use crate::error::{IoError, Result};
use crate::experiment::Experiment;
use crate::quality::Quality;

/// One evaluated design point.
#[derive(Debug, Clone)]
pub struct Row {
    /// Value index per grid axis.
    pub choice: Vec<usize>,
    /// The scenario.
    pub scenario: Scenario,
    /// The estimate.
    pub estimate: Estimate,
    /// The looked-up quality.
    pub quality: Quality,
}

/// Identity columns every result carries, named by their scenario path.
pub const IDENTITY_COLUMNS: &[&str] = &[
    "model",
    "device",
    "weights.mix",
    "kv.k",
    "kv.v",
    "workload.context_tokens",
    "workload.prompt_tokens",
    "workload.gen_tokens",
    "workload.batch",
    "workload.backend",
];

enum Col {
    Str(Vec<String>),
    F64(Vec<f64>),
    OptF64(Vec<Option<f64>>),
    I64(Vec<i64>),
    U64(Vec<u64>),
    U32(Vec<u32>),
    Bool(Vec<bool>),
}

impl Col {
    fn finish(self, name: &str) -> (Field, ArrayRef) {
        let (dt, nullable, arr): (DataType, bool, ArrayRef) = match self {
            Col::Str(v) => (DataType::Utf8, false, Arc::new(StringArray::from(v))),
            Col::F64(v) => (DataType::Float64, false, Arc::new(Float64Array::from(v))),
            Col::OptF64(v) => (DataType::Float64, true, Arc::new(Float64Array::from(v))),
            Col::I64(v) => (DataType::Int64, false, Arc::new(Int64Array::from(v))),
            Col::U64(v) => (DataType::UInt64, false, Arc::new(UInt64Array::from(v))),
            Col::U32(v) => (DataType::UInt32, false, Arc::new(UInt32Array::from(v))),
            Col::Bool(v) => (DataType::Boolean, false, Arc::new(BooleanArray::from(v))),
        };
        (Field::new(name, dt, nullable), arr)
    }
}

/// Column type of a grid axis: integers, floats, booleans or text.
fn axis_column(exp: &Experiment, axis: usize, choices: &[&[usize]]) -> Col {
    let a = &exp.axes[axis];
    let vals = choices.iter().map(|c| &a.values[c[axis]]);
    if a.labels.is_none() {
        if a.values.iter().all(|v| v.is_integer()) {
            return Col::I64(vals.map(|v| v.as_integer().unwrap_or_default()).collect());
        }
        if a.values.iter().all(|v| v.is_float() || v.is_integer()) {
            return Col::F64(
                vals.map(|v| v.as_float().or(v.as_integer().map(|i| i as f64)).unwrap_or_default()).collect(),
            );
        }
        if a.values.iter().all(|v| v.is_bool()) {
            return Col::Bool(vals.map(|v| v.as_bool().unwrap_or_default()).collect());
        }
    }
    Col::Str(choices.iter().map(|c| a.display(c[axis])).collect())
}

/// Build the results table of a sweep.
pub fn to_record_batch(exp: Option<&Experiment>, rows: &[Row]) -> Result<RecordBatch> {
    let mut cols: Vec<(String, Col)> = Vec::new();
    let s = |f: &dyn Fn(&Row) -> String| Col::Str(rows.iter().map(f).collect());
    let f = |f: &dyn Fn(&Row) -> f64| Col::F64(rows.iter().map(f).collect());
    let u = |f: &dyn Fn(&Row) -> u64| Col::U64(rows.iter().map(f).collect());
    let i = |f: &dyn Fn(&Row) -> i64| Col::I64(rows.iter().map(f).collect());
    cols.push(("model".into(), s(&|r| r.scenario.model.name.clone())));
    cols.push(("device".into(), s(&|r| r.scenario.device.name.clone())));
    cols.push(("weights.mix".into(), s(&|r| r.scenario.weights.mix.to_string())));
    cols.push(("kv.k".into(), s(&|r| r.scenario.kv.k.to_string())));
    cols.push(("kv.v".into(), s(&|r| r.scenario.kv.v.to_string())));
    cols.push(("workload.context_tokens".into(), u(&|r| r.scenario.workload.context_tokens)));
    cols.push(("workload.prompt_tokens".into(), u(&|r| r.scenario.workload.prompt_tokens)));
    cols.push(("workload.gen_tokens".into(), u(&|r| r.scenario.workload.gen_tokens)));
    cols.push(("workload.batch".into(), Col::U32(rows.iter().map(|r| r.scenario.workload.batch).collect())));
    cols.push(("workload.backend".into(), s(&|r| r.scenario.workload.backend.name().to_string())));
    if let Some(exp) = exp {
        for (ai, a) in exp.axes.iter().enumerate() {
            if a.paths.iter().all(|p| IDENTITY_COLUMNS.contains(&p.as_str())) && a.labels.is_none() {
                continue;
            }
            let name =
                if IDENTITY_COLUMNS.contains(&a.key.as_str()) { format!("{} (label)", a.key) } else { a.key.clone() };
            let choices: Vec<&[usize]> = rows.iter().map(|r| r.choice.as_slice()).collect();
            cols.push((name, axis_column(exp, ai, &choices)));
        }
    }
    cols.push(("threads".into(), Col::U32(rows.iter().map(|r| r.estimate.threads).collect())));
    cols.push(("params".into(), u(&|r| r.estimate.params)));
    cols.push(("active_params".into(), u(&|r| r.estimate.active_params)));
    cols.push(("weight_bytes".into(), u(&|r| r.estimate.weight_bytes)));
    cols.push(("weight_bpw".into(), f(&|r| r.estimate.weight_bpw)));
    cols.push(("kv_bytes".into(), u(&|r| r.estimate.kv_bytes)));
    cols.push(("state_bytes".into(), u(&|r| r.estimate.state_bytes)));
    cols.push(("compute_bytes".into(), u(&|r| r.estimate.compute_bytes)));
    cols.push(("overhead_bytes".into(), u(&|r| r.estimate.overhead_bytes)));
    cols.push(("total_bytes".into(), u(&|r| r.estimate.total_bytes)));
    cols.push(("budget_bytes".into(), i(&|r| r.estimate.budget_bytes)));
    cols.push(("headroom_bytes".into(), i(&|r| r.estimate.headroom_bytes)));
    cols.push(("fits".into(), Col::Bool(rows.iter().map(|r| r.estimate.fits).collect())));
    cols.push(("decode_tok_s".into(), f(&|r| r.estimate.decode_tok_s)));
    cols.push(("decode_ms_per_token".into(), f(&|r| r.estimate.decode_s_per_token * 1e3)));
    cols.push(("prefill_tok_s".into(), f(&|r| r.estimate.prefill_tok_s)));
    cols.push(("ttft_s".into(), f(&|r| r.estimate.ttft_s)));
    cols.push(("energy_j_per_token".into(), f(&|r| r.estimate.energy_j_per_token)));
    cols.push(("dram_bytes_per_token".into(), f(&|r| r.estimate.dram_bytes_per_token)));
    cols.push(("weight_bytes_per_token".into(), f(&|r| r.estimate.weight_bytes_per_token)));
    cols.push(("kv_bytes_per_token".into(), f(&|r| r.estimate.kv_bytes_per_token)));
    cols.push(("macs_per_token".into(), f(&|r| r.estimate.macs_per_token)));
    cols.push(("t_mem_ms".into(), f(&|r| r.estimate.decode_terms.t_mem * 1e3)));
    cols.push(("t_arith_ms".into(), f(&|r| r.estimate.decode_terms.t_arith * 1e3)));
    cols.push(("t_dequant_ms".into(), f(&|r| r.estimate.decode_terms.t_dequant * 1e3)));
    cols.push(("t_overhead_ms".into(), f(&|r| r.estimate.decode_terms.t_overhead * 1e3)));
    cols.push(("binding".into(), s(&|r| r.estimate.binding.name().to_string())));
    cols.push(("prefill_binding".into(), s(&|r| r.estimate.prefill_binding.map_or("none", |b| b.name()).to_string())));
    cols.push(("ppl_delta_weights".into(), Col::OptF64(rows.iter().map(|r| r.quality.ppl_delta_weights).collect())));
    cols.push(("ppl_delta_kv".into(), Col::OptF64(rows.iter().map(|r| r.quality.ppl_delta_kv).collect())));
    cols.push(("quality_source".into(), s(&|r| r.quality.source.clone())));

    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = cols.into_iter().map(|(n, c)| c.finish(&n)).unzip();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
        .map_err(|e| IoError::Write { path: "<record batch>".into(), message: e.to_string() })
}

/// Build the summary table of a simulated experiment: one row per point with its grid
/// values and every field of the simulator's summary (absent times are nulls).
pub fn simulated_to_record_batch(exp: &Experiment, sims: &[crate::simulate::Simulated]) -> Result<RecordBatch> {
    let mut cols: Vec<(String, Col)> = Vec::new();
    let choices: Vec<&[usize]> = sims.iter().map(|r| r.point.choice.as_slice()).collect();
    cols.push(("point".into(), Col::U32(sims.iter().map(|r| r.point.index as u32).collect())));
    cols.push(("model".into(), Col::Str(sims.iter().map(|r| r.point.scenario.model.name.clone()).collect())));
    cols.push(("device".into(), Col::Str(sims.iter().map(|r| r.point.scenario.device.name.clone()).collect())));
    cols.push((
        "weights.mix".into(),
        Col::Str(sims.iter().map(|r| r.point.scenario.weights.mix.to_string()).collect()),
    ));
    for (ai, a) in exp.axes.iter().enumerate() {
        if ["model", "device", "weights.mix"].contains(&a.key.as_str()) && a.labels.is_none() {
            continue;
        }
        cols.push((a.key.clone(), axis_column(exp, ai, &choices)));
    }
    let f = |g: &dyn Fn(&memwall_sim::des::Summary) -> f64| Col::F64(sims.iter().map(|r| g(&r.summary)).collect());
    let o = |g: &dyn Fn(&memwall_sim::des::Summary) -> Option<f64>| {
        Col::OptF64(sims.iter().map(|r| g(&r.summary)).collect())
    };
    let u = |g: &dyn Fn(&memwall_sim::des::Summary) -> u64| Col::U64(sims.iter().map(|r| g(&r.summary)).collect());
    cols.push(("duration_s".into(), f(&|s| s.duration_s)));
    cols.push(("load_s".into(), f(&|s| s.load_s)));
    cols.push(("ttft_s".into(), f(&|s| s.ttft_s)));
    cols.push(("decode_tokens".into(), u(&|s| s.decode_tokens)));
    cols.push(("decode_s".into(), f(&|s| s.decode_s)));
    cols.push(("decode_tok_s".into(), f(&|s| s.decode_tok_s)));
    cols.push(("burst_tok_s".into(), f(&|s| s.burst_tok_s)));
    cols.push(("sustained_tok_s".into(), f(&|s| s.sustained_tok_s)));
    cols.push(("throttle_onset_s".into(), o(&|s| s.throttle_onset_s)));
    cols.push(("time_to_minus_10pct_s".into(), o(&|s| s.time_to_minus_10pct_s)));
    cols.push(("time_to_minus_25pct_s".into(), o(&|s| s.time_to_minus_25pct_s)));
    cols.push(("energy_j".into(), f(&|s| s.energy_j)));
    cols.push(("j_per_token".into(), f(&|s| s.j_per_token)));
    cols.push(("peak_resident_bytes".into(), u(&|s| s.peak_resident_bytes)));
    cols.push(("flash_bytes".into(), f(&|s| s.flash_bytes)));
    cols.push(("max_die_c".into(), f(&|s| s.max_die_c)));
    cols.push(("max_skin_c".into(), f(&|s| s.max_skin_c)));
    cols.push(("killed_at_s".into(), o(&|s| s.killed_at_s)));
    cols.push(("actions".into(), Col::Str(sims.iter().map(|r| r.summary.actions.join("; ")).collect())));
    cols.push(("turns".into(), Col::U32(sims.iter().map(|r| r.summary.turns).collect())));
    cols.push(("events".into(), u(&|s| s.events)));
    cols.push(("trace_rows".into(), u(&|s| s.rows)));
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = cols.into_iter().map(|(n, c)| c.finish(&n)).unzip();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
        .map_err(|e| IoError::Write { path: "<record batch>".into(), message: e.to_string() })
}

/// Key-value metadata stored with every results file.
pub fn metadata(exp: Option<&Experiment>) -> Vec<(String, String)> {
    let mut kv = vec![("memwall_version".to_string(), env!("CARGO_PKG_VERSION").to_string())];
    if let Some(e) = exp {
        kv.push(("experiment_name".into(), e.name.clone()));
        kv.push(("experiment_toml".into(), e.text.clone()));
        kv.push(("seed".into(), e.seed.to_string()));
    }
    kv
}

/// Write `batch` to a Parquet file at `path` with `metadata`. The file is written to a
/// temporary file in the same directory and renamed into place, so a failure never leaves a
/// partial file.
pub fn write_parquet(path: &Path, batch: &RecordBatch, metadata: &[(String, String)]) -> Result<()> {
    let werr = |m: String| IoError::Write { path: path.to_path_buf(), message: m };
    let tmp = crate::atomic::temp_beside(path, ".parquet.tmp")?;
    let file: File = tmp.reopen().map_err(|source| IoError::File { path: tmp.path().into(), source })?;
    let props = WriterProperties::builder()
        .set_key_value_metadata(Some(metadata.iter().map(|(k, v)| KeyValue::new(k.clone(), Some(v.clone()))).collect()))
        .build();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(|e| werr(e.to_string()))?;
    w.write(batch).map_err(|e| werr(e.to_string()))?;
    w.close().map_err(|e| werr(e.to_string()))?;
    crate::atomic::publish(tmp, path)
}
