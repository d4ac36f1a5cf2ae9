//! One typed answer per question, which every front end renders: the command line's table and
//! `--json`, and the Python package's objects. A field has one name everywhere, and each use
//! case is one function here: [`footprint`], [`estimate()`] and [`ops`], [`compare()`],
//! [`presets()`] (and the facts of one spec: [`ModelFacts`], [`DeviceFacts`], [`EngineFacts`]),
//! [`validate_devices`], [`validate_energy`], [`validate_sustained`], [`validate_host`], [`calibrate_llama_bench`]. Sweeps and simulations
//! are [`crate::Sweep`] and [`crate::simulate`]; answers to design questions are
//! `memwall_solve::answer`; calibrating this machine is `memwall_calib::hostfit::calibrate_host`.

pub mod calibrate;
pub mod compare;
pub mod devices;
pub mod estimate;
pub mod presets;
pub mod validate;

pub use calibrate::{calibrate_llama_bench, profile_texts};
pub use compare::{Compared, Comparison, compare};
pub use devices::{DeviceRow, device_database};
pub use estimate::{AtDepth, EstimateReport, Ops, at_depths, estimate, ops};
pub use presets::{DeviceFacts, EngineFacts, ModelFacts, Presets, presets};
pub use validate::{
    DeviceValidation, EnergyReport, GroupErrors, HostValidation, PhaseErrors, SustainedReport, energy_rows,
    host_engine_path, sustained_rows, validate_devices, validate_energy, validate_host, validate_sustained,
};

use memwall_sim::WeightBytes;
use memwall_spec::{
    DeviceSpec, EngineSpec, FileType, KvQuant, Mix, ModelSpec, Scenario, SpecError, WeightQuant, Workload,
};
use serde::Serialize;

use crate::error::Result;

/// The design an answer is about: model, device, formats, workload, unit and engine.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Design {
    /// Model name.
    pub model: String,
    /// Device name.
    pub device: String,
    /// Weight mix.
    pub weights: String,
    /// K-cache format.
    pub kv_k: String,
    /// V-cache format.
    pub kv_v: String,
    /// Context the KV cache is allocated for, tokens.
    pub context_tokens: u64,
    /// Tokens the KV cache holds.
    pub kv_tokens: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Generated tokens.
    pub gen_tokens: u64,
    /// Sequences decoded together.
    pub batch: u32,
    /// Compute unit.
    pub backend: &'static str,
    /// Inference engine.
    pub engine: String,
    /// Part of the app limit kept free for what the footprint does not count, bytes.
    pub margin_bytes: u64,
}

impl Design {
    /// The design of scenario `s`.
    pub fn of(s: &Scenario) -> Self {
        Design {
            model: s.model.name.clone(),
            device: s.device.name.clone(),
            weights: s.weights.mix.to_string(),
            kv_k: s.kv.k.to_string(),
            kv_v: s.kv.v.to_string(),
            context_tokens: s.workload.context_tokens,
            kv_tokens: s.workload.kv_tokens(),
            prompt_tokens: s.workload.prompt_tokens,
            gen_tokens: s.workload.gen_tokens,
            batch: s.workload.batch,
            backend: s.workload.backend.name(),
            engine: s.engine.name.clone(),
            margin_bytes: s.workload.margin_bytes,
        }
    }
}

/// The schema version of every JSON document memwall prints (`--json`, the web page's
/// answers). 2: `footprint`'s `weights_bytes` and `weights_on_flash_bytes` are `weight_bytes`
/// and `on_flash_bytes`, as in the sweep columns and the Python API (one report serves all),
/// and it adds `padded_tensors`. A field is added within a version; renaming or removing one,
/// or changing its meaning, raises it.
pub const SCHEMA_VERSION: u32 = 2;

/// One JSON document: `{"schema": "memwall.<command>", "version": N, ...fields}` (`fields`
/// an object, kept in order).
pub fn document(command: &str, fields: serde_json::Value) -> serde_json::Value {
    let mut doc = serde_json::Map::new();
    doc.insert("schema".into(), serde_json::Value::from(format!("memwall.{command}")));
    doc.insert("version".into(), serde_json::Value::from(SCHEMA_VERSION));
    if let serde_json::Value::Object(m) = fields {
        doc.extend(m);
    }
    serde_json::Value::Object(doc)
}

/// A serializable value as JSON (non-finite floats become null).
pub fn json<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("memwall's result types serialize")
}

