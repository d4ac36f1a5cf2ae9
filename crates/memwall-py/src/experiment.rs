//! `memwall.sweep` and the experiments under every design: [`Experiment`] (parsed TOML, swept
//! with the GIL released) and the metadata its results carry.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use pyo3::prelude::*;

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

    /// Point `index` (default the first) as a dict of the sweep's columns, evaluated on this
    /// thread ([`memwall_lab::Sweep::point_batch`]): the row `sweep` gives for it, for one
    /// design at a time.
    #[pyo3(signature = (index=0))]
    fn row<'py>(&self, py: Python<'py>, index: usize) -> Result<Bound<'py, pyo3::types::PyDict>> {
        let exp = &self.exp;
        let batch = py.detach(|| memwall_lab::Sweep::new(exp).and_then(|s| s.point_batch(index)))?;
        crate::arrow::row_dict(py, &batch, 0)
    }
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
