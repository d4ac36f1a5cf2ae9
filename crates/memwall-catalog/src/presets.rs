//! Presets shipped in `datasets/`, embedded at build time, and loading specs from files.

use std::path::Path;

use memwall_spec::{DeviceSpec, EngineSpec, ModelSpec, SpecError, from_toml};

use crate::error::{CatalogError, Result};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/presets.rs"));
}

pub use embedded::{
    DEVICE_DB_CHIPS, DEVICE_DB_NAMES, DEVICES, ENERGY_MEASUREMENTS_CSV, ENGINES, FORMAT_ERRORS_CSV,
    MODEL_BENCHMARKS_CSV, MODELS, QUALITY_BY_MODEL_CSV, QUALITY_ESTIMATED_CSV, QUANT_QUALITY_CSV,
    SUSTAINED_VALIDATION_CSV, VALIDATION_DECODE_CSV,
};

fn find<'a>(table: &'a [(&'a str, &'a str)], name: &str) -> Option<&'a str> {
    table.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, t)| *t)
}

fn unknown(what: &'static str, name: &str, table: &[(&str, &str)]) -> CatalogError {
    let mut names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
    if what == "engine" && !names.contains(&"generic") {
        names.insert(0, "generic");
    }
    let files = if what == "model" { "a path to a .toml, .gguf or config.json file" } else { "a path to a .toml file" };
    // A device may also be a chip of the database or a name users type (`Pixel 8`): the
    // closest of those is suggested too, though only the presets are listed.
    let mut close: Vec<&str> = names.clone();
    if what == "device" {
        close.extend(crate::device_db::chips().iter().map(|c| c.id.as_str()));
        close.extend(crate::device_db::names().iter().map(|r| r.name.as_str()));
    }
    CatalogError::Spec(SpecError::unknown(
        what,
        match what {
            "model" => "model preset",
            "device" => "device preset",
            _ => "engine profile",
        },
        name,
        close,
        format!(
            "; presets: {} (or {files}{})",
            names.join(", "),
            if what == "device" { ", or a chip or device name of `memwall devices`" } else { "" }
        ),
    ))
}

/// Where a `model`, `device` or `engine` name leads: a preset's text or a file.
enum Source {
    Preset(&'static str),
    File,
}

/// Whether the bare name `name` is also a file in the working directory, which the
/// resolution of a name weighs against a preset of that name (a folder is no spec file: a
/// downloaded model's folder may share a preset's name). A caller that keeps what a name
/// resolved to asks this again before using it.
pub fn names_a_file(name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    // Nothing there (the usual answer) takes one call; a link counts as what it points to,
    // and a dangling link as a file.
    match std::fs::symlink_metadata(name) {
        Err(_) => false,
        Ok(m) if m.file_type().is_symlink() => std::fs::metadata(name).map_or(true, |m| !m.is_dir()),
        Ok(m) => !m.is_dir(),
    }
}

/// What `name` names for `kind` (`model`, `device`, `engine`): a path (it has a separator or
/// ends in `.toml`) is a file; a bare name is the preset of that name (`preset`), or else a
/// file of that name in the working directory. A bare name that is both is refused, naming
/// both, rather than silently preferring one; a name that is neither is unknown, with the
/// closest presets suggested.
fn source(kind: &'static str, name: &str, preset: Option<&'static str>, table: &[(&str, &str)]) -> Result<Source> {
    if is_path(name) {
        return Ok(Source::File);
    }
    match (preset, names_a_file(name)) {
        (Some(_), true) => Err(CatalogError::Spec(SpecError::invalid(
            kind,
            name,
            format!(
                "is both {} and a file in the working directory; write `./{name}` for the file, or move the file \
                 away to use the preset",
                if kind == "engine" {
                    "an engine profile"
                } else if kind == "model" {
                    "a model preset"
                } else {
                    "a device preset"
                }
            ),
        ))),
        (Some(text), false) => Ok(Source::Preset(text)),
        (None, true) => Ok(Source::File),
        (None, false) => Err(unknown(kind, name, table)),
    }
}

/// Raw TOML text of an engine profile, by name or alias (`ollama` is llama.cpp; `generic` is
/// the fitted `generic.toml` where one ships); `None` for unknown names.
pub fn engine_text(name: &str) -> Option<&'static str> {
    find(ENGINES, name).or_else(|| {
        ENGINES
            .iter()
            .find(|(_, text)| from_toml::<EngineSpec>(text, "engine").is_ok_and(|e| e.answers_to(name)))
            .map(|(_, t)| *t)
    })
}

