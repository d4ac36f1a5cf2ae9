//! Attention over a quantized KV cache against an f32 reference, with a stated error budget
//! per cache format (relative L2 error of the attention output on Gaussian q, k, v).

use memwall_kernels::kv::{KvCache, attend_f32};
use memwall_spec::GgmlType;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

fn gaussian(n: usize, rng: &mut rand::rngs::StdRng) -> Vec<f32> {
    let d = Normal::new(0.0f32, 1.0).unwrap();
    (0..n).map(|_| d.sample(rng)).collect()
}

fn rel(a: &[f32], b: &[f32]) -> f32 {
    let e: f32 = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum();
    (e / b.iter().map(|y| y * y).sum::<f32>()).sqrt()
}

/// Budgets: F16 keys and values lose ~1e-4; Q8_0 ~1e-2; Q4_0 ~0.1 of the output norm.
fn budget(t: GgmlType) -> f32 {
    match t {
        GgmlType::F16 => 2e-3,
        GgmlType::Q8_0 => 2.5e-2,
        _ => 0.2,
    }
}

#[test]
fn quantized_cache_attention_stays_within_budget_for_mha_gqa_mqa() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let (n_heads, head_dim, tokens) = (8, 64, 300);
    for n_kv in [8, 2, 1] {
        let k = gaussian(tokens * n_kv * head_dim, &mut rng);
        let v = gaussian(tokens * n_kv * head_dim, &mut rng);
        let q: Vec<f32> = gaussian(n_heads * head_dim, &mut rng).iter().map(|x| x * 2.0).collect();
        let want = attend_f32(&q, &k, &v, n_heads, n_kv, head_dim).unwrap();
        for t in [GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0] {
            let mut c = KvCache::new(n_kv, head_dim, t, t, None).unwrap();
            let row = n_kv * head_dim;
            for i in 0..tokens {
                c.append(&k[i * row..(i + 1) * row], &v[i * row..(i + 1) * row]).unwrap();
            }
            assert_eq!(c.bytes(), 2 * tokens * row / t.block_size() as usize * t.type_size() as usize);
            let mut out = vec![0f32; n_heads * head_dim];
            c.attend(&q, n_heads, &mut out).unwrap();
            let e = rel(&out, &want);
            assert!(e < budget(t), "{t} with {n_kv} KV heads: relative error {e}");
        }
    }
}

#[test]
fn sliding_window_attends_to_the_last_tokens_only() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(6);
    let (n_heads, n_kv, head_dim, tokens, window) = (4, 2, 32, 200, 48);
    let row = n_kv * head_dim;
    let k = gaussian(tokens * row, &mut rng);
    let v = gaussian(tokens * row, &mut rng);
    let q = gaussian(n_heads * head_dim, &mut rng);
    let mut c = KvCache::new(n_kv, head_dim, GgmlType::F16, GgmlType::F16, Some(window)).unwrap();
    for i in 0..tokens {
        c.append(&k[i * row..(i + 1) * row], &v[i * row..(i + 1) * row]).unwrap();
    }
    assert_eq!(c.len(), window);
    assert_eq!(c.bytes(), 2 * window * row * 2);
    let start = (tokens - window) * row;
    let want = attend_f32(&q, &k[start..], &v[start..], n_heads, n_kv, head_dim).unwrap();
    let mut out = vec![0f32; n_heads * head_dim];
    c.attend(&q, n_heads, &mut out).unwrap();
    assert!(rel(&out, &want) < 2e-3, "{}", rel(&out, &want));
}

#[test]
fn bad_shapes_are_refused() {
    assert!(KvCache::new(2, 48, GgmlType::Q8_0, GgmlType::Q8_0, None).is_err());
    assert!(KvCache::new(2, 64, GgmlType::Q4_K, GgmlType::F16, None).is_err());
    assert!(KvCache::new(2, 64, GgmlType::F16, GgmlType::F16, Some(0)).is_err());
    let mut c = KvCache::new(2, 32, GgmlType::F16, GgmlType::F16, None).unwrap();
    assert!(c.append(&[0.0; 63], &[0.0; 64]).is_err());
    c.append(&[0.0; 64], &[0.0; 64]).unwrap();
    assert!(c.attend(&[0.0; 96], 3, &mut [0.0; 96]).is_err());
}

#[test]
fn attention_split_by_query_heads_equals_the_whole() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let (n_heads, head_dim, tokens) = (8, 32, 40);
    for n_kv in [8, 2, 1] {
        let row = n_kv * head_dim;
        let mut c = KvCache::new(n_kv, head_dim, GgmlType::Q8_0, GgmlType::Q4_0, None).unwrap();
        for _ in 0..tokens {
            c.append(&gaussian(row, &mut rng), &gaussian(row, &mut rng)).unwrap();
        }
        let q = gaussian(n_heads * head_dim, &mut rng);
        let mut whole = vec![0f32; n_heads * head_dim];
        c.attend(&q, n_heads, &mut whole).unwrap();
        // Ranges that cut through KV groups, and an empty one.
        for cut in [0, 1, 3, 5, 8] {
            let mut parts = vec![0f32; n_heads * head_dim];
            let (a, b) = parts.split_at_mut(cut * head_dim);
            c.attend_heads(&q, n_heads, 0..cut, a).unwrap();
            c.attend_heads(&q, n_heads, cut..n_heads, b).unwrap();
            assert_eq!(parts, whole, "{n_kv} KV heads cut at {cut}");
        }
    }
    let c = KvCache::new(2, 32, GgmlType::F16, GgmlType::F16, None).unwrap();
    assert!(c.attend_heads(&[0.0; 128], 4, 2..5, &mut [0.0; 96]).is_err());
    assert!(c.attend_heads(&[0.0; 128], 4, 1..3, &mut [0.0; 96]).is_err());
}

