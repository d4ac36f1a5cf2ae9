//! `memwall.sweep` and the experiments under every design: [`Experiment`] (parsed TOML, swept
//! with the GIL released) and the metadata its results carry.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrow::ArrowStream;
use crate::errors::{Error, Result};

/// A parsed experiment: its base scenario and grid, checked once, swept by range of points.
#[pyclass(module = "memwall._native", name = "Experiment", frozen)]
pub(crate) struct Experiment {
    pub(crate) exp: memwall_lab::Experiment,
}

#[pymethods]
impl Experiment {
    /// The front its sweep marks (`[pareto]`): the `by` columns, the objectives and the
    /// quality threshold (`max_ppl_increase_pct`, None: none).
    fn pareto_rule(&self) -> (Vec<String>, Vec<String>, Option<f64>) {
        let r = &self.exp.pareto;
        (r.by.clone(), r.objectives.iter().map(|o| o.name()).collect(), r.max_ppl_increase_pct)
    }

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
    ) -> Result<ArrowStream> {
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
                    let r = memwall_lab::Sweep::new(exp)
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
                    Err(memwall_lab::LabError::Write {
                        path: "<sweep>".into(),
                        message: "the sweep thread panicked".into(),
                    })
                })
            })
        });
        if let Some(e) = raised {
            return Err(e.into());
        }
        let (schema, batches) = result?;
        Ok(ArrowStream::new(schema, batches))
    }

    /// The experiment's one design as a dict of the sweep's columns
    /// ([`memwall_lab::Prepared::row`]): the row `sweep` gives for it, its `pareto` marking it
    /// among itself alone.
    fn row<'py>(&self, py: Python<'py>) -> Result<Bound<'py, PyDict>> {
        let mut p = memwall_lab::Prepared::new(self.exp.clone())?;
        p.row(None, &mut |cells| row_dict(py, cells))?
    }
}

/// A row's cells as a dict from column name to int, float, bool, str or None (the values
/// pyarrow's `to_pylist` gives for these columns).
fn row_dict<'py>(py: Python<'py>, cells: &memwall_lab::columns::Cells<'_>) -> Result<Bound<'py, PyDict>> {
    use memwall_lab::columns::Cell;
    use pyo3::types::PyString;
    // The column names as Python strings, made once: a row's names are the same static
    // strings in the same order each time (any other name is made afresh).
    static KEYS: pyo3::sync::PyOnceLock<Vec<(&'static str, Py<PyString>)>> = pyo3::sync::PyOnceLock::new();
    let keys = KEYS.get_or_init(py, || cells.iter().map(|(n, _)| (*n, PyString::intern(py, n).unbind())).collect());
    let d = PyDict::new(py);
    for (i, (name, cell)) in cells.iter().enumerate() {
        let key = match keys.get(i) {
            Some((at, k)) if std::ptr::eq(*at, *name) => k.bind(py).clone(),
            _ => PyString::intern(py, name),
        };
        match cell {
            Cell::U64(v) => d.set_item(key, v)?,
            Cell::I64(v) => d.set_item(key, v)?,
            Cell::F64(v) => d.set_item(key, v)?,
            Cell::Bool(v) => d.set_item(key, v)?,
            Cell::Str(v) => d.set_item(key, v.as_ref())?,
            Cell::Null => d.set_item(key, py.None())?,
        }
    }
    Ok(d)
}

/// `v` as a TOML value, or `None` where the value has no TOML form this conversion gives (a
/// value other than a str, bool, int within i64, finite float, list or tuple, or dict with str
/// keys; a dict's None entries are left out, as unset): the caller then writes the design as
/// TOML text, whose writer names the value at fault.
fn toml_value(v: &Bound<'_, PyAny>) -> Option<toml::Value> {
    use pyo3::types::{PyBool, PyFloat, PyInt, PyList, PyString, PyTuple};
    if let Ok(s) = v.cast::<PyString>() {
        return s.to_cow().ok().map(|s| toml::Value::String(s.into_owned()));
    }
    if let Ok(b) = v.cast::<PyBool>() {
        return Some(toml::Value::Boolean(b.is_true()));
    }
    if v.cast::<PyInt>().is_ok() {
        return v.extract::<i64>().ok().map(toml::Value::Integer);
    }
    if let Ok(f) = v.cast::<PyFloat>() {
        let x = f.value();
        return x.is_finite().then_some(toml::Value::Float(x));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        return toml_table(d).map(toml::Value::Table);
    }
    let items: Vec<Bound<'_, PyAny>> = if let Ok(l) = v.cast::<PyList>() {
        l.iter().collect()
    } else if let Ok(t) = v.cast::<PyTuple>() {
        t.iter().collect()
    } else {
        return None;
    };
    items.iter().map(toml_value).collect::<Option<Vec<_>>>().map(toml::Value::Array)
}

