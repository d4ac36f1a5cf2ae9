//! Probing this machine with memwall's own kernels and engine: read bandwidth against
//! threads and working-set size, the GEMV of each weight format at cache and DRAM sizes,
//! attention per KV format and context, MoE routing, and the engine's fixed costs.
//!
//! Every probe repeats its timing until the 95 % confidence interval of its mean is within
//! [`TARGET_REL_CI`] of it, or its share of the time budget is spent; outliers beyond
//! 3.5 scaled median absolute deviations are set aside before the interval is taken.

use std::time::{Duration, Instant};

use memwall_decode::weights::RandomRows;
use memwall_decode::{Engine, EngineConfig, OpClass};
use memwall_kernels::dot::Kernel;
use memwall_kernels::gemv::{QMatrix, gemv_pool};
use memwall_kernels::pool::SpinPool;
use memwall_kernels::simd::Isa;
use memwall_spec::{GgmlType, KvQuant, ModelSpec, QuantFormat, WeightQuant};
use rand::SeedableRng;
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::CalibError;

/// Relative half-width of the 95 % interval a probe repeats until.
pub const TARGET_REL_CI: f64 = 0.02;

/// The weight formats probed (those `memwall validate` runs, and the common ones).
pub const FORMATS: [GgmlType; 9] = [
    GgmlType::F16,
    GgmlType::Q8_0,
    GgmlType::Q4_0,
    GgmlType::Q6_K,
    GgmlType::Q5_K,
    GgmlType::Q4_K,
    GgmlType::Q3_K,
    GgmlType::Q2_K,
    GgmlType::TQ2_0,
];

/// The KV formats probed.
pub const KV_FORMATS: [GgmlType; 3] = [GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0];

/// What the operating system says about this machine.
#[derive(Debug, Clone, PartialEq)]
pub struct HostInfo {
    /// CPU model name (`/proc/cpuinfo`).
    pub cpu_model: String,
    /// The path memwall's kernels use here (`avx2`, `neon`, `scalar`).
    pub isa: String,
    /// SIMD features the CPU reports that matter to the kernels.
    pub features: Vec<String>,
    /// Logical CPUs available to this process.
    pub cpus: usize,
    /// Highest clock, GHz (cpufreq's `cpuinfo_max_freq`, else `/proc/cpuinfo`'s MHz).
    pub max_ghz: f64,
    /// Data and unified caches: (level, bytes, CPUs sharing it).
    pub caches: Vec<(u32, u64, usize)>,
    /// Installed RAM and what is available now, bytes.
    pub ram_bytes: u64,
    /// Available memory, bytes.
    pub available_bytes: u64,
    /// UTC date of the probe (`YYYY-MM-DD`).
    pub date: String,
    /// The core's microarchitecture as [`memwall_spec::cores::core_figures`] names it
    /// (`zen4`), where the CPU identifies itself ([`core_from_cpuid`]); None elsewhere.
    pub core: Option<String>,
}

impl HostInfo {
    /// The last-level cache size, bytes (the largest the OS reports; 8 MiB if none).
    pub fn llc_bytes(&self) -> u64 {
        self.caches.iter().map(|c| c.1).max().unwrap_or(8 << 20)
    }

    /// Size of cache level `level` per core, bytes.
    pub fn cache_bytes(&self, level: u32) -> Option<u64> {
        self.caches.iter().find(|c| c.0 == level).map(|c| c.1)
    }
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// Parse a sysfs cache size (`48K`, `2048K`, `480M`).
pub fn parse_cache_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1u64 << 10),
        'M' => (&s[..s.len() - 1], 1 << 20),
        'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().map(|n| n * mult)
}

/// Count the CPUs of a sysfs list (`0-1`, `0,2,4-7`).
fn cpu_list_len(s: &str) -> usize {
    s.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap_or(0).saturating_sub(a.parse().unwrap_or(0)) + 1,
            None => 1,
        })
        .sum()
}

