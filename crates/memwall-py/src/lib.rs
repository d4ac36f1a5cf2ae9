//! The native module behind the `memwall` Python package: experiments are swept in Rust with
//! the GIL released, and their results cross into Python through the Arrow PyCapsule
//! interface (`__arrow_c_stream__`), so pyarrow, polars and pandas take them without a copy.
//! Rust errors become typed Python exceptions carrying the field and value they name.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::ffi_stream::FFI_ArrowArrayStream;
use arrow::record_batch::RecordBatchIterator;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

mod api;

pyo3::create_exception!(_native, MemwallError, PyException, "Base class of every memwall error.");
pyo3::create_exception!(_native, SpecError, MemwallError, "An invalid, unknown or unparsable specification value.");
pyo3::create_exception!(_native, GgufError, MemwallError, "A malformed or unmappable GGUF file.");
pyo3::create_exception!(_native, ConfigError, MemwallError, "A malformed or unmappable config.json.");
pyo3::create_exception!(_native, MemwallIOError, MemwallError, "A file could not be read or written.");
pyo3::create_exception!(_native, CalibrationError, MemwallError, "A calibration or validation run failed.");
pyo3::create_exception!(_native, SimulationError, MemwallError, "A simulation could not run or its trace not be kept.");

/// Which exception class an error becomes.
#[derive(Clone, Copy)]
enum Kind {
    Spec,
    Gguf,
    Config,
    Io,
    Sim,
    Calib,
    Other,
}

/// The class, field and value of an error (wrappers that add a place are looked through).
fn classify(e: &memwall_io::IoError) -> (Kind, Option<String>, Option<String>) {
    use memwall_import::ImportError as I;
    use memwall_io::IoError as E;
    match e {
        E::Spec(s) => match spec_parts(s) {
            Some((f, v)) => (Kind::Spec, Some(f), v),
            None => (Kind::Spec, None, None),
        },
        E::At { error, .. } => classify(error),
        E::Point { source, .. } | E::Row { source, .. } | E::Design { source, .. } => classify(source),
        E::Calib(_) => (Kind::Calib, None, None),
        E::Import(i) => match i.as_ref() {
            I::Gguf { offset, .. } => (Kind::Gguf, Some("offset".into()), Some(offset.to_string())),
            I::Key { key, .. } => (Kind::Gguf, Some(key.clone()), None),
            I::Json { path, .. } => (Kind::Config, Some(path.clone()), None),
            I::Spec { source, .. } => match spec_parts(source) {
                Some((f, v)) => (Kind::Spec, Some(f), v),
                None => (Kind::Spec, None, None),
            },
            I::Io { .. } | I::Format { .. } => (Kind::Io, None, None),
        },
        E::File { .. } | E::Output { .. } | E::Write { .. } => (Kind::Io, None, None),
        E::Sim(memwall_sim::SimError::Spec(s)) => match spec_parts(s) {
            Some((f, v)) => (Kind::Spec, Some(f), v),
            None => (Kind::Spec, None, None),
        },
        E::Sim(_) => (Kind::Sim, None, None),
        _ => (Kind::Other, None, None),
    }
}

/// The Python exception for a memwall error, with `field` and `value` attributes (None where
/// the error names none).
pub(crate) fn to_py(py: Python<'_>, e: memwall_io::IoError) -> PyErr {
    let (kind, field, value) = classify(&e);
    let message = e.to_string();
    let err = match kind {
        Kind::Spec => SpecError::new_err(message),
        Kind::Gguf => GgufError::new_err(message),
        Kind::Config => ConfigError::new_err(message),
        Kind::Io => MemwallIOError::new_err(message),
        Kind::Sim => SimulationError::new_err(message),
        Kind::Calib => CalibrationError::new_err(message),
        Kind::Other => MemwallError::new_err(message),
    };
    let v = err.value(py);
    // Setting attributes on a fresh exception instance cannot fail.
    let _ = v.setattr("field", field);
    let _ = v.setattr("value", value);
    err
}

