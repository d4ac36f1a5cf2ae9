//! Quality from measured error: the output error each weight format (and quantizer) makes on
//! realistic synthetic weights, related to the published perplexity deltas by a fit, so a
//! format or method without a published figure gets an estimate with its uncertainty.
//!
//! - The synthetic layer ([`synthetic_layer`]): weights with heavy tails (Gaussian, and 1 %
//!   of them 4× larger, as trained weights' outliers are); activations correlated across
//!   channels (64 latent factors and 10 % noise: the structure GPTQ exploits) with 2 % outlier
//!   input channels 8× larger (the channels AWQ protects).
//! - Error of a format: `‖X Wᵀ − X Ŵᵀ‖ / ‖X Wᵀ‖` on held-out activations
//!   ([`memwall_kernels::quantizers::report`]); AWQ and GPTQ calibrate on other activations
//!   of the same distribution, at least as many as input channels.
//! - Error of a mix on a model: the RMS of its tensors' errors weighted by their parameters
//!   ([`mix_error`]).
//! - The fit: `ln ΔPPL = a + b ln err` by least squares over the mixes with a published ΔPPL
//!   ([`QualityFit`]); an estimate comes with the 80 % prediction interval of the regression.
//! - The whole estimate ([`estimate`], what `memwall quality` prints): the fit over
//!   llama.cpp's file types with a published ΔPPL, each point's leave-one-out prediction, and
//!   every requested format by RTN, AWQ and GPTQ where they apply, as a [`QualityReport`].

use std::collections::BTreeMap;

use memwall_catalog::QualityTable;
use memwall_kernels::formats::fp8::{dequantize_fp8, quantize_fp8};
use memwall_kernels::quantizers::{awq, gptq, report, rtn};
use memwall_kernels::{dequantize, quantize};
use memwall_spec::{FileType, GgmlType, GroupQuant, KvQuant, Mix, ModelSpec, QuantFormat, SpecError, WeightQuant};
use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use rand::SeedableRng;
use rand::rngs::StdRng;
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::CalibError;
use crate::fit::least_squares;

/// A synthetic layer: `rows × cols` weights, `n × cols` calibration activations (what AWQ and
/// GPTQ see) and as many held-out ones (what the error is measured on).
#[derive(Debug, Clone)]
pub struct Layer {
    /// Weights, row-major.
    pub w: Vec<f32>,
    /// Calibration activations, row-major.
    pub x: Vec<f32>,
    /// Held-out activations of the same distribution, row-major.
    pub x_eval: Vec<f32>,
    /// Output channels.
    pub rows: usize,
    /// Input channels.
    pub cols: usize,
}

/// The synthetic layer of `rows × cols` weights and `n` activation vectors (seeded), whose
/// activations are 64 latent factors plus independent noise of standard deviation `noise`
/// per channel.
pub fn synthetic_layer(rows: usize, cols: usize, n: usize, noise: f64, seed: u64) -> Layer {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut gauss = move || {
        // Box–Muller.
        let (u1, u2): (f64, f64) = (rng.random::<f64>().max(1e-12), rng.random());
        let g = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        let outlier = rng.random::<f64>() < 0.01;
        (g, outlier)
    };
    let w = (0..rows * cols)
        .map(|_| {
            let (g, o) = gauss();
            (g * if o { 4.0 } else { 1.0 } / (cols as f64).sqrt()) as f32
        })
        .collect();
    let loud: Vec<bool> = (0..cols).map(|j| j % 50 == 7).collect();
    // Correlated activations, as a transformer's are: 64 latent factors mixed into the
    // channels, plus independent noise.
    let k = 64;
    let mix: Vec<f64> = (0..k * cols).map(|_| gauss().0 / (k as f64).sqrt()).collect();
    let mut acts = |n: usize| -> Vec<f32> {
        let mut out = Vec::with_capacity(n * cols);
        for _ in 0..n {
            let z: Vec<f64> = (0..k).map(|_| gauss().0).collect();
            for j in 0..cols {
                let v: f64 = (0..k).map(|i| z[i] * mix[i * cols + j]).sum::<f64>() + noise * gauss().0;
                out.push((v * if loud[j] { 8.0 } else { 1.0 }) as f32);
            }
        }
        out
    };
    let x = acts(n);
    let x_eval = acts(n);
    Layer { w, x, x_eval, rows, cols }
}

/// How a group format is quantized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Method {
    /// Round to nearest.
    Rtn,
    /// Activation-aware scaling.
    Awq,
    /// Second-order error compensation.
    Gptq,
}

