//! # memwall-io
//!
//! Everything that crosses the process boundary: the presets embedded from `datasets/`,
//! experiment TOML (a base scenario plus a grid), sweeps, results as Arrow record batches and
//! their Parquet export (written to a temporary file and renamed, so no partial file is ever
//! left), and the quantization-quality table. Output paths are checked before any work
//! ([`check_outputs`]), and an interrupted process removes its temporary files
//! ([`abandon_outputs`]).
//!
//! Every fit lives in memwall-calib: [`llama_bench`] and [`validation`] re-export the
//! llama-bench calibration and the published-row validation from there under their old paths
//! and keep only their Arrow columns; a [`memwall_calib::CalibError`] converts into an
//! [`IoError`] of the same kind.

pub mod atomic;
pub mod columns;
pub mod error;
pub mod experiment;
pub mod locate;
pub mod outputs;
pub mod pareto;
pub mod plot;
pub mod report;
pub mod results;
pub mod simulate;
pub mod stream;
pub mod sweep;
pub mod trace;

pub use atomic::{abandon_outputs, outputs_abandoned};
pub use columns::TableBuilder;
pub use error::{IoError, OutputProblem, Result};
pub use experiment::{Axis, Experiment, Point};
// What memwall ships and reads lives in memwall-catalog; its modules keep their paths here.
pub use memwall_catalog::{EngineProfile, Quality, QualityTable, load_device, load_engine, load_model};
pub use memwall_catalog::{InputScope, inputs, presets, quality, read_text};
pub use outputs::{beside, check_outputs, default_output};
pub use results::{GIT_COMMIT, Resolved, metadata, write_parquet};
pub use simulate::{
    Outputs, Simulated, parse_bytes, parse_duration, simulate_experiment, simulate_in_memory, simulation_metadata,
};
pub use stream::ParquetStream;
pub use sweep::Sweep;
pub use trace::{BatchTraceSink, ParquetTraceSink, PointSink};
