//! Key-value metadata of every results file, and a one-shot Parquet writer.

use std::path::Path;

use arrow::record_batch::RecordBatch;
use memwall_spec::{CostModel, DeviceSpec, ModelSpec, Scenario, WeightQuant};
use serde::Serialize;

use crate::error::Result;
use crate::experiment::Experiment;
use crate::files::parquet::ParquetStream;

/// The git commit memwall was built from (`-dirty` when the checkout had uncommitted
/// changes), when it was built from a git checkout.
pub const GIT_COMMIT: Option<&str> = option_env!("MEMWALL_GIT_COMMIT");

/// Key-value metadata stored with every results file: `memwall_version`, `git_commit` (when
/// known), and for an experiment its `experiment_name`, `experiment_toml` and `seed`.
pub fn metadata(exp: Option<&Experiment>) -> Vec<(String, String)> {
    let mut kv = vec![("memwall_version".to_string(), env!("CARGO_PKG_VERSION").to_string())];
    if let Some(c) = GIT_COMMIT.filter(|c| !c.is_empty()) {
        kv.push(("git_commit".into(), c.to_string()));
    }
    if let Some(e) = exp {
        kv.push(("experiment_name".into(), e.name.clone()));
        kv.push(("experiment_toml".into(), e.text.clone()));
        kv.push(("seed".into(), e.seed.to_string()));
    }
    kv
}

/// The specs a file's points were computed with, as TOML: every distinct model, device,
/// weight quantization and cost model, in full (the preset contents as used, so a result stays
/// explainable after the presets change). Stored under the metadata key `resolved`.
#[derive(Debug, Default, Serialize)]
pub struct Resolved {
    model: Vec<ModelSpec>,
    device: Vec<DeviceSpec>,
    weights: Vec<WeightQuant>,
    cost: Vec<CostModel>,
}

impl Resolved {
    /// Record the specs of `s` (each distinct one once).
    pub fn add(&mut self, s: &Scenario) {
        fn push<T: PartialEq + Clone>(list: &mut Vec<T>, v: &T) {
            if !list.contains(v) {
                list.push(v.clone());
            }
        }
        push(&mut self.model, &s.model);
        push(&mut self.device, &s.device);
        push(&mut self.weights, &s.weights);
        push(&mut self.cost, &s.cost);
    }

    /// The `("resolved", TOML)` metadata entry.
    pub fn entry(&self) -> (String, String) {
        let text = toml::to_string(self).unwrap_or_else(|e| format!("# could not serialize the specs: {e}"));
        ("resolved".into(), text)
    }
}

/// Write `batch` to a Parquet file at `path` with `metadata` (in the footer and on the Arrow
/// schema). The file is written to a temporary file in the same directory and renamed into
/// place, so a failure never leaves a partial file.
pub fn write_parquet(path: &Path, batch: &RecordBatch, metadata: &[(String, String)]) -> Result<()> {
    write_parquet_batches(path, batch.schema(), std::slice::from_ref(batch), metadata).map(|_| ())
}

/// Write `batches` (rows of `schema`) to one Parquet file at `path` as [`write_parquet`] does
/// (whole or not at all, `metadata` in the footer and on the schema): the one path every
/// Parquet file memwall writes from memory takes, Python's included. Returns the rows.
pub fn write_parquet_batches(
    path: &Path,
    schema: arrow::datatypes::SchemaRef,
    batches: &[RecordBatch],
    metadata: &[(String, String)],
) -> Result<u64> {
    let mut out = ParquetStream::create(path, schema, metadata, crate::files::parquet::ROW_GROUP_ROWS)?;
    for b in batches {
        out.write(b)?;
    }
    out.finish()
}
