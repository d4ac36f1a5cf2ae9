//! Experiments: a base scenario plus a grid of parameters to sweep over. Any field of the
//! scenario is addressable by its dotted path (`workload.context_tokens`, `model.n_kv_heads`,
//! `device.memory.data_rate_mtps`); `a+b` sets several paths to the same value
//! (`"kv.k+kv.v" = ["f16", "q8_0"]`); `model` and `device` take preset names or paths.
//!
//! ```toml
//! name = "phone-35b"
//! seed = 0
//! [base]
//! model = "hypothetical-35b-dense"
//! device = "snapdragon-8-gen3-16gb"
//! weights = { mix = "Q4_K_M" }
//! [grid]
//! "weights.mix" = ["Q8_0", "Q4_K_M"]
//! "workload.context_tokens" = [4096, 32768]
//! [labels]                       # optional display labels for an axis
//! "workload.context_tokens" = ["4K", "32K"]
//! ```

use std::path::Path;

use memwall_spec::{Scenario, SpecError, from_toml};
use serde::Deserialize;

use crate::error::{LabError, Result};
use memwall_catalog::presets::{StoredByFile, resolve_value};

/// One sweep axis.
#[derive(Debug, Clone)]
pub struct Axis {
    /// The key as written (`"kv.k+kv.v"`, `"workload.context_tokens,workload.prompt_tokens"`).
    pub key: String,
    /// The dotted paths it sets.
    pub paths: Vec<String>,
    /// Whether the paths are zipped (`a,b`: each value is an array with one entry per path)
    /// rather than set together (`a+b`: each value goes to every path).
    pub zipped: bool,
    /// Values as written (preset names stay names).
    pub values: Vec<toml::Value>,
    /// Values to assign (preset names resolved to tables).
    pub(crate) resolved: Vec<toml::Value>,
    /// Display labels, one per value.
    pub labels: Option<Vec<String>>,
}

impl Axis {
    /// The value path `k` of the axis takes at value `i`.
    pub(crate) fn value_of(&self, k: usize, i: usize) -> &toml::Value {
        match (&self.resolved[i], self.zipped) {
            (toml::Value::Array(parts), true) => &parts[k],
            (v, _) => v,
        }
    }

    /// Every value path `k` of the axis takes, in order.
    pub(crate) fn values_of(&self, k: usize) -> Vec<toml::Value> {
        (0..self.resolved.len()).map(|i| self.value_of(k, i).clone()).collect()
    }

    /// Display text of value `i`: its label, or the value (strings unquoted).
    pub fn display(&self, i: usize) -> String {
        match &self.labels {
            Some(l) => l[i].clone(),
            None => display_value(&self.values[i]),
        }
    }
}

/// Render a TOML value for people: strings bare, everything else as TOML.
pub fn display_value(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    seed: Option<u64>,
    base: toml::Table,
    #[serde(default)]
    grid: toml::Table,
    #[serde(default)]
    labels: toml::Table,
    #[serde(default)]
    pareto: Option<RawPareto>,
}

/// `[pareto]`: which front a sweep marks (see [`crate::pareto`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPareto {
    #[serde(default)]
    by: Vec<String>,
    #[serde(default)]
    objectives: Vec<String>,
    /// Quality threshold: designs whose perplexity increase (% of the model's baseline) is
    /// unknown or above it are left off the front.
    #[serde(default)]
    max_ppl_increase_pct: Option<f64>,
}

/// A parsed experiment.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// Name.
    pub name: String,
    /// What it asks.
    pub description: String,
    /// The one seed of the experiment: every point's simulator runs with it (`sim.seed`),
    /// unless the grid sweeps `sim.seed`.
    pub seed: u64,
    /// The base scenario with presets resolved.
    base: toml::Table,
    /// Axes in file order; the last varies fastest.
    pub axes: Vec<Axis>,
    /// The experiment's TOML text, stored in the results' metadata.
    pub text: String,
    /// Tensors of the GGUF files the experiment's models come from, by path.
    stored: StoredByFile,
    /// The front its sweep marks in the `pareto` column (`[pareto]`: `by`, `objectives`;
    /// by default one front over memory, decode tok/s, quality and energy).
    pub pareto: crate::pareto::Rule,
    /// Whether neither `base` nor the grid names an engine: each point then runs the default
    /// engine for its device and unit ([`memwall_catalog::defaults::default_engine`]).
    pub(crate) engine_by_default: bool,
    /// The first point's scenario, built and validated by [`Experiment::parse`]: a design
    /// evaluated alone (one point, `memwall.estimate`) starts from it rather than building it
    /// from the TOML again.
    pub(crate) first: Option<Scenario>,
}

