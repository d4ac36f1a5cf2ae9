//! `memwall validate --devices`: leave-one-device-out error of decode and prefill on the
//! published rows ([`memwall_lab::report::validate_devices`]); `memwall validate --energy`:
//! published power and energy per token ([`memwall_lab::report::validate_energy`]); `memwall
//! validate --sustained`: published sustained runs ([`memwall_lab::report::validate_sustained`]).

use anyhow::Result;

use crate::print_table;

/// `memwall validate`.
pub(crate) fn validate(
    table: Option<&std::path::Path>,
    out: Option<&std::path::Path>,
    engines_dir: Option<&std::path::Path>,
) -> Result<()> {
    let outputs = out_flag(out);
    eprintln!("validating the published rows (fitting every engine, then once per device left out)...");
    let r = memwall_lab::report::validate_devices(table, &outputs)?;
    let v = &r.validation;
    let header: Vec<String> = [
        "row",
        "phase",
        "device",
        "engine/unit",
        "model",
        "weights",
        "measured",
        "predicted",
        "error",
        "roofline",
        "error",
    ]
    .map(String::from)
    .to_vec();
    let rows = r.report_rows();
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.id.clone(),
                r.phase.name().to_string(),
                r.unit_device.clone(),
                format!("{}/{}", r.engine, r.backend),
                r.model.clone(),
                r.weights.clone(),
                format!("{:.2}", r.measured_tok_s),
                format!("{:.2}", r.predicted_tok_s),
                format!("{:+.0}%", 100.0 * (r.predicted_tok_s / r.measured_tok_s - 1.0)),
                format!("{:.2}", r.roofline_tok_s),
                format!("{:+.0}%", 100.0 * (r.roofline_tok_s / r.measured_tok_s - 1.0)),
            ]
        })
        .collect();
    print_table(&header, &lines);
    let prefill_rows = v.prefill.as_ref().map_or(0, |p| p.validated.len());
    println!(
        "\nleave-one-device-out over {} decode rows of {} devices and {prefill_rows} prefill rows ({} set aside); \
         error = |predicted / measured - 1|; prefill rows are predicted with the decode figures fitted without \
         their device and prefill figures fitted on the other devices' prefill rows; 80% covered = share of rows \
         inside the 10th-90th percentile of measured / predicted of the group's other devices (rows checked)",
        v.validated.len(),
        r.devices,
        v.excluded.len()
    );
    let mut tables = vec![
        ("decode by device class", &r.decode.by_class),
        ("decode by CPU family", &r.decode.by_family),
        ("decode by unit", &r.decode.by_unit),
        ("decode by engine and unit", &r.decode.by_engine),
    ];
    if let Some(p) = &r.prefill {
        tables.extend([
            ("prefill by device class", &p.by_class),
            ("prefill by CPU family", &p.by_family),
            ("prefill by unit", &p.by_unit),
            ("prefill by engine and unit", &p.by_engine),
        ]);
    }
    for (title, groups) in tables {
        let header: Vec<String> = [
            title,
            "rows",
            "median",
            "max",
            "within 15%",
            "bias",
            "80% covered",
            "roofline median",
            "roofline max",
            "in-sample median",
        ]
        .map(String::from)
        .to_vec();
        let lines: Vec<Vec<String>> = groups
            .iter()
            .map(|g| {
                let (c, r, i, k) = (&g.cross_validated, &g.roofline, &g.in_sample, &g.coverage);
                vec![
                    c.group.clone(),
                    c.rows.to_string(),
                    format!("{:.1}%", 100.0 * c.median),
                    format!("{:.0}%", 100.0 * c.max),
                    format!("{:.0}%", 100.0 * c.within_15pct),
                    format!("{:.2}", c.bias),
                    if k.checked == 0 { "-".into() } else { format!("{:.0}% ({})", 100.0 * k.share, k.checked) },
                    format!("{:.1}%", 100.0 * r.median),
                    format!("{:.0}%", 100.0 * r.max),
                    format!("{:.1}%", 100.0 * i.median),
                ]
            })
            .collect();
        println!();
        print_table(&header, &lines);
    }
    println!(
        "\ndecode cross-validated four ways: leave one physical device out (its preset's figures kept); leave one \
         SoC out, its device rebuilt from the spec sheet with its CPU family's and GPU vendor's bandwidth figures \
         computed without it (as a new user's device); leave one CPU family out whole; leave one engine out (its rows \
         predicted by the generic engine, the median of the figures fitted for the other engines, as an engine \
         without a profile). cov = \
         rows inside the 80% interval of measured / predicted formed from the other devices / SoCs / families / \
         engines of the group"
    );
    for (title, groups) in [
        ("by device class", &r.decode.by_class),
        ("by CPU family", &r.decode.by_family),
        ("by unit", &r.decode.by_unit),
        ("by engine and unit", &r.decode.by_engine),
    ] {
        let header: Vec<String> =
            [title, "rows", "device out", "cov", "SoC out (sheet)", "cov", "family out", "cov", "engine out", "cov"]
                .map(String::from)
                .to_vec();
        let cov = |k: &memwall_calib::Coverage| {
            if k.checked == 0 { "-".to_string() } else { format!("{:.0}% ({})", 100.0 * k.share, k.checked) }
        };
        let lines: Vec<Vec<String>> = groups
            .iter()
            .map(|g| {
                vec![
                    g.cross_validated.group.clone(),
                    g.cross_validated.rows.to_string(),
                    format!("{:.1}%", 100.0 * g.cross_validated.median),
                    cov(&g.coverage),
                    format!("{:.1}%", 100.0 * g.sheet.median),
                    cov(&g.sheet_coverage),
                    format!("{:.1}%", 100.0 * g.family.median),
                    cov(&g.family_coverage),
                    format!("{:.1}%", 100.0 * g.engine.median),
                    cov(&g.engine_coverage),
                ]
            })
            .collect();
        println!();
        print_table(&header, &lines);
    }
    print_set_aside(&v.excluded);
    write_report(out, memwall_lab::columns::REPORT_COLUMNS, &rows)?;
    if let Some(dir) = engines_dir {
        for (name, text) in memwall_calib::published::fitted_engine_profiles(v)? {
            let path = dir.join(format!("{name}.toml"));
            memwall_lab::files::atomic::write_text(&path, &text)?;
            println!("engine profile: {}", path.display());
        }
    }
    Ok(())
}

