//! Published decode measurements as memwall scenarios, for `memwall validate`.
//!
//! `datasets/validation_decode.csv` maps each published row (of
//! `device_decode_measurements.csv` and `extra_decode_measurements.csv`, referenced in its
//! `source` column) to presets: the device it ran on (`unit_device`, the unit
//! cross-validation leaves out) and the preset that describes its SoC (`device`, with
//! `ram_gib` when the machine had more memory than the preset), the model, the weight mix,
//! the engine and unit, threads, the context already cached (`depth`) and the tokens
//! generated. A row with a non-empty `exclude` names why it is not used. Where the source
//! also times the prompt, `prefill_tokens` (its length), `prefill_depth` (tokens cached
//! before it: llama-bench `ppN @ dD`) and `measured_prefill_tok_s` state that measurement
//! (optional columns: a table without them has decode rows only).

use std::path::Path;

use memwall_catalog::{load_device, load_engine, load_model};
use memwall_spec::{Backend, KvQuant, Scenario, SpecError, WeightQuant, Workload};

use crate::CalibError;
use crate::fit::{Knob, Observation, Phase};

/// Result alias of this module.
type Result<T, E = CalibError> = std::result::Result<T, E>;

/// One row of the validation table.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidationRow {
    /// Identifier (`ddm-46`: row of device_decode_measurements.csv).
    pub id: String,
    /// The physical device (the unit of leave-one-device-out).
    pub unit_device: String,
    /// Device preset.
    pub device: String,
    /// RAM of the machine measured, GiB, when it exceeds the preset's.
    pub ram_gib: Option<u64>,
    /// Model preset.
    pub model: String,
    /// Weight mix.
    pub weights: String,
    /// Engine profile.
    pub engine: String,
    /// Compute unit.
    pub backend: String,
    /// Threads, when stated.
    pub threads: Option<u32>,
    /// Tokens already in the cache when decoding starts.
    pub depth: u64,
    /// Tokens generated.
    pub gen_tokens: u64,
    /// Published decode tok/s.
    pub measured_tok_s: f64,
    /// Prompt tokens of the published prefill measurement, when the row has one.
    pub prefill_tokens: Option<u64>,
    /// Tokens already cached when that prompt was processed.
    pub prefill_depth: u64,
    /// Published prefill tok/s, when the row has one.
    pub measured_prefill_tok_s: Option<f64>,
    /// Why the row is not used (empty: used).
    pub exclude: String,
    /// Where the number comes from.
    pub source: String,
}

/// The columns of a validation table, in order.
pub const COLUMNS: [&str; 14] = [
    "id",
    "unit_device",
    "device",
    "ram_gib",
    "model",
    "weights",
    "engine",
    "backend",
    "threads",
    "depth",
    "gen_tokens",
    "measured_tok_s",
    "exclude",
    "source",
];

/// The optional columns of a published prefill measurement (all three or none per row).
pub const PREFILL_COLUMNS: [&str; 3] = ["prefill_tokens", "prefill_depth", "measured_prefill_tok_s"];

/// Parse a validation table; errors name the line and the column.
pub fn parse_table(text: &str, origin: &str) -> Result<Vec<ValidationRow>> {
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes());
    let bad = |line: usize, field: &str, value: &str, reason: &str| {
        CalibError::Spec(SpecError::invalid(format!("{origin}: line {line}, column {field}"), value, reason))
    };
    let headers = reader.headers().map_err(|e| bad(1, "header", "", &e.to_string()))?.clone();
    let col = |name: &str| headers.iter().position(|h| h == name);
    for name in COLUMNS {
        if col(name).is_none() {
            return Err(bad(1, name, "missing", "the validation table needs this column"));
        }
    }
    let mut out = Vec::new();
    for (n, rec) in reader.records().enumerate() {
        let line = n + 2;
        let rec = rec.map_err(|e| bad(line, "row", "", &e.to_string()))?;
        let get = |name: &str| col(name).and_then(|i| rec.get(i)).unwrap_or("").trim().to_string();
        let num = |name: &str| -> Result<Option<f64>> {
            let v = get(name);
            if v.is_empty() {
                return Ok(None);
            }
            match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
                _ => Err(bad(line, name, &v, "expected a finite number >= 0")),
            }
        };
        let int = |name: &str| -> Result<Option<u64>> {
            let v = get(name);
            if v.is_empty() {
                return Ok(None);
            }
            v.parse::<u64>().map(Some).map_err(|_| bad(line, name, &v, "expected a whole number"))
        };
        let measured = num("measured_tok_s")?.ok_or_else(|| bad(line, "measured_tok_s", "", "required"))?;
        let exclude = get("exclude");
        if exclude.is_empty() && measured <= 0.0 {
            return Err(bad(line, "measured_tok_s", &measured.to_string(), "must be > 0"));
        }
        let threads = int("threads")?
            .map(|t| u32::try_from(t).map_err(|_| bad(line, "threads", &t.to_string(), "too many threads")))
            .transpose()?;
        let prefill_tokens = int("prefill_tokens")?;
        let measured_prefill = num("measured_prefill_tok_s")?;
        match (prefill_tokens, measured_prefill) {
            (Some(0), _) => return Err(bad(line, "prefill_tokens", "0", "a prompt has at least one token")),
            (Some(_), Some(m)) if m <= 0.0 => {
                return Err(bad(line, "measured_prefill_tok_s", &m.to_string(), "must be > 0"));
            }
            (Some(p), None) => {
                return Err(bad(
                    line,
                    "measured_prefill_tok_s",
                    "",
                    &format!("prefill_tokens is {p}: the prefill rate of that prompt is needed too"),
                ));
            }
            (None, Some(m)) => {
                return Err(bad(
                    line,
                    "prefill_tokens",
                    "",
                    &format!("measured_prefill_tok_s is {m}: the prompt length it was timed on is needed too"),
                ));
            }
            _ => {}
        }
        out.push(ValidationRow {
            id: get("id"),
            unit_device: get("unit_device"),
            device: get("device"),
            ram_gib: int("ram_gib")?,
            model: get("model"),
            weights: get("weights"),
            engine: get("engine"),
            backend: get("backend"),
            threads,
            depth: int("depth")?.unwrap_or(0),
            gen_tokens: int("gen_tokens")?.unwrap_or(128),
            measured_tok_s: measured,
            prefill_tokens,
            prefill_depth: int("prefill_depth")?.unwrap_or(0),
            measured_prefill_tok_s: measured_prefill,
            exclude,
            source: get("source"),
        });
    }
    Ok(out)
}

