//! Quantize → dequantize round trips: an error budget per format on Gaussian weights
//! (relative RMSE, the ratio of the reconstruction RMSE to the data's RMS), and the bad
//! inputs that must be refused.

use memwall_kernels::formats::SUPPORTED;
use memwall_kernels::formats::group::{dequantize_group, quantize_group};
use memwall_kernels::{KernelError, dequantize, quantize};
use memwall_spec::{GgmlType, QuantFormat};
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

fn gaussian(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let d = Normal::new(0.0f32, 1.0).unwrap();
    (0..n).map(|_| d.sample(&mut rng)).collect()
}

fn rel_rmse(x: &[f32], y: &[f32]) -> f32 {
    let e: f32 = x.iter().zip(y).map(|(a, b)| (a - b).powi(2)).sum();
    let s: f32 = x.iter().map(|a| a * a).sum();
    (e / s).sqrt()
}

/// Relative RMSE budgets on N(0, 1) weights. ggml's `test-quantize-fns` uses absolute
/// budgets of 0.002 (most types), 0.004 (3-bit) and 0.0075 (2-bit) on smooth synthetic
/// data; on Gaussian data the same formats land at the values measured here, which the
/// budgets bound with ~15 % slack.
fn budget(t: GgmlType) -> f32 {
    use GgmlType as G;
    match t {
        G::F32 => 0.0,
        G::F16 => 3e-4,
        G::BF16 => 2e-3,
        G::Q8_0 => 0.0065,
        G::Q8_K => 0.0085,
        G::Q6_K => 0.021,
        G::Q5_0 | G::Q5_1 | G::Q5_K => 0.05,
        G::Q4_0 | G::Q4_1 | G::Q4_K | G::IQ4_NL => 0.1,
        G::MXFP4 => 0.13,
        G::Q3_K => 0.175,
        G::Q2_K => 0.345,
        // Ternary formats are for ternary-trained weights; see the exact test below.
        G::TQ1_0 | G::TQ2_0 => 0.85,
        _ => unreachable!(),
    }
}

#[test]
fn every_format_meets_its_error_budget() {
    let x = gaussian(256 * 64, 1);
    for &t in SUPPORTED {
        let q = quantize(t, &x).unwrap();
        assert_eq!(q.len() as u64, x.len() as u64 / t.block_size() * t.type_size(), "{t}");
        let y = dequantize(t, &q, x.len()).unwrap();
        let e = rel_rmse(&x, &y);
        assert!(e <= budget(t), "{t}: relative RMSE {e} over budget {}", budget(t));
    }
}

#[test]
fn more_bits_mean_less_error() {
    let x = gaussian(256 * 16, 2);
    let err = |t: GgmlType| rel_rmse(&x, &dequantize(t, &quantize(t, &x).unwrap(), x.len()).unwrap());
    use GgmlType as G;
    let chain = [G::Q2_K, G::Q3_K, G::Q4_K, G::Q5_K, G::Q6_K, G::Q8_0];
    for w in chain.windows(2) {
        assert!(err(w[0]) > err(w[1]), "{} vs {}", w[0], w[1]);
    }
}

#[test]
fn ternary_weights_round_trip_exactly_up_to_the_f16_scale() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let n = Normal::new(0.0f32, 1.0).unwrap();
    let x: Vec<f32> = (0..256 * 8)
        .map(|i| {
            let t = n.sample(&mut rng);
            // Every block needs its full scale once so that d = 0.37 exactly.
            if i % 256 == 0 {
                0.37
            } else {
                0.37 * if t > 0.5 {
                    1.0
                } else if t < -0.5 {
                    -1.0
                } else {
                    0.0
                }
            }
        })
        .collect();
    for t in [GgmlType::TQ1_0, GgmlType::TQ2_0] {
        let y = dequantize(t, &quantize(t, &x).unwrap(), x.len()).unwrap();
        assert!(rel_rmse(&x, &y) < 5e-4, "{t}: {}", rel_rmse(&x, &y));
    }
}

#[test]
fn zero_blocks_stay_zero() {
    let x = vec![0f32; 512];
    for &t in SUPPORTED {
        let y = dequantize(t, &quantize(t, &x).unwrap(), x.len()).unwrap();
        assert!(y.iter().all(|v| *v == 0.0), "{t}");
    }
}

#[test]
fn group_formats_meet_budgets_and_smaller_groups_help() {
    let x = gaussian(128 * 64, 4);
    let err = |name: &str| {
        let QuantFormat::Group(g) = name.parse::<QuantFormat>().unwrap() else { unreachable!() };
        let q = quantize_group(g, &x).unwrap();
        assert_eq!(q.len() as u64, x.len() as u64 / g.group as u64 * QuantFormat::Group(g).block_bytes());
        rel_rmse(&x, &dequantize_group(g, &q, x.len()).unwrap())
    };
    assert!(err("int8-g32") < 0.007);
    assert!(err("int4-g32") < 0.1);
    assert!(err("int4-g32") < err("int4-g128"));
    assert!(err("int4-g128-asym") < err("int3-g128-asym"));
    assert!(err("int2-g64") < 0.7);
    for (name, budget) in [("int4-g64-bf16", 0.11), ("int4-g64-f32", 0.105), ("int4-g64-e8m0", 0.2)] {
        assert!(err(name) < budget, "{name}: {}", err(name));
    }
}

#[test]
fn bad_inputs_are_refused() {
    assert!(matches!(quantize(GgmlType::Q4_K, &[0.0; 100]), Err(KernelError::RowLength { block: 256, .. })));
    let mut x = vec![0.5f32; 32];
    x[7] = f32::NAN;
    assert!(matches!(quantize(GgmlType::Q8_0, &x), Err(KernelError::NonFinite { index: 7, .. })));
    assert!(matches!(dequantize(GgmlType::Q8_0, &[0; 33], 32), Err(KernelError::ByteLength { expected: 34, .. })));
    assert!(matches!(quantize(GgmlType::IQ2_XXS, &[0.0; 256]), Err(KernelError::Unsupported { .. })));
}
