//! GPTQ and AWQ against round-to-nearest on synthetic weights with realistic structure: heavy
//! tailed weights, correlated activations and a few outlier input channels.

use memwall_kernels::quantizers::{awq, gptq, report, rtn};
use memwall_spec::{GroupQuant, QuantFormat};
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Normal, StudentT};

const ROWS: usize = 96;
const COLS: usize = 512;
const SAMPLES: usize = 384;

/// Weights: Student-t (ν = 4) heavy tails. Activations: a rank-16 correlated component plus
/// noise, with 8 outlier channels 25 × larger (as LLM hidden states have).
fn synthetic(seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let t = StudentT::new(4.0f32).unwrap();
    let n = Normal::new(0.0f32, 1.0).unwrap();
    let w: Vec<f32> = (0..ROWS * COLS).map(|_| 0.02 * t.sample(&mut rng)).collect();
    let basis: Vec<f32> = (0..16 * COLS).map(|_| n.sample(&mut rng)).collect();
    let outliers: Vec<usize> = (0..8).map(|_| rng.random_range(0..COLS)).collect();
    let mut x = vec![0f32; SAMPLES * COLS];
    for s in 0..SAMPLES {
        let coef: Vec<f32> = (0..16).map(|_| n.sample(&mut rng)).collect();
        for c in 0..COLS {
            let low_rank: f32 = (0..16).map(|k| coef[k] * basis[k * COLS + c]).sum::<f32>() / 4.0;
            x[s * COLS + c] = low_rank + 0.3 * n.sample(&mut rng);
        }
        for &o in &outliers {
            x[s * COLS + o] *= 25.0;
        }
    }
    (w, x)
}

fn fmt(name: &str) -> GroupQuant {
    match name.parse::<QuantFormat>().unwrap() {
        QuantFormat::Group(g) => g,
        _ => unreachable!(),
    }
}

#[test]
fn gptq_and_awq_beat_rtn_on_output_error_at_3_and_4_bits() {
    let (w, x) = synthetic(11);
    // Calibrate on the first half of the samples, evaluate on the second.
    let (calib, held_out) = x.split_at(SAMPLES / 2 * COLS);
    for name in ["int4-g128", "int3-g128", "int4-g64-asym", "int3-g64-asym"] {
        let g = fmt(name);
        let r = report(&w, &rtn(&w, ROWS, COLS, g).unwrap().effective, ROWS, COLS, held_out);
        let gq = report(&w, &gptq(&w, ROWS, COLS, calib, g, 0.01).unwrap().effective, ROWS, COLS, held_out);
        let aq = awq(&w, ROWS, COLS, calib, g, &[0.25, 0.5, 0.75, 1.0]).unwrap();
        let a = report(&w, &aq.effective, ROWS, COLS, held_out);
        println!(
            "{name:<14} RTN out {:.4} w {:.5} | GPTQ out {:.4} w {:.5} | AWQ(α={:?}) out {:.4} w {:.5}",
            r.output_rel_err,
            r.weight_rmse,
            gq.output_rel_err,
            gq.weight_rmse,
            aq.alpha.unwrap(),
            a.output_rel_err,
            a.weight_rmse
        );
        assert!(gq.output_rel_err < 0.9 * r.output_rel_err, "{name}: GPTQ {gq:?} vs RTN {r:?}");
        assert!(a.output_rel_err < 0.95 * r.output_rel_err, "{name}: AWQ {a:?} vs RTN {r:?}");
        // GPTQ trades weight error for output error.
        assert!(gq.weight_rmse >= r.weight_rmse * 0.9);
    }
}

#[test]
fn bytes_decode_to_the_effective_weights() {
    let (w, x) = synthetic(12);
    let g = fmt("int4-g64");
    let q = gptq(&w, ROWS, COLS, &x, g, 0.01).unwrap();
    let deq = memwall_kernels::formats::group::dequantize_group(g, &q.bytes, ROWS * COLS).unwrap();
    assert_eq!(deq, q.effective);
    let a = awq(&w, ROWS, COLS, &x, g, &[0.5]).unwrap();
    let s = a.input_scales.as_ref().unwrap();
    let deq = memwall_kernels::formats::group::dequantize_group(g, &a.bytes, ROWS * COLS).unwrap();
    for (i, v) in deq.iter().enumerate() {
        assert!((v / s[i % COLS] - a.effective[i]).abs() <= 1e-6 * a.effective[i].abs().max(1e-6));
    }
}

#[test]
fn bad_shapes_and_values_are_refused() {
    let g = fmt("int4-g64");
    assert!(rtn(&[0.0; 100], 2, 50, g).is_err());
    assert!(gptq(&[0.0; 128], 2, 64, &[0.0; 10], g, 0.01).is_err());
    let mut w = vec![0.1f32; 128];
    w[3] = f32::INFINITY;
    assert!(rtn(&w, 2, 64, g).is_err());
}