impl Method {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Rtn => "rtn",
            Method::Awq => "awq",
            Method::Gptq => "gptq",
        }
    }
}

/// The relative output error of `f` (quantized by `method`; ggml formats by their own
/// quantizer) on `layer`.
pub fn format_error(layer: &Layer, f: QuantFormat, method: Method) -> Result<f64, CalibError> {
    let err = |e: memwall_kernels::KernelError| CalibError::Probe(format!("{f}: {e}"));
    let (rows, cols) = (layer.rows, layer.cols);
    let effective = match f {
        QuantFormat::Ggml(GgmlType::F32) => layer.w.clone(),
        QuantFormat::Ggml(t) => {
            let q = quantize(t, &layer.w).map_err(err)?;
            dequantize(t, &q, layer.w.len()).map_err(err)?
        }
        QuantFormat::Group(g) => group_effective(layer, g, method).map_err(err)?,
        QuantFormat::Channel(c) => {
            let g = GroupQuant { bits: c.bits, group: cols as u32, asym: c.asym, scale: c.scale };
            group_effective(layer, g, method).map_err(err)?
        }
        // FP8 is cast, never searched: every method stores the same codes.
        QuantFormat::Fp8(q) => {
            let t = quantize_fp8(q, &layer.w, cols).map_err(err)?;
            dequantize_fp8(q, &t, cols).map_err(err)?
        }
    };
    Ok(report(&layer.w, &effective, rows, cols, &layer.x_eval).output_rel_err)
}

fn group_effective(layer: &Layer, g: GroupQuant, method: Method) -> Result<Vec<f32>, memwall_kernels::KernelError> {
    let (w, x, rows, cols) = (&layer.w, &layer.x, layer.rows, layer.cols);
    Ok(match method {
        Method::Rtn => rtn(w, rows, cols, g)?.effective,
        Method::Awq => awq(w, rows, cols, x, g, &[0.25, 0.5, 0.75])?.effective,
        Method::Gptq => gptq(w, rows, cols, x, g, 0.01)?.effective,
    })
}

/// The error of a weight mix on `model` ([`memwall_catalog::quality_mix::mix_error`]), each
/// format's error taken from `errors` (measured on demand by `measure` for a format not there
/// yet).
pub fn mix_error(
    model: &ModelSpec,
    mix: &WeightQuant,
    errors: &mut BTreeMap<QuantFormat, f64>,
    measure: &mut dyn FnMut(QuantFormat) -> Result<f64, CalibError>,
) -> Result<f64, CalibError> {
    let e = memwall_catalog::quality_mix::mix_error(model, mix, |f| match errors.get(&f) {
        Some(e) => Ok::<f64, CalibError>(*e),
        None => {
            let e = measure(f)?;
            errors.insert(f, e);
            Ok(e)
        }
    })?;
    e.ok_or_else(|| CalibError::Empty(format!("model `{}` has no quantizable matrix", model.name)))
}

/// `ln ΔPPL = a + b ln err`, fitted by least squares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QualityFit {
    /// Intercept.
    pub a: f64,
    /// Slope.
    pub b: f64,
    /// Residual standard deviation (natural-log units).
    pub sd: f64,
    /// Points fitted.
    pub n: usize,
    /// Mean of `ln err` over the points.
    pub mean_x: f64,
    /// `Σ (ln err − mean)²`.
    pub sxx: f64,
}

impl QualityFit {
    /// Fit over `(err, ΔPPL)` points with ΔPPL > 0.
    pub fn fit(points: &[(f64, f64)]) -> Result<QualityFit, CalibError> {
        let pts: Vec<(f64, f64)> =
            points.iter().filter(|(e, d)| *e > 0.0 && *d > 0.0).map(|(e, d)| (e.ln(), d.ln())).collect();
        if pts.len() < 3 {
            return Err(CalibError::Empty(format!("{} usable points; the fit needs 3", pts.len())));
        }
        let x = DMatrix::from_fn(pts.len(), 2, |i, j| if j == 0 { 1.0 } else { pts[i].0 });
        let y = DVector::from_iterator(pts.len(), pts.iter().map(|p| p.1));
        let (beta, _) = least_squares(&x, &y)?;
        let n = pts.len();
        let resid: f64 = pts.iter().map(|(lx, ly)| (ly - beta[0] - beta[1] * lx).powi(2)).sum();
        let mean_x = pts.iter().map(|p| p.0).sum::<f64>() / n as f64;
        let sxx = pts.iter().map(|p| (p.0 - mean_x).powi(2)).sum::<f64>();
        Ok(QualityFit { a: beta[0], b: beta[1], sd: (resid / (n - 2).max(1) as f64).sqrt(), n, mean_x, sxx })
    }

