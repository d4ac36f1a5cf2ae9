//! Every SIMD path against the scalar reference, over random shapes and data (a hand-rolled
//! property test: 200 random cases per format, seeds printed on failure).

use memwall_kernels::dot::Kernel;
use memwall_kernels::formats::SUPPORTED;
use memwall_kernels::gemv::{QMatrix, gemm_par, gemv, gemv_par};
use memwall_kernels::quantize;
use memwall_kernels::simd::Isa;
use memwall_spec::GgmlType;
use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, Normal};

fn data(rng: &mut rand::rngs::StdRng, n: usize) -> Vec<f32> {
    let scale = 10f32.powf(rng.random_range(-3.0..2.0));
    let normal = Normal::new(0.0f32, scale).unwrap();
    let mut v: Vec<f32> = (0..n).map(|_| normal.sample(rng)).collect();
    // Outliers and exact zeros, the edge cases of scale handling.
    for _ in 0..n / 64 {
        let i = rng.random_range(0..n);
        v[i] = if rng.random_bool(0.5) { 0.0 } else { 20.0 * scale };
    }
    v
}

#[test]
fn simd_dots_match_the_scalar_reference() {
    // Every SIMD path this CPU has (none on a CPU without AVX2 or NEON).
    let isas: Vec<Isa> = Isa::ALL.into_iter().filter(|i| *i != Isa::Scalar && i.supported()).collect();
    for (isa, &t) in isas.iter().flat_map(|i| SUPPORTED.iter().filter(|t| **t != GgmlType::Q8_K).map(move |t| (*i, t)))
    {
        let fast = Kernel::with_isa(t, isa).unwrap();
        let slow = Kernel::with_isa(t, Isa::Scalar).unwrap();
        for seed in 0..200u64 {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            // Float formats: any length of at least 8 (a SIMD tail handles the rest).
            let blocks = if t.block_size() == 1 { rng.random_range(8..300usize) } else { rng.random_range(1..12usize) };
            let n = blocks * t.block_size() as usize;
            let w = data(&mut rng, n);
            let x = data(&mut rng, n);
            let q = quantize(t, &w).unwrap();
            let a = fast.prepare(&x).unwrap();
            let (f, s) = (fast.dot(&q, &a).unwrap(), slow.dot(&q, &a).unwrap());
            let mag: f32 = w.iter().zip(&x).map(|(a, b)| (a * b).abs()).sum::<f32>() + 1e-30;
            assert!((f - s).abs() <= 2e-5 * mag, "{t} seed {seed}: simd {f} vs scalar {s} (|w||x| = {mag})");
        }
    }
}

/// The formats with an AVX2 kernel take it (a format that silently fell back to the scalar
/// path would pass the comparison above trivially).
#[test]
fn avx2_formats_resolve_to_their_kernels() {
    if !Isa::Avx2.supported() {
        return;
    }
    for t in [GgmlType::Q4_0, GgmlType::IQ4_NL, GgmlType::MXFP4, GgmlType::Q4_K, GgmlType::F16] {
        assert_eq!(Kernel::with_isa(t, Isa::Avx2).unwrap().isa(), Isa::Avx2, "{t}");
    }
}

/// The activation quantizers of every SIMD path give the scalar reference's codes, scales and
/// sums bit for bit: random data of every scale, exact rounding ties (`x × id` = k + ½), and
/// blocks whose largest magnitude comes with both signs (Q8_K keeps the first).
#[test]
fn simd_activation_quantizers_are_bit_identical() {
    use memwall_kernels::acts::{ActKind, Acts};
    let isas: Vec<Isa> = Isa::ALL.into_iter().filter(|i| *i != Isa::Scalar && i.supported()).collect();
    for isa in isas {
        for seed in 0..300u64 {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let n = 256 * rng.random_range(1..6usize);
            let mut x = data(&mut rng, n);
            match seed % 3 {
                // Ties: a block whose extreme is 127 holds halves k + 0.5 (id = 1 exactly).
                0 => {
                    for (i, v) in x.iter_mut().enumerate() {
                        *v = if i % 32 == 0 { 127.0 } else { rng.random_range(-126i32..126) as f32 + 0.5 };
                    }
                }
                // The extreme with both signs, the negative one first in half the blocks.
                1 => {
                    for b in 0..n / 256 {
                        let (i, j) =
                            (256 * b + rng.random_range(0..128usize), 256 * b + 128 + rng.random_range(0..128usize));
                        let m = 1e3 * if b % 2 == 0 { 1.0 } else { -1.0 };
                        (x[i], x[j]) = (m, -m);
                    }
                }
                _ => {}
            }
            for k in [ActKind::Q8_0, ActKind::Q8K] {
                let (fast, slow) = (Acts::new_on(isa, k, &x).unwrap(), Acts::new_on(Isa::Scalar, k, &x).unwrap());
                assert!(
                    fast == slow,
                    "{} {k:?} seed {seed}: the activations differ from the scalar reference",
                    isa.name()
                );
            }
        }
    }
}