/// Today's UTC date from the system clock (civil-from-days, Howard Hinnant's algorithm).
pub fn utc_date(unix_s: u64) -> String {
    let z = (unix_s / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// A `/proc/meminfo` figure (`MemTotal:`, `MemAvailable:`), bytes; `None` where it cannot be read.
pub fn meminfo_bytes(name: &str) -> Option<u64> {
    read("/proc/meminfo")?
        .lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .map(|kib| kib.saturating_mul(1024))
}

/// Refuse a run whose working set (`bytes`, what `field` asks for) exceeds 90 % of the
/// memory available now (`MemAvailable`), before anything is allocated; where the OS does not
/// say, the run goes ahead.
pub fn check_memory(field: &str, bytes: u64) -> Result<(), CalibError> {
    match meminfo_bytes("MemAvailable:") {
        Some(avail) if bytes > avail / 10 * 9 => Err(CalibError::Probe(format!(
            "`{field}` needs {:.2} GB of memory; {:.2} GB is available",
            bytes as f64 / 1e9,
            avail as f64 / 1e9
        ))),
        _ => Ok(()),
    }
}

/// What this machine is, from `/proc` and `/sys` (Linux; elsewhere the fields it cannot
/// read are left at neutral values and said so in the profile's sources).
pub fn host_info() -> HostInfo {
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        cpuinfo.lines().find(|l| l.starts_with(name)).and_then(|l| l.split_once(':')).map(|(_, v)| v.trim().to_string())
    };
    let flags = field("flags").or_else(|| field("Features")).unwrap_or_default();
    let features =
        ["avx2", "fma", "f16c", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8", "asimd", "asimddp", "i8mm", "sve"]
            .iter()
            .filter(|f| flags.split_whitespace().any(|x| x == **f))
            .map(|f| f.to_string())
            .collect();
    let mhz = read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
        .and_then(|k| k.parse::<f64>().ok())
        .map(|khz| khz / 1e6)
        .or_else(|| field("cpu MHz").and_then(|m| m.parse::<f64>().ok()).map(|m| m / 1e3));
    let mut caches = Vec::new();
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let Some(level) = read(&format!("{dir}/level")).and_then(|l| l.parse::<u32>().ok()) else { break };
        if read(&format!("{dir}/type")).as_deref() == Some("Instruction") {
            continue;
        }
        let size = read(&format!("{dir}/size")).and_then(|s| parse_cache_size(&s)).unwrap_or(0);
        let shared = read(&format!("{dir}/shared_cpu_list")).map_or(1, |s| cpu_list_len(&s));
        if size > 0 {
            caches.push((level, size, shared));
        }
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let number = |name: &str| field(name).and_then(|v| v.parse::<u32>().ok());
    let core = match (field("vendor_id"), number("cpu family"), number("model")) {
        (Some(vendor), Some(family), Some(model)) => core_from_cpuid(&vendor, family, model),
        _ => None,
    };
    HostInfo {
        cpu_model: field("model name").unwrap_or_else(|| std::env::consts::ARCH.to_string()),
        isa: Isa::best().name().to_string(),
        features,
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        max_ghz: mhz.unwrap_or(2.0),
        caches,
        ram_bytes: meminfo_bytes("MemTotal:").unwrap_or(0),
        available_bytes: meminfo_bytes("MemAvailable:").unwrap_or(0),
        date: utc_date(now),
        core,
    }
}

/// The microarchitecture of an x86 core from its CPUID vendor, family and model (as
/// `/proc/cpuinfo` prints them), named as [`memwall_spec::cores::core_figures`] knows it;
/// None for a core it cannot tell (every Intel core: one family 6 model number covers
/// server and client parts whose vector units differ).
///
/// AMD (family and model numbers from AMD's processor programming references, as the Linux
/// kernel and LLVM's `getAMDProcessorTypeAndSubtype` list them): family 17h models 30h and
/// up are Zen 2 (below, Zen and Zen+, whose 128-bit datapaths the table does not list: None);
/// family 19h is Zen 4 for models 10h–1Fh (Genoa, Storm Peak), 60h–7Fh (Raphael, Phoenix)
/// and A0h–AFh (Bergamo), Zen 3 otherwise; family 1Ah is Zen 5 for models 00h–1Fh (Turin),
/// 40h–4Fh (Granite Ridge) and 70h–7Fh (Strix Halo), its monolithic mobile chips (Strix
/// Point 20h–2Fh, Krackan Point 60h–6Fh) on 256-bit datapaths, and None for the other models
/// of the family, which later cores take.
pub fn core_from_cpuid(vendor: &str, family: u32, model: u32) -> Option<String> {
    if vendor != "AuthenticAMD" {
        return None;
    }
    let name = match family {
        0x17 if model >= 0x30 => "zen2",
        0x19 if matches!(model, 0x10..=0x1f | 0x60..=0x7f | 0xa0..=0xaf) => "zen4",
        0x19 => "zen3",
        0x1a if matches!(model, 0x20..=0x2f | 0x60..=0x6f) => "zen5-mobile",
        0x1a if matches!(model, 0x00..=0x1f | 0x40..=0x4f | 0x70..=0x7f) => "zen5",
        _ => return None,
    };
    Some(name.to_string())
}

/// A mean with its 95 % confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    /// Mean of the samples kept.
    pub mean: f64,
    /// Lower bound of the 95 % interval.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
    /// Samples kept.
    pub n: usize,
    /// Samples set aside as outliers.
    pub outliers: usize,
}

impl Stat {
    /// Half-width of the interval relative to the mean.
    pub fn rel_half_width(&self) -> f64 {
        (self.hi - self.lo) / 2.0 / self.mean.abs().max(f64::MIN_POSITIVE)
    }
}

/// The mean and Student-t 95 % interval of `samples` after setting aside those more than
/// 3.5 scaled MADs (`1.4826 × median |x − median|`) from the median.
pub fn robust_stat(samples: &[f64]) -> Stat {
    let mut sorted: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return Stat { mean: f64::NAN, lo: f64::NAN, hi: f64::NAN, n: 0, outliers: samples.len() };
    }
    let median = sorted[sorted.len() / 2];
    let mut dev: Vec<f64> = sorted.iter().map(|x| (x - median).abs()).collect();
    dev.sort_by(f64::total_cmp);
    let mad = 1.4826 * dev[dev.len() / 2];
    let kept: Vec<f64> =
        if mad > 0.0 { sorted.iter().copied().filter(|x| (x - median).abs() <= 3.5 * mad).collect() } else { sorted };
    let n = kept.len();
    let mean = kept.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return Stat { mean, lo: f64::NEG_INFINITY, hi: f64::INFINITY, n, outliers: samples.len() - n };
    }
    let var = kept.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).map_or(2.0, |d| d.inverse_cdf(0.975));
    let half = t * (var / n as f64).sqrt();
    Stat { mean, lo: mean - half, hi: mean + half, n, outliers: samples.len() - n }
}

