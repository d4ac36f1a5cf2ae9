//! llama-bench results, and a device calibrated from them.
//!
//! `llama-bench` (llama.cpp's benchmark) prints JSON (`-o json`), JSONL (`-o jsonl`), CSV
//! (`-o csv`) or a markdown table (the default). Each format is read into [`BenchRow`]s; a
//! generation test (`tg128`, `tg128 @ d4096`) of a model run on a device the researcher
//! owns is a measured decode rate, and several of them (at several depths, thread counts or
//! weight formats) pin that device's bandwidth share, its fixed cost per token and how
//! attention grows with the context ([`calibrate`]). Malformed or partial files are refused
//! with the line and the field.

use memwall_calib::{Knob, Observation, Param, Predictor, fit};
use memwall_spec::{Backend, DeviceSpec, EngineSpec, KvQuant, ModelSpec, Scenario, SpecError, WeightQuant, Workload};

use crate::error::{IoError, Result};

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
            IoError::Spec(SpecError::invalid(format!("line {}: model_type", self.line), &self.model_type, why))
        };
        let words: Vec<&str> = self.model_type.split_whitespace().collect();
        // "<arch> <size> <type...>": the type starts after the size (ends in B/M).
        let start = words
            .iter()
            .position(|w| {
                w.len() > 1
                    && (w.ends_with('B') || w.ends_with('M'))
                    && w[..w.len() - 1].replace(['.', 'x'], "").chars().all(|c| c.is_ascii_digit())
            })
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
}

fn refuse(origin: &str, line: usize, field: &str, value: &str, why: &str) -> IoError {
    IoError::Spec(SpecError::invalid(format!("{origin}: line {line}, {field}"), value, why))
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
            threads: int("threads").and_then(|t| u32::try_from(t).ok()),
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
    /// The device with its unit's bandwidth figure fitted.
    pub device: DeviceSpec,
    /// The engine profile with this device's fixed cost per token, per operator and KV reads.
    pub engine: EngineSpec,
    /// One per generation row.
    pub residuals: Vec<Residual>,
}

