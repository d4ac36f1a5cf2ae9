//! Weight quantizers on generic group formats (`intN-gG`): round-to-nearest (ggml's reference
//! behaviour), AWQ-style activation-aware channel scaling, and GPTQ (column-by-column
//! second-order error compensation).
//!
//! Weights are row-major `rows × cols` with `y = W x` (a row is an output channel, a column an
//! input channel); calibration activations are `n × cols`. Groups run along rows, as in
//! every block format.

use memwall_spec::{GroupQuant, QuantFormat};
use nalgebra::DMatrix;

use crate::KernelError;
use crate::formats::group::{GroupParams, dequantize_group, group_code, group_params, group_value, put_code};

/// A quantized matrix and the effective weights it computes with.
#[derive(Debug, Clone)]
pub struct Quantized {
    /// The format.
    pub format: GroupQuant,
    /// Stored blocks, row by row.
    pub bytes: Vec<u8>,
    /// Per-input-channel scales the activations are divided by before the product (AWQ);
    /// `None` for RTN and GPTQ.
    pub input_scales: Option<Vec<f32>>,
    /// Effective weights `Ŵ` (`dequant(bytes) / input_scales`), `rows × cols`.
    pub effective: Vec<f32>,
    /// The AWQ exponent chosen, if any.
    pub alpha: Option<f32>,
}

/// Weight RMSE and relative output error of a quantization.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorReport {
    /// `sqrt(mean((W − Ŵ)²))`.
    pub weight_rmse: f64,
    /// `‖X Wᵀ − X Ŵᵀ‖_F / ‖X Wᵀ‖_F` on the calibration activations.
    pub output_rel_err: f64,
}

fn check(w: &[f32], rows: usize, cols: usize, g: GroupQuant, x: Option<&[f32]>) -> Result<(), KernelError> {
    if w.len() != rows * cols {
        return Err(KernelError::Shape { what: "weights", len: w.len(), expected: rows * cols });
    }
    if !cols.is_multiple_of(g.group as usize) {
        return Err(KernelError::RowLength { format: "intN", len: cols, block: g.group as usize });
    }
    if let Some(x) = x
        && (x.is_empty() || !x.len().is_multiple_of(cols))
    {
        return Err(KernelError::Shape { what: "calibration activations", len: x.len(), expected: cols });
    }
    if let Some(i) = w.iter().chain(x.unwrap_or(&[])).position(|v| !v.is_finite()) {
        return Err(KernelError::NonFinite { index: i, value: f32::NAN });
    }
    Ok(())
}

/// Round-to-nearest, group by group.
pub fn rtn(w: &[f32], rows: usize, cols: usize, g: GroupQuant) -> Result<Quantized, KernelError> {
    check(w, rows, cols, g, None)?;
    let bytes = crate::formats::group::quantize_group(g, w)?;
    let effective = dequantize_group(g, &bytes, w.len())?;
    Ok(Quantized { format: g, bytes, input_scales: None, effective, alpha: None })
}

/// Measure a quantization against the original weights on calibration activations.
pub fn report(w: &[f32], effective: &[f32], rows: usize, cols: usize, x: &[f32]) -> ErrorReport {
    let weight_rmse =
        (w.iter().zip(effective).map(|(a, b)| ((a - b) as f64).powi(2)).sum::<f64>() / w.len() as f64).sqrt();
    let (mut num, mut den) = (0f64, 0f64);
    for xr in x.chunks_exact(cols) {
        for r in 0..rows {
            let (wr, er) = (&w[r * cols..(r + 1) * cols], &effective[r * cols..(r + 1) * cols]);
            let (mut y, mut yq) = (0f64, 0f64);
            for c in 0..cols {
                y += (wr[c] * xr[c]) as f64;
                yq += (er[c] * xr[c]) as f64;
            }
            num += (y - yq).powi(2);
            den += y * y;
        }
    }
    ErrorReport { weight_rmse, output_rel_err: (num / den.max(f64::MIN_POSITIVE)).sqrt() }
}