/// `memwall validate --energy`: published power and energy per token against memwall's, each
/// at the boundary its source measured ([`memwall_lab::report::validate_energy`]).
pub(crate) fn validate_energy(table: Option<&std::path::Path>, out: Option<&std::path::Path>) -> Result<()> {
    let outputs = out_flag(out);
    let r = memwall_lab::report::validate_energy(table, &outputs)?;
    let v = &r.validation;
    let header: Vec<String> = [
        "row",
        "device",
        "engine/unit",
        "model",
        "weights",
        "boundary",
        "window",
        "tok/s meas",
        "pred",
        "W meas",
        "pred",
        "error",
        "J/tok meas",
        "pred",
        "error",
    ]
    .map(String::from)
    .to_vec();
    let pct = |p: f64, m: f64| format!("{:+.0}%", 100.0 * (p / m - 1.0));
    let lines: Vec<Vec<String>> = v
        .checks
        .iter()
        .map(|c| {
            vec![
                c.id.clone(),
                c.unit_device.clone(),
                format!("{}/{}", c.engine, c.backend),
                c.model.clone(),
                c.weights.clone(),
                c.boundary.name().to_string(),
                c.window.name().to_string(),
                format!("{:.2}", c.measured_tok_s),
                format!("{:.2}", c.predicted_tok_s),
                match c.run_bound_w {
                    Some(b) => format!("<= {b:.2}"),
                    None => format!("{:.2}", c.measured_w),
                },
                format!("{:.2}", c.predicted_w),
                match c.run_bound_w {
                    Some(b) if c.predicted_w > b => format!(">= {}", pct(c.predicted_w, b)),
                    Some(_) => "-".into(),
                    None => pct(c.predicted_w, c.measured_w),
                },
                format!("{:.3}", c.measured_j_per_token),
                format!("{:.3}", c.predicted_j_per_token),
                pct(c.predicted_j_per_token, c.measured_j_per_token),
            ]
        })
        .collect();
    print_table(&header, &lines);
    println!(
        "\n{} published power rows of {} devices ({} set aside); no figure is fitted on them: unit, static and idle \
         power and DRAM energy come from the device presets. Each row is predicted at the boundary its source \
         measured: battery_above_idle = memwall's energy (units, static, DRAM); board = + idle power; package = \
         - DRAM; units = - static - DRAM. J/tok is per generated token over the window (a run's includes its \
         prompt), W its mean; a run_with_load window also holds the model's loading, which memwall does not model: \
         its J/tok counts the loading in the measurement only, and its W is bounded instead: the whole published \
         energy over the prompt and reply timed at the published rates (<= W; >= error: memwall above even that)",
        v.checks.len(),
        r.devices,
        v.excluded.len()
    );
    let header: Vec<String> = ["group", "rows", "W median", "W bias", "J/tok median", "J/tok bias", "tok/s median"]
        .map(String::from)
        .to_vec();
    // The power groups hold only the rows whose window compares power: matched by name.
    let lines: Vec<Vec<String>> = r
        .energy
        .iter()
        .zip(&r.rate)
        .map(|(j, t)| {
            let w = r.power.iter().find(|w| w.group == j.group && w.rows > 0);
            vec![
                j.group.clone(),
                j.rows.to_string(),
                w.map_or("-".into(), |w| format!("{:.1}% ({})", 100.0 * w.median, w.rows)),
                w.map_or("-".into(), |w| format!("{:.2}", w.bias)),
                format!("{:.1}%", 100.0 * j.median),
                format!("{:.2}", j.bias),
                format!("{:.1}%", 100.0 * t.median),
            ]
        })
        .collect();
    println!();
    print_table(&header, &lines);
    print_set_aside(&v.excluded);
    write_report(out, memwall_lab::columns::ENERGY_REPORT_COLUMNS, &v.checks)
}

