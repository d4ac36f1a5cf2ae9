//! From the host probes to a device and an engine profile memwall's cost model reads.
//!
//! | figure | from | model |
//! | --- | --- | --- |
//! | `memory.per_core_gbps` | 1-thread read of 8 × LLC, at the start and the end of the run ([`crate::host::merge_rounds`]) | bytes / s |
//! | `memory` peak (× `achievable_fraction` = 1) | the best read of 8 × LLC over thread counts, both rounds | bytes / s |
//! | last-level cache size and bandwidth | reads at LLC/2 | bytes / s at all threads |
//! | engine `dequant_cycles[f]` | 1-thread GEMV of `f` in cache | `t × Hz / weights − 1/MACs per cycle` |
//! | engine `attention_cycles[kv]` | attention, GQA and MHA, several contexts and threads | least squares `t × Hz × threads = a + c₁ MACs + c₂ KV bytes` |
//! | engine `bandwidth_share`, `overlap` | GEMVs in DRAM | least squares of `ln t`, `t = max(m/s, c) + (1 − o) min(m/s, c)` |
//! | engine `per_op_s`, `per_thread_sync_s`, `per_token_s` | decode of small models | least squares of the estimator's residual |
//!
//! Each fitted figure carries its 95 % interval (Student t, from the repeated timings or
//! the regression's residuals) in [`Fitted`].

use std::collections::BTreeMap;

use memwall_decode::{Engine, EngineConfig};
use memwall_spec::{
    Backend, CacheSpec, ClusterSpec, DeviceKind, DeviceSpec, EngineSpec, GgmlType, KvQuant, MemorySpec, ModelSpec, Os,
    PowerSpec, QuantFormat, Scenario, StorageSpec, UnitCosts, WeightQuant, Workload,
};
use nalgebra::{DMatrix, DVector};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::CalibError;
// The linear least-squares core is calibration's one ([`crate::fit`]); its old path stays.
pub use crate::fit::least_squares;
use crate::fit::least_squares_non_negative;
use crate::host::{HostInfo, Measurement, Plan, measure, robust_stat};

/// One fitted figure and its 95 % interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    /// Field of the profile (`memory.per_core_gbps`, `cpu.per_op_s`, ...).
    pub field: String,
    /// Value.
    pub value: f64,
    /// Lower bound of the 95 % interval.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
    /// How it was obtained.
    pub how: String,
}

impl Fitted {
    /// A cost that cannot be negative, as the profile keeps it: the fit's `raw` value and
    /// 95 % interval `[lo, hi]` intersected with `[0, ∞)`, so the interval never inverts and
    /// always holds the value (`[0, 0]` where the whole interval lies below 0: the cost is
    /// indistinguishable from nothing). A raw value below 0 is said in `how`.
    pub fn non_negative(field: String, raw: f64, lo: f64, hi: f64, how: String) -> Self {
        let value = raw.max(0.0);
        let how = if raw < 0.0 { format!("{how}; the fit gave {raw:.3e}, below 0: 0 kept") } else { how };
        Fitted { field, value, lo: lo.min(raw).max(0.0), hi: hi.max(raw).max(0.0), how }
    }

    /// The figure with the value a constrained fit chose (`≥ 0`), its interval widened to hold it.
    pub fn at(self, value: f64) -> Self {
        Fitted { value, lo: self.lo.min(value), hi: self.hi.max(value), ..self }
    }
}

/// A calibrated host: the device and engine profiles and the figures behind them.
#[derive(Debug, Clone)]
pub struct HostProfile {
    /// What the OS said.
    pub info: HostInfo,
    /// The device profile.
    pub device: DeviceSpec,
    /// The engine profile (memwall's reference engine on this host).
    pub engine: EngineSpec,
    /// Every fitted figure.
    pub fitted: Vec<Fitted>,
    /// The raw measurements.
    pub measurements: Vec<Measurement>,
}

