//! The columns of memwall's result tables, each defined once: a name, an Arrow type and how to
//! read the value from a design point. The estimator's sweep (`memwall run`) and the
//! simulator's summaries (`memwall simulate --summary`) share the input columns (`point`,
//! then [`INPUT_COLUMNS`]: model, device, weight and KV formats and every workload field) and
//! the grid-axis columns ([`AxisColumns`]), so the same input has the same name and type in
//! both files; each then adds its own metrics ([`ESTIMATE_COLUMNS`] and [`QUALITY_COLUMNS`],
//! or [`SIM_INPUT_COLUMNS`] and [`SUMMARY_COLUMNS`]).

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder, UInt32Builder, UInt64Builder,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use memwall_sim::Estimate;
use memwall_sim::des::Summary;
use memwall_spec::Scenario;

use crate::error::{LabError, Result};
use crate::experiment::Experiment;
use memwall_catalog::quality_table::Quality;

/// How a column reads its value from a row of type `R`.
pub enum Get<R> {
    /// Unsigned 64-bit integer.
    U64(fn(&R) -> u64),
    /// Unsigned 32-bit integer.
    U32(fn(&R) -> u32),
    /// Signed 64-bit integer.
    I64(fn(&R) -> i64),
    /// 64-bit float.
    F64(fn(&R) -> f64),
    /// 64-bit float or null.
    OptF64(fn(&R) -> Option<f64>),
    /// Unsigned 32-bit integer or null.
    OptU32(fn(&R) -> Option<u32>),
    /// Boolean.
    Bool(fn(&R) -> bool),
    /// Text.
    Str(fn(&R) -> &str),
    /// Text written by a `Display` value (no allocation per row).
    Display(fn(&R) -> &dyn std::fmt::Display),
}

/// One column: its name and how to read it.
pub struct Column<R> {
    /// Column name.
    pub name: &'static str,
    /// Reader.
    pub get: Get<R>,
}

impl<R> Column<R> {
    fn field(&self) -> Field {
        let (dt, nullable) = match self.get {
            Get::U64(_) => (DataType::UInt64, false),
            Get::U32(_) => (DataType::UInt32, false),
            Get::I64(_) => (DataType::Int64, false),
            Get::F64(_) => (DataType::Float64, false),
            Get::OptF64(_) => (DataType::Float64, true),
            Get::OptU32(_) => (DataType::UInt32, true),
            Get::Bool(_) => (DataType::Boolean, false),
            Get::Str(_) | Get::Display(_) => (DataType::Utf8, false),
        };
        Field::new(self.name, dt, nullable)
    }
}

/// One value of a column, read from one row: what a one-row answer (Python's `estimate`)
/// hands over without building Arrow arrays. Text that a column writes with `Display` is
/// owned; other text is borrowed from the row.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell<'r> {
    /// An unsigned integer (u64 or u32 columns).
    U64(u64),
    /// A signed integer.
    I64(i64),
    /// A float (NaN and infinities as they are).
    F64(f64),
    /// A boolean.
    Bool(bool),
    /// Text.
    Str(std::borrow::Cow<'r, str>),
    /// A null of a nullable column.
    Null,
}

/// A row as named cells, in column order.
pub type Cells<'r> = [(&'static str, Cell<'r>)];

impl<R> Column<R> {
    /// The column's value in row `r`.
    pub fn cell<'r>(&self, r: &'r R) -> Cell<'r> {
        use std::borrow::Cow;
        match &self.get {
            Get::U64(f) => Cell::U64(f(r)),
            Get::U32(f) => Cell::U64(f(r).into()),
            Get::I64(f) => Cell::I64(f(r)),
            Get::F64(f) => Cell::F64(f(r)),
            Get::OptF64(f) => f(r).map_or(Cell::Null, Cell::F64),
            Get::OptU32(f) => f(r).map_or(Cell::Null, |v| Cell::U64(v.into())),
            Get::Bool(f) => Cell::Bool(f(r)),
            Get::Str(f) => Cell::Str(Cow::Borrowed(f(r))),
            Get::Display(f) => Cell::Str(Cow::Owned(f(r).to_string())),
        }
    }
}

/// A typed Arrow builder.
enum Builder {
    U64(UInt64Builder),
    U32(UInt32Builder),
    I64(Int64Builder),
    F64(Float64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
}

impl Builder {
    fn for_type(dt: &DataType, rows: usize) -> Builder {
        match dt {
            DataType::UInt64 => Builder::U64(UInt64Builder::with_capacity(rows)),
            DataType::UInt32 => Builder::U32(UInt32Builder::with_capacity(rows)),
            DataType::Int64 => Builder::I64(Int64Builder::with_capacity(rows)),
            DataType::Float64 => Builder::F64(Float64Builder::with_capacity(rows)),
            DataType::Boolean => Builder::Bool(BooleanBuilder::with_capacity(rows)),
            _ => Builder::Str(StringBuilder::with_capacity(rows, 16 * rows)),
        }
    }

