//! `memwall simulate`: an experiment's points through the discrete-event simulator.

use anyhow::Result;
use memwall_lab::Experiment;

use crate::{gb, print_table};

/// `memwall simulate`.
pub(crate) fn simulate(
    path: &std::path::Path,
    duration_s: Option<f64>,
    out: memwall_lab::Outputs,
    summary: Option<&std::path::Path>,
) -> Result<()> {
    let exp = Experiment::load(path)?;
    let outputs = [("--trace", out.trace), ("--summary", summary), ("--plot", out.plot)];
    memwall_lab::check_outputs(&[], &outputs.iter().filter_map(|&(flag, p)| Some((flag, p?))).collect::<Vec<_>>())?;
    let n = exp.len();
    eprintln!("{}: simulating {} design point{}", exp.name, n, if n == 1 { "" } else { "s" });
    // Progress in simulated seconds when the length is known, else per point.
    let horizon = duration_s.or_else(|| exp.point(0).ok().and_then(|p| p.scenario.sim.duration_s));
    let bar = indicatif::ProgressBar::new(n as u64 * 1000);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} point {msg}  {elapsed_precise} (eta {eta})")
            .expect("valid template"),
    );
    let results = memwall_lab::simulate_experiment(&exp, duration_s, out, &mut |i, t| {
        let frac = horizon.map_or(0.0, |h| (t / h).min(1.0));
        bar.set_position(i as u64 * 1000 + (frac * 1000.0) as u64);
        bar.set_message(format!("{}/{n}, t = {t:.0} s", i + 1));
    })?;
    bar.finish_and_clear();

    let axes: Vec<&memwall_lab::Axis> = exp.axes.iter().filter(|a| a.values.len() > 1).collect();
    let mut header: Vec<String> = axes.iter().map(|a| a.key.clone()).collect();
    header.extend(
        [
            "load s",
            "TTFT s",
            "burst tok/s",
            "sustained tok/s",
            "throttle at s",
            "-25% at s",
            "J/token",
            "J/reply",
            "battery %",
            "peak GB",
            "max die °C",
            "max skin °C",
            "OS status",
            "tokens",
            "killed at s",
            "actions",
        ]
        .map(String::from),
    );
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.1}"));
    let mut table = Vec::new();
    for r in &results {
        let mut line: Vec<String> = axes
            .iter()
            .map(|a| {
                let i = exp.axes.iter().position(|x| x.key == a.key).unwrap_or(0);
                a.display(r.point.choice[i])
            })
            .collect();
        let s = &r.summary;
        line.extend([
            format!("{:.1}", s.load_s),
            s.ttft_s.map_or("-".into(), |t| format!("{t:.2}")),
            format!("{:.2}", s.burst_tok_s),
            format!("{:.2}", s.sustained_tok_s),
            opt(s.throttle_onset_s),
            opt(s.time_to_minus_25pct_s),
            s.j_per_token.map_or("-".into(), |j| format!("{j:.3}")),
            opt(s.reply_energy_j),
            s.battery_pct.map_or("-".into(), |p| format!("{p:.2}")),
            gb(s.peak_resident_bytes),
            format!("{:.1}", s.max_die_c),
            format!("{:.1}", s.max_skin_c),
            s.max_thermal_status.name().to_string(),
            s.decode_tokens.to_string(),
            opt(s.killed_at_s),
            s.actions.len().to_string(),
        ]);
        table.push(line);
    }
    print_table(&header, &table);
    for r in results.iter().filter(|r| r.summary.decode_tokens == 0) {
        let s = &r.summary;
        let why = if s.ttft_s.is_none() {
            format!(
                "the run ended at {:.3} s, before the first prefill finished (load {:.3} s)",
                s.duration_s, s.load_s
            )
        } else {
            format!("the run ended at {:.3} s, after the prefill and before the first decode step", s.duration_s)
        };
        let killed = s.killed_at_s.map_or(String::new(), |k| format!("; killed at {k:.3} s"));
        println!(
            "\npoint {} produced no token: {why}{killed}; TTFT, the rates and J/token are unknown (`-`, null in \
             --summary)",
            r.point.index
        );
    }
    for r in results.iter().filter(|r| !r.summary.actions.is_empty()) {
        println!("\npoint {} ({}):", r.point.index, exp.describe(&r.point.choice));
        for a in &r.summary.actions {
            println!("  {a}");
        }
    }
    if let Some(t) = out.trace {
        let rows: u64 = results.iter().map(|r| r.summary.rows).sum();
        println!("\ntrace: {} ({rows} rows)", t.display());
    }
    if let Some(p) = out.plot {
        println!("plot: {}", p.display());
    }
    if let Some(p) = summary {
        let meta = memwall_lab::simulation_metadata(&exp, duration_s, results.iter().map(|r| &r.point.scenario));
        let mut table = memwall_lab::TableBuilder::summaries(&exp, results.len());
        for r in &results {
            table.append(&exp, r.point.index as u64, &r.point.scenario, &r.point.choice, &r.summary);
        }
        memwall_lab::write_parquet(p, &table.finish()?, &meta)?;
        println!("summary: {} ({} rows)", p.display(), results.len());
    }
    Ok(())
}