/// What one design chooses besides its model and device: the command line's flags and the
/// web page's form set these, and [`design`] turns them into a scenario by one rule.
#[derive(Debug, Clone, Default)]
pub struct Choices {
    /// The weight mix (absent: what the model file states, else Q4_K_M).
    pub weights: Option<Mix>,
    /// The KV-cache formats.
    pub kv: KvQuant,
    /// Context, prompt, reply, batch, threads, unit and margin.
    pub workload: Workload,
    /// The engine (absent: the best-validated profile for the unit,
    /// [`crate::defaults::default_engine`]).
    pub engine: Option<EngineSpec>,
    /// Use class defaults for figures the device lacks, labelled as assumed.
    pub assume_defaults: bool,
}

/// The validated scenario of `model` on `device` with `choices`. `stated` is what the model's
/// file says its weights are (a GGUF's stored types, a config.json's `quantization_config`).
/// The weights are `choices.weights`, else `stated`, else the stored types of a model that
/// has them, else Q4_K_M; the engine is `choices.engine`, else the unit's default.
pub fn design(model: ModelSpec, stated: Option<WeightQuant>, device: DeviceSpec, choices: Choices) -> Result<Scenario> {
    let weights = match (choices.weights, stated) {
        (Some(mix), _) => WeightQuant::new(mix),
        (None, Some(w)) => w,
        (None, None) => {
            WeightQuant::new(if model.stored.is_some() { Mix::Stored } else { Mix::File(FileType::Q4_K_M) })
        }
    };
    let engine = match choices.engine {
        Some(e) => e,
        None => crate::defaults::default_engine(&device, choices.workload.backend)?.engine,
    };
    let s = Scenario {
        model,
        device,
        engine,
        assume_defaults: choices.assume_defaults,
        weights,
        kv: choices.kv,
        workload: choices.workload,
        cost: Default::default(),
        sim: Default::default(),
    };
    s.validate()?;
    Ok(s)
}

/// A margin given in GB (`--margin-gb`, the page's field) as bytes: finite, at least 0 and at
/// most [`memwall_spec::bounds::MAX_BYTES`]; `field` names it in the error.
pub fn margin_bytes(field: &str, gb: f64) -> Result<u64> {
    use memwall_spec::units::GB;
    let max_gb = memwall_spec::bounds::MAX_BYTES as f64 / GB as f64;
    let reason = if !(gb.is_finite() && gb >= 0.0) {
        "must be a finite number >= 0".to_string()
    } else if gb > max_gb {
        format!("exceeds the plausible bound {max_gb:.0} GB (2^60 bytes)")
    } else {
        return Ok((gb * GB as f64) as u64);
    };
    Err(SpecError::Invalid { field: field.into(), value: gb.to_string(), reason }.into())
}

/// Bytes at rest by component.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Components {
    /// Weights held in RAM.
    pub weight_bytes: u64,
    /// KV cache.
    pub kv_bytes: u64,
    /// Recurrent state (SSM and linear-attention layers).
    pub state_bytes: u64,
    /// Compute buffers and activations.
    pub compute_bytes: u64,
    /// Runtime overhead.
    pub overhead_bytes: u64,
    /// Their sum.
    pub total_bytes: u64,
}

/// Where the bytes of one design go and whether it fits (`memwall footprint`,
/// `memwall.footprint`).
#[derive(Debug, Clone, Serialize)]
pub struct Footprint {
    /// The design.
    pub design: Design,
    /// Bytes by component.
    pub components: Components,
    /// The device's RAM, bytes.
    pub ram_bytes: u64,
    /// What one app may hold on the device, bytes ([`memwall_spec::DeviceSpec::app_limit`]).
    pub app_limit_bytes: u64,
    /// The rule and source of the app limit.
    pub app_limit_source: String,
    /// What the device keeps from the app: `ram − app_limit`, bytes (the stated
    /// `memory.os_reserved_bytes`, or what the class's published limit leaves).
    pub os_reserved_bytes: u64,
    /// Other apps the user keeps resident, bytes (`memory.other_apps_bytes`, 0 by default).
    pub other_apps_bytes: u64,
    /// What the app may give the model: `app_limit − other_apps`, bytes.
    pub available_bytes: u64,
    /// `available_bytes` less the margin, bytes (negative when the margin exceeds it).
    pub budget_bytes: i64,
    /// `budget_bytes` less the total (negative: does not fit).
    pub headroom_bytes: i64,
    /// Whether the design fits with the margin.
    pub fits: bool,
    /// Weight bits per parameter over the whole model.
    pub bits_per_weight: f64,
    /// Parameters.
    pub params: u64,
    /// Weight bytes left on flash, not in RAM (per-layer embeddings).
    pub on_flash_bytes: u64,
    /// Tensors stored in another format because their rows do not fill whole blocks.
    pub fallbacks: Vec<String>,
    /// Tensors whose last group is padded.
    pub padded_tensors: u32,
    /// Every weight tensor with its format and bytes (the rows of
    /// [`crate::columns::TENSOR_COLUMNS`]).
    #[serde(skip)]
    pub weights: WeightBytes,
}