    /// The values so far; the builder is replaced by an empty one sized for `rows` rows (text
    /// at the bytes per row this batch took, so the next one does not grow its buffer).
    fn take(&mut self, rows: usize) -> ArrayRef {
        let next = match self {
            Builder::U64(_) => Builder::for_type(&DataType::UInt64, rows),
            Builder::U32(_) => Builder::for_type(&DataType::UInt32, rows),
            Builder::I64(_) => Builder::for_type(&DataType::Int64, rows),
            Builder::F64(_) => Builder::for_type(&DataType::Float64, rows),
            Builder::Bool(_) => Builder::for_type(&DataType::Boolean, rows),
            Builder::Str(b) => {
                let built = b.offsets_slice().len().saturating_sub(1).max(1);
                let per_row = b.values_slice().len().div_ceil(built).max(16);
                Builder::Str(StringBuilder::with_capacity(rows, per_row * rows))
            }
        };
        std::mem::replace(self, next).finish()
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::U64(b) => Arc::new(b.finish()),
            Builder::U32(b) => Arc::new(b.finish()),
            Builder::I64(b) => Arc::new(b.finish()),
            Builder::F64(b) => Arc::new(b.finish()),
            Builder::Bool(b) => Arc::new(b.finish()),
            Builder::Str(b) => Arc::new(b.finish()),
        }
    }
}

/// Builders for a fixed list of columns over rows of type `R`.
struct ColumnSet<R: 'static> {
    defs: &'static [Column<R>],
    builders: Vec<Builder>,
}

impl<R> ColumnSet<R> {
    fn new(defs: &'static [Column<R>], rows: usize) -> Self {
        ColumnSet { defs, builders: defs.iter().map(|c| Builder::for_type(c.field().data_type(), rows)).collect() }
    }

    fn append(&mut self, r: &R) {
        for (c, b) in self.defs.iter().zip(&mut self.builders) {
            match (&c.get, b) {
                (Get::U64(f), Builder::U64(b)) => b.append_value(f(r)),
                (Get::U32(f), Builder::U32(b)) => b.append_value(f(r)),
                (Get::I64(f), Builder::I64(b)) => b.append_value(f(r)),
                (Get::F64(f), Builder::F64(b)) => b.append_value(f(r)),
                (Get::OptF64(f), Builder::F64(b)) => b.append_option(f(r)),
                (Get::OptU32(f), Builder::U32(b)) => b.append_option(f(r)),
                (Get::Bool(f), Builder::Bool(b)) => b.append_value(f(r)),
                (Get::Str(f), Builder::Str(b)) => b.append_value(f(r)),
                (Get::Display(f), Builder::Str(b)) => {
                    use std::fmt::Write;
                    // Writing to an in-memory builder cannot fail.
                    let _ = write!(b, "{}", f(r));
                    b.append_value("");
                }
                _ => unreachable!("builders are made from the column types"),
            }
        }
    }
}

/// The inputs of a design point, in both `run` and `simulate` outputs, after the `point`
/// column (the point's index in the grid). Columns are named by their scenario path;
/// `workload.threads` is the thread count used (what the engine runs on the device,
/// [`memwall_spec::ThreadRule`], unless the workload sets it) and `workload.history_tokens`
/// the history the reply follows ([`memwall_spec::Scenario::history_tokens`]).
pub static INPUT_COLUMNS: &[Column<Scenario>] = &[
    Column { name: "model", get: Get::Str(|s| &s.model.name) },
    Column { name: "device", get: Get::Str(|s| &s.device.name) },
    Column { name: "engine", get: Get::Str(|s| &s.engine.name) },
    Column { name: "weights.mix", get: Get::Display(|s| &s.weights.mix) },
    Column { name: "kv.k", get: Get::Display(|s| &s.kv.k) },
    Column { name: "kv.v", get: Get::Display(|s| &s.kv.v) },
    Column { name: "workload.prompt_tokens", get: Get::U64(|s| s.workload.prompt_tokens) },
    Column { name: "workload.gen_tokens", get: Get::U64(|s| s.workload.gen_tokens) },
    Column { name: "workload.history_tokens", get: Get::U64(|s| s.history_tokens()) },
    Column { name: "workload.context_tokens", get: Get::U64(|s| s.workload.context_tokens) },
    Column {
        name: "workload.context_policy",
        get: Get::Str(|s| match s.workload.context_policy {
            memwall_spec::ContextPolicy::Allocate => "allocate",
            memwall_spec::ContextPolicy::Grow => "grow",
        }),
    },
    Column { name: "workload.batch", get: Get::U32(|s| s.workload.batch) },
    Column { name: "workload.threads", get: Get::U32(|s| s.threads()) },
    Column { name: "workload.ubatch", get: Get::U64(|s| s.workload.ubatch) },
    Column { name: "workload.backend", get: Get::Str(|s| s.workload.backend.name()) },
    Column { name: "workload.margin_bytes", get: Get::U64(|s| s.workload.margin_bytes) },
    Column { name: "workload.routing_skew", get: Get::F64(|s| s.workload.routing_skew) },
    Column { name: "workload.flash_attention", get: Get::Bool(|s| s.workload.flash_attention) },
    Column { name: "assume_defaults", get: Get::Bool(|s| s.assume_defaults) },
];

/// The simulator's own inputs, after [`INPUT_COLUMNS`] in `simulate` outputs.
pub static SIM_INPUT_COLUMNS: &[Column<Scenario>] = &[
    Column { name: "sim.seed", get: Get::U64(|s| s.sim.seed) },
    Column { name: "sim.duration_s", get: Get::OptF64(|s| s.sim.duration_s) },
];

