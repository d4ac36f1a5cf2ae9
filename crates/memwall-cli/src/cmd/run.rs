//! `memwall run`: an experiment's grid swept into Parquet, its digest printed.

use std::path::PathBuf;

use anyhow::Result;
use memwall_lab::Experiment;
use memwall_spec::units::to_gb;

use crate::{gb, print_table, signed_gb};

/// What `memwall run` prints of a sweep.
struct Digest(memwall_lab::sweep::Digest);

impl Digest {
    fn print(&self, exp: &Experiment, out: &std::path::Path, margin_bytes: u64) {
        let d = &self.0;
        let axes: Vec<(usize, &memwall_lab::Axis)> =
            exp.axes.iter().enumerate().filter(|(_, a)| a.values.len() > 1).collect();
        let whole = d.complete();
        if whole {
            let mut header: Vec<String> = axes.iter().map(|(_, a)| a.key.clone()).collect();
            header.extend(["total GB", "fits", "headroom GB", "decode tok/s", "bound by", "dPPL w"].map(String::from));
            let lines: Vec<Vec<String>> = d
                .rows
                .iter()
                .map(|r| {
                    let choice = exp.choice(r.point as usize);
                    let mut line: Vec<String> = axes.iter().map(|(i, a)| a.display(choice[*i])).collect();
                    line.extend([
                        gb(r.total_bytes),
                        if r.fits { "yes".into() } else { "no".into() },
                        signed_gb(r.headroom_bytes),
                        format!("{:.2}", r.decode_tok_s),
                        r.binding.clone(),
                        match (r.ptq_unusable, r.ppl_delta_weights) {
                            (true, _) => "NOT USABLE".into(),
                            (false, v) => v.map_or("?".into(), |v| format!("{v:+.3}")),
                        },
                    ]);
                    line
                })
                .collect();
            print_table(&header, &lines);
        }
        println!("\n{} of {} designs fit with a {:.1} GB margin.", d.fitting, d.points, to_gb(margin_bytes));
        if d.fitting_unusable > 0 {
            println!(
                "{} of them store sub-2-bit weights of a model not trained for them (column ptq_unusable): \
                 post-training quantization that far destroys the model, so they are left out of the fastest \
                 and of the front.",
                d.fitting_unusable
            );
        }
        if d.beyond_max > 0 {
            println!(
                "{} designs have a context beyond the model's max_context (column context_beyond_max).",
                d.beyond_max
            );
        }
        let describe = |p: u64| exp.describe(&exp.choice(p as usize));
        if whole {
            if let Some(b) = d.best.first() {
                println!(
                    "fastest fitting design: {} ({:.2} tok/s, {} GB)",
                    describe(b.point),
                    b.decode_tok_s,
                    gb(b.total_bytes)
                );
            }
        } else {
            if !d.best.is_empty() {
                println!("fastest fitting designs:");
                for b in &d.best {
                    println!("  {:>10.2} tok/s  {:>8} GB  {}", b.decode_tok_s, gb(b.total_bytes), describe(b.point));
                }
            }
            println!("every design, with all inputs and metrics: {}", out.display());
        }
        print_fronts(&d.fronts, &describe);
        println!("results: {} ({} rows)", out.display(), d.points);
    }
}

/// Front members printed at most: of the one front, or of each group's.
const FRONT_SHOWN: usize = 12;
const GROUP_FRONT_SHOWN: usize = 3;
/// Groups printed at most.
const GROUPS_SHOWN: usize = 12;

/// One objective's value as a reader takes it.
fn show(o: &memwall_lab::pareto::Objective, v: f64) -> String {
    let c = o.column.as_str();
    if c.ends_with("_bytes") {
        format!("{:>8} GB", gb(v as u64))
    } else if c.ends_with("_tok_s") {
        format!("{v:>8.2} tok/s")
    } else if c == memwall_lab::pareto::PPL_DELTA {
        format!("dPPL {v:>+7.3}")
    } else if c == "energy_j_per_token" {
        format!("{v:>6.3} J/token")
    } else {
        format!("{c} {v:.4}")
    }
}

/// The fronts of a sweep: per group, its members (the smallest first), and what was left out.
fn print_fronts(f: &memwall_lab::pareto::Fronts, describe: &dyn Fn(u64) -> String) {
    let groups = f.groups();
    let rule = f.rule();
    let names: Vec<String> = rule.objectives.iter().map(|o| o.name()).collect();
    let per = if rule.by.is_empty() { String::new() } else { format!(", one per {}", rule.by.join(" × ")) };
    println!(
        "
Pareto front{per} (column `pareto`): the designs no other beats on {} at once",
        names.join(", ")
    );
    let shown = if rule.by.is_empty() { FRONT_SHOWN } else { GROUP_FRONT_SHOWN };
    for g in groups.iter().take(GROUPS_SHOWN) {
        let key: Vec<String> = g.key.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let head = if key.is_empty() { String::new() } else { format!("{}: ", key.join(" ")) };
        if g.fitting == 0 {
            println!("  {head}no eligible design (none fits, or none that fits is usable)");
            continue;
        }
        let mut notes = Vec::new();
        if !g.left_out.is_empty() {
            notes.push(format!(
                "drawn without {}: unknown for every design that fits (column quality_source)",
                g.left_out.join(", ")
            ));
        }
        if g.unknown > 0 {
            notes.push(format!("{} designs that fit not compared: an objective of theirs is unknown", g.unknown));
        }
        let notes = if notes.is_empty() { String::new() } else { format!("; {}", notes.join("; ")) };
        let more = if g.members.len() > shown { format!(", the {shown} smallest shown") } else { String::new() };
        println!("  {head}{} designs of {} that fit{more}{notes}", g.members.len(), g.fitting);
        for m in g.members.iter().take(shown) {
            let values: Vec<String> = g.objectives.iter().zip(&m.values).map(|(o, v)| show(o, *v)).collect();
            println!("    {}  {}", values.join("  "), describe(m.point));
        }
    }
    if groups.len() > GROUPS_SHOWN {
        println!("  ... and {} more groups (column `pareto`)", groups.len() - GROUPS_SHOWN);
    }
}

