//! llama-bench results, and a device calibrated from them.
//!
//! `llama-bench` (llama.cpp's benchmark) prints JSON (`-o json`), JSONL (`-o jsonl`), CSV
//! (`-o csv`) or a markdown table (the default). Each format is read into [`BenchRow`]s; a
//! generation test (`tg128`, `tg128 @ d4096`) of a model run on a device the researcher
//! owns is a measured decode rate, and several of them (at several depths, thread counts or
//! weight formats) pin that device's bandwidth share, its fixed cost per token and how
//! attention grows with the context; a prompt test (`pp512`, `pp512 @ d4096`) is a measured
//! prefill rate, which pins the engine's prefill (matrix-matrix) efficiency on the unit, the
//! decode figures fixed ([`calibrate`]). Malformed or partial files are refused with the line
//! and the field, and so is a rate that is 0, negative or not finite.
//!
//! Calibration believes no row on its word. [`calibrate`], which every front end calls,
//! refuses — naming the line, the field, its value and the limit — before the fit:
//! - a row of another model: `model_n_params` (`params`) more than [`PARAMS_TOLERANCE`]
//!   from the model's parameter count, or `model_size` (`size`) more than
//!   [`SIZE_TOLERANCE`] from the weight bytes of the row's mix; a row stating neither is
//!   held to its `model_type` size label within a factor [`LABEL_FACTOR`];
//! - a rate that is 0, negative or not finite;
//! - a generation rate above what the device's peak DRAM bandwidth (and its last-level
//!   cache) can feed with the weights a token reads;
//! - a prompt rate above what the unit's peak arithmetic allows (every active weight
//!   multiplied once per token);
//!
//! and after it:
//! - a fitted figure that ended at a bound of [`Knob::bounds`] the rows
//!   pushed it to (a bandwidth share of 0.02 for rows of 1e-6 tok/s);
//! - an rms log residual that is not finite or above [`MAX_RMS_LOG`] (ln 1.5).
//!
//! A refused calibration returns an error and nothing, so no caller writes a profile.

use crate::CalibError;
use crate::fit::{Fit, Knob, Observation, Param, Phase, Predictor, fit};
use memwall_spec::{Backend, DeviceSpec, EngineSpec, KvQuant, ModelSpec, Scenario, SpecError, WeightQuant, Workload};

/// Result alias of this module.
type Result<T, E = CalibError> = std::result::Result<T, E>;

/// One llama-bench result.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchRow {
    /// 1-based line of the row in the file.
    pub line: usize,
    /// `model_type` (`llama 7B Q4_0`).
    pub model_type: String,
    /// Backend as printed (`CPU`, `Metal`, `CUDA`, `Vulkan`, `OpenCL`, `BLAS,Metal`).
    pub backend: String,
    /// Layers offloaded to the GPU (`ngl`), when stated.
    pub n_gpu_layers: Option<i64>,
    /// Threads, when stated.
    pub threads: Option<u32>,
    /// Prompt tokens of the test (0 for a generation test).
    pub n_prompt: u64,
    /// Generated tokens of the test (0 for a prompt test).
    pub n_gen: u64,
    /// Tokens already in the cache (`@ d4096`).
    pub n_depth: u64,
    /// Mean tokens/s.
    pub avg_ts: f64,
    /// Parameters of the model file as llama-bench counts them (every tensor element,
    /// embeddings and output included): `model_n_params`, or the markdown `params` column
    /// (`6.74 B`); `None` where the file does not say.
    pub model_n_params: Option<u64>,
    /// Bytes of the model's tensors: `model_size`, or the markdown `size` column
    /// (`3.56 GiB`); `None` where the file does not say.
    pub model_size: Option<u64>,
    /// The format the row was read from (names its fields in refusals).
    pub format: BenchFormat,
}

/// The llama-bench output format a row came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BenchFormat {
    /// `-o json`.
    Json,
    /// `-o jsonl`.
    Jsonl,
    /// `-o csv`.
    Csv,
    /// The default markdown table.
    Markdown,
}

impl BenchFormat {
    /// The name of a field in this format: `machine` in JSON, JSONL and CSV, `table` in the
    /// markdown table.
    pub fn field(self, machine: &'static str, table: &'static str) -> &'static str {
        if self == BenchFormat::Markdown { table } else { machine }
    }
}

impl BenchRow {
    /// Whether the row measures decoding (a generation test).
    pub fn is_generation(&self) -> bool {
        self.n_gen > 0 && self.n_prompt == 0
    }

    /// The unit the test ran on: the GPU when layers were offloaded to a GPU backend.
    pub fn unit(&self) -> Backend {
        let gpu_backend = ["metal", "cuda", "vulkan", "opencl", "sycl", "rocm", "hip", "kompute"]
            .iter()
            .any(|b| self.backend.to_ascii_lowercase().contains(b));
        if gpu_backend && self.n_gpu_layers.is_none_or(|n| n > 0) { Backend::Gpu } else { Backend::Cpu }
    }

    /// The weight mix named by `model_type`'s last words: `Q4_K - Medium` is `Q4_K_M`,
    /// `all F32` is `F32`, `IQ2_XS - 2.3125 bpw` is `IQ2_XS`.
    pub fn mix(&self) -> Result<String> {
        let bad = |why: &str| {
            CalibError::Spec(SpecError::invalid(format!("line {}: model_type", self.line), &self.model_type, why))
        };
        let words: Vec<&str> = self.model_type.split_whitespace().collect();
        // "<arch> <size> <type...>": the type starts after the size (ends in B/M).
        let start = size_word(&words)
            .map(|i| i + 1)
            .ok_or_else(|| bad("expected `<arch> <size> <type>` as llama-bench prints it"))?;
        let t: Vec<&str> = words[start..].iter().copied().filter(|w| *w != "all" && *w != "mostly").collect();
        let base = *t.first().ok_or_else(|| bad("no weight type after the model size"))?;
        let suffix = match t.get(2).copied() {
            Some(s) if t.get(1) == Some(&"-") => match s {
                "Small" => "_S",
                "Medium" => "_M",
                "Large" => "_L",
                "Extra" | "XL" => "_XL",
                _ => "",
            },
            _ => "",
        };
        Ok(format!("{base}{suffix}"))
    }

    /// The parameters `model_type`'s size label stands for (`7B` 7e9, `494M` 4.94e8, `8x7B`
    /// 5.6e10); `None` when it names none (`?B`). llama.cpp picks the label from the layer
    /// count and width, so it is a size class, not a count.
    pub fn label_params(&self) -> Option<f64> {
        let words: Vec<&str> = self.model_type.split_whitespace().collect();
        let w = words[size_word(&words)?];
        let (num, unit) = w.split_at(w.len() - 1);
        let scale = if unit == "B" { 1e9 } else { 1e6 };
        let mut product = 1.0;
        for f in num.split('x') {
            product *= f.parse::<f64>().ok().filter(|x| x.is_finite() && *x > 0.0)?;
        }
        Some(product * scale)
    }
}