/// A generation row of llama-bench output against the prediction before and after the fit.
#[derive(Debug, Clone, PartialEq)]
pub struct Residual {
    /// Line of the row in the file.
    pub line: usize,
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

/// The columns of a calibration's residual table.
pub static RESIDUAL_COLUMNS: &[crate::columns::Column<Residual>] = {
    use crate::columns::{Column, Get};
    &[
        Column { name: "line", get: Get::U64(|r| r.line as u64) },
        Column { name: "depth", get: Get::U64(|r| r.depth) },
        Column { name: "threads", get: Get::OptU32(|r| r.threads) },
        Column { name: "measured_tok_s", get: Get::F64(|r| r.measured_tok_s) },
        Column { name: "before_tok_s", get: Get::F64(|r| r.before_tok_s) },
        Column { name: "calibrated_tok_s", get: Get::F64(|r| r.calibrated_tok_s) },
        Column { name: "error", get: Get::F64(|r| r.calibrated_tok_s / r.measured_tok_s - 1.0) },
    ]
};

/// Fit `device`'s figures for the unit the rows ran on to the generation rows of `rows`
/// (model `model`, engine `engine`): the unit's bandwidth share of peak, and the engine's
/// fixed costs and KV reads on this device. Rows of several units are refused (calibrate one
/// unit at a time).
pub fn calibrate(rows: &[BenchRow], model: &ModelSpec, device: &DeviceSpec, engine: &EngineSpec) -> Result<Calibrated> {
    let tg: Vec<&BenchRow> = rows.iter().filter(|r| r.is_generation()).collect();
    let first = *tg.first().ok_or_else(|| {
        IoError::Spec(SpecError::invalid("llama-bench", "no tg test", "calibration needs generation tests (tgN)"))
    })?;
    let unit = first.unit();
    if let Some(r) = tg.iter().find(|r| r.unit() != unit) {
        return Err(IoError::Spec(SpecError::invalid(
            format!("line {}: backend", r.line),
            &r.backend,
            format!("the file mixes units ({} and {}); calibrate one unit at a time", unit.name(), r.unit().name()),
        )));
    }
    // The fit runs with the unit's device figure at 1 and the engine's share standing for the
    // whole reach (device figure × engine share), so it can move either way; the result goes
    // back into the device figure, and the calibrated engine keeps a share of 1.
    let reach0 = unit_fraction(device, unit) * engine.unit(unit).map_or(1.0, |u| u.bandwidth_share);
    let mut open_device = device.clone();
    set_unit_fraction(&mut open_device, unit, 1.0);
    let mut open_engine = engine.clone();
    if let Some(u) = open_engine.unit_mut(unit) {
        u.bandwidth_share = reach0.min(1.0);
    }
    let mut obs = Vec::new();
    for r in &tg {
        let mix = r.mix()?.parse().map_err(|e: SpecError| IoError::Spec(e.within(&format!("line {}", r.line))))?;
        let s = Scenario {
            model: model.clone(),
            device: open_device.clone(),
            weights: WeightQuant::new(mix),
            kv: KvQuant::default(),
            workload: Workload {
                prompt_tokens: r.n_depth,
                gen_tokens: r.n_gen,
                context_tokens: (r.n_depth + r.n_gen).next_multiple_of(512),
                threads: r.threads.filter(|_| unit == Backend::Cpu),
                backend: unit,
                ..Workload::default()
            },
            engine: open_engine.clone(),
            assume_defaults: true,
            cost: Default::default(),
            sim: Default::default(),
        };
        s.validate().map_err(|e| IoError::Spec(e.within(&format!("line {}", r.line))))?;
        obs.push(Observation {
            id: format!("line {}", r.line),
            device: device.name.clone(),
            class: "calibration".into(),
            scenario: s,
            measured_tok_s: r.avg_ts,
        });
    }
    // The bandwidth share stands for the device's unit figure here (the engine's share on
    // this device); the fixed costs and KV reads are this engine's on this device.
    let knobs = [Knob::BandwidthShare, Knob::PerTokenS, Knob::AttentionKvReads];
    let u = open_engine.unit(unit).ok_or_else(|| {
        IoError::Spec(SpecError::invalid("engine", &engine.name, format!("does not run on the {}", unit.name())))
    })?;
    let params: Vec<Param> = knobs
        .iter()
        .map(|&knob| Param { engine: engine.name.clone(), unit, knob, prior: knob.get(u), sigma: knob.prior_sigma() })
        .collect();
    let mut pred = Predictor::new(&obs, &params)
        .map_err(|e| IoError::Spec(SpecError::invalid("calibration", "scenario", e.to_string())))?;
    let before: Vec<f64> = params.iter().map(|p| p.prior).collect();
    let all: Vec<usize> = (0..obs.len()).collect();
    let f = fit(&mut pred, &all).map_err(|e| IoError::Spec(SpecError::invalid("calibration", "fit", e.to_string())))?;
    let mut residuals = Vec::new();
    for (i, r) in tg.iter().enumerate() {
        let p0 = pred
            .predict(i, &before)
            .map_err(|e| IoError::Spec(SpecError::invalid("calibration", "", e.to_string())))?;
        let p1 = pred
            .predict(i, &f.values)
            .map_err(|e| IoError::Spec(SpecError::invalid("calibration", "", e.to_string())))?;
        residuals.push(Residual {
            line: r.line,
            depth: r.n_depth,
            threads: r.threads,
            measured_tok_s: r.avg_ts,
            before_tok_s: p0,
            calibrated_tok_s: p1,
        });
    }
    let mut device = device.clone();
    let mut engine = engine.clone();
    let note = format!(
        "calibrated by `memwall calibrate --from-llama-bench` on {} generation tests (rms log residual {:.3})",
        tg.len(),
        f.rms_log
    );
    let field = set_unit_fraction(&mut device, unit, f.values[0]);
    device.sources.insert(field.into(), format!("{note}, with engine `{}`", engine.name));
    device.name = format!("{}-calibrated", device.name);
    if let Some(eu) = engine.unit_mut(unit) {
        eu.bandwidth_share = 1.0;
        eu.per_token_s = f.values[1];
        eu.attention_kv_reads = f.values[2];
    }
    engine.sources.insert(format!("{}.per_token_s", unit.name()), format!("{note} on device `{}`", device.name));
    engine.sources.insert(format!("{}.attention_kv_reads", unit.name()), format!("{note} on device `{}`", device.name));
    engine.name = format!("{}@{}", engine.name, device.name);
    engine.aliases.clear();
    Ok(Calibrated { device, engine, residuals })
}

/// The device's bandwidth figure for `unit` (class defaults where it states none).
fn unit_fraction(d: &DeviceSpec, unit: Backend) -> f64 {
    use memwall_sim::unit::defaults;
    match unit {
        Backend::Cpu => d.memory.achievable_fraction,
        Backend::Gpu => d
            .accelerators
            .gpu_bandwidth_fraction
            .or(d.memory.accel_achievable_fraction)
            .unwrap_or(defaults::GPU_BANDWIDTH_FRACTION),
        Backend::Npu => d
            .accelerators
            .npu_bandwidth_fraction
            .or(d.memory.accel_achievable_fraction)
            .unwrap_or(defaults::NPU_BANDWIDTH_FRACTION),
    }
}

/// Set the device's bandwidth figure for `unit`; returns the field's path.
fn set_unit_fraction(d: &mut DeviceSpec, unit: Backend, v: f64) -> &'static str {
    let v = v.clamp(0.01, 1.0);
    match unit {
        Backend::Cpu => {
            d.memory.achievable_fraction = v;
            "memory.achievable_fraction"
        }
        Backend::Gpu => {
            d.accelerators.gpu_bandwidth_fraction = Some(v);
            "accelerators.gpu_bandwidth_fraction"
        }
        Backend::Npu => {
            d.accelerators.npu_bandwidth_fraction = Some(v);
            "accelerators.npu_bandwidth_fraction"
        }
    }
}