/// `memwall run`.
pub(crate) fn run(
    path: &std::path::Path,
    out: Option<PathBuf>,
    max_rows: usize,
    max_points: u64,
    plot: Option<(&std::path::Path, memwall_lab::plot::Size)>,
) -> Result<()> {
    // Loading reads every file the experiment names (each registered as an input).
    let exp = Experiment::load(path)?;
    let out = match out {
        Some(out) => out,
        None => memwall_lab::default_output(&exp.name, "parquet")?,
    };
    let mut outputs = vec![("--out", out.as_path())];
    if let Some((p, _)) = plot {
        memwall_lab::plot::Format::of("--plot", p)?;
        outputs.push(("--plot", p));
    }
    memwall_lab::check_outputs(&[], &outputs)?;
    let n = exp.len();
    if n as u64 > max_points {
        let sizes: Vec<String> = exp.axes.iter().map(|a| format!("{} ({})", a.key, a.values.len())).collect();
        anyhow::bail!(
            "the grid has {n} points ({}), more than `--max-points` = {max_points}; shrink the grid or raise \
             --max-points",
            sizes.join(" × ")
        );
    }
    eprintln!("{}: {} design points", exp.name, n);
    let sweep = memwall_lab::Sweep::new(&exp)?;
    let mut meta = memwall_lab::metadata(Some(&exp));
    meta.extend(sweep.resolved_metadata());
    let schema = memwall_lab::TableBuilder::estimates(&exp, 0).schema();
    let mut stream =
        memwall_lab::ParquetStream::create(&out, schema, &meta, memwall_lab::files::parquet::ROW_GROUP_ROWS)?;
    let bar = indicatif::ProgressBar::new(n as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} points  {elapsed_precise} (eta {eta})")
            .expect("valid template"),
    );
    let mut digest = memwall_lab::sweep::Digest::new(max_rows, exp.pareto.clone());
    // The plotted front members, whatever the sample: each row on a front when it arrived.
    let mut front_designs: std::collections::HashMap<u64, memwall_lab::plot::Design> = Default::default();
    // The scatter's designs: every point up to PLOT_POINTS, an even sample beyond.
    const PLOT_POINTS: u64 = 200_000;
    let stride = (n as u64).div_ceil(PLOT_POINTS).max(1);
    let mut designs: Vec<(u64, memwall_lab::plot::Design, i64)> = Vec::new();
    sweep
        .run(memwall_lab::sweep::BATCH_POINTS, &|done| bar.set_position(done), &mut |batches| {
            for b in &batches {
                stream.write(b)?;
                digest.observe(b)?;
                if plot.is_some() {
                    // One pass: the sample, and the rows on a front as they arrive.
                    let on = digest.fronts.points();
                    for (p, d, budget) in memwall_lab::plot::designs_of(b, 1)? {
                        if on.binary_search(&p).is_ok() {
                            front_designs.insert(p, d);
                        }
                        if p.is_multiple_of(stride) {
                            designs.push((p, d, budget));
                        }
                    }
                }
            }
            Ok(())
        })
        .map_err(|e| memwall_lab::locate::at_line(e, &exp.text, &path.display().to_string(), &["base."]))?;
    stream.finish_adding(memwall_lab::pareto::field(), memwall_lab::pareto::READS, &|b| digest.fronts.column(b))?;
    bar.finish_and_clear();
    if let Some((p, size)) = plot {
        // The front complete, whatever the sample; the budget drawn when every design has
        // the same one.
        let on: std::collections::HashSet<u64> = digest.fronts.points().into_iter().collect();
        let budget = memwall_lab::plot::shared_budget_gb(&designs);
        let mut all: Vec<memwall_lab::plot::Design> =
            designs.iter().filter(|d| !on.contains(&d.0)).map(|d| d.1).collect();
        // The front in point order, drawn last (as `memwall.plot_sweep` draws a table).
        let mut front: Vec<(&u64, &memwall_lab::plot::Design)> =
            front_designs.iter().filter(|(p, _)| on.contains(p)).collect();
        front.sort_by_key(|(p, _)| **p);
        all.extend(front.into_iter().map(|(_, d)| memwall_lab::plot::Design { pareto: true, ..*d }));
        let title = format!(
            "{}: memory vs decode rate, {} designs{}",
            exp.name,
            n,
            if stride > 1 { format!(" (1 in {stride} shown)") } else { String::new() }
        );
        memwall_lab::plot::write_scatter(p, &title, &all, budget, size)?;
    }
    if digest.beyond_max > 0 {
        eprintln!(
            "warning: {} of {n} designs have a context beyond their model's max_context (results assume the model \
             works there, e.g. with RoPE scaling)",
            digest.beyond_max
        );
    }
    let margin = exp.point(0).map(|p| p.scenario.workload.margin_bytes).unwrap_or(0);
    Digest(digest).print(&exp, &out, margin);
    Ok(())
}
