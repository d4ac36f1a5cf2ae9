//! The discrete-event simulator: the estimator's cost functions driven through time.

pub mod thermal;
pub mod trace;

pub use trace::{NullSink, Phase, TraceRow, TraceSink, VecSink};