#[test]
fn gemv_threads_and_gemm_agree_with_row_by_row_dots() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for t in [GgmlType::Q4_K, GgmlType::Q8_0, GgmlType::F16, GgmlType::TQ1_0] {
        let (rows, cols) = (37, 512);
        let w = data(&mut rng, rows * cols);
        let q = quantize(t, &w).unwrap();
        let m = QMatrix::new(t, rows, cols, &q).unwrap();
        let k = Kernel::new(t).unwrap();
        let x = data(&mut rng, cols);
        let (mut y1, mut y2) = (vec![0f32; rows], vec![0f32; rows]);
        gemv(&k, &m, &x, &mut y1).unwrap();
        gemv_par(&k, &m, &x, &mut y2, 0).unwrap();
        assert_eq!(y1, y2, "{t}: threads change nothing");
        let xs: Vec<f32> = (0..3).flat_map(|_| x.iter().copied()).collect();
        let mut ys = vec![0f32; 3 * rows];
        gemm_par(&k, &m, &xs, 3, &mut ys).unwrap();
        assert_eq!(&ys[2 * rows..], &y1[..], "{t}: GEMM row equals GEMV");
    }
    let q = vec![0u8; 34 * 3];
    assert!(QMatrix::new(GgmlType::Q8_0, 2, 64, &q).is_err());
    let m = QMatrix::new(GgmlType::Q8_0, 3, 32, &q).unwrap();
    let k = Kernel::new(GgmlType::Q8_0).unwrap();
    assert!(gemv(&k, &m, &[0.0; 31], &mut [0.0; 3]).is_err());
    assert!(gemv(&k, &m, &[0.0; 32], &mut [0.0; 2]).is_err());
}

#[test]
fn the_spin_pool_computes_the_same_gemv_and_survives_many_calls() {
    use memwall_kernels::gemv::gemv_pool;
    use memwall_kernels::pool::SpinPool;
    let mut rng = rand::rngs::StdRng::seed_from_u64(8);
    let (rows, cols) = (203, 256);
    let w = data(&mut rng, rows * cols);
    let q = quantize(GgmlType::Q4_0, &w).unwrap();
    let m = QMatrix::new(GgmlType::Q4_0, rows, cols, &q).unwrap();
    let k = Kernel::new(GgmlType::Q4_0).unwrap();
    let pool = SpinPool::new(3);
    let x = data(&mut rng, cols);
    let mut want = vec![0f32; rows];
    gemv(&k, &m, &x, &mut want).unwrap();
    for chunk in [0, 1, 7, 500] {
        for _ in 0..200 {
            let mut y = vec![0f32; rows];
            gemv_pool(&k, &m, &x, &mut y, &pool, chunk).unwrap();
            assert_eq!(y, want);
        }
    }
}

#[test]
fn the_global_pool_serves_concurrent_callers() {
    use memwall_kernels::gemv::gemv_mt;
    let mut rng = rand::rngs::StdRng::seed_from_u64(21);
    let (rows, cols) = (97, 512);
    let w = data(&mut rng, rows * cols);
    let q = quantize(GgmlType::Q8_0, &w).unwrap();
    let m = QMatrix::new(GgmlType::Q8_0, rows, cols, &q).unwrap();
    let k = Kernel::new(GgmlType::Q8_0).unwrap();
    let x = data(&mut rng, cols);
    let mut want = vec![0f32; rows];
    gemv(&k, &m, &x, &mut want).unwrap();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..5000 {
                    let mut y = vec![0f32; rows];
                    gemv_mt(&k, &m, &x, &mut y).unwrap();
                    assert_eq!(y, want);
                }
            });
        }
    });
}
