//! `memwall validate --devices`: leave-one-device-out error on the published rows.

use anyhow::Result;

use crate::print_table;

/// `memwall validate`.
pub(crate) fn validate(
    table: Option<&std::path::Path>,
    out: Option<&std::path::Path>,
    engines_dir: Option<&std::path::Path>,
) -> Result<()> {
    use memwall_calib::summarize;
    let rows = match table {
        Some(p) => memwall_io::validation::read_table(p)?,
        None => {
            memwall_io::validation::parse_table(memwall_io::presets::VALIDATION_DECODE_CSV, "validation_decode.csv")?
        }
    };
    let inputs: Vec<&std::path::Path> = table.into_iter().collect();
    let outputs: Vec<(&str, &std::path::Path)> =
        [("--out", out)].into_iter().filter_map(|(f, p)| Some((f, p?))).collect();
    memwall_io::check_outputs(&inputs, &outputs)?;
    eprintln!("validating {} rows (fitting every engine, then once per device left out)...", rows.len());
    let v = memwall_io::validation::validate(&rows)?;
    let header: Vec<String> =
        ["row", "device", "engine/unit", "model", "weights", "measured", "predicted", "error", "roofline", "error"]
            .map(String::from)
            .to_vec();
    let lines: Vec<Vec<String>> = v
        .validated
        .iter()
        .map(|r| {
            vec![
                r.id.clone(),
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
    let measured: Vec<f64> = v.validated.iter().map(|r| r.measured_tok_s).collect();
    let predicted: Vec<f64> = v.validated.iter().map(|r| r.predicted_tok_s).collect();
    let in_sample: Vec<f64> = v.validated.iter().map(|r| r.in_sample_tok_s).collect();
    let roofline: Vec<f64> = v.validated.iter().map(|r| r.roofline_tok_s).collect();
    let devices = v.validated.iter().map(|r| r.unit_device.clone()).collect::<std::collections::BTreeSet<_>>().len();
    println!(
        "\nleave-one-device-out over {} rows of {devices} devices ({} rows set aside); error = |predicted / measured - 1|",
        v.validated.len(),
        v.excluded.len()
    );
    for (title, key) in [
        ("by device class", v.validated.iter().map(|r| r.class.clone()).collect::<Vec<_>>()),
        ("by engine and unit", v.validated.iter().map(|r| format!("{}/{}", r.engine, r.backend)).collect()),
    ] {
        let cv = summarize(&predicted, &measured, &key);
        let roof = summarize(&roofline, &measured, &key);
        let ins = summarize(&in_sample, &measured, &key);
        let header: Vec<String> = [
            title,
            "rows",
            "median",
            "max",
            "within 15%",
            "bias",
            "roofline median",
            "roofline max",
            "in-sample median",
        ]
        .map(String::from)
        .to_vec();
        let lines: Vec<Vec<String>> = cv
            .iter()
            .zip(&roof)
            .zip(&ins)
            .map(|((c, r), i)| {
                vec![
                    c.group.clone(),
                    c.rows.to_string(),
                    format!("{:.1}%", 100.0 * c.median),
                    format!("{:.0}%", 100.0 * c.max),
                    format!("{:.0}%", 100.0 * c.within_15pct),
                    format!("{:.2}", c.bias),
                    format!("{:.1}%", 100.0 * r.median),
                    format!("{:.0}%", 100.0 * r.max),
                    format!("{:.1}%", 100.0 * i.median),
                ]
            })
            .collect();
        println!();
        print_table(&header, &lines);
    }
    if !v.excluded.is_empty() {
        println!("\nset aside:");
        for (id, why) in &v.excluded {
            println!("  {id}: {why}");
        }
    }
    if let Some(p) = out {
        let batch = memwall_io::columns::batch_of(memwall_io::validation::REPORT_COLUMNS, &v.validated)?;
        memwall_io::write_parquet(p, &batch, &memwall_io::metadata(None))?;
        println!("report: {} ({} rows)", p.display(), v.validated.len());
    }
    if let Some(dir) = engines_dir {
        for (name, text) in memwall_io::validation::fitted_engine_profiles(&v)? {
            let path = dir.join(format!("{name}.toml"));
            memwall_io::atomic::write_text(&path, &text)?;
            println!("engine profile: {}", path.display());
        }
    }
    Ok(())
}
