//! Cost-model data shared by the analytic estimator and the simulator: how compute and
//! memory overlap, cache use, per-format dequantization costs, and overrides of the engine's
//! efficiencies and fixed costs ([`crate::EngineSpec`] holds those per compute unit).
//!
//! Until calibration replaces them with numbers measured by the reference kernels, the
//! defaults below are engineering estimates, each documented with its reasoning.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bounds::at_most;
use crate::error::{Result, SpecError, fraction, non_negative, positive};
use crate::quant::{ChannelQuant, Fp8Kind, Fp8Quant, GgmlType, GroupQuant, QuantFormat};

fn d_source() -> String {
    "defaults: engineering estimates (memwall cost.rs), not yet calibrated".into()
}
fn d_overlap() -> f64 {
    0.9
}
fn d_reuse() -> f64 {
    4.0
}
fn d_cache_fraction() -> f64 {
    0.5
}
fn d_runtime() -> u64 {
    150 * crate::units::MIB
}

/// Cost-model parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostModel {
    /// Where these numbers come from.
    #[serde(default = "d_source")]
    pub source: String,
    /// Overrides the device's `memory.achievable_fraction` when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_fraction: Option<f64>,
    /// How much of the shorter of memory and compute time hides under the longer one
    /// (1 = perfect overlap, time = max; 0 = no overlap, time = sum). Default 0.9: the
    /// GEMV threads stream weights while they compute, but barriers between operators
    /// serialize a little of each.
    #[serde(default = "d_overlap")]
    pub overlap: f64,
    /// Overrides of the engine's figures for the unit the design runs on (absent: the
    /// engine's, [`crate::EngineSpec`]): share of peak arithmetic reached in decode on a CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arith_efficiency_decode: Option<f64>,
    /// Override: share of peak arithmetic reached in prefill on a CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arith_efficiency_prefill: Option<f64>,
    /// Override: share of a GPU's or NPU's peak throughput reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accel_efficiency: Option<f64>,
    /// Override: fixed cost per operator (dispatch, barrier, kernel launch), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_op_overhead_s: Option<f64>,
    /// Override: extra barrier cost per operator for each CPU thread beyond the first, s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_thread_sync_s: Option<f64>,
    /// Override: fixed cost per decoded token (sampling, graph build), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_token_overhead_s: Option<f64>,
    /// Tokens (prefill) or sequences (batched decode) that share one dequantization of a
    /// weight block (tiling).
    /// Default 4.
    #[serde(default = "d_reuse")]
    pub prefill_dequant_reuse: f64,
    /// Share of a cache's capacity that can hold weights between tokens. Default 0.5.
    #[serde(default = "d_cache_fraction")]
    pub cache_usable_fraction: f64,
    /// Override: how many times a decode step reads the KV cache it attends over (the
    /// engine's `attention_kv_reads`: 1 for GQA-aware kernels; an engine that runs one
    /// work-group per *query* head and re-reads its KV head each time has
    /// `n_heads / n_kv_heads`, e.g. 4 for Llama 3.2 1B).
    ///
    /// A decode step's KV bytes are `attention_kv_reads × Σ_layers attended × KV bytes per
    /// token + the new token's KV write + recurrent state read and write`: only the read of
    /// the attended KV is multiplied. Prefill is not affected: a chunk's queries share one
    /// read of the cache (its KV traffic is small next to the weights anyway). The
    /// simulator's cache model sees one read of each layer's KV; the repeats go to DRAM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention_kv_reads: Option<f64>,
    /// Runtime overhead in memory (code, allocator slack, tokenizer), bytes. Default 150 MiB.
    #[serde(default = "d_runtime")]
    pub runtime_overhead_bytes: u64,
    /// Per-format dequantization cost overrides, cycles per weight on a 128-bit, 2-pipe
    /// SIMD core (keys: format names such as `"q4_K"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dequant_cycles: BTreeMap<String, f64>,
}

impl Default for CostModel {
    fn default() -> Self {
        toml::from_str("").expect("all cost fields have defaults")
    }
}