/// The analytic estimate of a point (`memwall run`).
pub static ESTIMATE_COLUMNS: &[Column<Estimate>] = &[
    Column { name: "params", get: Get::U64(|e| e.params) },
    Column { name: "active_params", get: Get::U64(|e| e.active_params) },
    Column { name: "weight_bytes", get: Get::U64(|e| e.weight_bytes) },
    Column { name: "weight_bpw", get: Get::F64(|e| e.weight_bpw) },
    Column { name: "kv_bytes", get: Get::U64(|e| e.kv_bytes) },
    Column { name: "state_bytes", get: Get::U64(|e| e.state_bytes) },
    Column { name: "compute_bytes", get: Get::U64(|e| e.compute_bytes) },
    Column { name: "overhead_bytes", get: Get::U64(|e| e.overhead_bytes) },
    Column { name: "total_bytes", get: Get::U64(|e| e.total_bytes) },
    Column { name: "budget_bytes", get: Get::I64(|e| e.budget_bytes) },
    Column { name: "headroom_bytes", get: Get::I64(|e| e.headroom_bytes) },
    Column { name: "fits", get: Get::Bool(|e| e.fits) },
    Column { name: "assumed", get: Get::Str(|e| &e.assumed) },
    Column { name: "cpu_share", get: Get::F64(|e| e.cpu_share) },
    Column { name: "context_beyond_max", get: Get::Bool(|e| e.context_beyond_max) },
    Column { name: "resident_weight_bytes", get: Get::U64(|e| e.resident_weight_bytes) },
    Column { name: "decode_tok_s", get: Get::F64(|e| e.decode_tok_s) },
    Column { name: "decode_depth_tokens", get: Get::U64(|e| e.decode_depth_tokens) },
    Column { name: "decode_tok_s_lo", get: Get::OptF64(|e| e.decode_tok_s_interval.map(|i| i[0])) },
    Column { name: "decode_tok_s_hi", get: Get::OptF64(|e| e.decode_tok_s_interval.map(|i| i[1])) },
    Column { name: "decode_s_per_step", get: Get::F64(|e| e.decode_s_per_token) },
    Column { name: "prefill_tok_s", get: Get::F64(|e| e.prefill_tok_s) },
    Column { name: "prefill_tok_s_lo", get: Get::OptF64(|e| e.prefill_tok_s_interval.map(|i| i[0])) },
    Column { name: "prefill_tok_s_hi", get: Get::OptF64(|e| e.prefill_tok_s_interval.map(|i| i[1])) },
    Column { name: "prefill_s", get: Get::F64(|e| e.prefill_s) },
    Column { name: "ttft_s", get: Get::F64(|e| e.ttft_s) },
    Column { name: "energy_j_per_token", get: Get::F64(|e| e.energy_j_per_token) },
    Column { name: "reply_energy_j", get: Get::F64(|e| e.reply_energy_j) },
    Column { name: "battery_mah_per_reply", get: Get::OptF64(|e| e.battery_mah_per_reply) },
    Column { name: "battery_pct_per_hour", get: Get::OptF64(|e| e.battery_pct_per_hour) },
    Column { name: "dram_bytes_per_token", get: Get::F64(|e| e.dram_bytes_per_token) },
    Column { name: "weight_bytes_per_token", get: Get::F64(|e| e.weight_bytes_per_token) },
    Column { name: "kv_bytes_per_token", get: Get::F64(|e| e.kv_bytes_per_token) },
    Column { name: "flash_bytes_per_token", get: Get::F64(|e| e.flash_bytes_per_token) },
    Column { name: "macs_per_token", get: Get::F64(|e| e.macs_per_token) },
    Column { name: "t_mem_s", get: Get::F64(|e| e.decode_terms.t_mem) },
    Column { name: "t_arith_s", get: Get::F64(|e| e.decode_terms.t_arith) },
    Column { name: "t_dequant_s", get: Get::F64(|e| e.decode_terms.t_dequant) },
    Column { name: "t_overhead_s", get: Get::F64(|e| e.decode_terms.t_overhead) },
    Column { name: "t_storage_s", get: Get::F64(|e| e.decode_terms.t_storage) },
    Column { name: "binding", get: Get::Str(|e| e.binding.name()) },
    Column { name: "prefill_binding", get: Get::Str(|e| e.prefill_binding.map_or("none", |b| b.name())) },
];

/// The quality cost of a point's weight and KV formats, looked up in the quality table.
pub static QUALITY_COLUMNS: &[Column<Quality>] = &[
    Column { name: "ppl_delta_weights", get: Get::OptF64(|q| q.ppl_delta_weights) },
    Column { name: "ppl_delta_kv", get: Get::OptF64(|q| q.ppl_delta_kv) },
    Column { name: "ppl_increase_pct", get: Get::OptF64(|q| q.ppl_increase_pct()) },
    Column { name: "ppl_increase_pct_hi", get: Get::OptF64(|q| q.ppl_increase_pct_hi()) },
    Column { name: "weights_quality_provenance", get: Get::Str(|q| q.weights_provenance.name()) },
    Column { name: "kv_quality_provenance", get: Get::Str(|q| q.kv_provenance.name()) },
    Column { name: "ptq_unusable", get: Get::Bool(|q| q.ptq_unusable.is_some()) },
    Column { name: "quality_verdict", get: Get::Str(|q| q.verdict()) },
    Column { name: "weights_quality_architecture", get: Get::Str(|q| q.weights_architecture.name()) },
    Column { name: "model_mmlu", get: Get::OptF64(|q| q.model_mmlu.as_ref().map(|s| s.score)) },
    Column { name: "model_mmlu_setup", get: Get::Str(|q| q.model_mmlu.as_ref().map_or("", |s| s.setup.as_str())) },
    Column { name: "model_mmlu_source", get: Get::Str(|q| q.model_mmlu.as_ref().map_or("", |s| s.source.as_str())) },
    Column { name: "quality_source", get: Get::Str(|q| &q.source) },
];

