//! `memwall calibrate` on this machine: probe, fit, write the profiles.

use std::path::{Path, PathBuf};

use anyhow::Result;
use memwall_calib::host::Plan;
use memwall_calib::hostfit::{calibrate_host, measurements_csv};

use crate::print_table;

/// The paths beside a host profile `out`: its engine profile and raw measurements.
fn beside(out: &Path, suffix: &str) -> PathBuf {
    memwall_lab::beside(out, suffix, "host")
}

/// `memwall calibrate` ([`memwall_calib::hostfit::calibrate_host`]): probe this machine, fit,
/// write the device, engine and measurement files.
pub fn host(out: &Path, engine_out: Option<&Path>, quick: bool, threads: Option<usize>) -> Result<()> {
    let engine_out = engine_out.map_or_else(|| beside(out, ".engine.toml"), Path::to_path_buf);
    let raw_out = beside(out, ".measurements.csv");
    memwall_lab::check_outputs(&[], &[("--out", out), ("--engine-out", &engine_out), ("measurements", &raw_out)])?;
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
    let (device_toml, engine_toml) = memwall_lab::report::profile_texts(&p.device, &p.engine)?;
    memwall_lab::files::atomic::write_text(out, &device_toml)?;
    memwall_lab::files::atomic::write_text(&engine_out, &engine_toml)?;
    memwall_lab::files::atomic::write_text(&raw_out, &measurements_csv(&p.measurements))?;
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

/// `memwall validate --host` ([`memwall_lab::report::validate_host`]): run the designs, print
/// predicted against measured, the median and maximum absolute error, and write the report.
pub fn validate_host(host: &Path, tokens: usize, repeats: usize, only: Option<&str>, out: Option<&Path>) -> Result<()> {
    let outputs: Vec<(&str, &Path)> = out.map(|p| ("--out", p)).into_iter().collect();
    eprintln!(
        "running the host-validation designs on this machine, {repeats} interleaved run(s) of {tokens} tokens each..."
    );
    let pct = |e: f64| format!("{:+.1}%", 100.0 * e);
    let noise = |n: f64| if n.is_nan() { "n/a".to_string() } else { format!("±{:.1}%", 100.0 * n) };
    let v = memwall_lab::report::validate_host(host, tokens, repeats, only, &outputs, &mut |r, t| {
        eprintln!(
            "[{t:6.1} s] {:<18} measured {:8.2} tok/s {}, estimated {:8.2} ({}), simulated {:8.2} ({})",
            r.id,
            r.measured_tok_s,
            noise(r.noise()),
            r.estimated_tok_s,
            pct(r.error()),
            r.simulated_tok_s,
            pct(r.sim_error())
        )
    })?;
    let rows = &v.rows;
    let header: Vec<String> = [
        "design",
        "covers",
        "weights",
        "kv",
        "ctx",
        "thr",
        "GB",
        "measured",
        "noise",
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
                noise(r.noise()),
                format!("{:.2}", r.estimated_tok_s),
                pct(r.error()),
                format!("{:.2}", r.simulated_tok_s),
                pct(r.sim_error()),
                r.binding.clone(),
            ]
        })
        .collect();
    print_table(&header, &lines);
    println!(
        "\n{} designs on {} ({}): median absolute error {:.1}%, max {:.1}% (simulator max {:.1}%); targets 5% and 12%",
        rows.len(),
        v.profile.device.name,
        v.profile.info.cpu_model,
        100.0 * v.median_abs_error,
        100.0 * v.max_abs_error,
        100.0 * v.sim_max_abs_error
    );
    // The protocol's own targets: an error the noise cannot explain, and on quiet rows 5 %.
    if v.median_noise.is_nan() {
        println!("run-to-run noise: not measured (one run a design; --repeats 2 or more measures it)");
        return write_host_report(out, &v);
    }
    let within = v.median_abs_error <= 1.5 * v.median_noise;
    println!(
        "run-to-run noise: median ±{:.1}% over {repeats} run(s); median |error| {} 1.5 × the noise{}",
        100.0 * v.median_noise,
        if within { "within" } else { "beyond" },
        match v.quiet_median_abs_error {
            Some(e) => format!(
                "; on the {} row(s) with noise under 3 %: median |error| {:.1}% (target 5%)",
                v.quiet_rows,
                100.0 * e
            ),
            None => "; no row was measured with noise under 3 %".into(),
        }
    );
    write_host_report(out, &v)
}

/// Write the `validate --host` report as Parquet when `--out` asks for it.
fn write_host_report(out: Option<&Path>, v: &memwall_lab::report::HostValidation) -> Result<()> {
    if let Some(path) = out {
        let batch = memwall_lab::columns::batch_of(memwall_lab::columns::HOST_REPORT_COLUMNS, &v.rows)?;
        memwall_lab::write_parquet(path, &batch, &v.metadata())?;
        println!("report: {} ({} rows)", path.display(), v.rows.len());
    }
    Ok(())
}

/// `memwall calibrate --from-llama-bench` ([`memwall_lab::report::calibrate_llama_bench`]): fit
/// a device and an engine profile to llama-bench rows of a model on it, print each row before
/// and after, write both profiles.
pub(crate) fn from_llama_bench(
    file: &std::path::Path,
    device: &str,
    model: &str,
    engine: &str,
    out: &std::path::Path,
    engine_out: Option<&std::path::Path>,
) -> Result<()> {
    let engine_out =
        engine_out.map_or_else(|| memwall_lab::beside(out, ".engine.toml", "device"), std::path::Path::to_path_buf);
    let c = memwall_lab::report::calibrate_llama_bench(
        file,
        model,
        device,
        engine,
        &[("--out", out), ("--engine-out", &engine_out)],
    )?;
    let header: Vec<String> =
        ["line", "test", "depth", "threads", "measured tok/s", "before", "error", "calibrated", "error"]
            .map(String::from)
            .to_vec();
    let pct = |p: f64, m: f64| format!("{:+.1}%", 100.0 * (p / m - 1.0));
    let lines: Vec<Vec<String>> = c
        .residuals
        .iter()
        .map(|r| {
            vec![
                r.line.to_string(),
                match r.phase {
                    memwall_calib::Phase::Decode => "tg".to_string(),
                    memwall_calib::Phase::Prefill => format!("pp{}", r.prompt),
                },
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
    for what in &c.not_fitted {
        println!("not fitted: {what}");
    }
    let (device_toml, engine_toml) = memwall_lab::report::profile_texts(&c.device, &c.engine)?;
    memwall_lab::files::atomic::write_text(out, &device_toml)?;
    memwall_lab::files::atomic::write_text(&engine_out, &engine_toml)?;
    println!("\ndevice: {} ({})\nengine: {} ({})", out.display(), c.device.name, engine_out.display(), c.engine.name);
    println!(
        "use them together: memwall estimate --device {} --engine {} --model ...",
        out.display(),
        engine_out.display()
    );
    Ok(())
}
