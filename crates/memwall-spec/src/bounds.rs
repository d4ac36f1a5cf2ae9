//! Plausibility bounds: the largest value memwall accepts for each kind of quantity.
//!
//! A value above its bound is physically absurd for on-device inference (a core at 1e30 GHz,
//! a context of 2^47 tokens) and is refused with an error that names the field, the value and
//! the bound. The bounds are also what keeps the integer accounting exact: with every model
//! dimension at most [`MAX_DIM`], layers at most [`MAX_LAYERS`] and experts at most
//! [`MAX_EXPERTS`], one tensor holds at most `2^20 × 2^20 × 2^16 = 2^56` elements, which `u64`
//! holds; sums over tensors and the KV cache are formed in `u128` and checked against
//! [`MAX_BYTES`] (see `memwall_sim::footprint`), so no byte count can wrap or saturate.

use std::fmt::Display;

use crate::error::{Result, SpecError};

/// Tokens in a context, prompt, generation, window or micro-batch: 2^32 (4.3 billion).
pub const MAX_TOKENS: u64 = 1 << 32;
/// Sequences decoded together: 65,536.
pub const MAX_BATCH: u32 = 1 << 16;
/// Layers of a model: 4,096 (published models have at most a few hundred).
pub const MAX_LAYERS: u32 = 1 << 12;
/// Any width of a model (hidden size, FFN width, heads, head dimension, state sizes, LoRA
/// ranks): 2^20.
pub const MAX_DIM: u64 = 1 << 20;
/// Vocabulary entries: 2^24 (16.8 million; published tokenizers stay below 300 thousand).
pub const MAX_VOCAB: u64 = 1 << 24;
/// Routed experts per MoE layer: 65,536.
pub const MAX_EXPERTS: u32 = 1 << 16;
/// Parameters of a model: 2^50 (1.1 × 10^15, a thousand times the largest published model).
pub const MAX_PARAMS: u128 = 1 << 50;
/// Bytes of any memory size or footprint component: 2^60 (1.15 EB).
pub const MAX_BYTES: u64 = 1 << 60;
/// CPU cores of a device or threads of a workload: 4,096.
pub const MAX_CORES: u32 = 1 << 12;
/// Clock of a core, GHz: 10.
pub const MAX_GHZ: f64 = 10.0;
/// SIMD register width, bits: 2,048 (SVE's architectural maximum).
pub const MAX_SIMD_BITS: u32 = 2048;
/// SIMD pipes of a core: 16.
pub const MAX_SIMD_PIPES: u32 = 16;
/// Memory channels: 1,024; channel width: 4,096 bits (an HBM stack is 1,024).
pub const MAX_CHANNELS: u32 = 1 << 10;
/// Width of one memory channel, bits.
pub const MAX_CHANNEL_BITS: u32 = 1 << 12;
/// DRAM data rate, MT/s: 100,000 (LPDDR6 is ~14,400).
pub const MAX_DATA_RATE_MTPS: f64 = 1e5;
/// Any bandwidth, GB/s: 100,000 (100 TB/s, beyond any on-chip cache of today).
pub const MAX_GBPS: f64 = 1e5;
/// Accelerator throughput, TFLOP/s or TOP/s: 100,000.
pub const MAX_TERA_OPS: f64 = 1e5;
/// Any power, W: 10,000.
pub const MAX_WATTS: f64 = 1e4;
/// DRAM energy, pJ per bit: 1,000 (LPDDR is ~4–10).
pub const MAX_PJ_PER_BIT: f64 = 1e3;
/// Any duration, seconds: 10^8 (three years).
pub const MAX_SECONDS: f64 = 1e8;
/// Any temperature, °C: 500.
pub const MAX_CELSIUS: f64 = 500.0;
/// Zipf exponent of expert popularity: 100.
pub const MAX_SKEW: f64 = 100.0;

/// Refuse `value` above `max`: `invalid `field` = value: exceeds the plausible bound max (what)`.
pub fn at_most<T: PartialOrd + Display>(field: &str, value: T, max: T, what: &str) -> Result<()> {
    if value <= max {
        Ok(())
    } else {
        Err(SpecError::invalid(field, &value, format!("exceeds the plausible bound {max} ({what})")))
    }
}

/// Refuse an integer above [`MAX_DIM`].
pub fn dim(field: &str, value: u64) -> Result<()> {
    at_most(field, value, MAX_DIM, "2^20, the largest model width memwall accepts")
}

/// Refuse a token count above [`MAX_TOKENS`].
pub fn tokens(field: &str, value: u64) -> Result<()> {
    at_most(field, value, MAX_TOKENS, "2^32 tokens")
}

/// Refuse a byte count above [`MAX_BYTES`].
pub fn bytes(field: &str, value: u64) -> Result<()> {
    at_most(field, value, MAX_BYTES, "2^60 bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_above_its_bound_names_field_value_and_bound() {
        assert!(tokens("context_tokens", MAX_TOKENS).is_ok());
        let e = tokens("context_tokens", u64::MAX).unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid `context_tokens` = 18446744073709551615: exceeds the plausible bound 4294967296 (2^32 tokens)"
        );
        let e = at_most("clusters[0].max_ghz", 1e30, MAX_GHZ, "GHz").unwrap_err().to_string();
        assert!(e.contains("1000000000000000000000000000000") && e.contains("bound 10"), "{e}");
    }

    #[test]
    fn the_largest_tensor_fits_u64() {
        // rows × row length × experts at their bounds.
        let elems = (MAX_DIM as u128) * (MAX_DIM as u128) * (MAX_EXPERTS as u128);
        assert!(elems * 4 <= u64::MAX as u128);
    }
}
