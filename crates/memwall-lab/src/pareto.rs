//! Pareto fronts of a table of designs, one per question ([`Rule`]): the designs no other
//! design beats on every chosen objective at once, within each group of rows.
//!
//! - **Objectives** ([`Objective`]): numeric columns, each with whether less or more is better.
//!   By default memory (`total_bytes`, less), decode rate (`decode_tok_s`, more), estimated
//!   quality (`ppl_delta`: the perplexity increase of the weights and of the KV cache added,
//!   less) and energy (`energy_j_per_token`, less). Any numeric column serves, a column a user
//!   added included: `max:col` or `min:col`, or the bare name (more is better for a `_tok_s`
//!   rate, less for anything else).
//! - **Groups** (`by`): with `by = ["workload.context_tokens"]` every context gets its own
//!   front, as a question per context asks; without, one front over every row.
//! - **Dominance**: design `a` dominates `b` when `a` is no worse than `b` in every objective
//!   and strictly better in at least one. A group's front holds the designs no other design
//!   of the group dominates, among those *eligible*: designs that fit their device with the
//!   margin (column `fits`, when the table has it), whose weights the model survives (not
//!   `ptq_unusable`, when the table has it: sub-2-bit weights on a model not trained for
//!   them) and whose objectives are finite and known.
//!   Designs equal in every objective are all on the front.
//! - **Unknown objectives**: an objective whose column can be null (quality, for a format with
//!   no published figure) is said, never guessed. Designs with it unknown are left out of a
//!   group's front while some design that fits has it known; when no design of the group that
//!   fits has it known, the group's front is drawn over the other objectives and the objective
//!   is named as left out ([`GroupFront::left_out`]).
//! - **Quality threshold** (`max_ppl_increase_pct`, optional): only designs whose whole
//!   perplexity increase (column `ppl_increase_pct`, % of the model's baseline) is known and at
//!   most the threshold are eligible, as a design that does not fit is not (the seed's +5 %
//!   acceptable / +10 % reconsider, [`memwall_catalog::quality_table::ACCEPTABLE_PPL_INCREASE_PCT`]).

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use arrow::datatypes::{DataType, Field, Float64Type, Schema, SchemaRef, UInt64Type};
use arrow::record_batch::RecordBatch;
use memwall_spec::SpecError;

use crate::columns::by_name as column;
use crate::error::{LabError, Result};

/// The name of the column that marks the front.
pub const PARETO_COLUMN: &str = "pareto";

/// The column that identifies a design: its index in the grid.
const POINT: &str = "point";

/// The column that says whether a design fits.
const FITS: &str = "fits";
/// The column that flags weights the model does not survive.
const PTQ_UNUSABLE: &str = "ptq_unusable";

/// The column a quality threshold reads: the whole perplexity increase, % of the baseline.
const PPL_INCREASE_PCT: &str = "ppl_increase_pct";

/// The objective that adds the weights' and the KV cache's perplexity increase.
pub const PPL_DELTA: &str = "ppl_delta";

/// The two columns [`PPL_DELTA`] adds.
const PPL_PARTS: [&str; 2] = ["ppl_delta_weights", "ppl_delta_kv"];

/// Whether less or more of an objective is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sense {
    /// Less is better (bytes, seconds, joules, perplexity increase).
    Min,
    /// More is better (tokens per second).
    Max,
}

/// One objective: a numeric column and its sense.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Objective {
    /// The column ([`PPL_DELTA`]: the two perplexity columns added).
    pub column: String,
    /// Whether less or more is better.
    pub sense: Sense,
}

impl Objective {
    /// `min:col`, `max:col`, or `col` (more is better for a column ending in `_tok_s`, less
    /// for any other).
    pub fn parse(text: &str) -> Result<Self> {
        let text = text.trim();
        let (sense, column) = match text.split_once(':') {
            Some(("min", c)) => (Sense::Min, c.trim()),
            Some(("max", c)) => (Sense::Max, c.trim()),
            Some((s, _)) => {
                return Err(SpecError::invalid(
                    "pareto.objectives",
                    text,
                    format!("`{s}:` is not a sense; write `min:column`, `max:column` or the bare column"),
                )
                .into());
            }
            None if text.ends_with("_tok_s") => (Sense::Max, text),
            None => (Sense::Min, text),
        };
        if column.is_empty() {
            return Err(SpecError::invalid("pareto.objectives", text, "names no column").into());
        }
        Ok(Objective { column: column.to_string(), sense })
    }

    /// `min:col` or `max:col`.
    pub fn name(&self) -> String {
        let s = match self.sense {
            Sense::Min => "min",
            Sense::Max => "max",
        };
        format!("{s}:{}", self.column)
    }

    /// The columns it reads.
    fn reads(&self) -> Vec<&str> {
        if self.column == PPL_DELTA { PPL_PARTS.to_vec() } else { vec![self.column.as_str()] }
    }
}

