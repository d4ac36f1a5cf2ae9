//! `memwall calibrate` on this machine: probe, fit, write the profiles.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use memwall_calib::host::Plan;
use memwall_calib::hostfit::{calibrate_host, measurements_csv};

use crate::print_table;

/// The paths beside a host profile `out`: its engine profile and raw measurements.
fn beside(out: &Path, suffix: &str) -> PathBuf {
    memwall_io::beside(out, suffix, "host")
}

pub fn host(out: &Path, engine_out: Option<&Path>, quick: bool, threads: Option<usize>) -> Result<()> {
    let engine_out = engine_out.map_or_else(|| beside(out, ".engine.toml"), Path::to_path_buf);
    let raw_out = beside(out, ".measurements.csv");
    memwall_io::check_outputs(&[], &[("--out", out), ("--engine-out", &engine_out), ("measurements", &raw_out)])?;
    let name = out.file_stem().map_or_else(|| "host".into(), |s| s.to_string_lossy().into_owned());
    let plan = Plan::new(quick, threads, "--threads")?;
    let start = std::time::Instant::now();
    let mut progress = |line: &str| eprintln!("[{:6.1} s] {line}", start.elapsed().as_secs_f64());
    let p = calibrate_host(&name, plan, &mut progress)?;
    let header: Vec<String> = ["figure", "value", "95% interval", "from"].map(String::from).to_vec();
    let lines: Vec<Vec<String>> = p
        .fitted
        .iter()
        .map(|f| {
            vec![f.field.clone(), format!("{:.4e}", f.value), format!("[{:.4e}, {:.4e}]", f.lo, f.hi), f.how.clone()]
        })
        .collect();
    print_table(&header, &lines);
    let device_toml = toml::to_string(&p.device).context("serializing the host device")?;
    let engine_toml = toml::to_string(&p.engine).context("serializing the host engine")?;
    memwall_io::atomic::write_text(out, &device_toml)?;
    memwall_io::atomic::write_text(&engine_out, &engine_toml)?;
    memwall_io::atomic::write_text(&raw_out, &measurements_csv(&p.measurements))?;
    println!(
        "\n{} in {:.0} s: device {}, engine {} ({}), raw measurements {}",
        p.info.cpu_model,
        start.elapsed().as_secs_f64(),
        out.display(),
        engine_out.display(),
        p.engine.name,
        raw_out.display()
    );
    println!("check it: memwall validate --host {}", out.display());
    Ok(())
}

/// `memwall validate --host`: run the designs, print predicted against measured, the median
/// and maximum absolute error, and write the report.
pub fn validate_host(host: &Path, tokens: usize, only: Option<&str>, out: Option<&Path>) -> Result<()> {
    use memwall_calib::hostval::{HOST_CONFIGS, profile_of, validate_host};
    let engine_path = beside(host, ".engine.toml");
    let outputs: Vec<(&str, &Path)> = out.map(|p| ("--out", p)).into_iter().collect();
    memwall_io::check_outputs(&[host, &engine_path], &outputs)?;
    if tokens == 0 {
        anyhow::bail!("invalid `--tokens` = 0: time at least one token");
    }
    let device = memwall_io::load_device(&host.display().to_string())?;
    let engine = memwall_io::load_engine(&engine_path.display().to_string())
        .with_context(|| format!("the engine profile beside the host profile, {}", engine_path.display()))?;
    let p = profile_of(device, engine);
    let configs: Vec<_> = HOST_CONFIGS.iter().filter(|c| only.is_none_or(|o| c.id.contains(o))).cloned().collect();
    if configs.is_empty() {
        anyhow::bail!("no design id contains `{}`", only.unwrap_or_default());
    }
    eprintln!("running {} designs on {} ({})...", configs.len(), p.device.name, p.info.cpu_model);
    let load = |name: &str| memwall_io::load_model(name).map_err(|e| e.to_string());
    let pct = |e: f64| format!("{:+.1}%", 100.0 * e);
    let rows = validate_host(&p, &configs, &load, tokens, &mut |r, t| {
        eprintln!(
            "[{t:6.1} s] {:<18} measured {:8.2} tok/s, estimated {:8.2} ({}), simulated {:8.2} ({})",
            r.id,
            r.measured_tok_s,
            r.estimated_tok_s,
            pct(r.error()),
            r.simulated_tok_s,
            pct(r.sim_error())
        )
    })?;
    let header: Vec<String> = [
        "design",
        "covers",
        "weights",
        "kv",
        "ctx",
        "thr",
        "GB",
        "measured",
        "estimated",
        "error",
        "simulated",
        "error",
        "binds",
    ]
    .map(String::from)
    .to_vec();
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.id.clone(),
                r.what.clone(),
                r.weights.clone(),
                r.kv.clone(),
                r.context.to_string(),
                r.threads.to_string(),
                format!("{:.3}", r.weight_bytes as f64 / 1e9),
                format!("{:.2}", r.measured_tok_s),
                format!("{:.2}", r.estimated_tok_s),
                pct(r.error()),
                format!("{:.2}", r.simulated_tok_s),
                pct(r.sim_error()),
                r.binding.clone(),
            ]
        })
        .collect();
    print_table(&header, &lines);
    let mut abs: Vec<f64> = rows.iter().map(|r| r.error().abs()).collect();
    abs.sort_by(f64::total_cmp);
    let median =
        if abs.len() % 2 == 1 { abs[abs.len() / 2] } else { (abs[abs.len() / 2 - 1] + abs[abs.len() / 2]) / 2.0 };
    let max = abs.last().copied().unwrap_or(f64::NAN);
    let sim_max = rows.iter().map(|r| r.sim_error().abs()).fold(0.0, f64::max);
    println!(
        "
{} designs: median absolute error {:.1}%, max {:.1}% (simulator max {:.1}%); targets 5% and 12%",
        rows.len(),
        100.0 * median,
        100.0 * max,
        100.0 * sim_max
    );
    if let Some(path) = out {
        let batch = memwall_io::columns::batch_of(memwall_io::validation::HOST_REPORT_COLUMNS, &rows)?;
        let mut meta = memwall_io::metadata(None);
        meta.push(("host_profile".into(), toml::to_string(&p.device).unwrap_or_default()));
        memwall_io::write_parquet(path, &batch, &meta)?;
        println!("report: {} ({} rows)", path.display(), rows.len());
    }
    Ok(())
}