/// The simulator's summary of a point (`memwall simulate --summary`); absent times are nulls,
/// and so are TTFT, the decode rate and J/token of a run that produced no token.
pub static SUMMARY_COLUMNS: &[Column<Summary>] = &[
    Column { name: "duration_s", get: Get::F64(|s| s.duration_s) },
    Column { name: "load_s", get: Get::F64(|s| s.load_s) },
    Column { name: "ttft_s", get: Get::OptF64(|s| s.ttft_s) },
    Column { name: "decode_tokens", get: Get::U64(|s| s.decode_tokens) },
    Column { name: "decode_s", get: Get::F64(|s| s.decode_s) },
    Column { name: "decode_tok_s", get: Get::OptF64(|s| s.decode_tok_s) },
    Column { name: "burst_tok_s", get: Get::F64(|s| s.burst_tok_s) },
    Column { name: "sustained_tok_s", get: Get::F64(|s| s.sustained_tok_s) },
    Column { name: "throttle_onset_s", get: Get::OptF64(|s| s.throttle_onset_s) },
    Column { name: "time_to_minus_10pct_s", get: Get::OptF64(|s| s.time_to_minus_10pct_s) },
    Column { name: "time_to_minus_25pct_s", get: Get::OptF64(|s| s.time_to_minus_25pct_s) },
    Column { name: "energy_j", get: Get::F64(|s| s.energy_j) },
    Column { name: "j_per_token", get: Get::OptF64(|s| s.j_per_token) },
    Column { name: "prefill_energy_j", get: Get::F64(|s| s.prefill_energy_j) },
    Column { name: "decode_energy_j", get: Get::F64(|s| s.decode_energy_j) },
    Column { name: "idle_energy_j", get: Get::F64(|s| s.idle_energy_j) },
    Column { name: "reply_energy_j", get: Get::OptF64(|s| s.reply_energy_j) },
    Column { name: "battery_pct", get: Get::OptF64(|s| s.battery_pct) },
    Column { name: "peak_resident_bytes", get: Get::U64(|s| s.peak_resident_bytes) },
    Column { name: "flash_bytes", get: Get::F64(|s| s.flash_bytes) },
    Column { name: "max_die_c", get: Get::F64(|s| s.max_die_c) },
    Column { name: "max_skin_c", get: Get::F64(|s| s.max_skin_c) },
    Column { name: "max_level", get: Get::U32(|s| s.max_level) },
    Column { name: "max_thermal_status", get: Get::Str(|s| s.max_thermal_status.name()) },
    Column { name: "mean_power_w", get: Get::F64(|s| s.mean_power_w) },
    Column { name: "unit_decode_power_w", get: Get::F64(|s| s.unit_decode_power_w) },
    Column { name: "killed_at_s", get: Get::OptF64(|s| s.killed_at_s) },
    Column { name: "turns", get: Get::U32(|s| s.turns) },
    Column { name: "events", get: Get::U64(|s| s.events) },
    Column { name: "trace_rows", get: Get::U64(|s| s.rows) },
];

/// Columns of a footprint's tensor table: one row per weight tensor with the format the mix
/// gave it and its bytes (a [`memwall_sim::WeightBytes`] entry).
pub static TENSOR_COLUMNS: &[Column<(memwall_spec::Tensor, memwall_spec::QuantFormat, u64)>] = &[
    Column { name: "class", get: Get::Str(|t| t.0.class.name()) },
    Column { name: "layer", get: Get::OptU32(|t| t.0.layer) },
    Column { name: "rows", get: Get::U64(|t| t.0.rows) },
    Column { name: "row_len", get: Get::U64(|t| t.0.row_len) },
    Column { name: "experts", get: Get::U64(|t| t.0.experts) },
    Column { name: "format", get: Get::Display(|t| &t.1) },
    Column { name: "params", get: Get::U64(|t| t.0.elements()) },
    Column { name: "bytes", get: Get::U64(|t| t.2) },
];

/// `rows` under a fixed column list as JSON objects, one per row, keyed by column name (the
/// same columns and values a Parquet export of them carries; a non-finite float is null).
pub fn json_rows<R>(defs: &'static [Column<R>], rows: &[R]) -> Vec<serde_json::Value> {
    use serde_json::Value;
    let float = |v: f64| serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number);
    rows.iter()
        .map(|r| {
            let mut m = serde_json::Map::new();
            for c in defs {
                let v = match c.cell(r) {
                    Cell::U64(v) => Value::from(v),
                    Cell::I64(v) => Value::from(v),
                    Cell::F64(v) => float(v),
                    Cell::Bool(v) => Value::from(v),
                    Cell::Str(v) => Value::from(v.into_owned()),
                    Cell::Null => Value::Null,
                };
                m.insert(c.name.to_string(), v);
            }
            Value::Object(m)
        })
        .collect()
}

/// A numeric cell: an integer (exact) or a float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// An integer column's value.
    Int(i128),
    /// A float column's value.
    Float(f64),
}

impl Number {
    /// The value as a float.
    pub fn as_f64(self) -> f64 {
        match self {
            Number::Int(v) => v as f64,
            Number::Float(v) => v,
        }
    }
}

