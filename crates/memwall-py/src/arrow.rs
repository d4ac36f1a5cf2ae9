//! Tables across the boundary: [`ArrowStream`] hands record batches to Python through the
//! Arrow PyCapsule interface (`__arrow_c_stream__`, no copy), and [`write_parquet`] takes any
//! such stream back to write it with memwall's Parquet writer.

use std::sync::Mutex;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::ffi_stream::FFI_ArrowArrayStream;
use arrow::record_batch::RecordBatchIterator;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::errors::{Error, MemwallError, Result, SpecError};

/// Record batches handed to Python once, through `__arrow_c_stream__`.
#[pyclass(module = "memwall._native", name = "ArrowStream")]
pub(crate) struct ArrowStream {
    schema: SchemaRef,
    batches: Mutex<Option<Vec<RecordBatch>>>,
    rows: usize,
}

impl ArrowStream {
    /// A stream of `batches` (of `schema`).
    pub(crate) fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        let rows = batches.iter().map(RecordBatch::num_rows).sum();
        ArrowStream { schema, batches: Mutex::new(Some(batches)), rows }
    }
}

#[pymethods]
impl ArrowStream {
    /// The Arrow PyCapsule stream protocol: the batches move into the consumer (no copy of
    /// their buffers); a stream can be consumed once.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> Result<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let batches = self.batches.lock().unwrap_or_else(|e| e.into_inner()).take().ok_or_else(|| {
            MemwallError::new_err("these results were already consumed (an Arrow stream is read once)")
        })?;
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), self.schema.clone());
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        Ok(PyCapsule::new_with_value(py, stream, c"arrow_array_stream")?)
    }

    /// Rows in the stream.
    fn __len__(&self) -> usize {
        self.rows
    }

    /// Address of the values buffer of `column` in the first batch, while the stream still
    /// holds it: a consumer that took the batches without a copy sees the same address.
    fn buffer_address(&self, column: &str) -> Result<usize> {
        let guard = self.batches.lock().unwrap_or_else(|e| e.into_inner());
        let batches = guard.as_ref().ok_or_else(|| MemwallError::new_err("these results were already consumed"))?;
        let batch = batches.first().ok_or_else(|| MemwallError::new_err("no rows"))?;
        let col = batch.column_by_name(column).ok_or_else(|| SpecError::new_err(format!("no column `{column}`")))?;
        let data = col.to_data();
        let buffer = data.buffers().last().ok_or_else(|| MemwallError::new_err(format!("`{column}` has no buffer")))?;
        Ok(buffer.as_ptr() as usize)
    }
}

/// Stream of one record batch.
pub(crate) fn one_batch(batch: RecordBatch) -> ArrowStream {
    ArrowStream::new(batch.schema(), vec![batch])
}

/// Write `table` (anything with `__arrow_c_stream__`) to a Parquet file at `path` with
/// `metadata` on its schema and in its footer, through [`memwall_lab::files::metadata::write_parquet_batches`]
/// (the path `memwall run` takes): checked first against `inputs` and existing non-regular
/// files, written whole through a temporary file and a rename. Returns the rows written.
#[pyfunction]
pub(crate) fn write_parquet(
    py: Python<'_>,
    table: Bound<'_, PyAny>,
    path: &str,
    metadata: Vec<(String, String)>,
    inputs: Vec<String>,
) -> Result<u64> {
    let (schema, batches) = import(py, &table)?;
    let r = py.detach(|| -> memwall_lab::Result<u64> {
        let path = std::path::Path::new(path);
        let inputs: Vec<&std::path::Path> = inputs.iter().map(std::path::Path::new).collect();
        memwall_lab::check_outputs(&inputs, &[("path", path)])?;
        memwall_lab::files::metadata::write_parquet_batches(path, schema, &batches, &metadata)
    });
    r.map_err(Error::from)
}

/// Draw `table` (sweep results, anything with `__arrow_c_stream__`) as memory against decode
/// tok/s to `path` (`.pdf`, `.svg` or `.png`, `size` pixels as `WIDTHxHEIGHT`), the figure
/// `memwall run --plot` draws ([`memwall_lab::plot::write_table_scatter`]); `path` is checked first and
/// written whole.
#[pyfunction]
pub(crate) fn plot_sweep(py: Python<'_>, table: Bound<'_, PyAny>, path: &str, title: &str, size: &str) -> Result<()> {
    let (_, batches) = import(py, &table)?;
    let size: memwall_lab::plot::Size = size.parse().map_err(|e: memwall_spec::SpecError| e.within("size"))?;
    let r = py.detach(|| -> memwall_lab::Result<()> {
        let path = std::path::Path::new(path);
        memwall_lab::check_outputs(&[], &[("path", path)])?;
        memwall_lab::plot::write_table_scatter(path, title, &batches, size)
    });
    r.map_err(Error::from)
}

/// The schema and record batches of anything with `__arrow_c_stream__` (a pyarrow Table,
/// memwall's results, a polars frame), moved in without a copy of their buffers.
pub(crate) fn import(py: Python<'_>, table: &Bound<'_, PyAny>) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    use arrow::array::RecordBatchReader;
    use arrow::ffi_stream::RecordBatchStreamReader;
    let capsule = table.call_method1("__arrow_c_stream__", (py.None(),)).map_err(|_| {
        MemwallError::new_err(format!("a {} is not an Arrow table (it has no `__arrow_c_stream__`)", type_name(table)))
    })?;
    let capsule = capsule
        .cast_into::<PyCapsule>()
        .map_err(|_| MemwallError::new_err("`__arrow_c_stream__` did not return a PyCapsule"))?;
    let ptr = capsule.pointer_checked(Some(c"arrow_array_stream"))?.cast::<FFI_ArrowArrayStream>();
    // SAFETY: the capsule, checked by name above, holds a live `ArrowArrayStream` (the Arrow
    // PyCapsule protocol); `from_raw` moves it out and leaves a released one behind, which the
    // capsule's destructor then frees as the protocol requires.
    #[allow(unsafe_code)]
    let reader = unsafe { RecordBatchStreamReader::from_raw(ptr.as_ptr()) }
        .map_err(|e| MemwallError::new_err(format!("not an Arrow stream: {e}")))?;
    let schema = reader.schema();
    let batches = reader
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| MemwallError::new_err(format!("reading the Arrow stream: {e}")))?;
    Ok((schema, batches))
}

/// The Python type name of `v`, for errors.
fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "value".into())
}
