//! # memwall-calib
//!
//! Calibration: every fit memwall makes of its figures to measurements, and the honest error
//! of each.
//!
//! - [`fit`](mod@fit): the least-squares core — [`least_squares`] (linear, by SVD, with standard
//!   errors) and [`fit()`](fit::fit), a robust, regularized Levenberg–Marquardt fit on the log
//!   of predicted ÷ measured tok/s (decode or prefill, [`Phase`]), with a log-normal prior on
//!   every parameter, of the figures of each engine on each compute unit ([`Knob`]: bandwidth
//!   share, compute efficiency, fixed cost per token and per operator, KV reads, prefill
//!   efficiency).
//! - [`validate`]: leave-one-device-out cross-validation ([`cross_validate`], and
//!   [`cross_validate_prefill`] for prompt rates on the decode figures of the same fold) —
//!   every device's rows are predicted by a fit that never saw that device — and the
//!   summaries memwall publishes ([`Summary`], [`Coverage`] of the 80 % interval).
//! - [`published`]: the published decode and prefill rows (`datasets/validation_decode.csv`)
//!   read as scenarios and cross-validated (`memwall validate --devices`), and the engine
//!   profiles fitted on them ([`published::fitted_engine_profiles`]).
//! - [`llama_bench`]: llama-bench output in its four formats, and a device and engine
//!   calibrated from it (generation tests: decode figures; prompt tests: the prefill
//!   efficiency), every row checked before and after the fit
//!   (`memwall calibrate --from-llama-bench`).
//! - [`host`], [`hostfit`], [`hostval`]: this machine probed with memwall's own kernels and
//!   engine, the device and engine profiles fitted to the probes, and the check of the
//!   profile against decodes timed here (`memwall calibrate`, `memwall validate --host`).
//! - [`quality_fit`]: perplexity deltas estimated from measured quantization error
//!   ([`quality_fit::estimate`], what `memwall quality` prints).
//! - [`thermal`]: the thermal networks and governors of the phone presets fitted to
//!   published sustained-load runs (the search behind `tests/thermal_fit.rs`).
//! - [`nelder_mead`]: the one derivative-free optimizer, for the thermal search, whose loss
//!   (a governor stepping between clock levels) has no useful derivative.
//!
//! The simulator never depends on this crate: a fit ends as plain numbers written into
//! engine and device profiles. Nothing here writes Arrow or Parquet; memwall-lab keeps the
//! table columns of these reports.

pub mod energy;
pub mod fit;
pub mod host;
pub mod hostfit;
pub mod hostval;
pub mod llama_bench;
pub mod nelder_mead;
pub mod published;
pub mod quality_fit;
pub mod sustained;
pub mod thermal;
pub mod validate;

pub use fit::{Fit, Knob, Observation, Param, Phase, Predictor, default_params, fit, least_squares, params_for};
pub use validate::{
    Coverage, CrossValidated, Summary, cross_validate, cross_validate_prefill, interval_coverage,
    naive_prefill_roofline_tok_s, naive_roofline_tok_s, summarize,
};

/// Errors of calibration.
///
/// The variants that read inputs (a spec refused, a preset missing, a file unreadable, a
/// table row) display exactly as memwall-lab's errors of the same kind, which convert from
/// these one for one.
#[derive(Debug, thiserror::Error)]
pub enum CalibError {
    /// A scenario could not be estimated.
    #[error("observation `{id}`: {source}")]
    Scenario {
        /// The observation.
        id: String,
        /// Why.
        source: memwall_sim::SimError,
    },
    /// Nothing to fit.
    #[error("{0}")]
    Empty(String),
    /// A probe of the host failed.
    #[error("probe: {0}")]
    Probe(String),
    /// An input (a llama-bench row, a table cell, a fitted figure) is refused.
    #[error(transparent)]
    Spec(#[from] memwall_spec::SpecError),
    /// The estimator refused a scenario outside a fit (a rate ceiling, a roofline).
    #[error(transparent)]
    Sim(#[from] memwall_sim::SimError),
    /// A preset or a file could not be had.
    #[error(transparent)]
    Catalog(#[from] memwall_catalog::CatalogError),
    /// A row of a table (a validation row) cannot be used.
    #[error("row {id}: {source}")]
    Row {
        /// The row's identifier.
        id: String,
        /// What is wrong.
        source: Box<CalibError>,
    },
}
