//! `memwall quality`: perplexity deltas estimated from measured quantization error.

use std::collections::BTreeMap;

use anyhow::Result;
use clap::Args;
use memwall_calib::quality::{Method, QualityFit, format_error, mix_error, synthetic_layer};
use memwall_io::{QualityTable, load_model};
use memwall_spec::{FileType, KvQuant, Mix, QuantFormat, WeightQuant};

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
    /// Seed of the synthetic layer.
    #[arg(long, default_value_t = 1, value_parser = crate::whole::<u64>)]
    seed: u64,
}

pub fn quality(a: &QualityArgs) -> Result<()> {
    if !(a.act_noise.is_finite() && (0.0..=100.0).contains(&a.act_noise)) {
        anyhow::bail!("invalid `--act-noise` = {}: must be a number from 0 to 100", a.act_noise);
    }
    if let Some(path) = &a.write {
        memwall_io::check_outputs(&[], &[("--write", path.as_path())])?;
    }
    let model = load_model(&a.model)?;
    let table = QualityTable::default();
    let layer = synthetic_layer(128, 1024, 2048, a.act_noise, a.seed);
    let mut rtn_errors: BTreeMap<QuantFormat, f64> = BTreeMap::new();
    let mut measure = |f: QuantFormat| format_error(&layer, f, Method::Rtn);
    // Fit points: llama.cpp file types with a published delta (no imatrix).
    let mut points = Vec::new();
    for ft in FileType::ALL {
        if matches!(ft, FileType::F16 | FileType::F32 | FileType::BF16) {
            continue;
        }
        let w = WeightQuant::new(Mix::File(*ft));
        let q = table.lookup(&w, &KvQuant::default());
        let Some(d) = q.ppl_delta_weights else { continue };
        if d <= 0.0 {
            continue;
        }
        match mix_error(&model, &w, &mut rtn_errors, &mut measure) {
            Ok(e) => points.push((ft.name().to_string(), e, d)),
            Err(err) => eprintln!("{}: not measured ({err})", ft.name()),
        }
    }
    let xy: Vec<(f64, f64)> = points.iter().map(|p| (p.1, p.2)).collect();
    let fit = QualityFit::fit(&xy)?;
    let mut lines = Vec::new();
    let mut loo_errs = Vec::new();
    for (i, (name, e, d)) in points.iter().enumerate() {
        let others: Vec<(f64, f64)> = xy.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, p)| *p).collect();
        let loo = QualityFit::fit(&others)?.predict(*e).0;
        loo_errs.push((loo / d).ln().abs());
        lines.push(vec![
            name.clone(),
            format!("{e:.4}"),
            format!("{d:.4}"),
            format!("{:.4}", fit.predict(*e).0),
            format!("{loo:.4}"),
            format!("{:+.0}%", 100.0 * (loo / d - 1.0)),
        ]);
    }
    println!(
        "fit: ln dPPL = {:.3} + {:.3} ln err over {} llama.cpp mixes of {} (residual sd {:.2} in ln)",
        fit.a, fit.b, fit.n, model.name, fit.sd
    );
    print_table(&["mix", "output err", "published dPPL", "fitted", "leave-one-out", "error"].map(String::from), &lines);
    loo_errs.sort_by(f64::total_cmp);
    let med = loo_errs[loo_errs.len() / 2];
    println!("leave-one-out: median |ln(predicted/published)| {med:.2} (a factor of {:.2})\n", med.exp());
    let mut lines = Vec::new();
    let mut csv = format!("{}\n", memwall_io::quality::ESTIMATE_COLUMNS);
    let provenance = format!(
        "memwall quality (seed {}, act noise {}): ln dPPL = {:.3} + {:.3} ln err over {} llama.cpp mixes of Llama-3-8B (leave-one-out factor {:.2})",
        a.seed,
        a.act_noise,
        fit.a,
        fit.b,
        fit.n,
        med.exp()
    );
    for name in &a.formats {
        let f: QuantFormat = name.parse().map_err(|e: memwall_spec::SpecError| e.within("formats"))?;
        let methods: &[Method] = match f {
            QuantFormat::Ggml(_) => &[Method::Rtn],
            _ => &[Method::Rtn, Method::Awq, Method::Gptq],
        };
        for &m in methods {
            let w = WeightQuant::new(Mix::Pure(f));
            let mut errors = rtn_errors.clone();
            errors.remove(&f);
            let mut measure = |g: QuantFormat| format_error(&layer, g, if g == f { m } else { Method::Rtn });
            let e = mix_error(&model, &w, &mut errors, &mut measure)?;
            let (mid, lo, hi) = fit.predict(e);
            // The format as memwall names it, so lookups find it however it was typed.
            csv.push_str(&format!(
                "{f},{},{:.4},{e:.5},{mid:.5},{lo:.5},{hi:.5},\"{provenance}\"\n",
                m.name(),
                f.bits_per_weight()
            ));
            lines.push(vec![
                name.clone(),
                m.name().to_string(),
                format!("{:.2}", f.bits_per_weight()),
                format!("{e:.4}"),
                format!("{mid:.3}"),
                format!("[{lo:.3}, {hi:.3}]"),
            ]);
        }
    }
    println!(
        "estimates (synthetic layer 128 x 1024, heavy-tailed weights, 2% outlier input channels; seed {}):",
        a.seed
    );
    print_table(&["format", "method", "bits", "output err", "est. dPPL", "80% interval"].map(String::from), &lines);
    if let Some(path) = &a.write {
        memwall_io::atomic::write_text(path, &csv)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
