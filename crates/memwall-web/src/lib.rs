//! memwall's answers for the web page (`web/`, served by `memwall ui`): the page's script
//! sends one JSON request and gets one JSON document back (or the bytes of a Parquet file),
//! computed by the same library functions as the command line. Built for `wasm32-unknown-unknown`
//! it needs no glue library: [`abi`] exports five plain functions over the module's memory.
//!
//! Requests (`{"op": ...}`):
//! - `presets`: the `memwall.presets` document (`memwall presets --json`) and the device
//!   database's chips (`memwall devices`), for the pickers.
//! - `import` (with the file's bytes): a GGUF header or config.json dropped on the page, kept
//!   for later designs under its name; answers what the import mapped and the model as TOML.
//! - `estimate` ([`DesignRequest`]): the `memwall.estimate` and `memwall.footprint` documents
//!   of one design, equal to `memwall estimate --json` and `memwall footprint --json` with the
//!   same flags ([`DesignRequest::command_line`] spells them).
//! - `sweep`: an experiment (TOML) swept, its rows with the `pareto` column as column arrays,
//!   or the Parquet file `memwall run --out` writes of them.
//! - `simulate`: an experiment simulated, its summary rows and a thinned trace.

use std::cell::RefCell;
use std::collections::BTreeMap;

use memwall_import::{Imported, ModelFile};
use memwall_lab::report::{Choices, design};
use memwall_lab::{EngineProfile, Experiment, LabError, load_device, load_model};
use memwall_spec::{Backend, ContextPolicy, KvQuant, Mix, QuantFormat, Scenario, SpecError, Workload};
use serde::Deserialize;
use serde_json::{Value, json};

pub mod abi;

/// One request from the page: `{"op": NAME, ...fields}`.
#[derive(Debug)]
pub enum Request {
    /// `presets`: the presets and the device database.
    Presets,
    /// `import`: a model file's bytes.
    Import(ImportRequest),
    /// `estimate`: one design.
    Estimate(Box<DesignRequest>),
    /// `sweep`: an experiment swept.
    Sweep(SweepRequest),
    /// `simulate`: an experiment simulated.
    Simulate(SimulateRequest),
}

impl Request {
    /// Parse a request, an error naming the field at fault (`request: `context`: ...`).
    /// The fields are read apart from `op`, through a deserializer that tracks their path
    /// (serde's tagged enums buffer the fields and lose it).
    pub fn parse(text: &str) -> Result<Request, String> {
        let mut v: Value = serde_json::from_str(text).map_err(|e| format!("request: {e}"))?;
        let fields = v.as_object_mut().ok_or("request: expected a JSON object")?;
        let op = match fields.remove("op") {
            Some(Value::String(op)) => op,
            other => {
                return Err(format!("request: `op` = {}: expected the name of a request", other.unwrap_or_default()));
            }
        };
        Ok(match op.as_str() {
            "presets" => {
                fields_of::<NoFields>(v)?;
                Request::Presets
            }
            "import" => Request::Import(fields_of(v)?),
            "estimate" => Request::Estimate(Box::new(fields_of(v)?)),
            "sweep" => Request::Sweep(fields_of(v)?),
            "simulate" => Request::Simulate(fields_of(v)?),
            other => {
                return Err(format!(
                    "request: unknown `op` = {other}: expected presets, import, estimate, sweep or simulate"
                ));
            }
        })
    }
}

/// A request's fields as `T`, an error naming the one at fault.
fn fields_of<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(v).map_err(|e| match e.path().to_string() {
        p if p == "." => format!("request: {}", e.inner()),
        p => format!("request: `{p}`: {}", e.inner()),
    })
}

/// `presets` takes no fields.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoFields {}

/// `import`: the start of a model file (its bytes come beside the request).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImportRequest {
    /// `gguf` or `hf` (a config.json).
    pub kind: String,
    /// The file's name; the model is kept under it.
    pub name: String,
    /// The whole file's length, bytes (a GGUF's tensor data need not be sent).
    pub file_len: u64,
}

/// `sweep`: an experiment swept.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepRequest {
    /// The experiment, TOML.
    pub experiment: String,
    /// The Parquet file's bytes instead of JSON.
    #[serde(default)]
    pub parquet: bool,
}