/// The 97.5 % quantile of Student's t with `dof` degrees of freedom.
fn t975(dof: usize) -> f64 {
    StudentsT::new(0.0, 1.0, dof.max(1) as f64).map_or(2.0, |d| d.inverse_cdf(0.975))
}

/// The cluster the kernels run on here. The path sets the registers and the int8 product:
/// 256-bit on the AVX2 path (int8 through `vpmaddubsw`, no dot-product instruction), 512-bit
/// with `vpdpbusd` on the AVX-512 path, 128-bit NEON with SDOT where the CPU has it. A core
/// the CPU names ([`HostInfo::core`]) caps the width at its datapaths and sets the pipes
/// ([`memwall_spec::cores::core_figures`]): Zen 4 runs a 512-bit operation as two 256-bit
/// halves, so its AVX-512 path does the work of 256 bits × 2 pipes a cycle.
fn host_cluster(info: &HostInfo) -> ClusterSpec {
    let (simd_bits, int8_dot) = match info.isa.as_str() {
        "avx2" => (256, false),
        // AVX-512 with VNNI (`Isa::Avx512` requires it): 512-bit registers, `vpdpbusd`.
        "avx512" => (512, true),
        "neon" => (128, info.features.iter().any(|f| f == "asimddp")),
        "neon-dotprod" => (128, true),
        _ => (128, false),
    };
    let core = info.core.as_deref().and_then(memwall_spec::cores::core_figures);
    ClusterSpec {
        name: "host".into(),
        cores: info.cpus as u32,
        max_ghz: info.max_ghz,
        simd_bits: core.map_or(simd_bits, |c| c.simd_bits.min(simd_bits)),
        simd_pipes: core.map_or(2, |c| c.simd_pipes),
        int8_dot,
        power_w_per_core: 5.0,
    }
}

/// The widest registers memwall's quantized kernels use on the path `info` names: 256 bits
/// on x86, where the AVX-512 path runs the AVX2 bodies (`__m256i`, `vpdpbusd` on 256 bits)
/// compiled for AVX-512; its float rows alone use 512-bit registers. None elsewhere (the
/// path's registers are the kernels').
fn quantized_bits(info: &HostInfo) -> Option<u32> {
    (info.isa == "avx512").then_some(256)
}