/// The index of the size word of `model_type` (`7B`, `0.5B`, `8x7B`, `494M`).
fn size_word(words: &[&str]) -> Option<usize> {
    words.iter().position(|w| {
        w.len() > 1
            && (w.ends_with('B') || w.ends_with('M'))
            && w[..w.len() - 1].replace(['.', 'x'], "").chars().all(|c| c.is_ascii_digit())
    })
}

fn refuse(origin: &str, line: usize, field: &str, value: &str, why: &str) -> CalibError {
    CalibError::Spec(SpecError::invalid(format!("{origin}: line {line}, {field}"), value, why))
}

/// A row from a JSON object (the JSON and JSONL formats share field names with the CSV).
fn from_fields(
    origin: &str,
    format: BenchFormat,
    line: usize,
    get: &dyn Fn(&str) -> Option<String>,
) -> Result<BenchRow> {
    let need = |f: &str| get(f).ok_or_else(|| refuse(origin, line, f, "missing", "llama-bench prints this field"));
    let num = |f: &str| -> Result<f64> {
        let v = need(f)?;
        v.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x > 0.0)
            .ok_or_else(|| refuse(origin, line, f, &v, "expected a finite rate > 0 tokens/s"))
    };
    let opt_int = |f: &str| -> Result<Option<i64>> {
        match get(f) {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => Ok(None),
            Some(v) => {
                v.trim().parse::<i64>().map(Some).map_err(|_| refuse(origin, line, f, &v, "expected an integer"))
            }
        }
    };
    let count = |f: &str| -> Result<u64> {
        match opt_int(f)? {
            None => Ok(0),
            Some(v) if v >= 0 => Ok(v as u64),
            Some(v) => Err(refuse(origin, line, f, &v.to_string(), "must be >= 0")),
        }
    };
    let opt_positive = |f: &str| -> Result<Option<u64>> {
        match get(f) {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => Ok(None),
            Some(v) => scaled(&v, &[("", 1.0)])
                .map(Some)
                .ok_or_else(|| refuse(origin, line, f, &v, "expected a finite number > 0")),
        }
    };
    let avg_ts = num("avg_ts")?;
    let threads = opt_int("n_threads")?
        .map(|t| u32::try_from(t).map_err(|_| refuse(origin, line, "n_threads", &t.to_string(), "out of range")))
        .transpose()?;
    Ok(BenchRow {
        line,
        model_type: need("model_type")?,
        backend: get("backends").or_else(|| get("backend")).unwrap_or_else(|| "CPU".into()),
        n_gpu_layers: opt_int("n_gpu_layers")?,
        threads,
        n_prompt: count("n_prompt")?,
        n_gen: count("n_gen")?,
        n_depth: count("n_depth")?,
        avg_ts,
        model_n_params: opt_positive("model_n_params")?,
        model_size: opt_positive("model_size")?,
        format,
    })
}

/// A markdown `params` cell (`6.74 B`, `494.03 M`: decimal multiples, as llama-bench prints
/// them) in parameters.
fn parse_params_cell(cell: &str) -> Option<u64> {
    scaled(cell, &[("", 1.0), ("K", 1e3), ("M", 1e6), ("B", 1e9), ("G", 1e9), ("T", 1e12)])
}

/// A markdown `size` cell (`3.56 GiB`, `636.18 MiB`: binary multiples, as llama-bench prints
/// them) in bytes.
fn parse_size_cell(cell: &str) -> Option<u64> {
    let k = 1024.0;
    scaled(cell, &[("", 1.0), ("B", 1.0), ("KiB", k), ("MiB", k * k), ("GiB", k * k * k), ("TiB", k * k * k * k)])
}

/// `<number> <unit>` with the unit one of `units` (name, multiple); a finite value > 0.
fn scaled(cell: &str, units: &[(&str, f64)]) -> Option<u64> {
    let cell = cell.trim();
    let split = cell.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(cell.len());
    let (num, unit) = (cell[..split].trim(), cell[split..].trim());
    let mult = units.iter().find(|(u, _)| *u == unit)?.1;
    let v = num.parse::<f64>().ok().filter(|x| x.is_finite() && *x > 0.0)? * mult;
    (v >= 1.0 && v < u64::MAX as f64).then_some(v.round() as u64)
}

fn json_value_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// A markdown-table test name: `tg128`, `pp512`, `tg128 @ d4096` → (prompt, gen, depth).
fn parse_test(origin: &str, line: usize, test: &str) -> Result<(u64, u64, u64)> {
    let bad = || refuse(origin, line, "test", test, "expected `tgN`, `ppN` or `tgN @ dD`");
    let mut parts = test.split('@').map(str::trim);
    let head = parts.next().ok_or_else(bad)?;
    let depth = match parts.next() {
        Some(d) => d.strip_prefix('d').and_then(|d| d.parse().ok()).ok_or_else(bad)?,
        None => 0,
    };
    let n = |s: &str| s.parse::<u64>().map_err(|_| bad());
    if let Some(g) = head.strip_prefix("tg") {
        Ok((0, n(g)?, depth))
    } else if let Some(p) = head.strip_prefix("pp") {
        Ok((n(p)?, 0, depth))
    } else if let Some(pg) = head.strip_prefix("pg") {
        let (p, g) = pg.split_once(',').ok_or_else(bad)?;
        Ok((n(p)?, n(g)?, depth))
    } else {
        Err(bad())
    }
}

