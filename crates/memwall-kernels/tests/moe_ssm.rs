//! MoE routing, dispatch and routing generators; the recurrent state updates.

use memwall_kernels::moe::{HitCounter, RoutingGenerator, RoutingModel, dispatch, route};
use memwall_kernels::ssm::{DeltaState, MambaParams, MambaState};
use rand::SeedableRng;

#[test]
fn routing_keeps_the_top_k_with_renormalized_softmax_weights() {
    let r = route(&[0.1, 2.0, -1.0, 1.0, 2.0], 3).unwrap();
    assert_eq!(r.experts, vec![1, 4, 3]);
    // Softmax over the kept logits: e^2, e^2, e^1 normalized.
    let (a, b) = (2f32.exp(), 1f32.exp());
    let want = [a / (2.0 * a + b), a / (2.0 * a + b), b / (2.0 * a + b)];
    for (w, v) in r.weights.iter().zip(want) {
        assert!((w - v).abs() < 1e-6);
    }
    assert!(route(&[0.0; 4], 5).is_err());
    assert!(route(&[0.0, f32::NAN], 1).is_err());
}

#[test]
fn dispatch_mixes_expert_outputs_and_counts_hits() {
    let r = route(&[3.0, 0.0, 3.0, -5.0], 2).unwrap();
    let mut hits = HitCounter::new(4);
    let x = [1.0f32, -2.0];
    let mut y = [0f32; 2];
    // Expert e scales its input by e + 1.
    dispatch(&r, &x, &mut y, &mut hits, |e, x, out| {
        for (o, v) in out.iter_mut().zip(x) {
            *o = (e + 1) as f32 * v;
        }
        Ok(())
    })
    .unwrap();
    // Experts 0 and 2 with weight ½ each: (1 + 3) / 2 = 2 × x.
    assert!((y[0] - 2.0).abs() < 1e-6 && (y[1] + 4.0).abs() < 1e-6);
    assert_eq!(hits.hits, vec![1, 0, 1, 0]);
    assert_eq!(hits.distinct(), 2);
}

#[test]
fn generators_reproduce_the_expected_expert_coverage() {
    let (e, k, tokens) = (64usize, 4usize, 16u64);
    let trials = 2000;
    let coverage = |model| {
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        let mut total = 0usize;
        for _ in 0..trials {
            let mut g = RoutingGenerator::new(e, k, model).unwrap();
            let mut h = HitCounter::new(e);
            for _ in 0..tokens {
                let experts = g.next(&mut rng);
                assert_eq!(experts.len(), k);
                let mut sorted = experts.clone();
                sorted.dedup();
                assert_eq!(sorted.len(), k, "experts of a token are distinct");
                h.record(&memwall_kernels::moe::Routing { weights: vec![0.25; k], experts });
            }
            total += h.distinct();
        }
        total as f64 / trials as f64
    };
    // Uniform routing: E (1 − (1 − k/E)^T) distinct experts.
    let expected = e as f64 * (1.0 - (1.0 - k as f64 / e as f64).powi(tokens as i32));
    let uniform = coverage(RoutingModel::Uniform);
    assert!((uniform - expected).abs() / expected < 0.02, "{uniform} vs {expected}");
    let zipf = coverage(RoutingModel::Zipf { s: 1.2 });
    let sticky = coverage(RoutingModel::Correlated { stickiness: 0.8, s: 0.0 });
    assert!(zipf < 0.8 * uniform, "skewed routing concentrates: {zipf} vs {uniform}");
    assert!(sticky < 0.6 * uniform, "correlated routing reuses experts: {sticky} vs {uniform}");
    assert!(RoutingGenerator::new(4, 5, RoutingModel::Uniform).is_err());
    assert!(RoutingGenerator::new(4, 2, RoutingModel::Zipf { s: f64::NAN }).is_err());
}

