//! Sweeps at a million points a second: every point of an experiment through the analytic
//! estimator, in grid order, batch by batch, with memory bounded by the batch and not by the
//! grid.
//!
//! Building a point through the experiment's TOML document (set the axis values, deserialize,
//! validate) costs tens of microseconds, so a sweep does it only where it must:
//!
//! - an axis over a typed field (`workload.*`, `kv.k`, `kv.v`, `weights.mix`, or a whole
//!   `model`, `device`, `engine`, `weights`, `kv` or `workload`) is *fast*: its values are parsed once
//!   and assigned to the field directly, and only when they change from the previous point;
//! - every other axis (`model.n_kv_heads`, `device.memory.data_rate_mtps`, `cost.*`, …) is
//!   *slow*: each combination of slow values is built once through TOML into a template that
//!   the fast axes then modify (an axis whose path lies inside a slow one's, or the other way
//!   round, is slow too, so the order of assignments stays that of the TOML path);
//! - the axes that can change the model, device, weight mix or cost model number the
//!   combinations that share a [`TensorPlan`](memwall_sim::TensorPlan), which each worker's
//!   [`Estimator`] keeps by that number, so a point pays only for the terms that change.
//!
//! Each batch is split into a few contiguous ranges per thread; the values are those of
//! [`memwall_sim::estimate`] whatever the thread count or batch size (tested).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow::record_batch::RecordBatch;
use memwall_sim::{Estimate, Estimator};
use memwall_spec::{QuantFormat, Scenario};
use rayon::prelude::*;
use serde::de::DeserializeOwned;

use crate::columns::TableBuilder;
use crate::error::{LabError, Result};
use crate::experiment::Experiment;
use crate::files::metadata::Resolved;
use memwall_catalog::quality_table::{ModelRef, Quality, QualityTable};

/// Points per batch handed to the caller (one Parquet row group).
pub const BATCH_POINTS: usize = crate::files::parquet::ROW_GROUP_ROWS;

/// Assigns one axis's value to a scenario.
trait Setter: Send + Sync {
    fn set(&self, s: &mut Scenario, value: usize);
}

/// A typed field and the axis's values parsed for it.
struct Field<T> {
    field: fn(&mut Scenario) -> &mut T,
    values: Vec<T>,
}

impl<T: Clone + Send + Sync> Setter for Field<T> {
    fn set(&self, s: &mut Scenario, value: usize) {
        *(self.field)(s) = self.values[value].clone();
    }
}

/// Parse an axis's values for a field of type `T`; errors name the axis and the value.
fn field<T: DeserializeOwned + Clone + Send + Sync + 'static>(
    key: &str,
    values: &[toml::Value],
    field: fn(&mut Scenario) -> &mut T,
) -> Result<Box<dyn Setter>> {
    let values = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.clone().try_into::<T>().map_err(|e| {
                LabError::Spec(memwall_spec::SpecError::invalid(format!("grid.\"{key}\"[{i}]"), v, e.to_string()))
            })
        })
        .collect::<Result<Vec<T>>>()?;
    Ok(Box::new(Field { field, values }))
}

/// The typed setter of `path`, or `None` for a path set through TOML.
fn fast_setter(path: &str, key: &str, values: &[toml::Value]) -> Option<Result<Box<dyn Setter>>> {
    Some(match path {
        "model" => field(key, values, |s| &mut s.model),
        "device" => field(key, values, |s| &mut s.device),
        "weights" => field(key, values, |s| &mut s.weights),
        "weights.mix" => field(key, values, |s| &mut s.weights.mix),
        "kv" => field(key, values, |s| &mut s.kv),
        "kv.k" => field(key, values, |s| &mut s.kv.k),
        "kv.v" => field(key, values, |s| &mut s.kv.v),
        "engine" => field(key, values, |s| &mut s.engine),
        "assume_defaults" => field(key, values, |s| &mut s.assume_defaults),
        "workload" => field(key, values, |s| &mut s.workload),
        "workload.prompt_tokens" => field(key, values, |s| &mut s.workload.prompt_tokens),
        "workload.gen_tokens" => field(key, values, |s| &mut s.workload.gen_tokens),
        "workload.history_tokens" => field(key, values, |s| &mut s.workload.history_tokens),
        "workload.context_tokens" => field(key, values, |s| &mut s.workload.context_tokens),
        "workload.context_policy" => field(key, values, |s| &mut s.workload.context_policy),
        "workload.batch" => field(key, values, |s| &mut s.workload.batch),
        "workload.threads" => field(key, values, |s| &mut s.workload.threads),
        "workload.ubatch" => field(key, values, |s| &mut s.workload.ubatch),
        "workload.backend" => field(key, values, |s| &mut s.workload.backend),
        "workload.margin_bytes" => field(key, values, |s| &mut s.workload.margin_bytes),
        "workload.routing_skew" => field(key, values, |s| &mut s.workload.routing_skew),
        "workload.flash_attention" => field(key, values, |s| &mut s.workload.flash_attention),
        _ => return None,
    })
}