/// Parse llama-bench output in any of its formats.
pub fn parse(text: &str, origin: &str) -> Result<Vec<BenchRow>> {
    let t = text.trim_start();
    let rows = if t.starts_with('[') {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| refuse(origin, e.line(), "json", "", &e.to_string()))?;
        let arr = v.as_array().ok_or_else(|| refuse(origin, 1, "json", "", "expected an array of results"))?;
        arr.iter()
            .enumerate()
            .map(|(i, o)| {
                let obj =
                    o.as_object().ok_or_else(|| refuse(origin, 1, &format!("[{i}]"), "", "expected an object"))?;
                from_fields(origin, BenchFormat::Json, i + 1, &|f| obj.get(f).and_then(json_value_text))
            })
            .collect::<Result<Vec<_>>>()?
    } else if t.starts_with('{') {
        let mut out = Vec::new();
        for (i, l) in text.lines().enumerate() {
            if l.trim().is_empty() {
                continue;
            }
            let v: serde_json::Value =
                serde_json::from_str(l).map_err(|e| refuse(origin, i + 1, "jsonl", "", &e.to_string()))?;
            let obj = v.as_object().ok_or_else(|| refuse(origin, i + 1, "jsonl", "", "expected an object"))?;
            out.push(from_fields(origin, BenchFormat::Jsonl, i + 1, &|f| obj.get(f).and_then(json_value_text))?);
        }
        out
    } else if t.starts_with('|') {
        parse_markdown(text, origin)?
    } else {
        let mut reader = csv::ReaderBuilder::new().from_reader(text.as_bytes());
        let headers = reader.headers().map_err(|e| refuse(origin, 1, "header", "", &e.to_string()))?.clone();
        if !headers.iter().any(|h| h == "avg_ts") {
            return Err(refuse(
                origin,
                1,
                "header",
                &headers.iter().take(4).collect::<Vec<_>>().join(","),
                "not llama-bench output (JSON, JSONL, CSV with avg_ts, or its markdown table)",
            ));
        }
        let mut out = Vec::new();
        for (i, rec) in reader.records().enumerate() {
            let rec = rec.map_err(|e| refuse(origin, i + 2, "row", "", &e.to_string()))?;
            let get = |f: &str| headers.iter().position(|h| h == f).and_then(|j| rec.get(j)).map(str::to_string);
            out.push(from_fields(origin, BenchFormat::Csv, i + 2, &get)?);
        }
        out
    };
    if rows.is_empty() {
        return Err(refuse(origin, 1, "rows", "0", "no result in the file"));
    }
    Ok(rows)
}

fn parse_markdown(text: &str, origin: &str) -> Result<Vec<BenchRow>> {
    let mut header: Option<Vec<String>> = None;
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let line = i + 1;
        let l = l.trim();
        if !l.starts_with('|') {
            continue;
        }
        let cells: Vec<String> = l.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect();
        let Some(h) = &header else {
            header = Some(cells.iter().map(|c| c.to_ascii_lowercase()).collect());
            continue;
        };
        if cells.iter().all(|c| c.chars().all(|ch| ch == '-' || ch == ':')) {
            continue;
        }
        if cells.len() != h.len() {
            return Err(refuse(
                origin,
                line,
                "row",
                &cells.len().to_string(),
                &format!("the table's header has {} columns", h.len()),
            ));
        }
        let get = |f: &str| h.iter().position(|x| x == f).map(|j| cells[j].clone());
        let test =
            get("test").ok_or_else(|| refuse(origin, line, "test", "missing", "the table needs a test column"))?;
        let (n_prompt, n_gen, n_depth) = parse_test(origin, line, &test)?;
        let ts = get("t/s").ok_or_else(|| refuse(origin, line, "t/s", "missing", "the table needs a t/s column"))?;
        let mean = ts.split('±').next().unwrap_or("").trim().to_string();
        let avg_ts = mean
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x > 0.0)
            .ok_or_else(|| refuse(origin, line, "t/s", &ts, "expected `mean ± stddev` with a finite mean > 0"))?;
        let int = |f: &str| get(f).and_then(|v| v.parse::<i64>().ok());
        let cell = |f: &'static str, parse: fn(&str) -> Option<u64>, want: &str| -> Result<Option<u64>> {
            match get(f) {
                None => Ok(None),
                Some(v) if v.is_empty() => Ok(None),
                Some(v) => parse(&v).map(Some).ok_or_else(|| refuse(origin, line, f, &v, want)),
            }
        };
        out.push(BenchRow {
            line,
            model_type: get("model").unwrap_or_default(),
            backend: get("backend").unwrap_or_else(|| "CPU".into()),
            n_gpu_layers: int("ngl"),
            threads: cell(
                "threads",
                |v| v.parse::<u32>().ok().filter(|t| *t > 0).map(u64::from),
                "expected a thread count > 0",
            )?
            .map(|t| t as u32),
            n_prompt,
            n_gen,
            n_depth,
            avg_ts,
            model_n_params: cell("params", parse_params_cell, "expected a count such as `6.74 B` or `494.03 M`")?,
            model_size: cell("size", parse_size_cell, "expected a size such as `3.56 GiB` or `636.18 MiB`")?,
            format: BenchFormat::Markdown,
        });
    }
    Ok(out)
}

/// A device calibrated from llama-bench rows.
#[derive(Debug, Clone)]
pub struct Calibrated {
    /// The device with its unit's bandwidth figure fitted (from generation tests).
    pub device: DeviceSpec,
    /// The engine profile with this device's fixed cost per token and KV reads (from
    /// generation tests) and its prefill efficiency (from prompt tests).
    pub engine: EngineSpec,
    /// One per generation row, then one per prompt row.
    pub residuals: Vec<Residual>,
    /// The figures the file could not pin, each with why (a file without `tgN` or `ppN`
    /// tests).
    pub not_fitted: Vec<String>,
}

/// A generation or prompt row of llama-bench output against the prediction before and after
/// the fit.
#[derive(Debug, Clone, PartialEq)]
pub struct Residual {
    /// Line of the row in the file.
    pub line: usize,
    /// What the row times: a generation test (`tgN`) or a prompt test (`ppN`).
    pub phase: Phase,
    /// Prompt tokens of a prompt test (`N` of `ppN`); 0 for a generation test.
    pub prompt: u64,
    /// Context depth (`n_depth`), tokens.
    pub depth: u64,
    /// Threads, when the row says.
    pub threads: Option<u32>,
    /// Measured tok/s.
    pub measured_tok_s: f64,
    /// Predicted before calibration.
    pub before_tok_s: f64,
    /// Predicted after calibration.
    pub calibrated_tok_s: f64,
}

impl BenchRow {
    /// Whether the row times a prompt's prefill (a prompt test, `ppN`).
    pub fn is_prompt(&self) -> bool {
        self.n_prompt > 0 && self.n_gen == 0
    }

    /// What the row times, `None` for a combined test (`pgN,M`), which neither phase's fit
    /// uses.
    pub fn phase(&self) -> Option<Phase> {
        if self.is_generation() {
            Some(Phase::Decode)
        } else if self.is_prompt() {
            Some(Phase::Prefill)
        } else {
            None
        }
    }
}