/// Two rounds of one probe taken apart in time as one figure: the mean of the rounds' means,
/// and an interval from the lower of their bounds to the higher, so that it holds both
/// rounds' means, and a machine that drifted between them widens it rather than one round
/// speaking for the whole calibration; kept and set-aside counts add.
pub fn merge_rounds(a: Stat, b: Stat) -> Stat {
    let mean = (a.mean + b.mean) / 2.0;
    Stat {
        mean,
        lo: a.lo.min(b.lo).min(a.mean).min(b.mean),
        hi: a.hi.max(b.hi).max(a.mean).max(b.mean),
        n: a.n + b.n,
        outliers: a.outliers + b.outliers,
    }
}

/// The statistics of `samples` once a probe may stop: at 25 samples, or from 3 on when the
/// interval is within [`TARGET_REL_CI`] or the probe's `budget` since `start` is spent.
fn settled(samples: &[f64], start: Instant, budget: Duration) -> Option<Stat> {
    let s = robust_stat(samples);
    let done = samples.len() >= 25
        || (samples.len() >= 3 && (s.rel_half_width() <= TARGET_REL_CI || start.elapsed() >= budget));
    done.then_some(s)
}

/// Time `f` (seconds per call) until the interval is tight or `budget` is spent: at least
/// 3 samples, at most 25; each sample repeats `f` to last at least `min_sample`.
pub fn time_until_tight(budget: Duration, min_sample: Duration, mut f: impl FnMut()) -> (Stat, Vec<f64>) {
    let start = Instant::now();
    f(); // warm: page in, caches, branch predictors
    let t = Instant::now();
    f();
    let once = t.elapsed().max(Duration::from_nanos(50));
    let reps = (min_sample.as_secs_f64() / once.as_secs_f64()).ceil().max(1.0) as usize;
    let mut samples = Vec::new();
    loop {
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        samples.push(t.elapsed().as_secs_f64() / reps as f64);
        if let Some(s) = settled(&samples, start, budget) {
            return (s, samples);
        }
    }
}