/// The columns `names` a table adds to a validation table, row by row: for each record its
/// line number and a getter of its trimmed cells (empty where blank). A table without one of
/// them is refused, naming the column and `table` (`"the energy table"`). The rows come in the
/// order [`parse_table`] returns them, so the two zip.
pub(crate) fn extra_columns(
    text: &str,
    origin: &str,
    names: &[&str],
    table: &str,
) -> Result<Vec<(usize, impl Fn(&str) -> String)>> {
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes());
    let bad = |line: usize, field: &str, value: &str, reason: &str| {
        CalibError::Spec(SpecError::invalid(format!("{origin}: line {line}, column {field}"), value, reason))
    };
    let headers = reader.headers().map_err(|e| bad(1, "header", "", &e.to_string()))?.clone();
    let mut at = std::collections::HashMap::new();
    for &name in names {
        let i = headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| bad(1, name, "missing", &format!("{table} needs this column")))?;
        at.insert(name.to_string(), i);
    }
    let at = std::sync::Arc::new(at);
    let mut out = Vec::new();
    for (n, rec) in reader.records().enumerate() {
        let line = n + 2;
        let rec = rec.map_err(|e| bad(line, "row", "", &e.to_string()))?;
        let at = at.clone();
        out.push((line, move |name: &str| at.get(name).and_then(|&i| rec.get(i)).unwrap_or("").trim().to_string()));
    }
    Ok(out)
}

/// Read a validation table file.
pub fn read_table(path: &Path) -> Result<Vec<ValidationRow>> {
    let text = memwall_catalog::read_text(path)?;
    parse_table(&text, &path.display().to_string())
}

/// The context a measured run is stated with: the sum of `parts` (tokens cached, prompted and
/// generated) rounded up to a multiple of 512 tokens; an error naming `field` where the sum
/// overflows (a row stating `u64::MAX` generated tokens).
pub(crate) fn context_for(field: &str, parts: &[u64]) -> std::result::Result<u64, SpecError> {
    parts.iter().try_fold(0u64, |a, &b| a.checked_add(b)).and_then(|n| n.checked_next_multiple_of(512)).ok_or_else(
        || {
            let sum = parts.iter().map(u64::to_string).collect::<Vec<_>>().join(" + ");
            SpecError::invalid(field, sum, "too many tokens: their sum overflows")
        },
    )
}

/// The scenario and observation of a row (not excluded).
pub fn observation(row: &ValidationRow) -> Result<Observation> {
    let wrap = |e: CalibError| CalibError::Row { id: row.id.clone(), source: Box::new(e) };
    let backend = match row.backend.as_str() {
        "cpu" => Backend::Cpu,
        "gpu" => Backend::Gpu,
        "npu" => Backend::Npu,
        other => {
            return Err(wrap(CalibError::Spec(SpecError::invalid("backend", other, "expected cpu, gpu or npu"))));
        }
    };
    let mut device = load_device(&row.device).map_err(|e| wrap(e.into()))?;
    if let Some(gib) = row.ram_gib {
        device.memory.ram_bytes = device.memory.ram_bytes.max(gib << 30);
    }
    let mix = row.weights.parse().map_err(|e: SpecError| wrap(CalibError::Spec(e.within("weights"))))?;
    let gen_tokens = row.gen_tokens.max(1);
    // A row that does not state its threads ran an app (PocketPal, a vendor demo) whose
    // thread count the source does not give; it is taken as the big cores, as every fit has
    // taken it, not as the engine's own default for a design (which a llama.cpp command line
    // would use): an app's choice is not llama.cpp's.
    let threads = row.threads.or(Some(device.big_cores()));
    let context_tokens = context_for("gen_tokens", &[row.depth, gen_tokens]).map_err(|e| wrap(e.into()))?;
    let s = Scenario {
        model: load_model(&row.model).map_err(|e| wrap(e.into()))?,
        device,
        weights: WeightQuant::new(mix),
        kv: KvQuant::default(),
        workload: Workload {
            prompt_tokens: row.depth,
            gen_tokens,
            context_tokens,
            threads,
            backend,
            history_tokens: Some(0),
            ..Workload::default()
        },
        engine: load_engine(&row.engine).map_err(|e| wrap(e.into()))?,
        // A unit figure the device does not state takes its class default, listed, as a
        // user's design with `--assume-defaults` would (an NPU row on a phone preset that
        // states no NPU figure).
        assume_defaults: true,
        cost: Default::default(),
        sim: Default::default(),
    };
    s.validate().map_err(|e| wrap(CalibError::Spec(e)))?;
    let class = s.device.kind.map_or("unspecified", |k| k.name()).to_string();
    Ok(Observation {
        id: row.id.clone(),
        device: row.unit_device.clone(),
        class,
        scenario: s,
        measured_tok_s: row.measured_tok_s,
        phase: Phase::Decode,
    })
}

/// The prefill observation of a row with a published prefill rate (not excluded): the row's
/// scenario with its prompt of `prefill_tokens` after `prefill_depth` cached tokens and one
/// generated token; `None` for a row without one.
pub fn prefill_observation(row: &ValidationRow) -> Result<Option<Observation>> {
    let (Some(prompt), Some(measured)) = (row.prefill_tokens, row.measured_prefill_tok_s) else {
        return Ok(None);
    };
    let mut o = observation(row)?;
    let wl = &mut o.scenario.workload;
    wl.prompt_tokens = prompt;
    wl.history_tokens = Some(row.prefill_depth);
    wl.gen_tokens = 1;
    let wrap = |e: SpecError| CalibError::Row { id: row.id.clone(), source: Box::new(CalibError::Spec(e)) };
    wl.context_tokens = context_for("prefill_tokens", &[row.prefill_depth, prompt, 1]).map_err(wrap)?;
    o.scenario.validate().map_err(wrap)?;
    o.measured_tok_s = measured;
    o.phase = Phase::Prefill;
    Ok(Some(o))
}

