//! `memwall.Model`, `Device`, `Engine`, `Quant`, `Workload` and `presets`: specs resolved,
//! checked and described, and the values a design is spelled with.

use memwall_spec::{DeviceSpec, EngineSpec, ModelSpec, SpecError};
use pyo3::prelude::*;

use crate::errors::{Error, MemwallError, Result, spec_err};

/// The kinds of spec a Python object stands for.
const KINDS: &str = "model, device or engine";

/// A spec deserialized from JSON, the failing field named by its path (`model.moe.top_k`).
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(kind: &str, json: &str) -> memwall_lab::Result<T> {
    let de = &mut serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." || path.is_empty() { kind.to_string() } else { format!("{kind}.{path}") };
        let message = e.into_inner().to_string();
        // serde_json places the error in the JSON text memwall made, which means nothing here.
        let first = message.lines().next().unwrap_or_default();
        let message = first.rfind(" at line ").map_or(first, |i| &first[..i]).to_string();
        spec_err(SpecError::Field { field, message })
    })
}

/// A spec as a Rust value: from a preset name or file path (`source`; a GGUF file keeps its
/// tensors) or from the JSON of its fields.
pub(crate) enum Spec {
    Model(Box<ModelSpec>),
    Device(Box<DeviceSpec>),
    Engine(Box<EngineSpec>),
}

pub(crate) fn load_spec(kind: &str, source: Option<&str>, json: Option<&str>) -> memwall_lab::Result<Spec> {
    let unknown = || {
        spec_err(SpecError::unknown(
            "kind",
            "spec kind",
            kind,
            ["model", "device", "engine"],
            format!("; expected {KINDS}"),
        ))
    };
    Ok(match (kind, source, json) {
        ("model", Some(s), _) => Spec::Model(Box::new(memwall_lab::load_model(s)?)),
        ("device", Some(s), _) => Spec::Device(Box::new(memwall_lab::load_device(s)?)),
        ("engine", Some(s), _) => Spec::Engine(Box::new(memwall_lab::load_engine(s)?)),
        ("model", None, Some(j)) => {
            let m: ModelSpec = from_json("model", j)?;
            m.validate().map_err(|e| spec_err(e.within("model")))?;
            Spec::Model(Box::new(m))
        }
        ("device", None, Some(j)) => {
            let d: DeviceSpec = from_json("device", j)?;
            d.validate().map_err(|e| spec_err(e.within("device")))?;
            Spec::Device(Box::new(d))
        }
        ("engine", None, Some(j)) => {
            let e: EngineSpec = from_json("engine", j)?;
            e.validate().map_err(|e| spec_err(e.within("engine")))?;
            Spec::Engine(Box::new(e))
        }
        ("model" | "device" | "engine", None, None) => {
            return Err(spec_err(SpecError::invalid(kind, "nothing", "give a preset name, a file or fields")));
        }
        _ => return Err(unknown()),
    })
}

/// Every field of a spec (a preset name or file path) as JSON, to edit from Python. A model
/// file's tensors are not fields: an unchanged file model is passed by its path instead.
#[pyfunction]
pub(crate) fn spec_json(py: Python<'_>, kind: &str, source: &str) -> Result<String> {
    let spec = py.detach(|| load_spec(kind, Some(source), None))?;
    let json = match &spec {
        Spec::Model(m) => serde_json::to_string(m),
        Spec::Device(d) => serde_json::to_string(d),
        Spec::Engine(e) => serde_json::to_string(e),
    };
    json.map_err(|e| Error::from(MemwallError::new_err(format!("{kind} `{source}` as JSON: {e}"))))
}

/// The facts a repr shows (`memwall_lab::report::{ModelFacts, DeviceFacts, EngineFacts}`, the
/// figures `memwall presets` prints) as JSON, checked: a spec from `source` (preset or file)
/// or `json` (its fields), validated; errors name the field.
#[pyfunction]
#[pyo3(signature = (kind, source=None, json=None))]
pub(crate) fn describe(py: Python<'_>, kind: &str, source: Option<&str>, json: Option<&str>) -> Result<String> {
    use memwall_lab::report::{DeviceFacts, EngineFacts, ModelFacts};
    let spec = py.detach(|| load_spec(kind, source, json))?;
    let facts = match &spec {
        Spec::Model(m) => serde_json::to_string(&ModelFacts::of(m)),
        Spec::Device(d) => serde_json::to_string(&DeviceFacts::of(d)),
        Spec::Engine(e) => serde_json::to_string(&EngineFacts::of(e)),
    };
    facts.map_err(|e| Error::from(MemwallError::new_err(format!("{kind} facts as JSON: {e}"))))
}