fn toml_table(d: &Bound<'_, PyDict>) -> Option<toml::Table> {
    let mut t = toml::Table::new();
    for (k, v) in d.iter() {
        let k = k.cast::<pyo3::types::PyString>().ok()?.to_cow().ok()?.into_owned();
        if v.is_none() {
            continue;
        }
        t.insert(k, toml_value(&v)?);
    }
    Some(t)
}

/// The designs `estimate_row` has prepared, for the life of the process.
static DESIGNS: std::sync::LazyLock<std::sync::Mutex<memwall_lab::Designs>> =
    std::sync::LazyLock::new(Default::default);

/// The row of one design given as the mapping `memwall.design` builds (values only: objects
/// already turned into their values), as `Experiment.row` gives it, through the designs kept
/// across calls ([`memwall_lab::Designs`]): one design probed again and again under other
/// weights, KV formats or workloads pays for its estimate only. `None` when the mapping holds
/// a value without a TOML form here (a NaN, a None in a list, an object): the caller then
/// writes the design's text, which names the value.
#[pyfunction]
pub(crate) fn estimate_row<'py>(py: Python<'py>, design: Bound<'py, PyDict>) -> Result<Option<Bound<'py, PyDict>>> {
    if design.values().iter().any(|v| v.is_none()) {
        return Ok(None);
    }
    let Some(table) = toml_table(&design) else { return Ok(None) };
    let emit = &mut |cells: &memwall_lab::columns::Cells<'_>| row_dict(py, cells);
    // The GIL is held throughout, so the lock can be taken only by a call running inside
    // another on this thread (Python code a collection runs while this one builds its
    // dict): that call goes without the kept designs rather than wait on itself forever.
    match DESIGNS.try_lock() {
        Ok(mut kept) => kept.row(table, emit),
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().row(table, emit),
        Err(std::sync::TryLockError::WouldBlock) => memwall_lab::Designs::new().row(table, emit),
    }?
    .map(Some)
}

/// Parse the experiment in TOML `text` (`origin` names it in errors), checking its first point
/// and every grid value.
#[pyfunction]
pub(crate) fn parse_experiment(py: Python<'_>, text: &str, origin: &str) -> Result<Experiment> {
    let exp = py.detach(|| memwall_lab::Experiment::parse(text, origin))?;
    Ok(Experiment { exp })
}

/// The key-value metadata memwall writes into its Parquet files for `experiment`: the
/// version, commit, experiment text and seed, and the specs its points resolved to.
#[pyfunction]
pub(crate) fn metadata(py: Python<'_>, experiment: PyRef<'_, Experiment>) -> Result<Vec<(String, String)>> {
    {
        let exp = &experiment.exp;
        let r = py.detach(|| -> memwall_lab::Result<_> {
            let mut meta = memwall_lab::metadata(Some(exp));
            meta.extend(memwall_lab::Sweep::new(exp)?.resolved_metadata());
            Ok(meta)
        });
        r.map_err(Error::from)
    }
}