#[test]
fn attention_split_by_tokens_and_merged_equals_the_whole() {
    use memwall_kernels::kv::merge_spans;
    let mut rng = rand::rngs::StdRng::seed_from_u64(8);
    let (n_heads, n_kv, head_dim, tokens) = (4, 1, 32, 70);
    let mut c = KvCache::new(n_kv, head_dim, GgmlType::F16, GgmlType::Q8_0, None).unwrap();
    for _ in 0..tokens {
        c.append(&gaussian(head_dim, &mut rng), &gaussian(head_dim, &mut rng)).unwrap();
    }
    let q = gaussian(n_heads * head_dim, &mut rng);
    let mut whole = vec![0f32; n_heads * head_dim];
    c.attend(&q, n_heads, &mut whole).unwrap();
    for cuts in [vec![0, 70], vec![0, 1, 70], vec![0, 23, 47, 70], vec![0, 35, 35, 70]] {
        let spans: Vec<_> =
            cuts.windows(2).map(|w| c.attend_span(&q, n_heads, 0..n_heads, w[0]..w[1]).unwrap()).collect();
        let mut merged = vec![0f32; n_heads * head_dim];
        merge_spans(&spans, head_dim, &mut merged);
        assert!(rel(&merged, &whole) < 1e-6, "{cuts:?}: {}", rel(&merged, &whole));
    }
    assert!(c.attend_span(&q, n_heads, 0..n_heads, 10..71).is_err());
}

/// The tiled attention equals the f32 reference run on the cache's own dequantized rows, on
/// every path this CPU has: token counts around the tile of 32 (one token, a partial tile,
/// whole tiles, whole tiles and a tail, past the 4-key step), head sizes that leave a tail
/// after the last whole register (72 and 20 in F16) and that do not (32 … 128), MHA/GQA/MQA, mixed K and V formats, and spans split
/// at an arbitrary token and merged.
#[test]
fn tiled_attention_equals_the_reference_on_the_dequantized_cache_on_every_path() {
    use memwall_kernels::kv::merge_spans;
    use memwall_kernels::simd::Isa;
    use memwall_kernels::{dequantize, quantize};
    let isas: Vec<Isa> = Isa::ALL.into_iter().filter(|i| i.supported()).collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let through = |t: GgmlType, x: &[f32]| dequantize(t, &quantize(t, x).unwrap(), x.len()).unwrap();
    for (kf, vf, head_dim) in [
        (GgmlType::F16, GgmlType::F16, 80),
        (GgmlType::Q8_0, GgmlType::Q8_0, 96),
        (GgmlType::Q4_0, GgmlType::Q4_0, 64),
        (GgmlType::Q8_0, GgmlType::Q4_0, 128),
        (GgmlType::F16, GgmlType::Q8_0, 32),
        // Register tails: 72 = 4 × 16 + 8 (AVX-512), 20 = 2 × 8 + 4 (AVX2 and AVX-512).
        (GgmlType::F16, GgmlType::F16, 72),
        (GgmlType::F16, GgmlType::F16, 20),
    ] {
        for (n_heads, n_kv) in [(4, 4), (8, 2), (6, 1)] {
            for tokens in [1, 3, 31, 32, 33, 70, 129] {
                let row = n_kv * head_dim;
                let k = gaussian(tokens * row, &mut rng);
                let v = gaussian(tokens * row, &mut rng);
                let q: Vec<f32> = gaussian(n_heads * head_dim, &mut rng).iter().map(|x| x * 3.0).collect();
                let mut c = KvCache::new(n_kv, head_dim, kf, vf, None).unwrap();
                let (mut kd, mut vd) = (Vec::new(), Vec::new());
                for i in 0..tokens {
                    let (kr, vr) = (&k[i * row..(i + 1) * row], &v[i * row..(i + 1) * row]);
                    c.append(kr, vr).unwrap();
                    kd.extend(through(kf, kr));
                    vd.extend(through(vf, vr));
                }
                let want = attend_f32(&q, &kd, &vd, n_heads, n_kv, head_dim).unwrap();
                let cut = tokens / 3;
                for &isa in &isas {
                    let case = format!("{isa:?} {kf}/{vf} hd {head_dim}, {n_heads}/{n_kv} heads, {tokens} tokens");
                    let whole = c.attend_span_on(isa, &q, n_heads, 0..n_heads, 0..tokens).unwrap();
                    let mut out = vec![0f32; n_heads * head_dim];
                    whole.normalized_into(head_dim, &mut out);
                    let e = rel(&out, &want);
                    assert!(e < 2e-6, "{case}: relative error {e}");
                    let parts = [
                        c.attend_span_on(isa, &q, n_heads, 0..n_heads, 0..cut).unwrap(),
                        c.attend_span_on(isa, &q, n_heads, 0..n_heads, cut..tokens).unwrap(),
                    ];
                    merge_spans(&parts, head_dim, &mut out);
                    let e = rel(&out, &want);
                    assert!(e < 2e-6, "{case}, split at {cut}: relative error {e}");
                }
            }
        }
    }
}