/// The scenario of a generation or prompt row: a generation test decodes `n_gen` tokens after
/// `n_depth` cached ones; a prompt test prefills `n_prompt` tokens after `n_depth` cached ones
/// (and generates one).
fn row_scenario(
    r: &BenchRow,
    phase: Phase,
    model: &ModelSpec,
    device: &DeviceSpec,
    engine: &EngineSpec,
    unit: Backend,
) -> Result<Scenario> {
    let mix = r.mix()?.parse().map_err(|e: SpecError| CalibError::Spec(e.within(&format!("line {}", r.line))))?;
    let (prompt, history, gen_tokens) = match phase {
        Phase::Decode => (r.n_depth, 0, r.n_gen),
        Phase::Prefill => (r.n_prompt, r.n_depth, 1),
    };
    let context_tokens = crate::published::context_for("n_gen", &[history, prompt, gen_tokens])
        .map_err(|e| CalibError::Spec(e.within(&format!("line {}", r.line))))?;
    let s = Scenario {
        model: model.clone(),
        device: device.clone(),
        weights: WeightQuant::new(mix),
        kv: KvQuant::default(),
        workload: Workload {
            prompt_tokens: prompt,
            history_tokens: Some(history),
            gen_tokens,
            context_tokens,
            threads: r.threads.filter(|_| unit == Backend::Cpu),
            backend: unit,
            ..Workload::default()
        },
        engine: engine.clone(),
        assume_defaults: true,
        cost: Default::default(),
        sim: Default::default(),
    };
    s.validate().map_err(|e| CalibError::Spec(e.within(&format!("line {}", r.line))))?;
    Ok(s)
}

/// The parameters of `knobs` for `engine` on `unit`, each with the profile's figure as prior.
fn unit_params(engine: &EngineSpec, unit: Backend, knobs: &[Knob]) -> Result<Vec<Param>> {
    let u = engine.unit(unit).ok_or_else(|| {
        CalibError::Spec(SpecError::invalid("engine", &engine.name, format!("does not run on the {}", unit.name())))
    })?;
    Ok(knobs
        .iter()
        .map(|&knob| Param {
            engine: engine.name.clone(),
            unit,
            knob,
            prior: knob.get(u),
            sigma: knob.prior_sigma(),
            // The share stands for the device's whole reach here (its figure held at 1): at
            // most the peak, so a row faster than the peak stops the fit at the bound.
            bounds: if knob == Knob::BandwidthShare { (knob.bounds().0, 1.0) } else { knob.bounds() },
        })
        .collect())
}

/// Fit `params` to `obs` (the rows `rows`, in order): the fit, and each row's prediction
/// before and after it.
fn fit_rows(rows: &[&BenchRow], obs: &[Observation], params: &[Param]) -> Result<(Fit, Vec<Residual>)> {
    let fail = |what: &str, e: CalibError| CalibError::Spec(SpecError::invalid("calibration", what, e.to_string()));
    let mut pred = Predictor::new(obs, params).map_err(|e| fail("scenario", e))?;
    let before: Vec<f64> = params.iter().map(|p| p.prior).collect();
    let all: Vec<usize> = (0..obs.len()).collect();
    let f = fit(&mut pred, &all).map_err(|e| fail("fit", e))?;
    let mut residuals = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let phase = obs[i].phase;
        residuals.push(Residual {
            line: r.line,
            phase,
            prompt: if phase == Phase::Prefill { r.n_prompt } else { 0 },
            depth: r.n_depth,
            threads: r.threads,
            measured_tok_s: r.avg_ts,
            before_tok_s: pred.predict(i, &before).map_err(|e| fail("", e))?,
            calibrated_tok_s: pred.predict(i, &f.values).map_err(|e| fail("", e))?,
        });
    }
    Ok((f, residuals))
}

/// Fit `device`'s figures for the unit the rows ran on to `rows` (model `model`, engine
/// `engine`): from the generation tests, the unit's bandwidth share of peak and the engine's
/// fixed cost per token and KV reads on this device; then, from the prompt tests, the
/// engine's prefill efficiency on this device, with the decode figures just fitted (or the
/// profiles' where the file has no generation test). A file with one kind of test only
/// calibrates what that kind pins and lists the rest in [`Calibrated::not_fitted`]. Rows of
/// several units are refused (calibrate one unit at a time), and so are rows of another
/// model, impossible rates and fits that did not converge (the module's documentation lists
/// the checks).
pub fn calibrate(rows: &[BenchRow], model: &ModelSpec, device: &DeviceSpec, engine: &EngineSpec) -> Result<Calibrated> {
    let tg: Vec<&BenchRow> = rows.iter().filter(|r| r.is_generation()).collect();
    let pp: Vec<&BenchRow> = rows.iter().filter(|r| r.is_prompt()).collect();
    let first = *tg.first().or(pp.first()).ok_or_else(|| {
        CalibError::Spec(SpecError::invalid(
            "llama-bench",
            "no tg or pp test",
            "calibration needs generation tests (tgN) or prompt tests (ppN)",
        ))
    })?;
    let unit = first.unit();
    if let Some(r) = tg.iter().chain(&pp).find(|r| r.unit() != unit) {
        return Err(CalibError::Spec(SpecError::invalid(
            format!("line {}: backend", r.line),
            &r.backend,
            format!("the file mixes units ({} and {}); calibrate one unit at a time", unit.name(), r.unit().name()),
        )));
    }
    let mut not_fitted = Vec::new();
    let (mut device, mut engine, mut residuals, mut notes) = if tg.is_empty() {
        not_fitted.push(format!(
            "{}, {u}.per_token_s, {u}.attention_kv_reads: the file has no generation test (tgN); the profiles' figures are kept",
            unit_field(unit),
            u = unit.name()
        ));
        (device.clone(), engine.clone(), Vec::new(), Vec::new())
    } else {
        calibrate_decode(&tg, unit, model, device, engine)?
    };
    if pp.is_empty() {
        not_fitted.push(format!(
            "{}.prefill_efficiency: the file has no prompt test (ppN); the profile's figure is kept",
            unit.name()
        ));
    } else {
        let (eff, res, note) = calibrate_prefill(&pp, unit, model, &device, &engine)?;
        if let Some(u) = engine.unit_mut(unit) {
            u.prefill_efficiency = eff;
        }
        residuals.extend(res);
        notes.push((format!("{}.prefill_efficiency", unit.name()), note));
    }
    if !tg.is_empty() {
        device.name = format!("{}-calibrated", device.name);
        let field = unit_field(unit);
        let note = device.sources.remove(field).unwrap_or_default();
        device.sources.insert(field.into(), format!("{note}, with engine `{}`", engine.name));
    }
    for (field, note) in notes {
        engine.sources.insert(field, format!("{note} on device `{}`", device.name));
    }
    engine.name = format!("{}@{}", engine.name, device.name);
    engine.aliases.clear();
    Ok(Calibrated { device, engine, residuals, not_fitted })
}

