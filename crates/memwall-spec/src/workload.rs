//! What is run: prompt and generated tokens, context policy, batch, threads, backend.

use serde::{Deserialize, Serialize};

use crate::error::{Result, SpecError, non_negative, nonzero};
use crate::quant::{Fp8Scale, GgmlType, QuantFormat};

/// How much KV cache is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextPolicy {
    /// The cache is allocated for `context_tokens` up front (llama.cpp's `n_ctx`).
    #[default]
    Allocate,
    /// The cache grows with the tokens actually held (`prompt + generated`).
    Grow,
}

/// Which compute unit runs the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// CPU cores (SIMD), as llama.cpp's CPU backend.
    #[default]
    Cpu,
    /// The integrated GPU.
    Gpu,
    /// The NPU.
    Npu,
}

impl std::str::FromStr for Backend {
    type Err = crate::SpecError;

    /// `cpu`, `gpu` or `npu` (any case). Errors name no field: callers place them with
    /// [`crate::SpecError::within`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "cpu" => Ok(Backend::Cpu),
            "gpu" => Ok(Backend::Gpu),
            "npu" => Ok(Backend::Npu),
            _ => Err(crate::SpecError::unknown(
                String::new(),
                "compute unit",
                s,
                ["cpu", "gpu", "npu"],
                "; expected cpu, gpu or npu",
            )),
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Backend {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Gpu => "gpu",
            Backend::Npu => "npu",
        }
    }
}

fn d_prompt() -> u64 {
    512
}
fn d_gen() -> u64 {
    128
}
fn d_ctx() -> u64 {
    4096
}
fn d_one() -> u32 {
    1
}
fn d_ubatch() -> u64 {
    512
}
fn d_true() -> bool {
    true
}

/// A decoding workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// Prompt tokens (prefill).
    #[serde(default = "d_prompt")]
    pub prompt_tokens: u64,
    /// Generated tokens (decode).
    #[serde(default = "d_gen")]
    pub gen_tokens: u64,
    /// Tokens already in the KV cache when the prompt arrives (earlier turns of the
    /// conversation, a cached system prompt): the prompt's prefill attends to them and the
    /// reply decodes at depths `history + prompt` onwards. Unset, the conversation so far
    /// fills the context: `context − prompt − generated` ([`Workload::history`]), so a
    /// context of 32K decodes at 32K, as llama-bench's `tg N @ d` does; 0 is a fresh
    /// conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_tokens: Option<u64>,
    /// Context the KV cache is sized for.
    #[serde(default = "d_ctx")]
    pub context_tokens: u64,
    /// Whether the cache is allocated for the whole context or grows.
    #[serde(default)]
    pub context_policy: ContextPolicy,
    /// Sequences decoded together.
    #[serde(default = "d_one")]
    pub batch: u32,
    /// CPU threads (default: the big cores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Prompt tokens processed per step (llama.cpp `n_ubatch`).
    #[serde(default = "d_ubatch")]
    pub ubatch: u64,
    /// Compute unit.
    #[serde(default)]
    pub backend: Backend,
    /// Part of the device's app limit kept free for what the footprint does not count (the
    /// app's own UI and allocations beside the model, allocator slack), bytes. 0 by default:
    /// the app limit ([`crate::DeviceSpec::app_limit`]) is already what the OS, its services
    /// and the evicted apps leave one app, and the footprint counts the engine's runtime, so a
    /// default margin would reserve the same bytes a second time. A design fits when
    /// `footprint ≤ app_limit − other_apps − margin`.
    #[serde(default)]
    pub margin_bytes: u64,
    /// Zipf exponent of expert popularity (0 = uniform routing).
    #[serde(default)]
    pub routing_skew: f64,
    /// Flash attention (no `heads × context × ubatch` score buffer).
    #[serde(default = "d_true")]
    pub flash_attention: bool,
}

impl Default for Workload {
    fn default() -> Self {
        toml::from_str("").expect("all workload fields have defaults")
    }
}

impl Workload {
    /// Tokens the KV cache holds for the footprint: the allocated context, or the tokens
    /// actually seen under [`ContextPolicy::Grow`].
    pub fn kv_tokens(&self) -> u64 {
        match self.context_policy {
            ContextPolicy::Allocate => self.context_tokens,
            ContextPolicy::Grow => self.history() + self.prompt_tokens + self.gen_tokens,
        }
    }

    /// Tokens in the KV cache before the prompt: `history_tokens` when set, else the history
    /// that fills the context, `context − prompt − generated` (0 when they exceed it).
    ///
    /// Example: context 4096, prompt 512, 128 generated and no history set → 3456, so the
    /// reply decodes at depths 3968 to 4095.
    pub fn history(&self) -> u64 {
        self.history_tokens
            .unwrap_or_else(|| self.context_tokens.saturating_sub(self.prompt_tokens.saturating_add(self.gen_tokens)))
    }

