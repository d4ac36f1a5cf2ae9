//! # memwall-io
//!
//! Everything that crosses the process boundary: the presets embedded from `datasets/`,
//! experiment TOML (a base scenario plus a grid), sweeps, results as Arrow record batches and
//! their Parquet export (written to a temporary file and renamed, so no partial file is ever
//! left), and the quantization-quality table. Output paths are checked before any work
//! ([`check_outputs`]), and an interrupted process removes its temporary files
//! ([`abandon_outputs`]).

pub mod atomic;
pub mod error;
pub mod experiment;
pub mod locate;
pub mod outputs;
pub mod plot;
pub mod presets;
pub mod quality;
pub mod results;
pub mod simulate;
pub mod trace;

pub use atomic::{abandon_outputs, outputs_abandoned};
pub use error::{IoError, OutputProblem, Result};
pub use experiment::{Axis, Experiment, Point};
pub use outputs::{check_outputs, default_output, experiment_inputs};
pub use presets::{load_device, load_model};
pub use quality::{Quality, QualityTable};
pub use results::{Row, metadata, simulated_to_record_batch, to_record_batch, write_parquet};
pub use simulate::{Outputs, Simulated, parse_duration, simulate_experiment};
pub use trace::ParquetTraceSink;

/// Evaluate every point of an experiment with the analytic estimator, in parallel over the
/// points (rows come back in grid order, identical whatever the thread count), calling
/// `progress(done, total)` as points finish. On failure, the error of the lowest failing
/// point is returned.
pub fn run_sweep(exp: &Experiment, progress: impl Fn(usize, usize) + Sync) -> Result<Vec<Row>> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let quality = QualityTable::default();
    let n = exp.len();
    let done = AtomicUsize::new(0);
    let rows: Vec<Result<Row>> = (0..n)
        .into_par_iter()
        .map(|index| {
            let p = exp.point(index)?;
            let estimate = memwall_sim::estimate(&p.scenario).map_err(|e| IoError::Point {
                index,
                params: exp.describe(&p.choice),
                source: Box::new(e.into()),
            })?;
            let q = quality.lookup(&p.scenario.weights, &p.scenario.kv);
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, n);
            Ok(Row { choice: p.choice, scenario: p.scenario, estimate, quality: q })
        })
        .collect();
    rows.into_iter().collect()
}