/// Which front a question asks for: the columns whose values group the rows (`by`, each
/// group its own front) and the objectives.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Columns whose values make a group; empty: one front over every row.
    pub by: Vec<String>,
    /// The objectives, at least one.
    pub objectives: Vec<Objective>,
    /// Only designs whose perplexity increase is known and at most this (% of the model's
    /// baseline) are eligible.
    pub max_ppl_increase_pct: Option<f64>,
}

impl Default for Rule {
    /// One front over memory, decode tok/s, quality and energy.
    fn default() -> Self {
        let objectives = ["min:total_bytes", "max:decode_tok_s", "min:ppl_delta", "min:energy_j_per_token"]
            .iter()
            .map(|o| Objective::parse(o).expect("the default objectives parse"))
            .collect();
        Rule { by: Vec::new(), objectives, max_ppl_increase_pct: None }
    }
}

impl Rule {
    /// A rule grouping by `by`, over `objectives` (the default four when empty). A column
    /// named twice is refused.
    pub fn new(by: Vec<String>, objectives: &[String]) -> Result<Self> {
        let objectives = if objectives.is_empty() {
            Rule::default().objectives
        } else {
            objectives.iter().map(|o| Objective::parse(o)).collect::<Result<Vec<_>>>()?
        };
        for (i, o) in objectives.iter().enumerate() {
            if objectives[..i].iter().any(|p| p.column == o.column) {
                return Err(SpecError::invalid("pareto.objectives", &o.column, "is named twice").into());
            }
        }
        for (i, b) in by.iter().enumerate() {
            if by[..i].contains(b) {
                return Err(SpecError::invalid("pareto.by", b, "is named twice").into());
            }
        }
        Ok(Rule { by, objectives, max_ppl_increase_pct: None })
    }

    /// The rule with a quality threshold: designs above `max` % perplexity increase, or whose
    /// increase is unknown, are not eligible. `max` must be a finite number >= 0.
    pub fn with_max_ppl_increase_pct(self, max: Option<f64>) -> Result<Self> {
        if let Some(m) = max
            && !(m.is_finite() && m >= 0.0)
        {
            return Err(SpecError::invalid("pareto.max_ppl_increase_pct", m, "must be a finite number >= 0").into());
        }
        Ok(Rule { max_ppl_increase_pct: max, ..self })
    }

    /// Every column the rule reads from a table: `point`, `fits`, the groups', the objectives'.
    pub fn reads(&self) -> Vec<String> {
        let mut r: Vec<String> = vec![POINT.into(), FITS.into()];
        if self.max_ppl_increase_pct.is_some() {
            r.push(PPL_INCREASE_PCT.into());
        }
        r.extend(self.by.iter().cloned());
        r.extend(self.objectives.iter().flat_map(|o| o.reads()).map(String::from));
        r.dedup();
        r
    }

    /// Check the rule against a table's schema: `point` is there, each group column is, and
    /// each objective's column is a number. Errors name the column and list those there are.
    pub fn check(&self, schema: &Schema) -> Result<()> {
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        let unknown = |field: &str, c: &str, numeric: bool| -> LabError {
            let candidates: Vec<&str> = schema
                .fields()
                .iter()
                .filter(|f| !numeric || number_type(f.data_type()))
                .map(|f| f.name().as_str())
                .collect();
            SpecError::unknown(field, "column", c, candidates.iter().copied(), "").into()
        };
        if self.max_ppl_increase_pct.is_some() && !names.contains(&PPL_INCREASE_PCT) {
            return Err(unknown("pareto.max_ppl_increase_pct", PPL_INCREASE_PCT, true));
        }
        for b in &self.by {
            if !names.contains(&b.as_str()) {
                return Err(unknown("pareto.by", b, false));
            }
        }
        for o in &self.objectives {
            for c in o.reads() {
                match schema.field_with_name(c) {
                    Ok(f) if number_type(f.data_type()) => {}
                    Ok(f) => {
                        return Err(SpecError::invalid(
                            "pareto.objectives",
                            c,
                            format!("is a column of {}, not of numbers", f.data_type()),
                        )
                        .into());
                    }
                    Err(_) => return Err(unknown("pareto.objectives", c, true)),
                }
            }
        }
        Ok(())
    }
}

/// Whether a column of this type holds numbers an objective can read.
fn number_type(t: &DataType) -> bool {
    t.is_numeric()
}

/// One design on a front: its point and its objectives' values (in the rule's order, those
/// the front was drawn over).
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// Index in the grid (the row's place in the table when it has no `point` column).
    pub point: u64,
    /// What identifies the row: its point in a sweep's stream ([`Fronts::observe`]), its
    /// place in the table for a table put together from several ([`with_column`]).
    pub id: u64,
    /// Values of the objectives the front was drawn over.
    pub values: Vec<f64>,
}

/// The designs no other beats, over objectives of the given senses.
#[derive(Debug, Clone, Default)]
struct Front {
    senses: Vec<Sense>,
    members: Vec<Member>,
}