/// Fit the device figures (bandwidths, caches, per-format and attention cycles) and the
/// engine's overlap from the probes; the engine's fixed costs are fitted afterwards by
/// [`fit_overheads`].
pub fn fit_device(name: &str, info: &HostInfo, rows: &[Measurement], plan: Plan) -> Result<HostProfile, CalibError> {
    let mut fitted = Vec::new();
    let threads = plan.threads();
    let tmax = *threads.last().expect("at least one thread count");
    let dram = rows
        .iter()
        .filter(|m| m.probe == "bandwidth")
        .map(|m| m.bytes)
        .max()
        .ok_or_else(|| CalibError::Empty("no bandwidth probe".into()))?;
    let gbps =
        |m: &Measurement| (m.work / m.seconds.mean / 1e9, m.work / m.seconds.hi / 1e9, m.work / m.seconds.lo / 1e9);
    let bw = |t: usize, size: u64| {
        rows.iter().find(|m| m.probe == "bandwidth" && m.threads == t && m.bytes == size).map(gbps)
    };
    let (per_core, pc_lo, pc_hi) = bw(1, dram).ok_or_else(|| CalibError::Empty("no 1-thread DRAM read".into()))?;
    let (peak, pk_lo, pk_hi) =
        threads.iter().filter_map(|&t| bw(t, dram)).fold((0.0, 0.0, 0.0), |b, x| if x.0 > b.0 { x } else { b });
    let mib = dram >> 20;
    fitted.push(Fitted {
        field: "memory.per_core_gbps".into(),
        value: per_core,
        lo: pc_lo,
        hi: pc_hi,
        how: format!("1-thread read of {mib} MiB (8 × LLC), at the start and the end of the run"),
    });
    fitted.push(Fitted {
        field: "memory peak (achievable) GB/s".into(),
        value: peak,
        lo: pk_lo,
        hi: pk_hi,
        how: format!("best read of {mib} MiB over {threads:?} threads, at the start and the end of the run"),
    });
    // Caches: the last level, at half its size with every thread; if that reads no faster
    // than DRAM (a virtual machine's share of a large host cache), the largest size that does.
    let llc_os = info.llc_bytes();
    let mut llc = (llc_os, 0.0);
    let mut sizes: Vec<u64> =
        rows.iter().filter(|m| m.probe == "bandwidth" && m.threads == tmax).map(|m| m.bytes).collect();
    sizes.sort_unstable();
    for &s in sizes.iter().rev() {
        let (g, ..) = bw(tmax, s).expect("listed");
        if s < dram && g >= 1.3 * peak {
            llc = (if s >= llc_os / 2 { llc_os } else { 2 * s }, g);
            break;
        }
    }
    let mut caches = Vec::new();
    if let Some(l2) = info.cache_bytes(2) {
        let size = (l2 / 2).min(dram);
        if let Some((g, lo, hi)) = bw(tmax, size) {
            caches.push(CacheSpec {
                name: "L2 (per core, aggregate)".into(),
                level: 2,
                size_bytes: l2 * info.cpus as u64,
                bandwidth_gbps: g,
                shared_by: "host".into(),
            });
            fitted.push(Fitted {
                field: "caches L2 GB/s".into(),
                value: g,
                lo,
                hi,
                how: format!("read of {} KiB × {tmax} threads", size >> 10),
            });
        }
    }
    if llc.1 > 0.0 {
        caches.push(CacheSpec {
            name: "last level".into(),
            level: 3,
            size_bytes: llc.0,
            bandwidth_gbps: llc.1,
            shared_by: "all".into(),
        });
        fitted.push(Fitted {
            field: "caches LLC GB/s".into(),
            value: llc.1,
            lo: llc.1,
            hi: llc.1,
            how: format!(
                "read at the largest probed size below {} MiB that beats DRAM by 30 % (OS reports {} MiB)",
                llc.0 >> 20,
                llc_os >> 20
            ),
        });
    }
    // Per-format cycles per weight beyond the multiply-add, 1 thread, in cache.
    let cluster = host_cluster(info);
    let quant_bits = quantized_bits(info);
    let mut dequant_cycles = BTreeMap::new();
    let mut attention_cycles = BTreeMap::new();
    let hz = info.max_ghz * 1e9;
    let mut cycles_per_weight = BTreeMap::new();
    for m in rows.iter().filter(|m| m.probe == "gemv" && m.detail == "cache" && m.threads == 1) {
        let f: GgmlType =
            GgmlType::parse(&m.format).ok_or_else(|| CalibError::Probe(format!("format {}", m.format)))?;
        let arith = if f.is_quantized() {
            1.0 / cluster.int8_macs_per_cycle_at(cluster.width_at_most(quant_bits))
        } else {
            1.0 / cluster.f32_fmas_per_cycle()
        };
        let c = |t: f64| t * hz / m.work;
        let total = c(m.seconds.mean);
        cycles_per_weight.insert(m.format.clone(), total);
        let dq = Fitted::non_negative(
            format!("cpu.dequant_cycles.{}", QuantFormat::Ggml(f)),
            total - arith,
            c(m.seconds.lo) - arith,
            c(m.seconds.hi) - arith,
            format!(
                "1-thread GEMV of {} KiB in cache: {total:.4} cycles/weight − {arith:.4} for the MAC",
                m.bytes >> 10
            ),
        );
        dequant_cycles.insert(QuantFormat::Ggml(f).to_string(), dq.value);
        fitted.push(dq);
    }
    // Attention: t × Hz × threads = a + c₁ × MACs + c₂ × KV bytes, per KV format, over GQA
    // and MHA shapes (which tell the two terms apart).
    for kv in crate::host::KV_FORMATS {
        let pts: Vec<&Measurement> = rows.iter().filter(|m| m.probe == "attention" && m.format == kv.name()).collect();
        if pts.len() < 4 {
            continue;
        }
        let x = DMatrix::from_fn(pts.len(), 3, |i, j| [1.0, pts[i].work, pts[i].bytes as f64][j]);
        let y = DVector::from_iterator(pts.len(), pts.iter().map(|m| m.seconds.mean * hz * m.threads as f64));
        // Every term is a cost: the fit is constrained to non-negative ones; the intervals are
        // the unconstrained fit's, intersected with [0, ∞).
        let (beta, se) = least_squares(&x, &y)?;
        let nn = least_squares_non_negative(&x, &y)?;
        let t = t975(pts.len() - 3);
        let key = QuantFormat::Ggml(kv).to_string();
        attention_cycles.insert(key.clone(), [nn[1], nn[2]]);
        for (i, what) in [(1, "per multiply-add"), (2, "per KV byte")] {
            fitted.push(
                Fitted::non_negative(
                    format!("cpu.attention_cycles.{key} {what}"),
                    beta[i],
                    beta[i] - t * se[i],
                    beta[i] + t * se[i],
                    format!(
                        "non-negative least squares over {} probes (GQA and MHA × contexts × threads; {:.0} cycles \
                         per call)",
                        pts.len(),
                        nn[0]
                    ),
                )
                .at(nn[i]),
            );
        }
    }
    // The engine's bandwidth share and overlap, from the GEMVs in DRAM: a GEMV interleaves
    // its loads with arithmetic and reaches less than a pure read.
    let mut pts = Vec::new();
    for m in rows.iter().filter(|m| m.probe == "gemv" && m.detail == "dram") {
        let (Some(cpw), Some((g, ..))) = (cycles_per_weight.get(&m.format), bw(m.threads, dram)) else { continue };
        let mem = m.bytes as f64 / (g.min(m.threads as f64 * per_core) * 1e9);
        let cpu = m.work * cpw / (hz * m.threads as f64);
        pts.push((mem, cpu, m.seconds.mean));
    }
    let (share, overlap, rms) = fit_share_overlap(&pts);
    let how = format!(
        "least squares of ln t over {} DRAM-sized GEMVs, t = max(m/s, c) + (1 − o) min(m/s, c) (rms {:.1} %)",
        pts.len(),
        100.0 * rms
    );
    fitted.push(Fitted { field: "cpu.bandwidth_share".into(), value: share, lo: share, hi: share, how: how.clone() });
    fitted.push(Fitted { field: "cpu.overlap".into(), value: overlap, lo: overlap, hi: overlap, how });
    let measured = "measured by `memwall calibrate`";
    let mut sources = BTreeMap::new();
    sources.insert(
        "memory".into(),
        format!(
            "{measured}: streaming reads of {mib} MiB; peak stated as the best measured read, achievable_fraction 1"
        ),
    );
    sources.insert("memory.ram_bytes".into(), "/proc/meminfo MemTotal".into());
    sources.insert("memory.os_reserved_bytes".into(), "/proc/meminfo MemTotal − MemAvailable at calibration".into());
    sources
        .insert("memory.dram_pj_per_bit".into(), "estimate: DDR4/DDR5 server memory ~15 pJ/bit; not measured".into());
    sources.insert("caches".into(), format!("{measured}; sizes from /sys/devices/system/cpu/cpu0/cache"));
    sources.insert(
        "clusters".into(),
        format!(
            "{measured}: {} CPUs of {} at {:.2} GHz, kernels on the {} path{}",
            info.cpus,
            info.cpu_model,
            info.max_ghz,
            info.isa,
            match &info.core {
                Some(c) => format!("; SIMD width and pipes of a {c} core (CPUID), memwall_spec::cores"),
                None => String::new(),
            }
        ),
    );
    sources.insert("clusters.power_w_per_core".into(), "estimate (5 W per server core); not measured".into());
    sources.insert("storage".into(), "estimate (NVMe-class 2 GB/s); not measured".into());
    sources.insert("power".into(), "estimate; not measured (no power counter read)".into());
    let available = info.available_bytes.min(info.ram_bytes);
    let device = DeviceSpec {
        name: name.into(),
        description: format!(
            "this host as memwall calibrate measured it on {}: {} ({} CPUs, {}, features {})",
            info.date,
            info.cpu_model,
            info.cpus,
            info.isa,
            info.features.join(" ")
        ),
        kind: Some(DeviceKind::Desktop),
        // The system this binary was built for.
        os: match std::env::consts::OS {
            "linux" => Some(Os::Linux),
            "macos" => Some(Os::Macos),
            "windows" => Some(Os::Windows),
            _ => None,
        },
        cooling: None,
        battery: None,
        source: format!("memwall calibrate on {}; raw measurements in {name}.measurements.csv", info.date),
        memory: MemorySpec {
            ram_bytes: info.ram_bytes.max(1 << 30),
            os_reserved_bytes: Some(info.ram_bytes.saturating_sub(available).min(info.ram_bytes / 2)),
            other_apps_bytes: 0,
            lpddr: "host DRAM (measured)".into(),
            channels: 1,
            channel_width_bits: 64,
            data_rate_mtps: peak * 1000.0 / 8.0,
            achievable_fraction: Some(1.0),
            accel_achievable_fraction: None,
            per_core_gbps: Some(per_core),
            dram_pj_per_bit: 15.0,
            peak_range: None,
        },
        caches,
        clusters: vec![cluster],
        accelerators: Default::default(),
        storage: StorageSpec { kind: "unknown (not measured)".into(), read_gbps: 2.0 },
        power: PowerSpec { static_w: 10.0, idle_w: 20.0 },
        thermal: None,
        sources,
        sheet: None,
        power_modes: Vec::new(),
    };
    device.validate().map_err(|e| CalibError::Probe(format!("the fitted device is invalid: {e}")))?;
    let engine = EngineSpec {
        name: format!("memwall@{name}"),
        aliases: Vec::new(),
        description: format!("memwall's reference engine (memwall decode) on {name}"),
        source: format!("memwall calibrate on {}", info.date),
        version: None,
        cpu_from: None,
        threads: memwall_spec::ThreadRule::BigCores,
        cpu: Some(UnitCosts {
            bandwidth_share: share,
            compute_efficiency: 1.0,
            prefill_efficiency: 1.0,
            per_token_s: 0.0,
            per_op_s: 0.0,
            per_thread_sync_s: 0.0,
            attention_kv_reads: 1.0,
            dequant_ops_per_weight: 0.0,
            dequant_cycles,
            attention_cycles,
            overlap: Some(overlap),
            formats: Vec::new(),
            cpu_fallback: false,
            max_rows: std::collections::BTreeMap::new(),
            mixer_s: std::collections::BTreeMap::new(),
            gemm_formats: Vec::new(),
            quantized_simd_bits: quant_bits,
            power_scale: None,
            error_ratio: None,
            error_ratio_stated: None,
            prefill_error_ratio: None,
        }),
        gpu: None,
        npu: None,
        sources: BTreeMap::from([(
            "cpu".to_string(),
            "compute_efficiency 1: the device's measured cycles per weight already are this engine's; per-op and per-token costs fitted on small models".to_string(),
        )]),
    };
    Ok(HostProfile { info: info.clone(), device, engine, fitted, measurements: rows.to_vec() })
}

