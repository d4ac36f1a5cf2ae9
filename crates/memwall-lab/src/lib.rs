//! # memwall-lab
//!
//! The researcher's bench, on which every front end (the `memwall` command, the Python
//! package) stands: experiment TOML (a base scenario plus a grid) and its sweeps
//! ([`Sweep`]) and simulations ([`simulate`]); one design at a time at interactive speed,
//! its specs built once and kept across probes ([`prepared`]); one function per use case, each returning a
//! typed report that the command line prints or serializes and the bindings hand to Python
//! ([`report`]); result tables as Arrow record batches with every column defined once
//! ([`columns`]); the Pareto front ([`pareto`]); plots ([`plot`]); and every file memwall
//! writes, whole or not at all, checked against the inputs first and removed when the process
//! is interrupted ([`files`]).
//!
//! What memwall ships and reads is memwall-catalog's (re-exported here), every fit is
//! memwall-calib's; a [`memwall_calib::CalibError`] converts into a [`LabError`] of the same
//! kind.

pub mod columns;
pub mod error;
pub mod experiment;
pub mod files;
pub mod locate;
pub mod pareto;
pub mod plot;
pub mod prepared;
pub mod report;
pub mod simulate;
pub mod sweep;
pub mod trace;

pub use columns::TableBuilder;
pub use error::{LabError, OutputProblem, Result};
pub use experiment::{Axis, Experiment, Point};
pub use files::atomic::{abandon_outputs, outputs_abandoned};
// What memwall ships and reads lives in memwall-catalog; its modules keep their paths here.
pub use files::metadata::{GIT_COMMIT, Resolved, metadata, write_parquet};
pub use files::outputs::{beside, check_outputs, default_output};
pub use files::parquet::{ParquetStream, parquet_bytes};
pub use memwall_catalog::quality_table::{ArchEvidence, Architecture, PctFigure, Provenance};
pub use memwall_catalog::{EngineProfile, Quality, QualityTable, load_device, load_engine, load_model};
pub use memwall_catalog::{InputScope, defaults, inputs, presets, read_text};
pub use prepared::{Designs, Prepared};
pub use simulate::{
    Outputs, Simulated, parse_bytes, parse_duration, simulate_experiment, simulate_in_memory, simulation_metadata,
};
pub use sweep::Sweep;
pub use trace::{BatchTraceSink, ParquetTraceSink, PointSink};