/// The value of column `c` in row `r` if the column holds numbers (None: text or booleans;
/// `Some(None)`: a null).
pub fn number<R>(c: &Column<R>, r: &R) -> Option<Option<Number>> {
    Some(match &c.get {
        Get::U64(f) => Some(Number::Int(f(r).into())),
        Get::U32(f) => Some(Number::Int(f(r).into())),
        Get::I64(f) => Some(Number::Int(f(r).into())),
        Get::F64(f) => Some(Number::Float(f(r))),
        Get::OptF64(f) => f(r).map(Number::Float),
        Get::OptU32(f) => f(r).map(|v| Number::Int(v.into())),
        Get::Bool(_) | Get::Str(_) | Get::Display(_) => return None,
    })
}

/// The column `name` of a batch of results, or an error saying it is missing.
pub fn by_name<'b>(batch: &'b RecordBatch, name: &str) -> Result<&'b arrow::array::ArrayRef> {
    batch.column_by_name(name).ok_or_else(|| LabError::Write {
        path: "<record batch>".into(),
        message: format!("results lack column `{name}`"),
    })
}

/// One operator of a decoded token with its time ([`memwall_sim::cost::ops::op_times`]): the
/// `estimate --ops` table and its JSON.
pub static OP_COLUMNS: &[Column<(memwall_sim::cost::ops::Op, memwall_sim::StepTime)>] = &[
    Column { name: "layer", get: Get::OptU32(|o| o.0.layer) },
    Column { name: "op", get: Get::Str(|o| o.0.kind.name()) },
    Column { name: "weight_bytes", get: Get::F64(|o| o.0.weight_bytes) },
    Column { name: "kv_bytes", get: Get::F64(|o| o.0.kv_bytes) },
    Column { name: "macs", get: Get::F64(|o| o.0.macs) },
    Column { name: "time_s", get: Get::F64(|o| o.1.total) },
    Column { name: "t_mem_s", get: Get::F64(|o| o.1.t_mem) },
    Column { name: "t_arith_s", get: Get::F64(|o| o.1.t_arith) },
    Column { name: "t_dequant_s", get: Get::F64(|o| o.1.t_dequant) },
    Column { name: "binding", get: Get::Str(|o| o.1.binding().name()) },
];

/// The columns of a validation report (`memwall validate --out`).
pub static REPORT_COLUMNS: &[Column<memwall_calib::published::Validated>] = {
    &[
        Column { name: "id", get: Get::Str(|v| &v.id) },
        Column { name: "unit_device", get: Get::Str(|v| &v.unit_device) },
        Column { name: "device", get: Get::Str(|v| &v.device) },
        Column { name: "class", get: Get::Str(|v| &v.class) },
        Column { name: "engine", get: Get::Str(|v| &v.engine) },
        Column { name: "backend", get: Get::Str(|v| &v.backend) },
        Column { name: "model", get: Get::Str(|v| &v.model) },
        Column { name: "weights", get: Get::Str(|v| &v.weights) },
        Column { name: "phase", get: Get::Str(|v| v.phase.name()) },
        Column { name: "measured_tok_s", get: Get::F64(|v| v.measured_tok_s) },
        Column { name: "predicted_tok_s", get: Get::F64(|v| v.predicted_tok_s) },
        Column { name: "in_sample_tok_s", get: Get::F64(|v| v.in_sample_tok_s) },
        Column { name: "sheet_tok_s", get: Get::F64(|v| v.sheet_tok_s) },
        Column { name: "family_tok_s", get: Get::F64(|v| v.family_tok_s) },
        Column { name: "engine_out_tok_s", get: Get::F64(|v| v.engine_tok_s) },
        Column { name: "roofline_tok_s", get: Get::F64(|v| v.roofline_tok_s) },
        Column { name: "error", get: Get::F64(|v| v.predicted_tok_s / v.measured_tok_s - 1.0) },
        Column { name: "roofline_error", get: Get::F64(|v| v.roofline_tok_s / v.measured_tok_s - 1.0) },
    ]
};

/// Columns of the `memwall validate --host` report, one row per design run on this machine.
pub static HOST_REPORT_COLUMNS: &[Column<memwall_calib::hostval::HostRow>] = {
    &[
        Column { name: "id", get: Get::Str(|v| &v.id) },
        Column { name: "what", get: Get::Str(|v| &v.what) },
        Column { name: "model", get: Get::Str(|v| &v.model) },
        Column { name: "weights", get: Get::Str(|v| &v.weights) },
        Column { name: "kv", get: Get::Str(|v| &v.kv) },
        Column { name: "context", get: Get::U64(|v| v.context) },
        Column { name: "threads", get: Get::U32(|v| v.threads) },
        Column { name: "weight_bytes", get: Get::U64(|v| v.weight_bytes) },
        Column { name: "measured_tok_s", get: Get::F64(|v| v.measured_tok_s) },
        Column { name: "repeats", get: Get::U32(|v| v.measured_runs.len() as u32) },
        Column { name: "measured_min_tok_s", get: Get::F64(|v| v.measured_range().0) },
        Column { name: "measured_max_tok_s", get: Get::F64(|v| v.measured_range().1) },
        Column { name: "noise", get: Get::F64(|v| v.noise()) },
        Column { name: "estimated_tok_s", get: Get::F64(|v| v.estimated_tok_s) },
        Column { name: "simulated_tok_s", get: Get::F64(|v| v.simulated_tok_s) },
        Column { name: "error", get: Get::F64(|v| v.error()) },
        Column { name: "sim_error", get: Get::F64(|v| v.sim_error()) },
        Column { name: "binding", get: Get::Str(|v| &v.binding) },
    ]
};