/// AWQ-style activation-aware quantization: scale input channel `j` by
/// `s_j = (mean_n |x_nj|)^α` (normalised to geometric mean 1), quantize `W · diag(s)`, and
/// divide activations by `s` at run time, so salient channels (large activations) get finer
/// effective steps. `α` is searched over `alphas` for the lowest output error on `x`; `α = 0`
/// is plain RTN, so AWQ never does worse on the calibration set.
pub fn awq(
    w: &[f32],
    rows: usize,
    cols: usize,
    x: &[f32],
    g: GroupQuant,
    alphas: &[f32],
) -> Result<Quantized, KernelError> {
    check(w, rows, cols, g, Some(x))?;
    let n = x.len() / cols;
    let mut mean_abs = vec![0f64; cols];
    for xr in x.chunks_exact(cols) {
        for (m, v) in mean_abs.iter_mut().zip(xr) {
            *m += v.abs() as f64 / n as f64;
        }
    }
    let mut best: Option<(f64, Quantized)> = None;
    for &alpha in alphas.iter().chain(std::iter::once(&0.0)) {
        let raw: Vec<f64> = mean_abs.iter().map(|m| m.max(1e-8).powf(alpha as f64)).collect();
        let geo = (raw.iter().map(|s| s.ln()).sum::<f64>() / cols as f64).exp();
        let s: Vec<f32> = raw.iter().map(|v| (v / geo) as f32).collect();
        let scaled: Vec<f32> = w.iter().enumerate().map(|(i, v)| v * s[i % cols]).collect();
        let bytes = crate::formats::group::quantize_group(g, &scaled)?;
        let deq = dequantize_group(g, &bytes, w.len())?;
        let effective: Vec<f32> = deq.iter().enumerate().map(|(i, v)| v / s[i % cols]).collect();
        let err = report(w, &effective, rows, cols, x).output_rel_err;
        if best.as_ref().is_none_or(|(e, _)| err < *e) {
            let q = Quantized { format: g, bytes, input_scales: Some(s), effective, alpha: Some(alpha) };
            best = Some((err, q));
        }
    }
    Ok(best.expect("at least α = 0 is tried").1)
}

/// GPTQ: quantize columns left to right; after each column, spread its rounding error over
/// the columns not yet quantized through the inverse Hessian `H⁻¹`, `H = XᵀX + λ I`
/// (`λ = damp × mean(diag XᵀX)`), using the upper Cholesky factor `U` of `H⁻¹`:
/// `W[:, k] −= (W[:, j] − Q[:, j]) / U[j, j] × U[j, k]` for `k > j`. Group scales are set
/// from the (already compensated) weights when the sweep reaches a group's first column.
pub fn gptq(
    w: &[f32],
    rows: usize,
    cols: usize,
    x: &[f32],
    g: GroupQuant,
    damp: f64,
) -> Result<Quantized, KernelError> {
    check(w, rows, cols, g, Some(x))?;
    let n = x.len() / cols;
    let xm = DMatrix::from_row_slice(n, cols, &x.iter().map(|&v| v as f64).collect::<Vec<_>>());
    let mut h = xm.transpose() * &xm;
    let mean_diag = (0..cols).map(|i| h[(i, i)]).sum::<f64>() / cols as f64;
    let mut wm = DMatrix::from_row_slice(rows, cols, &w.iter().map(|&v| v as f64).collect::<Vec<_>>());
    for i in 0..cols {
        if h[(i, i)] == 0.0 {
            // A dead input channel: its weights never matter.
            h[(i, i)] = 1.0;
            wm.column_mut(i).fill(0.0);
        }
        h[(i, i)] += damp * mean_diag.max(f64::MIN_POSITIVE);
    }
    let hinv = h.cholesky().ok_or(KernelError::Numerical { what: "Cholesky of XᵀX + λI" })?.inverse();
    let u = hinv.cholesky().ok_or(KernelError::Numerical { what: "Cholesky of H⁻¹" })?.l().transpose();

    let group = g.group as usize;
    let gb = QuantFormat::Group(g).block_bytes() as usize;
    let groups_per_row = cols / group;
    let mut bytes = vec![0u8; rows * groups_per_row * gb];
    let mut params = vec![GroupParams { d: 0.0, m: 0.0 }; rows];
    let mut effective = vec![0f32; rows * cols];
    for j in 0..cols {
        let gi = j / group;
        if j % group == 0 {
            for r in 0..rows {
                let xs: Vec<f32> = (j..j + group).map(|c| wm[(r, c)] as f32).collect();
                let block = &mut bytes[(r * groups_per_row + gi) * gb..(r * groups_per_row + gi + 1) * gb];
                params[r] = group_params(g, &xs, block);
            }
        }
        let ujj = u[(j, j)];
        for r in 0..rows {
            let v = wm[(r, j)] as f32;
            let code = group_code(g, params[r], v);
            let q = group_value(g, params[r], code);
            let block = &mut bytes[(r * groups_per_row + gi) * gb..(r * groups_per_row + gi + 1) * gb];
            put_code(g, block, j % group, code);
            effective[r * cols + j] = q;
            let err = (wm[(r, j)] - q as f64) / ujj;
            for k in j + 1..cols {
                wm[(r, k)] -= err * u[(j, k)];
            }
        }
    }
    Ok(Quantized { format: g, bytes, input_scales: None, effective, alpha: None })
}