/// Field and value of a spec error.
fn spec_parts(s: &memwall_spec::SpecError) -> Option<(String, Option<String>)> {
    use memwall_spec::SpecError as S;
    match s {
        S::Invalid { field, value, .. } | S::Unknown { field, value, .. } => Some((field.clone(), Some(value.clone()))),
        S::Field { field, .. } => Some((field.clone(), None)),
        S::Parse { .. } => None,
    }
}

/// Record batches handed to Python once, through `__arrow_c_stream__`.
#[pyclass(module = "memwall._native", name = "ArrowStream")]
struct ArrowStream {
    schema: SchemaRef,
    batches: Mutex<Option<Vec<RecordBatch>>>,
    rows: usize,
}

impl ArrowStream {
    /// A stream of `batches` (of `schema`, `rows` rows in all).
    pub(crate) fn new(schema: SchemaRef, batches: Vec<RecordBatch>, rows: usize) -> Self {
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
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let batches = self.batches.lock().unwrap_or_else(|e| e.into_inner()).take().ok_or_else(|| {
            MemwallError::new_err("these results were already consumed (an Arrow stream is read once)")
        })?;
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), self.schema.clone());
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }

    /// Rows in the stream.
    fn __len__(&self) -> usize {
        self.rows
    }

    /// Address of the values buffer of `column` in the first batch, while the stream still
    /// holds it: a consumer that took the batches without a copy sees the same address.
    fn buffer_address(&self, column: &str) -> PyResult<usize> {
        let guard = self.batches.lock().unwrap_or_else(|e| e.into_inner());
        let batches = guard.as_ref().ok_or_else(|| MemwallError::new_err("these results were already consumed"))?;
        let batch = batches.first().ok_or_else(|| MemwallError::new_err("no rows"))?;
        let col = batch.column_by_name(column).ok_or_else(|| SpecError::new_err(format!("no column `{column}`")))?;
        let data = col.to_data();
        let buffer = data.buffers().last().ok_or_else(|| MemwallError::new_err(format!("`{column}` has no buffer")))?;
        Ok(buffer.as_ptr() as usize)
    }
}

/// A parsed experiment: its base scenario and grid, checked once, swept by range of points.
#[pyclass(module = "memwall._native", name = "Experiment", frozen)]
struct Experiment {
    pub(crate) exp: memwall_io::Experiment,
}

#[pymethods]
impl Experiment {
    /// Points in the grid.
    fn __len__(&self) -> usize {
        self.exp.len()
    }

