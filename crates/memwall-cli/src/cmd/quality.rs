//! `memwall quality`: perplexity deltas estimated from measured quantization error (the
//! estimate is [`memwall_calib::quality_fit::estimate`]; this command parses and renders).

use anyhow::Result;
use clap::Args;
use memwall_calib::quality_fit::estimate;
use memwall_lab::{QualityTable, load_model};

use crate::print_table;

#[derive(Args)]
pub struct QualityArgs {
    /// The model whose tensors weight the mix errors (the published deltas are Llama-3-8B's).
    #[arg(long, default_value = "llama-3.1-8b")]
    model: String,
    /// Formats to estimate (`int3-g64`, `int4-pc`, ...), each by RTN, AWQ and GPTQ where
    /// they apply.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "int4-g128,int4-g64,int3-g64,int3-g128,int2-g32,int4-pc,int8-pc"
    )]
    formats: Vec<String>,
    /// Independent noise of the synthetic activations beside their 64 latent factors (unit
    /// variance each): the smaller, the more GPTQ gains over RTN. 0.7 makes GPTQ's ΔPPL 0.53×
    /// RTN's at W4 g128, as on Llama-2-7B (OmniQuant's table: 0.14 against 0.25); W4
    /// per-channel (0.56 published) and W3 g128 (0.69) then come out at 0.55 and 0.57.
    #[arg(long, default_value_t = 0.7)]
    act_noise: f64,
    /// Write every estimate (RTN, AWQ, GPTQ) as CSV here (the columns of
    /// `datasets/quality_estimated.csv`, which `memwall run` and `estimate` read for single
    /// formats without a published figure).
    #[arg(long)]
    write: Option<std::path::PathBuf>,
    /// Write the output error of every ggml type as CSV here (the columns of
    /// `datasets/format_errors.csv`, from which the quality lookup weighs overrides and a
    /// file's own per-tensor types).
    #[arg(long)]
    write_errors: Option<std::path::PathBuf>,
    /// Seed of the synthetic layer.
    #[arg(long, default_value_t = 1, value_parser = crate::whole::<u64>)]
    seed: u64,
}

pub fn quality(a: &QualityArgs) -> Result<()> {
    if !(a.act_noise.is_finite() && (0.0..=100.0).contains(&a.act_noise)) {
        anyhow::bail!("invalid `--act-noise` = {}: must be a number from 0 to 100", a.act_noise);
    }
    let outputs: Vec<(&str, &std::path::Path)> = [("--write", &a.write), ("--write-errors", &a.write_errors)]
        .into_iter()
        .filter_map(|(flag, p)| p.as_deref().map(|p| (flag, p)))
        .collect();
    memwall_lab::check_outputs(&[], &outputs)?;
    let model = load_model(&a.model)?;
    let r = estimate(&model, &QualityTable::default(), &a.formats, a.act_noise, a.seed)?;
    for (name, why) in &r.not_measured {
        eprintln!("{name}: not measured ({why})");
    }
    let lines: Vec<Vec<String>> = r
        .points
        .iter()
        .map(|p| {
            vec![
                p.mix.clone(),
                format!("{:.4}", p.err),
                format!("{:.4}", p.published),
                format!("{:.4}", p.fitted),
                format!("{:.4}", p.leave_one_out),
                format!("{:+.0}%", 100.0 * (p.leave_one_out / p.published - 1.0)),
            ]
        })
        .collect();
    let fit = &r.fit;
    println!(
        "fit: ln dPPL = {:.3} + {:.3} ln err over {} llama.cpp mixes of {} (residual sd {:.2} in ln)",
        fit.a, fit.b, fit.n, r.model, fit.sd
    );
    print_table(&["mix", "output err", "published dPPL", "fitted", "leave-one-out", "error"].map(String::from), &lines);
    let med = r.loo_median;
    println!("leave-one-out: median |ln(predicted/published)| {med:.2} (a factor of {:.2})\n", med.exp());
    let lines: Vec<Vec<String>> = r
        .estimates
        .iter()
        .map(|e| {
            vec![
                e.name.clone(),
                e.method.name().to_string(),
                format!("{:.2}", e.format.bits_per_weight()),
                format!("{:.4}", e.err),
                format!("{:.3}", e.dppl),
                format!("[{:.3}, {:.3}]", e.lo, e.hi),
            ]
        })
        .collect();
    println!(
        "estimates (synthetic layer 128 x 1024, heavy-tailed weights, 2% outlier input channels; seed {}):",
        a.seed
    );
    print_table(&["format", "method", "bits", "output err", "est. dPPL", "80% interval"].map(String::from), &lines);
    if let Some(path) = &a.write {
        memwall_lab::files::atomic::write_text(path, &r.estimates_csv())?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &a.write_errors {
        memwall_lab::files::atomic::write_text(path, &r.format_errors_csv())?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
