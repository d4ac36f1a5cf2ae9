//! Host calibration without a host: the statistics, the fits on synthetic probes with known
//! true parameters, and the profile it writes, loaded back.

use memwall_calib::host::{HostInfo, Measurement, Plan, Stat, merge_rounds, parse_cache_size, robust_stat, utc_date};
use memwall_calib::hostfit::{fit_device, fit_share_overlap, least_squares};
use memwall_sim::cost::formulas::overlap_time;
use memwall_spec::DeviceSpec;
use nalgebra::{DMatrix, DVector};

/// Two rounds of a probe: the figure is the mean of their means and its interval holds both
/// means, however tight each round's own interval; by hand, rounds of 10 ± 0.2 and 12 ± 0.2
/// give 11 in [9.8, 12.2], and identical rounds give themselves.
#[test]
fn two_rounds_of_a_probe_give_an_interval_that_holds_both() {
    let a = Stat { mean: 10.0, lo: 9.8, hi: 10.2, n: 5, outliers: 1 };
    let b = Stat { mean: 12.0, lo: 11.8, hi: 12.2, n: 4, outliers: 0 };
    let m = merge_rounds(a, b);
    assert_eq!((m.mean, m.lo, m.hi, m.n, m.outliers), (11.0, 9.8, 12.2, 9, 1));
    assert_eq!(merge_rounds(b, a), m);
    let same = merge_rounds(a, a);
    assert_eq!((same.mean, same.lo, same.hi), (a.mean, a.lo, a.hi));
    // A round whose interval does not hold its mean (one sample: infinite) still bounds it.
    let one = Stat { mean: 11.0, lo: f64::NEG_INFINITY, hi: f64::INFINITY, n: 1, outliers: 0 };
    assert_eq!(merge_rounds(a, one).lo, f64::NEG_INFINITY);
}

#[test]
fn sizes_dates_and_robust_intervals() {
    assert_eq!(parse_cache_size("48K"), Some(48 << 10));
    assert_eq!(parse_cache_size("480M"), Some(480 << 20));
    assert_eq!(parse_cache_size("x"), None);
    assert_eq!(utc_date(0), "1970-01-01");
    assert_eq!(utc_date(1_796_256_000), "2026-12-03");
    assert_eq!(utc_date(951_782_400), "2000-02-29");
    // An outlier 10× the rest is set aside; the interval holds the mean of the others.
    let s = robust_stat(&[1.0, 1.01, 0.99, 1.02, 0.98, 10.0]);
    assert_eq!((s.n, s.outliers), (5, 1));
    assert!((s.mean - 1.0).abs() < 1e-9 && s.lo < 1.0 && s.hi > 1.0 && s.rel_half_width() < 0.03, "{s:?}");
}

#[test]
fn least_squares_recovers_a_line_and_its_uncertainty() {
    // y = 3 + 0.25 x with ±0.1 alternating noise.
    let xs: Vec<f64> = (0..20).map(|i| i as f64 * 10.0).collect();
    let x = DMatrix::from_fn(20, 2, |i, j| if j == 0 { 1.0 } else { xs[i] });
    let y = DVector::from_iterator(
        20,
        xs.iter().enumerate().map(|(i, v)| 3.0 + 0.25 * v + if i % 2 == 0 { 0.1 } else { -0.1 }),
    );
    let (b, se) = least_squares(&x, &y).unwrap();
    assert!((b[0] - 3.0).abs() < 0.1 && (b[1] - 0.25).abs() < 1e-3, "{b}");
    assert!(se[1] > 0.0 && se[1] < 1e-3);
    assert!(least_squares(&DMatrix::zeros(1, 2), &DVector::zeros(1)).is_err());
}

#[test]
fn share_and_overlap_are_recovered_from_synthetic_gemvs() {
    let (s, o) = (0.8, 0.6);
    // Memory-bound, balanced and compute-bound GEMVs.
    let pts: Vec<(f64, f64, f64)> = [(1.0, 0.3), (1.0, 1.0), (1.0, 1.5), (0.5, 2.0), (2.0, 1.0), (1.0, 0.8)]
        .iter()
        .map(|&(m, c)| (m, c, overlap_time(m / s, c, o)))
        .collect();
    let (fs, fo, rms) = fit_share_overlap(&pts);
    assert!((fs - s).abs() < 0.011 && (fo - o).abs() < 0.011 && rms < 0.01, "{fs} {fo} {rms}");
}