/// `simulate`: an experiment simulated.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulateRequest {
    /// The experiment, TOML (with its `[sim]` table).
    pub experiment: String,
    /// Simulated seconds (absent: the experiment's).
    pub duration_s: Option<f64>,
    /// Trace rows returned at most (evenly thinned; rows with events kept).
    pub max_trace_rows: usize,
}

/// One design as the page's form states it: the flags of `memwall estimate` by name.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DesignRequest {
    /// A model preset name.
    pub model: Option<String>,
    /// The name of a model imported earlier (`import`), instead of a preset.
    pub imported: Option<String>,
    /// A device preset, database chip or device name (`Pixel 8`, `snapdragon-8-gen3-12gb`).
    pub device: String,
    /// Weight mix (absent: the file's, else Q4_K_M).
    pub weights: Option<String>,
    /// K-cache format.
    pub kv_k: String,
    /// V-cache format.
    pub kv_v: String,
    /// Context the KV cache is allocated for, tokens.
    pub context: u64,
    /// Prompt tokens.
    pub prompt: u64,
    /// Generated tokens.
    pub gen_tokens: u64,
    /// Tokens already in the cache before the prompt (absent: what fills the context).
    pub history: Option<u64>,
    /// Let the KV cache grow with the tokens seen.
    #[serde(default)]
    pub grow: bool,
    /// Sequences decoded together.
    pub batch: u32,
    /// CPU threads (absent: the engine's rule).
    pub threads: Option<u32>,
    /// Compute unit: cpu, gpu or npu.
    pub backend: String,
    /// Engine profile (absent: the unit's default).
    pub engine: Option<String>,
    /// Use class defaults for figures the device lacks.
    #[serde(default)]
    pub assume_defaults: bool,
    /// Margin kept free, GB.
    pub margin_gb: f64,
    /// Decode rates of replies started at these depths (`--depths`).
    #[serde(default)]
    pub depths: Vec<u64>,
}

/// What a request answers: a JSON document, or the bytes of a file.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A JSON document.
    Json(String),
    /// A file's bytes (Parquet).
    Bytes(Vec<u8>),
}

thread_local! {
    /// Models imported from files dropped on the page, by name (with their stored tensors,
    /// which no TOML carries).
    static IMPORTED: RefCell<BTreeMap<String, Imported>> = const { RefCell::new(BTreeMap::new()) };
}

/// The answer to the JSON `request` (`data`: the bytes an `import` reads), or the error's
/// message, which names the field and value at fault.
pub fn answer(request: &str, data: &[u8]) -> Result<Answer, String> {
    let req = Request::parse(request)?;
    let text = |v: Value| Answer::Json(v.to_string());
    match req {
        Request::Presets => presets().map(text),
        Request::Import(r) => import(&r.kind, &r.name, data, r.file_len).map(text),
        Request::Estimate(d) => estimate(&d).map(text),
        Request::Sweep(r) => sweep(&r.experiment, r.parquet),
        Request::Simulate(r) => simulate(&r.experiment, r.duration_s, r.max_trace_rows).map(text),
    }
    .map_err(|e| e.to_string())
}

/// A spec error naming `field` and `value`.
fn invalid(field: &str, value: impl std::fmt::Display, reason: impl Into<String>) -> LabError {
    SpecError::invalid(field, value, reason.into()).into()
}

/// A flag's text as its type, the error naming the flag as the command line does.
fn flag<T: std::str::FromStr<Err = SpecError>>(field: &str, text: &str) -> Result<T, LabError> {
    text.parse::<T>().map_err(|e| e.within(field).into())
}