/// One point of the grid.
#[derive(Debug, Clone)]
pub struct Point {
    /// Index in the sweep.
    pub index: usize,
    /// Value index per axis.
    pub choice: Vec<usize>,
    /// The resolved, validated scenario.
    pub scenario: Scenario,
}

fn invalid(field: impl Into<String>, value: impl ToString, reason: impl Into<String>) -> LabError {
    LabError::Spec(SpecError::invalid(field, value, reason))
}

fn resolve_top(table: &mut toml::Table, stored: &mut StoredByFile) -> Result<()> {
    for key in ["model", "device", "engine"] {
        if let Some(v) = table.get(key) {
            let r = resolve_value(key, v, stored).map_err(|e| match LabError::from(e) {
                LabError::Spec(s) => LabError::Spec(s.within("base")),
                other => other,
            })?;
            table.insert(key.to_string(), r);
        }
    }
    Ok(())
}

/// The experiment's seed is the simulator's: `seed` is written into `base.sim.seed`, and a
/// `base.sim.seed` that says otherwise is an error (a file must not record a seed that was
/// never used). Without `seed`, `base.sim.seed` (or 0) is the seed.
fn one_seed(base: &mut toml::Table, seed: Option<u64>) -> Result<u64> {
    let sim_seed = base.get("sim").and_then(|s| s.get("seed")).cloned();
    let Some(seed) = seed else {
        return Ok(sim_seed.and_then(|v| v.as_integer()).and_then(|v| u64::try_from(v).ok()).unwrap_or(0));
    };
    match sim_seed {
        Some(v) if v.as_integer() != i64::try_from(seed).ok() => Err(invalid(
            "base.sim.seed",
            v,
            format!("the experiment's seed is {seed}; one seed drives the simulator, so give it once"),
        )),
        _ => {
            let seed_value = i64::try_from(seed)
                .map_err(|_| invalid("seed", seed, "must be at most 2^63 − 1 (TOML integers are signed)"))?;
            set_path(base, "sim.seed", toml::Value::Integer(seed_value))?;
            Ok(seed)
        }
    }
}