/// Whether `a` dominates `b` over objectives of `senses`: no worse in every one, better in one.
pub fn dominates(senses: &[Sense], a: &[f64], b: &[f64]) -> bool {
    let mut better = false;
    for ((s, x), y) in senses.iter().zip(a).zip(b) {
        let (x, y) = match s {
            Sense::Min => (*x, *y),
            Sense::Max => (-*x, -*y),
        };
        if x > y {
            return false;
        }
        better |= x < y;
    }
    better
}

impl Front {
    fn new(senses: Vec<Sense>) -> Self {
        Front { senses, members: Vec::new() }
    }

    /// Offer a design: it joins unless a member dominates it, and removes those it dominates.
    fn offer(&mut self, m: Member) {
        if self.members.iter().any(|x| dominates(&self.senses, &x.values, &m.values)) {
            return;
        }
        let senses = &self.senses;
        self.members.retain(|x| !dominates(senses, &m.values, &x.values));
        self.members.push(m);
    }
}

/// One group's fronts while rows arrive: over every objective (designs with all known), and
/// over the objectives that are never unknown (for when no design that fits has the others).
#[derive(Debug, Clone)]
struct Group {
    rows: u64,
    fitting: u64,
    /// Fitting designs with a finite value of every objective that is always known but an
    /// unknown one among the others.
    unknown: u64,
    full: Front,
    reduced: Front,
}

impl Group {
    /// Whether no design that fits has every objective known, so that the group's front is
    /// the one over the objectives always known.
    fn drops_unknowns(&self) -> bool {
        self.full.members.is_empty() && self.unknown > 0
    }

    /// The front the group answers with.
    fn front(&self) -> &Front {
        if self.drops_unknowns() { &self.reduced } else { &self.full }
    }
}

/// A group's front, once every row is in.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupFront {
    /// The group's value of each `by` column (empty: the one front of the table).
    pub key: Vec<(String, String)>,
    /// Rows in the group.
    pub rows: u64,
    /// Rows that fit.
    pub fitting: u64,
    /// The objectives the front was drawn over.
    pub objectives: Vec<Objective>,
    /// Objectives left out: unknown on every design of the group that fits.
    pub left_out: Vec<String>,
    /// Designs that fit but were not compared, an objective of theirs being unknown while
    /// other designs of the group have it.
    pub unknown: u64,
    /// The front, smallest value of the first objective first (ties by point).
    pub members: Vec<Member>,
}

/// The fronts of a table under a [`Rule`], gathered batch by batch in memory bounded by the
/// fronts (not the rows).
#[derive(Debug, Clone)]
pub struct Fronts {
    rule: Rule,
    /// Per objective: whether it may be unknown (from the first batch's schema: a nullable
    /// column; or, for a table in memory, whether any row has it null).
    optional: Option<Vec<bool>>,
    /// Groups in the order their first row came.
    groups: Vec<(Vec<String>, Group)>,
    /// Where each group's key is in `groups`.
    index: HashMap<Vec<String>, usize>,
}

impl Default for Fronts {
    fn default() -> Self {
        Fronts::new(Rule::default())
    }
}

/// An objective's values in a batch, as floats (None: unknown).
struct Values {
    parts: Vec<arrow::array::PrimitiveArray<Float64Type>>,
}

/// Column `name` of `batch` cast to `to` (a table's integers and floats of any width).
fn cast(batch: &RecordBatch, name: &str, to: &DataType) -> Result<ArrayRef> {
    arrow::compute::cast(column(batch, name)?, to)
        .map_err(|e| LabError::Write { path: "<pareto>".into(), message: format!("column `{name}`: {e}") })
}

impl Values {
    fn read(batch: &RecordBatch, o: &Objective) -> Result<Self> {
        let cast = |c: &str| -> Result<arrow::array::PrimitiveArray<Float64Type>> {
            Ok(cast(batch, c, &DataType::Float64)?.as_primitive::<Float64Type>().clone())
        };
        Ok(Values { parts: o.reads().into_iter().map(cast).collect::<Result<Vec<_>>>()? })
    }

    fn at(&self, i: usize) -> Option<f64> {
        let mut sum = 0.0;
        for p in &self.parts {
            if p.is_null(i) {
                return None;
            }
            sum += p.value(i);
        }
        Some(sum)
    }
}

impl Fronts {
    /// No rows yet.
    pub fn new(rule: Rule) -> Self {
        Fronts { rule, optional: None, groups: Vec::new(), index: HashMap::new() }
    }

    /// The rule.
    pub fn rule(&self) -> &Rule {
        &self.rule
    }

    /// The fronts of a whole table, `batches` (the rule checked by the caller), each row told
    /// apart by its place in the table.
    fn of_table(rule: &Rule, batches: &[RecordBatch]) -> Result<Self> {
        let mut fronts = Fronts::new(rule.clone());
        // The rows are all here: an objective may be unknown when some row has it null (a
        // table's declared nullability says little: pyarrow declares every column nullable).
        let any_null = |c: &str| batches.iter().any(|b| b.column_by_name(c).is_some_and(|a| a.null_count() > 0));
        fronts.optional = Some(rule.objectives.iter().map(|o| o.reads().into_iter().any(any_null)).collect());
        let mut row = 0;
        for b in batches {
            fronts.observe_rows(b, Some(row))?;
            row += b.num_rows() as u64;
        }
        Ok(fronts)
    }