impl Footprint {
    /// The fields of the `memwall.footprint` document (`--json`, the web page): the report and
    /// its `tensors` (the rows of [`crate::columns::TENSOR_COLUMNS`]).
    pub fn json(&self) -> serde_json::Value {
        let mut doc = json(self);
        doc["tensors"] = crate::columns::json_rows(crate::columns::TENSOR_COLUMNS, &self.weights.tensors).into();
        doc
    }
}

/// The footprint of scenario `s`.
pub fn footprint(s: &Scenario) -> Result<Footprint> {
    Ok(footprint_of(s, &memwall_sim::estimate(s)?))
}

/// The footprint of scenario `s` whose estimate `e` is already made (a front end showing
/// both, as the web page does, estimates once).
pub fn footprint_of(s: &Scenario, e: &memwall_sim::Estimate) -> Footprint {
    let w = WeightBytes::new(&s.model, &s.weights);
    let limit = s.device.app_limit();
    Footprint {
        design: Design::of(s),
        components: Components {
            weight_bytes: e.weight_bytes,
            kv_bytes: e.kv_bytes,
            state_bytes: e.state_bytes,
            compute_bytes: e.compute_bytes,
            overhead_bytes: e.overhead_bytes,
            total_bytes: e.total_bytes,
        },
        ram_bytes: s.device.memory.ram_bytes,
        app_limit_bytes: limit.bytes,
        app_limit_source: limit.source,
        os_reserved_bytes: s.device.reserve_bytes(),
        other_apps_bytes: s.device.memory.other_apps_bytes,
        available_bytes: s.device.available_bytes(),
        budget_bytes: e.budget_bytes,
        headroom_bytes: e.headroom_bytes,
        fits: e.fits,
        bits_per_weight: w.bits_per_weight(),
        params: w.params,
        on_flash_bytes: w.on_flash,
        fallbacks: w.fallbacks.iter().map(ToString::to_string).collect(),
        padded_tensors: w.padded_tensors,
        weights: w,
    }
}

/// A preset design on a Raspberry Pi 5 with the default KV cache and workload, for tests.
#[cfg(test)]
pub(crate) fn test_design(model: &str, mix: &str) -> Scenario {
    Scenario {
        model: crate::load_model(model).unwrap(),
        device: crate::load_device("raspberry-pi-5-8gb").unwrap(),
        weights: memwall_spec::WeightQuant::new(mix.parse().unwrap()),
        kv: memwall_spec::KvQuant::default(),
        workload: Default::default(),
        cost: Default::default(),
        engine: Default::default(),
        assume_defaults: false,
        sim: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_footprint_is_the_estimate_s_bytes_and_the_weights_tensors() {
        let s = test_design("llama-3.2-1b", "Q4_K_M");
        let f = footprint(&s).unwrap();
        let c = &f.components;
        assert_eq!(c.weight_bytes + c.kv_bytes + c.state_bytes + c.compute_bytes + c.overhead_bytes, c.total_bytes);
        assert_eq!(f.weights.tensors.iter().map(|t| t.2).sum::<u64>(), f.weights.total);
        assert_eq!(f.headroom_bytes, f.budget_bytes - c.total_bytes as i64);
        // The budget, component by component: the app limit (RAM less what the OS keeps), less
        // other apps and the margin. A Pi 5 (Linux board) lets one app hold 0.88 of its 8 GiB:
        // ⌊0.88 × 8 589 934 592⌋ = 7 559 142 440 B, with no other apps and no margin by default.
        assert_eq!(f.app_limit_bytes, 7_559_142_440);
        assert!(f.app_limit_source.contains("linux") && f.app_limit_source.contains("http"), "{}", f.app_limit_source);
        assert_eq!(f.os_reserved_bytes, f.ram_bytes - f.app_limit_bytes);
        assert_eq!((f.other_apps_bytes, f.design.margin_bytes), (0, 0));
        assert_eq!(f.available_bytes, f.ram_bytes - f.os_reserved_bytes - f.other_apps_bytes);
        assert_eq!(f.budget_bytes, f.available_bytes as i64 - f.design.margin_bytes as i64);
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["components"]["weight_bytes"], c.weight_bytes);
        assert_eq!(v["design"]["kv_k"], "f16");
        assert!(v.get("weights").is_none(), "the tensors travel as a table, not in the JSON object");
    }
}
