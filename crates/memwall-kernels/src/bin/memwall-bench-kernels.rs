//! `memwall-bench-kernels`: GEMV throughput of every weight format at a cache-resident size
//! and at a DRAM size (weights ≥ 8 × the last-level cache), on one thread and on all
//! threads, as weight bytes/s, GFLOP/s and the ratio to a STREAM-like read bandwidth that
//! this binary measures in the same run. GEMVs run on the persistent spin pool
//! (`gemv_mt`); the first line compares its per-call cost with rayon's.
//!
//! A second table streams decode attention (32 query heads over 8 KV heads of 128, the
//! Llama-3-8B layer) over a KV cache of the DRAM size in each cache format, on one thread,
//! as KV bytes/s beside a GEMV of the same format and size run right after it: attention
//! "at memory speed" streams its KV bytes at ≥ 0.8× the rate the GEMV streams weights.
//!
//! Usage: `memwall-bench-kernels [--dram-mib N] [--cache-kib N] [--formats q4_K,q8_0,...]
//! [--no-attention] [--isas avx512,avx2]` (default: every SIMD path this CPU has, each
//! format measured on each path in turn at each size)

use std::time::Instant;

use memwall_kernels::dot::Kernel;
use memwall_kernels::formats::SUPPORTED;
use memwall_kernels::gemv::{QMatrix, gemv_mt, gemv_par, gemv_pool};
use memwall_kernels::pool::SpinPool;
use memwall_kernels::quantize;
use memwall_kernels::simd::Isa;
use memwall_spec::GgmlType;
use rayon::prelude::*;

const COLS: usize = 4096;