/// The bandwidth share `s` and overlap `o` that minimize `Σ ln²(t̂ / t)` over GEMVs of
/// memory time `m` (at the full read bandwidth), arithmetic time `c` and measured time `t`,
/// with `t̂ = overlap_time(m / s, c, o)`; a grid of 0.005 in both, `s` in [0.3, 1]. Returns
/// `(s, o, rms relative error)`.
pub fn fit_share_overlap(pts: &[(f64, f64, f64)]) -> (f64, f64, f64) {
    let mut best = (1.0, 0.9, f64::INFINITY);
    for si in 60..=200 {
        let s = si as f64 * 0.005;
        for oi in 0..=200 {
            let o = oi as f64 * 0.005;
            let sse: f64 = pts
                .iter()
                .map(|&(m, c, t)| (memwall_sim::cost::formulas::overlap_time(m / s, c, o) / t).ln().powi(2))
                .sum();
            if sse < best.2 {
                best = (s, o, sse);
            }
        }
    }
    let rms = if pts.is_empty() { 0.0 } else { (best.2 / pts.len() as f64).sqrt() };
    (best.0, best.1, rms)
}

/// Small models whose decode time is mostly fixed costs, to fit them.
fn overhead_models() -> Vec<ModelSpec> {
    [4u32, 16]
        .iter()
        .map(|&layers| ModelSpec {
            name: format!("overhead-{layers}"),
            n_layers: layers,
            hidden: 256,
            n_heads: 4,
            n_kv_heads: 2,
            ffn: 512,
            vocab: 512,
            ..crate::host::attention_model()
        })
        .collect()
}