/// One probe's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    /// `bandwidth`, `gemv`, `attention`, `route` or `token`.
    pub probe: &'static str,
    /// Weight or KV format (`""` for bandwidth).
    pub format: String,
    /// Threads.
    pub threads: usize,
    /// Working set, bytes (buffer, matrix, KV cache or model weights).
    pub bytes: u64,
    /// Work per call: weights for a GEMV, multiply-adds for attention, tokens of context for
    /// a decode token, bytes for a read.
    pub work: f64,
    /// Seconds per call.
    pub seconds: Stat,
    /// The raw samples, seconds per call.
    pub samples: Vec<f64>,
    /// Free-form detail (model of a `token` probe, regime).
    pub detail: String,
}

/// What to probe, and for how long.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// The short probe set (≤ 2 minutes).
    pub quick: bool,
    /// Largest thread count (default: the CPUs available).
    pub max_threads: usize,
}

impl Plan {
    /// A plan probing up to `threads` threads (default: the CPUs available), refused outside
    /// 1 to 4 × the CPUs with an error naming `field`.
    pub fn new(quick: bool, threads: Option<usize>, field: &str) -> Result<Self, memwall_spec::SpecError> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let max_threads = threads.unwrap_or(cpus);
        if max_threads == 0 || max_threads > 4 * cpus {
            return Err(memwall_spec::SpecError::invalid(
                field,
                max_threads,
                format!("must be 1 to {} (4 × the CPUs available)", 4 * cpus),
            ));
        }
        Ok(Plan { quick, max_threads })
    }

    /// Thread counts probed: 1 and the maximum (and powers of two between, in full mode).
    pub fn threads(&self) -> Vec<usize> {
        let mut t = vec![1];
        let mut n = 2;
        while n < self.max_threads && !self.quick {
            t.push(n);
            n *= 2;
        }
        if self.max_threads > 1 {
            t.push(self.max_threads);
        }
        t
    }

    fn budget(&self) -> Duration {
        Duration::from_millis(if self.quick { 600 } else { 2500 })
    }
}

/// The DRAM working set of the probes: 8 × the last-level cache, at most a quarter of the
/// available memory.
pub fn dram_bytes(info: &HostInfo) -> u64 {
    let want = 8 * info.llc_bytes();
    let cap = (info.available_bytes / 4).max(256 << 20);
    want.min(cap)
}

/// Read bandwidth of `buf` on `pool`, GB/s samples: each thread reads its contiguous share.
fn bandwidth_probe(buf: &[u8], pool: &SpinPool, budget: Duration) -> (Stat, Vec<f64>) {
    let threads = pool.threads();
    let share = buf.len().div_ceil(threads);
    let sink = std::sync::atomic::AtomicU64::new(0);
    time_until_tight(budget, Duration::from_millis(20), || {
        pool.run(threads, &|i| {
            let part = &buf[(i * share).min(buf.len())..((i + 1) * share).min(buf.len())];
            sink.fetch_xor(memwall_kernels::bandwidth::read_checksum(part), std::sync::atomic::Ordering::Relaxed);
        });
    })
}

