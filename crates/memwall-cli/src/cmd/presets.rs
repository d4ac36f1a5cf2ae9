//! `memwall presets`: the model, device and engine presets with their main figures
//! ([`memwall_lab::report::presets()`]).

use anyhow::Result;
use memwall_spec::units::to_gb;

/// `memwall presets`, as tables or one JSON document.
pub(crate) fn presets(kind: Option<&str>, json: bool) -> Result<()> {
    let p = memwall_lab::report::presets(kind)?;
    if json {
        crate::json::print("presets", memwall_lab::report::json(&p));
        return Ok(());
    }
    let mut blocks = 0;
    let mut gap = || {
        if blocks > 0 {
            println!();
        }
        blocks += 1;
    };
    if !p.models.is_empty() {
        gap();
        println!(
            "{:<24} {:>8} {:>9} {:>7} {:>6}  {:<}",
            "model", "params", "active", "layers", "hidden", "layer kinds"
        );
        for m in &p.models {
            let mut kinds: Vec<&str> = m.layer_kinds.iter().map(|(k, _)| k.as_str()).collect();
            kinds.extend(m.experts.map(|_| "moe"));
            kinds.extend(m.mla.then_some("mla"));
            println!(
                "{:<24} {:>7.2}B {:>8.2}B {:>7} {:>6}  {}",
                m.name,
                m.params as f64 / 1e9,
                m.active_params as f64 / 1e9,
                m.layers,
                m.hidden,
                kinds.join("+")
            );
        }
    }
    if !p.devices.is_empty() {
        gap();
        println!("{:<28} {:>7} {:>9} {:>6} {:>8}  {:<}", "device", "RAM GB", "peak GB/s", "cores", "free GB", "memory");
        for d in &p.devices {
            let modes =
                if d.power_modes.is_empty() { String::new() } else { format!("  (@{})", d.power_modes.join(", @")) };
            println!(
                "{:<28} {:>7.1} {:>9.1} {:>6} {:>8.2}  {}{modes}",
                d.name,
                to_gb(d.ram_bytes),
                d.peak_gbps,
                d.cores,
                to_gb(d.available_bytes),
                d.memory
            );
        }
    }
    if !p.engines.is_empty() {
        gap();
        println!("{:<20} {:<14} {:<36}  {:<}", "engine", "units", "also answers to", "description");
        for e in &p.engines {
            println!("{:<20} {:<14} {:<36}  {}", e.name, e.units.join(","), e.aliases.join(", "), e.description);
        }
    }
    Ok(())
}

/// `memwall devices`: the device database, as a table or one JSON document.
pub(crate) fn devices(query: Option<&str>, json: bool) -> Result<()> {
    let rows = memwall_lab::report::device_database(query);
    if json {
        crate::json::print("devices", serde_json::json!({ "devices": memwall_lab::report::json(&rows) }));
        return Ok(());
    }
    println!(
        "{:<28} {:<8} {:<8} {:>9} {:>6} {:>10}  {:<}",
        "chip", "kind", "os", "peak GB/s", "cores", "RAM GB", "names / why not predictable"
    );
    for r in &rows {
        let peak = r.peak_gbps.map_or("-".to_string(), |p| format!("{p:.1}"));
        let note = if r.predictable { r.names.replace(';', ", ") } else { format!("NOT PREDICTABLE: {}", r.why_not) };
        println!("{:<28} {:<8} {:<8} {:>9} {:>6} {:>10}  {}", r.id, r.kind, r.os, peak, r.cores, r.ram_gb, note);
    }
    println!(
        "\n{} chips ({} predictable from their sheet); a device is `<chip>-<N>gb`, a chip alone (its preset, else its largest RAM \
         option) or a name above",
        rows.len(),
        rows.iter().filter(|r| r.predictable).count()
    );
    Ok(())
}