/// `d` as its spec sheet states it: the bandwidth figures a preset may carry from its own
/// rows (`memory.achievable_fraction`, `memory.per_core_gbps`, the GPU's and NPU's shares)
/// replaced by its family's, computed from the presets other than `without`
/// ([`memwall_catalog::defaults::family_figures`]); the NPU share by the class default.
pub fn sheet_device(d: &memwall_spec::DeviceSpec, without: &[&str]) -> memwall_spec::DeviceSpec {
    let family = memwall_spec::class::CpuFamily::of(d.kind, d.os());
    with_figures(d, memwall_catalog::defaults::family_figures(family, d.accelerators.gpu_vendor, without))
}

/// `d` with the bandwidth figures `(cpu share, per-core GB/s, GPU share)`, the NPU's the
/// class default.
fn with_figures(d: &memwall_spec::DeviceSpec, (fr, pc, gpu): (f64, f64, f64)) -> memwall_spec::DeviceSpec {
    let mut s = d.clone();
    s.memory.achievable_fraction = Some(fr);
    s.memory.per_core_gbps = Some(pc);
    s.memory.accel_achievable_fraction = None;
    s.accelerators.gpu_bandwidth_fraction = Some(gpu);
    s.accelerators.npu_bandwidth_fraction = Some(memwall_spec::class::NPU_BANDWIDTH_FRACTION);
    s
}

/// The observations of `obs` with each device rebuilt from its spec sheet ([`sheet_device`]),
/// leaving out of its family's figures the presets `without(device)` names.
fn sheet_observations(
    obs: &[Observation],
    without: impl Fn(&memwall_spec::DeviceSpec) -> Vec<String>,
) -> Vec<Observation> {
    let mut figures: std::collections::BTreeMap<String, (f64, f64, f64)> = Default::default();
    obs.iter()
        .map(|o| {
            let d = &o.scenario.device;
            let f = *figures.entry(d.name.clone()).or_insert_with(|| {
                let w = without(d);
                let family = memwall_spec::class::CpuFamily::of(d.kind, d.os());
                memwall_catalog::defaults::family_figures(
                    family,
                    d.accelerators.gpu_vendor,
                    &w.iter().map(String::as_str).collect::<Vec<_>>(),
                )
            });
            let mut o = o.clone();
            o.scenario.device = with_figures(d, f);
            o
        })
        .collect()
}

/// Leave-one-SoC-out and leave-one-family-out predictions of `obs` from the spec sheet:
/// (sheet, family), in `obs` order.
fn sheet_predictions(obs: &[Observation], params: &[crate::Param]) -> Result<(Vec<f64>, Vec<f64>)> {
    use memwall_spec::class::CpuFamily;
    let family_of = |d: &memwall_spec::DeviceSpec| CpuFamily::of(d.kind, d.os());
    let by = |key: &dyn Fn(&Observation) -> String| {
        let mut g: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
        for (i, o) in obs.iter().enumerate() {
            g.entry(key(o)).or_default().push(i);
        }
        g
    };
    // A SoC's rows go out together, whatever RAM size or GPU bin each states, and so do the
    // figures of every preset of that SoC.
    let soc = |name: &str| memwall_catalog::device_db::soc_of(name).to_string();
    let socs = by(&|o| soc(&o.scenario.device.name));
    let preset_names: Vec<&str> = memwall_catalog::presets::DEVICES.iter().map(|(n, _)| *n).collect();
    let held = sheet_observations(obs, |d| {
        let mut w: Vec<String> =
            preset_names.iter().filter(|p| soc(p) == soc(&d.name)).map(|p| p.to_string()).collect();
        w.push(d.name.clone());
        w
    });
    let sheet = crate::validate::cross_validate_groups(obs, &held, params, &socs)?;
    let families = by(&|o| family_of(&o.scenario.device).name().to_string());
    let presets: Vec<memwall_spec::DeviceSpec> =
        memwall_catalog::presets::DEVICES.iter().filter_map(|(n, _)| load_device(n).ok()).collect();
    let held = sheet_observations(obs, |d| {
        presets.iter().filter(|p| family_of(p) == family_of(d)).map(|p| p.name.clone()).collect()
    });
    let family = crate::validate::cross_validate_groups(obs, &held, params, &families)?;
    Ok((sheet, family))
}

/// A row predicted by cross-validation, for the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    /// Row identifier.
    pub id: String,
    /// Physical device.
    pub unit_device: String,
    /// Device preset.
    pub device: String,
    /// Device class.
    pub class: String,
    /// CPU family of the device ([`memwall_spec::class::CpuFamily`]), what leave-one-family-out
    /// holds out.
    pub family: String,
    /// Engine.
    pub engine: String,
    /// Unit.
    pub backend: String,
    /// Model preset.
    pub model: String,
    /// Weight mix.
    pub weights: String,
    /// What the rates time: decoded tokens or the prompt's prefill.
    pub phase: Phase,
    /// Published tok/s.
    pub measured_tok_s: f64,
    /// Predicted by the fit that left this device out.
    pub predicted_tok_s: f64,
    /// Predicted by the fit on every row (in sample).
    pub in_sample_tok_s: f64,
    /// Predicted as a new user's device would be: its SoC's rows (every physical device on
    /// that preset) left out of the fit, the device rebuilt from its spec sheet with the
    /// bandwidth figures of its family computed without it ([`sheet_device`]).
    pub sheet_tok_s: f64,
    /// Predicted with its whole family left out (CPU family, [`memwall_spec::class::CpuFamily`]):
    /// every preset of the family out of the fit and of the family's figures.
    pub family_tok_s: f64,
    /// Predicted with its engine left out: the generic engine's figures fitted on every other
    /// engine's rows of the unit ([`engine_out_predictions`]), as a user's engine that no
    /// published row informs would be.
    pub engine_tok_s: f64,
    /// The naive roofline: peak bandwidth ÷ bytes per token (decode), peak arithmetic ÷
    /// multiply-adds per token (prefill, [`crate::naive_prefill_roofline_tok_s`]).
    pub roofline_tok_s: f64,
}