/// The generation tests' half of [`calibrate`]: the device with its unit's bandwidth figure,
/// the engine with its fixed cost per token and KV reads, the residuals, and the engine
/// fields' provenance notes (the device's is in its `sources`, to be completed).
#[allow(clippy::type_complexity)]
fn calibrate_decode(
    tg: &[&BenchRow],
    unit: Backend,
    model: &ModelSpec,
    device: &DeviceSpec,
    engine: &EngineSpec,
) -> Result<(DeviceSpec, EngineSpec, Vec<Residual>, Vec<(String, String)>)> {
    // The fit runs with the unit's device figure at 1 and the engine's share standing for the
    // whole reach (device figure × engine share), so it can move either way; the result goes
    // back into the device figure, and the calibrated engine keeps a share of 1.
    let reach0 = unit_fraction(device, unit) * engine.unit(unit).map_or(1.0, |u| u.bandwidth_share);
    let mut open_device = device.clone();
    set_unit_fraction(&mut open_device, unit, 1.0)?;
    let mut open_engine = engine.clone();
    if let Some(u) = open_engine.unit_mut(unit) {
        u.bandwidth_share = reach0.min(1.0);
    }
    let mut obs = Vec::new();
    for r in tg {
        obs.push(Observation {
            id: format!("line {}", r.line),
            device: device.name.clone(),
            class: "calibration".into(),
            scenario: row_scenario(r, Phase::Decode, model, &open_device, &open_engine, unit)?,
            measured_tok_s: r.avg_ts,
            phase: Phase::Decode,
        });
    }
    check_rows(tg, &obs, model)?;
    // The bandwidth share stands for the device's unit figure here (the engine's share on
    // this device); the fixed costs and KV reads are this engine's on this device.
    let params = unit_params(&open_engine, unit, &[Knob::BandwidthShare, Knob::PerTokenS, Knob::AttentionKvReads])?;
    let before: Vec<f64> = params.iter().map(|p| p.prior).collect();
    let (f, residuals) = fit_rows(tg, &obs, &params)?;
    check_fit(&f, &params, &before, &residuals, unit)?;
    let mut device = device.clone();
    let mut engine = engine.clone();
    let note = format!(
        "calibrated by `memwall calibrate --from-llama-bench` on {} generation tests (rms log residual {:.3})",
        tg.len(),
        f.rms_log
    );
    let field = set_unit_fraction(&mut device, unit, f.values[0])?;
    device.sources.insert(field.into(), note.clone());
    if let Some(eu) = engine.unit_mut(unit) {
        eu.bandwidth_share = 1.0;
        eu.per_token_s = f.values[1];
        eu.attention_kv_reads = f.values[2];
    }
    let notes = ["per_token_s", "attention_kv_reads"].map(|k| (format!("{}.{k}", unit.name()), note.clone())).to_vec();
    Ok((device, engine, residuals, notes))
}

/// The prompt tests' half of [`calibrate`]: the engine's prefill efficiency on `unit` fitted
/// to `pp` with every other figure of `device` and `engine` fixed, the residuals, and the
/// provenance note. Each row is checked as a generation row is ([`check_rate`],
/// [`check_identity`]), and against the unit's peak arithmetic
/// ([`check_prefill_ceiling`]).
fn calibrate_prefill(
    pp: &[&BenchRow],
    unit: Backend,
    model: &ModelSpec,
    device: &DeviceSpec,
    engine: &EngineSpec,
) -> Result<(f64, Vec<Residual>, String)> {
    let mut obs = Vec::new();
    for r in pp {
        let s = row_scenario(r, Phase::Prefill, model, device, engine, unit)?;
        check_rate(r)?;
        check_identity(r, model, &s.weights)?;
        check_prefill_ceiling(r, &s)?;
        obs.push(Observation {
            id: format!("line {}", r.line),
            device: device.name.clone(),
            class: "calibration".into(),
            scenario: s,
            measured_tok_s: r.avg_ts,
            phase: Phase::Prefill,
        });
    }
    let params = unit_params(engine, unit, &Knob::PREFILL)?;
    let before: Vec<f64> = params.iter().map(|p| p.prior).collect();
    let (f, residuals) = fit_rows(pp, &obs, &params)?;
    check_fit(&f, &params, &before, &residuals, unit)?;
    let note = format!(
        "calibrated by `memwall calibrate --from-llama-bench` on {} prompt tests (rms log residual {:.3})",
        pp.len(),
        f.rms_log
    );
    Ok((f.values[0], residuals, note))
}

/// A prompt row must process tokens no faster than the unit's peak arithmetic allows
/// ([`crate::naive_prefill_roofline_tok_s`]: every active weight multiplied once per token at
/// the unit's peak multiply-add rate); a faster one was measured on other hardware, with
/// more threads or with another model.
fn check_prefill_ceiling(r: &BenchRow, s: &Scenario) -> Result<()> {
    let ceiling = crate::naive_prefill_roofline_tok_s(s);
    if !ceiling.is_finite() || r.avg_ts <= ceiling {
        return Ok(());
    }
    Err(row_error(
        r,
        r.format.field("avg_ts", "t/s"),
        format!("{} tok/s", r.avg_ts),
        format!(
            "above the {ceiling:.3} tok/s that `{}`'s peak arithmetic on the {} ({} threads) allows when each token \
             multiplies the {} active weights of `{}` once; the row is of other hardware or another model",
            s.device.name,
            s.workload.backend.name(),
            s.threads(),
            fmt_params(s.model.params().active_per_token as f64),
            s.model.name
        ),
    ))
}

/// How far a row's parameter count may stray from the model named (either way, as a share of
/// the model's). memwall's presets count every tensor as llama-bench's `model_n_params` does
/// and agree with it within 0.3 % (Llama-3.2-1B 1.24 B, TinyLlama 1.10 B, Llama-2-7B 6.74 B,
/// Llama-2-70B 68.98 B, Qwen3-30B-A3B 30.53 B); 10 % leaves room for vocabularies extended by
/// fine-tunes while a model of another size class is refused, and a model within 10 % reads
/// about as many bytes per token, which the fitted bandwidth share absorbs.
pub const PARAMS_TOLERANCE: f64 = 0.10;

/// How far a row's tensor bytes may stray from the weight bytes of its mix on the model named
/// (either way, as a share of the model's). The same mix name stores different tensors in
/// different formats across converter versions and imatrix recipes: the presets' bytes agree
/// with published files within 2.5 % for most, but unsloth's Gemma-3n Q4_K_M files are
/// 10–12.5 % larger and Gemma 3 4B's QAT Q4_0 7 % larger, hence 15 %.
pub const SIZE_TOLERANCE: f64 = 0.15;

/// How far `model_type`'s size label (`1B`, `7B`) may stray from the model's parameter count,
/// as a factor either way, for rows that state neither `model_n_params` nor `model_size`.
/// llama.cpp's labels are size classes picked from the layer count (Llama-3.2-1B, 1.24 B, is
/// `1B`; Phi-2, 2.78 B, is `3B`; a Qwen3-1.7B file with its output matrix stored apart has
/// 2.03 B), so only a factor of 2 tells another model for certain.
pub const LABEL_FACTOR: f64 = 2.0;

