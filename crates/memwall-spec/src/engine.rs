//! Inference engines: what a framework adds on a compute unit. The device says what a unit
//! can do (its DRAM bandwidth share, its throughput); the engine says what the framework
//! achieves on it: its share of that bandwidth, its arithmetic efficiency, its fixed cost per
//! token and per operator (a CPU thread barrier, a GPU kernel launch), how often its
//! attention reads the KV cache, and which formats it runs at all. Neither borrows the
//! other's numbers.
//!
//! ```toml
//! name = "llama.cpp"
//! aliases = ["ollama"]
//! [cpu]
//! bandwidth_share = 0.9
//! per_token_s = 3e-4
//! per_op_s = 4e-6
//! per_thread_sync_s = 5e-7
//! compute_efficiency = 0.6
//! [gpu]
//! bandwidth_share = 0.8
//! per_op_s = 8e-6
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::device::DeviceSpec;
use crate::error::{Result, SpecError, fraction, non_negative, positive_at_most};
use crate::model::LayerKind;
use crate::quant::QuantFormat;
use crate::workload::Backend;

fn one() -> f64 {
    1.0
}

/// The largest [`UnitCosts::bandwidth_share`]: a device's achievable fraction is mostly a
/// copy benchmark's (reads and writes), and an engine's decode, which only reads, streams
/// faster than that on many chips (llama.cpp's Metal F16 rows on an M3 Max reach 0.85 of the
/// peak where a PyTorch-MPS copy reaches 0.78). The estimator caps the product at the peak
/// ([`crate::MemorySpec::peak_gbps`]).
pub const MAX_BANDWIDTH_SHARE: f64 = 1.5;