/// The prefill half of a validation: the rows with a published prefill rate, predicted
/// with the decode figures of their fold and the prefill figures fitted without their device
/// ([`crate::cross_validate_prefill`]).
#[derive(Debug, Clone)]
pub struct PrefillValidation {
    /// Rows used (phase prefill).
    pub validated: Vec<Validated>,
    /// The observations used (same order as `validated`).
    pub observations: Vec<Observation>,
    /// The fitted prefill parameters ([`Knob::PREFILL`] of each engine and unit).
    pub params: Vec<crate::Param>,
    /// Leave-one-device-out and in-sample predictions, and the fit on every prefill row.
    pub cv: crate::CrossValidated,
}

/// A validation run: the rows used with their cross-validated predictions, the rows left
/// out with the reason, and the fit on every row.
#[derive(Debug, Clone)]
pub struct Validation {
    /// Decode rows used.
    pub validated: Vec<Validated>,
    /// Rows not used: (id, reason); a prefill measurement set aside alone is listed as
    /// `id (prefill)`.
    pub excluded: Vec<(String, String)>,
    /// The observations used (same order as `validated`).
    pub observations: Vec<Observation>,
    /// The fitted parameters.
    pub params: Vec<crate::Param>,
    /// Leave-one-device-out and in-sample predictions, and the fit on every row.
    pub cv: crate::CrossValidated,
    /// The prefill rows, where any row has a usable prefill rate.
    pub prefill: Option<PrefillValidation>,
    /// The generic engine's figures (what `generic.toml` ships): the median of the engines'
    /// figures fitted on every decode row ([`crate::validate::generic_figures`]).
    pub generic: Vec<crate::validate::GenericFigure>,
}

/// Cross-validate the rows of a table: rows marked `exclude`, rows whose presets are
/// missing, and rows faster than the device's peak bandwidth allows are set aside, each with
/// its reason; so is a prefill rate faster than the unit's peak arithmetic allows
/// ([`crate::naive_prefill_roofline_tok_s`]), as `id (prefill)`.
pub fn validate(rows: &[ValidationRow]) -> Result<Validation> {
    let mut observations = Vec::new();
    let mut prefill = Vec::new();
    let mut roofline = Vec::new();
    let mut excluded = Vec::new();
    for r in rows {
        if !r.exclude.is_empty() {
            excluded.push((r.id.clone(), r.exclude.clone()));
            continue;
        }
        let o = match observation(r) {
            Ok(o) => o,
            Err(e) => {
                // The unknown-preset hint lists every preset; the reason needs only the name.
                let full = e.to_string();
                let reason = full.split("; presets:").next().unwrap_or(&full);
                excluded.push((r.id.clone(), format!("cannot be stated: {reason}")));
                continue;
            }
        };
        let roof = crate::naive_roofline_tok_s(&o.scenario)?;
        if o.measured_tok_s > roof * 1.02 {
            excluded.push((
                r.id.clone(),
                format!(
                    "physically impossible as stated: {:.2} tok/s is faster than the device's peak bandwidth allows \
                     ({roof:.2} tok/s)",
                    o.measured_tok_s
                ),
            ));
            continue;
        }
        match prefill_observation(r) {
            Ok(Some(p)) => {
                let roof = crate::naive_prefill_roofline_tok_s(&p.scenario);
                if p.measured_tok_s > roof * 1.02 {
                    excluded.push((
                        format!("{} (prefill)", r.id),
                        format!(
                            "physically impossible as stated: {:.2} tok/s of prefill is faster than the {}'s peak \
                             arithmetic allows ({roof:.2} tok/s)",
                            p.measured_tok_s,
                            p.scenario.workload.backend.name()
                        ),
                    ));
                } else {
                    prefill.push(p);
                }
            }
            Ok(None) => {}
            Err(e) => excluded.push((format!("{} (prefill)", r.id), format!("cannot be stated: {e}"))),
        }
        roofline.push(roof);
        observations.push(o);
    }
    if observations.is_empty() {
        return Err(CalibError::Spec(SpecError::invalid("validation table", "no usable row", "nothing to validate")));
    }
    let params = crate::default_params(&observations);
    // The four cross-validations are independent: leave-one-SoC-out and -family-out, and
    // leave-one-engine-out, run on threads of their own beside leave-one-device-out (the
    // same results as one after the other, in about half the time on two cores).
    let (cv, sheets, engines) = std::thread::scope(|scope| {
        let sheets = scope.spawn(|| sheet_predictions(&observations, &params));
        let engines = scope.spawn(|| engine_out_predictions(&observations, &params));
        let cv = crate::cross_validate(&observations, &params);
        (cv, sheets.join(), engines.join())
    });
    let cv = cv.map_err(|e| CalibError::Spec(SpecError::invalid("validation", "fit", e.to_string())))?;
    let (sheet, family) = sheets.expect("the spec-sheet cross-validation does not panic")?;
    let engine_out = engines.expect("the leave-one-engine-out cross-validation does not panic")?;
    let mut validated = rows_of(rows, &observations, &cv, &roofline);
    for (v, ((s, f), e)) in validated.iter_mut().zip(sheet.into_iter().zip(family).zip(engine_out)) {
        v.sheet_tok_s = s;
        v.family_tok_s = f;
        v.engine_tok_s = e;
    }
    let prefill = if prefill.is_empty() {
        None
    } else {
        let pparams = crate::params_for(&prefill, &Knob::PREFILL);
        let pcv = crate::cross_validate_prefill(&prefill, &pparams, &params, &cv)
            .map_err(|e| CalibError::Spec(SpecError::invalid("validation", "prefill fit", e.to_string())))?;
        let roof: Vec<f64> = prefill.iter().map(|o| crate::naive_prefill_roofline_tok_s(&o.scenario)).collect();
        Some(PrefillValidation {
            validated: rows_of(rows, &prefill, &pcv, &roof),
            observations: prefill,
            params: pparams,
            cv: pcv,
        })
    };
    let all: Vec<usize> = (0..observations.len()).collect();
    let generic =
        crate::validate::generic_figures(&params, &cv.full.values, &crate::validate::informed(&observations, &all));
    Ok(Validation { validated, excluded, observations, params, cv, prefill, generic })
}

