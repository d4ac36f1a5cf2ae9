//! # memwall-sim
//!
//! Estimators over one cost model: byte-exact memory accounting ([`footprint`]), the
//! closed-form analytic estimator ([`analytic`]) for huge sweeps, and the discrete-event
//! simulator ([`des`]), which drives the same cost functions through time with thermal
//! throttling, shared bandwidth, caches, storage, memory pressure and policies.
//!
//! The simulator knows nothing of the kernels: it reads plain [`memwall_spec::CostModel`]
//! data.

pub mod analytic;
pub mod des;
pub mod footprint;
pub mod token;
pub mod unit;

pub use analytic::{
    Binding, Conditions, CostPlan, Cycles, Estimate, Estimator, ExpertCost, MoeShape, StepTime, StepWork, TensorPlan,
    estimate, expected_distinct_experts,
};
pub use footprint::{
    ComputeShape, Fallback, Footprint, KvLayout, WeightBytes, compute_buffer_bytes, gguf_file_bytes,
    ideal_weight_bytes, kv_cache_bytes, resident_weight_bytes,
};

pub use token::{OpKind, TokenTable};
pub use unit::UnitModel;

/// Errors of the estimators.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// The scenario is invalid.
    #[error(transparent)]
    Spec(#[from] memwall_spec::SpecError),
    /// The trace sink failed (disk full, closed file).
    #[error("trace: {0}")]
    Sink(String),
}