/// The scenario that predicts `tokens` decoded after `context` tokens with the engine of
/// `p` on `threads` threads.
pub fn host_scenario(
    p: &HostProfile,
    model: ModelSpec,
    weights: WeightQuant,
    kv: KvQuant,
    context: u64,
    tokens: u64,
    threads: u32,
) -> Scenario {
    Scenario {
        model,
        device: p.device.clone(),
        engine: p.engine.clone(),
        assume_defaults: false,
        weights,
        kv,
        workload: Workload {
            prompt_tokens: context.max(1),
            gen_tokens: tokens,
            context_tokens: context.max(1) + tokens,
            threads: Some(threads),
            backend: Backend::Cpu,
            margin_bytes: 0,
            history_tokens: Some(0),
            ..Workload::default()
        },
        cost: Default::default(),
        sim: memwall_spec::SimConfig::effects_off(),
    }
}

/// Fit the engine's per-operator, per-thread and per-token costs: decode small models on
/// the engine, predict them with these costs at zero, and solve
/// `t_measured − t_predicted = per_token + ops × (per_op + (threads − 1) × per_thread_sync)`
/// by least squares (`ops` = the estimator's operators per token).
pub fn fit_overheads(p: &mut HostProfile, plan: Plan, progress: &mut dyn FnMut(&str)) -> Result<(), CalibError> {
    let threads = plan.threads();
    let q8 = WeightQuant::new("Q8_0".parse().expect("a mix"));
    let mut obs = Vec::new();
    for m in overhead_models() {
        for &t in &threads {
            let cfg =
                EngineConfig { threads: t, seed: 5, ..EngineConfig::new(m.clone(), q8.clone(), KvQuant::default()) };
            let mut e = Engine::new(cfg).map_err(|e| CalibError::Probe(e.to_string()))?;
            // Decode 4 untimed then 32 (96) timed tokens from an empty cache: the context stays
            // short, so attention is a small, predicted part.
            let err = |e: memwall_decode::EngineError| CalibError::Probe(e.to_string());
            e.generate(1, 4, 0.0).map_err(err)?;
            let n = if plan.quick { 32 } else { 96 };
            let g = e.generate(1, n, 0.0).map_err(err)?;
            let samples = g.token_seconds.clone();
            let stat = robust_stat(&samples);
            let ctx = 4 + n as u64 / 2;
            let s = host_scenario(p, m.clone(), q8.clone(), KvQuant::default(), ctx, 1, t as u32);
            let predict = |per_op: f64| -> Result<f64, CalibError> {
                let mut s = s.clone();
                if let Some(u) = s.engine.cpu.as_mut() {
                    (u.per_op_s, u.per_token_s, u.per_thread_sync_s) = (per_op, 0.0, 0.0);
                }
                let e =
                    memwall_sim::estimate(&s).map_err(|e| CalibError::Scenario { id: m.name.clone(), source: e })?;
                Ok(1.0 / e.decode_tok_s)
            };
            let t0 = predict(0.0)?;
            let ops = (predict(1e-6)? - t0) / 1e-6;
            progress(&format!(
                "{} on {t} thread(s): {:.1} µs/token measured, {:.1} µs predicted before fixed costs, {ops:.0} operators",
                m.name,
                stat.mean * 1e6,
                t0 * 1e6
            ));
            p.measurements.push(Measurement {
                probe: "token",
                format: "q8_0".into(),
                threads: t,
                bytes: 0,
                work: ops,
                seconds: stat,
                samples,
                detail: m.name.clone(),
            });
            obs.push((stat.mean - t0, ops, t as f64));
        }
    }
    let multi = threads.len() > 1;
    let cols = if multi { 3 } else { 2 };
    let x = DMatrix::from_fn(obs.len(), cols, |i, j| match j {
        0 => 1.0,
        1 => obs[i].1,
        _ => obs[i].1 * (obs[i].2 - 1.0),
    });
    let y = DVector::from_iterator(obs.len(), obs.iter().map(|o| o.0));
    // Costs: the fit is constrained to non-negative ones (clamping one coefficient of an
    // unconstrained fit would leave the others fitted to a model that is not kept).
    let (beta, se) = least_squares(&x, &y)?;
    // The profile keeps each at most 1 s.
    let kept = least_squares_non_negative(&x, &y)?.map(|v| v.min(1.0));
    let t = t975(obs.len().saturating_sub(cols));
    let u = p.engine.cpu.as_mut().expect("a CPU engine");
    u.per_token_s = kept[0];
    u.per_op_s = kept[1];
    u.per_thread_sync_s = if multi { kept[2] } else { 0.0 };
    let names = ["cpu.per_token_s", "cpu.per_op_s", "cpu.per_thread_sync_s"];
    for (i, name) in names.iter().enumerate().take(cols) {
        p.fitted.push(
            Fitted::non_negative(
                (*name).into(),
                beta[i],
                beta[i] - t * se[i],
                beta[i] + t * se[i],
                format!("non-negative least squares over {} small-model decodes", obs.len()),
            )
            .at(kept[i]),
        );
    }
    p.engine.validate().map_err(|e| CalibError::Probe(format!("the fitted engine is invalid: {e}")))?;
    Ok(())
}