fn m(
    probe: &'static str,
    format: &str,
    threads: usize,
    bytes: u64,
    work: f64,
    seconds: f64,
    detail: &str,
) -> Measurement {
    let stat = Stat { mean: seconds, lo: seconds * 0.99, hi: seconds * 1.01, n: 5, outliers: 0 };
    Measurement {
        probe,
        format: format.into(),
        threads,
        bytes,
        work,
        seconds: stat,
        samples: vec![seconds; 5],
        detail: detail.into(),
    }
}

/// Probes of a machine with known figures: 2 cores at 2 GHz, L2 1 MiB at 100 GB/s per core,
/// an LLC of 32 MiB at 60 GB/s, DRAM 10 GB/s per core and 16 in all, Q4_0 at 0.1 cycles per
/// weight (0.0375 beyond the MAC), attention 0.5 cycles/MAC + 1 cycle/KV byte.
fn synthetic() -> (HostInfo, Vec<Measurement>) {
    let info = HostInfo {
        cpu_model: "synthetic".into(),
        isa: "avx2".into(),
        features: vec!["avx2".into()],
        cpus: 2,
        max_ghz: 2.0,
        caches: vec![(1, 32 << 10, 1), (2, 1 << 20, 1), (3, 32 << 20, 2)],
        ram_bytes: 16 << 30,
        available_bytes: 12 << 30,
        date: "2026-12-03".into(),
        core: None,
    };
    let dram = 256u64 << 20;
    let mut rows = Vec::new();
    for (t, dram_gbps, llc_gbps, l2_gbps) in [(1, 10.0, 30.0, 100.0), (2, 16.0, 60.0, 200.0)] {
        for (size, g) in [(512 << 10, l2_gbps), (16 << 20, llc_gbps), (dram, dram_gbps)] {
            rows.push(m("bandwidth", "", t, size, size as f64, size as f64 / (g * 1e9), ""));
        }
        let w = 1e6;
        rows.push(m("gemv", "q4_0", t, (w * 0.5625) as u64, w, w * 0.1 / (2e9 * t as f64), "cache"));
        // In DRAM: memory 0.5625 B/w at 0.8 of the read bandwidth, fully overlapped.
        let wd = 4e8;
        let mem = wd * 0.5625 / (0.8 * dram_gbps * 1e9);
        let cpu = wd * 0.1 / (2e9 * t as f64);
        rows.push(m("gemv", "q4_0", t, (wd * 0.5625) as u64, wd, mem.max(cpu), "dram"));
        for (ctx, macs, kv) in
            [(512.0, 4.0e6, 1.0e6), (4096.0, 3.2e7, 8.0e6), (1024.0, 8.0e6, 8.0e6), (2048.0, 1.6e7, 4.0e6)]
        {
            let cycles = 1000.0 + 0.5 * macs + 1.0 * kv;
            rows.push(m("attention", "f16", t, kv as u64, macs, cycles / (2e9 * t as f64), &format!("context {ctx}")));
        }
    }
    (info, rows)
}