    /// Take in a batch of results holding the columns of [`Rule::reads`] (`fits` may be
    /// absent: every row is then taken to fit).
    pub fn observe(&mut self, batch: &RecordBatch) -> Result<()> {
        self.observe_rows(batch, None)
    }

    /// [`Fronts::observe`], each row identified by its place in the table (`first` for the
    /// batch's first row) instead of its point: for tables put together from several sweeps,
    /// whose points repeat.
    fn observe_rows(&mut self, batch: &RecordBatch, first: Option<u64>) -> Result<()> {
        let schema = batch.schema();
        self.rule.check(&schema)?;
        let optional = self.optional.get_or_insert_with(|| {
            self.rule
                .objectives
                .iter()
                .map(|o| o.reads().iter().any(|c| schema.field_with_name(c).is_ok_and(|f| f.is_nullable())))
                .collect()
        });
        let point = match batch.column_by_name(POINT) {
            Some(_) => Some(cast(batch, POINT, &DataType::UInt64)?),
            None => None,
        };
        let point = point.as_ref().map(|p| p.as_primitive::<UInt64Type>());
        let fits = batch.column_by_name(FITS).map(|c| c.as_boolean().clone());
        let unusable = batch.column_by_name(PTQ_UNUSABLE).map(|c| c.as_boolean().clone());
        let increase = match self.rule.max_ppl_increase_pct {
            Some(max) => Some((cast(batch, PPL_INCREASE_PCT, &DataType::Float64)?, max)),
            None => None,
        };
        let within = |i: usize| {
            increase.as_ref().is_none_or(|(a, max)| {
                let a = a.as_primitive::<Float64Type>();
                a.is_valid(i) && a.value(i) <= *max
            })
        };
        let by: Vec<&ArrayRef> = self.rule.by.iter().map(|b| column(batch, b)).collect::<Result<Vec<_>>>()?;
        let values: Vec<Values> =
            self.rule.objectives.iter().map(|o| Values::read(batch, o)).collect::<Result<Vec<_>>>()?;
        let senses: Vec<Sense> = self.rule.objectives.iter().map(|o| o.sense).collect();
        let required: Vec<usize> = (0..senses.len()).filter(|&k| !optional[k]).collect();
        let format = |a: &ArrayRef, i: usize| arrow::util::display::array_value_to_string(a, i).unwrap_or_default();
        for i in 0..batch.num_rows() {
            let key: Vec<String> = by.iter().map(|a| format(a, i)).collect();
            let at = match self.index.get(&key) {
                Some(&at) => at,
                None => {
                    self.index.insert(key.clone(), self.groups.len());
                    let g = Group {
                        rows: 0,
                        fitting: 0,
                        unknown: 0,
                        full: Front::new(senses.clone()),
                        reduced: Front::new(required.iter().map(|&k| senses[k]).collect()),
                    };
                    self.groups.push((key, g));
                    self.groups.len() - 1
                }
            };
            let g = &mut self.groups[at].1;
            g.rows += 1;
            let fit = fits.as_ref().is_none_or(|f| f.is_valid(i) && f.value(i))
                && unusable.as_ref().is_none_or(|u| !(u.is_valid(i) && u.value(i)))
                && within(i);
            let row = first.map(|f| f + i as u64);
            let p = match point {
                Some(p) if p.is_valid(i) => p.value(i),
                Some(_) => continue,
                None => row.unwrap_or(i as u64),
            };
            let id = row.unwrap_or(p);
            if !fit {
                continue;
            }
            g.fitting += 1;
            let v: Vec<Option<f64>> = values.iter().map(|x| x.at(i)).collect();
            let finite = |k: &usize| v[*k].is_some_and(f64::is_finite);
            if !required.iter().all(finite) {
                continue;
            }
            g.reduced.offer(Member {
                point: p,
                id,
                values: required.iter().map(|&k| v[k].unwrap_or_default()).collect(),
            });
            if (0..v.len()).all(|k| finite(&k)) {
                g.full.offer(Member { point: p, id, values: v.iter().map(|x| x.unwrap_or_default()).collect() });
            } else {
                g.unknown += 1;
            }
        }
        Ok(())
    }