/// A weight mix in its canonical spelling (`q4_k_m` → `Q4_K_M`), or the error naming `field`.
#[pyfunction]
pub(crate) fn parse_mix(field: &str, text: &str) -> Result<String> {
    text.parse::<memwall_spec::Mix>().map(|m| m.to_string()).map_err(|e| Error::from(e.within(field)))
}

/// A tensor format (a KV format: `q8_0`) in its canonical spelling, or the error naming `field`.
#[pyfunction]
pub(crate) fn parse_format(field: &str, text: &str) -> Result<String> {
    text.parse::<memwall_spec::QuantFormat>().map(|f| f.to_string()).map_err(|e| Error::from(e.within(field)))
}

/// A compute unit (`cpu`, `gpu`, `npu`) in its canonical spelling, or the error naming `field`.
#[pyfunction]
pub(crate) fn parse_backend(field: &str, text: &str) -> Result<String> {
    text.parse::<memwall_spec::Backend>().map(|b| b.to_string()).map_err(|e| Error::from(e.within(field)))
}

/// Bytes in a size (`2GB`, `500MB`, `4096`), or the error naming `field`.
#[pyfunction]
pub(crate) fn parse_bytes(field: &str, text: &str) -> Result<u64> {
    memwall_lab::parse_bytes(field, text).map_err(Error::from)
}

/// Seconds in a duration: a number, or a number with a unit `ms`, `s`, `m`, `h` (`10m`).
#[pyfunction]
pub(crate) fn parse_duration(text: &str) -> Result<f64> {
    memwall_lab::parse_duration(text).map_err(Error::from)
}

/// Names of the presets of a kind: `models`, `devices` or `engines`
/// ([`memwall_lab::report::presets()`]; the engines start with the generic profile).
#[pyfunction]
pub(crate) fn presets(py: Python<'_>, kind: &str) -> Result<Vec<String>> {
    let p = py.detach(|| memwall_lab::report::presets(Some(kind)))?;
    let names = p.models.into_iter().map(|m| m.name);
    Ok(names.chain(p.devices.into_iter().map(|d| d.name)).chain(p.engines.into_iter().map(|e| e.name)).collect())
}

/// The presets of `kind` (`models`, `devices` or `engines`) with their figures
/// ([`memwall_lab::report::presets`], the document `memwall presets --json` prints), as a JSON
/// list.
#[pyfunction]
pub(crate) fn preset_facts(py: Python<'_>, kind: &str) -> Result<String> {
    let p = py.detach(|| memwall_lab::report::presets(Some(kind)))?;
    let rows = match kind {
        "models" => serde_json::to_value(&p.models),
        "devices" => serde_json::to_value(&p.devices),
        _ => serde_json::to_value(&p.engines),
    };
    rows.map(|v| v.to_string()).map_err(|e| Error::from(memwall_spec::SpecError::invalid(kind, "rows", e.to_string())))
}

/// `; did you mean `x`?` for the `candidates` closest to `name`, or an empty string: the
/// rule every unknown name in memwall goes through ([`memwall_spec::suggest::did_you_mean`]),
/// for the names the Python layer checks itself.
#[pyfunction]
pub(crate) fn did_you_mean(name: &str, candidates: Vec<String>) -> String {
    memwall_spec::suggest::did_you_mean(name, candidates.iter().map(String::as_str))
}

/// The device database (chips with what their sheets state, whether memwall predicts them, and
/// the names users type), those matching `query` when given, as JSON rows
/// ([`memwall_lab::report::device_database`]).
#[pyfunction]
#[pyo3(signature = (query=None))]
pub(crate) fn device_database(py: Python<'_>, query: Option<&str>) -> Result<String> {
    let rows = py.detach(|| memwall_lab::report::device_database(query));
    serde_json::to_string(&rows)
        .map_err(|e| Error::from(memwall_spec::SpecError::invalid("devices", "rows", e.to_string())))
}