/// Calibrate this machine: probe it ([`crate::host::measure`]), fit the device ([`fit_device`]) and the
/// engine's fixed costs ([`fit_overheads`]). `progress` gets a line per probe.
pub fn calibrate_host(name: &str, plan: Plan, progress: &mut dyn FnMut(&str)) -> Result<HostProfile, CalibError> {
    let (info, rows) = measure(plan, progress)?;
    let mut p = fit_device(name, &info, &rows, plan)?;
    fit_overheads(&mut p, plan, progress)?;
    Ok(p)
}

/// The raw measurements as CSV: probe, format, threads, bytes, work, mean and interval of
/// the seconds per call, samples kept and set aside, detail, the samples.
pub fn measurements_csv(rows: &[Measurement]) -> String {
    let mut s =
        String::from("probe,format,threads,bytes,work,seconds_mean,seconds_lo,seconds_hi,n,outliers,detail,samples\n");
    for m in rows {
        let samples: Vec<String> = m.samples.iter().map(|x| format!("{x:.6e}")).collect();
        s.push_str(&format!(
            "{},{},{},{},{},{:.6e},{:.6e},{:.6e},{},{},{},{}\n",
            m.probe,
            m.format,
            m.threads,
            m.bytes,
            m.work,
            m.seconds.mean,
            m.seconds.lo,
            m.seconds.hi,
            m.seconds.n,
            m.seconds.outliers,
            m.detail,
            samples.join(" ")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::Fitted;

    #[test]
    fn a_named_core_sets_the_width_and_pipes_its_path_runs_at() {
        use crate::host::{HostInfo, core_from_cpuid};
        let info = |isa: &str, core: Option<String>| HostInfo {
            cpu_model: "AMD EPYC".into(),
            isa: isa.into(),
            features: Vec::new(),
            cpus: 2,
            max_ghz: 2.6,
            caches: Vec::new(),
            ram_bytes: 1 << 30,
            available_bytes: 1 << 30,
            date: "2026-12-07".into(),
            core,
        };
        // This development machine's CPUID: AuthenticAMD, family 25 (19h), model 17 (11h).
        let zen4 = core_from_cpuid("AuthenticAMD", 25, 17);
        assert_eq!(zen4.as_deref(), Some("zen4"));
        assert_eq!(core_from_cpuid("AuthenticAMD", 25, 0x21).as_deref(), Some("zen3"));
        assert_eq!(core_from_cpuid("AuthenticAMD", 26, 0x24).as_deref(), Some("zen5-mobile"));
        assert_eq!(core_from_cpuid("AuthenticAMD", 26, 0x44).as_deref(), Some("zen5"));
        assert_eq!(core_from_cpuid("GenuineIntel", 6, 0x8f), None);
        // Zen and Zen+ (128-bit datapaths, not in the table) and unlisted Zen 5-family models.
        assert_eq!(core_from_cpuid("AuthenticAMD", 23, 0x08), None);
        assert_eq!(core_from_cpuid("AuthenticAMD", 23, 0x31).as_deref(), Some("zen2"));
        assert_eq!(core_from_cpuid("AuthenticAMD", 26, 0x50), None);
        // Zen 4's AVX-512 path: 512-bit registers on 256-bit datapaths, two of them, vpdpbusd:
        // 2 × 256 / 8 = 64 int8 MACs a cycle, half of what the registers alone would say.
        let c = super::host_cluster(&info("avx512", zen4.clone()));
        assert_eq!((c.simd_bits, c.simd_pipes, c.int8_dot), (256, 2, true));
        assert_eq!(c.int8_macs_per_cycle(), 64.0);
        // Its AVX2 path stays at 256 bits without a dot-product instruction.
        let c = super::host_cluster(&info("avx2", zen4));
        assert_eq!((c.simd_bits, c.int8_dot), (256, false));
        // A core the CPU does not name keeps the path's registers.
        let c = super::host_cluster(&info("avx512", None));
        assert_eq!((c.simd_bits, c.simd_pipes), (512, 2));
        // Desktop Zen 5 has full 512-bit datapaths.
        let c = super::host_cluster(&info("avx512", Some("zen5".into())));
        assert_eq!(c.simd_bits, 512);
    }

    fn f(raw: f64, lo: f64, hi: f64) -> (f64, f64, f64, bool) {
        let x = Fitted::non_negative("x".into(), raw, lo, hi, "how".into());
        (x.value, x.lo, x.hi, x.how.contains("below 0"))
    }

    #[test]
    fn a_cost_and_its_interval_never_go_below_zero_or_invert() {
        // Inside [0, ∞): as fitted.
        assert_eq!(f(1.0, 0.5, 1.5), (1.0, 0.5, 1.5, false));
        // Straddling 0: the lower bound goes to 0.
        assert_eq!(f(0.2, -0.3, 0.7), (0.2, 0.0, 0.7, false));
        // A raw value under 0 (the dequant case `[0.0, −2.2e−2]` a quick calibration wrote):
        // the cost is 0, the interval [0, 0], and the note says so.
        assert_eq!(f(-0.05, -0.08, -0.022), (0.0, 0.0, 0.0, true));
        // Under 0 with an interval reaching above it: [0, hi].
        assert_eq!(f(-0.1, -0.4, 0.2), (0.0, 0.0, 0.2, true));
        // An interval that does not hold its value (the mean of timings against their
        // quantiles) is widened to hold it.
        assert_eq!(f(2.0, 2.5, 3.0), (2.0, 2.0, 3.0, false));
        // A constrained fit's value replaces the clamp; the interval widens to hold it.
        let x = Fitted::non_negative("x".into(), -0.05, -0.08, -0.022, "how".into()).at(0.01);
        assert_eq!((x.value, x.lo, x.hi), (0.01, 0.0, 0.01));
    }
}