    /// Every group's front, groups in the order their first row came.
    pub fn groups(&self) -> Vec<GroupFront> {
        let optional = self.optional.clone().unwrap_or_else(|| vec![false; self.rule.objectives.len()]);
        self.groups
            .iter()
            .map(|(key, g)| {
                let key = self.rule.by.iter().cloned().zip(key.iter().cloned()).collect();
                let (objectives, left_out, unknown) = if g.drops_unknowns() {
                    let (kept, out): (Vec<_>, Vec<_>) =
                        self.rule.objectives.iter().zip(&optional).partition(|(_, opt)| !**opt);
                    let kept: Vec<Objective> = kept.into_iter().map(|(o, _)| o.clone()).collect();
                    (kept, out.into_iter().map(|(o, _)| o.column.clone()).collect(), 0)
                } else {
                    (self.rule.objectives.clone(), Vec::new(), g.unknown)
                };
                let mut members = g.front().members.clone();
                members.sort_by(|a, b| {
                    let first = |m: &Member| m.values.first().copied().unwrap_or_default();
                    first(a).total_cmp(&first(b)).then(a.point.cmp(&b.point))
                });
                GroupFront { key, rows: g.rows, fitting: g.fitting, objectives, left_out, unknown, members }
            })
            .collect()
    }

    /// `of` each member of every group's front, sorted (no group summaries built).
    fn members(&self, of: fn(&Member) -> u64) -> Vec<u64> {
        let mut on: Vec<u64> = self.groups.iter().flat_map(|(_, g)| g.front().members.iter().map(of)).collect();
        on.sort_unstable();
        on
    }

    /// The points on a front (of any group), sorted.
    pub fn points(&self) -> Vec<u64> {
        self.members(|m| m.point)
    }

    /// The ids of the rows on a front, sorted.
    fn ids(&self) -> Vec<u64> {
        self.members(|m| m.id)
    }

    /// The `pareto` column of a batch of the same sweep: whether each row's point is on its
    /// group's front. Reads only the `point` column.
    pub fn column(&self, batch: &RecordBatch) -> Result<ArrayRef> {
        Ok(Arc::new(mark(&self.points(), batch)?))
    }
}

/// Whether each row of `batch` has its point in `on` (sorted).
fn mark(on: &[u64], batch: &RecordBatch) -> Result<BooleanArray> {
    let point = cast(batch, POINT, &DataType::UInt64)?;
    let point = point.as_primitive::<UInt64Type>();
    Ok(point.iter().map(|p| Some(p.is_some_and(|p| on.binary_search(&p).is_ok()))).collect())
}

/// The columns [`Fronts::column`] reads from a batch.
pub const READS: &[&str] = &[POINT];

/// The `pareto` column's field.
pub fn field() -> Field {
    Field::new(PARETO_COLUMN, DataType::Boolean, false)
}