/// Run every probe of `plan`, reporting progress through `progress`.
pub fn measure(plan: Plan, progress: &mut dyn FnMut(&str)) -> Result<(HostInfo, Vec<Measurement>), CalibError> {
    let info = host_info();
    let started = Instant::now();
    let mut out = Vec::new();
    let threads = plan.threads();
    let pools: Vec<SpinPool> = threads.iter().map(|&t| SpinPool::new(t)).collect();
    let dram = dram_bytes(&info);
    progress(&format!(
        "host: {} ({} CPUs, {:.2} GHz, {} kernels), LLC {} MiB; DRAM probes use {} MiB",
        info.cpu_model,
        info.cpus,
        info.max_ghz,
        info.isa,
        info.llc_bytes() >> 20,
        dram >> 20
    ));
    // 1. Read bandwidth against working set and threads.
    let mut sizes: Vec<u64> = Vec::new();
    let mut s = 16u64 << 10;
    while s < dram {
        sizes.push(s);
        s *= 4;
    }
    for level in [1, 2, 3] {
        if let Some(c) = info.cache_bytes(level) {
            sizes.push(c / 2);
        }
    }
    sizes.push(dram);
    sizes.sort_unstable();
    sizes.dedup();
    // Every page written (no shared zero page); the checksum does not care what it reads.
    let buf = vec![0x5Au8; dram as usize];
    for (pool, &t) in pools.iter().zip(&threads) {
        for &size in &sizes {
            let (stat, samples) = bandwidth_probe(&buf[..size as usize], pool, plan.budget() / 2);
            progress(&format!("read {:>9} KiB, {t} thread(s): {:6.1} GB/s", size >> 10, size as f64 / stat.mean / 1e9));
            out.push(Measurement {
                probe: "bandwidth",
                format: String::new(),
                threads: t,
                bytes: size,
                work: size as f64,
                seconds: stat,
                samples,
                detail: String::new(),
            });
        }
    }
    drop(buf);
    // 2. GEMV per format: in cache (a quarter of L2 per thread, one matrix of rows of 4096),
    //    and in DRAM the way a decode issues them: a sweep over matrices of a transformer
    //    layer's shapes (2048 → 2048, 2048 → 5632, 5632 → 2048), one pool call each, until
    //    the sweep holds the DRAM working set.
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut random = RandomRows::default();
    let l2 = info.cache_bytes(2).unwrap_or(1 << 20);
    let dram_formats = if plan.quick { &[GgmlType::Q8_0, GgmlType::Q4_K][..] } else { &FORMATS[..] };
    for &f in &FORMATS {
        let kernel = Kernel::new(f).map_err(|e| CalibError::Probe(format!("{f}: {e}")))?;
        let mut regimes = vec![("cache", l2 / 4)];
        if dram_formats.contains(&f) {
            regimes.push(("dram", dram));
        }
        for (regime, target) in regimes {
            // (rows, cols) of the matrices of the sweep.
            let shapes: &[(usize, usize)] =
                if regime == "cache" { &[(0, 4096)] } else { &[(2048, 2048), (5632, 2048), (2048, 5632)] };
            for (pool, &t) in pools.iter().zip(&threads) {
                let bytes = if regime == "cache" { target * t as u64 } else { target } as usize;
                let mut mats: Vec<(Vec<u8>, usize, usize)> = Vec::new();
                let mut held = 0;
                while held < bytes {
                    let (r, cols) = shapes[mats.len() % shapes.len()];
                    let row_bytes = cols / f.block_size() as usize * f.type_size() as usize;
                    let rows = if r == 0 { (bytes / row_bytes).max(8 * t) } else { r };
                    let data = random.matrix(f, rows, cols, &mut rng).map_err(|e| CalibError::Probe(e.to_string()))?;
                    held += data.len();
                    mats.push((data, rows, cols));
                }
                let ms: Vec<QMatrix> = mats
                    .iter()
                    .map(|(d, r, c)| QMatrix::new(f, *r, *c, d))
                    .collect::<Result<_, _>>()
                    .map_err(|e| CalibError::Probe(e.to_string()))?;
                let xs: Vec<Vec<f32>> = ms
                    .iter()
                    .map(|m| (0..m.cols()).map(|i| ((i * 7919 % 113) as f32 - 56.0) / 56.0).collect())
                    .collect();
                let mut ys: Vec<Vec<f32>> = ms.iter().map(|m| vec![0f32; m.rows()]).collect();
                let (stat, samples) = time_until_tight(plan.budget(), Duration::from_millis(10), || {
                    for ((m, x), y) in ms.iter().zip(&xs).zip(ys.iter_mut()) {
                        gemv_pool(&kernel, m, x, y, pool, 0).expect("shapes checked");
                    }
                });
                let weights: f64 = ms.iter().map(|m| (m.rows() * m.cols()) as f64).sum();
                progress(&format!(
                    "gemv {:>6} {regime:>5} {:>7} KiB in {} matrices, {t} thread(s): {:6.2} ns/weight/thread, {:6.1} GB/s",
                    f.name(),
                    held >> 10,
                    ms.len(),
                    stat.mean / weights * t as f64 * 1e9,
                    held as f64 / stat.mean / 1e9
                ));
                out.push(Measurement {
                    probe: "gemv",
                    format: f.name().to_string(),
                    threads: t,
                    bytes: held as u64,
                    work: weights,
                    seconds: stat,
                    samples,
                    detail: regime.to_string(),
                });
            }
        }
    }
    // 3. Attention per KV format, context and query heads per KV head, through the engine.
    let contexts: &[usize] = if plan.quick { &[512, 4096] } else { &[256, 1024, 4096, 8192] };
    for &kv in &KV_FORMATS {
        for (shape, model) in [("gqa", attention_model()), ("mha", mha_attention_model())] {
            for &t in &threads {
                for &ctx in contexts {
                    let (stat, samples, macs, bytes) = attention_probe(&model, kv, ctx, t, plan.budget())?;
                    progress(&format!(
                        "attention {shape} kv {:>4} at {ctx:>5} tokens, {t} thread(s): {:7.3} ms/layer",
                        kv.name(),
                        stat.mean * 1e3
                    ));
                    out.push(Measurement {
                        probe: "attention",
                        format: kv.name().to_string(),
                        threads: t,
                        bytes,
                        work: macs,
                        seconds: stat,
                        samples,
                        detail: format!("{shape} context {ctx}"),
                    });
                }
            }
        }
    }
    // 4. MoE routing: softmax and top-k over the router's logits.
    for (experts, k) in [(8usize, 2usize), (64, 8), (128, 8)] {
        let logits: Vec<f32> = (0..experts).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
        let (stat, samples) = time_until_tight(plan.budget() / 4, Duration::from_millis(5), || {
            std::hint::black_box(memwall_kernels::moe::route(std::hint::black_box(&logits), k).expect("valid"));
        });
        progress(&format!("route top-{k} of {experts}: {:.2} µs", stat.mean * 1e6));
        out.push(Measurement {
            probe: "route",
            format: String::new(),
            threads: 1,
            bytes: 4 * experts as u64,
            work: experts as f64,
            seconds: stat,
            samples,
            detail: format!("top-{k} of {experts}"),
        });
    }
    // 5. The DRAM reads again, after everything else: a guest's bandwidth drifts over
    //    minutes (one core read 20.1 and 24.0 GB/s in two calibrations 25 minutes apart on a
    //    Zen 4 guest, each within ±2 %), and the figures every memory-bound prediction rests
    //    on should not come from one moment of the run.
    let buf = vec![0x5Au8; dram as usize];
    for (pool, &t) in pools.iter().zip(&threads) {
        let Some(m) = out.iter_mut().find(|m| m.probe == "bandwidth" && m.threads == t && m.bytes == dram) else {
            continue;
        };
        let elapsed = started.elapsed().as_secs_f64();
        let (stat, samples) = bandwidth_probe(&buf, pool, plan.budget() / 2);
        progress(&format!(
            "read {:>9} KiB, {t} thread(s), again: {:6.1} GB/s (first round {:.1} GB/s)",
            dram >> 10,
            dram as f64 / stat.mean / 1e9,
            dram as f64 / m.seconds.mean / 1e9
        ));
        m.seconds = merge_rounds(m.seconds, stat);
        m.samples.extend(samples);
        m.detail = format!("two rounds, the second {elapsed:.0} s into the calibration");
    }
    Ok((info, out))
}

