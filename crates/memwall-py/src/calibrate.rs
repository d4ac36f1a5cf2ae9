//! `memwall.calibrate` and `Calibration.write`: profiles fitted to this machine or to
//! llama-bench rows, and the files they are written to.

use memwall_spec::{DeviceSpec, EngineSpec};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrow::{ArrowStream, one_batch};
use crate::errors::{CalibrationError, Error, MemwallError, Result};

/// A calibrated device and engine as TOML (to write) and JSON (to build Python objects from).
pub(crate) fn profiles<'py>(py: Python<'py>, device: &DeviceSpec, engine: &EngineSpec) -> Result<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let (device_toml, engine_toml) = memwall_lab::report::profile_texts(device, engine)?;
    let fail = |e: &dyn std::fmt::Display| MemwallError::new_err(format!("serializing a calibrated profile: {e}"));
    d.set_item("device_toml", device_toml)?;
    d.set_item("engine_toml", engine_toml)?;
    d.set_item("device_json", serde_json::to_string(device).map_err(|e| fail(&e))?)?;
    d.set_item("engine_json", serde_json::to_string(engine).map_err(|e| fail(&e))?)?;
    Ok(d)
}

/// Calibrate a device from llama-bench output (`path`) of `model` on `device` run by
/// `engine` ([`memwall_lab::report::calibrate_llama_bench`]): the profiles ([`profiles`], with
/// `not_fitted`: the figures the file could not pin, each with why) and the per-row residuals
/// before and after.
#[pyfunction]
pub(crate) fn calibrate_llama_bench<'py>(
    py: Python<'py>,
    path: &str,
    device: &str,
    model: &str,
    engine: &str,
) -> Result<(Bound<'py, PyDict>, ArrowStream)> {
    let r = py.detach(|| -> memwall_lab::Result<_> {
        let c = memwall_lab::report::calibrate_llama_bench(std::path::Path::new(path), model, device, engine, &[])?;
        let batch = memwall_lab::columns::batch_of(memwall_lab::columns::RESIDUAL_COLUMNS, &c.residuals)?;
        Ok((c, batch))
    });
    let (c, batch) = r?;
    let d = profiles(py, &c.device, &c.engine)?;
    d.set_item("not_fitted", c.not_fitted)?;
    Ok((d, one_batch(batch)))
}

/// Calibrate this machine with memwall's kernels and engine (`quick`: the short probe set,
/// about 2 minutes): the profiles ([`profiles`]) with the raw measurements as CSV
/// (`measurements_csv`), and the fitted figures with their 95 % intervals. `progress(line)`
/// gets a line per probe.
#[pyfunction]
#[pyo3(signature = (name="host", quick=true, threads=None, progress=None))]
pub(crate) fn calibrate_host<'py>(
    py: Python<'py>,
    name: &str,
    quick: bool,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> Result<(Bound<'py, PyDict>, ArrowStream)> {
    let plan = memwall_calib::host::Plan::new(quick, threads, "threads")?;
    let p = py
        .detach(|| {
            memwall_calib::hostfit::calibrate_host(name, plan, &mut |line| {
                if let Some(f) = &progress {
                    Python::attach(|py| {
                        // A failing callback only loses a progress line.
                        let _ = f.call1(py, (line,));
                    });
                }
            })
        })
        .map_err(|e| CalibrationError::new_err(e.to_string()))?;
    let batch = memwall_lab::columns::batch_of(memwall_lab::columns::FITTED_COLUMNS, &p.fitted)?;
    let d = profiles(py, &p.device, &p.engine)?;
    d.set_item("measurements_csv", memwall_calib::hostfit::measurements_csv(&p.measurements))?;
    Ok((d, one_batch(batch)))
}

/// The file beside `path` with `suffix` (`dev.toml` → `dev.engine.toml`), as `memwall
/// calibrate` names a profile's engine profile and measurements.
#[pyfunction]
pub(crate) fn beside(path: &str, suffix: &str) -> String {
    memwall_lab::beside(std::path::Path::new(path), suffix, "device").display().to_string()
}

/// Write text files as `memwall` writes its outputs: every `(role, path, text)` is checked
/// first (none may be one of `inputs` or of the others, nor an existing non-regular file),
/// then each is written whole through a temporary file and a rename.
#[pyfunction]
pub(crate) fn write_texts(py: Python<'_>, outputs: Vec<(String, String, String)>, inputs: Vec<String>) -> Result<()> {
    let r = py.detach(|| -> memwall_lab::Result<()> {
        let inputs: Vec<&std::path::Path> = inputs.iter().map(std::path::Path::new).collect();
        let checked: Vec<(&str, &std::path::Path)> =
            outputs.iter().map(|(role, path, _)| (role.as_str(), std::path::Path::new(path))).collect();
        memwall_lab::check_outputs(&inputs, &checked)?;
        for (_, path, text) in &outputs {
            memwall_lab::files::atomic::write_text(std::path::Path::new(path), text)?;
        }
        Ok(())
    });
    r.map_err(Error::from)
}
