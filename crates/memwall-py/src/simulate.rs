//! `memwall.simulate`: the discrete-event simulator over an experiment, with progress and
//! Ctrl-C.

use pyo3::prelude::*;

use crate::arrow::{ArrowStream, one_batch};
use crate::errors::Result;
use crate::experiment::Experiment;

/// Simulate the points `start..end` (default all) of `experiment` through time: the
/// summaries (one row per point, the columns of `memwall simulate --summary`) and, with
/// `trace`, the per-token trace (the columns of `--trace`). `duration_s` overrides `sim.duration_s`. `progress(point, seconds)`
/// is called a few times a second with the GIL held; Ctrl-C (or an exception it raises) stops
/// the run. With `plot` (a `.pdf`, `.svg` or `.png` path) the time figure `memwall simulate
/// --plot` draws is written there, `plot_size` pixels (`WIDTHxHEIGHT`).
#[pyfunction]
#[pyo3(signature = (experiment, start=None, end=None, duration_s=None, trace=true, trace_limit_bytes=2_000_000_000, progress=None, plot=None, plot_size="1100x1000"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn simulate(
    experiment: PyRef<'_, Experiment>,
    py: Python<'_>,
    start: Option<usize>,
    end: Option<usize>,
    duration_s: Option<f64>,
    trace: bool,
    trace_limit_bytes: u64,
    progress: Option<Py<PyAny>>,
    plot: Option<&str>,
    plot_size: &str,
) -> Result<(ArrowStream, Option<ArrowStream>)> {
    let exp = &experiment.exp;
    let size: memwall_lab::plot::Size =
        plot_size.parse().map_err(|e: memwall_spec::SpecError| e.within("plot_size"))?;
    let mut raised: Option<PyErr> = None;
    // The first call goes through; later ones at most every 0.1 s of wall time.
    let mut last: Option<std::time::Instant> = None;
    let result = py.detach(|| {
        let mut check = |i: usize, t: f64| -> bool {
            if last.is_some_and(|l| l.elapsed().as_secs_f64() < 0.1) {
                return true;
            }
            last = Some(std::time::Instant::now());
            Python::attach(|py| {
                let r = py.check_signals().and_then(|()| match &progress {
                    Some(f) => f.call1(py, (i, t)).map(drop),
                    None => Ok(()),
                });
                match r {
                    Ok(()) => true,
                    Err(e) => {
                        raised = Some(e);
                        false
                    }
                }
            })
        };
        if let Some(d) = duration_s {
            memwall_spec::units::Seconds::new(d).map_err(|e| e.within("duration"))?;
        }
        let range = start.unwrap_or(0)..end.unwrap_or(exp.len());
        let plot = plot.map(|p| (std::path::Path::new(p), size));
        memwall_lab::simulate_in_memory(exp, range, duration_s, trace, trace_limit_bytes, plot, &mut check)
    });
    if let Some(e) = raised {
        return Err(e.into());
    }
    let (results, batches) = result?;
    let mut table = memwall_lab::TableBuilder::summaries(exp, results.len());
    for r in &results {
        table.append(exp, r.point.index as u64, &r.point.scenario, &r.point.choice, &r.summary);
    }
    let summary = table.finish()?;
    let trace = trace.then(|| ArrowStream::new(memwall_lab::trace::trace_schema(), batches));
    Ok((one_batch(summary), trace))
}