/// An engine by profile name, alias or `.toml` path, validated, its `[cpu]` table taken from
/// the engine its `cpu_from` names where it has none. `generic` is the shipped
/// `generic.toml` (the median of the profiled engines' figures), or the built-in engineering figures
/// ([`EngineSpec::generic`]) where none ships.
pub fn load_engine(name: &str) -> Result<EngineSpec> {
    let mut engine = load_engine_table(name)?;
    if engine.cpu.is_some() && engine.cpu_from.is_some() {
        return Err(SpecError::invalid(
            "cpu_from",
            engine.cpu_from.as_deref().unwrap_or_default(),
            "an engine with a [cpu] table of its own borrows none: remove one of the two",
        )
        .into());
    }
    if let Some(from) = engine.cpu_from.clone() {
        // One step only: the engine named lends its own [cpu] table, never one it borrows.
        let lender = load_engine_table(&from).map_err(|e| match e {
            CatalogError::Spec(e) => CatalogError::Spec(e.within("cpu_from")),
            other => other,
        })?;
        if lender.cpu.is_none() {
            return Err(SpecError::invalid("cpu_from", &from, "the engine named has no [cpu] table of its own").into());
        }
        // Its canonical name (an alias may name it), which a fit's parameters carry.
        engine.cpu_from = Some(lender.name);
        engine.cpu = lender.cpu;
    }
    Ok(engine)
}

/// An engine's profile as its file states it ([`load_engine`] without `cpu_from`).
fn load_engine_table(name: &str) -> Result<EngineSpec> {
    const GENERIC: &str = "";
    let preset = match engine_text(name) {
        None if name.eq_ignore_ascii_case("generic") => Some(GENERIC),
        found => found,
    };
    match source("engine", name, preset, ENGINES)? {
        Source::Preset(GENERIC) => Ok(EngineSpec::generic()),
        found => parse(name, "engine", found, EngineSpec::validate),
    }
}

/// An engine profile as named on a command line or from Python: a preset name (or alias) or a
/// TOML path, loaded and validated ([`load_engine`]).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineProfile(pub EngineSpec);

impl std::str::FromStr for EngineProfile {
    type Err = CatalogError;

    fn from_str(name: &str) -> Result<Self> {
        load_engine(name).map(EngineProfile)
    }
}

/// Raw TOML text of a model preset.
pub fn model_text(name: &str) -> Option<&'static str> {
    find(MODELS, name)
}

/// Raw TOML text of a device preset.
pub fn device_text(name: &str) -> Option<&'static str> {
    find(DEVICES, name)
}

pub(crate) fn is_path(name: &str) -> bool {
    name.ends_with(".toml") || name.contains('/') || name.contains('\\')
}

/// A model by preset name, `.toml` path, or model file (a `.gguf` header, whose tensors the
/// model keeps, or a Hugging Face `config.json`), validated.
pub fn load_model(name: &str) -> Result<ModelSpec> {
    if memwall_import::is_model_file(name) {
        return Ok(import_model(name)?.model);
    }
    load(name, "model", MODELS, ModelSpec::validate)
}

/// A model file read with what its mapping could not use ([`memwall_import::Imported`]); the
/// kind of file is told by its extension. The model remembers the file (`from_file`).
pub fn import_model(path: &str) -> Result<memwall_import::Imported> {
    match memwall_import::ModelFile::of_name(path) {
        Some(kind) => import_model_as(path, kind),
        None => Err(CatalogError::Import(Box::new(memwall_import::ImportError::Format { path: path.to_string() }))),
    }
}

/// The model file `path` read as `kind` whatever its name (`--gguf`, `--hf`): always a file,
/// never a preset, and registered as an input ([`crate::inputs`]).
pub fn import_model_as(path: &str, kind: memwall_import::ModelFile) -> Result<memwall_import::Imported> {
    let file = match kind {
        memwall_import::ModelFile::HfConfig => memwall_import::hf_config_file(Path::new(path)),
        memwall_import::ModelFile::Gguf => Path::new(path).to_path_buf(),
    };
    crate::inputs::record(&file)?;
    let mut imported =
        memwall_import::import_as(Path::new(path), kind).map_err(|e| CatalogError::Import(Box::new(e)))?;
    imported.model.from_file = Some(path.to_string());
    Ok(imported)
}