/// Whether a path can change the tensor plan (model, device, weights or cost model) or needs
/// the whole scenario validated again (the engine, assumed defaults).
fn changes_plan(path: &str) -> bool {
    ["model", "device", "weights", "cost", "engine", "assume_defaults"]
        .iter()
        .any(|p| path == *p || path.starts_with(&format!("{p}.")))
}

/// Whether one of two dotted paths lies inside the other (or they are equal).
fn nested(a: &str, b: &str) -> bool {
    a == b || a.starts_with(&format!("{b}.")) || b.starts_with(&format!("{a}."))
}

/// A mixed-radix number over some axes' value indices.
#[derive(Debug, Clone, Default)]
struct Radix {
    /// (axis, weight).
    digits: Vec<(usize, u64)>,
}

impl Radix {
    fn new(exp: &Experiment, axes: &[usize]) -> Self {
        let mut w = 1u64;
        let mut digits = Vec::with_capacity(axes.len());
        for &a in axes.iter().rev() {
            digits.push((a, w));
            w = w.saturating_mul(exp.axes[a].values.len() as u64);
        }
        Radix { digits }
    }

    fn of(&self, choice: &[usize]) -> u64 {
        self.digits.iter().map(|&(a, w)| choice[a] as u64 * w).sum()
    }

    /// How many numbers there are (saturating).
    fn count(&self, exp: &Experiment) -> u64 {
        self.digits.iter().fold(1u64, |n, &(a, _)| n.saturating_mul(exp.axes[a].values.len() as u64))
    }

    /// Value indices of number `k` on these axes (0 on the others).
    fn choice(&self, exp: &Experiment, k: u64) -> Vec<usize> {
        let mut c = vec![0; exp.axes.len()];
        for &(a, w) in &self.digits {
            c[a] = ((k / w) % exp.axes[a].values.len() as u64) as usize;
        }
        c
    }
}

/// An experiment compiled for sweeping (see the module documentation).
pub struct Sweep<'e> {
    exp: &'e Experiment,
    /// Per axis: its typed setters (one per path), or `None` when the axis is slow.
    fast: Vec<Option<Vec<Box<dyn Setter>>>>,
    /// Numbers the combinations of slow axes (the templates).
    slow: Radix,
    /// Numbers the combinations of axes that change the tensor plan.
    plan: Radix,
    quality: &'static QualityTable,
}

impl std::fmt::Debug for Sweep<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fast: Vec<&str> =
            self.exp.axes.iter().zip(&self.fast).filter(|(_, s)| s.is_some()).map(|(a, _)| a.key.as_str()).collect();
        f.debug_struct("Sweep").field("experiment", &self.exp.name).field("fast_axes", &fast).finish_non_exhaustive()
    }
}