/// Leave-one-engine-out: each engine's rows on a unit predicted as an engine without a
/// profile would be, by the generic figures ([`crate::validate::generic_figures`]: the median of
/// the other engines' fitted figures) on its own profile's other fields, fitted without them.
/// Returns the predictions, in `obs` order.
pub fn engine_out_predictions(obs: &[Observation], params: &[crate::Param]) -> Result<Vec<f64>> {
    let mut groups: std::collections::BTreeMap<String, Vec<usize>> = Default::default();
    for (i, o) in obs.iter().enumerate() {
        groups.entry(format!("{}/{}", o.scenario.engine.name, o.scenario.workload.backend.name())).or_default().push(i);
    }
    crate::validate::cross_validate_groups(obs, obs, params, &groups)
}

/// The report rows of `observations` with their cross-validated, in-sample and roofline
/// predictions.
fn rows_of(
    rows: &[ValidationRow],
    observations: &[Observation],
    cv: &crate::CrossValidated,
    roofline: &[f64],
) -> Vec<Validated> {
    let rows_by_id = |id: &str| rows.iter().find(|r| r.id == id);
    observations
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let r = rows_by_id(&o.id);
            Validated {
                id: o.id.clone(),
                unit_device: o.device.clone(),
                device: o.scenario.device.name.clone(),
                class: o.class.clone(),
                family: {
                    let d = &o.scenario.device;
                    memwall_spec::class::CpuFamily::of(d.kind, d.os()).name().to_string()
                },
                engine: o.scenario.engine.name.clone(),
                backend: o.scenario.workload.backend.name().to_string(),
                model: o.scenario.model.name.clone(),
                weights: r.map_or_else(|| o.scenario.weights.mix.to_string(), |r| r.weights.clone()),
                phase: o.phase,
                measured_tok_s: o.measured_tok_s,
                predicted_tok_s: cv.predicted[i],
                in_sample_tok_s: cv.in_sample[i],
                // Filled by `validate` for the decode rows; the prefill rows keep the
                // leave-one-device-out figure.
                sheet_tok_s: cv.predicted[i],
                family_tok_s: cv.predicted[i],
                engine_tok_s: cv.predicted[i],
                roofline_tok_s: roofline[i],
            }
        })
        .collect()
}

/// The 80 % interval of `measured ÷ predicted` on a device none of `rows` came from, each row
/// `(ratio, device)`; `None` for fewer than five rows or two devices.
///
/// In log space: the 10th, 50th and 90th percentiles of the rows (the `i`-th of `n` sorted
/// rows at `(i + ½) / n`, linear between), each half-width then widened by
/// [`new_device_widening`] of the number of devices: rows of one device share its error (its
/// figures, its build, its source), so `n` devices bound the spread of the next one less
/// tightly than as many independent rows would. (Weighing each device the same instead held
/// fewer rows on the table: 59 % of llama.cpp's CPU rows from their spec sheets against 68 %
/// before any widening, its rows being heaviest on the devices it misses most.)
pub fn ratio_interval(rows: &[(f64, &str)]) -> Option<[f64; 2]> {
    let n_dev = rows.iter().map(|(_, d)| *d).collect::<std::collections::BTreeSet<_>>().len();
    if rows.len() < 5 || n_dev < 2 {
        return None;
    }
    let mut logs: Vec<f64> = rows.iter().map(|(r, _)| r.ln()).collect();
    logs.sort_by(f64::total_cmp);
    let last = logs.len() - 1;
    let q = |p: f64| {
        let x = (p * logs.len() as f64 - 0.5).clamp(0.0, last as f64);
        let (i, f) = (x.floor() as usize, x - x.floor());
        logs[i] + f * (logs[(i + 1).min(last)] - logs[i])
    };
    let (lo, c, hi) = (q(0.1), q(0.5), q(0.9));
    let k = new_device_widening(n_dev);
    Some([(c - k * (c - lo)).exp(), (c + k * (hi - c)).exp()])
}

/// How much wider than the devices' own 10th-90th percentiles an 80 % interval for one more
/// device must be when `n` devices were seen: `t(0.9, n − 1) / z(0.9) × √(1 + 1/n)`, the
/// normal prediction interval's factor (the spread estimated from `n` draws, the centre too).
/// For 3 devices 1.70, 5 devices 1.31, 10 devices 1.13, 20 devices 1.07; tends to 1.
/// One-sided 90 % Student t quantiles from the standard table, a degree of freedom between
/// two rows taking the smaller (wider) row.
pub fn new_device_widening(n: usize) -> f64 {
    const T90: [(usize, f64); 15] = [
        (1, 3.078),
        (2, 1.886),
        (3, 1.638),
        (4, 1.533),
        (5, 1.476),
        (6, 1.440),
        (7, 1.415),
        (8, 1.397),
        (9, 1.383),
        (10, 1.372),
        (12, 1.356),
        (15, 1.341),
        (20, 1.325),
        (30, 1.310),
        (60, 1.296),
    ];
    let dof = n.saturating_sub(1).max(1);
    let t = if dof > 60 { 1.2816 } else { T90.iter().rev().find(|(d, _)| *d <= dof).map_or(3.078, |x| x.1) };
    t / 1.2816 * (1.0 + 1.0 / n.max(1) as f64).sqrt()
}

/// An engine's own 80 % band needs rows from at least this many devices; with fewer, its
/// unit takes the band of an engine no row informs (leave-one-engine-out residuals,
/// [`engine_out_predictions`]): two devices' rows say little of how a third will miss.
pub const MIN_BAND_DEVICES: usize = 3;

/// Set `u`, the costs on `unit`, to the generic figures for that unit.
fn set_generic(u: &mut memwall_spec::UnitCosts, unit: Backend, generic: &[crate::validate::GenericFigure]) {
    for g in generic.iter().filter(|g| g.unit == unit) {
        g.knob.set(u, g.value);
    }
}

