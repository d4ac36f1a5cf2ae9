//! # memwall-calib
//!
//! Calibration: the engine and device figures of memwall's cost model fitted to
//! measurements, and the honest error of the fit.
//!
//! - [`fit`]: a robust, regularized least-squares fit (Levenberg–Marquardt on the log of
//!   predicted ÷ measured decode tok/s, with a log-normal prior on every parameter) of the
//!   figures of each engine on each compute unit ([`Knob`]: bandwidth share, compute
//!   efficiency, fixed cost per token and per operator).
//! - [`cross_validate`]: leave-one-device-out — every device's rows are predicted by a fit
//!   that never saw that device — and the summaries memwall publishes ([`Summary`]).
//!
//! The simulator never depends on this crate: a fit ends as plain numbers written into
//! engine profiles.

pub mod fit;
pub mod host;
pub mod hostfit;
pub mod hostval;
pub mod llama_bench;
pub mod nelder_mead;
pub mod published;
pub mod quality;
pub mod thermal;
pub mod validate;

pub use fit::{Fit, Knob, Observation, Param, Predictor, default_params, fit, least_squares};
pub use validate::{CrossValidated, Summary, cross_validate, naive_roofline_tok_s, summarize};

/// Errors of calibration.
///
/// The variants that read inputs (a spec refused, a preset missing, a file unreadable, a
/// table row) display exactly as memwall-io's errors of the same kind, which convert from
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