    /// The estimated ΔPPL at error `err` and its 80 % prediction interval:
    /// `exp(a + b ln err ± t₀.₉ × sd × sqrt(1 + 1/n + (ln err − x̄)² / Sxx))`.
    pub fn predict(&self, err: f64) -> (f64, f64, f64) {
        let lx = err.max(f64::MIN_POSITIVE).ln();
        let mid = self.a + self.b * lx;
        let t = StudentsT::new(0.0, 1.0, (self.n.saturating_sub(2)).max(1) as f64).map_or(1.3, |d| d.inverse_cdf(0.9));
        let half = t * self.sd * (1.0 + 1.0 / self.n as f64 + (lx - self.mean_x).powi(2) / self.sxx.max(1e-12)).sqrt();
        (mid.exp(), (mid - half).exp(), (mid + half).exp())
    }
}

/// A llama.cpp file type the fit is made on: its measured mix error against its published
/// ΔPPL.
#[derive(Debug, Clone, PartialEq)]
pub struct FitPoint {
    /// The file type (`Q4_K_M`).
    pub mix: String,
    /// Output error of the mix on the model.
    pub err: f64,
    /// Published ΔPPL.
    pub published: f64,
    /// ΔPPL of the fit on every point.
    pub fitted: f64,
    /// ΔPPL of the fit on every other point.
    pub leave_one_out: f64,
}

/// A format's estimate by one method.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// The format as requested.
    pub name: String,
    /// The format.
    pub format: QuantFormat,
    /// How it is quantized.
    pub method: Method,
    /// Output error of the format (its mix on the model).
    pub err: f64,
    /// Estimated ΔPPL.
    pub dppl: f64,
    /// Lower end of the 80 % prediction interval.
    pub lo: f64,
    /// Upper end of the 80 % prediction interval.
    pub hi: f64,
}

/// The quality estimate from measured error: the fit, its points and the estimates.
#[derive(Debug, Clone, PartialEq)]
pub struct QualityReport {
    /// The model whose tensors weight the mix errors.
    pub model: String,
    /// Seed of the synthetic layer.
    pub seed: u64,
    /// Independent noise of the synthetic activations.
    pub act_noise: f64,
    /// `ln ΔPPL = a + b ln err` over [`QualityReport::points`].
    pub fit: QualityFit,
    /// The file types fitted, in [`FileType::ALL`] order.
    pub points: Vec<FitPoint>,
    /// File types with a published ΔPPL whose error could not be measured: (name, why).
    pub not_measured: Vec<(String, String)>,
    /// Median over the points of `|ln(leave-one-out / published)|`.
    pub loo_median: f64,
    /// Every requested format by each method that applies (ggml formats: RTN only).
    pub estimates: Vec<Estimate>,
    /// The error of every ggml type by its own quantizer on the synthetic layer (types the
    /// kernels cannot quantize are left out).
    pub format_errors: BTreeMap<QuantFormat, f64>,
}

impl QualityReport {
    /// The format errors as CSV with the columns of `datasets/format_errors.csv`
    /// ([`memwall_catalog::quality_mix::FORMAT_ERROR_COLUMNS`]).
    pub fn format_errors_csv(&self) -> String {
        let mut csv = format!("{}\n", memwall_catalog::quality_mix::FORMAT_ERROR_COLUMNS);
        let source = format!(
            "memwall quality --write-errors (seed {}, act noise {}): relative output error by the type's own \
             quantizer on the synthetic layer 128 x 1024, 2048 held-out activations",
            self.seed, self.act_noise
        );
        for (f, e) in &self.format_errors {
            csv.push_str(&format!("{f},{e:.6},\"{source}\"\n"));
        }
        csv
    }