/// Columns of the `memwall validate --energy` report, one row per published power
/// measurement predicted at its boundary.
pub static ENERGY_REPORT_COLUMNS: &[Column<memwall_calib::energy::EnergyCheck>] = {
    &[
        Column { name: "id", get: Get::Str(|c| &c.id) },
        Column { name: "unit_device", get: Get::Str(|c| &c.unit_device) },
        Column { name: "device", get: Get::Str(|c| &c.device) },
        Column { name: "class", get: Get::Str(|c| &c.class) },
        Column { name: "engine", get: Get::Str(|c| &c.engine) },
        Column { name: "backend", get: Get::Str(|c| &c.backend) },
        Column { name: "model", get: Get::Str(|c| &c.model) },
        Column { name: "weights", get: Get::Str(|c| &c.weights) },
        Column { name: "boundary", get: Get::Str(|c| c.boundary.name()) },
        Column { name: "window", get: Get::Str(|c| c.window.name()) },
        Column { name: "measured_tok_s", get: Get::F64(|c| c.measured_tok_s) },
        Column { name: "predicted_tok_s", get: Get::F64(|c| c.predicted_tok_s) },
        Column { name: "measured_w", get: Get::F64(|c| c.measured_w) },
        Column { name: "run_bound_w", get: Get::OptF64(|c| c.run_bound_w) },
        Column { name: "predicted_w", get: Get::F64(|c| c.predicted_w) },
        Column { name: "measured_j_per_token", get: Get::F64(|c| c.measured_j_per_token) },
        Column { name: "predicted_j_per_token", get: Get::F64(|c| c.predicted_j_per_token) },
    ]
};

/// Columns of `memwall validate --sustained --out`: one row per published sustained run
/// simulated.
pub static SUSTAINED_REPORT_COLUMNS: &[Column<memwall_calib::sustained::SustainedCheck>] = {
    &[
        Column { name: "id", get: Get::Str(|c| &c.id) },
        Column { name: "unit_device", get: Get::Str(|c| &c.unit_device) },
        Column { name: "device", get: Get::Str(|c| &c.device) },
        Column { name: "class", get: Get::Str(|c| &c.class) },
        Column { name: "network", get: Get::Str(|c| &c.network) },
        Column { name: "engine", get: Get::Str(|c| &c.engine) },
        Column { name: "backend", get: Get::Str(|c| &c.backend) },
        Column { name: "model", get: Get::Str(|c| &c.model) },
        Column { name: "measured_first_tok_s", get: Get::F64(|c| c.measured_first_tok_s) },
        Column { name: "predicted_first_tok_s", get: Get::F64(|c| c.predicted_first_tok_s) },
        Column { name: "measured_retained", get: Get::OptF64(|c| c.retained.map(|r| r.measured)) },
        Column { name: "predicted_retained", get: Get::OptF64(|c| c.predicted_retained) },
        Column { name: "measured_t25_s", get: Get::OptF64(|c| c.measured_t25_s) },
        Column { name: "predicted_t25_s", get: Get::OptF64(|c| c.predicted_t25_s) },
        Column { name: "ended_early", get: Get::Bool(|c| c.ended_early) },
        Column { name: "predicted_end_s", get: Get::OptF64(|c| c.predicted_end_s) },
        Column { name: "measured_max_die_c_lo", get: Get::OptF64(|c| c.measured_max_die_c.map(|d| d.0)) },
        Column { name: "measured_max_die_c_hi", get: Get::OptF64(|c| c.measured_max_die_c.map(|d| d.1)) },
        Column { name: "predicted_max_die_c", get: Get::F64(|c| c.predicted_max_die_c) },
        Column { name: "max_level", get: Get::U32(|c| c.max_level) },
        Column { name: "max_thermal_status", get: Get::Str(|c| c.max_status.name()) },
        Column { name: "mean_power_w", get: Get::F64(|c| c.summary.mean_power_w) },
        Column { name: "j_per_token", get: Get::OptF64(|c| c.summary.j_per_token) },
    ]
};

/// Columns of a host calibration's fitted figures (`memwall calibrate`'s table).
pub static FITTED_COLUMNS: &[Column<memwall_calib::hostfit::Fitted>] = {
    &[
        Column { name: "field", get: Get::Str(|f| &f.field) },
        Column { name: "value", get: Get::F64(|f| f.value) },
        Column { name: "lo", get: Get::F64(|f| f.lo) },
        Column { name: "hi", get: Get::F64(|f| f.hi) },
        Column { name: "how", get: Get::Str(|f| &f.how) },
    ]
};

/// The columns of a calibration's residual table.
pub static RESIDUAL_COLUMNS: &[Column<memwall_calib::llama_bench::Residual>] = {
    &[
        Column { name: "line", get: Get::U64(|r| r.line as u64) },
        Column { name: "phase", get: Get::Str(|r| r.phase.name()) },
        Column { name: "prompt", get: Get::U64(|r| r.prompt) },
        Column { name: "depth", get: Get::U64(|r| r.depth) },
        Column { name: "threads", get: Get::OptU32(|r| r.threads) },
        Column { name: "measured_tok_s", get: Get::F64(|r| r.measured_tok_s) },
        Column { name: "before_tok_s", get: Get::F64(|r| r.before_tok_s) },
        Column { name: "calibrated_tok_s", get: Get::F64(|r| r.calibrated_tok_s) },
        Column { name: "error", get: Get::F64(|r| r.calibrated_tok_s / r.measured_tok_s - 1.0) },
    ]
};