/// A device by preset name or `.toml` path, else from the device database by chip id (with
/// its RAM: `snapdragon-8-gen3-12gb`) or by a name users type (`Galaxy S24 Ultra`),
/// validated.
///
/// `name@mode` is the device under its power mode `mode` ([`DeviceSpec::with_power_mode`]:
/// `jetson-orin-nano-super-8gb@25W`), unless a file of that very name exists.
pub fn load_device(name: &str) -> Result<DeviceSpec> {
    if let Some((base, mode)) = power_mode_ref(name) {
        return load_device(base)?.with_power_mode(mode).map_err(|e| CatalogError::Spec(e.within("device")));
    }
    if find(DEVICES, name).is_none()
        && !is_path(name)
        && std::fs::symlink_metadata(name).is_err()
        && let Some((chip, ram)) = crate::device_db::lookup(name)
    {
        // A chip and RAM a preset describes is the preset (its figures are measured); a chip
        // named alone is its preset of the most RAM where it has one.
        let sizes = match ram {
            Some(gb) => vec![gb],
            None => chip.ram_sizes_gb(),
        };
        if let Some(preset) = sizes.iter().map(|gb| format!("{}-{gb}gb", chip.id)).find(|p| find(DEVICES, p).is_some())
        {
            return load(&preset, "device", DEVICES, DeviceSpec::validate);
        }
        let d = chip.device(ram).map_err(|e| CatalogError::Spec(e.within("device")))?;
        d.validate().map_err(|e| CatalogError::Spec(e.within("device")))?;
        return Ok(d);
    }
    load(name, "device", DEVICES, DeviceSpec::validate)
}

/// `name` as a device and its power mode (`jetson-orin-nano-super-8gb@25W`, `dev.toml@15W`;
/// an empty mode is one no device has), unless nothing precedes the last `@`, the mode looks
/// like a path, or a preset or file has that very name.
fn power_mode_ref(name: &str) -> Option<(&str, &str)> {
    let (base, mode) = name.rsplit_once('@')?;
    (!base.is_empty() && !is_path(mode) && find(DEVICES, name).is_none() && std::fs::symlink_metadata(name).is_err())
        .then_some((base, mode))
}

/// A spec by preset name or `.toml` path, validated; errors about a file's field name its line.
fn load<T: serde::de::DeserializeOwned + Clone + Send + Sync + 'static>(
    name: &str,
    kind: &'static str,
    table: &'static [(&'static str, &'static str)],
    validate: fn(&T) -> std::result::Result<(), SpecError>,
) -> Result<T> {
    parse(name, kind, source(kind, name, find(table, name), table)?, validate)
}

/// What `make` gives for the embedded preset `text`, made once per process and cloned after:
/// a preset's text never changes, so its parse (most of the cost of a one-design estimate)
/// need not be repeated. Keyed by the type made and the text's address; errors are not kept.
fn once_per_preset<T: Clone + Send + Sync + 'static>(
    text: &'static str,
    make: impl FnOnce() -> Result<T>,
) -> Result<T> {
    use std::any::{Any, TypeId};
    use std::collections::HashMap;
    type Made = HashMap<(TypeId, usize, usize), Box<dyn Any + Send + Sync>>;
    static MADE: std::sync::OnceLock<std::sync::Mutex<Made>> = std::sync::OnceLock::new();
    let key = (TypeId::of::<T>(), text.as_ptr() as usize, text.len());
    let made = MADE.get_or_init(Default::default);
    if let Some(v) = made.lock().unwrap_or_else(|e| e.into_inner()).get(&key).and_then(|b| b.downcast_ref::<T>()) {
        return Ok(v.clone());
    }
    let v = make()?;
    made.lock().unwrap_or_else(|e| e.into_inner()).insert(key, Box::new(v.clone()));
    Ok(v)
}

/// The spec `name` was resolved to (`found`, by [`source`]), read, parsed and validated (a
/// preset once per process, [`once_per_preset`]).
fn parse<T: serde::de::DeserializeOwned + Clone + Send + Sync + 'static>(
    name: &str,
    kind: &'static str,
    found: Source,
    validate: fn(&T) -> std::result::Result<(), SpecError>,
) -> Result<T> {
    if let Source::Preset(text) = found {
        return once_per_preset(text, || parse_text(kind, text, &format!("{kind} preset {name}"), validate));
    }
    parse_text(kind, &crate::inputs::read_text(Path::new(name))?, name, validate)
}

