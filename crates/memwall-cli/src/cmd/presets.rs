//! `memwall presets`: the model, device and engine presets with their main figures.

use anyhow::Result;
use memwall_io::{load_device, load_model};
use memwall_spec::SpecError;
use memwall_spec::units::to_gb;

/// `memwall presets`.
pub(crate) fn presets(kind: Option<&str>) -> Result<()> {
    if !matches!(kind, None | Some("models") | Some("devices") | Some("engines")) {
        let kinds = ["models", "devices", "engines"];
        let kind = kind.unwrap_or_default();
        return Err(
            SpecError::unknown("kind", "preset kind", kind, kinds, "; expected models, devices or engines").into()
        );
    }
    if kind.is_none() || kind == Some("models") {
        println!(
            "{:<24} {:>8} {:>9} {:>7} {:>6}  {:<}",
            "model", "params", "active", "layers", "hidden", "layer kinds"
        );
        for (name, _) in memwall_io::presets::MODELS {
            let m = load_model(name)?;
            let p = m.params();
            let mut kinds: Vec<String> = Vec::new();
            for k in m.layer_kinds() {
                let k = format!("{k:?}").to_lowercase();
                if !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
            let extra = [m.moe.as_ref().map(|_| "moe"), m.mla.as_ref().map(|_| "mla")].into_iter().flatten();
            kinds.extend(extra.map(String::from));
            println!(
                "{:<24} {:>7.2}B {:>8.2}B {:>7} {:>6}  {}",
                name,
                p.total as f64 / 1e9,
                p.active_per_token as f64 / 1e9,
                m.n_layers,
                m.hidden,
                kinds.join("+")
            );
        }
    }
    if kind.is_none() {
        println!();
    }
    if kind.is_none() || kind == Some("devices") {
        println!("{:<28} {:>7} {:>9} {:>6} {:>8}  {:<}", "device", "RAM GB", "peak GB/s", "cores", "free GB", "memory");
        for (name, _) in memwall_io::presets::DEVICES {
            let d = load_device(name)?;
            println!(
                "{:<28} {:>7.1} {:>9.1} {:>6} {:>8.2}  {}",
                name,
                to_gb(d.memory.ram_bytes),
                d.memory.peak_gbps(),
                d.total_cores(),
                to_gb(d.memory.available_bytes()),
                d.memory.lpddr
            );
        }
    }
    if kind.is_none() {
        println!();
    }
    if kind.is_none() || kind == Some("engines") {
        println!("{:<20} {:<14} {:<36}  {:<}", "engine", "units", "also answers to", "description");
        let mut engines = vec![memwall_spec::EngineSpec::generic()];
        for (name, _) in memwall_io::presets::ENGINES {
            engines.push(memwall_io::load_engine(name)?);
        }
        for e in engines {
            let units: Vec<&str> = [("cpu", e.cpu.is_some()), ("gpu", e.gpu.is_some()), ("npu", e.npu.is_some())]
                .iter()
                .filter(|u| u.1)
                .map(|u| u.0)
                .collect();
            println!("{:<20} {:<14} {:<36}  {}", e.name, units.join(","), e.aliases.join(", "), e.description);
        }
    }
    Ok(())
}