/// What an engine achieves on one kind of compute unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnitCosts {
    /// Share of the unit's achievable DRAM bandwidth (the device's figure for the unit) that
    /// the engine's decode streams at, at most [`MAX_BANDWIDTH_SHARE`]; the two together never
    /// exceed the peak. Default 1.
    #[serde(default = "one")]
    pub bandwidth_share: f64,
    /// Share of the unit's peak arithmetic (SIMD multiply-adds on a CPU, ALU throughput on a
    /// GPU or NPU) a decode matrix-vector product reaches.
    pub compute_efficiency: f64,
    /// The same for a prefill matrix-matrix product.
    pub prefill_efficiency: f64,
    /// Fixed cost per decoded token outside the graph (sampling, graph build, host sync), s.
    pub per_token_s: f64,
    /// Fixed cost per graph operator (a CPU barrier or a GPU kernel launch), s.
    pub per_op_s: f64,
    /// CPU only: extra barrier cost per operator for each thread beyond the first, s.
    #[serde(default)]
    pub per_thread_sync_s: f64,
    /// How many times a decode step reads the KV cache it attends over (1 for GQA-aware
    /// kernels; `n_heads / n_kv_heads` for one that re-reads it per query head). Default 1.
    #[serde(default = "one")]
    pub attention_kv_reads: f64,
    /// GPU/NPU: arithmetic operations per weight to dequantize a quantized weight on the unit
    /// (unpacking, scaling), on top of the multiply-add; multiplied by the format's relative
    /// dequantization cost ([`crate::cost::default_dequant_cycles`] ÷ that of Q4_0). Default 0.
    #[serde(default)]
    pub dequant_ops_per_weight: f64,
    /// How much of the memory time and the arithmetic of a step overlap (0 to 1): the
    /// engine's own figure, measured by `memwall calibrate`; absent: the cost model's
    /// `overlap`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<f64>,
    /// CPU: cycles per weight this engine's decode GEMV spends beyond the multiply-add, per
    /// weight format (`q4_K`, `q8_0`, ...), measured on the device it was calibrated on
    /// (`memwall calibrate`); they replace the cost model's table (given for a 128-bit,
    /// 2-pipe core and scaled) for this engine only. A scenario's `cost.dequant_cycles`
    /// still wins.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dequant_cycles: BTreeMap<String, f64>,
    /// CPU: cycles of this engine's decode attention on one core, per KV-cache format
    /// (`f16`, `q8_0`, `q4_0`): `[per multiply-add (QKᵀ and AV), per KV-cache byte read]`.
    /// Absent: f32 arithmetic at a quarter of the int8 MAC rate, nothing per byte.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attention_cycles: BTreeMap<String, [f64; 2]>,
    /// Weight formats the engine runs on this unit (names as `q4_0`, `q4_K`, `f16`,
    /// `int4-g32`; a trailing `*` matches a prefix); empty: every format.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub formats: Vec<String>,
    /// Whether weights in a format outside `formats` run on the CPU, with the engine's CPU
    /// figures, rather than the design being refused, as ggml's scheduler places an operator
    /// whose weights its backend cannot multiply (llama.cpp's Hexagon backend multiplies
    /// q4_0, q8_0 and mxfp4 only). Those weights take their share of a step: of its weight
    /// bytes in decode, of its multiply-adds in a prompt, at the CPU's rate
    /// ([`UnitCosts::cpu_share`]). Default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cpu_fallback: bool,
    /// The most rows (output features, ggml's `ne[1]`) a weight matrix of a format may have
    /// for the unit to multiply it, per format (names as in `formats`); a larger matrix runs
    /// on the CPU ([`UnitCosts::cpu_fallback`], which it needs). llama.cpp's Hexagon backend
    /// refuses a q4_0, q8_0 or mxfp4 matrix of more than 16384 rows, too large for the NPU's
    /// vector memory (VTCM): a large vocabulary's output head. It judges matrix products only
    /// (embedding lookups and routed experts run other operators); a format without an entry
    /// has no limit.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub max_rows: BTreeMap<String, u64>,
    /// Fixed time a layer of a token-mixer kind (`full`, `sliding`, `ssm`, `linear`,
    /// `short_conv`) adds to every step on this unit beyond its bytes and arithmetic, s:
    /// operators the unit's backend lacks, handed to the CPU and back. Fitted where published
    /// rows run that kind on the engine; a kind without an entry adds nothing.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mixer_s: BTreeMap<String, f64>,
    /// CPU: weight formats whose prefill chunks (and batched decode steps) run as a
    /// matrix-matrix kernel that unpacks a weight block once for all of the chunk's tokens
    /// (names as in `formats`). Other formats are unpacked again for every token, as a
    /// dot-product kernel called once per row and token does (ggml's `vec_dot` path).
    /// The shared kernels need the core's int8 dot-product instructions (ggml's repacked
    /// and tinyBLAS kernels do): on a core without them every format is unpacked per token.
    /// Empty: every format shares its unpacking, on every core.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gemm_formats: Vec<String>,
    /// CPU: the widest SIMD registers the engine's quantized kernels use, bits. A core with
    /// wider registers runs them at this width: its int8 multiply-adds per cycle and its
    /// unpacking are those of a core this wide ([`crate::ClusterSpec::width_at_most`]), for
    /// prompt chunks as for decode steps; float weights and the attention keep the full
    /// width. The engine's `[sources]` say which kernels the figure describes. Absent: the
    /// core's width. Refused on a GPU or NPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantized_simd_bits: Option<u32>,
    /// Share of the unit's full-load power this engine's decode draws (a memory-bound kernel
    /// set leaves ALUs idle; an NPU runtime draws far less than a GPU one), multiplying the
    /// device's power figure for the unit (the CPU clusters' per-core power, the GPU's or
    /// NPU's `*_power_w`). Absent: 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_scale: Option<f64>,
    /// Cross-validated spread of measured ÷ predicted decode tok/s for this engine and unit
    /// on a device whose bandwidth or compute figures are assumed (a device from its spec
    /// sheet, its family's defaults): the 10th and 90th percentiles of the ratio (an 80 %
    /// interval), from `memwall validate` leaving each SoC out and rebuilding it from its sheet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_ratio: Option<[f64; 2]>,
    /// The same on a device that states every figure the unit's speed needs (a preset):
    /// leave-one-device-out residuals, the device's own figures kept. Absent: `error_ratio`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_ratio_stated: Option<[f64; 2]>,
    /// Cross-validated spread of measured ÷ predicted prefill (prompt) tok/s: the 10th and
    /// 90th percentiles over the engine's prompt rows on this unit, each predicted with the
    /// figures fitted without its device (`memwall validate --devices`). Absent: unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_error_ratio: Option<[f64; 2]>,
}

impl UnitCosts {
    /// Whether the engine runs weights of format `f` on this unit.
    pub fn supports(&self, f: QuantFormat) -> bool {
        self.formats.is_empty() || matches_any(&self.formats, f)
    }