/// `text` (from `origin`) parsed as a spec of `kind` and validated; errors about a field name
/// its line.
fn parse_text<T: serde::de::DeserializeOwned>(
    kind: &'static str,
    text: &str,
    origin: &str,
    validate: fn(&T) -> std::result::Result<(), SpecError>,
) -> Result<T> {
    let spec: T = from_toml(text, origin)?;
    validate(&spec).map_err(|e| {
        let line = e.field().and_then(|f| crate::locate::line_of_field(text, f));
        let e = e.within(kind);
        match line {
            Some(line) => CatalogError::At { origin: origin.to_string(), line, error: Box::new(e) },
            None => CatalogError::Spec(e),
        }
    })?;
    Ok(spec)
}

/// Whether `v`, a scenario's `model`, `device` or `engine` entry, is resolved without opening
/// a file named in it: a table (an engine's only without `cpu_from`, which names another
/// profile), or a bare name, neither a path nor a model file. A bare name still leads to a
/// file where the working directory holds one of that name ([`names_a_file`]): a caller that
/// keeps a resolution asks that again, of every bare name involved, before each use.
pub fn resolves_inline_or_by_name(kind: &str, v: &toml::Value) -> bool {
    match v {
        toml::Value::Table(t) => kind != "engine" || !t.contains_key("cpu_from"),
        toml::Value::String(name) => !is_path(name) && !memwall_import::is_model_file(name),
        _ => false,
    }
}

/// Tensors of the GGUF files models were read from, by path.
pub type StoredByFile = std::collections::HashMap<String, std::sync::Arc<Vec<memwall_spec::StoredTensor>>>;

