//! Kernel throughput in bytes/s: quantized GEMV per format (cache-resident and 64 MiB),
//! quantization, the per-call activation quantization of a GEMV (scalar reference against
//! the path the CPU picks), and decode attention over a quantized KV cache.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use memwall::kernels::acts::{ActKind, Acts};
use memwall::kernels::dot::Kernel;
use memwall::kernels::gemv::{QMatrix, gemv_mt};
use memwall::kernels::kv::KvCache;
use memwall::kernels::quantize;
use memwall::kernels::simd::Isa;
use memwall::spec::GgmlType;

const COLS: usize = 4096;

fn weights(n: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 2654435761usize) % 1000) as f32 / 500.0 - 1.0).collect()
}

/// A `bytes`-sized matrix: 16 quantized rows tiled.
fn matrix(t: GgmlType, bytes: usize) -> (Vec<u8>, usize) {
    let q = quantize(t, &weights(16 * COLS)).unwrap();
    let row = q.len() / 16;
    let rows = (bytes / row).max(16);
    let data: Vec<u8> = q.iter().copied().cycle().take(rows * row).collect();
    (data, rows)
}

fn gemv(c: &mut Criterion) {
    let mut g = c.benchmark_group("gemv");
    g.sample_size(20);
    for t in
        [GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q2_K, GgmlType::TQ1_0, GgmlType::F16]
    {
        for (label, bytes) in [("1MiB", 1 << 20), ("64MiB", 64 << 20)] {
            let (data, rows) = matrix(t, bytes);
            let m = QMatrix::new(t, rows, COLS, &data).unwrap();
            let k = Kernel::new(t).unwrap();
            let x = weights(COLS);
            let mut y = vec![0f32; rows];
            g.throughput(Throughput::Bytes(data.len() as u64));
            g.bench_function(BenchmarkId::new(t.name(), label), |b| b.iter(|| gemv_mt(&k, &m, &x, &mut y).unwrap()));
        }
    }
    g.finish();
}

fn quantization(c: &mut Criterion) {
    let mut g = c.benchmark_group("quantize");
    g.sample_size(10);
    let x = weights(256 * 1024);
    g.throughput(Throughput::Bytes((x.len() * 4) as u64));
    for t in [GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q6_K] {
        g.bench_function(t.name(), |b| b.iter(|| quantize(t, &x).unwrap()));
    }
    g.finish();
}

/// A GEMV quantizes its input once per call; on small matrices that is a visible share of the
/// call (a 4096-wide input was 12 µs on a 2-core Zen 4 guest against 27 µs for a 226-row
/// Q4_0 GEMV, before the SIMD quantizers).
fn activations(c: &mut Criterion) {
    let mut g = c.benchmark_group("activations");
    let x = weights(COLS);
    g.throughput(Throughput::Bytes((x.len() * 4) as u64));
    for (kind, name) in [(ActKind::Q8_0, "q8_0"), (ActKind::Q8K, "q8_K")] {
        for isa in [Isa::Scalar, Isa::best()] {
            g.bench_function(BenchmarkId::new(name, isa.name()), |b| b.iter(|| Acts::new_on(isa, kind, &x).unwrap()));
        }
    }
    g.finish();
}

fn attention(c: &mut Criterion) {
    let mut g = c.benchmark_group("attention");
    g.sample_size(20);
    let (n_heads, n_kv, head_dim, tokens) = (32, 8, 128, 2048);
    let row = weights(n_kv * head_dim);
    let q = weights(n_heads * head_dim);
    for t in [GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0] {
        let mut cache = KvCache::new(n_kv, head_dim, t, t, None).unwrap();
        for _ in 0..tokens {
            cache.append(&row, &row).unwrap();
        }
        let mut out = vec![0f32; n_heads * head_dim];
        g.throughput(Throughput::Bytes(cache.bytes() as u64));
        g.bench_function(t.name(), |b| b.iter(|| cache.attend(&q, n_heads, &mut out).unwrap()));
    }
    g.finish();
}

criterion_group!(benches, gemv, quantization, activations, attention);
criterion_main!(benches);
