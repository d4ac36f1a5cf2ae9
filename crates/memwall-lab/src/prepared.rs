//! One design at a time at interactive speed: `memwall.estimate` called in a loop, a page or
//! a notebook probing one design after another.
//!
//! Building a design from its table (resolving presets, deserializing and validating the
//! model, device and engine, planning its tensors) costs a hundred microseconds or more; the
//! estimate itself a few. [`Designs`] keeps each design's specs (model, device, engine, cost
//! model, simulator settings, assumed defaults) built as a [`Prepared`] design, and sets the
//! parts a probe varies (weight mix, KV formats, workload) on it as a sweep's fast axes set
//! theirs: deserialized into their typed fields, the point validated, the tensor plan kept
//! per weight mix. A row is the row [`Experiment::of_design`] and a sweep of it give (tested
//! field for field), and an error is the one a fresh build gives: a probe that fails is built
//! afresh and that build's error returned.
//!
//! A kept design is used only while it means what it meant: designs naming a file (a path, a
//! `.gguf`, a `config.json`) are never kept, since the file may change; a bare name that a
//! file of the same name in the working directory would shadow or contradict
//! ([`memwall_catalog::presets::names_a_file`]) is checked again on every use.

use std::collections::HashMap;

use arrow::datatypes::SchemaRef;
use memwall_catalog::quality_table::{ModelRef, Quality, QualityTable};
use memwall_sim::Estimator;
use memwall_spec::{KvQuant, QuantFormat, Scenario, WeightQuant, Workload};

use crate::columns::{Cell, Cells, TableBuilder, design_cells};
use crate::error::{LabError, Result};
use crate::experiment::Experiment;

/// The parts of a design a probe varies: a design table's `weights`, `kv` and `workload`
/// entries as given (an absent one is what deserializing the scenario leaves absent: an
/// error for `weights`, the default for the others).
#[derive(Debug, Clone, Default)]
pub struct Parts {
    /// `weights`.
    pub weights: Option<toml::Value>,
    /// `kv`.
    pub kv: Option<toml::Value>,
    /// `workload`.
    pub workload: Option<toml::Value>,
}

impl Parts {
    /// Take the parts out of a design table, leaving its specs.
    pub fn take(design: &mut toml::Table) -> Self {
        Parts { weights: design.remove("weights"), kv: design.remove("kv"), workload: design.remove("workload") }
    }

    /// Put them back.
    fn restore(self, design: &mut toml::Table) {
        for (k, v) in [("weights", self.weights), ("kv", self.kv), ("workload", self.workload)] {
            if let Some(v) = v {
                design.insert(k.into(), v);
            }
        }
    }
}

/// A value of a scenario's field deserialized from a design's table, its errors naming the
/// field (`weights`, a build of the whole design names it the same way).
fn typed<T: serde::de::DeserializeOwned>(field: &str, v: &toml::Value) -> Result<T> {
    v.clone().try_into::<T>().map_err(|e| LabError::Spec(memwall_spec::SpecError::invalid(field, v, e.to_string())))
}

/// A design of fixed specs, built once, estimated under any weights, KV formats and workload.
pub struct Prepared {
    exp: Experiment,
    /// The point being evaluated: the design's first point, its parts set by the last probe.
    current: Scenario,
    /// Bare names the design's specs were resolved by (see the module documentation).
    names: Vec<String>,
    estimator: Estimator,
    /// Tensor-plan numbers by weights (their TOML text); `u64::MAX` is the design's own.
    plans: HashMap<String, u64>,
    quality: HashMap<(u64, QuantFormat, QuantFormat), Quality>,
    /// The sweep's schema, whose types the `pareto` rule reads.
    schema: SchemaRef,
    /// The `pareto` rule over a row's cells, made at the first row.
    alone: Option<crate::pareto::Alone>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared").field("design", &self.exp.name).field("names", &self.names).finish_non_exhaustive()
    }
}

impl Prepared {
    /// Prepare the one design of `exp`, an experiment without grid axes (see
    /// [`Experiment::of_design`]).
    pub fn new(exp: Experiment) -> Result<Self> {
        if !exp.axes.is_empty() {
            return Err(LabError::Spec(memwall_spec::SpecError::invalid(
                "grid",
                exp.axes.len(),
                "a prepared design has no grid axes; sweep the experiment instead",
            )));
        }
        let current = match exp.first.clone() {
            Some(s) => s,
            None => exp.point(0)?.scenario,
        };
        let schema = TableBuilder::estimates(&exp, 0).schema();
        Ok(Prepared {
            exp,
            current,
            names: Vec::new(),
            estimator: Estimator::new(),
            plans: HashMap::new(),
            quality: HashMap::new(),
            schema,
            alone: None,
        })
    }

    /// Set `parts` on the design (`None`: the design's own); returns the tensor-plan number.
    fn set(&mut self, parts: Option<&Parts>) -> Result<u64> {
        let Some(p) = parts else {
            if let Some(first) = &self.exp.first {
                self.current.clone_from(first);
            }
            return Ok(u64::MAX);
        };
        let Some(w) = &p.weights else {
            return Err(LabError::Spec(memwall_spec::SpecError::invalid(
                "weights",
                "(none)",
                "a design needs weights",
            )));
        };
        let key = w.to_string();
        let next = self.plans.len() as u64;
        let plan = *self.plans.entry(key).or_insert(next);
        self.current.weights = typed::<WeightQuant>("weights", w)?;
        self.current.kv = p.kv.as_ref().map_or_else(|| Ok(KvQuant::default()), |v| typed("kv", v))?;
        let workload: Workload =
            p.workload.as_ref().map_or_else(|| Ok(Workload::default()), |v| typed("workload", v))?;
        if self.exp.engine_by_default && self.exp.first.as_ref().is_some_and(|f| f.workload.backend != workload.backend)
        {
            // The unit picks the default engine; a design kept for one unit is not another's.
            return Err(LabError::Spec(memwall_spec::SpecError::invalid(
                "workload.backend",
                workload.backend.name(),
                "the design was prepared for another unit",
            )));
        }
        self.current.workload = workload;
        Ok(plan)
    }