impl<'e> Sweep<'e> {
    /// Compile `exp`: classify its axes and parse the fast ones' values.
    pub fn new(exp: &'e Experiment) -> Result<Self> {
        // Under the default engine, the device and the unit pick the engine: their axes build
        // each value through the experiment, which picks it.
        let picks_engine = |p: &str| exp.engine_by_default && ["device", "workload", "workload.backend"].contains(&p);
        let mut is_fast: Vec<bool> = exp
            .axes
            .iter()
            .map(|a| a.paths.iter().all(|p| !picks_engine(p) && fast_setter(p, &a.key, &[]).is_some()))
            .collect();
        // A fast axis nested in (or around) a slow one is slow: TOML orders those assignments.
        loop {
            let slow_paths: Vec<&str> = exp
                .axes
                .iter()
                .zip(&is_fast)
                .filter(|(_, f)| !**f)
                .flat_map(|(a, _)| a.paths.iter().map(String::as_str))
                .collect();
            let mut changed = false;
            for (a, f) in exp.axes.iter().zip(is_fast.iter_mut()) {
                if *f && a.paths.iter().any(|p| slow_paths.iter().any(|s| nested(p, s))) {
                    *f = false;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut fast = Vec::with_capacity(exp.axes.len());
        for (a, &f) in exp.axes.iter().zip(&is_fast) {
            fast.push(if f {
                let setters = a
                    .paths
                    .iter()
                    .enumerate()
                    .map(|(k, p)| fast_setter(p, &a.key, &a.values_of(k)).expect("classified as fast"))
                    .collect::<Result<Vec<_>>>()?;
                Some(setters)
            } else {
                None
            });
        }
        let slow: Vec<usize> = (0..exp.axes.len()).filter(|&i| !is_fast[i]).collect();
        let plan: Vec<usize> =
            (0..exp.axes.len()).filter(|&i| !is_fast[i] || exp.axes[i].paths.iter().any(|p| changes_plan(p))).collect();
        Ok(Sweep {
            exp,
            fast,
            slow: Radix::new(exp, &slow),
            plan: Radix::new(exp, &plan),
            quality: QualityTable::shared(),
        })
    }

    /// The experiment.
    pub fn experiment(&self) -> &'e Experiment {
        self.exp
    }

    /// Points in the grid.
    pub fn len(&self) -> usize {
        self.exp.len()
    }

    /// Whether the grid is empty (never).
    pub fn is_empty(&self) -> bool {
        self.exp.is_empty()
    }

    /// Combinations of model, device, weights and cost model recorded in a file's metadata at
    /// most.
    pub const MAX_RESOLVED: u64 = 4096;

    /// The metadata entries that record the specs the points use: `resolved` (see
    /// [`Resolved`]) and, beyond [`Sweep::MAX_RESOLVED`] combinations, `resolved_note`.
    pub fn resolved_metadata(&self) -> Vec<(String, String)> {
        let combos = self.plan.count(self.exp);
        let mut r = Resolved::default();
        for k in 0..combos.min(Self::MAX_RESOLVED) {
            let choice = self.plan.choice(self.exp, k);
            if let Ok(s) = self.exp.scenario_at(self.exp.index_of(&choice), &choice) {
                r.add(&s);
            }
        }
        let mut out = vec![r.entry()];
        if combos > Self::MAX_RESOLVED {
            out.push((
                "resolved_note".into(),
                format!(
                    "{combos} combinations of model, device, weights and cost model; `resolved` holds the specs of the \
                     first {}",
                    Self::MAX_RESOLVED
                ),
            ));
        }
        out
    }

    /// Evaluate every point in grid order, handing the results to `on_batch` in batches of at
    /// most `batch_points` points (each batch split into a few record batches per thread, in
    /// order) while the next batch is computed; `progress(points done)` after each batch. On a
    /// failing point, the error of the lowest failing point of its batch is returned and no
    /// later batch is handed over. Returns the number of points.
    pub fn run(
        &self,
        batch_points: usize,
        progress: &(dyn Fn(u64) + Sync),
        on_batch: &mut (dyn FnMut(Vec<RecordBatch>) -> Result<()> + Send),
    ) -> Result<u64> {
        self.run_range(0..self.exp.len(), batch_points, progress, on_batch)
    }

    /// [`Sweep::run`] over the points `range` of the grid only (a partition of a distributed
    /// sweep): the rows are those the whole sweep has for these points, `point` included.
    /// Returns the number of points.
    pub fn run_range(
        &self,
        range: std::ops::Range<usize>,
        batch_points: usize,
        progress: &(dyn Fn(u64) + Sync),
        on_batch: &mut (dyn FnMut(Vec<RecordBatch>) -> Result<()> + Send),
    ) -> Result<u64> {
        let n = range.end.min(self.exp.len());
        let threads = rayon::current_num_threads().max(1);
        // Several ranges per thread, so that the thread writing the previous batch and the
        // others share the computing evenly (work stealing); workers (and their caches) go back
        // to a pool between ranges.
        let batch_points = batch_points.max(1);
        let per_range = batch_points.div_ceil(4 * threads);
        let pool: std::sync::Mutex<Vec<Worker>> = std::sync::Mutex::new(Vec::new());
        let done = AtomicU64::new(0);
        let mut pending: Option<Vec<RecordBatch>> = None;
        let first = range.start.min(n);
        let mut start = first;
        while start < n || pending.is_some() {
            let end = n.min(start.saturating_add(batch_points));
            let range = start..end;
            let (written, computed) = rayon::join(
                || pending.take().map_or(Ok(()), &mut *on_batch),
                || {
                    if range.is_empty() {
                        return Ok(None);
                    }
                    let ranges: Vec<std::ops::Range<usize>> =
                        range.clone().step_by(per_range).map(|a| a..range.end.min(a + per_range)).collect();
                    let parts: Vec<Result<RecordBatch>> = ranges
                        .into_par_iter()
                        .map(|r| {
                            let popped = pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
                            let mut w = popped.unwrap_or_else(|| Worker::new(self, per_range));
                            let out = w.evaluate(r);
                            pool.lock().unwrap_or_else(|e| e.into_inner()).push(w);
                            out
                        })
                        .collect();
                    parts.into_iter().collect::<Result<Vec<_>>>().map(Some)
                },
            );
            written?;
            pending = computed?;
            if pending.is_some() {
                progress(done.fetch_add((end - start) as u64, Ordering::Relaxed) + (end - start) as u64);
            }
            start = end;
        }
        Ok((n - first) as u64)
    }

    /// The whole sweep as one record batch (for tests and small grids; a large grid belongs
    /// in [`Sweep::run`] with a Parquet stream).
    pub fn table(&self) -> Result<RecordBatch> {
        self.table_range(0..self.exp.len())
    }

    /// The points `range` of the sweep as one record batch.
    pub fn table_range(&self, range: std::ops::Range<usize>) -> Result<RecordBatch> {
        let (schema, batches) = self.batches_range(range)?;
        arrow::compute::concat_batches(&schema, &batches)
            .map_err(|e| LabError::Write { path: "<record batch>".into(), message: e.to_string() })
    }

    /// The points `range` of the sweep as the record batches the sweep made (in grid order,
    /// not concatenated: no copy), with their schema, and the `pareto` column
    /// ([`crate::pareto`]) marking the front of the points of `range`.
    pub fn batches_range(
        &self,
        range: std::ops::Range<usize>,
    ) -> Result<(arrow::datatypes::SchemaRef, Vec<RecordBatch>)> {
        self.batches_watched(range, &std::sync::atomic::AtomicBool::new(false), &|_| {})
    }

    /// [`Sweep::batches_range`] that reports the points done to `progress` after each batch
    /// (`4 × threads × BATCH_POINTS` points) and stops with [`LabError::Interrupted`] at the
    /// next batch once `stop` is set (by another thread: a caller watching for Ctrl-C).
    pub fn batches_watched(
        &self,
        range: std::ops::Range<usize>,
        stop: &std::sync::atomic::AtomicBool,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<(arrow::datatypes::SchemaRef, Vec<RecordBatch>)> {
        let mut batches = Vec::new();
        // Record batches of BATCH_POINTS rows (each thread's share of a batch is one record
        // batch): a consumer importing them pays per batch and column, not per row.
        let batch_points = 4 * rayon::current_num_threads().max(1) * BATCH_POINTS;
        self.run_range(range, batch_points, progress, &mut |b| {
            if stop.load(Ordering::Relaxed) {
                return Err(LabError::Interrupted);
            }
            batches.extend(b);
            Ok(())
        })?;
        if stop.load(Ordering::Relaxed) {
            return Err(LabError::Interrupted);
        }
        let (schema, batches, _) =
            crate::pareto::with_column(&TableBuilder::estimates(self.exp, 0).schema(), batches, &self.exp.pareto)?;
        Ok((schema, batches))
    }
}

/// One thread's state: the scenario it modifies point by point, its estimator, and caches of
/// templates and quality lookups.
struct Worker<'s, 'e> {
    sweep: &'s Sweep<'e>,
    estimator: Estimator,
    scenario: Option<Scenario>,
    /// Value indices of the point `scenario` holds.
    choice: Vec<usize>,
    slow_key: Option<u64>,
    templates: HashMap<u64, Scenario>,
    quality: HashMap<(u64, QuantFormat, QuantFormat), Quality>,
    table: TableBuilder<Estimate>,
}

impl<'s, 'e> Worker<'s, 'e> {
    /// Templates a worker keeps before it starts over.
    const MAX_TEMPLATES: usize = 256;

    fn new(sweep: &'s Sweep<'e>, rows: usize) -> Self {
        let exp = sweep.exp;
        Worker {
            sweep,
            estimator: Estimator::new(),
            scenario: None,
            choice: vec![0; exp.axes.len()],
            slow_key: None,
            templates: HashMap::new(),
            quality: HashMap::new(),
            table: TableBuilder::estimates(exp, rows),
        }
    }

    /// Move to point `index` (value indices `choice`), rebuilding from a template when a slow
    /// axis changed and assigning the fast axes that changed.
    fn seek(&mut self, index: usize, choice: &[usize]) -> Result<()> {
        let exp = self.sweep.exp;
        let slow_key = self.sweep.slow.of(choice);
        let rebuild = self.slow_key != Some(slow_key) || self.scenario.is_none();
        if rebuild {
            if !self.templates.contains_key(&slow_key) {
                if self.templates.len() >= Self::MAX_TEMPLATES {
                    self.templates.clear();
                }
                let t = exp.scenario_at(index, choice)?;
                self.templates.insert(slow_key, t);
            }
            self.scenario = self.templates.get(&slow_key).cloned();
            self.slow_key = Some(slow_key);
        }
        let s = self.scenario.as_mut().expect("set above");
        for (ai, setters) in self.sweep.fast.iter().enumerate() {
            if let Some(setters) = setters
                && (rebuild || choice[ai] != self.choice[ai])
            {
                for set in setters {
                    set.set(s, choice[ai]);
                }
            }
        }
        self.choice.copy_from_slice(choice);
        Ok(())
    }

    /// Evaluate points `range` into one record batch.
    fn evaluate(&mut self, range: std::ops::Range<usize>) -> Result<RecordBatch> {
        let exp = self.sweep.exp;
        let mut choice = exp.choice(range.start);
        for index in range {
            self.seek(index, &choice)?;
            let plan_key = self.sweep.plan.of(&self.choice);
            let s = self.scenario.as_ref().expect("seek sets it");
            let e = self.estimator.estimate_keyed(plan_key, s).map_err(|e| LabError::Point {
                index,
                params: exp.describe(&self.choice),
                source: Box::new(LabError::Sim(e)),
            })?;
            let q = self
                .quality
                .entry((plan_key, s.kv.k, s.kv.v))
                .or_insert_with(|| self.sweep.quality.lookup_model(&ModelRef::of(&s.model), &s.weights, &s.kv));
            self.table.append(exp, index as u64, s, &self.choice, &e, q);
            // The next point's value indices (the last axis varies fastest).
            for (ai, a) in exp.axes.iter().enumerate().rev() {
                choice[ai] += 1;
                if choice[ai] < a.values.len() {
                    break;
                }
                choice[ai] = 0;
            }
        }
        self.table.finish()
    }
}

/// A sweep's results in brief, gathered batch by batch in bounded memory: counts, the first
/// rows (all of them while the grid is small) and the fastest fitting designs.
#[derive(Debug, Clone, Default)]
pub struct Digest {
    /// Rows kept (0: all).
    pub max_rows: usize,
    /// Points seen.
    pub points: u64,
    /// Points that fit with their margin.
    pub fitting: u64,
    /// Points that fit but whose weights the model does not survive (`ptq_unusable`).
    pub fitting_unusable: u64,
    /// Points whose context exceeds the model's `max_context`.
    pub beyond_max: u64,
    /// The first `max_rows` points.
    pub rows: Vec<DigestRow>,
    /// The fastest fitting designs whose weights the model survives, fastest first, at most
    /// [`Digest::BEST`].
    pub best: Vec<DigestRow>,
    /// The Pareto fronts of the experiment's rule (`[pareto]`).
    pub fronts: crate::pareto::Fronts,
}

/// One point in a [`Digest`].
#[derive(Debug, Clone, PartialEq)]
pub struct DigestRow {
    /// Index in the grid.
    pub point: u64,
    /// Footprint, bytes.
    pub total_bytes: u64,
    /// Whether it fits.
    pub fits: bool,
    /// Budget − footprint, bytes.
    pub headroom_bytes: i64,
    /// Decode tok/s.
    pub decode_tok_s: f64,
    /// What binds decode.
    pub binding: String,
    /// Perplexity cost of the weight format, when known.
    pub ppl_delta_weights: Option<f64>,
    /// Sub-2-bit weights on a model not trained for them (`ptq_unusable`).
    pub ptq_unusable: bool,
}

impl Digest {
    /// Designs kept in [`Digest::best`].
    pub const BEST: usize = 10;

    /// An empty digest keeping the first `max_rows` rows (0: all), marking the fronts of `rule`.
    pub fn new(max_rows: usize, rule: crate::pareto::Rule) -> Self {
        Digest { max_rows, fronts: crate::pareto::Fronts::new(rule), ..Default::default() }
    }

    /// Whether [`Digest::rows`] holds every point.
    pub fn complete(&self) -> bool {
        self.rows.len() as u64 == self.points
    }

    /// Take in a batch of [`TableBuilder::estimates`] rows.
    pub fn observe(&mut self, batch: &RecordBatch) -> Result<()> {
        use arrow::array::{Array, AsArray};
        use arrow::datatypes::{Float64Type, Int64Type, UInt64Type};
        let col = |name: &str| crate::columns::by_name(batch, name);
        let point = col("point")?.as_primitive::<UInt64Type>();
        let total = col("total_bytes")?.as_primitive::<UInt64Type>();
        let headroom = col("headroom_bytes")?.as_primitive::<Int64Type>();
        let fits = col("fits")?.as_boolean();
        let beyond = col("context_beyond_max")?.as_boolean();
        let tok_s = col("decode_tok_s")?.as_primitive::<Float64Type>();
        let binding = col("binding")?.as_string::<i32>();
        let ppl = col("ppl_delta_weights")?.as_primitive::<Float64Type>();
        let unusable = col("ptq_unusable")?.as_boolean();
        self.fronts.observe(batch)?;
        for i in 0..batch.num_rows() {
            self.points += 1;
            self.beyond_max += beyond.value(i) as u64;
            let keep = self.max_rows == 0 || self.rows.len() < self.max_rows;
            let t = tok_s.value(i);
            let usable = !unusable.value(i);
            let better = fits.value(i)
                && usable
                && (self.best.len() < Self::BEST || self.best.last().is_some_and(|b| t > b.decode_tok_s));
            self.fitting += fits.value(i) as u64;
            self.fitting_unusable += (fits.value(i) && !usable) as u64;
            if !(keep || better) {
                continue;
            }
            let row = DigestRow {
                point: point.value(i),
                total_bytes: total.value(i),
                fits: fits.value(i),
                headroom_bytes: headroom.value(i),
                decode_tok_s: t,
                binding: binding.value(i).to_string(),
                ppl_delta_weights: (!ppl.is_null(i)).then(|| ppl.value(i)),
                ptq_unusable: !usable,
            };
            if better {
                let at = self.best.partition_point(|b| b.decode_tok_s >= t);
                self.best.insert(at, row.clone());
                self.best.truncate(Self::BEST);
            }
            if keep {
                self.rows.push(row);
            }
        }
        Ok(())
    }
}