    /// Check the workload; errors name the field and value.
    pub fn validate(&self) -> Result<()> {
        use crate::bounds::{self, MAX_BATCH, MAX_CORES, MAX_SKEW, at_most};
        nonzero("context_tokens", self.context_tokens)?;
        nonzero("batch", self.batch as u64)?;
        nonzero("ubatch", self.ubatch)?;
        for (field, v) in [
            ("context_tokens", self.context_tokens),
            ("prompt_tokens", self.prompt_tokens),
            ("gen_tokens", self.gen_tokens),
            ("history_tokens", self.history_tokens.unwrap_or(0)),
            ("ubatch", self.ubatch),
        ] {
            bounds::tokens(field, v)?;
        }
        at_most("batch", self.batch, MAX_BATCH, "sequences decoded together")?;
        if let Some(t) = self.threads {
            at_most("threads", t, MAX_CORES, "threads")?;
        }
        bounds::bytes("margin_bytes", self.margin_bytes)?;
        if self.routing_skew.is_finite() {
            at_most("routing_skew", self.routing_skew, MAX_SKEW, "Zipf exponent")?;
        }
        if self.prompt_tokens + self.gen_tokens == 0 {
            return Err(SpecError::invalid("gen_tokens", 0, "prompt_tokens and gen_tokens are both 0"));
        }
        if self.prompt_tokens + self.gen_tokens > self.context_tokens {
            return Err(SpecError::invalid(
                "context_tokens",
                self.context_tokens,
                format!(
                    "prompt_tokens + gen_tokens = {} do not fit in the context",
                    self.prompt_tokens + self.gen_tokens
                ),
            ));
        }
        if let Some(h) = self.history_tokens
            && h + self.prompt_tokens + self.gen_tokens > self.context_tokens
        {
            return Err(SpecError::invalid(
                "history_tokens",
                h,
                format!(
                    "history + prompt + generated tokens = {} do not fit in the context of {}",
                    h + self.prompt_tokens + self.gen_tokens,
                    self.context_tokens
                ),
            ));
        }
        if let Some(t) = self.threads {
            nonzero("threads", t as u64)?;
        }
        non_negative("routing_skew", self.routing_skew)?;
        Ok(())
    }
}

fn f16() -> QuantFormat {
    QuantFormat::Ggml(GgmlType::F16)
}

/// KV-cache storage formats, chosen independently for K and V.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvQuant {
    /// Format of the K cache.
    #[serde(default = "f16")]
    pub k: QuantFormat,
    /// Format of the V cache.
    #[serde(default = "f16")]
    pub v: QuantFormat,
}

impl Default for KvQuant {
    fn default() -> Self {
        KvQuant { k: f16(), v: f16() }
    }
}

impl KvQuant {
    /// The same format for K and V.
    pub fn both(f: QuantFormat) -> Self {
        KvQuant { k: f, v: f }
    }

    /// Check the formats suit a KV cache (llama.cpp supports f32, f16, bf16, q8_0, q4_0,
    /// q4_1, iq4_nl, q5_0, q5_1 caches; memwall also takes generic group formats and FP8
    /// with one scale per layer, as vLLM's `kv_cache_dtype = "fp8_e4m3"` keeps `k_scale` and
    /// `v_scale`, or one per token and layer).
    pub fn validate(&self) -> Result<()> {
        for (field, f) in [("k", self.k), ("v", self.v)] {
            let ok = match f {
                QuantFormat::Ggml(t) => matches!(
                    t,
                    GgmlType::F32
                        | GgmlType::F16
                        | GgmlType::BF16
                        | GgmlType::Q8_0
                        | GgmlType::Q4_0
                        | GgmlType::Q4_1
                        | GgmlType::IQ4_NL
                        | GgmlType::Q5_0
                        | GgmlType::Q5_1
                ),
                QuantFormat::Group(_) => true,
                // A per-channel scale spans a weight row; a KV row is one token.
                QuantFormat::Channel(_) => false,
                // A b × b tile would span b tokens, which a cache appends one at a time.
                QuantFormat::Fp8(q) => !matches!(q.scale, Fp8Scale::Block(_)),
            };
            if !ok {
                return Err(SpecError::invalid(
                    field,
                    f,
                    "not a KV-cache format (use f32, f16, bf16, q8_0, q5_1, q5_0, q4_1, q4_0, iq4_nl, intN-gG, fp8_e4m3, fp8_e5m2 or their -pc forms)",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp8_kv_caches_are_accepted_unless_tiled() {
        for ok in ["fp8_e4m3", "fp8_e5m2", "fp8_e4m3-pc"] {
            assert!(KvQuant::both(ok.parse().unwrap()).validate().is_ok(), "{ok}");
        }
        let e = KvQuant::both("fp8_e4m3-b128".parse().unwrap()).validate().unwrap_err().to_string();
        assert!(e.contains("fp8_e4m3-b128") && e.contains('k'), "{e}");
    }
}