#[test]
fn mamba_step_by_hand_and_fixed_memory() {
    // One channel, one state, convolution passing the current input through.
    let p = MambaParams { conv_w: vec![0.0, 0.0, 0.0, 1.0], conv_b: vec![0.0], a: vec![-1.0], d: vec![0.5] };
    let mut s = MambaState::new(1, 1, 4);
    let bytes = s.bytes();
    assert_eq!(bytes, (3 + 1) * 4);
    let mut y = [0f32];
    s.step(&p, &[1.0], &[2.0], &[0.0], &[1.0], &[1.0], &mut y).unwrap();
    let silu = |x: f32| x / (1.0 + (-x).exp());
    let (u, delta) = (silu(1.0), 2f32.ln());
    let h = delta * u;
    assert!((s.h[0] - h).abs() < 1e-6);
    assert!((y[0] - (h + 0.5 * u) * silu(2.0)).abs() < 1e-6);
    // With zero input the state decays by exp(Δ A) per token; the memory never grows.
    for _ in 0..100 {
        s.step(&p, &[0.0], &[2.0], &[0.0], &[1.0], &[1.0], &mut y).unwrap();
    }
    assert!(s.h[0] < h * 0.5f32.powi(90));
    assert_eq!(s.bytes(), bytes);
    assert!(s.step(&p, &[0.0; 2], &[0.0], &[0.0], &[1.0], &[1.0], &mut y).is_err());
}

#[test]
fn delta_rule_recalls_what_it_wrote() {
    let mut s = DeltaState::new(4, 3);
    let k = [0.5f32, 0.5, 0.5, 0.5];
    let mut o = [0f32; 3];
    s.step(&k, &k, &[1.0, 2.0, 3.0], 1.0, 1.0, &mut o).unwrap();
    for (a, b) in o.iter().zip([1.0, 2.0, 3.0]) {
        assert!((a - b).abs() < 1e-6);
    }
    // Writing a new value at the same key replaces the old one (β = 1).
    s.step(&k, &k, &[-1.0, 0.0, 4.0], 1.0, 1.0, &mut o).unwrap();
    for (a, b) in o.iter().zip([-1.0, 0.0, 4.0]) {
        assert!((a - b).abs() < 1e-5);
    }
    assert!(s.step(&k, &k, &[0.0; 2], 1.0, 1.0, &mut o).is_err());
}

#[test]
fn mamba_scan_split_over_threads_equals_the_serial_scan() {
    let (di, ds, dc) = (37, 16, 4);
    let wave = |n: usize, k: f32| (0..n).map(|i| (i as f32 * k).sin() * 0.5).collect::<Vec<f32>>();
    let p = MambaParams {
        conv_w: wave(di * dc, 0.3),
        conv_b: wave(di, 0.7),
        a: (0..di * ds).map(|i| -((i % ds) as f32 + 1.0)).collect(),
        d: vec![1.0; di],
    };
    let pool = memwall_kernels::pool::SpinPool::new(3);
    let (mut serial, mut split) = (MambaState::new(di, ds, dc), MambaState::new(di, ds, dc));
    for t in 0..5 {
        let (u, z, dt, b, c) = (wave(di, 0.1 + t as f32), wave(di, 0.2), wave(di, 0.05), wave(ds, 0.4), wave(ds, 0.9));
        let (mut y1, mut y2) = (vec![0f32; di], vec![0f32; di]);
        serial.scan(&p, &u, &z, &dt, &b, &c, &mut y1).unwrap();
        split.scan_pool(&p, &u, &z, &dt, &b, &c, &mut y2, &pool).unwrap();
        assert_eq!(y1, y2);
    }
    assert_eq!(serial.h, split.h);
    let mut y = vec![0f32; di - 1];
    assert!(
        split
            .scan_pool(
                &p,
                &wave(di, 1.0),
                &wave(di, 1.0),
                &wave(di, 1.0),
                &wave(ds, 1.0),
                &wave(ds, 1.0),
                &mut y,
                &pool
            )
            .is_err()
    );
}
