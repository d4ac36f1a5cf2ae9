//! `memwall compare`: two to eight designs side by side.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use clap::{Args, Parser};
use memwall_sim::Estimate;
use memwall_spec::Scenario;

use crate::{ScenarioArgs, json};

/// `memwall compare --design … --design …`.
#[derive(Args)]
pub struct CompareArgs {
    /// A design: `key=value` pairs separated by commas (`model=llama-3.1-8b,device=
    /// snapdragon-8-gen3-16gb,weights=Q4_K_M,kv=q8_0,context=8192`), or a TOML file of the
    /// same keys. Keys are the `estimate` flags without their dashes (model, gguf, hf, device,
    /// weights, kv, kv_k, kv_v, context, prompt, gen_tokens, grow, batch, threads, backend,
    /// engine, assume_defaults, margin_gb); a key a design leaves out is the first design's.
    /// Two to eight.
    #[arg(long = "design", required = true, num_args = 1)]
    designs: Vec<String>,
    /// Print one JSON document (the versioned schema in README.md) instead of the table.
    #[arg(long)]
    json: bool,
}

/// Parses one design's flags with the `estimate` parser (so every check is the same).
#[derive(Parser)]
#[command(name = "design", no_binary_name = true, allow_negative_numbers = true)]
struct One {
    #[command(flatten)]
    design: ScenarioArgs,
}

/// The keys of one design, from inline pairs or a TOML file.
fn keys(spec: &str, i: usize) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let path = std::path::Path::new(spec);
    if !spec.contains('=') && (path.extension().is_some_and(|e| e == "toml") || path.is_file()) {
        let text = memwall_lab::read_text(path).with_context(|| format!("reading design {} ({spec})", i + 1))?;
        let table: toml::Table =
            toml::from_str(&text).with_context(|| format!("design {} ({spec}) is not valid TOML", i + 1))?;
        for (k, v) in table {
            let v = match v {
                toml::Value::String(s) => s,
                toml::Value::Integer(n) => n.to_string(),
                toml::Value::Float(x) => x.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                other => anyhow::bail!(
                    "invalid `{k}` = {other} in design {} ({spec}): expected a string, number or boolean",
                    i + 1
                ),
            };
            out.insert(k, v);
        }
        return Ok(out);
    }
    for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((k, v)) = pair.split_once('=') else {
            anyhow::bail!("invalid design {} `{spec}`: `{pair}` is not key=value", i + 1);
        };
        let (k, v) = (k.trim().to_string(), v.trim().to_string());
        if let Some(first) = out.get(&k) {
            anyhow::bail!(
                "invalid design {} `{spec}`: `{k}` is given twice (`{k}={first}` and `{k}={v}`); a design sets each key once",
                i + 1
            );
        }
        out.insert(k, v);
    }
    Ok(out)
}

/// The keys a design takes: the `estimate` flags' long names, dashes as underscores.
fn design_keys() -> Vec<String> {
    use clap::CommandFactory;
    One::command().get_arguments().filter_map(|a| a.get_long()).map(|l| l.replace('-', "_")).collect()
}

/// The scenario of a design's keys.
fn scenario(keys: &BTreeMap<String, String>, i: usize) -> Result<Scenario> {
    let known = design_keys();
    if let Some(k) = keys.keys().find(|k| !known.contains(k)) {
        let hint = format!("; a design's keys are {}", known.join(", "));
        let e = memwall_spec::SpecError::unknown(
            format!("design {}", i + 1),
            "key",
            k.as_str(),
            known.iter().map(String::as_str),
            hint,
        );
        return Err(e.into());
    }
    let mut args: Vec<String> = Vec::new();
    for (k, v) in keys {
        let flag = format!("--{}", k.replace('_', "-"));
        match (k.as_str(), v.as_str()) {
            ("grow" | "assume_defaults", "true") => args.push(flag),
            ("grow" | "assume_defaults", "false") => {}
            _ => args.extend([flag, v.clone()]),
        }
    }
    let one = One::try_parse_from(&args).map_err(|e| {
        let msg = e.to_string();
        let first = msg.lines().next().unwrap_or_default().trim_start_matches("error: ").to_string();
        anyhow::anyhow!("design {}: {first}", i + 1)
    })?;
    one.design.scenario().with_context(|| format!("design {}", i + 1))
}