/// The generic engine (`generic.toml`): [`memwall_spec::EngineSpec::generic`] with the median
/// of the engines' fitted figures ([`Validation::generic`]) and, per unit, the 80 % band of its
/// leave-one-engine-out residuals (`band`).
fn generic_profile(v: &Validation, band: &dyn Fn(Backend) -> Option<[f64; 2]>) -> Result<memwall_spec::EngineSpec> {
    let mut e = memwall_spec::EngineSpec::generic();
    e.description = "memwall's generic engine, for a design that names no engine or an engine without a \
                     profile: on each unit, the median of the profiled engines' fitted figures"
        .into();
    e.source = "figures by `memwall validate --devices --write-engines`: each the median of the figures fitted for \
                every engine with published decode rows of at least two devices on the unit \
                (datasets/validation_decode.csv); the others are memwall's engineering estimates"
        .into();
    for unit in [Backend::Cpu, Backend::Gpu, Backend::Npu] {
        if let Some(u) = e.unit_mut(unit) {
            set_generic(u, unit, &v.generic);
        }
    }
    for g in &v.generic {
        e.sources.insert(
            format!("{}.{}", g.unit.name(), g.knob.name()),
            format!(
                "the median of the {} figures fitted by `memwall validate --devices --write-engines` for {} (each \
                 engine on rows of at least {} devices, one vote each)",
                g.knob.name(),
                g.engines.join(", "),
                crate::validate::MIN_ENGINE_DEVICES
            ),
        );
    }
    for unit in [Backend::Cpu, Backend::Gpu, Backend::Npu] {
        let Some(u) = e.unit_mut(unit) else { continue };
        u.error_ratio = band(unit);
        if u.error_ratio.is_some() {
            e.sources.insert(
                format!("{}.error_ratio", unit.name()),
                format!(
                    "10th-90th percentile of measured / predicted, leave-one-engine-out: each engine's rows on the \
                     {} predicted by the median of the figures fitted for the other engines",
                    unit.name()
                ),
            );
        }
    }
    Ok(e)
}