/// Refusals before the fit, for each generation row the fit would use: a rate that is not a
/// rate ([`check_rate`]), a row of another model ([`check_identity`]), a rate the device's
/// memory cannot deliver ([`check_ceiling`]).
fn check_rows(tg: &[&BenchRow], obs: &[Observation], model: &ModelSpec) -> Result<()> {
    for (r, o) in tg.iter().zip(obs) {
        check_rate(r)?;
        check_identity(r, model, &o.scenario.weights)?;
        check_ceiling(r, &o.scenario)?;
    }
    Ok(())
}

/// A rate must be finite and above 0 tokens/s (rows built by hand, not read by [`parse`],
/// reach [`calibrate`] unchecked).
fn check_rate(r: &BenchRow) -> Result<()> {
    if r.avg_ts.is_finite() && r.avg_ts > 0.0 {
        return Ok(());
    }
    Err(row_error(r, r.format.field("avg_ts", "t/s"), r.avg_ts, "a rate must be finite and > 0 tokens/s"))
}

/// The model and the same model with its output matrix stored apart from the token embedding:
/// converters differ in whether a tied model's GGUF carries an `output.weight` of its own
/// (a Qwen3-1.7B file has 2.03 B parameters, its tied count 1.72 B). Either is the model; the
/// bytes read per token are the same.
fn model_variants(model: &ModelSpec) -> Vec<ModelSpec> {
    let mut out = vec![model.clone()];
    if model.tied_embeddings {
        let mut untied = model.clone();
        untied.tied_embeddings = false;
        out.push(untied);
    }
    out
}

/// The row must be of the model named: its `model_n_params` within [`PARAMS_TOLERANCE`] of
/// the model's parameter count, its `model_size` within [`SIZE_TOLERANCE`] of the weight bytes
/// of the row's mix (either against the model as specified or with its output stored apart,
/// [`model_variants`]). A row stating neither figure (hand-made files, older llama-bench) is
/// checked by `model_type`'s size label within [`LABEL_FACTOR`], and where that names no size,
/// only by the rate ceiling ([`check_ceiling`]).
fn check_identity(r: &BenchRow, model: &ModelSpec, weights: &WeightQuant) -> Result<()> {
    let variants = model_variants(model);
    let params: Vec<f64> = variants.iter().map(|m| m.params().total as f64).collect();
    let off = |x: f64, of: f64| (x / of - 1.0).abs();
    let expected = |v: &[f64], fmt: fn(f64) -> String| {
        let mut s = fmt(v[0]);
        if let Some(u) = v.get(1) {
            s.push_str(&format!(" ({} with the output matrix stored apart)", fmt(*u)));
        }
        s
    };
    if let Some(p) = r.model_n_params {
        let p = p as f64;
        if params.iter().all(|&e| off(p, e) > PARAMS_TOLERANCE) {
            return Err(row_error(
                r,
                r.format.field("model_n_params", "params"),
                fmt_params(p),
                format!(
                    "model `{}` has {}; a row of it is within ±{:.0} % (another model's rows would calibrate the wrong design)",
                    model.name,
                    expected(&params, fmt_params),
                    PARAMS_TOLERANCE * 100.0
                ),
            ));
        }
    }
    if let Some(b) = r.model_size {
        let b = b as f64;
        let bytes: Vec<f64> = variants.iter().map(|m| memwall_sim::WeightBytes::new(m, weights).total as f64).collect();
        if bytes.iter().all(|&e| off(b, e) > SIZE_TOLERANCE) {
            return Err(row_error(
                r,
                r.format.field("model_size", "size"),
                fmt_bytes(b),
                format!(
                    "model `{}` in {} is {}; a row of it is within ±{:.0} % (the mix's formats vary by converter)",
                    model.name,
                    weights.mix,
                    expected(&bytes, fmt_bytes),
                    SIZE_TOLERANCE * 100.0
                ),
            ));
        }
    }
    if r.model_n_params.is_none()
        && r.model_size.is_none()
        && let Some(label) = r.label_params()
    {
        let (lo, hi) = (params[0] / LABEL_FACTOR, params[params.len() - 1] * LABEL_FACTOR);
        if label < lo || label > hi {
            return Err(row_error(
                r,
                "model_type",
                &r.model_type,
                format!(
                    "the size label says about {}, model `{}` has {}; without model_n_params or model_size the label must be within a factor {LABEL_FACTOR}",
                    fmt_params(label),
                    model.name,
                    expected(&params, fmt_params)
                ),
            ));
        }
    }
    Ok(())
}

/// The fastest decode the device's memory allows for the row's design, tokens/s, with the
/// figures it comes from: `(ceiling, bytes read per token, DRAM peak GB/s)`.
///
/// A decoded token reads at least the weights it uses once (`weight_bytes_per_token` of
/// [`memwall_sim::estimate`]: everything but the embedding matrix, of a MoE only the active
/// experts; KV reads come on top, left out to keep the ceiling a ceiling). Those bytes come
/// from DRAM at most at its peak, or from the last-level cache: a model smaller than the cache
/// can be served from it, and a larger one can keep at most the cache's size there. So the
/// rate is at most `min((DRAM peak + cache bandwidth) / bytes, DRAM peak / (bytes − cache
/// size))`. The bytes are taken [`SIZE_TOLERANCE`] smaller than the mix's, since the file's
/// mix may be that much smaller.
fn decode_ceiling(s: &Scenario) -> Result<(f64, f64, f64)> {
    let e = memwall_sim::estimate(s)?;
    let bytes = e.weight_bytes_per_token;
    let least = bytes * (1.0 - SIZE_TOLERANCE);
    let peak_gbps = s.device.memory.peak_gbps();
    let dram = peak_gbps * 1e9;
    let (cache_bytes, cache_bps) =
        s.device.last_level_cache().map_or((0.0, 0.0), |c| (c.size_bytes as f64, c.bandwidth_gbps * 1e9));
    let from_both = (dram + cache_bps) / least;
    let ceiling = if least > cache_bytes { from_both.min(dram / (least - cache_bytes)) } else { from_both };
    Ok((ceiling, bytes, peak_gbps))
}