    /// Whether a weight matrix of format `f` with `rows` rows runs on the CPU instead of this
    /// unit ([`UnitCosts::cpu_fallback`]): its format is not among `formats`, or it has more
    /// rows than `max_rows` allows for the format.
    pub fn falls_back(&self, f: QuantFormat, rows: u64) -> bool {
        self.cpu_fallback && (!self.supports(f) || self.row_limit(f).is_some_and(|most| rows > most))
    }

    /// The most rows a matrix of format `f` may have on this unit ([`UnitCosts::max_rows`]).
    pub fn row_limit(&self, f: QuantFormat) -> Option<u64> {
        self.max_rows.iter().filter(|(p, _)| matches_any(std::slice::from_ref(p), f)).map(|(_, n)| *n).min()
    }

    /// The share of a step that runs on the CPU: `Σ x over matrices the unit hands to the CPU
    /// ÷ Σ x over all matrices`, `x` their bytes (decode) or multiply-adds (a prompt), from
    /// `(format, rows, x)` triples; 0 without [`UnitCosts::cpu_fallback`].
    pub fn cpu_share(&self, weights: impl IntoIterator<Item = (QuantFormat, u64, f64)>) -> f64 {
        let (mut host, mut all) = (0.0, 0.0);
        for (f, rows, x) in weights {
            all += x;
            if self.falls_back(f, rows) {
                host += x;
            }
        }
        if all > 0.0 { host / all } else { 0.0 }
    }

    /// Seconds a step's layers add ([`UnitCosts::mixer_s`]): `Σ_kind layers of the kind ×
    /// mixer_s[kind]`, from `(kind, layers)` pairs.
    pub fn mixer_time_s(&self, layers: &[(LayerKind, u32)]) -> f64 {
        if self.mixer_s.is_empty() {
            return 0.0;
        }
        layers.iter().map(|(k, n)| *n as f64 * self.mixer_s.get(k.name()).copied().unwrap_or(0.0)).sum()
    }

    /// Whether a prefill chunk on a CPU core shares one unpacking of a weight block of
    /// format `f` among its tokens ([`UnitCosts::gemm_formats`]); `int8_dot`: whether the
    /// core has int8 dot-product instructions.
    pub fn shares_unpacking(&self, f: QuantFormat, int8_dot: bool) -> bool {
        self.gemm_formats.is_empty() || (int8_dot && matches_any(&self.gemm_formats, f))
    }