/// A 2-layer model whose attention is TinyLlama's (32 heads of 64, 4 KV heads).
pub fn attention_model() -> ModelSpec {
    ModelSpec {
        name: "attention-probe".into(),
        source: "memwall calibrate".into(),
        n_layers: 2,
        hidden: 2048,
        n_heads: 32,
        n_kv_heads: 4,
        head_dim: Some(64),
        ffn: 256,
        ffn_gated: true,
        vocab: 256,
        tied_embeddings: true,
        attn_bias: false,
        max_context: None,
        layer_pattern: vec![memwall_spec::LayerKind::Full],
        layer_kinds: None,
        sliding_window: None,
        kv_share_group: None,
        moe: None,
        mla: None,
        ssm: None,
        linear: None,
        short_conv: None,
        ffn_per_layer: None,
        n_heads_per_layer: None,
        n_kv_heads_per_layer: None,
        head_dim_per_layer: None,
        kv_shared_layers: None,
        per_layer_embedding: None,
        trained_bits: None,
        from_file: None,
        stored: None,
        sources: Default::default(),
    }
}

/// A 2-layer model with multi-head attention (8 heads of 64, one KV head each).
pub fn mha_attention_model() -> ModelSpec {
    ModelSpec { name: "attention-probe-mha".into(), hidden: 512, n_heads: 8, n_kv_heads: 8, ..attention_model() }
}