    /// The row of the design with `parts` set (`None`: its own), handed to `emit` as the
    /// cells of [`design_cells`] followed by `pareto` ([`crate::pareto::Alone`]).
    pub fn row<T>(&mut self, parts: Option<&Parts>, emit: &mut dyn FnMut(&Cells<'_>) -> T) -> Result<T> {
        let plan = self.set(parts)?;
        let s = &self.current;
        let e = self.estimator.estimate_keyed(plan, s).map_err(|e| LabError::Point {
            index: 0,
            params: self.exp.describe(&[]),
            source: Box::new(LabError::Sim(e)),
        })?;
        let q = self
            .quality
            .entry((plan, s.kv.k, s.kv.v))
            .or_insert_with(|| QualityTable::shared().lookup_model(&ModelRef::of(&s.model), &s.weights, &s.kv));
        let mut cells = design_cells(s, &e, q);
        let alone = match &mut self.alone {
            Some(a) => a,
            empty => {
                let names: Vec<&str> = cells.iter().map(|(n, _)| *n).collect();
                empty.insert(crate::pareto::Alone::new(&self.exp.pareto, &self.schema, &names)?)
            }
        };
        let on_front = alone.on_front(&cells)?;
        cells.push((crate::pareto::PARETO_COLUMN, Cell::Bool(on_front)));
        Ok(emit(&cells))
    }

    /// Whether what it was built from still holds: no bare name it was resolved by is now a
    /// file of the working directory.
    fn still_holds(&self) -> bool {
        !self.names.iter().any(|n| memwall_catalog::presets::names_a_file(n))
    }
}

/// The bare names `specs` (a design table without its parts) and the scenario built from it
/// (`s`) were resolved by: the model, the device (and the device a power mode applies to),
/// the engine, the engine picked by default and the engine a profile borrows its CPU table
/// from. `None` when a spec names a file.
fn resolved_by(specs: &toml::Table, s: &Scenario) -> Option<Vec<String>> {
    let mut names = Vec::new();
    for kind in ["model", "device", "engine"] {
        match specs.get(kind) {
            Some(v) if !memwall_catalog::presets::resolves_inline_or_by_name(kind, v) => return None,
            Some(toml::Value::String(name)) => {
                names.push(name.clone());
                if let Some((base, _)) = name.rsplit_once('@') {
                    names.push(base.to_string());
                }
            }
            _ => {}
        }
    }
    if !matches!(specs.get("engine"), Some(toml::Value::Table(_))) {
        names.push(s.engine.name.clone());
        names.extend(s.engine.cpu_from.clone());
    }
    if s.model.from_file.is_some() || s.model.stored.is_some() {
        return None;
    }
    Some(names)
}

/// Prepared designs by their specs, the least recently used dropped beyond
/// [`Designs::CAPACITY`] (see the module documentation).
#[derive(Debug, Default)]
pub struct Designs {
    entries: HashMap<String, (u64, Prepared)>,
    clock: u64,
}

impl Designs {
    /// Designs kept at most.
    pub const CAPACITY: usize = 64;

    /// No design kept.
    pub fn new() -> Self {
        Self::default()
    }

    /// Designs kept now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The row of the design `design` (a scenario's table, presets by name, as
    /// [`Experiment::of_design`] takes it), handed to `emit` as [`Prepared::row`] does.
    pub fn row<T>(&mut self, mut design: toml::Table, emit: &mut dyn FnMut(&Cells<'_>) -> T) -> Result<T> {
        let parts = Parts::take(&mut design);
        // Under the default engine the unit picks the engine: a design per unit.
        let unit = match (design.contains_key("engine"), parts.workload.as_ref().and_then(|w| w.get("backend"))) {
            (false, Some(b)) => b.to_string(),
            _ => String::new(),
        };
        let key = format!("{design}\n#unit {unit}");
        self.clock += 1;
        if let Some((used, p)) = self.entries.get_mut(&key) {
            if p.still_holds() {
                *used = self.clock;
                if let Ok(row) = p.row(Some(&parts), emit) {
                    return Ok(row);
                }
                // A probe that fails is built afresh below, whose error is the one to give.
            } else {
                self.entries.remove(&key);
            }
        }
        let specs = design.clone();
        parts.restore(&mut design);
        let mut p = Prepared::new(Experiment::of_design("estimate", design)?)?;
        let row = p.row(None, emit)?;
        if let Some(names) = resolved_by(&specs, &p.current) {
            p.names = names;
            if p.still_holds() {
                if self.entries.len() >= Self::CAPACITY
                    && let Some(oldest) = self.entries.iter().min_by_key(|(_, (used, _))| *used).map(|(k, _)| k.clone())
                {
                    self.entries.remove(&oldest);
                }
                self.entries.insert(key, (self.clock, p));
            }
        }
        Ok(row)
    }
}