/// `batches` (of `schema`) with the `pareto` column of `rule` set: appended, or replaced
/// where the table has one. Rows are told apart by their place in the table, so a table put
/// together from several sweeps (whose points repeat) is marked right. Returns the table and
/// its fronts.
pub fn with_column(
    schema: &SchemaRef,
    batches: Vec<RecordBatch>,
    rule: &Rule,
) -> Result<(SchemaRef, Vec<RecordBatch>, Vec<GroupFront>)> {
    rule.check(schema)?;
    let fronts = Fronts::of_table(rule, &batches)?;
    let on = fronts.ids();
    let mut row = 0;
    let at = schema.index_of(PARETO_COLUMN).ok();
    let mut fields = schema.fields().to_vec();
    if at.is_none() {
        fields.push(Arc::new(field()));
    }
    let wider = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let werr = |e: arrow::error::ArrowError| LabError::Write { path: "<record batch>".into(), message: e.to_string() };
    let batches = batches
        .into_iter()
        .map(|b| {
            let mut cols = b.columns().to_vec();
            let mask: ArrayRef = Arc::new(
                (row..row + b.num_rows() as u64).map(|r| Some(on.binary_search(&r).is_ok())).collect::<BooleanArray>(),
            );
            row += b.num_rows() as u64;
            match at {
                Some(i) => cols[i] = mask,
                None => cols.push(mask),
            }
            RecordBatch::try_new(wider.clone(), cols).map_err(werr)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((wider, batches, fronts.groups()))
}

/// The `pareto` value of one row alone: what [`with_column`] marks in a table of that row only
/// (`memwall.estimate`'s row), read from the row's cells through the same rule. Built once per
/// rule and row layout; only the columns the rule reads go into the one-row table.
#[derive(Debug, Clone)]
pub struct Alone {
    rule: Rule,
    schema: SchemaRef,
    /// Per column of `schema`, the index of its cell in a row.
    cells: Vec<usize>,
}

impl Alone {
    /// For rows whose cells are named `names` in this order, under the types of the sweep's
    /// `schema`.
    pub fn new(rule: &Rule, schema: &Schema, names: &[&str]) -> Result<Self> {
        let reads = rule.reads();
        let mut fields = Vec::new();
        let mut cells = Vec::new();
        for (i, name) in names.iter().enumerate() {
            if reads.iter().any(|r| r == name) || *name == PTQ_UNUSABLE {
                let f = schema
                    .field_with_name(name)
                    .map_err(|e| LabError::Write { path: "<record batch>".into(), message: e.to_string() })?;
                fields.push(f.clone());
                cells.push(i);
            }
        }
        let schema = Arc::new(Schema::new(fields));
        rule.check(&schema)?;
        Ok(Alone { rule: rule.clone(), schema, cells })
    }

    /// Whether the row of `cells` is on its own front.
    pub fn on_front(&self, cells: &[(&str, crate::columns::Cell<'_>)]) -> Result<bool> {
        use crate::columns::Cell;
        use arrow::array::{Float64Array, Int64Array, StringArray, UInt32Array, UInt64Array, new_null_array};
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.cells.len());
        for (field, &i) in self.schema.fields().iter().zip(&self.cells) {
            let (name, cell) = &cells[i];
            let wrong = || LabError::Write {
                path: "<record batch>".into(),
                message: format!("column `{name}` of type {} holds {cell:?}", field.data_type()),
            };
            arrays.push(match (field.data_type(), cell) {
                (t, Cell::Null) => new_null_array(t, 1),
                (DataType::UInt64, Cell::U64(v)) => Arc::new(UInt64Array::from(vec![*v])),
                (DataType::UInt32, Cell::U64(v)) => {
                    Arc::new(UInt32Array::from(vec![u32::try_from(*v).map_err(|_| wrong())?]))
                }
                (DataType::Int64, Cell::I64(v)) => Arc::new(Int64Array::from(vec![*v])),
                (DataType::Float64, Cell::F64(v)) => Arc::new(Float64Array::from(vec![*v])),
                (DataType::Boolean, Cell::Bool(v)) => Arc::new(BooleanArray::from(vec![*v])),
                (DataType::Utf8, Cell::Str(v)) => Arc::new(StringArray::from(vec![v.as_ref()])),
                _ => return Err(wrong()),
            });
        }
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| LabError::Write { path: "<record batch>".into(), message: e.to_string() })?;
        Ok(!Fronts::of_table(&self.rule, &[batch])?.ids().is_empty())
    }
}

/// A rule and its groups' fronts as JSON: `{"by": [...], "objectives": ["min:col", ...],
/// "groups": [{"key": {col: value}, "rows", "fitting", "objectives", "left_out", "unknown",
/// "members": [point, ...]}]}`.
pub fn groups_json(rule: &Rule, groups: &[GroupFront]) -> serde_json::Value {
    let names = |o: &[Objective]| o.iter().map(Objective::name).collect::<Vec<_>>();
    serde_json::json!({
        "by": rule.by,
        "objectives": names(&rule.objectives),
        "groups": groups.iter().map(|g| serde_json::json!({
            "key": g.key.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str()))).collect::<serde_json::Map<String, serde_json::Value>>(),
            "rows": g.rows,
            "fitting": g.fitting,
            "objectives": names(&g.objectives),
            "left_out": g.left_out,
            "unknown": g.unknown,
            "members": g.members.iter().map(|m| m.point).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, StringArray, UInt64Array};

    const SENSES: [Sense; 4] = [Sense::Min, Sense::Max, Sense::Min, Sense::Min];

    /// A hand-made row: point, group `g`, fits, memory, tok/s, dPPL (weights; KV 0), J/token.
    type Row<'a> = (u64, &'a str, bool, u64, f64, Option<f64>, f64);

    /// A hand-made table of [`Row`]s.
    fn table(rows: &[Row<'_>]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("point", DataType::UInt64, false),
            Field::new("g", DataType::Utf8, false),
            Field::new("fits", DataType::Boolean, false),
            Field::new("total_bytes", DataType::UInt64, false),
            Field::new("decode_tok_s", DataType::Float64, false),
            Field::new("ppl_delta_weights", DataType::Float64, true),
            Field::new("ppl_delta_kv", DataType::Float64, true),
            Field::new("energy_j_per_token", DataType::Float64, false),
        ]));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(rows.iter().map(|r| r.0).collect::<UInt64Array>()),
            Arc::new(rows.iter().map(|r| Some(r.1)).collect::<StringArray>()),
            Arc::new(rows.iter().map(|r| Some(r.2)).collect::<BooleanArray>()),
            Arc::new(rows.iter().map(|r| r.3).collect::<UInt64Array>()),
            Arc::new(rows.iter().map(|r| r.4).collect::<Float64Array>()),
            Arc::new(rows.iter().map(|r| r.5).collect::<Float64Array>()),
            Arc::new(rows.iter().map(|r| r.5.map(|_| 0.0)).collect::<Float64Array>()),
            Arc::new(rows.iter().map(|r| r.6).collect::<Float64Array>()),
        ];
        RecordBatch::try_new(schema, cols).unwrap()
    }

    fn points(g: &GroupFront) -> Vec<u64> {
        g.members.iter().map(|m| m.point).collect()
    }

    /// A design whose weights the model does not survive (`ptq_unusable`) is never on the
    /// front, however small and fast: here the smallest and fastest of three.
    #[test]
    fn unusable_weights_are_never_on_the_front() {
        let t = table(&[
            (0, "a", true, 4, 10.0, Some(0.2), 1.0),
            (1, "a", true, 6, 12.0, Some(0.1), 1.0),
            (2, "a", true, 1, 50.0, Some(0.1), 0.5),
        ]);
        let unusable: ArrayRef = Arc::new(BooleanArray::from(vec![false, false, true]));
        let mut fields: Vec<Field> = t.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.push(Field::new("ptq_unusable", DataType::Boolean, false));
        let mut cols = t.columns().to_vec();
        cols.push(unusable);
        let t = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap();
        let mut f = Fronts::default();
        f.observe(&t).unwrap();
        assert_eq!(points(&f.groups()[0]), vec![0, 1]);
    }

    /// By hand: five designs, (memory, tok/s, dPPL, J/token).
    /// - 0 (4, 10, 0.2, 1.0) and 1 (6, 12, 0.1, 1.0) trade memory for speed and quality: both on.
    /// - 2 (6, 11, 0.2, 1.0) is dominated by 1 (same memory, faster, better quality).
    /// - 3 (4, 10, 0.2, 1.0) equals 0: equal designs are both on.
    /// - 4 (3, 5, 0.9, 2.0) is smallest: on, although worse in everything else.
    #[test]
    fn the_front_by_hand() {
        assert!(dominates(&SENSES, &[6.0, 12.0, 0.1, 1.0], &[6.0, 11.0, 0.2, 1.0]));
        assert!(!dominates(&SENSES, &[4.0, 10.0, 0.2, 1.0], &[4.0, 10.0, 0.2, 1.0]), "equal: no dominance");
        assert!(!dominates(&SENSES, &[4.0, 10.0, 0.2, 1.0], &[6.0, 12.0, 0.1, 1.0]));
        let t = table(&[
            (2, "a", true, 6, 11.0, Some(0.2), 1.0),
            (0, "a", true, 4, 10.0, Some(0.2), 1.0),
            (1, "a", true, 6, 12.0, Some(0.1), 1.0),
            (3, "a", true, 4, 10.0, Some(0.2), 1.0),
            (4, "a", true, 3, 5.0, Some(0.9), 2.0),
            (5, "a", false, 1, 99.0, Some(0.0), 0.1),
        ]);
        let mut f = Fronts::default();
        f.observe(&t).unwrap();
        let g = f.groups();
        assert_eq!(g.len(), 1);
        assert_eq!(points(&g[0]), vec![4, 0, 3, 1], "5 does not fit: never on the front");
        assert_eq!((g[0].rows, g[0].fitting), (6, 5));
        let col = f.column(&t).unwrap();
        let col = col.as_boolean();
        assert_eq!((0..6).map(|i| col.value(i)).collect::<Vec<_>>(), vec![false, true, true, true, true, false]);
    }

    /// The quality threshold: a design above it, or with its increase unknown, is not
    /// eligible (as one that does not fit); a table without the column, or a threshold that is
    /// not a number >= 0, is refused naming it.
    #[test]
    fn a_quality_threshold_keeps_designs_above_it_off_the_front() {
        let t = table(&[
            (0, "a", true, 4, 10.0, Some(0.2), 1.0),
            (1, "a", true, 3, 12.0, Some(0.5), 1.0),
            (2, "a", true, 2, 20.0, Some(0.1), 0.5),
        ]);
        // 0: +3 %, 1: +8 %, 2: unknown (dominates both otherwise).
        let mut fields = t.schema().fields().to_vec();
        fields.push(Arc::new(Field::new(PPL_INCREASE_PCT, DataType::Float64, true)));
        let mut cols = t.columns().to_vec();
        cols.push(Arc::new(Float64Array::from(vec![Some(3.0), Some(8.0), None])));
        let with_pct = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap();
        let mut all = Fronts::default();
        all.observe(&with_pct).unwrap();
        assert_eq!(points(&all.groups()[0]), vec![2]);
        let rule = Rule::default().with_max_ppl_increase_pct(Some(5.0)).unwrap();
        assert!(rule.reads().contains(&PPL_INCREASE_PCT.to_string()));
        let mut within = Fronts::new(rule.clone());
        within.observe(&with_pct).unwrap();
        assert_eq!(points(&within.groups()[0]), vec![0]);
        assert_eq!(within.groups()[0].fitting, 1);
        let e = Fronts::new(rule).observe(&t).unwrap_err().to_string();
        assert!(e.contains("max_ppl_increase_pct") && e.contains(PPL_INCREASE_PCT), "{e}");
        let e = Rule::default().with_max_ppl_increase_pct(Some(-1.0)).unwrap_err().to_string();
        assert!(e.contains("pareto.max_ppl_increase_pct") && e.contains("-1"), "{e}");
    }

    /// Per group: the same designs in two groups get a front each; a design beaten in one
    /// group is not removed by a design of the other.
    #[test]
    fn each_group_has_its_own_front() {
        let t = table(&[
            (0, "2048", true, 4, 10.0, Some(0.2), 1.0),
            (1, "2048", true, 6, 9.0, Some(0.3), 1.5),
            (2, "32768", true, 8, 4.0, Some(0.2), 2.0),
            (3, "32768", true, 9, 3.0, Some(0.5), 3.0),
        ]);
        let rule = Rule::new(vec!["g".into()], &[]).unwrap();
        let mut f = Fronts::new(rule.clone());
        f.observe(&t).unwrap();
        let g = f.groups();
        assert_eq!(g.iter().map(points).collect::<Vec<_>>(), vec![vec![0], vec![2]]);
        assert_eq!(g[1].key, vec![("g".to_string(), "32768".to_string())]);
        // Globally, 2 is beaten by 0: the grouped front keeps it.
        let mut global = Fronts::default();
        global.observe(&t).unwrap();
        assert_eq!(points(&global.groups()[0]), vec![0]);
        let (_, batches, groups) = with_column(&t.schema(), vec![t.clone()], &rule).unwrap();
        assert_eq!(groups, g);
        let col = batches[0].column_by_name(PARETO_COLUMN).unwrap().as_boolean().clone();
        assert_eq!((0..4).map(|i| col.value(i)).collect::<Vec<_>>(), vec![true, false, true, false]);
    }

    /// Two sweeps put together repeat their points: rows are told apart by their place.
    #[test]
    fn a_table_of_several_sweeps_is_marked_row_by_row() {
        let one = table(&[(0, "a", true, 4, 10.0, Some(0.2), 1.0), (1, "a", true, 6, 5.0, Some(0.3), 2.0)]);
        let two = table(&[(0, "a", true, 9, 3.0, Some(0.9), 3.0), (1, "a", true, 2, 20.0, Some(0.1), 0.5)]);
        let (_, batches, groups) = with_column(&one.schema(), vec![one, two], &Rule::default()).unwrap();
        let marks: Vec<bool> = batches
            .iter()
            .flat_map(|b| {
                let c = b.column_by_name(PARETO_COLUMN).unwrap().as_boolean().clone();
                (0..b.num_rows()).map(move |i| c.value(i))
            })
            .collect();
        assert_eq!(marks, vec![false, false, false, true], "the second sweep's point 1 beats all");
        assert_eq!(groups[0].members.iter().map(|m| (m.point, m.id)).collect::<Vec<_>>(), vec![(1, 3)]);
    }

    /// Quality unknown on every design that fits: the front over the other three, quality
    /// named as left out; unknown on some only: those are not compared, and counted.
    #[test]
    fn unknown_quality_is_left_out_and_said() {
        let all_unknown = table(&[(0, "a", true, 4, 10.0, None, 1.0), (1, "a", true, 6, 9.0, None, 1.0)]);
        let mut f = Fronts::default();
        f.observe(&all_unknown).unwrap();
        let g = &f.groups()[0];
        assert_eq!(points(g), vec![0]);
        assert_eq!(g.left_out, vec![PPL_DELTA.to_string()]);
        assert_eq!(
            g.objectives.iter().map(Objective::name).collect::<Vec<_>>(),
            ["min:total_bytes", "max:decode_tok_s", "min:energy_j_per_token"]
        );
        let some = table(&[(0, "a", true, 4, 10.0, None, 1.0), (1, "a", true, 6, 9.0, Some(0.1), 1.0)]);
        let mut f = Fronts::default();
        f.observe(&some).unwrap();
        let g = &f.groups()[0];
        assert_eq!((points(g), g.unknown, g.left_out.len()), (vec![1], 1, 0));
    }

    /// Chosen objectives: two of them, one a column a user added, senses as written.
    #[test]
    fn objectives_are_chosen_and_checked() {
        let t = table(&[(0, "a", true, 4, 10.0, Some(0.2), 1.0), (1, "a", true, 6, 12.0, Some(0.1), 3.0)]);
        let rule = Rule::new(vec![], &["decode_tok_s".into(), "min:energy_j_per_token".into()]).unwrap();
        assert_eq!(rule.objectives[0].sense, Sense::Max, "a rate: more is better");
        let mut f = Fronts::new(rule);
        f.observe(&t).unwrap();
        assert_eq!(points(&f.groups()[0]), vec![0, 1], "1 is faster, 0 uses less energy");
        let only_memory = Rule::new(vec![], &["total_bytes".into()]).unwrap();
        let mut f = Fronts::new(only_memory);
        f.observe(&t).unwrap();
        assert_eq!(points(&f.groups()[0]), vec![0]);
        for (by, objectives, needle) in [
            (vec!["contxt".to_string()], vec![], "pareto.by"),
            (vec![], vec!["decode_tok".to_string()], "decode_tok_s"),
            (vec![], vec!["g".to_string()], "not of numbers"),
            (vec![], vec!["most:decode_tok_s".to_string()], "not a sense"),
        ] {
            let e = Rule::new(by, &objectives).and_then(|r| r.check(&t.schema())).unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
        let e = Rule::new(vec![], &["total_bytes".into(), "min:total_bytes".into()]).unwrap_err().to_string();
        assert!(e.contains("named twice"), "{e}");
    }
}