    /// Check every number; errors name the field (relative to the unit's table).
    pub fn validate(&self) -> Result<()> {
        positive_at_most("bandwidth_share", self.bandwidth_share, MAX_BANDWIDTH_SHARE)?;
        fraction("compute_efficiency", self.compute_efficiency)?;
        fraction("prefill_efficiency", self.prefill_efficiency)?;
        for (f, v) in [
            ("per_token_s", self.per_token_s),
            ("per_op_s", self.per_op_s),
            ("per_thread_sync_s", self.per_thread_sync_s),
        ] {
            non_negative(f, v)?;
            crate::bounds::at_most(f, v, 1.0, "seconds")?;
        }
        if !(self.attention_kv_reads.is_finite() && self.attention_kv_reads >= 1.0) {
            return Err(SpecError::invalid(
                "attention_kv_reads",
                self.attention_kv_reads,
                "must be a finite number >= 1",
            ));
        }
        crate::bounds::at_most("attention_kv_reads", self.attention_kv_reads, 1e3, "reads of the KV cache per step")?;
        non_negative("dequant_ops_per_weight", self.dequant_ops_per_weight)?;
        if let Some(b) = self.quantized_simd_bits {
            if b == 0 || b % 64 != 0 {
                return Err(SpecError::invalid("quantized_simd_bits", b, "must be a positive multiple of 64"));
            }
            crate::bounds::at_most("quantized_simd_bits", b, crate::bounds::MAX_SIMD_BITS, "bits, SVE's maximum")?;
        }
        if let Some(o) = self.overlap
            && !(0.0..=1.0).contains(&o)
        {
            return Err(SpecError::invalid("overlap", o, "must lie in [0, 1]"));
        }
        let attention = self.attention_cycles.iter().flat_map(|(k, v)| v.iter().map(move |x| (k, x)));
        let entries = self.dequant_cycles.iter().map(|(k, v)| ("dequant_cycles", k, v));
        for (table, format, v) in entries.chain(attention.map(|(k, v)| ("attention_cycles", k, v))) {
            let field = format!("{table}.{format}");
            if format.parse::<QuantFormat>().is_err() {
                return Err(SpecError::invalid(field, format, "not a weight or KV format name"));
            }
            if !(v.is_finite() && *v >= 0.0 && *v < 1e3) {
                return Err(SpecError::invalid(field, v, "cycles must be finite, >= 0 and < 1000"));
            }
        }
        crate::bounds::at_most("dequant_ops_per_weight", self.dequant_ops_per_weight, 1e4, "operations per weight")?;
        for (kind, v) in &self.mixer_s {
            let field = format!("mixer_s.{kind}");
            if LayerKind::from_name(kind).is_none() {
                return Err(SpecError::invalid(
                    field,
                    kind,
                    "not a layer kind (full, sliding, ssm, linear, short_conv)",
                ));
            }
            non_negative(&field, *v)?;
            crate::bounds::at_most(&field, *v, 1.0, "seconds")?;
        }
        for (field, list) in [("formats", &self.formats), ("gemm_formats", &self.gemm_formats)] {
            for (i, p) in list.iter().enumerate() {
                let name = p.strip_suffix('*').unwrap_or(p);
                if p.ends_with('*') {
                    if name.is_empty() {
                        return Err(SpecError::invalid(
                            format!("{field}[{i}]"),
                            p,
                            "a prefix needs at least one character",
                        ));
                    }
                } else {
                    name.parse::<QuantFormat>().map_err(|e| e.within(&format!("{field}[{i}]")))?;
                }
            }
        }
        for (p, n) in &self.max_rows {
            let field = format!("max_rows.{p}");
            let name = p.strip_suffix('*').unwrap_or(p);
            if name.is_empty() || (!p.ends_with('*') && name.parse::<QuantFormat>().is_err()) {
                return Err(SpecError::invalid(field, p, "not a weight format name (or a prefix ending in `*`)"));
            }
            if *n == 0 {
                return Err(SpecError::invalid(field, n, "must be at least 1 row"));
            }
            if !self.cpu_fallback {
                return Err(SpecError::invalid(
                    field,
                    n,
                    "a larger matrix runs on the CPU, which needs `cpu_fallback = true` on this unit",
                ));
            }
        }
        if let Some(p) = self.power_scale
            && !(p.is_finite() && p > 0.0 && p <= 2.0)
        {
            return Err(SpecError::invalid("power_scale", p, "must lie in (0, 2]"));
        }
        for (field, band) in [
            ("error_ratio", self.error_ratio),
            ("error_ratio_stated", self.error_ratio_stated),
            ("prefill_error_ratio", self.prefill_error_ratio),
        ] {
            if let Some([lo, hi]) = band
                && !(lo.is_finite() && hi.is_finite() && lo > 0.0 && lo <= hi)
            {
                return Err(SpecError::invalid(field, format!("[{lo}, {hi}]"), "must be 0 < low <= high"));
            }
        }
        Ok(())
    }
}

/// Whether format `f` matches a name of `patterns` (case-insensitive; a trailing `*`
/// matches a prefix).
fn matches_any(patterns: &[String], f: QuantFormat) -> bool {
    let name = f.to_string().to_ascii_lowercase();
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(&prefix.to_ascii_lowercase()),
        None => name.eq_ignore_ascii_case(p),
    })
}

/// How many CPU threads an engine runs when none is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadRule {
    /// Every cluster but the slowest ([`DeviceSpec::big_cores`]).
    #[default]
    BigCores,
    /// llama.cpp's `cpu_get_num_math()` (common/common.cpp): on Apple systems the
    /// performance cores (`hw.perflevel0.physicalcpu`), elsewhere every physical core (one
    /// per set of `thread_siblings` on Linux and Android, little cores included), except
    /// hybrid x86 CPUs on Linux, whose efficiency cores it leaves out.
    LlamaCpp,
}