    /// Every point's inputs and metrics, one row per point in grid order, computed in
    /// parallel with the GIL released; with `start` and `end`, the points `start..end` only
    /// (a partition of a distributed sweep). `progress(points done)` is called with the GIL
    /// held every tenth of a second or so; Ctrl-C (or an exception `progress` raises) stops
    /// the sweep within a batch.
    #[pyo3(signature = (start=None, end=None, progress=None))]
    fn sweep(
        &self,
        py: Python<'_>,
        start: Option<usize>,
        end: Option<usize>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<ArrowStream> {
        let exp = &self.exp;
        let range = start.unwrap_or(0)..end.unwrap_or(exp.len());
        let stop = AtomicBool::new(false);
        let done = AtomicU64::new(0);
        let mut raised: Option<PyErr> = None;
        // The sweep runs on a thread of its own; this (the main) thread waits for it, and a
        // few times a second takes the GIL to see Ctrl-C (Python delivers signals to the main
        // thread only) and report progress.
        let result = py.detach(|| {
            std::thread::scope(|scope| {
                let (tx, rx) = std::sync::mpsc::channel::<()>();
                let (stop_ref, done_ref) = (&stop, &done);
                let worker = scope.spawn(move || {
                    let r = memwall_io::Sweep::new(exp)
                        .and_then(|s| s.batches_watched(range, stop_ref, &|n| done_ref.store(n, Ordering::Relaxed)));
                    let _ = tx.send(());
                    r
                });
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    rx.recv_timeout(std::time::Duration::from_millis(100))
                {
                    Python::attach(|py| {
                        let r = py.check_signals().and_then(|()| match &progress {
                            Some(f) => f.call1(py, (done.load(Ordering::Relaxed),)).map(drop),
                            None => Ok(()),
                        });
                        if let Err(e) = r {
                            raised.get_or_insert(e);
                            stop.store(true, Ordering::Relaxed);
                        }
                    });
                }
                worker.join().unwrap_or_else(|_| {
                    Err(memwall_io::IoError::Write {
                        path: "<sweep>".into(),
                        message: "the sweep thread panicked".into(),
                    })
                })
            })
        });
        if let Some(e) = raised {
            return Err(e);
        }
        let (schema, batches) = result.map_err(|e| to_py(py, e))?;
        let rows = batches.iter().map(RecordBatch::num_rows).sum();
        Ok(ArrowStream::new(schema, batches, rows))
    }
}

/// Parse the experiment in TOML `text` (`origin` names it in errors), checking its first point
/// and every grid value.
#[pyfunction]
fn parse_experiment(py: Python<'_>, text: &str, origin: &str) -> PyResult<Experiment> {
    let exp = py.detach(|| memwall_io::Experiment::parse(text, origin)).map_err(|e| to_py(py, e))?;
    Ok(Experiment { exp })
}

/// Seconds in a duration: a number, or a number with a unit `ms`, `s`, `m`, `h` (`10m`).
#[pyfunction]
fn parse_duration(py: Python<'_>, text: &str) -> PyResult<f64> {
    memwall_io::parse_duration(text).map_err(|e| to_py(py, e))
}

/// Names of the presets of a kind: `models`, `devices` or `engines`
/// ([`memwall_io::report::presets`]; the engines start with the generic profile).
#[pyfunction]
fn presets(py: Python<'_>, kind: &str) -> PyResult<Vec<String>> {
    let p = py.detach(|| memwall_io::report::presets(Some(kind))).map_err(|e| to_py(py, e))?;
    let names = p.models.into_iter().map(|m| m.name);
    Ok(names.chain(p.devices.into_iter().map(|d| d.name)).chain(p.engines.into_iter().map(|e| e.name)).collect())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(parse_experiment, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration, m)?)?;
    m.add_function(wrap_pyfunction!(api::spec_json, m)?)?;
    m.add_function(wrap_pyfunction!(api::describe, m)?)?;
    m.add_function(wrap_pyfunction!(api::footprint, m)?)?;
    m.add_function(wrap_pyfunction!(api::simulate, m)?)?;
    m.add_function(wrap_pyfunction!(api::metadata, m)?)?;
    m.add_function(wrap_pyfunction!(api::validate_devices, m)?)?;
    m.add_function(wrap_pyfunction!(api::validate_host, m)?)?;
    m.add_function(wrap_pyfunction!(api::calibrate_llama_bench, m)?)?;
    m.add_function(wrap_pyfunction!(api::calibrate_host, m)?)?;
    m.add_function(wrap_pyfunction!(api::parse_mix, m)?)?;
    m.add_function(wrap_pyfunction!(api::parse_format, m)?)?;
    m.add_function(wrap_pyfunction!(api::parse_backend, m)?)?;
    m.add_function(wrap_pyfunction!(api::parse_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(api::beside, m)?)?;
    m.add_function(wrap_pyfunction!(api::write_texts, m)?)?;
    m.add_function(wrap_pyfunction!(api::solve, m)?)?;
    m.add_function(wrap_pyfunction!(api::pareto_mask, m)?)?;
    m.add_function(wrap_pyfunction!(api::ops, m)?)?;
    m.add_function(wrap_pyfunction!(api::compare, m)?)?;
    m.add_function(wrap_pyfunction!(api::write_parquet, m)?)?;
    m.add_class::<ArrowStream>()?;
    m.add_class::<Experiment>()?;
    m.add("MemwallError", py.get_type::<MemwallError>())?;
    m.add("SpecError", py.get_type::<SpecError>())?;
    m.add("GgufError", py.get_type::<GgufError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("MemwallIOError", py.get_type::<MemwallIOError>())?;
    m.add("CalibrationError", py.get_type::<CalibrationError>())?;
    m.add("SimulationError", py.get_type::<SimulationError>())?;
    Ok(())
}