/// A generation row must decode no faster than [`decode_ceiling`]: a faster one was measured
/// on other hardware or with another model.
fn check_ceiling(r: &BenchRow, s: &Scenario) -> Result<()> {
    let (ceiling, bytes, peak) = decode_ceiling(s)?;
    if r.avg_ts <= ceiling {
        return Ok(());
    }
    let cache = s
        .device
        .last_level_cache()
        .map_or(String::new(), |c| format!(" and its {} cache of {}", c.name, fmt_bytes(c.size_bytes as f64)));
    Err(row_error(
        r,
        r.format.field("avg_ts", "t/s"),
        format!("{} tok/s", r.avg_ts),
        format!(
            "above the {ceiling:.3} tok/s that `{}`'s {peak:.1} GB/s peak{cache} allow when each token reads {} of `{}` weights ({}); the row is of other hardware or another model",
            s.device.name,
            fmt_bytes(bytes),
            s.model.name,
            s.weights.mix
        ),
    ))
}

/// The largest root mean square of `ln(calibrated / measured)` over the rows that a fit may
/// leave. memwall's llama.cpp profile predicts devices it never saw within a median 13.5 %;
/// fitted to one device's own rows it should reproduce them within a few per cent (the
/// synthetic recovery test: under 3 %). A factor of 1.5 left after the fit means the rows
/// disagree with each other or with the design named (another model, KV type or machine),
/// and the fitted figures would describe nothing.
pub const MAX_RMS_LOG: f64 = 0.405_465_108_108_164_4; // ln 1.5

/// Refusals after the fit: a fitted figure pinned at its bound ([`check_bounds`]), a residual
/// that is not finite or above [`MAX_RMS_LOG`] ([`check_residual`]).
fn check_fit(f: &Fit, params: &[Param], priors: &[f64], residuals: &[Residual], unit: Backend) -> Result<()> {
    check_bounds(f, params, priors, residuals, unit)?;
    check_residual(f, priors, residuals)
}

/// The row whose calibrated prediction is furthest from its measurement, as `line N: measured
/// X tok/s, calibrated Y`.
fn worst_row(residuals: &[Residual]) -> String {
    let err = |r: &Residual| (r.calibrated_tok_s / r.measured_tok_s).ln().abs();
    residuals.iter().max_by(|a, b| err(a).total_cmp(&err(b))).map_or(String::new(), |r| {
        format!("; worst: line {}, measured {} tok/s, calibrated {:.4}", r.line, r.measured_tok_s, r.calibrated_tok_s)
    })
}

/// No fitted figure may end at a bound of [`Knob::bounds`] that the data pushed it to (a
/// prior at a bound or within 1 % of it, left there or nudged onto it, is the profile's, not
/// the fit's: a shipped profile's KV reads of 1.001 settling at 1 asks for nothing implausible): a fit stopped
/// by a bound asked for a figure outside the physically plausible range — rows slower than a
/// share of 0.02 of the peak with 0.2 s per token allow, or faster than the whole peak —
/// and the figure written would be the bound, not a measurement.
fn check_bounds(f: &Fit, params: &[Param], priors: &[f64], residuals: &[Residual], unit: Backend) -> Result<()> {
    for ((p, &v), &prior) in params.iter().zip(&f.values).zip(priors) {
        let (lo, hi) = p.bounds;
        let at = |b: f64| (v / b - 1.0).abs() <= 1e-9;
        let moved = (v / prior - 1.0).abs() > 1e-9;
        let pushed = |b: f64| at(b) && (prior / b - 1.0).abs() > 0.01;
        if !(moved && (pushed(lo) || pushed(hi))) {
            continue;
        }
        let (side, means) = if at(lo) { ("lower", "below") } else { ("upper", "above") };
        let what = match p.knob {
            Knob::BandwidthShare => unit_field(unit).to_string(),
            _ => format!("{}.{}", unit.name(), p.knob.name()),
        };
        return Err(CalibError::Spec(SpecError::invalid(
            format!("calibration: {what}"),
            format!("{v:.4}"),
            format!(
                "the fit ended at its {side} bound (plausible range [{lo}, {hi}], prior {prior:.4}): the rows ask for a value {means} it, so they do not describe this model on this device (rms log residual {:.3}{})",
                f.rms_log,
                worst_row(residuals)
            ),
        )));
    }
    Ok(())
}

/// The fit must reproduce its rows: an rms log residual that is not finite or above
/// [`MAX_RMS_LOG`] is refused, saying whether the fit moved from the priors at all.
fn check_residual(f: &Fit, priors: &[f64], residuals: &[Residual]) -> Result<()> {
    if f.rms_log.is_finite() && f.rms_log <= MAX_RMS_LOG {
        return Ok(());
    }
    // `fit` works in logarithms, so an unmoved figure is its prior to rounding.
    let unmoved = f.values.iter().zip(priors).all(|(v, p)| (v / p - 1.0).abs() <= 1e-12);
    let stuck = if unmoved { "; the fit did not move from the priors" } else { "" };
    Err(CalibError::Spec(SpecError::invalid(
        "calibration: rms log residual",
        format!("{:.3}", f.rms_log),
        format!(
            "must be finite and <= ln 1.5 = {MAX_RMS_LOG:.3} (calibrated rates within a factor 1.5 of the rows){stuck}{}",
            worst_row(residuals)
        ),
    )))
}

/// A refusal naming the row's line and field.
fn row_error(r: &BenchRow, field: &str, value: impl ToString, why: impl Into<String>) -> CalibError {
    CalibError::Spec(SpecError::invalid(format!("line {}: {field}", r.line), value, why))
}

/// Parameters as llama-bench prints them (`6.74 B`, `494.03 M`).
fn fmt_params(n: f64) -> String {
    if n < 1e9 { format!("{:.2} M", n / 1e6) } else { format!("{:.2} B", n / 1e9) }
}

/// Bytes as llama-bench prints them (`3.56 GiB`, `636.18 MiB`).
fn fmt_bytes(b: f64) -> String {
    let mib = b / (1024.0 * 1024.0);
    if mib < 1024.0 { format!("{mib:.2} MiB") } else { format!("{:.2} GiB", mib / 1024.0) }
}

/// The device's bandwidth figure for `unit` (its family's default where it states none).
fn unit_fraction(d: &DeviceSpec, unit: Backend) -> f64 {
    let (stated, default, _) = d.bandwidth_fraction(unit);
    stated.unwrap_or(default)
}

/// The path of the device's bandwidth figure for `unit`.
fn unit_field(unit: Backend) -> &'static str {
    match unit {
        Backend::Cpu => "memory.achievable_fraction",
        Backend::Gpu => "accelerators.gpu_bandwidth_fraction",
        Backend::Npu => "accelerators.npu_bandwidth_fraction",
    }
}

