//! Nelder–Mead: calibration's one derivative-free optimizer.
//!
//! Every other fit in memwall is least squares ([`crate::fit`](mod@crate::fit): linear by SVD, nonlinear by
//! Levenberg–Marquardt), which needs the derivatives of the residuals. The thermal networks
//! ([`crate::thermal`]) cannot have them: their loss is a discrete-event simulation whose
//! governor switches between clock levels at trip points, so a run's rates, onsets and mean
//! clocks move in steps as a resistance or a trip point moves, and a finite-difference
//! Jacobian is zero or huge depending on where the step lands. A simplex search compares
//! losses only, and with restarts from the best points of a coarse grid
//! ([`crate::thermal::search`]) finds the published figures' minimum there.

/// Nelder–Mead on `f` from `x0` with initial simplex steps `step` (per coordinate).
pub fn nelder_mead(f: &dyn Fn(&[f64]) -> f64, x0: &[f64], step: &[f64], iterations: usize) -> (Vec<f64>, f64) {
    let n = x0.len();
    let mut simplex: Vec<(Vec<f64>, f64)> = vec![(x0.to_vec(), f(x0))];
    for i in 0..n {
        let mut x = x0.to_vec();
        x[i] += step[i];
        let fx = f(&x);
        simplex.push((x, fx));
    }
    let lerp = |a: &[f64], b: &[f64], t: f64| a.iter().zip(b).map(|(a, b)| a + t * (b - a)).collect::<Vec<f64>>();
    for _ in 0..iterations {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let centroid: Vec<f64> = (0..n).map(|j| simplex[..n].iter().map(|p| p.0[j]).sum::<f64>() / n as f64).collect();
        let worst = simplex[n].clone();
        // Reflect, expand, contract, or shrink toward the best point.
        let xr = lerp(&centroid, &worst.0, -1.0);
        let fr = f(&xr);
        if fr < simplex[0].1 {
            let xe = lerp(&centroid, &worst.0, -2.0);
            let fe = f(&xe);
            simplex[n] = if fe < fr { (xe, fe) } else { (xr, fr) };
        } else if fr < simplex[n - 1].1 {
            simplex[n] = (xr, fr);
        } else {
            let xc = if fr < worst.1 { lerp(&centroid, &xr, 0.5) } else { lerp(&centroid, &worst.0, 0.5) };
            let fc = f(&xc);
            if fc < fr.min(worst.1) {
                simplex[n] = (xc, fc);
            } else {
                let best = simplex[0].0.clone();
                for p in simplex.iter_mut().skip(1) {
                    p.0 = lerp(&best, &p.0, 0.5);
                    p.1 = f(&p.0);
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    simplex.swap_remove(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minimum_of_a_narrow_curved_valley_is_found() {
        // Rosenbrock: minimum 0 at (1, 1), at the end of a curved valley.
        let f = |x: &[f64]| (1.0 - x[0]).powi(2) + 100.0 * (x[1] - x[0] * x[0]).powi(2);
        let (x, fx) = nelder_mead(&f, &[-1.2, 1.0], &[0.5, 0.5], 2000);
        assert!(fx < 1e-8, "{fx} at {x:?}");
        assert!((x[0] - 1.0).abs() < 1e-3 && (x[1] - 1.0).abs() < 1e-3, "{x:?}");
    }
}
