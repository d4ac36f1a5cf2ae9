//! The scalar reference dots equal `Σ dequant(w) × dequant(x)` — the integer arithmetic and
//! the scale bookkeeping of every format are right.

use memwall_kernels::acts::{Acts, act_kind};
use memwall_kernels::dot::scalar;
use memwall_kernels::formats::SUPPORTED;
use memwall_kernels::{dequantize, quantize};
use memwall_spec::GgmlType;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

fn gaussian(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let d = Normal::new(0.0f32, 1.0).unwrap();
    (0..n).map(|_| d.sample(&mut rng)).collect()
}

#[test]
fn reference_dots_match_dequantized_arithmetic() {
    let n = 256 * 12;
    for &t in SUPPORTED.iter().filter(|t| **t != GgmlType::Q8_K) {
        for seed in 0..4 {
            let w = gaussian(n, seed);
            let x = gaussian(n, 100 + seed);
            let q = quantize(t, &w).unwrap();
            let wd = dequantize(t, &q, n).unwrap();
            let a = Acts::new(act_kind(t).unwrap(), &x).unwrap();
            let ad = a.dequantized();
            let want: f64 = wd.iter().zip(&ad).map(|(a, b)| *a as f64 * *b as f64).sum();
            let scale: f64 = wd.iter().zip(&ad).map(|(a, b)| (*a as f64 * *b as f64).abs()).sum();
            let got = scalar::dot(t, &q, &a).unwrap() as f64;
            assert!((got - want).abs() <= 1e-5 * scale, "{t}: {got} vs {want}");
            // And the quantized dot tracks the exact float dot within the formats' error.
            let exact: f64 = w.iter().zip(&x).map(|(a, b)| *a as f64 * *b as f64).sum();
            assert!((got - exact).abs() < 0.2 * scale.max(1.0) + 1.0, "{t}: {got} vs exact {exact}");
        }
    }
}