/// One metric row: its name and how to read it from a design.
type Metric = (&'static str, fn(&Estimate, &Quality) -> Value);
type Quality = memwall_lab::Quality;

/// A cell: a number (compared with the first design's) or text.
enum Value {
    Num(f64, usize),
    Text(String),
}

const GB: f64 = 1e9;

/// The rows of the comparison.
const METRICS: &[Metric] = &[
    ("weights GB", |e, _| Value::Num(e.weight_bytes as f64 / GB, 3)),
    ("KV cache GB", |e, _| Value::Num(e.kv_bytes as f64 / GB, 3)),
    ("state GB", |e, _| Value::Num(e.state_bytes as f64 / GB, 3)),
    ("compute buffers GB", |e, _| Value::Num(e.compute_bytes as f64 / GB, 3)),
    ("runtime GB", |e, _| Value::Num(e.overhead_bytes as f64 / GB, 3)),
    ("total GB", |e, _| Value::Num(e.total_bytes as f64 / GB, 3)),
    ("budget GB", |e, _| Value::Num(e.budget_bytes as f64 / GB, 3)),
    ("headroom GB", |e, _| Value::Num(e.headroom_bytes as f64 / GB, 3)),
    ("fits", |e, _| Value::Text(if e.fits { "yes".into() } else { "NO".into() })),
    ("decode tok/s", |e, _| Value::Num(e.decode_tok_s, 2)),
    ("decode depth tokens", |e, _| Value::Num(e.decode_depth_tokens as f64, 0)),
    ("decode bound by", |e, _| Value::Text(e.binding.name().into())),
    ("prefill tok/s", |e, _| Value::Num(e.prefill_tok_s, 1)),
    ("TTFT s", |e, _| Value::Num(e.ttft_s, 3)),
    ("J/token", |e, _| Value::Num(e.energy_j_per_token, 3)),
    ("J per reply", |e, _| Value::Num(e.reply_energy_j, 1)),
    ("battery mAh per reply", |e, _| e.battery_mah_per_reply.map_or(Value::Text("-".into()), |v| Value::Num(v, 2))),
    ("battery % per hour", |e, _| e.battery_pct_per_hour.map_or(Value::Text("-".into()), |v| Value::Num(v, 1))),
    ("weights bits/weight", |e, _| Value::Num(e.weight_bpw, 3)),
    ("GB read per token", |e, _| Value::Num(e.dram_bytes_per_token / GB, 3)),
    ("dPPL weights", |_, q| q.ppl_delta_weights.map_or(Value::Text("unknown".into()), |v| Value::Num(v, 4))),
    ("dPPL KV", |_, q| q.ppl_delta_kv.map_or(Value::Text("unknown".into()), |v| Value::Num(v, 4))),
    ("PPL increase %", |_, q| q.ppl_increase_pct().map_or(Value::Text("unknown".into()), |v| Value::Num(v, 2))),
    ("quality verdict", |_, q| Value::Text(q.verdict().into())),
];

/// Compare the designs ([`memwall_lab::report::compare()`]).
pub fn compare(a: &CompareArgs) -> Result<()> {
    let n = a.designs.len();
    if !memwall_lab::report::compare::DESIGNS.contains(&n) {
        anyhow::bail!("invalid `--design` given {n} times: compare two to eight designs");
    }
    let mut merged: Vec<BTreeMap<String, String>> = Vec::new();
    for (i, spec) in a.designs.iter().enumerate() {
        let mut k = merged.first().cloned().unwrap_or_default();
        k.extend(keys(spec, i)?);
        merged.push(k);
    }
    let scenarios = merged.iter().enumerate().map(|(i, k)| scenario(k, i)).collect::<Result<Vec<_>>>()?;
    let c = memwall_lab::report::compare(scenarios)?;
    if a.json {
        json::print("compare", memwall_lab::report::json(&c));
        return Ok(());
    }
    // Label each design by the keys in which it differs from the first.
    let labels: Vec<String> = merged
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let diff: Vec<String> = k
                .iter()
                .filter(|(key, v)| merged[0].get(*key) != Some(*v) || i == 0)
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            match (i, diff.is_empty()) {
                (0, _) => format!("1: {}", diff.join(" ")),
                (_, true) => format!("{}: the same as 1", i + 1),
                _ => format!("{}: {}", i + 1, diff.join(" ")),
            }
        })
        .collect();
    for l in &labels {
        println!("{l}");
    }
    let mut header = vec!["".to_string()];
    header.extend((1..=n).map(|i| i.to_string()));
    let lines: Vec<Vec<String>> = METRICS
        .iter()
        .map(|(name, f)| {
            let cell = |d: &memwall_lab::report::Compared| f(&d.report.estimate, &d.report.quality);
            let first = cell(&c.designs[0]);
            let mut line = vec![name.to_string()];
            for (i, d) in c.designs.iter().enumerate() {
                line.push(match (cell(d), &first) {
                    (Value::Num(v, d), Value::Num(v0, _)) if i > 0 => {
                        let rel =
                            if *v0 != 0.0 { format!(", {:+.0} %", 100.0 * (v - v0) / v0.abs()) } else { String::new() };
                        format!("{v:.d$} ({:+.d$}{rel})", v - v0)
                    }
                    (Value::Num(v, d), _) => format!("{v:.d$}"),
                    (Value::Text(t), _) => t,
                });
            }
            line
        })
        .collect();
    crate::print_table(&header, &lines);
    Ok(())
}