#[test]
fn a_synthetic_machine_is_recovered_and_its_profile_loads_back() {
    let (info, rows) = synthetic();
    let p = fit_device("synthetic", &info, &rows, Plan { quick: true, max_threads: 2 }).unwrap();
    let d = &p.device;
    assert!((d.memory.per_core_gbps.unwrap() - 10.0).abs() < 1e-6);
    assert!((d.memory.peak_gbps() - 16.0).abs() < 1e-6);
    let llc = d.last_level_cache().unwrap();
    assert_eq!(llc.size_bytes, 32 << 20); // the 16 MiB probe is fast: the OS figure stands
    assert!((llc.bandwidth_gbps - 60.0).abs() < 1e-6);
    let u = p.engine.cpu.as_ref().unwrap();
    assert!((u.dequant_cycles["q4_0"] - (0.1 - 1.0 / 16.0)).abs() < 1e-9, "{:?}", u.dequant_cycles);
    let [per_mac, per_byte] = u.attention_cycles["f16"];
    assert!((per_mac - 0.5).abs() < 1e-6 && (per_byte - 1.0).abs() < 1e-6, "{per_mac} {per_byte}");
    assert!((u.bandwidth_share - 0.8).abs() < 0.011, "{}", u.bandwidth_share);
    // Written and read back, the profile is a valid device with the same figures.
    let text = toml::to_string(d).unwrap();
    let back: DeviceSpec = toml::from_str(&text).unwrap();
    back.validate().unwrap();
    assert_eq!(&back, d);
    let engine_back: memwall_spec::EngineSpec = toml::from_str(&toml::to_string(&p.engine).unwrap()).unwrap();
    engine_back.validate().unwrap();
}

#[test]
fn corrupted_or_partial_profiles_are_refused_naming_the_field() {
    let (info, rows) = synthetic();
    let p = fit_device("synthetic", &info, &rows, Plan { quick: true, max_threads: 2 }).unwrap();
    let text = toml::to_string(&p.engine).unwrap();
    let engine = |t: &str| toml::from_str::<memwall_spec::EngineSpec>(t).unwrap().validate().unwrap_err().to_string();
    // A cycle count that is not a number of cycles.
    let bad = text.replace("q4_0 = 0.0375", "q4_0 = -1.0");
    assert_ne!(bad, text);
    let e = engine(&bad);
    assert!(e.contains("dequant_cycles.q4_0"), "{e}");
    // An unknown format name.
    let e = engine(&text.replace("q4_0 = 0.0375", "q4_9 = 0.1"));
    assert!(e.contains("q4_9"), "{e}");
    let text = toml::to_string(&p.device).unwrap();
    // A file cut in half does not parse.
    assert!(toml::from_str::<DeviceSpec>(&text[..text.len() / 2]).is_err());
    // No probes at all: a clear error, not a profile of zeros.
    assert!(fit_device("x", &info, &[], Plan { quick: true, max_threads: 2 }).is_err());
}

#[test]
fn quality_fit_recovers_a_power_law_and_measured_errors_order_the_formats() {
    use memwall_calib::quality_fit::{Method, QualityFit, format_error, synthetic_layer};
    // dPPL = e^1 × err^2, with ±5 % alternating noise.
    let pts: Vec<(f64, f64)> = (1..12)
        .map(|i| {
            let e = 0.01 * i as f64;
            (e, std::f64::consts::E * e * e * if i % 2 == 0 { 1.05 } else { 0.95 })
        })
        .collect();
    let fit = QualityFit::fit(&pts).unwrap();
    assert!((fit.a - 1.0).abs() < 0.1 && (fit.b - 2.0).abs() < 0.05, "{fit:?}");
    let (mid, lo, hi) = fit.predict(0.05);
    assert!(lo < mid && mid < hi && (mid / (std::f64::consts::E * 0.0025) - 1.0).abs() < 0.05);
    assert!(QualityFit::fit(&pts[..2]).is_err());
    // Fewer bits, more error; GPTQ and AWQ beat round-to-nearest on held-out activations.
    let layer = synthetic_layer(32, 256, 512, 0.7, 3);
    let err = |f: &str, m| format_error(&layer, f.parse().unwrap(), m).unwrap();
    let (e8, e4, e3, e2) = (
        err("int8-g64", Method::Rtn),
        err("int4-g64", Method::Rtn),
        err("int3-g64", Method::Rtn),
        err("int2-g64", Method::Rtn),
    );
    assert!(e8 < e4 && e4 < e3 && e3 < e2, "{e8} {e4} {e3} {e2}");
    assert!(err("int4-g64", Method::Gptq) < e4 && err("int4-g64", Method::Awq) < e4);
    assert!(err("q8_0", Method::Rtn) < err("q4_K", Method::Rtn) && err("q4_K", Method::Rtn) < err("q2_K", Method::Rtn));
}