    /// The estimates as CSV with the columns of `datasets/quality_estimated.csv`
    /// ([`memwall_catalog::quality_table::ESTIMATE_COLUMNS`]), each row naming the fit it comes from.
    pub fn estimates_csv(&self) -> String {
        let mut csv = format!("{}\n", memwall_catalog::quality_table::ESTIMATE_COLUMNS);
        let provenance = format!(
            "memwall quality (seed {}, act noise {}): ln dPPL = {:.3} + {:.3} ln err over {} llama.cpp mixes of Llama-3-8B (leave-one-out factor {:.2})",
            self.seed,
            self.act_noise,
            self.fit.a,
            self.fit.b,
            self.fit.n,
            self.loo_median.exp()
        );
        for e in &self.estimates {
            // The format as memwall names it, so lookups find it however it was typed.
            csv.push_str(&format!(
                "{},{},{:.4},{:.5},{:.5},{:.5},{:.5},\"{provenance}\"\n",
                e.format,
                e.method.name(),
                e.format.bits_per_weight(),
                e.err,
                e.dppl,
                e.lo,
                e.hi
            ));
        }
        csv
    }
}

/// The quality estimate of `formats` (names as memwall parses them) on `model`: the output
/// error of every llama.cpp file type with a published ΔPPL in `table` (no imatrix) measured on
/// the synthetic layer (128 × 1024, 2048 activations of noise `act_noise`, seeded), the fit
/// of the published ΔPPL on it with each point's leave-one-out prediction, and each format's
/// estimate by RTN, AWQ and GPTQ (ggml formats by their own quantizer) with its 80 %
/// interval. A format name that does not parse is refused before anything is measured.
pub fn estimate(
    model: &ModelSpec,
    table: &QualityTable,
    formats: &[String],
    act_noise: f64,
    seed: u64,
) -> Result<QualityReport, CalibError> {
    let parsed: Vec<QuantFormat> = formats
        .iter()
        .map(|name| name.parse().map_err(|e: SpecError| CalibError::Spec(e.within("formats"))))
        .collect::<Result<_, _>>()?;
    let layer = synthetic_layer(128, 1024, 2048, act_noise, seed);
    let mut rtn_errors: BTreeMap<QuantFormat, f64> = BTreeMap::new();
    let mut measure = |f: QuantFormat| format_error(&layer, f, Method::Rtn);
    // Fit points: llama.cpp file types with a published delta (no imatrix).
    let mut measured = Vec::new();
    let mut not_measured = Vec::new();
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
        match mix_error(model, &w, &mut rtn_errors, &mut measure) {
            Ok(e) => measured.push((ft.name().to_string(), e, d)),
            Err(err) => not_measured.push((ft.name().to_string(), err.to_string())),
        }
    }
    let xy: Vec<(f64, f64)> = measured.iter().map(|p| (p.1, p.2)).collect();
    let fit = QualityFit::fit(&xy)?;
    let mut points = Vec::new();
    let mut loo_errs = Vec::new();
    for (i, (name, e, d)) in measured.into_iter().enumerate() {
        let others: Vec<(f64, f64)> = xy.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, p)| *p).collect();
        let loo = QualityFit::fit(&others)?.predict(e).0;
        loo_errs.push((loo / d).ln().abs());
        points.push(FitPoint { mix: name, err: e, published: d, fitted: fit.predict(e).0, leave_one_out: loo });
    }
    loo_errs.sort_by(f64::total_cmp);
    let loo_median = loo_errs[loo_errs.len() / 2];
    let mut estimates = Vec::new();
    for (name, &f) in formats.iter().zip(&parsed) {
        let methods: &[Method] = match f {
            QuantFormat::Ggml(_) => &[Method::Rtn],
            _ => &[Method::Rtn, Method::Awq, Method::Gptq],
        };
        for &m in methods {
            let w = WeightQuant::new(Mix::Pure(f));
            let mut errors = rtn_errors.clone();
            errors.remove(&f);
            let mut measure = |g: QuantFormat| format_error(&layer, g, if g == f { m } else { Method::Rtn });
            let e = mix_error(model, &w, &mut errors, &mut measure)?;
            let (dppl, lo, hi) = fit.predict(e);
            estimates.push(Estimate { name: name.clone(), format: f, method: m, err: e, dppl, lo, hi });
        }
    }
    // Every ggml type the kernels quantize, for the per-tensor rule of the quality lookup.
    for t in GgmlType::ALL {
        let f = QuantFormat::Ggml(*t);
        if matches!(t, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) || rtn_errors.contains_key(&f) {
            continue;
        }
        if let Ok(e) = format_error(&layer, f, Method::Rtn) {
            rtn_errors.insert(f, e);
        }
    }
    let format_errors = rtn_errors.into_iter().filter(|(f, _)| matches!(f, QuantFormat::Ggml(_))).collect();
    Ok(QualityReport {
        model: model.name.clone(),
        seed,
        act_noise,
        fit,
        points,
        not_measured,
        loo_median,
        estimates,
        format_errors,
    })
}