struct Args {
    dram_mib: usize,
    cache_kib: usize,
    formats: Vec<GgmlType>,
    reps: usize,
    attention: bool,
    isas: Vec<Isa>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        dram_mib: 512,
        cache_kib: 512,
        formats: SUPPORTED.iter().copied().filter(|t| *t != GgmlType::Q8_K && *t != GgmlType::F32).collect(),
        reps: 7,
        attention: true,
        isas: Isa::ALL.into_iter().rev().filter(|i| *i != Isa::Scalar && i.supported()).collect(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("`{flag}` needs a value"));
        match flag.as_str() {
            "--dram-mib" => a.dram_mib = value()?.parse().map_err(|e| format!("--dram-mib: {e}"))?,
            "--cache-kib" => a.cache_kib = value()?.parse().map_err(|e| format!("--cache-kib: {e}"))?,
            "--no-attention" => a.attention = false,
            "--isas" => {
                a.isas = value()?
                    .split(',')
                    .map(|n| {
                        let isa = Isa::ALL
                            .into_iter()
                            .find(|i| i.name() == n.trim())
                            .ok_or(format!("--isas: unknown path `{n}` (scalar, avx2, avx512, neon, neon-dotprod)"))?;
                        if isa.supported() { Ok(isa) } else { Err(format!("--isas: this CPU cannot run `{n}`")) }
                    })
                    .collect::<Result<_, String>>()?;
            }
            "--reps" => a.reps = value()?.parse().map_err(|e| format!("--reps: {e}"))?,
            "--formats" => {
                a.formats = value()?
                    .split(',')
                    .map(|n| GgmlType::parse(n.trim()).ok_or(format!("--formats: unknown format `{n}`")))
                    .collect::<Result<_, _>>()?;
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if a.isas.is_empty() {
        a.isas.push(Isa::Scalar);
    }
    if a.dram_mib == 0 || a.cache_kib == 0 || a.reps == 0 {
        return Err("sizes and --reps must be > 0".into());
    }
    Ok(a)
}

/// Best-of-`reps` seconds of `f`.
fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// STREAM-like read bandwidth, GB/s: every byte of `buf` read with the kernels' own load and
/// prefetch pattern, split over the current pool's threads.
fn read_bandwidth(buf: &[u8], reps: usize) -> f64 {
    let chunk = buf.len().div_ceil(4 * rayon::current_num_threads());
    let mut sink = 0u64;
    let t = best(reps, || {
        sink ^= buf.par_chunks(chunk).map(memwall_kernels::bandwidth::read_checksum).reduce(|| 0, |a, b| a ^ b);
    });
    std::hint::black_box(sink);
    buf.len() as f64 / t / 1e9
}

/// A matrix of about `bytes` bytes in format `t`: 64 quantized Gaussian rows tiled.
fn matrix(t: GgmlType, bytes: usize) -> (Vec<u8>, usize) {
    let mut state = 0x9E3779B97F4A7C15u64;
    let mut gauss = || {
        // Sum of uniforms: cheap, roughly Gaussian weights.
        (0..4)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .sum::<f32>()
    };
    let seed_rows = 64;
    let w: Vec<f32> = (0..seed_rows * COLS).map(|_| gauss()).collect();
    let q = quantize(t, &w).expect("quantize");
    let row_bytes = q.len() / seed_rows;
    let rows = (bytes / row_bytes).max(seed_rows);
    let mut data = Vec::with_capacity(rows * row_bytes);
    while data.len() < rows * row_bytes {
        let take = (rows * row_bytes - data.len()).min(q.len());
        data.extend_from_slice(&q[..take]);
    }
    (data, rows)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let threads = rayon::current_num_threads();
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("pool");
    let single = SpinPool::new(1);
    let dram_bytes = args.dram_mib << 20;
    let stream: Vec<u8> = (0..dram_bytes).map(|i| i as u8).collect();
    let bw1 = one.install(|| read_bandwidth(&stream, args.reps));
    let bwn = read_bandwidth(&stream, args.reps);
    println!("memwall-bench-kernels: {threads} threads, ISA {}", Isa::best().name());
    dispatch_overhead(threads);
    println!("read bandwidth ({} MiB): 1 thread {bw1:.2} GB/s, {threads} threads {bwn:.2} GB/s", args.dram_mib);
    if args.attention {
        attention(&args, &stream, &one);
    }
    println!("(DRAM ratios: median over {} back-to-back pairs of a GEMV and a bandwidth run)", args.reps);
    println!(
        "{:<8} {:<12} {:>9} {:>7} {:>10} {:>9} {:>7} {:>10} {:>9} {:>7}",
        "format", "isa", "size", "1t GB/s", "1t GFLOP/s", "1t ratio", "nt GB/s", "nt GFLOP/s", "nt ratio", "binds"
    );
    for &t in &args.formats {
        // One kernel per path asked for, each path once (a format without a kernel on a path
        // runs another path's, which is already measured).
        let mut kernels: Vec<Kernel> = Vec::new();
        for &isa in &args.isas {
            match Kernel::with_isa(t, isa) {
                Ok(k) if !kernels.iter().any(|o| o.isa() == k.isa()) => kernels.push(k),
                Ok(_) => {}
                Err(e) => eprintln!("skipping {t} on {}: {e}", isa.name()),
            }
        }
        for (label, bytes) in [("cache", args.cache_kib << 10), ("dram", dram_bytes)] {
            let (data, rows) = matrix(t, bytes);
            let m = QMatrix::new(t, rows, COLS, &data).expect("matrix");
            let x: Vec<f32> = (0..COLS).map(|i| ((i % 17) as f32 - 8.0) / 8.0).collect();
            let mut y = vec![0f32; rows];
            let reps = if label == "cache" { args.reps * 50 } else { args.reps };
            // At DRAM size, pair every GEMV run with a bandwidth run right after it and report
            // the median of the per-pair ratios: the machine's bandwidth drifts, a pair does not.
            let dram = label == "dram";
            let gb = |s: f64| data.len() as f64 / s / 1e9;
            let gflop = |s: f64| 2.0 * (rows * COLS) as f64 / s / 1e9;
            for k in &kernels {
                let (t1, tn, r1, rn) = if dram {
                    let (mut t1, mut tn, mut r1s, mut rns) = (f64::INFINITY, f64::INFINITY, Vec::new(), Vec::new());
                    for _ in 0..args.reps {
                        let a = best(1, || gemv_pool(k, &m, &x, &mut y, &single, 0).expect("gemv"));
                        r1s.push(gb(a) / one.install(|| read_bandwidth(&stream, 1)));
                        let b = best(1, || gemv_mt(k, &m, &x, &mut y).expect("gemv"));
                        rns.push(gb(b) / read_bandwidth(&stream, 1));
                        (t1, tn) = (t1.min(a), tn.min(b));
                    }
                    (t1, tn, median(&mut r1s), median(&mut rns))
                } else {
                    let t1 = best(reps, || gemv_pool(k, &m, &x, &mut y, &single, 0).expect("gemv"));
                    let tn = best(reps, || gemv_mt(k, &m, &x, &mut y).expect("gemv"));
                    (t1, tn, gb(t1) / bw1, gb(tn) / bwn)
                };
                // At DRAM size a GEMV that streams below 90 % of the read bandwidth is limited by
                // its unpacking and arithmetic (dequantization), not by memory.
                let binds = if dram { if rn >= 0.9 { "memory" } else { "dequant" } } else { "-" };
                println!(
                    "{:<8} {:<12} {:>9} {:>7.2} {:>10.1} {:>9.2} {:>7.2} {:>10.1} {:>9.2} {:>7}",
                    t.name(),
                    k.isa().name(),
                    format!("{label} {}", human(data.len())),
                    gb(t1),
                    gflop(t1),
                    r1,
                    gb(tn),
                    gflop(tn),
                    rn,
                    binds
                );
            }
        }
    }
}

/// Decode attention over a DRAM-size cache per KV format, one thread: KV GB/s, and its ratio
/// to a same-format, same-size GEMV's weight GB/s and to the read probe (medians of
/// back-to-back pairs).
fn attention(args: &Args, stream: &[u8], one: &rayon::ThreadPool) {
    let (n_heads, n_kv, hd) = (32usize, 8usize, 128usize);
    let single = SpinPool::new(1);
    println!("attention, 1 thread ({n_heads} query heads, {n_kv} KV heads of {hd}; medians of {} pairs):", args.reps);
    println!("{:<6} {:>9} {:>8} {:>9} {:>11} {:>10}", "kv", "size", "tokens", "KV GB/s", "÷ GEMV GB/s", "÷ read");
    for t in [GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0] {
        let mut cache = memwall_kernels::kv::KvCache::new(n_kv, hd, t, t, None).expect("cache");
        let tokens = (args.dram_mib << 20) / cache.token_bytes();
        let row: Vec<f32> = (0..n_kv * hd).map(|i| ((i * 7919) % 23) as f32 / 11.0 - 1.0).collect();
        let q: Vec<f32> = (0..n_heads * hd).map(|i| ((i * 104_729) % 19) as f32 / 9.0 - 1.0).collect();
        for j in 0..tokens {
            let shift = (j % 5) as f32 * 0.1;
            let k: Vec<f32> = row.iter().map(|v| v + shift).collect();
            cache.append(&k, &row).expect("append");
        }
        let mut out = vec![0f32; n_heads * hd];
        let (data, rows) = matrix(t, cache.bytes());
        let m = QMatrix::new(t, rows, COLS, &data).expect("matrix");
        let kern = Kernel::new(t).expect("kernel");
        let x: Vec<f32> = (0..COLS).map(|i| ((i % 17) as f32 - 8.0) / 8.0).collect();
        let mut y = vec![0f32; rows];
        let (mut kv_gb, mut vs_gemv, mut vs_read) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..args.reps {
            let a = cache.bytes() as f64 / best(1, || cache.attend(&q, n_heads, &mut out).expect("attend")) / 1e9;
            let g = data.len() as f64 / best(1, || gemv_pool(&kern, &m, &x, &mut y, &single, 0).expect("gemv")) / 1e9;
            let r = one.install(|| read_bandwidth(stream, 1));
            kv_gb.push(a);
            vs_gemv.push(a / g);
            vs_read.push(a / r);
        }
        println!(
            "{:<6} {:>9} {:>8} {:>9.2} {:>11.2} {:>10.2}",
            t.name(),
            human(cache.bytes()),
            tokens,
            median(&mut kv_gb),
            median(&mut vs_gemv),
            median(&mut vs_read)
        );
    }
}

fn human(b: usize) -> String {
    if b >= 1 << 20 { format!("{}M", b >> 20) } else { format!("{}K", b >> 10) }
}

/// Per-call cost of handing work to all threads: rayon against the persistent spin pool,
/// for an empty job and for a small GEMV (a decode step makes hundreds of such calls).
fn dispatch_overhead(threads: usize) {
    let pool = SpinPool::new(threads);
    let calls = 20_000;
    let per_call = |f: &mut dyn FnMut()| {
        f();
        let t = Instant::now();
        for _ in 0..calls {
            f();
        }
        t.elapsed().as_secs_f64() / calls as f64 * 1e6
    };
    let tasks = 4 * threads;
    let rayon_empty = per_call(&mut || {
        (0..tasks).into_par_iter().for_each(|i| {
            std::hint::black_box(i);
        })
    });
    let pool_empty = per_call(&mut || {
        pool.run(tasks, &|i| {
            std::hint::black_box(i);
        })
    });
    let (data, rows) = matrix(GgmlType::Q4_0, 256 * 2304);
    let m = QMatrix::new(GgmlType::Q4_0, rows, COLS, &data).expect("matrix");
    let k = Kernel::new(GgmlType::Q4_0).expect("kernel");
    let x: Vec<f32> = (0..COLS).map(|i| (i % 7) as f32 - 3.0).collect();
    let mut y = vec![0f32; rows];
    let rayon_gemv = per_call(&mut || gemv_par(&k, &m, &x, &mut y, 0).expect("gemv"));
    let pool_gemv = per_call(&mut || gemv_pool(&k, &m, &x, &mut y, &pool, 0).expect("gemv"));
    println!(
        "dispatch per call ({threads} threads): empty job rayon {rayon_empty:.2} µs, spin pool {pool_empty:.2} µs; \
         {rows}x{COLS} q4_0 GEMV rayon {rayon_gemv:.2} µs, spin pool {pool_gemv:.2} µs"
    );
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