/// A record batch of `rows` under a fixed column list (a report's rows, all in memory).
pub fn batch_of<R>(defs: &'static [Column<R>], rows: &[R]) -> Result<RecordBatch> {
    let mut set = ColumnSet::new(defs, rows.len());
    for r in rows {
        set.append(r);
    }
    let schema = Arc::new(Schema::new(defs.iter().map(Column::field).collect::<Vec<_>>()));
    let arrays: Vec<ArrayRef> = set.builders.iter_mut().map(Builder::finish).collect();
    RecordBatch::try_new(schema, arrays)
        .map_err(|e| LabError::Write { path: "<record batch>".into(), message: e.to_string() })
}

/// How a grid axis is stored: integers, floats, booleans or text (labels are text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AxisKind {
    Int,
    Float,
    Bool,
    Text,
}

/// The grid axes that no input column already shows, one column each, named by the axis
/// key: an axis over other paths (`model.n_kv_heads`, `kv.k+kv.v` with labels), or a labelled
/// axis over an input column (`weights.mix (label)`).
#[derive(Debug, Clone)]
pub struct AxisColumns {
    /// (axis index, column name, kind).
    axes: Vec<(usize, String, AxisKind)>,
}

impl AxisColumns {
    /// The axis columns of `exp`.
    pub fn new(exp: &Experiment) -> Self {
        let is_input = |p: &str| INPUT_COLUMNS.iter().any(|c| c.name == p) || ["weights", "kv", "engine"].contains(&p);
        let mut axes = Vec::new();
        for (i, a) in exp.axes.iter().enumerate() {
            if a.paths.iter().all(|p| is_input(p)) && a.labels.is_none() {
                continue;
            }
            let name = if is_input(&a.key) { format!("{} (label)", a.key) } else { a.key.clone() };
            let kind = if a.labels.is_some() {
                AxisKind::Text
            } else if a.values.iter().all(|v| v.is_integer()) {
                AxisKind::Int
            } else if a.values.iter().all(|v| v.is_float() || v.is_integer()) {
                AxisKind::Float
            } else if a.values.iter().all(|v| v.is_bool()) {
                AxisKind::Bool
            } else {
                AxisKind::Text
            };
            axes.push((i, name, kind));
        }
        AxisColumns { axes }
    }

    fn fields(&self) -> Vec<Field> {
        self.axes
            .iter()
            .map(|(_, name, kind)| {
                let dt = match kind {
                    AxisKind::Int => DataType::Int64,
                    AxisKind::Float => DataType::Float64,
                    AxisKind::Bool => DataType::Boolean,
                    AxisKind::Text => DataType::Utf8,
                };
                Field::new(name, dt, false)
            })
            .collect()
    }

    fn append(&self, exp: &Experiment, choice: &[usize], builders: &mut [Builder]) {
        for ((ai, _, _), b) in self.axes.iter().zip(builders) {
            let a = &exp.axes[*ai];
            let v = &a.values[choice[*ai]];
            match b {
                Builder::I64(b) => b.append_value(v.as_integer().unwrap_or_default()),
                Builder::F64(b) => {
                    b.append_value(v.as_float().or(v.as_integer().map(|i| i as f64)).unwrap_or_default())
                }
                Builder::Bool(b) => b.append_value(v.as_bool().unwrap_or_default()),
                Builder::Str(b) => b.append_value(a.display(choice[*ai])),
                _ => unreachable!("axis builders are made from the axis kinds"),
            }
        }
    }
}

/// A results table being filled: `point`, the input columns, the axis columns, then the
/// metrics (`M`: [`Estimate`] and its [`Quality`] for the estimator, [`Summary`] after
/// [`SIM_INPUT_COLUMNS`] for the simulator).
pub struct TableBuilder<M: 'static> {
    schema: SchemaRef,
    point: UInt64Builder,
    inputs: ColumnSet<Scenario>,
    sim_inputs: Option<ColumnSet<Scenario>>,
    axes: AxisColumns,
    axis_builders: Vec<Builder>,
    metrics: ColumnSet<M>,
    quality: Option<ColumnSet<Quality>>,
    rows: usize,
    /// Rows the builders are sized for after each [`TableBuilder::finish`].
    capacity: usize,
}

impl<M> TableBuilder<M> {
    fn with(axes: AxisColumns, sim: bool, metrics: &'static [Column<M>], quality: bool, rows: usize) -> Self {
        let mut fields = vec![Field::new("point", DataType::UInt64, false)];
        fields.extend(INPUT_COLUMNS.iter().map(Column::field));
        if sim {
            fields.extend(SIM_INPUT_COLUMNS.iter().map(Column::field));
        }
        let axis_fields = axes.fields();
        let axis_builders = axis_fields.iter().map(|f| Builder::for_type(f.data_type(), rows)).collect();
        fields.extend(axis_fields);
        fields.extend(metrics.iter().map(Column::field));
        if quality {
            fields.extend(QUALITY_COLUMNS.iter().map(Column::field));
        }
        TableBuilder {
            schema: Arc::new(Schema::new(fields)),
            point: UInt64Builder::with_capacity(rows),
            inputs: ColumnSet::new(INPUT_COLUMNS, rows),
            sim_inputs: sim.then(|| ColumnSet::new(SIM_INPUT_COLUMNS, rows)),
            axes,
            axis_builders,
            metrics: ColumnSet::new(metrics, rows),
            quality: quality.then(|| ColumnSet::new(QUALITY_COLUMNS, rows)),
            rows: 0,
            capacity: rows,
        }
    }