/// The engine profiles of a validation with the figures fitted on every row, each fitted
/// field's provenance, and the cross-validated 80 % interval of `measured ÷ predicted`
/// (its engine and unit's rows when they come from [`MIN_BAND_DEVICES`] devices or more,
/// else the band of an engine no row informs), and the generic engine (`generic_profile`: the median of the
/// informed engines' figures):
/// (name, TOML).
pub fn fitted_engine_profiles(v: &Validation) -> Result<Vec<(String, String)>> {
    use std::collections::BTreeMap;
    let mut engines: BTreeMap<String, memwall_spec::EngineSpec> = BTreeMap::new();
    for o in &v.observations {
        engines.entry(o.scenario.engine.name.clone()).or_insert_with(|| o.scenario.engine.clone());
    }
    // The band a new device would get: residuals of each SoC predicted from its spec sheet
    // with the engines fitted without it (wider than leave-one-device-out, which keeps the
    // device's own preset figures).
    let ratio = |i: usize| v.validated[i].measured_tok_s / v.validated[i].sheet_tok_s;
    let with_device = |i: usize, r: f64| (r, v.validated[i].unit_device.as_str());
    let everyone: Vec<(f64, &str)> = (0..v.validated.len()).map(|i| with_device(i, ratio(i))).collect();
    let pooled = ratio_interval(&everyone);
    // Leave-one-engine-out residuals of a unit: the band of the generic engine, and of an
    // engine too thinly fitted to have its own.
    let generic_band = |unit: Backend| {
        let r: Vec<(f64, &str)> = v
            .validated
            .iter()
            .filter(|r| r.backend == unit.name())
            .map(|r| (r.measured_tok_s / r.engine_tok_s, r.unit_device.as_str()))
            .collect();
        ratio_interval(&r)
    };
    let devices = |engine: &str, unit: &str| {
        let rows: Vec<usize> = (0..v.validated.len())
            .filter(|&i| v.validated[i].engine == engine && v.validated[i].backend == unit)
            .collect();
        let n_dev = rows.iter().map(|&i| &v.validated[i].unit_device).collect::<std::collections::BTreeSet<_>>().len();
        (rows, n_dev)
    };
    for (p, value) in v.params.iter().zip(&v.cv.full.values) {
        let Some(e) = engines.get_mut(&p.engine) else { continue };
        let Some(u) = e.unit_mut(p.unit) else { continue };
        p.knob.set(u, *value);
        let (rows, n_dev) = devices(&p.engine, p.unit.name());
        // A token mixer's time is fitted on the rows whose model has layers of its kind.
        let (fitted_on, fitted_dev) = match p.knob {
            Knob::MixerS(k) => {
                let rows: Vec<usize> = rows
                    .iter()
                    .copied()
                    .filter(|&i| v.observations[i].scenario.model.layer_kinds().contains(&k))
                    .collect();
                let n =
                    rows.iter().map(|&i| &v.validated[i].unit_device).collect::<std::collections::BTreeSet<_>>().len();
                (rows.len(), n)
            }
            _ => (rows.len(), n_dev),
        };
        let how = if n_dev < crate::validate::MIN_ENGINE_DEVICES {
            match v.generic.iter().find(|g| g.unit == p.unit && g.knob == p.knob) {
                Some(g) => format!(
                    "the generic engine's figure, the median of {}'s: its {} rows come from {n_dev} device(s), too \
                     few to fit a figure that transfers (at least {} devices; datasets/validation_decode.csv)",
                    g.engines.join(", "),
                    rows.len(),
                    crate::validate::MIN_ENGINE_DEVICES
                ),
                None if matches!(p.knob, Knob::MixerS(_)) => format!(
                    "held at the prior {:.3e}: its {} rows come from {n_dev} device(s), too few to fit it (at least \
                     {} devices), and a token mixer's time is one engine's own, with no generic figure",
                    p.prior,
                    rows.len(),
                    crate::validate::MIN_ENGINE_DEVICES
                ),
                None if p.knob == Knob::Overlap => format!(
                    "held at the prior {:.3e}: its {} rows come from {n_dev} device(s), too few to fit it (at least \
                     {} devices), and how far kernels hide arithmetic is one engine's own, with no generic figure",
                    p.prior,
                    rows.len(),
                    crate::validate::MIN_ENGINE_DEVICES
                ),
                None => format!(
                    "held at the prior {:.3e}: its {} rows come from {n_dev} device(s), too few to fit it (at least \
                     {} devices), and no engine with rows of that many devices fits this figure on the unit",
                    p.prior,
                    rows.len(),
                    crate::validate::MIN_ENGINE_DEVICES
                ),
            }
        } else if p.held() {
            format!(
                "held at the prior {:.3e}: none of its {} rows decodes at {} tokens of context or more \
                 (crate::fit::KV_READS_MIN_DEPTH), so none informs it",
                p.prior,
                rows.len(),
                crate::fit::KV_READS_MIN_DEPTH
            )
        } else {
            format!(
                "fitted by `memwall validate --devices --write-engines` on {fitted_on} rows of {fitted_dev} devices \
                 (datasets/validation_decode.csv; prior {:.3e})",
                p.prior
            )
        };
        let how = match p.knob {
            Knob::MixerS(k) => format!("the time a {} layer adds to every step, {how}", k.name()),
            _ => how,
        };
        e.sources.insert(format!("{}.{}", p.unit.name(), p.knob.name()), how);
    }
    if let Some(pv) = &v.prefill {
        for (p, value) in pv.params.iter().zip(&pv.cv.full.values) {
            let Some(e) = engines.get_mut(&p.engine) else { continue };
            let Some(u) = e.unit_mut(p.unit) else { continue };
            p.knob.set(u, *value);
            let rows: Vec<&Validated> =
                pv.validated.iter().filter(|r| r.engine == p.engine && r.backend == p.unit.name()).collect();
            let n_dev = rows.iter().map(|r| &r.unit_device).collect::<std::collections::BTreeSet<_>>().len();
            let how = if n_dev < crate::validate::MIN_PREFILL_DEVICES {
                format!(
                    "the generic engine's figure: {} prefill rows of {n_dev} devices are too few to fit it (at least {} \
                     devices; datasets/validation_decode.csv)",
                    rows.len(),
                    crate::validate::MIN_PREFILL_DEVICES
                )
            } else {
                format!(
                    "fitted by `memwall validate --devices --write-engines` on {} prefill rows of {n_dev} devices, \
                     the decode figures fixed (datasets/validation_decode.csv; prior {:.3e})",
                    rows.len(),
                    p.prior
                )
            };
            e.sources.insert(format!("{}.{}", p.unit.name(), p.knob.name()), how);
        }
    }
    for (name, e) in engines.iter_mut() {
        e.source = "figures fitted by `memwall validate --devices --write-engines` where the engine has published \
                    rows (each fitted figure's [sources] entry says on how many); the others are memwall's generic \
                    engine figures (engineering estimates)"
            .into();
        for unit in [Backend::Cpu, Backend::Gpu, Backend::Npu] {
            let (rows, n_dev) = devices(name, unit.name());
            if rows.is_empty() || e.unit(unit).is_none() {
                continue;
            }
            e.sources.insert(
                unit.name().to_string(),
                "figures without an entry of their own: memwall's generic engine figures (engineering estimates)"
                    .into(),
            );
            let own: Vec<(f64, &str)> = rows.iter().map(|&i| with_device(i, ratio(i))).collect();
            let thin = n_dev < MIN_BAND_DEVICES;
            let (interval, why) = match ratio_interval(&own) {
                Some(r) if !thin => (
                    Some(r),
                    format!(
                        "10th-90th percentile of measured / predicted, each SoC left out and predicted from its spec \
                         sheet with its family's bandwidth figures, over its {} rows",
                        rows.len()
                    ),
                ),
                _ => {
                    let few =
                        format!("its {} rows of {n_dev} devices are too few (under {MIN_BAND_DEVICES})", rows.len());
                    match generic_band(unit) {
                        Some(r) => (
                            Some(r),
                            format!(
                                "10th-90th percentile of measured / predicted for an engine no row informs: {few}, so \
                                 every engine's rows on the {} each predicted by the generic figures, the median of \
                                 the other engines'",
                                unit.name()
                            ),
                        ),
                        None => (pooled, format!("10th-90th percentile of measured / predicted over every row: {few}")),
                    }
                }
            };
            // A preset that states its figures: leave-one-device-out residuals (its own
            // figures kept), never wider than the sheet band.
            let stated: Vec<(f64, &str)> = rows
                .iter()
                .map(|&i| with_device(i, v.validated[i].measured_tok_s / v.validated[i].predicted_tok_s))
                .collect();
            let stated = match (ratio_interval(&stated), interval) {
                (Some([lo, hi]), Some([slo, shi])) if !thin => Some([lo.max(slo), hi.min(shi)]),
                _ => None,
            };
            let Some(u) = e.unit_mut(unit) else { continue };
            u.error_ratio = interval;
            u.error_ratio_stated = stated;
            e.sources.insert(format!("{}.error_ratio", unit.name()), why);
            if stated.is_some() {
                e.sources.insert(
                    format!("{}.error_ratio_stated", unit.name()),
                    format!(
                        "10th-90th percentile of measured / predicted over its {} rows, each physical device left \
                         out of the fit with its preset's figures kept (within the sheet band)",
                        rows.len()
                    ),
                );
            }
        }
    }
    // Prompt-rate bands, from leave-one-device-out prefill residuals of the figure as shipped:
    // an engine and unit whose prompt rows come from more than MIN_PREFILL_DEVICES devices
    // had its prefill figure fitted in every fold, as it ships, and takes its own residuals;
    // one with fewer ships the prior, which every fold used too, and takes the residuals of
    // every row on the unit predicted at the prior (when those span MIN_BAND_DEVICES
    // devices); one with exactly MIN_PREFILL_DEVICES ships a figure fitted on all of them that
    // no fold could fit, so no residual describes it: unknown. No prompt rows: unknown.
    if let Some(pv) = &v.prefill {
        use crate::validate::MIN_PREFILL_DEVICES;
        use std::collections::{BTreeMap, BTreeSet};
        let mut devs: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
        for r in &pv.validated {
            devs.entry((r.engine.as_str(), r.backend.as_str())).or_default().insert(r.unit_device.as_str());
        }
        let n_dev = |engine: &str, unit: &str| devs.get(&(engine, unit)).map_or(0, |d| d.len());
        let band_of = |keep: &dyn Fn(&Validated) -> bool| {
            let rows: Vec<&Validated> = pv.validated.iter().filter(|r| keep(r)).collect();
            let n = rows.iter().map(|r| &r.unit_device).collect::<BTreeSet<_>>().len();
            let ratios: Vec<(f64, &str)> =
                rows.iter().map(|r| (r.measured_tok_s / r.predicted_tok_s, r.unit_device.as_str())).collect();
            (ratio_interval(&ratios), rows.len(), n)
        };
        for (name, e) in engines.iter_mut() {
            for unit in [Backend::Cpu, Backend::Gpu, Backend::Npu] {
                let u_name = unit.name();
                let own_dev = n_dev(name, u_name);
                if own_dev == 0 || e.unit(unit).is_none() {
                    continue;
                }
                let (band, why) = if own_dev > MIN_PREFILL_DEVICES {
                    let (band, n, _) = band_of(&|r| r.engine == *name && r.backend == u_name);
                    let why = format!(
                        "10th-90th percentile of measured / predicted prompt tok/s over its {n} prefill rows of \
                         {own_dev} devices, each device left out of the fit"
                    );
                    (band, why)
                } else if own_dev < MIN_PREFILL_DEVICES {
                    let (band, n, d) =
                        band_of(&|r| r.backend == u_name && n_dev(&r.engine, u_name) <= MIN_PREFILL_DEVICES);
                    // Widened to hold the engine's own rows, which a pool of other engines'
                    // rows may not describe.
                    let own = pv
                        .validated
                        .iter()
                        .filter(|r| r.engine == *name && r.backend == u_name)
                        .map(|r| r.measured_tok_s / r.predicted_tok_s)
                        .fold([f64::INFINITY, 0.0_f64], |[lo, hi], x| [lo.min(x), hi.max(x)]);
                    let band = band.filter(|_| d >= MIN_BAND_DEVICES).map(|[lo, hi]| [lo.min(own[0]), hi.max(own[1])]);
                    let why = format!(
                        "its prompt rows come from {own_dev} device(s), too few to fit its prefill figure (it ships \
                         the prior): the 10th-90th percentile of measured / predicted over the {n} prefill rows of {d} \
                         devices on the {u_name} predicted at the prior in leave-one-device-out, widened to hold its own \
                         rows{}",
                        if band.is_none() { " (too few devices: unknown)" } else { "" }
                    );
                    (band, why)
                } else {
                    let why = format!(
                        "unknown: its prefill figure is fitted on its {own_dev} devices' prompt rows, and leaving one \
                         out leaves too few to fit it, so no cross-validated residual describes the shipped figure"
                    );
                    (None, why)
                };
                if let Some(u) = e.unit_mut(unit) {
                    u.prefill_error_ratio = band;
                    e.sources.insert(format!("{u_name}.prefill_error_ratio"), why);
                }
            }
        }
    }
    // An engine (or a unit of one) that no published row informs, and whose figures carry no
    // source of their own, is the generic engine there: its figures and their
    // leave-one-engine-out band, so that it answers with a checked range.
    for (name, _) in memwall_catalog::presets::ENGINES {
        if *name != "generic" && !engines.contains_key(*name) {
            let mut e = load_engine(name)?;
            if e.sources.keys().all(|k| !k.contains('.')) {
                e.source = "no published row of this engine yet: the generic engine's figures on each unit (the \
                            median of the profiled engines', generic.toml); see [sources]"
                    .into();
            }
            engines.insert(name.to_string(), e);
        }
    }
    for (name, e) in engines.iter_mut() {
        for unit in [Backend::Cpu, Backend::Gpu, Backend::Npu] {
            let prefix = format!("{}.", unit.name());
            let own = e.sources.keys().any(|k| k.starts_with(&prefix));
            if e.unit(unit).is_none() || own || !devices(name, unit.name()).0.is_empty() {
                continue;
            }
            let Some(u) = e.unit_mut(unit) else { continue };
            set_generic(u, unit, &v.generic);
            u.error_ratio = generic_band(unit);
            u.error_ratio_stated = None;
            e.sources.insert(
                unit.name().to_string(),
                format!(
                    "no published row of this engine on the {}: the generic engine's figures there (the median of the \
                     profiled engines', generic.toml) and its leave-one-engine-out band; its own non-fitted figures \
                     (formats, dequant_cycles) kept",
                    unit.name()
                ),
            );
        }
    }
    engines.insert("generic".into(), generic_profile(v, &generic_band)?);
    engines
        .into_iter()
        .map(|(name, mut e)| {
            // A borrowed [cpu] table is the lending engine's, written in its own profile.
            if e.cpu_from.is_some() {
                e.cpu = None;
                e.sources.retain(|k, _| k != "cpu" && !k.starts_with("cpu."));
            }
            let text = toml::to_string(&e)
                .map_err(|err| CalibError::Spec(SpecError::invalid("engine", &name, err.to_string())))?;
            Ok((name, text))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::context_for;

    #[test]
    fn a_runs_context_is_its_tokens_rounded_up_to_512_and_an_overflow_names_its_field() {
        assert_eq!(context_for("gen_tokens", &[100, 30]).unwrap(), 512);
        assert_eq!(context_for("gen_tokens", &[512]).unwrap(), 512);
        assert_eq!(context_for("gen_tokens", &[256, 256, 1]).unwrap(), 1024);
        for parts in [&[1, u64::MAX][..], &[u64::MAX - 10][..]] {
            let e = context_for("gen_tokens", parts).unwrap_err().to_string();
            assert!(e.contains("gen_tokens") && e.contains("overflows"), "{e}");
        }
    }
}