impl ThreadRule {
    /// The threads the rule gives on `d` (its OS as [`DeviceSpec::os`] says), and why (for
    /// the output).
    ///
    /// Example: a Snapdragon 8 Elite (2 prime + 6 performance cores, Android) → 8 under
    /// `llama_cpp`, 2 under `big_cores`; an Apple M3 Max (12P + 4E, macOS) → 12 under both.
    pub fn threads(self, d: &DeviceSpec) -> (u32, &'static str) {
        match self {
            ThreadRule::BigCores => (d.big_cores(), "the big cores (every cluster but the slowest)"),
            ThreadRule::LlamaCpp if d.os().is_apple() => {
                (d.big_cores(), "llama.cpp's default on Apple: the performance cores")
            }
            ThreadRule::LlamaCpp if d.os() == crate::Os::Linux && x86_hybrid(d) => {
                (d.big_cores(), "llama.cpp's default on a hybrid x86 CPU: the cores that are not efficiency cores")
            }
            ThreadRule::LlamaCpp => (d.total_cores(), "llama.cpp's default: every physical core"),
        }
    }
}

/// Whether `d`'s CPU is x86 (256- or 512-bit SIMD) with clusters of different clocks.
fn x86_hybrid(d: &DeviceSpec) -> bool {
    d.clusters.iter().any(|c| c.simd_bits >= 256) && d.big_cores() < d.total_cores()
}

/// An inference engine: per-unit costs, with their provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineSpec {
    /// Name (`llama.cpp`, `mlc-llm`).
    pub name: String,
    /// Other names it answers to (`ollama` for llama.cpp).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// One line for people.
    #[serde(default)]
    pub description: String,
    /// Where the numbers come from, overall.
    #[serde(default)]
    pub source: String,
    /// The builds its figures describe, where an engine's speed changed materially between
    /// builds: a dated profile is named `<engine>-<YYYY-MM>` and says here which builds it is
    /// (`llama.cpp-2023-06`: the first Metal backend, 1.8× slower than later builds on the
    /// same chip). Absent: current builds, the ones the published rows of the last two years
    /// ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The engine whose CPU figures this one runs its CPU work with, where its profile has no
    /// `[cpu]` table of its own (llama.cpp's Hexagon backend hands what the NPU does not
    /// run to llama.cpp's CPU kernels, [`UnitCosts::cpu_fallback`]): loading the profile
    /// fills `cpu` from that engine's, and a fit moves them with that engine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_from: Option<String>,
    /// Threads it runs on the CPU when the workload names none.
    #[serde(default)]
    pub threads: ThreadRule,
    /// Costs on CPU cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<UnitCosts>,
    /// Costs on the GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<UnitCosts>,
    /// Costs on the NPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub npu: Option<UnitCosts>,
    /// Per-field provenance (`"gpu.bandwidth_share"` → how it was obtained).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, String>,
}

impl Default for EngineSpec {
    fn default() -> Self {
        Self::generic()
    }
}

impl EngineSpec {
    /// The engine of a design that names none: memwall's engineering defaults on every unit
    /// (the cost model's historical values: a ggml-like CPU runtime with a 4 µs operator and
    /// a 0.3 ms token overhead, 60 % / 50 % SIMD efficiency in decode / prefill, 40 % of an
    /// accelerator's peak, one read of the KV cache, the unit's whole achievable bandwidth).
    pub fn generic() -> Self {
        let unit = |per_op_s: f64, per_thread_sync_s: f64, eff: (f64, f64)| UnitCosts {
            bandwidth_share: 1.0,
            compute_efficiency: eff.0,
            prefill_efficiency: eff.1,
            per_token_s: 0.3e-3,
            per_op_s,
            per_thread_sync_s,
            attention_kv_reads: 1.0,
            dequant_ops_per_weight: 0.0,
            dequant_cycles: BTreeMap::new(),
            attention_cycles: BTreeMap::new(),
            overlap: None,
            formats: Vec::new(),
            cpu_fallback: false,
            max_rows: BTreeMap::new(),
            mixer_s: BTreeMap::new(),
            gemm_formats: Vec::new(),
            quantized_simd_bits: None,
            power_scale: None,
            error_ratio: None,
            error_ratio_stated: None,
            prefill_error_ratio: None,
        };
        EngineSpec {
            name: "generic".into(),
            aliases: Vec::new(),
            description: "memwall's engineering defaults, for a design that names no engine".into(),
            source: "engineering estimates (memwall engine.rs), not fitted".into(),
            version: None,
            cpu_from: None,
            threads: ThreadRule::BigCores,
            cpu: Some(unit(4e-6, 0.5e-6, (0.6, 0.5))),
            // A GPU kernel unpacks a 4-bit weight in ~4 ALU operations (mask, shift, subtract
            // the zero point, scale) before its multiply-add: an estimate, fitted per backend.
            gpu: Some(UnitCosts { dequant_ops_per_weight: 4.0, ..unit(4e-6, 0.0, (0.4, 0.4)) }),
            npu: Some(unit(4e-6, 0.0, (0.4, 0.4))),
            sources: BTreeMap::new(),
        }
    }

