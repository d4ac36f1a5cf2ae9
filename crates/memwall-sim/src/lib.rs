//! # memwall-sim
//!
//! Estimators over one cost model: byte-exact memory accounting ([`footprint`]), the cost
//! model both estimators read ([`cost`]), the closed-form analytic estimator ([`analytic`]) for
//! huge sweeps, and the discrete-event simulator ([`des`]), which drives the same cost
//! functions through time with thermal throttling, shared bandwidth, caches, storage, memory
//! pressure and policies.
//!
//! - [`footprint`]: bytes at rest (weights, KV cache, state, compute buffer) against the
//!   device's budget.
//! - [`cost`]: [`cost::formulas`] (the physics, with units), [`cost::unit`] (the compute unit
//!   resolved), [`cost::token`] (a token's operators), [`cost::plan`] (the per-scenario cost
//!   plan), [`cost::step`] (a step's work and time terms), [`cost::ops`] (a token per
//!   operator).
//! - [`analytic`]: the estimator ([`Estimate`], [`Estimator`]).
//! - [`des`]: the simulator: [`des::simulator`] (the event loop), [`des::thermal`] (RC network
//!   and governor), [`des::queue`], [`des::event`], [`des::cache`], [`des::routing`],
//!   [`des::policy`], [`des::trace`], and the private session, memory, cache-walk and
//!   statistics modules.
//!
//! The simulator knows nothing of the kernels: it reads plain [`memwall_spec::CostModel`]
//! data.

pub mod analytic;
pub mod cost;
pub mod des;
pub mod footprint;

pub use analytic::{Estimate, Estimator, estimate};
pub use cost::formulas::expected_distinct_experts;
pub use cost::plan::{CostPlan, Cycles, ExpertCost, MoeShape, TensorPlan};
pub use cost::step::{Binding, Conditions, StepTime, StepWork};
pub use footprint::{
    ComputeShape, Fallback, Footprint, KvLayout, WeightBytes, compute_buffer_bytes, gguf_file_bytes,
    ideal_weight_bytes, kv_cache_bytes, resident_weight_bytes,
};

pub use cost::token::{OpKind, TokenTable};
pub use cost::unit::UnitModel;

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
