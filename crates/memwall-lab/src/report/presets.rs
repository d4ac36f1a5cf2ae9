//! The facts shown for a model, device or engine (`memwall presets`, the Python objects'
//! `info` and repr), and the preset tables.

use memwall_spec::{DeviceSpec, EngineSpec, ModelSpec, SpecError};
use serde::Serialize;

use crate::error::Result;

/// A model's main figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelFacts {
    /// Name.
    pub name: String,
    /// Layers.
    pub layers: u32,
    /// Hidden width.
    pub hidden: u64,
    /// Query heads.
    pub heads: u64,
    /// KV heads.
    pub kv_heads: u64,
    /// Width of a head.
    pub head_dim: u64,
    /// FFN width.
    pub ffn: u64,
    /// Vocabulary.
    pub vocab: u64,
    /// Parameters.
    pub params: u64,
    /// Parameters a token reads (a MoE's active experts only).
    pub active_params: u64,
    /// Each kind of token mixer with its layer count, in order of first appearance.
    pub layer_kinds: Vec<(String, u32)>,
    /// Sliding-window width, tokens.
    pub sliding_window: Option<u64>,
    /// Experts and experts per token, for a MoE.
    pub experts: Option<(u32, u32)>,
    /// Multi-head latent attention.
    pub mla: bool,
    /// Longest context the model was trained for, tokens.
    pub max_context: Option<u64>,
    /// The model file it was read from.
    pub file: Option<String>,
    /// Tensors the file stores.
    pub stored_tensors: Option<usize>,
}

impl ModelFacts {
    /// The facts of `m`.
    pub fn of(m: &ModelSpec) -> Self {
        let p = m.params();
        let mut layer_kinds: Vec<(String, u32)> = Vec::new();
        for k in m.layer_kinds() {
            let name = serde_json::to_value(k).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
            match layer_kinds.iter_mut().find(|(n, _)| *n == name) {
                Some((_, c)) => *c += 1,
                None => layer_kinds.push((name, 1)),
            }
        }
        ModelFacts {
            name: m.name.clone(),
            layers: m.n_layers,
            hidden: m.hidden,
            heads: m.n_heads,
            kv_heads: m.n_kv_heads,
            head_dim: m.head_dim(),
            ffn: m.ffn,
            vocab: m.vocab,
            params: p.total,
            active_params: p.active_per_token,
            layer_kinds,
            sliding_window: m.sliding_window,
            experts: m.moe.as_ref().map(|e| (e.n_experts, e.top_k)),
            mla: m.mla.is_some(),
            max_context: m.max_context,
            file: m.from_file.clone(),
            stored_tensors: m.stored.as_ref().map(|s| s.len()),
        }
    }
}

/// A device's main figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceFacts {
    /// Name.
    pub name: String,
    /// Device class.
    pub kind: Option<&'static str>,
    /// RAM, bytes.
    pub ram_bytes: u64,
    /// Operating system (stated, or the usual one of its kind).
    pub os: &'static str,
    /// What the OS leaves an app, bytes ([`DeviceSpec::available_bytes`]).
    pub available_bytes: u64,
    /// Peak DRAM bandwidth, GB/s.
    pub peak_gbps: f64,
    /// Share of the peak a CPU stream reaches (None: not stated, the CPU family's default
    /// applies with `assume_defaults`).
    pub achievable_fraction: Option<f64>,
    /// CPU cores.
    pub cores: u32,
    /// Cores of the fastest cluster.
    pub big_cores: u32,
    /// Top clock of the fastest cluster, GHz.
    pub max_ghz: f64,
    /// Whether the device states GPU figures.
    pub gpu: bool,
    /// Whether the device states NPU figures.
    pub npu: bool,
    /// Whether it has a thermal model.
    pub thermal: bool,
    /// How it is cooled.
    pub cooling: Option<&'static str>,
    /// Memory type.
    pub memory: String,
    /// Its power modes (`device@mode` picks one; the device's own figures are its fastest's).
    pub power_modes: Vec<String>,
}

