//! # memwall-io
//!
//! Everything that crosses the process boundary: the presets embedded from `datasets/`,
//! experiment TOML (a base scenario plus a grid), sweeps, results as Arrow record batches and
//! their Parquet export (written to a temporary file and renamed, so no partial file is ever
//! left), and the quantization-quality table.

pub mod error;
pub mod experiment;
pub mod presets;
pub mod quality;
pub mod results;

pub use error::{IoError, Result};
pub use experiment::{Axis, Experiment, Point};
pub use presets::{load_device, load_model};
pub use quality::{Quality, QualityTable};
pub use results::{Row, metadata, to_record_batch, write_parquet};

/// Evaluate every point of an experiment with the analytic estimator, calling `progress(done,
/// total)` as it goes.
pub fn run_sweep(exp: &Experiment, mut progress: impl FnMut(usize, usize)) -> Result<Vec<Row>> {
    let quality = QualityTable::default();
    let n = exp.len();
    let mut rows = Vec::with_capacity(n);
    for index in 0..n {
        let p = exp.point(index)?;
        let estimate = memwall_sim::estimate(&p.scenario).map_err(|e| IoError::Point {
            index,
            params: exp.describe(&p.choice),
            source: Box::new(e.into()),
        })?;
        let q = quality.lookup(&p.scenario.weights, &p.scenario.kv);
        rows.push(Row { choice: p.choice, scenario: p.scenario, estimate, quality: q });
        progress(index + 1, n);
    }
    Ok(rows)
}