    /// The table's schema (without metadata).
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Rows appended since the last [`TableBuilder::finish`].
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no row is buffered.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    fn append_inputs(&mut self, exp: &Experiment, point: u64, s: &Scenario, choice: &[usize]) {
        self.point.append_value(point);
        self.inputs.append(s);
        if let Some(set) = &mut self.sim_inputs {
            set.append(s);
        }
        self.axes.append(exp, choice, &mut self.axis_builders);
        self.rows += 1;
    }

    /// The rows appended so far as a record batch; the builders start empty again, sized for
    /// as many rows as the table was made for.
    pub fn finish(&mut self) -> Result<RecordBatch> {
        let n = self.capacity;
        let mut arrays: Vec<ArrayRef> =
            vec![Arc::new(std::mem::replace(&mut self.point, UInt64Builder::with_capacity(n)).finish())];
        let take = |b: &mut Builder| b.take(n);
        arrays.extend(self.inputs.builders.iter_mut().map(take));
        if let Some(s) = &mut self.sim_inputs {
            arrays.extend(s.builders.iter_mut().map(take));
        }
        arrays.extend(self.axis_builders.iter_mut().map(take));
        arrays.extend(self.metrics.builders.iter_mut().map(take));
        if let Some(q) = &mut self.quality {
            arrays.extend(q.builders.iter_mut().map(take));
        }
        self.rows = 0;
        RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| LabError::Write { path: "<record batch>".into(), message: e.to_string() })
    }
}

impl TableBuilder<Estimate> {
    /// The table of an estimator sweep over `exp`, with room for `rows` rows.
    pub fn estimates(exp: &Experiment, rows: usize) -> Self {
        Self::with(AxisColumns::new(exp), false, ESTIMATE_COLUMNS, true, rows)
    }

    /// Append a point (index `point`, grid `choice`) and its estimate.
    pub fn append(&mut self, exp: &Experiment, point: u64, s: &Scenario, choice: &[usize], e: &Estimate, q: &Quality) {
        self.append_inputs(exp, point, s, choice);
        self.metrics.append(e);
        if let Some(set) = &mut self.quality {
            set.append(q);
        }
    }
}

/// The row of one design evaluated alone, cell by cell: the columns of
/// [`TableBuilder::estimates`] for an experiment without grid axes (`point` 0, the inputs,
/// the estimate, its quality) in their order, but for the `pareto` column, which
/// [`crate::pareto::Alone`] reads from these cells.
pub fn design_cells<'r>(s: &'r Scenario, e: &'r Estimate, q: &'r Quality) -> Vec<(&'static str, Cell<'r>)> {
    let mut out = Vec::with_capacity(1 + INPUT_COLUMNS.len() + ESTIMATE_COLUMNS.len() + QUALITY_COLUMNS.len() + 1);
    out.push(("point", Cell::U64(0)));
    out.extend(INPUT_COLUMNS.iter().map(|c| (c.name, c.cell(s))));
    out.extend(ESTIMATE_COLUMNS.iter().map(|c| (c.name, c.cell(e))));
    out.extend(QUALITY_COLUMNS.iter().map(|c| (c.name, c.cell(q))));
    out
}

impl TableBuilder<Summary> {
    /// The summary table of a simulated experiment.
    pub fn summaries(exp: &Experiment, rows: usize) -> Self {
        Self::with(AxisColumns::new(exp), true, SUMMARY_COLUMNS, false, rows)
    }

    /// Append a simulated point and its summary.
    pub fn append(&mut self, exp: &Experiment, point: u64, s: &Scenario, choice: &[usize], summary: &Summary) {
        self.append_inputs(exp, point, s, choice);
        self.metrics.append(summary);
    }
}

/// The rows `rows` of a record batch as JSON, column by column: `{"columns": [name, ...],
/// "data": {name: [value, ...]}}`. Integers stay exact, a non-finite float or a null is null,
/// and any other type (text, dictionaries) is its display string. A page or a notebook reads
/// a column as one array.
pub fn batch_json(batch: &RecordBatch, rows: &[usize]) -> serde_json::Value {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{DataType, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type};
    use serde_json::Value;
    let float = |v: f64| serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number);
    let schema = batch.schema();
    let mut data = serde_json::Map::new();
    for (field, col) in schema.fields().iter().zip(batch.columns()) {
        let cell = |i: usize| -> Value {
            if col.is_null(i) {
                return Value::Null;
            }
            match col.data_type() {
                DataType::Float64 => float(col.as_primitive::<Float64Type>().value(i)),
                DataType::UInt64 => col.as_primitive::<UInt64Type>().value(i).into(),
                DataType::UInt32 => col.as_primitive::<UInt32Type>().value(i).into(),
                DataType::Int64 => col.as_primitive::<Int64Type>().value(i).into(),
                DataType::Int32 => col.as_primitive::<Int32Type>().value(i).into(),
                DataType::Boolean => col.as_boolean().value(i).into(),
                _ => arrow::util::display::array_value_to_string(col, i).unwrap_or_default().into(),
            }
        };
        data.insert(field.name().clone(), Value::Array(rows.iter().map(|&i| cell(i)).collect()));
    }
    let columns: Vec<Value> = schema.fields().iter().map(|f| Value::from(f.name().as_str())).collect();
    serde_json::json!({ "columns": columns, "data": data })
}