impl DeviceFacts {
    /// The facts of `d`.
    pub fn of(d: &DeviceSpec) -> Self {
        let a = &d.accelerators;
        DeviceFacts {
            name: d.name.clone(),
            kind: d.kind.map(|k| k.name()),
            ram_bytes: d.memory.ram_bytes,
            os: d.os().name(),
            available_bytes: d.available_bytes(),
            peak_gbps: d.memory.peak_gbps(),
            achievable_fraction: d.memory.achievable_fraction,
            cores: d.total_cores(),
            big_cores: d.big_cores(),
            max_ghz: d.fastest_cluster().max_ghz,
            gpu: a.gpu_power_w.is_some() || a.gpu_bandwidth_fraction.is_some(),
            npu: a.npu_power_w.is_some() || a.npu_bandwidth_fraction.is_some(),
            thermal: d.thermal.is_some(),
            cooling: d.cooling.map(|c| c.name()),
            memory: d.memory.lpddr.to_string(),
            power_modes: d.power_mode_names().into_iter().map(String::from).collect(),
        }
    }
}

/// An engine profile's main facts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineFacts {
    /// Name.
    pub name: String,
    /// Compute units it has figures for.
    pub units: Vec<&'static str>,
    /// Other names it answers to.
    pub aliases: Vec<String>,
    /// What it is.
    pub description: String,
    /// The builds a dated profile describes ([`EngineSpec::version`]); absent for current
    /// builds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl EngineFacts {
    /// The facts of `e`.
    pub fn of(e: &EngineSpec) -> Self {
        let units = [("cpu", e.cpu.is_some()), ("gpu", e.gpu.is_some()), ("npu", e.npu.is_some())]
            .into_iter()
            .filter_map(|(n, has)| has.then_some(n))
            .collect();
        EngineFacts {
            name: e.name.clone(),
            units,
            aliases: e.aliases.clone(),
            description: e.description.clone(),
            version: e.version.clone(),
        }
    }
}

/// The presets memwall ships, of one kind or all.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Presets {
    /// Model presets.
    pub models: Vec<ModelFacts>,
    /// Device presets.
    pub devices: Vec<DeviceFacts>,
    /// Engine profiles (the generic one first).
    pub engines: Vec<EngineFacts>,
}

/// The presets of `kind` (`models`, `devices` or `engines`; all when None) with their facts.
pub fn presets(kind: Option<&str>) -> Result<Presets> {
    let kinds = ["models", "devices", "engines"];
    if let Some(k) = kind.filter(|k| !kinds.contains(k)) {
        return Err(SpecError::unknown("kind", "preset kind", k, kinds, "; expected models, devices or engines").into());
    }
    let want = |k: &str| kind.is_none_or(|w| w == k);
    let mut p = Presets::default();
    if want("models") {
        for (name, _) in crate::presets::MODELS {
            p.models.push(ModelFacts::of(&crate::load_model(name)?));
        }
    }
    if want("devices") {
        for (name, _) in crate::presets::DEVICES {
            p.devices.push(DeviceFacts::of(&crate::load_device(name)?));
        }
    }
    if want("engines") {
        p.engines.push(EngineFacts::of(&EngineSpec::generic()));
        for (name, _) in crate::presets::ENGINES {
            p.engines.push(EngineFacts::of(&crate::load_engine(name)?));
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_of_one_kind_carry_their_figures() {
        let p = presets(Some("models")).unwrap();
        assert!(p.devices.is_empty() && p.engines.is_empty());
        assert_eq!(p.models.len(), crate::presets::MODELS.len());
        let m = p.models.iter().find(|m| m.name == "llama-3.2-1b").unwrap();
        assert_eq!((m.layers, m.kv_heads, m.head_dim), (16, 8, 64));
        assert_eq!(m.layer_kinds, vec![("full".to_string(), 16)]);
        let moe = ModelFacts::of(&crate::load_model("qwen3-30b-a3b").unwrap());
        assert_eq!(moe.experts, Some((128, 8)));
        assert!(moe.active_params < moe.params / 5);
        let e = presets(Some("engines")).unwrap().engines;
        assert_eq!(e[0].name, EngineSpec::generic().name);
        assert_eq!(e.len(), crate::presets::ENGINES.len() + 1);
        // A dated profile says which builds it describes; the current one does not.
        let dated = e.iter().find(|f| f.name == "llama.cpp-2023-06").unwrap();
        assert!(dated.version.as_deref().is_some_and(|v| v.contains("June 2023")), "{dated:?}");
        assert!(e.iter().find(|f| f.name == "llama.cpp").unwrap().version.is_none());
    }

    #[test]
    fn an_unknown_kind_is_refused_with_a_suggestion() {
        let e = presets(Some("model")).unwrap_err().to_string();
        assert!(e.contains("`model`") && e.contains("models"), "{e}");
    }
}