/// Resolve a `model`/`device`/`engine` entry of a scenario: a preset name or path becomes its
/// table; a GGUF model's tensors (which a table cannot hold) go into `stored` under its path.
pub fn resolve_value(kind: &str, v: &toml::Value, stored: &mut StoredByFile) -> Result<toml::Value> {
    let toml::Value::String(name) = v else { return Ok(v.clone()) };
    if kind == "engine" {
        let spec = load_engine(name)?;
        return toml::Value::try_from(&spec)
            .map_err(|e| CatalogError::Spec(SpecError::invalid("engine", name, e.to_string())));
    }
    if kind == "model" && memwall_import::is_model_file(name) {
        let model = load_model(name)?;
        if let Some(t) = &model.stored {
            stored.insert(name.clone(), t.clone());
        }
        return toml::Value::try_from(&model)
            .map_err(|e| CatalogError::Spec(SpecError::invalid("model", name, e.to_string())));
    }
    if kind == "device"
        && (power_mode_ref(name).is_some()
            || find(DEVICES, name).is_none()
                && !is_path(name)
                && std::fs::symlink_metadata(name).is_err()
                && crate::device_db::lookup(name).is_some())
    {
        // A device under a power mode, or a chip or a name of the device database: the
        // device it means, as a table.
        let d = load_device(name)?;
        return toml::Value::try_from(&d)
            .map_err(|e| CatalogError::Spec(SpecError::invalid("device", name, e.to_string())));
    }
    let (kind, table) = if kind == "model" { ("model", MODELS) } else { ("device", DEVICES) };
    let parsed: toml::Table = match source(kind, name, find(table, name), table)? {
        Source::File => from_toml(&crate::inputs::read_text(Path::new(name))?, name)?,
        Source::Preset(text) => once_per_preset(text, || Ok(from_toml(text, name)?))?,
    };
    Ok(toml::Value::Table(parsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_device_is_matched_against_presets_chips_and_the_names_users_type() {
        let e = load_device("pixl-8").unwrap_err().to_string();
        assert!(e.contains("did you mean `Pixel 8`?") && e.contains("raspberry-pi-5-16gb"), "{e}");
        let e = load_device("snapdragon-8-gen3-16g").unwrap_err().to_string();
        assert!(e.contains("did you mean `snapdragon-8-gen3-16gb`?"), "{e}");
        let e = load_model("qwen3-0.6").unwrap_err().to_string();
        assert!(e.contains("did you mean `qwen3-0.6b`?") && !e.contains("memwall devices"), "{e}");
    }

    #[test]
    fn a_jetson_runs_under_the_power_modes_nvpmodel_ships() {
        let maxn = load_device("jetson-orin-nano-super-8gb").unwrap();
        assert_eq!(maxn.power_mode_names(), ["15W", "25W", "MAXN_SUPER"]);
        let m25 = load_device("jetson-orin-nano-super-8gb@25W").unwrap();
        assert_eq!(m25.name, "jetson-orin-nano-super-8gb@25W");
        // 25W: A78AE cores at 1344 MHz, the GPU at 918 of 1020 MHz, DRAM at 6400 MT/s.
        assert!(m25.clusters.iter().all(|c| (c.max_ghz - 1.344).abs() < 1e-12));
        assert!((m25.gpu_fp16_tflops_at_clock().unwrap() - 16.7 * 0.9).abs() < 1e-9);
        assert_eq!(m25.memory.peak_gbps(), maxn.memory.peak_gbps());
        // 15W: EMC 2133 MHz = 4266 MT/s on 128 bits = 68.256 GB/s.
        let m15 = load_device("jetson-orin-nano-super-8gb@15W").unwrap();
        assert!((m15.memory.peak_gbps() - 68.256).abs() < 1e-9);
        // The mode's source travels with the device.
        assert!(m15.sources["power_mode"].contains("nvpmodel_p3767_0003_super.conf"));
        // A mode is applied once.
        let e = load_device("jetson-orin-nano-super-8gb@25W@15W").unwrap_err().to_string();
        assert!(e.contains("power_mode") && e.contains("lists no [[power_modes]]"), "{e}");
        // An empty mode is a mode no device has, not a name for the device database.
        let e = load_device("jetson-orin-nano-super-8gb@").unwrap_err().to_string();
        assert!(e.contains("power_mode") && e.contains("15W, 25W, MAXN_SUPER"), "{e}");
    }

    #[test]
    fn an_engine_without_a_cpu_table_borrows_the_one_it_names() {
        let hexagon = load_engine("llama.cpp-hexagon").unwrap();
        assert_eq!(hexagon.cpu_from.as_deref(), Some("llama.cpp"));
        assert_eq!(hexagon.cpu, load_engine("llama.cpp").unwrap().cpu);

        // The profile as written has none of its own.
        assert!(load_engine_table("llama.cpp-hexagon").unwrap().cpu.is_none());
        // A lender without a [cpu] table is refused, naming the field.
        let dir = std::env::temp_dir().join(format!("memwall-cpu-from-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let gpu_only = dir.join("gpu-only.toml");
        std::fs::write(&gpu_only, "name = \"gpu-only\"\n[gpu]\ncompute_efficiency = 0.4\nprefill_efficiency = 0.4\nper_token_s = 3e-4\nper_op_s = 4e-6\n").unwrap();
        let borrower = dir.join("borrower.toml");
        std::fs::write(
            &borrower,
            format!(
                "name = \"borrower\"\ncpu_from = {:?}\n[npu]\ncompute_efficiency = 0.4\nprefill_efficiency = 0.4\nper_token_s = 3e-4\nper_op_s = 4e-6\n",
                gpu_only.display().to_string()
            ),
        )
        .unwrap();
        let e = load_engine(borrower.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("cpu_from") && e.contains("no [cpu] table"), "{e}");
        // A table of its own and a borrowed one: refused.
        let both = dir.join("both.toml");
        std::fs::write(
            &both,
            format!(
                "{}[cpu]\ncompute_efficiency = 0.4\nprefill_efficiency = 0.4\nper_token_s = 3e-4\nper_op_s = 4e-6\n",
                std::fs::read_to_string(&borrower).unwrap().replace(&gpu_only.display().to_string(), "llama.cpp")
            ),
        )
        .unwrap();
        let e = load_engine(both.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("cpu_from") && e.contains("borrows none"), "{e}");
        // An engine that does not exist is refused under the field that names it.
        let unknown = dir.join("unknown.toml");
        std::fs::write(
            &unknown,
            engine_text("llama.cpp-hexagon").unwrap().replace("cpu_from = \"llama.cpp\"", "cpu_from = \"nope\""),
        )
        .unwrap();
        let e = load_engine(unknown.to_str().unwrap()).unwrap_err().to_string();
        assert!(e.contains("cpu_from") && e.contains("nope"), "{e}");
        // An alias is taken to the lender's own name, the one a fit's parameters carry.
        let alias = dir.join("alias.toml");
        let text =
            engine_text("llama.cpp-hexagon").unwrap().replace("cpu_from = \"llama.cpp\"", "cpu_from = \"ollama\"");
        std::fs::write(&alias, text).unwrap();
        assert_eq!(load_engine(alias.to_str().unwrap()).unwrap().cpu_from.as_deref(), Some("llama.cpp"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