/// Set the device's bandwidth figure for `unit`; returns the field's path. A share of the
/// peak outside (0, 1] is refused, not clamped: writing a clamped figure would call a fit
/// that asked for the impossible calibrated.
fn set_unit_fraction(d: &mut DeviceSpec, unit: Backend, v: f64) -> Result<&'static str> {
    let field = unit_field(unit);
    if !(v.is_finite() && v > 0.0 && v <= 1.0) {
        return Err(CalibError::Spec(SpecError::invalid(field, v, "a share of the peak bandwidth must lie in (0, 1]")));
    }
    match unit {
        Backend::Cpu => d.memory.achievable_fraction = Some(v),
        Backend::Gpu => d.accelerators.gpu_bandwidth_fraction = Some(v),
        Backend::Npu => d.accelerators.npu_bandwidth_fraction = Some(v),
    }
    Ok(field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memwall_catalog::{load_device, load_engine, load_model};

    fn scenario(model: &str, device: DeviceSpec) -> Scenario {
        Scenario {
            model: load_model(model).unwrap(),
            device,
            weights: WeightQuant::new("Q4_0".parse().unwrap()),
            kv: KvQuant::default(),
            workload: Workload {
                prompt_tokens: 0,
                gen_tokens: 128,
                history_tokens: Some(0),
                context_tokens: 512,
                ..Workload::default()
            },
            engine: load_engine("llama.cpp").unwrap(),
            assume_defaults: true,
            cost: Default::default(),
            sim: Default::default(),
        }
    }

    #[test]
    fn a_share_outside_0_to_1_is_refused_not_clamped() {
        let mut d = load_device("raspberry-pi-5-8gb").unwrap();
        for bad in [0.0, -0.1, 1.5, f64::NAN, f64::INFINITY] {
            let err = set_unit_fraction(&mut d, Backend::Cpu, bad).unwrap_err().to_string();
            assert!(err.contains("memory.achievable_fraction") && err.contains("(0, 1]"), "{bad}: {err}");
        }
        assert_eq!(set_unit_fraction(&mut d, Backend::Gpu, 0.5).unwrap(), "accelerators.gpu_bandwidth_fraction");
        assert_eq!(d.accelerators.gpu_bandwidth_fraction, Some(0.5));
    }

    #[test]
    fn the_ceiling_is_dram_peak_over_the_bytes_a_token_reads_unless_the_cache_holds_them() {
        let pi = load_device("raspberry-pi-5-8gb").unwrap();
        let (ceiling, bytes, peak) = decode_ceiling(&scenario("llama-3.2-1b", pi.clone())).unwrap();
        let llc = pi.last_level_cache().unwrap().size_bytes as f64;
        let dram_only = peak * 1e9 / (bytes * (1.0 - SIZE_TOLERANCE) - llc);
        assert!((ceiling / dram_only - 1.0).abs() < 1e-12, "{ceiling} vs {dram_only}");
        // A model that fits in the last-level cache may be fed by the cache and DRAM together.
        let mut big_cache = pi.clone();
        for c in big_cache.caches.iter_mut().filter(|c| c.shared_by == "all") {
            c.size_bytes = 4 << 30;
            c.bandwidth_gbps = 200.0;
        }
        let (cached, bytes2, _) = decode_ceiling(&scenario("llama-3.2-1b", big_cache)).unwrap();
        assert_eq!(bytes, bytes2);
        let both = (peak + 200.0) * 1e9 / (bytes * (1.0 - SIZE_TOLERANCE));
        assert!((cached / both - 1.0).abs() < 1e-12 && cached > ceiling, "{cached} vs {both}");
    }

    fn row(model_type: &str, params: Option<u64>, size: Option<u64>) -> BenchRow {
        BenchRow {
            line: 1,
            model_type: model_type.into(),
            backend: "CPU".into(),
            n_gpu_layers: None,
            threads: Some(4),
            n_prompt: 0,
            n_gen: 128,
            n_depth: 0,
            avg_ts: 10.0,
            model_n_params: params,
            model_size: size,
            format: BenchFormat::Json,
        }
    }

    #[test]
    fn the_presets_pass_against_what_llama_bench_prints_for_their_files() {
        const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
        // (preset, mix, llama-bench's params, its size in GiB) as printed for real files.
        let printed = [
            ("llama-3.2-1b", "Q4_K_M", 1.24e9, 762.81 / 1024.0),
            ("llama-3.2-1b", "Q8_0", 1.24e9, 1.22),
            ("tinyllama-1.1b", "Q4_0", 1.10e9, 606.53 / 1024.0),
            ("tinyllama-1.1b", "Q4_K_M", 1.10e9, 0.621),
            ("llama-2-7b", "Q4_0", 6.74e9, 3.56),
            ("llama-2-7b", "Q8_0", 6.74e9, 6.67),
            ("llama-2-70b", "Q4_0", 68.98e9, 36.20),
            ("llama-3.1-8b", "Q4_K_M", 8.03e9, 4.58),
            ("llama-3.1-70b", "Q4_K_M", 70.55e9, 39.59),
            ("gemma-3-1b", "Q4_K_M", 1.0e9, 0.745),
            ("gemma-3-4b", "Q4_0", 3.88e9, 2.35),
            ("qwen2.5-1.5b", "Q8_0", 1.54e9, 1.53),
            ("qwen2.5-7b", "Q8_0", 7.62e9, 7.54),
            ("qwen3-1.7b", "F16", 2.03e9, 3.78),
            ("qwen3-30b-a3b", "Q8_0", 30.53e9, 30.25),
        ];
        for (model, mix, params, gib) in printed {
            let m = load_model(model).unwrap();
            let r = row(&format!("x 1B {mix}"), Some(params as u64), Some((gib * GIB) as u64));
            check_identity(&r, &m, &WeightQuant::new(mix.parse().unwrap())).unwrap();
        }
        // Published file sizes (tensors and a few MB of metadata) of every preset listed.
        let csv =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../datasets/gguf_sizes.csv")).unwrap();
        let mut checked = 0;
        for l in csv.lines().skip(1) {
            let f: Vec<&str> = l.split(',').collect();
            let Ok(bytes) = f[2].parse::<u64>() else { continue };
            let m = load_model(f[0]).unwrap();
            let r = row("x 1B", None, Some(bytes));
            check_identity(&r, &m, &WeightQuant::new(f[1].parse().unwrap())).unwrap_or_else(|e| panic!("{l}: {e}"));
            checked += 1;
        }
        assert!(checked > 30, "{checked}");
    }

    #[test]
    fn a_moe_ceiling_counts_only_the_active_experts() {
        let d = load_device("apple-m2-max-32gb").unwrap();
        let (_, bytes, _) = decode_ceiling(&scenario("qwen3-30b-a3b", d)).unwrap();
        let all = memwall_sim::WeightBytes::new(
            &load_model("qwen3-30b-a3b").unwrap(),
            &WeightQuant::new("Q4_0".parse().unwrap()),
        )
        .total as f64;
        assert!(bytes < all / 5.0, "{bytes} of {all}");
    }
}