    /// The costs on `unit`, if the engine runs there.
    pub fn unit(&self, unit: Backend) -> Option<&UnitCosts> {
        match unit {
            Backend::Cpu => self.cpu.as_ref(),
            Backend::Gpu => self.gpu.as_ref(),
            Backend::Npu => self.npu.as_ref(),
        }
    }

    /// Mutable costs on `unit`.
    pub fn unit_mut(&mut self, unit: Backend) -> Option<&mut UnitCosts> {
        match unit {
            Backend::Cpu => self.cpu.as_mut(),
            Backend::Gpu => self.gpu.as_mut(),
            Backend::Npu => self.npu.as_mut(),
        }
    }

    /// Whether `name` is this engine's name or one of its aliases (case-insensitive).
    pub fn answers_to(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name) || self.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    }

    /// Check every number; errors name the field (`gpu.per_op_s`).
    pub fn validate(&self) -> Result<()> {
        if self.name.trim().is_empty() {
            return Err(SpecError::invalid("name", "\"\"", "an engine needs a name"));
        }
        if self.cpu.is_none() && self.gpu.is_none() && self.npu.is_none() {
            return Err(SpecError::invalid("cpu", "missing", "an engine needs at least one of [cpu], [gpu], [npu]"));
        }
        if let Some(v) = &self.version
            && v.trim().is_empty()
        {
            return Err(SpecError::invalid(
                "version",
                "\"\"",
                "say which builds the figures describe, or leave it out",
            ));
        }
        for (name, u) in [("cpu", &self.cpu), ("gpu", &self.gpu), ("npu", &self.npu)] {
            if let Some(u) = u {
                u.validate().map_err(|e| e.within(name))?;
                if name != "cpu"
                    && let Some(b) = u.quantized_simd_bits
                {
                    return Err(SpecError::invalid(
                        format!("{name}.quantized_simd_bits"),
                        b,
                        "a SIMD width is a CPU figure; state it under [cpu]",
                    ));
                }
            }
        }
        if self.cpu_from.as_deref().is_some_and(|f| f.trim().is_empty() || f == self.name) {
            return Err(SpecError::invalid(
                "cpu_from",
                format!("{:?}", self.cpu_from.as_deref().unwrap_or_default()),
                "name another engine, whose CPU figures this one's CPU work runs with",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_band_out_of_order_or_not_finite_is_refused_naming_its_field() {
        for field in ["error_ratio", "error_ratio_stated", "prefill_error_ratio"] {
            for band in [[1.5, 0.7], [f64::NAN, 1.2], [0.0, 1.2]] {
                let mut u = EngineSpec::generic().cpu.unwrap();
                match field {
                    "error_ratio" => u.error_ratio = Some(band),
                    "error_ratio_stated" => u.error_ratio_stated = Some(band),
                    _ => u.prefill_error_ratio = Some(band),
                }
                let e = u.validate().unwrap_err().to_string();
                assert!(e.contains(field) && e.contains("0 < low <= high"), "{band:?}: {e}");
            }
        }
        let mut u = EngineSpec::generic().cpu.unwrap();
        u.error_ratio_stated = Some([0.8, 1.2]);
        assert!(u.validate().is_ok());
    }

    #[test]
    fn the_cpus_share_and_the_mixers_time_by_hand() {
        let (q4_0, q6_k): (QuantFormat, QuantFormat) = ("q4_0".parse().unwrap(), "q6_K".parse().unwrap());
        let mut u = EngineSpec::generic().npu.unwrap();
        u.formats = vec!["q4_0".into()];
        // Without the fallback nothing is handed over (a design with q6_K is refused instead).
        assert_eq!(u.cpu_share([(q4_0, 2048, 3.0), (q6_k, 2048, 1.0)]), 0.0);
        u.cpu_fallback = true;
        // 1 of 4 bytes in q6_K: a quarter runs on the CPU.
        assert_eq!(u.cpu_share([(q4_0, 2048, 3.0), (q6_k, 2048, 1.0)]), 0.25);
        assert_eq!(u.cpu_share([]), 0.0);
        assert!(u.falls_back(q6_k, 1) && !u.falls_back(q4_0, 1));
        // A q4_0 head of 128256 rows past a 16384-row limit goes too: 2 + 1 of 6 bytes.
        u.max_rows.insert("q4_0".into(), 16384);
        assert_eq!(u.cpu_share([(q4_0, 2048, 3.0), (q6_k, 2048, 1.0), (q4_0, 128256, 2.0)]), 0.5);
        assert!(u.falls_back(q4_0, 16385) && !u.falls_back(q4_0, 16384));
        assert_eq!(u.row_limit(q6_k), None);
        // 18 linear layers at 4 ms and 6 full ones with no entry: 72 ms a step.
        u.mixer_s.insert("linear".into(), 4e-3);
        let t = u.mixer_time_s(&[(LayerKind::Linear, 18), (LayerKind::Full, 6)]);
        assert!((t - 0.072).abs() < 1e-15, "{t}");
        assert!(u.validate().is_ok());
        for (kind, v, says) in
            [("mamba", 1e-3, "not a layer kind"), ("ssm", -1e-3, "mixer_s.ssm"), ("ssm", 2.0, "seconds")]
        {
            let mut bad = u.clone();
            bad.mixer_s.insert(kind.into(), v);
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains(says), "{kind} {v}: {e}");
        }
        for (format, rows, fallback, says) in [
            ("q4_0", 0, true, "max_rows.q4_0"),
            ("q9_9", 16384, true, "max_rows.q9_9"),
            ("*", 16384, true, "prefix"),
            ("q4_0", 16384, false, "cpu_fallback"),
        ] {
            let mut bad = u.clone();
            bad.max_rows = BTreeMap::from([(format.to_string(), rows)]);
            bad.cpu_fallback = fallback;
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("max_rows"), "{format} {rows}: {e}");
        }
        let mut e = EngineSpec { name: "x".into(), cpu_from: Some("x".into()), cpu: None, ..EngineSpec::generic() };
        assert!(e.validate().unwrap_err().to_string().contains("cpu_from"));
        e.cpu_from = Some("llama.cpp".into());
        assert!(e.validate().is_ok());
    }

    #[test]
    fn an_empty_version_is_refused_naming_its_field() {
        let mut e =
            EngineSpec { name: "llama.cpp-2023-06".into(), version: Some("  ".into()), ..EngineSpec::generic() };
        let err = e.validate().unwrap_err().to_string();
        assert!(err.contains("version") && err.contains("which builds"), "{err}");
        e.version = Some("llama.cpp master of June 2023".into());
        assert!(e.validate().is_ok());
        let back: EngineSpec = toml::from_str(&toml::to_string(&e).unwrap()).unwrap();
        assert_eq!(back.version, e.version);
    }

    #[test]
    fn matrix_kernel_formats_share_unpacking_only_on_a_dot_product_core() {
        let q4_0: QuantFormat = "q4_0".parse().unwrap();
        let q4_k: QuantFormat = "q4_K".parse().unwrap();
        let mut u = EngineSpec::generic().cpu.unwrap();
        // No list: every format shares, with or without dot products.
        assert!(u.shares_unpacking(q4_k, false) && u.shares_unpacking(q4_k, true));
        u.gemm_formats = vec!["Q4_0".into(), "iq4*".into()];
        assert!(u.validate().is_ok());
        assert!(u.shares_unpacking(q4_0, true));
        assert!(u.shares_unpacking("iq4_nl".parse().unwrap(), true));
        assert!(!u.shares_unpacking(q4_k, true));
        assert!(!u.shares_unpacking(q4_0, false), "the repacked kernels need int8 dot products");
        u.gemm_formats = vec!["q4_0".into(), "q9_9".into()];
        let e = u.validate().unwrap_err().to_string();
        assert!(e.contains("gemm_formats[1]") && e.contains("q9_9"), "{e}");
        u.gemm_formats = vec!["*".into()];
        assert!(u.validate().unwrap_err().to_string().contains("gemm_formats[0]"));
    }
}