/// `memwall validate --sustained`: published sustained runs simulated on the presets' thermal
/// networks or their class networks ([`memwall_lab::report::validate_sustained`]).
pub(crate) fn validate_sustained(table: Option<&std::path::Path>, out: Option<&std::path::Path>) -> Result<()> {
    let outputs = out_flag(out);
    let r = memwall_lab::report::validate_sustained(table, &outputs)?;
    let v = &r.validation;
    let header: Vec<String> = [
        "row",
        "device",
        "network",
        "engine/unit",
        "model",
        "first tok/s meas",
        "pred",
        "retained meas",
        "pred",
        "t-25% meas",
        "pred",
        "ended early",
        "pred",
        "max die meas",
        "pred",
        "status",
    ]
    .map(String::from)
    .to_vec();
    let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".to_string(), f);
    let lines: Vec<Vec<String>> = v
        .checks
        .iter()
        .map(|c| {
            vec![
                c.id.clone(),
                c.unit_device.clone(),
                c.network.clone(),
                format!("{}/{}", c.engine, c.backend),
                c.model.clone(),
                format!("{:.2}", c.measured_first_tok_s),
                format!("{:.2}", c.predicted_first_tok_s),
                c.retained.map_or("-".into(), |r| format!("{:.2} ({}-{})", r.measured, r.from, r.to)),
                opt(c.predicted_retained, &|x| format!("{x:.2}")),
                opt(c.measured_t25_s, &|x| format!("{x:.0} s")),
                opt(c.predicted_t25_s, &|x| format!("{x:.0} s")),
                if c.ended_early { "yes" } else { "no" }.into(),
                c.predicted_end_s.map_or("no".into(), |x| format!("yes, {x:.0} s")),
                c.measured_max_die_c.map_or("-".into(), |(lo, hi)| {
                    if lo == hi { format!("{lo:.0} °C") } else { format!("{lo:.0}-{hi:.0} °C") }
                }),
                format!("{:.0} °C", c.predicted_max_die_c),
                c.max_status.name().to_string(),
            ]
        })
        .collect();
    print_table(&header, &lines);
    let pp = r.retained_pp.0.map_or("-".into(), |x| format!("{x:.1} pp"));
    let t25 = r.t25_ratio.0.map_or("-".into(), |x| format!("x{x:.2}"));
    println!(
        "
{} published sustained runs simulated ({} set aside); no figure is fitted on them. Retained = the mean \
         rate of the iterations named over the first's; |error| median {pp} over {} rows; time to -25 % \
         (simulated / published) {t25} over the {} of {} rows that publish one where the simulation reaches it; \
         early end for heat agrees on {} of {}; hottest die within the published range on {} of {}. status = the \
         highest OS thermal status reached.",
        v.checks.len(),
        v.excluded.len(),
        r.retained_pp.1,
        r.t25_ratio.1,
        r.t25_ratio.2,
        r.ends_agree.0,
        r.ends_agree.1,
        r.die_within.0,
        r.die_within.1,
    );
    print_set_aside(&v.excluded);
    write_report(out, memwall_lab::columns::SUSTAINED_REPORT_COLUMNS, &v.checks)
}

/// The `--out` report as the (flag, path) a validation checks against its inputs.
fn out_flag(out: Option<&std::path::Path>) -> Vec<(&'static str, &std::path::Path)> {
    out.map(|p| ("--out", p)).into_iter().collect()
}

/// Print the rows a validation set aside, each with its reason.
fn print_set_aside(excluded: &[(String, String)]) {
    if !excluded.is_empty() {
        println!("\nset aside:");
        for (id, why) in excluded {
            println!("  {id}: {why}");
        }
    }
}

/// Write `rows` with the columns `defs` as the Parquet report `out`, when one is asked for.
fn write_report<R>(
    out: Option<&std::path::Path>,
    defs: &'static [memwall_lab::columns::Column<R>],
    rows: &[R],
) -> Result<()> {
    if let Some(p) = out {
        let batch = memwall_lab::columns::batch_of(defs, rows)?;
        memwall_lab::write_parquet(p, &batch, &memwall_lab::metadata(None))?;
        println!("report: {} ({} rows)", p.display(), rows.len());
    }
    Ok(())
}