/// The KV-cache formats the page offers: llama.cpp's cache types (`--cache-type-k`) and FP8.
pub const KV_FORMATS: &[&str] = &["f16", "bf16", "f32", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl", "fp8_e4m3"];

fn presets() -> Result<Value, LabError> {
    let mut doc =
        memwall_lab::report::document("presets", memwall_lab::report::json(&memwall_lab::report::presets(None)?));
    doc["database"] = memwall_lab::report::json(&memwall_lab::report::device_database(None));
    doc["file_types"] =
        memwall_spec::FileType::ALL.iter().map(|&t| Mix::File(t).to_string()).collect::<Vec<_>>().into();
    doc["kv_formats"] = KV_FORMATS.into();
    Ok(doc)
}

fn import(kind: &str, name: &str, data: &[u8], file_len: u64) -> Result<Value, LabError> {
    let kind = match kind {
        "gguf" => ModelFile::Gguf,
        "hf" => ModelFile::HfConfig,
        other => return Err(invalid("kind", other, "expected `gguf` or `hf` (a config.json)")),
    };
    let imported =
        memwall_import::import_bytes(kind, name, data, file_len).map_err(|e| LabError::Import(Box::new(e)))?;
    imported.model.validate()?;
    let model_toml = toml::to_string(&imported.model).map_err(|e| invalid("model", name, e.to_string()))?;
    let doc = json!({
        "name": name,
        "model": imported.model.name,
        "layers": imported.model.n_layers,
        "hidden": imported.model.hidden,
        "file_type": imported.file_type,
        "tensor_bytes": imported.tensor_bytes,
        "stored_tensors": imported.model.stored.as_ref().map(|s| s.len()),
        "weights": imported.weights.as_ref().map(|w| w.mix.to_string()),
        "notes": imported.notes,
        "unmapped": imported.unmapped,
        "model_toml": model_toml,
    });
    IMPORTED.with(|m| m.borrow_mut().insert(name.to_string(), imported));
    Ok(doc)
}

impl DesignRequest {
    /// The validated scenario ([`memwall_lab::report::design`], as the command line builds it).
    pub fn scenario(&self) -> Result<Scenario, LabError> {
        let (model, stated) = match (&self.model, &self.imported) {
            (Some(name), None) => (load_model(name)?, None),
            (None, Some(name)) => IMPORTED.with(|m| {
                m.borrow()
                    .get(name)
                    .map(|i| (i.model.clone(), i.weights.clone()))
                    .ok_or_else(|| invalid("imported", name, "no model file of that name was dropped on the page"))
            })?,
            _ => return Err(invalid("model", "", "give a preset (`model`) or an imported file (`imported`)")),
        };
        let engine = match &self.engine {
            Some(e) => Some(e.parse::<EngineProfile>()?.0),
            None => None,
        };
        let workload = Workload {
            prompt_tokens: self.prompt,
            gen_tokens: self.gen_tokens,
            history_tokens: self.history,
            context_tokens: self.context,
            context_policy: if self.grow { ContextPolicy::Grow } else { ContextPolicy::Allocate },
            batch: self.batch,
            threads: self.threads,
            backend: flag::<Backend>("backend", &self.backend)?,
            margin_bytes: memwall_lab::report::margin_bytes("margin_gb", self.margin_gb)?,
            ..Workload::default()
        };
        let choices = Choices {
            weights: self.weights.as_deref().map(|w| flag::<Mix>("weights", w)).transpose()?,
            kv: KvQuant { k: flag::<QuantFormat>("kv_k", &self.kv_k)?, v: flag::<QuantFormat>("kv_v", &self.kv_v)? },
            workload,
            engine,
            assume_defaults: self.assume_defaults,
        };
        design(model, stated, load_device(&self.device)?, choices)
    }

    /// The `memwall estimate` command line that gives the same answer (for a preset model;
    /// an imported one is named by its file).
    pub fn command_line(&self) -> Vec<String> {
        let mut a: Vec<String> = vec!["estimate".into()];
        let mut push = |k: &str, v: String| {
            a.push(format!("--{k}"));
            a.push(v);
        };
        match (&self.model, &self.imported) {
            (Some(m), _) => push("model", m.clone()),
            (None, Some(f)) => push("model", f.clone()),
            _ => {}
        }
        push("device", self.device.clone());
        if let Some(w) = &self.weights {
            push("weights", w.clone());
        }
        push("kv-k", self.kv_k.clone());
        push("kv-v", self.kv_v.clone());
        push("context", self.context.to_string());
        push("prompt", self.prompt.to_string());
        push("gen-tokens", self.gen_tokens.to_string());
        if let Some(h) = self.history {
            push("history", h.to_string());
        }
        push("batch", self.batch.to_string());
        if let Some(t) = self.threads {
            push("threads", t.to_string());
        }
        push("backend", self.backend.clone());
        if let Some(e) = &self.engine {
            push("engine", e.clone());
        }
        push("margin-gb", self.margin_gb.to_string());
        if !self.depths.is_empty() {
            push("depths", self.depths.iter().map(u64::to_string).collect::<Vec<_>>().join(","));
        }
        if self.grow {
            a.push("--grow".into());
        }
        if self.assume_defaults {
            a.push("--assume-defaults".into());
        }
        a.push("--json".into());
        a
    }
}

fn estimate(d: &DesignRequest) -> Result<Value, LabError> {
    let s = d.scenario()?;
    let r = memwall_lab::report::estimate(&s, false, &d.depths)?;
    let f = memwall_lab::report::footprint_of(&s, &r.estimate);
    Ok(json!({
        "estimate": memwall_lab::report::document("estimate", r.json()),
        "footprint": memwall_lab::report::document("footprint", f.json()),
        "warning": s.context_warning(),
        "command": d.command_line(),
    }))
}

fn sweep(text: &str, parquet: bool) -> Result<Answer, LabError> {
    let exp = Experiment::parse(text, "the page's experiment")?;
    let sweep = memwall_lab::Sweep::new(&exp)?;
    let batch = sweep.table()?;
    let (schema, batches, groups) = memwall_lab::pareto::with_column(&batch.schema(), vec![batch], &exp.pareto)?;
    if parquet {
        let mut meta = memwall_lab::metadata(Some(&exp));
        meta.extend(sweep.resolved_metadata());
        return memwall_lab::parquet_bytes(&schema, &batches, &meta).map(Answer::Bytes);
    }
    let b = &batches[0];
    let rows: Vec<usize> = (0..b.num_rows()).collect();
    let doc = json!({
        "table": memwall_lab::columns::batch_json(b, &rows),
        "fronts": memwall_lab::pareto::groups_json(&exp.pareto, &groups),
    });
    Ok(Answer::Json(doc.to_string()))
}

fn simulate(text: &str, duration_s: Option<f64>, max_rows: usize) -> Result<Value, LabError> {
    if let Some(d) = duration_s {
        memwall_spec::units::Seconds::new(d).map_err(|e| e.within("duration_s"))?;
    }
    let exp = Experiment::parse(text, "the page's experiment")?;
    let (results, batches) = memwall_lab::simulate_in_memory(
        &exp,
        0..exp.len(),
        duration_s,
        true,
        memwall_lab::simulate::TRACE_LIMIT_BYTES,
        None,
        &mut |_, _| true,
    )?;
    let mut table = memwall_lab::TableBuilder::summaries(&exp, results.len());
    for r in &results {
        table.append(&exp, r.point.index as u64, &r.point.scenario, &r.point.choice, &r.summary);
    }
    let summary = table.finish()?;
    let all: Vec<usize> = (0..summary.num_rows()).collect();
    let trace = match batches.as_slice() {
        [] => Value::Null,
        _ => {
            let schema = batches[0].schema();
            let one =
                arrow::compute::concat_batches(&schema, &batches).map_err(|e| invalid("trace", "", e.to_string()))?;
            memwall_lab::columns::batch_json(&one, &thinned(&one, max_rows.max(2)))
        }
    };
    Ok(
        json!({ "summary": memwall_lab::columns::batch_json(&summary, &all), "trace": trace, "trace_rows": batches.iter().map(|b| b.num_rows()).sum::<usize>() }),
    )
}

/// At most about `max` rows of a trace, evenly spaced, with every row that carries an event.
fn thinned(trace: &arrow::record_batch::RecordBatch, max: usize) -> Vec<usize> {
    use arrow::array::{Array, AsArray};
    let n = trace.num_rows();
    let step = n.div_ceil(max).max(1);
    let events = trace.column_by_name("events").map(|c| c.as_string::<i32>().clone());
    (0..n)
        .filter(|&i| {
            i % step == 0 || i + 1 == n || events.as_ref().is_some_and(|e| e.is_valid(i) && !e.value(i).is_empty())
        })
        .collect()
}

#[cfg(test)]
mod tests;