/// Seconds per layer of attention over `ctx` cached tokens in `kv`, its multiply-adds
/// (`2 × heads × head_dim × tokens`) and KV bytes read.
fn attention_probe(
    m: &ModelSpec,
    kv: GgmlType,
    ctx: usize,
    threads: usize,
    budget: Duration,
) -> Result<(Stat, Vec<f64>, f64, u64), CalibError> {
    let kvq = KvQuant { k: QuantFormat::Ggml(kv), v: QuantFormat::Ggml(kv) };
    let cfg = EngineConfig {
        threads,
        seed: 1,
        ..EngineConfig::new(m.clone(), WeightQuant::new("Q8_0".parse().expect("a mix")), kvq)
    };
    let mut e = Engine::new(cfg).map_err(|e| CalibError::Probe(e.to_string()))?;
    e.fill_context(ctx).map_err(|e| CalibError::Probe(e.to_string()))?;
    let layers = m.n_layers as f64;
    let mut samples = Vec::new();
    let start = Instant::now();
    // Each token adds one to the context; the few tokens timed change it by < 1 %.
    for i in 0.. {
        e.reset_timings();
        e.step(1).map_err(|e| CalibError::Probe(e.to_string()))?;
        if i > 0 {
            samples.push(e.timings().of(OpClass::Attention) / layers);
        }
        if let Some(s) = settled(&samples, start, budget) {
            let tokens = (ctx + i + 1) as f64;
            let macs = 2.0 * (m.n_heads * m.head_dim()) as f64 * tokens;
            let bytes = e.kv_bytes() / m.n_layers as u64;
            return Ok((s, samples, macs, bytes));
        }
    }
    unreachable!("the loop returns")
}