/// `memwall calibrate --from-llama-bench`: fit a device and an engine profile to llama-bench
/// rows of a model on it, print each row before and after, write both profiles.
pub(crate) fn from_llama_bench(
    file: &std::path::Path,
    device: &str,
    model: &str,
    engine: &str,
    out: &std::path::Path,
    engine_out: Option<&std::path::Path>,
) -> Result<()> {
    let engine_out =
        engine_out.map_or_else(|| memwall_io::beside(out, ".engine.toml", "device"), std::path::Path::to_path_buf);
    // Every input is read (and registered) before the outputs are checked against them.
    let text = memwall_io::read_text(file)?;
    let (model, device, engine) =
        (memwall_io::load_model(model)?, memwall_io::load_device(device)?, memwall_io::load_engine(engine)?);
    memwall_io::check_outputs(&[], &[("--out", out), ("--engine-out", &engine_out)])?;
    let rows = memwall_io::llama_bench::parse(&text, &file.display().to_string())?;
    let c = memwall_io::llama_bench::calibrate(&rows, &model, &device, &engine)?;
    let header: Vec<String> = ["line", "depth", "threads", "measured tok/s", "before", "error", "calibrated", "error"]
        .map(String::from)
        .to_vec();
    let pct = |p: f64, m: f64| format!("{:+.1}%", 100.0 * (p / m - 1.0));
    let lines: Vec<Vec<String>> = c
        .residuals
        .iter()
        .map(|r| {
            vec![
                r.line.to_string(),
                r.depth.to_string(),
                r.threads.map_or("-".into(), |t| t.to_string()),
                format!("{:.2}", r.measured_tok_s),
                format!("{:.2}", r.before_tok_s),
                pct(r.before_tok_s, r.measured_tok_s),
                format!("{:.2}", r.calibrated_tok_s),
                pct(r.calibrated_tok_s, r.measured_tok_s),
            ]
        })
        .collect();
    print_table(&header, &lines);
    let device_toml = toml::to_string(&c.device).context("serializing the calibrated device")?;
    let engine_toml = toml::to_string(&c.engine).context("serializing the calibrated engine")?;
    memwall_io::atomic::write_text(out, &device_toml)?;
    memwall_io::atomic::write_text(&engine_out, &engine_toml)?;
    println!("\ndevice: {} ({})\nengine: {} ({})", out.display(), c.device.name, engine_out.display(), c.engine.name);
    println!(
        "use them together: memwall estimate --device {} --engine {} --model ...",
        out.display(),
        engine_out.display()
    );
    Ok(())
}