/// Default dequantization cost of a format, in cycles per weight on a 128-bit SIMD core
/// with 2 pipes, on top of the int8 dot product itself.
///
/// Q4_0's 0.04 is the anchor, from the instruction count of ggml's NEON/AVX2 kernel (a mask,
/// a shift and a subtract per 32 weights). The formats memwall's kernels run are **measured**
/// relative to it: `memwall calibrate` on the development host (`datasets/hosts/xeon-2c.engine.toml`,
/// AVX2) gives each format's cycles per weight beyond the multiply-add, and the table holds
/// `0.04 × measured_f / measured_q4_0` (F16, Q8_0, Q2_K…Q6_K, TQ2_0; checked against the
/// host file by `tests/dequant_transfer.rs`). Absolute costs are left to each engine's fitted
/// efficiency; only the ratios transfer. The other formats keep instruction-count estimates:
/// 3- and 5-bit legacy formats merge a separate high-bit plane; codebook (IQ) formats gather
/// from lattice tables; TQ1_0 decodes base-3 with multiplies. With these ratios the
/// leave-one-device-out decode error (`memwall validate --devices`) is 11.0 % median, 67 % of
/// rows within 15 % (llama.cpp on CPUs 17.2 %, SBCs 9.5 %), against 10.7 % and 69 % (14.3 %,
/// 13.9 %) with the earlier instruction-count estimates; an earlier calibration run of the
/// same host, whose Q8_0 ratio was 25 % higher, gave 10.7 % and 72 %: the transfer's effect is
/// within the calibration's own run-to-run spread. Taking the measured cycles as they are
/// (× 2 for 128-bit) made it worse (11.3 %, llama.cpp on CPUs 28 %): memwall's kernels are
/// not llama.cpp's in absolute terms.
///
/// FP8 figures are assumptions (memwall's kernels have no FP8 path to measure), scaled from the
/// measured F16 (0.037) by instruction count on a CPU without FP8 arithmetic: an E5M2 byte is
/// the top half of a binary16, so it converts as F16 plus one byte unpack per 16 weights
/// (0.045); E4M3 must also rebias its exponent and select subnormals (a shift, an add and a
/// blend per 8 weights), taken as IQ4_NL's table lookup (0.06). A per-row or per-tile scale
/// multiplies once per row or tile and adds nothing per weight.
pub fn default_dequant_cycles(f: QuantFormat) -> f64 {
    use GgmlType as G;
    match f {
        QuantFormat::Ggml(t) => match t {
            G::F32 | G::F64 | G::I8 | G::I16 | G::I32 | G::I64 => 0.0,
            G::F16 | G::BF16 => 0.037,
            G::Q8_0 | G::Q8_1 | G::Q8_K => 0.061,
            G::Q4_0 => 0.04,
            G::Q4_1 => 0.045,
            G::IQ4_NL | G::MXFP4 => 0.06,
            G::Q5_0 => 0.07,
            G::Q5_1 => 0.075,
            G::Q4_K => 0.039,
            G::Q5_K => 0.059,
            G::Q6_K => 0.064,
            G::Q2_K => 0.020,
            G::IQ4_XS => 0.07,
            G::Q3_K => 0.062,
            G::TQ2_0 => 0.0,
            G::TQ1_0 => 0.14,
            G::IQ3_S | G::IQ3_XXS | G::IQ2_S => 0.14,
            G::IQ2_XS => 0.15,
            G::IQ2_XXS => 0.13,
            G::IQ1_S => 0.12,
            G::IQ1_M => 0.13,
        },
        QuantFormat::Group(GroupQuant { bits, asym, .. }) | QuantFormat::Channel(ChannelQuant { bits, asym, .. }) => {
            let base = match bits {
                8 => 0.02,
                4 => 0.04,
                2 => 0.05,
                _ => 0.08,
            };
            base + if asym { 0.005 } else { 0.0 }
        }
        QuantFormat::Fp8(Fp8Quant { kind: Fp8Kind::E5m2, .. }) => 0.045,
        QuantFormat::Fp8(Fp8Quant { kind: Fp8Kind::E4m3, .. }) => 0.06,
    }
}

impl CostModel {
    /// Dequantization cycles per weight for `f` on a 128-bit, 2-pipe core (override or default).
    pub fn dequant_cycles(&self, f: QuantFormat) -> f64 {
        self.dequant_override(f).unwrap_or_else(|| default_dequant_cycles(f))
    }

    /// The scenario's own dequantization cycles for `f`, if it sets them.
    pub fn dequant_override(&self, f: QuantFormat) -> Option<f64> {
        self.dequant_cycles.get(&f.to_string()).copied()
    }

    /// Check every number; errors name the field and value.
    pub fn validate(&self) -> Result<()> {
        if let Some(b) = self.bandwidth_fraction {
            fraction("bandwidth_fraction", b)?;
        }
        if !(0.0..=1.0).contains(&self.overlap) {
            return Err(SpecError::invalid("overlap", self.overlap, "must lie in [0, 1]"));
        }
        for (f, v) in [
            ("arith_efficiency_decode", self.arith_efficiency_decode),
            ("arith_efficiency_prefill", self.arith_efficiency_prefill),
            ("accel_efficiency", self.accel_efficiency),
        ] {
            if let Some(v) = v {
                fraction(f, v)?;
            }
        }
        positive("prefill_dequant_reuse", self.prefill_dequant_reuse)?;
        fraction("cache_usable_fraction", self.cache_usable_fraction)?;
        if let Some(r) = self.attention_kv_reads
            && !(r.is_finite() && r >= 1.0)
        {
            return Err(SpecError::invalid("attention_kv_reads", r, "must be a finite number >= 1"));
        }
        for (k, v) in &self.dequant_cycles {
            k.parse::<QuantFormat>().map_err(|e| e.within("dequant_cycles"))?;
            non_negative(&format!("dequant_cycles.{k}"), *v)?;
            at_most(&format!("dequant_cycles.{k}"), *v, 1e4, "cycles per weight")?;
        }
        // A fixed cost above a second per operator or token, a thousand re-reads of the KV
        // cache or a dequantization tile beyond any prompt are not engine behaviour.
        for (f, v) in [
            ("per_op_overhead_s", self.per_op_overhead_s),
            ("per_thread_sync_s", self.per_thread_sync_s),
            ("per_token_overhead_s", self.per_token_overhead_s),
        ] {
            if let Some(v) = v {
                non_negative(f, v)?;
                at_most(f, v, 1.0, "seconds")?;
            }
        }
        if let Some(r) = self.attention_kv_reads {
            at_most("attention_kv_reads", r, 1e3, "reads of the KV cache per step")?;
        }
        at_most("prefill_dequant_reuse", self.prefill_dequant_reuse, crate::bounds::MAX_TOKENS as f64, "tokens")?;
        crate::bounds::bytes("runtime_overhead_bytes", self.runtime_overhead_bytes)?;
        Ok(())
    }
}