/// Set `path` (dotted) in `doc` to `v`, creating tables on the way.
fn set_path(doc: &mut toml::Table, path: &str, v: toml::Value) -> Result<()> {
    let segs: Vec<&str> = path.split('.').collect();
    let mut cur = doc;
    for (i, seg) in segs.iter().enumerate() {
        if seg.is_empty() {
            return Err(invalid(format!("grid.\"{path}\""), path, "empty path segment"));
        }
        if i + 1 == segs.len() {
            cur.insert(seg.to_string(), v);
            return Ok(());
        }
        let entry = cur.entry(seg.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        match entry {
            toml::Value::Table(t) => cur = t,
            other => {
                return Err(invalid(
                    format!("grid.\"{path}\""),
                    other.to_string(),
                    format!("`{}` is not a table, so `{path}` cannot be set", segs[..=i].join(".")),
                ));
            }
        }
    }
    Ok(())
}

/// Find which section of a scenario table fails to parse, for an error that names it.
fn section_error(doc: &toml::Table) -> Option<SpecError> {
    use memwall_spec::{CostModel, DeviceSpec, KvQuant, ModelSpec, WeightQuant, Workload};
    // Deserialize the section's value itself (not a re-serialized copy, whose line numbers
    // would mean nothing to the user): the error names the full path, indices included.
    fn check<T: serde::de::DeserializeOwned>(key: &str, v: &toml::Value) -> Option<SpecError> {
        if !v.is_table() {
            return Some(SpecError::invalid(key, v, "must be a table"));
        }
        let e = serde_path_to_error::deserialize::<_, T>(v.clone()).err()?;
        let path = e.path().to_string();
        let field = if path == "." || path.is_empty() { key.to_string() } else { format!("{key}.{path}") };
        // The parser appends "in `key`" lines; the path already says where.
        let message = e.into_inner().to_string();
        let first = message.lines().next().unwrap_or_default();
        Some(SpecError::Field { field, message: memwall_spec::suggest::annotate(first) })
    }
    const KNOWN: [&str; 9] =
        ["model", "device", "weights", "kv", "workload", "engine", "cost", "sim", "assume_defaults"];
    for key in doc.keys() {
        if !KNOWN.contains(&key.as_str()) {
            return Some(SpecError::unknown(
                "base",
                "scenario section",
                key.clone(),
                KNOWN,
                format!("; expected one of {}", KNOWN.join(", ")),
            ));
        }
    }
    for key in ["model", "device", "weights"] {
        if !doc.contains_key(key) {
            return Some(SpecError::invalid(key, "missing", "a scenario needs model, device and weights"));
        }
    }
    doc.iter().find_map(|(k, v)| match k.as_str() {
        "model" => check::<ModelSpec>(k, v),
        "device" => check::<DeviceSpec>(k, v),
        "weights" => check::<WeightQuant>(k, v),
        "kv" => check::<KvQuant>(k, v),
        "workload" => check::<Workload>(k, v),
        "sim" => check::<memwall_spec::SimConfig>(k, v),
        "engine" => check::<memwall_spec::EngineSpec>(k, v),
        "assume_defaults" if !v.is_bool() => Some(SpecError::invalid(k, v, "must be true or false")),
        "assume_defaults" => None,
        _ => check::<CostModel>(k, v),
    })
}

/// Refuse two grid axes that set the same field (`"kv.k+kv.v"` and `"kv.k"`), or one axis
/// that names a field twice: one would silently overwrite the other while the rows were
/// labelled with both. Setting a whole table and a field inside it (`model` and
/// `model.n_layers`) is allowed: the table is set first, then the field.
fn one_axis_per_field(axes: &[Axis]) -> Result<()> {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for a in axes {
        for p in &a.paths {
            if let Some((_, other)) = seen.iter().find(|(q, _)| q == p) {
                let also = if *other == a.key {
                    "names it twice".to_string()
                } else {
                    format!("and `grid.\"{other}\"` both set it")
                };
                return Err(invalid(
                    format!("grid.\"{}\"", a.key),
                    p,
                    format!("this axis {also}; a field takes its values from one axis"),
                ));
            }
            seen.push((p, &a.key));
        }
    }
    Ok(())
}

/// The number of grid points, the product of the axis sizes, refused when it exceeds
/// 2^64 − 1 (so every count and index below is exact).
fn count_points(axes: &[Axis]) -> Result<u64> {
    axes.iter()
        .try_fold(1u64, |n, a| n.checked_mul(a.values.len() as u64))
        .filter(|n| usize::try_from(*n).is_ok())
        .ok_or_else(|| {
            let sizes: Vec<String> = axes.iter().map(|a| format!("{} ({})", a.key, a.values.len())).collect();
            invalid("grid", sizes.join(" × "), format!("the grid has more than {} points; shrink it", usize::MAX))
        })
}

impl Experiment {
    /// Parse an experiment from TOML text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        Self::from_raw(from_toml(text, origin)?, text)
    }

    /// The experiment of one design: `base` (a scenario's table, presets by name) with no
    /// grid, named `name`; its text is `base`'s TOML. What a front end that holds a design
    /// as values rather than text (Python's `estimate`) builds, without writing and parsing
    /// TOML.
    pub fn of_design(name: &str, base: toml::Table) -> Result<Self> {
        let mut doc = toml::Table::new();
        doc.insert("name".into(), name.into());
        doc.insert("base".into(), toml::Value::Table(base.clone()));
        let text = doc.to_string();
        let raw = Raw {
            name: name.to_string(),
            description: String::new(),
            seed: None,
            base,
            grid: toml::Table::new(),
            labels: toml::Table::new(),
            pareto: None,
        };
        Self::from_raw(raw, &text)
    }

    fn from_raw(raw: Raw, text: &str) -> Result<Self> {
        if raw.name.trim().is_empty() {
            return Err(invalid("name", "\"\"", "an experiment needs a name"));
        }
        let mut base = raw.base;
        // Model files: each GGUF's tensors, to re-attach to the points built from it.
        let mut stored = StoredByFile::new();
        resolve_top(&mut base, &mut stored)?;
        let seed = one_seed(&mut base, raw.seed)?;
        let mut axes = Vec::new();
        for (key, values) in raw.grid {
            let field = format!("grid.\"{key}\"");
            let toml::Value::Array(values) = values else {
                return Err(invalid(field, values, "a grid axis is an array of values"));
            };
            if values.is_empty() {
                return Err(invalid(field, "[]", "a grid axis needs at least one value"));
            }
            let zipped = key.contains(',');
            if zipped && key.contains('+') {
                return Err(invalid(
                    field,
                    &key,
                    "an axis either zips paths (`a,b`: a value per path) or sets them together (`a+b`), not both",
                ));
            }
            let paths: Vec<String> = key.split([',', '+']).map(|p| p.trim().to_string()).collect();
            if zipped {
                for (i, v) in values.iter().enumerate() {
                    match v {
                        toml::Value::Array(parts) if parts.len() == paths.len() => {}
                        other => {
                            return Err(invalid(
                                format!("{field}[{i}]"),
                                other,
                                format!("a zipped axis takes arrays of {} values, one per path", paths.len()),
                            ));
                        }
                    }
                }
            }
            let is_spec = |p: &str| ["model", "device", "engine"].contains(&p);
            let resolved = if zipped && paths.iter().any(|p| is_spec(p)) {
                let mut out = Vec::with_capacity(values.len());
                for v in &values {
                    let toml::Value::Array(parts) = v else { unreachable!("checked above") };
                    let mut row = Vec::with_capacity(parts.len());
                    for (p, x) in paths.iter().zip(parts) {
                        row.push(if is_spec(p) {
                            resolve_value(p, x, &mut stored).map_err(|e| match LabError::from(e) {
                                LabError::Spec(s) => LabError::Spec(s.within("grid")),
                                other => other,
                            })?
                        } else {
                            x.clone()
                        });
                    }
                    out.push(toml::Value::Array(row));
                }
                out
            } else if let Some(kind) = paths.iter().find(|p| is_spec(p)) {
                let kind = kind.clone();
                values.iter().map(|v| Ok(resolve_value(&kind, v, &mut stored)?)).collect::<Result<Vec<_>>>().map_err(
                    |e| match e {
                        LabError::Spec(s) => LabError::Spec(s.within("grid")),
                        other => other,
                    },
                )?
            } else {
                values.clone()
            };
            axes.push(Axis { key, paths, zipped, values, resolved, labels: None });
        }
        one_axis_per_field(&axes)?;
        count_points(&axes)?;
        let keys: Vec<String> = axes.iter().map(|a| a.key.clone()).collect();
        for (key, labels) in raw.labels {
            let field = format!("labels.\"{key}\"");
            let axis = axes.iter_mut().find(|a| a.key == key).ok_or_else(|| {
                LabError::Spec(SpecError::unknown(
                    field.clone(),
                    "grid axis",
                    key.clone(),
                    keys.iter().map(String::as_str),
                    "; labels must name a key of [grid]",
                ))
            })?;
            let toml::Value::Array(labels) = labels else {
                return Err(invalid(field, labels, "labels are an array of strings"));
            };
            if labels.len() != axis.values.len() {
                return Err(invalid(
                    field,
                    format!("{} labels", labels.len()),
                    format!("the axis has {} values", axis.values.len()),
                ));
            }
            axis.labels = Some(labels.iter().map(display_value).collect());
        }
        let pareto = match raw.pareto {
            Some(p) => {
                crate::pareto::Rule::new(p.by, &p.objectives)?.with_max_ppl_increase_pct(p.max_ppl_increase_pct)?
            }
            None => crate::pareto::Rule::default(),
        };
        let engine_by_default = !base.contains_key("engine")
            && !axes.iter().flat_map(|a| &a.paths).any(|p| p == "engine" || p.starts_with("engine."));
        let mut exp = Experiment {
            first: None,
            engine_by_default,
            name: raw.name,
            description: raw.description,
            seed,
            base,
            axes,
            text: text.into(),
            stored,
            pareto,
        };
        // The front's columns are the sweep's.
        exp.pareto.check(&crate::TableBuilder::estimates(&exp, 0).schema())?;
        // Check the first point and every axis value (others at their first value) now, so
        // that typos fail before any work; combinations are checked as the sweep reaches them.
        exp.first = Some(exp.point(0)?.scenario);
        for (ai, axis) in exp.axes.iter().enumerate() {
            for vi in 1..axis.values.len() {
                let mut choice = vec![0; exp.axes.len()];
                choice[ai] = vi;
                exp.point_at(exp.index_of(&choice), choice)?;
            }
        }
        Ok(exp)
    }

    /// Read and parse an experiment file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = memwall_catalog::read_text(path)?;
        let origin = path.display().to_string();
        Self::parse(&text, &origin).map_err(|e| crate::locate::at_line(e, &text, &origin, &["base."]))
    }

    /// Number of grid points (exact: [`Experiment::parse`] refuses a grid whose count does
    /// not fit).
    pub fn len(&self) -> usize {
        self.axes.iter().map(|a| a.values.len()).product()
    }

    /// Whether the grid is empty (never: an experiment has at least its base point).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value index per axis of point `index` (the last axis varies fastest).
    pub fn choice(&self, mut index: usize) -> Vec<usize> {
        let mut c = vec![0; self.axes.len()];
        for (i, a) in self.axes.iter().enumerate().rev() {
            c[i] = index % a.values.len();
            index /= a.values.len();
        }
        c
    }

    /// `path=value` text of a point.
    pub fn describe(&self, choice: &[usize]) -> String {
        self.axes.iter().zip(choice).map(|(a, &i)| format!("{}={}", a.key, a.display(i))).collect::<Vec<_>>().join(", ")
    }

    /// Index of the point with value indices `choice` (saturating at `usize::MAX` in a grid
    /// too large to number).
    pub(crate) fn index_of(&self, choice: &[usize]) -> usize {
        self.axes.iter().zip(choice).fold(0usize, |acc, (a, &c)| acc.saturating_mul(a.values.len()).saturating_add(c))
    }

    /// Build and validate point `index`.
    pub fn point(&self, index: usize) -> Result<Point> {
        self.point_at(index, self.choice(index))
    }

    fn point_at(&self, index: usize, choice: Vec<usize>) -> Result<Point> {
        let scenario = self.scenario_at(index, &choice)?;
        scenario.validate().map_err(|e| LabError::Point {
            index,
            params: self.describe(&choice),
            source: Box::new(LabError::Spec(e)),
        })?;
        Ok(Point { index, choice, scenario })
    }

    /// A point whose model comes from a GGUF file gets the file's tensors back, unless the
    /// grid changes the model's shape (`model.…` axes: the spec then describes the tensors),
    /// and their stored types as the weight mix, unless the grid sweeps the mix (the file then
    /// supplies the shapes only).
    fn attach_stored(&self, mut s: Scenario) -> Scenario {
        let Some(t) = s.model.from_file.as_ref().and_then(|f| self.stored.get(f)) else { return s };
        let swept = |prefix: &str| self.axes.iter().flat_map(|a| a.paths.iter()).any(|p| p.starts_with(prefix));
        if swept("model.") {
            return s;
        }
        s.model.stored = Some(t.clone());
        if !swept("weights") {
            s.weights.mix = memwall_spec::Mix::Stored;
        }
        s
    }

    /// The scenario of the point with value indices `choice` (index `index`, for errors),
    /// built but not validated.
    pub(crate) fn scenario_at(&self, index: usize, choice: &[usize]) -> Result<Scenario> {
        if let Some(first) = self.first.as_ref().filter(|_| choice.iter().all(|&c| c == 0)) {
            return Ok(first.clone());
        }
        let wrap = |e: LabError| LabError::Point { index, params: self.describe(choice), source: Box::new(e) };
        let doc = self.doc_at(choice).map_err(wrap)?;
        match toml::Value::Table(doc).try_into::<Scenario>() {
            Ok(mut s) => {
                if self.engine_by_default {
                    s.engine = memwall_catalog::defaults::default_engine(&s.device, s.workload.backend)
                        .map_err(|e| wrap(e.into()))?
                        .engine;
                }
                Ok(self.attach_stored(s))
            }
            // The document again (it went into the conversion), for the section to blame.
            Err(e) => Err(wrap(LabError::Spec(
                self.doc_at(choice)
                    .ok()
                    .and_then(|doc| section_error(&doc))
                    .unwrap_or_else(|| SpecError::Parse { origin: "scenario".into(), message: e.to_string() }),
            ))),
        }
    }

    /// The TOML document of the point with value indices `choice`: the base with each axis's
    /// value set at its paths.
    fn doc_at(&self, choice: &[usize]) -> Result<toml::Table> {
        let mut doc = self.base.clone();
        // Whole-object assignments (`model`) before the paths inside them (`model.n_layers`).
        let mut sets: Vec<(&str, &toml::Value)> = self
            .axes
            .iter()
            .zip(choice)
            .flat_map(|(a, &i)| a.paths.iter().enumerate().map(move |(k, p)| (p.as_str(), a.value_of(k, i))))
            .collect();
        sets.sort_by_key(|(p, _)| p.matches('.').count());
        for (p, v) in sets {
            set_path(&mut doc, p, v.clone())?;
        }
        Ok(doc)
    }
}
