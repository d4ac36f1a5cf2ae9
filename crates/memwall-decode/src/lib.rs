//! # memwall-decode
//!
//! A small real decode engine built from [`memwall_kernels`]: it proves the calibrated cost
//! model end to end by decoding tokens for real and timing them.
//!
//! From a [`ModelSpec`](memwall_spec::ModelSpec), a weight mix and a KV format it builds a
//! model with seeded random weights stored in the formats the mix assigns (so its weight
//! bytes equal memwall's footprint, tensor by tensor), then decodes: token embedding,
//! RMSNorm, attention (MHA/GQA/MQA, full or sliding-window, RoPE, over the quantized KV
//! cache, caches shared across layers where the model says so) or a Mamba-1 layer, SwiGLU
//! FFN or a routed mixture of experts with shared experts, the output norm, lm_head and
//! sampling. Matrix-vector products run on the kernel crate's SIMD GEMV over a spin pool of
//! the chosen number of threads; every operator class and every token is timed.
//!
//! [`reference`](mod@reference) is an independent f64 forward pass over the same (dequantized) weights with
//! unquantized activations and KV; [`Engine::step`]'s logits match it within the budgets of
//! [`reference::logit_budget`].
//!
//! Not supported (refused with [`EngineError::Unsupported`] naming the field): multi-head
//! latent attention, linear-attention layers, Mamba-2, and weight formats without a kernel
//! (group-wise `intN-gG`, per-channel, IQ formats).

pub mod engine;
pub mod reference;
pub mod weights;

pub use engine::{Engine, EngineConfig, Generation, OpClass, Timings};

/// Errors of the engine.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The model or configuration asks for something the engine does not run.
    #[error("`{field}` = {value}: {reason}")]
    Unsupported {
        /// Field (dotted path).
        field: String,
        /// Its value.
        value: String,
        /// Why.
        reason: String,
    },
    /// A value is outside its range.
    #[error("invalid `{field}` = {value}: {reason}")]
    Invalid {
        /// Field.
        field: &'static str,
        /// Its value.
        value: String,
        /// The allowed range.
        reason: &'static str,
    },
    /// The model specification is invalid.
    #[error(transparent)]
    Spec(#[from] memwall_spec::SpecError),
    /// A kernel refused its input.
    #[error("kernel: {0}")]
    Kernel(#[from] memwall_kernels::KernelError),
}

/// Result alias.
pub type Result<T> = std::result::Result<T, EngineError>;
